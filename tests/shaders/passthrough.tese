#version 450
// Tessellation evaluation shader as the fragment shader's producer, for the
// varying linker: same interface as passthrough.geom (used, dead, constant,
// duplicate), read by geom_consumer.frag.
layout(triangles, equal_spacing, ccw) in;
layout(location = 0) out vec4 used;
layout(location = 2) out vec4 dead;
layout(location = 4) flat out int k;
layout(location = 5) out vec4 dup;
void main() {
    vec4 p = gl_TessCoord.x * gl_in[0].gl_Position + gl_TessCoord.y * gl_in[1].gl_Position + gl_TessCoord.z * gl_in[2].gl_Position;
    gl_Position = p;
    vec4 c = vec4(p.xy * 0.5 + 0.5, 0.25, 1.0);
    used = c;
    dead = c.yxzw;
    k = 5;
    dup = c;
}

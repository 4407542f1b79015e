#version 450
// Geometry shader as the fragment shader's producer, for the varying linker:
// `used` reaches the fragment shader, `dead` does not, `k` is a constant
// stored before every EmitVertex, `dup` always equals `used`.
layout(triangles) in;
layout(triangle_strip, max_vertices = 3) out;
layout(location = 0) out vec4 used;
layout(location = 2) out vec4 dead;
layout(location = 4) flat out int k;
layout(location = 5) out vec4 dup;
void main() {
    for (int i = 0; i < 3; i++) {
        gl_Position = gl_in[i].gl_Position;
        vec4 c = vec4(gl_in[i].gl_Position.xy * 0.5 + 0.5, 0.25, 1.0);
        used = c;
        dead = c.yxzw;
        k = 5;
        dup = c;
        EmitVertex();
    }
    EndPrimitive();
}

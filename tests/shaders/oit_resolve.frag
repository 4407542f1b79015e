#version 450
// OIT pass 2: composite each pixel's sorted list back to front over the
// background.
const uint K = 8u;
layout(set = 0, binding = 0, std430) readonly buffer Counts { uint count[]; };
layout(set = 0, binding = 1, std430) readonly buffer Lists { uvec2 frag[]; };
layout(push_constant) uniform P { uint width; uint height; } pc;
layout(location = 0) out vec4 o_color;

void main() {
    uint p = uint(gl_FragCoord.y) * pc.width + uint(gl_FragCoord.x);
    vec3 c = vec3(0.1, 0.1, 0.1);
    uint n = count[p];
    for (uint i = n; i > 0u; i--) {
        vec4 f = unpackUnorm4x8(frag[p * K + i - 1u].y);
        c = f.rgb * f.a + c * (1.0 - f.a);
    }
    o_color = vec4(c, 1.0);
}

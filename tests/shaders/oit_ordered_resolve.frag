#version 450
// Ordered OIT pass 2: the tail (or the background) under the pixel's kept
// fragments, blended far to near, alpha 1/2, in 8.16 fixed point; rounded
// to 8 bits here so that the attachment stores exactly the CPU's value.
const uint K = 2u;
const uint BACKGROUND = 26u;
layout(set = 0, binding = 0, std430) readonly buffer Counts { uint count[]; };
layout(set = 0, binding = 1, std430) readonly buffer Slots { uvec2 slot[]; };
layout(set = 0, binding = 2, std430) readonly buffer Tail { uvec4 tail[]; };
layout(push_constant) uniform P { uint width; uint height; uint layers; uint flags; } pc;
layout(location = 0) out vec4 o_color;

void main() {
    uint p = uint(gl_FragCoord.y) * pc.width + uint(gl_FragCoord.x);
    uint n = min(count[p], K);
    uvec2 s[K];
    for (uint i = 0u; i < K; i++) {
        s[i] = i < n ? slot[p * K + i] : uvec2(0u);
    }
    // Far to near (insertion sort on depth, largest first).
    for (uint i = 1u; i < n; i++) {
        uvec2 v = s[i];
        uint j = i;
        while (j > 0u && s[j - 1u].x < v.x) {
            s[j] = s[j - 1u];
            j--;
        }
        s[j] = v;
    }
    uvec4 t = tail[p];
    uvec3 c = t.w == 0u ? uvec3(BACKGROUND << 16) : t.rgb;
    for (uint i = 0u; i < n; i++) {
        uint color = s[i].y;
        uvec3 f = uvec3(color & 255u, (color >> 8) & 255u, (color >> 16) & 255u);
        c = ((f << 16) + c) >> 1;
    }
    uvec3 q = (c + (1u << 15)) >> 16;
    o_color = vec4(vec3(q) / 255.0, 1.0);
}

#version 450
// OIT pass 1: each fragment inserts (depth, colour) into its pixel's list,
// kept sorted front to back, inside an unordered critical section: the list
// update is a non-atomic read-modify-write of several words. Built with
// -DNO_INTERLOCK for the benchmark's no-interlock baseline.
#extension GL_ARB_fragment_shader_interlock : enable
#ifndef NO_INTERLOCK
layout(pixel_interlock_unordered) in;
#endif
const uint K = 8u;
layout(set = 0, binding = 0, std430) coherent buffer Counts { uint count[]; };
layout(set = 0, binding = 1, std430) coherent buffer Lists { uvec2 frag[]; };
layout(push_constant) uniform P { uint width; uint height; } pc;
layout(location = 0) flat in vec4 v_color;
layout(location = 1) flat in float v_depth;
layout(location = 0) out vec4 o_color;

void main() {
    uint p = uint(gl_FragCoord.y) * pc.width + uint(gl_FragCoord.x);
    uvec2 me = uvec2(floatBitsToUint(v_depth), packUnorm4x8(v_color));
#ifndef NO_INTERLOCK
    beginInvocationInterlockARB();
#endif
    uint n = count[p];
    uint i = min(n, K - 1u);
    while (i > 0u && uintBitsToFloat(frag[p * K + i - 1u].x) > v_depth) {
        frag[p * K + i] = frag[p * K + i - 1u];
        i--;
    }
    frag[p * K + i] = me;
    count[p] = min(n + 1u, K);
#ifndef NO_INTERLOCK
    endInvocationInterlockARB();
#endif
    o_color = vec4(0.0);
}

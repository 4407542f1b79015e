#version 450
// Ordered OIT pass 1 (nvpro's interlock algorithm with tail blending, in
// integers so that the CPU reference computes the same bits): each pixel
// keeps its K nearest fragments; a fragment beyond K evicts the farthest
// kept one (or is itself the farthest) and the evicted colour is blended
// "over" the pixel's tail colour, alpha 3/4, in arrival order — so
// primitive order changes the picture. Colours are 8-bit, the tail 8.16
// fixed point. Built with WORK, `flags >> 8` is W, work done per fragment
// besides the insert: W rounds of four LCG lanes, begun before the section
// and kept live across it (a heavier shader in ALU and registers, as an
// emulator's blend is; it never changes the picture: its result is stored
// only under a flag the test program never sets); without WORK the shader
// is the plain insert. Built in variants by tests/build.rs: ORDERED
// (pixel_interlock_ordered), UNORDERED (pixel_interlock_unordered) or
// neither (no critical section), each with and without WORK.
#extension GL_ARB_fragment_shader_interlock : enable
#if defined(ORDERED)
layout(pixel_interlock_ordered) in;
#elif defined(UNORDERED)
layout(pixel_interlock_unordered) in;
#endif
const uint K = 2u;
const uint BACKGROUND = 26u;
layout(set = 0, binding = 0, std430) coherent buffer Counts { uint count[]; };
layout(set = 0, binding = 1, std430) coherent buffer Slots { uvec2 slot[]; };
layout(set = 0, binding = 2, std430) coherent buffer Tail { uvec4 tail[]; };
layout(push_constant) uniform P { uint width; uint height; uint layers; uint flags; } pc;
layout(location = 0) flat in uint v_color;
layout(location = 1) flat in uint v_depth;
layout(location = 0) out vec4 o_color;

void blend_tail(uint p, uint color) {
    uvec4 t = tail[p];
    uvec3 under = t.w == 0u ? uvec3(BACKGROUND << 16) : t.rgb;
    uvec3 c = uvec3(color & 255u, (color >> 8) & 255u, (color >> 16) & 255u);
    tail[p] = uvec4(((c << 16) * 3u + under) >> 2, t.w + 1u);
}

void main() {
    uint p = uint(gl_FragCoord.y) * pc.width + uint(gl_FragCoord.x);
#ifdef WORK
    uvec4 a = uvec4(p, v_color, v_depth, 1u);
    uvec4 b = a.yzwx;
    uvec4 c = a.zwxy;
    uvec4 d = a.wxyz;
    for (uint i = 0u; i < (pc.flags >> 8); i++) {
        a = a * 1664525u + b;
        b = b * 22695477u + c;
        c = c * 1103515245u + d;
        d = d * 134775813u + a;
    }
#endif
#if defined(ORDERED) || defined(UNORDERED)
    beginInvocationInterlockARB();
#endif
    uint n = count[p];
    if (n < K) {
        slot[p * K + n] = uvec2(v_depth, v_color);
        count[p] = n + 1u;
    } else {
        uint far = 0u;
        uint far_depth = slot[p * K].x;
        for (uint i = 1u; i < K; i++) {
            if (slot[p * K + i].x > far_depth) {
                far = i;
                far_depth = slot[p * K + i].x;
            }
        }
        if (far_depth > v_depth) {
            blend_tail(p, slot[p * K + far].y);
            slot[p * K + far] = uvec2(v_depth, v_color);
        } else {
            blend_tail(p, v_color);
        }
    }
#if defined(ORDERED) || defined(UNORDERED)
    endInvocationInterlockARB();
#endif
#ifdef WORK
    if ((pc.flags & 0x80u) != 0u) {
        tail[p] = a ^ b ^ c ^ d;
    }
#endif
    o_color = vec4(0.0);
}

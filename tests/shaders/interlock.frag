#version 450
// CTS-style interlock test (dEQP-VK.fragment_shader_interlock.basic.*): each
// instance i sets bit i of its pixel's (or sample's) word with a non-atomic
// read-modify-write inside the critical section. Ordered variants also check
// that exactly the bits of every earlier, non-discarded instance are already
// set, and flag bit 31 otherwise. Built in variants by tests/build.rs:
//   MODE: the interlock layout qualifier; PER_SAMPLE: one word per sample
//   (uses gl_SampleID, so sample shading); NO_INTERLOCK: no critical section
//   at all (the negative control); EARLY: early fragment tests, as OIT
//   shaders ask for (nvpro's through post_depth_coverage).
#extension GL_ARB_fragment_shader_interlock : enable
#ifndef NO_INTERLOCK
layout(MODE) in;
#endif
#ifdef EARLY
layout(early_fragment_tests) in;
#endif
layout(constant_id = 0) const int RESOURCE = 0;       // 0: storage image, 1: SSBO
layout(constant_id = 1) const bool DISCARD = false;   // discard some fragments first
layout(constant_id = 2) const bool CHECK_ORDER = false;

layout(set = 0, binding = 0, r32ui) uniform coherent uimage2D img;
layout(set = 0, binding = 1, std430) coherent buffer Words { uint data[]; } words;
// delay: extra dependent work between the read and the write, to widen the
// race window on GPUs (0 in the CTS-style runs).
layout(push_constant) uniform Push { uint row; uint samples; uint delay; } pc;

layout(location = 0) flat in int v_instance;
layout(location = 0) out vec4 o_color;

bool dropped(uint i, ivec2 p) {
    return DISCARD && ((uint(p.x) * 7u + uint(p.y) * 3u + i) % 5u == 0u);
}

void main() {
    ivec2 p = ivec2(gl_FragCoord.xy);
    uint i = uint(v_instance);
    if (dropped(i, p)) {
        discard;
    }
#ifdef PER_SAMPLE
    int x = p.x * int(pc.samples) + gl_SampleID;
#else
    int x = p.x;
#endif
    uint index = uint(p.y) * pc.row + uint(x);
#ifndef NO_INTERLOCK
    beginInvocationInterlockARB();
#endif
    uint v = RESOURCE == 0 ? imageLoad(img, ivec2(x, p.y)).x : words.data[index];
    if (CHECK_ORDER) {
        uint want = 0u;
        for (uint j = 0u; j < i; j++) {
            if (!dropped(j, p)) {
                want |= 1u << j;
            }
        }
        if ((v & ~(1u << i)) != want) {
            v |= 0x80000000u;
        }
    }
    uint spin = v;
    for (uint k = 0u; k < pc.delay; k++) {
        spin = spin * 1664525u + 1013904223u;
    }
    if (spin == 0xffffffffu && pc.delay != 0u) {
        v |= 0x80000000u; // never in practice; keeps the loop alive
    }
    v |= 1u << i;
    if (RESOURCE == 0) {
        imageStore(img, ivec2(x, p.y), uvec4(v));
    } else {
        words.data[index] = v;
    }
#ifndef NO_INTERLOCK
    endInvocationInterlockARB();
#endif
    o_color = vec4(0.0);
}

#version 450
// The CTS's coverage words (dEQP-VK.fragment_shader_interlock.basic.*
// without sample shading): instance i ORs its coverage (gl_SampleMaskIn,
// samples bits per pixel, four pixels' worth for a 2x2 coarse fragment)
// into bits [i*BITS, (i+1)*BITS) of its pixel's (or coarse fragment's)
// word, in a non-atomic read-modify-write inside the critical section;
// 32 / BITS instances fill the word. Ordered modes check that every earlier
// instance's bits are set and flag the word in a separate buffer otherwise
// (the CTS clobbers the word; a flag keeps order errors apart from lost
// bits). KILL_ODD is the CTS's killOdd: discard before the section for
// y < quarter and odd x, inside it for odd x, and after it always.
// SAMPLE_WORDS: the CTS's shading-rate modes with sample shading (its
// isSampleInterlock cases): one word per sample (x * SAMPLES + gl_SampleID,
// which makes the shader run per sample), one bit per instance, the 2x2
// rate still requested (sample shading makes fragments 1x1).
// Built in variants by tests/build.rs: MODE (the interlock layout), or
// NO_INTERLOCK (the negative control); SAMPLE_WORDS besides.
#extension GL_ARB_fragment_shader_interlock : enable
#extension GL_NV_shading_rate_image : enable
#ifndef NO_INTERLOCK
layout(MODE) in;
#endif
layout(constant_id = 0) const int RESOURCE = 0;       // 0: storage image, 1: SSBO
layout(constant_id = 1) const bool KILL_ODD = false;
layout(constant_id = 2) const bool CHECK_ORDER = false;
layout(constant_id = 3) const uint BITS = 1u;         // bits per instance
layout(constant_id = 4) const int DIVIDE = 1;         // 2: one word per 2x2 coarse fragment
layout(constant_id = 5) const int SAMPLES = 1;        // SAMPLE_WORDS: words per pixel

layout(set = 0, binding = 0, r32ui) uniform coherent uimage2D img;
layout(set = 0, binding = 1, std430) coherent buffer Words { uint data[]; } words;
layout(set = 0, binding = 2, std430) buffer Flags { uint data[]; } flags;
layout(push_constant) uniform Push { uint row; uint quarter; uint delay; } pc;

layout(location = 0) flat in int v_instance;
layout(location = 0) out vec4 o_color;

void main() {
    ivec2 c = ivec2(gl_FragCoord.xy) / DIVIDE;
    uint i = uint(v_instance);
#ifdef SAMPLE_WORDS
    c.x = c.x * SAMPLES + gl_SampleID;
    uint mask = 1u << i;
#else
    uint mask = uint(gl_SampleMaskIn[0]) << (i * BITS);
#endif
    uint previous = (1u << (i * BITS)) - 1u;
    if (KILL_ODD && uint(c.y) < pc.quarter && (c.x & 1) != 0) {
        discard;
    }
    uint index = uint(c.y) * pc.row + uint(c.x);
#ifndef NO_INTERLOCK
    beginInvocationInterlockARB();
#endif
    if (KILL_ODD && (c.x & 1) != 0) {
        discard;
    }
    uint v = RESOURCE == 0 ? imageLoad(img, c).x : words.data[index];
    if (CHECK_ORDER && (v & previous) != previous) {
        flags.data[index] = 1u;
    }
    uint spin = v;
    for (uint k = 0u; k < pc.delay; k++) {
        spin = spin * 1664525u + 1013904223u;
    }
    if (spin == 0xffffffffu && pc.delay != 0u) {
        v = 0u; // never in practice; keeps the loop alive
    }
    v |= mask;
    if (RESOURCE == 0) {
        imageStore(img, c, uvec4(v));
    } else {
        words.data[index] = v;
    }
#ifndef NO_INTERLOCK
    endInvocationInterlockARB();
#endif
    if (KILL_ODD) {
        discard;
    }
    o_color = vec4(0.0);
}

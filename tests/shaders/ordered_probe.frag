#version 450
// The ordered-interlock probe (`overlap-testapp ordered-probe`, issue 34
// item 1; tests/src/ordered_probe.rs): per-fragment memory shapes of the
// ordered strategy's protocol, varied by specialization constants.
//
// Each fragment makes K dependent accesses (each address depends on the
// value the previous one returned; the values stay below 2^28, so the
// address does not move) to its pixel's word, then optionally one plain
// store, in one of three layouts:
//   LAYOUT 0  no memory traffic
//   LAYOUT 1  a dense plane, one word per pixel, 8x8 blocks of pixels
//             contiguous (as the spinlock's lock image)
//   LAYOUT 2  array-of-records cells: STRIDE words per pixel (72: 288 bytes,
//             the layer's 32 slots; 136: 544 bytes, 64 slots), row-major,
//             the accesses going to the cell's 8-word header (control word
//             first), as the protocol's do
//   LAYOUT 3  a dense plane, row-major (no swizzle)
//   LAYOUT 5  planes: access i goes to plane i (a dense, 8x8-swizzled plane
//             of one word a pixel, planes width*height words apart), as
//             the protocol's key planes are walked slot by slot
//   LAYOUT 4  an R32UI storage image, a texel a pixel (the spinlock's lock
//             image): loads, atomicAdd, compare-swaps (plain or acquire)
//             through image atomics
// OP: 0 plain load (coherent buffer), 1 atomicAdd, 2 atomicCompSwap,
//     3 atomicLoad with acquire semantics, 4 atomicCompSwap acquire (a
//     mutex's take), 5 plain load then memoryBarrierBuffer (a fence),
//     6 the count draw's append (registered += 1, acquire load of the slot
//     count, slot = atomicAdd(count), two plain stores of the key into the
//     slot; K is ignored), 7 item 3's record: n = atomicAdd on the pixel's
//     dense counter, then the section's inputs (16 bytes) stored into plane
//     n mod RECORD_PLANES (planes of one uvec4 a pixel after the counters),
//     8 the same into word planes (four planes of one word a pixel per
//     record slot: every store a dense one), 9 as 8 with the key (instance,
//     primitive) in place of the position.
// BODY: 0 none; 1 the OIT scene's insert (tests/shaders/oit_ordered_insert.frag
//     without its critical section) on its own per-pixel buffers; 2 the same
//     after an ALU-heavy shading loop (register pressure, as a real
//     material). With a body, push constant `mode` 0 is the count draw: the
//     probe's accesses, then discard (the rewritten module in the layer's
//     count draw); mode 1 runs the body (the application's draw).
//     BODY 3: item 3's resolve, drawn once: each pixel loads `pc.records`
//     records (16 bytes each, from the record planes of OP 7 or the word
//     planes of OP 8) and runs the OIT insert for each (no sort: a lower
//     bound); with OP 9 (records of colour, depth and the key, instance and
//     primitive, in word planes) it first sorts them by key (insertion sort
//     of up to 32 indices), as item 3's resolve must; with OP 10 it checks
//     the keys' order first (in registers) and sorts only where it fails.
#extension GL_KHR_memory_scope_semantics : require
layout(constant_id = 0) const uint LAYOUT = 0u;
layout(constant_id = 1) const uint STRIDE = 72u;
layout(constant_id = 2) const uint K = 0u;
layout(constant_id = 3) const uint OP = 0u;
layout(constant_id = 4) const uint STORE = 0u;
layout(constant_id = 5) const uint BODY = 0u;
layout(constant_id = 6) const uint ALU = 64u;

layout(set = 0, binding = 0, std430) coherent buffer Cells { uint w[]; } cells;
layout(set = 0, binding = 1, std430) coherent buffer Counts { uint count[]; };
layout(set = 0, binding = 2, std430) coherent buffer Slots { uvec2 slot[]; };
layout(set = 0, binding = 3, std430) coherent buffer Tail { uvec4 tail[]; };
layout(set = 0, binding = 4, r32ui) coherent uniform uimage2D lock_image;
layout(push_constant) uniform P { uint width; uint height; uint mode; uint records; } pc;
layout(location = 0) flat in uint v_color;
layout(location = 1) flat in uint v_depth;
layout(location = 2) in vec4 v_smooth;
layout(location = 3) flat in uint v_instance;

const uint RECORD_PLANES = 8u;
#define SCOPE gl_ScopeDevice
#define STORAGE gl_StorageSemanticsBuffer

uint base_of(uint x, uint y) {
    if (LAYOUT == 1u || LAYOUT == 5u) {
        return (((y >> 3) * (pc.width >> 3) + (x >> 3)) << 6) | ((y & 7u) << 3) | (x & 7u);
    } else if (LAYOUT == 2u) {
        return (y * pc.width + x) * STRIDE;
    } else if (LAYOUT == 4u) {
        return (y << 16) | x;
    }
    return y * pc.width + x;
}

// The i-th access's word (records: header word i mod 8; dense: the pixel's word).
uint at(uint base, uint i, uint v) {
    if (LAYOUT == 5u) {
        return base + i * pc.width * pc.height + (v >> 28);
    }
    return base + (LAYOUT == 2u ? (i & 7u) : 0u) + (v >> 28);
}

// The image's texel for `a` (x, y packed by `image_at`).
ivec2 texel(uint a) {
    return ivec2(a & 0xffffu, a >> 16);
}

uint access(uint a, uint v) {
    if (LAYOUT == 4u) {
        ivec2 t = texel(a);
        if (OP == 1u) {
            return imageAtomicAdd(lock_image, t, 1u);
        } else if (OP == 2u) {
            return imageAtomicCompSwap(lock_image, t, v, v + 1u);
        } else if (OP == 4u) {
            return imageAtomicCompSwap(lock_image, t, v, v + 1u, SCOPE, gl_StorageSemanticsImage, gl_SemanticsAcquire, gl_StorageSemanticsImage, gl_SemanticsRelaxed);
        }
        return imageLoad(lock_image, t).x;
    }
    if (OP == 1u) {
        return atomicAdd(cells.w[a], 1u);
    } else if (OP == 2u) {
        return atomicCompSwap(cells.w[a], v, v + 1u);
    } else if (OP == 3u) {
        return atomicLoad(cells.w[a], SCOPE, STORAGE, gl_SemanticsAcquire);
    } else if (OP == 4u) {
        return atomicCompSwap(cells.w[a], v, v + 1u, SCOPE, STORAGE, gl_SemanticsAcquire, STORAGE, gl_SemanticsRelaxed);
    } else if (OP == 5u) {
        uint r = cells.w[a];
        memoryBarrierBuffer();
        return r;
    }
    return cells.w[a];
}

const uint OIT_K = 2u;
const uint BACKGROUND = 26u;

void blend_tail(uint p, uint color) {
    uvec4 t = tail[p];
    uvec3 under = t.w == 0u ? uvec3(BACKGROUND << 16) : t.rgb;
    uvec3 c = uvec3(color & 255u, (color >> 8) & 255u, (color >> 16) & 255u);
    tail[p] = uvec4(((c << 16) * 3u + under) >> 2, t.w + 1u);
}

// The OIT scene's insert (nvpro's K-nearest with tail blending).
void oit_insert(uint p, uint color, uint depth) {
    uint n = count[p];
    if (n < OIT_K) {
        slot[p * OIT_K + n] = uvec2(depth, color);
        count[p] = n + 1u;
    } else {
        uint far = 0u;
        uint far_depth = slot[p * OIT_K].x;
        for (uint i = 1u; i < OIT_K; i++) {
            if (slot[p * OIT_K + i].x > far_depth) {
                far = i;
                far_depth = slot[p * OIT_K + i].x;
            }
        }
        if (far_depth > depth) {
            blend_tail(p, slot[p * OIT_K + far].y);
            slot[p * OIT_K + far] = uvec2(depth, color);
        } else {
            blend_tail(p, color);
        }
    }
}

// A material's shading: ALU iterations over sixteen live vec4s.
uint shade() {
    vec4 r[16];
    for (int i = 0; i < 16; i++) {
        r[i] = v_smooth * float(i + 1) + vec4(float(v_color & 255u));
    }
    for (uint it = 0u; it < ALU; it++) {
        for (int i = 0; i < 16; i++) {
            r[i] = fract(r[i] * r[(i + 5) & 15] + sin(r[(i + 11) & 15]));
        }
    }
    vec4 s = vec4(0.0);
    for (int i = 0; i < 16; i++) {
        s += r[i];
    }
    return packUnorm4x8(fract(s));
}

void main() {
    uint x = uint(gl_FragCoord.x);
    uint y = uint(gl_FragCoord.y);
    bool probe = BODY == 0u || pc.mode == 0u;
    if (probe && LAYOUT != 0u) {
        uint base = base_of(x, y);
        if (OP == 8u || OP == 9u || OP == 10u) {
            uint n = atomicAdd(cells.w[base], 1u);
            uint pixels = pc.width * pc.height;
            uint plane = 1u + (n % RECORD_PLANES) * 4u;
            cells.w[(plane + 0u) * pixels + base] = v_color;
            cells.w[(plane + 1u) * pixels + base] = v_depth;
            cells.w[(plane + 2u) * pixels + base] = OP >= 9u ? v_instance : x;
            cells.w[(plane + 3u) * pixels + base] = OP >= 9u ? uint(gl_PrimitiveID) : y;
        } else if (OP == 7u) {
            uint n = atomicAdd(cells.w[base], 1u);
            uint pixels = pc.width * pc.height;
            uint a = pixels + ((n % RECORD_PLANES) * pixels + base) * 4u;
            cells.w[a] = v_color;
            cells.w[a + 1u] = v_depth;
            cells.w[a + 2u] = x;
            cells.w[a + 3u] = y;
        } else if (OP == 6u) {
            atomicAdd(cells.w[base + 1u], 1u, SCOPE, STORAGE, gl_SemanticsRelaxed);
            uint n = atomicLoad(cells.w[base], SCOPE, STORAGE, gl_SemanticsAcquire);
            uint s = atomicAdd(cells.w[base + (n >> 28)], 1u, SCOPE, STORAGE, gl_SemanticsRelaxed);
            uint slots = LAYOUT == 2u ? (STRIDE - 8u) / 2u : 1u;
            uint a = LAYOUT == 2u ? base + 8u + 2u * (s % slots) : base + (s >> 28);
            cells.w[a] = v_color;
            if (LAYOUT == 2u) {
                cells.w[a + 1u] = v_depth;
            }
        } else {
            uint v = 0u;
            uint a = base;
            for (uint i = 0u; i < K; i++) {
                v = access(a, v);
                a = at(base, i + 1u, v);
            }
            if (STORE != 0u && LAYOUT == 4u) {
                imageStore(lock_image, texel(a), uvec4(v + 1u));
            } else if (STORE != 0u) {
                cells.w[a] = v + 1u;
            }
        }
    }
    if (BODY == 3u) {
        uint base = base_of(x, y);
        uint pixels = pc.width * pc.height;
        uint p = y * pc.width + x;
        bool sorted = false;
        if (OP == 10u) {
            // Keys already in order (in registers, no local array): insert as they are.
            sorted = true;
            uvec2 last = uvec2(0u);
            for (uint i = 0u; i < min(pc.records, 32u) && sorted; i++) {
                uint plane = 1u + (i % RECORD_PLANES) * 4u;
                uvec2 k = uvec2(cells.w[(plane + 2u) * pixels + base], cells.w[(plane + 3u) * pixels + base]);
                sorted = i == 0u || last.x < k.x || (last.x == k.x && last.y <= k.y);
                last = k;
            }
        }
        if (OP == 9u || (OP == 10u && !sorted)) {
            // Sort the records by key (instance, primitive), then insert in order.
            uint order[32];
            uvec2 keys[32];
            uint n = min(pc.records, 32u);
            for (uint i = 0u; i < n; i++) {
                uint plane = 1u + (i % RECORD_PLANES) * 4u;
                uvec2 k = uvec2(cells.w[(plane + 2u) * pixels + base], cells.w[(plane + 3u) * pixels + base]);
                uint j = i;
                while (j > 0u && (keys[j - 1u].x > k.x || (keys[j - 1u].x == k.x && keys[j - 1u].y > k.y))) {
                    keys[j] = keys[j - 1u];
                    order[j] = order[j - 1u];
                    j--;
                }
                keys[j] = k;
                order[j] = i;
            }
            for (uint i = 0u; i < n; i++) {
                uint plane = 1u + (order[i] % RECORD_PLANES) * 4u;
                oit_insert(p, cells.w[plane * pixels + base], cells.w[(plane + 1u) * pixels + base]);
            }
            return;
        }
        for (uint i = 0u; i < pc.records; i++) {
            if (OP == 8u) {
                uint plane = 1u + (i % RECORD_PLANES) * 4u;
                oit_insert(p, cells.w[plane * pixels + base], cells.w[(plane + 1u) * pixels + base]);
            } else {
                uint a = pixels + ((i % RECORD_PLANES) * pixels + base) * 4u;
                oit_insert(p, cells.w[a], cells.w[a + 1u]);
            }
        }
        return;
    }
    if (BODY != 0u) {
        if (pc.mode == 0u) {
            discard;
        }
        uint p = y * pc.width + x;
        uint color = BODY == 2u ? (shade() & 0x00ffffffu) ^ v_color : v_color;
        oit_insert(p, color, v_depth);
    }
}

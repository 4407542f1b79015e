#version 450
// The ordered interlock strategy's protocol (`overlap_shaders::ordered`):
// functions the layer links into every fragment shader that declares an
// ordered interlock mode. Each ordered draw is recorded twice with the same
// state: a *count* draw (mode 0), in which every fragment appends its key
// (instance, primitive) to the cell of each pixel it covers and terminates,
// then, after a barrier, the *run* draw (mode 1): the application's shader,
// whose critical section is entered only when every fragment of a smaller key
// in each of its cells has left (or skipped) its section. Mode 2 (unordered)
// is the fallback where order cannot be had: a per-cell mutex only.
//
// Cell (uints): count, done, finished (one bit per rank), mutex, then
// `slots` keys of two uints. A cell is clean (all zero) between draws: the
// last fragment of a draw to finish with it resets it.
//
// Compiled twice by `shaders/glsl/generate` into shaders/src/generated/: with
// the GLSL450 memory model (device scope) and with the Vulkan memory model
// (-DVULKAN_MM: queue-family scope, visibility operations); the module's own
// model picks one. Set 0 becomes the reserved set when linked.
#extension GL_KHR_memory_scope_semantics : require
#ifdef VULKAN_MM
#pragma use_vulkan_memory_model
#define SCOPE gl_ScopeQueueFamily
#define ACQ (gl_SemanticsAcquire | gl_SemanticsMakeVisible)
#define REL (gl_SemanticsRelease | gl_SemanticsMakeAvailable)
#define ACQREL (gl_SemanticsAcquireRelease | gl_SemanticsMakeAvailable | gl_SemanticsMakeVisible)
#else
#define SCOPE gl_ScopeDevice
#define ACQ gl_SemanticsAcquire
#define REL gl_SemanticsRelease
#define ACQREL gl_SemanticsAcquireRelease
#endif
#define STORAGE (gl_StorageSemanticsBuffer | gl_StorageSemanticsImage)
#define RELAXED gl_SemanticsRelaxed

layout(set = 0, binding = 1, std430) coherent buffer OverlapCells { uint w[]; } ovl_cells;
layout(set = 0, binding = 2, std140) uniform OverlapControl {
    uint mode;      // 0 count, 1 run, 2 unordered (mutex only)
    uint grid;      // cells per side (a power of two); pixels further apart share cells
    uint slots;     // keys per cell (at most 32: one finished bit each)
    uint timeout;   // polls before a wait gives up and enters under the mutex
    uint reverse;   // testing only: the key order reversed
} ovl_ctl;
// 0: cells overflowed, 1: expired waits, 2: keys not found.
layout(set = 0, binding = 3, std430) coherent buffer OverlapCounters { uint c[]; } ovl_counters;

// Set by the rewritten shader before ovl_begin().
uvec2 ovl_origin;   // the fragment's area: origin and size in pixels
uvec2 ovl_size;
uvec2 ovl_key;      // (instance index, primitive id)
bool ovl_helper;    // a helper invocation (or demoted): takes part in nothing

// Per-fragment state, for each cell of the area (at most 4x4).
uint ovl_rank[16];  // keys smaller than this fragment's; NO_RANK: no order here
uint ovl_mult[16];  // keys equal to it (a primitive's samples, or lines of a triangle)
uint ovl_n[16];     // the cell's count
uint ovl_flags;
uint ovl_polls;

const uint NO_RANK = 0xffffffffu;
const uint REGISTERED = 1u;
const uint FINISHED = 2u;
const uint HOLDS = 4u;
const uint EXPIRED = 8u;

uint ovl_cell(uint dx, uint dy) {
    uint m = ovl_ctl.grid - 1u;
    uvec2 p = ovl_origin + uvec2(dx, dy);
    return ((p.y & m) * ovl_ctl.grid + (p.x & m)) * (4u + 2u * ovl_ctl.slots);
}

bool ovl_less(uvec2 a, uvec2 b) {
    if (ovl_ctl.reverse != 0u) {
        uvec2 t = a;
        a = b;
        b = t;
    }
    return a.x < b.x || (a.x == b.x && a.y < b.y);
}

// The count draw: register in every cell of the area.
void ovl_count() {
    for (uint dy = 0u; dy < ovl_size.y; dy++) {
        for (uint dx = 0u; dx < ovl_size.x; dx++) {
            uint c = ovl_cell(dx, dy);
            uint s = atomicAdd(ovl_cells.w[c], 1u, SCOPE, STORAGE, RELAXED);
            if (s < ovl_ctl.slots) {
                ovl_cells.w[c + 4u + 2u * s] = ovl_key.x;
                ovl_cells.w[c + 5u + 2u * s] = ovl_key.y;
            } else if (s == ovl_ctl.slots) {
                atomicAdd(ovl_counters.c[0], 1u, SCOPE, STORAGE, RELAXED);
            }
        }
    }
}

// The run draw: this fragment's rank in every cell (after the barrier that
// follows the count draw, the cells hold every key of the draw).
void ovl_lookup() {
    uint k = 0u;
    for (uint dy = 0u; dy < ovl_size.y; dy++) {
        for (uint dx = 0u; dx < ovl_size.x; dx++) {
            uint c = ovl_cell(dx, dy);
            uint n = atomicLoad(ovl_cells.w[c], SCOPE, STORAGE, ACQ);
            uint rank = 0u;
            uint mult = 0u;
            if (n <= ovl_ctl.slots) {
                for (uint j = 0u; j < n; j++) {
                    uvec2 other = uvec2(ovl_cells.w[c + 4u + 2u * j], ovl_cells.w[c + 5u + 2u * j]);
                    if (other == ovl_key) {
                        mult++;
                    } else if (ovl_less(other, ovl_key)) {
                        rank++;
                    }
                }
                if (mult == 0u) {
                    atomicAdd(ovl_counters.c[2], 1u, SCOPE, STORAGE, RELAXED);
                }
            }
            ovl_rank[k] = mult == 0u ? NO_RANK : rank;
            ovl_mult[k] = mult;
            ovl_n[k] = n;
            k++;
        }
    }
}

// At the entry, after the inputs are set: true in the count draw, where the
// caller terminates the invocation.
bool ovl_begin() {
    ovl_flags = 0u;
    ovl_polls = 0u;
    if (ovl_helper) {
        return ovl_ctl.mode == 0u;
    }
    if (ovl_ctl.mode == 0u) {
        ovl_count();
        return true;
    }
    if (ovl_ctl.mode == 1u) {
        ovl_flags = REGISTERED;
        ovl_lookup();
    }
    return false;
}

// Leaves the area's cells for good: one finished bit of its rank group in
// each cell, and the last fragment of the draw in a cell resets it. Never
// blocks; runs once.
void ovl_finish() {
    if ((ovl_flags & (REGISTERED | FINISHED)) != REGISTERED) {
        return;
    }
    ovl_flags |= FINISHED;
    uint k = 0u;
    for (uint dy = 0u; dy < ovl_size.y; dy++) {
        for (uint dx = 0u; dx < ovl_size.x; dx++) {
            uint c = ovl_cell(dx, dy);
            uint rank = ovl_rank[k];
            uint mult = ovl_mult[k];
            if (rank != NO_RANK) {
                uint group = (mult >= 32u ? 0xffffffffu : ((1u << mult) - 1u)) << rank;
                for (uint tries = 0u; tries < 32u; tries++) {
                    uint f = atomicLoad(ovl_cells.w[c + 2u], SCOPE, STORAGE, RELAXED);
                    uint free = group & ~f;
                    if (free == 0u) {
                        break;
                    }
                    uint bit = 1u << uint(findLSB(free));
                    if ((atomicOr(ovl_cells.w[c + 2u], bit, SCOPE, STORAGE, REL) & bit) == 0u) {
                        break;
                    }
                }
            }
            uint done = atomicAdd(ovl_cells.w[c + 1u], 1u, SCOPE, STORAGE, ACQREL) + 1u;
            if (done == ovl_n[k]) {
                atomicStore(ovl_cells.w[c], 0u, SCOPE, STORAGE, RELAXED);
                atomicStore(ovl_cells.w[c + 1u], 0u, SCOPE, STORAGE, RELAXED);
                atomicStore(ovl_cells.w[c + 2u], 0u, SCOPE, STORAGE, RELAXED);
            }
            k++;
        }
    }
}

// One try to enter the critical section: every smaller key has finished in
// each cell (or the wait expired), and every cell's mutex is free (all or
// none are taken: no invocation holds one while it waits).
bool ovl_try_enter() {
    if (ovl_helper) {
        return true;
    }
    if ((ovl_flags & (REGISTERED | EXPIRED)) == REGISTERED) {
        uint k = 0u;
        for (uint dy = 0u; dy < ovl_size.y; dy++) {
            for (uint dx = 0u; dx < ovl_size.x; dx++) {
                uint rank = ovl_rank[k];
                if (rank != NO_RANK && rank != 0u) {
                    uint need = rank >= 32u ? 0xffffffffu : ((1u << rank) - 1u);
                    uint f = atomicLoad(ovl_cells.w[ovl_cell(dx, dy) + 2u], SCOPE, STORAGE, ACQ);
                    if ((f & need) != need) {
                        ovl_polls++;
                        if (ovl_polls < ovl_ctl.timeout) {
                            return false;
                        }
                        ovl_flags |= EXPIRED;
                        atomicAdd(ovl_counters.c[1], 1u, SCOPE, STORAGE, RELAXED);
                    }
                }
                k++;
            }
        }
    }
    uint taken = 0u;
    for (uint dy = 0u; dy < ovl_size.y; dy++) {
        for (uint dx = 0u; dx < ovl_size.x; dx++) {
            uint c = ovl_cell(dx, dy);
            if (atomicCompSwap(ovl_cells.w[c + 3u], 0u, 1u, SCOPE, STORAGE, ACQ, STORAGE, RELAXED) != 0u) {
                uint j = 0u;
                for (uint ey = 0u; ey < ovl_size.y && j < taken; ey++) {
                    for (uint ex = 0u; ex < ovl_size.x && j < taken; ex++) {
                        atomicStore(ovl_cells.w[ovl_cell(ex, ey) + 3u], 0u, SCOPE, STORAGE, RELAXED);
                        j++;
                    }
                }
                return false;
            }
            taken++;
        }
    }
    ovl_flags |= HOLDS;
    return true;
}

// Leaves the critical section (at its end, or before a kill or demote inside it).
void ovl_leave() {
    if ((ovl_flags & HOLDS) != 0u) {
        ovl_flags &= ~HOLDS;
        for (uint dy = 0u; dy < ovl_size.y; dy++) {
            for (uint dx = 0u; dx < ovl_size.x; dx++) {
                atomicStore(ovl_cells.w[ovl_cell(dx, dy) + 3u], 0u, SCOPE, STORAGE, REL);
            }
        }
    }
    ovl_finish();
}

// Only so that every function is compiled; never linked.
layout(location = 0) out uvec4 ovl_unused;
void main() {
    if (ovl_begin()) {
        discard;
    }
    ovl_unused = uvec4(ovl_try_enter() ? 1u : 0u);
    ovl_leave();
    ovl_finish();
}

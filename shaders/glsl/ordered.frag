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
// Cells, structure of arrays: every field of every cell is a plane of its
// own, so that the lanes of a subgroup (neighbouring pixels) touch
// neighbouring words rather than one record each (the array-of-records
// cells cost 3-10x a dense plane per access: docs/design/ordered-interlock.md
// §9). Planes of `grid` x `grid_y` words, 8x8 cells contiguous: 0 slots used,
// 1 invocations registered (count mode 3 only; in mode 0 every invocation
// takes a slot), 2 invocations done, 3 mutex, 4-5 finished bits (one per
// slot), 6 flags (1: a key out of range, 2: keys not in increasing slot
// order), 7 unused (the run draw's arrivals, for the guessed slot, are
// the high byte of plane 0); then `slots / 2` planes
// of uvec4, slots 2g and 2g+1 of each cell: (multiplicity << 24 | instance,
// primitive) twice (zero when unused: the reset clears them). A slot holds a key and how many invocations have it (a
// primitive's samples when shading per sample, in the dedup count mode 3; a
// line's fragments ...). The header is zero between draws: the last
// invocation of a draw to finish with a cell resets it.
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
// The same cells, read-only and not coherent: the run draw's lookup. From
// the barrier after the count draw until every invocation of the cell has
// looked its key up, a cell's slot count, registrations, flags and keys do
// not change (the multiplicities do; the lookup masks them out), so their
// loads may be cached; keys are loaded two slots at a time, eight slots at
// once: one round trip per eight slots.
layout(set = 0, binding = 1, std430) readonly buffer OverlapKeys { uvec4 q[]; } ovl_keys;
layout(set = 0, binding = 1, std430) readonly buffer OverlapFixed { uint w[]; } ovl_fixed;
// The same cells a key (two words) at a time, written and read whole, and
// a pair of slots at a time for the reset.
layout(set = 0, binding = 1, std430) coherent buffer OverlapKey { uvec2 k[]; } ovl_key_words;
layout(set = 0, binding = 1, std430) coherent buffer OverlapPairs { uvec4 q[]; } ovl_pairs;
layout(set = 0, binding = 2, std140) uniform OverlapControl {
    uint mode;      // 0 count, 1 run, 2 unordered (mutex only), 3 count merging equal keys
    uint grid;      // cells per row (a multiple of 8, or a power of two below 8); pixels further apart share cells
    uint slots;     // slots per cell (8, 16, 32 or 64: one finished bit each)
    uint timeout;   // polls before a wait gives up and enters under the mutex
    uint reverse;   // testing only: the key order reversed
    uint misses;    // testing only: the key search finds nothing
    uint skip;      // measurement only (read where compiled with MEASURE, SKIP below)
    uint grid_y;    // cells per column (as `grid`); `grid` is per row
    uint shares;    // 1 once a render area larger than the cells was seen: pixels a grid apart share cells
} ovl_ctl;
// 0: cells overflowed, 1: expired waits, 2: keys not found, 3: keys out of range.
layout(set = 0, binding = 3, std430) coherent buffer OverlapCounters { uint c[]; } ovl_counters;

// Set by the rewritten shader before ovl_begin().
uvec2 ovl_origin;   // the fragment's area (in cells: pixels, or samples): origin and size
uvec2 ovl_size;
uvec2 ovl_key;      // (instance index, primitive id)
bool ovl_helper;    // a helper invocation (or demoted): takes part in nothing

// Measurement only (`debug_ordered_without`): the parts left out, read
// from the control block in the library compiled with MEASURE (one cell an
// area) and nowhere else, so that no other module pays for the checks:
// 1 no waits, 2 no protocol in the run draw, 8 no lock nor wait (the lookup
// and the finish kept), 16 no append, 32 no reset (the layer zeroes the
// cells at every submission), 64 no search (keys go unfound).
#ifdef MEASURE
#define SKIP(bits) ((ovl_ctl.skip & (bits)) != 0u)
#else
#define SKIP(bits) false
#endif

// The area's size in cells: compiled as one cell (ONE_CELL, modules without
// a shading rate, whose area is always one pixel or sample), the area's
// loops then run once and the per-cell arrays below do not exist.
#ifdef ONE_CELL
#define AREA uvec2(1u)
#else
#define AREA ovl_size
#endif

// Per-invocation state, for each cell of the area (at most 4x4). The
// first cell's is kept apart, in scalars: an area is one cell unless a
// shading rate applies, and arrays indexed at run time live in memory.
uvec2 ovl_smaller0;    // the slots holding smaller keys
uvec2 ovl_equal0;      // the slots holding this invocation's key; 0: no order in this cell
uint ovl_total0;       // the slots used, or where counted, the invocations registered
#ifndef ONE_CELL
uvec2 ovl_smaller_more[15];
uvec2 ovl_equal_more[15];
uint ovl_total_more[15];
#endif
uint ovl_single;       // bit k: cell k's key is in one slot, this invocation alone on it
uint ovl_counted;      // bit k: cell k's last invocation is found by counting them (below)
uint ovl_left;         // bit k: this invocation has left cell k (its finished bit set)
uint ovl_flags;
uint ovl_polls;

// The header's planes.
const uint USED = 0u;
const uint REGISTERED_IN = 1u;
const uint DONE_IN = 2u;
const uint MUTEX = 3u;
const uint FINISHED_IN = 4u; // and 5
const uint FLAGS = 6u;
// Plane 7 is unused (it held the run draw's arrivals; they are now the
// high byte of the slots-used word: ARRIVAL).
const uint HEADER = 8u;
// Cells of at least this many keys guess their slot before they search.
const uint GUESS_FROM = 8u;

// In a cell of at most 31 slots used whose order holds (not counted), the
// lock is bit 31 of the first word of finished bits: taking it is one
// compare-and-swap that also sees the smaller keys finished, and leaving
// one atomic that sets the finished bit and frees it. Counted cells and
// the unordered mode take the mutex instead.
const uint LOCK = 0x80000000u;

// The flags plane.
const uint OUT_OF_RANGE = 1u;
const uint UNSORTED = 2u;
const uint NONE = 0xffffffffu;

// The slots-used word: the count draw's appends in bits 0-23 (a cell
// reached by 2^24 fragments of one draw is beyond this), the run draw's
// arrivals in bits 24-31.
const uint USED_MASK = 0x00ffffffu;
const uint ARRIVAL = 0x01000000u;
const uint MULT = 0x01000000u;
const uint INSTANCE = 0x00ffffffu;
// ovl_flags
const uint REGISTERED = 1u;
const uint FINISHED = 2u;
const uint HOLDS = 4u;
const uint EXPIRED = 8u;
#ifdef LATE_LOOKUP
// Registered, the lookup not yet made (ovl_resolve).
const uint PENDING = 16u;
#endif

#ifdef ONE_CELL
void ovl_keep(uint k, uvec2 smaller, uvec2 equal, uint total) {
    ovl_smaller0 = smaller;
    ovl_equal0 = equal;
    ovl_total0 = total;
}

uvec2 ovl_smaller_in(uint k) {
    return ovl_smaller0;
}

uvec2 ovl_equal_in(uint k) {
    return ovl_equal0;
}

uint ovl_total_in(uint k) {
    return ovl_total0;
}
#else
void ovl_keep(uint k, uvec2 smaller, uvec2 equal, uint total) {
    if (k == 0u) {
        ovl_smaller0 = smaller;
        ovl_equal0 = equal;
        ovl_total0 = total;
    } else {
        ovl_smaller_more[k - 1u] = smaller;
        ovl_equal_more[k - 1u] = equal;
        ovl_total_more[k - 1u] = total;
    }
}

uvec2 ovl_smaller_in(uint k) {
    return k == 0u ? ovl_smaller0 : ovl_smaller_more[k - 1u];
}

uvec2 ovl_equal_in(uint k) {
    return k == 0u ? ovl_equal0 : ovl_equal_more[k - 1u];
}

uint ovl_total_in(uint k) {
    return k == 0u ? ovl_total0 : ovl_total_more[k - 1u];
}
#endif

uint ovl_plane() {
    return ovl_ctl.grid * ovl_ctl.grid_y;
}

// The cell of a pixel (or sample) of the area, an index into every plane:
// 8x8 cells contiguous, so that a subgroup's lanes share cache lines.
uint ovl_cell(uint dx, uint dy) {
    uvec2 grid = uvec2(ovl_ctl.grid, ovl_ctl.grid_y);
    uvec2 p = ovl_origin + uvec2(dx, dy);
    // Pixels lie past the cells only once the layer has seen a render area
    // larger than them (a uniform branch): then the grid's copies wrap onto
    // it. Elsewhere every pixel is inside (the min keeps the accesses in
    // the buffer all the same).
    if (ovl_ctl.shares != 0u) {
        p %= grid;
    } else {
        p = min(p, grid - 1u);
    }
    if (ovl_ctl.grid < 8u || ovl_ctl.grid_y < 8u) {
        return p.y * ovl_ctl.grid + p.x;
    }
    return (((p.y >> 3u) * (ovl_ctl.grid >> 3u) + (p.x >> 3u)) << 6u) | ((p.y & 7u) << 3u) | (p.x & 7u);
}

// A header word of cell c.
uint ovl_at(uint field, uint c) {
    return field * ovl_plane() + c;
}

// Slot j of cell c: its first word (multiplicity, instance); the next is
// its primitive. Slots 2g and 2g+1 are the uvec4 of plane g.
uint ovl_slot(uint c, uint j) {
    return (HEADER + 2u * (j & ~1u)) * ovl_plane() + 4u * c + 2u * (j & 1u);
}

bool ovl_less(uvec2 a, uvec2 b) {
    if (ovl_ctl.reverse != 0u) {
        uvec2 t = a;
        a = b;
        b = t;
    }
    return a.x < b.x || (a.x == b.x && a.y < b.y);
}

uvec2 ovl_bit(uint j) {
    return j < 32u ? uvec2(1u << j, 0u) : uvec2(0u, 1u << (j - 32u));
}

// The slots below j.
uvec2 ovl_below(uint j) {
    return j < 32u ? uvec2((1u << j) - 1u, 0u) : uvec2(0xffffffffu, (1u << (j - 32u)) - 1u);
}

// The count draw, after writing slot s's key: unless it is above slot
// s - 1's, the cell's keys are not in increasing order (then the run draw
// scans them all; where they are, it searches). Slot s - 1 was taken
// before s, and its key may still be on its way: a few polls, and a key
// not seen counts as out of order.
void ovl_check_order(uint c, uint s) {
    uint at = ovl_slot(c, s - 1u);
    uint seen = 0u;
    // Measurement (`debug_ordered_without=order_wait`): one look, a key not
    // stored yet taken as out of order (the run draw's linear path then).
    uint most = SKIP(128u) ? 1u : 256u;
    for (uint tries = 0u; seen == 0u && tries < most; tries++) {
        seen = atomicLoad(ovl_cells.w[at], SCOPE, STORAGE, RELAXED);
    }
    // Its first word seen, the key (stored whole) is read whole.
    uvec2 before = seen == 0u ? uvec2(0u) : ovl_key_words.k[at / 2u];
    if (before.x == 0u || !ovl_less(uvec2(before.x & INSTANCE, before.y), ovl_key)) {
        atomicOr(ovl_cells.w[ovl_at(FLAGS, c)], UNSORTED, SCOPE, STORAGE, RELAXED);
    }
}

// A new slot for the key, or (dedup) one more invocation on its slot.
void ovl_append(uint c, bool dedup) {
    if (dedup) {
        uint n = atomicLoad(ovl_cells.w[ovl_at(USED, c)], SCOPE, STORAGE, ACQ) & USED_MASK;
        for (uint j = 0u; j < min(n, ovl_ctl.slots); j++) {
            uint at = ovl_slot(c, j);
            uint hi = ovl_cells.w[at];
            if ((hi & INSTANCE) == ovl_key.x && ovl_cells.w[at + 1u] == ovl_key.y) {
                atomicAdd(ovl_cells.w[at], MULT, SCOPE, STORAGE, RELAXED);
                return;
            }
        }
    }
    // (The arrivals byte is zero here but where the cells are not reset
    // between draws, `debug_ordered_without=reset`.)
    uint s = atomicAdd(ovl_cells.w[ovl_at(USED, c)], 1u, SCOPE, STORAGE, RELAXED) & USED_MASK;
    if (s < ovl_ctl.slots) {
        // One store of both words, so that a reader sees the key whole.
        ovl_key_words.k[ovl_slot(c, s) / 2u] = uvec2(MULT | ovl_key.x, ovl_key.y);
        if (s > 0u) {
            ovl_check_order(c, s);
        }
    } else if (s == ovl_ctl.slots) {
        atomicAdd(ovl_counters.c[0], 1u, SCOPE, STORAGE, RELAXED);
    }
}

// The count draw: register in every cell of the area. In mode 0 an
// invocation is one slot (one atomic and a key's store); in mode 3 equal
// keys share a slot: appends take the cell's mutex (free in the count draw)
// and invocations are counted apart.
void ovl_count(bool dedup) {
    for (uint dy = 0u; dy < AREA.y; dy++) {
        for (uint dx = 0u; dx < AREA.x; dx++) {
            uint c = ovl_cell(dx, dy);
            if (dedup) {
                atomicAdd(ovl_cells.w[ovl_at(REGISTERED_IN, c)], 1u, SCOPE, STORAGE, RELAXED);
            }
            if (ovl_key.x > INSTANCE) {
                if (!dedup) {
                    atomicAdd(ovl_cells.w[ovl_at(USED, c)], 1u, SCOPE, STORAGE, RELAXED);
                }
                if ((atomicOr(ovl_cells.w[ovl_at(FLAGS, c)], OUT_OF_RANGE, SCOPE, STORAGE, RELAXED) & OUT_OF_RANGE) == 0u) {
                    atomicAdd(ovl_counters.c[3], 1u, SCOPE, STORAGE, RELAXED);
                }
            } else if (!dedup) {
                ovl_append(c, false);
            } else {
                // One try per iteration, and the winner's append and release
                // inside that iteration (both paths meet before the loop goes
                // on: no lane spins past a holder of its own subgroup that
                // has not run yet). Bounded: an expired wait appends a slot
                // of its own without the mutex (equal keys in two slots are
                // still one group, at the cost of a slot).
                bool done = false;
                for (uint tries = 0u; !done; tries++) {
                    if (tries >= ovl_ctl.timeout) {
                        atomicAdd(ovl_counters.c[1], 1u, SCOPE, STORAGE, RELAXED);
                        ovl_append(c, false);
                        done = true;
                    } else if (atomicCompSwap(ovl_cells.w[ovl_at(MUTEX, c)], 0u, 1u, SCOPE, STORAGE, ACQ, STORAGE, RELAXED) == 0u) {
                        ovl_append(c, true);
                        atomicStore(ovl_cells.w[ovl_at(MUTEX, c)], 0u, SCOPE, STORAGE, REL);
                        done = true;
                    }
                }
            }
        }
    }
}

// This invocation's slot in a cell whose keys are in increasing order
// (NONE if it is not there), and its multiplicity: a binary search, one
// load a step (q: the cell's first pair of slots).
uint ovl_search(uint q, uint plane, uint n, out uint mult) {
    uint lo = 0u;
    uint hi = ovl_ctl.misses != 0u ? 0u : n;
    mult = 0u;
    while (lo < hi) {
        uint mid = (lo + hi) / 2u;
        uvec4 pair = ovl_keys.q[q + (mid / 2u) * plane];
        uvec2 slot = (mid & 1u) == 0u ? pair.xy : pair.zw;
        uvec2 other = uvec2(slot.x & INSTANCE, slot.y);
        if (other == ovl_key) {
            mult = slot.x / MULT;
            return mid;
        }
        if (ovl_less(other, ovl_key)) {
            lo = mid + 1u;
        } else {
            hi = mid;
        }
    }
    return NONE;
}

// The run draw: the slots of smaller keys and of this key in every cell
// (after the barrier that follows the count draw, the cells hold every key).
void ovl_lookup() {
    uint k = 0u;
    ovl_single = 0u;
    ovl_counted = 0u;
    uint plane = ovl_plane();
    for (uint dy = 0u; dy < AREA.y; dy++) {
        for (uint dx = 0u; dx < AREA.x; dx++) {
            uint c = ovl_cell(dx, dy);
            // The slots used (the count draw's, bits 0-23) and, in the same
            // atomic, this invocation's arrival among the run draw's (bits
            // 24-31, which the count draw leaves zero): one round trip for
            // both, where the slot guess below would take a second.
            uint word = SKIP(256u) ? ovl_fixed.w[ovl_at(USED, c)]
                                   : atomicAdd(ovl_cells.w[ovl_at(USED, c)], ARRIVAL, SCOPE, STORAGE, RELAXED);
            uint used = word & USED_MASK;
            uint registered = ovl_fixed.w[ovl_at(REGISTERED_IN, c)];
            uint flags = ovl_fixed.w[ovl_at(FLAGS, c)];
            uint n = min(used, ovl_ctl.slots);
            // The uvec4 of slots 0 and 1; up to four such loads at once,
            // as many as there are slots used.
            uint q = (HEADER / 4u) * plane + c;
            uvec2 smaller = uvec2(0u);
            uvec2 equal = uvec2(0u);
            uint mult = 0u;
            uint j = 0u;
            bool degraded = used > ovl_ctl.slots || (flags & OUT_OF_RANGE) != 0u;
            if (!degraded && (flags & UNSORTED) == 0u) {
                uint found = NONE;
                if (n >= GUESS_FROM && ovl_ctl.misses == 0u && !SKIP(64u | 256u)) {
                    // The run draw's fragments of a cell mostly arrive in
                    // the count draw's order, the order of the slots: the
                    // t-th to arrive looks at slot t first (one load where
                    // the search takes log2(n); t wraps at 256, a wrong
                    // guess is only a search). The
                    // keys here are strictly increasing, so the slot that
                    // holds this key is the search's.
                    uint t = word >> 24u;
                    if (t < n) {
                        uvec4 pair = ovl_keys.q[q + (t / 2u) * plane];
                        uvec2 slot = (t & 1u) == 0u ? pair.xy : pair.zw;
                        if (uvec2(slot.x & INSTANCE, slot.y) == ovl_key) {
                            found = t;
                            mult = slot.x / MULT;
                        }
                    }
                }
                if (found == NONE && !SKIP(64u)) {
                    found = ovl_search(q, plane, n, mult);
                }
                if (found != NONE) {
                    smaller = ovl_below(found);
                    equal = ovl_bit(found);
                }
            } else do {
                uint at = q + (j / 2u) * plane;
                // Four slots a step (two loads in flight): this scan is the
                // shader's register peak; eight a step (four uvec4 held)
                // took 32-33 registers on an H200, four 29 — the occupancy
                // step at 32 cost 12% of the OIT scene (design §15).
                uvec4 s[2] = uvec4[2](ovl_keys.q[at], j + 2u < n ? ovl_keys.q[at + plane] : uvec4(0u));
                for (uint i = 0u; i < 4u; i++) {
                    uvec4 pair = s[i / 2u];
                    uvec2 other = (i & 1u) == 0u ? pair.xy : pair.zw;
                    other.x &= INSTANCE;
                    if (j + i < n) {
                        if (other == ovl_key) {
                            equal |= ovl_bit(j + i);
                            mult += ((i & 1u) == 0u ? pair.x : pair.z) / MULT;
                        } else if (ovl_less(other, ovl_key)) {
                            smaller |= ovl_bit(j + i);
                        }
                    }
                }
                j += 4u;
            } while (j < n);
            if (degraded) {
                smaller = uvec2(0u);
                equal = uvec2(0u);
            } else if (equal == uvec2(0u)) {
                atomicAdd(ovl_counters.c[2], 1u, SCOPE, STORAGE, RELAXED);
            } else if (mult == 1u && bitCount(equal.x) + bitCount(equal.y) == 1) {
                // One slot with one invocation left on it: this one. (With
                // the key in several slots the one left is not known here.)
                ovl_single |= 1u << k;
            }
            // The last invocation to finish with the cell resets it. Where
            // the cell keeps order in one word of finished bits, it is the
            // one that sets the last bit (slots up to 31: bit 31 is the lock); elsewhere every invocation counts
            // itself done, and the last is the one that makes the count the
            // invocations registered (mode 0 registers one per slot used).
            if (degraded || used > 31u) {
                ovl_counted |= 1u << k;
                ovl_keep(k, smaller, equal, registered != 0u ? registered : used);
            } else {
                ovl_keep(k, smaller, equal, used);
            }
            k++;
        }
    }
}

// At the entry, after the inputs are set: true in the count draw, where the
// caller terminates the invocation.
bool ovl_begin() {
    ovl_flags = 0u;
    ovl_polls = 0u;
    ovl_counted = 0u;
    ovl_left = 0u;
    // Pixels a grid apart share cells: each copy of the grid orders its own
    // keys, the copy's index above the instance (bits 20-23), so that one
    // primitive covering two pixels of a cell is two keys, not one twice.
    // An instance of 2^20 or more in a copy other than the first is out of
    // range (counted, logged). Only where the layer has seen a render area
    // larger than the cells (a uniform branch).
    if (ovl_ctl.shares != 0u) {
        uvec2 copy = ovl_origin / uvec2(ovl_ctl.grid, ovl_ctl.grid_y);
        uint alias = min(copy.x + 4u * copy.y, 15u);
        if (alias != 0u) {
            ovl_key.x = ovl_key.x >= 0x100000u ? 0xffffffffu : ovl_key.x | (alias << 20u);
        }
    }
    bool counting = ovl_ctl.mode == 0u || ovl_ctl.mode == 3u;
    if (ovl_helper) {
        return counting;
    }
    if (counting) {
        if (!SKIP(16u)) {
            ovl_count(ovl_ctl.mode == 3u);
        }
        return true;
    }
    if (ovl_ctl.mode == 1u && !SKIP(2u)) {
#ifdef LATE_LOOKUP
        ovl_flags = REGISTERED | PENDING;
#else
        ovl_flags = REGISTERED;
        ovl_lookup();
#endif
    }
    return false;
}

// LATE_LOOKUP (measurement, `debug_ordered_without=early_lookup`): the
// lookup is made where the invocation first needs it — its first try to
// enter a section, or its finish where it never reaches one — rather than
// at the entry, so that the cell's state (the smaller and equal slots, the
// total, the bits) is not held in registers through the application's code
// before the section; the lookup's own loads then meet the application's
// values live at the section instead.
#ifdef LATE_LOOKUP
void ovl_resolve() {
    if ((ovl_flags & PENDING) != 0u) {
        ovl_flags &= ~PENDING;
        ovl_lookup();
    }
}
#endif

// Resets cell c, the area's k-th (its last invocation of the draw): the
// keys of the slots used (the count draw's order check reads an unwritten
// slot as zero), then the header words the draw wrote — the done count
// and the second word of finished bits only in a counted cell (they are
// written nowhere else).
void ovl_reset(uint c, uint k) {
    uint n = min(atomicLoad(ovl_cells.w[ovl_at(USED, c)], SCOPE, STORAGE, RELAXED) & USED_MASK, ovl_ctl.slots);
    uint plane = ovl_plane();
    for (uint j = 0u; j < n; j += 2u) {
        ovl_pairs.q[(HEADER / 4u + j / 2u) * plane + c] = uvec4(0u);
    }
    atomicStore(ovl_cells.w[ovl_at(USED, c)], 0u, SCOPE, STORAGE, RELAXED);
    atomicStore(ovl_cells.w[ovl_at(REGISTERED_IN, c)], 0u, SCOPE, STORAGE, RELAXED);
    atomicStore(ovl_cells.w[ovl_at(FINISHED_IN, c)], 0u, SCOPE, STORAGE, RELAXED);
    if ((ovl_counted & (1u << k)) != 0u) {
        atomicStore(ovl_cells.w[ovl_at(DONE_IN, c)], 0u, SCOPE, STORAGE, RELAXED);
        atomicStore(ovl_cells.w[ovl_at(FINISHED_IN + 1u, c)], 0u, SCOPE, STORAGE, RELAXED);
    }
    atomicStore(ovl_cells.w[ovl_at(FLAGS, c)], 0u, SCOPE, STORAGE, RELAXED);
}

// Sets slot j's finished bit in cell c (of `total` slots); true when it
// was the cell's last (only meaningful where the cell is not counted:
// at most 31 slots, all in the first word).
bool ovl_finished(uint c, uint j, uint total) {
    uint bit = 1u << (j % 32u);
    uint before = atomicOr(ovl_cells.w[ovl_at(FINISHED_IN + j / 32u, c)], bit, SCOPE, STORAGE, REL);
    return ((before | bit) & ~LOCK) == (1u << total) - 1u;
}

// Leaves the area's cells for good: one invocation less on its slot (the
// last sets the slot's finished bit), and the last invocation of the draw in
// a cell resets the cell's header. Never blocks; runs once.
void ovl_finish() {
    if ((ovl_flags & (REGISTERED | FINISHED)) != REGISTERED) {
        return;
    }
#ifdef LATE_LOOKUP
    ovl_resolve();
#endif
    ovl_flags |= FINISHED;
    uint k = 0u;
    for (uint dy = 0u; dy < AREA.y; dy++) {
        for (uint dx = 0u; dx < AREA.x; dx++) {
            if ((ovl_left & (1u << k)) != 0u) {
                k++;
                continue;
            }
            uint c = ovl_cell(dx, dy);
            uvec2 equal = ovl_equal_in(k);
            uint total = ovl_total_in(k);
            bool left = false;
            bool last = false;
            if ((ovl_single & (1u << k)) != 0u) {
                // No other invocation decrements this slot: it is finished.
                uint j = equal.x != 0u ? uint(findLSB(equal.x)) : 32u + uint(findLSB(equal.y));
                last = ovl_finished(c, j, total);
                left = true;
            }
            for (uint word = 0u; word < 2u && !left; word++) {
                uint bits = word == 0u ? equal.x : equal.y;
                while (bits != 0u && !left) {
                    uint j = uint(findLSB(bits)) + 32u * word;
                    bits &= bits - 1u;
                    uint at = ovl_slot(c, j);
                    for (uint tries = 0u; tries < 256u; tries++) {
                        uint hi = atomicLoad(ovl_cells.w[at], SCOPE, STORAGE, RELAXED);
                        if (hi < MULT) {
                            break; // every invocation of this slot has left
                        }
                        if (atomicCompSwap(ovl_cells.w[at], hi, hi - MULT, SCOPE, STORAGE, RELAXED, STORAGE, RELAXED) == hi) {
                            if (hi < 2u * MULT) {
                                last = ovl_finished(c, j, total);
                            }
                            left = true;
                            break;
                        }
                    }
                }
            }
            if ((ovl_counted & (1u << k)) != 0u) {
                last = atomicAdd(ovl_cells.w[ovl_at(DONE_IN, c)], 1u, SCOPE, STORAGE, ACQREL) + 1u == total;
            } else if (last) {
                // Every finished bit was set with release: see them all.
                memoryBarrier(SCOPE, STORAGE, ACQ);
            }
            if (last && !SKIP(32u)) {
                ovl_reset(c, k);
            }
            k++;
        }
    }
}

// Whether cell k's lock is the bit in its finished word.
bool ovl_combined(uint k) {
    return ovl_ctl.mode == 1u && (ovl_counted & (1u << k)) == 0u;
}

// Frees the locks of the first `taken` cells of the area (taken in a try
// that failed: nothing written under them).
void ovl_give(uint taken) {
    uint k = 0u;
    for (uint dy = 0u; dy < AREA.y && k < taken; dy++) {
        for (uint dx = 0u; dx < AREA.x && k < taken; dx++) {
            uint c = ovl_cell(dx, dy);
            if (ovl_combined(k)) {
                atomicAnd(ovl_cells.w[ovl_at(FINISHED_IN, c)], ~LOCK, SCOPE, STORAGE, RELAXED);
            } else {
                atomicStore(ovl_cells.w[ovl_at(MUTEX, c)], 0u, SCOPE, STORAGE, RELAXED);
            }
            k++;
        }
    }
}

// One try of cell k: its smaller keys finished (unless `ordered` is false)
// and its lock taken; `ready` says whether the first held.
bool ovl_take(uint c, uint k, bool ordered, out bool ready) {
    uvec2 need = ordered && !SKIP(1u) ? ovl_smaller_in(k) : uvec2(0u);
    if (ovl_combined(k)) {
        uint at = ovl_at(FINISHED_IN, c);
        uint old;
        if (ovl_polls == 0u) {
            // The usual case first: every smaller key finished, nothing
            // else, the lock free. Later tries load first (polling by
            // compare-and-swap measured no faster on an H200).
            old = atomicCompSwap(ovl_cells.w[at], need.x, need.x | LOCK, SCOPE, STORAGE, ACQ, STORAGE, RELAXED);
            if (old == need.x) {
                ready = true;
                return true;
            }
        } else {
            old = atomicLoad(ovl_cells.w[at], SCOPE, STORAGE, RELAXED);
        }
        ready = (old & need.x) == need.x;
        // Other finished bits (an invocation out of order: expired, or
        // not found) or a free lock seen by a load: take it as it is.
        return ready && (old & LOCK) == 0u
            && atomicCompSwap(ovl_cells.w[at], old, old | LOCK, SCOPE, STORAGE, ACQ, STORAGE, RELAXED) == old;
    }
    ready = true;
    if (need != uvec2(0u)) {
        // Relaxed: the mutex taken below (acquire) synchronizes with the
        // predecessor's release of it, which came before its finished bit;
        // no fence on every poll. A word of finished bits is read only
        // where it is needed.
        uvec2 f = uvec2(0u);
        if (need.x != 0u) {
            f.x = atomicLoad(ovl_cells.w[ovl_at(FINISHED_IN, c)], SCOPE, STORAGE, RELAXED);
        }
        if (need.y != 0u) {
            f.y = atomicLoad(ovl_cells.w[ovl_at(FINISHED_IN + 1u, c)], SCOPE, STORAGE, RELAXED);
        }
        ready = (f & need) == need;
    }
    return ready && atomicCompSwap(ovl_cells.w[ovl_at(MUTEX, c)], 0u, 1u, SCOPE, STORAGE, ACQ, STORAGE, RELAXED) == 0u;
}

// One try to enter the critical section: every smaller key has finished in
// each cell (or the wait expired, or the section runs a second time), and
// every cell's lock is free (all or none are taken: no invocation holds one
// while it waits).
bool ovl_try_enter() {
    if (ovl_helper || (ovl_ctl.mode == 1u && SKIP(10u))) {
        return true;
    }
#ifdef LATE_LOOKUP
    ovl_resolve();
#endif
    bool ordered = (ovl_flags & (REGISTERED | EXPIRED | FINISHED)) == REGISTERED;
    uint taken = 0u;
    for (uint dy = 0u; dy < AREA.y; dy++) {
        for (uint dx = 0u; dx < AREA.x; dx++) {
            bool ready;
            if (!ovl_take(ovl_cell(dx, dy), taken, ordered, ready)) {
                ovl_give(taken);
                if (!ready) {
                    ovl_polls++;
                    if (ovl_polls >= ovl_ctl.timeout) {
                        ovl_flags |= EXPIRED;
                        atomicAdd(ovl_counters.c[1], 1u, SCOPE, STORAGE, RELAXED);
                    }
                } else if (ovl_polls == 0u) {
                    ovl_polls = 1u; // load before the next swap
                }
                return false;
            }
            taken++;
        }
    }
    ovl_flags |= HOLDS;
    return true;
}

// Leaves the critical section (at its end, or before a kill or demote
// inside it). Where the cell's lock is the bit in its finished word and
// this invocation alone has its key, one atomic frees the lock and sets the
// finished bit.
void ovl_leave() {
    if ((ovl_flags & HOLDS) != 0u) {
        ovl_flags &= ~HOLDS;
        uint k = 0u;
        bool registered = (ovl_flags & (REGISTERED | FINISHED)) == REGISTERED;
        for (uint dy = 0u; dy < AREA.y; dy++) {
            for (uint dx = 0u; dx < AREA.x; dx++) {
                uint c = ovl_cell(dx, dy);
                if (!ovl_combined(k)) {
                    atomicStore(ovl_cells.w[ovl_at(MUTEX, c)], 0u, SCOPE, STORAGE, REL);
                } else if (registered && (ovl_single & (1u << k)) != 0u) {
                    uint bit = 1u << uint(findLSB(ovl_equal_in(k).x));
                    // Adding bit + LOCK sets the bit and clears the lock (held).
                    uint before = atomicAdd(ovl_cells.w[ovl_at(FINISHED_IN, c)], bit + LOCK, SCOPE, STORAGE, REL);
                    ovl_left |= 1u << k;
                    if (((before & ~LOCK) | bit) == (1u << ovl_total_in(k)) - 1u && !SKIP(32u)) {
                        memoryBarrier(SCOPE, STORAGE, ACQ);
                        ovl_reset(c, k);
                    }
                } else {
                    atomicAnd(ovl_cells.w[ovl_at(FINISHED_IN, c)], ~LOCK, SCOPE, STORAGE, REL);
                }
                k++;
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

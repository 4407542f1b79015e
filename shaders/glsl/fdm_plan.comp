#version 450
// The density-map GPU plan (layer/src/fdm/gpu_plan.rs): one workgroup per
// region of the render area, its 64 invocations taking the region's texels
// in turn (a region of a full-HD map at 8-pixel texels has ~500 of them: one
// invocation walking them all cost ~180 us on an H200), their areas
// min-reduced in shared memory; invocation 0 then writes the region's
// choices. A region is a rectangle of framebuffer pixels
// (whole map texels where it can be); per view it gets, per axis, the
// largest power-of-two area no larger than what every texel any of its
// pixels fetches asks for (1/density, at most the region's cap: the layer's
// maximum area and its start's alignment). A pixel p of view v fetches
// texel (p - offset_v) / texel_size of the view's map layer, clamped to the
// map (the spec's density fetch with VK_EXT_fragment_density_map_offset).
// Of the candidate areas (a mask of the nine) the view takes the largest
// (most pixels; the first by index on a tie) no larger on either axis than
// that: 1x1 is always one. The view's choice (index log2(x) * 3 + log2(y))
// is written for the upscale, and one predicate per candidate area: 1 where
// any view chose it; the areas asked before the candidates bit, or-ed into
// one word for the layer to learn from (`fdm_dynamic_areas=asked`). The replay of (region, area) is recorded under conditional rendering
// on that predicate; every view of it renders, each view's upscale takes
// the area that view chose.
layout(local_size_x = 64) in;
const uint LANES = 64u;
shared uint lane_x, lane_y;
layout(set = 0, binding = 0, std430) buffer Plan { uint words[]; };
// Word offsets into `words`: the predicates (9 per region) at 0, the
// choices (a region's per view, views * regions) at `choices`, the region
// table (8 words per region: pixel x0, y0, x1, y1 (exclusive), cap x, y)
// at `table`, per view index below `views` 4 words (offset x, y as int, the
// word where its map layer's texels start, 1 if the view is rendered) at
// `views_at`; texels are R8G8, two per word, rows of `map_width`. A view
// not rendered gets choice 9 (none).
layout(push_constant) uniform Params {
    uint map_width;
    uint map_height;
    uint regions;
    uint choices;
    uint table;
    uint views_at;
    uint views;
    // Bit 0: every view takes the smallest area any view chose
    // (debug_fdm_without=per_view_areas, a control). Bits 1-9: the
    // candidate areas, bit 1 + i for area index i.
    uint flags;
    uvec2 texel;
    // Not 0: the viewport masks' word offset (design E of
    // docs/design/density-map-recording.md): per candidate area i and group
    // g of 16 regions, word masks + i * groups + g holds bit r % 16 for each
    // region r of the group that chose area i (any view), from 0.
    uint masks;
    // The word where each region or-s the bit of every area a view asked
    // for, before the candidates bit (zeroed before the dispatch).
    uint asked;
} pc;

// The largest candidate area no larger than (ax, ay) on either axis.
uvec2 best(uint ax, uint ay) {
    uvec2 b = uvec2(1u);
    for (uint i = 0u; i < 9u; i++) {
        uint cx = 1u << (i / 3u), cy = 1u << (i % 3u);
        if (((pc.flags >> (1u + i)) & 1u) != 0u && cx <= ax && cy <= ay && cx * cy > b.x * b.y) {
            b = uvec2(cx, cy);
        }
    }
    return b;
}

uint index_of(uvec2 a) {
    return uint(findLSB(a.x)) * 3u + uint(findLSB(a.y));
}

uint area_for(uint d, uint cap) {
    if (d == 0u) {
        return 1u;
    }
    uint a = 1u;
    while (a * 2u <= cap && a * 2u * d <= 255u) {
        a *= 2u;
    }
    return a;
}

// The texels pixels [p0, p1) fetch on one axis through offset o.
uvec2 texels(uint p0, uint p1, int o, uint t, uint n) {
    int a = (int(p0) - o) >= 0 ? (int(p0) - o) / int(t) : -1;
    int b = (int(p1) - 1 - o) >= 0 ? (int(p1) - 1 - o) / int(t) : -1;
    return uvec2(clamp(a, 0, int(n) - 1), clamp(b, 0, int(n) - 1) + 1);
}

void main() {
    uint r = gl_WorkGroupID.x;
    uint lane = gl_LocalInvocationIndex;
    if (r >= pc.regions) {
        return;
    }
    uint b = pc.table + r * 8u;
    uint x0 = words[b], y0 = words[b + 1u], x1 = words[b + 2u], y1 = words[b + 3u];
    uint least_x = words[b + 4u], least_y = words[b + 5u];
    uint asked = 0u;
    for (uint v = 0u; v < pc.views; v++) {
        uint vb = pc.views_at + v * 4u;
        if (words[vb + 3u] == 0u) {
            if (lane == 0u) {
                words[pc.choices + v * pc.regions + r] = 9u;
            }
            continue;
        }
        int ox = int(words[vb]), oy = int(words[vb + 1u]);
        uint base = words[vb + 2u];
        uvec2 tx = texels(x0, x1, ox, pc.texel.x, pc.map_width);
        uvec2 ty = texels(y0, y1, oy, pc.texel.y, pc.map_height);
        uint cap_x = words[b + 4u], cap_y = words[b + 5u];
        if (lane == 0u) {
            lane_x = cap_x;
            lane_y = cap_y;
        }
        memoryBarrierShared();
        barrier();
        // This lane's texels of the region (every LANES-th), each asking for
        // at most the cap (the caps are powers of two, so the minimum over
        // texels of each texel's area under the cap is the region's).
        uint ax = cap_x, ay = cap_y;
        uint columns = tx.y - tx.x, count = columns * (ty.y - ty.x);
        for (uint n = lane; n < count; n += LANES) {
            uint k = (ty.x + n / columns) * pc.map_width + tx.x + n % columns;
            uint w = words[base + k / 2u];
            uint t = (k & 1u) == 0u ? (w & 0xffffu) : (w >> 16u);
            ax = min(ax, area_for(t & 0xffu, cap_x));
            ay = min(ay, area_for(t >> 8u, cap_y));
        }
        atomicMin(lane_x, ax);
        atomicMin(lane_y, ay);
        memoryBarrierShared();
        barrier();
        ax = lane_x;
        ay = lane_y;
        // Every lane read the reduction before the next view's reset.
        barrier();
        asked |= 1u << index_of(uvec2(ax, ay));
        uvec2 c = best(ax, ay);
        if (lane == 0u) {
            words[pc.choices + v * pc.regions + r] = index_of(c);
        }
        least_x = min(least_x, c.x);
        least_y = min(least_y, c.y);
    }
    if (lane != 0u) {
        return;
    }
    atomicOr(words[pc.asked], asked);
    uint chosen_by_any = 0u;
    for (uint v = 0u; v < pc.views; v++) {
        uint at = pc.choices + v * pc.regions + r;
        if (words[pc.views_at + v * 4u + 3u] == 0u) {
            continue;
        }
        if ((pc.flags & 1u) != 0u) {
            words[at] = index_of(best(least_x, least_y));
        }
        chosen_by_any |= 1u << words[at];
    }
    for (uint i = 0u; i < 9u; i++) {
        words[r * 9u + i] = (chosen_by_any >> i) & 1u;
    }
    if (pc.masks != 0u) {
        uint groups = (pc.regions + 15u) / 16u;
        for (uint i = 0u; i < 9u; i++) {
            if (((chosen_by_any >> i) & 1u) != 0u) {
                atomicOr(words[pc.masks + i * groups + r / 16u], 1u << (r % 16u));
            }
        }
    }
}

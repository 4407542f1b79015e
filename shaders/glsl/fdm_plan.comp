#version 450
// The density-map GPU plan (layer/src/fdm/gpu_plan.rs): one invocation per
// region of the render area. A region is a block of whole map texels; it
// gets, per axis, the largest power-of-two area no larger than what every
// texel in it asks for (1/density, at most the region's cap: the layer's
// maximum area and its start's alignment), and writes one predicate per
// candidate area (index log2(x) * 3 + log2(y)): 1 for its area, 0 for the
// others. The replay of (region, area) is recorded under conditional
// rendering on that predicate.
layout(local_size_x = 64) in;
layout(set = 0, binding = 0, std430) buffer Plan { uint words[]; };
// Word offsets into `words`: the region table (8 words per region: first
// texel x, y, end texel x, y (exclusive), cap x, y) and the map's texels
// (R8G8, two per word, rows of `map_width` texels).
layout(push_constant) uniform Params {
    uint map_width;
    uint regions;
    uint table;
    uint texels;
} pc;

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

void main() {
    uint r = gl_GlobalInvocationID.x;
    if (r >= pc.regions) {
        return;
    }
    uint b = pc.table + r * 8u;
    uint x0 = words[b], y0 = words[b + 1u], x1 = words[b + 2u], y1 = words[b + 3u];
    uint ax = words[b + 4u], ay = words[b + 5u];
    for (uint y = y0; y < y1; y++) {
        for (uint x = x0; x < x1; x++) {
            uint k = y * pc.map_width + x;
            uint w = words[pc.texels + k / 2u];
            uint t = (k & 1u) == 0u ? (w & 0xffffu) : (w >> 16u);
            ax = min(ax, area_for(t & 0xffu, ax));
            ay = min(ay, area_for(t >> 8u, ay));
        }
    }
    uint chosen = uint(findLSB(ax)) * 3u + uint(findLSB(ay));
    for (uint i = 0u; i < 9u; i++) {
        words[r * 9u + i] = i == chosen ? 1u : 0u;
    }
}

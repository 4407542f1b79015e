#version 450
// The GPU plan's region clears (layer/src/fdm/gpu_plan.rs): in each area's
// render pass instance, one instanced draw whose instance r covers region r
// of that area's scratch target (the region's pixels / area, a partial
// fragment at its end included) when the plan chose this area for the
// region in some view (its predicate), and collapses otherwise; the
// fragment shader (fdm_clear.frag) writes the pass's clear colours, the
// depth is the clear depth, the stencil the pipeline's reference. One draw
// instead of a vkCmdClearAttachments under its own predicate per region.
layout(set = 0, binding = 1, std430) readonly buffer Plan { uint words[]; };
// Word offsets into `words`: the predicates (9 per region) at 0, the region
// bounds at `bounds` (columns + 1 x starts, then rows + 1 y starts), the
// clear values at `clears` (8 colours of 4 words, then the depth's bits);
// `extent` is the viewport's size (the viewport starts at 0, 0).
layout(push_constant) uniform Params {
    uvec2 area;
    uvec2 extent;
    uint area_index;
    uint columns;
    uint rows;
    uint bounds;
    uint clears;
} pc;

layout(location = 0) flat out vec4 colours[8];

void main() {
    uint r = uint(gl_InstanceIndex);
    for (uint k = 0u; k < 8u; k++) {
        uint w = pc.clears + 4u * k;
        colours[k] = uintBitsToFloat(uvec4(words[w], words[w + 1u], words[w + 2u], words[w + 3u]));
    }
    if (words[r * 9u + pc.area_index] == 0u) {
        // Degenerate (zero area, inside the clip volume: nothing is clipped).
        gl_Position = vec4(0.0, 0.0, 0.0, 1.0);
        return;
    }
    const uint corner[6] = uint[6](0u, 1u, 2u, 2u, 1u, 3u);
    uint c = corner[gl_VertexIndex];
    uint cx = r % pc.columns, cy = r / pc.columns;
    uint xs = pc.bounds, ys = pc.bounds + pc.columns + 1u;
    uvec2 a = uvec2(words[xs + cx], words[ys + cy]) / pc.area;
    uvec2 b = (uvec2(words[xs + cx + 1u], words[ys + cy + 1u]) + pc.area - 1u) / pc.area;
    vec2 p = vec2((c & 1u) != 0u ? b.x : a.x, (c & 2u) != 0u ? b.y : a.y);
    gl_Position = vec4(p / vec2(pc.extent) * 2.0 - 1.0, uintBitsToFloat(words[pc.clears + 32u]), 1.0);
}

#version 450
// The host plan's composite in a compute shader (layer/src/fdm/composite.rs),
// where the attachment can be written as a storage image: one dispatch per
// area (and view layer) over every merged rectangle of that area's bins,
// each workgroup one 8x8 tile of one rectangle, each invocation one pixel p
// taking texel p >> log2(area) of the area's scratch target (the
// rectangle's start is aligned to its area), the nearest texel as the drawn
// composite takes it. No raster back end: on GPUs with few of them a
// full-resolution draw costs more than the memory traffic. ARRAY: the
// scratch target is layered (a multiview pass's), the dispatch's view reads
// `layer`; the attachment is written through a 2D view of the layer.
// PLAN: the GPU plan's upscale instead (below).
layout(local_size_x = 8, local_size_y = 8) in;
#ifdef ARRAY
layout(set = 0, binding = 0) uniform sampler2DArray scratch;
#else
layout(set = 0, binding = 0) uniform sampler2D scratch;
#endif
// No format: the attachment's own (shaderStorageImageWriteWithoutFormat).
layout(set = 0, binding = 1) writeonly uniform image2D target;
#ifdef PLAN
// The GPU plan's buffer: the region bounds at `bounds` (columns + 1 x
// starts, then the y starts), the choices at `choices` (per view, per
// region, the index of the area chosen).
layout(set = 0, binding = 2, std430) readonly buffer Table {
    uint words[];
} table;
layout(push_constant) uniform Params {
    ivec2 log2_area;
    uint area_index;
    int layer;
    uint columns;
    uint bounds;
    uint choices;
    uint regions;
    uint view;
} pc;

// PLAN: the GPU plan's upscale (layer/src/fdm/gpu_plan.rs), a dispatch per
// area and view whose workgroup z is a region: the workgroups of a region
// that chose another area in this view return at once; each invocation of
// the others takes one scratch texel and stores it into the pixels it
// covers in the region.
void main() {
    uint r = gl_WorkGroupID.z;
    if (table.words[pc.choices + pc.view * pc.regions + r] != pc.area_index) {
        return;
    }
    uint cx = r % pc.columns;
    uint cy = r / pc.columns;
    uint xs = pc.bounds;
    uint ys = pc.bounds + pc.columns + 1u;
    ivec2 a = ivec2(table.words[xs + cx], table.words[ys + cy]);
    ivec2 b = ivec2(table.words[xs + cx + 1u], table.words[ys + cy + 1u]);
    ivec2 t = (a >> pc.log2_area) + ivec2(gl_WorkGroupID.xy * 8u + gl_LocalInvocationID.xy);
    ivec2 p0 = max(t << pc.log2_area, a);
    ivec2 p1 = min((t + 1) << pc.log2_area, b);
    if (any(greaterThanEqual(p0, p1))) {
        return;
    }
#ifdef ARRAY
    vec4 texel = texelFetch(scratch, ivec3(t, pc.layer), 0);
#else
    vec4 texel = texelFetch(scratch, t, 0);
#endif
    for (int y = p0.y; y < p1.y; y++) {
        for (int x = p0.x; x < p1.x; x++) {
            imageStore(target, ivec2(x, y), texel);
        }
    }
}
#else
// The rectangles (x0, y0, x1, y1: framebuffer space, ends exclusive), then
// per rectangle the index of its first tile within its dispatch.
layout(set = 0, binding = 2, std430) readonly buffer Table {
    uint words[];
} table;
layout(push_constant) uniform Params {
    uint first;     // the dispatch's first rectangle
    uint count;     // its rectangles
    uint tiles_at;  // where the first-tile words start
    uint tiles;     // its tiles in all
    ivec2 log2_area;
    int layer;
    // The attachment is stored packed (a subsampled image, layer/src/fdm/
    // subsampled.rs): the rectangles are the packed ones, each its area's
    // texels 1:1 from its origin, whose texel is origin >> log2(area).
    uint packed;
} pc;

void main() {
    uint g = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
    if (g >= pc.tiles) {
        return;
    }
    // The rectangle of tile g: the last whose first tile is at most g.
    uint lo = 0u;
    uint hi = pc.count;
    while (hi - lo > 1u) {
        uint mid = (lo + hi) / 2u;
        if (table.words[pc.tiles_at + pc.first + mid] <= g) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    uint r = pc.first + lo;
    ivec4 rect = ivec4(table.words[4u * r], table.words[4u * r + 1u], table.words[4u * r + 2u], table.words[4u * r + 3u]);
    uint local = g - table.words[pc.tiles_at + r];
    uint columns = uint(rect.z - rect.x + 7) / 8u;
    ivec2 p = rect.xy + 8 * ivec2(local % columns, local / columns) + ivec2(gl_LocalInvocationID.xy);
    if (any(greaterThanEqual(p, rect.zw))) {
        return;
    }
    ivec2 t = pc.packed != 0u ? p - rect.xy + (rect.xy >> pc.log2_area) : p >> pc.log2_area;
#ifdef ARRAY
    vec4 texel = texelFetch(scratch, ivec3(t, pc.layer), 0);
#else
    vec4 texel = texelFetch(scratch, t, 0);
#endif
    imageStore(target, p, texel);
}
#endif

#version 450
// The host plan's composite in a compute shader (layer/src/fdm/composite.rs),
// where the attachment can be written as a storage image: one dispatch per
// merged rectangle of an area's bins, pixel p of it taking texel
// p >> log2(area) of the area's scratch target (the rectangle's start is
// aligned to its area), the nearest texel as the drawn composite takes it.
// No raster back end: on GPUs with few of them a full-resolution draw costs
// more than the memory traffic. ARRAY: the scratch target is layered (a
// multiview pass's), the dispatch's view reads `layer`; the attachment is
// written through a 2D view of the layer.
layout(local_size_x = 8, local_size_y = 8) in;
#ifdef ARRAY
layout(set = 0, binding = 0) uniform sampler2DArray scratch;
#else
layout(set = 0, binding = 0) uniform sampler2D scratch;
#endif
// No format: the attachment's own (shaderStorageImageWriteWithoutFormat).
layout(set = 0, binding = 1) writeonly uniform image2D target;
layout(push_constant) uniform Params {
    ivec4 rect; // x0, y0, x1, y1 (framebuffer space, end exclusive)
    ivec2 log2_area;
    int layer;
} pc;

void main() {
    ivec2 p = pc.rect.xy + ivec2(gl_GlobalInvocationID.xy);
    if (any(greaterThanEqual(p, pc.rect.zw))) {
        return;
    }
    ivec2 t = p >> pc.log2_area;
#ifdef ARRAY
    vec4 texel = texelFetch(scratch, ivec3(t, pc.layer), 0);
#else
    vec4 texel = texelFetch(scratch, t, 0);
#endif
    imageStore(target, p, texel);
}

#version 450
// The GPU plan's upscale (layer/src/fdm/gpu_plan.rs): pixel p of a region
// drawn at this area takes texel p / area of the area's scratch target (the
// region's start is aligned to its area): nearest, exact at the edges.
// ARRAY: the scratch target is layered (a multiview pass's, a layer per
// view), the draw's view reads `layer`.
#ifdef ARRAY
layout(set = 0, binding = 0) uniform sampler2DArray scratch;
#else
layout(set = 0, binding = 0) uniform sampler2D scratch;
#endif
layout(push_constant) uniform Params {
    ivec2 area;
    uint words[7];
    uint layer;
} pc;
layout(location = 0) out vec4 colour;

void main() {
#ifdef ARRAY
    colour = texelFetch(scratch, ivec3(ivec2(gl_FragCoord.xy) / pc.area, int(pc.layer)), 0);
#else
    colour = texelFetch(scratch, ivec2(gl_FragCoord.xy) / pc.area, 0);
#endif
}

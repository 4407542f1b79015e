#version 450
// The GPU plan's upscale (layer/src/fdm/gpu_plan.rs): pixel p of a region
// drawn at this area takes texel p / area of the area's scratch target (the
// region's start is aligned to its area): nearest, exact at the edges.
// ARRAY: the scratch target is layered (a multiview pass's, a layer per
// view), the draw's view reads `layer`. MS: it is multisampled; the draw
// writes sample `sample` only (its pipeline's sample mask) and reads that
// sample. DEPTH: the scratch target is a depth one (read through a
// depth-aspect view), written to the fragment's depth.
#if defined(ARRAY) && defined(MS)
layout(set = 0, binding = 0) uniform sampler2DMSArray scratch;
#elif defined(ARRAY)
layout(set = 0, binding = 0) uniform sampler2DArray scratch;
#elif defined(MS)
layout(set = 0, binding = 0) uniform sampler2DMS scratch;
#else
layout(set = 0, binding = 0) uniform sampler2D scratch;
#endif
layout(push_constant) uniform Params {
    ivec2 area;
    uint words[7];
    uint layer;
    uint sample_index;
} pc;
#ifndef DEPTH
layout(location = 0) out vec4 colour;
#endif

void main() {
    ivec2 p = ivec2(gl_FragCoord.xy) / pc.area;
#if defined(ARRAY) && defined(MS)
    vec4 texel = texelFetch(scratch, ivec3(p, int(pc.layer)), int(pc.sample_index));
#elif defined(ARRAY)
    vec4 texel = texelFetch(scratch, ivec3(p, int(pc.layer)), 0);
#elif defined(MS)
    vec4 texel = texelFetch(scratch, p, int(pc.sample_index));
#else
    vec4 texel = texelFetch(scratch, p, 0);
#endif
#ifdef DEPTH
    gl_FragDepth = texel.r;
#else
    colour = texel;
#endif
}

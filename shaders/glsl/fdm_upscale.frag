#version 450
// The GPU plan's upscale (layer/src/fdm/gpu_plan.rs) and the host plan's
// composite (composite.rs): pixel p of a region drawn at this area takes
// texel p / area of the area's scratch target (the region's start is
// aligned to its area): nearest, exact at the edges.
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

layout(location = 0) in vec2 st;

void main() {
    // st is the texel (interpolated p / area: no integer division per
    // pixel, which llvmpipe does lane by lane: three times the cost).
#if defined(ARRAY) && defined(MS)
    vec4 texel = texelFetch(scratch, ivec3(ivec2(st), int(pc.layer)), int(pc.sample_index));
#elif defined(ARRAY)
    vec4 texel = texelFetch(scratch, ivec3(ivec2(st), int(pc.layer)), 0);
#elif defined(MS)
    vec4 texel = texelFetch(scratch, ivec2(st), int(pc.sample_index));
#elif defined(DEPTH)
    vec4 texel = texelFetch(scratch, ivec2(st), 0);
#else
    // The plain colour variant samples by normalized coordinates (the
    // vertex shader divides by the extent), nearest, clamped: the same
    // texel, and a shader llvmpipe runs on its linear rasterizer (a texture
    // read of an interpolated coordinate, nothing else), several times as
    // fast as texelFetch for the pixels a composite writes.
    vec4 texel = texture(scratch, st);
#endif
#ifdef DEPTH
    gl_FragDepth = texel.r;
#else
    colour = texel;
#endif
}

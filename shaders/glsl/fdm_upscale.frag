#version 450
// The GPU plan's upscale (layer/src/fdm/gpu_plan.rs): pixel p of a region
// drawn at this area takes texel p / area of the area's scratch target (the
// region's start is aligned to its area): nearest, exact at the edges.
layout(set = 0, binding = 0) uniform sampler2D scratch;
layout(push_constant) uniform Params {
    ivec2 area;
} pc;
layout(location = 0) out vec4 colour;

void main() {
    colour = texelFetch(scratch, ivec2(gl_FragCoord.xy) / pc.area, 0);
}

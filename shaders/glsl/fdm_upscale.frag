#version 450
// The GPU plan's upscale: framebuffer pixel p takes scratch texel p / area
// (the region's start is aligned to its area), nearest, exact at the edges.
layout(set = 0, binding = 0) uniform sampler2D scratch;
layout(push_constant) uniform Params {
    ivec2 area;
} pc;
layout(location = 0) out vec4 colour;

void main() {
    colour = texelFetch(scratch, ivec2(gl_FragCoord.xy) / pc.area, 0);
}

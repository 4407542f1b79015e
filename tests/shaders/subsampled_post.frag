#version 450
// `fdm-subsampled`'s second pass: the first pass's colour (a subsampled
// image where the run asks for one) sampled at this pixel's normalized
// coordinate, as a foveated client's post pass reads its render target.
layout(set = 0, binding = 1) uniform sampler2D scene;
layout(push_constant) uniform Params { vec2 scale; } pc;
layout(location = 0) out vec4 colour;
void main() {
    colour = texture(scene, gl_FragCoord.xy * pc.scale);
}

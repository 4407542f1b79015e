#version 450
// composite-bench: the scratch image's texel at st (texels).
layout(set = 0, binding = 0) uniform sampler2D scratch;
layout(location = 0) in vec2 st;
layout(location = 0) out vec4 colour;

void main() {
    colour = texelFetch(scratch, ivec2(st), 0);
}

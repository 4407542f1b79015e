#version 450
#extension GL_EXT_fragment_invocation_density : require
// Second subpass: the first subpass's colour, inverted, read as an input
// attachment; the fragment area in alpha.
layout(input_attachment_index = 0, set = 0, binding = 0) uniform subpassInput first;
layout(location = 0) out vec4 color;
void main() {
    vec4 c = subpassLoad(first);
    ivec2 s = gl_FragSizeEXT;
    color = vec4(1.0 - c.rgb, float(s.x * 16 + s.y) / 255.0);
}

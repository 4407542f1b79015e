#version 450
#extension GL_EXT_fragment_invocation_density : require
// The offscreen scene's colour (RGB) and the fragment area (A = 16·width + height).
layout(location = 0) in vec4 v_color;
layout(location = 0) out vec4 color;
void main() {
    ivec2 s = gl_FragSizeEXT;
    color = vec4(v_color.rgb, float(s.x * 16 + s.y) / 255.0);
}

#version 450
#extension GL_EXT_fragment_invocation_density : require
// Writes the fragment area (R = 16·width + height) and the fragment's
// framebuffer-space centre as a 24-bit id (GBA): every pixel a fragment
// covers carries the same id.
layout(location = 0) out vec4 color;
void main() {
    ivec2 s = gl_FragSizeEXT;
    uint id = uint(gl_FragCoord.x) + uint(gl_FragCoord.y) * 4096u;
    color = vec4(float(s.x * 16 + s.y) / 255.0, float(id & 255u) / 255.0, float((id >> 8) & 255u) / 255.0,
                 float((id >> 16) & 255u) / 255.0);
}

#version 450
#extension GL_EXT_fragment_invocation_density : require
// fdm_size.frag's output (the fragment area in R, the fragment's id in GBA)
// scaled by varyings that all hold 1, so the check of fdm_size applies and
// the varying linker has work: `dead` is unread, `one` a flat constant, `dup`
// a duplicate of `a`, of which only `.x` is read.
layout(location = 0) in vec4 a;
layout(location = 2) flat in float one;
layout(location = 3) in vec4 dup;
layout(location = 0) out vec4 color;
void main() {
    ivec2 s = gl_FragSizeEXT;
    uint id = uint(gl_FragCoord.x) + uint(gl_FragCoord.y) * 4096u;
    vec4 c = vec4(float(s.x * 16 + s.y) / 255.0, float(id & 255u) / 255.0, float((id >> 8) & 255u) / 255.0,
                  float((id >> 16) & 255u) / 255.0);
    color = c * one * min(a.x, dup.y);
}

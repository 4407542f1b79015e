#version 450
#extension GL_NV_viewport_array2 : require
// `viewport-mask-bench`: fullscreen.vert's triangle sent to every viewport of
// the mask (VK_NV_viewport_array2), each with its own transform and scissor:
// one draw recorded for every cell of the atlas (the density map's design D).
layout(constant_id = 0) const int MASK = 511;
void main() {
    vec2 p = vec2((gl_VertexIndex << 1) & 2, gl_VertexIndex & 2);
    gl_Position = vec4(p * 2.0 - 1.0, 0.0, 1.0);
    gl_ViewportMask[0] = MASK;
}

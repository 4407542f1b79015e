#version 450
// A rectangle at depth 0.5 over framebuffer pixels x 8..56, y 16..48 of a
// 64x64 target (edges on density-map texel boundaries).
void main() {
    vec2 c[6] = vec2[](vec2(-0.75, -0.5), vec2(0.75, -0.5), vec2(0.75, 0.5), vec2(-0.75, -0.5), vec2(0.75, 0.5), vec2(-0.75, 0.5));
    gl_Position = vec4(c[gl_VertexIndex], 0.5, 1.0);
}

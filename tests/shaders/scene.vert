#version 450
// Scene for the offscreen renderer: vertices come from push-constant-free
// arrays indexed by gl_VertexIndex, so no vertex buffer is needed.
// Vertices 0-5: a flat quad over the left half (x in [-1, 0]).
// Vertices 6-8: a triangle in the right half with interpolated colours.
layout(location = 0) out vec4 v_color;

const vec2 POS[9] = vec2[9](
    vec2(-1.0, -1.0), vec2(0.0, -1.0), vec2(-1.0, 1.0),
    vec2(-1.0, 1.0), vec2(0.0, -1.0), vec2(0.0, 1.0),
    vec2(0.5, -0.8), vec2(0.9, 0.8), vec2(0.1, 0.8));
const vec4 COL[9] = vec4[9](
    vec4(1, 0, 0, 1), vec4(1, 0, 0, 1), vec4(1, 0, 0, 1),
    vec4(1, 0, 0, 1), vec4(1, 0, 0, 1), vec4(1, 0, 0, 1),
    vec4(1, 1, 0, 1), vec4(0, 1, 1, 1), vec4(1, 0, 1, 1));

void main() {
    gl_Position = vec4(POS[gl_VertexIndex], 0.0, 1.0);
    v_color = COL[gl_VertexIndex];
}

#version 450
// Order-independent transparency scene: eight translucent rectangles, drawn
// in an order that is not their depth order. Rectangles are in a 64x64 grid
// scaled to the target (whose size is a multiple of 64), so every edge falls
// on a pixel boundary. Keep in sync with tests/src/oit.rs (the CPU reference).
layout(push_constant) uniform P { uint width; uint height; } pc;
layout(location = 0) flat out vec4 v_color;
layout(location = 1) flat out float v_depth;

const vec4 RECT[8] = vec4[8](
    vec4(4, 4, 40, 36), vec4(20, 10, 60, 30), vec4(8, 24, 30, 60), vec4(30, 2, 50, 58),
    vec4(0, 40, 64, 50), vec4(14, 14, 50, 50), vec4(44, 34, 62, 62), vec4(2, 2, 12, 62));
const float DEPTH[8] = float[8](0.5, 0.2, 0.8, 0.35, 0.65, 0.1, 0.9, 0.45);
const vec4 COLOR[8] = vec4[8](
    vec4(255, 0, 0, 128), vec4(0, 255, 0, 128), vec4(0, 0, 255, 128), vec4(255, 255, 0, 128),
    vec4(0, 255, 255, 128), vec4(255, 0, 255, 128), vec4(255, 153, 51, 128), vec4(102, 51, 204, 128));

void main() {
    vec4 r = RECT[gl_InstanceIndex] / 64.0;
    vec2 corner = vec2((gl_VertexIndex == 1 || gl_VertexIndex >= 4) ? r.z : r.x,
                       (gl_VertexIndex == 2 || gl_VertexIndex == 3 || gl_VertexIndex == 5) ? r.w : r.y);
    gl_Position = vec4(corner * 2.0 - 1.0, 0.0, 1.0);
    v_color = COLOR[gl_InstanceIndex] / 255.0;
    v_depth = DEPTH[gl_InstanceIndex];
}

#version 450
// Full-screen quad (two triangles) per instance; the instance index is the
// primitive's place in the draw order.
layout(location = 0) flat out int v_instance;
const vec2 POS[6] = vec2[6](vec2(-1, -1), vec2(1, -1), vec2(-1, 1), vec2(-1, 1), vec2(1, -1), vec2(1, 1));
void main() {
    gl_Position = vec4(POS[gl_VertexIndex], 0.0, 1.0);
    v_instance = gl_InstanceIndex;
}

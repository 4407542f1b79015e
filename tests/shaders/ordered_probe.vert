#version 450
// The ordered-interlock probe (`overlap-testapp ordered-probe`, issue 34
// item 1): a full-screen quad (two triangles) per instance, with the
// varyings an OIT-like fragment shader reads (flat colour and depth from
// the instance, as tests/shaders/oit_ordered.vert, and a smooth vec4).
layout(location = 0) flat out uint v_color;
layout(location = 1) flat out uint v_depth;
layout(location = 2) out vec4 v_smooth;
layout(location = 3) flat out uint v_instance;
const vec2 POS[6] = vec2[6](vec2(-1, -1), vec2(1, -1), vec2(-1, 1), vec2(-1, 1), vec2(1, -1), vec2(1, 1));
void main() {
    vec2 p = POS[gl_VertexIndex];
    gl_Position = vec4(p, 0.0, 1.0);
    uint i = uint(gl_InstanceIndex);
    v_color = (i * 0x9e3779b9u) & 0x00ffffffu;
    v_depth = (i * 2654435761u) >> 8;
    v_smooth = vec4(p, float(i), 1.0);
    v_instance = i;
}

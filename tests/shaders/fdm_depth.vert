#version 450
// Two overlapping triangles for depth testing across bins: the first (near,
// z = 0.25) is drawn before the second (far, z = 0.75, larger), so the depth
// test must keep the first where they overlap.
layout(location = 0) out vec4 v_color;
const vec3 POS[6] = vec3[6](
    vec3(-0.7, -0.8, 0.25), vec3(0.6, -0.2, 0.25), vec3(-0.3, 0.9, 0.25),
    vec3(-1.0, -1.0, 0.75), vec3(1.0, -0.6, 0.75), vec3(0.2, 1.0, 0.75));
const vec4 COL[6] = vec4[6](
    vec4(1, 0, 0, 1), vec4(1, 0.5, 0, 1), vec4(1, 0, 0.5, 1),
    vec4(0, 1, 0, 1), vec4(0, 0.5, 1, 1), vec4(0.5, 1, 0, 1));
void main() {
    gl_Position = vec4(POS[gl_VertexIndex], 1.0);
    v_color = COL[gl_VertexIndex];
}

#version 450
// The read-back corpus (issue 35; README.md in this folder).
const vec2 POS[3] = vec2[3](vec2(-0.9, -0.8), vec2(0.85, -0.2), vec2(-0.3, 0.9));
layout(location = 0) out float var1;
layout(location = 1) out float var2;

void main() {
    vec2 p = POS[gl_VertexIndex % 3];
    gl_Position = vec4(p, 0.0, 1.0);
    float in0 = p.x * 0.5 + 0.5;
    float in1 = p.y * 0.5 + 0.5;
    var2 = 0.0;
    for (int i = 0; i < 3; i++) {
        var1 = in0 * float(i) * 0.25;
        var2 = var2 + var1 * 0.5;
    }
}

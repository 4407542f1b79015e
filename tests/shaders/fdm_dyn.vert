#version 450
// The dynamic-state checks' geometry: a quad covering the viewport (six
// vertices), or, with `line` set, a horizontal line at NDC height `y`.
layout(push_constant) uniform P {
    vec4 color;
    float line;
    float y;
} p;
void main() {
    if (p.line > 0.5) {
        gl_Position = vec4(gl_VertexIndex == 0 ? -1.0 : 1.0, p.y, 0.0, 1.0);
        return;
    }
    int i = gl_VertexIndex % 6;
    float x = (i == 1 || i == 2 || i == 4) ? 1.0 : -1.0;
    float y = (i == 2 || i == 4 || i == 5) ? 1.0 : -1.0;
    gl_Position = vec4(x, y, 0.0, 1.0);
}

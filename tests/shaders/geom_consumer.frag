#version 450
layout(location = 0) in vec4 used;
layout(location = 4) flat in int k;
layout(location = 5) in vec4 dup;
layout(location = 0) out vec4 o_color;
void main() { o_color = clamp(used * 0.5 + dup * 0.25 + vec4(float(k) * 0.02), 0.0, 1.0); }

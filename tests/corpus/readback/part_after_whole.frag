#version 450
layout(location = 0) out vec4 o;
layout(location = 0) in vec4 a;
layout(location = 1) in vec4 b;
void main() { o = (a + b) * 0.45; }

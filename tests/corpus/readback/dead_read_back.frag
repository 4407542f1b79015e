#version 450
layout(location = 0) out vec4 o;
layout(location = 1) in float v;
void main() { o = vec4(v, v * 0.5, 0.25, 1.0); }

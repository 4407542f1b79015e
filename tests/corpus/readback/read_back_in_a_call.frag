#version 450
layout(location = 0) out vec4 o;
layout(location = 0) in float var1;
layout(location = 1) in float var2;
void main() { o = vec4(vec3(var1 + var2) * 0.4, 1.0); }

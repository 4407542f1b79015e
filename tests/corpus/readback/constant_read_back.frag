#version 450
layout(location = 0) out vec4 o;
layout(location = 0) flat in float k;
layout(location = 1) noperspective in float t;
layout(location = 2) in float u;
void main() { o = vec4(t * 3.0, u * 0.5, k, 1.0); }

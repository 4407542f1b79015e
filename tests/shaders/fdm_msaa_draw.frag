#version 450
layout(location = 0) out vec4 o;
void main() {
    o = vec4(200.0, 50.0, 100.0, 255.0) / 255.0;
}

#version 450
// The dynamic-state checks' colour: the draw's push constant.
layout(push_constant) uniform P {
    vec4 color;
    float line;
    float y;
} p;
layout(location = 0) out vec4 color;
void main() {
    color = p.color;
}

#version 450
// The stress test's producer: a full-screen triangle with varyings the
// linker removes (dead), propagates (a flat constant) and merges (a
// duplicate), next to the one the fragment shader needs.
layout(location = 0) out vec4 a;
layout(location = 1) out vec4 dead;
layout(location = 2) flat out float one;
layout(location = 3) out vec4 dup;
void main() {
    vec2 p = vec2((gl_VertexIndex << 1) & 2, gl_VertexIndex & 2);
    gl_Position = vec4(p * 2.0 - 1.0, 0.0, 1.0);
    a = vec4(1.0);
    dead = vec4(p, 0.0, 1.0);
    one = 1.0;
    dup = a;
}

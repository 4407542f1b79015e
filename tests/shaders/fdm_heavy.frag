#version 450
// A fragment-bound shader for the density-map benchmark: a few hundred
// transcendental operations per fragment.
layout(location = 0) out vec4 color;
void main() {
    vec2 p = gl_FragCoord.xy / 1024.0;
    vec3 c = vec3(0.0);
    for (int i = 0; i < 96; i++) {
        c += sin(vec3(p.x * float(i), p.y * float(i) * 0.5, float(i) * 0.1));
    }
    color = vec4(c * 0.01 + 0.5, 1.0);
}

#version 450
// `fdm-client medium`: 12 rounds of the integer hash of fdm_noise.frag
// (which runs 96: `heavy`).
layout(location = 0) out vec4 color;
uint hash(uint x) {
    x ^= x >> 16;
    x *= 0x7feb352du;
    x ^= x >> 15;
    x *= 0x846ca68bu;
    x ^= x >> 16;
    return x;
}
void main() {
    uvec2 p = uvec2(gl_FragCoord.xy);
    uint h = p.x * 1973u + p.y * 9277u;
    for (int i = 0; i < 12; i++) {
        h = hash(h + uint(i));
    }
    color = vec4(float(h & 255u), float((h >> 8) & 255u), float((h >> 16) & 255u), 255.0) / 255.0;
}

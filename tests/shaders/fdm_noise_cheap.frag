#version 450
// `fdm-client cheap`: a few integer operations per fragment (one round of
// the hash of fdm_noise.frag), as cheap as the default pass of google/
// bigwheels' foveation benchmark: the frame is dominated by fixed costs.
layout(location = 0) out vec4 color;
void main() {
    uvec2 p = uvec2(gl_FragCoord.xy);
    uint h = (p.x * 1973u + p.y * 9277u) * 0x7feb352du;
    h ^= h >> 15;
    color = vec4(float(h & 255u), float((h >> 8) & 255u), float((h >> 16) & 255u), 255.0) / 255.0;
}

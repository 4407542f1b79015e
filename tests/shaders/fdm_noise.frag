#version 450
// The client-shaped density-map benchmark's shader: a few rounds of an
// integer hash of the fragment position and the draw (like the procedural
// noise of google/bigwheels' foveation benchmark), blended by the caller.
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
    for (int i = 0; i < 96; i++) {
        h = hash(h + uint(i));
    }
    color = vec4(float(h & 255u), float((h >> 8) & 255u), float((h >> 16) & 255u), 255.0) / 255.0;
}

#version 450
// Prefill of the multisampled attachments (no density map, one sample per
// draw through the pipeline's sample mask): every pixel and sample its own
// colour and depth, so a sample moved to another sample or pixel shows.
layout(location = 0) out vec4 o;
void main() {
    uvec2 p = uvec2(gl_FragCoord.xy);
    uint s = uint(gl_SampleID);
    o = vec4(float((p.x * 4u + s) % 256u), float((p.y * 4u + s * 64u) % 256u), float(s * 30u + 20u), 255.0) / 255.0;
    gl_FragDepth = float((p.x + p.y * 3u + s * 5u) % 16u) / 16.0;
}

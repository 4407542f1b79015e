#version 450
// Writes a radial density map with a draw (`fdm-client dynamic`): each map
// texel's centre, in framebuffer pixels, against two radii around the
// framebuffer's centre: 1x1 inside `r1`, 2x2 inside `r2`, 4x4 beyond (the
// values the host writes for the static map: 255, 127, 60).
layout(push_constant) uniform Radial {
    vec2 texel;
    vec2 centre;
    float r1;
    float r2;
} p;
layout(location = 0) out vec4 density;
void main() {
    float r = length(gl_FragCoord.xy * p.texel - p.centre);
    float v = r < p.r1 ? 1.0 : (r < p.r2 ? 127.0 / 255.0 : 60.0 / 255.0);
    density = vec4(v, v, 0.0, 1.0);
}

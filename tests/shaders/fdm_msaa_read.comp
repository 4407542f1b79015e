#version 450
// Reads every sample of the multisampled colour, depth and stencil into a
// buffer: per pixel and sample, packed RGBA8, the depth's bits, the stencil.
layout(local_size_x = 8, local_size_y = 8) in;
layout(set = 0, binding = 0) uniform sampler2DMS colour;
layout(set = 0, binding = 1) uniform sampler2DMS depth;
layout(set = 0, binding = 2) uniform usampler2DMS stencil;
layout(set = 0, binding = 3) buffer Out { uint v[]; };
layout(push_constant) uniform P { uint w; uint h; uint samples; };
void main() {
    uvec2 p = gl_GlobalInvocationID.xy;
    if (p.x >= w || p.y >= h) return;
    for (uint s = 0u; s < samples; s++) {
        uint i = ((p.y * w + p.x) * samples + s) * 3u;
        v[i] = packUnorm4x8(texelFetch(colour, ivec2(p), int(s)));
        v[i + 1u] = floatBitsToUint(texelFetch(depth, ivec2(p), int(s)).r);
        v[i + 2u] = texelFetch(stencil, ivec2(p), int(s)).r;
    }
}

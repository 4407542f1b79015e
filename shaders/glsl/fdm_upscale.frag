#version 450
// The GPU plan's upscale (layer/src/fdm/gpu_plan.rs): one draw over the
// render area. Pixel p finds its region (the region bounds in the plan
// buffer), the area the plan shader chose for it (its one predicate set),
// and takes texel p / area of that area's scratch target (the region's
// start is aligned to its area): nearest, exact at the edges.
layout(set = 0, binding = 0) uniform sampler2D scratch[9];
layout(set = 0, binding = 1, std430) readonly buffer Plan { uint words[]; };
// Word offsets into `words`: the region bounds (columns + 1 x starts, then
// rows + 1 y starts); the predicates are at 0, 9 per region.
layout(push_constant) uniform Params {
    uint columns;
    uint rows;
    uint bounds;
} pc;
layout(location = 0) out vec4 colour;

void main() {
    ivec2 p = ivec2(gl_FragCoord.xy);
    uint cx = 0u;
    while (cx + 1u < pc.columns && uint(p.x) >= words[pc.bounds + cx + 1u]) {
        cx++;
    }
    uint cy = 0u;
    uint ys = pc.bounds + pc.columns + 1u;
    while (cy + 1u < pc.rows && uint(p.y) >= words[ys + cy + 1u]) {
        cy++;
    }
    uint r = cy * pc.columns + cx;
    uint a = 0u;
    for (uint i = 0u; i < 9u; i++) {
        if (words[r * 9u + i] != 0u) {
            a = i;
        }
    }
    ivec2 t = p / ivec2(1 << (a / 3u), 1 << (a % 3u));
    switch (a) {
        case 0u: colour = texelFetch(scratch[0], t, 0); break;
        case 1u: colour = texelFetch(scratch[1], t, 0); break;
        case 2u: colour = texelFetch(scratch[2], t, 0); break;
        case 3u: colour = texelFetch(scratch[3], t, 0); break;
        case 4u: colour = texelFetch(scratch[4], t, 0); break;
        case 5u: colour = texelFetch(scratch[5], t, 0); break;
        case 6u: colour = texelFetch(scratch[6], t, 0); break;
        case 7u: colour = texelFetch(scratch[7], t, 0); break;
        default: colour = texelFetch(scratch[8], t, 0); break;
    }
}

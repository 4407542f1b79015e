#version 450
// Ordered OIT scene (tests/src/oit_ordered.rs is the CPU reference; keep the
// two in sync): `layers` translucent rectangles in a 64x64 grid scaled to
// the target (a multiple of 64, so every edge falls on a pixel boundary),
// each with its own colour and a depth unrelated to its draw order. Layer i
// is instance i (`reverse`: instance i draws layer layers-1-i, the wrong
// order the reference check must catch).
layout(push_constant) uniform P { uint width; uint height; uint layers; uint flags; } pc;
layout(location = 0) flat out uint v_color;
layout(location = 1) flat out uint v_depth;

const uint PERM[16] = uint[16](9u, 3u, 14u, 6u, 0u, 11u, 5u, 12u, 2u, 15u, 8u, 1u, 13u, 4u, 10u, 7u);
const uvec3 PALETTE[16] = uvec3[16](
    uvec3(230, 25, 75), uvec3(60, 180, 75), uvec3(255, 225, 25), uvec3(0, 130, 200),
    uvec3(245, 130, 48), uvec3(145, 30, 180), uvec3(70, 240, 240), uvec3(240, 50, 230),
    uvec3(210, 245, 60), uvec3(250, 190, 212), uvec3(0, 128, 128), uvec3(220, 190, 255),
    uvec3(170, 110, 40), uvec3(255, 250, 200), uvec3(128, 0, 0), uvec3(170, 255, 195));

void main() {
    uint i = (pc.flags & 1u) != 0u ? pc.layers - 1u - uint(gl_InstanceIndex) : uint(gl_InstanceIndex);
    vec4 r = vec4(float((i * 5u) % 24u), float((i * 11u) % 24u), float(64u - (i * 7u) % 24u),
                  float(64u - (i * 13u) % 24u)) / 64.0;
    if ((pc.flags & 2u) != 0u) {
        r = vec4(0.0, 0.0, 1.0, 1.0);
    }
    vec2 corner = vec2((gl_VertexIndex == 1 || gl_VertexIndex >= 4) ? r.z : r.x,
                       (gl_VertexIndex == 2 || gl_VertexIndex == 3 || gl_VertexIndex == 5) ? r.w : r.y);
    gl_Position = vec4(corner * 2.0 - 1.0, 0.0, 1.0);
    uvec3 c = PALETTE[i % 16u];
    v_color = c.r | (c.g << 8) | (c.b << 16);
    v_depth = PERM[i % 16u] + 16u * (i / 16u);
}

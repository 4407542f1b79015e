#version 450
// composite-bench (tests/src/bin/testapp.rs): instance i (or vertices
// 6i to 6i + 5 of one instance) covers cell i of a
// grid of `cells` over the framebuffer; st is the position in [0, 1]
// times `scale` (1: normalized coordinates; the scratch image's extent:
// texels).
layout(push_constant) uniform Params {
    vec2 scale;
    uvec2 cells;
} pc;
layout(location = 0) out vec2 st;

void main() {
    const uint corner[6] = uint[6](0u, 1u, 2u, 2u, 1u, 3u);
    uint i = uint(gl_InstanceIndex) + uint(gl_VertexIndex) / 6u, c = corner[uint(gl_VertexIndex) % 6u];
    vec2 cell = vec2(uvec2(i % pc.cells.x, i / pc.cells.x) + uvec2(c & 1u, c >> 1));
    vec2 p = cell / vec2(pc.cells);
    st = p * pc.scale;
    gl_Position = vec4(p * 2.0 - 1.0, 0.0, 1.0);
}

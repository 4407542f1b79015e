#version 450
// The conformance tests' density-map scene geometry (their
// createFullScreenMeshWithMirrors, 54 vertices): a quad covering exactly
// the viewport (NDC -1..1), then eight copies of it offset by -2, 0 or +2
// on each axis, all wholly outside the viewport, which the clipper rejects.
// The multiview ladder draws it with no layer loaded: lavapipe 22.3 loses
// view 1's quad after the rejected copies of view 0.
const vec2 offsets[9] = vec2[9](vec2(0.0, 0.0), vec2(0.0, -2.0), vec2(2.0, -2.0), vec2(2.0, 0.0),
                                vec2(2.0, 2.0), vec2(0.0, 2.0), vec2(-2.0, 2.0), vec2(-2.0, 0.0), vec2(-2.0, -2.0));
void main() {
    int i = gl_VertexIndex % 6;
    float x = (i == 1 || i == 2 || i == 4) ? 1.0 : -1.0;
    float y = (i == 2 || i == 4 || i == 5) ? 1.0 : -1.0;
    gl_Position = vec4(vec2(x, y) + offsets[(gl_VertexIndex / 6) % 9], 0.0, 1.0);
}

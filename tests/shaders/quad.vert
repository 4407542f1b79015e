#version 450
// Two triangles covering exactly the viewport (NDC -1..1; six vertices):
// geometry no clipper splits. The multiview checks draw it: lavapipe 22.3
// draws the primitives its clipper splits (ones crossing the viewport's
// edge, like fullscreen.vert's big triangle) into view 0 only (the draw
// module's view loop keeps the first view's index for clipped primitives).
void main() {
    int i = gl_VertexIndex % 6;
    float x = (i == 1 || i == 2 || i == 4) ? 1.0 : -1.0;
    float y = (i == 2 || i == 4 || i == 5) ? 1.0 : -1.0;
    gl_Position = vec4(x, y, 0.0, 1.0);
}

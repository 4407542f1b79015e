#version 450
// The CTS's quad: one triangle strip of two triangles sharing a diagonal,
// covering the viewport, per instance (the instance index is the
// primitive's place in the draw order).
layout(location = 0) flat out int v_instance;
void main() {
    gl_Position = vec4(float(gl_VertexIndex & 1) * 2.0 - 1.0, float(gl_VertexIndex >> 1) * 2.0 - 1.0, 0.0, 1.0);
    v_instance = gl_InstanceIndex;
}

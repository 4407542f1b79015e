#version 450
// The GPU plan's upscale (layer/src/fdm/gpu_plan.rs): a triangle covering
// the viewport (the render area).
void main() {
    vec2 p = vec2(float((gl_VertexIndex << 1) & 2), float(gl_VertexIndex & 2));
    gl_Position = vec4(p * 2.0 - 1.0, 0.0, 1.0);
}

#version 460
// oit_stress: the full-screen triangle of the composite pass (no outputs).
void main()
{
  vec4 pos    = vec4((float((gl_VertexIndex >> 1U) & 1U)) * 4.0 - 1.0, (float(gl_VertexIndex & 1U)) * 4.0 - 1.0, 0, 1.0);
  gl_Position = pos;
}

#version 450
#extension GL_EXT_multiview : require
// The multiview ladder's plain shader: no density built-ins; each view gets
// its own red (view 0: 0.25, view 1: 0.75).
layout(location = 0) out vec4 color;
void main() {
    color = vec4(gl_ViewIndex == 0 ? 0.25 : 0.75, 0.5, 0.0, 1.0);
}

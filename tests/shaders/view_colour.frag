#version 450
// Writes a colour per view (the local-read multiview repro: lr_multiview in
// overlap-testapp): red = (view + 1) * 32.
#extension GL_EXT_multiview : require
layout(location = 0) out vec4 colour;
void main() {
    colour = vec4(float(gl_ViewIndex + 1) * 32.0 / 255.0, 0.5, 0.25, 1.0);
}

#version 450
// The stale-view scene (tests/src/stale_view.rs): a fragment shader that
// uses none of its set's bindings.
layout(location = 0) out vec4 o_color;
void main() {
    o_color = vec4(0.2, 0.4, 0.6, 1.0);
}

#version 450
// `overlap-testapp fdm-dynamic`: bound before a density-map pass and
// dispatched after it without binding again: the layer's own dispatch in
// the pass's GPU plan must leave this pipeline and its set bound.
layout(local_size_x = 1) in;
layout(set = 0, binding = 0, std430) buffer Marker { uint value; } marker;
void main() {
    marker.value = 42u;
}

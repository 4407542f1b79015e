#version 450
#extension GL_EXT_fragment_invocation_density : require
// fdm_size.frag plus an atomic counter of invocations: a side effect a
// replay would repeat, so the pass must render once, at 1x1.
layout(std430, set = 0, binding = 0) buffer Count { uint n; };
layout(location = 0) out vec4 color;
void main() {
    atomicAdd(n, 1u);
    ivec2 s = gl_FragSizeEXT;
    uint id = uint(gl_FragCoord.x) + uint(gl_FragCoord.y) * 4096u;
    color = vec4(float(s.x * 16 + s.y) / 255.0, float(id & 255u) / 255.0, float((id >> 8) & 255u) / 255.0,
                 float((id >> 16) & 255u) / 255.0);
}

#version 450
// Derivatives inside a critical section (the CTS's fragment_shading_rate
// interlock cases check them per coarse fragment): gl_FragCoord's, and those
// of a value read from a buffer inside the section (a ramp, x + 64·y), which
// a lane that runs the section in another loop iteration than its quad's
// other lanes gets wrong even on a CPU driver that computes gl_FragCoord for
// every lane. The section also adds one to its pixel's word, unguarded, so
// that a lock that loses mutual exclusion shows as lost words. Only quads
// without helpers are judged: lavapipe's helpers read 0 from buffers (with
// or without a section), and a triangle's edges make partial quads. With
// `kill`, a third of the fragments (leaders and not) discard inside the
// section after their increment: the rest of their quad runs on, and the
// lock must still be freed (a hang) and still exclude (lost words).
#extension GL_ARB_fragment_shader_interlock : require
layout(pixel_interlock_ordered) in;
layout(set = 0, binding = 0, std430) coherent buffer Data { uint invocations; uint errors; uint kinds; uint pad; uint w[]; } data;
layout(push_constant) uniform P { uint size; uint kill; } pc;
layout(location = 0) out vec4 o_color;
void main() {
    uvec2 xy = uvec2(gl_FragCoord.xy);
    uint i = xy.y * pc.size + xy.x;
    // Zero unless a lane of the quad is a helper (horizontal, vertical, diagonal).
    float h = gl_HelperInvocation ? 1.0 : 0.0;
    bool full = dFdxFine(h) == 0.0 && dFdyFine(h) == 0.0 && dFdyFine(dFdxFine(h)) == 0.0;
    beginInvocationInterlockARB();
    float r = float(data.w[i]);
    bool coord = dFdx(gl_FragCoord.xy) == vec2(1.0, 0.0) && dFdy(gl_FragCoord.xy) == vec2(0.0, 1.0);
    bool ramp = !full || (dFdx(r) == 1.0 && dFdy(r) == 64.0);
    data.w[pc.size * pc.size + i] += 1u;
    atomicAdd(data.invocations, 1u);
    if (!coord || !ramp) {
        atomicAdd(data.errors, 1u);
        atomicOr(data.kinds, (coord ? 0u : 1u) | (ramp ? 0u : 2u));
    }
    if (pc.kill != 0u && (xy.x + 2u * xy.y) % 3u == 0u) {
        discard;
    }
    endInvocationInterlockARB();
    o_color = vec4(1.0);
}

#version 450
// Counts fragment shader invocations and records the shading rates seen
// (gl_ShadingRateEXT: 0 = 1x1, 5 = 2x2). Built with -DINTERLOCK to declare
// an interlock mode with a critical section around the counting.
#extension GL_EXT_fragment_shading_rate : require
#extension GL_ARB_fragment_shader_interlock : enable
#ifdef INTERLOCK
layout(pixel_interlock_unordered) in;
#endif
layout(set = 0, binding = 0, std430) buffer Counts { uint invocations; uint rates; } counts;
layout(location = 0) out vec4 o_color;
void main() {
#ifdef INTERLOCK
    beginInvocationInterlockARB();
#endif
    atomicAdd(counts.invocations, 1u);
    atomicOr(counts.rates, 1u << uint(gl_ShadingRateEXT));
#ifdef INTERLOCK
    endInvocationInterlockARB();
#endif
    o_color = vec4(1.0);
}

#version 450
// Counts fragment shader invocations and records the shading rates seen
// (gl_ShadingRateEXT: 0 = 1x1, 5 = 2x2). Built with -DINTERLOCK to declare
// an interlock mode with a critical section around the counting
// (pixel_interlock_unordered, or with -DORDERED pixel_interlock_ordered:
// dEQP-VK.fragment_shading_rate's interlock cases). As those cases do, the
// section also checks that gl_FragCoord lies at the centre of the (coarse)
// fragment and that its derivatives are the fragment's size — inside the
// section, so an emulation that puts lanes of a quad into different loop
// iterations shows as errors.
#extension GL_EXT_fragment_shading_rate : require
#extension GL_ARB_fragment_shader_interlock : enable
#if defined(INTERLOCK) && defined(ORDERED)
layout(pixel_interlock_ordered) in;
#elif defined(INTERLOCK)
layout(pixel_interlock_unordered) in;
#endif
layout(set = 0, binding = 0, std430) buffer Counts { uint invocations; uint rates; uint errors; uint kinds; } counts;
layout(location = 0) out vec4 o_color;
void main() {
#ifdef INTERLOCK
    beginInvocationInterlockARB();
#endif
    atomicAdd(counts.invocations, 1u);
    atomicOr(counts.rates, 1u << uint(gl_ShadingRateEXT));
    ivec2 size = ivec2(1 << ((gl_ShadingRateEXT / 4) & 3), 1 << (gl_ShadingRateEXT & 3));
    ivec2 xy = ivec2(gl_FragCoord.xy);
    bool centred = ((xy - size / 2) % size) == ivec2(0);
    bool derivatives = dFdx(gl_FragCoord.xy) == vec2(size.x, 0) && dFdy(gl_FragCoord.xy) == vec2(0, size.y);
    if (!centred || !derivatives) {
        atomicAdd(counts.errors, 1u);
        atomicOr(counts.kinds, (centred ? 0u : 1u) | (derivatives ? 0u : 2u));
    }
#ifdef INTERLOCK
    endInvocationInterlockARB();
#endif
    o_color = vec4(1.0);
}

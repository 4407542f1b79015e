#version 450
// A fragment shader for both emulations at once (the pipeline-route
// benchmark): it reads the density-map fragment size and keeps a per-pixel
// count in a critical section.
#extension GL_ARB_fragment_shader_interlock : require
#extension GL_EXT_fragment_invocation_density : require
layout(pixel_interlock_ordered) in;
layout(set = 0, binding = 0, r32ui) uniform coherent uimage2D img;
layout(location = 0) out vec4 color;
void main() {
    ivec2 p = ivec2(gl_FragCoord.xy);
    beginInvocationInterlockARB();
    uint v = imageLoad(img, p).x;
    imageStore(img, p, uvec4(v + uint(gl_FragSizeEXT.x * gl_FragSizeEXT.y)));
    endInvocationInterlockARB();
    color = vec4(vec2(gl_FragSizeEXT) / 4.0, 0.0, 1.0);
}

#version 460
// oit_stress: the scene vertex shader of the nvpro vk_order_independent_transparency
// sample's shape (object.vert.glsl): a struct-typed interface variable, of which
// the OIT fragment shaders read only color and normal. This variant declares
// the members as separate variables (read by oit_stress_ordered_flat.frag).
layout(std140, binding = 0) uniform sceneBuffer
{
  mat4  projViewMatrix;
  mat4  viewMatrix;
  mat4  viewMatrixInverseTranspose;
  ivec3 viewport;  // (width, height, width*height)
  uint  linkedListAllocatedPerElement;
  float alphaMin;
  float alphaWidth;
  vec2  _pad1;
} scene;
struct Interpolants
{
  vec3  pos;
  vec3  normal;
  vec4  color;
  float depth;
};

layout(location = 0) in vec3 inPosition;
layout(location = 1) in vec3 inNormal;
layout(location = 2) in vec4 inColor;

layout(location = 0) out vec3 outPos;
layout(location = 1) out vec3 outNormal;
layout(location = 2) out vec4 outColor;
layout(location = 3) out float outDepth;

void main()
{
  gl_Position = scene.projViewMatrix * vec4(inPosition, 1.0);
  outDepth = (scene.viewMatrix * vec4(inPosition, 1.0)).z;
  outPos = inPosition;
  outNormal = inNormal;
  outColor = inColor;
}

#version 460
// oit_stress: the scene vertex shader of the nvpro vk_order_independent_transparency
// sample's shape (object.vert.glsl): a struct-typed interface variable, of which
// the OIT fragment shaders read only color and normal.
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

layout(location = 0) out Interpolants OUT;

void main()
{
  gl_Position = scene.projViewMatrix * vec4(inPosition, 1.0);
  OUT.depth   = (scene.viewMatrix * vec4(inPosition, 1.0)).z;
  OUT.pos     = inPosition;
  OUT.normal  = inNormal;
  OUT.color   = inColor;
}

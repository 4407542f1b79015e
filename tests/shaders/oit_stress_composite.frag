#version 460
// oit_stress: the composite pass (sorts each pixel's A-buffer entries by depth
// and blends them front to back; premultiplied blending onto the attachment).
#define OIT_LAYERS 8
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

layout(binding = 1, rg32ui) uniform restrict readonly uimageBuffer imgAbuffer;
layout(binding = 2, r32ui) uniform restrict readonly uimage2D imgAux;

layout(location = 0) out vec4 outColor;

ivec2 coord = ivec2(gl_FragCoord.xy);

float unPremultSRGBToLinear(float c)
{
  if(c < 0.04045f)
    return c / 12.92f;
  return pow((c + 0.055f) / 1.055f, 2.4f);
}

void doBlendPacked(inout vec4 color, uint fragment)
{
  vec4 c = unpackUnorm4x8(fragment);
  c.r = unPremultSRGBToLinear(c.r);
  c.g = unPremultSRGBToLinear(c.g);
  c.b = unPremultSRGBToLinear(c.b);
  c.rgb *= c.a;
  color.rgb += (1 - color.a) * c.rgb;
  color.a += (1 - color.a) * c.a;
}

void main()
{
  uvec2 array[OIT_LAYERS];
  int   viewSize  = scene.viewport.z;
  int   listPos   = coord.y * scene.viewport.x + coord.x;
  int   fragments = min(OIT_LAYERS, int(imageLoad(imgAux, coord).r));
  for(int i = 0; i < fragments; i++)
    array[i] = imageLoad(imgAbuffer, listPos + i * viewSize).rg;
  for(int i = (fragments - 2); i >= 0; --i)
    for(int j = 0; j <= i; ++j)
      if(uintBitsToFloat(array[j].g) >= uintBitsToFloat(array[j + 1].g))
      {
        uvec2 temp   = array[j + 1];
        array[j + 1] = array[j];
        array[j]     = temp;
      }
  vec4 colorSum = vec4(0);
  for(int i = 0; i < fragments; i++)
    doBlendPacked(colorSum, array[i].x);
  outColor = colorSum;
}

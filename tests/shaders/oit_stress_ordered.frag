#version 460
// oit_stress: ordered pixel interlock.
// The interlock colour pass of the nvpro OIT sample (oitInterlock.frag.glsl,
// OIT_LAYERS 8, tail blending, no MSAA): post_depth_coverage, an rg32ui storage
// texel buffer A-buffer and two r32ui storage images read and written in the
// critical section, the tail-blended colour written to the colour attachment.
// The sample declares post_depth_coverage (which implies early tests); without
// MSAA that is early_fragment_tests (the test harness enables no
// VK_EXT_post_depth_coverage).
#extension GL_ARB_fragment_shader_interlock : enable
layout(early_fragment_tests) in;
layout(pixel_interlock_ordered) in;

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
struct Interpolants
{
  vec3  pos;
  vec3  normal;
  vec4  color;
  float depth;
};
vec3 goochLighting(vec3 normal)
{
  vec3  light  = normalize(vec3(-1, 2, 1));
  float warmth = dot(normalize(normal), light) * 0.5 + 0.5;
  return mix(vec3(0, 0.25, 0.75), vec3(1, 1, 1), warmth);
}

vec4 shading(const Interpolants its)
{
  vec3  colorRGB = its.color.rgb * goochLighting(its.normal);
  float alpha    = clamp(scene.alphaMin + its.color.a * scene.alphaWidth, 0, 1);
  return vec4(colorRGB, alpha);
}

float unPremultLinearToSRGB(float c)
{
  if(c < 0.0031308f)
    return c * 12.92f;
  return (pow(c, 1.0f / 2.4f) * 1.055f) - 0.055f;
}

vec4 unPremultLinearToSRGB(vec4 c)
{
  c.r = unPremultLinearToSRGB(c.r);
  c.g = unPremultLinearToSRGB(c.g);
  c.b = unPremultLinearToSRGB(c.b);
  return c;
}

float unPremultSRGBToLinear(float c)
{
  if(c < 0.04045f)
    return c / 12.92f;
  return pow((c + 0.055f) / 1.055f, 2.4f);
}

vec4 unPremultSRGBToLinear(vec4 c)
{
  c.r = unPremultSRGBToLinear(c.r);
  c.g = unPremultSRGBToLinear(c.g);
  c.b = unPremultSRGBToLinear(c.b);
  return c;
}

layout(binding = 1, rg32ui) uniform coherent uimageBuffer imgAbuffer;
layout(binding = 2, r32ui) uniform coherent uimage2D imgAux;
layout(binding = 4, r32ui) uniform coherent uimage2D imgDepth;

layout(location = 0) in Interpolants IN;
layout(location = 0, index = 0) out vec4 outColor;

ivec2 coord = ivec2(gl_FragCoord.xy);

void main()
{
  vec4       color     = shading(IN);
  const vec4 sRGBColor = unPremultLinearToSRGB(color);
  const int  viewSize  = scene.viewport.z;
  const int  listPos   = coord.y * scene.viewport.x + coord.x;
  uvec4 storeValue = uvec4(packUnorm4x8(sRGBColor), floatBitsToUint(gl_FragCoord.z), 0, 0);

  beginInvocationInterlockARB();
  uint oldDepth = imageLoad(imgDepth, coord).r;
  if(storeValue.y <= oldDepth)
  {
    const uint oldCounter = imageLoad(imgAux, coord).r;
    imageStore(imgAux, coord, uvec4(oldCounter + 1));
    if(oldCounter < OIT_LAYERS)
    {
      imageStore(imgAbuffer, listPos + int(oldCounter) * viewSize, storeValue);
      color = vec4(0);
    }
    else
    {
      int  furthest = 0;
      uint maxDepth = 0;
      for(int i = 0; i < OIT_LAYERS; i++)
      {
        const uint testDepth = imageLoad(imgAbuffer, listPos + i * viewSize).g;
        if(testDepth > maxDepth)
        {
          maxDepth = testDepth;
          furthest = i;
        }
      }
      if(maxDepth > storeValue.g)
      {
        color = unPremultSRGBToLinear(unpackUnorm4x8(imageLoad(imgAbuffer, listPos + furthest * viewSize).r));
        imageStore(imgAbuffer, listPos + furthest * viewSize, storeValue);
        imageStore(imgDepth, coord, uvec4(maxDepth));
      }
    }
  }
  endInvocationInterlockARB();
  outColor = vec4(color.rgb * color.a, color.a);
}

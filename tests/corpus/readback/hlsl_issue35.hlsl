// The read-back corpus (issue 35; README.md in this folder): issue 35's
// shape in HLSL, outputs as out parameters read back and written again.
static const float2 POS[3] = { float2(-0.9, -0.8), float2(0.85, -0.2), float2(-0.3, 0.9) };
void main(uint vid : SV_VertexID, out float4 pos : SV_Position, out float var1 : TEXCOORD0, out float var2 : TEXCOORD1) {
    float2 p = POS[vid % 3];
    pos = float4(p, 0.0, 1.0);
    float in0 = p.x * 0.5 + 0.5;
    float in1 = p.y * 0.5 + 0.5;
    var1 = in0;
    var2 = var1 + in1;
}

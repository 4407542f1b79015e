// The read-back corpus (issue 35; README.md in this folder): an HLSL vertex
// shader that keeps its outputs in its output struct throughout (read
// back, written in parts, under a condition, in a loop).
static const float2 POS[3] = { float2(-0.9, -0.8), float2(0.85, -0.2), float2(-0.3, 0.9) };
struct VSOut {
    float4 pos : SV_Position;
    float4 a : TEXCOORD0;
    float4 b : TEXCOORD1;
};
void accumulate(inout VSOut o, float x) { o.b.x += x * o.a.y; }
VSOut main(uint vid : SV_VertexID) {
    VSOut o;
    float2 p = POS[vid % 3];
    o.pos = float4(p, 0.0, 1.0);
    o.a = float4(p * 0.5 + 0.5, 0.25, 0.75);
    o.b = o.a.yxwz * 0.5;
    if (o.a.x > 0.5) {
        o.a.z = o.b.y;
    }
    for (int i = 0; i < 3; i++) {
        accumulate(o, 0.125);
    }
    o.a.w = o.a.w * 0.5 + o.b.x * 0.25;
    return o;
}

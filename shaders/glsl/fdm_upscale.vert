#version 450
// The GPU plan's upscale (layer/src/fdm/gpu_plan.rs): one instanced draw
// per candidate area, an instance per region. Instance r places a quad over
// region r (the region bounds in the plan buffer) when the plan shader chose
// this draw's area for it in this view, and collapses it otherwise, so each
// pixel of each view is drawn once, by the area its view chose for its
// region, from that area's scratch target (the fragment shader). A
// multiview pass is upscaled view by view (a render pass per view's layer,
// not a multiview one: no view-index state of the driver's is involved),
// each reading its own view's choices.
// The host plan's composite (layer/src/fdm/composite.rs) draws the same way
// from a list of rectangles instead: `choices` is RECTS, and instance r
// (firstInstance included) covers the rectangle at words[bounds + 4r]
// (x0, y0, x1, y1, framebuffer pixels); the viewport is (0, 0) to
// (columns, rows), the framebuffer's extent.
layout(set = 0, binding = 1, std430) readonly buffer Plan { uint words[]; };
// Word offsets into `words`: the region bounds (columns + 1 x starts, then
// rows + 1 y starts); the choices at `choices` (a region's per view index);
// `view` is the view drawn, `layer` its layer of the scratch target (the
// fragment shader's).
layout(push_constant) uniform Params {
    ivec2 area;
    uint area_index;
    uint columns;
    uint rows;
    uint bounds;
    uint choices;
    uint regions;
    uint view;
    uint layer;
    uint sample_index;
    // The scratch target's extent where the fragment shader samples it by
    // normalized coordinates (the plain colour variant), else 0 (two
    // words: a uvec2 would be aligned to 8 bytes).
    uint width;
    uint height;
} pc;

// The scratch texel a vertex maps to (framebuffer position / area),
// interpolated: at pixel centre p + 0.5 it is (p + 0.5) / area, whose
// integer part is p / area (at least 1/8 of a texel from an edge: no
// rounding crosses it). Divided by the scratch target's extent where
// it is set: the normalized coordinate whose nearest texel that is.
layout(location = 0) out vec2 st;

vec2 texel(vec2 p) {
    vec2 t = p / vec2(pc.area);
    return pc.width != 0u ? t / vec2(float(pc.width), float(pc.height)) : t;
}

const uint RECTS = 0xffffffffu;

void main() {
    uint r = uint(gl_InstanceIndex);
    const uint corner[6] = uint[6](0u, 1u, 2u, 2u, 1u, 3u);
    uint c = corner[gl_VertexIndex];
    if (pc.choices == RECTS) {
        uint w = pc.bounds + 4u * r;
        vec2 a = vec2(float(words[w]), float(words[w + 1u]));
        vec2 b = vec2(float(words[w + 2u]), float(words[w + 3u]));
        vec2 p = vec2((c & 1u) != 0u ? b.x : a.x, (c & 2u) != 0u ? b.y : a.y);
        st = texel(p);
        gl_Position = vec4(p / vec2(float(pc.columns), float(pc.rows)) * 2.0 - 1.0, 0.0, 1.0);
        return;
    }
    if (words[pc.choices + pc.view * pc.regions + r] != pc.area_index) {
        // Degenerate (zero area, inside the clip volume: nothing is clipped).
        gl_Position = vec4(0.0, 0.0, 0.0, 1.0);
        st = vec2(0.0);
        return;
    }
    uint cx = r % pc.columns, cy = r / pc.columns;
    uint xs = pc.bounds, ys = pc.bounds + pc.columns + 1u;
    vec2 lo = vec2(float(words[xs]), float(words[ys]));
    vec2 hi = vec2(float(words[xs + pc.columns]), float(words[ys + pc.rows]));
    vec2 a = vec2(float(words[xs + cx]), float(words[ys + cy]));
    vec2 b = vec2(float(words[xs + cx + 1u]), float(words[ys + cy + 1u]));
    // Two triangles: corners 0 1 2, 2 1 3 of the rectangle (a, b).
    vec2 p = vec2((c & 1u) != 0u ? b.x : a.x, (c & 2u) != 0u ? b.y : a.y);
    st = texel(p);
    // The viewport is the render area (lo, hi).
    gl_Position = vec4((p - lo) / (hi - lo) * 2.0 - 1.0, 0.0, 1.0);
}

//! How a captured command goes down again under a replay's [`Transform`]:
//! viewports scaled by `1/area` (`x' = x/area`), scissors and clear
//! rectangles clipped to the replay's rectangle and scaled (ends rounded
//! up), pipelines replaced by their per-area variants (shader objects too),
//! descriptor sets by shadow copies whose input attachments read the
//! scratch views ([`super::descriptors`]). Outside replays the same
//! emission runs with [`Transform::IDENTITY`]. Why emitting is sound: the
//! capture rule of [`super::commands`].

use super::commands::{pipeline_info, Cmd, MaskFrom, ShaderBinds, Snapshot, Transform};
use super::{Fdm, PipelineInfo};
use ash::vk;

/// Sends `cmd` down into `cb` under `t`, and notes it in `st`.
///
/// # Safety
/// The capture rule (module doc): `cb` is the recording command buffer of
/// `f`'s device that the application recorded `cmd` in, held by the caller,
/// at the point of the pass (or its replay) where `cmd` belongs; `t.inputs`
/// holds scratch views of this replay.
pub(super) unsafe fn emit(f: &Fdm, cb: vk::CommandBuffer, cmd: &Cmd, t: &Transform, st: &mut Snapshot) {
    let info = pipeline_info(f, cmd);
    st.apply(cmd, info.as_deref());
    // SAFETY: the capture rule (module doc): `cb` is recording, inside the
    // pass `cmd` was recorded in, with its valid arguments.
    if unsafe { super::multiview_flush::draw(f, cb, cmd) } {
        return;
    }
    let d = &f.below;
    let v1 = d.fp_v1_0();
    // SAFETY: the capture rule (module doc): `cb` is recording, every handle
    // in `cmd` is alive, and every array passed is a live Vec of the count
    // given; the commands go through the next layer's table of this device.
    unsafe {
        match cmd {
            Cmd::BindPipeline(point, p) => emit_bind_pipeline(f, cb, (*point, *p), info.as_deref(), t, st),
            Cmd::BindSets { point, layout, first, sets, offsets } => {
                emit_bind_sets(f, cb, (*point, *layout, *first), sets, offsets, t)
            }
            Cmd::BindVertex { first, buffers, offsets, sizes, strides } => {
                if sizes.is_some() || strides.is_some() {
                    (d.fp_v1_3().cmd_bind_vertex_buffers2)(
                        cb,
                        *first,
                        buffers.len() as u32,
                        buffers.as_ptr(),
                        offsets.as_ptr(),
                        sizes.as_ref().map_or(std::ptr::null(), |s| s.as_ptr()),
                        strides.as_ref().map_or(std::ptr::null(), |s| s.as_ptr()),
                    )
                } else {
                    (v1.cmd_bind_vertex_buffers)(cb, *first, buffers.len() as u32, buffers.as_ptr(), offsets.as_ptr())
                }
            }
            Cmd::BindIndex(b, o, ty) => (v1.cmd_bind_index_buffer)(cb, *b, *o, *ty),
            Cmd::Push { layout, stages, offset, data } => {
                (v1.cmd_push_constants)(cb, *layout, *stages, *offset, data.len() as u32, data.as_ptr() as *const _)
            }
            Cmd::Viewport { first, v } => {
                let out = t.viewports(*first, v);
                (v1.cmd_set_viewport)(cb, *first, out.len() as u32, out.as_ptr())
            }
            Cmd::Scissor { first, s } => {
                let out = t.scissors(*first, s);
                (v1.cmd_set_scissor)(cb, *first, out.len() as u32, out.as_ptr())
            }
            Cmd::LineWidth(w) => (v1.cmd_set_line_width)(cb, *w),
            Cmd::DepthBias(a, b, c) => (v1.cmd_set_depth_bias)(cb, *a, *b, *c),
            Cmd::Blend(c) => (v1.cmd_set_blend_constants)(cb, c),
            Cmd::Bounds(a, b) => (v1.cmd_set_depth_bounds)(cb, *a, *b),
            Cmd::StencilCompare(face, v) => (v1.cmd_set_stencil_compare_mask)(cb, *face, *v),
            Cmd::StencilWrite(face, v) => (v1.cmd_set_stencil_write_mask)(cb, *face, *v),
            Cmd::StencilRef(face, v) => (v1.cmd_set_stencil_reference)(cb, *face, *v),
            Cmd::Draw(a, b, c, e) => (v1.cmd_draw)(cb, *a, *b, *c, *e),
            Cmd::DrawIndexed(a, b, c, o, e) => (v1.cmd_draw_indexed)(cb, *a, *b, *c, *o, *e),
            Cmd::DrawIndirect(b, o, n, s) => (v1.cmd_draw_indirect)(cb, *b, *o, *n, *s),
            Cmd::DrawIndexedIndirect(b, o, n, s) => (v1.cmd_draw_indexed_indirect)(cb, *b, *o, *n, *s),
            Cmd::DrawIndirectCount(b, o, cbuf, co, m, s) => {
                (d.fp_v1_2().cmd_draw_indirect_count)(cb, *b, *o, *cbuf, *co, *m, *s)
            }
            Cmd::DrawIndexedIndirectCount(b, o, cbuf, co, m, s) => {
                (d.fp_v1_2().cmd_draw_indexed_indirect_count)(cb, *b, *o, *cbuf, *co, *m, *s)
            }
            Cmd::DrawMulti { draws, instances, first_instance } => (f.multi_draw.cmd_draw_multi_ext)(
                cb,
                draws.len() as u32,
                draws.as_ptr(),
                *instances,
                *first_instance,
                std::mem::size_of::<vk::MultiDrawInfoEXT>() as u32,
            ),
            Cmd::DrawMultiIndexed { draws, instances, first_instance, vertex_offset } => {
                (f.multi_draw.cmd_draw_multi_indexed_ext)(
                    cb,
                    draws.len() as u32,
                    draws.as_ptr(),
                    *instances,
                    *first_instance,
                    std::mem::size_of::<vk::MultiDrawIndexedInfoEXT>() as u32,
                    vertex_offset.as_ref().map_or(std::ptr::null(), |o| o as *const i32),
                )
            }
            Cmd::Clear { attachments, rects } => {
                let rects = t.clear_rects(rects);
                if !rects.is_empty() {
                    (v1.cmd_clear_attachments)(
                        cb,
                        attachments.len() as u32,
                        attachments.as_ptr(),
                        rects.len() as u32,
                        rects.as_ptr(),
                    )
                }
            }
            Cmd::NextSubpass => (v1.cmd_next_subpass)(cb, vk::SubpassContents::INLINE),
            Cmd::ViewportCount(v) => {
                let out: Vec<vk::Viewport> = v.iter().map(|v| t.viewport(v)).collect();
                (d.fp_v1_3().cmd_set_viewport_with_count)(cb, out.len() as u32, out.as_ptr())
            }
            Cmd::ScissorCount(s) => {
                let out: Vec<vk::Rect2D> = s.iter().map(|s| t.rect(s)).collect();
                (d.fp_v1_3().cmd_set_scissor_with_count)(cb, out.len() as u32, out.as_ptr())
            }
            Cmd::State { call, .. } => (call.0)(d, cb),
            Cmd::BindShaders(b) => emit_bind_shaders(f, cb, b, t),
        }
    }
}

/// A graphics or compute pipeline bound (`point`, `p`): under `t` the
/// variant of its area where the layer made variants (`info`), then its
/// static viewports and scissors as the layer made them dynamic.
///
/// # Safety
/// As [`emit`].
unsafe fn emit_bind_pipeline(
    f: &Fdm,
    cb: vk::CommandBuffer,
    (point, p): (vk::PipelineBindPoint, vk::Pipeline),
    info: Option<&PipelineInfo>,
    t: &Transform,
    st: &Snapshot,
) {
    let mut chosen = info.and_then(|i| i.variants.get(&t.area).copied()).unwrap_or(p);
    if t.views.is_some() && point == vk::PipelineBindPoint::GRAPHICS {
        // Every graphics pipeline of the pass has its per-view or viewport-mask partner (the replay's check).
        let partner = match t.mask {
            MaskFrom::None => f.per_view.as_ref().and_then(|pv| pv.partner(chosen)),
            MaskFrom::Binding => f.masks.as_ref().and_then(|m| m.partner(chosen)),
        };
        chosen = partner.unwrap_or(chosen);
    }
    // SAFETY: the caller's guarantee (the capture rule): `cb` is recording and `chosen` alive (the application's
    // pipeline or one of its variants).
    unsafe {
        (f.below.fp_v1_0().cmd_bind_pipeline)(cb, point, chosen);
        if point == vk::PipelineBindPoint::GRAPHICS {
            super::multiview_flush::bound(f, cb, chosen);
        }
        if let Some(info) = info {
            if info.static_viewports.is_some() {
                emit_viewports(f, cb, t, st);
            }
            if info.static_scissors.is_some() {
                emit_scissors(f, cb, t, st);
            }
        }
    }
}

/// Descriptor sets bound (`point`, `layout`, `first`): in a replay into
/// scratch targets (`t.inputs`), each set whose input attachments must
/// read the scratch views replaced by its shadow.
///
/// # Safety
/// As [`emit`].
unsafe fn emit_bind_sets(
    f: &Fdm,
    cb: vk::CommandBuffer,
    (point, layout, first): (vk::PipelineBindPoint, vk::PipelineLayout, u32),
    sets: &[vk::DescriptorSet],
    offsets: &[u32],
    t: &Transform,
) {
    let shadowed: Vec<vk::DescriptorSet>;
    let sets: &[vk::DescriptorSet] = match t.inputs {
        Some(inputs) => {
            // Made before the replays were recorded (by the replay).
            let made = inputs.shadows.borrow();
            shadowed = sets.iter().map(|set| made.get(set).copied().unwrap_or(*set)).collect();
            &shadowed
        }
        None => sets,
    };
    // SAFETY: the caller's guarantee (the capture rule): `cb` is recording, every set alive (the application's or
    // its shadow); the arrays are live slices of the counts given.
    unsafe {
        (f.below.fp_v1_0().cmd_bind_descriptor_sets)(
            cb,
            point,
            layout,
            first,
            sets.len() as u32,
            sets.as_ptr(),
            offsets.len() as u32,
            offsets.as_ptr(),
        )
    }
}

/// Shader objects bound: under `t` above 1x1, each the variant of its area
/// where the layer made variants.
///
/// # Safety
/// As [`emit`].
unsafe fn emit_bind_shaders(f: &Fdm, cb: vk::CommandBuffer, b: &ShaderBinds, t: &Transform) {
    let Some(so) = &f.below_shader_object else { return };
    let mut shaders = b.shaders;
    if t.area != (1, 1) {
        let known = f.shader_objects.lock();
        for s in &mut shaders[..b.n] {
            if let Some(v) = known.get(s).and_then(|o| o.variants.get(&t.area)) {
                *s = *v;
            }
        }
    }
    // SAFETY: the caller's guarantee (the capture rule): `cb` is recording, every shader alive (the application's
    // or a variant of it); the arrays hold `b.n` entries.
    unsafe {
        (so.cmd_bind_shaders_ext)(cb, b.n as u32, b.stages.as_ptr(), shaders.as_ptr());
        super::multiview_flush::bound(f, cb, vk::Pipeline::null());
    }
}

/// # Safety
/// `cb` is a recording command buffer of `f`'s device, held by the caller.
unsafe fn emit_viewports(f: &Fdm, cb: vk::CommandBuffer, t: &Transform, st: &Snapshot) {
    let app: Vec<vk::Viewport> = st.viewports.iter().map_while(|v| *v).collect();
    let mut v = t.viewports(0, &app);
    if f.controls.misreplay && t.area != (1, 1) {
        // `debug_fdm_misreplay`: one fragment off, on purpose.
        for v in &mut v {
            v.x += 1.0;
        }
    }
    if !v.is_empty() {
        // SAFETY: `cb` is recording (the caller's guarantee); `v` is a live
        // Vec of the count given.
        unsafe { (f.below.fp_v1_0().cmd_set_viewport)(cb, 0, v.len() as u32, v.as_ptr()) };
    }
}

/// # Safety
/// `cb` is a recording command buffer of `f`'s device, held by the caller.
pub(super) unsafe fn emit_scissors(f: &Fdm, cb: vk::CommandBuffer, t: &Transform, st: &Snapshot) {
    let app: Vec<vk::Rect2D> = st.scissors.iter().map_while(|s| *s).collect();
    let s = t.scissors(0, &app);
    if !s.is_empty() {
        // SAFETY: `cb` is recording (the caller's guarantee); `s` is a live
        // Vec of the count given.
        unsafe { (f.below.fp_v1_0().cmd_set_scissor)(cb, 0, s.len() as u32, s.as_ptr()) };
    }
}

/// Re-establishes `st` (the state at the start of the pass) under `t`.
///
/// # Safety
/// As [`emit`], for every command of `st`: `cb` is the recording command
/// buffer they were recorded in.
pub(super) unsafe fn restore(f: &Fdm, cb: vk::CommandBuffer, st: &Snapshot, t: &Transform) {
    let mut scratch = st.clone();
    // SAFETY: the caller's guarantee (the capture rule) for every command
    // of `st` and for `cb`.
    unsafe {
        for cmd in st.cmds.values() {
            emit(f, cb, cmd, t, &mut scratch);
        }
        emit_viewports(f, cb, t, st);
        emit_scissors(f, cb, t, st);
    }
}

/// Re-establishes the compute pipeline and sets of `st` (after the layer's
/// own dispatch disturbed them).
///
/// # Safety
/// As [`restore`].
pub(super) unsafe fn restore_compute(f: &Fdm, cb: vk::CommandBuffer, st: &Snapshot) {
    let mut scratch = st.clone();
    // SAFETY: the caller's guarantee (the capture rule) for every command of `st` and for `cb`.
    unsafe {
        for cmd in st.compute.values() {
            emit(f, cb, cmd, &Transform::IDENTITY, &mut scratch);
        }
    }
}

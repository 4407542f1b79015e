//! Pass lifecycle: a density-map pass from its begin to its end.
//!
//! At `vkCmdBeginRenderPass*` / `vkCmdBeginRendering` of a pass with a
//! density map, the begin is copied ([`Begin`]) and, in mode `binned`,
//! nothing goes down: the pass is captured ([`super::capture`]) and the
//! density map is read on the host at that moment (the spec's time for a
//! non-dynamic map, [`super::map_readback`]). At its end the captured pass
//! is replayed ([`super::replay`]).
//!
//! A pass that cannot be replayed is rendered once at 1x1 (the spec always
//! allows it), logged once per reason: storage writes or atomics in a bound
//! pipeline, queries, barriers or events in the pass, a pipeline not made for
//! the pass, multisampled attachments that load or store, attachments without
//! blit support, structures the layer does not copy, secondaries it did not
//! capture. Such a pass *goes live*: it begins for real as recorded, what was
//! captured so far goes down unchanged, and later commands go straight down.

use super::capture::record_in;
use super::command_buffers::cb_state;
use super::commands::{Cmd, Snapshot, Transform};
use super::emit::{emit, restore};
use super::map_readback::{density_map, MapTexels};
use super::replay::replay;
use super::{Fdm, FramebufferInfo, Mode, PassInfo};
use crate::device::DeviceCore;
use crate::ffi::slice;
use crate::id;
use crate::settings::LogLevel;
use ash::vk;
use std::sync::Arc;

/// A pass as begun by the application, copied.
#[derive(Clone)]
pub(super) enum Begin {
    RenderPass {
        render_pass: vk::RenderPass,
        framebuffer: vk::Framebuffer,
        area: vk::Rect2D,
        clears: Vec<vk::ClearValue>,
        /// Imageless framebuffers: the views given at begin.
        views: Vec<vk::ImageView>,
        pass: Arc<PassInfo>,
        fb: Arc<FramebufferInfo>,
    },
    Rendering {
        flags: vk::RenderingFlags,
        area: vk::Rect2D,
        layers: u32,
        view_mask: u32,
        colors: Vec<vk::RenderingAttachmentInfo<'static>>,
        depth: Option<vk::RenderingAttachmentInfo<'static>>,
        stencil: Option<vk::RenderingAttachmentInfo<'static>>,
        map: vk::ImageView,
        map_layout: vk::ImageLayout,
    },
}

impl Begin {
    pub(super) fn area(&self) -> vk::Rect2D {
        match self {
            Begin::RenderPass { area, .. } | Begin::Rendering { area, .. } => *area,
        }
    }

    /// Begun with the per-layer density bit (`VK_VALVE_fragment_density_map_layered`).
    pub(super) fn per_layer(&self) -> bool {
        match self {
            Begin::RenderPass { pass, .. } => pass.per_layer,
            Begin::Rendering { flags, .. } => flags.contains(super::layered::RENDERING_PER_LAYER),
        }
    }

    /// The views the density map is planned for, as a mask: a multiview
    /// pass's `view_mask`; a per-layer pass's framebuffer layers (each reads
    /// its own map layer, with its own offset, as a view would: the
    /// framebuffer layer a primitive lands in is the shaders' choice, so
    /// every replay renders them all); 0 otherwise (one view, map layer 0).
    pub(super) fn planned_views(&self, view_mask: u32, fb_layers: u32, without_per_layer: bool) -> u32 {
        if view_mask != 0 {
            view_mask
        } else if self.per_layer() && fb_layers > 1 && !without_per_layer {
            let n = fb_layers.min(super::layered::MAX_LAYERS);
            if n >= 32 {
                u32::MAX
            } else {
                (1 << n) - 1
            }
        } else {
            0
        }
    }
}

pub(super) struct Pass {
    pub(super) begin: Begin,
    pub(super) capturing: bool,
    pub(super) cmds: Vec<Cmd>,
    /// State at the start of the pass (capture) or now (live).
    pub(super) state: Snapshot,
    /// The density map, read on the host at the start of the pass.
    pub(super) map: Option<Arc<MapTexels>>,
    /// Descriptor pools of shadow sets made for the replays.
    pub(super) shadow_pools: Vec<vk::DescriptorPool>,
    /// The density offsets per layer given at the end of the pass
    /// (`VK_EXT_fragment_density_map_offset`; empty: none).
    pub(super) offsets: Vec<vk::Offset2D>,
    /// Its map is dynamic or deferred: planned on the GPU at its end
    /// ([`super::gpu_plan`]), never read on the host.
    pub(super) gpu: bool,
    /// Its replays bound the layer's compute pipeline (the composite's):
    /// the application's compute state goes back at its end.
    pub(super) compute_bound: bool,
}

impl Pass {
    /// The captured pass changes subpass (a replay may then not share its
    /// render pass instance, nor a conditional-rendering scope span it).
    pub(super) fn has_several_subpasses(&self) -> bool {
        self.cmds.iter().any(|c| matches!(c, Cmd::NextSubpass))
    }
}

/// Why a pass renders at 1x1, logged once per reason and pass.
fn fallback_log(dev: &DeviceCore, begin: &Begin, why: &str) {
    let key = match begin {
        Begin::RenderPass { render_pass, .. } => format!("{render_pass:?} {why}"),
        Begin::Rendering { .. } => format!("rendering {why}"),
    };
    dev.log().log_once(
        LogLevel::Info,
        id::FDM_FALLBACK,
        &key,
        &format!("a density-map pass renders at a 1x1 fragment area: {why}"),
    );
}

/// Begins the application's pass for real (as translated) with `INLINE` contents.
///
/// # Safety
/// `cb` is a recording command buffer of `f`'s device, held by the caller,
/// outside a render pass; `begin` is a copy of a valid begin the
/// application recorded in it (alive: the capture rule of
/// [`super::commands`]), or one retargeted at the layer's scratch targets.
pub(super) unsafe fn begin_real(f: &Fdm, cb: vk::CommandBuffer, begin: &Begin) {
    match begin {
        Begin::RenderPass { render_pass, framebuffer, area, clears, views, .. } => {
            let mut attach = vk::RenderPassAttachmentBeginInfo::default().attachments(views);
            let mut info = vk::RenderPassBeginInfo::default()
                .render_pass(*render_pass)
                .framebuffer(*framebuffer)
                .render_area(*area)
                .clear_values(clears);
            if !views.is_empty() {
                info = info.push_next(&mut attach);
            }
            // SAFETY: the caller's guarantee; the info and its chain are
            // locals pointing into `begin`'s Vecs.
            unsafe { (f.below.fp_v1_0().cmd_begin_render_pass)(cb, &info, vk::SubpassContents::INLINE) }
        }
        Begin::Rendering { flags, area, layers, view_mask, colors, depth, stencil, .. } => {
            let info = vk::RenderingInfo {
                flags: *flags
                    & !(vk::RenderingFlags::CONTENTS_SECONDARY_COMMAND_BUFFERS | super::layered::RENDERING_PER_LAYER),
                render_area: *area,
                layer_count: *layers,
                view_mask: *view_mask,
                color_attachment_count: colors.len() as u32,
                p_color_attachments: colors.as_ptr(),
                p_depth_attachment: depth.as_ref().map_or(std::ptr::null(), |d| d as *const _),
                p_stencil_attachment: stencil.as_ref().map_or(std::ptr::null(), |d| d as *const _),
                ..Default::default()
            };
            // SAFETY: the caller's guarantee; the info points into
            // `begin`'s Vec and options (attachments without `pNext`).
            unsafe { (f.below.fp_v1_3().cmd_begin_rendering)(cb, &info) }
        }
    }
}

/// Ends the pass `begin` began.
///
/// # Safety
/// `cb` is a recording command buffer of `f`'s device, held by the caller,
/// inside the pass [`begin_real`] began from `begin` (in its last subpass).
pub(super) unsafe fn end_real(f: &Fdm, cb: vk::CommandBuffer, begin: &Begin) {
    // SAFETY: the caller's guarantee.
    unsafe {
        match begin {
            Begin::RenderPass { .. } => (f.below.fp_v1_0().cmd_end_render_pass)(cb),
            Begin::Rendering { .. } => (f.below.fp_v1_3().cmd_end_rendering)(cb),
        }
    }
}

/// Stops capturing: the pass begins for real at 1x1 and what was captured
/// goes down unchanged.
///
/// # Safety
/// As [`begin_live`].
pub(super) unsafe fn go_live(dev: &DeviceCore, f: &Fdm, cb: vk::CommandBuffer, pass: &mut Pass, why: &str) {
    fallback_log(dev, &pass.begin, why);
    // SAFETY: the caller's guarantee.
    unsafe { begin_live(f, cb, pass) };
}

/// The pass begins for real, as recorded, and what was captured so far goes
/// down unchanged; later commands go straight down.
///
/// # Safety
/// `cb` is the recording command buffer of `f`'s device that `pass` was
/// begun (and so far captured) in, held by the caller, with nothing of the
/// pass sent down yet (the capture rule of [`super::commands`]).
pub(super) unsafe fn begin_live(f: &Fdm, cb: vk::CommandBuffer, pass: &mut Pass) {
    let mut st = pass.state.clone();
    // SAFETY: the caller's guarantee (the capture rule): the begin, the
    // state at the start of the pass, then the captured commands in order.
    unsafe {
        begin_real(f, cb, &pass.begin);
        restore(f, cb, &st.clone(), &Transform::IDENTITY);
        for c in std::mem::take(&mut pass.cmds) {
            emit(f, cb, &c, &Transform::IDENTITY, &mut st);
        }
    }
    pass.state = st;
    pass.capturing = false;
}

/// Starts a density-map pass: capture (binned) or go down at once.
///
/// # Safety
/// `cb` is the application's recording command buffer of `f`'s device,
/// held during its call, outside a render pass; `begin` is a copy of the
/// valid begin it is recording.
unsafe fn start(dev: &DeviceCore, f: &Fdm, cb: vk::CommandBuffer, begin: Begin, early: Option<&str>) {
    let shared = cb_state(f, cb);
    let mut s = shared.lock();
    let mut why = early.map(str::to_string);
    if why.is_none() && s.active_queries > 0 {
        why = Some("a query is active across it".into());
    }
    if why.is_none() && f.mode == Mode::Baseline {
        why = Some(String::new());
    }
    let mut pass = Pass {
        begin,
        capturing: true,
        cmds: Vec::new(),
        state: s.snapshot.clone(),
        map: None,
        shadow_pools: Vec::new(),
        offsets: Vec::new(),
        gpu: false,
        compute_bound: false,
    };
    if why.is_none() {
        // The spec's time for a non-dynamic map: read by the host now. A
        // dynamic or deferred map is not read: the GPU plans the pass when
        // it executes (`super::gpu_plan`), or without conditional rendering
        // the pass renders at 1x1. `debug_fdm_without=gpu_plan` reads it
        // now all the same (stale: the control).
        match attachments(f, &pass.begin).and_then(|(_, view, layout, ..)| {
            if f.views.lock().get(&view).is_some_and(|i| i.dynamic_or_deferred) && !f.controls.without_gpu_plan {
                if f.conditional.is_none() {
                    return Err("its density map view is dynamic or deferred and the GPU plan has no conditional rendering (the driver lacks VK_EXT_conditional_rendering, or it is a Vulkan 1.0 application): the map is not read and the pass renders at 1x1 (density 1, which the spec allows for any map)".into());
                }
                if s.secondary {
                    return Err("its density map view is dynamic or deferred and it is recorded in a secondary command buffer (the GPU plan's upscale begins render passes, which a secondary may not): the map is not read and the pass renders at 1x1 (density 1, which the spec allows for any map)".into());
                }
                if s.app_conditional && !f.controls.without_app_conditional {
                    return Err("its density map view is dynamic or deferred and the application's conditional rendering is active around it (the GPU plan's may not nest in it): the map is not read and the pass renders at 1x1 (density 1, which the spec allows for any map)".into());
                }
                return Ok(None);
            }
            // SAFETY: the map's view is named by the valid begin being
            // recorded, in the layout that begin expects it in.
            unsafe { density_map(dev, f, view, layout) }.map(Some)
        }) {
            Ok(Some(m)) => pass.map = Some(m),
            Ok(None) => pass.gpu = true,
            Err(e) => why = Some(e),
        }
    }
    if let Some(why) = why {
        // SAFETY: the caller's guarantee: `cb` is recording `pass`'s begin,
        // nothing of it sent down yet.
        unsafe {
            if why.is_empty() {
                begin_live(f, cb, &mut pass);
            } else {
                go_live(dev, f, cb, &mut pass, &why);
            }
        }
    }
    s.pass = Some(pass);
}

/// The begin of a density-map render pass, copied (`None` for a pass
/// without a density map).
///
/// # Safety
/// `info` is a valid `VkRenderPassBeginInfo` (its chain and clear values).
unsafe fn render_pass_begin(f: &Fdm, info: &vk::RenderPassBeginInfo) -> Option<Begin> {
    let pass = f.passes.lock().get(&info.render_pass).cloned()?;
    pass.density_map?;
    let fb = f.framebuffers.lock().get(&info.framebuffer).cloned()?;
    let mut views = Vec::new();
    if fb.imageless {
        // SAFETY: VUID-VkRenderPassBeginInfo-pNext-pNext: a valid chain.
        if let Some(a) = unsafe { crate::pnext::find::<vk::RenderPassAttachmentBeginInfo>(info.p_next) } {
            // SAFETY: VUID-VkRenderPassAttachmentBeginInfo-pAttachments-parameter: `attachmentCount` views.
            views = unsafe { slice(a.p_attachments, a.attachment_count) }.to_vec();
        }
    }
    Some(Begin::RenderPass {
        render_pass: info.render_pass,
        framebuffer: info.framebuffer,
        area: info.render_area,
        // SAFETY: VUID-VkRenderPassBeginInfo-pClearValues-parameter (the
        // values are copied at once).
        clears: unsafe { slice(info.p_clear_values, info.clear_value_count) }.to_vec(),
        views,
        pass,
        fb,
    })
}

/// Structures in a begin info's chain the layer can carry to a replay.
///
/// # Safety
/// `p` is a valid `pNext` chain.
unsafe fn only_known(mut p: *const std::ffi::c_void, known: &[vk::StructureType]) -> bool {
    while !p.is_null() {
        // SAFETY: the caller's guarantee: every non-null link of a valid chain
        // starts with `sType` and `pNext` (VkBaseInStructure).
        let b = unsafe { &*(p as *const vk::BaseInStructure) };
        if !known.contains(&b.s_type) {
            return false;
        }
        p = b.p_next as *const _;
    }
    true
}

/// Why a render pass must render at 1x1 from its start, if it must.
///
/// # Safety
/// `p_next` is a valid `pNext` chain (`sub_next` is only compared with null).
unsafe fn early_render_pass(
    p_next: *const std::ffi::c_void,
    sub_next: *const std::ffi::c_void,
) -> Option<&'static str> {
    // SAFETY: the caller's guarantee.
    let copyable =
        unsafe { only_known(p_next, &[vk::StructureType::RENDER_PASS_ATTACHMENT_BEGIN_INFO]) } && sub_next.is_null();
    (!copyable).then_some("its begin info chains a structure the layer does not replay")
}

/// `vkCmdBeginRenderPass`: a density-map pass starts (captured in mode
/// `binned`).
///
/// # Safety
/// The arguments are those of a valid `vkCmdBeginRenderPass` call.
pub unsafe fn cmd_begin_render_pass(
    dev: &DeviceCore,
    f: &Fdm,
    cb: vk::CommandBuffer,
    info: *const vk::RenderPassBeginInfo<'_>,
    contents: vk::SubpassContents,
) {
    // SAFETY: the application's arguments of a valid call go down unchanged.
    let next = move || unsafe { (f.below.fp_v1_0().cmd_begin_render_pass)(cb, info, contents) };
    // SAFETY: VUID-vkCmdBeginRenderPass-pRenderPassBegin-parameter: a valid
    // begin info; `cb` is recording, held during this call.
    unsafe {
        let Some(begin) = render_pass_begin(f, &*info) else { return next() };
        let early = early_render_pass((*info).p_next, std::ptr::null());
        start(dev, f, cb, begin, early)
    }
}

/// `vkCmdBeginRenderPass2`: as [`cmd_begin_render_pass`].
///
/// # Safety
/// The arguments are those of a valid `vkCmdBeginRenderPass2` call.
pub unsafe fn cmd_begin_render_pass2(
    dev: &DeviceCore,
    f: &Fdm,
    cb: vk::CommandBuffer,
    info: *const vk::RenderPassBeginInfo<'_>,
    sub: *const vk::SubpassBeginInfo<'_>,
) {
    // SAFETY: the application's arguments of a valid call go down unchanged.
    let next = move || unsafe { (f.below.fp_v1_2().cmd_begin_render_pass2)(cb, info, sub) };
    // SAFETY: VUID-vkCmdBeginRenderPass2-pRenderPassBegin-parameter and
    // VUID-vkCmdBeginRenderPass2-pSubpassBeginInfo-parameter: valid infos;
    // `cb` is recording, held during this call.
    unsafe {
        let Some(begin) = render_pass_begin(f, &*info) else { return next() };
        let early = early_render_pass((*info).p_next, (*sub).p_next);
        start(dev, f, cb, begin, early)
    }
}

/// A subpass change or the end of a pass, in a density-map pass or not.
///
/// # Safety
/// `cb` is the application's recording command buffer of `f`'s device,
/// held during its valid call of the command that `next` sends down.
unsafe fn pass_command(
    dev: &DeviceCore,
    f: &Fdm,
    cb: vk::CommandBuffer,
    end: bool,
    offsets: Vec<vk::Offset2D>,
    next: impl FnOnce(),
) {
    let shared = cb_state(f, cb);
    let mut s = shared.lock();
    let Some(pass) = &mut s.pass else {
        drop(s);
        return next();
    };
    if !end {
        if pass.capturing {
            pass.cmds.push(Cmd::NextSubpass);
        } else {
            // SAFETY: the capture rule: the live pass's subpass change goes
            // down at once into the recording `cb`.
            unsafe { emit(f, cb, &Cmd::NextSubpass, &Transform::IDENTITY, &mut pass.state) };
        }
        return;
    }
    let mut pass = s.pass.take().unwrap();
    pass.offsets = offsets;
    // Its replays may claim scratch sets.
    s.holds_scratch |= pass.capturing;
    // SAFETY: the application's valid end of the pass in the recording `cb`
    // (the capture rule of `super::commands`): a captured pass is replayed
    // (or goes live, nothing of it sent down yet, then ends); a live one ends.
    unsafe {
        if pass.capturing {
            let replayed = if pass.gpu {
                super::gpu_plan::replay_gpu(dev, f, cb, &mut pass)
            } else {
                replay(dev, f, cb, &mut pass)
            };
            match replayed {
                Err(why) => {
                    go_live(dev, f, cb, &mut pass, &why);
                    end_real(f, cb, &pass.begin);
                }
                Ok(()) => {
                    // The replays left the last area's pipeline variants and
                    // scaled viewports bound: the application's own state
                    // at the end of its pass goes back (outside any pass,
                    // where every state command is valid), as it expects
                    // to find it in the next pass.
                    let last = pass.state.after(f, &pass.cmds);
                    restore(f, cb, &last, &Transform::IDENTITY);
                    if pass.compute_bound && !f.controls.without_compute_restore {
                        super::emit::restore_compute(f, cb, &last);
                    }
                    pass.state = last;
                }
            }
        } else {
            end_real(f, cb, &pass.begin);
        }
    }
    s.shadow_pools.append(&mut pass.shadow_pools);
    // After a pass the state is the pass's last (what the replays track;
    // state they do not track is as the last replay left it).
    s.snapshot = pass.state;
}

/// `vkCmdNextSubpass`.
///
/// # Safety
/// The arguments are those of a valid `vkCmdNextSubpass` call.
pub unsafe fn cmd_next_subpass(dev: &DeviceCore, f: &Fdm, cb: vk::CommandBuffer, contents: vk::SubpassContents) {
    // SAFETY: the application's arguments of a valid call go down unchanged.
    let next = move || unsafe { (f.below.fp_v1_0().cmd_next_subpass)(cb, contents) };
    // SAFETY: the application's valid call on its recording `cb`, held now.
    unsafe { pass_command(dev, f, cb, false, Vec::new(), next) }
}

/// `vkCmdNextSubpass2`.
///
/// # Safety
/// The arguments are those of a valid `vkCmdNextSubpass2` call.
pub unsafe fn cmd_next_subpass2(
    dev: &DeviceCore,
    f: &Fdm,
    cb: vk::CommandBuffer,
    b: *const vk::SubpassBeginInfo<'_>,
    e: *const vk::SubpassEndInfo<'_>,
) {
    // SAFETY: the application's valid call, without density offsets (the
    // driver lacks them; those of a subpass other than the last are ignored).
    let next = move || unsafe { without_offsets(e, |e| (f.below.fp_v1_2().cmd_next_subpass2)(cb, b, e)) };
    // SAFETY: the application's valid call on its recording `cb`, held now.
    unsafe { pass_command(dev, f, cb, false, Vec::new(), next) }
}

/// `vkCmdEndRenderPass`.
///
/// # Safety
/// The arguments are those of a valid `vkCmdEndRenderPass` call.
pub unsafe fn cmd_end_render_pass(dev: &DeviceCore, f: &Fdm, cb: vk::CommandBuffer) {
    // SAFETY: the application's arguments of a valid call go down unchanged.
    let next = move || unsafe { (f.below.fp_v1_0().cmd_end_render_pass)(cb) };
    // SAFETY: the application's valid call on its recording `cb`, held now.
    unsafe { pass_command(dev, f, cb, true, Vec::new(), next) }
}

/// Calls `down` with `e`, or with a copy of it whose chain lacks the density
/// offsets (`VK_EXT_fragment_density_map_offset` is the layer's: the driver
/// must not see its structure).
///
/// # Safety
/// `e` is a valid `VkSubpassEndInfo`.
unsafe fn without_offsets(e: *const vk::SubpassEndInfo<'_>, down: impl FnOnce(*const vk::SubpassEndInfo<'_>)) {
    let offsets = vk::StructureType::SUBPASS_FRAGMENT_DENSITY_MAP_OFFSET_END_INFO_QCOM;
    // SAFETY: VUID-VkSubpassEndInfo-pNext-pNext: a valid chain (the caller's guarantee).
    let (has, chain) = unsafe {
        let p = (*e).p_next;
        (crate::pnext::find::<vk::SubpassFragmentDensityMapOffsetEndInfoQCOM>(p).is_some(), p)
    };
    if !has {
        return down(e);
    }
    // SAFETY: as above.
    match unsafe { crate::pnext::Chain::copy(chain) } {
        Ok(mut c) => {
            c.remove(offsets);
            // SAFETY: the caller's valid info, its chain copied without the offsets (alive in `c`).
            let copy = vk::SubpassEndInfo { p_next: c.head(), ..unsafe { *e } };
            down(&copy)
        }
        Err(_) => down(e),
    }
}

/// `vkCmdEndRenderPass2`.
///
/// # Safety
/// The arguments are those of a valid `vkCmdEndRenderPass2` call.
pub unsafe fn cmd_end_render_pass2(dev: &DeviceCore, f: &Fdm, cb: vk::CommandBuffer, e: *const vk::SubpassEndInfo<'_>) {
    // SAFETY: the application's valid call, without density offsets.
    let next = move || unsafe { without_offsets(e, |e| (f.below.fp_v1_2().cmd_end_render_pass2)(cb, e)) };
    // The offsets of the last subpass, applied by the replays.
    // SAFETY: VUID-vkCmdEndRenderPass2-pSubpassEndInfo-parameter: a valid info and chain.
    let offsets = unsafe { super::end_offsets((*e).p_next) };
    // SAFETY: the application's valid call on its recording `cb`, held now.
    unsafe { pass_command(dev, f, cb, true, offsets, next) }
}

/// `vkCmdBeginRendering` with a density map: a density-map pass starts.
///
/// # Safety
/// The arguments are those of a valid `vkCmdBeginRendering` call.
pub unsafe fn cmd_begin_rendering(
    dev: &DeviceCore,
    f: &Fdm,
    cb: vk::CommandBuffer,
    info: *const vk::RenderingInfo<'_>,
) {
    // SAFETY: the application's arguments of a valid call go down unchanged.
    let next = move || unsafe { (f.below.fp_v1_3().cmd_begin_rendering)(cb, info) };
    // SAFETY: VUID-vkCmdBeginRendering-pRenderingInfo-parameter and
    // VUID-VkRenderingInfo-pNext-pNext: a valid info with a valid chain.
    let (ri, map) = unsafe {
        let ri = &*info;
        (ri, crate::pnext::find::<vk::RenderingFragmentDensityMapAttachmentInfoEXT>(ri.p_next))
    };
    let Some(map) = map.filter(|m| m.image_view != vk::ImageView::null()) else {
        return next();
    };
    // Field by field, without `pNext` (a chain the copy must not borrow:
    // one makes the pass go live below): the copy borrows nothing.
    let copy_att = |a: &vk::RenderingAttachmentInfo| -> vk::RenderingAttachmentInfo<'static> {
        vk::RenderingAttachmentInfo::default()
            .image_view(a.image_view)
            .image_layout(a.image_layout)
            .resolve_mode(a.resolve_mode)
            .resolve_image_view(a.resolve_image_view)
            .resolve_image_layout(a.resolve_image_layout)
            .load_op(a.load_op)
            .store_op(a.store_op)
            .clear_value(a.clear_value)
    };
    // SAFETY: VUID-VkRenderingInfo-pColorAttachments-parameter and VUID-VkRenderingInfo-pDepthAttachment-parameter,
    // VUID-VkRenderingInfo-pStencilAttachment-parameter: `colorAttachmentCount` valid attachments, and valid (or
    // null) depth and stencil attachments.
    let (colors_in, depth_in, stencil_in) = unsafe {
        (
            slice(ri.p_color_attachments, ri.color_attachment_count),
            ri.p_depth_attachment.as_ref(),
            ri.p_stencil_attachment.as_ref(),
        )
    };
    let colors: Vec<vk::RenderingAttachmentInfo<'static>> = colors_in.iter().map(copy_att).collect();
    let begin = Begin::Rendering {
        flags: ri.flags,
        area: ri.render_area,
        layers: ri.layer_count,
        view_mask: ri.view_mask,
        colors,
        depth: depth_in.map(copy_att),
        stencil: stencil_in.map(copy_att),
        map: map.image_view,
        map_layout: super::layout(map.image_layout),
    };
    let atts = colors_in.iter().chain(depth_in).chain(stencil_in);
    let mut early = None;
    // SAFETY: VUID-VkRenderingInfo-pNext-pNext: a valid chain.
    if atts.clone().any(|a| !a.p_next.is_null())
        || !unsafe { only_known(ri.p_next, &[vk::StructureType::RENDERING_FRAGMENT_DENSITY_MAP_ATTACHMENT_INFO_EXT]) }
    {
        early = Some("its rendering info chains a structure the layer does not replay");
    } else if ri.flags.intersects(vk::RenderingFlags::SUSPENDING | vk::RenderingFlags::RESUMING) {
        early = Some("it is suspended or resumed");
    } else if ri.flags.contains(vk::RenderingFlags::CONTENTS_SECONDARY_COMMAND_BUFFERS) {
        early = Some("its contents are secondary command buffers");
    }
    if f.mode == Mode::Baseline || early.is_some() {
        // Down as the application gave it, without the density map.
        // SAFETY: VUID-VkRenderingInfo-pNext-pNext: a valid chain.
        let mut chain = match unsafe { crate::pnext::Chain::copy(ri.p_next) } {
            Ok(c) => c,
            Err(_) => return next(),
        };
        chain.remove(vk::StructureType::RENDERING_FRAGMENT_DENSITY_MAP_ATTACHMENT_INFO_EXT);
        let mut c = *ri;
        c.flags &= !super::layered::RENDERING_PER_LAYER;
        c.p_next = chain.head();
        if let Some(why) = early {
            fallback_log(dev, &begin, why);
        }
        // SAFETY: the application's valid info, with the density-map
        // structure left out of a copy of its chain (alive in `chain`).
        unsafe { (f.below.fp_v1_3().cmd_begin_rendering)(cb, &c) };
        if f.mode == Mode::Baseline {
            return;
        }
        let shared = cb_state(f, cb);
        let mut s = shared.lock();
        let st = s.snapshot.clone();
        s.pass = Some(Pass {
            begin,
            capturing: false,
            cmds: Vec::new(),
            state: st,
            map: None,
            shadow_pools: Vec::new(),
            offsets: Vec::new(),
            gpu: false,
            compute_bound: false,
        });
        return;
    }
    // SAFETY: `cb` is recording, held during this call; `begin` is a copy
    // of the valid info.
    unsafe { start(dev, f, cb, begin, None) }
}

/// `vkCmdEndRendering`.
///
/// # Safety
/// The arguments are those of a valid `vkCmdEndRendering` call.
pub unsafe fn cmd_end_rendering(dev: &DeviceCore, f: &Fdm, cb: vk::CommandBuffer) {
    // SAFETY: the application's arguments of a valid call go down unchanged.
    let next = move || unsafe { (f.below.fp_v1_3().cmd_end_rendering)(cb) };
    // SAFETY: the application's valid call on its recording `cb`, held now.
    unsafe { pass_command(dev, f, cb, true, Vec::new(), next) }
}

/// `vkCmdEndRendering2EXT` (the layer provides it): as `vkCmdEndRendering`,
/// with the density offsets its chain gives.
///
/// # Safety
/// The arguments are those of a valid `vkCmdEndRendering2EXT` call.
pub unsafe fn cmd_end_rendering2(
    dev: &DeviceCore,
    f: &Fdm,
    cb: vk::CommandBuffer,
    info: *const super::RenderingEndInfo,
) {
    // SAFETY: the end the valid call asks for; the driver lacks the command and its structures.
    let next = move || unsafe { (f.below.fp_v1_3().cmd_end_rendering)(cb) };
    // SAFETY: VUID-vkCmdEndRendering2EXT-pRenderingEndInfo-parameter: null or a valid info and chain.
    let offsets = match unsafe { info.as_ref() } {
        // SAFETY: as above.
        Some(i) => unsafe { super::end_offsets(i.p_next) },
        None => Vec::new(),
    };
    // SAFETY: the application's valid call on its recording `cb`, held now.
    unsafe { pass_command(dev, f, cb, true, offsets, next) }
}

/// `vkCmdExecuteCommands`: in a density-map render pass, the commands the
/// secondaries captured are recorded into the primary instead.
///
/// # Safety
/// The arguments are those of a valid `vkCmdExecuteCommands` call.
pub unsafe fn cmd_execute_commands(
    dev: &DeviceCore,
    f: &Fdm,
    cb: vk::CommandBuffer,
    n: u32,
    cbs: *const vk::CommandBuffer,
) {
    // SAFETY: the application's arguments of a valid call go down unchanged.
    let next = move || unsafe { (f.below.fp_v1_0().cmd_execute_commands)(cb, n, cbs) };
    let shared = cb_state(f, cb);
    let in_pass = shared.lock().pass.as_ref().is_some_and(|p| matches!(p.begin, Begin::RenderPass { .. }));
    if !in_pass {
        return next();
    }
    // SAFETY: VUID-vkCmdExecuteCommands-pCommandBuffers-parameter: `n`
    // valid command buffers.
    for sec in unsafe { slice(cbs, n) } {
        let cmds = cb_state(f, *sec).lock().captured.clone();
        match cmds {
            Some(cmds) => {
                let mut s = shared.lock();
                for c in cmds {
                    // SAFETY: the capture rule, through the secondary: it is executable
                    // (VUID-vkCmdExecuteCommands-pCommandBuffers-00089), its commands valid and objects alive;
                    // invalidating it would invalidate `cb`.
                    unsafe { record_in(dev, f, cb, &mut s, c) };
                }
            }
            None => dev.log().log_once(
                LogLevel::Error,
                id::FDM_SECONDARY,
                "",
                "a secondary command buffer executed in a density-map pass was not recorded for one; it is skipped",
            ),
        }
    }
}

/// One attachment of a pass, as the replay handles it.
#[derive(Clone, Debug)]
pub(super) struct Att {
    pub(super) view: vk::ImageView,
    pub(super) image: vk::Image,
    pub(super) range: vk::ImageSubresourceRange,
    pub(super) format: vk::Format,
    pub(super) samples: vk::SampleCountFlags,
    pub(super) usage: vk::ImageUsageFlags,
    pub(super) view_type: vk::ImageViewType,
    pub(super) load: bool,
    pub(super) store: bool,
    /// Its stencil aspect stores (a depth/stencil attachment's).
    pub(super) store_stencil: bool,
    pub(super) initial: vk::ImageLayout,
    pub(super) final_: vk::ImageLayout,
    /// The composite writes it as a storage image, in a compute shader
    /// ([`super::composite`]): single-sampled colour, not integer, made with
    /// the storage usage (the layer adds it: [`Fdm::driver_usage`]) in a 2D
    /// or 2D array view whose format can be stored.
    pub(super) storage: bool,
    /// Its view is 2D with the identity swizzle and the image's usage: a
    /// storage view as it is.
    pub(super) plain: bool,
}

pub(super) fn aspect_of(format: vk::Format) -> vk::ImageAspectFlags {
    use vk::Format as F;
    match format {
        F::D16_UNORM | F::X8_D24_UNORM_PACK32 | F::D32_SFLOAT => vk::ImageAspectFlags::DEPTH,
        F::S8_UINT => vk::ImageAspectFlags::STENCIL,
        F::D16_UNORM_S8_UINT | F::D24_UNORM_S8_UINT | F::D32_SFLOAT_S8_UINT => {
            vk::ImageAspectFlags::DEPTH | vk::ImageAspectFlags::STENCIL
        }
        _ => vk::ImageAspectFlags::COLOR,
    }
}

fn att_of(f: &Fdm, view: vk::ImageView) -> Option<Att> {
    let v = *f.views.lock().get(&view)?;
    let i = *f.images.lock().get(&v.image)?;
    let mut range = v.range;
    range.aspect_mask = aspect_of(v.format);
    let storage = f.storage_composite
        && i.usage.contains(vk::ImageUsageFlags::STORAGE)
        && range.aspect_mask == vk::ImageAspectFlags::COLOR
        && i.samples == vk::SampleCountFlags::TYPE_1
        && matches!(v.view_type, vk::ImageViewType::TYPE_2D | vk::ImageViewType::TYPE_2D_ARRAY)
        && !super::scratch::integer(v.format)
        && f.format_features(v.format).contains(vk::FormatFeatureFlags::STORAGE_IMAGE);
    let c = v.components;
    let same = |s: vk::ComponentSwizzle, own| s == vk::ComponentSwizzle::IDENTITY || s == own;
    let plain = v.view_type == vk::ImageViewType::TYPE_2D
        && !v.own_usage
        && same(c.r, vk::ComponentSwizzle::R)
        && same(c.g, vk::ComponentSwizzle::G)
        && same(c.b, vk::ComponentSwizzle::B)
        && same(c.a, vk::ComponentSwizzle::A);
    Some(Att {
        view,
        image: v.image,
        range,
        format: v.format,
        samples: i.samples,
        usage: i.usage,
        view_type: v.view_type,
        load: false,
        store: false,
        store_stencil: false,
        initial: vk::ImageLayout::UNDEFINED,
        final_: vk::ImageLayout::UNDEFINED,
        storage,
        plain,
    })
}

/// The pass's attachments (`None` for those the layer leaves alone: unused
/// ones and the density map) and the map's view and layout.
pub(super) fn attachments(
    f: &Fdm,
    begin: &Begin,
) -> Result<(Vec<Option<Att>>, vk::ImageView, vk::ImageLayout, (u32, u32), u32, u32), String> {
    match begin {
        Begin::RenderPass { pass, fb, views, .. } => {
            let views = if fb.imageless { views.clone() } else { fb.views.clone() };
            let map_index = pass.density_map.unwrap() as usize;
            let map = *views.get(map_index).ok_or("the framebuffer lacks the density map")?;
            let mut out = Vec::new();
            for (i, d) in pass.attachments.iter().enumerate() {
                if i == map_index || !pass.used[i] {
                    out.push(None);
                    continue;
                }
                let mut a = att_of(f, views[i]).ok_or("an attachment view the layer has not seen")?;
                let depth_stencil = a.range.aspect_mask != vk::ImageAspectFlags::COLOR;
                a.load = d.load_op == vk::AttachmentLoadOp::LOAD
                    || (depth_stencil && d.stencil_load_op == vk::AttachmentLoadOp::LOAD);
                a.store_stencil = a.range.aspect_mask.contains(vk::ImageAspectFlags::STENCIL)
                    && d.stencil_store_op == vk::AttachmentStoreOp::STORE;
                a.store = d.store_op == vk::AttachmentStoreOp::STORE || (depth_stencil && a.store_stencil);
                a.initial = d.initial_layout;
                a.final_ = d.final_layout;
                out.push(Some(a));
            }
            let layout = pass.attachments[map_index].initial_layout;
            let views_mask = pass.view_mask;
            Ok((out, map, layout, fb.extent, fb.layers, views_mask))
        }
        Begin::Rendering { colors, depth, stencil, map, map_layout, area, layers, view_mask, .. } => {
            let mut out = Vec::new();
            let mut seen = Vec::new();
            let mut add =
                |a: &vk::RenderingAttachmentInfo, out: &mut Vec<Option<Att>>, stencil: bool| -> Result<(), String> {
                    if a.image_view == vk::ImageView::null() {
                        return Ok(());
                    }
                    // A view named twice (the depth and stencil attachments of
                    // one image) is one attachment, loaded or stored where either
                    // aspect is; so is a resolve view.
                    let (load, store) =
                        (a.load_op == vk::AttachmentLoadOp::LOAD, a.store_op == vk::AttachmentStoreOp::STORE);
                    if let Some(x) = out.iter_mut().flatten().find(|x| x.view == a.image_view) {
                        x.load |= load;
                        x.store |= store;
                        x.store_stencil |= stencil && store;
                    } else if !seen.contains(&a.image_view) {
                        seen.push(a.image_view);
                        let mut x = att_of(f, a.image_view).ok_or("an attachment view the layer has not seen")?;
                        (x.load, x.store, x.store_stencil) = (load, store, stencil && store);
                        x.initial = a.image_layout;
                        x.final_ = a.image_layout;
                        out.push(Some(x));
                    }
                    if a.resolve_mode != vk::ResolveModeFlags::NONE
                        && a.resolve_image_view != vk::ImageView::null()
                        && !seen.contains(&a.resolve_image_view)
                    {
                        seen.push(a.resolve_image_view);
                        let mut r = att_of(f, a.resolve_image_view).ok_or("a resolve view the layer has not seen")?;
                        r.store = true;
                        r.store_stencil = stencil;
                        r.initial = a.resolve_image_layout;
                        r.final_ = a.resolve_image_layout;
                        out.push(Some(r));
                    }
                    Ok(())
                };
            for c in colors {
                add(c, &mut out, false)?;
            }
            if let Some(d) = depth {
                add(d, &mut out, false)?;
            }
            if let Some(s) = stencil {
                add(s, &mut out, true)?;
            }
            // The framebuffer of dynamic rendering: the render area's extent.
            let extent = (area.offset.x as u32 + area.extent.width, area.offset.y as u32 + area.extent.height);
            Ok((out, *map, *map_layout, extent, *layers, *view_mask))
        }
    }
}

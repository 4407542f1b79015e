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
use super::commands::{Cmd, Transform};
use super::emit::{emit, restore};
use super::fallback::Fallback;
use super::live::{begin_live, end_real, fallback_log, go_live};
use super::map_readback::density_map;
use super::model::cb_state;
use super::model::{attachments, Begin, Pass};
use super::replay::replay;
use super::{Fdm, Mode};
use crate::device::DeviceCore;
use crate::ffi::slice;
use crate::generated::args;
use crate::id;
use crate::settings::LogLevel;
use ash::vk;

/// Starts a density-map pass: capture (binned) or go down at once.
///
/// # Safety
/// `cb` is the application's recording command buffer of `f`'s device,
/// held during its call, outside a render pass; `begin` is a copy of the
/// valid begin it is recording.
unsafe fn start(dev: &DeviceCore, f: &Fdm, cb: vk::CommandBuffer, begin: Begin, early: Option<Fallback>) {
    let shared = cb_state(f, cb);
    let mut s = shared.lock();
    let mut why = early;
    if why.is_none() && s.active_queries > 0 {
        why = Some(Fallback::QueryActive);
    }
    if why.is_none() && f.mode == Mode::Baseline {
        why = Some(Fallback::Baseline);
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
        packed: Vec::new(),
        secondary: s.secondary,
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
                    return Err(Fallback::DynamicWithoutConditionalRendering);
                }
                if s.secondary {
                    return Err(Fallback::DynamicInSecondary);
                }
                if s.app_conditional && !f.controls.without_app_conditional {
                    return Err(Fallback::DynamicInAppConditional);
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
            if why == Fallback::Baseline {
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
unsafe fn early_render_pass(p_next: *const std::ffi::c_void, sub_next: *const std::ffi::c_void) -> Option<Fallback> {
    // SAFETY: the caller's guarantee.
    let copyable =
        unsafe { only_known(p_next, &[vk::StructureType::RENDER_PASS_ATTACHMENT_BEGIN_INFO]) } && sub_next.is_null();
    (!copyable).then_some(Fallback::BeginChain)
}

/// `vkCmdBeginRenderPass`: a density-map pass starts (captured in mode
/// `binned`).
pub fn cmd_begin_render_pass(dev: &DeviceCore, f: &Fdm, a: args::CmdBeginRenderPass) {
    let (cb, info) = (a.command_buffer(), a.render_pass_begin());
    // SAFETY: the application's arguments of a valid call go down unchanged.
    let next = move || unsafe { a.call(f.below.fp_v1_0().cmd_begin_render_pass) };
    // SAFETY: a valid begin info (and chain); `cb` is recording, held during this call.
    unsafe {
        let Some(begin) = render_pass_begin(f, info) else {
            super::subsampled::plain_pass(dev, f, cb, || plain_views(f, info));
            return next();
        };
        let early = early_render_pass(info.p_next, std::ptr::null());
        start(dev, f, cb, begin, early)
    }
}

/// The attachment views of a render pass begin (its framebuffer's, or an
/// imageless one's from the chain).
///
/// # Safety
/// `info` is a valid `VkRenderPassBeginInfo` (and chain).
unsafe fn plain_views(f: &Fdm, info: &vk::RenderPassBeginInfo) -> Vec<vk::ImageView> {
    let fb = f.framebuffers.lock().get(&info.framebuffer).cloned();
    match fb {
        Some(fb) if !fb.imageless => fb.views.clone(),
        // SAFETY: VUID-VkRenderPassBeginInfo-pNext-pNext: a valid chain; its views are `attachmentCount`.
        _ => unsafe { crate::pnext::find::<vk::RenderPassAttachmentBeginInfo>(info.p_next) }
            .map(|a| unsafe { slice(a.p_attachments, a.attachment_count) }.to_vec())
            .unwrap_or_default(),
    }
}

/// `vkCmdBeginRenderPass2`: as [`cmd_begin_render_pass`].
pub fn cmd_begin_render_pass2(dev: &DeviceCore, f: &Fdm, a: args::CmdBeginRenderPass2) {
    let (cb, info, sub) = (a.command_buffer(), a.render_pass_begin(), a.subpass_begin_info());
    // SAFETY: the application's arguments of a valid call go down unchanged.
    let next = move || unsafe { a.call(f.below.fp_v1_2().cmd_begin_render_pass2) };
    // SAFETY: valid infos (and chains); `cb` is recording, held during this call.
    unsafe {
        let Some(begin) = render_pass_begin(f, info) else {
            super::subsampled::plain_pass(dev, f, cb, || plain_views(f, info));
            return next();
        };
        let early = early_render_pass(info.p_next, sub.p_next);
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
        // The subsampled attachments it stored at full resolution: their tables back to the identity.
        super::subsampled::after_pass(dev, f, cb, &pass);
    }
    s.shadow_pools.append(&mut pass.shadow_pools);
    // After a pass the state is the pass's last (what the replays track;
    // state they do not track is as the last replay left it).
    s.snapshot = pass.state;
}

/// `vkCmdNextSubpass`.
pub fn cmd_next_subpass(dev: &DeviceCore, f: &Fdm, a: args::CmdNextSubpass) {
    let cb = a.command_buffer();
    // SAFETY: the application's arguments of a valid call go down unchanged.
    let next = move || unsafe { a.call(f.below.fp_v1_0().cmd_next_subpass) };
    // SAFETY: the application's valid call on its recording `cb`, held now.
    unsafe { pass_command(dev, f, cb, false, Vec::new(), next) }
}

/// `vkCmdNextSubpass2`.
pub fn cmd_next_subpass2(dev: &DeviceCore, f: &Fdm, a: args::CmdNextSubpass2) {
    let (cb, e) = (a.command_buffer(), a.p_subpass_end_info());
    // SAFETY: the application's valid call, without density offsets (the
    // driver lacks them; those of a subpass other than the last are ignored).
    let next = move || unsafe {
        without_offsets(e, |e| a.with_subpass_end_info(&*e).call(f.below.fp_v1_2().cmd_next_subpass2))
    };
    // SAFETY: the application's valid call on its recording `cb`, held now.
    unsafe { pass_command(dev, f, cb, false, Vec::new(), next) }
}

/// `vkCmdEndRenderPass`.
pub fn cmd_end_render_pass(dev: &DeviceCore, f: &Fdm, a: args::CmdEndRenderPass) {
    let cb = a.command_buffer();
    // SAFETY: the application's arguments of a valid call go down unchanged.
    let next = move || unsafe { a.call(f.below.fp_v1_0().cmd_end_render_pass) };
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
pub fn cmd_end_render_pass2(dev: &DeviceCore, f: &Fdm, a: args::CmdEndRenderPass2) {
    let (cb, e) = (a.command_buffer(), a.p_subpass_end_info());
    // SAFETY: the application's valid call, without density offsets.
    let next = move || unsafe {
        without_offsets(e, |e| a.with_subpass_end_info(&*e).call(f.below.fp_v1_2().cmd_end_render_pass2))
    };
    // The offsets of the last subpass, applied by the replays.
    // SAFETY: VUID-vkCmdEndRenderPass2-pSubpassEndInfo-parameter: a valid info and chain.
    let offsets = unsafe { super::end_offsets((*e).p_next) };
    // SAFETY: the application's valid call on its recording `cb`, held now.
    unsafe { pass_command(dev, f, cb, true, offsets, next) }
}

/// `vkCmdBeginRendering` with a density map: a density-map pass starts.
pub fn cmd_begin_rendering(dev: &DeviceCore, f: &Fdm, a: args::CmdBeginRendering) {
    let (cb, ri) = (a.command_buffer(), a.rendering_info());
    // SAFETY: the application's arguments of a valid call go down unchanged.
    let next = move || unsafe { a.call(f.below.fp_v1_3().cmd_begin_rendering) };
    // SAFETY: VUID-VkRenderingInfo-pNext-pNext: a valid chain.
    let map = unsafe { crate::pnext::find::<vk::RenderingFragmentDensityMapAttachmentInfoEXT>(ri.p_next) };
    let Some(map) = map.filter(|m| m.image_view != vk::ImageView::null()) else {
        let views = || {
            // SAFETY: VUID-VkRenderingInfo-pColorAttachments-parameter: `colorAttachmentCount` valid attachments.
            let colors = unsafe { slice(ri.p_color_attachments, ri.color_attachment_count) };
            colors
                .iter()
                .flat_map(|c| [c.image_view, c.resolve_image_view])
                .filter(|v| *v != vk::ImageView::null())
                .collect()
        };
        // SAFETY: `cb` is recording outside a render pass (this begin has not gone down); the views are alive.
        unsafe { super::subsampled::plain_pass(dev, f, cb, views) };
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
        early = Some(Fallback::RenderingChain);
    } else if ri.flags.intersects(vk::RenderingFlags::SUSPENDING | vk::RenderingFlags::RESUMING) {
        early = Some(Fallback::SuspendedOrResumed);
    } else if ri.flags.contains(vk::RenderingFlags::CONTENTS_SECONDARY_COMMAND_BUFFERS) {
        early = Some(Fallback::SecondaryContents);
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
            fallback_log(dev, &begin, &why);
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
            packed: Vec::new(),
            secondary: s.secondary,
        });
        return;
    }
    // SAFETY: `cb` is recording, held during this call; `begin` is a copy
    // of the valid info.
    unsafe { start(dev, f, cb, begin, None) }
}

/// `vkCmdEndRendering`.
pub fn cmd_end_rendering(dev: &DeviceCore, f: &Fdm, a: args::CmdEndRendering) {
    let cb = a.command_buffer();
    // SAFETY: the application's arguments of a valid call go down unchanged.
    let next = move || unsafe { a.call(f.below.fp_v1_3().cmd_end_rendering) };
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
pub fn cmd_execute_commands(dev: &DeviceCore, f: &Fdm, a: args::CmdExecuteCommands) {
    let cb = a.command_buffer();
    // SAFETY: the application's arguments of a valid call go down unchanged.
    let next = move || unsafe { a.call(f.below.fp_v1_0().cmd_execute_commands) };
    let shared = cb_state(f, cb);
    let in_pass = shared.lock().pass.as_ref().is_some_and(|p| matches!(p.begin, Begin::RenderPass { .. }));
    if !in_pass {
        return next();
    }
    for sec in a.command_buffers() {
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

//! A pass going down for real: its begin and end as recorded
//! ([`begin_real`], [`end_real`]), and a captured pass *going live*
//! ([`go_live`]): it begins as recorded, what was captured so far goes
//! down unchanged, and later commands go straight down.

use super::commands::Transform;
use super::emit::{emit, restore};
use super::fallback::Fallback;
use super::model::{Begin, Pass};
use super::Fdm;
use crate::device::DeviceCore;
use crate::id;
use crate::settings::LogLevel;
use ash::vk;

/// Why a pass renders at 1x1, logged once per reason and pass.
pub(super) fn fallback_log(dev: &DeviceCore, begin: &Begin, why: &Fallback) {
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
pub(super) unsafe fn go_live(dev: &DeviceCore, f: &Fdm, cb: vk::CommandBuffer, pass: &mut Pass, why: &Fallback) {
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

//! Capture: the hooks of the commands a density-map pass can hold.
//!
//! Inside a pass being captured (mode `binned`) nothing of these goes down:
//! binds, push constants, dynamic state (Vulkan 1.0, the extended dynamic
//! state of 1.3, and beyond it colour write enable, logic op, patch control
//! points, line stipple, vertex input and extended dynamic state 3, kept as
//! the call to make), shader object binds, draws and clears are
//! kept as [`Cmd`]s, and in a secondary recorded for a density-map render
//! pass they are kept for the primary that executes it. A bind the replays
//! cannot honour (a pipeline not made for the pass or with side effects, a
//! descriptor set that cannot be shadowed) makes the pass go live at 1x1
//! ([`super::live::go_live`]); so does a command the layer cannot replay at all
//! (transform feedback, and the barriers, events and queries of
//! `command_buffers.rs`). Commands outside passes go straight down,
//! except that a pipeline whose viewports the layer made dynamic gets its
//! static ones set at bind.

use super::commands::{Cmd, StateCall, Transform};
use super::emit::emit;
use super::fallback::Fallback;
use super::live::go_live;
use super::model::{cb_state, Begin, CbState};
use super::Fdm;
use crate::device::DeviceCore;
use crate::ffi::slice;
use crate::generated::args;
use crate::id;
use crate::settings::LogLevel;
use ash::vk;
use std::sync::Arc;

/// A command recorded by the application.
///
/// # Safety
/// `cmd` was just recorded by a valid call of the application into `cb`, a
/// recording command buffer of `f`'s device held by the caller (the capture
/// rule of [`super::commands`]).
unsafe fn record(dev: &DeviceCore, f: &Fdm, cb: vk::CommandBuffer, cmd: Cmd) {
    let shared = cb_state(f, cb);
    let mut s = shared.lock();
    // SAFETY: the caller's guarantee; `s` is `cb`'s own state.
    unsafe { record_in(dev, f, cb, &mut s, cmd) };
}

/// [`record`] with `cb`'s state `s` already locked.
///
/// # Safety
/// As [`record`]; `s` is the state of `cb`.
pub(super) unsafe fn record_in(dev: &DeviceCore, f: &Fdm, cb: vk::CommandBuffer, s: &mut CbState, cmd: Cmd) {
    if let Some(c) = &mut s.captured {
        c.push(cmd);
        return;
    }
    let Some(pass) = &mut s.pass else {
        let mut st = std::mem::take(&mut s.snapshot);
        // SAFETY: the capture rule: `cmd` goes down at once into the
        // recording `cb` it was recorded in (the caller's guarantee).
        unsafe { emit(f, cb, &cmd, &Transform::IDENTITY, &mut st) };
        s.snapshot = st;
        return;
    };
    if pass.capturing && matches!(&pass.begin, Begin::RenderPass { pass: info, .. } if info.inputs) {
        if let Cmd::BindSets { sets, .. } = &cmd {
            let known = f.sets.lock();
            let copyable = sets.iter().all(|set| {
                known
                    .get(set)
                    .is_some_and(|i| i.inputs.is_empty() || (!i.opaque && i.layout.as_ref().is_some_and(|l| l.alive())))
            });
            drop(known);
            if !copyable {
                // SAFETY: `cb` is the recording command buffer of `pass`,
                // held by the caller.
                unsafe { go_live(dev, f, cb, pass, &Fallback::UncopyableSet) };
            }
        }
    }
    if pass.capturing {
        if let Cmd::BindPipeline(vk::PipelineBindPoint::GRAPHICS, p) = &cmd {
            let why = match f.pipelines.lock().get(p) {
                None => Some(Fallback::UnknownPipeline),
                Some(i) if i.side_effects => Some(Fallback::SideEffects),
                Some(_) => None,
            };
            if let Some(why) = why {
                // SAFETY: `cb` is the recording command buffer of `pass`,
                // held by the caller.
                unsafe { go_live(dev, f, cb, pass, &why) };
            }
        }
    }
    if pass.capturing {
        pass.cmds.push(cmd);
    } else {
        // SAFETY: the capture rule: the pass is live, `cmd` goes down at once
        // into the recording `cb` it was recorded in.
        unsafe { emit(f, cb, &cmd, &Transform::IDENTITY, &mut pass.state) };
    }
}

/// A command the layer cannot replay, recorded inside a pass: the pass goes
/// live first. Returns whether the command is inside a capturing secondary
/// (where it cannot be honoured at all).
///
/// # Safety
/// `cb` is a recording command buffer of `f`'s device, held by the caller
/// (the application's call being hooked).
pub(super) unsafe fn unreplayable(dev: &DeviceCore, f: &Fdm, cb: vk::CommandBuffer, why: &'static str) -> bool {
    let shared = cb_state(f, cb);
    let mut s = shared.lock();
    if s.captured.is_some() {
        dev.log().log_once(
            LogLevel::Warn,
            id::FDM_DROPPED,
            why,
            &format!("a secondary command buffer of a density-map pass records what the layer cannot replay ({why}); it is dropped"),
        );
        return true;
    }
    if let Some(pass) = &mut s.pass {
        if pass.capturing {
            // SAFETY: `cb` is the recording command buffer of `pass`, held by
            // the caller.
            unsafe { go_live(dev, f, cb, pass, &Fallback::Command(why)) };
        }
    }
    false
}

macro_rules! capture_hooks {
    ($( $hook:ident $args:ident => |$a:ident| $make:expr; )*) => {
        $(
            #[doc = concat!("`vk", stringify!($args), "`: captured inside a density-map pass.")]
            pub fn $hook(dev: &DeviceCore, f: &Fdm, $a: args::$args) {
                let cmd = $make;
                // SAFETY: the application's valid call records `cmd` into its recording command buffer, held
                // during the call (the capture rule).
                unsafe { record(dev, f, $a.command_buffer(), cmd) }
            }
        )*
    };
}

/// An owned copy of the `n` items at `p`, `stride` bytes apart (none for a
/// null `p` or `n == 0`).
///
/// # Safety
/// A non-null `p` points at `n` valid items `stride` bytes apart, each
/// aligned as `T` (`stride` a multiple of `T`'s alignment).
unsafe fn strided<T: Copy>(p: *const T, n: u32, stride: u32) -> Vec<T> {
    if p.is_null() {
        return Vec::new();
    }
    // SAFETY: the caller's guarantee: item `i` lies `i * stride` bytes past `p`.
    (0..n as usize).map(|i| unsafe { *(p as *const u8).add(i * stride as usize).cast::<T>() }).collect()
}

/// An owned copy of the `n` items at `p` (none for a null `p` or `n == 0`).
///
/// # Safety
/// A non-null `p` points at `n` valid items.
unsafe fn v<T: Copy>(p: *const T, n: u32) -> Vec<T> {
    // SAFETY: the caller's guarantee; the items are copied at once.
    unsafe { slice(p, n) }.to_vec()
}

capture_hooks! {
    cmd_bind_pipeline CmdBindPipeline => |a| Cmd::BindPipeline(a.pipeline_bind_point(), a.pipeline());
    cmd_bind_descriptor_sets CmdBindDescriptorSets => |a| Cmd::BindSets {
        point: a.pipeline_bind_point(),
        layout: a.layout(),
        first: a.first_set(),
        sets: a.descriptor_sets().to_vec(),
        offsets: a.dynamic_offsets().to_vec(),
    };
    cmd_bind_vertex_buffers CmdBindVertexBuffers => |a| Cmd::BindVertex {
        first: a.first_binding(),
        buffers: a.buffers().to_vec(),
        offsets: a.offsets().to_vec(),
        sizes: None,
        strides: None,
    };
    cmd_bind_vertex_buffers2 CmdBindVertexBuffers2 => |a| Cmd::BindVertex {
        first: a.first_binding(),
        buffers: a.buffers().to_vec(),
        offsets: a.offsets().to_vec(),
        sizes: a.sizes().map(<[_]>::to_vec),
        strides: a.strides().map(<[_]>::to_vec),
    };
    cmd_bind_index_buffer CmdBindIndexBuffer => |a| Cmd::BindIndex(a.buffer(), a.offset(), a.index_type());
    cmd_push_constants CmdPushConstants => |a| Cmd::Push {
        layout: a.layout(),
        stages: a.stage_flags(),
        offset: a.offset(),
        // SAFETY: VUID-vkCmdPushConstants-pValues-parameter: `size` bytes.
        data: unsafe { v(a.p_values() as *const u8, a.size()) },
    };
    cmd_set_viewport CmdSetViewport => |a| Cmd::Viewport { first: a.first_viewport(), v: a.viewports().to_vec() };
    cmd_set_scissor CmdSetScissor => |a| Cmd::Scissor { first: a.first_scissor(), s: a.scissors().to_vec() };
    cmd_set_line_width CmdSetLineWidth => |a| Cmd::LineWidth(a.line_width());
    cmd_set_depth_bias CmdSetDepthBias => |a| {
        Cmd::DepthBias(a.depth_bias_constant_factor(), a.depth_bias_clamp(), a.depth_bias_slope_factor())
    };
    cmd_set_blend_constants CmdSetBlendConstants => |a| Cmd::Blend(*a.blend_constants_array());
    cmd_set_depth_bounds CmdSetDepthBounds => |a| Cmd::Bounds(a.min_depth_bounds(), a.max_depth_bounds());
    cmd_set_stencil_compare_mask CmdSetStencilCompareMask => |a| Cmd::StencilCompare(a.face_mask(), a.compare_mask());
    cmd_set_stencil_write_mask CmdSetStencilWriteMask => |a| Cmd::StencilWrite(a.face_mask(), a.write_mask());
    cmd_set_stencil_reference CmdSetStencilReference => |a| Cmd::StencilRef(a.face_mask(), a.reference());
    cmd_draw CmdDraw => |a| Cmd::Draw(a.vertex_count(), a.instance_count(), a.first_vertex(), a.first_instance());
    cmd_draw_indexed CmdDrawIndexed => |a| {
        Cmd::DrawIndexed(a.index_count(), a.instance_count(), a.first_index(), a.vertex_offset(), a.first_instance())
    };
    cmd_draw_indirect CmdDrawIndirect => |a| Cmd::DrawIndirect(a.buffer(), a.offset(), a.draw_count(), a.stride());
    cmd_draw_indexed_indirect CmdDrawIndexedIndirect => |a| {
        Cmd::DrawIndexedIndirect(a.buffer(), a.offset(), a.draw_count(), a.stride())
    };
    cmd_draw_indirect_count CmdDrawIndirectCount => |a| {
        let (b, o, c, co) = (a.buffer(), a.offset(), a.count_buffer(), a.count_buffer_offset());
        Cmd::DrawIndirectCount(b, o, c, co, a.max_draw_count(), a.stride())
    };
    cmd_draw_indexed_indirect_count CmdDrawIndexedIndirectCount => |a| {
        let (b, o, c, co) = (a.buffer(), a.offset(), a.count_buffer(), a.count_buffer_offset());
        Cmd::DrawIndexedIndirectCount(b, o, c, co, a.max_draw_count(), a.stride())
    };
    cmd_draw_multi CmdDrawMultiEXT => |a| Cmd::DrawMulti {
        // SAFETY: VUID-vkCmdDrawMultiEXT-drawCount-04935 and -stride-04936: `drawCount` structures `stride` bytes
        // apart (a multiple of 4, at least their size) where the count is not 0.
        draws: unsafe { strided(a.p_vertex_info(), a.draw_count(), a.stride()) },
        instances: a.instance_count(),
        first_instance: a.first_instance(),
    };
    cmd_draw_multi_indexed CmdDrawMultiIndexedEXT => |a| Cmd::DrawMultiIndexed {
        // SAFETY: as for `vkCmdDrawMultiEXT` (VUID-vkCmdDrawMultiIndexedEXT-drawCount-04940, -stride-04941).
        draws: unsafe { strided(a.p_index_info(), a.draw_count(), a.stride()) },
        instances: a.instance_count(),
        first_instance: a.first_instance(),
        vertex_offset: a.vertex_offset().copied(),
    };
    cmd_set_viewport_with_count CmdSetViewportWithCount => |a| Cmd::ViewportCount(a.viewports().to_vec());
    cmd_set_scissor_with_count CmdSetScissorWithCount => |a| Cmd::ScissorCount(a.scissors().to_vec());
    cmd_clear_attachments CmdClearAttachments => |a| {
        Cmd::Clear { attachments: a.attachments().to_vec(), rects: a.rects().to_vec() }
    };
}

/// Declares captured dynamic-state commands of Vulkan 1.3 (extended dynamic
/// state 1 and 2): each is kept as the call to make, keyed by its command
/// (and stencil face) for the state snapshot.
macro_rules! state_hooks {
    ($( $n:ident $name:literal $pfn:ident fn $hook:ident(cb $(, $a:ident: $t:ty)*) face $face:expr => $field:ident; )*) => {
        $(
            #[doc = concat!("`", $name, "`: captured inside a density-map pass.")]
            ///
            /// # Safety
            #[doc = concat!("The arguments are those of a valid `", $name, "` call.")]
            pub unsafe fn $hook(dev: &DeviceCore, f: &Fdm, cb: vk::CommandBuffer $(, $a: $t)*) {
                // SAFETY: a `StateCall` is called only by `emit`, with this device's table and the recording command
                // buffer the call was captured in (the capture rule); its arguments are the plain values of the
                // application's valid call.
                let call = StateCall(Arc::new(move |d: &ash::Device, cb| unsafe { (d.fp_v1_3().$field)(cb $(, $a)*) }));
                // SAFETY: the application's valid call records it into its
                // recording `cb`, held during the call (the capture rule).
                unsafe { record(dev, f, cb, Cmd::State { key: ($n, $face), call }) }
            }
        )*
    };
}

/// A dynamic-state call of an extension: captured like the 1.3 ones, or,
/// with `debug_fdm_without=dynamic_state`, sent down at once (part 1's
/// behaviour: the value reaches the driver before the replays, so every
/// replay sees the pass's last one).
///
/// # Safety
/// `call` makes the application's valid call (with its arguments copied) on
/// the next layer's command, `cb` being its recording command buffer held by
/// the caller.
unsafe fn record_state(dev: &DeviceCore, f: &Fdm, cb: vk::CommandBuffer, key: (u32, u32), call: StateCall) {
    if f.controls.without_dynamic_state {
        (call.0)(&f.below, cb);
        return;
    }
    // SAFETY: the caller's guarantee (the capture rule).
    unsafe { record(dev, f, cb, Cmd::State { key, call }) }
}

/// Declares captured dynamic-state commands of extensions beyond Vulkan 1.3
/// with plain arguments: each is kept as the call to make on the next
/// layer's command (`dev.state`), keyed by its command for the snapshot.
macro_rules! ext_state_hooks {
    ($( $n:ident $name:literal fn $hook:ident(cb $(, $a:ident: $t:ty)*) => $table:ident . $field:ident; )*) => {
        $(
            #[doc = concat!("`", $name, "`: captured inside a density-map pass.")]
            ///
            /// # Safety
            #[doc = concat!("The arguments are those of a valid `", $name, "` call.")]
            pub unsafe fn $hook(dev: &DeviceCore, f: &Fdm, cb: vk::CommandBuffer $(, $a: $t)*) {
                let fp = dev.state.$table.$field;
                // SAFETY: a `StateCall` is called only with the recording command buffer the call was captured in
                // (the capture rule); `fp` is the next layer's command the application called (its row is handed
                // out only where the next layer has it), with the plain values of that valid call.
                let call = StateCall(Arc::new(move |_: &ash::Device, cb| unsafe { fp(cb $(, $a)*) }));
                // SAFETY: the application's valid call, on its recording `cb` held during the call.
                unsafe { record_state(dev, f, cb, ($n, 0), call) }
            }
        )*
    };
}

/// `vkCmdSetColorWriteEnableEXT`: captured inside a density-map pass.
///
/// # Safety
/// The arguments are those of a valid `vkCmdSetColorWriteEnableEXT` call.
pub unsafe fn cmd_set_color_write_enable(
    dev: &DeviceCore,
    f: &Fdm,
    cb: vk::CommandBuffer,
    n: u32,
    e: *const vk::Bool32,
) {
    let fp = dev.state.color_write.cmd_set_color_write_enable_ext;
    // SAFETY: VUID-vkCmdSetColorWriteEnableEXT-pColorWriteEnables-parameter: `n` values, copied at once.
    let items = unsafe { v(e, n) };
    // SAFETY: as for `ext_state_hooks!`; the array is the closure's own copy, of the count given.
    let call = StateCall(Arc::new(move |_: &ash::Device, cb| unsafe { fp(cb, n, items.as_ptr()) }));
    // SAFETY: the application's valid call, on its recording `cb` held during the call.
    unsafe { record_state(dev, f, cb, (KEY_CMD_SET_COLOR_WRITE_ENABLE, 0), call) }
}

/// `vkCmdSetVertexInputEXT`: captured inside a density-map pass (shader
/// objects need it). The descriptions are kept as plain values (their
/// `pNext` is null: VUID-VkVertexInputBindingDescription2EXT-pNext-pNext and
/// VUID-VkVertexInputAttributeDescription2EXT-pNext-pNext).
///
/// # Safety
/// The arguments are those of a valid `vkCmdSetVertexInputEXT` call.
pub unsafe fn cmd_set_vertex_input(
    dev: &DeviceCore,
    f: &Fdm,
    cb: vk::CommandBuffer,
    nb: u32,
    b: *const vk::VertexInputBindingDescription2EXT<'_>,
    na: u32,
    a: *const vk::VertexInputAttributeDescription2EXT<'_>,
) {
    let fp = dev.state.vertex_input.cmd_set_vertex_input_ext;
    // SAFETY: VUID-vkCmdSetVertexInputEXT-pVertexBindingDescriptions-parameter and
    // -pVertexAttributeDescriptions-parameter: the counts given, copied at once.
    let (bindings, attributes) = unsafe { (slice(b, nb), slice(a, na)) };
    let bindings: Vec<(u32, u32, vk::VertexInputRate, u32)> =
        bindings.iter().map(|x| (x.binding, x.stride, x.input_rate, x.divisor)).collect();
    let attributes: Vec<(u32, u32, vk::Format, u32)> =
        attributes.iter().map(|x| (x.location, x.binding, x.format, x.offset)).collect();
    let call = StateCall(Arc::new(move |_: &ash::Device, cb| {
        let b: Vec<vk::VertexInputBindingDescription2EXT> = bindings
            .iter()
            .map(|&(binding, stride, input_rate, divisor)| vk::VertexInputBindingDescription2EXT {
                binding,
                stride,
                input_rate,
                divisor,
                ..Default::default()
            })
            .collect();
        let a: Vec<vk::VertexInputAttributeDescription2EXT> = attributes
            .iter()
            .map(|&(location, binding, format, offset)| vk::VertexInputAttributeDescription2EXT {
                location,
                binding,
                format,
                offset,
                ..Default::default()
            })
            .collect();
        // SAFETY: as for `ext_state_hooks!`; the arrays are rebuilt from the closure's own copies, of the counts given.
        unsafe { fp(cb, b.len() as u32, b.as_ptr(), a.len() as u32, a.as_ptr()) }
    }));
    // SAFETY: the application's valid call, on its recording `cb` held during the call.
    unsafe { record_state(dev, f, cb, (KEY_CMD_SET_VERTEX_INPUT, 0), call) }
}

/// `vkCmdSetSampleMaskEXT`: captured inside a density-map pass.
///
/// # Safety
/// The arguments are those of a valid `vkCmdSetSampleMaskEXT` call.
pub unsafe fn cmd_set_sample_mask(
    dev: &DeviceCore,
    f: &Fdm,
    cb: vk::CommandBuffer,
    samples: vk::SampleCountFlags,
    mask: *const vk::SampleMask,
) {
    let fp = dev.state.eds3.cmd_set_sample_mask_ext;
    // SAFETY: VUID-vkCmdSetSampleMaskEXT-pSampleMask-parameter: ceil(samples / 32) words, copied at once.
    let items = unsafe { v(mask, samples.as_raw().div_ceil(32)) };
    // SAFETY: as for `ext_state_hooks!`; the array is the closure's own copy, of the length `samples` implies.
    let call = StateCall(Arc::new(move |_: &ash::Device, cb| unsafe { fp(cb, samples, items.as_ptr()) }));
    // SAFETY: the application's valid call, on its recording `cb` held during the call.
    unsafe { record_state(dev, f, cb, (KEY_CMD_SET_SAMPLE_MASK, 0), call) }
}

/// Declares captured dynamic-state commands of extended dynamic state 3
/// that set a range of colour attachments (`first`, count, items): the items
/// are copied; the key is the command and `first`.
macro_rules! attachment_state_hooks {
    ($( $n:ident $name:literal fn $hook:ident($it:ty) => $field:ident; )*) => {
        $(
            #[doc = concat!("`", $name, "`: captured inside a density-map pass.")]
            ///
            /// # Safety
            #[doc = concat!("The arguments are those of a valid `", $name, "` call.")]
            pub unsafe fn $hook(dev: &DeviceCore, f: &Fdm, cb: vk::CommandBuffer, first: u32, n: u32, items: *const $it) {
                let fp = dev.state.eds3.$field;
                // SAFETY: the command's array `-parameter` VUID: `n` valid items, copied at once.
                let items: Vec<$it> = unsafe { v(items, n) };
                // SAFETY: as for `ext_state_hooks!`; the array is the closure's own copy, of the count given.
                let call = StateCall(Arc::new(move |_: &ash::Device, cb| unsafe { fp(cb, first, n, items.as_ptr()) }));
                // SAFETY: the application's valid call, on its recording `cb` held during the call.
                unsafe { record_state(dev, f, cb, ($n, first), call) }
            }
        )*
    };
}

// The hooks of the captured dynamic-state commands with plain arguments,
// and every such command's key, generated (`layer/gen/dynamic_state.py`,
// from `layer/gen/dynamic_state.json`, which also makes their dispatch rows).
include!("../generated/dynamic_state_capture.rs");

/// `vkCmdBindShadersEXT`: captured inside a density-map pass (a bind of
/// more than eight stages makes the pass go live).
pub fn cmd_bind_shaders(dev: &DeviceCore, f: &Fdm, a: args::CmdBindShadersEXT) {
    let (cb, n, stages, shaders) = (a.command_buffer(), a.stage_count(), a.p_stages(), a.p_shaders());
    // SAFETY: VUID-vkCmdBindShadersEXT-pStages-parameter and -pShaders-parameter.
    match unsafe { super::commands::ShaderBinds::new(n, stages, shaders) } {
        // SAFETY: the application's valid call, on its recording `cb` held during the call.
        Some(b) => unsafe { record(dev, f, cb, Cmd::BindShaders(b)) },
        None => {
            // SAFETY: as above.
            if !unsafe { unreplayable(dev, f, cb, "vkCmdBindShadersEXT of more than eight stages") } {
                if let Some(so) = &f.below_shader_object {
                    // SAFETY: the next layer's command, with the application's arguments.
                    unsafe { a.call(so.cmd_bind_shaders_ext) }
                }
            }
        }
    }
}

/// `vkCmdBeginTransformFeedbackEXT`: a pass holding it goes live at 1x1.
pub fn cmd_begin_transform_feedback(dev: &DeviceCore, f: &Fdm, a: args::CmdBeginTransformFeedbackEXT) {
    // SAFETY: `cb` is the application's recording command buffer, held during its call.
    if unsafe { unreplayable(dev, f, a.command_buffer(), "transform feedback in the pass") } {
        return;
    }
    if let Some(fp) = dev.next_begin_transform_feedback {
        // SAFETY: the next layer's command, with the application's arguments.
        unsafe { a.call(fp) }
    }
}

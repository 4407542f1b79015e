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
    ($( $name:literal $pfn:ident fn $hook:ident(cb $(, $a:ident: $t:ty)*) => $make:expr; )*) => {
        $(
            #[doc = concat!("`", $name, "`: captured inside a density-map pass.")]
            ///
            /// # Safety
            #[doc = concat!("The arguments are those of a valid `", $name, "` call.")]
            pub unsafe fn $hook(dev: &DeviceCore, f: &Fdm, cb: vk::CommandBuffer $(, $a: $t)*) {
                let cmd = $make;
                // SAFETY: the application's valid call records `cmd` into its
                // recording `cb`, held during the call (the capture rule).
                unsafe { record(dev, f, cb, cmd) }
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
    "vkCmdBindPipeline" PFN_vkCmdBindPipeline fn cmd_bind_pipeline(cb, point: vk::PipelineBindPoint, p: vk::Pipeline)
        => Cmd::BindPipeline(point, p);
    "vkCmdBindDescriptorSets" PFN_vkCmdBindDescriptorSets fn cmd_bind_descriptor_sets(cb, point: vk::PipelineBindPoint,
        layout: vk::PipelineLayout, first: u32, n: u32, sets: *const vk::DescriptorSet, no: u32, offsets: *const u32)
        => {
            // SAFETY: VUID-vkCmdBindDescriptorSets-pDescriptorSets-parameter and
            // VUID-vkCmdBindDescriptorSets-pDynamicOffsets-parameter.
            unsafe { Cmd::BindSets { point, layout, first, sets: v(sets, n), offsets: v(offsets, no) } }
        };
    "vkCmdBindVertexBuffers" PFN_vkCmdBindVertexBuffers fn cmd_bind_vertex_buffers(cb, first: u32, n: u32,
        buffers: *const vk::Buffer, offsets: *const vk::DeviceSize)
        => {
            // SAFETY: VUID-vkCmdBindVertexBuffers-pBuffers-parameter and
            // VUID-vkCmdBindVertexBuffers-pOffsets-parameter.
            unsafe { Cmd::BindVertex { first, buffers: v(buffers, n), offsets: v(offsets, n), sizes: None, strides: None } }
        };
    "vkCmdBindVertexBuffers2" PFN_vkCmdBindVertexBuffers2 fn cmd_bind_vertex_buffers2(cb, first: u32, n: u32,
        buffers: *const vk::Buffer, offsets: *const vk::DeviceSize, sizes: *const vk::DeviceSize, strides: *const vk::DeviceSize)
        => {
            // SAFETY: VUID-vkCmdBindVertexBuffers2-pBuffers-parameter,
            // VUID-vkCmdBindVertexBuffers2-pOffsets-parameter, and for non-null pointers
            // VUID-vkCmdBindVertexBuffers2-pSizes-parameter and VUID-vkCmdBindVertexBuffers2-pStrides-parameter.
            unsafe { Cmd::BindVertex { first, buffers: v(buffers, n), offsets: v(offsets, n),
                sizes: (!sizes.is_null()).then(|| v(sizes, n)), strides: (!strides.is_null()).then(|| v(strides, n)) } }
        };
    "vkCmdBindIndexBuffer" PFN_vkCmdBindIndexBuffer fn cmd_bind_index_buffer(cb, b: vk::Buffer, o: vk::DeviceSize, ty: vk::IndexType)
        => Cmd::BindIndex(b, o, ty);
    "vkCmdPushConstants" PFN_vkCmdPushConstants fn cmd_push_constants(cb, layout: vk::PipelineLayout,
        stages: vk::ShaderStageFlags, offset: u32, size: u32, data: *const std::ffi::c_void)
        => {
            // SAFETY: VUID-vkCmdPushConstants-pValues-parameter: `size` bytes.
            unsafe { Cmd::Push { layout, stages, offset, data: v(data as *const u8, size) } }
        };
    "vkCmdSetViewport" PFN_vkCmdSetViewport fn cmd_set_viewport(cb, first: u32, n: u32, vp: *const vk::Viewport)
        => {
            // SAFETY: VUID-vkCmdSetViewport-pViewports-parameter.
            unsafe { Cmd::Viewport { first, v: v(vp, n) } }
        };
    "vkCmdSetScissor" PFN_vkCmdSetScissor fn cmd_set_scissor(cb, first: u32, n: u32, s: *const vk::Rect2D)
        => {
            // SAFETY: VUID-vkCmdSetScissor-pScissors-parameter.
            unsafe { Cmd::Scissor { first, s: v(s, n) } }
        };
    "vkCmdSetLineWidth" PFN_vkCmdSetLineWidth fn cmd_set_line_width(cb, w: f32) => Cmd::LineWidth(w);
    "vkCmdSetDepthBias" PFN_vkCmdSetDepthBias fn cmd_set_depth_bias(cb, a: f32, b: f32, c: f32) => Cmd::DepthBias(a, b, c);
    "vkCmdSetBlendConstants" PFN_vkCmdSetBlendConstants fn cmd_set_blend_constants(cb, c: *const [f32; 4])
        => {
            // SAFETY: `blendConstants` is the application's `const float[4]`
            // (the command's signature; it has no other valid form).
            unsafe { Cmd::Blend(*c) }
        };
    "vkCmdSetDepthBounds" PFN_vkCmdSetDepthBounds fn cmd_set_depth_bounds(cb, a: f32, b: f32) => Cmd::Bounds(a, b);
    "vkCmdSetStencilCompareMask" PFN_vkCmdSetStencilCompareMask fn cmd_set_stencil_compare_mask(cb, face: vk::StencilFaceFlags, m: u32)
        => Cmd::StencilCompare(face, m);
    "vkCmdSetStencilWriteMask" PFN_vkCmdSetStencilWriteMask fn cmd_set_stencil_write_mask(cb, face: vk::StencilFaceFlags, m: u32)
        => Cmd::StencilWrite(face, m);
    "vkCmdSetStencilReference" PFN_vkCmdSetStencilReference fn cmd_set_stencil_reference(cb, face: vk::StencilFaceFlags, m: u32)
        => Cmd::StencilRef(face, m);
    "vkCmdDraw" PFN_vkCmdDraw fn cmd_draw(cb, a: u32, b: u32, c: u32, d: u32) => Cmd::Draw(a, b, c, d);
    "vkCmdDrawIndexed" PFN_vkCmdDrawIndexed fn cmd_draw_indexed(cb, a: u32, b: u32, c: u32, o: i32, d: u32)
        => Cmd::DrawIndexed(a, b, c, o, d);
    "vkCmdDrawIndirect" PFN_vkCmdDrawIndirect fn cmd_draw_indirect(cb, b: vk::Buffer, o: vk::DeviceSize, n: u32, s: u32)
        => Cmd::DrawIndirect(b, o, n, s);
    "vkCmdDrawIndexedIndirect" PFN_vkCmdDrawIndexedIndirect fn cmd_draw_indexed_indirect(cb, b: vk::Buffer, o: vk::DeviceSize, n: u32, s: u32)
        => Cmd::DrawIndexedIndirect(b, o, n, s);
    "vkCmdDrawIndirectCount" PFN_vkCmdDrawIndirectCount fn cmd_draw_indirect_count(cb, b: vk::Buffer, o: vk::DeviceSize,
        c: vk::Buffer, co: vk::DeviceSize, m: u32, s: u32) => Cmd::DrawIndirectCount(b, o, c, co, m, s);
    "vkCmdDrawIndexedIndirectCount" PFN_vkCmdDrawIndexedIndirectCount fn cmd_draw_indexed_indirect_count(cb, b: vk::Buffer,
        o: vk::DeviceSize, c: vk::Buffer, co: vk::DeviceSize, m: u32, s: u32) => Cmd::DrawIndexedIndirectCount(b, o, c, co, m, s);
    "vkCmdDrawMultiEXT" PFN_vkCmdDrawMultiEXT fn cmd_draw_multi(cb, n: u32, draws: *const vk::MultiDrawInfoEXT,
        instances: u32, first: u32, stride: u32)
        => {
            // SAFETY: VUID-vkCmdDrawMultiEXT-pVertexInfo-parameter: `drawCount`
            // structures `stride` bytes apart (a multiple of 4, at least their size).
            unsafe { Cmd::DrawMulti { draws: strided(draws, n, stride), instances, first_instance: first } }
        };
    "vkCmdDrawMultiIndexedEXT" PFN_vkCmdDrawMultiIndexedEXT fn cmd_draw_multi_indexed(cb, n: u32,
        draws: *const vk::MultiDrawIndexedInfoEXT, instances: u32, first: u32, stride: u32, offset: *const i32)
        => {
            // SAFETY: VUID-vkCmdDrawMultiIndexedEXT-pIndexInfo-parameter (as above), and a
            // non-null `pVertexOffset` points at one value (VUID-vkCmdDrawMultiIndexedEXT-pVertexOffset-parameter).
            unsafe {
                Cmd::DrawMultiIndexed {
                    draws: strided(draws, n, stride),
                    instances,
                    first_instance: first,
                    vertex_offset: offset.as_ref().copied(),
                }
            }
        };
    "vkCmdSetViewportWithCount" PFN_vkCmdSetViewportWithCount fn cmd_set_viewport_with_count(cb, n: u32, vp: *const vk::Viewport)
        => {
            // SAFETY: VUID-vkCmdSetViewportWithCount-pViewports-parameter.
            unsafe { Cmd::ViewportCount(v(vp, n)) }
        };
    "vkCmdSetScissorWithCount" PFN_vkCmdSetScissorWithCount fn cmd_set_scissor_with_count(cb, n: u32, sc: *const vk::Rect2D)
        => {
            // SAFETY: VUID-vkCmdSetScissorWithCount-pScissors-parameter.
            unsafe { Cmd::ScissorCount(v(sc, n)) }
        };
    "vkCmdClearAttachments" PFN_vkCmdClearAttachments fn cmd_clear_attachments(cb, n: u32, a: *const vk::ClearAttachment,
        nr: u32, r: *const vk::ClearRect) => {
            // SAFETY: VUID-vkCmdClearAttachments-pAttachments-parameter and
            // VUID-vkCmdClearAttachments-pRects-parameter.
            unsafe { Cmd::Clear { attachments: v(a, n), rects: v(r, nr) } }
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
///
/// # Safety
/// The arguments are those of a valid `vkCmdBeginTransformFeedbackEXT` call.
pub unsafe fn cmd_begin_transform_feedback(
    dev: &DeviceCore,
    f: &Fdm,
    cb: vk::CommandBuffer,
    first: u32,
    n: u32,
    buffers: *const vk::Buffer,
    offsets: *const vk::DeviceSize,
) {
    let next = move || {
        if let Some(fp) = dev.next_begin_transform_feedback {
            // SAFETY: the application's arguments of a valid call go down
            // unchanged to the next layer's entry point for this device.
            unsafe { fp(cb, first, n, buffers, offsets) }
        }
    };
    // SAFETY: `cb` is the application's recording command buffer, held
    // during its call.
    if !unsafe { unreplayable(dev, f, cb, "transform feedback in the pass") } {
        next()
    }
}

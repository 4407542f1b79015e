//! Queue tracking: what a submission may have changed in density-map
//! images. Transfers into a density map and layout transitions of one are
//! noted per command buffer; at submission the layouts become the images'
//! known layouts and the images' generations advance, so the next pass that
//! uses such a map reads it again ([`super::map_readback`]). Submissions
//! (the application's and the layer's own map reads), waits, sparse binds
//! and presents hold the queue lock.

use super::model::cb_state;
use super::Fdm;
use crate::device::DeviceCore;
use crate::ffi::slice;
use crate::generated::args;
use ash::vk;

fn note_submitted(f: &Fdm, cbs: impl Iterator<Item = vk::CommandBuffer>) {
    for cb in cbs {
        let (layouts, writes) = {
            let shared = cb_state(f, cb);
            let s = shared.lock();
            (s.layouts.clone(), s.map_writes.clone())
        };
        if !layouts.is_empty() {
            let mut m = f.map_layouts.lock();
            for (i, l) in layouts {
                m.insert(i, l);
            }
        }
        if !writes.is_empty() {
            let mut g = f.map_generation.lock();
            for i in writes {
                *g.entry(i).or_default() += 1;
            }
        }
    }
}

/// Transfer commands that write an image: a density map written by one is
/// read again at the next pass that uses it. A row: the hook, its argument
/// type, the image it writes, the next layer's command.
macro_rules! transfer_write_hooks {
    ($( $hook:ident $args:ident => |$a:ident| $dst:expr, $ver:ident.$field:ident; )*) => {
        $(
            #[doc = concat!("`vk", stringify!($args), "`: notes a write into a density map.")]
            pub fn $hook(_: &DeviceCore, f: &Fdm, $a: args::$args) {
                let dst: vk::Image = $dst;
                if f.images.lock().get(&dst).is_some_and(|i| i.density_map) {
                    cb_state(f, $a.command_buffer()).lock().map_writes.push(dst);
                }
                // SAFETY: the next layer's command, with the application's arguments.
                unsafe { $a.call(f.below.$ver().$field) }
            }
        )*
    };
}

transfer_write_hooks! {
    cmd_copy_buffer_to_image CmdCopyBufferToImage => |a| a.dst_image(), fp_v1_0.cmd_copy_buffer_to_image;
    cmd_copy_image CmdCopyImage => |a| a.dst_image(), fp_v1_0.cmd_copy_image;
    cmd_blit_image CmdBlitImage => |a| a.dst_image(), fp_v1_0.cmd_blit_image;
    cmd_resolve_image CmdResolveImage => |a| a.dst_image(), fp_v1_0.cmd_resolve_image;
    cmd_clear_color_image CmdClearColorImage => |a| a.image(), fp_v1_0.cmd_clear_color_image;
    cmd_copy_buffer_to_image2 CmdCopyBufferToImage2 => |a| a.copy_buffer_to_image_info().dst_image, fp_v1_3.cmd_copy_buffer_to_image2;
    cmd_copy_image2 CmdCopyImage2 => |a| a.copy_image_info().dst_image, fp_v1_3.cmd_copy_image2;
    cmd_blit_image2 CmdBlitImage2 => |a| a.blit_image_info().dst_image, fp_v1_3.cmd_blit_image2;
    cmd_resolve_image2 CmdResolveImage2 => |a| a.resolve_image_info().dst_image, fp_v1_3.cmd_resolve_image2;
}

impl Fdm {
    /// `op` (a command on a queue) under the queue lock — the queue's
    /// external synchronization, shared with the layer's own map reads —
    /// unless the layer's own work met `VK_ERROR_DEVICE_LOST`: then that,
    /// without calling down.
    fn unless_lost(&self, op: impl FnOnce() -> vk::Result) -> vk::Result {
        let _g = self.queue_lock.lock();
        if self.is_lost() {
            return vk::Result::ERROR_DEVICE_LOST;
        }
        op()
    }

    /// `op` (a wait) under the queue lock, and `VK_ERROR_DEVICE_LOST` after
    /// it where the layer's own work met it: it still waits, so that
    /// whatever was submitted before the loss finishes before the
    /// application destroys it.
    fn wait_then_lost(&self, op: impl FnOnce() -> vk::Result) -> vk::Result {
        let _g = self.queue_lock.lock();
        let r = op();
        if self.is_lost() {
            return vk::Result::ERROR_DEVICE_LOST;
        }
        r
    }
}

/// `vkQueueSubmit`: the submitted command buffers' density-map layouts and
/// writes become known, under the queue lock.
pub fn queue_submit(_: &DeviceCore, f: &Fdm, a: args::QueueSubmit) -> vk::Result {
    f.unless_lost(|| {
        // SAFETY: VUID-VkSubmitInfo-pCommandBuffers-parameter: each info holds `commandBufferCount` command buffers.
        let cbs = a.submits().iter().flat_map(|x| unsafe { slice(x.p_command_buffers, x.command_buffer_count) });
        note_submitted(f, cbs.copied());
        // SAFETY: the next layer's command, with the application's arguments, under the queue lock (the queue's
        // external synchronization, shared with the layer's own map reads).
        unsafe { a.call(f.below.fp_v1_0().queue_submit) }
    })
}

/// `vkQueueSubmit2`: as [`queue_submit`].
pub fn queue_submit2(_: &DeviceCore, f: &Fdm, a: args::QueueSubmit2) -> vk::Result {
    f.unless_lost(|| {
        // SAFETY: VUID-VkSubmitInfo2-pCommandBufferInfos-parameter: `commandBufferInfoCount` infos each.
        let cbs =
            a.submits().iter().flat_map(|x| unsafe { slice(x.p_command_buffer_infos, x.command_buffer_info_count) });
        note_submitted(f, cbs.map(|c| c.command_buffer));
        // SAFETY: as in `queue_submit`.
        unsafe { a.call(f.below.fp_v1_3().queue_submit2) }
    })
}

/// `vkQueueWaitIdle`, under the queue lock.
pub fn queue_wait_idle(_: &DeviceCore, f: &Fdm, a: args::QueueWaitIdle) -> vk::Result {
    // SAFETY: VUID-vkQueueWaitIdle-queue-parameter: the application's queue
    // goes down unchanged, under the queue lock (its external synchronization).
    f.wait_then_lost(move || unsafe { a.call(f.below.fp_v1_0().queue_wait_idle) })
}

/// `vkQueueBindSparse`, under the queue lock.
pub fn queue_bind_sparse(_: &DeviceCore, f: &Fdm, a: args::QueueBindSparse) -> vk::Result {
    // SAFETY: the application's arguments of a valid vkQueueBindSparse go
    // down unchanged, under the queue lock (the queue's external
    // synchronization, shared with the layer's own map reads).
    f.unless_lost(move || unsafe { a.call(f.below.fp_v1_0().queue_bind_sparse) })
}

/// `vkQueuePresentKHR`, under the queue lock (its entry point is handed out
/// only where the chain below has the command).
pub fn queue_present(dev: &DeviceCore, f: &Fdm, a: args::QueuePresentKHR) -> vk::Result {
    let Some(present) = dev.next_queue_present else { return vk::Result::ERROR_EXTENSION_NOT_PRESENT };
    // SAFETY: the next layer's command, with the application's arguments, under the queue lock (the queue's external
    // synchronization).
    f.unless_lost(|| unsafe { a.call(present) })
}

/// `vkDeviceWaitIdle`, under the queue lock: it needs every queue of the
/// device externally synchronized, the map reads' queue included.
pub fn device_wait_idle(_: &DeviceCore, f: &Fdm, a: args::DeviceWaitIdle) -> vk::Result {
    // SAFETY: VUID-vkDeviceWaitIdle-device-parameter: the application's
    // device goes down unchanged, under the queue lock.
    f.wait_then_lost(move || unsafe { a.call(f.below.fp_v1_0().device_wait_idle) })
}

/// `vkWaitForFences`: `VK_ERROR_DEVICE_LOST` once the layer's own work met
/// it (the application's submissions since then were not made, so their
/// fences would never signal); otherwise down unchanged.
pub fn wait_for_fences(_: &DeviceCore, f: &Fdm, a: args::WaitForFences) -> vk::Result {
    if f.is_lost() {
        return vk::Result::ERROR_DEVICE_LOST;
    }
    // SAFETY: the application's arguments of a valid vkWaitForFences go down unchanged.
    unsafe { a.call(f.below.fp_v1_0().wait_for_fences) }
}

/// `vkGetFenceStatus`: as [`wait_for_fences`].
pub fn get_fence_status(_: &DeviceCore, f: &Fdm, a: args::GetFenceStatus) -> vk::Result {
    if f.is_lost() {
        return vk::Result::ERROR_DEVICE_LOST;
    }
    // SAFETY: the application's arguments of a valid vkGetFenceStatus go down unchanged.
    unsafe { a.call(f.below.fp_v1_0().get_fence_status) }
}

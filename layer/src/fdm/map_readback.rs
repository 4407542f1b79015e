//! Density-map readback: the map of a pass, read on the host when the pass
//! begins (R8G8_UNORM, through the view's swizzle), with the reader's own
//! command pool, fence and host-visible buffer ([`MapReader`]). A map whose
//! every write the layer can see is read again only after a submission
//! that may have written it (`queue.rs`).

use super::fallback::Fallback;
use super::{memory_type, Fdm};
use crate::device::DeviceCore;
use ash::vk;
use std::sync::Arc;

/// How long a map read waits for its copy: the queue may still run the
/// application's earlier work, but a wait that never ends would hang the
/// application inside `vkCmdBeginRenderPass*` on a GPU that stops without
/// reporting a device loss. An expired wait is a failed read (the pass
/// renders at 1x1, logged; the read stays pending and the next one waits
/// for it first). Generous: under valgrind a read behind the application's
/// work takes seconds on lavapipe.
const WAIT_NS: u64 = 60_000_000_000;

/// The host side of reading density maps.
pub struct MapReader {
    queue: vk::Queue,
    pool: vk::CommandPool,
    cb: vk::CommandBuffer,
    fence: vk::Fence,
    buffer: vk::Buffer,
    memory: vk::DeviceMemory,
    size: u64,
    ptr: *mut u8,
    /// A read was submitted and its fence wait failed: the command buffer
    /// may still be pending and the fence signaled, so the next read waits
    /// for it (and resets it) before it begins the command buffer again.
    pending: bool,
}

// SAFETY: used only under the device's reader lock.
unsafe impl Send for MapReader {}

impl MapReader {
    /// The reader's objects; on a failure, those already made are destroyed
    /// (null handles are ignored by the destroy commands).
    ///
    /// # Safety
    /// `device` is the device of `f` (its dispatchable handle), created with
    /// queue 0 of `q` (`f.queue`).
    unsafe fn new(
        dev: &DeviceCore,
        f: &Fdm,
        device: vk::Device,
        q: crate::ffi::LayerQueue,
        size: u64,
    ) -> Result<MapReader, vk::Result> {
        let d = &f.below;
        let fail = |command| crate::guard::injected_failure(&dev.settings().debug_fail, command);
        // SAFETY: queue 0 of a family the device was created with, fetched with its create flags (the caller's
        // guarantee).
        let queue = unsafe { crate::ffi::get_layer_queue(d, q) };
        let mut r = MapReader {
            queue,
            pool: vk::CommandPool::null(),
            cb: vk::CommandBuffer::null(),
            fence: vk::Fence::null(),
            buffer: vk::Buffer::null(),
            memory: vk::DeviceMemory::null(),
            size,
            ptr: std::ptr::null_mut(),
            pending: false,
        };
        // `vkSetDeviceLoaderData` gives the layer's own dispatchable handles the device's dispatch table, as the
        // loader interface requires of objects a layer creates (`device` is this device: the caller's guarantee).
        // SAFETY: every create info is built here from locals; every handle used is one made just above by the layer
        // (the pool, the buffer, its memory); the memory is host visible and mapped once, whole.
        let made = (|| unsafe {
            fail("vkCreateCommandPool")?;
            r.pool = d.create_command_pool(
                &vk::CommandPoolCreateInfo::default()
                    .queue_family_index(q.family)
                    .flags(vk::CommandPoolCreateFlags::RESET_COMMAND_BUFFER),
                None,
            )?;
            fail("vkAllocateCommandBuffers")?;
            r.cb = d.allocate_command_buffers(
                &vk::CommandBufferAllocateInfo::default().command_pool(r.pool).command_buffer_count(1),
            )?[0];
            if let Some(set_data) = f.set_loader_data {
                let _ = set_data(device, vk::Handle::as_raw(queue) as *mut _);
                let _ = set_data(device, vk::Handle::as_raw(r.cb) as *mut _);
            }
            fail("vkCreateFence")?;
            r.fence = d.create_fence(&vk::FenceCreateInfo::default(), None)?;
            fail("vkCreateBuffer")?;
            r.buffer = d.create_buffer(
                &vk::BufferCreateInfo::default().size(size).usage(vk::BufferUsageFlags::TRANSFER_DST),
                None,
            )?;
            let req = d.get_buffer_memory_requirements(r.buffer);
            let ty = memory_type(
                f,
                req.memory_type_bits,
                vk::MemoryPropertyFlags::HOST_VISIBLE | vk::MemoryPropertyFlags::HOST_COHERENT,
            )
            .ok_or(vk::Result::ERROR_OUT_OF_HOST_MEMORY)?;
            fail("vkAllocateMemory")?;
            r.memory = d.allocate_memory(
                &vk::MemoryAllocateInfo::default().allocation_size(req.size).memory_type_index(ty),
                None,
            )?;
            d.bind_buffer_memory(r.buffer, r.memory, 0)?;
            r.ptr = d.map_memory(r.memory, 0, vk::WHOLE_SIZE, vk::MemoryMapFlags::empty())? as *mut u8;
            Ok(())
        })();
        match made {
            Ok(()) => Ok(r),
            Err(e) => {
                // SAFETY: the objects are the layer's own and nothing was
                // submitted with them.
                unsafe { r.destroy(d) };
                Err(e)
            }
        }
    }

    /// Destroys the reader's objects.
    ///
    /// # Safety
    /// `d` is the device the reader was made on, and no read is in flight:
    /// every submission of the reader's command buffer was waited for on its
    /// fence.
    pub unsafe fn destroy(self, d: &ash::Device) {
        // SAFETY: the objects are the layer's own, and no submitted work uses them (the caller's guarantee):
        // VUID-vkDestroyBuffer-buffer-00922, VUID-vkFreeMemory-memory-00677, VUID-vkDestroyFence-fence-01120,
        // VUID-vkDestroyCommandPool-commandPool-00041. Freeing mapped memory unmaps it.
        unsafe {
            d.destroy_buffer(self.buffer, None);
            d.free_memory(self.memory, None);
            d.destroy_fence(self.fence, None);
            d.destroy_command_pool(self.pool, None);
        }
    }
}

/// A density map as read on the host.
pub struct MapTexels {
    pub width: u32,
    pub height: u32,
    pub layers: u32,
    pub texels: Vec<[u8; 2]>,
}

/// The density map behind `view`, read on the host, or the last read of it
/// when no submission since could have written it: images the layer can
/// see every write to (usage only transfer, sampling and the map) are
/// re-read after a transfer or layout transition of theirs was submitted;
/// others are read every time.
///
/// # Safety
/// `view` is a valid image view of the device (the density-map attachment
/// of a render pass being begun), and its image is in `expected` (the
/// layout the pass expects it in) or in the layout last noted for it.
pub(super) unsafe fn density_map(
    dev: &DeviceCore,
    f: &Fdm,
    view: vk::ImageView,
    expected: vk::ImageLayout,
) -> Result<Arc<MapTexels>, Fallback> {
    let v = *f.views.lock().get(&view).ok_or(Fallback::UnknownMapView)?;
    let img = *f.images.lock().get(&v.image).ok_or(Fallback::UnknownMapImage)?;
    let watched = vk::ImageUsageFlags::TRANSFER_SRC
        | vk::ImageUsageFlags::TRANSFER_DST
        | vk::ImageUsageFlags::SAMPLED
        | vk::ImageUsageFlags::FRAGMENT_DENSITY_MAP_EXT;
    let cacheable = watched.contains(img.usage);
    let generation = f.map_generation.lock().get(&v.image).copied().unwrap_or(0);
    if cacheable {
        if let Some((g, m)) = f.map_cache.lock().get(&view) {
            if *g == generation {
                return Ok(m.clone());
            }
        }
    }
    // SAFETY: the caller's guarantee: `view` is valid and in `expected` or
    // its noted layout.
    let (width, height, layers, texels) = unsafe { read_map(dev, f, view, expected)? };
    let m = Arc::new(MapTexels { width, height, layers, texels });
    if cacheable {
        f.map_cache.lock().insert(view, (generation, m.clone()));
    }
    Ok(m)
}

/// The reader's command buffer while it records: dropped (a failed step, a
/// panic) before it is ended, it is reset, so the next read can begin it.
struct Recording<'a> {
    d: &'a ash::Device,
    cb: vk::CommandBuffer,
}

impl Drop for Recording<'_> {
    fn drop(&mut self) {
        // SAFETY: VUID-vkResetCommandBuffer-commandBuffer-00046: the reader's pool was made with
        // RESET_COMMAND_BUFFER; VUID-vkResetCommandBuffer-commandBuffer-00045: the command buffer is recording (not
        // pending), and the reader lock is held (its external synchronization).
        let _ = unsafe { self.d.reset_command_buffer(self.cb, vk::CommandBufferResetFlags::empty()) };
    }
}

/// The density map `view` shows: the view as the layer remembers it, and
/// the extent of its mip level; an error where the layer does not know it or
/// its format is not R8G8_UNORM.
pub(super) fn map_view(f: &Fdm, view: vk::ImageView) -> Result<(super::ViewInfo, (u32, u32)), Fallback> {
    let v = *f.views.lock().get(&view).ok_or(Fallback::UnknownMapView)?;
    let img = *f.images.lock().get(&v.image).ok_or(Fallback::UnknownMapImage)?;
    if v.format != vk::Format::R8G8_UNORM {
        return Err(Fallback::MapFormat(v.format));
    }
    let mip = v.range.base_mip_level;
    Ok((v, ((img.extent.width >> mip).max(1), (img.extent.height >> mip).max(1))))
}

/// Reads a density map (R8G8_UNORM) on the host: `(width, height, layers, texels)`.
///
/// # Safety
/// As [`density_map`].
unsafe fn read_map(
    dev: &DeviceCore,
    f: &Fdm,
    view: vk::ImageView,
    expected: vk::ImageLayout,
) -> Result<(u32, u32, u32, Vec<[u8; 2]>), Fallback> {
    let (v, (w, h)) = map_view(f, view)?;
    let layers = v.range.layer_count.max(1);
    let size = (w * h * layers * 2) as u64;
    let layout = f.map_layouts.lock().get(&v.image).copied().unwrap_or(expected);
    let d = &f.below;
    if f.lost.load(std::sync::atomic::Ordering::Acquire) {
        return Err(Fallback::DeviceLost);
    }
    let queue = f.queue.ok_or(Fallback::NoQueue)?;
    let lost = |x: vk::Result| {
        if x == vk::Result::ERROR_DEVICE_LOST {
            note_device_lost(dev, f);
        }
        x
    };
    let mut reader = f.reader.lock();
    // SAFETY: the reader lock is held; `dev.handle` is the device of `f`, created with queue 0 of `f.queue` (a
    // `layer_queue` of its create info).
    unsafe { ready_reader(dev, f, &mut reader, queue, size, lost) }?;
    let r = reader.as_mut().unwrap();
    let e = Fallback::MapRead;
    // SAFETY: the reader's command buffer is the layer's own, not pending
    // (the last read waited for its fence) and used only under the reader
    // lock (its external synchronization); its pool allows resets.
    unsafe {
        d.begin_command_buffer(
            r.cb,
            &vk::CommandBufferBeginInfo::default().flags(vk::CommandBufferUsageFlags::ONE_TIME_SUBMIT),
        )
    }
    .map_err(e)?;
    // From here until it is ended, a failure (or a panic) must not leave the command buffer recording: the next
    // read's vkBeginCommandBuffer would break VUID-vkBeginCommandBuffer-commandBuffer-00049.
    let recording = Recording { d, cb: r.cb };
    // SAFETY: the reader's own command buffer, begun above under the reader lock; the map's image is valid with
    // `view` (the caller's guarantee), in `layout`; the buffer is the reader's, at least `size` bytes (it was remade
    // above if smaller).
    unsafe { record_copy(d, r, &v, layout, (w, h, layers)) };
    crate::guard::injected_failure(&dev.settings().debug_fail, "vkEndCommandBuffer").map_err(e)?;
    std::mem::forget(recording);
    // SAFETY: the reader's own command buffer in the recording state, under
    // the reader lock. A failed end leaves it invalid, which the next begin
    // may reset (its pool allows resets), so nothing is left to undo.
    unsafe { d.end_command_buffer(r.cb) }.map_err(e)?;
    let fail = |command| crate::guard::injected_failure(&dev.settings().debug_fail, command).map_err(lost);
    {
        let _g = f.queue_lock.lock();
        let cbs = [r.cb];
        fail("vkQueueSubmit").map_err(e)?;
        // SAFETY: the queue lock is held (the queue's external synchronization with the application's submissions
        // through the layer); the command buffer is executable and the fence unsignaled (reset after the last read,
        // or after the wait above where that read's wait failed; VUID-vkQueueSubmit-fence-00063).
        unsafe { d.queue_submit(r.queue, &[vk::SubmitInfo::default().command_buffers(&cbs)], r.fence) }
            .map_err(lost)
            .map_err(e)?;
    }
    // From here the command buffer is pending until the fence is waited for: a failed wait leaves it so, and the
    // next read waits again before it begins it (VUID-vkBeginCommandBuffer-commandBuffer-00049) or submits with the
    // fence (VUID-vkQueueSubmit-fence-00063).
    r.pending = true;
    // SAFETY: the reader's own fence, submitted just above; waited for
    // before it is reset (VUID-vkResetFences-pFences-01123).
    unsafe {
        fail("vkWaitForFences").map_err(e)?;
        d.wait_for_fences(&[r.fence], true, WAIT_NS).map_err(lost).map_err(e)?;
        d.reset_fences(&[r.fence]).map_err(e)?;
    }
    r.pending = false;
    // SAFETY: `r.ptr` maps the whole of the reader's host-coherent memory, at least `r.size >= size` bytes, and the
    // copy into it finished (the fence was waited for after a transfer-to-host barrier); the buffer stays mapped
    // while the reader lock is held.
    let bytes = unsafe { std::slice::from_raw_parts(r.ptr, size as usize) };
    Ok((w, h, layers, swizzled(bytes, v.components)))
}

/// Makes `reader` ready for a read of `size` bytes: a read whose wait
/// failed waited for (its fence reset), a reader too small destroyed, and
/// one made where there is none (`lost` notes a device loss).
///
/// # Safety
/// `reader` is `f`'s, under its lock; `dev.handle` is the device of `f`,
/// created with queue 0 of `queue`'s family (a `layer_queue` of its create
/// info).
unsafe fn ready_reader(
    dev: &DeviceCore,
    f: &Fdm,
    reader: &mut Option<MapReader>,
    queue: crate::ffi::LayerQueue,
    size: u64,
    lost: impl Fn(vk::Result) -> vk::Result,
) -> Result<(), Fallback> {
    let d = &f.below;
    if let Some(r) = reader.as_mut().filter(|r| r.pending) {
        // SAFETY: the reader's own fence, submitted with its last read, whose wait failed; waited for before it is
        // reset (VUID-vkResetFences-pFences-01123), under the reader lock.
        unsafe {
            d.wait_for_fences(&[r.fence], true, WAIT_NS).map_err(lost).map_err(Fallback::MapRead)?;
            d.reset_fences(&[r.fence]).map_err(Fallback::MapRead)?;
        }
        r.pending = false;
    }
    if reader.as_ref().is_some_and(|r| r.size < size) {
        // SAFETY: every read waits for its fence before it returns (below),
        // and the reader lock is held: no read is in flight.
        unsafe { reader.take().unwrap().destroy(d) };
    }
    if reader.is_none() {
        // SAFETY: `dev.handle` is the device of `f`, created with queue 0 of
        // `f.queue` (a `layer_queue` of its create info).
        let made = unsafe { MapReader::new(dev, f, dev.handle, queue, size.max(64 * 1024)) };
        *reader = Some(made.map_err(Fallback::MapReader)?);
    }
    Ok(())
}

/// Records into the reader's command buffer the copy of the map (its view
/// `v`, in `layout`, `w` x `h` texels of `layers` layers) into the reader's
/// buffer, through TRANSFER_SRC_OPTIMAL where `layout` cannot be copied
/// from, and made visible to the host.
///
/// # Safety
/// `r`'s command buffer is recording, under the reader lock; `v.image` is
/// valid, in `layout`; `r`'s buffer holds the copy.
unsafe fn record_copy(
    d: &ash::Device,
    r: &MapReader,
    v: &super::ViewInfo,
    layout: vk::ImageLayout,
    (w, h, layers): (u32, u32, u32),
) {
    let range = vk::ImageSubresourceRange { aspect_mask: vk::ImageAspectFlags::COLOR, level_count: 1, ..v.range };
    let direct = layout == vk::ImageLayout::GENERAL || layout == vk::ImageLayout::TRANSFER_SRC_OPTIMAL;
    let src_layout = if direct { layout } else { vk::ImageLayout::TRANSFER_SRC_OPTIMAL };
    let barrier = |old, new| {
        [vk::ImageMemoryBarrier::default()
            .old_layout(old)
            .new_layout(new)
            .src_access_mask(vk::AccessFlags::MEMORY_WRITE)
            .dst_access_mask(vk::AccessFlags::MEMORY_READ | vk::AccessFlags::MEMORY_WRITE)
            .src_queue_family_index(vk::QUEUE_FAMILY_IGNORED)
            .dst_queue_family_index(vk::QUEUE_FAMILY_IGNORED)
            .image(v.image)
            .subresource_range(range)]
    };
    let all = vk::PipelineStageFlags::ALL_COMMANDS;
    // SAFETY: recorded into the reader's own command buffer, recording under the reader lock; `v.image` is the
    // density map's image, valid, in `layout` (the caller's guarantee).
    unsafe {
        d.cmd_pipeline_barrier(r.cb, all, all, vk::DependencyFlags::empty(), &[], &[], &barrier(layout, src_layout))
    };
    let region = vk::BufferImageCopy::default()
        .image_subresource(vk::ImageSubresourceLayers {
            aspect_mask: vk::ImageAspectFlags::COLOR,
            mip_level: v.range.base_mip_level,
            base_array_layer: v.range.base_array_layer,
            layer_count: layers,
        })
        .image_extent(vk::Extent3D { width: w, height: h, depth: 1 });
    // SAFETY: as above: the reader's own command buffer in the recording
    // state, the map's image in `src_layout`, the reader's buffer.
    unsafe {
        d.cmd_copy_image_to_buffer(r.cb, v.image, src_layout, r.buffer, &[region]);
        d.cmd_pipeline_barrier(
            r.cb,
            all,
            all | vk::PipelineStageFlags::HOST,
            vk::DependencyFlags::empty(),
            &[vk::MemoryBarrier::default()
                .src_access_mask(vk::AccessFlags::TRANSFER_WRITE)
                .dst_access_mask(vk::AccessFlags::HOST_READ)],
            &[],
            &barrier(src_layout, layout),
        );
    }
}

/// The R8G8 texels of `bytes` as the view with `components` reads them.
fn swizzled(bytes: &[u8], components: vk::ComponentMapping) -> Vec<[u8; 2]> {
    let pick = |s: vk::ComponentSwizzle, own: usize, t: &[u8]| -> u8 {
        match s {
            vk::ComponentSwizzle::IDENTITY => t[own],
            vk::ComponentSwizzle::R => t[0],
            vk::ComponentSwizzle::G => t[1],
            vk::ComponentSwizzle::ONE | vk::ComponentSwizzle::A => 255,
            _ => 0,
        }
    };
    bytes.chunks_exact(2).map(|t| [pick(components.r, 0, t), pick(components.g, 1, t)]).collect()
}

/// A `VK_ERROR_DEVICE_LOST` met by the layer's own submission or wait: it
/// cannot be returned by the command that met it (`vkCmdBeginRenderPass*`
/// returns nothing), so the device remembers it and its next submissions
/// and waits return it (`queue.rs`); no map is read again.
pub(super) fn note_device_lost(dev: &DeviceCore, f: &Fdm) {
    if !f.lost.swap(true, std::sync::atomic::Ordering::AcqRel) {
        dev.log().error(
            crate::id::FDM_DEVICE_LOST,
            "the device was lost during a density-map read; the device's next submissions and waits return VK_ERROR_DEVICE_LOST",
        );
    }
}

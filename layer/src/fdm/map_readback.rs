//! Density-map readback: the map of a pass, read on the host when the pass
//! begins (R8G8_UNORM, through the view's swizzle), with the reader's own
//! command pool, fence and host-visible buffer ([`MapReader`]). A map whose
//! every write the layer can see is read again only after a submission
//! that may have written it ([`super::queue`]).

use super::{memory_type, Fdm};
use crate::device::DeviceCore;
use ash::vk;
use std::sync::Arc;

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
}

// SAFETY: used only under the device's reader lock.
unsafe impl Send for MapReader {}

impl MapReader {
    /// The reader's objects; on a failure, those already made are destroyed
    /// (null handles are ignored by the destroy commands).
    unsafe fn new(dev: &DeviceCore, f: &Fdm, device: vk::Device, size: u64) -> Result<MapReader, vk::Result> {
        let d = &f.below;
        let fail = |command| crate::guard::injected_failure(&dev.settings().debug_fail, command);
        let queue = d.get_device_queue(f.queue_family, 0);
        let mut r = MapReader {
            queue,
            pool: vk::CommandPool::null(),
            cb: vk::CommandBuffer::null(),
            fence: vk::Fence::null(),
            buffer: vk::Buffer::null(),
            memory: vk::DeviceMemory::null(),
            size,
            ptr: std::ptr::null_mut(),
        };
        let made = (|| {
            fail("vkCreateCommandPool")?;
            r.pool = d.create_command_pool(
                &vk::CommandPoolCreateInfo::default()
                    .queue_family_index(f.queue_family)
                    .flags(vk::CommandPoolCreateFlags::RESET_COMMAND_BUFFER),
                None,
            )?;
            r.cb = d.allocate_command_buffers(
                &vk::CommandBufferAllocateInfo::default().command_pool(r.pool).command_buffer_count(1),
            )?[0];
            if let Some(set_data) = f.set_loader_data {
                let _ = set_data(device, vk::Handle::as_raw(queue) as *mut _);
                let _ = set_data(device, vk::Handle::as_raw(r.cb) as *mut _);
            }
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
                r.destroy(d);
                Err(e)
            }
        }
    }

    pub unsafe fn destroy(self, d: &ash::Device) {
        d.destroy_buffer(self.buffer, None);
        d.free_memory(self.memory, None);
        d.destroy_fence(self.fence, None);
        d.destroy_command_pool(self.pool, None);
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
pub(super) unsafe fn density_map(
    dev: &DeviceCore,
    f: &Fdm,
    view: vk::ImageView,
    expected: vk::ImageLayout,
) -> Result<Arc<MapTexels>, String> {
    let v = *f.views.lock().get(&view).ok_or("the density map view is unknown")?;
    let img = *f.images.lock().get(&v.image).ok_or("the density map image is unknown")?;
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
    let (width, height, layers, texels) = read_map(dev, f, view, expected)?;
    let m = Arc::new(MapTexels { width, height, layers, texels });
    if cacheable {
        f.map_cache.lock().insert(view, (generation, m.clone()));
    }
    Ok(m)
}

/// Reads a density map (R8G8_UNORM) on the host: `(width, height, layers, texels)`.
unsafe fn read_map(
    dev: &DeviceCore,
    f: &Fdm,
    view: vk::ImageView,
    expected: vk::ImageLayout,
) -> Result<(u32, u32, u32, Vec<[u8; 2]>), String> {
    let v = *f.views.lock().get(&view).ok_or("the density map view is unknown")?;
    let img = *f.images.lock().get(&v.image).ok_or("the density map image is unknown")?;
    if v.format != vk::Format::R8G8_UNORM {
        return Err(format!("the density map's format is {:?}, not R8G8_UNORM", v.format));
    }
    let mip = v.range.base_mip_level;
    let (w, h) = ((img.extent.width >> mip).max(1), (img.extent.height >> mip).max(1));
    let layers = v.range.layer_count.max(1);
    let size = (w * h * layers * 2) as u64;
    let layout = f.map_layouts.lock().get(&v.image).copied().unwrap_or(expected);
    let d = &f.below;
    let mut reader = f.reader.lock();
    if reader.as_ref().is_some_and(|r| r.size < size) {
        reader.take().unwrap().destroy(d);
    }
    if reader.is_none() {
        *reader = Some(
            MapReader::new(dev, f, dev.handle, size.max(64 * 1024))
                .map_err(|e| format!("cannot set up map reads: {e:?}"))?,
        );
    }
    let r = reader.as_ref().unwrap();
    let range = vk::ImageSubresourceRange { aspect_mask: vk::ImageAspectFlags::COLOR, level_count: 1, ..v.range };
    let e = |x: vk::Result| format!("map read failed: {x:?}");
    d.begin_command_buffer(
        r.cb,
        &vk::CommandBufferBeginInfo::default().flags(vk::CommandBufferUsageFlags::ONE_TIME_SUBMIT),
    )
    .map_err(e)?;
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
    d.cmd_pipeline_barrier(r.cb, all, all, vk::DependencyFlags::empty(), &[], &[], &barrier(layout, src_layout));
    let region = vk::BufferImageCopy::default()
        .image_subresource(vk::ImageSubresourceLayers {
            aspect_mask: vk::ImageAspectFlags::COLOR,
            mip_level: mip,
            base_array_layer: v.range.base_array_layer,
            layer_count: layers,
        })
        .image_extent(vk::Extent3D { width: w, height: h, depth: 1 });
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
    d.end_command_buffer(r.cb).map_err(e)?;
    {
        let _g = f.queue_lock.lock();
        let cbs = [r.cb];
        d.queue_submit(r.queue, &[vk::SubmitInfo::default().command_buffers(&cbs)], r.fence).map_err(e)?;
    }
    d.wait_for_fences(&[r.fence], true, u64::MAX).map_err(e)?;
    d.reset_fences(&[r.fence]).map_err(e)?;
    let bytes = std::slice::from_raw_parts(r.ptr, size as usize);
    let pick = |s: vk::ComponentSwizzle, own: usize, t: &[u8]| -> u8 {
        match s {
            vk::ComponentSwizzle::IDENTITY => t[own],
            vk::ComponentSwizzle::R => t[0],
            vk::ComponentSwizzle::G => t[1],
            vk::ComponentSwizzle::ONE | vk::ComponentSwizzle::A => 255,
            _ => 0,
        }
    };
    let texels = bytes.chunks_exact(2).map(|t| [pick(v.components.r, 0, t), pick(v.components.g, 1, t)]).collect();
    Ok((w, h, layers, texels))
}

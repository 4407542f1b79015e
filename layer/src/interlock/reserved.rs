//! The reserved set of the locked interlock strategies, the spinlock and
//! the ordered one (`overlap_shaders::spinlock` and `::ordered` rewrite the
//! shaders): what both keep on a device, and the spinlock's hooks.
//!
//! - The layer reserves descriptor set `R = maxBoundDescriptorSets - 1` of
//!   the driver and reports one set (and one storage image) less.
//! - At `vkCreateDevice` it creates the lock image (R32_UINT, `LOCK_SIZE`²,
//!   cleared to 0, in GENERAL layout), a descriptor set holding it, and an
//!   empty set layout; `fragmentStoresAndAtomics` is enabled for the driver.
//! - Every pipeline layout gets empty padding set layouts up to `R` and the
//!   lock set layout at `R`, so all layouts stay compatible with each other
//!   exactly as the application's were.
//! - Pipelines built from rewritten modules are remembered; before a draw with
//!   one bound, the lock set is bound at `R` with that pipeline's layout.
//! - Under the `ordered` strategy the reserved set also holds the cells of
//!   primitive order, and draws of ordered pipelines are recorded twice
//!   (`ordered.rs`, whose draw hooks bind the set for both strategies).

use super::cells;
use crate::device::DeviceCore;
use crate::generated::args;
use crate::id;
use ash::vk;
use parking_lot::Mutex;
use std::collections::{HashMap, HashSet};

/// Side of the square lock image; pixels further apart share locks.
pub const LOCK_SIZE: u32 = 2048;

/// What the shader route made of a module (`shader.rs`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ModuleKind {
    /// A fragment shader lowered with the lock (`ordered`: it asked for
    /// order, which the lock does not give).
    Locked { ordered: bool },
    /// A fragment shader lowered for the ordered strategy (`per_sample`: it
    /// reads `SampleId`).
    Ordered { early_fragment_tests: bool, per_sample: bool },
    /// A vertex shader that writes the instance index for the ordered
    /// fragment shaders.
    Vertex { side_effects: bool, transform_feedback: bool },
}

/// How draws with a pipeline (or fragment shader object) bound go.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PipelineKind {
    /// The lock set is bound.
    Locked,
    /// Ordered: recorded twice, or (`Err`, the reason) the unordered set is
    /// bound: mutual exclusion only. `merge`: a primitive may have several
    /// invocations in one cell (per-sample shading, lines, points), so the
    /// count draw merges equal keys. `early`: the fragment shader has early
    /// fragment tests (the count draw's samples pass them too: it cannot be
    /// ordered while an occlusion query counts).
    Ordered { order: Result<(), &'static str>, merge: bool, early: bool },
}

/// What the locked strategies (spinlock and ordered) keep on a device: the
/// descriptor set they reserve, the lock image and the ordered strategy's
/// cells bound through it, and the modules, pipelines, shader objects and
/// command buffers that bind it.
#[derive(Default)]
pub struct ReservedSet {
    /// The reserved descriptor set index.
    pub set: u32,
    image: vk::Image,
    memory: vk::DeviceMemory,
    view: vk::ImageView,
    /// The locks are words of `buffer` rather than texels of `image`
    /// (`interlock_spinlock_lock=buffer`, `overlap_shaders::spinlock::Config::buffer`).
    pub lock_buffer: bool,
    buffer: vk::Buffer,
    /// log2 of the lock block (see `overlap_shaders::spinlock::Config::block`).
    pub block: (u32, u32),
    /// Quad locks (`overlap_shaders::spinlock::Config::quad`): the device
    /// has subgroup ballots in fragment shaders.
    pub quad: bool,
    /// `interlock_spinlock_try=ttas` (`overlap_shaders::spinlock::Config::ttas`).
    pub ttas: bool,
    /// The ordered strategy's state, where it runs.
    pub ordered: Option<cells::Ordered>,
    pub(super) set_loader_data: Option<crate::ffi::PfnSetDeviceLoaderData>,
    pub(super) lock_layout: vk::DescriptorSetLayout,
    empty_layout: vk::DescriptorSetLayout,
    pool: vk::DescriptorPool,
    pub(super) lock_set: vk::DescriptorSet,
    /// Shader modules the route rewrote, and how.
    pub modules: Mutex<HashMap<vk::ShaderModule, ModuleKind>>,
    /// Pipelines using a lock, with their (extended) layouts.
    pipelines: Mutex<HashMap<vk::Pipeline, (vk::PipelineLayout, PipelineKind)>>,
    /// Locked fragment shader objects, with a pipeline layout made from
    /// their (extended) set layouts and push constant ranges.
    shaders: Mutex<HashMap<vk::ShaderEXT, (vk::PipelineLayout, PipelineKind)>>,
    /// Command buffers whose bound graphics pipeline (or fragment shader
    /// object) uses a lock, with the layout to bind the lock set with.
    pub(super) bound: Mutex<HashMap<vk::CommandBuffer, (vk::PipelineLayout, PipelineKind)>>,
    warned: Mutex<HashSet<vk::Pipeline>>,
    /// Graphics pipeline libraries (ordered strategy): what each brings to
    /// a link.
    library_parts: Mutex<HashMap<vk::Pipeline, LibraryPart>>,
    /// Vertex shader objects (ordered strategy): whether each carries the
    /// instance index ([`pre_rasterization_verdict`]'s rule).
    vertex_objects: Mutex<HashMap<vk::ShaderEXT, Result<(), &'static str>>>,
    /// Per command buffer, the shader objects bound before the fragment
    /// stage (ordered strategy).
    bound_objects: Mutex<HashMap<vk::CommandBuffer, BoundObjects>>,
}

/// The pre-rasterization shader objects a command buffer has bound.
#[derive(Clone, Copy, Debug, Default)]
pub struct BoundObjects {
    /// The vertex shader object's verdict (`None`: none bound, or one the
    /// layer did not make with the instance index).
    vertex: Option<Result<(), &'static str>>,
    /// The tessellation, geometry, task and mesh stages bound to a shader
    /// object (not to nothing).
    extra: vk::ShaderStageFlags,
}

impl BoundObjects {
    /// How an ordered fragment shader object with these partners draws.
    fn order(&self, early: bool) -> Result<(), &'static str> {
        if early {
            return Err("a fragment shader object with early fragment tests (depth and stencil writes are dynamic state with shader objects: the count draw could write them)");
        }
        if !self.extra.is_empty() {
            return Err("geometry, tessellation or mesh stages (the instance index comes from the vertex shader)");
        }
        self.vertex.unwrap_or(Err("a vertex shader object without the layer's instance-index output"))
    }
}

/// The locks' descriptor (binding 0 of the reserved set): its type, and what
/// a write of it points at.
pub(super) struct LockDescriptor {
    pub(super) ty: vk::DescriptorType,
    image: [vk::DescriptorImageInfo; 1],
    buffer: [vk::DescriptorBufferInfo; 1],
}

impl LockDescriptor {
    /// The write of binding 0 of `set` (a set of the reserved layout).
    pub(super) fn write(&self, set: vk::DescriptorSet) -> vk::WriteDescriptorSet<'_> {
        let w = vk::WriteDescriptorSet::default().dst_set(set).dst_binding(0).descriptor_type(self.ty);
        if self.ty == vk::DescriptorType::STORAGE_BUFFER {
            w.buffer_info(&self.buffer)
        } else {
            w.image_info(&self.image)
        }
    }
}

impl ReservedSet {
    /// The locks' descriptor: the lock buffer's or the lock image's.
    pub(super) fn lock_descriptor(&self) -> LockDescriptor {
        LockDescriptor {
            ty: if self.lock_buffer { vk::DescriptorType::STORAGE_BUFFER } else { vk::DescriptorType::STORAGE_IMAGE },
            image: [vk::DescriptorImageInfo {
                sampler: vk::Sampler::null(),
                image_view: self.view,
                image_layout: vk::ImageLayout::GENERAL,
            }],
            buffer: [vk::DescriptorBufferInfo { buffer: self.buffer, offset: 0, range: vk::WHOLE_SIZE }],
        }
    }
}

/// `debug_ordered_without`'s parts as [`cells::Config::without`]'s bits;
/// a part it does not know is logged and ignored, and so are the shader's
/// parts (all but `count`) where a shading rate applies: only the one-cell
/// build of the protocol reads them.
fn ordered_without(parts: Option<&str>, shading_rate: bool, log: &crate::log::Logger) -> u32 {
    const PARTS: [&str; 10] =
        ["waits", "protocol", "count", "lock", "append", "reset", "search", "order_wait", "guess", "early_lookup"];
    let mut bits = 0;
    for p in parts.unwrap_or("").split(',').map(str::trim).filter(|p| !p.is_empty()) {
        match PARTS.iter().position(|k| *k == p) {
            Some(i) => bits |= 1 << i,
            None => log.warn(
                id::SETTING_INVALID,
                &format!("debug_ordered_without: unknown part {p:?} ignored (known: {})", PARTS.join(", ")),
            ),
        }
    }
    if shading_rate && bits & !4 != 0 {
        log.warn(id::SETTING_INVALID, "debug_ordered_without: only `count` applies under a fragment shading rate");
        bits &= 4;
    }
    use cells::EARLY_LOOKUP;
    if bits & EARLY_LOOKUP != 0 && bits & !(EARLY_LOOKUP | 4) != 0 {
        log.warn(
            id::SETTING_INVALID,
            "debug_ordered_without: `early_lookup` links a build of its own; of the other parts only `count` applies",
        );
        bits &= EARLY_LOOKUP | 4;
    }
    bits
}

/// The lock resources could not be made: what, and the driver's result.
#[derive(Debug, thiserror::Error)]
#[error("{0}: {1:?}")]
pub struct InitError(pub &'static str, pub vk::Result);

/// The lock image's whole subresource range.
const LOCK_RANGE: vk::ImageSubresourceRange = vk::ImageSubresourceRange {
    aspect_mask: vk::ImageAspectFlags::COLOR,
    base_mip_level: 0,
    level_count: 1,
    base_array_layer: 0,
    layer_count: 1,
};

/// What [`ReservedSet::create`] makes the lock resources with. Its rule (the
/// `# Safety` of its methods): `device` was just created from `info` on `pd`
/// of `instance`, with `set_loader_data` from its chain, and the application
/// has not seen it.
struct Init<'a> {
    instance: &'a ash::Instance,
    pd: vk::PhysicalDevice,
    device: &'a ash::Device,
    info: &'a vk::DeviceCreateInfo<'a>,
    set_loader_data: Option<crate::ffi::PfnSetDeviceLoaderData>,
    /// The `debug_fail` setting: failures injected by command name.
    debug_fail: &'a Option<String>,
}

/// The driver's result `r` as `what` failing.
fn failed(what: &'static str) -> impl Fn(vk::Result) -> InitError {
    move |r| InitError(what, r)
}

impl Init<'_> {
    /// The failure `debug_fail` injects into `command`, as `what` failing.
    fn fail(&self, command: &str, what: &'static str) -> Result<(), InitError> {
        crate::guard::injected_failure(self.debug_fail, command).map_err(failed(what))
    }

    /// The lock buffer ([`LOCK_SIZE`]² words, device-local) and its memory,
    /// each stored in `s` as soon as it is made.
    ///
    /// # Safety
    /// `self`'s rule.
    unsafe fn lock_buffer(&self, s: &mut ReservedSet) -> Result<(), InitError> {
        let device = self.device;
        // SAFETY (every Vulkan call in this function): as in `lock_image`.
        self.fail("vkCreateBuffer", "lock buffer")?;
        let buffer = unsafe {
            device.create_buffer(
                &vk::BufferCreateInfo::default()
                    .size(u64::from(LOCK_SIZE) * u64::from(LOCK_SIZE) * 4)
                    .usage(vk::BufferUsageFlags::STORAGE_BUFFER | vk::BufferUsageFlags::TRANSFER_DST),
                None,
            )
        }
        .map_err(failed("lock buffer"))?;
        s.buffer = buffer;
        // SAFETY: as above.
        let (req, props) = unsafe {
            (
                device.get_buffer_memory_requirements(buffer),
                self.instance.get_physical_device_memory_properties(self.pd),
            )
        };
        s.memory = self.lock_memory(&req, &props)?;
        // SAFETY: as above; the size and a type allowed by the buffer's
        // requirements (VUID-vkBindBufferMemory-memory-01035), bound once at offset 0.
        unsafe { device.bind_buffer_memory(buffer, s.memory, 0) }.map_err(failed("bind lock memory"))
    }

    /// Device-local memory for the locks, of the size and a type `req` allows.
    fn lock_memory(
        &self,
        req: &vk::MemoryRequirements,
        props: &vk::PhysicalDeviceMemoryProperties,
    ) -> Result<vk::DeviceMemory, InitError> {
        let type_index = crate::ffi::memory_type(props, req.memory_type_bits, vk::MemoryPropertyFlags::DEVICE_LOCAL)
            .ok_or(InitError("lock memory type", vk::Result::ERROR_OUT_OF_DEVICE_MEMORY))?;
        self.fail("vkAllocateMemory", "lock memory")?;
        // SAFETY: `device` was just created (the `Init` rule); a create info
        // built here, of a memory type the device has.
        unsafe {
            self.device.allocate_memory(
                &vk::MemoryAllocateInfo::default().allocation_size(req.size).memory_type_index(type_index),
                None,
            )
        }
        .map_err(failed("lock memory"))
    }

    /// The lock image (R32_UINT, [`LOCK_SIZE`]², device-local), its memory and
    /// its view, each stored in `s` as soon as it is made.
    ///
    /// # Safety
    /// `self`'s rule.
    unsafe fn lock_image(&self, s: &mut ReservedSet) -> Result<(), InitError> {
        let device = self.device;
        // SAFETY (every Vulkan call in this function): `device` was just
        // created from `info` on `pd` of `instance` (the caller's guarantee),
        // every create info below is built here from live locals and is valid
        // for it, and ash passes its own valid output pointers. Rules beyond
        // that are named at each call.
        self.fail("vkCreateImage", "lock image")?;
        let image = unsafe {
            device.create_image(
                &vk::ImageCreateInfo::default()
                    .image_type(vk::ImageType::TYPE_2D)
                    .format(vk::Format::R32_UINT)
                    .extent(vk::Extent3D { width: LOCK_SIZE, height: LOCK_SIZE, depth: 1 })
                    .mip_levels(1)
                    .array_layers(1)
                    .samples(vk::SampleCountFlags::TYPE_1)
                    .usage(vk::ImageUsageFlags::STORAGE | vk::ImageUsageFlags::TRANSFER_DST),
                None,
            )
        }
        .map_err(failed("lock image"))?;
        s.image = image;
        // SAFETY: as above.
        let (req, props) = unsafe {
            (device.get_image_memory_requirements(image), self.instance.get_physical_device_memory_properties(self.pd))
        };
        let memory = self.lock_memory(&req, &props)?;
        s.memory = memory;
        // SAFETY: as above; the size and a type allowed by the image's
        // requirements (VUID-vkBindImageMemory-memory-01047), bound once at offset 0.
        unsafe { device.bind_image_memory(image, memory, 0) }.map_err(failed("bind lock memory"))?;
        // SAFETY: as above; the image is bound to memory and has STORAGE usage.
        self.fail("vkCreateImageView", "lock view")?;
        let view = unsafe {
            device.create_image_view(
                &vk::ImageViewCreateInfo::default()
                    .image(image)
                    .view_type(vk::ImageViewType::TYPE_2D)
                    .format(vk::Format::R32_UINT)
                    .subresource_range(LOCK_RANGE),
                None,
            )
        }
        .map_err(failed("lock view"))?;
        s.view = view;
        Ok(())
    }

    /// The lock set's layout (the lock image, and the ordered strategy's
    /// bindings where it runs), the empty padding layout, the pool and the
    /// lock set, written with the lock view; each stored in `s` as soon as it
    /// is made.
    ///
    /// # Safety
    /// `self`'s rule; the locks are made ([`Init::lock_image`] or
    /// [`Init::lock_buffer`]).
    unsafe fn lock_set(&self, s: &mut ReservedSet) -> Result<(), InitError> {
        let device = self.device;
        // SAFETY (every Vulkan call in this function): `device` was just
        // created from `info` on `pd` of `instance` (the caller's guarantee),
        // every create info below is built here from live locals and is valid
        // for it, and ash passes its own valid output pointers. Rules beyond
        // that are named at each call.
        let lock = s.lock_descriptor();
        let mut binding = vec![vk::DescriptorSetLayoutBinding::default()
            .binding(0)
            .descriptor_type(lock.ty)
            .descriptor_count(1)
            .stage_flags(vk::ShaderStageFlags::FRAGMENT)];
        // The ordered strategy's cells, control block and counters.
        if s.ordered.is_some() {
            binding.extend(cells::Ordered::bindings());
        }
        // SAFETY: as above.
        self.fail("vkCreateDescriptorSetLayout", "lock set layout")?;
        let lock_layout = unsafe {
            device.create_descriptor_set_layout(&vk::DescriptorSetLayoutCreateInfo::default().bindings(&binding), None)
        }
        .map_err(failed("lock set layout"))?;
        s.lock_layout = lock_layout;
        // SAFETY: as above.
        let empty_layout =
            unsafe { device.create_descriptor_set_layout(&vk::DescriptorSetLayoutCreateInfo::default(), None) }
                .map_err(failed("empty set layout"))?;
        s.empty_layout = empty_layout;
        let mut sizes = vec![vk::DescriptorPoolSize { ty: lock.ty, descriptor_count: 1 }];
        if s.ordered.is_some() {
            sizes.push(vk::DescriptorPoolSize { ty: vk::DescriptorType::STORAGE_BUFFER, descriptor_count: 2 });
            sizes.push(vk::DescriptorPoolSize { ty: vk::DescriptorType::UNIFORM_BUFFER, descriptor_count: 1 });
        }
        // SAFETY: as above.
        self.fail("vkCreateDescriptorPool", "lock pool")?;
        let pool = unsafe {
            device.create_descriptor_pool(&vk::DescriptorPoolCreateInfo::default().max_sets(1).pool_sizes(&sizes), None)
        }
        .map_err(failed("lock pool"))?;
        s.pool = pool;
        let layouts = [lock_layout];
        // SAFETY: as above; the pool has room for this one set of the lock's descriptor.
        self.fail("vkAllocateDescriptorSets", "lock set")?;
        let lock_set = unsafe {
            device.allocate_descriptor_sets(
                &vk::DescriptorSetAllocateInfo::default().descriptor_pool(pool).set_layouts(&layouts),
            )
        }
        .map_err(failed("lock set"))?[0];
        s.lock_set = lock_set;
        // SAFETY: as above; the write matches binding 0 of the set's layout
        // (the lock's descriptor), and the set is used by no command buffer yet.
        unsafe { device.update_descriptor_sets(&[lock.write(lock_set)], &[]) };
        Ok(())
    }

    /// Clears the locks once (GENERAL layout, all zero: unlocked) on queue 0
    /// of a graphics or compute family the application created, through a
    /// command buffer of `cmd_pool` (made here, stored as soon as it is made;
    /// the caller destroys it), and waits for it.
    ///
    /// # Safety
    /// `self`'s rule; `s`'s locks are made ([`Init::lock_image`] or [`Init::lock_buffer`]).
    unsafe fn clear_locks(&self, s: &ReservedSet, cmd_pool: &mut vk::CommandPool) -> Result<(), InitError> {
        let (device, info) = (self.device, self.info);
        // SAFETY: VUID-VkDeviceCreateInfo-pQueueCreateInfos-parameter:
        // `queueCreateInfoCount` valid queue create infos (`info` is valid).
        let queue_infos = unsafe { crate::ffi::slice(info.p_queue_create_infos, info.queue_create_info_count) };
        // SAFETY: `pd` is the physical device of `instance` the device was created on.
        let families = unsafe { self.instance.get_physical_device_queue_family_properties(self.pd) };
        // Clearing a colour image needs a graphics or compute queue.
        let lq = crate::ffi::layer_queue(queue_infos, &families, vk::QueueFlags::GRAPHICS | vk::QueueFlags::COMPUTE)
            .ok_or(InitError("no graphics or compute queue", vk::Result::ERROR_INITIALIZATION_FAILED))?;
        let family = lq.family;
        // SAFETY: queue 0 of a family the device was created with, fetched with its create flags.
        let queue = unsafe { crate::ffi::get_layer_queue(device, lq) };
        self.fail("vkCreateCommandPool", "init pool")?;
        // SAFETY: `device` was just created (the caller's guarantee); a create info built here, valid for it.
        *cmd_pool = unsafe {
            device.create_command_pool(&vk::CommandPoolCreateInfo::default().queue_family_index(family), None)
        }
        .map_err(failed("init pool"))?;
        // SAFETY: as above; the pool was just made on `device`.
        self.fail("vkAllocateCommandBuffers", "init command buffer")?;
        let cb = unsafe {
            device.allocate_command_buffers(
                &vk::CommandBufferAllocateInfo::default().command_pool(*cmd_pool).command_buffer_count(1),
            )
        }
        .map_err(failed("init command buffer"))?[0];
        if let Some(set_data) = self.set_loader_data {
            // SAFETY: the loader's vkSetDeviceLoaderData, which a layer must
            // call on every dispatchable object it creates or obtains from the
            // chain below before using it (LoaderLayerInterface.md,
            // "Creating New Dispatchable Objects"); `queue` and `cb` are such
            // objects of `device`.
            unsafe {
                let _ = set_data(device.handle(), vk::Handle::as_raw(queue) as *mut _);
                let _ = set_data(device.handle(), vk::Handle::as_raw(cb) as *mut _);
            }
        }
        // SAFETY: a fresh command buffer in the initial state.
        unsafe { device.begin_command_buffer(cb, &vk::CommandBufferBeginInfo::default()) }
            .map_err(failed("init begin"))?;
        // SAFETY: `cb` is recording; the caller's guarantee for the locks.
        unsafe {
            if s.lock_buffer {
                record_buffer_clear(device, cb, s.buffer)
            } else {
                record_clear(device, cb, s.image)
            }
        };
        // SAFETY: `cb` is recording.
        unsafe { device.end_command_buffer(cb) }.map_err(failed("init end"))?;
        self.fail("vkQueueSubmit", "init submit")?;
        let cbs = [cb];
        // SAFETY: `cb` is executable and `queue` is of the family its pool
        // was made for (VUID-vkQueueSubmit-pCommandBuffers-00074).
        unsafe { device.queue_submit(queue, &[vk::SubmitInfo::default().command_buffers(&cbs)], vk::Fence::null()) }
            .map_err(failed("init submit"))?;
        // SAFETY: `queue` is valid; the device is not yet visible to the
        // application, so nothing else submits to it.
        unsafe { device.queue_wait_idle(queue) }.map_err(failed("init wait"))?;
        Ok(())
    }
}

/// Records the lock buffer's clear into `cb`: filled with 0, then ready for
/// the fragment shaders.
///
/// # Safety
/// `cb` is recording, on `device`; `buffer` is the layer's lock buffer of
/// `device`, with TRANSFER_DST usage.
unsafe fn record_buffer_clear(device: &ash::Device, cb: vk::CommandBuffer, buffer: vk::Buffer) {
    // SAFETY: `cb` is recording; the buffer has TRANSFER_DST usage
    // (VUID-vkCmdFillBuffer-dstBuffer-00029), filled whole.
    unsafe { device.cmd_fill_buffer(cb, buffer, 0, vk::WHOLE_SIZE, 0) };
    let b = [vk::MemoryBarrier::default()
        .src_access_mask(vk::AccessFlags::TRANSFER_WRITE)
        .dst_access_mask(vk::AccessFlags::SHADER_READ | vk::AccessFlags::SHADER_WRITE)];
    // SAFETY: `cb` is recording, outside a render pass.
    unsafe {
        device.cmd_pipeline_barrier(
            cb,
            vk::PipelineStageFlags::TRANSFER,
            vk::PipelineStageFlags::FRAGMENT_SHADER,
            vk::DependencyFlags::empty(),
            &b,
            &[],
            &[],
        )
    };
}

/// Records the locks' clear into `cb`: the lock image to GENERAL, cleared to
/// 0, then ready for the fragment shaders.
///
/// # Safety
/// `cb` is recording, on `device`; `image` is the layer's lock image of
/// `device`, in no layout yet (or one it may lose), with TRANSFER_DST usage.
unsafe fn record_clear(device: &ash::Device, cb: vk::CommandBuffer, image: vk::Image) {
    let barrier = |old: vk::ImageLayout,
                   src: (vk::PipelineStageFlags, vk::AccessFlags),
                   dst: (vk::PipelineStageFlags, vk::AccessFlags)| {
        let b = [vk::ImageMemoryBarrier::default()
            .old_layout(old)
            .new_layout(vk::ImageLayout::GENERAL)
            .src_access_mask(src.1)
            .dst_access_mask(dst.1)
            .src_queue_family_index(vk::QUEUE_FAMILY_IGNORED)
            .dst_queue_family_index(vk::QUEUE_FAMILY_IGNORED)
            .image(image)
            .subresource_range(LOCK_RANGE)];
        // SAFETY: `cb` is recording; `image` is the layer's lock image,
        // whole (`LOCK_RANGE`), in the layout `old` names.
        unsafe { device.cmd_pipeline_barrier(cb, src.0, dst.0, vk::DependencyFlags::empty(), &[], &[], &b) };
    };
    let transfer = (vk::PipelineStageFlags::TRANSFER, vk::AccessFlags::TRANSFER_WRITE);
    barrier(vk::ImageLayout::UNDEFINED, (vk::PipelineStageFlags::TOP_OF_PIPE, vk::AccessFlags::empty()), transfer);
    // SAFETY: `cb` is recording; the image has TRANSFER_DST usage and is
    // in the GENERAL layout it names (VUID-vkCmdClearColorImage-image-00002,
    // VUID-vkCmdClearColorImage-imageLayout-00004).
    unsafe {
        device.cmd_clear_color_image(
            cb,
            image,
            vk::ImageLayout::GENERAL,
            &vk::ClearColorValue { uint32: [0; 4] },
            &[LOCK_RANGE],
        )
    };
    let shaders =
        (vk::PipelineStageFlags::FRAGMENT_SHADER, vk::AccessFlags::SHADER_READ | vk::AccessFlags::SHADER_WRITE);
    barrier(vk::ImageLayout::GENERAL, transfer, shaders);
}

impl ReservedSet {
    /// The reserved set of a device just created, where the locked
    /// strategies run and the application enabled interlock (`Ok(None)`
    /// elsewhere): the set index (the driver's last), lock blocks of the
    /// largest coarse fragment where shading rates are on, quad locks where
    /// fragment shaders have subgroup ballots, and the ordered strategy's
    /// cells fitted to the driver's limits.
    ///
    /// # Safety
    /// `device` was just created on `c.pd` from `down` (the application's
    /// `info`, stripped), with `set_loader_data` from its chain.
    pub unsafe fn for_device(
        c: &crate::device::Creation,
        prepared: Option<&super::Prepared>,
        info: &vk::DeviceCreateInfo,
        device: &ash::Device,
        down: &vk::DeviceCreateInfo,
        set_loader_data: Option<crate::ffi::PfnSetDeviceLoaderData>,
    ) -> Result<Option<ReservedSet>, InitError> {
        let Some(p) = prepared.filter(|p| p.strategy.locks()) else { return Ok(None) };
        if !p.stripped.as_ref().is_some_and(|s| s.interlock.extension_enabled) {
            return Ok(None);
        }
        let (inst, settings) = (c.inst, &c.inst.settings);
        // SAFETY: `pd` is valid (VUID-vkCreateDevice-physicalDevice-parameter).
        let limits = unsafe { inst.fns.get_physical_device_properties(c.pd) }.limits;
        // Coarse fragments: one lock per aligned block of the largest fragment size (the ordered strategy
        // reads the coarse fragment's size instead), unless 1x1 is forced.
        // SAFETY: `info` is valid (the caller's guarantee): a valid chain.
        let rates = unsafe { shading_rate_features_enabled(info) } && !c.plan.forces_one_by_one_with_interlock();
        let block = if rates {
            let mut fsr = vk::PhysicalDeviceFragmentShadingRatePropertiesKHR::default();
            // The driver has the extension (the application enabled it), so it knows the structure.
            c.properties2(&mut vk::PhysicalDeviceProperties2::default().push_next(&mut fsr));
            let log2 = |v: u32| v.max(1).ilog2().min(2);
            (log2(fsr.max_fragment_size.width), log2(fsr.max_fragment_size.height))
        } else {
            (0, 0)
        };
        // Quad locks need subgroup ballots in fragment shaders (and SPIR-V 1.3: Vulkan 1.1 for the application
        // and the driver).
        let ballots = vk::api_version_minor(c.effective_version()) >= 1 && {
            let mut sg = vk::PhysicalDeviceSubgroupProperties::default();
            // A Vulkan 1.1 driver knows the structure.
            c.properties2(&mut vk::PhysicalDeviceProperties2::default().push_next(&mut sg));
            sg.supported_stages.contains(vk::ShaderStageFlags::FRAGMENT)
                && sg.supported_operations.contains(vk::SubgroupFeatureFlags::BALLOT)
        };
        let quad = ballots && !settings.debug_spinlock_per_lane;
        // The debug control keeps the quad locks' blocks, so that it differs from them only in how a quad enters.
        let block = if ballots && !quad { ((block.0 + 1).min(3), (block.1 + 1).min(3)) } else { block };
        if !quad {
            inst.log.warn(
                id::SPINLOCK_PER_LANE,
                &format!(
                    "interlock locks are taken per lane, not per quad ({}): derivatives inside a critical section are undefined where lanes of a quad contend",
                    if ballots { "debug_spinlock_per_lane" } else { "no subgroup ballots in fragment shaders on Vulkan 1.1" }
                ),
            );
        }
        let ordered = (p.strategy == crate::plan::InterlockStrategy::Ordered).then(|| cells::Config {
            location: cells::location(&limits),
            slots: settings.interlock_ordered_slots,
            grid: ordered_grid(c, &limits),
            wait: settings.interlock_ordered_wait,
            reverse: settings.debug_ordered_reverse,
            search_misses: settings.debug_ordered_search_misses,
            dedicated: settings.debug_ordered_dedicated,
            without: ordered_without(settings.debug_ordered_without.as_deref(), rates, &inst.log),
            shading_rate: rates,
            demote: p.demote,
        });
        let set = limits.max_bound_descriptor_sets - 1;
        // SAFETY: the caller's guarantee.
        unsafe {
            ReservedSet::create(
                &inst.fns,
                c.pd,
                device,
                down,
                set_loader_data,
                set,
                &settings.debug_fail,
                block,
                quad,
                settings.interlock_spinlock_lock == "buffer",
                ordered,
            )
        }
        .map(|mut r| {
            r.ttas = quad && settings.interlock_spinlock_try == "ttas";
            Some(r)
        })
    }

    /// Creates the lock resources on a new device and clears the locks, on
    /// queue 0 of a graphics or compute family the application created
    /// ([`crate::ffi::layer_queue`]).
    ///
    /// # Safety
    /// `device` was just created from `info` with `set_loader_data` from its chain.
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn create(
        instance: &ash::Instance,
        pd: vk::PhysicalDevice,
        device: &ash::Device,
        info: &vk::DeviceCreateInfo,
        set_loader_data: Option<crate::ffi::PfnSetDeviceLoaderData>,
        set: u32,
        debug_fail: &Option<String>,
        block: (u32, u32),
        quad: bool,
        lock_buffer: bool,
        ordered: Option<cells::Config>,
    ) -> Result<ReservedSet, InitError> {
        let mut s = ReservedSet {
            set,
            block,
            quad,
            lock_buffer,
            ordered: ordered.map(cells::Ordered::new),
            set_loader_data,
            ..Default::default()
        };
        let mut cmd_pool = vk::CommandPool::null();
        let init = Init { instance, pd, device, info, set_loader_data, debug_fail };
        // Each object is stored as soon as it is made, so that a failure
        // destroys exactly what exists (null handles are ignored).
        let made = (|| {
            // SAFETY: the caller's guarantee (`init`'s rule).
            unsafe {
                if s.lock_buffer {
                    init.lock_buffer(&mut s)?;
                } else {
                    init.lock_image(&mut s)?;
                }
                init.lock_set(&mut s)?;
                init.clear_locks(&s, &mut cmd_pool)
            }
        })();
        // SAFETY: the objects are the layer's own, made above on `device`, which the application has not seen; the
        // wait (whatever its result) leaves the initialization's command buffer not pending where it was submitted
        // (VUID-vkDestroyCommandPool-commandPool-00041, VUID-vkDestroyImage-image-01000 and the like). vkDestroyDevice
        // requires them gone first on the error path (VUID-vkDestroyDevice-device-05137).
        unsafe {
            if made.is_err() {
                let _ = device.device_wait_idle();
            }
            device.destroy_command_pool(cmd_pool, None);
            if made.is_err() {
                s.destroy(device);
            }
        }
        made.map(|()| s)
    }

    /// Remembers a locked fragment shader object and makes its layout; the
    /// driver's error where the layout cannot be made (the shader then
    /// cannot have its lock set bound: the caller destroys it).
    ///
    /// # Safety
    /// `info` is the (extended) create info `shader` was made from, valid,
    /// and `device` is the device it was made on.
    pub unsafe fn note_shader(
        &self,
        device: &ash::Device,
        shader: vk::ShaderEXT,
        info: &vk::ShaderCreateInfoEXT,
        kind: PipelineKind,
        debug_fail: &Option<String>,
    ) -> Result<(), vk::Result> {
        // SAFETY: VUID-VkShaderCreateInfoEXT-pSetLayouts-parameter: `setLayoutCount` handles (`info` is valid).
        let layouts = unsafe { crate::ffi::slice(info.p_set_layouts, info.set_layout_count) };
        // SAFETY: VUID-VkShaderCreateInfoEXT-pPushConstantRanges-parameter.
        let ranges = unsafe { crate::ffi::slice(info.p_push_constant_ranges, info.push_constant_range_count) };
        crate::guard::injected_failure(debug_fail, "vkCreatePipelineLayout")?;
        // SAFETY: set layouts and ranges a valid shader was created with make
        // a valid pipeline layout create info for the same device.
        let layout = unsafe {
            device.create_pipeline_layout(
                &vk::PipelineLayoutCreateInfo::default().set_layouts(layouts).push_constant_ranges(ranges),
                None,
            )
        }?;
        self.shaders.lock().insert(shader, (layout, kind));
        Ok(())
    }

    /// Remembers a vertex shader object the ordered strategy rewrote, and
    /// whether its draws can carry the instance index.
    pub fn note_vertex_object(&self, shader: vk::ShaderEXT, kind: ModuleKind) {
        if let ModuleKind::Vertex { .. } = kind {
            let verdict = pre_rasterization_verdict(
                &[vk::PipelineShaderStageCreateInfo::default().stage(vk::ShaderStageFlags::VERTEX)],
                &[Some(kind)],
            );
            self.vertex_objects.lock().insert(shader, verdict);
        }
    }

    /// Destroys the layout [`ReservedSet::note_shader`] made for `shader`, if any.
    ///
    /// # Safety
    /// `device` is the device the layout was made on, and no command buffer
    /// that bound `shader` is recording or pending.
    pub unsafe fn forget_shader(&self, device: &ash::Device, shader: vk::ShaderEXT) {
        if let Some((layout, _)) = self.shaders.lock().remove(&shader) {
            // SAFETY: the layer's own layout, unused (the caller's guarantee).
            unsafe { device.destroy_pipeline_layout(layout, None) };
        }
    }

    /// # Safety
    /// `device` is the device the locks were made on, idle and being
    /// destroyed; nothing uses the locks again.
    pub unsafe fn destroy(&self, device: &ash::Device) {
        if let Some(o) = &self.ordered {
            // SAFETY: the caller's guarantee.
            unsafe { o.destroy(device) };
        }
        // SAFETY: the layer's own objects of `device`, made without
        // allocation callbacks; the device is idle, so no command buffer
        // using them is pending (VUID-vkDestroyImage-image-01000 and the
        // like), and vkDestroyDevice requires them gone first
        // (VUID-vkDestroyDevice-device-05137).
        unsafe {
            for (_, (layout, _)) in self.shaders.lock().drain() {
                device.destroy_pipeline_layout(layout, None);
            }
            device.destroy_descriptor_pool(self.pool, None);
            device.destroy_descriptor_set_layout(self.lock_layout, None);
            device.destroy_descriptor_set_layout(self.empty_layout, None);
            device.destroy_image_view(self.view, None);
            device.destroy_image(self.image, None);
            device.destroy_buffer(self.buffer, None);
            device.free_memory(self.memory, None);
        }
    }
}

/// `layouts` padded with empty set layouts up to the reserved set, then the
/// lock set layout; `None` when they already reach the reserved set.
///
/// # Safety
/// `layouts` points at `count` set layouts.
pub unsafe fn extend_set_layouts(
    s: &ReservedSet,
    count: u32,
    layouts: *const vk::DescriptorSetLayout,
) -> Option<Vec<vk::DescriptorSetLayout>> {
    if count > s.set {
        return None;
    }
    let mut v: Vec<vk::DescriptorSetLayout> = if count == 0 {
        Vec::new()
    } else {
        // SAFETY: `layouts` points at `count` handles (the caller's guarantee).
        unsafe { std::slice::from_raw_parts(layouts, count as usize) }.to_vec()
    };
    v.resize(s.set as usize, s.empty_layout);
    v.push(s.lock_layout);
    Some(v)
}

/// Extends every pipeline layout with the padding and lock set layouts.
pub fn create_pipeline_layout(core: &DeviceCore, s: &ReservedSet, a: args::CreatePipelineLayout) -> vk::Result {
    let ci = a.create_info();
    // SAFETY: VUID-VkPipelineLayoutCreateInfo-pSetLayouts-parameter:
    // `setLayoutCount` handles.
    match unsafe { extend_set_layouts(s, ci.set_layout_count, ci.p_set_layouts) } {
        None => {
            core.log().warn(
                id::LAYOUT_TOO_MANY_SETS,
                &format!(
                    "a pipeline layout uses {} sets; set {} is reserved for interlock locks: left unextended",
                    ci.set_layout_count, s.set
                ),
            );
            a.next()
        }
        Some(layouts) => {
            let mut copy = *ci;
            copy.set_layout_count = layouts.len() as u32;
            copy.p_set_layouts = layouts.as_ptr();
            a.with_create_info(&copy).next()
        }
    }
}

/// How a pipeline whose fragment shader the ordered strategy lowered runs
/// its draws: in order, or with mutual exclusion only (the reason).
///
/// # Safety
/// `info` is a valid create info (its state pointers null or valid).
unsafe fn ordered_pipeline(
    info: &vk::GraphicsPipelineCreateInfo,
    stages: &[vk::PipelineShaderStageCreateInfo],
    kinds: &[Option<ModuleKind>],
    early_fragment_tests: bool,
    library: bool,
) -> Result<(), &'static str> {
    // SAFETY: the caller's guarantee.
    if early_fragment_tests && unsafe { writes_depth_or_stencil(info) } {
        return Err("the fragment shader asks for early fragment tests and the pipeline may write depth or stencil (the count draw would write them before its fragments are dropped)");
    }
    if library || info.flags.contains(vk::PipelineCreateFlags::LIBRARY_KHR) {
        return Err("a graphics pipeline library");
    }
    pre_rasterization_verdict(stages, kinds)
}

/// Whether the pre-rasterization stages of an ordered pipeline (or
/// library) can carry the instance index: a vertex shader alone before the
/// fragment shader, rewritten, without side effects.
fn pre_rasterization_verdict(
    stages: &[vk::PipelineShaderStageCreateInfo],
    kinds: &[Option<ModuleKind>],
) -> Result<(), &'static str> {
    if stages.iter().any(|st| !matches!(st.stage, vk::ShaderStageFlags::VERTEX | vk::ShaderStageFlags::FRAGMENT)) {
        return Err("geometry, tessellation or mesh stages (the instance index comes from the vertex shader)");
    }
    let vertex = stages.iter().zip(kinds).find(|(st, _)| st.stage == vk::ShaderStageFlags::VERTEX).map(|(_, k)| *k);
    match vertex {
        Some(Some(ModuleKind::Vertex { side_effects: false, transform_feedback: false })) => Ok(()),
        Some(Some(ModuleKind::Vertex { transform_feedback: true, .. })) => {
            Err("transform feedback (the count draw would capture too)")
        }
        Some(Some(ModuleKind::Vertex { side_effects: true, .. })) => {
            Err("the vertex shader writes memory (the count draw runs it again)")
        }
        _ => Err("a vertex shader without the layer's instance-index output"),
    }
}

/// Whether a pipeline may write depth or stencil: its depth-stencil state
/// (null: no depth or stencil attachment) with depth writes or a stencil
/// test that may write, statically or through dynamic state. With early
/// fragment tests those writes happen before the fragment shader, so the
/// ordered strategy's count draw, whose fragments leave no trace
/// otherwise, would make them.
///
/// # Safety
/// `info` is a valid create info (its state pointers null or valid).
unsafe fn writes_depth_or_stencil(info: &vk::GraphicsPipelineCreateInfo) -> bool {
    // SAFETY: VUID-VkGraphicsPipelineCreateInfo-pDepthStencilState-parameter: null or valid.
    let Some(ds) = (unsafe { info.p_depth_stencil_state.as_ref() }) else { return false };
    // SAFETY: as above (VUID-VkPipelineDynamicStateCreateInfo-pDynamicStates-parameter).
    let dynamic: &[vk::DynamicState] = match unsafe { info.p_dynamic_state.as_ref() } {
        Some(d) => unsafe { crate::ffi::slice(d.p_dynamic_states, d.dynamic_state_count) },
        None => &[],
    };
    let has = |s: vk::DynamicState| dynamic.contains(&s);
    let depth_test = ds.depth_test_enable == vk::TRUE || has(vk::DynamicState::DEPTH_TEST_ENABLE);
    let depth = depth_test && (ds.depth_write_enable == vk::TRUE || has(vk::DynamicState::DEPTH_WRITE_ENABLE));
    let keeps = |s: &vk::StencilOpState| {
        s.write_mask == 0 || [s.fail_op, s.pass_op, s.depth_fail_op].iter().all(|op| *op == vk::StencilOp::KEEP)
    };
    let stencil = (ds.stencil_test_enable == vk::TRUE || has(vk::DynamicState::STENCIL_TEST_ENABLE))
        && (has(vk::DynamicState::STENCIL_OP)
            || has(vk::DynamicState::STENCIL_WRITE_MASK)
            || !keeps(&ds.front)
            || !keeps(&ds.back));
    depth || stencil
}

/// Whether a primitive may have several invocations at one pixel: sample
/// shading, or polygons drawn as lines or points (a triangle's edges share
/// its primitive id). Dynamic state counts as may.
///
/// # Safety
/// `info` is a valid create info (its state pointers null or valid).
unsafe fn several_invocations_per_primitive(info: &vk::GraphicsPipelineCreateInfo) -> bool {
    // SAFETY: VUID-VkGraphicsPipelineCreateInfo-pMultisampleState-parameter
    // and -pRasterizationState-parameter: null or valid.
    let (ms, rs) = unsafe { (info.p_multisample_state.as_ref(), info.p_rasterization_state.as_ref()) };
    let sample_shading = ms.is_none_or(|m| m.sample_shading_enable == vk::TRUE);
    let not_fill = rs.is_none_or(|r| r.polygon_mode != vk::PolygonMode::FILL);
    // SAFETY: as above (VUID-VkPipelineDynamicStateCreateInfo-pDynamicStates-parameter).
    let dynamic = unsafe { info.p_dynamic_state.as_ref() }.is_some_and(|d| {
        unsafe { crate::ffi::slice(d.p_dynamic_states, d.dynamic_state_count) }
            .contains(&vk::DynamicState::POLYGON_MODE_EXT)
    });
    sample_shading || not_fill || dynamic
}

/// What a graphics pipeline library brings to an ordered link.
#[derive(Clone, Copy, Debug, Default)]
pub struct LibraryPart {
    /// A fragment shader lowered for the ordered strategy: (early fragment
    /// tests, reads `SampleId`, early tests while the library's
    /// depth-stencil state may write).
    fragment: Option<(bool, bool, bool)>,
    /// The pre-rasterization stages' verdict
    /// ([`pre_rasterization_verdict`]).
    pre_rasterization: Option<Result<(), &'static str>>,
    /// Sample shading, from its multisample state (where it has one).
    sample_shading: Option<bool>,
    /// Polygons drawn as lines or points, from its rasterization (and
    /// dynamic) state (where it has one).
    not_fill: Option<bool>,
}

impl LibraryPart {
    /// The part of library `info` (a valid create info with the library
    /// flag) whose stages have `kinds`.
    ///
    /// # Safety
    /// `info` is a valid create info (its state pointers null or valid).
    unsafe fn of(
        info: &vk::GraphicsPipelineCreateInfo,
        stages: &[vk::PipelineShaderStageCreateInfo],
        kinds: &[Option<ModuleKind>],
    ) -> LibraryPart {
        type F = vk::GraphicsPipelineLibraryFlagsEXT;
        // SAFETY: VUID-VkGraphicsPipelineCreateInfo-pNext-pNext: a valid chain.
        let subsets = unsafe { crate::pnext::find::<vk::GraphicsPipelineLibraryCreateInfoEXT>(info.p_next) }
            .map_or(F::empty(), |g| g.flags);
        let fragment = stages.iter().zip(kinds).find_map(|(st, k)| match (st.stage, k) {
            (vk::ShaderStageFlags::FRAGMENT, Some(ModuleKind::Ordered { early_fragment_tests, per_sample })) => {
                // SAFETY: the caller's guarantee.
                let writes = *early_fragment_tests && unsafe { writes_depth_or_stencil(info) };
                Some((*early_fragment_tests, *per_sample, writes))
            }
            _ => None,
        });
        let pre_rasterization =
            subsets.contains(F::PRE_RASTERIZATION_SHADERS).then(|| pre_rasterization_verdict(stages, kinds));
        // SAFETY: VUID-VkGraphicsPipelineCreateInfo-pMultisampleState-parameter
        // and -pRasterizationState-parameter: null or valid.
        let (ms, rs) = unsafe { (info.p_multisample_state.as_ref(), info.p_rasterization_state.as_ref()) };
        let sample_shading = ms.map(|m| m.sample_shading_enable == vk::TRUE);
        // SAFETY: as above (VUID-VkPipelineDynamicStateCreateInfo-pDynamicStates-parameter).
        let dynamic_polygon = unsafe { info.p_dynamic_state.as_ref() }.is_some_and(|d| {
            unsafe { crate::ffi::slice(d.p_dynamic_states, d.dynamic_state_count) }
                .contains(&vk::DynamicState::POLYGON_MODE_EXT)
        });
        let not_fill = rs.map(|r| r.polygon_mode != vk::PolygonMode::FILL || dynamic_polygon);
        LibraryPart { fragment, pre_rasterization, sample_shading, not_fill }
    }
}

/// How the draws of a link of graphics pipeline libraries go, where one of
/// its parts holds an ordered fragment shader: in order when a
/// pre-rasterization part can carry the instance index (and early fragment
/// tests write no depth or stencil). `own`: the link's own state (the
/// interface subsets it may define itself).
fn linked_kind(parts: &[LibraryPart], own: LibraryPart) -> Option<PipelineKind> {
    let (early, per_sample, writes) = parts.iter().find_map(|p| p.fragment)?;
    let order = if writes {
        Err("the fragment shader asks for early fragment tests and the pipeline may write depth or stencil (the count draw would write them before its fragments are dropped)")
    } else {
        parts.iter().find_map(|p| p.pre_rasterization).unwrap_or(Err("a link without a pre-rasterization library"))
    };
    let all = || parts.iter().chain(std::iter::once(&own));
    // Unknown (no part says) counts as may.
    let sample_shading = all().filter_map(|p| p.sample_shading).reduce(|a, b| a || b).unwrap_or(true);
    let not_fill = all().filter_map(|p| p.not_fill).reduce(|a, b| a || b).unwrap_or(true);
    Some(PipelineKind::Ordered { order, merge: per_sample || sample_shading || not_fill, early })
}

/// Remembers the pipelines created from rewritten fragment shaders, and
/// how their draws go.
///
/// # Safety
/// `infos` and `pipelines` are the arrays of a successful
/// vkCreateGraphicsPipelines (valid create infos); `inline[i]` holds the
/// kinds of pipeline `i`'s stages that the route rewrote inline.
pub unsafe fn note_pipelines(
    core: &DeviceCore,
    s: &ReservedSet,
    infos: &[vk::GraphicsPipelineCreateInfo],
    inline: &[Vec<Option<ModuleKind>>],
    pipelines: &[vk::Pipeline],
) {
    let modules = s.modules.lock();
    let mut known = s.pipelines.lock();
    for ((info, inline), pipeline) in infos.iter().zip(inline).zip(pipelines) {
        if *pipeline == vk::Pipeline::null() {
            continue;
        }
        let stages = if info.stage_count == 0 {
            &[][..]
        } else {
            // SAFETY: VUID-VkGraphicsPipelineCreateInfo-pStages-06600: a
            // pipeline with shader stages points pStages at `stageCount`
            // valid stage create infos.
            unsafe { std::slice::from_raw_parts(info.p_stages, info.stage_count as usize) }
        };
        let kinds: Vec<Option<ModuleKind>> = stages
            .iter()
            .enumerate()
            .map(|(i, st)| inline.get(i).copied().flatten().or_else(|| modules.get(&st.module).copied()))
            .collect();
        let fragment =
            stages.iter().zip(&kinds).find(|(st, _)| st.stage == vk::ShaderStageFlags::FRAGMENT).and_then(|(_, k)| *k);
        // SAFETY: a valid create info has a valid chain
        // (VUID-VkGraphicsPipelineCreateInfo-pNext-pNext), and a library
        // list holds `libraryCount` handles
        // (VUID-VkPipelineLibraryCreateInfoKHR-pLibraries-parameter).
        let linked: &[vk::Pipeline] = unsafe {
            crate::pnext::find::<vk::PipelineLibraryCreateInfoKHR>(info.p_next)
                .map(|l| crate::ffi::slice(l.p_libraries, l.library_count))
                .unwrap_or_default()
        };
        let libraries: Vec<PipelineKind> = linked.iter().filter_map(|p| known.get(p).map(|k| k.1)).collect();
        let is_library = info.flags.contains(vk::PipelineCreateFlags::LIBRARY_KHR);
        if is_library && s.ordered.is_some() {
            // SAFETY: a valid create info (the caller's guarantee).
            let part = unsafe { LibraryPart::of(info, stages, &kinds) };
            s.library_parts.lock().insert(*pipeline, part);
        }
        // A link (not itself a library) of libraries one of which holds an
        // ordered fragment shader.
        let ordered_link = (!is_library && !linked.is_empty())
            .then(|| {
                let stored = s.library_parts.lock();
                let parts: Vec<LibraryPart> = linked.iter().filter_map(|p| stored.get(p).copied()).collect();
                // SAFETY: a valid create info (the caller's guarantee).
                linked_kind(&parts, unsafe { LibraryPart::of(info, &[], &[]) })
            })
            .flatten();
        let from_library = unsafe { crate::pnext::find::<vk::PipelineLibraryCreateInfoKHR>(info.p_next) }.is_some();
        let kind = match fragment {
            Some(ModuleKind::Locked { ordered }) => {
                if ordered && s.warned.lock().insert(*pipeline) {
                    core.log().warn(
                        id::INTERLOCK_ORDER,
                        "a pipeline asks for ordered interlock; the spinlock strategy gives mutual exclusion but not primitive order",
                    );
                }
                PipelineKind::Locked
            }
            Some(ModuleKind::Ordered { early_fragment_tests, per_sample }) => PipelineKind::Ordered {
                // SAFETY: a valid create info's state pointers are null or valid.
                order: unsafe { ordered_pipeline(info, stages, &kinds, early_fragment_tests, from_library) },
                early: early_fragment_tests,
                // SAFETY: a valid create info's state pointers are null or valid.
                merge: per_sample || unsafe { several_invocations_per_primitive(info) },
            },
            _ if ordered_link.is_some() => ordered_link.unwrap_or(PipelineKind::Locked),
            _ if libraries.iter().any(|k| matches!(k, PipelineKind::Ordered { .. })) => {
                PipelineKind::Ordered { order: Err("a graphics pipeline library"), merge: true, early: false }
            }
            _ if !libraries.is_empty() => PipelineKind::Locked,
            _ => continue,
        };
        // (A library is never bound: its link says how draws go.)
        if let (PipelineKind::Ordered { order: Err(why), .. }, false) = (kind, is_library) {
            core.log().log_once(
                crate::settings::LogLevel::Warn,
                id::INTERLOCK_ORDER_FALLBACK,
                why,
                &format!(
                    "ordered interlock: a pipeline's draws run with mutual exclusion but not primitive order: {why}"
                ),
            );
        }
        known.insert(*pipeline, (info.layout, kind));
    }
}

impl ReservedSet {
    pub fn forget_pipeline(&self, pipeline: vk::Pipeline) {
        self.pipelines.lock().remove(&pipeline);
        self.warned.lock().remove(&pipeline);
        self.library_parts.lock().remove(&pipeline);
    }

    pub fn forget_module(&self, module: vk::ShaderModule) {
        self.modules.lock().remove(&module);
    }
}

/// At vkBeginCommandBuffer: no locked pipeline is bound.
pub fn forget_bound(_: &DeviceCore, s: &ReservedSet, cb: vk::CommandBuffer) {
    s.bound.lock().remove(&cb);
    s.bound_objects.lock().remove(&cb);
}

/// Remembers whether the bound graphics pipeline uses a lock.
pub fn cmd_bind_pipeline(_: &DeviceCore, s: &ReservedSet, a: args::CmdBindPipeline) {
    let (cb, point, pipeline) = (a.command_buffer(), a.pipeline_bind_point(), a.pipeline());
    if point == vk::PipelineBindPoint::GRAPHICS {
        let layout = s.pipelines.lock().get(&pipeline).copied();
        let mut bound = s.bound.lock();
        match layout {
            Some(l) => bound.insert(cb, l),
            None => bound.remove(&cb),
        };
    }
    a.next()
}

/// Remembers whether the bound fragment shader object uses a lock.
pub fn cmd_bind_shaders(_: &DeviceCore, s: &ReservedSet, a: args::CmdBindShadersEXT) {
    let (cb, stage_list, shaders) = (a.command_buffer(), a.stages(), a.shaders());
    let shader_at = |i: usize| shaders.map_or(vk::ShaderEXT::null(), |s| s[i]);
    // The ordered strategy: what is bound before the fragment stage.
    let partners = s.ordered.as_ref().map(|_| {
        let mut all = s.bound_objects.lock();
        let b = all.entry(cb).or_default();
        for (i, st) in stage_list.iter().enumerate() {
            let shader = shader_at(i);
            match *st {
                vk::ShaderStageFlags::VERTEX => {
                    b.vertex = (shader != vk::ShaderEXT::null())
                        .then(|| s.vertex_objects.lock().get(&shader).copied())
                        .flatten();
                }
                vk::ShaderStageFlags::FRAGMENT | vk::ShaderStageFlags::COMPUTE => {}
                other if shader == vk::ShaderEXT::null() => b.extra &= !other,
                other => b.extra |= other,
            }
        }
        *b
    });
    let fragment = stage_list.iter().position(|st| *st == vk::ShaderStageFlags::FRAGMENT).map(shader_at);
    if fragment.is_some() || partners.is_some() {
        let mut bound = s.bound.lock();
        let current = match fragment {
            Some(f) => s.shaders.lock().get(&f).copied(),
            None => bound.get(&cb).copied(),
        };
        let decided = match (current, partners) {
            (Some((layout, PipelineKind::Ordered { merge, early, .. })), Some(p)) => {
                Some((layout, PipelineKind::Ordered { order: p.order(early), merge, early }))
            }
            (other, _) => other,
        };
        match decided {
            Some(l) => bound.insert(cb, l),
            None if fragment.is_some() => bound.remove(&cb),
            None => None,
        };
    }
    a.next()
}

/// Destroys the pipeline layout made for a locked fragment shader object.
pub fn destroy_shader(core: &DeviceCore, s: &ReservedSet, a: args::DestroyShaderEXT) {
    let (device, shader) = (a.device(), a.shader());
    let layout = s.shaders.lock().remove(&shader);
    s.vertex_objects.lock().remove(&shader);
    // The shader goes down first, then the layout the layer made for it.
    a.next();
    if let Some((layout, _)) = layout {
        // SAFETY: the layer's own layout of this device, made by `note_shader`
        // without allocation callbacks (VUID-vkDestroyPipelineLayout-pipelineLayout-00300).
        // The layer passes it to vkCmdBindDescriptorSets only in command
        // buffers that bound this shader; VUID-vkDestroyPipelineLayout-pipelineLayout-02004
        // holds as long as none of them is still recording, which is assumed
        // (an application destroying a bound shader leaves such a command
        // buffer invalid anyway).
        unsafe { (core.fns.fp_v1_0().destroy_pipeline_layout)(device, layout, std::ptr::null()) };
    }
}

/// Binds `set` at the reserved index with `layout` (a layout extended with
/// the reserved set layout).
pub fn bind_set(
    core: &DeviceCore,
    s: &ReservedSet,
    cb: vk::CommandBuffer,
    layout: vk::PipelineLayout,
    set: vk::DescriptorSet,
) {
    let sets = [set];
    // SAFETY: `layout` was extended with the reserved set layout at `s.set`,
    // which `set` was allocated with (VUID-vkCmdBindDescriptorSets-pDescriptorSets-00358).
    unsafe {
        (core.fns.fp_v1_0().cmd_bind_descriptor_sets)(
            cb,
            vk::PipelineBindPoint::GRAPHICS,
            layout,
            s.set,
            1,
            sets.as_ptr(),
            0,
            std::ptr::null(),
        )
    };
}

/// The ordered strategy's grid: `interlock_ordered_grid`, halved until the
/// cells (one storage buffer bound whole) fit the driver's range and
/// allocation size (logged where it shrank).
fn ordered_grid(c: &crate::device::Creation, limits: &vk::PhysicalDeviceLimits) -> u32 {
    let mut m3 = vk::PhysicalDeviceMaintenance3Properties::default();
    let max_alloc = if vk::api_version_minor(c.facts.api_version) >= 1 {
        // A Vulkan 1.1 driver knows the structure.
        c.properties2(&mut vk::PhysicalDeviceProperties2::default().push_next(&mut m3));
        m3.max_memory_allocation_size
    } else {
        u64::MAX
    };
    let (asked, slots) = (c.inst.settings.interlock_ordered_grid, c.inst.settings.interlock_ordered_slots);
    let max_bytes = u64::from(limits.max_storage_buffer_range).min(max_alloc);
    let grid = cells::fit_grid(asked, slots, max_bytes);
    if grid != asked {
        c.inst.log.warn(
            id::INTERLOCK_ORDERED_CELLS,
            &format!("ordered interlock: interlock_ordered_grid {asked} -> {grid}: {asked}x{asked} cells of {slots} keys exceed the driver's maxStorageBufferRange / maxMemoryAllocationSize ({max_bytes} bytes); pixels further apart share cells"),
        );
    }
    grid
}

/// Whether the application enabled any fragment shading rate.
///
/// # Safety
/// `info` is a valid `VkDeviceCreateInfo`.
unsafe fn shading_rate_features_enabled(info: &vk::DeviceCreateInfo) -> bool {
    // SAFETY: the caller's guarantee (VUID-VkDeviceCreateInfo-pNext-pNext).
    unsafe { crate::pnext::find::<vk::PhysicalDeviceFragmentShadingRateFeaturesKHR>(info.p_next) }.is_some_and(|f| {
        f.pipeline_fragment_shading_rate == vk::TRUE
            || f.primitive_fragment_shading_rate == vk::TRUE
            || f.attachment_fragment_shading_rate == vk::TRUE
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn writes(ds: Option<&vk::PipelineDepthStencilStateCreateInfo>, dynamic: &[vk::DynamicState]) -> bool {
        let dyn_info = vk::PipelineDynamicStateCreateInfo::default().dynamic_states(dynamic);
        let mut info = vk::GraphicsPipelineCreateInfo::default().dynamic_state(&dyn_info);
        if let Some(ds) = ds {
            info = info.depth_stencil_state(ds);
        }
        // SAFETY: the create info points at live structures of this frame.
        unsafe { writes_depth_or_stencil(&info) }
    }

    /// How a link of libraries goes: ordered when one part holds the
    /// ordered fragment shader and another a pre-rasterization part that
    /// carries the instance index; merged keys where any part may shade a
    /// primitive several times in a pixel, or none says.
    #[test]
    fn links_of_libraries_are_ordered_from_their_parts() {
        let fragment =
            LibraryPart { fragment: Some((false, false, false)), sample_shading: Some(false), ..Default::default() };
        let pre = LibraryPart { pre_rasterization: Some(Ok(())), not_fill: Some(false), ..Default::default() };
        let none = LibraryPart::default();
        let ordered = |order, merge| Some(PipelineKind::Ordered { order, merge, early: false });
        assert_eq!(linked_kind(&[pre, fragment], none), ordered(Ok(()), false));
        // No ordered fragment shader: not an ordered link.
        assert_eq!(linked_kind(&[pre], none), None);
        // The pre-rasterization part's verdict, or its absence.
        let tess = LibraryPart { pre_rasterization: Some(Err("tess")), ..pre };
        assert_eq!(linked_kind(&[tess, fragment], none), ordered(Err("tess"), false));
        assert!(matches!(linked_kind(&[fragment], none), Some(PipelineKind::Ordered { order: Err(_), .. })));
        // Early fragment tests with depth or stencil writes.
        let early = LibraryPart { fragment: Some((true, false, true)), ..fragment };
        assert!(matches!(
            linked_kind(&[pre, early], none),
            Some(PipelineKind::Ordered { order: Err(_), early: true, .. })
        ));
        // Merging: sample shading or lines anywhere (the link's own state
        // too), per-sample reads, or nothing said.
        let shading = LibraryPart { sample_shading: Some(true), ..none };
        assert_eq!(linked_kind(&[pre, fragment, shading], none), ordered(Ok(()), true));
        assert_eq!(linked_kind(&[pre, fragment], shading), ordered(Ok(()), true));
        let per_sample = LibraryPart { fragment: Some((false, true, false)), ..fragment };
        assert_eq!(linked_kind(&[pre, per_sample], none), ordered(Ok(()), true));
        let silent = LibraryPart { sample_shading: None, ..fragment };
        assert_eq!(linked_kind(&[pre, silent], none), ordered(Ok(()), true));
    }

    /// An ordered fragment shader object draws in order only beside a
    /// vertex shader object that carries the instance index, with no
    /// tessellation, geometry or mesh object bound, and without early
    /// fragment tests (depth and stencil writes are dynamic state).
    #[test]
    fn shader_objects_are_ordered_from_their_partners() {
        let ok = BoundObjects { vertex: Some(Ok(())), extra: vk::ShaderStageFlags::empty() };
        assert_eq!(ok.order(false), Ok(()));
        assert!(ok.order(true).is_err());
        assert!(BoundObjects { vertex: None, ..ok }.order(false).is_err());
        assert_eq!(BoundObjects { vertex: Some(Err("writes")), ..ok }.order(false), Err("writes"));
        assert!(BoundObjects { extra: vk::ShaderStageFlags::GEOMETRY, ..ok }.order(false).is_err());
        // The vertex verdict is the pipelines' rule.
        let verdict = |kind| {
            pre_rasterization_verdict(
                &[vk::PipelineShaderStageCreateInfo::default().stage(vk::ShaderStageFlags::VERTEX)],
                &[Some(kind)],
            )
        };
        assert_eq!(verdict(ModuleKind::Vertex { side_effects: false, transform_feedback: false }), Ok(()));
        assert!(verdict(ModuleKind::Vertex { side_effects: true, transform_feedback: false }).is_err());
    }

    /// The rule that lets a fragment shader with early fragment tests be
    /// ordered: only a pipeline that cannot write depth or stencil.
    #[test]
    fn early_tests_order_only_without_depth_or_stencil_writes() {
        let test_only = vk::PipelineDepthStencilStateCreateInfo::default()
            .depth_test_enable(true)
            .depth_compare_op(vk::CompareOp::LESS);
        // No depth-stencil state (no attachment), a test without writes.
        assert!(!writes(None, &[]));
        assert!(!writes(Some(&test_only), &[]));
        // Writes, static or dynamic.
        assert!(writes(Some(&test_only.depth_write_enable(true)), &[]));
        assert!(writes(Some(&test_only), &[vk::DynamicState::DEPTH_WRITE_ENABLE]));
        // Depth writes need the depth test (dynamic counts as may).
        let no_test = vk::PipelineDepthStencilStateCreateInfo::default().depth_write_enable(true);
        assert!(!writes(Some(&no_test), &[]));
        assert!(writes(Some(&no_test), &[vk::DynamicState::DEPTH_TEST_ENABLE]));
        // Stencil: a test whose operations keep, or with no write mask, writes nothing.
        let keep = vk::StencilOpState::default()
            .fail_op(vk::StencilOp::KEEP)
            .pass_op(vk::StencilOp::KEEP)
            .depth_fail_op(vk::StencilOp::KEEP)
            .write_mask(!0);
        let incr = keep.pass_op(vk::StencilOp::INCREMENT_AND_CLAMP);
        let stencil = |front, back| test_only.stencil_test_enable(true).front(front).back(back);
        assert!(!writes(Some(&stencil(keep, keep)), &[]));
        assert!(writes(Some(&stencil(keep, incr)), &[]));
        assert!(!writes(Some(&stencil(incr.write_mask(0), incr.write_mask(0))), &[]));
        assert!(writes(Some(&stencil(keep, keep)), &[vk::DynamicState::STENCIL_OP]));
        assert!(!writes(Some(&test_only.front(incr).back(incr)), &[]));
        assert!(writes(Some(&test_only.front(incr).back(incr)), &[vk::DynamicState::STENCIL_TEST_ENABLE]));
    }
}

//! The layer's GPU objects for the density map's compositing and upscales
//! and for the GPU plan: pipelines made at first use (the plan's compute
//! shader, the upscale's render passes and draws, the composite's compute
//! shader), their set layouts and descriptor writes, and the buffers each
//! planned pass owns. `gpu_plan.rs` and `composite.rs` record with them.

use super::model::{aspect_of, Att};
use super::scratch::sampled;
use super::{memory_type, Fdm};
use ash::vk;
use std::collections::HashMap;

/// The layer's pipelines for the GPU plan (made at first use) and the
/// per-command-buffer objects each planned pass owns, by the descriptor pool
/// that goes with the command buffer's shadow pools.
#[derive(Default)]
pub struct Objects {
    made: bool,
    pub(super) plan_set_layout: vk::DescriptorSetLayout,
    pub(super) plan_layout: vk::PipelineLayout,
    pub(super) plan_pipeline: vk::Pipeline,
    sampler: vk::Sampler,
    pub(super) up_set_layout: vk::DescriptorSetLayout,
    pub(super) up_layout: vk::PipelineLayout,
    up_vs: vk::ShaderModule,
    up_fs: vk::ShaderModule,
    /// The upscale's fragment shaders for layered, multisampled, and layered
    /// multisampled scratch targets.
    up_array_fs: vk::ShaderModule,
    up_ms_fs: vk::ShaderModule,
    up_ms_array_fs: vk::ShaderModule,
    /// The same four writing the fragment's depth (plain, layered,
    /// multisampled, both).
    up_depth_fs: [vk::ShaderModule; 4],
    /// The region clears' pipeline per application render pass (null:
    /// not drawable), and their vertex shader then fragment shaders by
    /// colour count (`region_clears.rs`).
    pub(super) clears: HashMap<vk::RenderPass, vk::Pipeline>,
    pub(super) clear_modules: Vec<vk::ShaderModule>,
    /// Per colour format, whether the scratch target is layered, and its
    /// samples: the upscale's render pass and its pipeline per sample (one
    /// for a single-sampled target; per sample `i` one writing sample `i`
    /// only, through its sample mask, for a multisampled one).
    up: HashMap<(vk::Format, bool, vk::SampleCountFlags), Upscale>,
    /// The composite's compute shader (`composite.rs`, made at first
    /// use): its set layout (the scratch target sampled, the attachment
    /// stored), its layout, and its pipelines for a 2D and a layered scratch
    /// target.
    pub(super) cs_set_layout: vk::DescriptorSetLayout,
    pub(super) cs_layout: vk::PipelineLayout,
    /// (2D, layered) for the host plan's composite, then the same for the
    /// GPU plan's upscale (`PLAN`).
    cs_pipelines: [vk::Pipeline; 4],
    pub(super) owned: HashMap<vk::DescriptorPool, Owned>,
    /// Plan buffers of passes whose command buffers were reset or freed, with
    /// their memory and size: the next passes take them (an allocation per
    /// recorded pass costs more than the plan).
    free: Vec<(vk::Buffer, vk::DeviceMemory, u64)>,
    /// Blocks of device memory plan buffers are bound in (memory type, block,
    /// bytes used, size): one allocation for many passes, as a command
    /// buffer recording several planned passes needs a buffer for each
    /// before any returns. Their buffers return to `free` (uncapped: bounded
    /// by the passes recorded at once) and the blocks live with the device.
    blocks: Vec<(u32, vk::DeviceMemory, u64, u64)>,
}

/// The size of a block of plan-buffer memory (a buffer over a quarter of it
/// gets an allocation of its own).
const BLOCK: u64 = 4 << 20;

/// The upscale of one kind of attachment.
#[derive(Clone, Debug)]
pub(super) struct Upscale {
    pub(super) render_pass: vk::RenderPass,
    pub(super) pipelines: Vec<vk::Pipeline>,
    /// Its fragment shader samples the scratch target by normalized
    /// coordinates (the plain colour variant): its draws push their scratch
    /// target's extent.
    normalized: bool,
}

/// Free plan buffers kept at most.
const FREE_BUFFERS: usize = 16;

/// What one planned pass made for its command buffer.
pub(super) struct Owned {
    pub(super) buffer: vk::Buffer,
    memory: vk::DeviceMemory,
    size: u64,
    pub(super) framebuffers: Vec<vk::Framebuffer>,
    /// Per view of a multiview pass, a view of each stored attachment's layer;
    /// depth-aspect views of depth scratch targets.
    pub(super) views: Vec<vk::ImageView>,
}

impl Owned {
    /// Nothing made yet, for a buffer of `size` bytes.
    pub(super) fn new(size: u64) -> Owned {
        Owned {
            buffer: vk::Buffer::null(),
            memory: vk::DeviceMemory::null(),
            size,
            framebuffers: Vec::new(),
            views: Vec::new(),
        }
    }

    /// A 2D view of layer `layer` (relative to its view) of attachment `a`,
    /// owned here.
    ///
    /// # Safety
    /// `d` is the device of `a`'s image, which is alive.
    pub(super) unsafe fn layer_view(
        &mut self,
        d: &ash::Device,
        a: &Att,
        layer: u32,
    ) -> Result<vk::ImageView, vk::Result> {
        let range = vk::ImageSubresourceRange {
            base_array_layer: a.range.base_array_layer + layer,
            layer_count: 1,
            level_count: 1,
            ..a.range
        };
        let info = vk::ImageViewCreateInfo::default()
            .image(a.image)
            .view_type(vk::ImageViewType::TYPE_2D)
            .format(a.format)
            .subresource_range(range);
        // SAFETY: a create info built here from the attachment's image (alive: the caller's guarantee).
        self.views.push(unsafe { d.create_image_view(&info, None) }?);
        Ok(*self.views.last().unwrap())
    }

    /// A view of the depth aspect of `image`, a scratch target of depth
    /// attachment `a` (all its layers, as `a`'s view type), owned here: what
    /// the upscale samples.
    ///
    /// # Safety
    /// `d` is the device of `image`, which is alive.
    pub(super) unsafe fn depth_view(
        &mut self,
        d: &ash::Device,
        a: &Att,
        image: vk::Image,
    ) -> Result<vk::ImageView, vk::Result> {
        let range = vk::ImageSubresourceRange {
            aspect_mask: vk::ImageAspectFlags::DEPTH,
            base_mip_level: 0,
            level_count: 1,
            base_array_layer: 0,
            ..a.range
        };
        let info = vk::ImageViewCreateInfo::default()
            .image(image)
            .view_type(a.view_type)
            .format(a.format)
            .subresource_range(range);
        // SAFETY: a create info built here from the scratch target's image (alive: the caller's guarantee).
        self.views.push(unsafe { d.create_image_view(&info, None) }?);
        Ok(*self.views.last().unwrap())
    }
}

/// The upscale vertex shader's `choices` for its rectangle mode (the host
/// plan's composite, `composite.rs`).
pub(super) const RECTS: u32 = u32::MAX;

impl Objects {
    /// The objects of the pass that owns `pool` go (with it).
    ///
    /// # Safety
    /// No work using them is pending (the shadow pools' rule).
    pub unsafe fn release(&mut self, d: &ash::Device, pool: vk::DescriptorPool) {
        if let Some(mut o) = self.owned.remove(&pool) {
            // A buffer in a block (no memory of its own) always returns: the block's space is not reclaimed.
            let in_block = o.memory == vk::DeviceMemory::null();
            if (in_block || self.free.len() < FREE_BUFFERS) && o.buffer != vk::Buffer::null() {
                self.free.push((o.buffer, o.memory, o.size));
                (o.buffer, o.memory) = (vk::Buffer::null(), vk::DeviceMemory::null());
            }
            // SAFETY: the caller's guarantee.
            unsafe { destroy_owned(d, o) };
        }
    }

    /// # Safety
    /// The device is idle.
    pub unsafe fn destroy(&mut self, d: &ash::Device) {
        // SAFETY: the caller's guarantee; the layer's own objects (null ones are ignored).
        unsafe {
            for (b, m, _) in self.free.drain(..) {
                d.destroy_buffer(b, None);
                d.free_memory(m, None);
            }
            for (_, m, _, _) in self.blocks.drain(..) {
                d.free_memory(m, None);
            }
            for (_, o) in self.owned.drain() {
                destroy_owned(d, o);
            }
            self.destroy_common(d);
        }
    }

    /// The pipelines and what they are made of.
    ///
    /// # Safety
    /// No work using them is pending.
    unsafe fn destroy_common(&mut self, d: &ash::Device) {
        // SAFETY: the caller's guarantee; the layer's own objects (null ones are ignored).
        unsafe {
            for (_, u) in self.up.drain() {
                for p in u.pipelines {
                    d.destroy_pipeline(p, None);
                }
                d.destroy_render_pass(u.render_pass, None);
            }
            for (_, p) in self.clears.drain() {
                d.destroy_pipeline(p, None);
            }
            for m in self.clear_modules.drain(..) {
                d.destroy_shader_module(m, None);
            }
            for p in self.cs_pipelines.into_iter().chain([self.plan_pipeline]) {
                d.destroy_pipeline(p, None);
            }
            // The composite's, the plan's and the upscale's layouts.
            for l in [self.cs_layout, self.plan_layout, self.up_layout] {
                d.destroy_pipeline_layout(l, None);
            }
            for l in [self.cs_set_layout, self.plan_set_layout, self.up_set_layout] {
                d.destroy_descriptor_set_layout(l, None);
            }
            d.destroy_sampler(self.sampler, None);
            for m in [self.up_vs, self.up_fs, self.up_array_fs, self.up_ms_fs, self.up_ms_array_fs]
                .iter()
                .chain(&self.up_depth_fs)
            {
                let m = *m;
                d.destroy_shader_module(m, None);
            }
        }
        let (owned, free, blocks) =
            (std::mem::take(&mut self.owned), std::mem::take(&mut self.free), std::mem::take(&mut self.blocks));
        *self = Objects { owned, free, blocks, ..Objects::default() };
    }
}

/// # Safety
/// No work using `o` is pending.
pub(super) unsafe fn destroy_owned(d: &ash::Device, o: Owned) {
    // SAFETY: the caller's guarantee.
    unsafe {
        for fb in o.framebuffers {
            d.destroy_framebuffer(fb, None);
        }
        for v in o.views {
            d.destroy_image_view(v, None);
        }
        d.destroy_buffer(o.buffer, None);
        d.free_memory(o.memory, None);
    }
}

pub(super) fn words(code: &[u8]) -> Vec<u32> {
    code.chunks_exact(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect()
}

/// The compute pipeline of the layer's `code` (entry point `main`) under
/// `layout`.
///
/// # Safety
/// `d` is the device of `layout`; `code` is valid SPIR-V whose interface
/// `layout` matches.
unsafe fn compute_pipeline(
    d: &ash::Device,
    code: &[u32],
    layout: vk::PipelineLayout,
) -> Result<vk::Pipeline, vk::Result> {
    // SAFETY: the caller's guarantee; the module is destroyed once the pipeline is made.
    unsafe {
        let module = d.create_shader_module(&vk::ShaderModuleCreateInfo::default().code(code), None)?;
        let stage = vk::PipelineShaderStageCreateInfo::default()
            .stage(vk::ShaderStageFlags::COMPUTE)
            .module(module)
            .name(c"main");
        let made = d.create_compute_pipelines(
            vk::PipelineCache::null(),
            &[vk::ComputePipelineCreateInfo::default().stage(stage).layout(layout)],
            None,
        );
        d.destroy_shader_module(module, None);
        Ok(made.map_err(|(_, e)| e)?[0])
    }
}

/// `n` sets of `set_layout` from `pool`.
///
/// # Safety
/// `d` is the device of `pool` and `set_layout`.
pub(super) unsafe fn allocate_sets(
    d: &ash::Device,
    pool: vk::DescriptorPool,
    set_layout: vk::DescriptorSetLayout,
    n: usize,
) -> Result<Vec<vk::DescriptorSet>, vk::Result> {
    let sl = vec![set_layout; n];
    // SAFETY: an allocate info built here from the caller's pool and layout.
    unsafe {
        d.allocate_descriptor_sets(&vk::DescriptorSetAllocateInfo::default().descriptor_pool(pool).set_layouts(&sl))
    }
}

/// One descriptor of type `ty` at `binding`, for `stages`.
fn binding(
    binding: u32,
    ty: vk::DescriptorType,
    stages: vk::ShaderStageFlags,
) -> vk::DescriptorSetLayoutBinding<'static> {
    vk::DescriptorSetLayoutBinding::default()
        .binding(binding)
        .descriptor_type(ty)
        .descriptor_count(1)
        .stage_flags(stages)
}

/// A pipeline layout of the layer's: one set layout and one push-constant
/// range of `size` bytes at offset 0 for `stages`.
///
/// # Safety
/// `set_layout` is a live set layout of `d`.
unsafe fn pipeline_layout(
    d: &ash::Device,
    set_layout: vk::DescriptorSetLayout,
    (stages, size): (vk::ShaderStageFlags, u32),
) -> Result<vk::PipelineLayout, vk::Result> {
    let push = [vk::PushConstantRange { stage_flags: stages, offset: 0, size }];
    let sl = [set_layout];
    let info = vk::PipelineLayoutCreateInfo::default().set_layouts(&sl).push_constant_ranges(&push);
    // SAFETY: a create info built here of the caller's live set layout.
    unsafe { d.create_pipeline_layout(&info, None) }
}

/// Words of the composite's push constants: the dispatch's first rectangle
/// and their count, where the table's first-tile words start, the
/// dispatch's tiles, log2 of the area (x, y), the scratch target's layer;
/// for the GPU plan's upscale (`plan`) log2 of the area, the area's index,
/// the layer, the region columns, where the bounds and the choices start,
/// the regions and the view.
pub(super) const COMPOSITE_PUSH: usize = 9;

/// The composite's compute pipeline for a 2D or (`layered`) layered
/// scratch target, made at first use with its layouts; with `plan`, the GPU
/// plan's upscale in the same shader.
///
/// # Safety
/// `d` is `o`'s device; [`make_common`] made `o`'s sampler.
pub(super) unsafe fn composite_pipeline(
    d: &ash::Device,
    o: &mut Objects,
    layered: bool,
    plan: bool,
) -> Result<vk::Pipeline, vk::Result> {
    let k = usize::from(layered) + 2 * usize::from(plan);
    if o.cs_pipelines[k] != vk::Pipeline::null() {
        return Ok(o.cs_pipelines[k]);
    }
    // SAFETY: create infos built here from locals and the layer's embedded SPIR-V (validated by its build); what
    // is made stays in `o`, destroyed with it (null handles are ignored).
    unsafe {
        if o.cs_layout == vk::PipelineLayout::null() {
            let samplers = [o.sampler];
            let compute = vk::ShaderStageFlags::COMPUTE;
            let bindings = [
                binding(0, vk::DescriptorType::COMBINED_IMAGE_SAMPLER, compute).immutable_samplers(&samplers),
                binding(1, vk::DescriptorType::STORAGE_IMAGE, compute),
                binding(2, vk::DescriptorType::STORAGE_BUFFER, compute),
            ];
            o.cs_set_layout = d.create_descriptor_set_layout(
                &vk::DescriptorSetLayoutCreateInfo::default().bindings(&bindings),
                None,
            )?;
            let push = (vk::ShaderStageFlags::COMPUTE, (COMPOSITE_PUSH * 4) as u32);
            o.cs_layout = pipeline_layout(d, o.cs_set_layout, push)?;
        }
        use overlap_shaders::fdm::{
            COMPOSITE_ARRAY_COMP, COMPOSITE_COMP, COMPOSITE_PLAN_ARRAY_COMP, COMPOSITE_PLAN_COMP,
        };
        let code = words([COMPOSITE_COMP, COMPOSITE_ARRAY_COMP, COMPOSITE_PLAN_COMP, COMPOSITE_PLAN_ARRAY_COMP][k]);
        o.cs_pipelines[k] = compute_pipeline(d, &code, o.cs_layout)?;
    }
    Ok(o.cs_pipelines[k])
}

/// Makes the pipelines shared by every format (once).
///
/// # Safety
/// `d` is `f`'s device.
pub(super) unsafe fn make_common(d: &ash::Device, o: &mut Objects) -> Result<(), vk::Result> {
    if o.made {
        return Ok(());
    }
    // SAFETY: the caller's guarantee.
    let made = unsafe { try_make_common(d, o) };
    if made.is_err() {
        // What was made goes (null handles are ignored), so the next pass tries again from nothing.
        // SAFETY: the layer's own objects, just made, never used.
        unsafe { o.destroy_common(d) };
    }
    made
}

/// # Safety
/// As [`make_common`].
unsafe fn try_make_common(d: &ash::Device, o: &mut Objects) -> Result<(), vk::Result> {
    // SAFETY: create infos built here from locals and the layer's embedded SPIR-V (validated by its build).
    unsafe {
        let storage = [vk::DescriptorSetLayoutBinding::default()
            .binding(0)
            .descriptor_type(vk::DescriptorType::STORAGE_BUFFER)
            .descriptor_count(1)
            .stage_flags(vk::ShaderStageFlags::COMPUTE)];
        o.plan_set_layout =
            d.create_descriptor_set_layout(&vk::DescriptorSetLayoutCreateInfo::default().bindings(&storage), None)?;
        o.plan_layout = pipeline_layout(d, o.plan_set_layout, (vk::ShaderStageFlags::COMPUTE, 48))?;
        let code = words(overlap_shaders::fdm::GPU_PLAN_COMP);
        o.plan_pipeline = compute_pipeline(d, &code, o.plan_layout)?;
        o.sampler = d.create_sampler(
            &vk::SamplerCreateInfo::default()
                .mag_filter(vk::Filter::NEAREST)
                .min_filter(vk::Filter::NEAREST)
                .address_mode_u(vk::SamplerAddressMode::CLAMP_TO_EDGE)
                .address_mode_v(vk::SamplerAddressMode::CLAMP_TO_EDGE)
                .address_mode_w(vk::SamplerAddressMode::CLAMP_TO_EDGE),
            None,
        )?;
        let samplers = [o.sampler];
        let sampled = [
            binding(0, vk::DescriptorType::COMBINED_IMAGE_SAMPLER, vk::ShaderStageFlags::FRAGMENT)
                .immutable_samplers(&samplers),
            binding(1, vk::DescriptorType::STORAGE_BUFFER, vk::ShaderStageFlags::VERTEX),
        ];
        o.up_set_layout =
            d.create_descriptor_set_layout(&vk::DescriptorSetLayoutCreateInfo::default().bindings(&sampled), None)?;
        // Ten words, the sample index, the scratch target's extent (`fdm_upscale.vert`).
        let push = (vk::ShaderStageFlags::VERTEX | vk::ShaderStageFlags::FRAGMENT, 52);
        o.up_layout = pipeline_layout(d, o.up_set_layout, push)?;
        let vs = words(overlap_shaders::fdm::UPSCALE_VERT);
        o.up_vs = d.create_shader_module(&vk::ShaderModuleCreateInfo::default().code(&vs), None)?;
        let fs = words(overlap_shaders::fdm::UPSCALE_FRAG);
        o.up_fs = d.create_shader_module(&vk::ShaderModuleCreateInfo::default().code(&fs), None)?;
        for (code, module) in [
            (overlap_shaders::fdm::UPSCALE_ARRAY_FRAG, &mut o.up_array_fs),
            (overlap_shaders::fdm::UPSCALE_MS_FRAG, &mut o.up_ms_fs),
            (overlap_shaders::fdm::UPSCALE_MS_ARRAY_FRAG, &mut o.up_ms_array_fs),
        ] {
            let fs = words(code);
            *module = d.create_shader_module(&vk::ShaderModuleCreateInfo::default().code(&fs), None)?;
        }
        let depth = [
            overlap_shaders::fdm::UPSCALE_DEPTH_FRAG,
            overlap_shaders::fdm::UPSCALE_DEPTH_ARRAY_FRAG,
            overlap_shaders::fdm::UPSCALE_DEPTH_MS_FRAG,
            overlap_shaders::fdm::UPSCALE_DEPTH_MS_ARRAY_FRAG,
        ];
        for (code, module) in depth.into_iter().zip(&mut o.up_depth_fs) {
            let fs = words(code);
            *module = d.create_shader_module(&vk::ShaderModuleCreateInfo::default().code(&fs), None)?;
        }
    }
    o.made = true;
    Ok(())
}

/// A device-local buffer of at least `owned.size` bytes for `owned`: a
/// free one of an earlier pass, or a new one (storage, transfer destination
/// and, where the device has conditional rendering, its predicates; vertex
/// input under viewport masks) bound in a block of [`BLOCK`] bytes shared
/// with other plan buffers (one over a quarter of a block in memory of its
/// own).
///
/// # Safety
/// `o` is `f`'s table; `owned` has no buffer yet.
pub(super) unsafe fn take_buffer(f: &Fdm, o: &mut Objects, owned: &mut Owned) -> Result<(), vk::Result> {
    if let Some(k) = o.free.iter().position(|x| x.2 >= owned.size) {
        let (b, m, s) = o.free.swap_remove(k);
        (owned.buffer, owned.memory, owned.size) = (b, m, s);
        return Ok(());
    }
    // Through the next layer alone, as every object of the table (destroyed through it).
    let d = f.raw.as_ref().ok_or(vk::Result::ERROR_INITIALIZATION_FAILED)?;
    let mut usage =
        vk::BufferUsageFlags::STORAGE_BUFFER | vk::BufferUsageFlags::TRANSFER_DST | vk::BufferUsageFlags::TRANSFER_SRC;
    if f.conditional.is_some() {
        usage |= vk::BufferUsageFlags::CONDITIONAL_RENDERING_EXT;
    }
    if f.masks.is_some() {
        // The plan's viewport masks are read as a vertex attribute (`gpu_plan::Recording::masked_replays`).
        usage |= vk::BufferUsageFlags::VERTEX_BUFFER;
    }
    // SAFETY: create infos built here from locals; the handles are the layer's own, made just above (the caller
    // destroys them with `owned` on failure).
    unsafe {
        owned.buffer = d.create_buffer(&vk::BufferCreateInfo::default().size(owned.size).usage(usage), None)?;
        let req = d.get_buffer_memory_requirements(owned.buffer);
        let ty = memory_type(f, req.memory_type_bits, vk::MemoryPropertyFlags::DEVICE_LOCAL)
            .ok_or(vk::Result::ERROR_OUT_OF_DEVICE_MEMORY)?;
        let allocate = |size: u64| {
            d.allocate_memory(&vk::MemoryAllocateInfo::default().allocation_size(size).memory_type_index(ty), None)
        };
        if req.size > BLOCK / 4 {
            owned.memory = allocate(req.size)?;
            d.bind_buffer_memory(owned.buffer, owned.memory, 0)?;
            return Ok(());
        }
        let align = req.alignment.max(1);
        let fits = |(t, _, used, size): &(u32, vk::DeviceMemory, u64, u64)| {
            *t == ty && used.next_multiple_of(align) + req.size <= *size
        };
        let k = match o.blocks.iter().position(fits) {
            Some(k) => k,
            None => {
                o.blocks.push((ty, allocate(BLOCK)?, 0, BLOCK));
                o.blocks.len() - 1
            }
        };
        let (_, memory, used, _) = &mut o.blocks[k];
        let at = used.next_multiple_of(align);
        d.bind_buffer_memory(owned.buffer, *memory, at)?;
        *used = at + req.size;
    }
    Ok(())
}

/// The upscale's render pass and pipelines for colour or depth `format` at
/// `samples`, reading scratch targets that are layered or not (made once).
/// A depth format's pass writes depth (test ALWAYS), its stencil kept.
///
/// # Safety
/// `d` is `f`'s device; [`make_common`] succeeded on `o`.
pub(super) unsafe fn upscale_pipeline(
    d: &ash::Device,
    o: &mut Objects,
    format: vk::Format,
    layered: bool,
    samples: vk::SampleCountFlags,
) -> Result<Upscale, vk::Result> {
    if let Some(x) = o.up.get(&(format, layered, samples)) {
        return Ok(x.clone());
    }
    let depth = aspect_of(format).contains(vk::ImageAspectFlags::DEPTH);
    let layout = upscale_layout(depth).1;
    let att = [vk::AttachmentDescription::default()
        .format(format)
        .samples(samples)
        .load_op(vk::AttachmentLoadOp::LOAD)
        .store_op(vk::AttachmentStoreOp::STORE)
        .stencil_load_op(vk::AttachmentLoadOp::LOAD)
        .stencil_store_op(vk::AttachmentStoreOp::STORE)
        .initial_layout(layout)
        .final_layout(layout)];
    let refs = [vk::AttachmentReference { attachment: 0, layout }];
    let sub = [if depth {
        vk::SubpassDescription::default()
            .pipeline_bind_point(vk::PipelineBindPoint::GRAPHICS)
            .depth_stencil_attachment(&refs[0])
    } else {
        vk::SubpassDescription::default().pipeline_bind_point(vk::PipelineBindPoint::GRAPHICS).color_attachments(&refs)
    }];
    let ms = samples != vk::SampleCountFlags::TYPE_1;
    let fs = match (depth, layered, ms) {
        (false, false, false) => o.up_fs,
        (false, true, false) => o.up_array_fs,
        (false, false, true) => o.up_ms_fs,
        (false, true, true) => o.up_ms_array_fs,
        (true, l, m) => o.up_depth_fs[l as usize + 2 * m as usize],
    };
    let normalized = fs == o.up_fs;
    let mut made = Upscale { render_pass: vk::RenderPass::null(), pipelines: Vec::new(), normalized };
    // SAFETY: create infos built here from locals; the modules and layout are the layer's own (make_common); what
    // was made is destroyed on failure.
    let r = (|| unsafe {
        made.render_pass =
            d.create_render_pass(&vk::RenderPassCreateInfo::default().attachments(&att).subpasses(&sub), None)?;
        let stages = [
            vk::PipelineShaderStageCreateInfo::default()
                .stage(vk::ShaderStageFlags::VERTEX)
                .module(o.up_vs)
                .name(c"main"),
            vk::PipelineShaderStageCreateInfo::default().stage(vk::ShaderStageFlags::FRAGMENT).module(fs).name(c"main"),
        ];
        let blend = [vk::PipelineColorBlendAttachmentState::default().color_write_mask(vk::ColorComponentFlags::RGBA)];
        let cb = vk::PipelineColorBlendStateCreateInfo::default().attachments(if depth { &[] } else { &blend });
        let dynamic = [vk::DynamicState::VIEWPORT, vk::DynamicState::SCISSOR];
        let dss = vk::PipelineDepthStencilStateCreateInfo::default()
            .depth_test_enable(true)
            .depth_write_enable(true)
            .depth_compare_op(vk::CompareOp::ALWAYS);
        for i in 0..samples.as_raw().max(1) {
            let mask = [1u32 << i];
            let mut msi = vk::PipelineMultisampleStateCreateInfo::default().rasterization_samples(samples);
            if ms {
                msi = msi.sample_mask(&mask);
            }
            let state = Drawn { stages: &stages, msi: &msi, blend: &cb, dss: depth.then_some(&dss), dynamic: &dynamic };
            made.pipelines.push(graphics_pipeline(d, &state, o.up_layout, made.render_pass)?);
            if !ms {
                break;
            }
        }
        Ok(())
    })();
    if let Err(e) = r {
        // SAFETY: the objects just made by the layer, never used.
        unsafe {
            for p in made.pipelines {
                d.destroy_pipeline(p, None);
            }
            d.destroy_render_pass(made.render_pass, None);
        }
        return Err(e);
    }
    o.up.insert((format, layered, samples), made.clone());
    Ok(made)
}

/// What differs between the layer's draws of screen rectangles (the
/// upscale's, the region clears'): their stages, multisampling, blending,
/// depth and stencil (none: no depth/stencil attachment) and dynamic states.
pub(super) struct Drawn<'a> {
    pub(super) stages: &'a [vk::PipelineShaderStageCreateInfo<'a>],
    pub(super) msi: &'a vk::PipelineMultisampleStateCreateInfo<'a>,
    pub(super) blend: &'a vk::PipelineColorBlendStateCreateInfo<'a>,
    pub(super) dss: Option<&'a vk::PipelineDepthStencilStateCreateInfo<'a>>,
    pub(super) dynamic: &'a [vk::DynamicState],
}

/// A pipeline of the layer's for subpass 0 of `render_pass` under `layout`:
/// no vertex input, a triangle list, one (dynamic) viewport and scissor,
/// filled and not culled, the rest `state`'s.
///
/// # Safety
/// `d` is a device; `state`'s modules, `layout` and `render_pass` are its
/// own and alive.
pub(super) unsafe fn graphics_pipeline(
    d: &ash::Device,
    state: &Drawn,
    layout: vk::PipelineLayout,
    render_pass: vk::RenderPass,
) -> Result<vk::Pipeline, vk::Result> {
    let vi = vk::PipelineVertexInputStateCreateInfo::default();
    let ia = vk::PipelineInputAssemblyStateCreateInfo::default().topology(vk::PrimitiveTopology::TRIANGLE_LIST);
    let vp = vk::PipelineViewportStateCreateInfo::default().viewport_count(1).scissor_count(1);
    let rs = vk::PipelineRasterizationStateCreateInfo::default()
        .polygon_mode(vk::PolygonMode::FILL)
        .cull_mode(vk::CullModeFlags::NONE)
        .line_width(1.0);
    let ds = vk::PipelineDynamicStateCreateInfo::default().dynamic_states(state.dynamic);
    let mut info = vk::GraphicsPipelineCreateInfo::default()
        .stages(state.stages)
        .vertex_input_state(&vi)
        .input_assembly_state(&ia)
        .viewport_state(&vp)
        .rasterization_state(&rs)
        .multisample_state(state.msi)
        .color_blend_state(state.blend)
        .dynamic_state(&ds)
        .layout(layout)
        .render_pass(render_pass)
        .subpass(0);
    if let Some(dss) = state.dss {
        info = info.depth_stencil_state(dss);
    }
    // SAFETY: the caller's guarantee; the create info and its chain are locals and `state`'s.
    let p = unsafe { d.create_graphics_pipelines(vk::PipelineCache::null(), &[info], None) }.map_err(|(_, e)| e)?;
    Ok(p[0])
}

/// One draw of an upscale render pass: its set (an area's scratch target,
/// the table), its push constants but the sample index and the scratch
/// target's extent (`size`), its instances.
pub(super) struct UpscaleDraw {
    pub(super) set: vk::DescriptorSet,
    pub(super) words: [u32; 10],
    pub(super) size: [u32; 2],
    pub(super) first: u32,
    pub(super) count: u32,
}

/// Records one upscale render pass of `u` over `framebuffer` (`render_area`
/// its render area and scissor, `viewport`): per sample of a multisampled
/// attachment a pipeline writing that sample only, then `draws`, each
/// pushed with the sample index after its words, then its scratch target's
/// extent where `u` samples by normalized coordinates (else zeros).
///
/// # Safety
/// `cb` is recording outside a render pass on `d`; `u`, `framebuffer`,
/// `layout` and the draws' sets are the layer's own, made on `d` for the
/// images the barriers before put in the upscale's layouts.
pub(super) unsafe fn record_upscale_pass(
    d: &ash::Device,
    cb: vk::CommandBuffer,
    u: &Upscale,
    framebuffer: vk::Framebuffer,
    (render_area, viewport): (vk::Rect2D, vk::Viewport),
    layout: vk::PipelineLayout,
    draws: &[UpscaleDraw],
) {
    let stages = vk::ShaderStageFlags::VERTEX | vk::ShaderStageFlags::FRAGMENT;
    // SAFETY: the caller's guarantee.
    unsafe {
        d.cmd_begin_render_pass(
            cb,
            &vk::RenderPassBeginInfo::default()
                .render_pass(u.render_pass)
                .framebuffer(framebuffer)
                .render_area(render_area),
            vk::SubpassContents::INLINE,
        );
        for (sample, &pipeline) in u.pipelines.iter().enumerate() {
            d.cmd_bind_pipeline(cb, vk::PipelineBindPoint::GRAPHICS, pipeline);
            d.cmd_set_viewport(cb, 0, &[viewport]);
            d.cmd_set_scissor(cb, 0, &[render_area]);
            for draw in draws {
                d.cmd_bind_descriptor_sets(cb, vk::PipelineBindPoint::GRAPHICS, layout, 0, &[draw.set], &[]);
                let size = if u.normalized { draw.size } else { [0; 2] };
                let pc: Vec<u8> =
                    draw.words.iter().chain(&[sample as u32]).chain(&size).flat_map(|w| w.to_le_bytes()).collect();
                d.cmd_push_constants(cb, layout, stages, 0, &pc);
                d.cmd_draw(cb, 6, draw.count, 0, draw.first);
            }
        }
        d.cmd_end_render_pass(cb);
    }
}

/// The layouts of the upscale: the scratch target's, sampled, and the real
/// attachment's, drawn (a depth attachment's or a colour one's).
pub(super) fn upscale_layout(depth: bool) -> (vk::ImageLayout, vk::ImageLayout) {
    if depth {
        (vk::ImageLayout::DEPTH_STENCIL_READ_ONLY_OPTIMAL, vk::ImageLayout::DEPTH_STENCIL_ATTACHMENT_OPTIMAL)
    } else {
        (vk::ImageLayout::SHADER_READ_ONLY_OPTIMAL, vk::ImageLayout::COLOR_ATTACHMENT_OPTIMAL)
    }
}

/// Whether the upscale (the GPU plan's, the composite's) can take
/// attachment `a`'s view: a 2D one, or in a multiview (or per-layer) pass
/// an array one, a layer per view.
pub(super) fn upscale_reads_view(a: &Att, multiview: bool) -> bool {
    a.view_type == vk::ImageViewType::TYPE_2D || multiview && a.view_type == vk::ImageViewType::TYPE_2D_ARRAY
}

/// Whether the upscale can write stored attachment `a`: its scratch target
/// is made sampled ([`sampled`]: colour that is not integer, or depth, at a
/// sample count the driver samples) and its format is drawn as its kind of
/// attachment (a multisampled one sample by sample).
pub(super) fn upscale_draws(f: &Fdm, a: &Att) -> bool {
    let attachment = if a.range.aspect_mask == vk::ImageAspectFlags::COLOR {
        vk::FormatFeatureFlags::COLOR_ATTACHMENT
    } else {
        vk::FormatFeatureFlags::DEPTH_STENCIL_ATTACHMENT
    };
    f.format_features(a.format).contains(vk::FormatFeatureFlags::SAMPLED_IMAGE | attachment)
        && !sampled(f, a).is_empty()
}

/// Writes a set of the composite's compute shader: the scratch target
/// sampled, the attachment's `storage` view stored, the table or plan
/// buffer `bi`.
///
/// # Safety
/// `set` is of the composite's set layout, not in use; the views and the
/// buffer are alive.
pub(super) unsafe fn write_composite_set(
    d: &ash::Device,
    set: vk::DescriptorSet,
    (scratch, storage): (vk::ImageView, vk::ImageView),
    bi: &[vk::DescriptorBufferInfo],
) {
    let sampled = [vk::DescriptorImageInfo {
        sampler: vk::Sampler::null(),
        image_view: scratch,
        image_layout: upscale_layout(false).0,
    }];
    let stored = [vk::DescriptorImageInfo {
        sampler: vk::Sampler::null(),
        image_view: storage,
        image_layout: vk::ImageLayout::GENERAL,
    }];
    let write = |binding, ty| vk::WriteDescriptorSet::default().dst_set(set).dst_binding(binding).descriptor_type(ty);
    let writes = [
        write(0, vk::DescriptorType::COMBINED_IMAGE_SAMPLER).image_info(&sampled),
        write(1, vk::DescriptorType::STORAGE_IMAGE).image_info(&stored),
        write(2, vk::DescriptorType::STORAGE_BUFFER).buffer_info(bi),
    ];
    // SAFETY: the caller's guarantee.
    unsafe { d.update_descriptor_sets(&writes, &[]) };
}

/// The write of the plan buffer (`bi`) to `binding` of `set`.
pub(super) fn storage_write(
    set: vk::DescriptorSet,
    binding: u32,
    bi: &[vk::DescriptorBufferInfo],
) -> vk::WriteDescriptorSet<'_> {
    vk::WriteDescriptorSet::default()
        .dst_set(set)
        .dst_binding(binding)
        .descriptor_type(vk::DescriptorType::STORAGE_BUFFER)
        .buffer_info(bi)
}

/// Writes an upscale set: `image_view` (a scratch target's, of a depth
/// attachment with `depth`) sampled at binding 0, the table `bi` at 1.
///
/// # Safety
/// `set`, `image_view` and `bi`'s buffer are live objects of `d`.
pub(super) unsafe fn write_upscale_set(
    d: &ash::Device,
    set: vk::DescriptorSet,
    image_view: vk::ImageView,
    depth: bool,
    bi: &[vk::DescriptorBufferInfo],
) {
    let ii =
        [vk::DescriptorImageInfo { sampler: vk::Sampler::null(), image_view, image_layout: upscale_layout(depth).0 }];
    let writes = [
        vk::WriteDescriptorSet::default()
            .dst_set(set)
            .dst_binding(0)
            .descriptor_type(vk::DescriptorType::COMBINED_IMAGE_SAMPLER)
            .image_info(&ii),
        storage_write(set, 1, bi),
    ];
    // SAFETY: writes built here of live objects (the caller's guarantee).
    unsafe { d.update_descriptor_sets(&writes, &[]) };
}

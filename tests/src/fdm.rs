//! Fragment density map scenes for `overlap-testapp fdm`: a density map
//! with regions of density 1, ½ and ¼, rendered through a render pass
//! (`vkCreateRenderPass` or `vkCreateRenderPass2`) or dynamic rendering, at
//! 1 or 4 samples, and the checks the CTS's `fragment_density_map` groups
//! make, written from the spec:
//!
//! - every pixel's `FragSizeEXT` is a power of two no larger than the area
//!   its density-map texel asks for (the spec's texel size formula);
//! - pixels sharing a fragment id (its framebuffer-space `FragCoord`) form
//!   one aligned block of exactly that area: no colour appears more than
//!   area times, and `FragCoord` is the fragment's centre;
//! - each region equals the scene rendered without a density map at the
//!   region's resolution and scaled up (rendered here, separately);
//! - density 1 everywhere is bit-identical to no density map.

pub use crate::draw_kind::DrawKind;
use crate::draw_kind::Draws;
use crate::render::{color_range, Gpu};
use ash::vk;
use std::ffi::c_void;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Path {
    RenderPass,
    RenderPass2,
    Dynamic,
}

pub const PATHS: [Path; 3] = [Path::RenderPass, Path::RenderPass2, Path::Dynamic];

/// Density per texel (R8G8_UNORM): columns of 1x1, 2x1, 1x2, then 2x2 above
/// and 4x4 below.
pub fn regions(mw: u32, mh: u32) -> Vec<[u8; 2]> {
    let mut v = Vec::new();
    for y in 0..mh {
        for x in 0..mw {
            let q = x * 4 / mw;
            v.push(match q {
                0 => [255, 255],
                1 => [127, 255],
                2 => [255, 127],
                _ if y < mh / 2 => [127, 127],
                _ => [60, 60],
            });
        }
    }
    v
}

/// Square rings around the map's centre, as a foveated renderer asks: 1x1
/// within a quarter of the half-size, 2x2 within a half, 4x4 beyond (each
/// ring four rectangles of bins).
pub fn rings(mw: u32, mh: u32) -> Vec<[u8; 2]> {
    let mut v = Vec::new();
    for y in 0..mh {
        for x in 0..mw {
            let dx = (2 * x + 1).abs_diff(mw) as f32 / mw as f32;
            let dy = (2 * y + 1).abs_diff(mh) as f32 / mh as f32;
            let d = dx.max(dy);
            v.push(if d < 0.25 {
                [255, 255]
            } else if d < 0.5 {
                [127, 127]
            } else {
                [60, 60]
            });
        }
    }
    v
}

/// The area a texel asks for (largest power of two ≤ 1/density, at most 4).
pub fn requested(d: u8) -> u32 {
    let mut a = 1;
    while a < 4 && (a * 2) * d as u32 <= 255 {
        a *= 2;
    }
    a
}

pub struct Map {
    pub width: u32,
    pub height: u32,
    pub texels: Vec<[u8; 2]>,
}

pub struct Scene<'a> {
    pub path: Path,
    pub samples: u32,
    pub size: (u32, u32),
    /// The viewport (the framebuffer's size, or a scaled one for references).
    pub viewport: (f32, f32),
    pub vs: &'a [u8],
    pub fs: &'a [u8],
    pub vertices: u32,
    pub map: Option<&'a Map>,
    /// An existing density map (its view; in FRAGMENT_DENSITY_MAP_OPTIMAL),
    /// used instead of one made from `map` (which then only gives its size).
    pub map_view: Option<vk::ImageView>,
    /// Record an occlusion query around the draw (inside the pass).
    pub query: bool,
    /// Count fragment-shader invocations with a pipeline-statistics query
    /// begun before the pass and ended after it (outside it, so the pass can
    /// still be binned): a count the driver makes, not the layer.
    pub stats: bool,
    /// Passes recorded (the benchmark's frames).
    pub repeat: u32,
    /// Draws per pass.
    pub draws: u32,
    /// Contents the colour attachment loads (instead of a clear).
    pub load: Option<&'a [[u8; 4]]>,
    /// A D32 depth attachment, cleared to 1, depth test LESS.
    pub depth: bool,
    /// With `depth`, the attachment is D32S8 and its stencil cleared to
    /// [`STENCIL_CLEAR`] (not stored) under a stencil test EQUAL to it:
    /// a pixel whose stencil was not cleared is not shaded.
    pub stencil: bool,
    /// The draw is recorded in a secondary command buffer (render passes).
    pub secondary: bool,
    /// Dynamic depth compare op (extended dynamic state), changed between
    /// two draws of three vertices: LESS, then GREATER.
    pub compare_ops: bool,
    /// The fragment shader counts its invocations in a storage buffer (set 0).
    pub storage: bool,
    /// A second subpass running this fragment shader over the first
    /// subpass's colour, read as an input attachment (render passes, 1 sample).
    pub second_fs: Option<&'a [u8]>,
    /// An imageless framebuffer (render passes): attachments named at begin.
    pub imageless: bool,
    /// The descriptor set layouts are destroyed once the sets are written and
    /// the pipelines made, before anything is recorded (the spec allows it).
    pub destroy_set_layouts: bool,
    /// The input attachment's set layout is destroyed inside the pass, after
    /// the second subpass bound its set and drew (the spec allows it).
    pub destroy_set_layouts_in_pass: bool,
    /// An existing RGBA8 colour target (1 sample; colour attachment and
    /// transfer usages) rendered into instead of one made for this render,
    /// and left alive after it.
    pub target: Option<(vk::Image, vk::DeviceMemory, vk::ImageView)>,
    /// The pipeline is bound in the first pass only: later passes (`repeat`)
    /// draw with what the application left bound (the spec keeps it).
    pub bind_once: bool,
    /// The GPU writes this map into this density-map image in the same
    /// command buffer, before each pass (a copy from a buffer, then the
    /// barrier to the density-map stage): what a dynamic map's plan must
    /// follow, unlike the image's contents when the pass is recorded.
    pub map_write: Option<(vk::Image, &'a Map)>,
    /// A compute pipeline writing 42 into a buffer is bound (with its set)
    /// before each pass and dispatched after it without binding again
    /// ([`Rendered::marker`]).
    pub compute_marker: bool,
    /// The pass is recorded inside the application's own conditional
    /// rendering on a predicate of this value (the device enabled
    /// `VK_EXT_conditional_rendering`).
    pub app_conditional: Option<u32>,
    /// The command every draw of the pass goes down as (the same vertices
    /// and instances: the same picture).
    pub draw_kind: DrawKind,
    /// Before each pass after the first (`repeat`), outside it, a pipeline
    /// whose viewport is a 2x2 replay's (half the framebuffer's) is bound:
    /// what a layer that left a replay's state bound after the pass would
    /// leave. A planted fault (the control of the matrix's
    /// `state_after_pass`, with `bind_once`).
    pub plant_replay_state: bool,
}

impl<'a> Scene<'a> {
    pub fn new(path: Path, size: (u32, u32), vs: &'a [u8], fs: &'a [u8], vertices: u32) -> Scene<'a> {
        Scene {
            path,
            samples: 1,
            size,
            viewport: (size.0 as f32, size.1 as f32),
            vs,
            fs,
            vertices,
            map: None,
            map_view: None,
            query: false,
            stats: false,
            repeat: 1,
            draws: 1,
            load: None,
            depth: false,
            stencil: false,
            secondary: false,
            compare_ops: false,
            storage: false,
            second_fs: None,
            imageless: false,
            destroy_set_layouts: false,
            destroy_set_layouts_in_pass: false,
            target: None,
            bind_once: false,
            map_write: None,
            compute_marker: false,
            app_conditional: None,
            draw_kind: DrawKind::Direct,
            plant_replay_state: false,
        }
    }
}

/// What a render gives back.
pub struct Rendered {
    pub pixels: Vec<[u8; 4]>,
    /// The storage counter (`Scene::storage`).
    pub invocations: u32,
    /// Fragment-shader invocations the driver counted (`Scene::stats`).
    pub fs_invocations: Option<u64>,
    /// Seconds spent recording the command buffer.
    pub record_s: f64,
    /// Seconds from submission to completion.
    pub execute_s: f64,
    /// What the dispatch after the pass wrote (`Scene::compute_marker`).
    pub marker: Option<u32>,
}

fn layout_barrier(
    gpu: &Gpu,
    cb: vk::CommandBuffer,
    image: vk::Image,
    old: vk::ImageLayout,
    new: vk::ImageLayout,
    dst: (vk::PipelineStageFlags, vk::AccessFlags),
) {
    let src = (
        vk::PipelineStageFlags::TRANSFER | vk::PipelineStageFlags::COLOR_ATTACHMENT_OUTPUT,
        vk::AccessFlags::TRANSFER_WRITE | vk::AccessFlags::COLOR_ATTACHMENT_WRITE,
    );
    gpu.image_barrier(cb, image, color_range(), (old, new), src, dst);
}

/// The stencil value a [`Scene::stencil`] pass clears to and tests for.
pub const STENCIL_CLEAR: u32 = 0x5a;

/// Renders `scene` and reads back its RGBA8 pixels.
pub fn render(gpu: &Gpu, scene: &Scene) -> Vec<[u8; 4]> {
    render_full(gpu, scene).pixels
}

fn to_v1(a: &vk::AttachmentDescription2) -> vk::AttachmentDescription {
    vk::AttachmentDescription {
        flags: a.flags,
        format: a.format,
        samples: a.samples,
        load_op: a.load_op,
        store_op: a.store_op,
        stencil_load_op: a.stencil_load_op,
        stencil_store_op: a.stencil_store_op,
        initial_layout: a.initial_layout,
        final_layout: a.final_layout,
    }
}

fn refs1(r: &[vk::AttachmentReference2]) -> Vec<vk::AttachmentReference> {
    r.iter().map(|r| vk::AttachmentReference { attachment: r.attachment, layout: r.layout }).collect()
}

fn upload(
    gpu: &Gpu,
    image: vk::Image,
    (w, h): (u32, u32),
    texel: usize,
    data: &[u8],
    to: vk::ImageLayout,
    dst: (vk::PipelineStageFlags, vk::AccessFlags),
) {
    let staging = gpu.buffer(data.len() as u64, vk::BufferUsageFlags::TRANSFER_SRC, true);
    assert_eq!(data.len(), (w * h) as usize * texel);
    unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), staging.map, data.len()) };
    gpu.one_time_submit(|cb| {
        gpu.image_from_undefined(
            cb,
            image,
            color_range(),
            vk::ImageLayout::TRANSFER_DST_OPTIMAL,
            (vk::PipelineStageFlags::TRANSFER, vk::AccessFlags::TRANSFER_WRITE),
        );
        gpu.copy_buffer_to_image(cb, staging.buffer, image, (w, h), 1);
        layout_barrier(gpu, cb, image, vk::ImageLayout::TRANSFER_DST_OPTIMAL, to, dst);
    });
    gpu.destroy_buffer(staging);
}

/// What a test pipeline is made of (one RGBA8 colour attachment).
/// `VK_VALVE_fragment_density_map_layered`'s structures and bits (newer than
/// ash 0.38; the registry's layouts).
pub mod layered {
    use ash::vk;
    use std::ffi::{c_void, CStr};

    pub const EXTENSION: &CStr = c"VK_VALVE_fragment_density_map_layered";
    pub const RENDER_PASS_PER_LAYER: vk::RenderPassCreateFlags = vk::RenderPassCreateFlags::from_raw(0x4);
    pub const RENDERING_PER_LAYER: vk::RenderingFlags = vk::RenderingFlags::from_raw(0x20);
    pub const PIPELINE_PER_LAYER: vk::PipelineCreateFlags2KHR = vk::PipelineCreateFlags2KHR::from_raw(1 << 40);

    #[repr(C)]
    pub struct Features {
        pub s_type: vk::StructureType,
        pub p_next: *mut c_void,
        pub fragment_density_map_layered: vk::Bool32,
    }

    impl Features {
        pub fn new() -> Features {
            Features {
                s_type: vk::StructureType::from_raw(1_000_611_000),
                p_next: std::ptr::null_mut(),
                fragment_density_map_layered: vk::TRUE,
            }
        }
    }

    impl Default for Features {
        fn default() -> Self {
            Features { fragment_density_map_layered: vk::FALSE, ..Features::new() }
        }
    }

    #[repr(C)]
    pub struct Properties {
        pub s_type: vk::StructureType,
        pub p_next: *mut c_void,
        pub max_fragment_density_map_layers: u32,
    }

    impl Default for Properties {
        fn default() -> Self {
            Properties {
                s_type: vk::StructureType::from_raw(1_000_611_001),
                p_next: std::ptr::null_mut(),
                max_fragment_density_map_layers: 0,
            }
        }
    }

    #[repr(C)]
    pub struct PipelineInfo {
        pub s_type: vk::StructureType,
        pub p_next: *const c_void,
        pub max_fragment_density_map_layers: u32,
    }

    impl PipelineInfo {
        pub fn new(layers: u32) -> PipelineInfo {
            PipelineInfo {
                s_type: vk::StructureType::from_raw(1_000_611_002),
                p_next: std::ptr::null(),
                max_fragment_density_map_layers: layers,
            }
        }
    }

    // SAFETY: each is a Vulkan structure (sType, pNext first) extending these, per the registry.
    unsafe impl vk::ExtendsPhysicalDeviceFeatures2 for Features {}
    // SAFETY: as above.
    unsafe impl vk::ExtendsDeviceCreateInfo for Features {}
    // SAFETY: as above.
    unsafe impl vk::ExtendsPhysicalDeviceProperties2 for Properties {}
    // SAFETY: as above.
    unsafe impl vk::ExtendsGraphicsPipelineCreateInfo for PipelineInfo {}
}

struct PipelineDesc<'a> {
    vs: &'a [u8],
    fs: &'a [u8],
    set: Option<vk::DescriptorSetLayout>,
    render_pass: vk::RenderPass,
    subpass: u32,
    samples: vk::SampleCountFlags,
    /// Depth test LESS with writes, against this format.
    depth: Option<vk::Format>,
    viewport: (f32, f32),
    size: (u32, u32),
    dynamic_rendering: bool,
    /// Made for a pass with a density map (the dynamic-rendering flag).
    density_map: bool,
    /// The depth compare op is dynamic.
    compare_ops: bool,
    /// Dynamic rendering: the pipeline's view mask.
    view_mask: u32,
    /// Made for a per-layer pass of this many layers
    /// (`VK_VALVE_fragment_density_map_layered`: the pipeline bit through
    /// `VkPipelineCreateFlags2CreateInfoKHR`, and its structure).
    per_layer: Option<u32>,
}

/// A pipeline for subpass 0 of `render_pass`, a one-sample density-map pass
/// of `size` (triangle list, no vertex input), and its layout (with `set`).
pub fn density_map_pipeline(
    gpu: &Gpu,
    render_pass: vk::RenderPass,
    vs: &[u8],
    fs: &[u8],
    set: Option<vk::DescriptorSetLayout>,
    size: (u32, u32),
) -> (vk::Pipeline, vk::PipelineLayout) {
    pipeline(
        gpu,
        &PipelineDesc {
            vs,
            fs,
            set,
            render_pass,
            subpass: 0,
            samples: vk::SampleCountFlags::TYPE_1,
            depth: None,
            viewport: (size.0 as f32, size.1 as f32),
            size,
            dynamic_rendering: false,
            density_map: true,
            compare_ops: false,
            view_mask: 0,
            per_layer: None,
        },
    )
}

/// A graphics pipeline (triangle list, no vertex input) and its layout.
fn pipeline(gpu: &Gpu, p: &PipelineDesc) -> (vk::Pipeline, vk::PipelineLayout) {
    let d = &gpu.device;
    unsafe {
        let vsm = gpu.shader(p.vs);
        let fsm = gpu.shader(p.fs);
        let sets: Vec<vk::DescriptorSetLayout> = p.set.into_iter().collect();
        let layout =
            d.create_pipeline_layout(&vk::PipelineLayoutCreateInfo::default().set_layouts(&sets), None).unwrap();
        let stages = [
            vk::PipelineShaderStageCreateInfo::default().stage(vk::ShaderStageFlags::VERTEX).module(vsm).name(c"main"),
            vk::PipelineShaderStageCreateInfo::default()
                .stage(vk::ShaderStageFlags::FRAGMENT)
                .module(fsm)
                .name(c"main"),
        ];
        let vin = vk::PipelineVertexInputStateCreateInfo::default();
        let ia = vk::PipelineInputAssemblyStateCreateInfo::default().topology(vk::PrimitiveTopology::TRIANGLE_LIST);
        let vp = [vk::Viewport {
            x: 0.0,
            y: 0.0,
            width: p.viewport.0,
            height: p.viewport.1,
            min_depth: 0.0,
            max_depth: 1.0,
        }];
        let sc = [vk::Rect2D {
            offset: vk::Offset2D::default(),
            extent: vk::Extent2D { width: p.size.0, height: p.size.1 },
        }];
        let vps = vk::PipelineViewportStateCreateInfo::default().viewports(&vp).scissors(&sc);
        let rs = vk::PipelineRasterizationStateCreateInfo::default().line_width(1.0);
        let msi = vk::PipelineMultisampleStateCreateInfo::default().rasterization_samples(p.samples);
        let stencil = p.depth == Some(vk::Format::D32_SFLOAT_S8_UINT);
        let equal =
            vk::StencilOpState::default().compare_op(vk::CompareOp::EQUAL).compare_mask(0xff).reference(STENCIL_CLEAR);
        let dss = vk::PipelineDepthStencilStateCreateInfo::default()
            .depth_test_enable(p.depth.is_some())
            .depth_write_enable(p.depth.is_some())
            .depth_compare_op(vk::CompareOp::LESS)
            .stencil_test_enable(stencil)
            .front(equal)
            .back(equal);
        let blend = [vk::PipelineColorBlendAttachmentState::default().color_write_mask(vk::ColorComponentFlags::RGBA)];
        let cbs = vk::PipelineColorBlendStateCreateInfo::default().attachments(&blend);
        let dynamic = [vk::DynamicState::DEPTH_COMPARE_OP];
        let dyn_info = vk::PipelineDynamicStateCreateInfo::default().dynamic_states(&dynamic);
        let formats = [vk::Format::R8G8B8A8_UNORM];
        let mut rendering =
            vk::PipelineRenderingCreateInfo::default().color_attachment_formats(&formats).view_mask(p.view_mask);
        if let Some(f) = p.depth {
            rendering = rendering.depth_attachment_format(f);
            if stencil {
                rendering = rendering.stencil_attachment_format(f);
            }
        }
        let mut info = vk::GraphicsPipelineCreateInfo::default()
            .stages(&stages)
            .vertex_input_state(&vin)
            .input_assembly_state(&ia)
            .viewport_state(&vps)
            .rasterization_state(&rs)
            .multisample_state(&msi)
            .depth_stencil_state(&dss)
            .color_blend_state(&cbs)
            .layout(layout)
            .render_pass(p.render_pass)
            .subpass(p.subpass);
        if p.compare_ops {
            info = info.dynamic_state(&dyn_info);
        }
        if p.dynamic_rendering {
            info = info.push_next(&mut rendering);
            if p.density_map {
                info = info.flags(vk::PipelineCreateFlags::RENDERING_FRAGMENT_DENSITY_MAP_ATTACHMENT_EXT);
            }
        }
        // The flags then come through the Flags2 structure alone (it replaces `flags`).
        let mut flags2 = vk::PipelineCreateFlags2CreateInfoKHR::default().flags(
            layered::PIPELINE_PER_LAYER
                | if p.dynamic_rendering && p.density_map {
                    vk::PipelineCreateFlags2KHR::RENDERING_FRAGMENT_DENSITY_MAP_ATTACHMENT_EXT
                } else {
                    vk::PipelineCreateFlags2KHR::empty()
                },
        );
        let mut layered_info = layered::PipelineInfo::new(p.per_layer.unwrap_or(1));
        if p.per_layer.is_some() {
            info = info.push_next(&mut flags2).push_next(&mut layered_info);
        }
        let pipe = d.create_graphics_pipelines(vk::PipelineCache::null(), &[info], None).unwrap()[0];
        d.destroy_shader_module(vsm, None);
        d.destroy_shader_module(fsm, None);
        (pipe, layout)
    }
}

/// A density map image holding `m`, in FRAGMENT_DENSITY_MAP_OPTIMAL.
pub fn map_image(gpu: &Gpu, m: &Map) -> (vk::Image, vk::DeviceMemory, vk::ImageView) {
    let img = gpu.image_2d(
        vk::Format::R8G8_UNORM,
        (m.width, m.height),
        vk::SampleCountFlags::TYPE_1,
        vk::ImageUsageFlags::FRAGMENT_DENSITY_MAP_EXT | vk::ImageUsageFlags::TRANSFER_DST,
    );
    write_map(gpu, img.0, m);
    img
}

/// A 2D view of density-map image `image` with `flags` (dynamic, deferred).
pub fn map_view(gpu: &Gpu, image: vk::Image, flags: vk::ImageViewCreateFlags) -> Result<vk::ImageView, String> {
    unsafe {
        gpu.device.create_image_view(
            &vk::ImageViewCreateInfo::default()
                .flags(flags)
                .image(image)
                .view_type(vk::ImageViewType::TYPE_2D)
                .format(vk::Format::R8G8_UNORM)
                .subresource_range(crate::render::color_range()),
            None,
        )
    }
    .map_err(|e| format!("density-map view ({flags:?}): {e}"))
}

/// Writes `m` into an existing density map image (from UNDEFINED).
pub fn write_map(gpu: &Gpu, image: vk::Image, m: &Map) {
    let bytes: Vec<u8> = m.texels.iter().flatten().copied().collect();
    upload(
        gpu,
        image,
        (m.width, m.height),
        2,
        &bytes,
        vk::ImageLayout::FRAGMENT_DENSITY_MAP_OPTIMAL_EXT,
        (vk::PipelineStageFlags::FRAGMENT_DENSITY_PROCESS_EXT, vk::AccessFlags::FRAGMENT_DENSITY_MAP_READ_EXT),
    );
}

/// Renders `scene`: pixels, storage counter and timings.
pub fn render_full(gpu: &Gpu, scene: &Scene) -> Rendered {
    let d = &gpu.device;
    let (w, h) = scene.size;
    let samples = vk::SampleCountFlags::from_raw(scene.samples);
    let msaa = scene.samples > 1;
    let two = scene.second_fs.is_some() && scene.path != Path::Dynamic;
    let color_format = vk::Format::R8G8B8A8_UNORM;
    let depth_format = if scene.stencil { vk::Format::D32_SFLOAT_S8_UINT } else { vk::Format::D32_SFLOAT };
    let depth_aspects = if scene.stencil {
        vk::ImageAspectFlags::DEPTH | vk::ImageAspectFlags::STENCIL
    } else {
        vk::ImageAspectFlags::DEPTH
    };
    let usage =
        vk::ImageUsageFlags::COLOR_ATTACHMENT | vk::ImageUsageFlags::TRANSFER_SRC | vk::ImageUsageFlags::TRANSFER_DST;
    let out = scene.target.unwrap_or_else(|| gpu.image_2d(color_format, (w, h), vk::SampleCountFlags::TYPE_1, usage));
    let ms = msaa.then(|| gpu.image_2d(color_format, (w, h), samples, vk::ImageUsageFlags::COLOR_ATTACHMENT));
    let first = two.then(|| {
        gpu.image_2d(
            color_format,
            (w, h),
            vk::SampleCountFlags::TYPE_1,
            vk::ImageUsageFlags::COLOR_ATTACHMENT | vk::ImageUsageFlags::INPUT_ATTACHMENT,
        )
    });
    let depth = scene.depth.then(|| {
        let usage = vk::ImageUsageFlags::DEPTH_STENCIL_ATTACHMENT;
        gpu.image(depth_format, (w, h), 1, samples, usage, depth_aspects)
    });
    let made = scene.map.filter(|_| scene.map_view.is_none()).map(|m| map_image(gpu, m));
    let map_view = scene.map_view.or(made.map(|m| m.2));
    let color_layout = vk::ImageLayout::COLOR_ATTACHMENT_OPTIMAL;
    if let Some(load) = scene.load {
        let bytes: Vec<u8> = load.iter().flatten().copied().collect();
        let dst = (
            vk::PipelineStageFlags::COLOR_ATTACHMENT_OUTPUT,
            vk::AccessFlags::COLOR_ATTACHMENT_READ | vk::AccessFlags::COLOR_ATTACHMENT_WRITE,
        );
        upload(gpu, out.0, (w, h), 4, &bytes, color_layout, dst);
    }
    let fdm_layout = vk::ImageLayout::FRAGMENT_DENSITY_MAP_OPTIMAL_EXT;
    let color_load = if scene.load.is_some() { vk::AttachmentLoadOp::LOAD } else { vk::AttachmentLoadOp::CLEAR };
    let color_initial = if scene.load.is_some() { color_layout } else { vk::ImageLayout::UNDEFINED };
    // Alpha 255 is no area code, nor is any multisample blend of it with one.
    let clear_color = vk::ClearValue { color: vk::ClearColorValue { float32: [0.0, 0.0, 0.0, 1.0] } };
    let clear_depth =
        vk::ClearValue { depth_stencil: vk::ClearDepthStencilValue { depth: 1.0, stencil: STENCIL_CLEAR } };
    let stencil_load = if scene.stencil { vk::AttachmentLoadOp::CLEAR } else { vk::AttachmentLoadOp::DONT_CARE };
    unsafe {
        // Render pass objects (not for dynamic rendering).
        let mut render_pass = vk::RenderPass::null();
        let mut framebuffer = vk::Framebuffer::null();
        let mut clears = Vec::new();
        let mut imageless_views: Vec<vk::ImageView> = Vec::new();
        if scene.path != Path::Dynamic {
            let mut attachments: Vec<vk::AttachmentDescription2> = Vec::new();
            let mut views = Vec::new();
            let mut add = |a: vk::AttachmentDescription2<'static>, view: vk::ImageView, clear: vk::ClearValue| {
                attachments.push(a);
                views.push(view);
                clears.push(clear);
                attachments.len() as u32 - 1
            };
            let colour_desc = |samples, load, store, initial, final_| {
                vk::AttachmentDescription2::default()
                    .format(color_format)
                    .samples(samples)
                    .load_op(load)
                    .store_op(store)
                    .initial_layout(initial)
                    .final_layout(final_)
            };
            let one = vk::SampleCountFlags::TYPE_1;
            let store = vk::AttachmentStoreOp::STORE;
            let dont = vk::AttachmentStoreOp::DONT_CARE;
            let src = vk::ImageLayout::TRANSFER_SRC_OPTIMAL;
            let a_first = first.as_ref().map(|f| {
                add(
                    colour_desc(one, vk::AttachmentLoadOp::CLEAR, dont, vk::ImageLayout::UNDEFINED, color_layout),
                    f.2,
                    clear_color,
                )
            });
            let a_color = match &ms {
                Some(m) => add(
                    colour_desc(samples, vk::AttachmentLoadOp::CLEAR, dont, vk::ImageLayout::UNDEFINED, color_layout),
                    m.2,
                    clear_color,
                ),
                None => add(colour_desc(one, color_load, store, color_initial, src), out.2, clear_color),
            };
            let a_resolve = ms.as_ref().map(|_| {
                add(
                    colour_desc(one, vk::AttachmentLoadOp::DONT_CARE, store, vk::ImageLayout::UNDEFINED, src),
                    out.2,
                    clear_color,
                )
            });
            let a_depth = depth.as_ref().map(|dp| {
                add(
                    vk::AttachmentDescription2::default()
                        .format(depth_format)
                        .samples(samples)
                        .load_op(vk::AttachmentLoadOp::CLEAR)
                        .store_op(dont)
                        .stencil_load_op(stencil_load)
                        .stencil_store_op(dont)
                        .initial_layout(vk::ImageLayout::UNDEFINED)
                        .final_layout(vk::ImageLayout::DEPTH_STENCIL_ATTACHMENT_OPTIMAL),
                    dp.2,
                    clear_depth,
                )
            });
            let a_map = map_view.map(|m| {
                add(
                    vk::AttachmentDescription2::default()
                        .format(vk::Format::R8G8_UNORM)
                        .samples(one)
                        .load_op(vk::AttachmentLoadOp::LOAD)
                        .store_op(dont)
                        .initial_layout(fdm_layout)
                        .final_layout(fdm_layout),
                    m,
                    clear_color,
                )
            });
            let r = |a: u32, layout| {
                vk::AttachmentReference2::default()
                    .attachment(a)
                    .layout(layout)
                    .aspect_mask(vk::ImageAspectFlags::COLOR)
            };
            let c0 = [r(a_first.unwrap_or(a_color), color_layout)];
            let res = [r(a_resolve.unwrap_or(0), color_layout)];
            let ds = [vk::AttachmentReference2::default()
                .attachment(a_depth.unwrap_or(0))
                .layout(vk::ImageLayout::DEPTH_STENCIL_ATTACHMENT_OPTIMAL)
                .aspect_mask(vk::ImageAspectFlags::DEPTH)];
            let input = [r(a_first.unwrap_or(0), vk::ImageLayout::SHADER_READ_ONLY_OPTIMAL)];
            let c1 = [r(a_color, color_layout)];
            // The subpasses, in either version's structures: the first
            // (resolve and depth where there are), the input-attachment one.
            macro_rules! subpasses {
                ($desc:ty, $c0:expr, $res:expr, $ds:expr, $input:expr, $c1:expr) => {{
                    let mut subs = vec![<$desc>::default()
                        .pipeline_bind_point(vk::PipelineBindPoint::GRAPHICS)
                        .color_attachments($c0)];
                    if a_resolve.is_some() {
                        subs[0] = subs[0].resolve_attachments($res);
                    }
                    if a_depth.is_some() {
                        subs[0] = subs[0].depth_stencil_attachment(&$ds[0]);
                    }
                    if two {
                        subs.push(
                            <$desc>::default()
                                .pipeline_bind_point(vk::PipelineBindPoint::GRAPHICS)
                                .input_attachments($input)
                                .color_attachments($c1),
                        );
                    }
                    subs
                }};
            }
            let subs = subpasses!(vk::SubpassDescription2, &c0, &res, ds, &input, &c1);
            let deps = [vk::SubpassDependency2::default()
                .src_subpass(0)
                .dst_subpass(1)
                .src_stage_mask(vk::PipelineStageFlags::COLOR_ATTACHMENT_OUTPUT)
                .dst_stage_mask(vk::PipelineStageFlags::FRAGMENT_SHADER)
                .src_access_mask(vk::AccessFlags::COLOR_ATTACHMENT_WRITE)
                .dst_access_mask(vk::AccessFlags::INPUT_ATTACHMENT_READ)
                .dependency_flags(vk::DependencyFlags::BY_REGION)];
            let deps: &[vk::SubpassDependency2] = if two { &deps } else { &[] };
            let mut fdm_info =
                vk::RenderPassFragmentDensityMapCreateInfoEXT::default().fragment_density_map_attachment(
                    vk::AttachmentReference { attachment: a_map.unwrap_or(0), layout: fdm_layout },
                );
            render_pass = if scene.path == Path::RenderPass2 {
                let mut info =
                    vk::RenderPassCreateInfo2::default().attachments(&attachments).subpasses(&subs).dependencies(deps);
                if a_map.is_some() {
                    info = info.push_next(&mut fdm_info);
                }
                d.create_render_pass2(&info, None).unwrap()
            } else {
                let a1: Vec<vk::AttachmentDescription> = attachments.iter().map(to_v1).collect();
                let (c0v, resv, dsv, inv, c1v) = (refs1(&c0), refs1(&res), refs1(&ds), refs1(&input), refs1(&c1));
                let s1 = subpasses!(vk::SubpassDescription, &c0v, &resv, dsv, &inv, &c1v);
                let d1: Vec<vk::SubpassDependency> = deps
                    .iter()
                    .map(|x| vk::SubpassDependency {
                        src_subpass: x.src_subpass,
                        dst_subpass: x.dst_subpass,
                        src_stage_mask: x.src_stage_mask,
                        dst_stage_mask: x.dst_stage_mask,
                        src_access_mask: x.src_access_mask,
                        dst_access_mask: x.dst_access_mask,
                        dependency_flags: x.dependency_flags,
                    })
                    .collect();
                let mut info = vk::RenderPassCreateInfo::default().attachments(&a1).subpasses(&s1).dependencies(&d1);
                if a_map.is_some() {
                    info = info.push_next(&mut fdm_info);
                }
                d.create_render_pass(&info, None).unwrap()
            };
            if scene.imageless {
                // What the application created each attachment's image with.
                let formats: Vec<[vk::Format; 1]> = attachments.iter().map(|a| [a.format]).collect();
                let infos: Vec<vk::FramebufferAttachmentImageInfo> = views
                    .iter()
                    .zip(&formats)
                    .map(|(v, f)| {
                        let (usage, (iw, ih)) = if Some(*v) == map_view {
                            let m = scene.map.expect("an imageless framebuffer needs the map it makes");
                            let u = vk::ImageUsageFlags::FRAGMENT_DENSITY_MAP_EXT | vk::ImageUsageFlags::TRANSFER_DST;
                            (u, (m.width, m.height))
                        } else if *v == out.2 {
                            (usage, (w, h))
                        } else if first.as_ref().is_some_and(|x| x.2 == *v) {
                            (vk::ImageUsageFlags::COLOR_ATTACHMENT | vk::ImageUsageFlags::INPUT_ATTACHMENT, (w, h))
                        } else if depth.as_ref().is_some_and(|x| x.2 == *v) {
                            (vk::ImageUsageFlags::DEPTH_STENCIL_ATTACHMENT, (w, h))
                        } else {
                            (vk::ImageUsageFlags::COLOR_ATTACHMENT, (w, h))
                        };
                        vk::FramebufferAttachmentImageInfo::default()
                            .usage(usage)
                            .width(iw)
                            .height(ih)
                            .layer_count(1)
                            .view_formats(f)
                    })
                    .collect();
                let mut atts = vk::FramebufferAttachmentsCreateInfo::default().attachment_image_infos(&infos);
                let mut info = vk::FramebufferCreateInfo::default()
                    .flags(vk::FramebufferCreateFlags::IMAGELESS)
                    .render_pass(render_pass)
                    .width(w)
                    .height(h)
                    .layers(1)
                    .push_next(&mut atts);
                // The count of the image infos; no views until begin.
                info.attachment_count = infos.len() as u32;
                framebuffer = d.create_framebuffer(&info, None).unwrap();
                imageless_views = views;
            } else {
                framebuffer = gpu.framebuffer(render_pass, &views, (w, h));
            }
        }
        // Descriptors: the storage counter (first subpass) or the input attachment (second).
        let count = gpu.buffer(4, vk::BufferUsageFlags::STORAGE_BUFFER, true);
        *(count.map as *mut u32) = 0;
        let storage_binding = [vk::DescriptorSetLayoutBinding::default()
            .binding(0)
            .descriptor_type(vk::DescriptorType::STORAGE_BUFFER)
            .descriptor_count(1)
            .stage_flags(vk::ShaderStageFlags::FRAGMENT)];
        let (storage_layout, storage_pool, storage_set) = gpu.descriptor_set(&storage_binding);
        let binfo = [vk::DescriptorBufferInfo { buffer: count.buffer, offset: 0, range: 4 }];
        d.update_descriptor_sets(
            &[vk::WriteDescriptorSet::default()
                .dst_set(storage_set)
                .dst_binding(0)
                .descriptor_type(vk::DescriptorType::STORAGE_BUFFER)
                .buffer_info(&binfo)],
            &[],
        );
        let input_binding = [vk::DescriptorSetLayoutBinding::default()
            .binding(0)
            .descriptor_type(vk::DescriptorType::INPUT_ATTACHMENT)
            .descriptor_count(1)
            .stage_flags(vk::ShaderStageFlags::FRAGMENT)];
        // Render pass 2's input layout chains empty binding flags (as the CTS's layouts do): as plain as none. (A
        // Vulkan 1.1 application has no binding flags without VK_EXT_descriptor_indexing.)
        let (input_layout, input_pool, input_set) =
            gpu.descriptor_set_chained(&input_binding, scene.path == Path::RenderPass2 && !gpu.khr_1_1);
        if let Some(f) = &first {
            let iinfo = [vk::DescriptorImageInfo {
                sampler: vk::Sampler::null(),
                image_view: f.2,
                image_layout: vk::ImageLayout::SHADER_READ_ONLY_OPTIMAL,
            }];
            d.update_descriptor_sets(
                &[vk::WriteDescriptorSet::default()
                    .dst_set(input_set)
                    .dst_binding(0)
                    .descriptor_type(vk::DescriptorType::INPUT_ATTACHMENT)
                    .image_info(&iinfo)],
                &[],
            );
        }
        // Pipelines.
        let pipeline = |vs: &[u8],
                        fs: &[u8],
                        set: Option<vk::DescriptorSetLayout>,
                        subpass: u32,
                        depth_test: bool,
                        samples: vk::SampleCountFlags| {
            pipeline(
                gpu,
                &PipelineDesc {
                    vs,
                    fs,
                    set,
                    render_pass,
                    subpass,
                    samples,
                    depth: depth_test.then_some(depth_format),
                    viewport: scene.viewport,
                    size: (w, h),
                    dynamic_rendering: scene.path == Path::Dynamic,
                    density_map: scene.map.is_some() || scene.map_view.is_some(),
                    compare_ops: scene.compare_ops && subpass == 0,
                    view_mask: 0,
                    per_layer: None,
                },
            )
        };
        let (pipe0, layout0) =
            pipeline(scene.vs, scene.fs, scene.storage.then_some(storage_layout), 0, scene.depth, samples);
        let planted = scene.plant_replay_state.then(|| {
            let half = (w as f32 / 2.0, h as f32 / 2.0);
            let set = scene.storage.then_some(storage_layout);
            let desc = PipelineDesc {
                vs: scene.vs,
                fs: scene.fs,
                set,
                render_pass,
                subpass: 0,
                samples,
                depth: scene.depth.then_some(depth_format),
                viewport: half,
                size: (w, h),
                dynamic_rendering: scene.path == Path::Dynamic,
                density_map: scene.map.is_some() || scene.map_view.is_some(),
                compare_ops: scene.compare_ops,
                view_mask: 0,
                per_layer: None,
            };
            self::pipeline(gpu, &desc)
        });
        let second = scene.second_fs.filter(|_| two).map(|fs| {
            pipeline(
                include_bytes!(concat!(env!("OUT_DIR"), "/fullscreen.vert.spv")),
                fs,
                Some(input_layout),
                1,
                false,
                vk::SampleCountFlags::TYPE_1,
            )
        });
        let (storage_layout, input_layout) = if scene.destroy_set_layouts {
            d.destroy_descriptor_set_layout(storage_layout, None);
            d.destroy_descriptor_set_layout(input_layout, None);
            (vk::DescriptorSetLayout::null(), vk::DescriptorSetLayout::null())
        } else {
            (storage_layout, input_layout)
        };
        let query_pool = d
            .create_query_pool(
                &vk::QueryPoolCreateInfo::default().query_type(vk::QueryType::OCCLUSION).query_count(1),
                None,
            )
            .unwrap();
        let stats_pool = d
            .create_query_pool(
                &vk::QueryPoolCreateInfo::default()
                    .query_type(vk::QueryType::PIPELINE_STATISTICS)
                    .pipeline_statistics(vk::QueryPipelineStatisticFlags::FRAGMENT_SHADER_INVOCATIONS)
                    .query_count(1),
                None,
            )
            .unwrap();
        let sec_pool = d
            .create_command_pool(&vk::CommandPoolCreateInfo::default().queue_family_index(gpu.queue_family), None)
            .unwrap();
        let area = vk::Rect2D { offset: vk::Offset2D::default(), extent: vk::Extent2D { width: w, height: h } };
        // The draws of the first subpass, into `cb`.
        let kind = Draws::new(gpu, scene.draw_kind);
        let bound = std::cell::Cell::new(false);
        let draws = |cb: vk::CommandBuffer| {
            if !(scene.bind_once && bound.replace(true)) {
                d.cmd_bind_pipeline(cb, vk::PipelineBindPoint::GRAPHICS, pipe0);
            }
            if scene.storage {
                d.cmd_bind_descriptor_sets(cb, vk::PipelineBindPoint::GRAPHICS, layout0, 0, &[storage_set], &[]);
            }
            if scene.query {
                d.cmd_begin_query(cb, query_pool, 0, vk::QueryControlFlags::empty());
            }
            if scene.compare_ops {
                d.cmd_set_depth_compare_op(cb, vk::CompareOp::LESS);
                kind.draw(cb, 3, 1, 0, 0);
                d.cmd_set_depth_compare_op(cb, vk::CompareOp::GREATER);
                kind.draw(cb, 3, 1, 3, 0);
            } else {
                for _ in 0..scene.draws.max(1) {
                    kind.draw(cb, scene.vertices, 1, 0, 0);
                }
            }
            if scene.query {
                d.cmd_end_query(cb, query_pool, 0);
            }
        };
        let secondary = (scene.secondary && scene.path != Path::Dynamic).then(|| {
            let sc = d
                .allocate_command_buffers(
                    &vk::CommandBufferAllocateInfo::default()
                        .command_pool(sec_pool)
                        .level(vk::CommandBufferLevel::SECONDARY)
                        .command_buffer_count(1),
                )
                .unwrap()[0];
            let inh = vk::CommandBufferInheritanceInfo::default()
                .render_pass(render_pass)
                .subpass(0)
                .framebuffer(framebuffer);
            d.begin_command_buffer(
                sc,
                &vk::CommandBufferBeginInfo::default()
                    .flags(
                        vk::CommandBufferUsageFlags::RENDER_PASS_CONTINUE
                            | vk::CommandBufferUsageFlags::SIMULTANEOUS_USE,
                    )
                    .inheritance_info(&inh),
            )
            .unwrap();
            draws(sc);
            d.end_command_buffer(sc).unwrap();
            sc
        });
        let readback = gpu.buffer((w * h * 4) as u64, vk::BufferUsageFlags::TRANSFER_DST, true);
        let map_source = scene.map_write.map(|(_, m)| {
            let bytes: Vec<u8> = m.texels.iter().flatten().copied().collect();
            let b = gpu.buffer(bytes.len() as u64, vk::BufferUsageFlags::TRANSFER_SRC, true);
            std::ptr::copy_nonoverlapping(bytes.as_ptr(), b.map, bytes.len());
            b
        });
        // The compute marker: a pipeline and set bound before the pass, dispatched after it.
        let marker = scene.compute_marker.then(|| {
            let buffer = gpu.buffer(4, vk::BufferUsageFlags::STORAGE_BUFFER, true);
            *(buffer.map as *mut u32) = 0;
            let binding = [vk::DescriptorSetLayoutBinding::default()
                .binding(0)
                .descriptor_type(vk::DescriptorType::STORAGE_BUFFER)
                .descriptor_count(1)
                .stage_flags(vk::ShaderStageFlags::COMPUTE)];
            let (set_layout, pool, set) = gpu.descriptor_set(&binding);
            let bi = [vk::DescriptorBufferInfo { buffer: buffer.buffer, offset: 0, range: 4 }];
            d.update_descriptor_sets(
                &[vk::WriteDescriptorSet::default()
                    .dst_set(set)
                    .dst_binding(0)
                    .descriptor_type(vk::DescriptorType::STORAGE_BUFFER)
                    .buffer_info(&bi)],
                &[],
            );
            let sets = [set_layout];
            let layout =
                d.create_pipeline_layout(&vk::PipelineLayoutCreateInfo::default().set_layouts(&sets), None).unwrap();
            let pipe = gpu.compute_pipeline(include_bytes!(concat!(env!("OUT_DIR"), "/fdm_marker.comp.spv")), layout);
            (buffer, set_layout, pool, set, layout, pipe)
        });
        // The application's predicate.
        let predicate = scene.app_conditional.map(|v| {
            let b = gpu.buffer(4, vk::BufferUsageFlags::CONDITIONAL_RENDERING_EXT, true);
            *(b.map as *mut u32) = v;
            b
        });
        let mut record_s = 0.0;
        let started = std::time::Instant::now();
        gpu.one_time_submit(|cb| {
            let t = std::time::Instant::now();
            for pass in 0..scene.repeat.max(1) {
                if let Some((p, _)) = planted.filter(|_| pass > 0) {
                    d.cmd_bind_pipeline(cb, vk::PipelineBindPoint::GRAPHICS, p);
                }
                if let (Some((image, m)), Some(src)) = (scene.map_write, &map_source) {
                    gpu.image_barrier(
                        cb,
                        image,
                        color_range(),
                        (fdm_layout, vk::ImageLayout::TRANSFER_DST_OPTIMAL),
                        (vk::PipelineStageFlags::FRAGMENT_DENSITY_PROCESS_EXT, vk::AccessFlags::empty()),
                        (vk::PipelineStageFlags::TRANSFER, vk::AccessFlags::TRANSFER_WRITE),
                    );
                    gpu.copy_buffer_to_image(cb, src.buffer, image, (m.width, m.height), 1);
                    layout_barrier(
                        gpu,
                        cb,
                        image,
                        vk::ImageLayout::TRANSFER_DST_OPTIMAL,
                        fdm_layout,
                        (
                            vk::PipelineStageFlags::FRAGMENT_DENSITY_PROCESS_EXT,
                            vk::AccessFlags::FRAGMENT_DENSITY_MAP_READ_EXT,
                        ),
                    );
                }
                if scene.query {
                    d.cmd_reset_query_pool(cb, query_pool, 0, 1);
                }
                if scene.stats {
                    d.cmd_reset_query_pool(cb, stats_pool, 0, 1);
                    d.cmd_begin_query(cb, stats_pool, 0, vk::QueryControlFlags::empty());
                }
                if let Some((_, _, _, set, layout, pipe)) = &marker {
                    d.cmd_bind_pipeline(cb, vk::PipelineBindPoint::COMPUTE, *pipe);
                    d.cmd_bind_descriptor_sets(cb, vk::PipelineBindPoint::COMPUTE, *layout, 0, &[*set], &[]);
                }
                let conditional = gpu.conditional_rendering.as_ref().zip(predicate.as_ref());
                if let Some((c, p)) = conditional {
                    let info = vk::ConditionalRenderingBeginInfoEXT::default().buffer(p.buffer);
                    (c.fp().cmd_begin_conditional_rendering_ext)(cb, &info);
                }
                if scene.path == Path::Dynamic {
                    let att =
                        (vk::PipelineStageFlags::COLOR_ATTACHMENT_OUTPUT, vk::AccessFlags::COLOR_ATTACHMENT_WRITE);
                    if scene.load.is_none() {
                        gpu.image_from_undefined(cb, out.0, color_range(), color_layout, att);
                    }
                    if let Some(m) = &ms {
                        gpu.image_from_undefined(cb, m.0, color_range(), color_layout, att);
                    }
                    if let Some(dp) = &depth {
                        let range = vk::ImageSubresourceRange { aspect_mask: depth_aspects, ..color_range() };
                        let ds = (
                            vk::PipelineStageFlags::EARLY_FRAGMENT_TESTS,
                            vk::AccessFlags::DEPTH_STENCIL_ATTACHMENT_WRITE,
                        );
                        gpu.image_from_undefined(
                            cb,
                            dp.0,
                            range,
                            vk::ImageLayout::DEPTH_STENCIL_ATTACHMENT_OPTIMAL,
                            ds,
                        );
                    }
                    let mut colour = vk::RenderingAttachmentInfo::default()
                        .image_view(ms.as_ref().map_or(out.2, |m| m.2))
                        .image_layout(color_layout)
                        .load_op(if msaa { vk::AttachmentLoadOp::CLEAR } else { color_load })
                        .store_op(if msaa { vk::AttachmentStoreOp::DONT_CARE } else { vk::AttachmentStoreOp::STORE })
                        .clear_value(clear_color);
                    if msaa {
                        colour = colour
                            .resolve_mode(vk::ResolveModeFlags::AVERAGE)
                            .resolve_image_view(out.2)
                            .resolve_image_layout(color_layout);
                    }
                    let colours = [colour];
                    let depth_att = depth.as_ref().map(|dp| {
                        vk::RenderingAttachmentInfo::default()
                            .image_view(dp.2)
                            .image_layout(vk::ImageLayout::DEPTH_STENCIL_ATTACHMENT_OPTIMAL)
                            .load_op(vk::AttachmentLoadOp::CLEAR)
                            .store_op(vk::AttachmentStoreOp::DONT_CARE)
                            .clear_value(clear_depth)
                    });
                    let mut fdm_att = vk::RenderingFragmentDensityMapAttachmentInfoEXT::default()
                        .image_view(map_view.unwrap_or(vk::ImageView::null()))
                        .image_layout(fdm_layout);
                    let mut ri =
                        vk::RenderingInfo::default().render_area(area).layer_count(1).color_attachments(&colours);
                    if let Some(da) = &depth_att {
                        ri = ri.depth_attachment(da);
                        if scene.stencil {
                            ri = ri.stencil_attachment(da);
                        }
                    }
                    if map_view.is_some() {
                        ri = ri.push_next(&mut fdm_att);
                    }
                    d.cmd_begin_rendering(cb, &ri);
                    draws(cb);
                    d.cmd_end_rendering(cb);
                    layout_barrier(
                        gpu,
                        cb,
                        out.0,
                        color_layout,
                        vk::ImageLayout::TRANSFER_SRC_OPTIMAL,
                        (vk::PipelineStageFlags::TRANSFER, vk::AccessFlags::TRANSFER_READ),
                    );
                } else {
                    let mut attached = vk::RenderPassAttachmentBeginInfo::default().attachments(&imageless_views);
                    let mut info = vk::RenderPassBeginInfo::default()
                        .render_pass(render_pass)
                        .framebuffer(framebuffer)
                        .render_area(area)
                        .clear_values(&clears);
                    if scene.imageless {
                        info = info.push_next(&mut attached);
                    }
                    // Render pass 2 objects are driven by the render pass 2 commands.
                    let rp2 = scene.path == Path::RenderPass2;
                    let begin = |contents| {
                        if rp2 {
                            d.cmd_begin_render_pass2(cb, &info, &vk::SubpassBeginInfo::default().contents(contents));
                        } else {
                            d.cmd_begin_render_pass(cb, &info, contents);
                        }
                    };
                    match secondary {
                        Some(sc) => {
                            begin(vk::SubpassContents::SECONDARY_COMMAND_BUFFERS);
                            d.cmd_execute_commands(cb, &[sc]);
                        }
                        None => {
                            begin(vk::SubpassContents::INLINE);
                            draws(cb);
                        }
                    }
                    if let Some((p1, l1)) = second {
                        if rp2 {
                            let begin = vk::SubpassBeginInfo::default().contents(vk::SubpassContents::INLINE);
                            d.cmd_next_subpass2(cb, &begin, &vk::SubpassEndInfo::default());
                        } else {
                            d.cmd_next_subpass(cb, vk::SubpassContents::INLINE);
                        }
                        d.cmd_bind_pipeline(cb, vk::PipelineBindPoint::GRAPHICS, p1);
                        d.cmd_bind_descriptor_sets(cb, vk::PipelineBindPoint::GRAPHICS, l1, 0, &[input_set], &[]);
                        kind.draw(cb, 3, 1, 0, 0);
                        if scene.destroy_set_layouts_in_pass {
                            d.destroy_descriptor_set_layout(input_layout, None);
                        }
                    }
                    if rp2 {
                        d.cmd_end_render_pass2(cb, &vk::SubpassEndInfo::default());
                    } else {
                        d.cmd_end_render_pass(cb);
                    }
                    gpu.memory_barrier(
                        cb,
                        (vk::PipelineStageFlags::COLOR_ATTACHMENT_OUTPUT, vk::AccessFlags::COLOR_ATTACHMENT_WRITE),
                        (vk::PipelineStageFlags::TRANSFER, vk::AccessFlags::TRANSFER_READ),
                    );
                }
                if let Some((c, _)) = conditional {
                    (c.fp().cmd_end_conditional_rendering_ext)(cb);
                }
                if scene.stats {
                    d.cmd_end_query(cb, stats_pool, 0);
                }
                if marker.is_some() {
                    d.cmd_dispatch(cb, 1, 1, 1);
                }
            }
            gpu.copy_image_to_buffer(cb, out.0, vk::ImageLayout::TRANSFER_SRC_OPTIMAL, (w, h), 1, readback.buffer);
            record_s = t.elapsed().as_secs_f64();
        });
        let execute_s = started.elapsed().as_secs_f64() - record_s;
        let pixels = std::slice::from_raw_parts(readback.map as *const [u8; 4], (w * h) as usize).to_vec();
        let invocations = *(count.map as *const u32);
        let fs_invocations = scene.stats.then(|| {
            let mut n = [0u64];
            d.get_query_pool_results(stats_pool, 0, &mut n, vk::QueryResultFlags::TYPE_64 | vk::QueryResultFlags::WAIT)
                .unwrap();
            n[0]
        });
        d.destroy_query_pool(stats_pool, None);
        let marker = marker.map(|(buffer, set_layout, pool, _, layout, pipe)| {
            let v = *(buffer.map as *const u32);
            d.destroy_pipeline(pipe, None);
            d.destroy_pipeline_layout(layout, None);
            d.destroy_descriptor_pool(pool, None);
            d.destroy_descriptor_set_layout(set_layout, None);
            gpu.destroy_buffer(buffer);
            v
        });
        gpu.destroy_buffer(readback);
        for b in [map_source, predicate].into_iter().flatten() {
            gpu.destroy_buffer(b);
        }
        gpu.destroy_buffer(count);
        d.destroy_command_pool(sec_pool, None);
        d.destroy_query_pool(query_pool, None);
        for (p, l) in [Some((pipe0, layout0)), second, planted].into_iter().flatten() {
            d.destroy_pipeline(p, None);
            d.destroy_pipeline_layout(l, None);
        }
        let input_layout =
            if scene.destroy_set_layouts_in_pass && two { vk::DescriptorSetLayout::null() } else { input_layout };
        for (l, p) in [(storage_layout, storage_pool), (input_layout, input_pool)] {
            d.destroy_descriptor_pool(p, None);
            d.destroy_descriptor_set_layout(l, None);
        }
        if framebuffer != vk::Framebuffer::null() {
            d.destroy_framebuffer(framebuffer, None);
            d.destroy_render_pass(render_pass, None);
        }
        for image in [scene.target.is_none().then_some(out), ms, first, depth, made].into_iter().flatten() {
            gpu.destroy_image(image);
        }
        Rendered { pixels, invocations, fs_invocations, record_s, execute_s, marker }
    }
}

/// The spec's region size for a framebuffer dimension and map dimension
/// (revision 3: `2^ceil(log2(floor(fb / map)))`, clamped to the limits).
pub fn texel_size(fb: u32, map: u32, min: u32, max: u32) -> u32 {
    (fb / map).max(1).next_power_of_two().clamp(min, max)
}

/// Checks a render of `fdm_size.frag`; returns (pixels shaded at an area
/// above 1, the largest area seen).
pub fn check_sizes(pixels: &[[u8; 4]], size: (u32, u32), map: &Map, texel: (u32, u32)) -> Result<(u64, u32), String> {
    check_sizes_with(pixels, size, |x, y| {
        let t = map.texels[((y / texel.1).min(map.height - 1) * map.width + (x / texel.0).min(map.width - 1)) as usize];
        (requested(t[0]), requested(t[1]))
    })
}

/// [`check_sizes`] with the requested area of each pixel given by
/// `requested_at(x, y)` (a map seen through density offsets, say).
pub fn check_sizes_with(
    pixels: &[[u8; 4]],
    size: (u32, u32),
    requested_at: impl Fn(u32, u32) -> (u32, u32),
) -> Result<(u64, u32), String> {
    let (w, h) = size;
    let mut coarse = 0;
    let mut largest = 1;
    let mut groups: std::collections::HashMap<u32, Vec<(u32, u32)>> = Default::default();
    for y in 0..h {
        for x in 0..w {
            let p = pixels[(y * w + x) as usize];
            let (sx, sy) = ((p[0] / 16) as u32, (p[0] % 16) as u32);
            let (rx, ry) = requested_at(x, y);
            if ![1, 2, 4].contains(&sx) || ![1, 2, 4].contains(&sy) {
                return Err(format!("pixel ({x},{y}): FragSizeEXT ({sx},{sy}) is not a supported area"));
            }
            if sx > rx || sy > ry {
                return Err(format!("pixel ({x},{y}): FragSizeEXT ({sx},{sy}) exceeds the requested ({rx},{ry})"));
            }
            if sx * sy > 1 {
                coarse += 1;
            }
            largest = largest.max(sx * sy);
            let id = p[1] as u32 | (p[2] as u32) << 8 | (p[3] as u32) << 16;
            groups.entry(id).or_default().push((x, y));
            // The id is the fragment's centre in framebuffer space.
            let (cx, cy) = (x / sx * sx + sx / 2, y / sy * sy + sy / 2);
            if id != cx + cy * 4096 {
                return Err(format!(
                    "pixel ({x},{y}) at area ({sx},{sy}): FragCoord ({},{}) is not the fragment centre ({cx},{cy})",
                    id % 4096,
                    id / 4096
                ));
            }
        }
    }
    for (id, px) in &groups {
        let p0 = pixels[(px[0].1 * w + px[0].0) as usize][0];
        let (sx, sy) = ((p0 / 16) as u32, (p0 % 16) as u32);
        if px.len() as u32 > sx * sy {
            return Err(format!("fragment id {id} covers {} pixels, more than its area {sx}x{sy}", px.len()));
        }
        // One fragment: one area, and every pixel of its block (clipped to
        // the framebuffer).
        if let Some(&(x, y)) = px.iter().find(|&&(x, y)| pixels[(y * w + x) as usize][0] != p0) {
            return Err(format!("fragment id {id} has pixels of different areas ({x},{y})"));
        }
        let (bx, by) = (px[0].0 / sx * sx, px[0].1 / sy * sy);
        let block = ((bx + sx).min(w) - bx) * ((by + sy).min(h) - by);
        if (px.len() as u32) < block {
            return Err(format!("fragment id {id} covers {} of the {block} pixels of its {sx}x{sy} block", px.len()));
        }
    }
    Ok((coarse, largest))
}

/// Checks a render of `fdm_scene.frag` against references rendered at each
/// area without a density map (`reference(area)` gives that render's pixels
/// and width).
pub fn check_against_references(
    pixels: &[[u8; 4]],
    size: (u32, u32),
    mut reference: impl FnMut((u32, u32)) -> (Vec<[u8; 4]>, u32),
) -> Result<u64, String> {
    let (w, h) = size;
    let mut refs: std::collections::HashMap<(u32, u32), (Vec<[u8; 4]>, u32)> = Default::default();
    let mut compared = 0;
    for y in 0..h {
        for x in 0..w {
            let p = pixels[(y * w + x) as usize];
            let area = ((p[3] / 16) as u32, (p[3] % 16) as u32);
            // Background, or an edge a multisample resolve blended with it.
            if ![1, 2, 4].contains(&area.0) || ![1, 2, 4].contains(&area.1) {
                continue;
            }
            let (r, rw) = refs.entry(area).or_insert_with(|| reference(area));
            let q = r[((y / area.1) * *rw + x / area.0) as usize];
            // A reference pixel the scene only partly covers (multisampled
            // edges): the area code blends, so the comparison means nothing.
            if q[3] != 17 {
                continue;
            }
            if p[..3] != q[..3] {
                return Err(format!(
                    "pixel ({x},{y}) at area {area:?}: {p:?}, the reference at that resolution has {q:?}"
                ));
            }
            compared += 1;
        }
    }
    // Nothing drawn compares equal to nothing: the render must cover about
    // what the full-resolution scene covers (coarse fragments move edges).
    let (full, _) = refs.entry((1, 1)).or_insert_with(|| reference((1, 1)));
    let drawn = full.iter().filter(|p| p[3] == 17).count() as u64;
    if compared * 10 < drawn * 8 {
        return Err(format!("only {compared} pixels match a reference; the scene covers {drawn} at full resolution"));
    }
    Ok(compared)
}

/// A multiview pass: one RGBA8 target and (with `with_map`) a density map,
/// both with a layer per view.
pub struct Multiview<'a> {
    pub path: Path,
    pub size: (u32, u32),
    /// Per view, its layer of the density map (all of one size).
    pub maps: Vec<&'a Map>,
    pub vs: &'a [u8],
    pub fs: &'a [u8],
    pub vertices: u32,
    /// With a density map (without: no density-map image or structure at all,
    /// for a device that may lack FDM).
    pub with_map: bool,
    /// Density offsets given at the end of the pass, per view (render pass 2:
    /// in `VkSubpassEndInfo`; dynamic rendering: through
    /// `vkCmdEndRendering2EXT`); the images get the offset flag.
    pub offsets: Option<Vec<vk::Offset2D>>,
    /// The pass recorded this many times in its command buffer (render
    /// passes only; for timing: the last one's pixels are read).
    pub repeat: u32,
    /// The density map's view flags (dynamic, deferred: the layer plans
    /// such passes on the GPU).
    pub map_flags: vk::ImageViewCreateFlags,
    /// A layered framebuffer of one layer per map instead of multiview
    /// (`VK_VALVE_fragment_density_map_layered`: the per-layer bit on the
    /// pass and the pipeline; `vs` must write `gl_Layer` from the instance
    /// index, each draw has one instance per layer).
    pub layered: bool,
    /// Draw through `vkCmdDrawMultiEXT` (the device must have it): the
    /// vertices in two halves, as two draws.
    pub multi_draw: bool,
    /// The command the pass's draw goes down as (`multi_draw` is
    /// [`DrawKind::Multi`]).
    pub draw_kind: DrawKind,
}

impl<'a> Multiview<'a> {
    pub fn new(path: Path, size: (u32, u32), maps: Vec<&'a Map>, vs: &'a [u8], fs: &'a [u8], vertices: u32) -> Self {
        let map_flags = vk::ImageViewCreateFlags::empty();
        Multiview {
            path,
            size,
            maps,
            vs,
            fs,
            vertices,
            with_map: true,
            offsets: None,
            repeat: 1,
            map_flags,
            layered: false,
            multi_draw: false,
            draw_kind: DrawKind::Direct,
        }
    }
}

/// `vkCmdEndRendering2EXT`'s info (ash 0.38 predates it).
#[repr(C)]
struct RenderingEndInfo {
    s_type: vk::StructureType,
    p_next: *const c_void,
}

/// Renders `mv` (view mask: one bit per map) and reads back each view's
/// pixels.
pub fn render_multiview(gpu: &Gpu, mv: &Multiview) -> Vec<Vec<[u8; 4]>> {
    let d = &gpu.device;
    let (w, h) = mv.size;
    let n = mv.maps.len() as u32;
    let view_mask = if mv.layered { 0 } else { (1u32 << n) - 1 };
    let instances = if mv.layered { n } else { 1 };
    let draws = Draws::new(gpu, if mv.multi_draw { DrawKind::Multi } else { mv.draw_kind });
    let (mw, mh) = (mv.maps[0].width, mv.maps[0].height);
    let with_map = mv.with_map;
    let dynamic = mv.path == Path::Dynamic;
    let flags = if mv.offsets.is_some() {
        vk::ImageCreateFlags::FRAGMENT_DENSITY_MAP_OFFSET_QCOM
    } else {
        vk::ImageCreateFlags::empty()
    };
    let layers = vk::ImageSubresourceRange { layer_count: n, ..color_range() };
    let layered = |format, size: (u32, u32), usage| {
        gpu.image_with_flags(flags, format, size, n, vk::SampleCountFlags::TYPE_1, usage, vk::ImageAspectFlags::COLOR)
    };
    let out = layered(
        vk::Format::R8G8B8A8_UNORM,
        mv.size,
        vk::ImageUsageFlags::COLOR_ATTACHMENT | vk::ImageUsageFlags::TRANSFER_SRC,
    );
    // Without a map, no density-map image either (the device may lack FDM).
    let map = with_map.then(|| {
        layered(
            vk::Format::R8G8_UNORM,
            (mw, mh),
            vk::ImageUsageFlags::FRAGMENT_DENSITY_MAP_EXT | vk::ImageUsageFlags::TRANSFER_DST,
        )
    });
    let fdm_layout = vk::ImageLayout::FRAGMENT_DENSITY_MAP_OPTIMAL_EXT;
    let bytes: Vec<u8> = mv.maps.iter().flat_map(|m| m.texels.iter().flatten().copied()).collect();
    let staging = gpu.buffer(bytes.len() as u64, vk::BufferUsageFlags::TRANSFER_SRC, true);
    let readback = gpu.buffer((w * h * 4 * n) as u64, vk::BufferUsageFlags::TRANSFER_DST, true);
    unsafe {
        std::ptr::copy_nonoverlapping(bytes.as_ptr(), staging.map, bytes.len());
        let map_image = map.map_or(vk::Image::null(), |m| m.0);
        gpu.one_time_submit(|cb| {
            if map.is_none() {
                return;
            }
            gpu.image_from_undefined(
                cb,
                map_image,
                layers,
                vk::ImageLayout::TRANSFER_DST_OPTIMAL,
                (vk::PipelineStageFlags::TRANSFER, vk::AccessFlags::TRANSFER_WRITE),
            );
            gpu.copy_buffer_to_image(cb, staging.buffer, map_image, (mw, mh), n);
            gpu.image_barrier(
                cb,
                map_image,
                layers,
                (vk::ImageLayout::TRANSFER_DST_OPTIMAL, fdm_layout),
                (vk::PipelineStageFlags::TRANSFER, vk::AccessFlags::TRANSFER_WRITE),
                (vk::PipelineStageFlags::FRAGMENT_DENSITY_PROCESS_EXT, vk::AccessFlags::FRAGMENT_DENSITY_MAP_READ_EXT),
            );
        });
        let attachments = [
            vk::AttachmentDescription2::default()
                .format(vk::Format::R8G8B8A8_UNORM)
                .samples(vk::SampleCountFlags::TYPE_1)
                .load_op(vk::AttachmentLoadOp::CLEAR)
                .store_op(vk::AttachmentStoreOp::STORE)
                .initial_layout(vk::ImageLayout::UNDEFINED)
                .final_layout(vk::ImageLayout::TRANSFER_SRC_OPTIMAL),
            map_attachment2(fdm_layout),
        ];
        let used = if with_map { &attachments[..] } else { &attachments[..1] };
        let colour = [vk::AttachmentReference2::default()
            .attachment(0)
            .layout(vk::ImageLayout::COLOR_ATTACHMENT_OPTIMAL)
            .aspect_mask(vk::ImageAspectFlags::COLOR)];
        let masks = [view_mask];
        let map_ref = vk::AttachmentReference { attachment: 1, layout: fdm_layout };
        let render_pass = match mv.path {
            Path::Dynamic => vk::RenderPass::null(),
            Path::RenderPass2 => {
                let subs = [vk::SubpassDescription2::default()
                    .pipeline_bind_point(vk::PipelineBindPoint::GRAPHICS)
                    .view_mask(view_mask)
                    .color_attachments(&colour)];
                let mut fdm_info =
                    vk::RenderPassFragmentDensityMapCreateInfoEXT::default().fragment_density_map_attachment(map_ref);
                let mut rpi = vk::RenderPassCreateInfo2::default().attachments(used).subpasses(&subs);
                if mv.layered {
                    rpi = rpi.flags(layered::RENDER_PASS_PER_LAYER);
                } else {
                    rpi = rpi.correlated_view_masks(&masks);
                }
                if with_map {
                    rpi = rpi.push_next(&mut fdm_info);
                }
                d.create_render_pass2(&rpi, None).unwrap()
            }
            Path::RenderPass => {
                let used1: Vec<vk::AttachmentDescription> = used.iter().map(to_v1).collect();
                let colour1 = refs1(&colour);
                let subs = [vk::SubpassDescription::default()
                    .pipeline_bind_point(vk::PipelineBindPoint::GRAPHICS)
                    .color_attachments(&colour1)];
                let mut multiview =
                    vk::RenderPassMultiviewCreateInfo::default().view_masks(&masks).correlation_masks(&masks);
                let mut fdm_info =
                    vk::RenderPassFragmentDensityMapCreateInfoEXT::default().fragment_density_map_attachment(map_ref);
                let mut rpi = vk::RenderPassCreateInfo::default().attachments(&used1).subpasses(&subs);
                if mv.layered {
                    rpi = rpi.flags(layered::RENDER_PASS_PER_LAYER);
                } else {
                    rpi = rpi.push_next(&mut multiview);
                }
                if with_map {
                    rpi = rpi.push_next(&mut fdm_info);
                }
                d.create_render_pass(&rpi, None).unwrap()
            }
        };
        // A view with the map flags asked for (the image's own view has none).
        let flagged = map.filter(|_| !mv.map_flags.is_empty()).map(|m| {
            let range = vk::ImageSubresourceRange { layer_count: n, ..color_range() };
            let info = vk::ImageViewCreateInfo::default()
                .flags(mv.map_flags)
                .image(m.0)
                .view_type(if n > 1 { vk::ImageViewType::TYPE_2D_ARRAY } else { vk::ImageViewType::TYPE_2D })
                .format(vk::Format::R8G8_UNORM)
                .subresource_range(range);
            d.create_image_view(&info, None).unwrap()
        });
        let views_all = [out.2, flagged.or(map.map(|m| m.2)).unwrap_or_default()];
        let views = if with_map { &views_all[..] } else { &views_all[..1] };
        let framebuffer = if dynamic {
            vk::Framebuffer::null()
        } else if mv.layered {
            let info = vk::FramebufferCreateInfo::default()
                .render_pass(render_pass)
                .attachments(views)
                .width(w)
                .height(h)
                .layers(n);
            d.create_framebuffer(&info, None).unwrap()
        } else {
            gpu.framebuffer(render_pass, views, (w, h))
        };
        let (pipeline, layout) = pipeline(
            gpu,
            &PipelineDesc {
                vs: mv.vs,
                fs: mv.fs,
                set: None,
                render_pass,
                subpass: 0,
                samples: vk::SampleCountFlags::TYPE_1,
                depth: None,
                viewport: (w as f32, h as f32),
                size: mv.size,
                dynamic_rendering: dynamic,
                density_map: with_map,
                compare_ops: false,
                view_mask: if dynamic { view_mask } else { 0 },
                per_layer: mv.layered.then_some(n),
            },
        );
        let end_rendering2 = (dynamic && mv.offsets.is_some()).then(|| {
            let f = (gpu.instance.fp_v1_0().get_device_proc_addr)(d.handle(), c"vkCmdEndRendering2EXT".as_ptr())
                .expect("vkCmdEndRendering2EXT");
            std::mem::transmute::<
                unsafe extern "system" fn(),
                unsafe extern "system" fn(vk::CommandBuffer, *const RenderingEndInfo),
            >(f)
        });
        let area = vk::Rect2D { offset: vk::Offset2D::default(), extent: vk::Extent2D { width: w, height: h } };
        let offsets = mv.offsets.clone().unwrap_or_default();
        let mut offset_info =
            vk::SubpassFragmentDensityMapOffsetEndInfoQCOM::default().fragment_density_offsets(&offsets);
        gpu.one_time_submit(|cb| {
            let clear = [vk::ClearValue { color: vk::ClearColorValue { float32: [0.0, 0.0, 0.0, 1.0] } }; 2];
            if dynamic {
                gpu.image_from_undefined(
                    cb,
                    out.0,
                    layers,
                    vk::ImageLayout::COLOR_ATTACHMENT_OPTIMAL,
                    (vk::PipelineStageFlags::COLOR_ATTACHMENT_OUTPUT, vk::AccessFlags::COLOR_ATTACHMENT_WRITE),
                );
                let colors = [vk::RenderingAttachmentInfo::default()
                    .image_view(out.2)
                    .image_layout(vk::ImageLayout::COLOR_ATTACHMENT_OPTIMAL)
                    .load_op(vk::AttachmentLoadOp::CLEAR)
                    .store_op(vk::AttachmentStoreOp::STORE)
                    .clear_value(clear[0])];
                let mut fdm_att = vk::RenderingFragmentDensityMapAttachmentInfoEXT::default()
                    .image_view(views_all[1])
                    .image_layout(fdm_layout);
                let mut info = vk::RenderingInfo::default()
                    .render_area(area)
                    .layer_count(if mv.layered { n } else { 1 })
                    .view_mask(view_mask)
                    .color_attachments(&colors);
                if mv.layered {
                    info = info.flags(layered::RENDERING_PER_LAYER);
                }
                if with_map {
                    info = info.push_next(&mut fdm_att);
                }
                d.cmd_begin_rendering(cb, &info);
            } else {
                let begin = vk::RenderPassBeginInfo::default()
                    .render_pass(render_pass)
                    .framebuffer(framebuffer)
                    .render_area(area)
                    .clear_values(&clear);
                // Earlier passes for timing (`repeat`), each after the last.
                for _ in 1..mv.repeat.max(1) {
                    d.cmd_begin_render_pass(cb, &begin, vk::SubpassContents::INLINE);
                    d.cmd_bind_pipeline(cb, vk::PipelineBindPoint::GRAPHICS, pipeline);
                    draws.draw(cb, mv.vertices, instances, 0, 0);
                    d.cmd_end_render_pass(cb);
                    let barrier = vk::MemoryBarrier::default()
                        .src_access_mask(vk::AccessFlags::COLOR_ATTACHMENT_WRITE)
                        .dst_access_mask(vk::AccessFlags::COLOR_ATTACHMENT_WRITE);
                    d.cmd_pipeline_barrier(
                        cb,
                        vk::PipelineStageFlags::COLOR_ATTACHMENT_OUTPUT,
                        vk::PipelineStageFlags::COLOR_ATTACHMENT_OUTPUT,
                        vk::DependencyFlags::empty(),
                        &[barrier],
                        &[],
                        &[],
                    );
                }
                d.cmd_begin_render_pass(cb, &begin, vk::SubpassContents::INLINE);
            }
            d.cmd_bind_pipeline(cb, vk::PipelineBindPoint::GRAPHICS, pipeline);
            // Multi: the vertices in two halves, as two draws.
            draws.draw(cb, mv.vertices, instances, 0, 0);
            match (mv.path, &end_rendering2) {
                (Path::Dynamic, Some(end2)) => {
                    let info = RenderingEndInfo {
                        s_type: vk::StructureType::from_raw(1_000_619_003),
                        p_next: &offset_info as *const _ as *const c_void,
                    };
                    end2(cb, &info);
                }
                (Path::Dynamic, None) => d.cmd_end_rendering(cb),
                (Path::RenderPass2, _) if mv.offsets.is_some() => {
                    d.cmd_end_render_pass2(cb, &vk::SubpassEndInfo::default().push_next(&mut offset_info))
                }
                _ => d.cmd_end_render_pass(cb),
            }
            if dynamic {
                gpu.image_barrier(
                    cb,
                    out.0,
                    layers,
                    (vk::ImageLayout::COLOR_ATTACHMENT_OPTIMAL, vk::ImageLayout::TRANSFER_SRC_OPTIMAL),
                    (vk::PipelineStageFlags::COLOR_ATTACHMENT_OUTPUT, vk::AccessFlags::COLOR_ATTACHMENT_WRITE),
                    (vk::PipelineStageFlags::TRANSFER, vk::AccessFlags::TRANSFER_READ),
                );
            } else {
                gpu.memory_barrier(
                    cb,
                    (vk::PipelineStageFlags::COLOR_ATTACHMENT_OUTPUT, vk::AccessFlags::COLOR_ATTACHMENT_WRITE),
                    (vk::PipelineStageFlags::TRANSFER, vk::AccessFlags::TRANSFER_READ),
                );
            }
            gpu.copy_image_to_buffer(cb, out.0, vk::ImageLayout::TRANSFER_SRC_OPTIMAL, (w, h), n, readback.buffer);
        });
        let all = std::slice::from_raw_parts(readback.map as *const [u8; 4], (w * h * n) as usize);
        let result = all.chunks((w * h) as usize).map(<[_]>::to_vec).collect();
        d.destroy_pipeline(pipeline, None);
        d.destroy_pipeline_layout(layout, None);
        if !dynamic {
            d.destroy_framebuffer(framebuffer, None);
            d.destroy_render_pass(render_pass, None);
        }
        gpu.destroy_buffer(staging);
        gpu.destroy_buffer(readback);
        if let Some(v) = flagged {
            d.destroy_image_view(v, None);
        }
        for image in [Some(out), map].into_iter().flatten() {
            gpu.destroy_image(image);
        }
        result
    }
}

/// Dynamic state beyond Vulkan 1.3 that a binned pass changes between draws.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DynState {
    /// `vkCmdSetColorWriteEnableEXT`: on, then off.
    ColorWriteEnable,
    /// `vkCmdSetLogicOpEXT` (logic op enabled in the pipeline): XOR, then
    /// AND, over a known destination (see [`LOGIC_OP`]).
    LogicOp,
    /// As `LogicOp`, with the pipeline bound again before the second
    /// `vkCmdSetLogicOpEXT`: lavapipe 22.3 emits its blend state (where the
    /// logic op lives) only when something marks it dirty, a pipeline bind
    /// does, its `vkCmdSetLogicOpEXT` does not (it marks the rasterizer
    /// state), so only this form is drawn right by lavapipe itself.
    LogicOpRebound,
    /// `vkCmdSetColorWriteMaskEXT` (extended dynamic state 3): RGBA, then none.
    ColorWriteMask,
    /// `vkCmdSetLineStippleEXT` (stippled lines): a solid pattern, then an
    /// empty one.
    LineStipple,
}

/// The logic-op scene's values, as R8G8B8A8_UNORM bytes: the clear colour
/// (the destination), the first draw's colour (XOR) and the second's (AND).
pub const LOGIC_OP: LogicOpValues =
    LogicOpValues { dst: [0x5a, 0xc3, 0x0f, 0xff], first: [0xf0, 0x3c, 0x99, 0x55], second: [0x3c, 0xf0, 0x55, 0xaa] };

/// See [`LOGIC_OP`].
#[derive(Clone, Copy, Debug)]
pub struct LogicOpValues {
    pub dst: [u8; 4],
    pub first: [u8; 4],
    pub second: [u8; 4],
}

impl LogicOpValues {
    /// What a pixel covered by both draws holds, computed on the CPU, for
    /// each way a driver (or the layer) may apply the two logic ops:
    /// `reference` (XOR, then AND: each draw its own op, as the spec says),
    /// `first_op_kept` (XOR for both: lavapipe 22.3, whose
    /// `vkCmdSetLogicOpEXT` does not re-emit the blend state, keeps the op in
    /// force at the first draw after a pipeline bind) and `last_op_only`
    /// (AND for both: the state reached the driver before the draws, the
    /// layer's `debug_fdm_without=dynamic_state` control).
    pub fn models(&self) -> [(&'static str, [u8; 4]); 3] {
        let f = |a: [u8; 4], b: [u8; 4], op: fn(u8, u8) -> u8| [0, 1, 2, 3].map(|i| op(a[i], b[i]));
        let (xor, and): (fn(u8, u8) -> u8, fn(u8, u8) -> u8) = (|s, d| s ^ d, |s, d| s & d);
        let after_first = f(self.first, self.dst, xor);
        [
            ("reference", f(self.second, after_first, and)),
            ("first_op_kept", f(self.second, after_first, xor)),
            ("last_op_only", f(self.second, f(self.first, self.dst, and), and)),
        ]
    }

    /// A byte as the float a draw or clear gives for it (exact in UNORM8).
    pub fn float(c: [u8; 4]) -> [f32; 4] {
        c.map(|b| b as f32 / 255.0)
    }
}

/// A binned pass (render pass 2, 64x64, a map asking 2x2 everywhere; or,
/// without `with_map`, the same pass without a density map, for the driver
/// alone) that draws red with `state` letting it write, then changes `state`
/// so that nothing is written and draws green (quads; for `LineStipple`, two
/// horizontal lines at rows 16 and 48): each draw must see the state set
/// before it, so the result is red where the first draw covers and never
/// green. The logic-op forms draw [`LOGIC_OP`]'s colours over its clear
/// colour instead (XOR, then AND; see [`LogicOpValues::models`]). Returns the
/// pixels.
pub fn render_dynamic_state(gpu: &Gpu, state: DynState, with_map: bool) -> Vec<[u8; 4]> {
    let d = &gpu.device;
    let (w, h) = (64u32, 64u32);
    let texels = vec![[127u8, 127u8]; 4];
    let map = Map { width: 2, height: 2, texels };
    let vs = &include_bytes!(concat!(env!("OUT_DIR"), "/fdm_dyn.vert.spv"))[..];
    let fs = &include_bytes!(concat!(env!("OUT_DIR"), "/fdm_dyn.frag.spv"))[..];
    let out = gpu.image(
        vk::Format::R8G8B8A8_UNORM,
        (w, h),
        1,
        vk::SampleCountFlags::TYPE_1,
        vk::ImageUsageFlags::COLOR_ATTACHMENT | vk::ImageUsageFlags::TRANSFER_SRC,
        vk::ImageAspectFlags::COLOR,
    );
    let map_img = with_map.then(|| map_image(gpu, &map));
    let readback = gpu.buffer((w * h * 4) as u64, vk::BufferUsageFlags::TRANSFER_DST, true);
    let fdm_layout = vk::ImageLayout::FRAGMENT_DENSITY_MAP_OPTIMAL_EXT;
    unsafe {
        let attachments = [
            vk::AttachmentDescription2::default()
                .format(vk::Format::R8G8B8A8_UNORM)
                .samples(vk::SampleCountFlags::TYPE_1)
                .load_op(vk::AttachmentLoadOp::CLEAR)
                .store_op(vk::AttachmentStoreOp::STORE)
                .initial_layout(vk::ImageLayout::UNDEFINED)
                .final_layout(vk::ImageLayout::TRANSFER_SRC_OPTIMAL),
            map_attachment2(fdm_layout),
        ];
        let colour = [vk::AttachmentReference2::default()
            .attachment(0)
            .layout(vk::ImageLayout::COLOR_ATTACHMENT_OPTIMAL)
            .aspect_mask(vk::ImageAspectFlags::COLOR)];
        let subs = [vk::SubpassDescription2::default()
            .pipeline_bind_point(vk::PipelineBindPoint::GRAPHICS)
            .color_attachments(&colour)];
        let mut fdm_info = vk::RenderPassFragmentDensityMapCreateInfoEXT::default()
            .fragment_density_map_attachment(vk::AttachmentReference { attachment: 1, layout: fdm_layout });
        let mut rpi = vk::RenderPassCreateInfo2::default().subpasses(&subs);
        rpi = if with_map {
            rpi.attachments(&attachments).push_next(&mut fdm_info)
        } else {
            rpi.attachments(&attachments[..1])
        };
        let render_pass = d.create_render_pass2(&rpi, None).unwrap();
        let views = [out.2, map_img.map_or(vk::ImageView::null(), |m| m.2)];
        let framebuffer = gpu.framebuffer(render_pass, &views[..if with_map { 2 } else { 1 }], (w, h));
        let range = [vk::PushConstantRange::default()
            .stage_flags(vk::ShaderStageFlags::VERTEX | vk::ShaderStageFlags::FRAGMENT)
            .size(24)];
        let layout = d
            .create_pipeline_layout(&vk::PipelineLayoutCreateInfo::default().push_constant_ranges(&range), None)
            .unwrap();
        let (vsm, fsm) = (gpu.shader(vs), gpu.shader(fs));
        let stages = [
            vk::PipelineShaderStageCreateInfo::default().stage(vk::ShaderStageFlags::VERTEX).module(vsm).name(c"main"),
            vk::PipelineShaderStageCreateInfo::default()
                .stage(vk::ShaderStageFlags::FRAGMENT)
                .module(fsm)
                .name(c"main"),
        ];
        let lines = state == DynState::LineStipple;
        let logic = matches!(state, DynState::LogicOp | DynState::LogicOpRebound);
        let vin = vk::PipelineVertexInputStateCreateInfo::default();
        let ia = vk::PipelineInputAssemblyStateCreateInfo::default().topology(if lines {
            vk::PrimitiveTopology::LINE_LIST
        } else {
            vk::PrimitiveTopology::TRIANGLE_LIST
        });
        let vp = [vk::Viewport { x: 0.0, y: 0.0, width: w as f32, height: h as f32, min_depth: 0.0, max_depth: 1.0 }];
        let sc = [vk::Rect2D { offset: vk::Offset2D::default(), extent: vk::Extent2D { width: w, height: h } }];
        let vps = vk::PipelineViewportStateCreateInfo::default().viewports(&vp).scissors(&sc);
        let mut line_state = vk::PipelineRasterizationLineStateCreateInfoEXT::default()
            .line_rasterization_mode(gpu.dynamic_state.line_stipple.unwrap_or_default())
            .stippled_line_enable(true)
            .line_stipple_factor(1)
            .line_stipple_pattern(0xffff);
        let mut rs = vk::PipelineRasterizationStateCreateInfo::default().line_width(1.0);
        if lines {
            rs = rs.push_next(&mut line_state);
        }
        let msi = vk::PipelineMultisampleStateCreateInfo::default().rasterization_samples(vk::SampleCountFlags::TYPE_1);
        let dss = vk::PipelineDepthStencilStateCreateInfo::default();
        let blend = [vk::PipelineColorBlendAttachmentState::default().color_write_mask(vk::ColorComponentFlags::RGBA)];
        let cbs = vk::PipelineColorBlendStateCreateInfo::default()
            .attachments(&blend)
            .logic_op_enable(logic)
            .logic_op(vk::LogicOp::COPY);
        let dynamic = [match state {
            DynState::ColorWriteEnable => vk::DynamicState::COLOR_WRITE_ENABLE_EXT,
            DynState::LogicOp | DynState::LogicOpRebound => vk::DynamicState::LOGIC_OP_EXT,
            DynState::ColorWriteMask => vk::DynamicState::COLOR_WRITE_MASK_EXT,
            DynState::LineStipple => vk::DynamicState::LINE_STIPPLE_EXT,
        }];
        let dyn_info = vk::PipelineDynamicStateCreateInfo::default().dynamic_states(&dynamic);
        let info = vk::GraphicsPipelineCreateInfo::default()
            .stages(&stages)
            .vertex_input_state(&vin)
            .input_assembly_state(&ia)
            .viewport_state(&vps)
            .rasterization_state(&rs)
            .multisample_state(&msi)
            .depth_stencil_state(&dss)
            .color_blend_state(&cbs)
            .dynamic_state(&dyn_info)
            .layout(layout)
            .render_pass(render_pass);
        let pipeline = d.create_graphics_pipelines(vk::PipelineCache::null(), &[info], None).unwrap()[0];
        d.destroy_shader_module(vsm, None);
        d.destroy_shader_module(fsm, None);
        let load = |name: &std::ffi::CStr| {
            (gpu.instance.fp_v1_0().get_device_proc_addr)(d.handle(), name.as_ptr())
                .unwrap_or_else(|| panic!("{name:?} is not offered"))
        };
        let set = |cb: vk::CommandBuffer, on: bool| match state {
            DynState::ColorWriteEnable => {
                let f: vk::PFN_vkCmdSetColorWriteEnableEXT = std::mem::transmute(load(c"vkCmdSetColorWriteEnableEXT"));
                f(cb, 1, &(on as vk::Bool32));
            }
            DynState::LogicOp | DynState::LogicOpRebound => {
                let f: vk::PFN_vkCmdSetLogicOpEXT = std::mem::transmute(load(c"vkCmdSetLogicOpEXT"));
                f(cb, if on { vk::LogicOp::XOR } else { vk::LogicOp::AND });
            }
            DynState::ColorWriteMask => {
                let f: vk::PFN_vkCmdSetColorWriteMaskEXT = std::mem::transmute(load(c"vkCmdSetColorWriteMaskEXT"));
                let mask = if on { vk::ColorComponentFlags::RGBA } else { vk::ColorComponentFlags::empty() };
                f(cb, 0, 1, &mask);
            }
            DynState::LineStipple => {
                let f: vk::PFN_vkCmdSetLineStippleKHR = std::mem::transmute(load(c"vkCmdSetLineStippleEXT"));
                f(cb, 1, if on { 0xffff } else { 0 });
            }
        };
        let push = |cb: vk::CommandBuffer, color: [f32; 4], y: f32| {
            let mut data = Vec::with_capacity(24);
            for v in color.iter().chain(&[if lines { 1.0 } else { 0.0 }, y]) {
                data.extend_from_slice(&v.to_ne_bytes());
            }
            d.cmd_push_constants(cb, layout, vk::ShaderStageFlags::VERTEX | vk::ShaderStageFlags::FRAGMENT, 0, &data);
        };
        let vertices = if lines { 2 } else { 6 };
        gpu.one_time_submit(|cb| {
            let background = if logic { LogicOpValues::float(LOGIC_OP.dst) } else { [0.0, 0.0, 0.0, 1.0] };
            let clear = [vk::ClearValue { color: vk::ClearColorValue { float32: background } }; 2];
            let begin = vk::RenderPassBeginInfo::default()
                .render_pass(render_pass)
                .framebuffer(framebuffer)
                .render_area(sc[0])
                .clear_values(&clear);
            d.cmd_begin_render_pass(cb, &begin, vk::SubpassContents::INLINE);
            d.cmd_bind_pipeline(cb, vk::PipelineBindPoint::GRAPHICS, pipeline);
            set(cb, true);
            let (red, green) = if logic {
                (LogicOpValues::float(LOGIC_OP.first), LogicOpValues::float(LOGIC_OP.second))
            } else {
                ([1.0, 0.0, 0.0, 1.0], [0.0, 1.0, 0.0, 1.0])
            };
            // Rows 16 and 48: NDC -0.5 and 0.5 (pixel centres 16.5 and 48.5 round to them).
            push(cb, red, -15.0 / 32.0);
            d.cmd_draw(cb, vertices, 1, 0, 0);
            if state == DynState::LogicOpRebound {
                d.cmd_bind_pipeline(cb, vk::PipelineBindPoint::GRAPHICS, pipeline);
            }
            set(cb, false);
            push(cb, green, 17.0 / 32.0);
            d.cmd_draw(cb, vertices, 1, 0, 0);
            d.cmd_end_render_pass(cb);
            gpu.memory_barrier(
                cb,
                (vk::PipelineStageFlags::COLOR_ATTACHMENT_OUTPUT, vk::AccessFlags::COLOR_ATTACHMENT_WRITE),
                (vk::PipelineStageFlags::TRANSFER, vk::AccessFlags::TRANSFER_READ),
            );
            gpu.copy_image_to_buffer(cb, out.0, vk::ImageLayout::TRANSFER_SRC_OPTIMAL, (w, h), 1, readback.buffer);
        });
        let pixels = std::slice::from_raw_parts(readback.map as *const [u8; 4], (w * h) as usize).to_vec();
        d.destroy_pipeline(pipeline, None);
        d.destroy_pipeline_layout(layout, None);
        d.destroy_framebuffer(framebuffer, None);
        d.destroy_render_pass(render_pass, None);
        gpu.destroy_buffer(readback);
        gpu.destroy_image(out);
        if let Some(m) = map_img {
            gpu.destroy_image(m);
        }
        pixels
    }
}

/// The fragment area (width, height) each pixel of an `fdm_size.frag`
/// render was shaded at.
pub fn areas(pixels: &[[u8; 4]]) -> Vec<(u32, u32)> {
    pixels.iter().map(|p| ((p[0] / 16) as u32, (p[0] % 16) as u32)).collect()
}

/// The density map's attachment in a render pass: R8G8_UNORM, loaded, not
/// stored, in `layout` throughout.
pub fn map_attachment(layout: vk::ImageLayout) -> vk::AttachmentDescription {
    vk::AttachmentDescription::default()
        .format(vk::Format::R8G8_UNORM)
        .samples(vk::SampleCountFlags::TYPE_1)
        .load_op(vk::AttachmentLoadOp::LOAD)
        .store_op(vk::AttachmentStoreOp::DONT_CARE)
        .initial_layout(layout)
        .final_layout(layout)
}

/// [`map_attachment`] for render pass 2.
pub fn map_attachment2(layout: vk::ImageLayout) -> vk::AttachmentDescription2<'static> {
    vk::AttachmentDescription2::default()
        .format(vk::Format::R8G8_UNORM)
        .samples(vk::SampleCountFlags::TYPE_1)
        .load_op(vk::AttachmentLoadOp::LOAD)
        .store_op(vk::AttachmentStoreOp::DONT_CARE)
        .initial_layout(layout)
        .final_layout(layout)
}

#[cfg(test)]
mod tests {
    //! The density-map checkers fed synthetic renders built the way the
    //! shaders encode them, then deliberately wrong ones.
    use super::*;

    /// A 4x2 map over 16x16 texels: columns asking for 1x1, 2x1, 1x2, then
    /// 2x2 above and 4x4 below ([`regions`]).
    fn map() -> Map {
        Map { width: 4, height: 2, texels: regions(4, 2) }
    }
    const TEXEL: (u32, u32) = (16, 16);

    /// The area each texel asks for, at pixel (x, y).
    fn asked(map: &Map, x: u32, y: u32) -> (u32, u32) {
        let t = map.texels[((y / TEXEL.1).min(map.height - 1) * map.width + (x / TEXEL.0).min(map.width - 1)) as usize];
        (requested(t[0]), requested(t[1]))
    }

    /// What `fdm_size.frag` writes at pixel (x, y) when the fragment covering
    /// it has area `s` and starts at `origin`: R = 16·width + height, GBA the
    /// 24-bit id `uint(FragCoord.x) + uint(FragCoord.y)·4096`, FragCoord
    /// being the fragment's centre.
    fn size_pixel(s: (u32, u32), origin: (u32, u32)) -> [u8; 4] {
        let frag_coord = (origin.0 as f32 + s.0 as f32 / 2.0, origin.1 as f32 + s.1 as f32 / 2.0);
        let id = frag_coord.0 as u32 + frag_coord.1 as u32 * 4096;
        [(s.0 * 16 + s.1) as u8, id as u8, (id >> 8) as u8, (id >> 16) as u8]
    }

    /// A render of `fdm_size.frag` where every pixel's fragment has the area
    /// `area(x, y)` (the same for every pixel of an aligned block) and is
    /// aligned to it.
    fn size_render(size: (u32, u32), area: impl Fn(u32, u32) -> (u32, u32)) -> Vec<[u8; 4]> {
        let mut v = Vec::new();
        for y in 0..size.1 {
            for x in 0..size.0 {
                let s = area(x, y);
                v.push(size_pixel(s, (x / s.0 * s.0, y / s.1 * s.1)));
            }
        }
        v
    }

    fn at(size: (u32, u32), x: u32, y: u32) -> usize {
        (y * size.0 + x) as usize
    }

    const SIZES: [(u32, u32); 2] = [(64, 32), (62, 30)];

    #[test]
    fn sizes_of_a_correct_render_pass() {
        let m = map();
        for size in SIZES {
            // Each region at the area it asks for.
            let px = size_render(size, |x, y| asked(&m, x, y));
            let (coarse, largest) = check_sizes(&px, size, &m, TEXEL).unwrap();
            let want = (0..size.1)
                .flat_map(|y| (0..size.0).map(move |x| (x, y)))
                .filter(|&(x, y)| asked(&m, x, y) != (1, 1))
                .count() as u64;
            assert_eq!((coarse, largest), (want, 16), "{size:?}");
            // Smaller areas are always allowed (1x1 everywhere is the baseline).
            let px = size_render(size, |_, _| (1, 1));
            assert_eq!(check_sizes(&px, size, &m, TEXEL).unwrap(), (0, 1), "{size:?}");
            let px = size_render(size, |x, y| {
                let (rx, ry) = asked(&m, x, y);
                (rx.min(2), ry.min(2))
            });
            assert_eq!(check_sizes(&px, size, &m, TEXEL).unwrap().1, 4, "{size:?}");
        }
    }

    #[test]
    fn an_area_larger_than_requested_is_reported() {
        let m = map();
        for size in SIZES {
            // A 2x2 fragment, aligned and with the right centre, in the
            // column that asks for 1x1.
            let px =
                size_render(
                    size,
                    |x, y| if (4..6).contains(&x) && (4..6).contains(&y) { (2, 2) } else { asked(&m, x, y) },
                );
            let e = check_sizes(&px, size, &m, TEXEL).unwrap_err();
            assert!(e.contains("exceeds the requested (1,1)"), "{e}");
            // 4x1 in the column that asks for 2x1.
            let px = size_render(size, |x, y| if (16..32).contains(&x) { (4, 1) } else { asked(&m, x, y) });
            assert!(check_sizes(&px, size, &m, TEXEL).unwrap_err().contains("exceeds"));
            // 4x4 in the 2x2 texel.
            let px = size_render(size, |x, y| if x >= 48 && y < 16 { (4, 4) } else { asked(&m, x, y) });
            assert!(check_sizes(&px, size, &m, TEXEL).unwrap_err().contains("exceeds"));
        }
    }

    #[test]
    fn an_unsupported_area_is_reported() {
        let m = map();
        let size = SIZES[0];
        let mut px = size_render(size, |x, y| asked(&m, x, y));
        px[at(size, 50, 20)][0] = 3 * 16 + 1;
        assert!(check_sizes(&px, size, &m, TEXEL).unwrap_err().contains("not a supported area"));
    }

    #[test]
    fn a_frag_coord_off_by_one_is_reported() {
        let m = map();
        for size in SIZES {
            for (x, y) in [(3, 3), (20, 5), (36, 21), (50, 6), (52, 20)] {
                for delta in [1, 4096, u32::MAX] {
                    let mut px = size_render(size, |x, y| asked(&m, x, y));
                    let p = &mut px[at(size, x, y)];
                    let id = (p[1] as u32 | (p[2] as u32) << 8 | (p[3] as u32) << 16).wrapping_add(delta);
                    (p[1], p[2], p[3]) = (id as u8, (id >> 8) as u8, (id >> 16) as u8);
                    let e = check_sizes(&px, size, &m, TEXEL).unwrap_err();
                    assert!(e.contains("is not the fragment centre"), "({x},{y}) {delta}: {e}");
                }
            }
        }
    }

    /// Blocks one pixel off their alignment: every pixel of the region
    /// carries the centre of an unaligned block.
    #[test]
    fn a_shifted_block_is_reported() {
        let m = map();
        for size in SIZES {
            // The 2x2 region's blocks start one column late.
            let mut px = size_render(size, |x, y| asked(&m, x, y));
            for y in 0..16 {
                for x in 49..size.0 {
                    px[at(size, x, y)] = size_pixel((2, 2), ((x - 49) / 2 * 2 + 49, y / 2 * 2));
                }
            }
            assert!(check_sizes(&px, size, &m, TEXEL).unwrap_err().contains("is not the fragment centre"));
            // The whole picture one pixel to the right (a replay offset).
            let clean = size_render(size, |x, y| asked(&m, x, y));
            let mut px = clean.clone();
            for y in 0..size.1 {
                for x in 1..size.0 {
                    px[at(size, x, y)] = clean[at(size, x - 1, y)];
                }
            }
            assert!(check_sizes(&px, size, &m, TEXEL).is_err());
            // One row down.
            let mut px = clean.clone();
            px[size.0 as usize..].copy_from_slice(&clean[..clean.len() - size.0 as usize]);
            assert!(check_sizes(&px, size, &m, TEXEL).is_err());
        }
    }

    #[test]
    fn a_block_split_wrong_is_reported() {
        let m = map();
        let size = SIZES[0];
        // One pixel of a 4x4 block carries its neighbour block's id.
        let mut px = size_render(size, |x, y| asked(&m, x, y));
        px[at(size, 55, 21)] = px[at(size, 56, 21)];
        assert!(check_sizes(&px, size, &m, TEXEL).unwrap_err().contains("is not the fragment centre"));
        // Three pixels claim one fragment whose first pixel's area is 1x2:
        // (48,0) shaded alone, (49,0) as a 1x2 fragment centred at (49,1),
        // (48,1) and (49,1) as a 2x2 fragment with the same centre.
        let mut px = size_render(size, |x, y| asked(&m, x, y));
        px[at(size, 48, 0)] = size_pixel((1, 1), (48, 0));
        px[at(size, 49, 0)] = size_pixel((1, 2), (49, 0));
        assert_eq!(px[at(size, 49, 0)][1..], px[at(size, 48, 1)][1..]);
        let e = check_sizes(&px, size, &m, TEXEL).unwrap_err();
        assert!(e.contains("covers 3 pixels, more than its area 1x2"), "{e}");
    }

    /// A 2x2-aligned block whose top row is a 2x1 fragment and bottom row a
    /// 2x2 fragment: impossible in a correct render (a 2x2 fragment covers
    /// its whole aligned block; density-map texels are aligned to at least
    /// the area), yet every pixel is consistent with its own area and
    /// centre, and no id appears more often than its area.
    #[test]
    fn a_block_of_mixed_areas_is_reported() {
        let m = map();
        let size = SIZES[0];
        let mut px = size_render(size, |x, y| asked(&m, x, y));
        px[at(size, 48, 0)] = size_pixel((2, 1), (48, 0));
        px[at(size, 49, 0)] = size_pixel((2, 1), (48, 0));
        assert!(check_sizes(&px, size, &m, TEXEL).is_err());
    }

    /// What `fdm_scene.frag` writes at an area: the scene's colour and
    /// A = 16·width + height. The synthetic scene is a gradient (so any
    /// shift changes colours) covering the pixels below the diagonal
    /// x + 2y < 90, judged at each fragment's centre; the clear colour
    /// (alpha 255, not an area) elsewhere.
    fn scene_colour(cx: u32, cy: u32) -> Option<[u8; 3]> {
        (cx + 2 * cy < 90).then(|| [(cx * 5 + cy) as u8, (cy * 7) as u8, (cx * cy) as u8])
    }
    const CLEAR: [u8; 4] = [0, 0, 64, 255];

    /// The scene rendered without a density map at `area`'s resolution
    /// (what `reference(area)` gives: pixels and width), area code 1x1.
    fn scene_reference(size: (u32, u32), area: (u32, u32)) -> (Vec<[u8; 4]>, u32) {
        let low = (size.0.div_ceil(area.0), size.1.div_ceil(area.1));
        let mut v = Vec::new();
        for j in 0..low.1 {
            for i in 0..low.0 {
                v.push(match scene_colour(i * area.0 + area.0 / 2, j * area.1 + area.1 / 2) {
                    Some(c) => [c[0], c[1], c[2], 17],
                    None => CLEAR,
                });
            }
        }
        (v, low.0)
    }

    /// A binned render: each pixel takes its region's reference pixel.
    fn scene_render(size: (u32, u32), area: impl Fn(u32, u32) -> (u32, u32)) -> Vec<[u8; 4]> {
        let mut v = Vec::new();
        for y in 0..size.1 {
            for x in 0..size.0 {
                let a = area(x, y);
                let (r, rw) = scene_reference(size, a);
                let q = r[((y / a.1) * rw + x / a.0) as usize];
                v.push(if q[3] == 17 { [q[0], q[1], q[2], (a.0 * 16 + a.1) as u8] } else { CLEAR });
            }
        }
        v
    }

    fn check_scene(px: &[[u8; 4]], size: (u32, u32)) -> Result<u64, String> {
        check_against_references(px, size, |area| scene_reference(size, area))
    }

    #[test]
    fn a_correct_binned_render_matches_its_references() {
        let m = map();
        for size in SIZES {
            let px = scene_render(size, |x, y| asked(&m, x, y));
            let drawn = px.iter().filter(|p| p[3] != 255).count() as u64;
            assert!(drawn > 0 && drawn < px.len() as u64);
            assert_eq!(check_scene(&px, size).unwrap(), drawn, "{size:?}");
            let full = scene_render(size, |_, _| (1, 1));
            assert_eq!(check_scene(&full, size).unwrap(), drawn_at_full(size), "{size:?}");
        }
    }

    fn drawn_at_full(size: (u32, u32)) -> u64 {
        scene_reference(size, (1, 1)).0.iter().filter(|p| p[3] == 17).count() as u64
    }

    #[test]
    fn a_shifted_replay_is_reported() {
        let m = map();
        for size in SIZES {
            let clean = scene_render(size, |x, y| asked(&m, x, y));
            // The whole picture one pixel right, and one pixel down.
            let mut right = vec![CLEAR; clean.len()];
            let mut down = vec![CLEAR; clean.len()];
            for y in 0..size.1 {
                for x in 0..size.0 {
                    if x > 0 {
                        right[at(size, x, y)] = clean[at(size, x - 1, y)];
                    }
                    if y > 0 {
                        down[at(size, x, y)] = clean[at(size, x, y - 1)];
                    }
                }
            }
            for px in [right, down] {
                let e = check_scene(&px, size).unwrap_err();
                assert!(e.contains("the reference at that resolution has"), "{size:?}: {e}");
            }
            // Only the 2x1 bin replayed one low-resolution pixel off.
            let mut px = clean.clone();
            let (r, rw) = scene_reference(size, (2, 1));
            for y in 0..size.1 {
                for x in 16..32 {
                    let q = r[(y * rw + x / 2 + 1) as usize];
                    if q[3] == 17 && px[at(size, x, y)][3] != 255 {
                        px[at(size, x, y)] = [q[0], q[1], q[2], 2 * 16 + 1];
                    }
                }
            }
            assert!(check_scene(&px, size).is_err(), "{size:?}");
        }
    }

    #[test]
    fn a_wrong_pixel_or_area_is_reported() {
        let m = map();
        let size = SIZES[0];
        let clean = scene_render(size, |x, y| asked(&m, x, y));
        // One channel of one pixel off by one.
        let mut px = clean.clone();
        px[at(size, 20, 10)][1] ^= 1;
        assert!(check_scene(&px, size).unwrap_err().contains("pixel (20,10)"));
        // The 1x1 column labelled 2x2 (colours of one resolution, area of another).
        let mut px = clean.clone();
        for p in px.iter_mut().take(size.0 as usize * size.1 as usize) {
            if p[3] == 17 {
                p[3] = 2 * 16 + 2;
            }
        }
        assert!(check_scene(&px, size).is_err());
    }

    /// Comparing only what was drawn must not let an empty or half-empty
    /// render pass.
    #[test]
    fn a_render_missing_most_of_the_scene_is_reported() {
        let m = map();
        let size = SIZES[0];
        let nothing = vec![CLEAR; (size.0 * size.1) as usize];
        assert!(check_scene(&nothing, size).unwrap_err().contains("only 0 pixels match"));
        // Only the 1x1 column drawn.
        let mut px = scene_render(size, |x, y| asked(&m, x, y));
        for y in 0..size.1 {
            for x in 16..size.0 {
                px[at(size, x, y)] = CLEAR;
            }
        }
        assert!(check_scene(&px, size).unwrap_err().contains("pixels match a reference"));
    }
}

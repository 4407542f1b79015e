//! The CTS-style fragment shader interlock matrix, mirroring
//! `dEQP-VK.fragment_shader_interlock.basic.*`: {no discard, discard} ×
//! {storage image, SSBO} × {pixel, sample} × {ordered, unordered} ×
//! {1x, 4x MSAA} × {without, with sample shading} × sizes. Each case draws 31
//! instanced full-screen quads whose fragments set their instance's bit with a
//! non-atomic read-modify-write inside the critical section
//! (`tests/shaders/interlock.frag`); the result is checked on the CPU. The
//! instances may be split over several draws (`draws`), each recorded in a
//! secondary command buffer (`secondaries`).
//!
//! The coverage family (`coverage_matrix`) mirrors the CTS cases that the
//! first family lacks: the words accumulate each
//! instance's coverage mask (`tests/shaders/interlock_coverage.frag`), the
//! quad is a triangle strip, discard happens before, inside and after the
//! section (the CTS's killOdd), and the shading-rate modes draw at a 2x2
//! pipeline rate with one word per coarse fragment. The CTS's shading-rate
//! modes with sample shading (4x) are there too: one word per sample, one
//! bit per instance (sample shading makes the fragments 1x1).

use crate::render::Gpu;
use ash::vk;

pub const INSTANCES: u32 = 31;
const ORDER_ERROR: u32 = 0x8000_0000;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Resource {
    Image,
    Buffer,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Case {
    /// "pixel_interlock_ordered" …, or "none" (the negative control).
    pub mode: &'static str,
    pub resource: Resource,
    pub discard: bool,
    pub samples: u32,
    /// One invocation and one word per sample (gl_SampleID).
    pub sample_shading: bool,
    pub width: u32,
    pub height: u32,
    /// Dependent work inside the section (widens race windows on GPUs).
    pub delay: u32,
    /// The fragment shader goes inline, as a VkShaderModuleCreateInfo chained
    /// to the pipeline stage (VK_EXT_graphics_pipeline_library), not through
    /// vkCreateShaderModule.
    pub inline_module: bool,
    /// The render pass is made with vkCreateRenderPass2 (the same pass).
    pub render_pass2: bool,
    /// Draw with shader objects (VK_EXT_shader_object) and dynamic rendering
    /// instead of a pipeline and a render pass (1 sample only).
    pub shader_object: bool,
    /// The instances split over this many draws (instance order kept through
    /// firstInstance).
    pub draws: u32,
    /// Each draw recorded in a secondary command buffer of its own.
    pub secondaries: bool,
    /// A pipeline drawing in dynamic rendering instead of a render pass: the
    /// colour attachment is cleared (and resolved at 4x), stored and checked
    /// after the pass (the ordered strategy splits the rendering).
    pub dynamic_rendering: bool,
    /// The fragment shader asks for early fragment tests (ordered modes).
    pub early_tests: bool,
    /// The coverage family (see the module documentation): `discard` is the
    /// CTS's killOdd, `sample_shading` is false.
    pub coverage: bool,
    /// The pipeline is a fast link of four graphics pipeline libraries
    /// (VK_EXT_graphics_pipeline_library), as vkd3d-proton and DXVK build
    /// theirs.
    pub libraries: bool,
    /// The shape of a rasterizer-ordered-view program (`rov_matrix`): the
    /// colour attachment is written with its full mask and no blending, as a
    /// D3D pixel shader's render target is, so that one full-screen triangle
    /// of a later instance covers whole 64x64 tiles with a shader llvmpipe
    /// may take as opaque.
    pub colour_writes: bool,
    /// Frames of the pass submitted with the same objects (1: made, drawn
    /// once and destroyed); the results are the last frame's. The NVIDIA
    /// driver's fragment work slows 4–5× once enough pipelines were created
    /// on a device (docs/design/ordered-interlock.md §16), so a speed is
    /// measured over frames, not over runs that each make their pipeline.
    pub frames: u32,
}

pub const MODES: [&str; 4] =
    ["pixel_interlock_ordered", "pixel_interlock_unordered", "sample_interlock_ordered", "sample_interlock_unordered"];

impl Case {
    /// A case of the first family, one draw.
    #[allow(clippy::too_many_arguments)]
    pub fn plain(
        mode: &'static str,
        resource: Resource,
        discard: bool,
        samples: u32,
        sample_shading: bool,
        width: u32,
        height: u32,
    ) -> Case {
        Case {
            mode,
            resource,
            discard,
            samples,
            sample_shading,
            width,
            height,
            delay: 0,
            inline_module: false,
            render_pass2: false,
            shader_object: false,
            draws: 1,
            secondaries: false,
            dynamic_rendering: false,
            early_tests: false,
            coverage: false,
            libraries: false,
            colour_writes: false,
            frames: 1,
        }
    }

    pub fn name(&self) -> String {
        let split = match (self.draws, self.secondaries) {
            (1, false) => String::new(),
            (n, false) => format!(".draws{n}"),
            (n, true) => format!(".secondaries{n}"),
        };
        let split = if self.dynamic_rendering { format!("{split}.dynamic") } else { split };
        let split = if self.early_tests { format!("{split}.early") } else { split };
        let split = if self.libraries { format!("{split}.libraries") } else { split };
        let split = if self.colour_writes { format!("{split}.colour_writes") } else { split };
        format!(
            "{}{}.{}.{}.{}x.{}.{}x{}{split}",
            if self.coverage { "coverage." } else { "" },
            self.mode,
            if self.resource == Resource::Image { "image" } else { "ssbo" },
            if self.discard { "discard" } else { "no_discard" },
            self.samples,
            if self.sample_shading { "sample_shading" } else { "no_sample_shading" },
            self.width,
            self.height
        )
    }

    fn ordered(&self) -> bool {
        self.mode.ends_with("_ordered")
    }

    /// A shading-rate mode: drawn at a 2x2 pipeline rate.
    pub fn shading_rate(&self) -> bool {
        self.mode.starts_with("shading_rate") || self.mode == "none_rate"
    }

    /// Coverage bits per instance in a word (the CTS's bitsPerQuad).
    fn bits(&self) -> u32 {
        if self.coverage && self.sample_shading {
            1
        } else if self.shading_rate() {
            self.samples * 4
        } else {
            self.samples
        }
    }

    /// Instances drawn.
    pub fn instances(&self) -> u32 {
        if self.coverage {
            32 / self.bits()
        } else {
            INSTANCES
        }
    }

    /// Pixels per word side (2: one word per 2x2 coarse fragment).
    fn divide(&self) -> u32 {
        if self.coverage && self.shading_rate() && !self.sample_shading {
            2
        } else {
            1
        }
    }

    /// Words per row of the result.
    fn row(&self) -> u32 {
        self.width / self.divide() * if self.sample_shading { self.samples } else { 1 }
    }

    /// Rows of the result.
    fn rows(&self) -> u32 {
        self.height / self.divide()
    }

    fn spirv(&self) -> &'static [u8] {
        if self.early_tests {
            return match (self.mode, self.sample_shading) {
                ("pixel_interlock_ordered", false) => {
                    include_bytes!(concat!(env!("OUT_DIR"), "/interlock-early-pixel_interlock_ordered-pixel.frag.spv"))
                }
                ("pixel_interlock_ordered", true) => {
                    include_bytes!(concat!(env!("OUT_DIR"), "/interlock-early-pixel_interlock_ordered-sample.frag.spv"))
                }
                ("sample_interlock_ordered", false) => {
                    include_bytes!(concat!(env!("OUT_DIR"), "/interlock-early-sample_interlock_ordered-pixel.frag.spv"))
                }
                ("sample_interlock_ordered", true) => {
                    include_bytes!(concat!(
                        env!("OUT_DIR"),
                        "/interlock-early-sample_interlock_ordered-sample.frag.spv"
                    ))
                }
                _ => panic!("no early-tests variant of {}", self.mode),
            };
        }
        if self.coverage && self.sample_shading {
            return match self.mode {
                "shading_rate_interlock_ordered" => include_bytes!(concat!(
                    env!("OUT_DIR"),
                    "/interlock_coverage-shading_rate_interlock_ordered-sample.frag.spv"
                )),
                "shading_rate_interlock_unordered" => include_bytes!(concat!(
                    env!("OUT_DIR"),
                    "/interlock_coverage-shading_rate_interlock_unordered-sample.frag.spv"
                )),
                _ => panic!("no per-sample coverage variant of {}", self.mode),
            };
        }
        if self.coverage {
            macro_rules! coverage {
                ($($mode:literal),*) => {
                    match self.mode {
                        $($mode => include_bytes!(concat!(env!("OUT_DIR"), "/interlock_coverage-", $mode, ".frag.spv")),)*
                        "none_rate" => include_bytes!(concat!(env!("OUT_DIR"), "/interlock_coverage-none.frag.spv")),
                        _ => panic!("unknown coverage mode {}", self.mode),
                    }
                };
            }
            return coverage!(
                "pixel_interlock_ordered",
                "pixel_interlock_unordered",
                "shading_rate_interlock_ordered",
                "shading_rate_interlock_unordered",
                "none"
            );
        }
        macro_rules! pick {
            ($($mode:literal),*) => {
                match (self.mode, self.sample_shading) {
                    $(
                        ($mode, false) => include_bytes!(concat!(env!("OUT_DIR"), "/interlock-", $mode, "-pixel.frag.spv")),
                        ($mode, true) => include_bytes!(concat!(env!("OUT_DIR"), "/interlock-", $mode, "-sample.frag.spv")),
                    )*
                    _ => panic!("unknown interlock mode {}", self.mode),
                }
            };
        }
        pick!(
            "pixel_interlock_ordered",
            "pixel_interlock_unordered",
            "sample_interlock_ordered",
            "sample_interlock_unordered",
            "none"
        )
    }
}

/// The whole matrix (or, `quick`, one size).
pub fn matrix(quick: bool) -> Vec<Case> {
    matrix_sized(if quick { &[(37, 23)] } else { &[(64, 64), (37, 23)] })
}

/// The matrix over the given sizes.
pub fn matrix_sized(sizes: &[(u32, u32)]) -> Vec<Case> {
    let mut v = Vec::new();
    for mode in MODES {
        for resource in [Resource::Image, Resource::Buffer] {
            for discard in [false, true] {
                for samples in [1, 4] {
                    for sample_shading in [false, true] {
                        for &(width, height) in sizes {
                            v.push(Case::plain(mode, resource, discard, samples, sample_shading, width, height));
                        }
                    }
                }
            }
        }
    }
    v
}

/// The modes of the coverage family; `none` and `none_rate` (the 2x2 rate)
/// are its negative controls.
pub const COVERAGE_MODES: [&str; 4] = [
    "pixel_interlock_ordered",
    "pixel_interlock_unordered",
    "shading_rate_interlock_ordered",
    "shading_rate_interlock_unordered",
];

/// The coverage family over the given sizes (rounded down to even sizes:
/// whole 2x2 coarse fragments).
pub fn coverage_matrix(sizes: &[(u32, u32)], modes: &[&'static str]) -> Vec<Case> {
    let mut v = Vec::new();
    for &mode in modes {
        for resource in [Resource::Image, Resource::Buffer] {
            for kill_odd in [false, true] {
                // (samples, sample shading): the CTS skips sample shading at
                // 1x, and the first family has the pixel modes' rows with it.
                let mut shapes = vec![(1, false), (4, false)];
                if mode.starts_with("shading_rate") {
                    shapes.push((4, true));
                }
                for &(samples, sample_shading) in &shapes {
                    for &(width, height) in sizes {
                        v.push(Case {
                            coverage: true,
                            ..Case::plain(mode, resource, kill_odd, samples, sample_shading, width & !1, height & !1)
                        });
                    }
                }
            }
        }
    }
    v
}

/// The first family's ordered modes with the instances split over several
/// draws: 31 draws of one instance, 4 draws of 7 or 8, and 4 draws each in
/// its own secondary command buffer.
pub fn draws_matrix(sizes: &[(u32, u32)]) -> Vec<Case> {
    let mut v = Vec::new();
    for c in matrix_sized(sizes) {
        if !c.mode.ends_with("_ordered") || c.resource != Resource::Image {
            continue;
        }
        for (draws, secondaries) in [(31, false), (4, false), (4, true)] {
            v.push(Case { draws, secondaries, ..c });
        }
    }
    v
}

/// The first family's ordered modes in dynamic rendering: one draw, 31
/// draws of one instance and 4 draws.
pub fn dynamic_matrix(sizes: &[(u32, u32)]) -> Vec<Case> {
    let mut v = Vec::new();
    for c in matrix_sized(sizes) {
        if !c.mode.ends_with("_ordered") || c.resource != Resource::Image {
            continue;
        }
        for draws in [1, 31, 4] {
            v.push(Case { draws, dynamic_rendering: true, ..c });
        }
    }
    v
}

/// The first family's ordered modes with early fragment tests (no depth or
/// stencil attachment: nothing the count draw could write), one draw and 4.
pub fn early_matrix(sizes: &[(u32, u32)]) -> Vec<Case> {
    let mut v = Vec::new();
    for c in matrix_sized(sizes) {
        if !c.mode.ends_with("_ordered") || c.resource != Resource::Image {
            continue;
        }
        for draws in [1, 4] {
            v.push(Case { draws, early_tests: true, ..c });
        }
    }
    v
}

/// The first family's ordered modes through graphics pipeline libraries
/// (a fast link of four), one draw and 4.
pub fn library_matrix(sizes: &[(u32, u32)]) -> Vec<Case> {
    let mut v = Vec::new();
    for c in matrix_sized(sizes) {
        if !c.mode.ends_with("_ordered") || c.resource != Resource::Image {
            continue;
        }
        for draws in [1, 4] {
            v.push(Case { draws, libraries: true, ..c });
        }
    }
    v
}

/// The shape of a real rasterizer-ordered-view program (one draw of 31
/// full-screen quads, a colour attachment written with its full mask and no
/// blending, a read-modify-write in an ordered section checked against every
/// earlier primitive), without discard (with one, llvmpipe never takes the
/// shader as opaque): ordered modes × {image, buffer} × {1x, 4x} × {render
/// pass, dynamic rendering}. `mode` "none" gives the same cases without a
/// critical section (the driver-alone control), `discard` the variant with
/// discards.
pub fn rov_matrix(sizes: &[(u32, u32)], modes: &[&'static str], discard: bool) -> Vec<Case> {
    let mut v = Vec::new();
    for &mode in modes {
        for resource in [Resource::Image, Resource::Buffer] {
            for samples in [1, 4] {
                for dynamic_rendering in [false, true] {
                    for &(width, height) in sizes {
                        let c = Case::plain(mode, resource, discard, samples, false, width, height);
                        v.push(Case { dynamic_rendering, colour_writes: true, ..c });
                    }
                }
            }
        }
    }
    v
}

/// The colour a dynamic-rendering case clears its attachment to (exact in
/// R8G8B8A8_UNORM), and its bytes.
const CLEAR: [f32; 4] = [1.0, 0.0, 0.2, 1.0];
const CLEAR_BYTES: [u8; 4] = [255, 0, 51, 255];

fn dropped(discard: bool, i: u32, x: u32, y: u32) -> bool {
    discard && (x * 7 + y * 3 + i) % 5 == 0
}

/// The word every pixel (or sample) must hold at the end. In the coverage
/// family every instance covers every word completely (the quad covers the
/// target, whole coarse fragments), so a word is all ones — or zero at odd
/// x with killOdd.
pub fn expected_word(case: &Case, x: u32, y: u32) -> u32 {
    if case.coverage {
        return if case.discard && x % 2 == 1 { 0 } else { u32::MAX };
    }
    (0..INSTANCES).filter(|&i| !dropped(case.discard, i, x, y)).fold(0, |m, i| m | 1 << i)
}

/// What a case found.
#[derive(Debug, Default)]
pub struct Outcome {
    /// Words with a bit lost (a race) or an extra bit.
    pub wrong_words: usize,
    /// Words where an invocation saw its predecessors' bits incomplete.
    pub order_errors: usize,
    pub words: usize,
    /// Dynamic rendering: pixels of the (resolved) colour attachment that
    /// do not hold the clear colour after the pass (with `colour_writes`,
    /// the shader's zero).
    pub wrong_colour: usize,
    /// Wall time of the submission (clear, draw, copy) in nanoseconds.
    pub submit_ns: u64,
    /// GPU time of the pass alone (timestamps before its begin and after
    /// its end, the layer's own barriers and draws inside), where the queue
    /// writes timestamps.
    pub gpu_ns: Option<u64>,
    /// Every frame's submit and GPU time, in order (`Case::frames`).
    pub frame_submit_ns: Vec<u64>,
    pub frame_gpu_ns: Vec<u64>,
    /// Wall time of vkCreateShaderModule (fragment) and vkCreateGraphicsPipelines.
    pub module_ns: u64,
    pub pipeline_ns: u64,
}

/// Runs one case on `gpu` (created with `interlock` where the mode needs it).
pub fn run(gpu: &Gpu, case: &Case) -> Outcome {
    let d = &gpu.device;
    let (w, row) = (case.width, case.row());
    let h = case.rows();
    let words = (row * h) as usize;
    let bytes = (words * 4) as u64;
    let samples = vk::SampleCountFlags::from_raw(case.samples);
    unsafe {
        // The result, as a storage image and as a storage buffer; both bound.
        let (image, image_memory, view) = gpu.image_2d(
            vk::Format::R32_UINT,
            (row, h),
            vk::SampleCountFlags::TYPE_1,
            vk::ImageUsageFlags::STORAGE | vk::ImageUsageFlags::TRANSFER_SRC | vk::ImageUsageFlags::TRANSFER_DST,
        );
        let range = crate::render::color_range();
        let storage = gpu.buffer(
            bytes,
            vk::BufferUsageFlags::STORAGE_BUFFER
                | vk::BufferUsageFlags::TRANSFER_SRC
                | vk::BufferUsageFlags::TRANSFER_DST,
            false,
        );
        let readback = gpu.buffer(bytes, vk::BufferUsageFlags::TRANSFER_DST, true);
        // The coverage family's order flags, one word per result word.
        let flags = gpu.buffer(
            bytes,
            vk::BufferUsageFlags::STORAGE_BUFFER
                | vk::BufferUsageFlags::TRANSFER_SRC
                | vk::BufferUsageFlags::TRANSFER_DST,
            false,
        );
        let flags_readback = gpu.buffer(bytes, vk::BufferUsageFlags::TRANSFER_DST, true);

        // A colour attachment of the case's sample count (written only with `colour_writes`).
        let dynamic = case.dynamic_rendering && !case.shader_object;
        let colour_usage = if dynamic && case.samples == 1 {
            vk::ImageUsageFlags::COLOR_ATTACHMENT | vk::ImageUsageFlags::TRANSFER_SRC
        } else {
            vk::ImageUsageFlags::COLOR_ATTACHMENT
        };
        let (color, color_memory, color_view) =
            gpu.image_2d(vk::Format::R8G8B8A8_UNORM, (w, case.height), samples, colour_usage);
        // Dynamic rendering at 4x resolves into a one-sample image.
        let resolved = (dynamic && case.samples > 1).then(|| {
            gpu.image_2d(
                vk::Format::R8G8B8A8_UNORM,
                (w, case.height),
                vk::SampleCountFlags::TYPE_1,
                vk::ImageUsageFlags::COLOR_ATTACHMENT | vk::ImageUsageFlags::TRANSFER_SRC,
            )
        });
        let colour_bytes = u64::from(w * case.height * 4);
        let colour_readback = gpu.buffer(colour_bytes, vk::BufferUsageFlags::TRANSFER_DST, true);
        let att = [vk::AttachmentDescription::default()
            .format(vk::Format::R8G8B8A8_UNORM)
            .samples(samples)
            .load_op(vk::AttachmentLoadOp::DONT_CARE)
            .store_op(vk::AttachmentStoreOp::DONT_CARE)
            .initial_layout(vk::ImageLayout::UNDEFINED)
            .final_layout(vk::ImageLayout::COLOR_ATTACHMENT_OPTIMAL)];
        let refs = [vk::AttachmentReference { attachment: 0, layout: vk::ImageLayout::COLOR_ATTACHMENT_OPTIMAL }];
        let sub = [vk::SubpassDescription::default().color_attachments(&refs)];
        let render_pass = if case.render_pass2 {
            let att2 = [vk::AttachmentDescription2::default()
                .format(att[0].format)
                .samples(att[0].samples)
                .load_op(att[0].load_op)
                .store_op(att[0].store_op)
                .initial_layout(att[0].initial_layout)
                .final_layout(att[0].final_layout)];
            let refs2 = [vk::AttachmentReference2::default()
                .attachment(0)
                .layout(vk::ImageLayout::COLOR_ATTACHMENT_OPTIMAL)
                .aspect_mask(vk::ImageAspectFlags::COLOR)];
            let sub2 = [vk::SubpassDescription2::default().color_attachments(&refs2)];
            d.create_render_pass2(&vk::RenderPassCreateInfo2::default().attachments(&att2).subpasses(&sub2), None)
                .unwrap()
        } else {
            d.create_render_pass(&vk::RenderPassCreateInfo::default().attachments(&att).subpasses(&sub), None).unwrap()
        };
        let framebuffer = gpu.framebuffer(render_pass, &[color_view], (w, case.height));

        let bindings = [
            vk::DescriptorSetLayoutBinding::default()
                .binding(0)
                .descriptor_type(vk::DescriptorType::STORAGE_IMAGE)
                .descriptor_count(1)
                .stage_flags(vk::ShaderStageFlags::FRAGMENT),
            vk::DescriptorSetLayoutBinding::default()
                .binding(1)
                .descriptor_type(vk::DescriptorType::STORAGE_BUFFER)
                .descriptor_count(1)
                .stage_flags(vk::ShaderStageFlags::FRAGMENT),
            vk::DescriptorSetLayoutBinding::default()
                .binding(2)
                .descriptor_type(vk::DescriptorType::STORAGE_BUFFER)
                .descriptor_count(1)
                .stage_flags(vk::ShaderStageFlags::FRAGMENT),
        ];
        let (set_layout, pool, set) = gpu.descriptor_set(&bindings);
        let layouts = [set_layout];
        let image_info = [vk::DescriptorImageInfo {
            sampler: vk::Sampler::null(),
            image_view: view,
            image_layout: vk::ImageLayout::GENERAL,
        }];
        let buffer_info = [vk::DescriptorBufferInfo { buffer: storage.buffer, offset: 0, range: vk::WHOLE_SIZE }];
        let flags_info = [vk::DescriptorBufferInfo { buffer: flags.buffer, offset: 0, range: vk::WHOLE_SIZE }];
        d.update_descriptor_sets(
            &[
                vk::WriteDescriptorSet::default()
                    .dst_set(set)
                    .dst_binding(0)
                    .descriptor_type(vk::DescriptorType::STORAGE_IMAGE)
                    .image_info(&image_info),
                vk::WriteDescriptorSet::default()
                    .dst_set(set)
                    .dst_binding(1)
                    .descriptor_type(vk::DescriptorType::STORAGE_BUFFER)
                    .buffer_info(&buffer_info),
                vk::WriteDescriptorSet::default()
                    .dst_set(set)
                    .dst_binding(2)
                    .descriptor_type(vk::DescriptorType::STORAGE_BUFFER)
                    .buffer_info(&flags_info),
            ],
            &[],
        );
        let push = [vk::PushConstantRange { stage_flags: vk::ShaderStageFlags::FRAGMENT, offset: 0, size: 12 }];
        let layout = d
            .create_pipeline_layout(
                &vk::PipelineLayoutCreateInfo::default().set_layouts(&layouts).push_constant_ranges(&push),
                None,
            )
            .unwrap();

        let vs_spirv: &[u8] = if case.coverage {
            include_bytes!(concat!(env!("OUT_DIR"), "/interlock_strip.vert.spv"))
        } else {
            include_bytes!(concat!(env!("OUT_DIR"), "/interlock.vert.spv"))
        };
        let vs = gpu.shader(vs_spirv);
        let t = std::time::Instant::now();
        let fs_words = ash::util::read_spv(&mut std::io::Cursor::new(case.spirv())).unwrap();
        let fs = if case.inline_module { vk::ShaderModule::null() } else { gpu.shader(case.spirv()) };
        let module_ns = t.elapsed().as_nanos() as u64;
        let mut inline = vk::ShaderModuleCreateInfo::default().code(&fs_words);
        let spec_data: [u32; 6] = [
            (case.resource == Resource::Buffer) as u32,
            case.discard as u32,
            case.ordered() as u32,
            case.bits(),
            case.divide(),
            case.samples,
        ];
        let entries =
            [0u32, 1, 2, 3, 4, 5].map(|i| vk::SpecializationMapEntry { constant_id: i, offset: i * 4, size: 4 });
        let spec_bytes: Vec<u8> = spec_data.iter().flat_map(|v| v.to_ne_bytes()).collect();
        let spec = vk::SpecializationInfo::default().map_entries(&entries).data(&spec_bytes);
        let stages = [
            vk::PipelineShaderStageCreateInfo::default().stage(vk::ShaderStageFlags::VERTEX).module(vs).name(c"main"),
            if case.inline_module {
                vk::PipelineShaderStageCreateInfo::default()
                    .stage(vk::ShaderStageFlags::FRAGMENT)
                    .name(c"main")
                    .specialization_info(&spec)
                    .push_next(&mut inline)
            } else {
                vk::PipelineShaderStageCreateInfo::default()
                    .stage(vk::ShaderStageFlags::FRAGMENT)
                    .module(fs)
                    .name(c"main")
                    .specialization_info(&spec)
            },
        ];
        let vertex = vk::PipelineVertexInputStateCreateInfo::default();
        let (topology, vertices) = if case.coverage {
            (vk::PrimitiveTopology::TRIANGLE_STRIP, 4)
        } else {
            (vk::PrimitiveTopology::TRIANGLE_LIST, 6)
        };
        let ia = vk::PipelineInputAssemblyStateCreateInfo::default().topology(topology);
        let (fw, fh) = (case.width, case.height);
        let viewports =
            [vk::Viewport { x: 0.0, y: 0.0, width: fw as f32, height: fh as f32, min_depth: 0.0, max_depth: 1.0 }];
        let scissors = [vk::Rect2D { offset: vk::Offset2D::default(), extent: vk::Extent2D { width: fw, height: fh } }];
        let vp = vk::PipelineViewportStateCreateInfo::default().viewports(&viewports).scissors(&scissors);
        let rs = vk::PipelineRasterizationStateCreateInfo::default()
            .polygon_mode(vk::PolygonMode::FILL)
            .cull_mode(vk::CullModeFlags::NONE)
            .line_width(1.0);
        let ms = vk::PipelineMultisampleStateCreateInfo::default()
            .rasterization_samples(samples)
            .sample_shading_enable(case.sample_shading)
            .min_sample_shading(1.0);
        let written = if case.colour_writes { vk::ColorComponentFlags::RGBA } else { vk::ColorComponentFlags::empty() };
        let blend = [vk::PipelineColorBlendAttachmentState::default().color_write_mask(written)];
        let cbs = vk::PipelineColorBlendStateCreateInfo::default().attachments(&blend);
        // The shading-rate modes: a 2x2 pipeline rate.
        let mut rate = vk::PipelineFragmentShadingRateStateCreateInfoKHR::default()
            .fragment_size(vk::Extent2D { width: 2, height: 2 })
            .combiner_ops([vk::FragmentShadingRateCombinerOpKHR::KEEP; 2]);
        let mut info = vk::GraphicsPipelineCreateInfo::default()
            .stages(&stages)
            .vertex_input_state(&vertex)
            .input_assembly_state(&ia)
            .viewport_state(&vp)
            .rasterization_state(&rs)
            .multisample_state(&ms)
            .color_blend_state(&cbs)
            .layout(layout)
            .render_pass(render_pass);
        let colour_formats = [vk::Format::R8G8B8A8_UNORM];
        let mut rendering = vk::PipelineRenderingCreateInfo::default().color_attachment_formats(&colour_formats);
        if dynamic {
            info = info.render_pass(vk::RenderPass::null()).push_next(&mut rendering);
        }
        if case.coverage && case.shading_rate() {
            info = info.push_next(&mut rate);
        }
        let t = std::time::Instant::now();
        let so = ash::ext::shader_object::Device::new(&gpu.instance, &gpu.device);
        let mut libraries = Vec::new();
        let (pipeline, shaders) = if case.shader_object {
            let vs_words = ash::util::read_spv(&mut std::io::Cursor::new(
                &include_bytes!(concat!(env!("OUT_DIR"), "/interlock.vert.spv"))[..],
            ))
            .unwrap();
            let infos = [
                vk::ShaderCreateInfoEXT::default()
                    .stage(vk::ShaderStageFlags::VERTEX)
                    .next_stage(vk::ShaderStageFlags::FRAGMENT)
                    .code_type(vk::ShaderCodeTypeEXT::SPIRV)
                    .code(std::slice::from_raw_parts(vs_words.as_ptr() as *const u8, vs_words.len() * 4))
                    .name(c"main")
                    .set_layouts(&layouts)
                    .push_constant_ranges(&push),
                vk::ShaderCreateInfoEXT::default()
                    .stage(vk::ShaderStageFlags::FRAGMENT)
                    .code_type(vk::ShaderCodeTypeEXT::SPIRV)
                    .code(std::slice::from_raw_parts(fs_words.as_ptr() as *const u8, fs_words.len() * 4))
                    .name(c"main")
                    .set_layouts(&layouts)
                    .push_constant_ranges(&push)
                    .specialization_info(&spec),
            ];
            (vk::Pipeline::null(), so.create_shaders(&infos, None).map_err(|(_, e)| e).expect("vkCreateShadersEXT"))
        } else if case.libraries {
            let split = crate::render::LibrarySplit { pre_stages: 1, ..Default::default() };
            let (p, l) = crate::render::link_libraries(d, &info, split);
            libraries = l;
            (p, Vec::new())
        } else {
            let info = info.flags(info.flags | gpu.statistics_flags());
            let p =
                d.create_graphics_pipelines(vk::PipelineCache::null(), &[info], None).map_err(|(_, e)| e).unwrap()[0];
            gpu.print_pipeline_statistics(p);
            (p, Vec::new())
        };
        let pipeline_ns = t.elapsed().as_nanos() as u64;

        let secondary_pool = d
            .create_command_pool(&vk::CommandPoolCreateInfo::default().queue_family_index(gpu.queue_family), None)
            .unwrap();
        // One frame: the targets cleared, the pass, the results copied out.
        let frame = |cb: vk::CommandBuffer, timer: &Option<crate::render::PassTimer>| {
            if let Some(t) = timer {
                t.reset(gpu, cb);
            }
            gpu.image_from_undefined(
                cb,
                image,
                range,
                vk::ImageLayout::GENERAL,
                (vk::PipelineStageFlags::TRANSFER, vk::AccessFlags::TRANSFER_WRITE),
            );
            d.cmd_clear_color_image(
                cb,
                image,
                vk::ImageLayout::GENERAL,
                &vk::ClearColorValue { uint32: [0; 4] },
                &[range],
            );
            gpu.zero_for_fragment_shaders(cb, storage.buffer);
            gpu.zero_for_fragment_shaders(cb, flags.buffer);
            if let Some(t) = timer {
                t.stamp(gpu, cb, 0);
            }
            if case.shader_object {
                gpu.image_from_undefined(
                    cb,
                    color,
                    range,
                    vk::ImageLayout::COLOR_ATTACHMENT_OPTIMAL,
                    (vk::PipelineStageFlags::COLOR_ATTACHMENT_OUTPUT, vk::AccessFlags::COLOR_ATTACHMENT_WRITE),
                );
                let atts = [vk::RenderingAttachmentInfo::default()
                    .image_view(color_view)
                    .image_layout(vk::ImageLayout::COLOR_ATTACHMENT_OPTIMAL)
                    .load_op(vk::AttachmentLoadOp::DONT_CARE)
                    .store_op(vk::AttachmentStoreOp::DONT_CARE)];
                d.cmd_begin_rendering(
                    cb,
                    &vk::RenderingInfo::default().render_area(scissors[0]).layer_count(1).color_attachments(&atts),
                );
                so.cmd_bind_shaders(cb, &[vk::ShaderStageFlags::VERTEX, vk::ShaderStageFlags::FRAGMENT], &shaders);
                so.cmd_set_viewport_with_count(cb, &viewports);
                so.cmd_set_scissor_with_count(cb, &scissors);
                so.cmd_set_rasterizer_discard_enable(cb, false);
                so.cmd_set_cull_mode(cb, vk::CullModeFlags::NONE);
                so.cmd_set_front_face(cb, vk::FrontFace::COUNTER_CLOCKWISE);
                so.cmd_set_depth_test_enable(cb, false);
                so.cmd_set_depth_write_enable(cb, false);
                so.cmd_set_depth_bias_enable(cb, false);
                so.cmd_set_depth_bounds_test_enable(cb, false);
                so.cmd_set_stencil_test_enable(cb, false);
                so.cmd_set_primitive_topology(cb, vk::PrimitiveTopology::TRIANGLE_LIST);
                so.cmd_set_primitive_restart_enable(cb, false);
                so.cmd_set_polygon_mode(cb, vk::PolygonMode::FILL);
                so.cmd_set_rasterization_samples(cb, vk::SampleCountFlags::TYPE_1);
                so.cmd_set_sample_mask(cb, vk::SampleCountFlags::TYPE_1, &[!0]);
                so.cmd_set_alpha_to_coverage_enable(cb, false);
                so.cmd_set_color_blend_enable(cb, 0, &[vk::FALSE]);
                so.cmd_set_color_write_mask(cb, 0, &[vk::ColorComponentFlags::empty()]);
                so.cmd_set_vertex_input(cb, &[], &[]);
            } else if dynamic {
                let targets: Vec<vk::Image> = [Some(color), resolved.map(|r| r.0)].into_iter().flatten().collect();
                for t in targets {
                    gpu.image_from_undefined(
                        cb,
                        t,
                        range,
                        vk::ImageLayout::COLOR_ATTACHMENT_OPTIMAL,
                        (vk::PipelineStageFlags::COLOR_ATTACHMENT_OUTPUT, vk::AccessFlags::COLOR_ATTACHMENT_WRITE),
                    );
                }
                let mut att = vk::RenderingAttachmentInfo::default()
                    .image_view(color_view)
                    .image_layout(vk::ImageLayout::COLOR_ATTACHMENT_OPTIMAL)
                    .load_op(vk::AttachmentLoadOp::CLEAR)
                    .clear_value(vk::ClearValue { color: vk::ClearColorValue { float32: CLEAR } });
                att = match resolved {
                    // The multisampled image itself is not kept.
                    Some(r) => att
                        .store_op(vk::AttachmentStoreOp::DONT_CARE)
                        .resolve_mode(vk::ResolveModeFlags::AVERAGE)
                        .resolve_image_view(r.2)
                        .resolve_image_layout(vk::ImageLayout::COLOR_ATTACHMENT_OPTIMAL),
                    None => att.store_op(vk::AttachmentStoreOp::STORE),
                };
                let atts = [att];
                d.cmd_begin_rendering(
                    cb,
                    &vk::RenderingInfo::default().render_area(scissors[0]).layer_count(1).color_attachments(&atts),
                );
            } else {
                d.cmd_begin_render_pass(
                    cb,
                    &vk::RenderPassBeginInfo::default()
                        .render_pass(render_pass)
                        .framebuffer(framebuffer)
                        .render_area(scissors[0]),
                    if case.secondaries {
                        vk::SubpassContents::SECONDARY_COMMAND_BUFFERS
                    } else {
                        vk::SubpassContents::INLINE
                    },
                );
            }
            let second = if case.coverage { h / 4 } else { case.samples };
            let pc: Vec<u8> = [row, second, case.delay].iter().flat_map(|v| v.to_ne_bytes()).collect();
            // The instances, in order, over `draws` draws (firstInstance keeps
            // each instance's index).
            let per = case.instances().div_ceil(case.draws.max(1));
            let draws: Vec<(u32, u32)> = (0..case.instances())
                .step_by(per as usize)
                .map(|first| (first, per.min(case.instances() - first)))
                .collect();
            let record = |cb: vk::CommandBuffer, draws: &[(u32, u32)]| {
                if !case.shader_object {
                    d.cmd_bind_pipeline(cb, vk::PipelineBindPoint::GRAPHICS, pipeline);
                }
                d.cmd_bind_descriptor_sets(cb, vk::PipelineBindPoint::GRAPHICS, layout, 0, &[set], &[]);
                d.cmd_push_constants(cb, layout, vk::ShaderStageFlags::FRAGMENT, 0, &pc);
                for &(first, count) in draws {
                    d.cmd_draw(cb, vertices, count, 0, first);
                }
            };
            if case.secondaries {
                let secondaries = d
                    .allocate_command_buffers(
                        &vk::CommandBufferAllocateInfo::default()
                            .command_pool(secondary_pool)
                            .level(vk::CommandBufferLevel::SECONDARY)
                            .command_buffer_count(draws.len() as u32),
                    )
                    .unwrap();
                for (sc, draw) in secondaries.iter().zip(&draws) {
                    let inheritance =
                        vk::CommandBufferInheritanceInfo::default().render_pass(render_pass).framebuffer(framebuffer);
                    d.begin_command_buffer(
                        *sc,
                        &vk::CommandBufferBeginInfo::default()
                            .flags(vk::CommandBufferUsageFlags::RENDER_PASS_CONTINUE)
                            .inheritance_info(&inheritance),
                    )
                    .unwrap();
                    record(*sc, std::slice::from_ref(draw));
                    d.end_command_buffer(*sc).unwrap();
                }
                d.cmd_execute_commands(cb, &secondaries);
            } else {
                record(cb, &draws);
            }
            if case.shader_object || dynamic {
                d.cmd_end_rendering(cb);
            } else {
                d.cmd_end_render_pass(cb);
            }
            if let Some(t) = timer {
                t.stamp(gpu, cb, 1);
            }
            if dynamic {
                let kept = resolved.map_or(color, |r| r.0);
                gpu.image_barrier(
                    cb,
                    kept,
                    range,
                    (vk::ImageLayout::COLOR_ATTACHMENT_OPTIMAL, vk::ImageLayout::TRANSFER_SRC_OPTIMAL),
                    (vk::PipelineStageFlags::COLOR_ATTACHMENT_OUTPUT, vk::AccessFlags::COLOR_ATTACHMENT_WRITE),
                    (vk::PipelineStageFlags::TRANSFER, vk::AccessFlags::TRANSFER_READ),
                );
                gpu.copy_image_to_buffer(
                    cb,
                    kept,
                    vk::ImageLayout::TRANSFER_SRC_OPTIMAL,
                    (w, case.height),
                    1,
                    colour_readback.buffer,
                );
            }
            gpu.memory_barrier(
                cb,
                (vk::PipelineStageFlags::FRAGMENT_SHADER, vk::AccessFlags::SHADER_WRITE),
                (vk::PipelineStageFlags::TRANSFER, vk::AccessFlags::TRANSFER_READ),
            );
            match case.resource {
                Resource::Image => {
                    gpu.copy_image_to_buffer(cb, image, vk::ImageLayout::GENERAL, (row, h), 1, readback.buffer)
                }
                Resource::Buffer => d.cmd_copy_buffer(
                    cb,
                    storage.buffer,
                    readback.buffer,
                    &[vk::BufferCopy { src_offset: 0, dst_offset: 0, size: bytes }],
                ),
            }
            d.cmd_copy_buffer(
                cb,
                flags.buffer,
                flags_readback.buffer,
                &[vk::BufferCopy { src_offset: 0, dst_offset: 0, size: bytes }],
            );
            gpu.memory_barrier(
                cb,
                (vk::PipelineStageFlags::TRANSFER, vk::AccessFlags::TRANSFER_WRITE),
                (vk::PipelineStageFlags::HOST, vk::AccessFlags::HOST_READ),
            );
        };
        // `frames`: the same recording submitted again (each frame clears
        // what it checks), as a renderer draws with one set of objects.
        let mut frame_submit_ns = Vec::new();
        let mut frame_gpu_ns = Vec::new();
        for _ in 0..case.frames.max(1) {
            let timer = crate::render::PassTimer::new(gpu);
            let started = std::time::Instant::now();
            gpu.one_time_submit(|cb| frame(cb, &timer));
            frame_submit_ns.push(started.elapsed().as_nanos() as u64);
            frame_gpu_ns.extend(timer.map(|t| t.read(gpu)));
        }
        let gpu_ns = frame_gpu_ns.last().copied();
        let submit_ns = frame_submit_ns.last().copied().unwrap_or_default();
        let result = std::slice::from_raw_parts(readback.map as *const u32, words).to_vec();
        let flagged =
            std::slice::from_raw_parts(flags_readback.map as *const u32, words).iter().filter(|f| **f != 0).count();
        let wrong_colour = if dynamic {
            std::slice::from_raw_parts(colour_readback.map, colour_bytes as usize)
                .chunks_exact(4)
                .filter(|p| *p != if case.colour_writes { [0; 4] } else { CLEAR_BYTES })
                .count()
        } else {
            0
        };
        d.destroy_command_pool(secondary_pool, None);

        if case.shader_object {
            for sh in shaders {
                so.destroy_shader(sh, None);
            }
        } else {
            d.destroy_pipeline(pipeline, None);
            for l in libraries {
                d.destroy_pipeline(l, None);
            }
        }
        d.destroy_shader_module(vs, None);
        if fs != vk::ShaderModule::null() {
            d.destroy_shader_module(fs, None);
        }
        d.destroy_pipeline_layout(layout, None);
        d.destroy_descriptor_pool(pool, None);
        d.destroy_descriptor_set_layout(set_layout, None);
        d.destroy_framebuffer(framebuffer, None);
        d.destroy_render_pass(render_pass, None);
        gpu.destroy_image((color, color_memory, color_view));
        if let Some(r) = resolved {
            gpu.destroy_image(r);
        }
        gpu.destroy_buffer(colour_readback);
        gpu.destroy_image((image, image_memory, view));
        gpu.destroy_buffer(storage);
        gpu.destroy_buffer(readback);
        gpu.destroy_buffer(flags);
        gpu.destroy_buffer(flags_readback);

        let (wrong_words, order_errors) = check_words(case, &result);
        // The coverage family flags order errors apart from the words.
        let order_errors = if case.coverage { flagged } else { order_errors };
        Outcome {
            words,
            wrong_words,
            order_errors,
            wrong_colour,
            submit_ns,
            gpu_ns,
            frame_submit_ns,
            frame_gpu_ns,
            module_ns,
            pipeline_ns,
        }
    }
}

/// The CPU check of a case's readback (`row × height` words, row-major; with
/// sample shading a pixel's samples are consecutive words): (words with a bit
/// lost or an extra bit, words whose ordered-mode flag is set). A word the
/// readback lacks counts as wrong, and so does one past the end.
pub fn check_words(case: &Case, result: &[u32]) -> (usize, usize) {
    let (row, h) = (case.row(), case.rows());
    let mut wrong = result.len().saturating_sub((row * h) as usize);
    let mut order_errors = 0;
    for y in 0..h {
        for xs in 0..row {
            // The coverage family's killOdd is on the word's column (the CTS's).
            let x = if case.sample_shading && !case.coverage { xs / case.samples } else { xs };
            let Some(&v) = result.get((y * row + xs) as usize) else {
                wrong += 1;
                continue;
            };
            // The coverage family uses every bit (its order flags are apart).
            let flag = if case.coverage { 0 } else { ORDER_ERROR };
            if v & flag != 0 {
                order_errors += 1;
            }
            if v & !flag != expected_word(case, x, y) {
                wrong += 1;
            }
        }
    }
    (wrong, order_errors)
}

#[cfg(test)]
mod tests {
    //! The word checker fed a faithful CPU model of `interlock.frag` and then
    //! deliberately wrong readbacks: every corruption must be counted.
    use super::*;

    /// The shader's `dropped()`, retyped from tests/shaders/interlock.frag.
    fn shader_drops(case: &Case, i: u32, x: u32, y: u32) -> bool {
        case.discard && (x * 7 + y * 3 + i) % 5 == 0
    }

    /// What `interlock.frag` leaves in one word when the instances of that
    /// pixel (or sample) run their critical sections one at a time in
    /// `order` (draw order unless a test says otherwise): the read, the
    /// ordered-mode check, the write.
    fn run_sections(case: &Case, x: u32, y: u32, order: &[u32]) -> u32 {
        let mut word = 0u32;
        for &i in order {
            if shader_drops(case, i, x, y) {
                continue;
            }
            let mut v = word;
            if case.ordered() {
                let want = (0..i).filter(|&j| !shader_drops(case, j, x, y)).fold(0, |m, j| m | 1 << j);
                if v & !(1 << i) != want {
                    v |= 0x8000_0000;
                }
            }
            word = v | 1 << i;
        }
        word
    }

    /// A whole readback as a correct implementation leaves it.
    fn correct(case: &Case) -> Vec<u32> {
        let order: Vec<u32> = (0..INSTANCES).collect();
        let mut words = Vec::new();
        for y in 0..case.height {
            for xs in 0..case.row() {
                // The coverage family's killOdd is on the word's column (the CTS's).
                let x = if case.sample_shading && !case.coverage { xs / case.samples } else { xs };
                words.push(run_sections(case, x, y, &order));
            }
        }
        words
    }

    fn cases() -> Vec<Case> {
        // Every mode, resource, discard, sample and sample-shading choice, at
        // a small odd size.
        matrix_sized(&[(7, 5)])
    }

    fn case(mode: &'static str, discard: bool, sample_shading: bool) -> Case {
        *cases()
            .iter()
            .find(|c| c.mode == mode && c.discard == discard && c.samples == 4 && c.sample_shading == sample_shading)
            .unwrap()
    }

    #[test]
    fn correct_readbacks_pass() {
        for c in cases() {
            let words = correct(&c);
            assert_eq!(words.len(), (c.row() * c.height) as usize);
            assert_eq!(check_words(&c, &words), (0, 0), "{}", c.name());
        }
    }

    /// The expected words, derived independently: all 31 instance bits
    /// without discard; with discard, the instances whose (7x + 3y + i) is a
    /// multiple of 5 are missing, 6 or 7 of the 31 (31 consecutive i cover
    /// each residue 6 times, one of them 7).
    #[test]
    fn expected_words_follow_from_the_case() {
        let plain = case("pixel_interlock_ordered", false, false);
        assert_eq!(expected_word(&plain, 3, 2), (1u32 << INSTANCES) - 1);
        let discard = case("pixel_interlock_ordered", true, false);
        for (x, y) in [(0, 0), (1, 0), (3, 4), (6, 1)] {
            let w = expected_word(&discard, x, y);
            assert!(matches!(w.count_ones(), 24 | 25), "({x},{y}): {w:#x}");
            assert_eq!(w & 1 << ((5 - (x * 7 + y * 3) % 5) % 5), 0, "({x},{y}): the first dropped instance is set");
        }
    }

    #[test]
    fn a_lost_bit_is_a_wrong_word() {
        for c in cases() {
            let mut words = correct(&c);
            let k = words.len() / 2;
            let bit = words[k].trailing_zeros();
            words[k] &= !(1 << bit);
            assert_eq!(check_words(&c, &words), (1, 0), "{}", c.name());
        }
    }

    /// Two sections overlapping (no lock): both read the word before either
    /// writes, so the earlier instance's bit is overwritten.
    #[test]
    fn a_race_between_two_instances_is_a_wrong_word() {
        let c = case("pixel_interlock_unordered", false, false);
        let mut words = correct(&c);
        let (x, y) = (2, 3);
        let read = run_sections(&c, x, y, &(0..10).collect::<Vec<_>>()); // what 10 and 11 both read
        let _written_by_10 = read | 1 << 10;
        let written_by_11 = read | 1 << 11; // last, over 10's write
        let last = (12..INSTANCES).fold(written_by_11, |v, i| v | 1 << i);
        words[(y * c.row() + x) as usize] = last;
        assert_eq!(check_words(&c, &words), (1, 0));
    }

    #[test]
    fn a_lost_word_is_reported() {
        for c in cases() {
            // Never written (still the cleared zero).
            let mut words = correct(&c);
            words[3] = 0;
            assert_eq!(check_words(&c, &words), (1, 0), "{}", c.name());
            // Missing from the readback (a short copy).
            let mut words = correct(&c);
            words.pop();
            assert_eq!(check_words(&c, &words), (1, 0), "{}", c.name());
            // One too many (a copy of the wrong size).
            let mut words = correct(&c);
            words.push(*words.last().unwrap());
            assert_eq!(check_words(&c, &words), (1, 0), "{}", c.name());
        }
    }

    /// A discarded fragment's bit set: the discard was not honoured.
    #[test]
    fn an_extra_bit_is_a_wrong_word() {
        let c = case("sample_interlock_unordered", true, true);
        let mut words = correct(&c);
        let (x, y) = (4, 1);
        let dropped = (0..INSTANCES).find(|&i| shader_drops(&c, i, x, y)).unwrap();
        words[(y * c.row() + x * c.samples) as usize] |= 1 << dropped;
        assert_eq!(check_words(&c, &words), (1, 0));
    }

    /// With sample shading every sample has its own word: a shader that
    /// ignores gl_SampleID puts every sample's bits in sample 0's word and
    /// leaves the others cleared.
    #[test]
    fn samples_sharing_one_word_are_reported() {
        let c = case("sample_interlock_ordered", false, true);
        let mut words = correct(&c);
        for (k, w) in words.iter_mut().enumerate() {
            if k as u32 % c.samples != 0 {
                *w = 0;
            }
        }
        assert_eq!(check_words(&c, &words), ((c.width * c.height * (c.samples - 1)) as usize, 0));
    }

    /// Ordered modes: an instance entering its section before an earlier
    /// one flags the word (bit 31), which the checker counts as an order
    /// error, not as a lost bit; in an unordered mode the same swap is fine.
    #[test]
    fn an_out_of_order_section_is_an_order_error() {
        for discard in [false, true] {
            let ordered = case("pixel_interlock_ordered", discard, false);
            let mut words = correct(&ordered);
            let (x, y) = (5, 2);
            let mut order: Vec<u32> = (0..INSTANCES).collect();
            // Two instances that both survive discard, swapped.
            let live: Vec<u32> = order.iter().copied().filter(|&i| !shader_drops(&ordered, i, x, y)).collect();
            let (a, b) = (live[3] as usize, live[4] as usize);
            order.swap(a, b);
            words[(y * ordered.row() + x) as usize] = run_sections(&ordered, x, y, &order);
            assert_eq!(check_words(&ordered, &words), (0, 1), "discard={discard}");

            let unordered = Case { mode: "pixel_interlock_unordered", ..ordered };
            let mut words = correct(&unordered);
            words[(y * unordered.row() + x) as usize] = run_sections(&unordered, x, y, &order);
            assert_eq!(check_words(&unordered, &words), (0, 0), "discard={discard}");
        }
        // The flag alone, on a word whose bits are right.
        let c = case("sample_interlock_ordered", false, false);
        let mut words = correct(&c);
        words[0] |= ORDER_ERROR;
        assert_eq!(check_words(&c, &words), (0, 1));
    }

    /// The coverage rows with sample shading (the CTS's shading-rate modes
    /// at 4x with sample shading): one word per sample, 32 instances of one
    /// bit, killOdd on the word's column (odd samples), 1x1 words.
    #[test]
    fn per_sample_coverage_words() {
        let rows = coverage_matrix(&[(8, 6)], &COVERAGE_MODES);
        let sampled: Vec<&Case> = rows.iter().filter(|c| c.sample_shading).collect();
        assert_eq!(sampled.len(), 8);
        assert!(sampled.iter().all(|c| c.shading_rate() && c.samples == 4));
        let kill = *sampled.iter().find(|c| c.discard).unwrap();
        assert_eq!((kill.instances(), kill.row(), kill.rows()), (32, 32, 6));
        let good: Vec<u32> = (0..6 * 32).map(|i| if i % 2 == 1 { 0 } else { u32::MAX }).collect();
        assert_eq!(check_words(kill, &good), (0, 0));
        // One lost bit on an even sample, one extra bit on an odd one.
        let mut bad = good.clone();
        bad[4] &= !(1 << 7);
        bad[33] = 1;
        assert_eq!(check_words(kill, &bad), (2, 0));
        // A pixel's odd sample is not its odd pixel: the killed words are
        // every other sample.
        let by_pixel: Vec<u32> = (0..6 * 32).map(|i| if (i / 4) % 2 == 1 { 0 } else { u32::MAX }).collect();
        assert!(check_words(kill, &by_pixel).0 > 0);
    }
}

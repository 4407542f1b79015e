//! `oit_stress`: a reduced reproducer of issue 18 — the Vulkan shape of
//! nvpro-samples' `vk_order_independent_transparency` (nvpro_core2) running
//! its interlock algorithm (`--algorithm 5 --tailBlend 1`, no AA) headless.
//!
//! What it mirrors from the sample:
//! - one descriptor set layout for every algorithm: binding 0 a uniform
//!   buffer (vertex + fragment), 1 an rg32ui storage texel buffer (the
//!   A-buffer), 2 `imgAux`, 3 `imgAuxSpin`, 4 `imgAuxDepth`, 5 `imgCounter`
//!   (r32ui storage images, fragment stage); one set and one uniform buffer
//!   per frame in flight; one pipeline layout;
//! - a render pass with a colour (B8G8R8A8_SRGB) and a depth (D32_SFLOAT)
//!   attachment, both cleared, with a fragment-shader self-dependency; static
//!   viewport and scissor; premultiplied blending, depth test without writes;
//! - per frame: clear `imgAux` (0) and `imgAuxDepth` (~0) (and `imgAuxSpin`
//!   for the spinlock algorithm) with vkCmdClearColorImage, a transfer →
//!   fragment barrier, the render pass: vertex/index buffers, the set, the
//!   colour pass (indexed spheres, the interlock or spinlock shader), a
//!   by-region fragment → fragment barrier, the composite pass (full-screen
//!   triangle), then a copy of the colour image into a "viewport" image;
//! - a script of sequences (`--script spin,ordered` is the sample's
//!   `init` then `interlock_noaa`): when the algorithm changes, the device
//!   waits idle, every frame image is destroyed and recreated — the spinlock
//!   image only for the spinlock algorithm — the sets are updated only for
//!   the images that exist (so binding 3 keeps a destroyed view, as in the
//!   sample's `updateAllDescriptorSets`), and the shader modules and
//!   pipelines are rebuilt;
//! - after every frame the viewport image is copied to a host buffer and read.
//!
//! Options: `--script M[,M...]` with M one of `ordered`, `unordered`, `none`
//! (the colour pass without interlock), `spin` (the sample's spinlock
//! algorithm), `flat` (ordered, with an interface the varying linker links);
//! `--frames N` per sequence; `--size WxH`; `--objects N`; `--subdiv N`;
//! `--fresh` writes a valid image to every storage-image binding whose image
//! was destroyed (no stale descriptor); `--repeat N` runs the script N times.
//!
//! After the script a reference sequence runs: `none` on images and
//! pipelines made afresh (no algorithm before it, no stale descriptor).
//! llvmpipe shades a tile's fragments on one thread in primitive order, so
//! there every algorithm's picture equals it (`agrees`); a sequence that does
//! not fails the run (except `flat`, whose interface differs). Its control:
//! `--plant-reverse` draws the `ordered` sequences' triangles last to first
//! (tail blending makes the order visible), which must fail the comparison.
//!
//! Prints one line per sequence (`seq=… mode=… checksum=… stable=…
//! agrees=…`), then `reference checksum=…`, and exits 0, 1 (a check
//! failed), 2 (usage) or 3 (validation errors).

use ash::vk;
use overlap_tests::render::{self, Buffer, Gpu, GpuOptions};

const SCENE_VERT: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/oit_stress.vert.spv"));
const FLAT_VERT: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/oit_stress_flat.vert.spv"));
const FULLSCREEN_VERT: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/oit_stress_fullscreen.vert.spv"));
const ORDERED_FRAG: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/oit_stress_ordered.frag.spv"));
const ORDERED_FLAT_FRAG: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/oit_stress_ordered_flat.frag.spv"));
const UNORDERED_FRAG: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/oit_stress_unordered.frag.spv"));
const NONE_FRAG: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/oit_stress_none.frag.spv"));
const SPIN_FRAG: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/oit_stress_spin.frag.spv"));
const COMPOSITE_FRAG: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/oit_stress_composite.frag.spv"));

const COLOR_FORMAT: vk::Format = vk::Format::B8G8R8A8_SRGB;
const VIEWPORT_FORMAT: vk::Format = vk::Format::B8G8R8A8_UNORM;
const DEPTH_FORMAT: vk::Format = vk::Format::D32_SFLOAT;
const OIT_LAYERS: u64 = 8;
/// Frames in flight: sets, uniform buffers, command buffers.
const RING: usize = 2;
/// std140 size of the sample's SceneData.
const UBO_SIZE: u64 = 224;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    Ordered,
    Unordered,
    None,
    Spin,
    Flat,
}

impl Mode {
    fn parse(s: &str) -> Option<Mode> {
        Some(match s {
            "ordered" => Mode::Ordered,
            "unordered" => Mode::Unordered,
            "none" => Mode::None,
            "spin" => Mode::Spin,
            "flat" => Mode::Flat,
            _ => return None,
        })
    }
    fn interlock(self) -> bool {
        matches!(self, Mode::Ordered | Mode::Unordered | Mode::Flat)
    }
    fn shaders(self) -> (&'static [u8], &'static [u8]) {
        match self {
            Mode::Ordered => (SCENE_VERT, ORDERED_FRAG),
            Mode::Unordered => (SCENE_VERT, UNORDERED_FRAG),
            Mode::None => (SCENE_VERT, NONE_FRAG),
            Mode::Spin => (SCENE_VERT, SPIN_FRAG),
            Mode::Flat => (FLAT_VERT, ORDERED_FLAT_FRAG),
        }
    }
}

struct Opts {
    script: Vec<Mode>,
    frames: u32,
    width: u32,
    height: u32,
    objects: u32,
    subdiv: u32,
    fresh: bool,
    repeat: u32,
    plant_reverse: bool,
}

fn usage() -> ! {
    eprintln!(
        "usage: oit_stress [--script M[,M...]] [--frames N] [--size WxH] [--objects N] [--subdiv N] [--fresh] [--repeat N] [--plant-reverse]\n  \
         M: ordered | unordered | none | spin | flat (default script: spin,ordered)"
    );
    std::process::exit(2)
}

fn parse_args() -> Opts {
    let mut o = Opts {
        script: vec![Mode::Spin, Mode::Ordered],
        frames: 4,
        width: 400,
        height: 256,
        objects: 256,
        subdiv: 8,
        fresh: false,
        repeat: 1,
        plant_reverse: false,
    };
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut i = 0;
    let val = |i: usize| args.get(i + 1).cloned().unwrap_or_else(|| usage());
    while i < args.len() {
        match args[i].as_str() {
            "--script" => {
                o.script = val(i).split(',').map(|m| Mode::parse(m).unwrap_or_else(|| usage())).collect();
                i += 1;
            }
            "--frames" => {
                o.frames = val(i).parse().unwrap_or_else(|_| usage());
                i += 1;
            }
            "--size" => {
                let v = val(i);
                let (w, h) = v.split_once('x').unwrap_or_else(|| usage());
                o.width = w.parse().unwrap_or_else(|_| usage());
                o.height = h.parse().unwrap_or_else(|_| usage());
                i += 1;
            }
            "--objects" => {
                o.objects = val(i).parse().unwrap_or_else(|_| usage());
                i += 1;
            }
            "--subdiv" => {
                o.subdiv = val(i).parse().unwrap_or_else(|_| usage());
                i += 1;
            }
            "--repeat" => {
                o.repeat = val(i).parse().unwrap_or_else(|_| usage());
                i += 1;
            }
            "--fresh" => o.fresh = true,
            "--plant-reverse" => o.plant_reverse = true,
            _ => usage(),
        }
        i += 1;
    }
    if o.script.is_empty() || o.frames == 0 || o.width == 0 || o.height == 0 || o.subdiv < 2 {
        usage();
    }
    o
}

/// An image with its memory and view.
struct Img {
    image: vk::Image,
    memory: vk::DeviceMemory,
    view: vk::ImageView,
}

fn image(g: &Gpu, format: vk::Format, w: u32, h: u32, usage: vk::ImageUsageFlags, aspect: vk::ImageAspectFlags) -> Img {
    let (image, memory, view) = g.image(format, (w, h), 1, vk::SampleCountFlags::TYPE_1, usage, aspect);
    Img { image, memory, view }
}

fn destroy_image(g: &Gpu, i: Img) {
    g.destroy_image((i.image, i.memory, i.view));
}

fn range(aspect: vk::ImageAspectFlags) -> vk::ImageSubresourceRange {
    vk::ImageSubresourceRange { aspect_mask: aspect, ..render::color_range() }
}

/// The images of one algorithm (the sample's createFrameImages).
struct FrameImages {
    color: Img,
    depth: Img,
    viewport: Img,
    abuffer: Buffer,
    abuffer_view: vk::BufferView,
    aux: Img,
    aux_depth: Img,
    aux_spin: Option<Img>,
    framebuffer: vk::Framebuffer,
}

fn create_frame_images(g: &Gpu, o: &Opts, render_pass: vk::RenderPass, mode: Mode) -> FrameImages {
    let d = &g.device;
    let (w, h) = (o.width, o.height);
    let color = image(
        g,
        COLOR_FORMAT,
        w,
        h,
        vk::ImageUsageFlags::COLOR_ATTACHMENT | vk::ImageUsageFlags::TRANSFER_SRC,
        vk::ImageAspectFlags::COLOR,
    );
    let depth =
        image(g, DEPTH_FORMAT, w, h, vk::ImageUsageFlags::DEPTH_STENCIL_ATTACHMENT, vk::ImageAspectFlags::DEPTH);
    let viewport = image(
        g,
        VIEWPORT_FORMAT,
        w,
        h,
        // Sampled: the sample shows it through ImGui.
        vk::ImageUsageFlags::TRANSFER_DST | vk::ImageUsageFlags::TRANSFER_SRC | vk::ImageUsageFlags::SAMPLED,
        vk::ImageAspectFlags::COLOR,
    );
    let abuffer = g.buffer(w as u64 * h as u64 * OIT_LAYERS * 8, vk::BufferUsageFlags::STORAGE_TEXEL_BUFFER, false);
    let abuffer_view = unsafe {
        d.create_buffer_view(
            &vk::BufferViewCreateInfo::default()
                .buffer(abuffer.buffer)
                .format(vk::Format::R32G32_UINT)
                .range(vk::WHOLE_SIZE),
            None,
        )
        .unwrap()
    };
    let aux_usage = vk::ImageUsageFlags::STORAGE | vk::ImageUsageFlags::TRANSFER_DST;
    let aux = image(g, vk::Format::R32_UINT, w, h, aux_usage, vk::ImageAspectFlags::COLOR);
    let aux_depth = image(g, vk::Format::R32_UINT, w, h, aux_usage, vk::ImageAspectFlags::COLOR);
    let aux_spin =
        (mode == Mode::Spin).then(|| image(g, vk::Format::R32_UINT, w, h, aux_usage, vk::ImageAspectFlags::COLOR));
    let views = [color.view, depth.view];
    let framebuffer = g.framebuffer(render_pass, &views, (w, h));
    // Initial layouts, as the sample's transitions in createFrameImages.
    g.one_time_submit(|cb| {
        let all = (vk::PipelineStageFlags::ALL_COMMANDS, vk::AccessFlags::MEMORY_READ | vk::AccessFlags::MEMORY_WRITE);
        let color_range = range(vk::ImageAspectFlags::COLOR);
        g.image_from_undefined(cb, color.image, color_range, vk::ImageLayout::COLOR_ATTACHMENT_OPTIMAL, all);
        g.image_from_undefined(
            cb,
            depth.image,
            range(vk::ImageAspectFlags::DEPTH),
            vk::ImageLayout::DEPTH_STENCIL_ATTACHMENT_OPTIMAL,
            all,
        );
        g.image_from_undefined(cb, viewport.image, color_range, vk::ImageLayout::GENERAL, all);
        for i in [Some(&aux), Some(&aux_depth), aux_spin.as_ref()].into_iter().flatten() {
            g.image_from_undefined(cb, i.image, color_range, vk::ImageLayout::GENERAL, all);
        }
    });
    FrameImages { color, depth, viewport, abuffer, abuffer_view, aux, aux_depth, aux_spin, framebuffer }
}

fn destroy_frame_images(g: &Gpu, f: FrameImages) {
    unsafe {
        g.device.destroy_framebuffer(f.framebuffer, None);
        g.device.destroy_buffer_view(f.abuffer_view, None);
    }
    g.destroy_buffer(f.abuffer);
    for i in [Some(f.color), Some(f.depth), Some(f.viewport), Some(f.aux), Some(f.aux_depth), f.aux_spin]
        .into_iter()
        .flatten()
    {
        destroy_image(g, i);
    }
}

/// xorshift: the scene is the same every run.
struct Rng(u64);
impl Rng {
    fn f(&mut self) -> f32 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 >> 40) as f32 / (1u64 << 24) as f32
    }
}

/// Spheres (UV, `subdiv * 2` segments by `subdiv` rings) at random places,
/// with random colours: vertices of (pos, normal, colour), 40 bytes each.
fn scene(o: &Opts) -> (Vec<f32>, Vec<u32>) {
    let mut rng = Rng(3625);
    let (segs, rings) = (o.subdiv * 2, o.subdiv);
    let mut v = Vec::new();
    let mut idx = Vec::new();
    for _ in 0..o.objects {
        let c = [rng.f() * 1.6 - 0.8, rng.f() * 1.6 - 0.8, rng.f() * 0.5 + 0.25];
        let r = 0.04 + rng.f() * 0.1;
        let mut col = [rng.f(), rng.f(), rng.f(), rng.f()];
        for k in 0..3 {
            col[k] *= col[k];
        }
        let first = (v.len() / 10) as u32;
        for ri in 0..=rings {
            let theta = std::f32::consts::PI * ri as f32 / rings as f32;
            for si in 0..=segs {
                let phi = 2.0 * std::f32::consts::PI * si as f32 / segs as f32;
                let n = [theta.sin() * phi.cos(), theta.cos(), theta.sin() * phi.sin()];
                v.extend_from_slice(&[c[0] + n[0] * r, c[1] + n[1] * r, c[2] + n[2] * r * 0.5]);
                v.extend_from_slice(&n);
                v.extend_from_slice(&col);
            }
        }
        for ri in 0..rings {
            for si in 0..segs {
                let a = first + ri * (segs + 1) + si;
                let b = a + segs + 1;
                idx.extend_from_slice(&[a, b, a + 1, a + 1, b, b + 1]);
            }
        }
    }
    (v, idx)
}

/// The pipelines of one algorithm and the modules they were made from (the
/// sample's caching compiler keeps its modules alive).
struct Pipelines {
    color: vk::Pipeline,
    composite: vk::Pipeline,
    modules: Vec<vk::ShaderModule>,
}

#[allow(clippy::too_many_arguments)]
fn create_pipeline(
    g: &Gpu,
    o: &Opts,
    layout: vk::PipelineLayout,
    render_pass: vk::RenderPass,
    vs: vk::ShaderModule,
    fs: vk::ShaderModule,
    vertex_input: bool,
) -> vk::Pipeline {
    let stages = [
        vk::PipelineShaderStageCreateInfo::default().stage(vk::ShaderStageFlags::VERTEX).module(vs).name(c"main"),
        vk::PipelineShaderStageCreateInfo::default().stage(vk::ShaderStageFlags::FRAGMENT).module(fs).name(c"main"),
    ];
    let bindings =
        [vk::VertexInputBindingDescription { binding: 0, stride: 40, input_rate: vk::VertexInputRate::VERTEX }];
    let attributes = [
        vk::VertexInputAttributeDescription {
            location: 0,
            binding: 0,
            format: vk::Format::R32G32B32_SFLOAT,
            offset: 0,
        },
        vk::VertexInputAttributeDescription {
            location: 1,
            binding: 0,
            format: vk::Format::R32G32B32_SFLOAT,
            offset: 12,
        },
        vk::VertexInputAttributeDescription {
            location: 2,
            binding: 0,
            format: vk::Format::R32G32B32A32_SFLOAT,
            offset: 24,
        },
    ];
    let mut vertex = vk::PipelineVertexInputStateCreateInfo::default();
    if vertex_input {
        vertex = vertex.vertex_binding_descriptions(&bindings).vertex_attribute_descriptions(&attributes);
    }
    let ia = vk::PipelineInputAssemblyStateCreateInfo::default().topology(vk::PrimitiveTopology::TRIANGLE_LIST);
    let viewports = [vk::Viewport {
        x: 0.0,
        y: 0.0,
        width: o.width as f32,
        height: o.height as f32,
        min_depth: 0.0,
        max_depth: 1.0,
    }];
    let scissors =
        [vk::Rect2D { offset: vk::Offset2D::default(), extent: vk::Extent2D { width: o.width, height: o.height } }];
    let vp = vk::PipelineViewportStateCreateInfo::default().viewports(&viewports).scissors(&scissors);
    let rs = vk::PipelineRasterizationStateCreateInfo::default()
        .polygon_mode(vk::PolygonMode::FILL)
        .cull_mode(vk::CullModeFlags::NONE)
        .front_face(vk::FrontFace::COUNTER_CLOCKWISE)
        .line_width(1.0);
    let ms = vk::PipelineMultisampleStateCreateInfo::default().rasterization_samples(vk::SampleCountFlags::TYPE_1);
    let ds = vk::PipelineDepthStencilStateCreateInfo::default()
        .depth_test_enable(true)
        .depth_write_enable(false)
        .depth_compare_op(vk::CompareOp::LESS);
    let blend = [vk::PipelineColorBlendAttachmentState::default()
        .blend_enable(true)
        .src_color_blend_factor(vk::BlendFactor::ONE)
        .dst_color_blend_factor(vk::BlendFactor::ONE_MINUS_SRC_ALPHA)
        .color_blend_op(vk::BlendOp::ADD)
        .src_alpha_blend_factor(vk::BlendFactor::ONE)
        .dst_alpha_blend_factor(vk::BlendFactor::ONE_MINUS_SRC_ALPHA)
        .alpha_blend_op(vk::BlendOp::ADD)
        .color_write_mask(vk::ColorComponentFlags::RGBA)];
    let cb = vk::PipelineColorBlendStateCreateInfo::default().attachments(&blend);
    let info = vk::GraphicsPipelineCreateInfo::default()
        .stages(&stages)
        .vertex_input_state(&vertex)
        .input_assembly_state(&ia)
        .viewport_state(&vp)
        .rasterization_state(&rs)
        .multisample_state(&ms)
        .depth_stencil_state(&ds)
        .color_blend_state(&cb)
        .layout(layout)
        .render_pass(render_pass)
        .subpass(0);
    unsafe { g.device.create_graphics_pipelines(vk::PipelineCache::null(), &[info], None) }
        .map_err(|(_, e)| e)
        .expect("vkCreateGraphicsPipelines")[0]
}

fn create_pipelines(
    g: &Gpu,
    o: &Opts,
    layout: vk::PipelineLayout,
    render_pass: vk::RenderPass,
    mode: Mode,
) -> Pipelines {
    let (vert, frag) = mode.shaders();
    let vs = g.shader(vert);
    let fs = g.shader(frag);
    let fvs = g.shader(FULLSCREEN_VERT);
    let cfs = g.shader(COMPOSITE_FRAG);
    let color = create_pipeline(g, o, layout, render_pass, vs, fs, true);
    let composite = create_pipeline(g, o, layout, render_pass, fvs, cfs, false);
    Pipelines { color, composite, modules: vec![vs, fs, fvs, cfs] }
}

fn destroy_pipelines(g: &Gpu, p: Pipelines) {
    unsafe {
        g.device.destroy_pipeline(p.color, None);
        g.device.destroy_pipeline(p.composite, None);
        for m in p.modules {
            g.device.destroy_shader_module(m, None);
        }
    }
}

/// The sample's updateAllDescriptorSets: every binding whose resource exists
/// is written; the others keep what they held.
fn update_sets(g: &Gpu, sets: &[vk::DescriptorSet], ubos: &[Buffer], f: &FrameImages, fresh: bool) {
    let storage = |view| {
        [vk::DescriptorImageInfo {
            sampler: vk::Sampler::null(),
            image_view: view,
            image_layout: vk::ImageLayout::GENERAL,
        }]
    };
    let aux = storage(f.aux.view);
    let aux_depth = storage(f.aux_depth.view);
    // `--fresh`: a missing spinlock image is replaced by a live one.
    let spin = f.aux_spin.as_ref().map(|s| storage(s.view)).or(fresh.then(|| storage(f.aux.view)));
    let texel = [f.abuffer_view];
    for (set, ubo) in sets.iter().zip(ubos) {
        let ubo_info = [vk::DescriptorBufferInfo { buffer: ubo.buffer, offset: 0, range: UBO_SIZE }];
        let mut writes = vec![
            vk::WriteDescriptorSet::default()
                .dst_set(*set)
                .dst_binding(0)
                .descriptor_type(vk::DescriptorType::UNIFORM_BUFFER)
                .buffer_info(&ubo_info),
            vk::WriteDescriptorSet::default()
                .dst_set(*set)
                .dst_binding(1)
                .descriptor_type(vk::DescriptorType::STORAGE_TEXEL_BUFFER)
                .texel_buffer_view(&texel),
            vk::WriteDescriptorSet::default()
                .dst_set(*set)
                .dst_binding(2)
                .descriptor_type(vk::DescriptorType::STORAGE_IMAGE)
                .image_info(&aux),
            vk::WriteDescriptorSet::default()
                .dst_set(*set)
                .dst_binding(4)
                .descriptor_type(vk::DescriptorType::STORAGE_IMAGE)
                .image_info(&aux_depth),
        ];
        if let Some(spin) = &spin {
            writes.push(
                vk::WriteDescriptorSet::default()
                    .dst_set(*set)
                    .dst_binding(3)
                    .descriptor_type(vk::DescriptorType::STORAGE_IMAGE)
                    .image_info(spin),
            );
        }
        unsafe { g.device.update_descriptor_sets(&writes, &[]) };
    }
}

fn write_ubo(ubo: &Buffer, o: &Opts) {
    let mut data = [0u8; UBO_SIZE as usize];
    let ident = |m: &mut [f32; 16]| {
        for i in 0..4 {
            m[i * 5] = 1.0;
        }
    };
    let mut proj = [0f32; 16];
    ident(&mut proj);
    proj[0] = o.height as f32 / o.width as f32; // keep spheres round
    let mut view = [0f32; 16];
    ident(&mut view);
    let mut off = 0;
    for m in [proj, view, view] {
        for x in m {
            data[off..off + 4].copy_from_slice(&x.to_ne_bytes());
            off += 4;
        }
    }
    for (i, x) in [o.width as i32, o.height as i32, (o.width * o.height) as i32, OIT_LAYERS as i32].iter().enumerate() {
        data[192 + i * 4..196 + i * 4].copy_from_slice(&x.to_ne_bytes());
    }
    data[208..212].copy_from_slice(&0.2f32.to_ne_bytes());
    data[212..216].copy_from_slice(&0.3f32.to_ne_bytes());
    unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), ubo.map, data.len()) };
}

#[allow(clippy::too_many_arguments)]
fn record_frame(
    g: &Gpu,
    o: &Opts,
    cb: vk::CommandBuffer,
    f: &FrameImages,
    p: &Pipelines,
    render_pass: vk::RenderPass,
    layout: vk::PipelineLayout,
    set: vk::DescriptorSet,
    vb: &Buffer,
    ib: &Buffer,
    index_count: u32,
) {
    let d = &g.device;
    let color_range = range(vk::ImageAspectFlags::COLOR);
    unsafe {
        d.begin_command_buffer(
            cb,
            &vk::CommandBufferBeginInfo::default().flags(vk::CommandBufferUsageFlags::ONE_TIME_SUBMIT),
        )
        .unwrap();
        // clearTransparentLock
        let zero = vk::ClearColorValue { uint32: [0; 4] };
        let ones = vk::ClearColorValue { uint32: [u32::MAX; 4] };
        d.cmd_clear_color_image(cb, f.aux_depth.image, vk::ImageLayout::GENERAL, &ones, &[color_range]);
        d.cmd_clear_color_image(cb, f.aux.image, vk::ImageLayout::GENERAL, &zero, &[color_range]);
        if let Some(s) = &f.aux_spin {
            d.cmd_clear_color_image(cb, s.image, vk::ImageLayout::GENERAL, &zero, &[color_range]);
        }
        g.memory_barrier(
            cb,
            (vk::PipelineStageFlags::TRANSFER, vk::AccessFlags::TRANSFER_WRITE),
            (vk::PipelineStageFlags::FRAGMENT_SHADER, vk::AccessFlags::SHADER_READ | vk::AccessFlags::SHADER_WRITE),
        );
        let clears = [
            vk::ClearValue { color: vk::ClearColorValue { float32: [0.2; 4] } },
            vk::ClearValue { depth_stencil: vk::ClearDepthStencilValue { depth: 1.0, stencil: 0 } },
        ];
        d.cmd_begin_render_pass(
            cb,
            &vk::RenderPassBeginInfo::default()
                .render_pass(render_pass)
                .framebuffer(f.framebuffer)
                .render_area(vk::Rect2D {
                    offset: vk::Offset2D::default(),
                    extent: vk::Extent2D { width: o.width, height: o.height },
                })
                .clear_values(&clears),
            vk::SubpassContents::INLINE,
        );
        d.cmd_bind_vertex_buffers(cb, 0, &[vb.buffer], &[0]);
        d.cmd_bind_index_buffer(cb, ib.buffer, 0, vk::IndexType::UINT32);
        d.cmd_bind_descriptor_sets(cb, vk::PipelineBindPoint::GRAPHICS, layout, 0, &[set], &[]);
        d.cmd_bind_pipeline(cb, vk::PipelineBindPoint::GRAPHICS, p.color);
        d.cmd_draw_indexed(cb, index_count, 1, 0, 0, 0);
        let b = [vk::MemoryBarrier::default()
            .src_access_mask(vk::AccessFlags::SHADER_READ | vk::AccessFlags::SHADER_WRITE)
            .dst_access_mask(vk::AccessFlags::SHADER_READ | vk::AccessFlags::SHADER_WRITE)];
        d.cmd_pipeline_barrier(
            cb,
            vk::PipelineStageFlags::FRAGMENT_SHADER,
            vk::PipelineStageFlags::FRAGMENT_SHADER,
            vk::DependencyFlags::BY_REGION,
            &b,
            &[],
            &[],
        );
        d.cmd_bind_pipeline(cb, vk::PipelineBindPoint::GRAPHICS, p.composite);
        d.cmd_draw(cb, 3, 1, 0, 0);
        d.cmd_end_render_pass(cb);
        // copyOffscreenToBackBuffer
        let att = (vk::PipelineStageFlags::COLOR_ATTACHMENT_OUTPUT, vk::AccessFlags::COLOR_ATTACHMENT_WRITE);
        let tr = (vk::PipelineStageFlags::TRANSFER, vk::AccessFlags::TRANSFER_READ | vk::AccessFlags::TRANSFER_WRITE);
        g.image_barrier(
            cb,
            f.color.image,
            color_range,
            (vk::ImageLayout::COLOR_ATTACHMENT_OPTIMAL, vk::ImageLayout::TRANSFER_SRC_OPTIMAL),
            att,
            tr,
        );
        g.image_barrier(
            cb,
            f.viewport.image,
            color_range,
            (vk::ImageLayout::GENERAL, vk::ImageLayout::TRANSFER_DST_OPTIMAL),
            tr,
            tr,
        );
        let layers = vk::ImageSubresourceLayers {
            aspect_mask: vk::ImageAspectFlags::COLOR,
            mip_level: 0,
            base_array_layer: 0,
            layer_count: 1,
        };
        d.cmd_copy_image(
            cb,
            f.color.image,
            vk::ImageLayout::TRANSFER_SRC_OPTIMAL,
            f.viewport.image,
            vk::ImageLayout::TRANSFER_DST_OPTIMAL,
            &[vk::ImageCopy {
                src_subresource: layers,
                src_offset: vk::Offset3D::default(),
                dst_subresource: layers,
                dst_offset: vk::Offset3D::default(),
                extent: vk::Extent3D { width: o.width, height: o.height, depth: 1 },
            }],
        );
        g.image_barrier(
            cb,
            f.viewport.image,
            color_range,
            (vk::ImageLayout::TRANSFER_DST_OPTIMAL, vk::ImageLayout::GENERAL),
            tr,
            tr,
        );
        g.image_barrier(
            cb,
            f.color.image,
            color_range,
            (vk::ImageLayout::TRANSFER_SRC_OPTIMAL, vk::ImageLayout::COLOR_ATTACHMENT_OPTIMAL),
            tr,
            att,
        );
        d.end_command_buffer(cb).unwrap();
    }
}

/// The sample's saveImageToFile: the viewport image to a host buffer, read.
fn read_back(g: &Gpu, o: &Opts, f: &FrameImages, host: &Buffer) -> u64 {
    let color_range = range(vk::ImageAspectFlags::COLOR);
    g.one_time_submit(|cb| {
        let tr = (vk::PipelineStageFlags::TRANSFER, vk::AccessFlags::TRANSFER_READ | vk::AccessFlags::TRANSFER_WRITE);
        let all = (vk::PipelineStageFlags::ALL_COMMANDS, vk::AccessFlags::MEMORY_WRITE);
        g.image_barrier(
            cb,
            f.viewport.image,
            color_range,
            (vk::ImageLayout::GENERAL, vk::ImageLayout::TRANSFER_SRC_OPTIMAL),
            all,
            tr,
        );
        let src = vk::ImageLayout::TRANSFER_SRC_OPTIMAL;
        g.copy_image_to_buffer(cb, f.viewport.image, src, (o.width, o.height), 1, host.buffer);
        g.image_barrier(
            cb,
            f.viewport.image,
            color_range,
            (vk::ImageLayout::TRANSFER_SRC_OPTIMAL, vk::ImageLayout::GENERAL),
            tr,
            tr,
        );
        g.memory_barrier(
            cb,
            (vk::PipelineStageFlags::TRANSFER, vk::AccessFlags::TRANSFER_WRITE),
            (vk::PipelineStageFlags::HOST, vk::AccessFlags::HOST_READ),
        );
    });
    let bytes = unsafe { std::slice::from_raw_parts(host.map, (o.width * o.height * 4) as usize) };
    bytes.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, b| (h ^ *b as u64).wrapping_mul(0x100_0000_01b3))
}

fn main() {
    let o = parse_args();
    let mut opts = GpuOptions::default();
    opts.interlock = true; // the sample always asks for it (optional)
    let g = match Gpu::new(&opts) {
        Ok(g) => g,
        Err(e) => {
            eprintln!("oit_stress: {e}");
            std::process::exit(4)
        }
    };
    if o.script.iter().any(|m| m.interlock()) && !g.interlock {
        eprintln!("oit_stress: VK_EXT_fragment_shader_interlock is not available (run through Overlap)");
        std::process::exit(4)
    }
    let d = &g.device;
    let result = unsafe { run(&g, &o) };
    unsafe { d.device_wait_idle().unwrap() };
    let errors = render::print_messages();
    drop(g);
    match result {
        Err(e) => {
            eprintln!("CHECK FAILED: {e}");
            std::process::exit(1)
        }
        Ok(()) if !errors.is_empty() => std::process::exit(3),
        Ok(()) => std::process::exit(0),
    }
}

unsafe fn run(g: &Gpu, o: &Opts) -> Result<(), String> {
    let d = &g.device;
    // Render pass: colour + depth, cleared, with the fragment self-dependency.
    let attachments = [
        vk::AttachmentDescription::default()
            .format(COLOR_FORMAT)
            .samples(vk::SampleCountFlags::TYPE_1)
            .load_op(vk::AttachmentLoadOp::CLEAR)
            .store_op(vk::AttachmentStoreOp::STORE)
            .stencil_load_op(vk::AttachmentLoadOp::DONT_CARE)
            .stencil_store_op(vk::AttachmentStoreOp::DONT_CARE)
            .initial_layout(vk::ImageLayout::COLOR_ATTACHMENT_OPTIMAL)
            .final_layout(vk::ImageLayout::COLOR_ATTACHMENT_OPTIMAL),
        vk::AttachmentDescription::default()
            .format(DEPTH_FORMAT)
            .samples(vk::SampleCountFlags::TYPE_1)
            .load_op(vk::AttachmentLoadOp::CLEAR)
            .store_op(vk::AttachmentStoreOp::STORE)
            .stencil_load_op(vk::AttachmentLoadOp::DONT_CARE)
            .stencil_store_op(vk::AttachmentStoreOp::DONT_CARE)
            .initial_layout(vk::ImageLayout::DEPTH_STENCIL_ATTACHMENT_OPTIMAL)
            .final_layout(vk::ImageLayout::DEPTH_STENCIL_ATTACHMENT_OPTIMAL),
    ];
    let color_ref = [vk::AttachmentReference { attachment: 0, layout: vk::ImageLayout::COLOR_ATTACHMENT_OPTIMAL }];
    let depth_ref =
        vk::AttachmentReference { attachment: 1, layout: vk::ImageLayout::DEPTH_STENCIL_ATTACHMENT_OPTIMAL };
    let subpass =
        [vk::SubpassDescription::default().color_attachments(&color_ref).depth_stencil_attachment(&depth_ref)];
    let rw = vk::AccessFlags::SHADER_READ | vk::AccessFlags::SHADER_WRITE;
    let deps = [vk::SubpassDependency {
        src_subpass: 0,
        dst_subpass: 0,
        src_stage_mask: vk::PipelineStageFlags::FRAGMENT_SHADER,
        dst_stage_mask: vk::PipelineStageFlags::FRAGMENT_SHADER,
        src_access_mask: rw,
        dst_access_mask: rw,
        dependency_flags: vk::DependencyFlags::BY_REGION,
    }];
    let render_pass = d
        .create_render_pass(
            &vk::RenderPassCreateInfo::default().attachments(&attachments).subpasses(&subpass).dependencies(&deps),
            None,
        )
        .map_err(|e| format!("vkCreateRenderPass: {e:?}"))?;

    // The sample's one set layout for every algorithm.
    let fs = vk::ShaderStageFlags::FRAGMENT;
    let binding = |b: u32, ty: vk::DescriptorType, stages: vk::ShaderStageFlags| {
        vk::DescriptorSetLayoutBinding::default().binding(b).descriptor_type(ty).descriptor_count(1).stage_flags(stages)
    };
    let bindings = [
        binding(0, vk::DescriptorType::UNIFORM_BUFFER, vk::ShaderStageFlags::VERTEX | fs),
        binding(1, vk::DescriptorType::STORAGE_TEXEL_BUFFER, fs),
        binding(2, vk::DescriptorType::STORAGE_IMAGE, fs),
        binding(3, vk::DescriptorType::STORAGE_IMAGE, fs),
        binding(4, vk::DescriptorType::STORAGE_IMAGE, fs),
        binding(5, vk::DescriptorType::STORAGE_IMAGE, fs),
    ];
    let set_layout = d
        .create_descriptor_set_layout(&vk::DescriptorSetLayoutCreateInfo::default().bindings(&bindings), None)
        .unwrap();
    let sizes = [
        vk::DescriptorPoolSize { ty: vk::DescriptorType::UNIFORM_BUFFER, descriptor_count: RING as u32 },
        vk::DescriptorPoolSize { ty: vk::DescriptorType::STORAGE_TEXEL_BUFFER, descriptor_count: RING as u32 },
        vk::DescriptorPoolSize { ty: vk::DescriptorType::STORAGE_IMAGE, descriptor_count: 4 * RING as u32 },
    ];
    let pool = d
        .create_descriptor_pool(&vk::DescriptorPoolCreateInfo::default().max_sets(RING as u32).pool_sizes(&sizes), None)
        .unwrap();
    let layouts = [set_layout; RING];
    let sets = d
        .allocate_descriptor_sets(&vk::DescriptorSetAllocateInfo::default().descriptor_pool(pool).set_layouts(&layouts))
        .unwrap();
    let set_layouts = [set_layout];
    let layout =
        d.create_pipeline_layout(&vk::PipelineLayoutCreateInfo::default().set_layouts(&set_layouts), None).unwrap();
    let ubos: Vec<Buffer> = (0..RING).map(|_| g.buffer(UBO_SIZE, vk::BufferUsageFlags::UNIFORM_BUFFER, true)).collect();

    let (vertices, indices) = scene(o);
    let vb = g.buffer((vertices.len() * 4) as u64, vk::BufferUsageFlags::VERTEX_BUFFER, true);
    std::ptr::copy_nonoverlapping(vertices.as_ptr() as *const u8, vb.map, vertices.len() * 4);
    let ib = g.buffer((indices.len() * 4) as u64, vk::BufferUsageFlags::INDEX_BUFFER, true);
    std::ptr::copy_nonoverlapping(indices.as_ptr() as *const u8, ib.map, indices.len() * 4);
    // The planted wrong order: the same triangles, last to first.
    let reversed: Vec<u32> = indices.chunks(3).rev().flatten().copied().collect();
    let ib_rev = g.buffer((reversed.len() * 4) as u64, vk::BufferUsageFlags::INDEX_BUFFER, true);
    std::ptr::copy_nonoverlapping(reversed.as_ptr() as *const u8, ib_rev.map, reversed.len() * 4);
    let host = g.buffer((o.width * o.height * 4) as u64, vk::BufferUsageFlags::TRANSFER_DST, true);

    let cmd_pool = d
        .create_command_pool(
            &vk::CommandPoolCreateInfo::default()
                .queue_family_index(g.queue_family)
                .flags(vk::CommandPoolCreateFlags::RESET_COMMAND_BUFFER),
            None,
        )
        .unwrap();
    let cbs = d
        .allocate_command_buffers(
            &vk::CommandBufferAllocateInfo::default().command_pool(cmd_pool).command_buffer_count(RING as u32),
        )
        .unwrap();
    let fences: Vec<vk::Fence> = (0..RING)
        .map(|_| d.create_fence(&vk::FenceCreateInfo::default().flags(vk::FenceCreateFlags::SIGNALED), None).unwrap())
        .collect();

    let mut state: Option<(Mode, FrameImages, Pipelines)> = None;
    let mut failure = None;
    // (sequence, mode, checksum, stable) of the script's sequences.
    let mut results = Vec::new();
    let mut frame = 0usize;
    let mut seq = 0;
    let script = (0..o.repeat).flat_map(|_| o.script.iter().map(|&m| (m, false)));
    // The reference last: `none`, on everything made afresh.
    for (mode, is_reference) in script.chain([(Mode::None, true)]) {
        {
            // updateRendererFromState: the algorithm changed.
            if state.as_ref().map(|s| s.0) != Some(mode) || is_reference {
                d.device_wait_idle().unwrap();
                if let Some((_, f, p)) = state.take() {
                    destroy_frame_images(g, f);
                    destroy_pipelines(g, p);
                }
                let f = create_frame_images(g, o, render_pass, mode);
                update_sets(g, &sets, &ubos, &f, o.fresh);
                let p = create_pipelines(g, o, layout, render_pass, mode);
                state = Some((mode, f, p));
            }
            let (_, f, p) = state.as_ref().unwrap();
            let ib = if o.plant_reverse && mode == Mode::Ordered && !is_reference { &ib_rev } else { &ib };
            let mut sums = Vec::new();
            for _ in 0..o.frames {
                let slot = frame % RING;
                d.wait_for_fences(&[fences[slot]], true, u64::MAX).unwrap();
                d.reset_fences(&[fences[slot]]).unwrap();
                write_ubo(&ubos[slot], o);
                let cb = cbs[slot];
                d.reset_command_buffer(cb, vk::CommandBufferResetFlags::empty()).unwrap();
                record_frame(g, o, cb, f, p, render_pass, layout, sets[slot], &vb, ib, indices.len() as u32);
                let submit = [cb];
                d.queue_submit(g.queue, &[vk::SubmitInfo::default().command_buffers(&submit)], fences[slot]).unwrap();
                // The sample reads the frame back while its queue finishes.
                sums.push(read_back(g, o, f, &host));
                frame += 1;
            }
            let stable = sums.iter().all(|s| *s == sums[0]);
            if is_reference {
                println!("reference mode=None frames={} checksum={:016x} stable={stable}", o.frames, sums[0]);
                if !stable {
                    failure.get_or_insert("the reference sequence's frames differ".to_string());
                }
                for &(seq, mode, sum, stable) in &results {
                    let agrees = sum == sums[0];
                    println!(
                        "seq={seq} mode={mode:?} frames={} checksum={sum:016x} stable={stable} agrees={agrees}",
                        o.frames
                    );
                    if !agrees && mode != Mode::Flat {
                        failure.get_or_insert(format!(
                            "sequence {seq} ({mode:?}): differs from the reference (none, made afresh)"
                        ));
                    }
                }
                continue;
            }
            if !stable && mode != Mode::Spin {
                failure.get_or_insert(format!("sequence {seq} ({mode:?}): frames differ"));
            }
            results.push((seq, mode, sums[0], stable));
            seq += 1;
        }
    }
    d.device_wait_idle().unwrap();
    if let Some((_, f, p)) = state.take() {
        destroy_frame_images(g, f);
        destroy_pipelines(g, p);
    }
    for fence in fences {
        d.destroy_fence(fence, None);
    }
    d.destroy_command_pool(cmd_pool, None);
    for b in ubos.into_iter().chain([vb, ib, ib_rev, host]) {
        g.destroy_buffer(b);
    }
    d.destroy_pipeline_layout(layout, None);
    d.destroy_descriptor_pool(pool, None);
    d.destroy_descriptor_set_layout(set_layout, None);
    d.destroy_render_pass(render_pass, None);
    failure.map_or(Ok(()), Err)
}

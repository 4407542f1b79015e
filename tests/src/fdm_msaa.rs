//! Multisampled attachments that load and store in a density-map pass
//! (`overlap-testapp fdm-msaa`, issue 17 item 5): a colour and a
//! depth/stencil attachment of 2, 4 or 8 samples are first filled with a
//! value of their own per pixel and sample (no density map: one draw per
//! sample through the sample mask), then a density-map pass loads them, draws
//! a rectangle at depth 0.5 (depth test LESS, stencil replaced where it
//! passes) and stores them, with or without resolve attachments, through
//! render pass 1, render pass 2 and dynamic rendering. Every sample is read
//! back (a compute shader fetches each one) and judged against the known
//! scene: each pixel must lie in an aligned block no larger than its map
//! texel asks for whose pixels all hold, sample for sample, what the coarse
//! fragment computes from one pixel of the block (the loaded values of that
//! pixel's sample `i` in sample `i`, the rectangle where its depth test
//! passes); a block rendered coarser than asked, a sample taken from another
//! sample or another block, fails. Resolves must be the resolve of the
//! stored samples (colour: their average; depth and stencil: sample 0).

use crate::fdm::{self, Map, Path};
use crate::render::Gpu;
use ash::vk;

/// The viewport every pass draws with (larger than a framebuffer of another
/// size: the scene stays in place).
pub const VIEWPORT: (u32, u32) = (256, 256);
const COLOUR: vk::Format = vk::Format::R8G8B8A8_UNORM;
pub const DEPTH: vk::Format = vk::Format::D32_SFLOAT_S8_UINT;
/// The rectangle the density-map pass draws (`fdm_msaa_rect.vert`): x0, y0,
/// x1, y1 in pixels (its edges lie on the boundaries of 32-pixel map texels,
/// so it covers whole blocks).
const RECT: (u32, u32, u32, u32) = (VIEWPORT.0 / 8, VIEWPORT.1 / 4, VIEWPORT.0 * 7 / 8, VIEWPORT.1 * 3 / 4);
const DRAWN: [u8; 4] = [200, 50, 100, 255];
const DRAWN_DEPTH: f32 = 0.5;
const DRAWN_STENCIL: u8 = 100;

#[derive(Clone, Copy, Debug)]
pub struct Case {
    pub path: Path,
    pub samples: u32,
    /// The framebuffer's size.
    pub size: (u32, u32),
    /// Resolve attachments: colour (every path), depth/stencil (render pass
    /// 2's depth/stencil resolve, dynamic rendering's resolve).
    pub resolve: bool,
    /// The map's view is dynamic (the layer plans the pass on the GPU) and
    /// the stencil aspect loads without storing (the GPU plan's upscale
    /// writes colour and depth); no depth/stencil resolve. The stencil
    /// samples are not judged then.
    pub gpu_plan: bool,
}

/// What sample `s` of pixel (x, y) holds: colour, depth, stencil.
pub type Sample = ([u8; 4], f32, u8);

/// The prefill, as `fdm_msaa_fill.frag` computes it.
pub fn filled(x: u32, y: u32, s: u32) -> Sample {
    let c = [((x * 4 + s) % 256) as u8, ((y * 4 + s * 64) % 256) as u8, (s * 30 + 20) as u8, 255];
    (c, ((x + y * 3 + s * 5) % 16) as f32 / 16.0, s as u8 + 1)
}

/// What the density-map pass stores in sample `s` of a fragment whose
/// loaded values are those of pixel `c`, `inside` the rectangle or not.
fn expected(c: (u32, u32), s: u32, inside: bool) -> Sample {
    let f = filled(c.0, c.1, s);
    if inside && DRAWN_DEPTH < f.1 {
        (DRAWN, DRAWN_DEPTH, DRAWN_STENCIL)
    } else {
        f
    }
}

fn inside(x: u32, y: u32) -> bool {
    (RECT.0..RECT.2).contains(&x) && (RECT.1..RECT.3).contains(&y)
}

/// The resolves: colour, and depth/stencil where the path has it.
pub type Resolved = (Vec<[u8; 4]>, Option<Vec<(f32, u8)>>);

/// Every sample read back, and the resolves.
pub struct Output {
    pub size: (u32, u32),
    pub samples: u32,
    /// Stencil was not stored (and is not judged).
    pub no_stencil: bool,
    /// Per pixel (row-major), per sample.
    pub ms: Vec<Sample>,
    /// Colour resolve, and the depth/stencil one where the path has it.
    pub resolve: Option<Resolved>,
}

impl Output {
    fn at(&self, x: u32, y: u32, s: u32) -> Sample {
        self.ms[((y * self.size.0 + x) * self.samples + s) as usize]
    }
}

/// Checks `out` against the scene (see the module's text); the number of
/// pixels explained only by a block larger than 1x1.
pub fn check(out: &Output, map: &Map, texel: (u32, u32)) -> Result<u64, String> {
    let (w, h) = out.size;
    let requested = |x: u32, y: u32| {
        let t = map.texels[((y / texel.1).min(map.height - 1) * map.width + (x / texel.0).min(map.width - 1)) as usize];
        (fdm::requested(t[0]), fdm::requested(t[1]))
    };
    // Whether the aligned block of `area` at (bx, by) holds, in every pixel
    // and sample, what a fragment loading one of its pixels stores.
    let block_ok = |bx: u32, by: u32, area: (u32, u32)| -> bool {
        let xs = bx..(bx + area.0).min(w);
        let ys = by..(by + area.1).min(h);
        let pixels: Vec<(u32, u32)> = ys.flat_map(|y| xs.clone().map(move |x| (x, y))).collect();
        pixels.iter().any(|&c| {
            pixels.iter().all(|&(x, y)| {
                (0..out.samples).all(|s| {
                    let (got, want) = (out.at(x, y, s), expected(c, s, inside(x, y)));
                    if out.no_stencil {
                        (got.0, got.1) == (want.0, want.1)
                    } else {
                        got == want
                    }
                })
            })
        })
    };
    let mut blocks = std::collections::HashMap::new();
    let mut coarse = 0u64;
    for y in 0..h {
        for x in 0..w {
            let (rw, rh) = requested(x, y);
            let mut best = None;
            for aw in [4, 2, 1].into_iter().filter(|a| *a <= rw) {
                for ah in [4, 2, 1].into_iter().filter(|a| *a <= rh) {
                    let (bx, by) = (x / aw * aw, y / ah * ah);
                    if best.is_none_or(|(bw, bh)| aw * ah > bw * bh)
                        && *blocks.entry((bx, by, aw, ah)).or_insert_with(|| block_ok(bx, by, (aw, ah)))
                    {
                        best = Some((aw, ah));
                    }
                }
            }
            match best {
                None => {
                    let got: Vec<Sample> = (0..out.samples).map(|s| out.at(x, y, s)).collect();
                    return Err(format!(
                        "pixel {x},{y} (asks for at most {rw}x{rh}) is no block of its scene: samples {got:?}, \
                         filled there {:?}",
                        (0..out.samples).map(|s| filled(x, y, s)).collect::<Vec<_>>()
                    ));
                }
                Some((1, 1)) => {}
                Some(_) => coarse += 1,
            }
        }
    }
    if let Some((colour, ds)) = &out.resolve {
        for y in 0..h {
            for x in 0..w {
                let i = (y * w + x) as usize;
                for ch in 0..4 {
                    let sum: u32 = (0..out.samples).map(|s| out.at(x, y, s).0[ch] as u32).sum();
                    let avg = sum as f32 / out.samples as f32;
                    if (colour[i][ch] as f32 - avg).abs() > 1.0 {
                        return Err(format!(
                            "colour resolve at {x},{y}: {:?}, the samples average {avg} in {ch}",
                            colour[i]
                        ));
                    }
                }
                if let Some(ds) = ds {
                    let s0 = out.at(x, y, 0);
                    if ds[i] != (s0.1, s0.2) {
                        return Err(format!(
                            "depth/stencil resolve at {x},{y}: {:?}, sample 0 {:?}",
                            ds[i],
                            (s0.1, s0.2)
                        ));
                    }
                }
            }
        }
    }
    Ok(coarse)
}

/// The pipeline of a pass: the prefill's (sample mask, sample shading,
/// depth ALWAYS, stencil reference dynamic) or the density-map pass's.
struct PipeDesc<'a> {
    vs: &'a [u8],
    fs: &'a [u8],
    samples: u32,
    /// Prefill: the one sample this pipeline writes.
    only_sample: Option<u32>,
    render_pass: vk::RenderPass,
    /// Dynamic rendering with a density map.
    dynamic: bool,
}

fn pipeline(gpu: &Gpu, layout: vk::PipelineLayout, p: &PipeDesc) -> vk::Pipeline {
    let d = &gpu.device;
    let (vsm, fsm) = (gpu.shader(p.vs), gpu.shader(p.fs));
    let stages = [
        vk::PipelineShaderStageCreateInfo::default().stage(vk::ShaderStageFlags::VERTEX).module(vsm).name(c"main"),
        vk::PipelineShaderStageCreateInfo::default().stage(vk::ShaderStageFlags::FRAGMENT).module(fsm).name(c"main"),
    ];
    let vin = vk::PipelineVertexInputStateCreateInfo::default();
    let ia = vk::PipelineInputAssemblyStateCreateInfo::default().topology(vk::PrimitiveTopology::TRIANGLE_LIST);
    let vp = [vk::Viewport {
        x: 0.0,
        y: 0.0,
        width: VIEWPORT.0 as f32,
        height: VIEWPORT.1 as f32,
        min_depth: 0.0,
        max_depth: 1.0,
    }];
    let sc = [vk::Rect2D {
        offset: vk::Offset2D::default(),
        extent: vk::Extent2D { width: VIEWPORT.0, height: VIEWPORT.1 },
    }];
    let vps = vk::PipelineViewportStateCreateInfo::default().viewports(&vp).scissors(&sc);
    let rs = vk::PipelineRasterizationStateCreateInfo::default().line_width(1.0);
    let mask = [p.only_sample.map_or(!0, |s| 1u32 << s)];
    let mut msi = vk::PipelineMultisampleStateCreateInfo::default()
        .rasterization_samples(vk::SampleCountFlags::from_raw(p.samples));
    if p.only_sample.is_some() {
        msi = msi.sample_mask(&mask).sample_shading_enable(true).min_sample_shading(1.0);
    }
    let prefill = p.only_sample.is_some();
    let stencil = vk::StencilOpState {
        fail_op: vk::StencilOp::KEEP,
        pass_op: vk::StencilOp::REPLACE,
        depth_fail_op: vk::StencilOp::KEEP,
        compare_op: vk::CompareOp::ALWAYS,
        compare_mask: 0xff,
        write_mask: 0xff,
        reference: DRAWN_STENCIL as u32,
    };
    let dss = vk::PipelineDepthStencilStateCreateInfo::default()
        .depth_test_enable(true)
        .depth_write_enable(true)
        .depth_compare_op(if prefill { vk::CompareOp::ALWAYS } else { vk::CompareOp::LESS })
        .stencil_test_enable(true)
        .front(stencil)
        .back(stencil);
    let blend = [vk::PipelineColorBlendAttachmentState::default().color_write_mask(vk::ColorComponentFlags::RGBA)];
    let cbs = vk::PipelineColorBlendStateCreateInfo::default().attachments(&blend);
    let dynamic = [vk::DynamicState::STENCIL_REFERENCE];
    let dyn_info = vk::PipelineDynamicStateCreateInfo::default().dynamic_states(if prefill { &dynamic } else { &[] });
    let formats = [COLOUR];
    let mut rendering = vk::PipelineRenderingCreateInfo::default()
        .color_attachment_formats(&formats)
        .depth_attachment_format(DEPTH)
        .stencil_attachment_format(DEPTH);
    let mut info = vk::GraphicsPipelineCreateInfo::default()
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
        .render_pass(p.render_pass);
    if p.dynamic {
        info = info
            .push_next(&mut rendering)
            .flags(vk::PipelineCreateFlags::RENDERING_FRAGMENT_DENSITY_MAP_ATTACHMENT_EXT);
    }
    unsafe {
        let pipe = d.create_graphics_pipelines(vk::PipelineCache::null(), &[info], None).unwrap()[0];
        d.destroy_shader_module(vsm, None);
        d.destroy_shader_module(fsm, None);
        pipe
    }
}

type Img = (vk::Image, vk::DeviceMemory, vk::ImageView);

fn view(gpu: &Gpu, image: vk::Image, format: vk::Format, aspect: vk::ImageAspectFlags) -> vk::ImageView {
    let range = vk::ImageSubresourceRange {
        aspect_mask: aspect,
        base_mip_level: 0,
        level_count: 1,
        base_array_layer: 0,
        layer_count: 1,
    };
    let info = vk::ImageViewCreateInfo::default()
        .image(image)
        .view_type(vk::ImageViewType::TYPE_2D)
        .format(format)
        .subresource_range(range);
    unsafe { gpu.device.create_image_view(&info, None) }.unwrap()
}

fn range(aspect: vk::ImageAspectFlags) -> vk::ImageSubresourceRange {
    vk::ImageSubresourceRange {
        aspect_mask: aspect,
        base_mip_level: 0,
        level_count: 1,
        base_array_layer: 0,
        layer_count: 1,
    }
}

/// A render pass (version 1 or 2 structures) of `attachments` with one
/// subpass: colour 0, depth/stencil 1, the colour resolve `colour_resolve`,
/// the depth/stencil resolve `ds_resolve` (version 2), the density map
/// `map`.
fn render_pass(
    gpu: &Gpu,
    v2: bool,
    attachments: &[vk::AttachmentDescription2],
    colour_resolve: Option<u32>,
    ds_resolve: Option<u32>,
    map: Option<u32>,
) -> vk::RenderPass {
    let d = &gpu.device;
    let colour_layout = vk::ImageLayout::COLOR_ATTACHMENT_OPTIMAL;
    let ds_layout = vk::ImageLayout::DEPTH_STENCIL_ATTACHMENT_OPTIMAL;
    let fdm_layout = vk::ImageLayout::FRAGMENT_DENSITY_MAP_OPTIMAL_EXT;
    let ds_aspect = vk::ImageAspectFlags::DEPTH | vk::ImageAspectFlags::STENCIL;
    let r2 =
        |a: u32, layout, aspect| vk::AttachmentReference2::default().attachment(a).layout(layout).aspect_mask(aspect);
    let c = [r2(0, colour_layout, vk::ImageAspectFlags::COLOR)];
    let ds = r2(1, ds_layout, ds_aspect);
    let cr = [r2(colour_resolve.unwrap_or(0), colour_layout, vk::ImageAspectFlags::COLOR)];
    let dsr = r2(ds_resolve.unwrap_or(0), ds_layout, ds_aspect);
    let mut fdm_info = vk::RenderPassFragmentDensityMapCreateInfoEXT::default()
        .fragment_density_map_attachment(vk::AttachmentReference { attachment: map.unwrap_or(0), layout: fdm_layout });
    // Outside the pass: its writes before the readback's reads.
    let all = vk::PipelineStageFlags::ALL_COMMANDS;
    let rw = vk::AccessFlags::MEMORY_READ | vk::AccessFlags::MEMORY_WRITE;
    let dep2 = [vk::SubpassDependency2::default()
        .src_subpass(0)
        .dst_subpass(vk::SUBPASS_EXTERNAL)
        .src_stage_mask(vk::PipelineStageFlags::ALL_GRAPHICS)
        .dst_stage_mask(all)
        .src_access_mask(rw)
        .dst_access_mask(rw)];
    unsafe {
        if v2 {
            let mut resolve = vk::SubpassDescriptionDepthStencilResolve::default()
                .depth_resolve_mode(vk::ResolveModeFlags::SAMPLE_ZERO)
                .stencil_resolve_mode(vk::ResolveModeFlags::SAMPLE_ZERO)
                .depth_stencil_resolve_attachment(&dsr);
            let mut sub = vk::SubpassDescription2::default()
                .pipeline_bind_point(vk::PipelineBindPoint::GRAPHICS)
                .color_attachments(&c)
                .depth_stencil_attachment(&ds);
            if colour_resolve.is_some() {
                sub = sub.resolve_attachments(&cr);
            }
            if ds_resolve.is_some() {
                sub = sub.push_next(&mut resolve);
            }
            let subs = [sub];
            let mut info =
                vk::RenderPassCreateInfo2::default().attachments(attachments).subpasses(&subs).dependencies(&dep2);
            if map.is_some() {
                info = info.push_next(&mut fdm_info);
            }
            d.create_render_pass2(&info, None).unwrap()
        } else {
            let a1: Vec<vk::AttachmentDescription> = attachments
                .iter()
                .map(|a| vk::AttachmentDescription {
                    flags: a.flags,
                    format: a.format,
                    samples: a.samples,
                    load_op: a.load_op,
                    store_op: a.store_op,
                    stencil_load_op: a.stencil_load_op,
                    stencil_store_op: a.stencil_store_op,
                    initial_layout: a.initial_layout,
                    final_layout: a.final_layout,
                })
                .collect();
            let r1 =
                |r: &vk::AttachmentReference2| vk::AttachmentReference { attachment: r.attachment, layout: r.layout };
            let (c1, ds1, cr1) = ([r1(&c[0])], r1(&ds), [r1(&cr[0])]);
            let mut sub = vk::SubpassDescription::default()
                .pipeline_bind_point(vk::PipelineBindPoint::GRAPHICS)
                .color_attachments(&c1)
                .depth_stencil_attachment(&ds1);
            if colour_resolve.is_some() {
                sub = sub.resolve_attachments(&cr1);
            }
            let subs = [sub];
            let dep1 = [vk::SubpassDependency {
                src_subpass: 0,
                dst_subpass: vk::SUBPASS_EXTERNAL,
                src_stage_mask: vk::PipelineStageFlags::ALL_GRAPHICS,
                dst_stage_mask: all,
                src_access_mask: rw,
                dst_access_mask: rw,
                dependency_flags: vk::DependencyFlags::empty(),
            }];
            let mut info = vk::RenderPassCreateInfo::default().attachments(&a1).subpasses(&subs).dependencies(&dep1);
            if map.is_some() {
                info = info.push_next(&mut fdm_info);
            }
            d.create_render_pass(&info, None).unwrap()
        }
    }
}

fn attachment(
    format: vk::Format,
    samples: u32,
    load: vk::AttachmentLoadOp,
    store: vk::AttachmentStoreOp,
    (initial, final_): (vk::ImageLayout, vk::ImageLayout),
) -> vk::AttachmentDescription2<'static> {
    vk::AttachmentDescription2::default()
        .format(format)
        .samples(vk::SampleCountFlags::from_raw(samples))
        .load_op(load)
        .store_op(store)
        .stencil_load_op(load)
        .stencil_store_op(store)
        .initial_layout(initial)
        .final_layout(final_)
}

/// Renders `case` (prefill, the density-map pass with `map`, readback).
pub fn render(gpu: &Gpu, case: &Case, map: &Map) -> Output {
    let d = &gpu.device;
    let size = case.size;
    let (w, h) = size;
    let n = case.samples;
    let ms = vk::SampleCountFlags::from_raw(n);
    let one = vk::SampleCountFlags::TYPE_1;
    let transfer = vk::ImageUsageFlags::TRANSFER_SRC | vk::ImageUsageFlags::TRANSFER_DST;
    let ds_aspect = vk::ImageAspectFlags::DEPTH | vk::ImageAspectFlags::STENCIL;
    let colour_usage = vk::ImageUsageFlags::COLOR_ATTACHMENT | transfer;
    let ds_usage = vk::ImageUsageFlags::DEPTH_STENCIL_ATTACHMENT | transfer;
    let colour: Img = gpu.image_2d(COLOUR, size, ms, colour_usage | vk::ImageUsageFlags::SAMPLED);
    let depth: Img = gpu.image(DEPTH, size, 1, ms, ds_usage | vk::ImageUsageFlags::SAMPLED, ds_aspect);
    let depth_view = view(gpu, depth.0, DEPTH, vk::ImageAspectFlags::DEPTH);
    let stencil_view = view(gpu, depth.0, DEPTH, vk::ImageAspectFlags::STENCIL);
    let colour_resolve: Option<Img> = case.resolve.then(|| gpu.image_2d(COLOUR, size, one, colour_usage));
    let ds_resolve: Option<Img> = (case.resolve && case.path != Path::RenderPass && !case.gpu_plan)
        .then(|| gpu.image(DEPTH, size, 1, one, ds_usage, ds_aspect));
    let map_img = fdm::map_image(gpu, map);
    let map_view = if case.gpu_plan {
        fdm::map_view(gpu, map_img.0, vk::ImageViewCreateFlags::FRAGMENT_DENSITY_MAP_DYNAMIC_EXT).unwrap()
    } else {
        map_img.2
    };
    let stencil_store = if case.gpu_plan { vk::AttachmentStoreOp::DONT_CARE } else { vk::AttachmentStoreOp::STORE };
    let colour_layout = vk::ImageLayout::COLOR_ATTACHMENT_OPTIMAL;
    let ds_layout = vk::ImageLayout::DEPTH_STENCIL_ATTACHMENT_OPTIMAL;
    let read_colour = vk::ImageLayout::SHADER_READ_ONLY_OPTIMAL;
    let read_ds = vk::ImageLayout::DEPTH_STENCIL_READ_ONLY_OPTIMAL;
    let src = vk::ImageLayout::TRANSFER_SRC_OPTIMAL;
    let fdm_layout = vk::ImageLayout::FRAGMENT_DENSITY_MAP_OPTIMAL_EXT;
    let (load, clear, store, dont) = (
        vk::AttachmentLoadOp::LOAD,
        vk::AttachmentLoadOp::CLEAR,
        vk::AttachmentStoreOp::STORE,
        vk::AttachmentStoreOp::DONT_CARE,
    );
    let fill_vs = &include_bytes!(concat!(env!("OUT_DIR"), "/fullscreen.vert.spv"))[..];
    let fill_fs = &include_bytes!(concat!(env!("OUT_DIR"), "/fdm_msaa_fill.frag.spv"))[..];
    let rect_vs = &include_bytes!(concat!(env!("OUT_DIR"), "/fdm_msaa_rect.vert.spv"))[..];
    let draw_fs = &include_bytes!(concat!(env!("OUT_DIR"), "/fdm_msaa_draw.frag.spv"))[..];
    let read_cs = &include_bytes!(concat!(env!("OUT_DIR"), "/fdm_msaa_read.comp.spv"))[..];
    let empty_layout = unsafe { d.create_pipeline_layout(&vk::PipelineLayoutCreateInfo::default(), None) }.unwrap();
    let full = vk::Rect2D { offset: vk::Offset2D::default(), extent: vk::Extent2D { width: w, height: h } };

    // The prefill: cleared, then one draw per sample.
    let fill_pass = render_pass(
        gpu,
        false,
        &[
            attachment(COLOUR, n, clear, store, (vk::ImageLayout::UNDEFINED, colour_layout)),
            attachment(DEPTH, n, clear, store, (vk::ImageLayout::UNDEFINED, ds_layout)),
        ],
        None,
        None,
        None,
    );
    let fill_fb = gpu.framebuffer(fill_pass, &[colour.2, depth.2], size);
    let fills: Vec<vk::Pipeline> = (0..n)
        .map(|s| {
            let p = PipeDesc {
                vs: fill_vs,
                fs: fill_fs,
                samples: n,
                only_sample: Some(s),
                render_pass: fill_pass,
                dynamic: false,
            };
            pipeline(gpu, empty_layout, &p)
        })
        .collect();

    // The density-map pass.
    let dynamic = case.path == Path::Dynamic;
    let mut atts = vec![
        attachment(COLOUR, n, load, store, (colour_layout, read_colour)),
        attachment(DEPTH, n, load, store, (ds_layout, read_ds)).stencil_store_op(stencil_store),
    ];
    let mut views = vec![colour.2, depth.2];
    let a_cr = colour_resolve.map(|r| {
        atts.push(attachment(COLOUR, 1, vk::AttachmentLoadOp::DONT_CARE, store, (vk::ImageLayout::UNDEFINED, src)));
        views.push(r.2);
        atts.len() as u32 - 1
    });
    let a_dsr = ds_resolve.map(|r| {
        atts.push(attachment(DEPTH, 1, vk::AttachmentLoadOp::DONT_CARE, store, (vk::ImageLayout::UNDEFINED, src)));
        views.push(r.2);
        atts.len() as u32 - 1
    });
    atts.push(
        vk::AttachmentDescription2::default()
            .format(vk::Format::R8G8_UNORM)
            .samples(one)
            .load_op(load)
            .store_op(dont)
            .initial_layout(fdm_layout)
            .final_layout(fdm_layout),
    );
    views.push(map_view);
    let (pass, fb) = if dynamic {
        (vk::RenderPass::null(), vk::Framebuffer::null())
    } else {
        let pass = render_pass(gpu, case.path == Path::RenderPass2, &atts, a_cr, a_dsr, Some(atts.len() as u32 - 1));
        let fb = gpu.framebuffer(pass, &views, size);
        (pass, fb)
    };
    let draw = pipeline(
        gpu,
        empty_layout,
        &PipeDesc { vs: rect_vs, fs: draw_fs, samples: n, only_sample: None, render_pass: pass, dynamic },
    );

    // The readback.
    let binding = |b: u32, ty| {
        vk::DescriptorSetLayoutBinding::default()
            .binding(b)
            .descriptor_type(ty)
            .descriptor_count(1)
            .stage_flags(vk::ShaderStageFlags::COMPUTE)
    };
    let sampler_ty = vk::DescriptorType::COMBINED_IMAGE_SAMPLER;
    let (set_layout, pool, set) = gpu.descriptor_set(&[
        binding(0, sampler_ty),
        binding(1, sampler_ty),
        binding(2, sampler_ty),
        binding(3, vk::DescriptorType::STORAGE_BUFFER),
    ]);
    let words = (w * h * n * 3) as u64;
    let out = gpu.buffer(words * 4, vk::BufferUsageFlags::STORAGE_BUFFER, true);
    let resolved = gpu.buffer((w * h * 4) as u64 * 3, vk::BufferUsageFlags::TRANSFER_DST, true);
    let (read_pipe, read_layout, sampler) = unsafe {
        let sampler = d.create_sampler(&vk::SamplerCreateInfo::default(), None).unwrap();
        let images = [
            vk::DescriptorImageInfo { sampler, image_view: colour.2, image_layout: read_colour },
            vk::DescriptorImageInfo { sampler, image_view: depth_view, image_layout: read_ds },
            vk::DescriptorImageInfo { sampler, image_view: stencil_view, image_layout: read_ds },
        ];
        let buf = [vk::DescriptorBufferInfo { buffer: out.buffer, offset: 0, range: vk::WHOLE_SIZE }];
        let write = |b: u32| vk::WriteDescriptorSet::default().dst_set(set).dst_binding(b).descriptor_type(sampler_ty);
        d.update_descriptor_sets(
            &[
                write(0).image_info(&images[0..1]),
                write(1).image_info(&images[1..2]),
                write(2).image_info(&images[2..3]),
                vk::WriteDescriptorSet::default()
                    .dst_set(set)
                    .dst_binding(3)
                    .descriptor_type(vk::DescriptorType::STORAGE_BUFFER)
                    .buffer_info(&buf),
            ],
            &[],
        );
        let pc = [vk::PushConstantRange { stage_flags: vk::ShaderStageFlags::COMPUTE, offset: 0, size: 12 }];
        let sets = [set_layout];
        let layout = d
            .create_pipeline_layout(
                &vk::PipelineLayoutCreateInfo::default().set_layouts(&sets).push_constant_ranges(&pc),
                None,
            )
            .unwrap();
        (gpu.compute_pipeline(read_cs, layout), layout, sampler)
    };

    let all = (vk::PipelineStageFlags::ALL_COMMANDS, vk::AccessFlags::MEMORY_READ | vk::AccessFlags::MEMORY_WRITE);
    gpu.one_time_submit(|cb| unsafe {
        // Prefill.
        let clears = [
            vk::ClearValue { color: vk::ClearColorValue { float32: [0.0; 4] } },
            vk::ClearValue { depth_stencil: vk::ClearDepthStencilValue { depth: 1.0, stencil: 0 } },
        ];
        let begin = vk::RenderPassBeginInfo::default()
            .render_pass(fill_pass)
            .framebuffer(fill_fb)
            .render_area(full)
            .clear_values(&clears);
        d.cmd_begin_render_pass(cb, &begin, vk::SubpassContents::INLINE);
        for (s, p) in fills.iter().enumerate() {
            d.cmd_bind_pipeline(cb, vk::PipelineBindPoint::GRAPHICS, *p);
            d.cmd_set_stencil_reference(cb, vk::StencilFaceFlags::FRONT_AND_BACK, s as u32 + 1);
            d.cmd_draw(cb, 3, 1, 0, 0);
        }
        d.cmd_end_render_pass(cb);
        gpu.memory_barrier(cb, all, all);
        // The density-map pass.
        if dynamic {
            for r in colour_resolve.iter() {
                gpu.image_from_undefined(cb, r.0, range(vk::ImageAspectFlags::COLOR), colour_layout, all);
            }
            for r in ds_resolve.iter() {
                gpu.image_from_undefined(cb, r.0, range(ds_aspect), ds_layout, all);
            }
            let att = |v: vk::ImageView, layout, resolve: Option<(vk::ImageView, vk::ResolveModeFlags)>| {
                let mut a = vk::RenderingAttachmentInfo::default()
                    .image_view(v)
                    .image_layout(layout)
                    .load_op(load)
                    .store_op(store);
                if let Some((rv, mode)) = resolve {
                    a = a.resolve_mode(mode).resolve_image_view(rv).resolve_image_layout(layout);
                }
                a
            };
            let colours = [att(colour.2, colour_layout, colour_resolve.map(|r| (r.2, vk::ResolveModeFlags::AVERAGE)))];
            let ds = att(depth.2, ds_layout, ds_resolve.map(|r| (r.2, vk::ResolveModeFlags::SAMPLE_ZERO)));
            let stencil = ds.store_op(stencil_store);
            let mut fdm_info = vk::RenderingFragmentDensityMapAttachmentInfoEXT::default()
                .image_view(map_view)
                .image_layout(fdm_layout);
            let info = vk::RenderingInfo::default()
                .render_area(full)
                .layer_count(1)
                .color_attachments(&colours)
                .depth_attachment(&ds)
                .stencil_attachment(&stencil)
                .push_next(&mut fdm_info);
            d.cmd_begin_rendering(cb, &info);
        } else {
            let begin = vk::RenderPassBeginInfo::default().render_pass(pass).framebuffer(fb).render_area(full);
            d.cmd_begin_render_pass(cb, &begin, vk::SubpassContents::INLINE);
        }
        d.cmd_bind_pipeline(cb, vk::PipelineBindPoint::GRAPHICS, draw);
        d.cmd_draw(cb, 6, 1, 0, 0);
        if dynamic {
            d.cmd_end_rendering(cb);
            let b = |image, aspect, old, new| {
                gpu.image_barrier(cb, image, range(aspect), (old, new), all, all);
            };
            b(colour.0, vk::ImageAspectFlags::COLOR, colour_layout, read_colour);
            b(depth.0, ds_aspect, ds_layout, read_ds);
            for r in colour_resolve.iter() {
                b(r.0, vk::ImageAspectFlags::COLOR, colour_layout, src);
            }
            for r in ds_resolve.iter() {
                b(r.0, ds_aspect, ds_layout, src);
            }
        } else {
            d.cmd_end_render_pass(cb);
        }
        gpu.memory_barrier(cb, all, all);
        // Readback: every sample, and the resolves.
        d.cmd_bind_pipeline(cb, vk::PipelineBindPoint::COMPUTE, read_pipe);
        d.cmd_bind_descriptor_sets(cb, vk::PipelineBindPoint::COMPUTE, read_layout, 0, &[set], &[]);
        let pc: Vec<u8> = [w, h, n].iter().flat_map(|v| v.to_ne_bytes()).collect();
        d.cmd_push_constants(cb, read_layout, vk::ShaderStageFlags::COMPUTE, 0, &pc);
        d.cmd_dispatch(cb, w.div_ceil(8), h.div_ceil(8), 1);
        let region = |aspect, offset| vk::BufferImageCopy {
            buffer_offset: offset,
            image_subresource: vk::ImageSubresourceLayers {
                aspect_mask: aspect,
                mip_level: 0,
                base_array_layer: 0,
                layer_count: 1,
            },
            image_extent: vk::Extent3D { width: w, height: h, depth: 1 },
            ..Default::default()
        };
        let px = (w * h) as u64;
        if let Some(r) = colour_resolve {
            d.cmd_copy_image_to_buffer(cb, r.0, src, resolved.buffer, &[region(vk::ImageAspectFlags::COLOR, 0)]);
        }
        if let Some(r) = ds_resolve {
            d.cmd_copy_image_to_buffer(
                cb,
                r.0,
                src,
                resolved.buffer,
                &[region(vk::ImageAspectFlags::DEPTH, px * 4), region(vk::ImageAspectFlags::STENCIL, px * 8)],
            );
        }
        gpu.memory_barrier(cb, all, (vk::PipelineStageFlags::HOST, vk::AccessFlags::HOST_READ));
    });
    let px = (w * h) as usize;
    let word = |b: &crate::render::Buffer, i: usize| unsafe { (b.map as *const u32).add(i).read() };
    let ms_out: Vec<Sample> = (0..(w * h * n) as usize)
        .map(|i| {
            let c = word(&out, i * 3).to_le_bytes();
            (c, f32::from_bits(word(&out, i * 3 + 1)), word(&out, i * 3 + 2) as u8)
        })
        .collect();
    let resolve = colour_resolve.map(|_| {
        let colour: Vec<[u8; 4]> = (0..px).map(|i| word(&resolved, i).to_le_bytes()).collect();
        let ds = ds_resolve.map(|_| {
            (0..px)
                .map(|i| {
                    let st = unsafe { resolved.map.add(px * 8 + i).read() };
                    (f32::from_bits(word(&resolved, px + i)), st)
                })
                .collect()
        });
        (colour, ds)
    });
    unsafe {
        d.destroy_pipeline(read_pipe, None);
        d.destroy_pipeline_layout(read_layout, None);
        d.destroy_sampler(sampler, None);
        d.destroy_descriptor_pool(pool, None);
        d.destroy_descriptor_set_layout(set_layout, None);
        d.destroy_pipeline(draw, None);
        for p in fills {
            d.destroy_pipeline(p, None);
        }
        d.destroy_pipeline_layout(empty_layout, None);
        d.destroy_framebuffer(fill_fb, None);
        d.destroy_render_pass(fill_pass, None);
        if fb != vk::Framebuffer::null() {
            d.destroy_framebuffer(fb, None);
            d.destroy_render_pass(pass, None);
        }
        d.destroy_image_view(depth_view, None);
        d.destroy_image_view(stencil_view, None);
        if map_view != map_img.2 {
            d.destroy_image_view(map_view, None);
        }
    }
    for i in [Some(colour), Some(depth), colour_resolve, ds_resolve, Some(map_img)].into_iter().flatten() {
        gpu.destroy_image(i);
    }
    gpu.destroy_buffer(out);
    gpu.destroy_buffer(resolved);
    Output { size, samples: n, no_stencil: case.gpu_plan, ms: ms_out, resolve }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXEL: (u32, u32) = (VIEWPORT.0 / 8, VIEWPORT.1 / 8);

    fn map() -> Map {
        Map { width: 8, height: 8, texels: fdm::regions(8, 8) }
    }

    /// What a correct binned render stores, every pixel at `area(x, y)`
    /// (loading the block's pixel at offset `pick` in it).
    fn render_at(area: impl Fn(u32, u32) -> (u32, u32), pick: (u32, u32), samples: u32) -> Output {
        let (w, h) = VIEWPORT;
        let mut ms = Vec::new();
        for y in 0..h {
            for x in 0..w {
                let (aw, ah) = area(x, y);
                let c = ((x / aw * aw + pick.0.min(aw - 1)).min(w - 1), (y / ah * ah + pick.1.min(ah - 1)).min(h - 1));
                ms.extend((0..samples).map(|s| expected(c, s, inside(x, y))));
            }
        }
        Output { size: VIEWPORT, samples, no_stencil: false, ms, resolve: None }
    }

    fn asked(x: u32, y: u32) -> (u32, u32) {
        let m = map();
        let t = m.texels[((y / TEXEL.1) * 8 + x / TEXEL.0) as usize];
        (fdm::requested(t[0]), fdm::requested(t[1]))
    }

    #[test]
    fn a_correct_binned_render_passes_and_counts_its_coarse_pixels() {
        let out = render_at(asked, (1, 1), 4);
        let coarse = check(&out, &map(), TEXEL).unwrap();
        // Three quarters of the target asks for more than 1x1.
        assert_eq!(coarse, (VIEWPORT.0 * 3 / 4 * VIEWPORT.1) as u64);
        // At 1x1 everywhere (the fallback): correct, but nothing is coarse.
        assert_eq!(check(&render_at(|_, _| (1, 1), (0, 0), 4), &map(), TEXEL), Ok(0));
    }

    #[test]
    fn a_sample_moved_or_a_block_too_large_is_reported() {
        // Samples 0 and 1 swapped in one pixel of a coarse block.
        let mut out = render_at(asked, (1, 1), 4);
        let i = ((20 * VIEWPORT.0 + 200) * 4) as usize;
        out.ms.swap(i, i + 1);
        assert!(check(&out, &map(), TEXEL).unwrap_err().contains("pixel 200,20"));
        // Every pixel's samples from sample 0.
        let mut out = render_at(asked, (1, 1), 4);
        for p in out.ms.chunks_mut(4) {
            let s0 = p[0];
            p.fill(s0);
        }
        assert!(check(&out, &map(), TEXEL).is_err());
        // The 1x1 column rendered at 2x2.
        let out = render_at(|x, y| if x < VIEWPORT.0 / 4 { (2, 2) } else { asked(x, y) }, (1, 1), 4);
        assert!(check(&out, &map(), TEXEL).unwrap_err().contains("at most 1x1"));
    }

    #[test]
    fn a_wrong_resolve_is_reported() {
        let mut out = render_at(asked, (1, 1), 4);
        let avg: Vec<[u8; 4]> = out
            .ms
            .chunks(4)
            .map(|p| {
                let mut c = [0u8; 4];
                for (ch, v) in c.iter_mut().enumerate() {
                    *v = (p.iter().map(|s| s.0[ch] as u32).sum::<u32>() as f32 / 4.0).round() as u8;
                }
                c
            })
            .collect();
        let ds: Vec<(f32, u8)> = out.ms.chunks(4).map(|p| (p[0].1, p[0].2)).collect();
        out.resolve = Some((avg.clone(), Some(ds.clone())));
        assert!(check(&out, &map(), TEXEL).is_ok());
        let mut wrong = ds;
        wrong[100].0 = 0.123;
        out.resolve = Some((avg, Some(wrong)));
        assert!(check(&out, &map(), TEXEL).unwrap_err().contains("depth/stencil resolve"));
    }
}

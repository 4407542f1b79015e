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

use crate::render::{color_range, Gpu};
use ash::vk;

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
    /// Record an occlusion query around the draw (inside the pass).
    pub query: bool,
    /// Passes recorded (the benchmark's frames); 1 elsewhere.
    pub repeat: u32,
}

fn buffer(gpu: &Gpu, size: u64, usage: vk::BufferUsageFlags) -> (vk::Buffer, vk::DeviceMemory, *mut u8) {
    let d = &gpu.device;
    unsafe {
        let b = d.create_buffer(&vk::BufferCreateInfo::default().size(size).usage(usage), None).unwrap();
        let req = d.get_buffer_memory_requirements(b);
        let host = vk::MemoryPropertyFlags::HOST_VISIBLE | vk::MemoryPropertyFlags::HOST_COHERENT;
        let m = d
            .allocate_memory(
                &vk::MemoryAllocateInfo::default()
                    .allocation_size(req.size)
                    .memory_type_index(gpu.memory_type(req.memory_type_bits, host)),
                None,
            )
            .unwrap();
        d.bind_buffer_memory(b, m, 0).unwrap();
        let p = d.map_memory(m, 0, vk::WHOLE_SIZE, vk::MemoryMapFlags::empty()).unwrap() as *mut u8;
        (b, m, p)
    }
}

fn layout_barrier(
    gpu: &Gpu,
    cb: vk::CommandBuffer,
    image: vk::Image,
    old: vk::ImageLayout,
    new: vk::ImageLayout,
    dst: (vk::PipelineStageFlags, vk::AccessFlags),
) {
    let b = [vk::ImageMemoryBarrier::default()
        .old_layout(old)
        .new_layout(new)
        .src_access_mask(vk::AccessFlags::TRANSFER_WRITE | vk::AccessFlags::COLOR_ATTACHMENT_WRITE)
        .dst_access_mask(dst.1)
        .src_queue_family_index(vk::QUEUE_FAMILY_IGNORED)
        .dst_queue_family_index(vk::QUEUE_FAMILY_IGNORED)
        .image(image)
        .subresource_range(color_range())];
    let src = vk::PipelineStageFlags::TRANSFER | vk::PipelineStageFlags::COLOR_ATTACHMENT_OUTPUT;
    unsafe { gpu.device.cmd_pipeline_barrier(cb, src, dst.0, vk::DependencyFlags::empty(), &[], &[], &b) };
}

/// Renders `scene` and reads back its RGBA8 pixels.
pub fn render(gpu: &Gpu, scene: &Scene) -> Vec<[u8; 4]> {
    let d = &gpu.device;
    let (w, h) = scene.size;
    let samples = vk::SampleCountFlags::from_raw(scene.samples);
    let msaa = scene.samples > 1;
    let color_format = vk::Format::R8G8B8A8_UNORM;
    let usage = vk::ImageUsageFlags::COLOR_ATTACHMENT | vk::ImageUsageFlags::TRANSFER_SRC;
    let out = gpu.image_2d(color_format, (w, h), vk::SampleCountFlags::TYPE_1, usage);
    let ms = msaa.then(|| gpu.image_2d(color_format, (w, h), samples, vk::ImageUsageFlags::COLOR_ATTACHMENT));
    let map = scene.map.map(|m| {
        let img = gpu.image_2d(
            vk::Format::R8G8_UNORM,
            (m.width, m.height),
            vk::SampleCountFlags::TYPE_1,
            vk::ImageUsageFlags::FRAGMENT_DENSITY_MAP_EXT | vk::ImageUsageFlags::TRANSFER_DST,
        );
        let (b, mem, p) = buffer(gpu, (m.texels.len() * 2) as u64, vk::BufferUsageFlags::TRANSFER_SRC);
        unsafe { std::ptr::copy_nonoverlapping(m.texels.as_ptr() as *const u8, p, m.texels.len() * 2) };
        gpu.one_time_submit(|cb| unsafe {
            gpu.image_from_undefined(
                cb,
                img.0,
                color_range(),
                vk::ImageLayout::TRANSFER_DST_OPTIMAL,
                (vk::PipelineStageFlags::TRANSFER, vk::AccessFlags::TRANSFER_WRITE),
            );
            let region = vk::BufferImageCopy::default()
                .image_subresource(vk::ImageSubresourceLayers {
                    aspect_mask: vk::ImageAspectFlags::COLOR,
                    mip_level: 0,
                    base_array_layer: 0,
                    layer_count: 1,
                })
                .image_extent(vk::Extent3D { width: m.width, height: m.height, depth: 1 });
            d.cmd_copy_buffer_to_image(cb, b, img.0, vk::ImageLayout::TRANSFER_DST_OPTIMAL, &[region]);
            layout_barrier(
                gpu,
                cb,
                img.0,
                vk::ImageLayout::TRANSFER_DST_OPTIMAL,
                vk::ImageLayout::FRAGMENT_DENSITY_MAP_OPTIMAL_EXT,
                (vk::PipelineStageFlags::FRAGMENT_DENSITY_PROCESS_EXT, vk::AccessFlags::FRAGMENT_DENSITY_MAP_READ_EXT),
            );
        });
        unsafe {
            d.destroy_buffer(b, None);
            d.free_memory(mem, None);
        }
        img
    });
    let fdm_layout = vk::ImageLayout::FRAGMENT_DENSITY_MAP_OPTIMAL_EXT;
    unsafe {
        // Render pass objects (not for dynamic rendering).
        let mut render_pass = vk::RenderPass::null();
        let mut framebuffer = vk::Framebuffer::null();
        let color_index_of_map = if msaa { 2 } else { 1 };
        if scene.path != Path::Dynamic {
            let mut attachments = vec![vk::AttachmentDescription2::default()
                .format(color_format)
                .samples(samples)
                .load_op(vk::AttachmentLoadOp::CLEAR)
                .store_op(if msaa { vk::AttachmentStoreOp::DONT_CARE } else { vk::AttachmentStoreOp::STORE })
                .initial_layout(vk::ImageLayout::UNDEFINED)
                .final_layout(if msaa {
                    vk::ImageLayout::COLOR_ATTACHMENT_OPTIMAL
                } else {
                    vk::ImageLayout::TRANSFER_SRC_OPTIMAL
                })];
            if msaa {
                attachments.push(
                    vk::AttachmentDescription2::default()
                        .format(color_format)
                        .samples(vk::SampleCountFlags::TYPE_1)
                        .load_op(vk::AttachmentLoadOp::DONT_CARE)
                        .store_op(vk::AttachmentStoreOp::STORE)
                        .initial_layout(vk::ImageLayout::UNDEFINED)
                        .final_layout(vk::ImageLayout::TRANSFER_SRC_OPTIMAL),
                );
            }
            if scene.map.is_some() {
                attachments.push(
                    vk::AttachmentDescription2::default()
                        .format(vk::Format::R8G8_UNORM)
                        .samples(vk::SampleCountFlags::TYPE_1)
                        .load_op(vk::AttachmentLoadOp::LOAD)
                        .store_op(vk::AttachmentStoreOp::DONT_CARE)
                        .initial_layout(fdm_layout)
                        .final_layout(fdm_layout),
                );
            }
            let colour = [vk::AttachmentReference2::default()
                .attachment(0)
                .layout(vk::ImageLayout::COLOR_ATTACHMENT_OPTIMAL)
                .aspect_mask(vk::ImageAspectFlags::COLOR)];
            let resolve = [vk::AttachmentReference2::default()
                .attachment(1)
                .layout(vk::ImageLayout::COLOR_ATTACHMENT_OPTIMAL)
                .aspect_mask(vk::ImageAspectFlags::COLOR)];
            let mut sub = vk::SubpassDescription2::default()
                .pipeline_bind_point(vk::PipelineBindPoint::GRAPHICS)
                .color_attachments(&colour);
            if msaa {
                sub = sub.resolve_attachments(&resolve);
            }
            let subs = [sub];
            let mut fdm_info =
                vk::RenderPassFragmentDensityMapCreateInfoEXT::default().fragment_density_map_attachment(
                    vk::AttachmentReference { attachment: color_index_of_map, layout: fdm_layout },
                );
            render_pass = if scene.path == Path::RenderPass2 {
                let mut info = vk::RenderPassCreateInfo2::default().attachments(&attachments).subpasses(&subs);
                if scene.map.is_some() {
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
                let c1 = [vk::AttachmentReference { attachment: 0, layout: vk::ImageLayout::COLOR_ATTACHMENT_OPTIMAL }];
                let r1 = [vk::AttachmentReference { attachment: 1, layout: vk::ImageLayout::COLOR_ATTACHMENT_OPTIMAL }];
                let mut s1 = vk::SubpassDescription::default()
                    .pipeline_bind_point(vk::PipelineBindPoint::GRAPHICS)
                    .color_attachments(&c1);
                if msaa {
                    s1 = s1.resolve_attachments(&r1);
                }
                let subs1 = [s1];
                let mut info = vk::RenderPassCreateInfo::default().attachments(&a1).subpasses(&subs1);
                if scene.map.is_some() {
                    info = info.push_next(&mut fdm_info);
                }
                d.create_render_pass(&info, None).unwrap()
            };
            let mut views = vec![ms.as_ref().map_or(out.2, |m| m.2)];
            if msaa {
                views.push(out.2);
            }
            if let Some(m) = &map {
                views.push(m.2);
            }
            framebuffer = d
                .create_framebuffer(
                    &vk::FramebufferCreateInfo::default()
                        .render_pass(render_pass)
                        .attachments(&views)
                        .width(w)
                        .height(h)
                        .layers(1),
                    None,
                )
                .unwrap();
        }
        // The pipeline.
        let vs = gpu.shader(scene.vs);
        let fs = gpu.shader(scene.fs);
        let layout = d.create_pipeline_layout(&vk::PipelineLayoutCreateInfo::default(), None).unwrap();
        let stages = [
            vk::PipelineShaderStageCreateInfo::default().stage(vk::ShaderStageFlags::VERTEX).module(vs).name(c"main"),
            vk::PipelineShaderStageCreateInfo::default().stage(vk::ShaderStageFlags::FRAGMENT).module(fs).name(c"main"),
        ];
        let vin = vk::PipelineVertexInputStateCreateInfo::default();
        let ia = vk::PipelineInputAssemblyStateCreateInfo::default().topology(vk::PrimitiveTopology::TRIANGLE_LIST);
        let vp = [vk::Viewport {
            x: 0.0,
            y: 0.0,
            width: scene.viewport.0,
            height: scene.viewport.1,
            min_depth: 0.0,
            max_depth: 1.0,
        }];
        let sc = [vk::Rect2D { offset: vk::Offset2D::default(), extent: vk::Extent2D { width: w, height: h } }];
        let vps = vk::PipelineViewportStateCreateInfo::default().viewports(&vp).scissors(&sc);
        let rs = vk::PipelineRasterizationStateCreateInfo::default().line_width(1.0);
        let msi = vk::PipelineMultisampleStateCreateInfo::default().rasterization_samples(samples);
        let blend = [vk::PipelineColorBlendAttachmentState::default().color_write_mask(vk::ColorComponentFlags::RGBA)];
        let cbs = vk::PipelineColorBlendStateCreateInfo::default().attachments(&blend);
        let formats = [color_format];
        let mut rendering = vk::PipelineRenderingCreateInfo::default().color_attachment_formats(&formats);
        let mut info = vk::GraphicsPipelineCreateInfo::default()
            .stages(&stages)
            .vertex_input_state(&vin)
            .input_assembly_state(&ia)
            .viewport_state(&vps)
            .rasterization_state(&rs)
            .multisample_state(&msi)
            .color_blend_state(&cbs)
            .layout(layout)
            .render_pass(render_pass);
        if scene.path == Path::Dynamic {
            info = info.push_next(&mut rendering);
            if scene.map.is_some() {
                info = info.flags(vk::PipelineCreateFlags::RENDERING_FRAGMENT_DENSITY_MAP_ATTACHMENT_EXT);
            }
        }
        let pipeline = d.create_graphics_pipelines(vk::PipelineCache::null(), &[info], None).unwrap()[0];
        let query_pool = d
            .create_query_pool(
                &vk::QueryPoolCreateInfo::default().query_type(vk::QueryType::OCCLUSION).query_count(1),
                None,
            )
            .unwrap();
        let (rb, rmem, rp) = buffer(gpu, (w * h * 4) as u64, vk::BufferUsageFlags::TRANSFER_DST);
        gpu.one_time_submit(|cb| {
            for _ in 0..scene.repeat.max(1) {
                if scene.query {
                    d.cmd_reset_query_pool(cb, query_pool, 0, 1);
                }
                // Alpha 255 is no area code, nor is any multisample blend of it with one.
                let clear = [vk::ClearValue { color: vk::ClearColorValue { float32: [0.0, 0.0, 0.0, 1.0] } }];
                let area = vk::Rect2D { offset: vk::Offset2D::default(), extent: vk::Extent2D { width: w, height: h } };
                if scene.path == Path::Dynamic {
                    let att =
                        (vk::PipelineStageFlags::COLOR_ATTACHMENT_OUTPUT, vk::AccessFlags::COLOR_ATTACHMENT_WRITE);
                    gpu.image_from_undefined(cb, out.0, color_range(), vk::ImageLayout::COLOR_ATTACHMENT_OPTIMAL, att);
                    if let Some(m) = &ms {
                        gpu.image_from_undefined(
                            cb,
                            m.0,
                            color_range(),
                            vk::ImageLayout::COLOR_ATTACHMENT_OPTIMAL,
                            att,
                        );
                    }
                    let mut colour = vk::RenderingAttachmentInfo::default()
                        .image_view(ms.as_ref().map_or(out.2, |m| m.2))
                        .image_layout(vk::ImageLayout::COLOR_ATTACHMENT_OPTIMAL)
                        .load_op(vk::AttachmentLoadOp::CLEAR)
                        .store_op(if msaa { vk::AttachmentStoreOp::DONT_CARE } else { vk::AttachmentStoreOp::STORE })
                        .clear_value(clear[0]);
                    if msaa {
                        colour = colour
                            .resolve_mode(vk::ResolveModeFlags::AVERAGE)
                            .resolve_image_view(out.2)
                            .resolve_image_layout(vk::ImageLayout::COLOR_ATTACHMENT_OPTIMAL);
                    }
                    let colours = [colour];
                    let mut fdm_att = vk::RenderingFragmentDensityMapAttachmentInfoEXT::default()
                        .image_view(map.as_ref().map_or(vk::ImageView::null(), |m| m.2))
                        .image_layout(fdm_layout);
                    let mut ri =
                        vk::RenderingInfo::default().render_area(area).layer_count(1).color_attachments(&colours);
                    if map.is_some() {
                        ri = ri.push_next(&mut fdm_att);
                    }
                    d.cmd_begin_rendering(cb, &ri);
                } else {
                    let info = vk::RenderPassBeginInfo::default()
                        .render_pass(render_pass)
                        .framebuffer(framebuffer)
                        .render_area(area)
                        .clear_values(&clear);
                    d.cmd_begin_render_pass(cb, &info, vk::SubpassContents::INLINE);
                }
                d.cmd_bind_pipeline(cb, vk::PipelineBindPoint::GRAPHICS, pipeline);
                if scene.query {
                    d.cmd_begin_query(cb, query_pool, 0, vk::QueryControlFlags::empty());
                }
                d.cmd_draw(cb, scene.vertices, 1, 0, 0);
                if scene.query {
                    d.cmd_end_query(cb, query_pool, 0);
                }
                if scene.path == Path::Dynamic {
                    d.cmd_end_rendering(cb);
                    layout_barrier(
                        gpu,
                        cb,
                        out.0,
                        vk::ImageLayout::COLOR_ATTACHMENT_OPTIMAL,
                        vk::ImageLayout::TRANSFER_SRC_OPTIMAL,
                        (vk::PipelineStageFlags::TRANSFER, vk::AccessFlags::TRANSFER_READ),
                    );
                } else {
                    d.cmd_end_render_pass(cb);
                    gpu.memory_barrier(
                        cb,
                        (vk::PipelineStageFlags::COLOR_ATTACHMENT_OUTPUT, vk::AccessFlags::COLOR_ATTACHMENT_WRITE),
                        (vk::PipelineStageFlags::TRANSFER, vk::AccessFlags::TRANSFER_READ),
                    );
                }
                let region = vk::BufferImageCopy::default()
                    .image_subresource(vk::ImageSubresourceLayers {
                        aspect_mask: vk::ImageAspectFlags::COLOR,
                        mip_level: 0,
                        base_array_layer: 0,
                        layer_count: 1,
                    })
                    .image_extent(vk::Extent3D { width: w, height: h, depth: 1 });
                d.cmd_copy_image_to_buffer(cb, out.0, vk::ImageLayout::TRANSFER_SRC_OPTIMAL, rb, &[region]);
            }
        });
        let pixels = std::slice::from_raw_parts(rp as *const [u8; 4], (w * h) as usize).to_vec();
        d.destroy_buffer(rb, None);
        d.free_memory(rmem, None);
        d.destroy_query_pool(query_pool, None);
        d.destroy_pipeline(pipeline, None);
        d.destroy_pipeline_layout(layout, None);
        d.destroy_shader_module(vs, None);
        d.destroy_shader_module(fs, None);
        if framebuffer != vk::Framebuffer::null() {
            d.destroy_framebuffer(framebuffer, None);
            d.destroy_render_pass(render_pass, None);
        }
        for (i, m, v) in [Some(out), ms, map].into_iter().flatten() {
            d.destroy_image_view(v, None);
            d.destroy_image(i, None);
            d.free_memory(m, None);
        }
        pixels
    }
}

/// The spec's region size for a framebuffer dimension and map dimension.
pub fn texel_size(fb: u32, map: u32, min: u32, max: u32) -> u32 {
    fb.div_ceil(map).next_power_of_two().clamp(min, max)
}

/// Checks a render of `fdm_size.frag`; returns (pixels shaded at an area
/// above 1, the largest area seen).
pub fn check_sizes(pixels: &[[u8; 4]], size: (u32, u32), map: &Map, texel: (u32, u32)) -> Result<(u64, u32), String> {
    let (w, h) = size;
    let mut coarse = 0;
    let mut largest = 1;
    let mut groups: std::collections::HashMap<u32, Vec<(u32, u32)>> = Default::default();
    for y in 0..h {
        for x in 0..w {
            let p = pixels[(y * w + x) as usize];
            let (sx, sy) = ((p[0] / 16) as u32, (p[0] % 16) as u32);
            let t =
                map.texels[((y / texel.1).min(map.height - 1) * map.width + (x / texel.0).min(map.width - 1)) as usize];
            let (rx, ry) = (requested(t[0]), requested(t[1]));
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
    Ok(compared)
}

//! `fdm-subsampled`: a density-map pass into a subsampled colour image
//! (`VK_IMAGE_CREATE_SUBSAMPLED_BIT_EXT`), then a post pass without a map
//! that samples it through a subsampled immutable sampler into a full-size
//! image — what google/bigwheels' foveation benchmark does with
//! `--enable-subsampled-image`, and Khronos' Vulkan-Samples density-map
//! sample. [`run`] records FRAMES such frames (each between timestamps
//! outside both passes) and reads the post pass's image back.
//!
//! The same program with a plain image and sampler is the reference: the
//! layer stores a plain attachment at full resolution, whose post pass
//! reads what the composite wrote there; a subsampled one it may store
//! packed, read through the bin table. Both must give the post pass the
//! same pixels (nearest) or the same up to the filter's rounding (linear).

use crate::fdm_bench::{elapsed_ns, radial_map, texel_limits, timestamps, Radial};
use crate::render::{color_range, Gpu};
use ash::vk;

/// One run's shape.
#[derive(Clone, Copy, Debug)]
pub struct Shape {
    /// The first pass's size.
    pub size: (u32, u32),
    /// The post pass's size (sampling the first at `p / post`).
    pub post: (u32, u32),
    /// Under a radial density map (else none at all: the `off` frame).
    pub map: bool,
    /// The colour image subsampled, its sampler too.
    pub subsampled: bool,
    pub linear: bool,
    pub frames: u32,
    /// How the post pass's set gets the image.
    pub update: Update,
    /// The post pass's set layout chains binding flags (all empty, as the
    /// CTS always chains them).
    pub binding_flags: bool,
    /// After the post pass, a render pass without a map clears the scene
    /// image (its framebuffer made before any frame).
    pub plain_after: bool,
}

/// The descriptor path that writes the scene into the post pass's set.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Update {
    /// `vkUpdateDescriptorSets`.
    Write,
    /// `vkUpdateDescriptorSetWithTemplate`.
    Template,
    /// Written into another set, then `vkUpdateDescriptorSets`' copy.
    Copy,
}

impl Update {
    pub fn parse(s: &str) -> Option<Update> {
        match s {
            "write" => Some(Update::Write),
            "template" => Some(Update::Template),
            "copy" => Some(Update::Copy),
            _ => None,
        }
    }
}

/// What a run gives back: the post pass's RGBA8 pixels after the last
/// frame, and per frame the GPU time of both passes, and of the first and
/// the post pass alone (ms; empty without timestamps).
pub struct Out {
    pub pixels: Vec<u8>,
    pub gpu_ms: Vec<f64>,
    pub first_ms: Vec<f64>,
    pub post_ms: Vec<f64>,
}

/// The first pass (`map`: with the density map; else the plain pass of
/// `plain_after`): its colour cleared, ending sampled by the post pass.
fn colour_pass(gpu: &Gpu, map: bool) -> vk::RenderPass {
    let done = (vk::PipelineStageFlags::FRAGMENT_SHADER, vk::AccessFlags::SHADER_READ);
    one_colour_pass(gpu, (vk::AttachmentLoadOp::CLEAR, vk::ImageLayout::SHADER_READ_ONLY_OPTIMAL), map, done)
}

/// The post pass: its colour read back by a copy.
fn post_pass(gpu: &Gpu) -> vk::RenderPass {
    let done = (vk::PipelineStageFlags::TRANSFER, vk::AccessFlags::TRANSFER_READ);
    one_colour_pass(gpu, (vk::AttachmentLoadOp::DONT_CARE, vk::ImageLayout::TRANSFER_SRC_OPTIMAL), false, done)
}

/// A render pass of one RGBA8 colour attachment (`load`, stored, ending in
/// `final_layout`) and, with `map`, a density map: ordered after the
/// previous frame's readers of the colour (`read_by`, which also waits for
/// the pass), and before them.
fn one_colour_pass(
    gpu: &Gpu,
    (load, final_layout): (vk::AttachmentLoadOp, vk::ImageLayout),
    map: bool,
    read_by: (vk::PipelineStageFlags, vk::AccessFlags),
) -> vk::RenderPass {
    let fdm_layout = vk::ImageLayout::FRAGMENT_DENSITY_MAP_OPTIMAL_EXT;
    let attachments = [
        vk::AttachmentDescription::default()
            .format(vk::Format::R8G8B8A8_UNORM)
            .samples(vk::SampleCountFlags::TYPE_1)
            .load_op(load)
            .store_op(vk::AttachmentStoreOp::STORE)
            .initial_layout(vk::ImageLayout::UNDEFINED)
            .final_layout(final_layout),
        crate::fdm::map_attachment(fdm_layout),
    ];
    let colour = [vk::AttachmentReference { attachment: 0, layout: vk::ImageLayout::COLOR_ATTACHMENT_OPTIMAL }];
    let subs = [vk::SubpassDescription::default()
        .pipeline_bind_point(vk::PipelineBindPoint::GRAPHICS)
        .color_attachments(&colour)];
    let write = (vk::PipelineStageFlags::COLOR_ATTACHMENT_OUTPUT, vk::AccessFlags::COLOR_ATTACHMENT_WRITE);
    let deps = [
        vk::SubpassDependency::default()
            .src_subpass(vk::SUBPASS_EXTERNAL)
            .dst_subpass(0)
            .src_stage_mask(read_by.0 | write.0)
            .src_access_mask(write.1)
            .dst_stage_mask(write.0)
            .dst_access_mask(write.1),
        vk::SubpassDependency::default()
            .src_subpass(0)
            .dst_subpass(vk::SUBPASS_EXTERNAL)
            .src_stage_mask(write.0)
            .src_access_mask(write.1)
            .dst_stage_mask(read_by.0)
            .dst_access_mask(read_by.1),
    ];
    let map_ref = vk::AttachmentReference { attachment: 1, layout: fdm_layout };
    let mut fdm_info =
        vk::RenderPassFragmentDensityMapCreateInfoEXT::default().fragment_density_map_attachment(map_ref);
    let used = if map { &attachments[..] } else { &attachments[..1] };
    let mut info = vk::RenderPassCreateInfo::default().attachments(used).subpasses(&subs).dependencies(&deps);
    if map {
        info = info.push_next(&mut fdm_info);
    }
    unsafe { gpu.device.create_render_pass(&info, None) }.expect("vkCreateRenderPass")
}

fn pipeline(gpu: &Gpu, fs: &[u8], layout: vk::PipelineLayout, rp: vk::RenderPass) -> vk::Pipeline {
    let vs = include_bytes!(concat!(env!("OUT_DIR"), "/fullscreen.vert.spv"));
    crate::fdm_bench::pipeline(gpu, vs, fs, layout, rp)
}

fn begin(gpu: &Gpu, cb: vk::CommandBuffer, rp: vk::RenderPass, fb: vk::Framebuffer, (w, h): (u32, u32)) {
    let clear = [vk::ClearValue { color: vk::ClearColorValue { float32: [0.0, 0.0, 0.0, 1.0] } }];
    let area = vk::Rect2D { offset: vk::Offset2D::default(), extent: vk::Extent2D { width: w, height: h } };
    let info =
        vk::RenderPassBeginInfo::default().render_pass(rp).framebuffer(fb).render_area(area).clear_values(&clear);
    let vp = vk::Viewport { x: 0.0, y: 0.0, width: w as f32, height: h as f32, min_depth: 0.0, max_depth: 1.0 };
    unsafe {
        gpu.device.cmd_begin_render_pass(cb, &info, vk::SubpassContents::INLINE);
        gpu.device.cmd_set_viewport(cb, 0, &[vp]);
        gpu.device.cmd_set_scissor(cb, 0, &[area]);
    }
}

/// Runs `shape` on `gpu` (a device with the density map where `shape.map`);
/// `fs` is the first pass's fragment shader.
pub fn run(gpu: &Gpu, shape: Shape, fs: &[u8]) -> Result<Out, String> {
    let d = &gpu.device;
    let (w, h) = shape.size;
    let (pw, ph) = shape.post;
    let texel = texel_limits(gpu).0;
    if shape.map && (texel.width == 0 || texel.height == 0) {
        return Err("fdm_subsampled: the device reports no fragment density map".into());
    }
    let flags = if shape.subsampled { vk::ImageCreateFlags::SUBSAMPLED_EXT } else { vk::ImageCreateFlags::empty() };
    let usage = vk::ImageUsageFlags::COLOR_ATTACHMENT | vk::ImageUsageFlags::SAMPLED;
    let scene = gpu.image_with_flags(
        flags,
        vk::Format::R8G8B8A8_UNORM,
        (w, h),
        1,
        vk::SampleCountFlags::TYPE_1,
        usage,
        vk::ImageAspectFlags::COLOR,
    );
    let post = gpu.image_2d(
        vk::Format::R8G8B8A8_UNORM,
        (pw, ph),
        vk::SampleCountFlags::TYPE_1,
        vk::ImageUsageFlags::COLOR_ATTACHMENT | vk::ImageUsageFlags::TRANSFER_SRC,
    );
    // A radial map at the smallest texel: 1x1 near the centre, 2x2 around, 4x4 beyond (`fdm-client`'s radii at
    // full HD, 154 and 267 pixels, scaled by the width).
    let scale = w as f32 / 1920.0;
    let radial = Radial { texel: (texel.width.max(1), texel.height.max(1)), r1: 154.0 * scale, r2: 267.0 * scale };
    let map = radial_map(shape.size, radial);
    let fdm_layout = vk::ImageLayout::FRAGMENT_DENSITY_MAP_OPTIMAL_EXT;
    let map_image = shape.map.then(|| {
        gpu.image_2d(
            vk::Format::R8G8_UNORM,
            (map.width, map.height),
            vk::SampleCountFlags::TYPE_1,
            vk::ImageUsageFlags::FRAGMENT_DENSITY_MAP_EXT | vk::ImageUsageFlags::TRANSFER_DST,
        )
    });
    let bytes: Vec<u8> = map.texels.iter().flatten().copied().collect();
    let staging = gpu.buffer(bytes.len().max(4) as u64, vk::BufferUsageFlags::TRANSFER_SRC, true);
    let readback = gpu.buffer((pw * ph * 4) as u64, vk::BufferUsageFlags::TRANSFER_DST, true);
    let stamps = timestamps(gpu);
    unsafe {
        std::ptr::copy_nonoverlapping(bytes.as_ptr(), staging.map, bytes.len());
        if let Some(m) = &map_image {
            gpu.one_time_submit(|cb| {
                let write = (vk::PipelineStageFlags::TRANSFER, vk::AccessFlags::TRANSFER_WRITE);
                gpu.image_from_undefined(cb, m.0, color_range(), vk::ImageLayout::TRANSFER_DST_OPTIMAL, write);
                gpu.copy_buffer_to_image(cb, staging.buffer, m.0, (map.width, map.height), 1);
                let read = (
                    vk::PipelineStageFlags::FRAGMENT_DENSITY_PROCESS_EXT,
                    vk::AccessFlags::FRAGMENT_DENSITY_MAP_READ_EXT,
                );
                let layouts = (vk::ImageLayout::TRANSFER_DST_OPTIMAL, fdm_layout);
                gpu.image_barrier(cb, m.0, color_range(), layouts, write, read);
            });
        }
        let rp = colour_pass(gpu, shape.map);
        let views: Vec<vk::ImageView> = [Some(scene.2), map_image.map(|m| m.2)].into_iter().flatten().collect();
        let fb = gpu.framebuffer(rp, &views, (w, h));
        let empty = d.create_pipeline_layout(&vk::PipelineLayoutCreateInfo::default(), None).unwrap();
        let pipe = pipeline(gpu, fs, empty, rp);
        // The post pass: the scene through an immutable sampler (subsampled where the image is).
        let filter = if shape.linear { vk::Filter::LINEAR } else { vk::Filter::NEAREST };
        let sflags =
            if shape.subsampled { vk::SamplerCreateFlags::SUBSAMPLED_EXT } else { vk::SamplerCreateFlags::empty() };
        let clamp = vk::SamplerAddressMode::CLAMP_TO_EDGE;
        let sampler = d
            .create_sampler(
                &vk::SamplerCreateInfo::default()
                    .flags(sflags)
                    .mag_filter(filter)
                    .min_filter(filter)
                    .mipmap_mode(vk::SamplerMipmapMode::NEAREST)
                    .address_mode_u(clamp)
                    .address_mode_v(clamp)
                    .address_mode_w(clamp)
                    .max_lod(0.0),
                None,
            )
            .unwrap();
        let samplers = [sampler];
        let binding = [vk::DescriptorSetLayoutBinding::default()
            .binding(1)
            .descriptor_type(vk::DescriptorType::COMBINED_IMAGE_SAMPLER)
            .descriptor_count(1)
            .stage_flags(vk::ShaderStageFlags::FRAGMENT)
            .immutable_samplers(&samplers)];
        let (set_layout, pool, set) = post_set(gpu, &binding, scene.2, (shape.update, shape.binding_flags));
        let layouts = [set_layout];
        let range = [vk::PushConstantRange { stage_flags: vk::ShaderStageFlags::FRAGMENT, offset: 0, size: 8 }];
        let post_layout = d
            .create_pipeline_layout(
                &vk::PipelineLayoutCreateInfo::default().set_layouts(&layouts).push_constant_ranges(&range),
                None,
            )
            .unwrap();
        let prp = post_pass(gpu);
        let pfb = gpu.framebuffer(prp, &[post.2], (pw, ph));
        let plain = shape.plain_after.then(|| {
            let rp = colour_pass(gpu, false);
            (rp, gpu.framebuffer(rp, &[scene.2], (w, h)))
        });
        let ppipe =
            pipeline(gpu, include_bytes!(concat!(env!("OUT_DIR"), "/subsampled_post.frag.spv")), post_layout, prp);
        let scale: [f32; 2] = [1.0 / pw as f32, 1.0 / ph as f32];
        let frames = shape.frames.max(1);
        let query = stamps.map(|_| {
            d.create_query_pool(
                &vk::QueryPoolCreateInfo::default().query_type(vk::QueryType::TIMESTAMP).query_count(3 * frames),
                None,
            )
            .unwrap()
        });
        gpu.one_time_submit(|cb| {
            if let Some(q) = query {
                d.cmd_reset_query_pool(cb, q, 0, 3 * frames);
            }
            for f in 0..frames {
                if let Some(q) = query {
                    d.cmd_write_timestamp(cb, vk::PipelineStageFlags::BOTTOM_OF_PIPE, q, 3 * f);
                }
                begin(gpu, cb, rp, fb, (w, h));
                d.cmd_bind_pipeline(cb, vk::PipelineBindPoint::GRAPHICS, pipe);
                d.cmd_draw(cb, 3, 1, 0, 0);
                d.cmd_end_render_pass(cb);
                if let Some(q) = query {
                    d.cmd_write_timestamp(cb, vk::PipelineStageFlags::BOTTOM_OF_PIPE, q, 3 * f + 1);
                }
                begin(gpu, cb, prp, pfb, (pw, ph));
                d.cmd_bind_pipeline(cb, vk::PipelineBindPoint::GRAPHICS, ppipe);
                d.cmd_bind_descriptor_sets(cb, vk::PipelineBindPoint::GRAPHICS, post_layout, 0, &[set], &[]);
                let bytes = std::slice::from_raw_parts(scale.as_ptr() as *const u8, 8);
                d.cmd_push_constants(cb, post_layout, vk::ShaderStageFlags::FRAGMENT, 0, bytes);
                d.cmd_draw(cb, 3, 1, 0, 0);
                d.cmd_end_render_pass(cb);
                if let Some(q) = query {
                    d.cmd_write_timestamp(cb, vk::PipelineStageFlags::BOTTOM_OF_PIPE, q, 3 * f + 2);
                }
                if let Some((rp, fb)) = plain {
                    begin(gpu, cb, rp, fb, (w, h));
                    d.cmd_end_render_pass(cb);
                }
            }
            gpu.copy_image_to_buffer(cb, post.0, vk::ImageLayout::TRANSFER_SRC_OPTIMAL, (pw, ph), 1, readback.buffer);
        });
        let (mut gpu_ms, mut first_ms, mut post_ms) = (Vec::new(), Vec::new(), Vec::new());
        if let (Some(q), Some((bits, period))) = (query, stamps) {
            let mut ticks = vec![0u64; 3 * frames as usize];
            d.get_query_pool_results(q, 0, &mut ticks, vk::QueryResultFlags::TYPE_64 | vk::QueryResultFlags::WAIT)
                .expect("timestamps");
            let ms = |a: u64, b: u64| elapsed_ns((bits, period), a, b) * 1e-6;
            for f in 0..frames as usize {
                let t = &ticks[3 * f..3 * f + 3];
                gpu_ms.push(ms(t[0], t[2]));
                first_ms.push(ms(t[0], t[1]));
                post_ms.push(ms(t[1], t[2]));
            }
            d.destroy_query_pool(q, None);
        }
        let pixels = std::slice::from_raw_parts(readback.map, (pw * ph * 4) as usize).to_vec();
        d.destroy_pipeline(ppipe, None);
        d.destroy_pipeline(pipe, None);
        d.destroy_pipeline_layout(post_layout, None);
        d.destroy_pipeline_layout(empty, None);
        d.destroy_framebuffer(pfb, None);
        if let Some((rp, fb)) = plain {
            d.destroy_framebuffer(fb, None);
            d.destroy_render_pass(rp, None);
        }
        d.destroy_framebuffer(fb, None);
        d.destroy_render_pass(prp, None);
        d.destroy_render_pass(rp, None);
        d.destroy_descriptor_pool(pool, None);
        d.destroy_descriptor_set_layout(set_layout, None);
        d.destroy_sampler(sampler, None);
        gpu.destroy_buffer(staging);
        gpu.destroy_buffer(readback);
        for i in [Some(scene), Some(post), map_image].into_iter().flatten() {
            gpu.destroy_image(i);
        }
        Ok(Out { pixels, gpu_ms, first_ms, post_ms })
    }
}

/// The post pass's set layout (`binding`), a pool and the set, the scene's
/// view written into it by `update`.
fn post_set(
    gpu: &Gpu,
    binding: &[vk::DescriptorSetLayoutBinding],
    view: vk::ImageView,
    (update, binding_flags): (Update, bool),
) -> (vk::DescriptorSetLayout, vk::DescriptorPool, vk::DescriptorSet) {
    let d = &gpu.device;
    let image_info = [vk::DescriptorImageInfo {
        sampler: vk::Sampler::null(),
        image_view: view,
        image_layout: vk::ImageLayout::SHADER_READ_ONLY_OPTIMAL,
    }];
    let write = |set| {
        [vk::WriteDescriptorSet::default()
            .dst_set(set)
            .dst_binding(1)
            .descriptor_type(vk::DescriptorType::COMBINED_IMAGE_SAMPLER)
            .image_info(&image_info)]
    };
    unsafe {
        let flags = vec![vk::DescriptorBindingFlags::empty(); binding.len()];
        let mut chained = vk::DescriptorSetLayoutBindingFlagsCreateInfo::default().binding_flags(&flags);
        let mut info = vk::DescriptorSetLayoutCreateInfo::default().bindings(binding);
        if binding_flags {
            info = info.push_next(&mut chained);
        }
        let layout = d.create_descriptor_set_layout(&info, None).unwrap();
        let sizes = [vk::DescriptorPoolSize { ty: vk::DescriptorType::COMBINED_IMAGE_SAMPLER, descriptor_count: 2 }];
        let pool = d
            .create_descriptor_pool(&vk::DescriptorPoolCreateInfo::default().max_sets(2).pool_sizes(&sizes), None)
            .unwrap();
        let layouts = [layout, layout];
        let sets = d
            .allocate_descriptor_sets(
                &vk::DescriptorSetAllocateInfo::default().descriptor_pool(pool).set_layouts(&layouts),
            )
            .unwrap();
        match update {
            Update::Write => d.update_descriptor_sets(&write(sets[0]), &[]),
            Update::Copy => {
                d.update_descriptor_sets(&write(sets[1]), &[]);
                let copy = [vk::CopyDescriptorSet::default()
                    .src_set(sets[1])
                    .src_binding(1)
                    .dst_set(sets[0])
                    .dst_binding(1)
                    .descriptor_count(1)];
                d.update_descriptor_sets(&[], &copy);
            }
            Update::Template => {
                let entry = [vk::DescriptorUpdateTemplateEntry {
                    dst_binding: 1,
                    dst_array_element: 0,
                    descriptor_count: 1,
                    descriptor_type: vk::DescriptorType::COMBINED_IMAGE_SAMPLER,
                    offset: 0,
                    stride: std::mem::size_of::<vk::DescriptorImageInfo>(),
                }];
                let template = d
                    .create_descriptor_update_template(
                        &vk::DescriptorUpdateTemplateCreateInfo::default()
                            .descriptor_update_entries(&entry)
                            .template_type(vk::DescriptorUpdateTemplateType::DESCRIPTOR_SET)
                            .descriptor_set_layout(layout),
                        None,
                    )
                    .unwrap();
                d.update_descriptor_set_with_template(sets[0], template, image_info.as_ptr() as *const _);
                d.destroy_descriptor_update_template(template, None);
            }
        }
        (layout, pool, sets[0])
    }
}

/// Pixels of `a` and `b` (RGBA8) that differ, and the largest channel difference.
pub fn compare(a: &[u8], b: &[u8]) -> (usize, u8) {
    let mut differing = 0;
    let mut max = 0u8;
    for (p, q) in a.chunks_exact(4).zip(b.chunks_exact(4)) {
        let d = p.iter().zip(q).map(|(x, y)| x.abs_diff(*y)).max().unwrap_or(0);
        if d > 0 {
            differing += 1;
            max = max.max(d);
        }
    }
    (differing, max)
}

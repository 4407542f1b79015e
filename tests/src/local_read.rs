//! A repro without density maps for the conformance tests'
//! `dynamic_rendering.*.fragment_density_map.N_views.render_copy` cases: in
//! one multiview dynamic rendering, a draw writes colour attachment 0 (a
//! colour per view), a by-region barrier, then a draw reads it through
//! `VK_KHR_dynamic_rendering_local_read` and writes colour attachment 1.
//! Every view's layer of attachment 1 must hold that view's colour.

use crate::render::{color_range, Gpu};
use ash::vk;

/// How closely the rendering follows the CTS case.
#[derive(Clone, Copy, Debug, Default)]
pub struct Shape {
    /// The barrier inside the rendering has `VIEW_LOCAL`.
    pub view_local: bool,
    /// The copy writes location 0, remapped to attachment 1
    /// (`VkRenderingAttachmentLocationInfoKHR` {UNUSED, 0} in its pipeline and
    /// `vkCmdSetRenderingAttachmentLocationsKHR` before it), both pipelines
    /// writing every attachment (the CTS's).
    pub remap: bool,
    /// The rendering's `layerCount` is the view count (the CTS's), not 1,
    /// and attachment 1 stays in `COLOR_ATTACHMENT_OPTIMAL`.
    pub cts_layers: bool,
}

/// Renders with `views` views in `shape`; per view, the pixels of
/// attachment 1 that do not hold that view's colour.
pub fn render(gpu: &Gpu, views: u32, shape: Shape) -> Vec<usize> {
    let d = &gpu.device;
    let (w, h) = (32u32, 32u32);
    let format = vk::Format::R8G8B8A8_UNORM;
    let range = vk::ImageSubresourceRange { layer_count: views, ..color_range() };
    let usage = vk::ImageUsageFlags::COLOR_ATTACHMENT | vk::ImageUsageFlags::TRANSFER_SRC;
    let make = |usage| {
        gpu.image_with_flags(
            vk::ImageCreateFlags::empty(),
            format,
            (w, h),
            views,
            vk::SampleCountFlags::TYPE_1,
            usage,
            vk::ImageAspectFlags::COLOR,
        )
    };
    let first = make(usage | vk::ImageUsageFlags::INPUT_ATTACHMENT);
    let copy = make(usage);
    let local = vk::ImageLayout::RENDERING_LOCAL_READ_KHR;
    let copy_layout = if shape.cts_layers { vk::ImageLayout::COLOR_ATTACHMENT_OPTIMAL } else { local };
    let quad = &include_bytes!(concat!(env!("OUT_DIR"), "/quad.vert.spv"))[..];
    let fs_view = &include_bytes!(concat!(env!("OUT_DIR"), "/view_colour.frag.spv"))[..];
    let fs_copy = if shape.remap {
        &include_bytes!(concat!(env!("OUT_DIR"), "/local_read_copy_loc0.frag.spv"))[..]
    } else {
        &include_bytes!(concat!(env!("OUT_DIR"), "/local_read_copy.frag.spv"))[..]
    };
    let locations = [vk::ATTACHMENT_UNUSED, 0];
    let binding = [vk::DescriptorSetLayoutBinding::default()
        .binding(0)
        .descriptor_type(vk::DescriptorType::INPUT_ATTACHMENT)
        .descriptor_count(1)
        .stage_flags(vk::ShaderStageFlags::FRAGMENT)];
    let (set_layout, pool, set) = gpu.descriptor_set(&binding);
    let readback = gpu.buffer((w * h * 4 * views) as u64, vk::BufferUsageFlags::TRANSFER_DST, true);
    let view_mask = (1u32 << views) - 1;
    unsafe {
        let ii = [vk::DescriptorImageInfo { sampler: vk::Sampler::null(), image_view: first.2, image_layout: local }];
        d.update_descriptor_sets(
            &[vk::WriteDescriptorSet::default()
                .dst_set(set)
                .dst_binding(0)
                .descriptor_type(vk::DescriptorType::INPUT_ATTACHMENT)
                .image_info(&ii)],
            &[],
        );
        let sets = [set_layout];
        let layout =
            d.create_pipeline_layout(&vk::PipelineLayoutCreateInfo::default().set_layouts(&sets), None).unwrap();
        let formats = [format, format];
        let pipeline = |fs: &[u8], writes: usize| {
            let (vsm, fsm) = (gpu.shader(quad), gpu.shader(fs));
            let stages = [
                vk::PipelineShaderStageCreateInfo::default()
                    .stage(vk::ShaderStageFlags::VERTEX)
                    .module(vsm)
                    .name(c"main"),
                vk::PipelineShaderStageCreateInfo::default()
                    .stage(vk::ShaderStageFlags::FRAGMENT)
                    .module(fsm)
                    .name(c"main"),
            ];
            let vi = vk::PipelineVertexInputStateCreateInfo::default();
            let ia = vk::PipelineInputAssemblyStateCreateInfo::default().topology(vk::PrimitiveTopology::TRIANGLE_LIST);
            let vp =
                [vk::Viewport { x: 0.0, y: 0.0, width: w as f32, height: h as f32, min_depth: 0.0, max_depth: 1.0 }];
            let sc = [vk::Rect2D { offset: vk::Offset2D::default(), extent: vk::Extent2D { width: w, height: h } }];
            let vps = vk::PipelineViewportStateCreateInfo::default().viewports(&vp).scissors(&sc);
            let rs = vk::PipelineRasterizationStateCreateInfo::default().line_width(1.0);
            let ms =
                vk::PipelineMultisampleStateCreateInfo::default().rasterization_samples(vk::SampleCountFlags::TYPE_1);
            let blend: Vec<vk::PipelineColorBlendAttachmentState> = (0..2)
                .map(|i| {
                    vk::PipelineColorBlendAttachmentState::default().color_write_mask(if i == writes || shape.remap {
                        vk::ColorComponentFlags::RGBA
                    } else {
                        vk::ColorComponentFlags::empty()
                    })
                })
                .collect();
            let cb = vk::PipelineColorBlendStateCreateInfo::default().attachments(&blend);
            let mut rendering =
                vk::PipelineRenderingCreateInfo::default().color_attachment_formats(&formats).view_mask(view_mask);
            let mut remap = vk::RenderingAttachmentLocationInfoKHR::default().color_attachment_locations(&locations);
            let mut info = vk::GraphicsPipelineCreateInfo::default()
                .stages(&stages)
                .vertex_input_state(&vi)
                .input_assembly_state(&ia)
                .viewport_state(&vps)
                .rasterization_state(&rs)
                .multisample_state(&ms)
                .color_blend_state(&cb)
                .layout(layout)
                .push_next(&mut rendering);
            if shape.remap && writes == 1 {
                info = info.push_next(&mut remap);
            }
            let p = d.create_graphics_pipelines(vk::PipelineCache::null(), &[info], None).unwrap()[0];
            d.destroy_shader_module(vsm, None);
            d.destroy_shader_module(fsm, None);
            p
        };
        let (write, read) = (pipeline(fs_view, 0), pipeline(fs_copy, 1));
        gpu.one_time_submit(|cb| {
            let att = (vk::PipelineStageFlags::COLOR_ATTACHMENT_OUTPUT, vk::AccessFlags::COLOR_ATTACHMENT_WRITE);
            gpu.image_from_undefined(cb, first.0, range, local, att);
            gpu.image_from_undefined(cb, copy.0, range, copy_layout, att);
            let clear = vk::ClearValue { color: vk::ClearColorValue { float32: [0.0, 0.0, 0.0, 1.0] } };
            let colours: Vec<vk::RenderingAttachmentInfo> = [(first.2, local), (copy.2, copy_layout)]
                .iter()
                .map(|&(v, layout)| {
                    vk::RenderingAttachmentInfo::default()
                        .image_view(v)
                        .image_layout(layout)
                        .load_op(vk::AttachmentLoadOp::CLEAR)
                        .store_op(vk::AttachmentStoreOp::STORE)
                        .clear_value(clear)
                })
                .collect();
            let area = vk::Rect2D { offset: vk::Offset2D::default(), extent: vk::Extent2D { width: w, height: h } };
            let info = vk::RenderingInfo::default()
                .render_area(area)
                .layer_count(if shape.cts_layers { views } else { 1 })
                .view_mask(view_mask)
                .color_attachments(&colours);
            d.cmd_begin_rendering(cb, &info);
            d.cmd_bind_pipeline(cb, vk::PipelineBindPoint::GRAPHICS, write);
            d.cmd_draw(cb, 6, 1, 0, 0);
            let mut flags = vk::DependencyFlags::BY_REGION;
            if shape.view_local {
                flags |= vk::DependencyFlags::VIEW_LOCAL;
            }
            let b = [vk::MemoryBarrier::default()
                .src_access_mask(vk::AccessFlags::COLOR_ATTACHMENT_WRITE)
                .dst_access_mask(vk::AccessFlags::INPUT_ATTACHMENT_READ)];
            d.cmd_pipeline_barrier(
                cb,
                vk::PipelineStageFlags::COLOR_ATTACHMENT_OUTPUT,
                vk::PipelineStageFlags::FRAGMENT_SHADER,
                flags,
                &b,
                &[],
                &[],
            );
            if shape.remap {
                let lr = ash::khr::dynamic_rendering_local_read::Device::new(&gpu.instance, d);
                let info = vk::RenderingAttachmentLocationInfoKHR::default().color_attachment_locations(&locations);
                lr.cmd_set_rendering_attachment_locations(cb, &info);
            }
            d.cmd_bind_pipeline(cb, vk::PipelineBindPoint::GRAPHICS, read);
            d.cmd_bind_descriptor_sets(cb, vk::PipelineBindPoint::GRAPHICS, layout, 0, &[set], &[]);
            d.cmd_draw(cb, 6, 1, 0, 0);
            d.cmd_end_rendering(cb);
            gpu.image_barrier(
                cb,
                copy.0,
                range,
                (copy_layout, vk::ImageLayout::TRANSFER_SRC_OPTIMAL),
                att,
                (vk::PipelineStageFlags::TRANSFER, vk::AccessFlags::TRANSFER_READ),
            );
            gpu.copy_image_to_buffer(cb, copy.0, vk::ImageLayout::TRANSFER_SRC_OPTIMAL, (w, h), views, readback.buffer);
        });
        let px = std::slice::from_raw_parts(readback.map as *const [u8; 4], (w * h * views) as usize);
        let wrong = px
            .chunks((w * h) as usize)
            .enumerate()
            .map(|(v, layer)| layer.iter().filter(|p| p[0].abs_diff(((v as u32 + 1) * 32) as u8) > 1).count())
            .collect();
        d.destroy_pipeline(write, None);
        d.destroy_pipeline(read, None);
        d.destroy_pipeline_layout(layout, None);
        d.destroy_descriptor_pool(pool, None);
        d.destroy_descriptor_set_layout(set_layout, None);
        gpu.destroy_buffer(readback);
        gpu.destroy_image(first);
        gpu.destroy_image(copy);
        wrong
    }
}

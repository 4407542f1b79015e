//! The density built-ins in a graphics pipeline library
//! (`overlap-testapp fdm-library`, issue 17 item 5): `fdm_size.frag`
//! (`FragSizeEXT`, `FragCoord`) in a fragment-shader library of four
//! (vertex input, pre-rasterization, fragment shader, fragment output, all
//! made for a density-map render pass or for dynamic rendering with a
//! density map), linked fast or with link-time optimization, drawn
//! full-screen in such a pass and judged by
//! [`crate::fdm::check_sizes`] (every pixel's `FragSizeEXT` no larger than
//! its texel asks for, each fragment one aligned block of exactly that area
//! with its centre as `FragCoord`).

use crate::fdm::{self, Map};
use crate::render::{color_range, link_libraries, Gpu, LibrarySplit};
use ash::vk;

const COLOUR: vk::Format = vk::Format::R8G8B8A8_UNORM;

/// Renders `fdm_size.frag` at `size` under `map` through a pipeline linked
/// from libraries (`lto`: with link-time optimization), in a render pass or
/// (`dynamic`) dynamic rendering; the pixels.
pub fn render(gpu: &Gpu, map: &Map, size: (u32, u32), lto: bool, dynamic: bool) -> Vec<[u8; 4]> {
    let d = &gpu.device;
    let vert = &include_bytes!(concat!(env!("OUT_DIR"), "/fullscreen.vert.spv"))[..];
    let frag = &include_bytes!(concat!(env!("OUT_DIR"), "/fdm_size.frag.spv"))[..];
    let target = gpu.image_2d(
        COLOUR,
        size,
        vk::SampleCountFlags::TYPE_1,
        vk::ImageUsageFlags::COLOR_ATTACHMENT | vk::ImageUsageFlags::TRANSFER_SRC | vk::ImageUsageFlags::TRANSFER_DST,
    );
    let map_img = fdm::map_image(gpu, map);
    let fdm_layout = vk::ImageLayout::FRAGMENT_DENSITY_MAP_OPTIMAL_EXT;
    let atts = [
        vk::AttachmentDescription::default()
            .format(COLOUR)
            .samples(vk::SampleCountFlags::TYPE_1)
            .load_op(vk::AttachmentLoadOp::CLEAR)
            .store_op(vk::AttachmentStoreOp::STORE)
            .initial_layout(vk::ImageLayout::UNDEFINED)
            .final_layout(vk::ImageLayout::TRANSFER_SRC_OPTIMAL),
        crate::fdm::map_attachment(fdm_layout),
    ];
    let refs = [vk::AttachmentReference { attachment: 0, layout: vk::ImageLayout::COLOR_ATTACHMENT_OPTIMAL }];
    let sub = [vk::SubpassDescription::default().color_attachments(&refs)];
    let deps = [vk::SubpassDependency {
        src_subpass: 0,
        dst_subpass: vk::SUBPASS_EXTERNAL,
        src_stage_mask: vk::PipelineStageFlags::COLOR_ATTACHMENT_OUTPUT,
        dst_stage_mask: vk::PipelineStageFlags::TRANSFER,
        src_access_mask: vk::AccessFlags::COLOR_ATTACHMENT_WRITE,
        dst_access_mask: vk::AccessFlags::TRANSFER_READ,
        dependency_flags: vk::DependencyFlags::empty(),
    }];
    let mut fdm_info = vk::RenderPassFragmentDensityMapCreateInfoEXT::default()
        .fragment_density_map_attachment(vk::AttachmentReference { attachment: 1, layout: fdm_layout });
    let info = vk::RenderPassCreateInfo::default()
        .attachments(&atts)
        .subpasses(&sub)
        .dependencies(&deps)
        .push_next(&mut fdm_info);
    let (render_pass, fb) = if dynamic {
        (vk::RenderPass::null(), vk::Framebuffer::null())
    } else {
        let render_pass = unsafe { d.create_render_pass(&info, None) }.unwrap();
        (render_pass, gpu.framebuffer(render_pass, &[target.2, map_img.2], size))
    };
    let formats = [COLOUR];
    let density = if dynamic {
        vk::PipelineCreateFlags::RENDERING_FRAGMENT_DENSITY_MAP_ATTACHMENT_EXT
    } else {
        vk::PipelineCreateFlags::empty()
    };
    let layout = unsafe { d.create_pipeline_layout(&vk::PipelineLayoutCreateInfo::default(), None) }.unwrap();
    let (vs, fs) = (gpu.shader(vert), gpu.shader(frag));
    let stage = |s, m| vk::PipelineShaderStageCreateInfo::default().stage(s).module(m).name(c"main");
    let stages = [stage(vk::ShaderStageFlags::VERTEX, vs), stage(vk::ShaderStageFlags::FRAGMENT, fs)];
    let depth_stencil = vk::PipelineDepthStencilStateCreateInfo::default();
    let split = LibrarySplit { pre_stages: 1, lto, own_interfaces: false };
    let (pipeline, libs) = gpu.pipeline(&stages, layout, vk::PrimitiveTopology::TRIANGLE_LIST, true, &[], |full| {
        let mut rendering = vk::PipelineRenderingCreateInfo::default().color_attachment_formats(&formats);
        let mut full = full.flags(density).depth_stencil_state(&depth_stencil);
        full = if dynamic { full.push_next(&mut rendering) } else { full.render_pass(render_pass) };
        // SAFETY: a complete pipeline's create info, the vertex shader first.
        unsafe { link_libraries(d, &full, split) }
    });
    unsafe {
        d.destroy_shader_module(vs, None);
        d.destroy_shader_module(fs, None);
    }
    let readback = gpu.buffer((size.0 * size.1 * 4) as u64, vk::BufferUsageFlags::TRANSFER_DST, true);
    let full = vk::Rect2D { offset: vk::Offset2D::default(), extent: vk::Extent2D { width: size.0, height: size.1 } };
    gpu.one_time_submit(|cb| unsafe {
        let clears = [vk::ClearValue { color: vk::ClearColorValue { float32: [0.0, 0.0, 0.0, 1.0] } }];
        let colour_layout = vk::ImageLayout::COLOR_ATTACHMENT_OPTIMAL;
        let all = (vk::PipelineStageFlags::ALL_COMMANDS, vk::AccessFlags::MEMORY_READ | vk::AccessFlags::MEMORY_WRITE);
        if dynamic {
            gpu.image_from_undefined(cb, target.0, color_range(), colour_layout, all);
            let colours = [vk::RenderingAttachmentInfo::default()
                .image_view(target.2)
                .image_layout(colour_layout)
                .load_op(vk::AttachmentLoadOp::CLEAR)
                .store_op(vk::AttachmentStoreOp::STORE)
                .clear_value(clears[0])];
            let mut fdm_info = vk::RenderingFragmentDensityMapAttachmentInfoEXT::default()
                .image_view(map_img.2)
                .image_layout(fdm_layout);
            let info = vk::RenderingInfo::default()
                .render_area(full)
                .layer_count(1)
                .color_attachments(&colours)
                .push_next(&mut fdm_info);
            d.cmd_begin_rendering(cb, &info);
        } else {
            let begin = vk::RenderPassBeginInfo::default()
                .render_pass(render_pass)
                .framebuffer(fb)
                .render_area(full)
                .clear_values(&clears);
            d.cmd_begin_render_pass(cb, &begin, vk::SubpassContents::INLINE);
        }
        d.cmd_bind_pipeline(cb, vk::PipelineBindPoint::GRAPHICS, pipeline);
        let vp = vk::Viewport {
            x: 0.0,
            y: 0.0,
            width: size.0 as f32,
            height: size.1 as f32,
            min_depth: 0.0,
            max_depth: 1.0,
        };
        d.cmd_set_viewport(cb, 0, &[vp]);
        d.cmd_set_scissor(cb, 0, &[full]);
        d.cmd_draw(cb, 3, 1, 0, 0);
        if dynamic {
            d.cmd_end_rendering(cb);
            let src = vk::ImageLayout::TRANSFER_SRC_OPTIMAL;
            gpu.image_barrier(cb, target.0, color_range(), (colour_layout, src), all, all);
        } else {
            d.cmd_end_render_pass(cb);
        }
        gpu.copy_image_to_buffer(cb, target.0, vk::ImageLayout::TRANSFER_SRC_OPTIMAL, size, 1, readback.buffer);
        gpu.memory_barrier(
            cb,
            (vk::PipelineStageFlags::TRANSFER, vk::AccessFlags::TRANSFER_WRITE),
            (vk::PipelineStageFlags::HOST, vk::AccessFlags::HOST_READ),
        );
    });
    let px = (size.0 * size.1) as usize;
    let pixels: Vec<[u8; 4]> = (0..px).map(|i| unsafe { (readback.map as *const [u8; 4]).add(i).read() }).collect();
    unsafe {
        d.destroy_pipeline(pipeline, None);
        for l in libs {
            d.destroy_pipeline(l, None);
        }
        d.destroy_pipeline_layout(layout, None);
        if !dynamic {
            d.destroy_framebuffer(fb, None);
            d.destroy_render_pass(render_pass, None);
        }
    }
    gpu.destroy_image(target);
    gpu.destroy_image(map_img);
    gpu.destroy_buffer(readback);
    pixels
}

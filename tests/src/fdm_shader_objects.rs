//! The density built-ins in shader objects (`overlap-testapp
//! fdm-shader-objects`, issue 17 item 5): `fdm_size.frag` (`FragSizeEXT`,
//! `FragCoord`) as a fragment shader object, alone or linked with its vertex
//! shader (`VK_SHADER_CREATE_LINK_STAGE_BIT_EXT`), bound inside a dynamic
//! render pass with a density map or before it, all its state dynamic, drawn
//! full-screen and judged by [`crate::fdm::check_sizes`] (every pixel's
//! `FragSizeEXT` no larger than its texel asks for, each fragment one aligned
//! block of exactly that area with its centre as `FragCoord`).

use crate::fdm::{self, Map};
use crate::render::{color_range, Gpu};
use ash::vk;

const COLOUR: vk::Format = vk::Format::R8G8B8A8_UNORM;

/// Renders `fdm_size.frag` at `size` under `map` with shader objects
/// (`linked`: made as a linked set; `bind_before`: bound before the pass
/// begins); the pixels.
pub fn render(gpu: &Gpu, map: &Map, size: (u32, u32), linked: bool, bind_before: bool) -> Vec<[u8; 4]> {
    let d = &gpu.device;
    let so = ash::ext::shader_object::Device::new(&gpu.instance, d);
    // Aligned to words (VUID-VkShaderCreateInfoEXT-pCode-08493).
    let read = |b: &[u8]| ash::util::read_spv(&mut std::io::Cursor::new(b)).expect("SPIR-V");
    let vert_words = read(include_bytes!(concat!(env!("OUT_DIR"), "/fullscreen.vert.spv")));
    let frag_words = read(include_bytes!(concat!(env!("OUT_DIR"), "/fdm_size.frag.spv")));
    let bytes = |w: &[u32]| unsafe { std::slice::from_raw_parts(w.as_ptr() as *const u8, w.len() * 4) };
    let (vert, frag) = (bytes(&vert_words), bytes(&frag_words));
    let target = gpu.image_2d(
        COLOUR,
        size,
        vk::SampleCountFlags::TYPE_1,
        vk::ImageUsageFlags::COLOR_ATTACHMENT | vk::ImageUsageFlags::TRANSFER_SRC | vk::ImageUsageFlags::TRANSFER_DST,
    );
    let map_img = fdm::map_image(gpu, map);
    let fdm_layout = vk::ImageLayout::FRAGMENT_DENSITY_MAP_OPTIMAL_EXT;
    let link = if linked { vk::ShaderCreateFlagsEXT::LINK_STAGE } else { vk::ShaderCreateFlagsEXT::empty() };
    let infos = [
        vk::ShaderCreateInfoEXT::default()
            .flags(link)
            .stage(vk::ShaderStageFlags::VERTEX)
            .next_stage(vk::ShaderStageFlags::FRAGMENT)
            .code_type(vk::ShaderCodeTypeEXT::SPIRV)
            .code(vert)
            .name(c"main"),
        vk::ShaderCreateInfoEXT::default()
            .flags(link | vk::ShaderCreateFlagsEXT::FRAGMENT_DENSITY_MAP_ATTACHMENT)
            .stage(vk::ShaderStageFlags::FRAGMENT)
            .code_type(vk::ShaderCodeTypeEXT::SPIRV)
            .code(frag)
            .name(c"main"),
    ];
    let shaders = unsafe { so.create_shaders(&infos, None) }.map_err(|(_, e)| e).expect("vkCreateShadersEXT");
    let readback = gpu.buffer((size.0 * size.1 * 4) as u64, vk::BufferUsageFlags::TRANSFER_DST, true);
    let full = vk::Rect2D { offset: vk::Offset2D::default(), extent: vk::Extent2D { width: size.0, height: size.1 } };
    let stages = [vk::ShaderStageFlags::VERTEX, vk::ShaderStageFlags::FRAGMENT];
    gpu.one_time_submit(|cb| unsafe {
        let colour_layout = vk::ImageLayout::COLOR_ATTACHMENT_OPTIMAL;
        let all = (vk::PipelineStageFlags::ALL_COMMANDS, vk::AccessFlags::MEMORY_READ | vk::AccessFlags::MEMORY_WRITE);
        gpu.image_from_undefined(cb, target.0, color_range(), colour_layout, all);
        if bind_before {
            so.cmd_bind_shaders(cb, &stages, &shaders);
        }
        let colours = [vk::RenderingAttachmentInfo::default()
            .image_view(target.2)
            .image_layout(colour_layout)
            .load_op(vk::AttachmentLoadOp::CLEAR)
            .store_op(vk::AttachmentStoreOp::STORE)
            .clear_value(vk::ClearValue { color: vk::ClearColorValue { float32: [0.0, 0.0, 0.0, 1.0] } })];
        let mut fdm_info =
            vk::RenderingFragmentDensityMapAttachmentInfoEXT::default().image_view(map_img.2).image_layout(fdm_layout);
        let info = vk::RenderingInfo::default()
            .render_area(full)
            .layer_count(1)
            .color_attachments(&colours)
            .push_next(&mut fdm_info);
        d.cmd_begin_rendering(cb, &info);
        if !bind_before {
            so.cmd_bind_shaders(cb, &stages, &shaders);
        }
        let vp = vk::Viewport {
            x: 0.0,
            y: 0.0,
            width: size.0 as f32,
            height: size.1 as f32,
            min_depth: 0.0,
            max_depth: 1.0,
        };
        so.cmd_set_viewport_with_count(cb, &[vp]);
        so.cmd_set_scissor_with_count(cb, &[full]);
        so.cmd_set_rasterizer_discard_enable(cb, false);
        so.cmd_set_cull_mode(cb, vk::CullModeFlags::NONE);
        so.cmd_set_front_face(cb, vk::FrontFace::COUNTER_CLOCKWISE);
        so.cmd_set_depth_test_enable(cb, false);
        so.cmd_set_depth_write_enable(cb, false);
        so.cmd_set_depth_bias_enable(cb, false);
        so.cmd_set_depth_bounds_test_enable(cb, false);
        so.cmd_set_depth_clamp_enable(cb, false);
        so.cmd_set_stencil_test_enable(cb, false);
        so.cmd_set_primitive_topology(cb, vk::PrimitiveTopology::TRIANGLE_LIST);
        so.cmd_set_primitive_restart_enable(cb, false);
        so.cmd_set_polygon_mode(cb, vk::PolygonMode::FILL);
        so.cmd_set_rasterization_samples(cb, vk::SampleCountFlags::TYPE_1);
        so.cmd_set_sample_mask(cb, vk::SampleCountFlags::TYPE_1, &[!0]);
        so.cmd_set_alpha_to_coverage_enable(cb, false);
        so.cmd_set_alpha_to_one_enable(cb, false);
        so.cmd_set_logic_op_enable(cb, false);
        so.cmd_set_color_blend_enable(cb, 0, &[vk::FALSE]);
        so.cmd_set_color_write_mask(cb, 0, &[vk::ColorComponentFlags::RGBA]);
        so.cmd_set_vertex_input(cb, &[], &[]);
        d.cmd_draw(cb, 3, 1, 0, 0);
        d.cmd_end_rendering(cb);
        let src = vk::ImageLayout::TRANSFER_SRC_OPTIMAL;
        gpu.image_barrier(cb, target.0, color_range(), (colour_layout, src), all, all);
        gpu.copy_image_to_buffer(cb, target.0, src, size, 1, readback.buffer);
        gpu.memory_barrier(
            cb,
            (vk::PipelineStageFlags::TRANSFER, vk::AccessFlags::TRANSFER_WRITE),
            (vk::PipelineStageFlags::HOST, vk::AccessFlags::HOST_READ),
        );
    });
    let px = (size.0 * size.1) as usize;
    let pixels: Vec<[u8; 4]> = (0..px).map(|i| unsafe { (readback.map as *const [u8; 4]).add(i).read() }).collect();
    unsafe {
        for s in shaders {
            so.destroy_shader(s, None);
        }
    }
    gpu.destroy_image(target);
    gpu.destroy_image(map_img);
    gpu.destroy_buffer(readback);
    pixels
}

//! Two command buffers rendering density-map passes to the same attachments
//! (`overlap-testapp fdm-queues`, issue 17 item 5): each pass renders one
//! vertical stripe of one colour target (a render pass and framebuffer
//! shared by all passes — scratch targets are made per framebuffer extent —,
//! render area the stripe, cleared, a full-screen quad of its command
//! buffer's colour: red for the first, green for the second), the stripes alternating
//! between the two command buffers and `STRIPE` pixels wide (a multiple of
//! the 4x4 area the map asks everywhere: every stripe's passes replay at
//! 4x4, so both command buffers need scratch targets of the same key; the
//! planner aligns bins to their area, so disjoint render areas never write
//! the same scratch pixel: what two command buffers sharing scratch targets
//! on two queues at once race on is the targets' layout transitions, which
//! each replay makes over the whole image). Both command buffers are recorded
//! before either is submitted, then submitted on two queues at once (or, as
//! the reference, one after the other on one queue). The picture is exact:
//! red on the first command buffer's stripes, green on the second's.

use crate::fdm::{self, Map};
use crate::render::{color_range, Gpu};
use ash::vk;

const COLOUR: vk::Format = vk::Format::R8G8B8A8_UNORM;
/// Stripe width: a multiple of the 4x4 area.
pub const STRIPE: u32 = 12;

/// How the two command buffers go to the GPU.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Submit {
    /// The first on queue 0, then after it finished the second.
    OneQueue,
    /// The first on queue 0 and the second on queue 1, both at once.
    TwoQueues,
}

/// The stripe `i`'s owner: 0 (red) or 1 (green).
pub fn owner(x: u32) -> usize {
    ((x / STRIPE) % 2) as usize
}

/// Renders the stripes of a `w`x`h` target (`passes` per command buffer,
/// cycling over its stripes), `repeats` times, each time with two of three
/// command buffers recorded again; the pixels.
pub fn render(gpu: &Gpu, (w, h): (u32, u32), passes: u32, submit: Submit, repeats: u32) -> Vec<[u8; 4]> {
    let d = &gpu.device;
    let target = gpu.image_2d(
        COLOUR,
        (w, h),
        vk::SampleCountFlags::TYPE_1,
        vk::ImageUsageFlags::COLOR_ATTACHMENT | vk::ImageUsageFlags::TRANSFER_SRC | vk::ImageUsageFlags::TRANSFER_DST,
    );
    // 63/255 asks for 4x4 (`fdm::requested`).
    let (mw, mh) = (w.div_ceil(32), h.div_ceil(32));
    let map = Map { width: mw, height: mh, texels: vec![[63, 63]; (mw * mh) as usize] };
    let map_img = fdm::map_image(gpu, &map);
    let fdm_layout = vk::ImageLayout::FRAGMENT_DENSITY_MAP_OPTIMAL_EXT;
    let colour_layout = vk::ImageLayout::COLOR_ATTACHMENT_OPTIMAL;
    let vs = &include_bytes!(concat!(env!("OUT_DIR"), "/fdm_dyn.vert.spv"))[..];
    let fs = &include_bytes!(concat!(env!("OUT_DIR"), "/fdm_dyn.frag.spv"))[..];
    let stages_pc = vk::ShaderStageFlags::VERTEX | vk::ShaderStageFlags::FRAGMENT;
    let range = [vk::PushConstantRange::default().stage_flags(stages_pc).size(24)];
    let layout = unsafe {
        d.create_pipeline_layout(&vk::PipelineLayoutCreateInfo::default().push_constant_ranges(&range), None)
    }
    .unwrap();
    let (vsm, fsm) = (gpu.shader(vs), gpu.shader(fs));
    let stage = |s, m| vk::PipelineShaderStageCreateInfo::default().stage(s).module(m).name(c"main");
    let stages = [stage(vk::ShaderStageFlags::VERTEX, vsm), stage(vk::ShaderStageFlags::FRAGMENT, fsm)];
    let atts = [
        vk::AttachmentDescription::default()
            .format(COLOUR)
            .samples(vk::SampleCountFlags::TYPE_1)
            .load_op(vk::AttachmentLoadOp::CLEAR)
            .store_op(vk::AttachmentStoreOp::STORE)
            .initial_layout(colour_layout)
            .final_layout(colour_layout),
        crate::fdm::map_attachment(fdm_layout),
    ];
    let refs = [vk::AttachmentReference { attachment: 0, layout: colour_layout }];
    let sub = [vk::SubpassDescription::default().color_attachments(&refs)];
    // The next pass (another stripe of the same image) after this one.
    let deps = [vk::SubpassDependency {
        src_subpass: 0,
        dst_subpass: vk::SUBPASS_EXTERNAL,
        src_stage_mask: vk::PipelineStageFlags::COLOR_ATTACHMENT_OUTPUT,
        dst_stage_mask: vk::PipelineStageFlags::COLOR_ATTACHMENT_OUTPUT | vk::PipelineStageFlags::TRANSFER,
        src_access_mask: vk::AccessFlags::COLOR_ATTACHMENT_WRITE,
        dst_access_mask: vk::AccessFlags::COLOR_ATTACHMENT_WRITE | vk::AccessFlags::TRANSFER_READ,
        dependency_flags: vk::DependencyFlags::empty(),
    }];
    let mut fdm_info = vk::RenderPassFragmentDensityMapCreateInfoEXT::default()
        .fragment_density_map_attachment(vk::AttachmentReference { attachment: 1, layout: fdm_layout });
    let rpi = vk::RenderPassCreateInfo::default()
        .attachments(&atts)
        .subpasses(&sub)
        .dependencies(&deps)
        .push_next(&mut fdm_info);
    let render_pass = unsafe { d.create_render_pass(&rpi, None) }.unwrap();
    let fb = gpu.framebuffer(render_pass, &[target.2, map_img.2], (w, h));
    let pipeline = gpu.pipeline(&stages, layout, vk::PrimitiveTopology::TRIANGLE_LIST, true, &[], |info| {
        let info = info.render_pass(render_pass);
        unsafe { d.create_graphics_pipelines(vk::PipelineCache::null(), &[info], None) }
            .map_err(|(_, e)| e)
            .expect("vkCreateGraphicsPipelines")[0]
    });
    unsafe {
        d.destroy_shader_module(vsm, None);
        d.destroy_shader_module(fsm, None);
    }
    let all = (vk::PipelineStageFlags::ALL_COMMANDS, vk::AccessFlags::MEMORY_READ | vk::AccessFlags::MEMORY_WRITE);
    gpu.one_time_submit(|cb| gpu.image_from_undefined(cb, target.0, color_range(), colour_layout, all));
    let pool = unsafe {
        d.create_command_pool(
            &vk::CommandPoolCreateInfo::default()
                .queue_family_index(gpu.queue_family)
                .flags(vk::CommandPoolCreateFlags::RESET_COMMAND_BUFFER),
            None,
        )
    }
    .unwrap();
    let cbs = unsafe {
        d.allocate_command_buffers(&vk::CommandBufferAllocateInfo::default().command_pool(pool).command_buffer_count(3))
    }
    .unwrap();
    for r in 0..repeats.max(1) as usize {
        // Two of the three command buffers render, the third is recorded
        // empty (so a later pair's new member can only take a scratch set
        // its earlier holder gave back when it was begun again).
        let pair = [cbs[(2 * r) % 3], cbs[(2 * r + 1) % 3]];
        for &idle in cbs.iter().filter(|c| !pair.contains(c)) {
            unsafe {
                d.begin_command_buffer(idle, &vk::CommandBufferBeginInfo::default()).unwrap();
                d.end_command_buffer(idle).unwrap();
            }
        }
        let cbs = pair;
        let stripes = w.div_ceil(STRIPE);
        for (k, &cb) in cbs.iter().enumerate() {
            let mine: Vec<u32> = (0..stripes).filter(|s| (*s % 2) as usize == k).collect();
            let colour: [f32; 6] = if k == 0 { [1.0, 0.0, 0.0, 1.0, 0.0, 0.0] } else { [0.0, 1.0, 0.0, 1.0, 0.0, 0.0] };
            let bytes: Vec<u8> = colour.iter().flat_map(|f| f.to_le_bytes()).collect();
            unsafe {
                d.begin_command_buffer(cb, &vk::CommandBufferBeginInfo::default()).unwrap();
                for i in 0..passes {
                    let s = mine[i as usize % mine.len()];
                    let x0 = s * STRIPE;
                    let rect = vk::Rect2D {
                        offset: vk::Offset2D { x: x0 as i32, y: 0 },
                        extent: vk::Extent2D { width: STRIPE.min(w - x0), height: h },
                    };
                    let clears = [vk::ClearValue { color: vk::ClearColorValue { float32: [0.0, 0.0, 0.0, 1.0] } }];
                    let begin = vk::RenderPassBeginInfo::default()
                        .render_pass(render_pass)
                        .framebuffer(fb)
                        .render_area(rect)
                        .clear_values(&clears);
                    d.cmd_begin_render_pass(cb, &begin, vk::SubpassContents::INLINE);
                    d.cmd_bind_pipeline(cb, vk::PipelineBindPoint::GRAPHICS, pipeline);
                    let vp = vk::Viewport {
                        x: 0.0,
                        y: 0.0,
                        width: w as f32,
                        height: h as f32,
                        min_depth: 0.0,
                        max_depth: 1.0,
                    };
                    d.cmd_set_viewport(cb, 0, &[vp]);
                    d.cmd_set_scissor(cb, 0, &[rect]);
                    d.cmd_push_constants(cb, layout, stages_pc, 0, &bytes);
                    d.cmd_draw(cb, 6, 1, 0, 0);
                    d.cmd_end_render_pass(cb);
                }
                d.end_command_buffer(cb).unwrap();
            }
        }
        unsafe {
            match (submit, gpu.second_queue) {
                (Submit::TwoQueues, Some(q1)) => {
                    let fences: Vec<vk::Fence> =
                        (0..2).map(|_| d.create_fence(&vk::FenceCreateInfo::default(), None).unwrap()).collect();
                    d.queue_submit(gpu.queue, &[vk::SubmitInfo::default().command_buffers(&cbs[..1])], fences[0])
                        .unwrap();
                    d.queue_submit(q1, &[vk::SubmitInfo::default().command_buffers(&cbs[1..])], fences[1]).unwrap();
                    d.wait_for_fences(&fences, true, u64::MAX).unwrap();
                    for f in fences {
                        d.destroy_fence(f, None);
                    }
                }
                (Submit::TwoQueues, None) => panic!("no second queue"),
                (Submit::OneQueue, _) => {
                    gpu.submit_wait(&cbs[..1]);
                    gpu.submit_wait(&cbs[1..]);
                }
            }
        }
    }
    let readback = gpu.buffer((w * h * 4) as u64, vk::BufferUsageFlags::TRANSFER_DST, true);
    gpu.one_time_submit(|cb| {
        let src = vk::ImageLayout::TRANSFER_SRC_OPTIMAL;
        gpu.image_barrier(cb, target.0, color_range(), (colour_layout, src), all, all);
        gpu.copy_image_to_buffer(cb, target.0, src, (w, h), 1, readback.buffer);
        gpu.memory_barrier(
            cb,
            (vk::PipelineStageFlags::TRANSFER, vk::AccessFlags::TRANSFER_WRITE),
            (vk::PipelineStageFlags::HOST, vk::AccessFlags::HOST_READ),
        );
    });
    let px = (w * h) as usize;
    let pixels: Vec<[u8; 4]> = (0..px).map(|i| unsafe { (readback.map as *const [u8; 4]).add(i).read() }).collect();
    unsafe {
        d.destroy_command_pool(pool, None);
        d.destroy_framebuffer(fb, None);
        d.destroy_render_pass(render_pass, None);
        d.destroy_pipeline(pipeline, None);
        d.destroy_pipeline_layout(layout, None);
    }
    gpu.destroy_image(target);
    gpu.destroy_image(map_img);
    gpu.destroy_buffer(readback);
    pixels
}

/// Pixels that are not their stripe owner's colour (red for 0, green for
/// 1), where every stripe was rendered.
pub fn wrong_pixels(pixels: &[[u8; 4]], w: u32) -> usize {
    pixels
        .iter()
        .enumerate()
        .filter(|(i, p)| {
            let want = if owner(*i as u32 % w) == 0 { [255, 0, 0] } else { [0, 255, 0] };
            p[..3] != want
        })
        .count()
}

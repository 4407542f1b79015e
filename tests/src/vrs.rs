//! Fragment shading rate with and without interlock: how many fragment
//! shader invocations a full-screen draw at a requested 2x2 rate makes, and
//! which rates the shader saw (`gl_ShadingRateEXT`). Used to check the
//! architectures' behaviour (GFX10.3 forces 1x1 with interlock, GFX11 not).

use crate::interlock::{buffer, Buffer};
use crate::render::{Gpu, RenderPath, Target};
use ash::vk;

pub struct Outcome {
    pub invocations: u32,
    /// Bit `r` set when the shader saw `gl_ShadingRateEXT == r`.
    pub rates: u32,
    pub pixels: u32,
}

/// How the 2x2 rate is asked for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Request {
    /// Pipeline state.
    Static,
    /// vkCmdSetFragmentShadingRateKHR.
    Dynamic,
    /// The vertex shader's primitive rate, pipeline rate 1x1, combiner REPLACE.
    Primitive,
}

/// Draws a full-screen triangle asking for a 2x2 rate.
pub fn run(gpu: &Gpu, interlock: bool, request: Request, size: u32) -> Outcome {
    let dynamic = request == Request::Dynamic;
    let d = &gpu.device;
    unsafe {
        let counts = buffer(
            gpu,
            8,
            vk::BufferUsageFlags::STORAGE_BUFFER
                | vk::BufferUsageFlags::TRANSFER_DST
                | vk::BufferUsageFlags::TRANSFER_SRC,
            false,
        );
        let readback = buffer(gpu, 8, vk::BufferUsageFlags::TRANSFER_DST, true);
        let target = Target::new(gpu, RenderPath::RenderPass, size, size);
        let binding = [vk::DescriptorSetLayoutBinding::default()
            .binding(0)
            .descriptor_type(vk::DescriptorType::STORAGE_BUFFER)
            .descriptor_count(1)
            .stage_flags(vk::ShaderStageFlags::FRAGMENT)];
        let (set_layout, pool, set) = gpu.descriptor_set(&binding);
        let layouts = [set_layout];
        let info = [vk::DescriptorBufferInfo { buffer: counts.buffer, offset: 0, range: vk::WHOLE_SIZE }];
        d.update_descriptor_sets(
            &[vk::WriteDescriptorSet::default()
                .dst_set(set)
                .dst_binding(0)
                .descriptor_type(vk::DescriptorType::STORAGE_BUFFER)
                .buffer_info(&info)],
            &[],
        );
        let layout =
            d.create_pipeline_layout(&vk::PipelineLayoutCreateInfo::default().set_layouts(&layouts), None).unwrap();

        let vs = gpu.shader(if request == Request::Primitive {
            include_bytes!(concat!(env!("OUT_DIR"), "/vrs_primitive.vert.spv"))
        } else {
            include_bytes!(concat!(env!("OUT_DIR"), "/fullscreen.vert.spv"))
        });
        let fs = gpu.shader(if interlock {
            include_bytes!(concat!(env!("OUT_DIR"), "/vrs-interlock.frag.spv"))
        } else {
            include_bytes!(concat!(env!("OUT_DIR"), "/vrs.frag.spv"))
        });
        let stages = [
            vk::PipelineShaderStageCreateInfo::default().stage(vk::ShaderStageFlags::VERTEX).module(vs).name(c"main"),
            vk::PipelineShaderStageCreateInfo::default().stage(vk::ShaderStageFlags::FRAGMENT).module(fs).name(c"main"),
        ];
        let two = vk::Extent2D { width: 2, height: 2 };
        let keep = [vk::FragmentShadingRateCombinerOpKHR::KEEP; 2];
        let mut rate = if request == Request::Primitive {
            vk::PipelineFragmentShadingRateStateCreateInfoKHR::default()
                .fragment_size(vk::Extent2D { width: 1, height: 1 })
                .combiner_ops([
                    vk::FragmentShadingRateCombinerOpKHR::REPLACE,
                    vk::FragmentShadingRateCombinerOpKHR::KEEP,
                ])
        } else {
            vk::PipelineFragmentShadingRateStateCreateInfoKHR::default().fragment_size(two).combiner_ops(keep)
        };
        let vertex = vk::PipelineVertexInputStateCreateInfo::default();
        let ia = vk::PipelineInputAssemblyStateCreateInfo::default().topology(vk::PrimitiveTopology::TRIANGLE_LIST);
        let vp = vk::PipelineViewportStateCreateInfo::default().viewport_count(1).scissor_count(1);
        let rs = vk::PipelineRasterizationStateCreateInfo::default()
            .polygon_mode(vk::PolygonMode::FILL)
            .cull_mode(vk::CullModeFlags::NONE)
            .line_width(1.0);
        let ms = vk::PipelineMultisampleStateCreateInfo::default().rasterization_samples(vk::SampleCountFlags::TYPE_1);
        let blend = [vk::PipelineColorBlendAttachmentState::default().color_write_mask(vk::ColorComponentFlags::RGBA)];
        let cbs = vk::PipelineColorBlendStateCreateInfo::default().attachments(&blend);
        let mut dyn_states = vec![vk::DynamicState::VIEWPORT, vk::DynamicState::SCISSOR];
        if dynamic {
            dyn_states.push(vk::DynamicState::FRAGMENT_SHADING_RATE_KHR);
        }
        let dyn_info = vk::PipelineDynamicStateCreateInfo::default().dynamic_states(&dyn_states);
        let mut pinfo = vk::GraphicsPipelineCreateInfo::default()
            .stages(&stages)
            .vertex_input_state(&vertex)
            .input_assembly_state(&ia)
            .viewport_state(&vp)
            .rasterization_state(&rs)
            .multisample_state(&ms)
            .color_blend_state(&cbs)
            .dynamic_state(&dyn_info)
            .layout(layout)
            .render_pass(target.render_pass());
        if !dynamic {
            pinfo = pinfo.push_next(&mut rate);
        }
        let pipeline =
            d.create_graphics_pipelines(vk::PipelineCache::null(), &[pinfo], None).map_err(|(_, e)| e).unwrap()[0];
        let fsr = ash::khr::fragment_shading_rate::Device::new(&gpu.instance, &gpu.device);
        gpu.one_time_submit(|cb| {
            d.cmd_fill_buffer(cb, counts.buffer, 0, vk::WHOLE_SIZE, 0);
            gpu.memory_barrier(
                cb,
                (vk::PipelineStageFlags::TRANSFER, vk::AccessFlags::TRANSFER_WRITE),
                (vk::PipelineStageFlags::FRAGMENT_SHADER, vk::AccessFlags::SHADER_READ | vk::AccessFlags::SHADER_WRITE),
            );
            target.begin(gpu, cb);
            d.cmd_bind_pipeline(cb, vk::PipelineBindPoint::GRAPHICS, pipeline);
            if dynamic {
                (fsr.fp().cmd_set_fragment_shading_rate_khr)(cb, &two, &keep);
            }
            d.cmd_bind_descriptor_sets(cb, vk::PipelineBindPoint::GRAPHICS, layout, 0, &[set], &[]);
            d.cmd_draw(cb, 3, 1, 0, 0);
            target.end(gpu, cb);
            gpu.memory_barrier(
                cb,
                (vk::PipelineStageFlags::FRAGMENT_SHADER, vk::AccessFlags::SHADER_WRITE),
                (vk::PipelineStageFlags::TRANSFER, vk::AccessFlags::TRANSFER_READ),
            );
            d.cmd_copy_buffer(
                cb,
                counts.buffer,
                readback.buffer,
                &[vk::BufferCopy { src_offset: 0, dst_offset: 0, size: 8 }],
            );
            gpu.memory_barrier(
                cb,
                (vk::PipelineStageFlags::TRANSFER, vk::AccessFlags::TRANSFER_WRITE),
                (vk::PipelineStageFlags::HOST, vk::AccessFlags::HOST_READ),
            );
        });
        let p = d.map_memory(readback.memory, 0, 8, vk::MemoryMapFlags::empty()).unwrap() as *const u32;
        let (invocations, rates) = (*p, *p.add(1));
        d.unmap_memory(readback.memory);
        d.destroy_pipeline(pipeline, None);
        d.destroy_shader_module(vs, None);
        d.destroy_shader_module(fs, None);
        d.destroy_pipeline_layout(layout, None);
        d.destroy_descriptor_pool(pool, None);
        d.destroy_descriptor_set_layout(set_layout, None);
        target.destroy(gpu);
        for Buffer { buffer, memory } in [counts, readback] {
            d.destroy_buffer(buffer, None);
            d.free_memory(memory, None);
        }
        Outcome { invocations, rates, pixels: size * size }
    }
}

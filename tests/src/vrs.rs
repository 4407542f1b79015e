//! Fragment shading rate with and without interlock: how many fragment
//! shader invocations a full-screen draw at a requested 2x2 rate makes, and
//! which rates the shader saw (`gl_ShadingRateEXT`). Used to check the
//! architectures' behaviour (GFX10.3 forces 1x1 with interlock, GFX11 not).

use crate::render::{stage, Gpu, RenderPath, Target};
use ash::vk;

pub struct Outcome {
    pub invocations: u32,
    /// Bit `r` set when the shader saw `gl_ShadingRateEXT == r`.
    pub rates: u32,
    /// Invocations whose gl_FragCoord was not at the centre of their
    /// fragment, or whose derivatives were not the fragment's size.
    pub errors: u32,
    /// Which checks failed: bit 0 the centre, bit 1 the derivatives.
    pub kinds: u32,
    pub pixels: u32,
}

/// The fragment shader's critical section.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Section {
    None,
    /// pixel_interlock_unordered.
    Unordered,
    /// pixel_interlock_ordered (dEQP-VK.fragment_shading_rate's interlock cases).
    Ordered,
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
pub fn run(gpu: &Gpu, section: Section, request: Request, size: u32) -> Outcome {
    let dynamic = request == Request::Dynamic;
    let d = &gpu.device;
    unsafe {
        let counts = gpu.buffer(
            16,
            vk::BufferUsageFlags::STORAGE_BUFFER
                | vk::BufferUsageFlags::TRANSFER_DST
                | vk::BufferUsageFlags::TRANSFER_SRC,
            false,
        );
        let readback = gpu.buffer(16, vk::BufferUsageFlags::TRANSFER_DST, true);
        let target = Target::new(gpu, RenderPath::RenderPass, size, size);
        let (set_layout, pool, set) = gpu.storage_buffer_set(counts.buffer);
        let layouts = [set_layout];
        let layout =
            d.create_pipeline_layout(&vk::PipelineLayoutCreateInfo::default().set_layouts(&layouts), None).unwrap();

        let vs = gpu.shader(if request == Request::Primitive {
            include_bytes!(concat!(env!("OUT_DIR"), "/vrs_primitive.vert.spv"))
        } else {
            include_bytes!(concat!(env!("OUT_DIR"), "/fullscreen.vert.spv"))
        });
        let fs = gpu.shader(match section {
            Section::Ordered => include_bytes!(concat!(env!("OUT_DIR"), "/vrs-ordered.frag.spv")),
            Section::Unordered => include_bytes!(concat!(env!("OUT_DIR"), "/vrs-interlock.frag.spv")),
            Section::None => include_bytes!(concat!(env!("OUT_DIR"), "/vrs.frag.spv")),
        });
        let stages = [stage(vk::ShaderStageFlags::VERTEX, vs), stage(vk::ShaderStageFlags::FRAGMENT, fs)];
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
        let dyn_states: &[vk::DynamicState] =
            if dynamic { &[vk::DynamicState::FRAGMENT_SHADING_RATE_KHR] } else { &[] };
        let topology = vk::PrimitiveTopology::TRIANGLE_LIST;
        let pipeline = gpu.pipeline(&stages, layout, topology, true, dyn_states, |info| {
            let mut info = info.render_pass(target.render_pass());
            if !dynamic {
                info = info.push_next(&mut rate);
            }
            d.create_graphics_pipelines(vk::PipelineCache::null(), &[info], None).map_err(|(_, e)| e).unwrap()[0]
        });
        let fsr = ash::khr::fragment_shading_rate::Device::new(&gpu.instance, &gpu.device);
        gpu.one_time_submit(|cb| {
            gpu.zero_for_fragment_shaders(cb, counts.buffer);
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
                &[vk::BufferCopy { src_offset: 0, dst_offset: 0, size: 16 }],
            );
            gpu.memory_barrier(
                cb,
                (vk::PipelineStageFlags::TRANSFER, vk::AccessFlags::TRANSFER_WRITE),
                (vk::PipelineStageFlags::HOST, vk::AccessFlags::HOST_READ),
            );
        });
        let p = readback.map as *const u32;
        let (invocations, rates, errors, kinds) = (*p, *p.add(1), *p.add(2), *p.add(3));
        d.destroy_pipeline(pipeline, None);
        d.destroy_shader_module(vs, None);
        d.destroy_shader_module(fs, None);
        d.destroy_pipeline_layout(layout, None);
        d.destroy_descriptor_pool(pool, None);
        d.destroy_descriptor_set_layout(set_layout, None);
        target.destroy(gpu);
        gpu.destroy_buffer(counts);
        gpu.destroy_buffer(readback);
        Outcome { invocations, rates, errors, kinds, pixels: size * size }
    }
}

/// What [`derivatives`] saw.
pub struct Derivatives {
    pub invocations: u32,
    /// Invocations whose derivatives inside the section were wrong.
    pub errors: u32,
    /// Bit 0: gl_FragCoord's; bit 1: a value read inside the section.
    pub kinds: u32,
    /// Increments of the pixels' words lost (mutual exclusion broken).
    pub lost: u64,
    pub pixels: u32,
}

/// `instances` full-screen triangles (`size`² pixels, at most 64 wide: the
/// ramp's rows are 64 apart) whose pixel_interlock_ordered section checks
/// derivatives and adds one to its pixel's word (`quad_derivatives.frag`);
/// with `kill` a third of the fragments then discard inside the section.
pub fn derivatives(gpu: &Gpu, size: u32, instances: u32, kill: bool) -> Derivatives {
    let d = &gpu.device;
    let n = (size * size) as usize;
    unsafe {
        let data = gpu.buffer(16 + 8 * n as u64, vk::BufferUsageFlags::STORAGE_BUFFER, true);
        let words = std::slice::from_raw_parts_mut(data.map as *mut u32, 4 + 2 * n);
        words.fill(0);
        for (i, w) in words[4..4 + n].iter_mut().enumerate() {
            *w = (i as u32 % size) + 64 * (i as u32 / size);
        }
        let target = Target::new(gpu, RenderPath::RenderPass, size, size);
        let (set_layout, pool, set) = gpu.storage_buffer_set(data.buffer);
        let layouts = [set_layout];
        let push = [vk::PushConstantRange { stage_flags: vk::ShaderStageFlags::FRAGMENT, offset: 0, size: 8 }];
        let layout = d
            .create_pipeline_layout(
                &vk::PipelineLayoutCreateInfo::default().set_layouts(&layouts).push_constant_ranges(&push),
                None,
            )
            .unwrap();
        let vs = gpu.shader(include_bytes!(concat!(env!("OUT_DIR"), "/fullscreen.vert.spv")));
        let fs = gpu.shader(include_bytes!(concat!(env!("OUT_DIR"), "/quad_derivatives.frag.spv")));
        let stages = [stage(vk::ShaderStageFlags::VERTEX, vs), stage(vk::ShaderStageFlags::FRAGMENT, fs)];
        let pipeline = gpu.pipeline(&stages, layout, vk::PrimitiveTopology::TRIANGLE_LIST, true, &[], |info| {
            let info = info.render_pass(target.render_pass());
            d.create_graphics_pipelines(vk::PipelineCache::null(), &[info], None).map_err(|(_, e)| e).unwrap()[0]
        });
        gpu.one_time_submit(|cb| {
            target.begin(gpu, cb);
            d.cmd_bind_pipeline(cb, vk::PipelineBindPoint::GRAPHICS, pipeline);
            d.cmd_bind_descriptor_sets(cb, vk::PipelineBindPoint::GRAPHICS, layout, 0, &[set], &[]);
            let constants: Vec<u8> = [size, kill as u32].iter().flat_map(|v| v.to_le_bytes()).collect();
            d.cmd_push_constants(cb, layout, vk::ShaderStageFlags::FRAGMENT, 0, &constants);
            d.cmd_draw(cb, 3, instances, 0, 0);
            target.end(gpu, cb);
            gpu.memory_barrier(
                cb,
                (vk::PipelineStageFlags::FRAGMENT_SHADER, vk::AccessFlags::SHADER_WRITE),
                (vk::PipelineStageFlags::HOST, vk::AccessFlags::HOST_READ),
            );
        });
        let words = std::slice::from_raw_parts(data.map as *const u32, 4 + 2 * n);
        let counted: u64 = words[4 + n..].iter().map(|w| *w as u64).sum();
        let out = Derivatives {
            invocations: words[0],
            errors: words[1],
            kinds: words[2],
            lost: (n as u64 * instances as u64).saturating_sub(counted),
            pixels: size * size,
        };
        d.destroy_pipeline(pipeline, None);
        d.destroy_shader_module(vs, None);
        d.destroy_shader_module(fs, None);
        d.destroy_pipeline_layout(layout, None);
        d.destroy_descriptor_pool(pool, None);
        d.destroy_descriptor_set_layout(set_layout, None);
        target.destroy(gpu);
        gpu.destroy_buffer(data);
        out
    }
}

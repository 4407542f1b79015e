//! Order-independent transparency with fragment shader interlock: eight
//! translucent rectangles drawn out of depth order; pass 1 builds a sorted
//! per-pixel list in an unordered critical section, pass 2 composites it.
//! [`reference`] computes the same picture on the CPU from the scene's
//! definition (sorting each pixel's rectangles by depth), independently of
//! the GPU path.

use crate::interlock::{buffer, Buffer};
use crate::render::{Gpu, Image};
use ash::vk;

/// The scene, as `tests/shaders/oit.vert` declares it: (x0, y0, x1, y1) in a
/// 64x64 grid, depth, RGBA8 colour.
pub const RECTS: [([u32; 4], f32, [u8; 4]); 8] = [
    ([4, 4, 40, 36], 0.5, [255, 0, 0, 128]),
    ([20, 10, 60, 30], 0.2, [0, 255, 0, 128]),
    ([8, 24, 30, 60], 0.8, [0, 0, 255, 128]),
    ([30, 2, 50, 58], 0.35, [255, 255, 0, 128]),
    ([0, 40, 64, 50], 0.65, [0, 255, 255, 128]),
    ([14, 14, 50, 50], 0.1, [255, 0, 255, 128]),
    ([44, 34, 62, 62], 0.9, [255, 153, 51, 128]),
    ([2, 2, 12, 62], 0.45, [102, 51, 204, 128]),
];
const K: u64 = 8;
const BACKGROUND: f32 = 0.1;

/// The expected picture, computed on the CPU.
pub fn reference(width: u32, height: u32) -> Image {
    let mut rgba = Vec::with_capacity((width * height * 4) as usize);
    for y in 0..height {
        for x in 0..width {
            let mut covering: Vec<&([u32; 4], f32, [u8; 4])> = RECTS
                .iter()
                .filter(|(r, _, _)| {
                    x * 64 >= r[0] * width && x * 64 < r[2] * width && y * 64 >= r[1] * height && y * 64 < r[3] * height
                })
                .collect();
            covering.sort_by(|a, b| b.1.partial_cmp(&a.1).unwrap()); // back to front
            let mut c = [BACKGROUND; 3];
            for (_, _, col) in covering {
                let a = col[3] as f32 / 255.0;
                for k in 0..3 {
                    c[k] = col[k] as f32 / 255.0 * a + c[k] * (1.0 - a);
                }
            }
            rgba.extend(c.iter().map(|v| (v * 255.0).round() as u8));
            rgba.push(255);
        }
    }
    Image { width, height, rgba }
}

/// The largest per-channel difference between two pictures.
pub fn max_difference(a: &Image, b: &Image) -> u8 {
    a.rgba.iter().zip(&b.rgba).map(|(x, y)| x.abs_diff(*y)).max().unwrap_or(255)
}

/// Renders the scene (`interlock`: with the critical section; otherwise the
/// same shader without it). Returns the picture and the submission's wall
/// time in nanoseconds (both passes).
pub fn render(gpu: &Gpu, width: u32, height: u32, interlock: bool) -> (Image, u64) {
    assert!(width % 64 == 0 && height % 64 == 0, "OIT sizes are multiples of 64");
    let d = &gpu.device;
    let pixels = (width * height) as u64;
    unsafe {
        let counts =
            buffer(gpu, pixels * 4, vk::BufferUsageFlags::STORAGE_BUFFER | vk::BufferUsageFlags::TRANSFER_DST, false);
        let lists = buffer(gpu, pixels * K * 8, vk::BufferUsageFlags::STORAGE_BUFFER, false);
        let target = crate::render::Target::new(gpu, crate::render::RenderPath::RenderPass, width, height);

        let bindings = [0, 1].map(|b| {
            vk::DescriptorSetLayoutBinding::default()
                .binding(b)
                .descriptor_type(vk::DescriptorType::STORAGE_BUFFER)
                .descriptor_count(1)
                .stage_flags(vk::ShaderStageFlags::FRAGMENT)
        });
        let (set_layout, pool, set) = gpu.descriptor_set(&bindings);
        let layouts = [set_layout];
        let infos = [counts.buffer, lists.buffer]
            .map(|b| [vk::DescriptorBufferInfo { buffer: b, offset: 0, range: vk::WHOLE_SIZE }]);
        d.update_descriptor_sets(
            &[
                vk::WriteDescriptorSet::default()
                    .dst_set(set)
                    .dst_binding(0)
                    .descriptor_type(vk::DescriptorType::STORAGE_BUFFER)
                    .buffer_info(&infos[0]),
                vk::WriteDescriptorSet::default()
                    .dst_set(set)
                    .dst_binding(1)
                    .descriptor_type(vk::DescriptorType::STORAGE_BUFFER)
                    .buffer_info(&infos[1]),
            ],
            &[],
        );
        let push = [vk::PushConstantRange {
            stage_flags: vk::ShaderStageFlags::VERTEX | vk::ShaderStageFlags::FRAGMENT,
            offset: 0,
            size: 8,
        }];
        let layout = d
            .create_pipeline_layout(
                &vk::PipelineLayoutCreateInfo::default().set_layouts(&layouts).push_constant_ranges(&push),
                None,
            )
            .unwrap();

        // Pass 1 renders into the same target with colour writes off; pass 2
        // resolves into it.
        let insert_fs: &[u8] = if interlock {
            include_bytes!(concat!(env!("OUT_DIR"), "/oit_insert.frag.spv"))
        } else {
            include_bytes!(concat!(env!("OUT_DIR"), "/oit_insert-none.frag.spv"))
        };
        let insert = target.pipeline_with(
            gpu,
            layout,
            include_bytes!(concat!(env!("OUT_DIR"), "/oit.vert.spv")),
            insert_fs,
            false,
        );
        let resolve = target.pipeline_with(
            gpu,
            layout,
            include_bytes!(concat!(env!("OUT_DIR"), "/fullscreen.vert.spv")),
            include_bytes!(concat!(env!("OUT_DIR"), "/oit_resolve.frag.spv")),
            true,
        );
        let pc: Vec<u8> = [width, height].iter().flat_map(|v| v.to_ne_bytes()).collect();
        let started = std::time::Instant::now();
        gpu.one_time_submit(|cb| {
            d.cmd_fill_buffer(cb, counts.buffer, 0, vk::WHOLE_SIZE, 0);
            gpu.memory_barrier(
                cb,
                (vk::PipelineStageFlags::TRANSFER, vk::AccessFlags::TRANSFER_WRITE),
                (vk::PipelineStageFlags::FRAGMENT_SHADER, vk::AccessFlags::SHADER_READ | vk::AccessFlags::SHADER_WRITE),
            );
            target.begin(gpu, cb);
            d.cmd_bind_pipeline(cb, vk::PipelineBindPoint::GRAPHICS, insert);
            d.cmd_bind_descriptor_sets(cb, vk::PipelineBindPoint::GRAPHICS, layout, 0, &[set], &[]);
            d.cmd_push_constants(cb, layout, vk::ShaderStageFlags::VERTEX | vk::ShaderStageFlags::FRAGMENT, 0, &pc);
            d.cmd_draw(cb, 6, RECTS.len() as u32, 0, 0);
            target.end(gpu, cb);
            gpu.memory_barrier(
                cb,
                (vk::PipelineStageFlags::FRAGMENT_SHADER, vk::AccessFlags::SHADER_WRITE),
                (vk::PipelineStageFlags::FRAGMENT_SHADER, vk::AccessFlags::SHADER_READ),
            );
            target.begin(gpu, cb);
            d.cmd_bind_pipeline(cb, vk::PipelineBindPoint::GRAPHICS, resolve);
            d.cmd_bind_descriptor_sets(cb, vk::PipelineBindPoint::GRAPHICS, layout, 0, &[set], &[]);
            d.cmd_push_constants(cb, layout, vk::ShaderStageFlags::VERTEX | vk::ShaderStageFlags::FRAGMENT, 0, &pc);
            d.cmd_draw(cb, 3, 1, 0, 0);
            target.end(gpu, cb);
            target.record_copy_out(gpu, cb);
        });
        let elapsed = started.elapsed().as_nanos() as u64;
        let image = target.read(gpu);
        d.destroy_pipeline(insert, None);
        d.destroy_pipeline(resolve, None);
        d.destroy_pipeline_layout(layout, None);
        d.destroy_descriptor_pool(pool, None);
        d.destroy_descriptor_set_layout(set_layout, None);
        target.destroy(gpu);
        for b in [counts, lists] {
            let Buffer { buffer, memory } = b;
            d.destroy_buffer(buffer, None);
            d.free_memory(memory, None);
        }
        (image, elapsed)
    }
}

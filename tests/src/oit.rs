//! Order-independent transparency with fragment shader interlock: eight
//! translucent rectangles drawn out of depth order; pass 1 builds a sorted
//! per-pixel list in an unordered critical section, pass 2 composites it.
//! [`reference`] computes the same picture on the CPU from the scene's
//! definition (sorting each pixel's rectangles by depth), independently of
//! the GPU path.

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

/// The largest per-channel difference between two pictures (255 when their
/// sizes differ or a buffer does not hold its size's pixels: a zip over
/// unequal buffers would compare only their common prefix).
pub fn max_difference(a: &Image, b: &Image) -> u8 {
    let bytes = |i: &Image| (i.width * i.height * 4) as usize;
    if (a.width, a.height) != (b.width, b.height) || a.rgba.len() != bytes(a) || b.rgba.len() != bytes(b) {
        return 255;
    }
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
            gpu.buffer(pixels * 4, vk::BufferUsageFlags::STORAGE_BUFFER | vk::BufferUsageFlags::TRANSFER_DST, false);
        let lists = gpu.buffer(pixels * K * 8, vk::BufferUsageFlags::STORAGE_BUFFER, false);
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
        let (insert, resolve) = target.oit_pipelines(
            gpu,
            layout,
            (include_bytes!(concat!(env!("OUT_DIR"), "/oit.vert.spv")), insert_fs),
            include_bytes!(concat!(env!("OUT_DIR"), "/oit_resolve.frag.spv")),
        );
        let pc: Vec<u8> = [width, height].iter().flat_map(|v| v.to_ne_bytes()).collect();
        let started = std::time::Instant::now();
        gpu.one_time_submit(|cb| {
            gpu.zero_for_fragment_shaders(cb, counts.buffer);
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
        gpu.destroy_buffer(counts);
        gpu.destroy_buffer(lists);
        (image, elapsed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The OIT comparison: the picture must be the reference to within 2
    /// (the testapp fails a run above that); one pixel off by 3 must show.
    #[test]
    fn one_pixel_off_by_three_is_reported() {
        let want = reference(64, 64);
        assert_eq!(max_difference(&want, &want.clone()), 0);
        let n = want.rgba.len();
        for byte in [0, 4 * (31 * 64 + 17) + 1, n - 2] {
            for delta in [3i16, -3] {
                let mut img = want.clone();
                let v = img.rgba[byte] as i16;
                // Away from the clamp: 3 up, or 3 down where up would overflow.
                img.rgba[byte] = if v + delta > 255 || v + delta < 0 { v - delta } else { v + delta } as u8;
                assert_eq!(max_difference(&img, &want), 3, "byte {byte}");
                assert_eq!(max_difference(&want, &img), 3, "byte {byte}");
            }
        }
    }

    #[test]
    fn pictures_of_different_sizes_are_not_equal() {
        let want = reference(64, 64);
        let mut short = want.clone();
        short.rgba.truncate(short.rgba.len() - 4 * 64);
        assert_eq!(max_difference(&short, &want), 255);
        short.height -= 1;
        assert_eq!(max_difference(&short, &want), 255);
        let transposed = Image { width: 32, height: 128, rgba: reference(32, 128).rgba };
        assert_eq!(max_difference(&transposed, &Image { width: 64, height: 64, ..transposed.clone() }), 255);
        assert_eq!(max_difference(&reference(128, 64), &want), 255);
    }

    /// The reference sorts per pixel by depth: at (35, 12) of the 64x64
    /// grid rectangles 0 (depth 0.5), 1 (0.2) and 3 (0.35) overlap, drawn
    /// in that order; back to front is 0, 3, 1.
    #[test]
    fn the_reference_composites_back_to_front() {
        let covering: Vec<usize> = (0..RECTS.len())
            .filter(|&k| {
                let r = RECTS[k].0;
                (r[0]..r[2]).contains(&35) && (r[1]..r[3]).contains(&12)
            })
            .collect();
        assert_eq!(covering, [0, 1, 3]);
        let composite = |order: &[usize]| -> [u8; 4] {
            let mut c = [BACKGROUND; 3];
            for &k in order {
                let col = RECTS[k].2;
                let a = col[3] as f32 / 255.0;
                for (ch, v) in c.iter_mut().enumerate() {
                    *v = col[ch] as f32 / 255.0 * a + *v * (1.0 - a);
                }
            }
            [c[0], c[1], c[2], 1.0].map(|v| (v * 255.0).round() as u8)
        };
        let got = reference(64, 64).pixel(35, 12);
        assert_eq!(got, composite(&[0, 3, 1]));
        assert_ne!(got, composite(&[0, 1, 3]), "draw order must give another colour here");
    }
}

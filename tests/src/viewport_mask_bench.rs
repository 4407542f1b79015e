//! `viewport-mask-bench`: the density map's design D (docs/design/
//! density-map-recording.md) measured before it is built, without the layer.
//! A square atlas of 3×3 cells stands for the replays of a binned pass;
//! `draws` full-screen draws of the cheap noise shader
//! (`fdm_noise_cheap.frag`) are rendered into every cell two ways:
//!
//! - `passes`: one render pass instance per cell (its render area, viewport
//!   and scissor), every draw recorded in each — today's replays;
//! - `mask`: one render pass over the atlas, nine viewports and scissors set
//!   once, every draw recorded once by a pipeline whose vertex shader sends
//!   the triangle to every viewport (`ViewportMaskNV`,
//!   `VK_NV_viewport_array2`): the same vertex shader as `passes`, rewritten
//!   by the layer's pass (`overlap_shaders::viewport_index::viewport_mask`),
//!   its mask specialized to the nine viewports.
//!
//! Per frame: the CPU time of recording, and the GPU time between timestamps
//! around the render passes. Both ways must leave the same picture (a
//! checksum of the atlas read back), or the run fails.

use crate::fdm_bench::median;
use crate::render::{color_range, stage, Gpu, Image, PassTimer};
use ash::vk;
use std::time::Instant;

const CELLS: u32 = 3;
const FORMAT: vk::Format = vk::Format::R8G8B8A8_UNORM;

/// What one way measured: medians over the frames.
pub struct Outcome {
    pub way: &'static str,
    pub record_us_per_draw: f64,
    pub gpu_ms: f64,
    pub checksum: u64,
}

/// The cells of a `size`² atlas: (x, y, w, h).
fn cells(size: u32) -> Vec<vk::Rect2D> {
    let w = size / CELLS;
    (0..CELLS * CELLS)
        .map(|k| vk::Rect2D {
            offset: vk::Offset2D { x: ((k % CELLS) * w) as i32, y: ((k / CELLS) * w) as i32 },
            extent: vk::Extent2D { width: w, height: w },
        })
        .collect()
}

fn viewport(r: &vk::Rect2D) -> vk::Viewport {
    vk::Viewport {
        x: r.offset.x as f32,
        y: r.offset.y as f32,
        width: r.extent.width as f32,
        height: r.extent.height as f32,
        min_depth: 0.0,
        max_depth: 1.0,
    }
}

/// Runs both ways, alternated, `frames` frames each, and prints a line per
/// way and the ratio. `Err` where the device lacks `VK_NV_viewport_array2`
/// or the pictures differ.
pub fn run(gpu: &Gpu, size: u32, draws: u32, frames: u32) -> Result<Vec<Outcome>, String> {
    if !gpu.viewport_mask {
        return Err("VK_NV_viewport_array2 (with multiViewport) is not supported".into());
    }
    if gpu.properties.limits.max_viewports < CELLS * CELLS {
        return Err(format!("maxViewports {} < {}", gpu.properties.limits.max_viewports, CELLS * CELLS));
    }
    let d = &gpu.device;
    let usage = vk::ImageUsageFlags::COLOR_ATTACHMENT | vk::ImageUsageFlags::TRANSFER_SRC;
    let image = gpu.image_2d(FORMAT, (size, size), vk::SampleCountFlags::TYPE_1, usage);
    let layout = vk::ImageLayout::COLOR_ATTACHMENT_OPTIMAL;
    let att = [vk::AttachmentDescription::default()
        .format(FORMAT)
        .samples(vk::SampleCountFlags::TYPE_1)
        .load_op(vk::AttachmentLoadOp::CLEAR)
        .store_op(vk::AttachmentStoreOp::STORE)
        .initial_layout(layout)
        .final_layout(layout)];
    let refs = [vk::AttachmentReference { attachment: 0, layout }];
    let sub = [vk::SubpassDescription::default().color_attachments(&refs)];
    let output = (vk::PipelineStageFlags::COLOR_ATTACHMENT_OUTPUT, vk::AccessFlags::COLOR_ATTACHMENT_WRITE);
    let deps = [vk::SubpassDependency {
        src_subpass: vk::SUBPASS_EXTERNAL,
        dst_subpass: 0,
        src_stage_mask: output.0,
        dst_stage_mask: output.0,
        src_access_mask: output.1,
        dst_access_mask: output.1,
        dependency_flags: vk::DependencyFlags::empty(),
    }];
    let info = vk::RenderPassCreateInfo::default().attachments(&att).subpasses(&sub).dependencies(&deps);
    let render_pass = unsafe { d.create_render_pass(&info, None) }.map_err(|e| format!("render pass: {e:?}"))?;
    let framebuffer = gpu.framebuffer(render_pass, &[image.2], (size, size));
    let pl = unsafe { d.create_pipeline_layout(&vk::PipelineLayoutCreateInfo::default(), None) }.unwrap();
    let fs = gpu.shader(include_bytes!(concat!(env!("OUT_DIR"), "/fdm_noise_cheap.frag.spv")));
    let plain_vs = gpu.shader(include_bytes!(concat!(env!("OUT_DIR"), "/fullscreen.vert.spv")));
    let plain_words = include_bytes!(concat!(env!("OUT_DIR"), "/fullscreen.vert.spv"));
    let mut m = overlap_shaders::parse_bytes(plain_words).map_err(|e| format!("fullscreen.vert: {e}"))?;
    overlap_shaders::viewport_index::viewport_mask(&mut m, "main").map_err(|e| format!("the mask rewrite: {e}"))?;
    let words = overlap_shaders::assemble(&m);
    let mask_vs = unsafe { d.create_shader_module(&vk::ShaderModuleCreateInfo::default().code(&words), None) }
        .map_err(|e| format!("the rewritten module: {e:?}"))?;
    // Every cell's viewport.
    let bits = ((1u32 << (CELLS * CELLS)) - 1).to_ne_bytes();
    let entries = [vk::SpecializationMapEntry {
        constant_id: overlap_shaders::viewport_index::VIEWPORT_MASK_SPEC_ID,
        offset: 0,
        size: 4,
    }];
    let spec = vk::SpecializationInfo::default().map_entries(&entries).data(&bits);
    let list = vk::PrimitiveTopology::TRIANGLE_LIST;
    let make = |vs: vk::ShaderModule, count: u32| {
        let mut vertex: vk::PipelineShaderStageCreateInfo<'_> = stage(vk::ShaderStageFlags::VERTEX, vs);
        if count > 1 {
            vertex = vertex.specialization_info(&spec);
        }
        let stages = [vertex, stage(vk::ShaderStageFlags::FRAGMENT, fs)];
        let vp = vk::PipelineViewportStateCreateInfo::default().viewport_count(count).scissor_count(count);
        gpu.pipeline(&stages, pl, list, true, &[], |info| unsafe {
            let info = info.viewport_state(&vp).render_pass(render_pass);
            d.create_graphics_pipelines(vk::PipelineCache::null(), &[info], None).map_err(|e| e.1)
        })
    };
    let plain = make(plain_vs, 1).map_err(|e| format!("pipeline: {e:?}"))?[0];
    let mask = make(mask_vs, CELLS * CELLS).map_err(|e| format!("viewport-mask pipeline: {e:?}"))?[0];
    gpu.one_time_submit(|cb| gpu.image_from_undefined(cb, image.0, color_range(), layout, output));
    let cells = cells(size);
    let clear = [vk::ClearValue { color: vk::ClearColorValue { float32: [0.0; 4] } }];
    let begin = |cb, area| {
        let info = vk::RenderPassBeginInfo::default()
            .render_pass(render_pass)
            .framebuffer(framebuffer)
            .render_area(area)
            .clear_values(&clear);
        unsafe { d.cmd_begin_render_pass(cb, &info, vk::SubpassContents::INLINE) };
    };
    let record = |cb: vk::CommandBuffer, way: &str| unsafe {
        if way == "passes" {
            for c in &cells {
                begin(cb, *c);
                d.cmd_set_viewport(cb, 0, &[viewport(c)]);
                d.cmd_set_scissor(cb, 0, &[*c]);
                d.cmd_bind_pipeline(cb, vk::PipelineBindPoint::GRAPHICS, plain);
                for _ in 0..draws {
                    d.cmd_draw(cb, 3, 1, 0, 0);
                }
                d.cmd_end_render_pass(cb);
            }
        } else {
            let whole =
                vk::Rect2D { offset: vk::Offset2D::default(), extent: vk::Extent2D { width: size, height: size } };
            begin(cb, whole);
            d.cmd_set_viewport(cb, 0, &cells.iter().map(viewport).collect::<Vec<_>>());
            d.cmd_set_scissor(cb, 0, &cells);
            d.cmd_bind_pipeline(cb, vk::PipelineBindPoint::GRAPHICS, mask);
            for _ in 0..draws {
                d.cmd_draw(cb, 3, 1, 0, 0);
            }
            d.cmd_end_render_pass(cb);
        }
    };
    let readback = gpu.buffer(size as u64 * size as u64 * 4, vk::BufferUsageFlags::TRANSFER_DST, true);
    let ways = ["passes", "mask"];
    let mut samples: Vec<(Vec<f64>, Vec<f64>, u64)> = vec![(Vec::new(), Vec::new(), 0); ways.len()];
    for _ in 0..frames {
        for (i, way) in ways.iter().enumerate() {
            let timer = PassTimer::new(gpu);
            let mut record_s = 0.0;
            gpu.one_time_submit(|cb| {
                if let Some(t) = &timer {
                    t.reset(gpu, cb);
                    t.stamp(gpu, cb, 0);
                }
                let start = Instant::now();
                record(cb, way);
                record_s = start.elapsed().as_secs_f64();
                if let Some(t) = &timer {
                    t.stamp(gpu, cb, 1);
                }
                let read = (vk::PipelineStageFlags::TRANSFER, vk::AccessFlags::TRANSFER_READ);
                let src = vk::ImageLayout::TRANSFER_SRC_OPTIMAL;
                gpu.image_barrier(cb, image.0, color_range(), (layout, src), output, read);
                gpu.copy_image_to_buffer(cb, image.0, src, (size, size), 1, readback.buffer);
                gpu.image_barrier(cb, image.0, color_range(), (src, layout), read, output);
            });
            let bytes = unsafe { std::slice::from_raw_parts(readback.map, (size * size * 4) as usize) };
            samples[i].2 = Image { width: size, height: size, rgba: bytes.to_vec() }.checksum();
            // Per draw of the application's (`passes` records each once per cell).
            samples[i].0.push(record_s * 1e6 / draws as f64);
            if let Some(t) = timer {
                samples[i].1.push(t.read(gpu) as f64 / 1e6);
            }
        }
    }
    let out: Vec<Outcome> = ways
        .iter()
        .zip(&samples)
        .map(|(way, (rec, gpu_ms, sum))| Outcome {
            way,
            record_us_per_draw: median(rec),
            gpu_ms: median(gpu_ms),
            checksum: *sum,
        })
        .collect();
    unsafe {
        d.destroy_pipeline(plain, None);
        d.destroy_pipeline(mask, None);
        for m in [fs, plain_vs, mask_vs] {
            d.destroy_shader_module(m, None);
        }
        d.destroy_pipeline_layout(pl, None);
        d.destroy_framebuffer(framebuffer, None);
        d.destroy_render_pass(render_pass, None);
    }
    gpu.destroy_buffer(readback);
    gpu.destroy_image(image);
    if out[0].checksum != out[1].checksum {
        return Err(format!("the pictures differ: passes {:016x}, mask {:016x}", out[0].checksum, out[1].checksum));
    }
    Ok(out)
}

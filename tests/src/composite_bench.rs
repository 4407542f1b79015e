//! `composite-bench W H AREA ROUNDS`: the density map's composite measured on
//! the driver alone (no layer). A W x H colour attachment is written from an
//! image of (W / AREA) x (H / AREA), each pixel `p` the nearest texel of
//! `p / AREA`, several ways:
//!
//! - draws in one render pass sampling by normalized coordinates (`texture`,
//!   the shape llvmpipe's linear rasterizer would run) or fetching by texel
//!   (`texelFetch`), as one full-framebuffer rectangle or a grid of 60 x 34
//!   (an instance each, or six vertices each of one instance);
//! - `vkCmdBlitImage`, nearest, scaled to the whole target, and 1:1 into its
//!   corner;
//! - design H's chain (docs/design/density-map-recording.md), step by step:
//!   a draw widening the image's rows to the target's width, a copy into a
//!   buffer repeating each row AREA times, a copy of the buffer into the
//!   target.
//!
//! R8G8B8A8 and B8G8R8A8; per way the best of ROUNDS submissions (wall time,
//! each waited for), beside an empty render pass.

use crate::render::{color_range, stage, Buffer, Gpu};
use ash::vk;

type Image = (vk::Image, vk::DeviceMemory, vk::ImageView);

const RO: vk::ImageLayout = vk::ImageLayout::SHADER_READ_ONLY_OPTIMAL;
const ATT: vk::ImageLayout = vk::ImageLayout::COLOR_ATTACHMENT_OPTIMAL;
const ALL: (vk::PipelineStageFlags, vk::AccessFlags) = (
    vk::PipelineStageFlags::ALL_COMMANDS,
    vk::AccessFlags::from_raw(vk::AccessFlags::MEMORY_WRITE.as_raw() | vk::AccessFlags::MEMORY_READ.as_raw()),
);
const LAYERS: vk::ImageSubresourceLayers = vk::ImageSubresourceLayers {
    aspect_mask: vk::ImageAspectFlags::COLOR,
    mip_level: 0,
    base_array_layer: 0,
    layer_count: 1,
};

/// The objects every format shares.
struct Shared<'g> {
    g: &'g Gpu,
    size: (u32, u32),
    small: (u32, u32),
    area: u32,
    rounds: u32,
    modules: [vk::ShaderModule; 3],
    sampler: vk::Sampler,
    set_layout: vk::DescriptorSetLayout,
    pool: vk::DescriptorPool,
    layout: vk::PipelineLayout,
    set: vk::DescriptorSet,
}

/// One format's objects: the small image, the target, a render pass over
/// either, the two pipelines (`texture`, `texelFetch`).
struct Format {
    format: vk::Format,
    scratch: Image,
    target: Image,
    render_pass: vk::RenderPass,
    framebuffer: vk::Framebuffer,
    pipelines: [vk::Pipeline; 2],
}

/// Runs the benchmark: one line per format.
pub fn run(g: &Gpu, size: (u32, u32), area: u32, rounds: u32) -> Result<Vec<String>, String> {
    let s = Shared::new(g, size, area, rounds)?;
    let mut lines = Vec::new();
    for format in [vk::Format::R8G8B8A8_UNORM, vk::Format::B8G8R8A8_UNORM] {
        let f = s.format(format)?;
        let mut line = format!(
            "composite_bench format={format:?} size={}x{} area={area} empty_ms={:.3}",
            size.0,
            size.1,
            s.best(&|cb| s.pass(&f, cb, &|_| {}))
        );
        line += &s.blits(&f);
        line += &s.chain(&f);
        line += &s.draws(&f);
        lines.push(line);
        s.destroy(f);
    }
    s.finish();
    Ok(lines)
}

impl<'g> Shared<'g> {
    fn new(g: &'g Gpu, size: (u32, u32), area: u32, rounds: u32) -> Result<Shared<'g>, String> {
        let area = area.max(1);
        let modules = [
            g.shader(include_bytes!(concat!(env!("OUT_DIR"), "/composite_bench.vert.spv"))),
            g.shader(include_bytes!(concat!(env!("OUT_DIR"), "/composite_bench_texture.frag.spv"))),
            g.shader(include_bytes!(concat!(env!("OUT_DIR"), "/composite_bench_fetch.frag.spv"))),
        ];
        let info = vk::SamplerCreateInfo::default()
            .mag_filter(vk::Filter::NEAREST)
            .min_filter(vk::Filter::NEAREST)
            .address_mode_u(vk::SamplerAddressMode::CLAMP_TO_EDGE)
            .address_mode_v(vk::SamplerAddressMode::CLAMP_TO_EDGE);
        let sampler = unsafe { g.device.create_sampler(&info, None) }.map_err(|e| format!("sampler: {e}"))?;
        let samplers = [sampler];
        let binding = [vk::DescriptorSetLayoutBinding::default()
            .binding(0)
            .descriptor_type(vk::DescriptorType::COMBINED_IMAGE_SAMPLER)
            .descriptor_count(1)
            .stage_flags(vk::ShaderStageFlags::FRAGMENT)
            .immutable_samplers(&samplers)];
        let (set_layout, pool, set) = g.descriptor_set(&binding);
        let push = [vk::PushConstantRange { stage_flags: vk::ShaderStageFlags::VERTEX, offset: 0, size: 16 }];
        let layouts = [set_layout];
        let info = vk::PipelineLayoutCreateInfo::default().set_layouts(&layouts).push_constant_ranges(&push);
        let layout = unsafe { g.device.create_pipeline_layout(&info, None) }.map_err(|e| format!("layout: {e}"))?;
        let small = (size.0.div_ceil(area), size.1.div_ceil(area));
        Ok(Shared { g, size, small, area, rounds, modules, sampler, set_layout, pool, layout, set })
    }

    /// The best of the rounds' submissions of `record`, in ms.
    fn best(&self, record: &dyn Fn(vk::CommandBuffer)) -> f64 {
        (0..self.rounds.max(1))
            .map(|_| {
                let t = std::time::Instant::now();
                self.g.one_time_submit(|cb| record(cb));
                t.elapsed().as_secs_f64() * 1e3
            })
            .fold(f64::MAX, f64::min)
    }

    fn format(&self, format: vk::Format) -> Result<Format, String> {
        let g = self.g;
        let read = vk::ImageUsageFlags::SAMPLED | vk::ImageUsageFlags::TRANSFER_DST | vk::ImageUsageFlags::TRANSFER_SRC;
        let scratch = g.image_2d(format, self.small, vk::SampleCountFlags::TYPE_1, read);
        let written = vk::ImageUsageFlags::COLOR_ATTACHMENT | vk::ImageUsageFlags::TRANSFER_DST;
        let target = g.image_2d(format, self.size, vk::SampleCountFlags::TYPE_1, written);
        g.one_time_submit(|cb| {
            let to = (vk::PipelineStageFlags::FRAGMENT_SHADER, vk::AccessFlags::SHADER_READ);
            g.image_from_undefined(cb, scratch.0, color_range(), RO, to);
            let to = (vk::PipelineStageFlags::COLOR_ATTACHMENT_OUTPUT, vk::AccessFlags::COLOR_ATTACHMENT_WRITE);
            g.image_from_undefined(cb, target.0, color_range(), ATT, to);
        });
        let info = [vk::DescriptorImageInfo { sampler: vk::Sampler::null(), image_view: scratch.2, image_layout: RO }];
        let write = vk::WriteDescriptorSet::default()
            .dst_set(self.set)
            .descriptor_type(vk::DescriptorType::COMBINED_IMAGE_SAMPLER)
            .image_info(&info);
        unsafe { g.device.update_descriptor_sets(&[write], &[]) };
        let a = [vk::AttachmentDescription::default()
            .format(format)
            .samples(vk::SampleCountFlags::TYPE_1)
            .load_op(vk::AttachmentLoadOp::LOAD)
            .store_op(vk::AttachmentStoreOp::STORE)
            .initial_layout(ATT)
            .final_layout(ATT)];
        let refs = [vk::AttachmentReference { attachment: 0, layout: ATT }];
        let sub = [vk::SubpassDescription::default()
            .pipeline_bind_point(vk::PipelineBindPoint::GRAPHICS)
            .color_attachments(&refs)];
        let info = vk::RenderPassCreateInfo::default().attachments(&a).subpasses(&sub);
        let render_pass =
            unsafe { g.device.create_render_pass(&info, None) }.map_err(|e| format!("render pass: {e}"))?;
        let framebuffer = g.framebuffer(render_pass, &[target.2], self.size);
        let pipeline = |fs| {
            let stages =
                [stage(vk::ShaderStageFlags::VERTEX, self.modules[0]), stage(vk::ShaderStageFlags::FRAGMENT, fs)];
            g.pipeline(&stages, self.layout, vk::PrimitiveTopology::TRIANGLE_LIST, true, &[], |info| unsafe {
                g.device
                    .create_graphics_pipelines(vk::PipelineCache::null(), &[info.render_pass(render_pass)], None)
                    .map_err(|(_, e)| e)
                    .unwrap()[0]
            })
        };
        let pipelines = [pipeline(self.modules[1]), pipeline(self.modules[2])];
        Ok(Format { format, scratch, target, render_pass, framebuffer, pipelines })
    }

    /// `draw` recorded in a render pass over `framebuffer` of `extent`
    /// (`f`'s target by default).
    fn pass_on(
        &self,
        f: &Format,
        cb: vk::CommandBuffer,
        (framebuffer, extent): (vk::Framebuffer, (u32, u32)),
        draw: &dyn Fn(vk::CommandBuffer),
    ) {
        let d = &self.g.device;
        let whole = vk::Rect2D {
            offset: vk::Offset2D { x: 0, y: 0 },
            extent: vk::Extent2D { width: extent.0, height: extent.1 },
        };
        let begin =
            vk::RenderPassBeginInfo::default().render_pass(f.render_pass).framebuffer(framebuffer).render_area(whole);
        let vp = vk::Viewport { width: extent.0 as f32, height: extent.1 as f32, max_depth: 1.0, ..Default::default() };
        unsafe {
            d.cmd_begin_render_pass(cb, &begin, vk::SubpassContents::INLINE);
            d.cmd_set_viewport(cb, 0, &[vp]);
            d.cmd_set_scissor(cb, 0, &[whole]);
            draw(cb);
            d.cmd_end_render_pass(cb);
        }
    }

    fn pass(&self, f: &Format, cb: vk::CommandBuffer, draw: &dyn Fn(vk::CommandBuffer)) {
        self.pass_on(f, cb, (f.framebuffer, self.size), draw)
    }

    /// Pipeline `p` over a grid of `cells`, st scaled by `scale`: an
    /// instance per cell, or (`one_instance`) six vertices per cell.
    fn draw_cells(
        &self,
        cb: vk::CommandBuffer,
        p: vk::Pipeline,
        scale: [f32; 2],
        cells: (u32, u32),
        one_instance: bool,
    ) {
        let d = &self.g.device;
        let words = [scale[0].to_bits(), scale[1].to_bits(), cells.0, cells.1];
        let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
        let n = cells.0 * cells.1;
        unsafe {
            d.cmd_bind_pipeline(cb, vk::PipelineBindPoint::GRAPHICS, p);
            d.cmd_bind_descriptor_sets(cb, vk::PipelineBindPoint::GRAPHICS, self.layout, 0, &[self.set], &[]);
            d.cmd_push_constants(cb, self.layout, vk::ShaderStageFlags::VERTEX, 0, &bytes);
            if one_instance {
                d.cmd_draw(cb, 6 * n, 1, 0, 0);
            } else {
                d.cmd_draw(cb, 6, n, 0, 0);
            }
        }
    }

    /// The draws: `texture` and `texelFetch`, one rectangle and the grid.
    fn draws(&self, f: &Format) -> String {
        let small = [self.small.0 as f32, self.small.1 as f32];
        let mut line = String::new();
        for (name, p, scale) in [("texture", f.pipelines[0], [1.0, 1.0]), ("fetch", f.pipelines[1], small)] {
            for cells in [(1, 1), (60, 34)] {
                for (suffix, one_instance) in [("", false), ("_vertices", true)] {
                    let ms =
                        self.best(&|cb| self.pass(f, cb, &|cb| self.draw_cells(cb, p, scale, cells, one_instance)));
                    line += &format!(" {name}_{}x{}{suffix}_ms={ms:.3}", cells.0, cells.1);
                }
            }
        }
        line
    }

    /// `vkCmdBlitImage`, nearest: scaled to the whole target, and 1:1 into
    /// its corner.
    fn blits(&self, f: &Format) -> String {
        let (g, general) = (self.g, vk::ImageLayout::GENERAL);
        let corner = |(w, h): (u32, u32)| [vk::Offset3D::default(), vk::Offset3D { x: w as i32, y: h as i32, z: 1 }];
        let mut line = String::new();
        for (name, to) in [("blit_scaled", self.size), ("blit_one_to_one", self.small)] {
            let region = vk::ImageBlit {
                src_subresource: LAYERS,
                src_offsets: corner(self.small),
                dst_subresource: LAYERS,
                dst_offsets: corner(to),
            };
            let ms = self.best(&|cb| unsafe {
                g.image_barrier(cb, f.scratch.0, color_range(), (RO, general), ALL, ALL);
                g.image_barrier(cb, f.target.0, color_range(), (ATT, general), ALL, ALL);
                g.device.cmd_blit_image(cb, f.scratch.0, general, f.target.0, general, &[region], vk::Filter::NEAREST);
                g.image_barrier(cb, f.scratch.0, color_range(), (general, RO), ALL, ALL);
                g.image_barrier(cb, f.target.0, color_range(), (general, ATT), ALL, ALL);
            });
            line += &format!(" {name}_ms={ms:.3}");
        }
        line
    }

    /// Design H's chain, step by step: the widening draw alone, then with
    /// the row-repeating copy, then with the copy into the target.
    fn chain(&self, f: &Format) -> String {
        let (g, (w, h), area) = (self.g, self.size, self.area);
        let wide_extent = (w, self.small.1);
        let usage = vk::ImageUsageFlags::COLOR_ATTACHMENT | vk::ImageUsageFlags::TRANSFER_SRC;
        let wide = g.image_2d(f.format, wide_extent, vk::SampleCountFlags::TYPE_1, usage);
        g.one_time_submit(|cb| {
            let to = (vk::PipelineStageFlags::COLOR_ATTACHMENT_OUTPUT, vk::AccessFlags::COLOR_ATTACHMENT_WRITE);
            g.image_from_undefined(cb, wide.0, color_range(), ATT, to);
        });
        let wide_fb = g.framebuffer(f.render_pass, &[wide.2], wide_extent);
        let usage = vk::BufferUsageFlags::TRANSFER_SRC | vk::BufferUsageFlags::TRANSFER_DST;
        let rows: Buffer = g.buffer(w as u64 * h as u64 * 4, usage, false);
        let rows_drawn = self.small.1.min(h / area);
        // Region k puts wide row y at buffer row area * y + k.
        let repeat: Vec<vk::BufferImageCopy> = (0..area)
            .map(|k| vk::BufferImageCopy {
                buffer_offset: k as u64 * w as u64 * 4,
                buffer_row_length: w * area,
                buffer_image_height: 0,
                image_subresource: LAYERS,
                image_offset: vk::Offset3D::default(),
                image_extent: vk::Extent3D { width: w, height: rows_drawn, depth: 1 },
            })
            .collect();
        let (src, dst) = (vk::ImageLayout::TRANSFER_SRC_OPTIMAL, vk::ImageLayout::TRANSFER_DST_OPTIMAL);
        let record = |cb: vk::CommandBuffer, steps: u32| unsafe {
            self.pass_on(f, cb, (wide_fb, wide_extent), &|cb| {
                self.draw_cells(cb, f.pipelines[0], [1.0, 1.0], (1, 1), false)
            });
            if steps == 0 {
                return;
            }
            g.image_barrier(cb, wide.0, color_range(), (ATT, src), ALL, ALL);
            g.device.cmd_copy_image_to_buffer(cb, wide.0, src, rows.buffer, &repeat);
            g.memory_barrier(cb, ALL, ALL);
            if steps == 2 {
                g.image_barrier(cb, f.target.0, color_range(), (ATT, dst), ALL, ALL);
                g.copy_buffer_to_image(cb, rows.buffer, f.target.0, (w, rows_drawn * area), 1);
                g.image_barrier(cb, f.target.0, color_range(), (dst, ATT), ALL, ALL);
            }
            g.image_barrier(cb, wide.0, color_range(), (src, ATT), ALL, ALL);
        };
        let [widen, repeated, all] = [0, 1, 2].map(|steps| self.best(&|cb| record(cb, steps)));
        unsafe { g.device.destroy_framebuffer(wide_fb, None) };
        g.destroy_buffer(rows);
        g.destroy_image(wide);
        format!(" widen_draw_ms={widen:.3} and_row_copy_ms={repeated:.3} and_image_copy_ms={all:.3}")
    }

    fn destroy(&self, f: Format) {
        unsafe {
            for p in f.pipelines {
                self.g.device.destroy_pipeline(p, None);
            }
            self.g.device.destroy_framebuffer(f.framebuffer, None);
            self.g.device.destroy_render_pass(f.render_pass, None);
        }
        self.g.destroy_image(f.scratch);
        self.g.destroy_image(f.target);
    }

    fn finish(self) {
        unsafe {
            for m in self.modules {
                self.g.device.destroy_shader_module(m, None);
            }
            self.g.device.destroy_pipeline_layout(self.layout, None);
            self.g.device.destroy_descriptor_pool(self.pool, None);
            self.g.device.destroy_descriptor_set_layout(self.set_layout, None);
            self.g.device.destroy_sampler(self.sampler, None);
        }
    }
}

//! Density-map benchmarks that time the GPU apart from recording (issue 33,
//! item 1) and the client-shaped benchmark `fdm-client` (item 6).
//!
//! [`run`] records FRAMES passes into one command buffer, each between two
//! `vkCmdWriteTimestamp` (BOTTOM_OF_PIPE: written once every earlier command
//! has completed) placed *outside* the render pass — before
//! `vkCmdBeginRenderPass` and after `vkCmdEndRenderPass` — so that what the
//! layer records for a density-map pass (a GPU plan, its replays, their
//! barriers and the upscales into the real attachments) lies inside the
//! measured interval, and a timestamp never makes the layer fall back. The
//! CPU time of recording the frames is measured apart, and the wall time of
//! recording, submission and execution as `fdm-bench` always did.

use crate::fdm::Map;
use crate::render::{self, color_range, Gpu, GpuOptions, SettingValue};
use ash::vk;
use std::time::Instant;

/// A radial map written by a draw: 1x1 within `r1` pixels of the
/// framebuffer's centre, 2x2 within `r2`, 4x4 beyond, at `texel` pixels a
/// map texel (`fdm_map_radial.frag`; [`radial_map`] is the same on the host).
#[derive(Clone, Copy, Debug)]
pub struct Radial {
    pub texel: (u32, u32),
    pub r1: f32,
    pub r2: f32,
}

/// How the density map gets its contents.
#[derive(Clone, Copy, Debug)]
pub enum MapWrite {
    /// Uploaded once before the frames (a static map: the layer plans it on
    /// the host and caches the plan).
    Static,
    /// A dynamic map (`FRAGMENT_DENSITY_MAP_DYNAMIC`), rewritten before every
    /// pass by a buffer-to-image copy of the host map (as `fdm-bench` does).
    Copy,
    /// A dynamic map rewritten before every pass by a draw into it (a small
    /// render pass of its own), as a client computing its fovea would.
    Draw(Radial),
}

/// A benchmark pass: `draws` draws of `vertices` vertices (every second one
/// indexed where `indexed`) of `vs`/`fs`, render pass 1, one colour
/// attachment, under `maps` (one per view: two or more is multiview; none:
/// no density map at all).
pub struct Pass<'a> {
    pub size: (u32, u32),
    pub maps: Vec<&'a Map>,
    pub write: MapWrite,
    pub vs: &'a [u8],
    pub fs: &'a [u8],
    pub vertices: u32,
    pub draws: u32,
    pub indexed: bool,
}

impl<'a> Pass<'a> {
    pub fn new(size: (u32, u32), maps: Vec<&'a Map>, vs: &'a [u8], fs: &'a [u8], vertices: u32) -> Self {
        Pass { size, maps, write: MapWrite::Static, vs, fs, vertices, draws: 1, indexed: false }
    }
}

/// What one [`run`] measured.
pub struct Run {
    /// Recording, submission and execution of the command buffer (seconds).
    pub wall_s: f64,
    /// CPU time of recording the frames (seconds, all frames).
    pub record_s: f64,
    /// Per frame, the GPU time between the timestamps around its pass
    /// (milliseconds); empty where the queue has no timestamps.
    pub gpu_ms: Vec<f64>,
    /// A map written by a draw ([`MapWrite::Draw`]), read back after the
    /// last frame: whether it holds what the host computes ([`radial_map`]).
    pub drawn_map_matches: Option<bool>,
}

/// The median of `v` (NaN for none).
pub fn median(v: &[f64]) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    s[s.len() / 2]
}

/// Nanoseconds between two timestamps of a queue with `stamps` (valid bits,
/// nanoseconds per tick: [`timestamps`]), the counter's wrap included.
pub fn elapsed_ns((bits, period): (u32, f64), start: u64, end: u64) -> f64 {
    let mask = if bits >= 64 { u64::MAX } else { (1u64 << bits) - 1 };
    (end.wrapping_sub(start) & mask) as f64 * period
}

/// The queue's timestamp support: (valid bits, nanoseconds per tick), or
/// None where the queue family writes no timestamps.
pub fn timestamps(gpu: &Gpu) -> Option<(u32, f64)> {
    let families = unsafe { gpu.instance.get_physical_device_queue_family_properties(gpu.pd) };
    let bits = families.get(gpu.queue_family as usize).map_or(0, |f| f.timestamp_valid_bits);
    let limits = &gpu.properties.limits;
    // timestampComputeAndGraphics promises them on every graphics queue;
    // without it the family's valid bits decide.
    (bits > 0 && limits.timestamp_period > 0.0).then_some((bits, limits.timestamp_period as f64))
}

/// The device's fragment density texel size limits (min, max).
pub fn texel_limits(g: &Gpu) -> (vk::Extent2D, vk::Extent2D) {
    let mut props = vk::PhysicalDeviceFragmentDensityMapPropertiesEXT::default();
    let mut p2 = vk::PhysicalDeviceProperties2::default().push_next(&mut props);
    unsafe { g.instance.get_physical_device_properties2(g.pd, &mut p2) };
    (props.min_fragment_density_texel_size, props.max_fragment_density_texel_size)
}

/// The host's copy of a [`Radial`] map over `size`.
pub fn radial_map(size: (u32, u32), r: Radial) -> Map {
    let (mw, mh) = (size.0.div_ceil(r.texel.0), size.1.div_ceil(r.texel.1));
    let texels = (0..mh)
        .flat_map(|y| (0..mw).map(move |x| (x, y)))
        .map(|(x, y)| {
            let dx = (x as f32 + 0.5) * r.texel.0 as f32 - size.0 as f32 / 2.0;
            let dy = (y as f32 + 0.5) * r.texel.1 as f32 - size.1 as f32 / 2.0;
            let d = (dx * dx + dy * dy).sqrt();
            let v = if d < r.r1 {
                255
            } else if d < r.r2 {
                127
            } else {
                60
            };
            [v, v]
        })
        .collect();
    Map { width: mw, height: mh, texels }
}

fn render_pass(
    gpu: &Gpu,
    format: vk::Format,
    final_layout: vk::ImageLayout,
    initial: vk::ImageLayout,
    map: bool,
    views: u32,
) -> vk::RenderPass {
    let fdm_layout = vk::ImageLayout::FRAGMENT_DENSITY_MAP_OPTIMAL_EXT;
    let load = if initial == vk::ImageLayout::UNDEFINED {
        vk::AttachmentLoadOp::CLEAR
    } else {
        vk::AttachmentLoadOp::DONT_CARE
    };
    let attachments = [
        vk::AttachmentDescription::default()
            .format(format)
            .samples(vk::SampleCountFlags::TYPE_1)
            .load_op(load)
            .store_op(vk::AttachmentStoreOp::STORE)
            .initial_layout(initial)
            .final_layout(final_layout),
        crate::fdm::map_attachment(fdm_layout),
    ];
    let colour = [vk::AttachmentReference { attachment: 0, layout: vk::ImageLayout::COLOR_ATTACHMENT_OPTIMAL }];
    let subs = [vk::SubpassDescription::default()
        .pipeline_bind_point(vk::PipelineBindPoint::GRAPHICS)
        .color_attachments(&colour)];
    let masks = [(1u32 << views) - 1];
    let mut multiview = vk::RenderPassMultiviewCreateInfo::default().view_masks(&masks).correlation_masks(&masks);
    let map_ref = vk::AttachmentReference { attachment: 1, layout: fdm_layout };
    let mut fdm_info =
        vk::RenderPassFragmentDensityMapCreateInfoEXT::default().fragment_density_map_attachment(map_ref);
    let used = if map { &attachments[..] } else { &attachments[..1] };
    // After the previous frames' writes of the attachment (its layout transition from UNDEFINED included).
    let colour_write = (vk::PipelineStageFlags::COLOR_ATTACHMENT_OUTPUT, vk::AccessFlags::COLOR_ATTACHMENT_WRITE);
    let deps = [vk::SubpassDependency::default()
        .src_subpass(vk::SUBPASS_EXTERNAL)
        .dst_subpass(0)
        .src_stage_mask(colour_write.0)
        .src_access_mask(colour_write.1)
        .dst_stage_mask(colour_write.0)
        .dst_access_mask(colour_write.1 | vk::AccessFlags::COLOR_ATTACHMENT_READ)];
    let mut info = vk::RenderPassCreateInfo::default().attachments(used).subpasses(&subs).dependencies(&deps);
    if views > 1 {
        info = info.push_next(&mut multiview);
    }
    if map {
        info = info.push_next(&mut fdm_info);
    }
    unsafe { gpu.device.create_render_pass(&info, None) }.expect("vkCreateRenderPass")
}

/// A pipeline of `vs` and `fs` (a triangle list, colour written) for subpass 0 of `rp`.
pub fn pipeline(gpu: &Gpu, vs: &[u8], fs: &[u8], layout: vk::PipelineLayout, rp: vk::RenderPass) -> vk::Pipeline {
    let (vsm, fsm) = (gpu.shader(vs), gpu.shader(fs));
    let stages = [render::stage(vk::ShaderStageFlags::VERTEX, vsm), render::stage(vk::ShaderStageFlags::FRAGMENT, fsm)];
    let p = gpu.pipeline(&stages, layout, vk::PrimitiveTopology::TRIANGLE_LIST, true, &[], |info| unsafe {
        gpu.device.create_graphics_pipelines(vk::PipelineCache::null(), &[info.render_pass(rp).subpass(0)], None)
    });
    unsafe {
        gpu.device.destroy_shader_module(vsm, None);
        gpu.device.destroy_shader_module(fsm, None);
    }
    p.expect("vkCreateGraphicsPipelines")[0]
}

fn viewport_scissor(gpu: &Gpu, cb: vk::CommandBuffer, (w, h): (u32, u32)) {
    let vp = vk::Viewport { x: 0.0, y: 0.0, width: w as f32, height: h as f32, min_depth: 0.0, max_depth: 1.0 };
    let sc = vk::Rect2D { offset: vk::Offset2D::default(), extent: vk::Extent2D { width: w, height: h } };
    unsafe {
        gpu.device.cmd_set_viewport(cb, 0, &[vp]);
        gpu.device.cmd_set_scissor(cb, 0, &[sc]);
    }
}

/// Records `frames` passes of `pass` into one command buffer (each pass
/// between two timestamps outside it; a dynamic map rewritten before each,
/// outside the interval), submits it, waits, and reads the timestamps.
pub fn run(gpu: &Gpu, pass: &Pass, frames: u32) -> Run {
    run_on(gpu, pass, frames, None)
}

/// A density-map image an application keeps from frame to frame.
pub type MapImage = (vk::Image, vk::DeviceMemory, vk::ImageView);

/// The density-map image [`run`] makes for `pass` (`None` without a map),
/// to keep across runs ([`run_on`]) as an application keeps its map from
/// frame to frame (the layer learns a dynamic map's areas per image:
/// `fdm_dynamic_areas=asked`); destroyed with `Gpu::destroy_image`.
pub fn map_image(gpu: &Gpu, pass: &Pass) -> Option<MapImage> {
    let views = pass.maps.len().max(1) as u32;
    let (mw, mh) = pass.maps.first().map_or((1, 1), |m| (m.width, m.height));
    let drawn = matches!(pass.write, MapWrite::Draw(_));
    let map_usage = vk::ImageUsageFlags::FRAGMENT_DENSITY_MAP_EXT
        | vk::ImageUsageFlags::TRANSFER_DST
        | if drawn {
            vk::ImageUsageFlags::COLOR_ATTACHMENT | vk::ImageUsageFlags::TRANSFER_SRC
        } else {
            vk::ImageUsageFlags::empty()
        };
    (!pass.maps.is_empty()).then(|| {
        gpu.image(
            vk::Format::R8G8_UNORM,
            (mw, mh),
            views,
            vk::SampleCountFlags::TYPE_1,
            map_usage,
            vk::ImageAspectFlags::COLOR,
        )
    })
}

/// [`run`] on the density-map image `kept` (from [`map_image`] for this
/// pass; its first contents written again), which it leaves alive; `None`:
/// an image of its own, destroyed at the end.
pub fn run_on(gpu: &Gpu, pass: &Pass, frames: u32, kept: Option<MapImage>) -> Run {
    let d = &gpu.device;
    let (w, h) = pass.size;
    let views = pass.maps.len().max(1) as u32;
    let with_map = !pass.maps.is_empty();
    let fdm_layout = vk::ImageLayout::FRAGMENT_DENSITY_MAP_OPTIMAL_EXT;
    let dynamic = with_map && !matches!(pass.write, MapWrite::Static);
    let drawn = matches!(pass.write, MapWrite::Draw(_)) && with_map;
    let layers = vk::ImageSubresourceRange { layer_count: views, ..color_range() };
    let colour_usage = vk::ImageUsageFlags::COLOR_ATTACHMENT;
    let out = gpu.image(
        vk::Format::R8G8B8A8_UNORM,
        (w, h),
        views,
        vk::SampleCountFlags::TYPE_1,
        colour_usage,
        vk::ImageAspectFlags::COLOR,
    );
    let (mw, mh) = pass.maps.first().map_or((1, 1), |m| (m.width, m.height));
    let map = if kept.is_some() { kept } else { map_image(gpu, pass) };
    let bytes: Vec<u8> = pass.maps.iter().flat_map(|m| m.texels.iter().flatten().copied()).collect();
    let staging = gpu.buffer(bytes.len().max(4) as u64, vk::BufferUsageFlags::TRANSFER_SRC, true);
    let indices: Vec<u32> = (0..pass.vertices).collect();
    let index = gpu.buffer((indices.len() * 4).max(4) as u64, vk::BufferUsageFlags::INDEX_BUFFER, true);
    let stamps = timestamps(gpu);
    let map_readback = drawn.then(|| gpu.buffer((mw * mh * 2) as u64, vk::BufferUsageFlags::TRANSFER_DST, true));
    unsafe {
        std::ptr::copy_nonoverlapping(bytes.as_ptr(), staging.map, bytes.len());
        std::ptr::copy_nonoverlapping(indices.as_ptr() as *const u8, index.map, indices.len() * 4);
        // The map's first contents (all of its layers), in FRAGMENT_DENSITY_MAP_OPTIMAL.
        if let Some(m) = &map {
            gpu.one_time_submit(|cb| {
                gpu.image_from_undefined(
                    cb,
                    m.0,
                    layers,
                    vk::ImageLayout::TRANSFER_DST_OPTIMAL,
                    (vk::PipelineStageFlags::TRANSFER, vk::AccessFlags::TRANSFER_WRITE),
                );
                gpu.copy_buffer_to_image(cb, staging.buffer, m.0, (mw, mh), views);
                gpu.image_barrier(
                    cb,
                    m.0,
                    layers,
                    (vk::ImageLayout::TRANSFER_DST_OPTIMAL, fdm_layout),
                    (vk::PipelineStageFlags::TRANSFER, vk::AccessFlags::TRANSFER_WRITE),
                    (
                        vk::PipelineStageFlags::FRAGMENT_DENSITY_PROCESS_EXT,
                        vk::AccessFlags::FRAGMENT_DENSITY_MAP_READ_EXT,
                    ),
                );
            });
        }
        // The view the pass reads the map through (dynamic: with the flag).
        let map_view = map.map(|m| {
            let view_type = if views > 1 { vk::ImageViewType::TYPE_2D_ARRAY } else { vk::ImageViewType::TYPE_2D };
            let flags = if dynamic {
                vk::ImageViewCreateFlags::FRAGMENT_DENSITY_MAP_DYNAMIC_EXT
            } else {
                vk::ImageViewCreateFlags::empty()
            };
            d.create_image_view(
                &vk::ImageViewCreateInfo::default()
                    .flags(flags)
                    .image(m.0)
                    .view_type(view_type)
                    .format(vk::Format::R8G8_UNORM)
                    .subresource_range(layers),
                None,
            )
            .expect("density-map view")
        });
        let rp = render_pass(
            gpu,
            vk::Format::R8G8B8A8_UNORM,
            vk::ImageLayout::COLOR_ATTACHMENT_OPTIMAL,
            vk::ImageLayout::UNDEFINED,
            with_map,
            views,
        );
        let fb_views: Vec<vk::ImageView> = [Some(out.2), map_view].into_iter().flatten().collect();
        let fb = gpu.framebuffer(rp, &fb_views, (w, h));
        let layout = d.create_pipeline_layout(&vk::PipelineLayoutCreateInfo::default(), None).unwrap();
        let pipe = pipeline(gpu, pass.vs, pass.fs, layout, rp);
        // The map's own draw: a render pass into the map (a plain view).
        let map_draw = match (pass.write, &map) {
            (MapWrite::Draw(r), Some(m)) if with_map => {
                let rp = render_pass(
                    gpu,
                    vk::Format::R8G8_UNORM,
                    vk::ImageLayout::COLOR_ATTACHMENT_OPTIMAL,
                    vk::ImageLayout::COLOR_ATTACHMENT_OPTIMAL,
                    false,
                    1,
                );
                let fb = gpu.framebuffer(rp, &[m.2], (mw, mh));
                let range =
                    [vk::PushConstantRange { stage_flags: vk::ShaderStageFlags::FRAGMENT, offset: 0, size: 24 }];
                let layout = d
                    .create_pipeline_layout(&vk::PipelineLayoutCreateInfo::default().push_constant_ranges(&range), None)
                    .unwrap();
                let vs = include_bytes!(concat!(env!("OUT_DIR"), "/fullscreen.vert.spv"));
                let fs = include_bytes!(concat!(env!("OUT_DIR"), "/fdm_map_radial.frag.spv"));
                let pipe = pipeline(gpu, vs, fs, layout, rp);
                let consts: [f32; 6] = [r.texel.0 as f32, r.texel.1 as f32, w as f32 / 2.0, h as f32 / 2.0, r.r1, r.r2];
                Some((rp, fb, layout, pipe, consts))
            }
            _ => None,
        };
        let pool = stamps.map(|_| {
            d.create_query_pool(
                &vk::QueryPoolCreateInfo::default().query_type(vk::QueryType::TIMESTAMP).query_count(2 * frames),
                None,
            )
            .unwrap()
        });
        let clear = [vk::ClearValue { color: vk::ClearColorValue { float32: [0.0, 0.0, 0.0, 1.0] } }];
        let area = vk::Rect2D { offset: vk::Offset2D::default(), extent: vk::Extent2D { width: w, height: h } };
        let map_to = |cb, layout: (vk::ImageLayout, vk::ImageLayout), src, dst| {
            gpu.image_barrier(cb, map.unwrap().0, layers, layout, src, dst)
        };
        let fdm_read =
            (vk::PipelineStageFlags::FRAGMENT_DENSITY_PROCESS_EXT, vk::AccessFlags::FRAGMENT_DENSITY_MAP_READ_EXT);
        let mut record_s = 0.0;
        let started = Instant::now();
        gpu.one_time_submit(|cb| {
            let t = Instant::now();
            if let Some(p) = pool {
                d.cmd_reset_query_pool(cb, p, 0, 2 * frames);
            }
            for f in 0..frames {
                // A dynamic map's new contents, before the interval.
                match (pass.write, &map_draw) {
                    (MapWrite::Copy, _) if with_map => {
                        let to_dst = (vk::PipelineStageFlags::TRANSFER, vk::AccessFlags::TRANSFER_WRITE);
                        map_to(cb, (fdm_layout, vk::ImageLayout::TRANSFER_DST_OPTIMAL), fdm_read, to_dst);
                        gpu.copy_buffer_to_image(cb, staging.buffer, map.unwrap().0, (mw, mh), views);
                        map_to(cb, (vk::ImageLayout::TRANSFER_DST_OPTIMAL, fdm_layout), to_dst, fdm_read);
                    }
                    (MapWrite::Draw(_), Some((mrp, mfb, ml, mp, consts))) => {
                        let att =
                            (vk::PipelineStageFlags::COLOR_ATTACHMENT_OUTPUT, vk::AccessFlags::COLOR_ATTACHMENT_WRITE);
                        let colour = vk::ImageLayout::COLOR_ATTACHMENT_OPTIMAL;
                        map_to(cb, (fdm_layout, colour), fdm_read, att);
                        let marea = vk::Rect2D { extent: vk::Extent2D { width: mw, height: mh }, ..area };
                        let info =
                            vk::RenderPassBeginInfo::default().render_pass(*mrp).framebuffer(*mfb).render_area(marea);
                        d.cmd_begin_render_pass(cb, &info, vk::SubpassContents::INLINE);
                        d.cmd_bind_pipeline(cb, vk::PipelineBindPoint::GRAPHICS, *mp);
                        let bytes = std::slice::from_raw_parts(consts.as_ptr() as *const u8, 24);
                        d.cmd_push_constants(cb, *ml, vk::ShaderStageFlags::FRAGMENT, 0, bytes);
                        viewport_scissor(gpu, cb, (mw, mh));
                        d.cmd_draw(cb, 3, 1, 0, 0);
                        d.cmd_end_render_pass(cb);
                        map_to(cb, (colour, fdm_layout), att, fdm_read);
                    }
                    _ => {}
                }
                if let Some(p) = pool {
                    d.cmd_write_timestamp(cb, vk::PipelineStageFlags::BOTTOM_OF_PIPE, p, 2 * f);
                }
                let info = vk::RenderPassBeginInfo::default()
                    .render_pass(rp)
                    .framebuffer(fb)
                    .render_area(area)
                    .clear_values(&clear);
                d.cmd_begin_render_pass(cb, &info, vk::SubpassContents::INLINE);
                d.cmd_bind_pipeline(cb, vk::PipelineBindPoint::GRAPHICS, pipe);
                if pass.indexed {
                    d.cmd_bind_index_buffer(cb, index.buffer, 0, vk::IndexType::UINT32);
                }
                viewport_scissor(gpu, cb, (w, h));
                for i in 0..pass.draws.max(1) {
                    if pass.indexed && i % 2 == 1 {
                        d.cmd_draw_indexed(cb, pass.vertices, 1, 0, 0, 0);
                    } else {
                        d.cmd_draw(cb, pass.vertices, 1, 0, 0);
                    }
                }
                d.cmd_end_render_pass(cb);
                if let Some(p) = pool {
                    d.cmd_write_timestamp(cb, vk::PipelineStageFlags::BOTTOM_OF_PIPE, p, 2 * f + 1);
                }
                // The next frame writes the same attachment.
                gpu.memory_barrier(
                    cb,
                    (vk::PipelineStageFlags::COLOR_ATTACHMENT_OUTPUT, vk::AccessFlags::COLOR_ATTACHMENT_WRITE),
                    (
                        vk::PipelineStageFlags::COLOR_ATTACHMENT_OUTPUT,
                        vk::AccessFlags::COLOR_ATTACHMENT_READ | vk::AccessFlags::COLOR_ATTACHMENT_WRITE,
                    ),
                );
            }
            record_s = t.elapsed().as_secs_f64();
            // The drawn map, read back (after the measured frames).
            if let (Some(b), Some(m)) = (&map_readback, map) {
                let src = vk::ImageLayout::TRANSFER_SRC_OPTIMAL;
                let read = (vk::PipelineStageFlags::TRANSFER, vk::AccessFlags::TRANSFER_READ);
                gpu.image_barrier(cb, m.0, layers, (fdm_layout, src), fdm_read, read);
                gpu.copy_image_to_buffer(cb, m.0, src, (mw, mh), 1, b.buffer);
            }
        });
        let wall_s = started.elapsed().as_secs_f64();
        let mut gpu_ms = Vec::new();
        if let (Some(p), Some((bits, period))) = (pool, stamps) {
            let mut ticks = vec![0u64; 2 * frames as usize];
            d.get_query_pool_results(p, 0, &mut ticks, vk::QueryResultFlags::TYPE_64 | vk::QueryResultFlags::WAIT)
                .expect("timestamps");
            for f in 0..frames as usize {
                gpu_ms.push(elapsed_ns((bits, period), ticks[2 * f], ticks[2 * f + 1]) * 1e-6);
            }
            d.destroy_query_pool(p, None);
        }
        if let Some((mrp, mfb, ml, mp, _)) = map_draw {
            d.destroy_pipeline(mp, None);
            d.destroy_pipeline_layout(ml, None);
            d.destroy_framebuffer(mfb, None);
            d.destroy_render_pass(mrp, None);
        }
        d.destroy_pipeline(pipe, None);
        d.destroy_pipeline_layout(layout, None);
        d.destroy_framebuffer(fb, None);
        d.destroy_render_pass(rp, None);
        if let Some(v) = map_view {
            d.destroy_image_view(v, None);
        }
        gpu.destroy_buffer(staging);
        gpu.destroy_buffer(index);
        for i in [Some(out), map.filter(|_| kept.is_none())].into_iter().flatten() {
            gpu.destroy_image(i);
        }
        let drawn_map_matches = map_readback.map(|b| {
            let texels = std::slice::from_raw_parts(b.map as *const [u8; 2], (mw * mh) as usize);
            let matches = match pass.write {
                MapWrite::Draw(r) => radial_map(pass.size, r).texels == texels,
                _ => false,
            };
            gpu.destroy_buffer(b);
            matches
        });
        Run { wall_s, record_s, gpu_ms, drawn_map_matches }
    }
}

/// The median GPU time of a pass (milliseconds) over `frames` frames of one
/// command buffer, after a one-frame warm-up (pipelines, the plan); None
/// where the queue has no timestamps.
pub fn gpu_ms(gpu: &Gpu, pass: &Pass, frames: u32) -> Option<f64> {
    let map = map_image(gpu, pass);
    run_on(gpu, pass, 1, map);
    let r = run_on(gpu, pass, frames.max(1), map);
    if let Some(m) = map {
        gpu.destroy_image(m);
    }
    (!r.gpu_ms.is_empty()).then(|| median(&r.gpu_ms))
}

/// CPU time of recording a captured draw in frames of one object set:
/// `pass` with `draws` draws, recorded as [`RECORDED_FRAMES`] frames into one
/// command buffer (the first frame's objects, such as the layer's scratch
/// targets, made once for all), in microseconds per draw. [`run`]'s
/// recording interval: every command of the frames, each pass's end
/// (where the layer replays) included.
pub fn record_us_per_draw(gpu: &Gpu, pass: &Pass, draws: u32) -> f64 {
    let pass = Pass { draws, maps: pass.maps.clone(), ..*pass };
    // The map as an application keeps it: one frame of it executed before (a dynamic map's areas learned).
    let map = map_image(gpu, &pass);
    run_on(gpu, &pass, 1, map);
    let r = run_on(gpu, &pass, RECORDED_FRAMES, map);
    if let Some(m) = map {
        gpu.destroy_image(m);
    }
    r.record_s * 1e6 / (RECORDED_FRAMES as f64 * draws.max(1) as f64)
}

/// The frames [`record_us_per_draw`] records.
pub const RECORDED_FRAMES: u32 = 16;

/// A figure, or `na` where there is none.
pub fn fmt(v: Option<f64>, places: usize) -> String {
    match v {
        Some(v) if v.is_finite() => format!("{v:.places$}"),
        _ => "na".into(),
    }
}

/// What a fragment of `fdm-client` costs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shader {
    /// One round of an integer hash (`fdm_noise_cheap.frag`).
    Cheap,
    /// 12 rounds (`fdm_noise_medium.frag`).
    Medium,
    /// 96 rounds (`fdm_noise.frag`, the shader of issue 19's client).
    Heavy,
}

impl Shader {
    pub fn parse(s: &str) -> Option<Shader> {
        match s {
            "cheap" => Some(Shader::Cheap),
            "medium" => Some(Shader::Medium),
            "heavy" => Some(Shader::Heavy),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Shader::Cheap => "cheap",
            Shader::Medium => "medium",
            Shader::Heavy => "heavy",
        }
    }

    pub fn spirv(self) -> &'static [u8] {
        match self {
            Shader::Cheap => include_bytes!(concat!(env!("OUT_DIR"), "/fdm_noise_cheap.frag.spv")),
            Shader::Medium => include_bytes!(concat!(env!("OUT_DIR"), "/fdm_noise_medium.frag.spv")),
            Shader::Heavy => include_bytes!(concat!(env!("OUT_DIR"), "/fdm_noise.frag.spv")),
        }
    }
}

/// `fdm-client FRAMES [WxH] [DRAWS] [cheap|medium|heavy] [dynamic]`: shaped
/// like a real foveated client (google/bigwheels' `vk_foveation`): a pass of
/// DRAWS full-screen draws (every second one indexed) of the noise shader
/// at the cost asked (heavy by default) under a radial map at the smallest
/// texel size the device reports (8x8 at full HD: a 240x135 map, 32,400
/// bins; about 4% of the pixels asked at 1x1, 7% at 2x2, the rest at 4x4).
/// `dynamic`: the map is a dynamic one that a draw rewrites before every
/// pass (planned on the GPU). Frames are passes recorded one after another
/// in one command buffer; for `off` (no map), `baseline` and `binned` side
/// by side: `frame_ms` = (wall time of FRAMES+1 frames − of 1) / FRAMES,
/// best of 3 (recording, submission, execution); `gpu_ms` the median of the
/// timestamps around each pass (the layer's plan, replays, barriers and
/// upscales inside); `record_ms` the CPU time of recording a frame (best of
/// 3), `record_us_per_draw` that over DRAWS.
pub fn client(
    opts: &GpuOptions,
    frames: u32,
    size: (u32, u32),
    draws: u32,
    shader: Shader,
    dynamic: bool,
) -> Result<(), String> {
    let vs = include_bytes!(concat!(env!("OUT_DIR"), "/fullscreen.vert.spv"));
    let mut wall = Vec::new();
    let mut gpu_med = Vec::new();
    // FDM_CLIENT_MODES=binned (comma-separated) runs fewer modes, for profiling.
    let only = std::env::var("FDM_CLIENT_MODES").ok();
    for mode in ["off", "baseline", "binned"] {
        if only.as_ref().is_some_and(|o| !o.split(',').any(|m| m == mode)) {
            wall.push(f64::NAN);
            gpu_med.push(f64::NAN);
            continue;
        }
        let mut o = opts.clone();
        o.fdm = true;
        if dynamic {
            o.fdm2 = Some(true);
            o.fdm_dynamic = true;
        }
        o.layer_settings.push(("fdm".into(), SettingValue::Str(if mode == "off" { "binned" } else { mode }.into())));
        let g = Gpu::new(&o).map_err(|e| format!("vk:{e}"))?;
        let texel = texel_limits(&g).0;
        if texel.width == 0 || texel.height == 0 {
            return Err(
                "fdm_client: the device reports no fragment density map (is the layer's fdm setting off?)".into()
            );
        }
        // Radii (in pixels) that ask 1x1 for ~4% of a full-HD frame, 2x2 for ~7%.
        // FDM_CLIENT_MAP=uniform: every texel asks 4x4 (one area), for the
        // fixed cost's parts.
        let uniform = std::env::var("FDM_CLIENT_MAP").is_ok_and(|m| m == "uniform");
        let (r1, r2) = if uniform { (0.0, 0.0) } else { (154.0, 267.0) };
        let radial = Radial { texel: (texel.width, texel.height), r1, r2 };
        let map = radial_map(size, radial);
        let pass = Pass {
            draws,
            indexed: true,
            write: if dynamic { MapWrite::Draw(radial) } else { MapWrite::Static },
            ..Pass::new(size, if mode == "off" { vec![] } else { vec![&map] }, vs, shader.spirv(), 3)
        };
        // Warm-up: pipelines, the plan; a drawn map must hold the host's. The map image is kept from frame to
        // frame, as the client keeps it.
        let kept = map_image(&g, &pass);
        if run_on(&g, &pass, 1, kept).drawn_map_matches == Some(false) {
            return Err("fdm_client: the map drawn on the GPU differs from the host's radial map".into());
        }
        let (mut best1, mut best_n, mut best_rec) = (f64::MAX, f64::MAX, f64::MAX);
        let mut gpu_ms = Vec::new();
        for _ in 0..3 {
            best1 = best1.min(run_on(&g, &pass, 1, kept).wall_s);
            let r = run_on(&g, &pass, frames + 1, kept);
            best_n = best_n.min(r.wall_s);
            best_rec = best_rec.min(r.record_s / (frames + 1) as f64);
            gpu_ms.extend(r.gpu_ms);
        }
        if let Some(m) = kept {
            g.destroy_image(m);
        }
        let frame = (best_n - best1) / frames as f64;
        let gpu = (!gpu_ms.is_empty()).then(|| median(&gpu_ms));
        println!(
            "fdm_client mode={mode} map={}x{} texel={}x{} frame_ms={:.2} gpu_ms={} record_ms={:.3} record_us_per_draw={:.2}",
            map.width,
            map.height,
            texel.width,
            texel.height,
            frame * 1e3,
            fmt(gpu, 3),
            best_rec * 1e3,
            best_rec * 1e6 / draws.max(1) as f64
        );
        wall.push(frame);
        gpu_med.push(gpu.unwrap_or(f64::NAN));
    }
    println!(
        "fdm_client size={}x{} draws={draws} frames={frames} binned_vs_baseline={:.3} binned_vs_off={:.3} shader={} map={} indexed=1 gpu_binned_vs_baseline={} gpu_binned_vs_off={}",
        size.0,
        size.1,
        wall[1] / wall[2],
        wall[0] / wall[2],
        shader.name(),
        if dynamic { "dynamic" } else { "static" },
        fmt(Some(gpu_med[1] / gpu_med[2]), 3),
        fmt(Some(gpu_med[0] / gpu_med[2]), 3),
    );
    Ok(())
}

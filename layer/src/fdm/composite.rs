//! The host plan's composite: after every replay of a binned pass, one
//! render pass per stored attachment that writes every replay's bins from
//! its area's scratch target, in place of a blit region per bin rectangle
//! (lavapipe turns each region into a draw of its own: 176 a full-HD radial
//! pass; on the H100 the blits were 0.45 ms at 2048²).
//!
//! Per area one instanced draw of the GPU plan's upscale pipeline
//! (`fdm_upscale.vert` in its rectangle mode): instance `r` covers rectangle
//! `r` of the pass's table (the bins' rectangles, merged), pixel `p` takes
//! texel `p / area` of the area's scratch target — the nearest texel, as the
//! blits took. A depth attachment is written through the fragment's depth
//! (test ALWAYS, its stencil kept); a multisampled one sample by sample (a
//! pipeline per sample, its sample mask), each reading its own sample; a
//! multiview pass's attachment layer by layer (a render pass over a view of
//! each view's layer), each view drawing its own bins from its layer of the
//! scratch targets.
//! [`eligible`] says which attachments can be drawn so;
//! [`super::replay_plan::plan_composited`] decides the rest.

use super::gpu_plan::{self, Owned, Upscale, UpscaleDraw, RECTS};
use super::pass::Att;
use super::replay_plan::Composite;
use super::scratch::{barrier, Targets, Transition};
use super::Fdm;
use ash::vk;

/// Whether attachment `a` can be written by a composite: the device has
/// the next layer's commands for the layer's own objects (`Fdm::raw`), and
/// `a` is colour that is not integer, or depth whose stencil does not
/// store (the upscale has no stencil export), in a 2D view (or an array one
/// of a multiview pass), sampled and drawn at its sample count.
pub(super) fn eligible(f: &Fdm, a: &Att, multiview: bool) -> bool {
    f.raw.is_some() && !a.store_stencil && gpu_plan::upscale_reads_view(a, multiview) && gpu_plan::upscale_draws(f, a)
}

/// What [`prepare`] made for one pass: the objects are owned by the GPU
/// plan's table under `pool` (released with the command buffer's shadow
/// pools).
pub(super) struct Prepared {
    pub(super) pool: vk::DescriptorPool,
    buffer: vk::Buffer,
    /// The table: every draw's rectangles (x0, y0, x1, y1).
    words: Vec<u32>,
    layout: vk::PipelineLayout,
    /// Per composite: its pipelines (one per sample), then per layer drawn
    /// its framebuffer and its draws.
    per: Vec<(Upscale, Vec<Layer>)>,
}

struct Layer {
    framebuffer: vk::Framebuffer,
    /// The draws' layer (`None`: the attachment's view as it is).
    key: Option<u32>,
    draws: Vec<UpscaleDraw>,
}

/// Makes the objects of `composites` (attachments `atts`, scratch targets
/// per area `targets`, framebuffer extent `extent`); nothing is recorded.
///
/// # Safety
/// The pass's attachment views are alive (the capture rule) and the scratch
/// targets were made for them.
pub(super) unsafe fn prepare(
    f: &Fdm,
    composites: &[Composite],
    atts: &[Option<Att>],
    targets: &dyn Fn((u32, u32)) -> Option<Targets>,
    extent: (u32, u32),
) -> Result<Prepared, vk::Result> {
    // The next layer's device alone: the layer's hooks must not see its objects (the GPU plan's rule).
    let d = f.raw.as_ref().ok_or(vk::Result::ERROR_INITIALIZATION_FAILED)?;
    // Every composite draws the same rectangles: the table's ranges, draw by draw.
    let mut words = Vec::new();
    let mut ranges = Vec::new();
    for draw in composites.first().map_or(&[][..], |c| &c.draws[..]) {
        ranges.push(((words.len() / 4) as u32, draw.rects.len() as u32));
        for r in &draw.rects {
            words.extend([r.x, r.y, r.x + r.w, r.y + r.h]);
        }
    }
    let size = (words.len().max(4) * 4) as u64;
    let mut o = f.gpu_plan.lock();
    let mut owned = Owned::new(size);
    let mut pool = vk::DescriptorPool::null();
    let mut per = Vec::new();
    // SAFETY: create infos built here from locals, the layer's own objects and the pass's attachment views and
    // scratch targets (alive: the caller's guarantee); on failure everything made here is destroyed.
    let made = (|| unsafe {
        gpu_plan::make_common(d, &mut o)?;
        gpu_plan::take_buffer(f, &mut o, &mut owned)?;
        let n: u32 = composites.iter().map(|c| c.draws.len() as u32).sum::<u32>().max(1);
        let sizes = [
            vk::DescriptorPoolSize { ty: vk::DescriptorType::STORAGE_BUFFER, descriptor_count: n },
            vk::DescriptorPoolSize { ty: vk::DescriptorType::COMBINED_IMAGE_SAMPLER, descriptor_count: n },
        ];
        pool =
            d.create_descriptor_pool(&vk::DescriptorPoolCreateInfo::default().max_sets(n).pool_sizes(&sizes), None)?;
        let bi = [vk::DescriptorBufferInfo { buffer: owned.buffer, offset: 0, range: vk::WHOLE_SIZE }];
        for c in composites {
            let a = atts[c.attachment].as_ref().ok_or(vk::Result::ERROR_UNKNOWN)?;
            let layered = a.view_type == vk::ImageViewType::TYPE_2D_ARRAY;
            let up = gpu_plan::upscale_pipeline(d, &mut o, a.format, layered, a.samples)?;
            let depth = a.range.aspect_mask != vk::ImageAspectFlags::COLOR;
            let mut sets: Vec<((u32, u32), vk::DescriptorSet)> = Vec::new();
            let mut layers: Vec<Layer> = Vec::new();
            for (draw, &(first, count)) in c.draws.iter().zip(&ranges) {
                if layers.last().map(|l| l.key) != Some(draw.layer) {
                    // The attachment's view itself, or a view of the layer drawn.
                    let view = match draw.layer {
                        None => a.view,
                        Some(layer) => owned.layer_view(d, a, layer)?,
                    };
                    let views = [view];
                    let framebuffer = d.create_framebuffer(
                        &vk::FramebufferCreateInfo::default()
                            .render_pass(up.render_pass)
                            .attachments(&views)
                            .width(extent.0)
                            .height(extent.1)
                            .layers(1),
                        None,
                    )?;
                    owned.framebuffers.push(framebuffer);
                    layers.push(Layer { framebuffer, key: draw.layer, draws: Vec::new() });
                }
                // One set per area (every layer's draws at that area read it).
                let set = match sets.iter().find(|(area, _)| *area == draw.area) {
                    Some((_, set)) => *set,
                    None => {
                        let t = targets(draw.area).ok_or(vk::Result::ERROR_UNKNOWN)?;
                        let (Some(image), Some(view)) = (t.images[c.attachment], t.views[c.attachment]) else {
                            return Err(vk::Result::ERROR_UNKNOWN);
                        };
                        // A depth/stencil scratch target is sampled through a view of its depth aspect.
                        let image_view = if depth { owned.depth_view(d, a, image)? } else { view };
                        let sl = [o.up_set_layout];
                        let set = d.allocate_descriptor_sets(
                            &vk::DescriptorSetAllocateInfo::default().descriptor_pool(pool).set_layouts(&sl),
                        )?[0];
                        gpu_plan::write_upscale_set(d, set, image_view, depth, &bi);
                        sets.push((draw.area, set));
                        set
                    }
                };
                // The upscale's parameters in its rectangle mode: the viewport's size, the table at word 0, the
                // scratch target's layer.
                let (area, layer) = (draw.area, draw.layer.unwrap_or(0));
                let words = [area.0, area.1, 0, extent.0, extent.1, 0, RECTS, 0, 0, layer];
                layers.last_mut().unwrap().draws.push(UpscaleDraw { set, words, first, count });
            }
            per.push((up, layers));
        }
        Ok::<(), vk::Result>(())
    })();
    if let Err(e) = made {
        // SAFETY: the objects just made by the layer, never used.
        unsafe {
            gpu_plan::destroy_owned(d, owned);
            d.destroy_descriptor_pool(pool, None);
        }
        return Err(e);
    }
    let buffer = owned.buffer;
    o.owned.insert(pool, owned);
    Ok(Prepared { pool, buffer, words, layout: o.up_layout, per })
}

/// Records the composites `composites` (made by [`prepare`] as `p`) over
/// `render_area`.
///
/// # Safety
/// `cb` is recording outside a render pass, after the replays that rendered
/// into `targets` (each area's scratch targets, in the attachments' final
/// layouts); the pass's attachments are in the composites' `from` layouts.
#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn record(
    f: &Fdm,
    cb: vk::CommandBuffer,
    p: &Prepared,
    composites: &[Composite],
    atts: &[Option<Att>],
    targets: &dyn Fn((u32, u32)) -> Option<Targets>,
    extent: (u32, u32),
    render_area: vk::Rect2D,
) {
    let Some(d) = f.raw.as_ref() else { return };
    // The scratch targets to be sampled, the attachments to be drawn.
    let mut t = Vec::new();
    for c in composites {
        let Some(a) = atts[c.attachment].as_ref() else { continue };
        let (read, write) = gpu_plan::upscale_layout(a.range.aspect_mask != vk::ImageAspectFlags::COLOR);
        let mut areas: Vec<(u32, u32)> = c.draws.iter().map(|d| d.area).collect();
        areas.sort_unstable();
        areas.dedup();
        for area in areas {
            if let Some(image) = targets(area).and_then(|t| t.images[c.attachment]) {
                let range = vk::ImageSubresourceRange { base_mip_level: 0, base_array_layer: 0, ..a.range };
                t.push(Transition { image, range, old: a.final_, new: read });
            }
        }
        t.push(Transition { image: a.image, range: a.range, old: c.from, new: write });
    }
    let bytes: Vec<u8> = p.words.iter().flat_map(|w| w.to_le_bytes()).collect();
    // SAFETY: the caller's guarantee; every object named was made by `prepare` or is the pass's.
    unsafe {
        // At most 65536 bytes per update.
        for (k, chunk) in bytes.chunks(65536).enumerate() {
            d.cmd_update_buffer(cb, p.buffer, k as u64 * 65536, chunk);
        }
        barrier(f, cb, &t);
        let vp = vk::Viewport {
            x: 0.0,
            y: 0.0,
            width: extent.0 as f32,
            height: extent.1 as f32,
            min_depth: 0.0,
            max_depth: 1.0,
        };
        for (up, layers) in &p.per {
            for l in layers {
                gpu_plan::record_upscale_pass(d, cb, up, l.framebuffer, (render_area, vp), p.layout, &l.draws);
            }
        }
    }
}

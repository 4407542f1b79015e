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
//! blits took (sampled by normalized coordinates, nearest). The draws go in
//! painter's order ([`painted`]): the area of the most pixels first as the
//! bounding box of its rectangles, the others' rectangles over it. A depth
//! attachment is written through the fragment's depth
//! (test ALWAYS, its stencil kept); a multisampled one sample by sample (a
//! pipeline per sample, its sample mask), each reading its own sample; a
//! multiview pass's attachment layer by layer (a render pass over a view of
//! each view's layer), each view drawing its own bins from its layer of the
//! scratch targets.
//!
//! Where the attachment can be written as a storage image ([`Att::storage`]:
//! the layer gives single-sampled colour attachments the storage usage and
//! enables `shaderStorageImageWriteWithoutFormat`), the composite is a
//! compute shader instead (`fdm_composite.comp`): one dispatch per draw (an
//! area, a view's layer) whose workgroups are the 8x8 tiles of its
//! rectangles (each finds its rectangle by a binary search of the
//! rectangles' first tiles, which the table holds after the rectangles),
//! each invocation storing one pixel from its area's texel — the
//! same pixels and texels as the draws, without the raster back end, which
//! on GPUs with few of them costs more than the memory traffic (the H200
//! drew about 15 Gpx/s).
//! [`eligible`] says which attachments can be drawn so;
//! [`super::replay_plan::plan_composited`] decides the rest.

use super::bins::Rect;
use super::gpu_objects::{self, Owned, Upscale, UpscaleDraw, RECTS};
use super::model::Att;
use super::replay_plan::{Composite, CompositeDraw};
use super::scratch::{barrier_between, scratch_extent, sync, Side, Targets, Transition};
use super::Fdm;
use ash::vk;

/// Whether attachment `a` can be written by a composite: the device has
/// the next layer's commands for the layer's own objects (`Fdm::raw`), and
/// `a` is colour that is not integer, or depth whose stencil does not
/// store (the upscale has no stencil export), in a 2D view (or an array one
/// of a multiview pass), sampled and drawn at its sample count.
pub(super) fn eligible(f: &Fdm, a: &Att, multiview: bool) -> bool {
    f.raw.is_some()
        && !a.store_stencil
        && gpu_objects::upscale_reads_view(a, multiview)
        && gpu_objects::upscale_draws(f, a)
}

/// What [`prepare`] made for one pass: the objects are owned by the GPU
/// plan's table under `pool` (released with the command buffer's shadow
/// pools).
pub(super) struct Prepared {
    pub(super) pool: vk::DescriptorPool,
    buffer: vk::Buffer,
    /// The table ([`Table`]'s words).
    words: Vec<u32>,
    layout: vk::PipelineLayout,
    /// Per composite: how it writes, then per layer written its framebuffer
    /// (null for a compute composite) and its draws.
    per: Vec<(Writer, Vec<Layer>)>,
    /// Per layer drawn in painter's order, its first draw's rectangles
    /// before and after ([`painted`]; for the debug log).
    pub(super) painted: Vec<(usize, usize)>,
}

/// How a composite writes its attachment.
enum Writer {
    /// Draws: the upscale's pipelines (one per sample).
    Draw(Upscale),
    /// Dispatches of the composite's compute pipeline, one per draw over its tiles.
    Compute(vk::Pipeline),
    /// A subsampled attachment stored packed (`subsampled.rs`): each area's
    /// rectangles copied 1:1 from its scratch target to their origins.
    Copy,
}

impl Prepared {
    /// Some composite binds the layer's compute pipeline.
    pub(super) fn computes(&self) -> bool {
        self.per.iter().any(|(w, _)| matches!(w, Writer::Compute(_)))
    }
}

struct Layer {
    framebuffer: vk::Framebuffer,
    /// The draws' layer (`None`: the attachment's view as it is).
    key: Option<u32>,
    draws: Vec<UpscaleDraw>,
}

/// Makes the objects of `composites` (attachments `atts`, scratch targets
/// per area `targets`, framebuffer extent `extent`; `kept`: the rectangles
/// written before them, which no composite may draw over: a direct
/// replay's); nothing is recorded.
///
/// # Safety
/// The pass's attachment views are alive (the capture rule) and the scratch
/// targets were made for them.
pub(super) unsafe fn prepare(
    f: &Fdm,
    composites: &[Composite],
    atts: &[Option<Att>],
    targets: &dyn Fn((u32, u32)) -> Option<Targets>,
    (extent, kept): ((u32, u32), &[Rect]),
    packed: &[usize],
) -> Result<Prepared, vk::Result> {
    // The next layer's device alone: the layer's hooks must not see its objects (the GPU plan's rule).
    let d = f.raw.as_ref().ok_or(vk::Result::ERROR_INITIALIZATION_FAILED)?;
    // Every composite draws the same rectangles: the table's ranges, draw by draw. Drawn composites (raster order:
    // a later draw's pixels win) in painter's order; the compute composite's dispatches are unordered.
    let first = composites.first().map_or(&[][..], |c| &c.draws[..]);
    // A packed attachment (`subsampled.rs`) is copied, each rectangle's texels 1:1 at its origin, from its
    // composite's own rectangles.
    let drawn = composites
        .iter()
        .filter(|c| !packed.contains(&c.attachment))
        .all(|c| atts[c.attachment].as_ref().is_some_and(|a| !a.storage));
    let (draws, painted) =
        if drawn && !f.controls.without_painters_order { painted(first, kept) } else { (first.to_vec(), Vec::new()) };
    let (mut table, ranges) = Table::new(&draws);
    let packed_table = packed_table(composites, atts, packed, (first, extent), &mut table.words);
    let size = (table.words.len().max(4) * 4) as u64;
    let mut o = f.gpu_plan.lock();
    let mut owned = Owned::new(size);
    let mut pool = vk::DescriptorPool::null();
    let mut per = Vec::new();
    // SAFETY: create infos built here from locals, the layer's own objects and the pass's attachment views and
    // scratch targets (alive: the caller's guarantee); on failure everything made here is destroyed.
    let made = (|| unsafe {
        gpu_objects::make_common(d, &mut o)?;
        gpu_objects::take_buffer(f, &mut o, &mut owned)?;
        let n: u32 = composites.iter().map(|c| c.draws.len() as u32).sum::<u32>().max(1);
        let sizes = [
            vk::DescriptorPoolSize { ty: vk::DescriptorType::STORAGE_BUFFER, descriptor_count: n },
            vk::DescriptorPoolSize { ty: vk::DescriptorType::COMBINED_IMAGE_SAMPLER, descriptor_count: n },
            vk::DescriptorPoolSize { ty: vk::DescriptorType::STORAGE_IMAGE, descriptor_count: n },
        ];
        pool =
            d.create_descriptor_pool(&vk::DescriptorPoolCreateInfo::default().max_sets(n).pool_sizes(&sizes), None)?;
        let bi = [vk::DescriptorBufferInfo { buffer: owned.buffer, offset: 0, range: vk::WHOLE_SIZE }];
        for c in composites {
            let a = atts[c.attachment].as_ref().ok_or(vk::Result::ERROR_UNKNOWN)?;
            let packs = packed.contains(&c.attachment);
            if packs && !a.storage {
                per.push((Writer::Copy, Vec::new()));
                continue;
            }
            if a.storage {
                // The pipeline first: it makes the set layout.
                let pipeline =
                    gpu_objects::composite_pipeline(d, &mut o, a.view_type == vk::ImageViewType::TYPE_2D_ARRAY, false)?;
                let mut layers = match (&packed_table, packs) {
                    (Some((t, ranges, draws, at)), true) => {
                        let mut layers =
                            compute_layers(d, &mut o, &mut owned, (pool, &bi), (c, draws), a, targets, (ranges, t))?;
                        // The packed table's words lie `at` on: its rectangles' indices and first tiles with them.
                        for draw in layers.iter_mut().flat_map(|l| &mut l.draws) {
                            draw.first += at / 4;
                            draw.words[4] = at + t.tiles_at - at / 4;
                            draw.words[5] = 1;
                        }
                        layers
                    }
                    _ => {
                        compute_layers(d, &mut o, &mut owned, (pool, &bi), (c, &draws), a, targets, (&ranges, &table))?
                    }
                };
                for draw in layers.iter_mut().flat_map(|l| &mut l.draws).filter(|d| d.words[5] == 0) {
                    draw.words[4] = table.tiles_at;
                }
                per.push((Writer::Compute(pipeline), layers));
                continue;
            }
            let layered = a.view_type == vk::ImageViewType::TYPE_2D_ARRAY;
            let up = gpu_objects::upscale_pipeline(d, &mut o, a.format, layered, a.samples)?;
            let depth = a.range.aspect_mask != vk::ImageAspectFlags::COLOR;
            let mut sets: Vec<((u32, u32), vk::DescriptorSet)> = Vec::new();
            let mut layers: Vec<Layer> = Vec::new();
            for (draw, &(first, count)) in draws.iter().zip(&ranges) {
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
                        let set = gpu_objects::allocate_sets(d, pool, o.up_set_layout, 1)?[0];
                        gpu_objects::write_upscale_set(d, set, image_view, depth, &bi);
                        sets.push((draw.area, set));
                        set
                    }
                };
                // The upscale's parameters in its rectangle mode: the viewport's size, the table at word 0, the
                // scratch target's layer.
                let (area, layer) = (draw.area, draw.layer.unwrap_or(0));
                let words = [area.0, area.1, 0, extent.0, extent.1, 0, RECTS, 0, 0, layer];
                let size = scratch_extent(extent, area);
                layers.last_mut().unwrap().draws.push(UpscaleDraw { set, words, size, first, count });
            }
            per.push((Writer::Draw(up), layers));
        }
        Ok::<(), vk::Result>(())
    })();
    if let Err(e) = made {
        // SAFETY: the objects just made by the layer, never used.
        unsafe {
            gpu_objects::destroy_owned(d, owned);
            d.destroy_descriptor_pool(pool, None);
        }
        return Err(e);
    }
    let buffer = owned.buffer;
    o.owned.insert(pool, owned);
    Ok(Prepared { pool, buffer, words: table.words, layout: o.up_layout, per, painted })
}

/// Where a packed attachment is written by the compute composite, its own
/// table of the packed rectangles (`first`'s, each its area's texels from
/// its origin: `subsampled.rs`), appended to `words` at a storage-buffer
/// offset every device allows: the table, its draws' ranges and rectangles,
/// and that offset (words).
fn packed_table(
    composites: &[Composite],
    atts: &[Option<Att>],
    packed: &[usize],
    (first, extent): (&[CompositeDraw], (u32, u32)),
    words: &mut Vec<u32>,
) -> Option<(Table, Vec<(u32, u32)>, Vec<CompositeDraw>, u32)> {
    let stored = |c: &&Composite| atts[c.attachment].as_ref().is_some_and(|a| a.storage);
    composites.iter().filter(|c| packed.contains(&c.attachment)).find(stored)?;
    let draws: Vec<CompositeDraw> = first
        .iter()
        .map(|d| CompositeDraw {
            rects: d.rects.iter().map(|r| super::subsampled::packed_rect(r, d.area, extent)).collect(),
            ..d.clone()
        })
        .collect();
    let at = words.len().next_multiple_of(64);
    let (t, ranges) = Table::new(&draws);
    words.resize(at, 0);
    words.extend(&t.words);
    Some((t, ranges, draws, at as u32))
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
    for (c, (writer, _)) in composites.iter().zip(&p.per) {
        let Some(a) = atts[c.attachment].as_ref() else { continue };
        let (read, write) = match writer {
            Writer::Copy => (vk::ImageLayout::TRANSFER_SRC_OPTIMAL, vk::ImageLayout::TRANSFER_DST_OPTIMAL),
            _ => (
                gpu_objects::upscale_layout(a.range.aspect_mask != vk::ImageAspectFlags::COLOR).0,
                super::replay_plan::composite_layout(a),
            ),
        };
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
        // After the areas' instances (and the direct replays, the downscales, the words' update); the pass's
        // first barrier waited for everything before it.
        let mut to = sync::upscaling();
        if p.per.iter().any(|(w, _)| matches!(w, Writer::Copy)) {
            let transfer = vk::AccessFlags::TRANSFER_READ | vk::AccessFlags::TRANSFER_WRITE;
            to = Side(to.0 | vk::PipelineStageFlags::TRANSFER, to.1 | transfer);
        }
        barrier_between(f, cb, &t, sync::rendered(), to);
        if f.controls.without_full_resolution_write {
            return;
        }
        let vp = vk::Viewport {
            x: 0.0,
            y: 0.0,
            width: extent.0 as f32,
            height: extent.1 as f32,
            min_depth: 0.0,
            max_depth: 1.0,
        };
        for (writer, layers) in &p.per {
            match writer {
                Writer::Draw(up) => {
                    for l in layers {
                        gpu_objects::record_upscale_pass(
                            d,
                            cb,
                            up,
                            l.framebuffer,
                            (render_area, vp),
                            p.layout,
                            &l.draws,
                        );
                    }
                }
                Writer::Compute(pipeline) => record_dispatches(f, d, cb, *pipeline, layers),
                Writer::Copy => {}
            }
        }
        // The packed attachments' copies, then back to the composite's layout (where the final transitions, if
        // any, expect them).
        let mut back = Vec::new();
        for (c, _) in composites.iter().zip(&p.per).filter(|(_, (w, _))| matches!(w, Writer::Copy)) {
            let Some(a) = atts[c.attachment].as_ref() else { continue };
            record_packed_copies(d, cb, c, a, targets, extent);
            let new = super::replay_plan::composite_layout(a);
            back.push(Transition { image: a.image, range: a.range, old: vk::ImageLayout::TRANSFER_DST_OPTIMAL, new });
        }
        if !back.is_empty() {
            let copied = Side(vk::PipelineStageFlags::TRANSFER, vk::AccessFlags::TRANSFER_WRITE);
            let rw = vk::AccessFlags::MEMORY_READ | vk::AccessFlags::MEMORY_WRITE;
            barrier_between(f, cb, &back, copied, Side(vk::PipelineStageFlags::ALL_COMMANDS, rw));
        }
    }
}

/// The copies of packed composite `c` (attachment `a` in
/// `TRANSFER_DST_OPTIMAL`, each area's scratch target in
/// `TRANSFER_SRC_OPTIMAL`): per rectangle `r` at area `s`, the texels
/// `r.origin / s` on, `⌈r.size / s⌉` of them, to `r.origin`.
///
/// # Safety
/// As [`record`].
unsafe fn record_packed_copies(
    d: &ash::Device,
    cb: vk::CommandBuffer,
    c: &Composite,
    a: &Att,
    targets: &dyn Fn((u32, u32)) -> Option<Targets>,
    extent: (u32, u32),
) {
    let layers = vk::ImageSubresourceLayers {
        aspect_mask: a.range.aspect_mask,
        mip_level: a.range.base_mip_level,
        base_array_layer: a.range.base_array_layer,
        layer_count: 1,
    };
    let scratch = vk::ImageSubresourceLayers { mip_level: 0, base_array_layer: 0, ..layers };
    for draw in &c.draws {
        let Some(src) = targets(draw.area).and_then(|t| t.images[c.attachment]) else { continue };
        let (ax, ay) = draw.area;
        let regions: Vec<vk::ImageCopy> = draw
            .rects
            .iter()
            .map(|r| {
                let q = super::subsampled::packed_rect(r, draw.area, extent);
                vk::ImageCopy {
                    src_subresource: scratch,
                    src_offset: vk::Offset3D { x: (r.x / ax) as i32, y: (r.y / ay) as i32, z: 0 },
                    dst_subresource: layers,
                    dst_offset: vk::Offset3D { x: r.x as i32, y: r.y as i32, z: 0 },
                    extent: vk::Extent3D { width: q.w, height: q.h, depth: 1 },
                }
            })
            .collect();
        // SAFETY: the caller's guarantee; the regions lie in both images (the scratch target is the extent over
        // the area, rounded up).
        unsafe {
            d.cmd_copy_image(
                cb,
                src,
                vk::ImageLayout::TRANSFER_SRC_OPTIMAL,
                a.image,
                vk::ImageLayout::TRANSFER_DST_OPTIMAL,
                &regions,
            )
        };
    }
}

/// The layers of compute composite `c` of attachment `a` drawing `draws`
/// (their rectangles at `ranges` of `p`'s table, in the buffer `bi`): per layer
/// written, per draw a set (the area's scratch target, a 2D view of the
/// attachment's layer, the table) from `pool`, and the draws' words (log2
/// of the area, the scratch target's layer, the draw's tiles).
///
/// # Safety
/// As [`prepare`]; `o`'s common objects and composite pipelines are made.
#[allow(clippy::too_many_arguments)]
unsafe fn compute_layers(
    d: &ash::Device,
    o: &mut gpu_objects::Objects,
    owned: &mut Owned,
    (pool, bi): (vk::DescriptorPool, &[vk::DescriptorBufferInfo]),
    (c, draws): (&Composite, &[CompositeDraw]),
    a: &Att,
    targets: &dyn Fn((u32, u32)) -> Option<Targets>,
    (ranges, table): (&[(u32, u32)], &Table),
) -> Result<Vec<Layer>, vk::Result> {
    let mut layers: Vec<Layer> = Vec::new();
    let mut view = vk::ImageView::null();
    for (draw, &(first, count)) in draws.iter().zip(ranges) {
        if layers.last().map(|l| l.key) != Some(draw.layer) {
            // A storage view has the identity swizzle and is 2D: the pass's own where it is one (no view made per
            // pass), else the layer's own of the layer written.
            view = match draw.layer {
                None if a.plain => a.view,
                // SAFETY: the attachment's image is alive (the caller's guarantee).
                layer => unsafe { owned.layer_view(d, a, layer.unwrap_or(0)) }?,
            };
            layers.push(Layer { framebuffer: vk::Framebuffer::null(), key: draw.layer, draws: Vec::new() });
        }
        let t = targets(draw.area).ok_or(vk::Result::ERROR_UNKNOWN)?;
        let scratch = t.views[c.attachment].ok_or(vk::Result::ERROR_UNKNOWN)?;
        // SAFETY: a set of the layer's own layout from the layer's own pool, written with live views and buffer.
        let set = unsafe {
            let set = gpu_objects::allocate_sets(d, pool, o.cs_set_layout, 1)?[0];
            gpu_objects::write_composite_set(d, set, (scratch, view), bi);
            set
        };
        let (area, layer) = (draw.area, draw.layer.unwrap_or(0));
        let mut words = [0; 10];
        words[..4].copy_from_slice(&[
            area.0.trailing_zeros(),
            area.1.trailing_zeros(),
            layer,
            table.tiles(first, count),
        ]);
        layers.last_mut().unwrap().draws.push(UpscaleDraw { set, words, size: [0; 2], first, count });
    }
    Ok(layers)
}

/// `draws` (grouped by layer) in painter's order, for composites that draw
/// (a later draw's pixels win): in each layer the draw of the most pixels
/// first, as the bounding box of its rectangles less those of `kept` (at
/// most four rectangles: one kept at most, the direct replay's), where the
/// other draws of the layer cover the rest of them (each bin is drawn by
/// one area per layer, so the draws' rectangles never overlap), and the box
/// saves many rectangles for little overdraw (at least twice as many
/// rectangles as pieces, the other areas' pixels in them at most a quarter
/// of its own). llvmpipe writes a
/// rectangle's whole 64x64 tiles without edge tests and every tile that two
/// triangles' diagonal or a rectangle's edge crosses with them: on the
/// radial full-HD client the bins of the coarsest area (nine-tenths of the
/// pixels) become one rectangle. Also returned: per layer painted, its
/// first draw's rectangles before and after.
fn painted(draws: &[CompositeDraw], kept: &[Rect]) -> (Vec<CompositeDraw>, Vec<(usize, usize)>) {
    let pixels = |rects: &[Rect]| rects.iter().map(Rect::pixels).sum::<u64>();
    let mut out: Vec<CompositeDraw> = Vec::with_capacity(draws.len());
    let mut done = Vec::new();
    for layer in draws.chunk_by(|a, b| a.layer == b.layer) {
        let mut layer = layer.to_vec();
        let Some(k) = (0..layer.len()).max_by_key(|&k| pixels(&layer[k].rects)) else { continue };
        let mut most = layer.remove(k);
        if let Some(first) = most.rects.first() {
            let bounds = most.rects.iter().fold(*first, |b, r| b.union(r));
            let pieces = kept.iter().fold(vec![bounds], |pieces, k| pieces.iter().flat_map(|p| p.minus(k)).collect());
            let inside = |r: &Rect| pieces.iter().filter_map(|p| p.intersection(r)).map(|o| o.pixels()).sum::<u64>();
            let others: u64 = layer.iter().flat_map(|d| &d.rects).map(inside).sum();
            // Worth it where it saves many rectangles' edges for a little overdraw: at least twice as many
            // rectangles as pieces, the others' pixels in them at most a quarter of its own (an edge-tested
            // pixel costs llvmpipe about twice a whole tile's, `composite-bench`).
            let own = pixels(&most.rects);
            let worth = most.rects.len() >= 2 * pieces.len() && others * 4 <= own;
            if pieces.len() <= 4 && own + others == pixels(&pieces) && worth {
                done.push((most.rects.len(), pieces.len()));
                most.rects = pieces;
            }
        }
        out.push(most);
        out.extend(layer);
    }
    (out, done)
}

/// The composites' table: every draw's rectangles (x0, y0, x1, y1, ends
/// exclusive), then per rectangle the index of its first 8x8 tile within
/// its draw (what the compute shader's workgroups search).
struct Table {
    words: Vec<u32>,
    /// Where the first-tile words start.
    tiles_at: u32,
}

impl Table {
    /// The table of `draws`' rectangles, and each draw's range of them
    /// (first, count).
    fn new(draws: &[super::replay_plan::CompositeDraw]) -> (Table, Vec<(u32, u32)>) {
        let mut words = Vec::new();
        let mut ranges = Vec::new();
        let mut tiles = Vec::new();
        for draw in draws {
            ranges.push(((words.len() / 4) as u32, draw.rects.len() as u32));
            let mut first = 0;
            for r in &draw.rects {
                words.extend([r.x, r.y, r.x + r.w, r.y + r.h]);
                tiles.push(first);
                first += r.w.div_ceil(8) * r.h.div_ceil(8);
            }
        }
        let tiles_at = words.len() as u32;
        words.extend(tiles);
        (Table { words, tiles_at }, ranges)
    }

    /// The tiles of the draw of rectangles `first..first + count`.
    fn tiles(&self, first: u32, count: u32) -> u32 {
        let Some(last) = (first + count).checked_sub(1).filter(|_| count > 0) else { return 0 };
        let r = &self.words[last as usize * 4..][..4];
        self.words[(self.tiles_at + last) as usize] + (r[2] - r[0]).div_ceil(8) * (r[3] - r[1]).div_ceil(8)
    }
}

/// Records a compute composite's dispatches (`pipeline`, its `layers` made
/// by [`compute_layers`]): per draw one dispatch of its tiles.
///
/// # Safety
/// As [`record`], outside a render pass; the layouts are set.
unsafe fn record_dispatches(f: &Fdm, d: &ash::Device, cb: vk::CommandBuffer, pipeline: vk::Pipeline, layers: &[Layer]) {
    let layout = f.gpu_plan.lock().cs_layout;
    // SAFETY: the caller's guarantee; the pipeline, layout and sets are the layer's own.
    unsafe {
        d.cmd_bind_pipeline(cb, vk::PipelineBindPoint::COMPUTE, pipeline);
        for draw in layers.iter().flat_map(|l| &l.draws).filter(|d| d.words[3] > 0) {
            d.cmd_bind_descriptor_sets(cb, vk::PipelineBindPoint::COMPUTE, layout, 0, &[draw.set], &[]);
            let w = &draw.words;
            // Word 4: where the draw's table's first tiles lie; 5: packed.
            let pc: [u32; 8] = [draw.first, draw.count, w[4], w[3], w[0], w[1], w[2], w[5]];
            let bytes: Vec<u8> = pc.iter().flat_map(|w| w.to_le_bytes()).collect();
            d.cmd_push_constants(cb, layout, vk::ShaderStageFlags::COMPUTE, 0, &bytes);
            // At most 65535 workgroups per dimension: the tiles in rows of that many.
            d.cmd_dispatch(cb, w[3].min(65535), w[3].div_ceil(65535), 1);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fdm::bins::Rect;
    use crate::fdm::replay_plan::CompositeDraw;

    /// The table holds every draw's rectangles, then each rectangle's first
    /// 8x8 tile within its draw; a draw's tiles are its rectangles' tiles
    /// (partial tiles at the ends counted).
    #[test]
    fn the_tables_first_tiles_count_each_draws_tiles() {
        let r = |x, y, w, h| Rect { x, y, w, h };
        let draws = [
            CompositeDraw { layer: None, area: (2, 2), rects: vec![r(0, 0, 16, 8), r(16, 0, 9, 9)] },
            CompositeDraw { layer: None, area: (4, 4), rects: vec![r(32, 0, 32, 32)] },
            CompositeDraw { layer: Some(1), area: (1, 1), rects: vec![] },
        ];
        let (t, ranges) = Table::new(&draws);
        assert_eq!(ranges, vec![(0, 2), (2, 1), (3, 0)]);
        assert_eq!(t.tiles_at, 12);
        assert_eq!(&t.words[..4], &[0, 0, 16, 8]);
        assert_eq!(&t.words[12..], &[0, 2, 0], "first tiles: 2 of the first rectangle, then 2x2 of the second");
        assert_eq!(t.tiles(0, 2), 2 + 4);
        assert_eq!(t.tiles(2, 1), 16);
        assert_eq!(t.tiles(3, 0), 0);
    }

    fn r(x: u32, y: u32, w: u32, h: u32) -> Rect {
        Rect { x, y, w, h }
    }

    /// Painter's order: the draw of the most pixels first, as its bounding
    /// box where the layer's other draws cover the rest of it; less the kept
    /// (direct) rectangle; left exact where some pixel of the box would be
    /// drawn by no one after it, or where the box saves few rectangles or
    /// costs much overdraw.
    #[test]
    fn the_most_common_area_goes_first_as_its_bounding_box() {
        let d = |area, rects: Vec<Rect>| CompositeDraw { layer: None, area, rects };
        // A 64x32 framebuffer of 8x8 bins: 4x4 everywhere but a 16x8 hole at (16, 8), which is 2x2.
        let hole = r(16, 8, 16, 8);
        let bins = (0..4).flat_map(|y| (0..8).map(move |x| r(8 * x, 8 * y, 8, 8)));
        let four = d((4, 4), bins.filter(|b| !b.intersects(&hole)).collect());
        let two = d((2, 2), vec![hole]);
        assert_eq!(four.rects.len(), 30);
        let (out, done) = painted(&[two.clone(), four.clone()], &[]);
        assert_eq!(done, vec![(30, 1)]);
        assert_eq!(out[0].area, (4, 4));
        assert_eq!(out[0].rects, vec![r(0, 0, 64, 32)]);
        assert_eq!(out[1].rects, two.rects);
        // The hole written directly before the composite instead: the box less it.
        let (out, _) = painted(&[four.clone()], &[hole]);
        assert_eq!(out[0].rects, vec![r(0, 0, 64, 8), r(0, 16, 64, 16), r(0, 8, 16, 8), r(32, 8, 32, 8)]);
        // Nobody draws the hole after it: the box would leave its garbage there.
        assert_eq!(painted(&[four.clone()], &[]).0[0].rects, four.rects);
        // Few rectangles (six around the kept hole, under twice the four pieces of the box less it): little to
        // save.
        let bands = d(
            (4, 4),
            vec![
                r(0, 0, 64, 8),
                r(0, 16, 32, 16),
                r(32, 16, 16, 16),
                r(48, 16, 16, 16),
                r(0, 8, 16, 8),
                r(32, 8, 32, 8),
            ],
        );
        assert_eq!(painted(&[bands.clone()], &[hole]).0[0].rects, bands.rects);
        // The others' pixels more than a quarter of its own: the overdraw would cost more. 2x2 over the top three
        // quarters of the middle half, 4x4 around it as strips and bins.
        let middle = d((2, 2), vec![r(16, 0, 32, 24)]);
        let strips = (0..4).flat_map(|x| [r(4 * x, 0, 4, 32), r(48 + 4 * x, 0, 4, 32), r(16 + 8 * x, 24, 8, 8)]);
        let around = d((4, 4), strips.collect());
        assert_eq!(painted(&[middle, around.clone()], &[]).0[0].rects, around.rects);
        // Per layer: each view's own most common area.
        let (mut a, mut b) = (four.clone(), two.clone());
        a.layer = Some(1);
        b.layer = Some(1);
        let (out, _) = painted(&[two.clone(), four.clone(), b, a], &[]);
        assert_eq!(
            out.iter().map(|d| (d.layer, d.rects.len())).collect::<Vec<_>>(),
            vec![(None, 1), (None, 1), (Some(1), 1), (Some(1), 1)]
        );
    }
}

//! The GPU plan: passes whose density map is dynamic or deferred, planned
//! when the pass executes, with no host read.
//!
//! A dynamic map's contents are those when the pass executes on the queue
//! (the GPU may write it earlier in the same command buffer); a deferred
//! map's those at `vkEndCommandBuffer`, which the contents at execution
//! include. So nothing read at recording can be right: the plan is made by
//! the GPU. At the end of the captured pass the layer records:
//!
//! 1. a copy of the map (each view's layer) into a buffer of its own and a
//!    compute dispatch (`fdm_plan.comp`) that gives each *region* of the
//!    render area — a block of whole map texels, up to [`GRID`]x[`GRID`] of
//!    them — per view the largest power-of-two area per axis no larger than
//!    what every texel its pixels fetch asks for (through the view's density
//!    offset; smaller than asked is always allowed), and writes one
//!    predicate per (region, candidate area): 1 where any view chose that
//!    area, 0 elsewhere;
//! 2. for every candidate area the downscales of what loads (unconditional
//!    blits: they write only that area's scratch targets), then per area one
//!    render pass instance into its scratch targets over the render area
//!    (one after the other with no barrier between; area 1x1's into the
//!    attachments themselves, [`direct`]), in
//!    which each region's commands (clipped to it) go down under
//!    `vkCmdBeginConditionalRenderingEXT` on the predicate of (region, area)
//!    — skipped where the region chose another area (conditional rendering
//!    skips draws, dispatches and clears, not copies: nothing unconditional
//!    writes a real attachment);
//! 3. per stored colour attachment, the upscale: per area an instanced draw
//!    of the layer's (`fdm_upscale.vert/.frag`) whose instance `r` covers
//!    region `r` only if the region chose that area, pixel `p` taking texel
//!    `p / area` of its scratch target. A multiview pass is upscaled view by
//!    view (a render pass over each view's layer of the attachment): each
//!    view takes the area it chose, from its layer of the scratch target.
//!
//! Per view exactly one area per region is upscaled; a region is replayed
//! at each area some view chose (every replay renders every view, as in a
//! host plan). The region grid follows the first view's density offset, so
//! its regions stay whole texels of that view. What cannot be covered renders at
//! 1x1 as before (the reason logged once): no conditional rendering (the
//! driver lacks it, or it is a Vulkan 1.0 application), the application's
//! own conditional rendering around the pass, several subpasses, input
//! attachments, layered framebuffers (outside multiview), stencil that
//! stores (no stencil export in the upscale), stored colour
//! formats that cannot be sampled and drawn at their sample count (integer
//! formats included), attachment views that are not 2D. A multisampled
//! attachment is scaled down by copies (every sample kept) and up by a draw
//! per sample, each writing its sample only (its pipeline's sample mask).

use super::bins::{alignment, whole_fragments, Rect};
use super::commands::{Cmd, MaskFrom, Transform};
use super::emit::{emit, emit_scissors, restore, restore_compute};
use super::fallback::Fallback;
use super::gpu_objects::{
    allocate_sets, composite_pipeline, destroy_owned, make_common, record_upscale_pass, storage_write, take_buffer,
    upscale_draws, upscale_layout, upscale_pipeline, upscale_reads_view, write_composite_set, write_upscale_set,
    Objects, Owned, Upscale, UpscaleDraw,
};
use super::live::{begin_real, end_real};
use super::model::{aspect_of, attachments, Att, Begin, Pass};
use super::replay::{replay_cmds, retarget};
use super::replay_plan::scaled_regions;
use super::scratch::{
    barrier_between, barrier_to, blit, copy_scaled, scratch_extent, scratch_targets, sync, Side, Targets, Transition,
};
use super::viewport_mask::VIEWPORTS;
use super::Fdm;
use crate::device::DeviceCore;
use crate::id;
use crate::settings::LogLevel;
use ash::vk;

/// Regions per axis at most.
pub const GRID: u32 = 8;
/// The commands a pass's replays may record at most: the grid is halved
/// (8, 4, 2, 1 regions per axis) until every (region, area) replay of the
/// captured commands fits, so a pass of many draws records a bounded
/// number of replays (coarser regions: larger areas shaded finer).
const RECORDED: usize = 40_000;

/// Regions per axis for a pass of `cmds` captured commands replayed at
/// `areas` candidate areas: per region, or `masked` per group of
/// [`VIEWPORTS`] regions (the plan's viewport masks, design E), under an
/// eighth of the bound (one replay per candidate area for a pass of 1000
/// draws: a 4x4 grid, one group; the 8x8 grid's four groups up to 400
/// draws at three areas) and never coarser than one group (a group of 16
/// regions replays once, as one region would).
pub(super) fn grid_for(cmds: usize, areas: usize, masked: bool) -> u32 {
    let units = |g: u32| if masked { (g * g).div_ceil(VIEWPORTS) } else { g * g } as usize;
    let bound = if masked { RECORDED / 8 } else { RECORDED };
    let least = if masked { VIEWPORTS.isqrt() } else { 1 };
    let mut g = GRID;
    while g > least && units(g) * areas * (cmds + 8) > bound {
        g /= 2;
    }
    g
}
/// The candidate areas, in the plan shader's order: index `log2(x) * 3 + log2(y)`.
pub const AREAS: [(u32, u32); 9] = [(1, 1), (1, 2), (1, 4), (2, 1), (2, 2), (2, 4), (4, 1), (4, 2), (4, 4)];

/// Whether area 1x1's instance renders into the pass's attachments themselves (no scratch target, downscale or
/// upscale for it): single-sampled passes (no resolve either), unless `debug_fdm_without=direct_1x1`. Its instance
/// spans the render area as every area's does: what it leaves undefined outside the regions that chose 1x1 (a
/// clear's `DONT_CARE` load in the twin that never clears) the other areas' upscales overwrite, each region's pixels
/// written by exactly one area per view. Its scratch target is still made (its descriptor set, which names the
/// plan buffer, serves the region clears' draw), never written.
fn direct(f: &Fdm, e: &Eligible) -> bool {
    !f.controls.without_direct_1x1 && present(&e.atts).all(|(_, a)| a.samples == vk::SampleCountFlags::TYPE_1)
}

/// Whether area `ai` of [`AREAS`] is one of the `candidates` (a mask: `fdm_dynamic_areas`, [`super::asked`]; the
/// plan shader gives each region the largest candidate no larger than what its texels ask).
fn candidate(candidates: u32, ai: usize) -> bool {
    candidates >> ai & 1 == 1
}
/// Words of the region table per region.
const ROW: u32 = 8;
/// Words of the view table per view index.
const VIEW_WORDS: u32 = 4;

/// Makes `begin` clear nothing and returns what it would have cleared, as
/// `vkCmdClearAttachments` attachments with the application's clear values:
/// a render pass begins as its twin that never clears
/// ([`super::PassInfo::unclearing`]; none made: left as it is, nothing
/// returned), dynamic rendering with `DONT_CARE` where it loads `CLEAR`.
pub(super) fn unclearing(begin: &mut Begin) -> Vec<vk::ClearAttachment> {
    let mut out = Vec::new();
    let cleared = |op: vk::AttachmentLoadOp| op == vk::AttachmentLoadOp::CLEAR;
    match begin {
        Begin::RenderPass { render_pass, clears, pass, .. } => {
            if pass.unclearing == vk::RenderPass::null() {
                return out;
            }
            *render_pass = pass.unclearing;
            let value = |k: u32| clears.get(k as usize).copied().unwrap_or_default();
            for (slot, k) in pass.first_subpass.0.iter().enumerate() {
                if let Some(k) = *k {
                    if cleared(pass.attachments[k as usize].load_op) {
                        let aspect_mask = vk::ImageAspectFlags::COLOR;
                        out.push(vk::ClearAttachment {
                            aspect_mask,
                            color_attachment: slot as u32,
                            clear_value: value(k),
                        });
                    }
                }
            }
            if let Some(k) = pass.first_subpass.1 {
                let a = &pass.attachments[k as usize];
                let has = aspect_of(a.format);
                let mut aspect_mask = vk::ImageAspectFlags::empty();
                if cleared(a.load_op) && has.contains(vk::ImageAspectFlags::DEPTH) {
                    aspect_mask |= vk::ImageAspectFlags::DEPTH;
                }
                if cleared(a.stencil_load_op) && has.contains(vk::ImageAspectFlags::STENCIL) {
                    aspect_mask |= vk::ImageAspectFlags::STENCIL;
                }
                if !aspect_mask.is_empty() {
                    out.push(vk::ClearAttachment { aspect_mask, color_attachment: 0, clear_value: value(k) });
                }
            }
        }
        Begin::Rendering { colors, depth, stencil, .. } => {
            for (slot, c) in colors.iter_mut().enumerate() {
                if c.image_view != vk::ImageView::null() && cleared(c.load_op) {
                    c.load_op = vk::AttachmentLoadOp::DONT_CARE;
                    let aspect_mask = vk::ImageAspectFlags::COLOR;
                    out.push(vk::ClearAttachment {
                        aspect_mask,
                        color_attachment: slot as u32,
                        clear_value: c.clear_value,
                    });
                }
            }
            for (a, aspect_mask) in [(depth, vk::ImageAspectFlags::DEPTH), (stencil, vk::ImageAspectFlags::STENCIL)] {
                if let Some(a) = a.as_mut().filter(|a| a.image_view != vk::ImageView::null() && cleared(a.load_op)) {
                    a.load_op = vk::AttachmentLoadOp::DONT_CARE;
                    out.push(vk::ClearAttachment { aspect_mask, color_attachment: 0, clear_value: a.clear_value });
                }
            }
        }
    }
    out
}

/// One region: its rectangle in framebuffer space and the row of its table
/// (pixel x0, y0, end x, y, cap x, y, 0, 0).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Region {
    pub(super) rect: Rect,
    pub(super) row: [u32; ROW as usize],
}

/// The regions of `render_area` over a grid of `texel`-pixel cells whose
/// origin is `shift` (a view's density offset: cell `k` covers pixels
/// `shift + k * texel` on): up to `grid` per axis, each a block of whole
/// cells, its cap the largest area its start's alignment allows (at most
/// `max_area` per axis); where one ends the render area inside a fragment
/// of its cap, the rest is a region of its own (`whole_edges`). Which
/// texels a region's pixels fetch (clamped to the map, through each view's
/// offset) the plan shader works out.
pub(super) fn regions(
    render_area: Rect,
    texel: (u32, u32),
    shift: (i32, i32),
    max_area: (u32, u32),
    grid: u32,
    whole_edges: bool,
) -> Vec<Region> {
    // Per axis: (pixel start, pixel end, cap).
    let axis = |start: u32, len: u32, t: u32, shift: i32, max_area: u32| -> Vec<(u32, u32, u32)> {
        if len == 0 || t == 0 {
            return Vec::new();
        }
        let (start, end, t, shift) = (start as i64, start as i64 + len as i64, t as i64, shift as i64);
        let (first, last) = ((start - shift).div_euclid(t), (end - 1 - shift).div_euclid(t));
        let n = last - first + 1;
        let groups = n.min(grid.max(1) as i64);
        (0..groups)
            .flat_map(|g| {
                let (a, b) = (first + g * n / groups, first + (g + 1) * n / groups);
                let (x0, x1) = ((shift + a * t).max(start) as u32, (shift + b * t).min(end) as u32);
                // As a host plan's bins: whole fragments where the render area ends (any area below the cap is a
                // power of two that divides it too).
                whole_fragments(x0, x1, alignment(x0).min(max_area), end as u32, whole_edges)
            })
            .collect()
    };
    let columns = axis(render_area.x, render_area.w, texel.0, shift.0, max_area.0);
    let rows = axis(render_area.y, render_area.h, texel.1, shift.1, max_area.1);
    let mut out = Vec::new();
    for &(y0, y1, cy) in &rows {
        for &(x0, x1, cx) in &columns {
            out.push(Region {
                rect: Rect { x: x0, y: y0, w: x1 - x0, h: y1 - y0 },
                row: [x0, y0, x1, y1, cx, cy, 0, 0],
            });
        }
    }
    out
}

/// Why a pass with a dynamic or deferred map cannot be planned on the GPU,
/// if it cannot (its attachments `atts`, the map's layout, its view mask and
/// framebuffer layers).
pub(super) fn unsupported(
    f: &Fdm,
    atts: &[Option<Att>],
    map_layout: vk::ImageLayout,
    view_mask: u32,
    layers: u32,
) -> Option<Fallback> {
    if f.conditional.is_none() {
        return Some(Fallback::PlanWithoutConditionalRendering);
    }
    if layers > 1 && view_mask == 0 {
        return Some(Fallback::PlanLayered);
    }
    if map_layout != vk::ImageLayout::GENERAL && map_layout != vk::ImageLayout::TRANSFER_SRC_OPTIMAL {
        return Some(Fallback::PlanMapLayout(map_layout));
    }
    for a in atts.iter().flatten() {
        let ms = a.samples != vk::SampleCountFlags::TYPE_1;
        if ms && (a.load || a.store) && f.controls.without_msaa {
            return Some(Fallback::PlanMultisampled);
        }
        if a.store_stencil {
            return Some(Fallback::PlanStencilStore);
        }
        if (a.load || a.store) && !upscale_reads_view(a, view_mask != 0) {
            return Some(Fallback::PlanViewType(a.view_type));
        }
        let feats = f.format_features(a.format);
        // What loads is scaled down by blits, or by copies where multisampled (every sample kept).
        let scale = if ms {
            vk::FormatFeatureFlags::TRANSFER_SRC | vk::FormatFeatureFlags::TRANSFER_DST
        } else {
            vk::FormatFeatureFlags::BLIT_SRC | vk::FormatFeatureFlags::BLIT_DST
        };
        if a.load
            && (!feats.contains(scale)
                || !a.usage.contains(vk::ImageUsageFlags::TRANSFER_SRC | vk::ImageUsageFlags::TRANSFER_DST))
        {
            return Some(Fallback::PlanUnblittable(a.format));
        }
        if a.store && !upscale_draws(f, a) {
            return Some(Fallback::PlanUndrawable(a.format, a.samples));
        }
    }
    None
}

/// Per view index below the highest rendered one, what the plan reads of it.
#[derive(Clone, Copy)]
struct PlanView {
    /// Whether the pass renders it.
    rendered: bool,
    /// Its map layer: its own of a layered map, layer 0 of a single-layer one.
    layer: u32,
    /// Its density offset (given per layer).
    offset: (i32, i32),
}

/// The density map as the plan copies it: its image and layout, the mip level and first layer of the pass's view of
/// it, and that level's size in texels.
struct MapSource {
    image: vk::Image,
    layout: vk::ImageLayout,
    mip: u32,
    base_layer: u32,
    size: (u32, u32),
}

/// A pass the GPU plan covers, as [`eligible`] found it.
struct Eligible {
    atts: Vec<Option<Att>>,
    map: MapSource,
    /// The framebuffer's size and layers.
    extent: (u32, u32),
    fb_layers: u32,
    /// The views planned (the layers of a per-layer pass count as views).
    view_mask: u32,
    views: Vec<PlanView>,
    /// The views upscaled: view `v` is layer `v` of the attachment's view and of the scratch target.
    drawn: Vec<u32>,
    /// The attachments that store (those upscaled), by index.
    stored: Vec<usize>,
    render_area: Rect,
    /// A map texel's size in pixels.
    texel: (u32, u32),
    regions: Vec<Region>,
    /// The commands a replay records besides the pass's own: its state restored, and two.
    restored: usize,
    /// Replayed per group of regions under the plan's viewport masks ([`plan_masked`]).
    masked: bool,
    /// The candidate areas (bit `i`: `AREAS[i]`), and where the plan copies the areas its regions asked for.
    candidates: u32,
    asked: Option<super::asked::AskedWord>,
}

/// The pass as the GPU plan covers it, or why it cannot (`Err(why)`: it renders at 1x1): its attachments and map
/// ([`unsupported`], then the map's view and format), a render area that has regions, and commands that a replay
/// can record ([`check_commands`]).
fn eligible(f: &Fdm, pass: &Pass) -> Result<Eligible, Fallback> {
    let (atts, map_view, map_layout, extent, fb_layers, view_mask) = attachments(f, &pass.begin)?;
    // The layers of a per-layer pass are planned as views (the replays still begin the pass as the application did).
    let view_mask = pass.begin.planned_views(view_mask, fb_layers, f.controls.without_per_layer);
    let map_layout = super::layout(map_layout);
    if let Some(why) = unsupported(f, &atts, map_layout, view_mask, fb_layers) {
        return Err(why);
    }
    let (v, size) = super::map_readback::map_view(f, map_view)?;
    let (mip, base_layer) = (v.range.base_mip_level, v.range.base_array_layer);
    let map = MapSource { image: v.image, layout: map_layout, mip, base_layer, size };
    // Per view index below the highest rendered one: whether it is rendered, its map layer (its own of a layered
    // map, layer 0 of a single-layer one) and its density offset (given per layer), as for a host plan.
    let map_layers = v.range.layer_count.max(1);
    let view_count = 32 - view_mask.leading_zeros().min(31);
    let views: Vec<PlanView> = (0..view_count)
        .map(|i| {
            let rendered = view_mask == 0 || view_mask & (1 << i) != 0;
            let layer = if map_layers > 1 { i.min(map_layers - 1) } else { 0 };
            let o = if f.controls.without_offsets { None } else { pass.offsets.get(layer as usize) };
            PlanView { rendered, layer, offset: o.map_or((0, 0), |o| (o.x, o.y)) }
        })
        .collect();
    let shift = views.iter().find(|v| v.rendered).map_or((0, 0), |v| v.offset);
    let ra = pass.begin.area();
    let render_area =
        Rect { x: ra.offset.x.max(0) as u32, y: ra.offset.y.max(0) as u32, w: ra.extent.width, h: ra.extent.height };
    let (texel, cap) = f.texel_grid(extent, size);
    let restored = pass.state.commands().count() + 2;
    let (candidates, asked) = f.dynamic_areas.candidates(f, map.image);
    let masked = plan_masked(f, pass, view_mask, candidates);
    let grid = grid_for(pass.cmds.len() + restored, candidates.count_ones() as usize, masked);
    let regions = regions(render_area, texel, shift, cap, grid, !f.controls.without_edge_fragments);
    if regions.is_empty() {
        return Err(Fallback::EmptyRenderArea);
    }
    check_commands(f, pass)?;
    let drawn = (0..view_count).filter(|&v| views[v as usize].rendered).collect();
    let stored = atts.iter().enumerate().filter(|(_, a)| a.as_ref().is_some_and(|a| a.store)).map(|(i, _)| i).collect();
    Ok(Eligible {
        atts,
        map,
        extent,
        fb_layers,
        view_mask,
        views,
        drawn,
        stored,
        render_area,
        texel,
        regions,
        restored,
        masked,
        candidates,
        asked,
    })
}

/// Whether the pass's replays can take the plan's viewport masks (design E,
/// `viewport_mask.rs`): they run, the pass has one view, every graphics
/// pipeline it binds has its plan partner at every candidate area, and
/// nothing it records binds the layer's vertex binding, sets viewports or
/// scissors with a count, or binds shader objects.
fn plan_masked(f: &Fdm, pass: &Pass, view_mask: u32, candidates: u32) -> bool {
    let areas: Vec<(u32, u32)> = (0..AREAS.len()).filter(|&ai| candidate(candidates, ai)).map(|ai| AREAS[ai]).collect();
    view_mask == 0 && super::viewport_mask::covers(f, pass, &areas)
}

/// Whether a replay can record the pass's commands; `Err(why)` for a pipeline without the per-area variants (or
/// shader objects without theirs), input attachments or several subpasses.
fn check_commands(f: &Fdm, pass: &Pass) -> Result<(), Fallback> {
    // Every area's pipeline variants and shader objects, as for a host plan.
    {
        let pipelines = f.pipelines.lock();
        for c in pass.state.commands().chain(&pass.cmds) {
            let Cmd::BindPipeline(vk::PipelineBindPoint::GRAPHICS, p) = c else { continue };
            let Some(info) = pipelines.get(p).filter(|i| i.needs_variants) else { continue };
            if AREAS.iter().any(|a| !info.variants.contains_key(a)) {
                return Err(Fallback::PipelineVariants);
            }
        }
    }
    let bound = pass.state.commands().chain(&pass.cmds).filter_map(|c| match c {
        Cmd::BindShaders(b) => Some(b),
        _ => None,
    });
    if let Some(why) = super::shader_objects::check(f, bound.flat_map(|b| b.iter()), &AREAS) {
        return Err(Fallback::ShaderObject(why));
    }
    // Input attachments would read scratch views through shadow sets: not in the GPU plan.
    let inputs = pass.state.commands().chain(&pass.cmds).any(|c| match c {
        Cmd::BindSets { sets, .. } => sets.iter().any(|s| f.sets.lock().get(s).is_some_and(|i| !i.inputs.is_empty())),
        _ => false,
    });
    if inputs {
        return Err(Fallback::PlanInputAttachments);
    }
    // Conditional rendering may not span a subpass change: one subpass only.
    if pass.has_several_subpasses() {
        return Err(Fallback::PlanSubpasses);
    }
    Ok(())
}

/// How step 2 records the pass per area: either each region replays the whole pass under its predicate, or (by
/// draw) the pass goes down once and each run of draws and clears once per region (scissor, predicate, the run):
/// whichever records fewer commands (a pass of few draws among much state: by draw).
fn by_draw(f: &Fdm, pass: &Pass, e: &Eligible) -> bool {
    let runs: Vec<usize> =
        pass.cmds.chunk_by(|a, b| a.writes() && b.writes()).filter(|r| r[0].writes()).map(<[Cmd]>::len).collect();
    let nreg = e.regions.len();
    let per_region = nreg * (e.restored + pass.cmds.len() + 2);
    let per_draw = e.restored + pass.cmds.len() + runs.iter().map(|k| nreg * (k + 3) + 1).sum::<usize>();
    per_draw < per_region && !f.controls.without_gpu_plan_by_draw
}

/// The pass's layout of its plan buffer, in 32-bit words (`Plan` of `fdm_plan.comp`): per region 9 predicates,
/// one per candidate area (region `r`'s of area `a` at `r * 9 + a`), from 0; the regions' choices per view at
/// `choices`; the region table ([`ROW`] words per region) at `table`; the region bounds for the upscale at `bounds`
/// (column x starts then the render area's end, row y starts then its end); [`VIEW_WORDS`] words per view index at
/// `views_at`; from `texels` each map layer a view reads, `layer_words` words each.
struct PlanLayout {
    /// Regions, and view indices.
    regions: u32,
    views: u32,
    choices: u32,
    table: u32,
    bounds: u32,
    views_at: u32,
    texels: u32,
    layer_words: u32,
    /// The map layers copied, once each: the `k`-th at `texels + k * layer_words`.
    layers: Vec<u32>,
    /// The upscale's columns and rows of regions, and their bounds (those written at `bounds`).
    columns: u32,
    rows: u32,
    xs: Vec<u32>,
    ys: Vec<u32>,
    /// The plan's viewport masks (design E), where the pass takes them (else 0): per candidate area (9) and group of
    /// [`VIEWPORTS`] regions (`groups`), the bits of the group's regions that chose the area.
    masks: u32,
    groups: u32,
    /// The word the regions or-s the areas they asked for into (before the candidates), from 0.
    asked: u32,
    /// The clear values the region clears' draws read ([`super::region_clears::clear_words`]).
    clears: u32,
    /// The buffer's size in bytes.
    size: u64,
}

impl PlanLayout {
    fn new(e: &Eligible) -> PlanLayout {
        // Region bounds for the upscale: column x starts then the end, row y starts then the end.
        let (mut xs, mut ys): (Vec<u32>, Vec<u32>) = (Vec::new(), Vec::new());
        for r in &e.regions {
            if !xs.contains(&r.rect.x) {
                xs.push(r.rect.x);
            }
            if !ys.contains(&r.rect.y) {
                ys.push(r.rect.y);
            }
        }
        let (columns, rows) = (xs.len() as u32, ys.len() as u32);
        xs.push(e.render_area.x + e.render_area.w);
        ys.push(e.render_area.y + e.render_area.h);
        let (regions, views) = (e.regions.len() as u32, e.views.len() as u32);
        let choices = 9 * regions;
        let table = choices + views * regions;
        let bounds = table + ROW * regions;
        let views_at = bounds + columns + rows + 2;
        let texels = views_at + VIEW_WORDS * views;
        // Each map layer a view reads, once, at `texels + k * layer_words`.
        let layer_words = (e.map.size.0 * e.map.size.1).div_ceil(2);
        let mut layers: Vec<u32> = e.views.iter().filter(|v| v.rendered).map(|v| v.layer).collect();
        layers.sort_unstable();
        layers.dedup();
        let end = texels as u64 + layer_words as u64 * layers.len() as u64;
        let groups = regions.div_ceil(VIEWPORTS);
        let asked = end as u32;
        let masks = if e.masked { asked + 1 } else { 0 };
        let clears = asked + 1 + if e.masked { 9 * groups } else { 0 };
        let size = (clears + super::region_clears::CLEAR_WORDS) as u64 * 4;
        PlanLayout {
            regions,
            views,
            choices,
            table,
            bounds,
            views_at,
            texels,
            layer_words,
            layers,
            columns,
            rows,
            xs,
            ys,
            masks,
            groups,
            asked,
            clears,
            size,
        }
    }

    /// The words from `table` to `texels` (the region table, the bounds, the views), as bytes.
    fn table_bytes(&self, e: &Eligible) -> Vec<u8> {
        let mut words: Vec<u32> = Vec::with_capacity((self.texels - self.table) as usize);
        for r in &e.regions {
            words.extend_from_slice(&r.row);
        }
        words.extend(&self.xs);
        words.extend(&self.ys);
        for v in &e.views {
            let k = self.layers.iter().position(|&l| l == v.layer).unwrap_or(0) as u32;
            words.extend([v.offset.0 as u32, v.offset.1 as u32, self.texels + k * self.layer_words, v.rendered as u32]);
        }
        words.iter().flat_map(|w| w.to_le_bytes()).collect()
    }

    /// The copies of the map's layers into the buffer.
    fn map_copies(&self, map: &MapSource) -> Vec<vk::BufferImageCopy> {
        self.layers
            .iter()
            .enumerate()
            .map(|(k, &layer)| {
                vk::BufferImageCopy::default()
                    .buffer_offset((self.texels + k as u32 * self.layer_words) as u64 * 4)
                    .image_subresource(vk::ImageSubresourceLayers {
                        aspect_mask: vk::ImageAspectFlags::COLOR,
                        mip_level: map.mip,
                        base_array_layer: map.base_layer + layer,
                        layer_count: 1,
                    })
                    .image_extent(vk::Extent3D { width: map.size.0, height: map.size.1, depth: 1 })
            })
            .collect()
    }
}

/// What the pass's recording uses of the GPU plan's objects: the pass's own ([`make_objects`]) and the shared
/// pipelines and layouts.
#[derive(Default)]
struct PassObjects {
    /// The pool of the pass's sets; its entry of [`Objects::owned`] holds the rest the pass made.
    pool: vk::DescriptorPool,
    plan_set: vk::DescriptorSet,
    /// The plan buffer.
    buffer: vk::Buffer,
    /// Per stored attachment its upscale, its sets (one per area) and its framebuffers (one per drawn view, those
    /// of attachment `k` from `k * drawn`).
    up: Vec<Upscale>,
    up_sets: Vec<Vec<vk::DescriptorSet>>,
    /// Per stored attachment written by the compute upscale (a storage
    /// image: [`Att::storage`]) its sets, per drawn view one per area.
    cs_sets: Vec<Option<Vec<vk::DescriptorSet>>>,
    cs_pipeline: vk::Pipeline,
    cs_layout: vk::PipelineLayout,
    framebuffers: Vec<vk::Framebuffer>,
    plan_pipeline: vk::Pipeline,
    plan_layout: vk::PipelineLayout,
    up_layout: vk::PipelineLayout,
}

/// Makes the pass's objects (the shared pipelines first, where not yet made): its plan buffer of `size` bytes, a
/// descriptor pool with the plan's set and per stored attachment a set per area, and per stored attachment and
/// drawn view an upscale framebuffer; they stay in `f`'s table under the pool. On failure nothing made here is
/// left.
///
/// # Safety
/// `d` is `f`'s device; the pass's attachment views and `targets` are alive (the capture rule).
unsafe fn make_objects(
    f: &Fdm,
    d: &ash::Device,
    e: &Eligible,
    targets: &[Option<Targets>],
    size: u64,
) -> Result<PassObjects, Fallback> {
    let mut o = f.gpu_plan.lock();
    let mut owned = Owned::new(size);
    let mut made = PassObjects::default();
    // SAFETY: the caller's guarantee; `o` is `f`'s table.
    if let Err(err) = unsafe { try_make_objects(f, d, &mut o, e, targets, &mut owned, &mut made) } {
        // SAFETY: the objects just made by the layer, never used.
        unsafe {
            destroy_owned(d, owned);
            d.destroy_descriptor_pool(made.pool, None);
        }
        return Err(Fallback::PlanObjects(err));
    }
    (made.plan_pipeline, made.plan_layout, made.up_layout) = (o.plan_pipeline, o.plan_layout, o.up_layout);
    made.cs_layout = o.cs_layout;
    (made.buffer, made.framebuffers) = (owned.buffer, owned.framebuffers.clone());
    o.owned.insert(made.pool, owned);
    Ok(made)
}

/// [`make_objects`]' work, into `owned` and `made` as it goes (the caller destroys them on failure).
///
/// # Safety
/// As [`make_objects`]; `o` is `f`'s table.
unsafe fn try_make_objects(
    f: &Fdm,
    d: &ash::Device,
    o: &mut Objects,
    e: &Eligible,
    targets: &[Option<Targets>],
    owned: &mut Owned,
    made: &mut PassObjects,
) -> Result<(), vk::Result> {
    // SAFETY: the caller's guarantee; create infos built here from locals and the layer's own objects.
    unsafe {
        make_common(d, o)?;
        for &i in &e.stored {
            let a = e.atts[i].as_ref().unwrap();
            let layered = a.view_type == vk::ImageViewType::TYPE_2D_ARRAY;
            made.up.push(upscale_pipeline(d, o, a.format, layered, a.samples)?);
        }
        take_buffer(f, o, owned)?;
        // Per stored attachment a set per area (the draws'), and per drawn view one per area (the dispatches').
        let n = e.stored.len() as u32 * AREAS.len() as u32;
        let m = n * e.drawn.len() as u32;
        let sizes = [
            vk::DescriptorPoolSize { ty: vk::DescriptorType::STORAGE_BUFFER, descriptor_count: 1 + n + m },
            vk::DescriptorPoolSize { ty: vk::DescriptorType::COMBINED_IMAGE_SAMPLER, descriptor_count: (n + m).max(1) },
            vk::DescriptorPoolSize { ty: vk::DescriptorType::STORAGE_IMAGE, descriptor_count: m.max(1) },
        ];
        made.pool = d.create_descriptor_pool(
            &vk::DescriptorPoolCreateInfo::default().max_sets(1 + n + m).pool_sizes(&sizes),
            None,
        )?;
        made.plan_set = allocate_sets(d, made.pool, o.plan_set_layout, 1)?[0];
        let bi = [vk::DescriptorBufferInfo { buffer: owned.buffer, offset: 0, range: vk::WHOLE_SIZE }];
        d.update_descriptor_sets(&[storage_write(made.plan_set, 0, &bi)], &[]);
        for (k, &i) in e.stored.iter().enumerate() {
            upscale_framebuffers(d, e, i, made.up[k].render_pass, owned)?;
            let sets = upscale_sets(d, o.up_set_layout, made.pool, (e, i, targets), owned)?;
            made.up_sets.push(sets);
            let a = e.atts[i].as_ref().unwrap();
            made.cs_sets.push(if a.storage {
                made.cs_pipeline = composite_pipeline(d, o, a.view_type == vk::ImageViewType::TYPE_2D_ARRAY, true)?;
                Some(compute_sets(d, o.cs_set_layout, (made.pool, &bi), (e, i, targets), owned)?)
            } else {
                None
            });
        }
    }
    Ok(())
}

/// The compute upscale's sets of stored attachment `i` (a storage image),
/// per drawn view one per area (from `pool`, of `set_layout`): the area's
/// scratch target, a 2D view of the view's layer of the attachment (the
/// attachment's own view where it is one), the plan buffer `bi`; those of
/// an area without targets are left unwritten.
///
/// # Safety
/// As [`upscale_sets`].
unsafe fn compute_sets(
    d: &ash::Device,
    set_layout: vk::DescriptorSetLayout,
    (pool, bi): (vk::DescriptorPool, &[vk::DescriptorBufferInfo]),
    (e, i, targets): (&Eligible, usize, &[Option<Targets>]),
    owned: &mut Owned,
) -> Result<Vec<vk::DescriptorSet>, vk::Result> {
    let a = e.atts[i].as_ref().unwrap();
    // SAFETY: the layer's own pool and layout (the caller's guarantee).
    let sets = unsafe { allocate_sets(d, pool, set_layout, AREAS.len() * e.drawn.len()) }?;
    for (j, &layer) in e.drawn.iter().enumerate() {
        let storage = if e.view_mask == 0 && a.plain {
            a.view
        } else {
            // SAFETY: the attachment's image (alive: the caller's guarantee).
            unsafe { owned.layer_view(d, a, layer) }?
        };
        for (ai, t) in targets.iter().enumerate() {
            let Some(t) = t else { continue };
            let scratch = t.views[i].ok_or(vk::Result::ERROR_UNKNOWN)?;
            // SAFETY: a set just allocated, live views and the plan buffer (the caller's guarantee).
            unsafe { write_composite_set(d, sets[j * AREAS.len() + ai], (scratch, storage), bi) };
        }
    }
    Ok(sets)
}

/// The upscale's framebuffers of stored attachment `i`, one per drawn view, into `owned`: over the attachment's view
/// itself, or per view of a multiview pass over a view (made here) of its layer.
///
/// # Safety
/// `d` is the device of `render_pass` and of the pass's attachments, which are alive (the capture rule).
unsafe fn upscale_framebuffers(
    d: &ash::Device,
    e: &Eligible,
    i: usize,
    render_pass: vk::RenderPass,
    owned: &mut Owned,
) -> Result<(), vk::Result> {
    let a = e.atts[i].as_ref().unwrap();
    for &layer in &e.drawn {
        let view = if e.view_mask == 0 {
            a.view
        } else {
            // SAFETY: the caller's guarantee.
            unsafe { owned.layer_view(d, a, layer) }?
        };
        let views = [view];
        let info = vk::FramebufferCreateInfo::default()
            .render_pass(render_pass)
            .attachments(&views)
            .width(e.extent.0)
            .height(e.extent.1)
            .layers(1);
        // SAFETY: a create info built here from the layer's render pass and a live view (the caller's guarantee).
        owned.framebuffers.push(unsafe { d.create_framebuffer(&info, None) }?);
    }
    Ok(())
}

/// The upscale's sets of stored attachment `i`, one per area (from `pool`, of `set_layout`): the area's scratch
/// target (a depth/stencil one through a view of its depth aspect, made here into `owned`) and the plan buffer;
/// the set of an area without targets (not a candidate) is left unwritten.
///
/// # Safety
/// `d` is the device of `set_layout`, `pool`, `targets` and `owned`'s buffer; `targets` are alive.
unsafe fn upscale_sets(
    d: &ash::Device,
    set_layout: vk::DescriptorSetLayout,
    pool: vk::DescriptorPool,
    (e, i, targets): (&Eligible, usize, &[Option<Targets>]),
    owned: &mut Owned,
) -> Result<Vec<vk::DescriptorSet>, vk::Result> {
    let a = e.atts[i].as_ref().unwrap();
    // SAFETY: the layer's own pool and layout (the caller's guarantee).
    let sets = unsafe { allocate_sets(d, pool, set_layout, AREAS.len()) }?;
    let bi = [vk::DescriptorBufferInfo { buffer: owned.buffer, offset: 0, range: vk::WHOLE_SIZE }];
    let depth = a.range.aspect_mask != vk::ImageAspectFlags::COLOR;
    for (set, t) in sets.iter().zip(targets) {
        let Some(t) = t else { continue };
        // A depth/stencil scratch target is sampled through a view of its depth aspect.
        let image_view = if depth {
            // SAFETY: the scratch target's image (alive: the caller's guarantee).
            unsafe { owned.depth_view(d, a, t.images[i].unwrap()) }?
        } else {
            t.views[i].unwrap()
        };
        // SAFETY: a set just allocated, a live view and the plan buffer (the caller's guarantee).
        unsafe { write_upscale_set(d, *set, image_view, depth, &bi) };
    }
    Ok(sets)
}

/// The attachments present, with their indices.
fn present(atts: &[Option<Att>]) -> impl Iterator<Item = (usize, &Att)> {
    atts.iter().enumerate().filter_map(|(i, a)| Some((i, a.as_ref()?)))
}

/// The recording of a planned pass at its end, into `cb`: what the steps of the module doc share.
struct Recording<'a> {
    f: &'a Fdm,
    d: &'a ash::Device,
    cb: vk::CommandBuffer,
    pass: &'a Pass,
    e: &'a Eligible,
    layout: &'a PlanLayout,
    objects: &'a PassObjects,
    /// The render area.
    all: vk::Rect2D,
    /// Each attachment's layout at this point of the recording.
    cur: Vec<vk::ImageLayout>,
    /// Area 1x1's instance renders into the attachments themselves, not a scratch target ([`direct`]): it has no
    /// downscale and no upscale.
    direct: bool,
    /// The pass's begin as its instances begin (clearing nothing: [`unclearing`]) and what it would have cleared
    /// (the regions' clears, their values in the plan buffer).
    unclear: Begin,
    clears: Vec<vk::ClearAttachment>,
    /// Nanoseconds spent recording step 2's downscales, region clears and replays (the debug timing line; measured
    /// only where it is logged).
    timed: bool,
    spent: std::cell::Cell<[u128; 3]>,
    /// The areas whose region clears were one draw (the debug line).
    clear_draws: std::cell::Cell<u32>,
}

impl Recording<'_> {
    /// A transition of attachment `i` itself.
    fn real(&self, i: usize, old: vk::ImageLayout, new: vk::ImageLayout) -> Transition {
        let a = self.e.atts[i].as_ref().unwrap();
        Transition { image: a.image, range: a.range, old, new }
    }

    /// A transition of attachment `i`'s scratch target in `t`.
    fn scratch(&self, t: &Targets, i: usize, old: vk::ImageLayout, new: vk::ImageLayout) -> Transition {
        let a = self.e.atts[i].as_ref().unwrap();
        let range = vk::ImageSubresourceRange { base_mip_level: 0, base_array_layer: 0, ..a.range };
        Transition { image: t.images[i].unwrap(), range, old, new }
    }

    /// Step 1, the plan: everything before (the map's writers included) done, the region table written and the map
    /// copied into the plan buffer, the regions' areas chosen (`fdm_plan.comp`); the application's compute pipeline
    /// and sets put back.
    ///
    /// # Safety
    /// `cb` is recording at the end of the captured pass, outside a render pass; the pass's objects are alive (the
    /// capture rule).
    unsafe fn plan(&self) {
        let (f, d, cb, e, l, o) = (self.f, self.d, self.cb, self.e, self.layout, self.objects);
        let table_bytes = l.table_bytes(e);
        let (mw, mh) = e.map.size;
        let flags = f.controls.one_area_per_pass as u32 | e.candidates << 1;
        let pc: Vec<u8> =
            [mw, mh, l.regions, l.choices, l.table, l.views_at, l.views, flags, e.texel.0, e.texel.1, l.masks, l.asked]
                .iter()
                .flat_map(|w| w.to_le_bytes())
                .collect();
        // SAFETY: the caller's guarantee; the buffer, map, pipeline and set are the layer's own or the pass's.
        unsafe {
            // Everything before (the map's writers, whatever their stages) before the plan's transfers.
            barrier_between(f, cb, &[], Side::EVERYTHING, sync::transfers());
            // At most 65536 bytes per update (the table of 8x8 regions and 32 views is far below).
            for (k, chunk) in table_bytes.chunks(65536).enumerate() {
                d.cmd_update_buffer(cb, o.buffer, l.table as u64 * 4 + k as u64 * 65536, chunk);
            }
            d.cmd_copy_image_to_buffer(cb, e.map.image, e.map.layout, o.buffer, &l.map_copies(&e.map));
            // The asked areas and the masks are or-ed in by the regions: from 0.
            d.cmd_fill_buffer(cb, o.buffer, l.asked as u64 * 4, (l.clears - l.asked) as u64 * 4, 0);
            if !self.clears.is_empty() {
                let words = super::region_clears::clear_words(&self.clears);
                let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
                d.cmd_update_buffer(cb, o.buffer, l.clears as u64 * 4, &bytes);
            }
            let shader = if f.controls.without_plan_barrier { sync::transfers() } else { sync::plan_shader() };
            barrier_between(f, cb, &[], sync::transfers(), shader);
            d.cmd_bind_pipeline(cb, vk::PipelineBindPoint::COMPUTE, o.plan_pipeline);
            d.cmd_bind_descriptor_sets(cb, vk::PipelineBindPoint::COMPUTE, o.plan_layout, 0, &[o.plan_set], &[]);
            d.cmd_push_constants(cb, o.plan_layout, vk::ShaderStageFlags::COMPUTE, 0, &pc);
            // A workgroup per region.
            d.cmd_dispatch(cb, l.regions, 1, 1);
            // The application's compute pipeline and sets as it left them (its push constants go back with the
            // graphics state at the end of the pass).
            if !f.controls.without_compute_restore {
                restore_compute(f, cb, &self.pass.state);
            }
        }
    }

    /// Now, where the recording is timed ([`Recording::timed`]).
    fn clock(&self) -> Option<std::time::Instant> {
        self.timed.then(std::time::Instant::now)
    }

    /// Adds the time since `from` to the `k`th of [`Recording::spent`].
    fn add_spent(&self, k: usize, from: Option<std::time::Instant>) {
        if let Some(from) = from {
            let mut spent = self.spent.get();
            spent[k] += from.elapsed().as_nanos();
            self.spent.set(spent);
        }
    }

    /// Step 2's downscales, every candidate area's before any area renders (`targets`, per area): after the plan
    /// shader (the barrier that gives the plan to its readers), the copy of the areas asked, then what loads, by
    /// blits (unconditional: they write only that area's scratch targets) or, multisampled, copies (every sample
    /// kept); then every scratch target whose attachment has an initial layout in it. The areas' render pass
    /// instances then follow one another with no barrier between (each writes its own scratch targets).
    ///
    /// # Safety
    /// As [`Recording::plan`], after it; `targets` are claimed for `cb`.
    unsafe fn downscales(&mut self, targets: &[Option<Targets>]) {
        let started = self.clock();
        let (f, cb, e, l, o) = (self.f, self.cb, self.e, self.layout, self.objects);
        let areas = self.scratch_areas(targets);
        let mut t1 = Vec::new();
        for (i, _) in present(&e.atts).filter(|(_, a)| a.load) {
            if areas.is_empty() {
                break;
            }
            t1.push(self.real(i, self.cur[i], vk::ImageLayout::TRANSFER_SRC_OPTIMAL));
            self.cur[i] = vk::ImageLayout::TRANSFER_SRC_OPTIMAL;
            for (_, t) in &areas {
                t1.push(self.scratch(t, i, vk::ImageLayout::UNDEFINED, vk::ImageLayout::TRANSFER_DST_OPTIMAL));
            }
        }
        // SAFETY: the caller's guarantee; the layouts are tracked in `cur`.
        unsafe {
            barrier_between(f, cb, &t1, sync::plan_written(), sync::plan_readers());
            if let Some(w) = e.asked {
                // The areas asked, for passes recorded later with this map (`fdm_dynamic_areas=asked`); the pass's
                // final barrier makes them visible to the host ([`Recording::finish`]).
                let copy = [vk::BufferCopy { src_offset: l.asked as u64 * 4, dst_offset: w.offset, size: 4 }];
                self.d.cmd_copy_buffer(cb, o.buffer, w.buffer, &copy);
            }
            for (ai, t) in &areas {
                let area = AREAS[*ai];
                for (i, a) in present(&e.atts).filter(|(_, a)| a.load) {
                    let pairs: Vec<(Rect, Rect)> =
                        e.regions.iter().flat_map(|r| scaled_regions(r.rect, area)).collect();
                    match t.mids[i] {
                        // Multisampled: copies through the intermediate image, every sample kept.
                        Some(mid) => {
                            copy_scaled(f, cb, a.image, t.images[i].unwrap(), mid, a, &pairs, area, false, None)
                        }
                        None => blit(f, cb, (a.image, a), (t.images[i].unwrap(), a), &pairs, false, true, None),
                    }
                }
            }
            let mut t2 = Vec::new();
            for (i, a) in present(&e.atts).filter(|(_, a)| a.initial != vk::ImageLayout::UNDEFINED) {
                let old = if a.load { vk::ImageLayout::TRANSFER_DST_OPTIMAL } else { vk::ImageLayout::UNDEFINED };
                for (_, t) in &areas {
                    t2.push(self.scratch(t, i, old, a.initial));
                }
                // Area 1x1's instance begins the pass on the attachment itself, as the application did.
                if self.direct && self.cur[i] != a.initial {
                    t2.push(self.real(i, self.cur[i], a.initial));
                    self.cur[i] = a.initial;
                }
            }
            barrier_between(f, cb, &t2, sync::transferred(), sync::rendering());
        }
        self.add_spent(0, started);
    }

    /// Step 2's render pass instance into the scratch targets `t` of area `ai`: each region that may choose the
    /// area (its cap allows it) replays under `vkCmdBeginConditionalRenderingEXT` on its predicate, skipped where it
    /// chose another; by draw ([`by_draw`]) or the whole pass per region.
    ///
    /// # Safety
    /// As [`Recording::plan`], after [`Recording::downscales`]; `t` is claimed for `cb`.
    unsafe fn replays(&self, ai: usize, t: &Targets, by_draw: bool) {
        let (f, cb, pass, e) = (self.f, self.cb, self.pass, self.e);
        let area = AREAS[ai];
        // `unsupported` turned away a device without conditional rendering.
        let cond = f.conditional.as_ref().unwrap();
        let tr_all = Transform { area, clip: Some(e.render_area), inputs: None, views: None, mask: MaskFrom::None };
        // The instance spans the render area (the regions are chosen on the GPU), but clears only the regions that
        // render at this area (clearing the whole area at every candidate area cost three full-resolution writes a
        // pass).
        let (mut begin, clears) = (self.unclear.clone(), &self.clears);
        if !self.in_place(ai) {
            retarget(&mut begin, tr_all.rect(&self.all), t.framebuffer, &t.views);
        }
        let candidates: Vec<(usize, Transform)> = e
            .regions
            .iter()
            .enumerate()
            .filter(|(_, r)| area.0 <= r.row[4] && area.1 <= r.row[5])
            .map(|(ri, r)| {
                (ri, Transform { area, clip: Some(r.rect), inputs: None, views: None, mask: MaskFrom::None })
            })
            .collect();
        let predicate = |ri: usize| {
            vk::ConditionalRenderingBeginInfoEXT::default()
                .buffer(self.objects.buffer)
                .offset(((ri as u32 * 9 + ai as u32) * 4) as u64)
        };
        // SAFETY: the caller's guarantee; the predicates lie in the plan buffer, made for conditional rendering
        // (`take_buffer`).
        unsafe {
            let started = self.clock();
            begin_real(f, cb, &begin);
            let cleared = clears.is_empty() || f.controls.without_region_clears;
            if !cleared && (f.controls.without_clear_draws || !self.clear_draw(ai, clears)) {
                for (ri, tr) in &candidates {
                    let rect = [vk::ClearRect { rect: tr.rect(&self.all), base_array_layer: 0, layer_count: 1 }];
                    if rect[0].rect.extent.width == 0 || rect[0].rect.extent.height == 0 {
                        continue;
                    }
                    (cond.cmd_begin_conditional_rendering_ext)(cb, &predicate(*ri));
                    self.d.cmd_clear_attachments(cb, clears, &rect);
                    (cond.cmd_end_conditional_rendering_ext)(cb);
                }
            }
            self.add_spent(1, started);
            let started = self.clock();
            if e.masked {
                self.masked_replays(ai, &candidates);
            } else if by_draw {
                // The pass once, its state commands as they come; each run of draws and clears once per region
                // that may choose this area (its cap allows it), under its predicate, scissors clipped to it.
                let mut st = pass.state.clone();
                restore(f, cb, &pass.state, &tr_all);
                for run in pass.cmds.chunk_by(|a, b| a.writes() && b.writes()) {
                    if !run[0].writes() {
                        run.iter().for_each(|c| emit(f, cb, c, &tr_all, &mut st));
                        continue;
                    }
                    for (ri, tr) in &candidates {
                        emit_scissors(f, cb, tr, &st);
                        (cond.cmd_begin_conditional_rendering_ext)(cb, &predicate(*ri));
                        run.iter().for_each(|c| emit(f, cb, c, tr, &mut st));
                        (cond.cmd_end_conditional_rendering_ext)(cb);
                    }
                    emit_scissors(f, cb, &tr_all, &st);
                }
            } else {
                // Per region that may choose this area, the whole pass under its predicate.
                for (ri, tr) in &candidates {
                    (cond.cmd_begin_conditional_rendering_ext)(cb, &predicate(*ri));
                    replay_cmds(f, cb, pass, tr);
                    (cond.cmd_end_conditional_rendering_ext)(cb);
                }
            }
            end_real(f, cb, &begin);
            self.add_spent(2, started);
        }
    }

    /// Step 2's region clears of area `ai` as one instanced draw (`region_clears.rs`): true where drawn, false
    /// where the pass needs the clears under predicates (nothing recorded then).
    ///
    /// # Safety
    /// As [`Recording::replays`], inside the area's render pass instance, before its replays (which bind the
    /// application's state again).
    unsafe fn clear_draw(&self, ai: usize, clears: &[vk::ClearAttachment]) -> bool {
        let (d, cb, l, e) = (self.d, self.cb, self.layout, self.e);
        let Begin::RenderPass { render_pass, .. } = &self.pass.begin else { return false };
        let Some(&set) = self.objects.up_sets.first().and_then(|s| s.get(ai)) else { return false };
        // SAFETY: the caller's guarantee; `d` is the device the table's objects are made on.
        let Some(pipeline) =
            (unsafe { super::region_clears::pipeline(self.f, d, &mut self.f.gpu_plan.lock(), *render_pass, clears) })
        else {
            return false;
        };
        let area = AREAS[ai];
        let extent = scratch_extent(e.extent, area);
        let viewport =
            vk::Viewport { width: extent[0] as f32, height: extent[1] as f32, max_depth: 1.0, ..Default::default() };
        let tr = Transform { area, clip: Some(e.render_area), inputs: None, views: None, mask: MaskFrom::None };
        let pc = [area.0, area.1, extent[0], extent[1], ai as u32, l.columns, l.rows, l.bounds, l.clears];
        let bytes: Vec<u8> = pc.iter().flat_map(|w| w.to_le_bytes()).collect();
        let stages = vk::ShaderStageFlags::VERTEX | vk::ShaderStageFlags::FRAGMENT;
        // SAFETY: the caller's guarantee; the pipeline, layout and set are the layer's own, the set's buffer the
        // plan's (its predicates, bounds and clear values written before this by the plan step).
        unsafe {
            d.cmd_bind_pipeline(cb, vk::PipelineBindPoint::GRAPHICS, pipeline);
            d.cmd_bind_descriptor_sets(cb, vk::PipelineBindPoint::GRAPHICS, self.objects.up_layout, 0, &[set], &[]);
            d.cmd_push_constants(cb, self.objects.up_layout, stages, 0, &bytes);
            d.cmd_set_viewport(cb, 0, &[viewport]);
            d.cmd_set_scissor(cb, 0, &[tr.rect(&self.all)]);
            if let Some(s) = super::region_clears::stencil(clears) {
                d.cmd_set_stencil_reference(cb, vk::StencilFaceFlags::FRONT_AND_BACK, s);
            }
            d.cmd_draw(cb, 6, l.regions, 0, 0);
        }
        self.clear_draws.set(self.clear_draws.get() + 1);
        true
    }

    /// Step 2's replays of area `ai` under the plan's viewport masks (design E): per group of [`VIEWPORTS`]
    /// regions with a candidate among them (`candidates`), the whole pass once under the group's mask word as its
    /// predicate (nonzero: some region of the group chose the area), that word bound at the layer's vertex binding
    /// for the plan partners' vertex stages, scissor `k` region `16g + k` (empty for the regions not candidates).
    ///
    /// # Safety
    /// As [`Recording::replays`], inside the area's render pass instance.
    unsafe fn masked_replays(&self, ai: usize, candidates: &[(usize, Transform)]) {
        let (f, cb, pass, l) = (self.f, self.cb, self.pass, self.layout);
        // `plan_masked` found the plan masks running, the conditional rendering too (`unsupported`).
        let (Some(masks), Some(cond)) = (f.masks.as_ref(), f.conditional.as_ref()) else {
            return;
        };
        for g in 0..l.groups {
            let views: Vec<Option<Rect>> = (0..VIEWPORTS)
                .map(|k| (g * VIEWPORTS + k) as usize)
                .map(|ri| candidates.iter().find(|(r, _)| *r == ri).and_then(|(_, t)| t.clip))
                .collect();
            let Some(bbox) = views.iter().flatten().copied().reduce(|a, b| a.union(&b)) else { continue };
            let tr = Transform {
                area: AREAS[ai],
                clip: Some(bbox),
                inputs: None,
                views: Some(&views),
                mask: MaskFrom::Binding,
            };
            let word = (l.masks + ai as u32 * l.groups + g) as u64 * 4;
            let predicate = vk::ConditionalRenderingBeginInfoEXT::default().buffer(self.objects.buffer).offset(word);
            // SAFETY: the caller's guarantee; the word lies in the plan buffer, made for conditional rendering and
            // vertex input (`take_buffer`), written by the plan shader before this (the plan's barrier).
            unsafe {
                (cond.cmd_begin_conditional_rendering_ext)(cb, &predicate);
                self.d.cmd_bind_vertex_buffers(cb, masks.binding, &[self.objects.buffer], &[word]);
                replay_cmds(f, cb, pass, &tr);
                (cond.cmd_end_conditional_rendering_ext)(cb);
            }
        }
    }

    /// Step 3, the upscale of each stored attachment (the scratch targets `targets`, per area): per view drawn, per area
    /// an instanced draw of the regions' quads, each region drawn only by the area it chose, from that area's
    /// scratch target.
    ///
    /// # Safety
    /// As [`Recording::plan`]; `targets` are claimed for `cb`.
    unsafe fn upscale(&mut self, targets: &[Option<Targets>]) {
        let e = self.e;
        let mut t3 = Vec::new();
        for (k, &i) in e.stored.iter().enumerate() {
            let a = e.atts[i].as_ref().unwrap();
            let (read, mut write) = upscale_layout(a.range.aspect_mask != vk::ImageAspectFlags::COLOR);
            if self.objects.cs_sets[k].is_some() {
                write = vk::ImageLayout::GENERAL;
            }
            for (_, t) in self.scratch_areas(targets) {
                t3.push(self.scratch(t, i, a.final_, read));
            }
            t3.push(self.real(i, self.cur[i], write));
            self.cur[i] = write;
        }
        // SAFETY: the caller's guarantee; the layouts are tracked in `cur`.
        unsafe { barrier_between(self.f, self.cb, &t3, sync::rendered(), sync::upscaling()) };
        let mut dispatched = false;
        let upscales = if self.f.controls.without_full_resolution_write { &[][..] } else { &self.objects.up[..] };
        for (k, u) in upscales.iter().enumerate() {
            if let Some(sets) = &self.objects.cs_sets[k] {
                // SAFETY: the caller's guarantee.
                unsafe { self.dispatch_upscale(sets) };
                dispatched = true;
                continue;
            }
            for (j, &view) in e.drawn.iter().enumerate() {
                let framebuffer = self.objects.framebuffers[k * e.drawn.len() + j];
                // SAFETY: the caller's guarantee.
                unsafe { self.upscale_view(k, u, framebuffer, view) };
            }
        }
        if dispatched && !self.f.controls.without_compute_restore {
            // The application's compute pipeline and sets as the pass left them.
            // SAFETY: the caller's guarantee (the capture rule).
            unsafe { restore_compute(self.f, self.cb, &self.pass.state.after(self.f, &self.pass.cmds)) };
        }
    }

    /// Step 3 in the composite's compute shader (`PLAN`) for an attachment
    /// whose `sets` (per drawn view, one per area) name it as a storage
    /// image: per view and area one dispatch whose workgroup z is a region;
    /// those of the regions that chose another area return at once.
    ///
    /// # Safety
    /// As [`Recording::upscale`], after its barrier.
    unsafe fn dispatch_upscale(&self, sets: &[vk::DescriptorSet]) {
        let (d, cb, e, l, o) = (self.d, self.cb, self.e, self.layout, self.objects);
        let widest = e.regions.iter().map(|r| r.rect.w).max().unwrap_or(0);
        let tallest = e.regions.iter().map(|r| r.rect.h).max().unwrap_or(0);
        // SAFETY: the caller's guarantee; the pipeline, layout and sets are the layer's own.
        unsafe {
            d.cmd_bind_pipeline(cb, vk::PipelineBindPoint::COMPUTE, o.cs_pipeline);
            for (j, &view) in e.drawn.iter().enumerate() {
                for (ai, area) in AREAS.iter().enumerate().filter(|(ai, _)| self.upscaled(*ai)) {
                    let set = sets[j * AREAS.len() + ai];
                    d.cmd_bind_descriptor_sets(cb, vk::PipelineBindPoint::COMPUTE, o.cs_layout, 0, &[set], &[]);
                    let (lx, ly) = (area.0.trailing_zeros(), area.1.trailing_zeros());
                    let pc = [lx, ly, ai as u32, view, l.columns, l.bounds, l.choices, l.regions, view];
                    let bytes: Vec<u8> = pc.iter().flat_map(|w| w.to_le_bytes()).collect();
                    d.cmd_push_constants(cb, o.cs_layout, vk::ShaderStageFlags::COMPUTE, 0, &bytes);
                    // A region's scratch texels (one more where its start is not aligned) in 8x8 tiles.
                    let (gx, gy) = (((widest >> lx) + 1).div_ceil(8), ((tallest >> ly) + 1).div_ceil(8));
                    d.cmd_dispatch(cb, gx, gy, l.regions);
                }
            }
        }
    }

    /// Step 3 for stored attachment `k` (its upscale `u`) in view `view`, through `framebuffer`: per sample of a
    /// multisampled attachment a pipeline writing that sample only, per area an instance per region.
    ///
    /// # Safety
    /// As [`Recording::upscale`].
    unsafe fn upscale_view(&self, k: usize, u: &Upscale, framebuffer: vk::Framebuffer, view: u32) {
        let (l, o, ra) = (self.layout, self.objects, self.e.render_area);
        let layer = view;
        let vp = vk::Viewport {
            x: ra.x as f32,
            y: ra.y as f32,
            width: ra.w as f32,
            height: ra.h as f32,
            min_depth: 0.0,
            max_depth: 1.0,
        };
        // Per area, an instance per region: the quads of the regions that chose it in this view.
        let draws: Vec<UpscaleDraw> = AREAS
            .iter()
            .enumerate()
            .filter(|(ai, _)| self.upscaled(*ai))
            .map(|(ai, area)| UpscaleDraw {
                set: o.up_sets[k][ai],
                words: [area.0, area.1, ai as u32, l.columns, l.rows, l.bounds, l.choices, l.regions, view, layer],
                size: scratch_extent(self.e.extent, *area),
                first: 0,
                count: l.regions,
            })
            .collect();
        // SAFETY: the caller's guarantee; the render pass, framebuffer, pipelines and sets are the layer's own.
        unsafe { record_upscale_pass(self.d, self.cb, u, framebuffer, (self.all, vp), o.up_layout, &draws) };
    }

    /// Whether area `ai` is upscaled: a candidate rendered into a scratch target.
    fn upscaled(&self, ai: usize) -> bool {
        candidate(self.e.candidates, ai) && !self.in_place(ai)
    }

    /// Whether area `ai` renders into the attachments themselves ([`Recording::direct`]).
    fn in_place(&self, ai: usize) -> bool {
        self.direct && ai == 0
    }

    /// The candidate areas rendered into scratch targets, with theirs (of `targets`, per area).
    fn scratch_areas<'t>(&self, targets: &'t [Option<Targets>]) -> Vec<(usize, &'t Targets)> {
        let areas = targets.iter().enumerate().filter(|(ai, _)| !self.in_place(*ai));
        areas.filter_map(|(ai, t)| Some((ai, t.as_ref()?))).collect()
    }

    /// After area 1x1's instance into the attachments ([`Recording::direct`]): each in its final layout.
    fn rendered_direct(&mut self) {
        for (i, a) in present(&self.e.atts) {
            self.cur[i] = a.final_;
        }
    }

    /// Step 4: every attachment to its final layout.
    ///
    /// # Safety
    /// As [`Recording::plan`].
    unsafe fn finish(&self) {
        let finish: Vec<Transition> = present(&self.e.atts)
            .filter(|(i, a)| self.cur[*i] != a.final_ && a.final_ != vk::ImageLayout::UNDEFINED)
            .map(|(i, a)| self.real(i, self.cur[i], a.final_))
            .collect();
        // SAFETY: the caller's guarantee; the layouts are tracked in `cur`. The host reads the areas the plan asked
        // for ([`Recording::plan`]).
        unsafe { barrier_to(self.f, self.cb, &finish, self.e.asked.is_some()) };
    }
}

/// Plans a captured pass on the GPU and records its replays; `Err(why)`
/// when it must render at 1x1 instead (nothing recorded then).
///
/// # Safety
/// As [`super::replay::replay`].
pub(super) unsafe fn replay_gpu(
    dev: &DeviceCore,
    f: &Fdm,
    cb: vk::CommandBuffer,
    pass: &mut Pass,
) -> Result<(), Fallback> {
    let started = std::time::Instant::now();
    let e = eligible(f, pass)?;
    // Scratch targets per area, claimed for `cb`; none for an area that is
    // not a candidate (never rendered nor upscaled; its descriptor sets stay
    // unwritten and unbound).
    let mut targets: Vec<Option<Targets>> = Vec::with_capacity(AREAS.len());
    for (ai, area) in AREAS.into_iter().enumerate() {
        if !candidate(e.candidates, ai) {
            targets.push(None);
            continue;
        }
        // SAFETY: the pass's begin and attachments are alive (the capture rule).
        targets.push(Some(
            unsafe { scratch_targets(dev, f, cb, &pass.begin, &e.atts, area, e.extent, e.fb_layers) }
                .map_err(Fallback::ScratchTargets)?,
        ));
    }
    // Under the plan's masks the pass replays per group (its state commands then bind the partners).
    let by_draw = !e.masked && by_draw(f, pass, &e);
    let layout = PlanLayout::new(&e);
    let d = f.raw.as_ref().ok_or(Fallback::NoRawDevice)?;
    // The pass's own objects: buffer, descriptor pool and sets, upscale framebuffers.
    let checked_us = started.elapsed().as_micros();
    // SAFETY: `d` is `f`'s device; the pass's attachment views (the capture rule) and its scratch targets are alive.
    let objects = unsafe { make_objects(f, d, &e, &targets, layout.size) }?;
    pass.shadow_pools.push(objects.pool);
    let made_us = started.elapsed().as_micros();
    let ra = e.render_area;
    let all = vk::Rect2D {
        offset: vk::Offset2D { x: ra.x as i32, y: ra.y as i32 },
        extent: vk::Extent2D { width: ra.w, height: ra.h },
    };
    let cur = e.atts.iter().map(|a| a.as_ref().map_or(vk::ImageLayout::UNDEFINED, |a| a.initial)).collect();
    let mut unclear = pass.begin.clone();
    let clears = unclearing(&mut unclear);
    let mut rec = Recording {
        f,
        d,
        cb,
        pass,
        e: &e,
        layout: &layout,
        objects: &objects,
        all,
        cur,
        direct: direct(f, &e),
        unclear,
        clears,
        timed: dev.log().enabled(LogLevel::Debug),
        spent: <_>::default(),
        clear_draws: <_>::default(),
    };
    // The plan's and the upscales' recording times (µs), where timed.
    let mut host_us = [0u128; 2];
    let since = |t: Option<std::time::Instant>| t.map_or(0, |t| t.elapsed().as_micros());
    // SAFETY: the caller's guarantee: `cb` is recording at the end of the captured `pass`, outside a render pass;
    // every object named was made above or is the pass's (alive: the capture rule); layouts are tracked in `cur`.
    unsafe {
        let t0 = rec.clock();
        let mark = |name: &dyn Fn() -> String| {
            if let Some(s) = &f.steps {
                s.mark(f, cb, name());
            }
        };
        if let Some(s) = &f.steps {
            if let Some(times) = s.start(f, cb, f.timestamp_period) {
                dev.log().debug(id::FDM_PLAN, &format!("GPU plan: GPU time by step (us): {times}"));
            }
        }
        rec.plan();
        mark(&|| "plan".into());
        host_us[0] = since(t0);
        rec.downscales(&targets);
        mark(&|| "downscales".into());
        for (ai, t) in targets.iter().enumerate() {
            if let Some(t) = t {
                rec.replays(ai, t, by_draw);
                if rec.in_place(ai) {
                    rec.rendered_direct();
                }
                mark(&|| format!("area {}x{}", AREAS[ai].0, AREAS[ai].1));
            }
        }
        let t1 = rec.clock();
        rec.upscale(&targets);
        mark(&|| "upscales".into());
        rec.finish();
        mark(&|| "final transitions".into());
        host_us[1] = since(t1);
    }
    let [downscales, clears, replays] = rec.spent.get().map(|ns| ns / 1000);
    if dev.log().enabled(LogLevel::Debug) {
        dev.log().debug(
            id::FDM_PLAN,
            &format!(
                "GPU plan: {} regions of the {}x{} render area, {} areas each; {}{} commands replayed {}; {} stored attachments upscaled; {} of them dispatched (compute); region clears drawn at {} areas; checks and scratch targets {checked_us} us, plan objects {} us, recording {} us (plan {} us; per area: downscales {downscales} us, instance begins and region clears {clears} us, replays and ends {replays} us; upscales and final transitions {} us)",
                layout.regions,
                ra.w,
                ra.h,
                e.candidates.count_ones(),
                if rec.direct { "1x1 into the attachments; " } else { "" },
                pass.cmds.len(),
                if e.masked {
                    "per group of regions and area, under the plan's viewport masks"
                } else if by_draw {
                    "once per area, each run of draws once per region"
                } else {
                    "per region and area"
                },
                e.stored.len(),
                objects.cs_sets.iter().flatten().count(),
                rec.clear_draws.get(),
                made_us - checked_us,
                started.elapsed().as_micros() - made_us,
                host_us[0],
                host_us[1],
            ),
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn regions_are_whole_texels_aligned_and_cover_the_render_area() {
        // 256x256 at 32-pixel texels: one region per texel, caps at the maximum.
        let r = regions(Rect { x: 0, y: 0, w: 256, h: 256 }, (32, 32), (0, 0), (4, 4), GRID, true);
        assert_eq!(r.len(), 64);
        assert_eq!(r[9].rect, Rect { x: 32, y: 32, w: 32, h: 32 });
        assert_eq!(r[9].row, [32, 32, 64, 64, 4, 4, 0, 0]);
        // 1024 wide at 8-pixel texels: 128 texels in 8 groups of 16.
        let r = regions(Rect { x: 0, y: 0, w: 1024, h: 8 }, (8, 8), (0, 0), (4, 4), GRID, true);
        assert_eq!(r.len(), 8);
        assert!(r.iter().all(|x| x.rect.w == 128 && x.row[2] - x.row[0] == 128));
        // An odd start caps the first region at 1; the rest covers exactly.
        let r = regions(Rect { x: 3, y: 0, w: 60, h: 16 }, (16, 16), (0, 0), (4, 4), GRID, true);
        assert_eq!(r[0].rect.x, 3);
        assert_eq!(r[0].row[4], 1);
        assert_eq!(r.iter().map(|x| x.rect.w).sum::<u32>(), 60);
        // A pass of many commands gets fewer regions.
        assert_eq!(grid_for(2, 9, false), 8);
        assert_eq!(grid_for(100, 9, false), 4);
        assert_eq!(grid_for(1000, 9, false), 2);
        assert_eq!(grid_for(100_000, 9, false), 1);
        // Three (square) areas: three times the commands for the same regions.
        assert_eq!(grid_for(100, 3, false), 8);
        assert_eq!(grid_for(1000, 3, false), 2);
        // Masked, per group of 16 regions: a pass of 1000 draws gets 4x4 regions (one group) instead of 2x2, and no
        // pass fewer (4 groups x 9 areas x 108 = 3,888 commands; 4 x 3 x 408 = 4,896; 4 x 3 x 1,008 = 12,096).
        assert_eq!(grid_for(2, 9, true), 8);
        assert_eq!(grid_for(100, 9, true), 8);
        assert_eq!(grid_for(400, 3, true), 8);
        assert_eq!(grid_for(1000, 3, true), 4);
        assert_eq!(grid_for(1000, 9, true), 4);
        assert_eq!(grid_for(100_000, 9, true), 4);
        // A density offset shifts the grid: cells start at 4 + 32k (x) and -8 + 32k (y); the cells cut by the
        // render area's edge are regions of their own, and the whole area is covered.
        let r = regions(Rect { x: 0, y: 0, w: 256, h: 256 }, (32, 32), (4, -8), (4, 4), GRID, true);
        let columns: Vec<Rect> = r.iter().filter(|x| x.rect.y == 0).map(|x| x.rect).collect();
        assert_eq!((columns[0].x, columns[0].w), (0, 4));
        assert!(columns[1..].iter().all(|c| c.x % 32 == 4));
        assert_eq!(columns.iter().map(|c| c.w).sum::<u32>(), 256);
        let rows: Vec<Rect> = r.iter().filter(|x| x.rect.x == 0).map(|x| x.rect).collect();
        assert!(rows.iter().all(|c| c.y == 0 || c.y % 32 == 24));
        assert_eq!(rows.iter().map(|c| c.h).sum::<u32>(), 256);
        assert!(r.iter().all(|x| x.row[4] == alignment(x.rect.x).min(4) && x.row[5] == alignment(x.rect.y).min(4)));
    }
}

//! Replay planning: what the end of a captured pass records, decided
//! without recording anything.
//!
//! [`plan`] is a pure function from the captured pass (its attachments: what
//! loads, what stores, their layouts, formats and usage) and the bin plan
//! ([`super::bins::plan`]: replays with an area, a rectangle and the bins
//! they store) to a [`Plan`]: the replays in recording order, each with its
//! target (directly into the real attachments, or into scratch targets at
//! its area), the transform its commands go down under and its render area,
//! and its steps (layout transitions, downscales of the attachments that
//! load, the render, upscales of its bins into the attachments that store);
//! then the transitions that leave every attachment in its final layout.
//! Where the pass cannot be replayed, the reason to render it at 1x1.
//! `replay.rs` walks the plan and records it. Recent bin plans are kept
//! by map contents and pass shape ([`PlanCache`]).
//!
//! The rules:
//! - density 1 everywhere (one 1x1 replay) without the overlay: the pass as
//!   recorded ([`Plan::AsRecorded`]);
//! - a replay at an area above 1x1 scales what loads and stores: by blits
//!   for single-sampled attachments (a format that can be blitted both ways),
//!   by copies through an intermediate image for multisampled ones (a format
//!   with the transfer features; every sample kept, [`scaled_copies`]); the
//!   attachment must be made with transfer usage, or the pass renders at
//!   1x1;
//! - the first replay renders directly into the real attachments when it is
//!   at 1x1 and no attachment loads or no later replay's bins meet its
//!   rectangle (it writes its whole rectangle, so nothing another replay
//!   still has to load may lie there); otherwise the replays go largest area
//!   first, then top to bottom, left to right;
//! - a replay into scratch targets downscales (real → scratch, over its
//!   rectangle) only the attachments that load, sets every scratch target to
//!   the attachment's initial layout, renders, then upscales its bins
//!   (scratch → real) into the attachments that store;
//! - with the composite ([`plan_composited`]: every stored attachment can be
//!   sampled and drawn, one subpass), the replays of one area
//!   share one render pass instance over the bounding box of their
//!   rectangles (the first of them downscales what loads for all, each
//!   replays the commands clipped to its own rectangle), and nothing is
//!   upscaled per replay: after the last one, a [`Composite`] per stored
//!   attachment draws every area's bins from that area's scratch target in
//!   one render pass (per view's layer for a multiview pass, each view its
//!   own bins: `composite.rs`);
//! - a replay renders every view of a multiview pass; each view's upscale
//!   (its layer of the attachments) takes only the bins that view asked for
//!   at the replay's area, so each view gets the areas of its own map layer
//!   (one upscale over all the views' layers where every bin is asked for by
//!   every view).

use super::bins::{self, Rect};
use super::commands::{MaskFrom, Transform};
use super::fallback::Fallback;
use super::map_readback::MapTexels;
use super::model::Att;
use ash::vk;
use parking_lot::Mutex;
use std::sync::Arc;

/// What the end of a captured pass records.
#[derive(Debug, PartialEq)]
pub(super) enum Plan {
    /// Density 1 everywhere: the pass exactly as the application recorded it.
    AsRecorded,
    Replays {
        /// In recording order.
        replays: Vec<PlannedReplay>,
        /// After the last replay, the composite of each stored attachment
        /// (none without [`plan_composited`]).
        composites: Vec<Composite>,
        /// Then every attachment to its final layout (one barrier, recorded
        /// even when empty).
        finish: Vec<Change>,
    },
}

/// The composite of one stored attachment: after every replay, one render
/// pass over it in which each area's bins are drawn from that area's scratch
/// target (nearest: pixel `p` takes texel `p / area`).
#[derive(Debug, PartialEq)]
pub(super) struct Composite {
    pub(super) attachment: usize,
    /// The real attachment's layout before it.
    pub(super) from: vk::ImageLayout,
    /// Its draws, layer by layer. Each area's scratch target is in the
    /// attachment's final layout.
    pub(super) draws: Vec<CompositeDraw>,
}

/// One draw of a composite: the bins (merged rectangles, framebuffer space)
/// that the replays at `area` rendered for layer `layer` (a multiview
/// pass's view: that layer of the attachment and of the scratch target;
/// `None`: the attachment's view as the pass has it).
#[derive(Clone, Debug, PartialEq)]
pub(super) struct CompositeDraw {
    pub(super) layer: Option<u32>,
    pub(super) area: (u32, u32),
    pub(super) rects: Vec<Rect>,
}

/// One replay of the captured pass and what it records.
#[derive(Debug, PartialEq)]
pub(super) struct PlannedReplay {
    /// The bin plan's replay: area, rectangle, bins.
    pub(super) replay: bins::Replay,
    pub(super) target: Target,
    /// The render area of its begin: the rectangle (direct) or the rectangle
    /// in scratch space (scaled by `1/area`, ends rounded up).
    pub(super) render_area: vk::Rect2D,
    /// Whether its bins are outlined (`fdm_overlay` and a colour attachment).
    pub(super) outline: bool,
    pub(super) steps: Vec<Step>,
}

/// Where a replay renders.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Target {
    /// Into the real attachments, at 1x1 over its rectangle.
    Direct,
    /// Into scratch targets at its area.
    Scratch,
}

/// One recorded step of a replay.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum Step {
    /// Layout transitions, as one pipeline barrier.
    Barrier(Vec<Change>),
    /// Real attachment → its scratch target, over (framebuffer, scratch)
    /// rectangle pairs.
    Downscale { attachment: usize, regions: Vec<(Rect, Rect)> },
    /// The pass itself: begin (retargeted for scratch; unless `begin` is
    /// false, inside the previous replay's render pass instance), the
    /// captured commands under [`PlannedReplay::transform`], the outline, end
    /// (unless `end` is false: the next replay renders in the same instance).
    Render { begin: bool, end: bool },
    /// Scratch target → real attachment, over (framebuffer, scratch)
    /// rectangle pairs covering the replay's bins, in the attachment's
    /// layers `layers` (first, count; relative to its view; `None`: all).
    Upscale { attachment: usize, layers: Option<(u32, u32)>, regions: Vec<(Rect, Rect)> },
}

/// A layout transition of attachment `attachment` (an index into the pass's
/// attachments): of the real image, or of the replay's scratch target.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Change {
    pub(super) attachment: usize,
    pub(super) scratch: bool,
    pub(super) old: vk::ImageLayout,
    pub(super) new: vk::ImageLayout,
}

impl Step {
    /// A render pass instance of its own.
    pub(super) const WHOLE: Step = Step::Render { begin: true, end: true };
}

impl PlannedReplay {
    /// Framebuffer space to the replay's rendering space (input attachment
    /// substitution is the recorder's: it knows the scratch views).
    pub(super) fn transform(&self) -> Transform<'static> {
        Transform {
            area: self.replay.area,
            clip: Some(self.replay.rect),
            inputs: None,
            views: None,
            mask: MaskFrom::None,
        }
    }
}

/// What a planned replay records where the replays of one area are
/// recorded at once, as viewports (`viewport_mask.rs`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Masked {
    /// Its own replay of the pass, as planned.
    Apart,
    /// One replay of the pass for itself and the members after it: the
    /// rectangles of all of them, its own first.
    Head(Vec<Rect>),
    /// Nothing: its head records it (its render step still ends the
    /// instance where it is the last).
    Member,
}

/// The replays of `planned` recorded at once, at most `max` together: a
/// replay into scratch targets heads the replays after it at its area whose
/// only step is their render inside the same instance (as the composite
/// plans an area's replays; none outlined); a head of none stays apart.
pub(super) fn masked_runs(planned: &[PlannedReplay], max: usize) -> Vec<Masked> {
    let renders = |p: &PlannedReplay| p.steps.iter().filter(|s| matches!(s, Step::Render { .. })).count();
    let ends = |p: &PlannedReplay| p.steps.iter().any(|s| matches!(s, Step::Render { end: true, .. }));
    let member = |head: &PlannedReplay, p: &PlannedReplay| {
        p.target == Target::Scratch
            && p.replay.area == head.replay.area
            && !p.outline
            && matches!(p.steps[..], [Step::Render { begin: false, .. }])
    };
    let mut out = Vec::with_capacity(planned.len());
    let mut i = 0;
    while i < planned.len() {
        let head = &planned[i];
        let mut n = 1;
        if head.target == Target::Scratch && !head.outline && renders(head) == 1 && !ends(head) {
            while n < max && i + n < planned.len() && member(head, &planned[i + n]) {
                n += 1;
                if ends(&planned[i + n - 1]) {
                    break;
                }
            }
        }
        if n == 1 {
            out.push(Masked::Apart);
        } else {
            out.push(Masked::Head(planned[i..i + n].iter().map(|p| p.replay.rect).collect()));
            out.extend(std::iter::repeat_n(Masked::Member, n - 1));
        }
        i += n;
    }
    out
}

fn rect2d(r: Rect) -> vk::Rect2D {
    vk::Rect2D {
        offset: vk::Offset2D { x: r.x as i32, y: r.y as i32 },
        extent: vk::Extent2D { width: r.w, height: r.h },
    }
}

/// Pairs of (framebuffer-space, scratch-space) rectangles covering `r`
/// exactly at an integer scale (a partial last column/row maps one scratch
/// texel onto what is left).
pub(super) fn scaled_regions(r: Rect, area: (u32, u32)) -> Vec<(Rect, Rect)> {
    let split = |x: u32, w: u32, a: u32| -> Vec<(u32, u32, u32, u32)> {
        let full = w / a * a;
        let mut v = Vec::new();
        if full > 0 {
            v.push((x, full, x / a, full / a));
        }
        if w > full {
            v.push((x + full, w - full, (x + full) / a, 1));
        }
        v
    };
    let mut out = Vec::new();
    for (fx, fw, sx, sw) in split(r.x, r.w, area.0) {
        for (fy, fh, sy, sh) in split(r.y, r.h, area.1) {
            out.push((Rect { x: fx, y: fy, w: fw, h: fh }, Rect { x: sx, y: sy, w: sw, h: sh }));
        }
    }
    out
}

/// A copy region between two images of the same format and sample count:
/// source offset, destination offset, extent (texels; every sample of each
/// texel is copied).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct CopyRegion {
    pub(super) src: (u32, u32),
    pub(super) dst: (u32, u32),
    pub(super) extent: (u32, u32),
}

/// The two copy stages that scale a multisampled attachment over the
/// (framebuffer, scratch) rectangle pairs `pairs` at `area`, through an
/// intermediate image whose x is in framebuffer space and y in scratch space
/// (a blit cannot take multisampled images; a copy keeps every sample: sample
/// `i` of a texel comes from sample `i` of the texel it maps from).
///
/// Up (scratch → real): stage 1 copies scratch columns into the
/// intermediate, each repeated `area.0` times; stage 2 copies its rows into
/// the real image, each repeated `area.1` times. Down (real → scratch): stage
/// 1 copies one real row per scratch row into the intermediate, stage 2 one
/// intermediate column per scratch column; the texel taken from each
/// `area`-sized block is the one a nearest-filter blit takes (its centre:
/// offset `min(area, what is left) / 2`), as for single-sampled attachments.
/// Runs that map one to one (an axis at area 1) are merged into one region.
pub(super) fn scaled_copies(pairs: &[(Rect, Rect)], area: (u32, u32), up: bool) -> [Vec<CopyRegion>; 2] {
    // Along one axis: (framebuffer start, length, scratch start), a scale,
    // → (framebuffer line, scratch line) for every line the copy touches.
    let lines = |f: u32, n: u32, s: u32, a: u32| -> Vec<(u32, u32)> {
        if up {
            (0..n).map(|k| (f + k, s + k / a)).collect()
        } else {
            (0..n.div_ceil(a))
                .map(|k| {
                    let left = (n - k * a).min(a);
                    (f + k * a + left / 2, s + k)
                })
                .collect()
        }
    };
    // Consecutive lines whose sources are consecutive too, as (src, dst, run).
    let runs = |v: Vec<(u32, u32)>| -> Vec<(u32, u32, u32)> {
        let mut out: Vec<(u32, u32, u32)> = Vec::new();
        for (src, dst) in v {
            match out.last_mut() {
                Some((s, d, n)) if *s + *n == src && *d + *n == dst => *n += 1,
                _ => out.push((src, dst, 1)),
            }
        }
        out
    };
    let (mut first, mut second) = (Vec::new(), Vec::new());
    for (fb, sc) in pairs {
        let cols = lines(fb.x, fb.w, sc.x, area.0);
        let rows = lines(fb.y, fb.h, sc.y, area.1);
        if up {
            // Scratch columns → intermediate (x framebuffer, y scratch).
            for (s, d, n) in runs(cols.iter().map(|&(f, s)| (s, f)).collect()) {
                first.push(CopyRegion { src: (s, sc.y), dst: (d, sc.y), extent: (n, sc.h) });
            }
            // Intermediate rows → real.
            for (s, d, n) in runs(rows.iter().map(|&(f, s)| (s, f)).collect()) {
                second.push(CopyRegion { src: (fb.x, s), dst: (fb.x, d), extent: (fb.w, n) });
            }
        } else {
            // Real rows → intermediate.
            for (s, d, n) in runs(rows) {
                first.push(CopyRegion { src: (fb.x, s), dst: (fb.x, d), extent: (fb.w, n) });
            }
            // Intermediate columns → scratch.
            for (s, d, n) in runs(cols) {
                second.push(CopyRegion { src: (s, sc.y), dst: (d, sc.y), extent: (n, sc.h) });
            }
        }
    }
    [first, second]
}

/// Why a pass whose replays blit cannot be replayed, if it cannot. A
/// multisampled attachment is scaled by copies ([`scaled_copies`]), which
/// need the transfer features instead of the blit ones.
fn unblittable(
    atts: &[Option<Att>],
    format_features: &dyn Fn(vk::Format) -> vk::FormatFeatureFlags,
) -> Option<Fallback> {
    for a in atts.iter().flatten() {
        let need = if a.samples == vk::SampleCountFlags::TYPE_1 {
            vk::FormatFeatureFlags::BLIT_SRC | vk::FormatFeatureFlags::BLIT_DST
        } else {
            vk::FormatFeatureFlags::TRANSFER_SRC | vk::FormatFeatureFlags::TRANSFER_DST
        };
        if (a.load || a.store) && !format_features(a.format).contains(need) {
            return Some(Fallback::Unblittable(a.format));
        }
        if (a.load || a.store)
            && !a.usage.contains(vk::ImageUsageFlags::TRANSFER_SRC | vk::ImageUsageFlags::TRANSFER_DST)
        {
            return Some(Fallback::NoTransferUsage);
        }
    }
    None
}

/// The upscales of one replay's bins into attachment `attachment`: `views`
/// are the view indices of a multiview pass (bit `k` of a bin's mask is view
/// `views[k]`, which renders to layer `views[k]`), empty without multiview.
fn upscales(r: &bins::Replay, attachment: usize, views: &[u32]) -> Vec<Step> {
    let regions = |rects: Vec<Rect>| -> Vec<(Rect, Rect)> {
        bins::rectangles(&rects).into_iter().flat_map(|b| scaled_regions(b, r.area)).collect()
    };
    // Every view's bins, merged with the plan.
    let stored = || r.stored.iter().flat_map(|b| scaled_regions(*b, r.area)).collect();
    if views.is_empty() {
        return vec![Step::Upscale { attachment, layers: None, regions: stored() }];
    }
    let mask = if views.len() >= 32 { u32::MAX } else { (1u32 << views.len()) - 1 };
    let contiguous = views.iter().enumerate().all(|(k, v)| *v == k as u32);
    if contiguous && r.bins.iter().all(|b| b.views & mask == mask) {
        return vec![Step::Upscale { attachment, layers: Some((0, views.len() as u32)), regions: stored() }];
    }
    (0..views.len() as u32)
        .map(|k| (k, r.rects_of(k)))
        .filter(|(_, rects)| !rects.is_empty())
        .map(|(k, rects)| Step::Upscale { attachment, layers: Some((views[k as usize], 1)), regions: regions(rects) })
        .collect()
}

/// The plan for a captured pass with attachments `atts` (`None`: left
/// alone) and the bin plan `replays`, each replay upscaled by blits or
/// copies; `Err(why)` when it must render at 1x1. `overlay`: the
/// `fdm_overlay` setting; `format_features`: the device's optimal-tiling
/// features of a format; `views`: the view indices of a multiview pass
/// (empty without multiview), in the order of the bins' view masks.
#[cfg(test)]
pub(super) fn plan(
    atts: &[Option<Att>],
    replays: Vec<bins::Replay>,
    overlay: bool,
    format_features: &dyn Fn(vk::Format) -> vk::FormatFeatureFlags,
    views: &[u32],
) -> Result<Plan, Fallback> {
    plan_composited(atts, replays, overlay, format_features, views, false)
}

/// As [`plan`]; with `composite` (the caller's word that every stored
/// attachment can be sampled and drawn, the pass has one subpass), the replays of one area share a render pass instance and the
/// stored attachments are written by one [`Composite`] each at the end.
pub(super) fn plan_composited(
    atts: &[Option<Att>],
    mut replays: Vec<bins::Replay>,
    overlay: bool,
    format_features: &dyn Fn(vk::Format) -> vk::FormatFeatureFlags,
    views: &[u32],
    composite: bool,
) -> Result<Plan, Fallback> {
    if replays.len() == 1 && replays[0].area == (1, 1) && !overlay {
        return Ok(Plan::AsRecorded);
    }
    if replays.iter().any(|r| r.area != (1, 1)) {
        if let Some(why) = unblittable(atts, format_features) {
            return Err(why);
        }
    }
    let loads = atts.iter().flatten().any(|a| a.load);
    // A direct 1x1 replay writes its whole rectangle: only first, and only
    // where nothing it overwrites must still be loaded by another replay.
    let direct = replays.first().is_some_and(|r| {
        r.area == (1, 1) && (!loads || replays[1..].iter().all(|o| o.bins.iter().all(|b| !b.rect.intersects(&r.rect))))
    });
    // Largest area first (with the composite, each area's replays together), then top to bottom, left to right;
    // after a direct replay, the others as planned unless composited.
    if !direct || composite {
        let together = |r: &bins::Replay| if composite { r.area } else { (0, 0) };
        replays[usize::from(direct)..]
            .sort_by_key(|r| (std::cmp::Reverse(r.area.0 * r.area.1), together(r), r.rect.y, r.rect.x));
    }
    let has_color = atts.iter().flatten().any(|a| a.range.aspect_mask == vk::ImageAspectFlags::COLOR);
    // Where each real attachment's layout is now.
    let mut cur: Vec<vk::ImageLayout> =
        atts.iter().map(|a| a.as_ref().map_or(vk::ImageLayout::UNDEFINED, |a| a.initial)).collect();
    let present = || atts.iter().enumerate().filter_map(|(i, a)| Some((i, a.as_ref()?)));
    let real = |attachment, old, new| Change { attachment, scratch: false, old, new };
    let scratch = |attachment, old, new| Change { attachment, scratch: true, old, new };
    let outline = overlay && has_color;
    let mut planned = Vec::with_capacity(replays.len());
    if direct {
        for (i, a) in present() {
            cur[i] = a.final_;
        }
        let r = replays.remove(0);
        planned.push(PlannedReplay {
            render_area: rect2d(r.rect),
            replay: r,
            target: Target::Direct,
            outline,
            steps: vec![Step::WHOLE],
        });
    }
    // The groups that share a render pass instance: with the composite, the replays of one area; else each alone.
    let mut groups: Vec<Vec<bins::Replay>> = Vec::new();
    for r in replays {
        match groups.last_mut() {
            Some(g) if composite && g[0].area == r.area => g.push(r),
            _ => groups.push(vec![r]),
        }
    }
    let mut draws: Vec<CompositeDraw> = Vec::new();
    for (g, group) in groups.into_iter().enumerate() {
        let area = group[0].area;
        let bbox = group.iter().skip(1).fold(group[0].rect, |b, r| b.union(&r.rect));
        let (mut steps, t2) = load_steps(atts, &mut cur, &group);
        // Recorded even when empty: it orders what came before (a blit of the previous replay's bins that read
        // this scratch target, an earlier pass's composite) before this render writes it. With the composite the
        // first group's does that for all: a later group writes other scratch targets (its own area's) that
        // nothing read since, so it needs none of its own and the GPU may overlap it with the previous group.
        if !(composite && g > 0 && t2.is_empty() && steps.is_empty()) {
            steps.push(Step::Barrier(t2));
        }
        let bbox_area =
            Transform { area, clip: Some(bbox), inputs: None, views: None, mask: MaskFrom::None }.rect(&rect2d(bbox));
        let n = group.len();
        if composite {
            if views.is_empty() {
                draws.push(CompositeDraw {
                    layer: None,
                    area,
                    rects: group.iter().flat_map(|r| r.stored.iter().copied()).collect(),
                });
            }
            // Each view its own bins, in its layer.
            for (k, &view) in views.iter().enumerate() {
                let rects: Vec<Rect> = group.iter().flat_map(|r| r.rects_of(k as u32)).collect();
                if !rects.is_empty() {
                    draws.push(CompositeDraw { layer: Some(view), area, rects: bins::rectangles(&rects) });
                }
            }
        }
        for (k, r) in group.into_iter().enumerate() {
            // The pass, at this area (in the group's one instance).
            steps.push(Step::Render { begin: k == 0, end: k + 1 == n });
            if !composite {
                // Up: scratch -> real, for the replay's bins.
                let mut t3 = Vec::new();
                for (i, a) in present().filter(|(_, a)| a.store) {
                    t3.push(scratch(i, a.final_, vk::ImageLayout::TRANSFER_SRC_OPTIMAL));
                    t3.push(real(i, cur[i], vk::ImageLayout::TRANSFER_DST_OPTIMAL));
                    cur[i] = vk::ImageLayout::TRANSFER_DST_OPTIMAL;
                }
                if !t3.is_empty() {
                    steps.push(Step::Barrier(t3));
                }
                for (i, _) in present().filter(|(_, a)| a.store) {
                    steps.extend(upscales(&r, i, views));
                }
            }
            planned.push(PlannedReplay {
                render_area: if k == 0 {
                    bbox_area
                } else {
                    Transform { area, clip: Some(r.rect), inputs: None, views: None, mask: MaskFrom::None }
                        .rect(&rect2d(r.rect))
                },
                replay: r,
                target: Target::Scratch,
                outline,
                steps: std::mem::take(&mut steps),
            });
        }
    }
    // The composites: every stored attachment, every area's bins at once.
    let mut composites = Vec::new();
    if composite && !draws.is_empty() {
        draws.sort_by_key(|d| d.layer);
        for (i, a) in present().filter(|(_, a)| a.store) {
            composites.push(Composite { attachment: i, from: cur[i], draws: draws.clone() });
            cur[i] = composite_layout(a);
        }
    }
    // Every attachment ends in its final layout.
    let finish = present()
        .filter(|(i, a)| cur[*i] != a.final_ && a.final_ != vk::ImageLayout::UNDEFINED)
        .map(|(i, a)| real(i, cur[i], a.final_))
        .collect();
    Ok(Plan::Replays { replays: planned, composites, finish })
}

/// The steps that make a group of replays at one area ready to render:
/// the attachments that load downscaled (real, over the replays'
/// rectangles → scratch, from each real attachment's layout now, `cur`,
/// left in TRANSFER_SRC), and the transitions (returned apart: the caller
/// decides whether to record them) that put each scratch target in the
/// attachment's initial layout.
fn load_steps(atts: &[Option<Att>], cur: &mut [vk::ImageLayout], group: &[bins::Replay]) -> (Vec<Step>, Vec<Change>) {
    let area = group[0].area;
    let present = || atts.iter().enumerate().filter_map(|(i, a)| Some((i, a.as_ref()?)));
    let real = |attachment, old, new| Change { attachment, scratch: false, old, new };
    let scratch = |attachment, old, new| Change { attachment, scratch: true, old, new };
    let mut steps = Vec::new();
    let mut t1 = Vec::new();
    for (i, _) in present().filter(|(_, a)| a.load) {
        t1.push(real(i, cur[i], vk::ImageLayout::TRANSFER_SRC_OPTIMAL));
        cur[i] = vk::ImageLayout::TRANSFER_SRC_OPTIMAL;
        t1.push(scratch(i, vk::ImageLayout::UNDEFINED, vk::ImageLayout::TRANSFER_DST_OPTIMAL));
    }
    if !t1.is_empty() {
        steps.push(Step::Barrier(t1));
    }
    let mut t2 = Vec::new();
    for (i, a) in present() {
        if a.load {
            let regions = group.iter().flat_map(|r| scaled_regions(r.rect, area)).collect();
            steps.push(Step::Downscale { attachment: i, regions });
            if a.initial != vk::ImageLayout::UNDEFINED {
                t2.push(scratch(i, vk::ImageLayout::TRANSFER_DST_OPTIMAL, a.initial));
            }
        } else if a.initial != vk::ImageLayout::UNDEFINED {
            t2.push(scratch(i, vk::ImageLayout::UNDEFINED, a.initial));
        }
    }
    (steps, t2)
}

/// The layout a composite draws attachment `a` in.
pub(super) fn composite_layout(a: &Att) -> vk::ImageLayout {
    if a.storage {
        // Written as a storage image.
        vk::ImageLayout::GENERAL
    } else if a.range.aspect_mask == vk::ImageAspectFlags::COLOR {
        vk::ImageLayout::COLOR_ATTACHMENT_OPTIMAL
    } else {
        vk::ImageLayout::DEPTH_STENCIL_ATTACHMENT_OPTIMAL
    }
}

/// Plans made recently, by map contents and pass shape: a program that
/// re-records the same pass every frame plans it once (a 1080p map of 8x8
/// texels has 32,400 bins).
#[derive(Default)]
pub struct PlanCache(Mutex<Vec<(PlanKey, Vec<bins::Replay>)>>);

struct PlanKey {
    map: Arc<MapTexels>,
    render_area: Rect,
    grid: bins::TexelGrid,
    views: Vec<bins::View>,
    vertex_cost: f64,
}

impl PlanCache {
    const ENTRIES: usize = 8;

    /// The plan for `map` and `(render area, (texel size, area cap), views (map layers
    /// and offsets), vertex cost)`, made by `plan` unless a recent pass had
    /// the same.
    pub fn get_or_plan(
        &self,
        map: &Arc<MapTexels>,
        (render_area, grid, views, vertex_cost): (Rect, bins::TexelGrid, &[bins::View], f64),
        plan: impl FnOnce() -> Vec<bins::Replay>,
    ) -> Vec<bins::Replay> {
        let same = |k: &PlanKey| {
            k.render_area == render_area
                && k.grid == grid
                && k.views == views
                && k.vertex_cost == vertex_cost
                && (Arc::ptr_eq(&k.map, map)
                    || (k.map.width, k.map.height, k.map.layers) == (map.width, map.height, map.layers)
                        && k.map.texels == map.texels)
        };
        {
            let mut plans = self.0.lock();
            if let Some(i) = plans.iter().position(|(k, _)| same(k)) {
                let hit = plans.remove(i);
                let replays = hit.1.clone();
                plans.insert(0, hit);
                return replays;
            }
        }
        let replays = plan();
        let key = PlanKey { map: map.clone(), render_area, grid, views: views.to_vec(), vertex_cost };
        let mut plans = self.0.lock();
        plans.insert(0, (key, replays.clone()));
        plans.truncate(Self::ENTRIES);
        replays
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use vk::ImageLayout as L;

    #[test]
    fn scaled_regions_cover_exactly() {
        let r = Rect { x: 8, y: 4, w: 13, h: 6 };
        let pairs = scaled_regions(r, (4, 2));
        let px: u64 = pairs.iter().map(|(f, _)| f.pixels()).sum();
        assert_eq!(px, r.pixels());
        for (f, s) in &pairs {
            assert_eq!(s.x, f.x / 4);
            assert_eq!(s.y, f.y / 2);
            assert!(f.w == s.w * 4 || s.w == 1 && f.w < 4);
        }
    }

    fn r(x: u32, y: u32, w: u32, h: u32) -> Rect {
        Rect { x, y, w, h }
    }

    fn rect2d(x: i32, y: i32, w: u32, h: u32) -> vk::Rect2D {
        vk::Rect2D { offset: vk::Offset2D { x, y }, extent: vk::Extent2D { width: w, height: h } }
    }

    /// A replay storing exactly its rectangle.
    fn replay(area: (u32, u32), rect: Rect) -> bins::Replay {
        bins::Replay::new(area, rect, vec![bin(rect)])
    }

    /// A bin asked for by one view.
    fn bin(rect: Rect) -> bins::Bin {
        bins::Bin { rect, area: (1, 1), views: 1 }
    }

    /// A single-sampled colour attachment, blittable, made with transfer
    /// usage, rendered from COLOR_ATTACHMENT_OPTIMAL to SHADER_READ_ONLY_OPTIMAL.
    fn att(load: bool, store: bool) -> Att {
        Att {
            view: vk::ImageView::null(),
            image: vk::Image::null(),
            range: vk::ImageSubresourceRange {
                aspect_mask: vk::ImageAspectFlags::COLOR,
                base_mip_level: 0,
                level_count: 1,
                base_array_layer: 0,
                layer_count: 1,
            },
            format: vk::Format::R8G8B8A8_UNORM,
            samples: vk::SampleCountFlags::TYPE_1,
            usage: vk::ImageUsageFlags::COLOR_ATTACHMENT
                | vk::ImageUsageFlags::TRANSFER_SRC
                | vk::ImageUsageFlags::TRANSFER_DST,
            view_type: vk::ImageViewType::TYPE_2D,
            load,
            store,
            store_stencil: false,
            initial: L::COLOR_ATTACHMENT_OPTIMAL,
            final_: L::SHADER_READ_ONLY_OPTIMAL,
            storage: false,
            plain: true,
        }
    }

    fn blittable(_: vk::Format) -> vk::FormatFeatureFlags {
        vk::FormatFeatureFlags::BLIT_SRC | vk::FormatFeatureFlags::BLIT_DST
    }

    fn real(attachment: usize, old: vk::ImageLayout, new: vk::ImageLayout) -> Change {
        Change { attachment, scratch: false, old, new }
    }

    fn scratch(attachment: usize, old: vk::ImageLayout, new: vk::ImageLayout) -> Change {
        Change { attachment, scratch: true, old, new }
    }

    fn replays_of(p: Result<Plan, Fallback>) -> (Vec<PlannedReplay>, Vec<Change>) {
        match p {
            Ok(Plan::Replays { replays, finish, .. }) => (replays, finish),
            other => panic!("expected replays, got {other:?}"),
        }
    }

    fn downscaled(p: &PlannedReplay) -> Vec<usize> {
        p.steps
            .iter()
            .filter_map(|s| if let Step::Downscale { attachment, .. } = s { Some(*attachment) } else { None })
            .collect()
    }

    fn upscaled(p: &PlannedReplay) -> Vec<usize> {
        p.steps
            .iter()
            .filter_map(|s| if let Step::Upscale { attachment, .. } = s { Some(*attachment) } else { None })
            .collect()
    }

    #[test]
    fn density_one_is_the_pass_as_recorded_unless_outlined() {
        let atts = [Some(att(true, true))];
        let one = || vec![replay((1, 1), r(0, 0, 64, 64))];
        assert_eq!(plan(&atts, one(), false, &blittable, &[]), Ok(Plan::AsRecorded));
        // The overlay draws on the pass: one direct replay over the whole area.
        let (replays, finish) = replays_of(plan(&atts, one(), true, &blittable, &[]));
        assert_eq!(replays.len(), 1);
        assert_eq!(replays[0].target, Target::Direct);
        assert_eq!(replays[0].steps, vec![Step::WHOLE]);
        assert_eq!(replays[0].render_area, rect2d(0, 0, 64, 64));
        assert!(replays[0].outline);
        // The direct replay leaves the attachment in its final layout.
        assert_eq!(finish, vec![]);
        // Nothing to outline on without a colour attachment.
        let mut depth = att(true, true);
        depth.range.aspect_mask = vk::ImageAspectFlags::DEPTH;
        let (replays, _) = replays_of(plan(&[Some(depth)], one(), true, &blittable, &[]));
        assert!(!replays[0].outline);
    }

    #[test]
    fn a_one_by_one_replay_with_nothing_left_to_load_goes_direct_and_first() {
        // The 2x2 replay's bins lie outside the 1x1 replay's rectangle: what
        // it loads is still there when it runs, after the direct one.
        let replays = vec![replay((1, 1), r(0, 0, 32, 64)), replay((2, 2), r(32, 0, 32, 64))];
        let (planned, finish) = replays_of(plan(&[Some(att(true, true))], replays, false, &blittable, &[]));
        assert_eq!(
            planned.iter().map(|p| (p.replay.area, p.target)).collect::<Vec<_>>(),
            [((1, 1), Target::Direct), ((2, 2), Target::Scratch)]
        );
        assert_eq!(planned[0].steps, vec![Step::WHOLE]);
        assert_eq!(planned[0].render_area, rect2d(0, 0, 32, 64));
        // After the direct replay the attachment is in its final layout: the
        // scratch replay starts from there.
        assert_eq!(
            planned[1].steps[0],
            Step::Barrier(vec![
                real(0, L::SHADER_READ_ONLY_OPTIMAL, L::TRANSFER_SRC_OPTIMAL),
                scratch(0, L::UNDEFINED, L::TRANSFER_DST_OPTIMAL)
            ])
        );
        assert_eq!(finish, vec![real(0, L::TRANSFER_DST_OPTIMAL, L::SHADER_READ_ONLY_OPTIMAL)]);
        // Nothing loads: the direct replay may overwrite anything.
        let overlapping = vec![replay((1, 1), r(0, 0, 64, 64)), replay((2, 2), r(32, 0, 32, 64))];
        let (planned, _) = replays_of(plan(&[Some(att(false, true))], overlapping, false, &blittable, &[]));
        assert_eq!(planned[0].target, Target::Direct);
        assert_eq!(planned[0].replay.area, (1, 1));
    }

    #[test]
    fn a_one_by_one_replay_over_what_another_still_loads_is_not_direct() {
        // The 1x1 replay's rectangle covers the 2x2 replay's bins: rendering it
        // first into the real attachment would overwrite what the 2x2 loads.
        let replays = vec![
            bins::Replay::new((1, 1), r(0, 0, 64, 64), vec![bin(r(0, 0, 32, 64))]),
            replay((2, 2), r(32, 0, 32, 64)),
        ];
        let (planned, _) = replays_of(plan(&[Some(att(true, true))], replays, false, &blittable, &[]));
        assert_eq!(
            planned.iter().map(|p| (p.replay.area, p.target)).collect::<Vec<_>>(),
            [((2, 2), Target::Scratch), ((1, 1), Target::Scratch)]
        );
        // The 1x1 replay through scratch loads and stores only its bins.
        assert_eq!(planned[1].render_area, rect2d(0, 0, 64, 64));
        assert_eq!(downscaled(&planned[1]), [0]);
        let up = planned[1].steps.iter().find_map(|s| match s {
            Step::Upscale { regions, .. } => Some(regions.clone()),
            _ => None,
        });
        assert_eq!(up, Some(vec![(r(0, 0, 32, 64), r(0, 0, 32, 64))]));
    }

    #[test]
    fn a_replay_above_one_by_one_loads_through_a_downscale() {
        let rect = r(16, 0, 16, 16);
        let (planned, finish) =
            replays_of(plan(&[Some(att(true, true))], vec![replay((2, 2), rect)], false, &blittable, &[]));
        assert_eq!(planned.len(), 1);
        let p = &planned[0];
        assert_eq!(p.target, Target::Scratch);
        // The rectangle in scratch space, half the size on each axis.
        assert_eq!(p.render_area, rect2d(8, 0, 8, 8));
        let pairs = vec![(rect, r(8, 0, 8, 8))];
        assert_eq!(
            p.steps,
            vec![
                Step::Barrier(vec![
                    real(0, L::COLOR_ATTACHMENT_OPTIMAL, L::TRANSFER_SRC_OPTIMAL),
                    scratch(0, L::UNDEFINED, L::TRANSFER_DST_OPTIMAL),
                ]),
                Step::Downscale { attachment: 0, regions: pairs.clone() },
                Step::Barrier(vec![scratch(0, L::TRANSFER_DST_OPTIMAL, L::COLOR_ATTACHMENT_OPTIMAL)]),
                Step::WHOLE,
                Step::Barrier(vec![
                    scratch(0, L::SHADER_READ_ONLY_OPTIMAL, L::TRANSFER_SRC_OPTIMAL),
                    real(0, L::TRANSFER_SRC_OPTIMAL, L::TRANSFER_DST_OPTIMAL),
                ]),
                Step::Upscale { attachment: 0, layers: None, regions: pairs },
            ]
        );
        assert_eq!(finish, vec![real(0, L::TRANSFER_DST_OPTIMAL, L::SHADER_READ_ONLY_OPTIMAL)]);
    }

    #[test]
    fn a_scratch_target_goes_to_the_initial_layout_unless_it_is_undefined() {
        // Loaded from an UNDEFINED layout: downscaled, but its scratch target
        // stays in TRANSFER_DST (there is no layout to render from).
        let mut undefined = att(true, false);
        undefined.initial = L::UNDEFINED;
        let atts = [Some(undefined), Some(att(true, false))];
        let (planned, _) = replays_of(plan(&atts, vec![replay((2, 2), r(0, 0, 32, 32))], false, &blittable, &[]));
        let p = &planned[0];
        assert_eq!(downscaled(p), [0, 1]);
        assert_eq!(p.steps[3], Step::Barrier(vec![scratch(1, L::TRANSFER_DST_OPTIMAL, L::COLOR_ATTACHMENT_OPTIMAL)]));
        assert_eq!(p.steps[4], Step::WHOLE);
        // Neither stores: no upscale and no barrier for one.
        assert_eq!(p.steps.len(), 5);
    }

    #[test]
    fn an_attachment_stored_but_not_loaded_gets_no_downscale() {
        let mut cleared = att(false, true);
        cleared.initial = L::UNDEFINED;
        let stored = att(false, true);
        let mut transient = att(false, false);
        transient.final_ = L::COLOR_ATTACHMENT_OPTIMAL;
        let atts = [Some(cleared), None, Some(stored), Some(transient)];
        let (planned, finish) = replays_of(plan(&atts, vec![replay((2, 2), r(0, 0, 32, 32))], false, &blittable, &[]));
        let p = &planned[0];
        assert_eq!(downscaled(p), Vec::<usize>::new());
        assert_eq!(upscaled(p), [0, 2]);
        // No load: no barrier before the scratch targets are set to the
        // initial layouts (none for an UNDEFINED one).
        assert_eq!(
            p.steps[..2],
            [
                Step::Barrier(vec![
                    scratch(2, L::UNDEFINED, L::COLOR_ATTACHMENT_OPTIMAL),
                    scratch(3, L::UNDEFINED, L::COLOR_ATTACHMENT_OPTIMAL),
                ]),
                Step::WHOLE,
            ]
        );
        assert_eq!(
            p.steps[2],
            Step::Barrier(vec![
                scratch(0, L::SHADER_READ_ONLY_OPTIMAL, L::TRANSFER_SRC_OPTIMAL),
                real(0, L::UNDEFINED, L::TRANSFER_DST_OPTIMAL),
                scratch(2, L::SHADER_READ_ONLY_OPTIMAL, L::TRANSFER_SRC_OPTIMAL),
                real(2, L::COLOR_ATTACHMENT_OPTIMAL, L::TRANSFER_DST_OPTIMAL),
            ])
        );
        // The transient attachment is already in its final layout.
        assert_eq!(
            finish,
            vec![
                real(0, L::TRANSFER_DST_OPTIMAL, L::SHADER_READ_ONLY_OPTIMAL),
                real(2, L::TRANSFER_DST_OPTIMAL, L::SHADER_READ_ONLY_OPTIMAL),
            ]
        );
    }

    #[test]
    fn replays_go_largest_area_first_and_each_loads_what_the_last_stored() {
        // The first replay is not 1x1: nothing goes direct, so all are sorted
        // by area (largest first), then top to bottom, left to right.
        let replays = vec![
            replay((1, 2), r(0, 32, 16, 16)),
            replay((2, 2), r(32, 0, 16, 16)),
            replay((2, 1), r(16, 16, 16, 16)),
            replay((2, 2), r(0, 0, 16, 16)),
            replay((4, 4), r(32, 32, 32, 32)),
        ];
        let (planned, _) = replays_of(plan(&[Some(att(true, true))], replays, false, &blittable, &[]));
        let order: Vec<((u32, u32), u32, u32)> =
            planned.iter().map(|p| (p.replay.area, p.replay.rect.x, p.replay.rect.y)).collect();
        assert_eq!(order, [((4, 4), 32, 32), ((2, 2), 0, 0), ((2, 2), 32, 0), ((2, 1), 16, 16), ((1, 2), 0, 32)]);
        assert!(planned.iter().all(|p| p.target == Target::Scratch));
        // The real attachment starts in its initial layout, then each replay
        // loads it from where the previous replay's upscale left it.
        let first_load = |p: &PlannedReplay| match &p.steps[0] {
            Step::Barrier(c) => c[0],
            s => panic!("{s:?}"),
        };
        assert_eq!(first_load(&planned[0]), real(0, L::COLOR_ATTACHMENT_OPTIMAL, L::TRANSFER_SRC_OPTIMAL));
        for p in &planned[1..] {
            assert_eq!(first_load(p), real(0, L::TRANSFER_DST_OPTIMAL, L::TRANSFER_SRC_OPTIMAL));
        }
    }

    /// A multiview replay renders every view; each view's upscale (its layer)
    /// takes only the bins that view asked for at the replay's area. Where
    /// every view asked for every bin, one upscale covers all their layers.
    #[test]
    fn each_view_upscales_only_the_bins_it_asked_for() {
        let (left, right) = (r(0, 0, 16, 16), r(16, 0, 16, 16));
        let replay = |masks: [u32; 2]| {
            bins::Replay::new(
                (2, 2),
                r(0, 0, 32, 16),
                vec![
                    bins::Bin { rect: left, area: (2, 2), views: masks[0] },
                    bins::Bin { rect: right, area: (2, 2), views: masks[1] },
                ],
            )
        };
        type Upscales = Vec<(Option<(u32, u32)>, Vec<(Rect, Rect)>)>;
        let ups = |rep: bins::Replay, views: &[u32]| -> Upscales {
            let (planned, _) = replays_of(plan(&[Some(att(false, true))], vec![rep], false, &blittable, views));
            planned[0]
                .steps
                .iter()
                .filter_map(|s| match s {
                    Step::Upscale { layers, regions, .. } => Some((*layers, regions.clone())),
                    _ => None,
                })
                .collect()
        };
        assert_eq!(
            ups(replay([0b11, 0b10]), &[0, 1]),
            [(Some((0, 1)), vec![(left, r(0, 0, 8, 8))]), (Some((1, 1)), vec![(r(0, 0, 32, 16), r(0, 0, 16, 8))])]
        );
        assert_eq!(ups(replay([0b11, 0b11]), &[0, 1]), [(Some((0, 2)), vec![(r(0, 0, 32, 16), r(0, 0, 16, 8))])]);
        // Views 0 and 2 (view mask 0b101): layers 0 and 2, never layer 1.
        assert_eq!(
            ups(replay([0b11, 0b11]), &[0, 2]),
            [
                (Some((0, 1)), vec![(r(0, 0, 32, 16), r(0, 0, 16, 8))]),
                (Some((2, 1)), vec![(r(0, 0, 32, 16), r(0, 0, 16, 8))])
            ]
        );
        // Without multiview: all the attachment's layers.
        assert_eq!(ups(replay([1, 1]), &[]), [(None, vec![(r(0, 0, 32, 16), r(0, 0, 16, 8))])]);
    }

    #[test]
    fn what_cannot_be_blitted_renders_at_one_by_one() {
        let two = || vec![replay((2, 2), r(0, 0, 32, 32))];
        // A multisampled attachment is copied, not blitted: it needs the
        // transfer features, not the blit ones.
        let mut ms = att(true, true);
        ms.samples = vk::SampleCountFlags::TYPE_4;
        let why = plan(&[Some(ms.clone())], two(), false, &blittable, &[]).unwrap_err();
        assert_eq!(why, Fallback::Unblittable(ms.format), "{why}");
        let transfer = |_: vk::Format| vk::FormatFeatureFlags::TRANSFER_SRC | vk::FormatFeatureFlags::TRANSFER_DST;
        let (planned, _) = replays_of(plan(&[Some(ms.clone())], two(), false, &transfer, &[]));
        assert_eq!((downscaled(&planned[0]), upscaled(&planned[0])), (vec![0], vec![0]));
        // A multisampled attachment that neither loads nor stores is never scaled.
        ms.load = false;
        ms.store = false;
        assert!(plan(&[Some(ms)], two(), false, &blittable, &[]).is_ok());
        let no_blit_dst = |_: vk::Format| vk::FormatFeatureFlags::BLIT_SRC;
        let why = plan(&[Some(att(false, true))], two(), false, &no_blit_dst, &[]).unwrap_err();
        assert_eq!(why, Fallback::Unblittable(att(false, true).format), "{why}");
        let mut no_transfer = att(true, true);
        no_transfer.usage = vk::ImageUsageFlags::COLOR_ATTACHMENT | vk::ImageUsageFlags::TRANSFER_DST;
        let why = plan(&[Some(no_transfer)], two(), false, &blittable, &[]).unwrap_err();
        assert_eq!(why, Fallback::NoTransferUsage, "{why}");
    }

    /// Where every texel of the scaled image comes from, following the copy
    /// stages through the intermediate image (a map from destination texel
    /// to source texel).
    fn follow(stages: &[Vec<CopyRegion>; 2]) -> std::collections::BTreeMap<(u32, u32), (u32, u32)> {
        let apply = |regions: &[CopyRegion], from: &dyn Fn((u32, u32)) -> Option<(u32, u32)>| {
            let mut out = std::collections::BTreeMap::new();
            for c in regions {
                for y in 0..c.extent.1 {
                    for x in 0..c.extent.0 {
                        let src = (c.src.0 + x, c.src.1 + y);
                        let prev = out.insert((c.dst.0 + x, c.dst.1 + y), from(src).expect("read before written"));
                        assert!(prev.is_none(), "{:?} written twice", (c.dst.0 + x, c.dst.1 + y));
                    }
                }
            }
            out
        };
        let mid = apply(&stages[0], &|p| Some(p));
        apply(&stages[1], &|p| mid.get(&p).copied())
    }

    /// Up: every framebuffer texel of the pairs gets the scratch texel
    /// `(x / area, y / area)` (bins are aligned to their area), nothing else
    /// is written; down: every scratch texel gets the centre of its block
    /// (the texel a nearest blit takes), the partial last column one of what
    /// is left.
    #[test]
    fn multisampled_scaling_copies_map_every_texel_like_the_blit() {
        let area = (2, 4);
        // 34 columns: 17 full blocks; 10 rows: 2 full blocks and 2 rows left.
        let pairs = scaled_regions(r(4, 8, 34, 10), area);
        let up = follow(&scaled_copies(&pairs, area, true));
        assert_eq!(up.len(), 34 * 10);
        for (&(x, y), &s) in &up {
            assert!((4..38).contains(&x) && (8..18).contains(&y), "{x},{y} is outside the rectangle");
            assert_eq!(s, (x / 2, y / 4), "at {x},{y}");
        }
        let down = follow(&scaled_copies(&pairs, area, false));
        assert_eq!(down.len(), 17 * 3);
        for (&(sx, sy), &f) in &down {
            let want_y = if sy < 4 { sy * 4 + 2 } else { 16 + 1 };
            assert_eq!(f, (sx * 2 + 1, want_y), "scratch {sx},{sy}");
        }
        // An axis at area 1 is one region per rectangle on that axis.
        let flat = scaled_copies(&[(r(0, 0, 16, 8), r(0, 0, 16, 4))], (1, 2), true);
        assert_eq!(flat[0], vec![CopyRegion { src: (0, 0), dst: (0, 0), extent: (16, 4) }]);
        let up = follow(&flat);
        assert_eq!(up.len(), 16 * 8);
        assert!(up.iter().all(|(&(x, y), &s)| s == (x, y / 2)), "{up:?}");
    }

    #[test]
    fn clears_are_transformed_to_the_replay_rectangle() {
        let replays = vec![replay((1, 1), r(0, 0, 16, 16)), replay((2, 2), r(16, 0, 16, 16))];
        let (planned, _) = replays_of(plan(&[Some(att(false, true))], replays, false, &blittable, &[]));
        let clear = |x, y, w, h| vk::ClearRect { rect: rect2d(x, y, w, h), base_array_layer: 0, layer_count: 1 };
        let whole = [clear(0, 0, 64, 64)];
        for p in &planned {
            // A clear of everything clears exactly the replay's render area.
            let rects = p.transform().clear_rects(&whole);
            assert_eq!(rects.iter().map(|c| c.rect).collect::<Vec<_>>(), [p.render_area], "{:?}", p.replay);
        }
        let scaled = &planned[1];
        assert_eq!(scaled.render_area, rect2d(8, 0, 8, 8));
        // Clipped to the rectangle, then scaled with the ends rounded up;
        // a clear outside the rectangle is dropped.
        let rects = scaled.transform().clear_rects(&[clear(20, 3, 30, 2), clear(40, 0, 8, 8)]);
        assert_eq!(rects.iter().map(|c| c.rect).collect::<Vec<_>>(), [rect2d(10, 1, 6, 2)]);
    }

    /// With the composite, the replays of an area share one render pass
    /// instance (the first begins it, the last ends it), nothing is upscaled
    /// per replay, and after the last replay one composite per stored
    /// attachment draws each area's bins; only the first group's barrier
    /// is recorded when nothing loads.
    #[test]
    fn an_areas_replays_are_masked_together_in_runs_of_the_viewports() {
        // A direct 1x1 replay, a ring of four at 4x4, six at 2x2 (two runs of at most four), one alone at 1x2.
        let mut replays = vec![replay((1, 1), r(64, 64, 32, 32))];
        replays.extend(
            [r(0, 0, 128, 32), r(0, 32, 32, 64), r(96, 32, 32, 64), r(0, 96, 128, 32)].map(|x| replay((4, 4), x)),
        );
        replays.extend((0..6).map(|k| replay((2, 2), r(32 + 8 * k, 32, 8, 8))));
        replays.push(replay((1, 2), r(32, 48, 8, 8)));
        let atts = [Some(att(false, true))];
        let Plan::Replays { replays: planned, .. } =
            plan_composited(&atts, replays.clone(), false, &blittable, &[], true).unwrap()
        else {
            panic!()
        };
        let areas: Vec<(u32, u32)> = planned.iter().map(|p| p.replay.area).collect();
        assert_eq!(
            areas[..6],
            [(1, 1), (4, 4), (4, 4), (4, 4), (4, 4), (2, 2)],
            "direct first, then largest areas first"
        );
        let runs = masked_runs(&planned, 4);
        let rects = |from: usize, n: usize| planned[from..from + n].iter().map(|p| p.replay.rect).collect::<Vec<_>>();
        use Masked::{Apart, Head, Member};
        let want = [
            vec![Apart],
            vec![Head(rects(1, 4)), Member, Member, Member],
            vec![Head(rects(5, 4)), Member, Member, Member],
            vec![Head(rects(9, 2)), Member],
            vec![Apart],
        ]
        .concat();
        assert_eq!(runs, want);
        // Every member's render is inside its head's instance, the last one's ends it.
        assert_eq!(planned[4].steps, [Step::Render { begin: false, end: true }]);
        assert_eq!(planned[10].steps, [Step::Render { begin: false, end: true }]);
        // Outlined (fdm_overlay): every replay apart; one viewport: every replay apart.
        let Plan::Replays { replays: outlined, .. } =
            plan_composited(&atts, replays, true, &blittable, &[], true).unwrap()
        else {
            panic!()
        };
        assert!(masked_runs(&outlined, 4).iter().all(|m| *m == Apart));
        assert!(masked_runs(&planned, 1).iter().all(|m| *m == Apart));
    }

    #[test]
    fn composited_replays_share_an_instance_per_area_and_end_in_one_composite() {
        let replays =
            vec![replay((2, 2), r(0, 0, 16, 16)), replay((4, 4), r(32, 32, 32, 32)), replay((2, 2), r(32, 0, 16, 16))];
        // An attachment that starts undefined (cleared): no transition of its scratch targets.
        let mut cleared = att(false, true);
        cleared.initial = L::UNDEFINED;
        let p = plan_composited(&[Some(cleared)], replays.clone(), false, &blittable, &[], true).unwrap();
        let Plan::Replays { replays: planned, .. } = p else { panic!("{p:?}") };
        let steps: Vec<&Vec<Step>> = planned.iter().map(|p| &p.steps).collect();
        assert_eq!(
            steps,
            [
                &vec![Step::Barrier(vec![]), Step::WHOLE],
                &vec![Step::Render { begin: true, end: false }],
                &vec![Step::Render { begin: false, end: true }],
            ]
        );
        // One that starts in a layout: each area's scratch target is put in it first.
        let atts = [Some(att(false, true))];
        let p = plan_composited(&atts, replays, false, &blittable, &[], true).unwrap();
        let Plan::Replays { replays: planned, composites, finish } = p else { panic!("{p:?}") };
        let into = Step::Barrier(vec![scratch(0, L::UNDEFINED, L::COLOR_ATTACHMENT_OPTIMAL)]);
        assert_eq!(planned[0].steps, [into.clone(), Step::WHOLE]);
        assert_eq!(planned[1].steps, [into, Step::Render { begin: true, end: false }]);
        // The group's instance covers both rectangles (in scratch space at 2x2).
        assert_eq!(planned[1].render_area, rect2d(0, 0, 24, 8));
        assert_eq!(
            composites,
            [Composite {
                attachment: 0,
                from: L::COLOR_ATTACHMENT_OPTIMAL,
                draws: vec![
                    CompositeDraw { layer: None, area: (4, 4), rects: vec![r(32, 32, 32, 32)] },
                    CompositeDraw { layer: None, area: (2, 2), rects: vec![r(0, 0, 16, 16), r(32, 0, 16, 16)] },
                ],
            }]
        );
        assert_eq!(finish, vec![real(0, L::COLOR_ATTACHMENT_OPTIMAL, L::SHADER_READ_ONLY_OPTIMAL)]);
        // Multiview: each view's own bins, in its layer.
        let two_views = vec![bins::Replay::new(
            (2, 2),
            r(0, 0, 32, 16),
            vec![
                bins::Bin { rect: r(0, 0, 16, 16), area: (2, 2), views: 0b11 },
                bins::Bin { rect: r(16, 0, 16, 16), area: (2, 2), views: 0b10 },
            ],
        )];
        let p = plan_composited(&atts, two_views, false, &blittable, &[0, 1], true).unwrap();
        let Plan::Replays { composites, .. } = p else { panic!("{p:?}") };
        assert_eq!(
            composites[0].draws,
            [
                CompositeDraw { layer: Some(0), area: (2, 2), rects: vec![r(0, 0, 16, 16)] },
                CompositeDraw { layer: Some(1), area: (2, 2), rects: vec![r(0, 0, 32, 16)] },
            ]
        );
    }
}

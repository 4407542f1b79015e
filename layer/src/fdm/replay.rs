//! Replay: recording the replays of a captured pass.
//!
//! At the end of the pass the layer gathers what planning needs (the pass's
//! attachments, the density map, the bin plan from [`super::bins`] through
//! the plan cache), plans ([`super::replay_plan::plan`]), makes every scratch
//! target the plan asks for ([`super::scratch`]) and only then records, by
//! walking the plan: per replay its barriers, downscales, the pass itself
//! (begun over the planned render area, into the real attachments or
//! retargeted at the scratch targets, the captured commands under the
//! replay's [`Transform`], descriptor sets shadowed for input attachments)
//! and upscales; then the transitions to the final layouts. `fdm_overlay`
//! outlines each bin in a colour per area. Any failure before recording is a
//! fallback to 1x1 with the command buffer untouched.

use super::bins::{self, Rect};
use super::commands::{Cmd, InputSubst, MaskFrom, Transform};
use super::descriptors::{free_shadow_pools, shadow_set};
use super::emit::{emit, restore};
use super::fallback::Fallback;
use super::live::{begin_live, begin_real, end_real};
use super::map_readback::density_map;
use super::model::{attachments, Att, Begin, Pass};
use super::replay_plan::{masked_runs, plan_composited, Change, Composite, Masked, Plan, PlannedReplay, Step, Target};
use super::scratch::{barrier, blit, copied, copy_scaled, scratch_targets, Targets, Transition};
use super::Fdm;
use crate::device::DeviceCore;
use crate::id;
use crate::settings::LogLevel;
use ash::vk;

/// Colour per area for `fdm_overlay`.
fn overlay_color(area: (u32, u32)) -> [f32; 4] {
    match area.0 * area.1 {
        1 => [0.1, 0.9, 0.1, 1.0],
        2 => [0.9, 0.9, 0.1, 1.0],
        4 => [0.9, 0.5, 0.1, 1.0],
        8 => [0.9, 0.2, 0.6, 1.0],
        _ => [0.9, 0.1, 0.1, 1.0],
    }
}

/// Outlines each bin of a replay (inside the pass, on colour attachment 0).
///
/// # Safety
/// `cb` is a recording command buffer of `f`'s device, held by the caller,
/// inside a replay of a pass with a colour attachment 0.
unsafe fn overlay(f: &Fdm, cb: vk::CommandBuffer, replay: &bins::Replay, t: &Transform) {
    let att = [vk::ClearAttachment {
        aspect_mask: vk::ImageAspectFlags::COLOR,
        color_attachment: 0,
        clear_value: vk::ClearValue { color: vk::ClearColorValue { float32: overlay_color(replay.area) } },
    }];
    let mut rects = Vec::new();
    let mut push = |r: vk::Rect2D| {
        if r.extent.width > 0 && r.extent.height > 0 {
            rects.push(vk::ClearRect { rect: r, base_array_layer: 0, layer_count: 1 });
        }
    };
    for b in replay.bins.iter().map(|b| b.rect) {
        let e = t.rect(&vk::Rect2D {
            offset: vk::Offset2D { x: b.x as i32, y: b.y as i32 },
            extent: vk::Extent2D { width: b.w, height: b.h },
        });
        let (w, h) = (e.extent.width, e.extent.height);
        push(vk::Rect2D { offset: e.offset, extent: vk::Extent2D { width: w, height: 1.min(h) } });
        push(vk::Rect2D { offset: e.offset, extent: vk::Extent2D { width: 1.min(w), height: h } });
    }
    if !rects.is_empty() {
        // SAFETY: the caller's guarantee (recording, inside the replay, colour
        // attachment 0 exists); the arrays are live locals of the counts given.
        unsafe { (f.below.fp_v1_0().cmd_clear_attachments)(cb, 1, att.as_ptr(), rects.len() as u32, rects.as_ptr()) };
    }
}

/// Plans and records the replays of a captured pass; `Err(why)` when it
/// must render at 1x1 instead (nothing has been recorded then).
///
/// # Safety
/// `cb` is the recording command buffer of `f`'s device that `pass` was
/// captured in, held by the caller at the application's end of the pass,
/// outside any render pass; the capture rule of [`super::commands`] holds
/// for `pass`'s commands, begin and attachments.
pub(super) unsafe fn replay(dev: &DeviceCore, f: &Fdm, cb: vk::CommandBuffer, pass: &mut Pass) -> Result<(), Fallback> {
    let (atts, map, map_layout, extent, fb_layers, view_mask) = attachments(f, &pass.begin)?;
    let m = match &pass.map {
        Some(m) => m.clone(),
        // SAFETY: the map's view is alive (the capture rule: the pass's
        // begin names it) and in the layout the pass expects it in.
        None => unsafe { density_map(dev, f, map, map_layout)? },
    };
    let (mw, mh, ml, texels) = (m.width, m.height, m.layers, &m.texels);
    let ra = pass.begin.area();
    let render_area =
        Rect { x: ra.offset.x.max(0) as u32, y: ra.offset.y.max(0) as u32, w: ra.extent.width, h: ra.extent.height };
    let (texel, cap) = f.texel_grid(extent, (mw, mh));
    // The views of a multiview pass (none without): each reads its layer of
    // a layered map (layer 0 of a single-layer one) with its own offset.
    // (Or the layers of a per-layer pass, planned as views.)
    let multiview = view_mask != 0;
    let view_mask = pass.begin.planned_views(view_mask, fb_layers, f.controls.without_per_layer);
    let views: Vec<u32> = (0..32).filter(|i| view_mask & (1 << i) != 0).collect();
    let planned_views: Vec<bins::View> = if views.is_empty() { vec![0] } else { views.clone() }
        .into_iter()
        .map(|v| {
            let layer = if ml > 1 { v } else { 0 };
            let o = if f.controls.without_offsets { None } else { pass.offsets.get(layer as usize) };
            bins::View { layer, offset: o.map_or((0, 0), |o| (o.x, o.y)) }
        })
        .collect();
    let map = bins::DensityMap { width: mw, height: mh, layers: ml, texels };
    let vertex_cost = 2000.0 + pass.cmds.iter().map(Cmd::vertices).sum::<f64>();
    let one_area = f.controls.one_area_per_pass;
    let replays = f.plans.get_or_plan(&m, (render_area, (texel, cap), &planned_views, vertex_cost), || {
        bins::plan(
            &bins::bins(&map, render_area, texel, &planned_views, cap, one_area, !f.controls.without_edge_fragments),
            vertex_cost,
        )
    });
    if f.controls.without_msaa && atts.iter().flatten().any(copied) && replays.iter().any(|r| r.area != (1, 1)) {
        return Err(Fallback::Multisampled);
    }
    // The composite (one render pass instance per area, one composite per stored attachment) where every stored
    // attachment can be drawn so and the pass has one subpass; else each replay upscales its own bins.
    // Not in a secondary command buffer: the composite begins render passes of the layer's own, which may begin
    // only in a primary (`VUID-vkCmdBeginRenderPass-bufferlevel`); the replays' blits may go anywhere.
    let composite = !f.controls.without_composite
        && !pass.secondary
        && !pass.has_several_subpasses()
        && atts.iter().flatten().filter(|a| a.store).all(|a| super::composite::eligible(f, a, !views.is_empty()));
    let features = |format| f.format_features(format);
    let (planned, composites, finish) = match plan_composited(&atts, replays, f.overlay, &features, &views, composite)?
    {
        Plan::AsRecorded => {
            // SAFETY: the caller's guarantee: `cb` is recording at the end of
            // the captured `pass`, outside a render pass.
            unsafe {
                begin_live(f, cb, pass);
                end_real(f, cb, &pass.begin);
            }
            return Ok(());
        }
        Plan::Replays { replays, composites, finish } => (replays, composites, finish),
    };
    if let Some(why) = lacks_variants(f, pass, &planned) {
        return Err(why);
    }
    let per_view = multiview && per_view_ready(f, pass, &planned, &views);
    // The replays of one area recorded at once, as viewports (single-view passes), and the buffer of their masks.
    let (masked, run_words) = masked(f, pass, &planned, views.is_empty());
    // Every replay's scratch targets exist before anything is recorded: a
    // failure to make one (out of memory) is a fallback to 1x1 with the
    // command buffer untouched, never a pass half replayed.
    let scratch = planned
        .iter()
        .map(|p| match p.target {
            Target::Direct => Ok(None),
            // SAFETY: the pass's begin and attachments are alive (the capture rule).
            Target::Scratch => {
                unsafe { scratch_targets(dev, f, cb, &pass.begin, &atts, p.replay.area, extent, fb_layers) }
                    .map(Some)
                    .map_err(Fallback::ScratchTargets)
            }
        })
        .collect::<Result<Vec<_>, _>>()?;
    // So are the shadow copies of the descriptor sets whose input attachments must read a replay's scratch views.
    // SAFETY: the caller's guarantee (the capture rule holds for `pass`).
    let substs = unsafe { input_substs(dev, f, pass, &atts, &scratch) }?;
    // The composites' objects, before anything is recorded too.
    let by_area = |area: (u32, u32)| {
        planned.iter().zip(&scratch).find(|(p, _)| p.replay.area == area && p.target == Target::Scratch)?.1.clone()
    };
    // The subsampled attachments stored packed: their composites write each rectangle's texels 1:1.
    let packed = super::subsampled::packable(f, &composites, &atts, (extent, pass.begin.area(), views.is_empty()));
    let packed_atts: Vec<usize> = packed.iter().map(|p| p.attachment).collect();
    let prepared = if composites.is_empty() {
        None
    } else {
        // SAFETY: the pass's attachments are alive (the capture rule); the scratch targets were made for them.
        let kept: Vec<Rect> = planned.iter().filter(|p| p.target == Target::Direct).map(|p| p.replay.rect).collect();
        match unsafe { super::composite::prepare(f, &composites, &atts, &by_area, (extent, &kept), &packed_atts) } {
            Ok(p) => Some(p),
            Err(e) => {
                for s in &substs {
                    // SAFETY: the layer's own pools, just made; nothing was recorded with their sets.
                    unsafe { free_shadow_pools(f, &mut s.pools.borrow_mut()) };
                }
                return Err(Fallback::CompositeObjects(e));
            }
        }
    };
    // SAFETY: the caller's guarantee: `cb` is recording at the end of the
    // captured `pass`, outside a render pass; the targets, shadow sets and
    // the composites' objects were made above for these attachments.
    unsafe {
        for (((p, targets), subst), mask) in planned.iter().zip(&scratch).zip(&substs).zip(&masked) {
            let views = per_view.then_some(&views[..]);
            record_replay(f, cb, pass, &atts, p, (targets.as_ref(), subst), (views, mask, run_words));
        }
        if let Some(p) = &prepared {
            super::composite::record(f, cb, p, &composites, &atts, &by_area, extent, pass.begin.area());
            pass.compute_bound |= p.computes();
            pass.shadow_pools.push(p.pool);
            super::subsampled::record_packed(f, cb, &packed);
            pass.packed = packed.iter().map(|p| p.image).collect();
        }
        barrier(f, cb, &transitions(&atts, None, &finish));
    }
    for s in substs {
        pass.shadow_pools.extend(s.pools.take());
    }
    if dev.log().enabled(LogLevel::Debug) {
        super::subsampled::log_packed(dev, &packed_atts);
        let all_bins =
            bins::bins(&map, render_area, texel, &planned_views, cap, one_area, !f.controls.without_edge_fragments);
        let per_view = per_view.then_some(&views[..]);
        log_plan(
            dev,
            f,
            &all_bins,
            (planned_views.len() as u32, per_view),
            (&planned, &composites, &masked),
            pass.cmds.len(),
            &atts,
            prepared.as_ref().map_or(&[][..], |p| &p.painted),
        );
    }
    Ok(())
}

/// Whether `pass`'s replays (`planned`, a multiview pass of views `views`)
/// can take per-view viewports (`per_view.rs`): they run, cover the
/// views, and every graphics pipeline the pass binds has its per-view
/// partner at every area planned (no shader objects).
fn per_view_ready(f: &Fdm, pass: &Pass, planned: &[PlannedReplay], views: &[u32]) -> bool {
    let Some(pv) = &f.per_view else { return false };
    if f.controls.without_per_view_viewports || views.len() < 2 || views.iter().any(|v| *v >= pv.max_viewports) {
        return false;
    }
    let pipelines = f.pipelines.lock();
    pass.state.commands().chain(&pass.cmds).all(|c| match c {
        Cmd::BindPipeline(vk::PipelineBindPoint::GRAPHICS, p) => planned.iter().all(|r| {
            let chosen = pipelines.get(p).and_then(|i| i.variants.get(&r.replay.area).copied()).unwrap_or(*p);
            pv.partner(chosen).is_some()
        }),
        Cmd::BindShaders(_) => false,
        _ => true,
    })
}

/// Per replay, its input attachments' scratch views and the shadow sets made
/// for them (none made, nothing left behind, where one cannot be made).
///
/// # Safety
/// As [`replay`]; `scratch` are the scratch targets made for `atts`.
unsafe fn input_substs(
    dev: &DeviceCore,
    f: &Fdm,
    pass: &Pass,
    atts: &[Option<Att>],
    scratch: &[Option<Targets>],
) -> Result<Vec<InputSubst>, Fallback> {
    let mut substs: Vec<InputSubst> = Vec::with_capacity(scratch.len());
    for targets in scratch {
        let subst = InputSubst {
            views: match targets {
                Some(t) => atts.iter().zip(&t.views).filter_map(|(a, sv)| Some((a.as_ref()?.view, (*sv)?))).collect(),
                None => Default::default(),
            },
            ..Default::default()
        };
        // SAFETY: the caller's guarantee (the capture rule holds for `pass`).
        let made = if subst.views.is_empty() { Ok(()) } else { unsafe { shadow_sets(dev, f, pass, &subst) } };
        substs.push(subst);
        if let Err(why) = made {
            for s in &substs {
                // SAFETY: the layer's own pools, just made; nothing was recorded with their sets.
                unsafe { free_shadow_pools(f, &mut s.pools.borrow_mut()) };
            }
            return Err(why);
        }
    }
    Ok(substs)
}

/// What each of `planned` records where the replays of one area of `pass`
/// are recorded at once (`viewport_mask.rs`, [`masked_runs`]): where the
/// masks run, the pass has one view (`single_view`) and every graphics
/// pipeline it binds has its viewport-mask partner at every area planned
/// (no shader objects, no viewports or scissors with a count); else every
/// replay apart.
fn masked(f: &Fdm, pass: &Pass, planned: &[PlannedReplay], single_view: bool) -> (Vec<Masked>, vk::Buffer) {
    let apart = || (vec![Masked::Apart; planned.len()], vk::Buffer::null());
    let areas: Vec<(u32, u32)> = planned.iter().map(|r| r.replay.area).collect();
    if !single_view || !super::viewport_mask::covers(f, pass, &areas) {
        return apart();
    }
    let runs = masked_runs(planned, super::viewport_mask::VIEWPORTS as usize);
    if runs.iter().all(|m| *m == Masked::Apart) {
        return apart();
    }
    // The runs' masks (made at the first pass that needs them; none made: every replay apart).
    match f.masks.as_ref().and_then(|m| m.run_words(f)) {
        Some(words) => (runs, words),
        None => apart(),
    }
}

/// Why `planned` cannot be recorded for `pass`, if a pipeline whose fragment
/// shader needs a per-area variant lacks one a replay needs (it could not be
/// made: out of memory), or a bound shader object cannot be replayed or
/// lacks its variant: the pass renders at 1x1, before anything is recorded.
fn lacks_variants(f: &Fdm, pass: &Pass, planned: &[PlannedReplay]) -> Option<Fallback> {
    {
        let pipelines = f.pipelines.lock();
        for c in pass.state.commands().chain(&pass.cmds) {
            let Cmd::BindPipeline(vk::PipelineBindPoint::GRAPHICS, p) = c else { continue };
            let Some(info) = pipelines.get(p).filter(|i| i.needs_variants) else { continue };
            if planned.iter().any(|r| !info.variants.contains_key(&r.replay.area)) {
                return Some(Fallback::PipelineVariants);
            }
        }
    }
    let areas: Vec<(u32, u32)> = planned.iter().map(|r| r.replay.area).collect();
    let bound = pass.state.commands().chain(&pass.cmds).filter_map(|c| match c {
        Cmd::BindShaders(b) => Some(b),
        _ => None,
    });
    super::shader_objects::check(f, bound.flat_map(|b| b.iter()), &areas).map(Fallback::ShaderObject)
}

/// The plan of a binned pass, for the debug log: its replays, what they
/// shade against the ideal, the transfer regions they record (each a blit
/// or copy of its own on some drivers), their render pass instances, the
/// composites' draws (`painted`: per layer in painter's order, its first
/// draw's rectangles before and after) and the scratch sets.
#[allow(clippy::too_many_arguments)]
fn log_plan(
    dev: &DeviceCore,
    f: &Fdm,
    all_bins: &[bins::Bin],
    (views, per_view): (u32, Option<&[u32]>),
    (planned, composites, masked): (&[PlannedReplay], &[Composite], &[Masked]),
    commands: usize,
    atts: &[Option<Att>],
    painted: &[(usize, usize)],
) {
    let replays: Vec<bins::Replay> = planned.iter().map(|p| p.replay.clone()).collect();
    let (mut shaded, ideal) = bins::shaded(&replays, all_bins, views);
    if let Some(v) = per_view {
        // Each view shades its own rectangle of each replay.
        shaded = replays
            .iter()
            .flat_map(|r| r.view_clips(v).into_iter().flatten().map(|c| (c, r.area)))
            .map(|(c, a)| c.pixels().div_ceil((a.0 * a.1) as u64))
            .sum();
    }
    let areas: Vec<String> = replays
        .iter()
        .map(|r| {
            format!(
                "{}x{} {}x{}+{}+{} ({} bins)",
                r.area.0,
                r.area.1,
                r.rect.w,
                r.rect.h,
                r.rect.x,
                r.rect.y,
                r.bins.len()
            )
        })
        .collect();
    let regions = |up: bool| -> usize {
        planned
            .iter()
            .flat_map(|p| &p.steps)
            .map(|st| match st {
                Step::Upscale { regions, .. } if up => regions.len(),
                Step::Downscale { regions, .. } if !up => regions.len(),
                _ => 0,
            })
            .sum()
    };
    dev.log().debug(
        id::FDM_PLAN,
        &format!(
            "{} bins, {} replays [{}]; fragments shaded {shaded} (ideal {ideal}){}; {} upscale and {} downscale regions; {} render pass instances; {} composite draws{}; {} of them dispatched (compute); {commands} commands replayed each{}; {} scratch sets for its attachments",
            all_bins.len(),
            replays.len(),
            areas.join(", "),
            if per_view.is_some() { ", per-view viewports" } else { "" },
            regions(true),
            regions(false),
            planned.iter().flat_map(|p| &p.steps).filter(|s| matches!(s, Step::Render { begin: true, .. })).count(),
            composites.iter().map(|c| c.draws.len()).sum::<usize>(),
            painted.iter().map(|(a, b)| format!(" (in painter's order: {a} rectangles as {b})")).collect::<String>(),
            composites
                .iter()
                .filter(|c| atts[c.attachment].as_ref().is_some_and(|a| a.storage))
                .map(|c| c.draws.len())
                .sum::<usize>(),
            match masked.iter().filter(|m| **m != Masked::Member).count() {
                n if n < planned.len() => format!(" ({n} times: an area's replays as viewports)"),
                _ => String::new(),
            },
            atts.iter().flatten().next().map_or(0, |a| super::scratch::sets_with(f, a.view))
        ),
    );
}

/// The barriers of `changes`: on the real attachments, or on the scratch
/// images of `targets`.
fn transitions(atts: &[Option<Att>], targets: Option<&Targets>, changes: &[Change]) -> Vec<Transition> {
    changes
        .iter()
        .filter_map(|c| {
            let a = atts[c.attachment].as_ref()?;
            let (image, range) = if c.scratch {
                let image = targets?.images[c.attachment]?;
                (image, vk::ImageSubresourceRange { base_mip_level: 0, base_array_layer: 0, ..a.range })
            } else {
                (a.image, a.range)
            };
            Some(Transition { image, range, old: c.old, new: c.new })
        })
        .collect()
}

/// Makes the shadow copy of every descriptor set `pass` binds (at its start
/// or in it) whose input attachments `subst` retargets; `Err(why)` when one
/// cannot be made.
///
/// # Safety
/// As [`replay`].
unsafe fn shadow_sets(dev: &DeviceCore, f: &Fdm, pass: &Pass, subst: &InputSubst) -> Result<(), Fallback> {
    for c in pass.state.commands().chain(&pass.cmds) {
        if let Cmd::BindSets { sets, .. } = c {
            for set in sets {
                // SAFETY: the caller's guarantee (the capture rule): a set bound in the pass being ended is valid and
                // bound in the recording command buffer the caller holds.
                unsafe { shadow_set(dev, f, *set, subst) }?;
            }
        }
    }
    Ok(())
}

/// Records one planned replay: its steps in order, into the real
/// attachments (`targets` is `None`) or into its scratch targets.
///
/// # Safety
/// As [`replay`]; `atts` are `pass`'s attachments and `targets` the scratch
/// targets made for them at the replay's area, `subst` their views and the
/// shadow sets made for them.
unsafe fn record_replay(
    f: &Fdm,
    cb: vk::CommandBuffer,
    pass: &mut Pass,
    atts: &[Option<Att>],
    p: &PlannedReplay,
    (targets, subst): (Option<&Targets>, &InputSubst),
    (views, mask, run_words): (Option<&[u32]>, &Masked, vk::Buffer),
) {
    // With per-view viewports, each view's rectangle of this replay; masked, each replay's of the run, then none
    // for the viewports no replay takes.
    let clips = match mask {
        Masked::Head(rects) => {
            let mut c: Vec<Option<Rect>> = rects.iter().copied().map(Some).collect();
            c.resize(super::viewport_mask::VIEWPORTS as usize, None);
            Some(c)
        }
        _ => views.map(|v| p.replay.view_clips(v)),
    };
    let scratch_image = |i: usize| targets.and_then(|t| t.images[i]);
    let mid_image = |i: usize| targets.and_then(|t| t.mids[i]);
    // SAFETY: the caller's guarantee: `cb` is recording, outside a render pass except between the begin and end of a
    // `Render` step (the steps keep barriers and blits outside it); the images are the pass's attachments (alive: the
    // capture rule) and the scratch targets, in the layouts the plan's barriers put them in.
    unsafe {
        for step in &p.steps {
            match step {
                Step::Barrier(changes) => barrier(f, cb, &transitions(atts, targets, changes)),
                Step::Downscale { attachment, regions } => {
                    let (Some(a), Some(si)) = (&atts[*attachment], scratch_image(*attachment)) else { continue };
                    match mid_image(*attachment) {
                        // Multisampled: copies through the intermediate image, every sample kept.
                        Some(mid) => copy_scaled(f, cb, a.image, si, mid, a, regions, p.replay.area, false, None),
                        None => blit(f, cb, (a.image, a), (si, a), regions, false, true, None),
                    }
                }
                Step::Upscale { attachment, layers, regions } => {
                    let (Some(a), Some(si)) = (&atts[*attachment], scratch_image(*attachment)) else { continue };
                    // A view's layer past the attachment's (an invalid pass) is not blitted.
                    let inside = layers.is_none_or(|(first, n)| first + n <= a.range.layer_count);
                    match mid_image(*attachment) {
                        _ if !inside => {}
                        Some(mid) => copy_scaled(f, cb, si, a.image, mid, a, regions, p.replay.area, true, *layers),
                        None => blit(f, cb, (si, a), (a.image, a), regions, true, true, *layers),
                    }
                }
                Step::Render { begin: first, end: last } => {
                    let mut begin = pass.begin.clone();
                    let mut t = p.transform();
                    t.views = clips.as_deref();
                    if let Masked::Head(rects) = mask {
                        t.mask = MaskFrom::Binding;
                        t.clip = rects.iter().copied().reduce(|a, b| a.union(&b));
                    }
                    match targets {
                        Some(s) => {
                            t.inputs = Some(subst);
                            retarget(&mut begin, p.render_area, s.framebuffer, &s.views);
                        }
                        None => set_area(&mut begin, p.render_area),
                    }
                    if *first {
                        begin_real(f, cb, &begin);
                    }
                    // A run's mask at the layer's binding (word n - 1: the n replays' viewports).
                    if let (Masked::Head(rects), Some(m)) = (mask, &f.masks) {
                        let word = (rects.len() as u64 - 1) * 4;
                        (f.below.fp_v1_0().cmd_bind_vertex_buffers)(cb, m.binding, 1, &run_words, &word);
                    }
                    // A member of a masked run: its head recorded it.
                    if *mask != Masked::Member {
                        replay_cmds(f, cb, pass, &t);
                    }
                    if p.outline {
                        overlay(f, cb, &p.replay, &t);
                    }
                    if *last {
                        end_real(f, cb, &begin);
                    }
                }
            }
        }
    }
}

fn set_area(begin: &mut Begin, area: vk::Rect2D) {
    match begin {
        Begin::RenderPass { area: a, .. } | Begin::Rendering { area: a, .. } => *a = area,
    }
}

/// Points a begin at the scratch targets.
pub(super) fn retarget(begin: &mut Begin, area: vk::Rect2D, fb: vk::Framebuffer, views: &[Option<vk::ImageView>]) {
    set_area(begin, area);
    match begin {
        Begin::RenderPass { framebuffer, views: v, .. } => {
            *framebuffer = fb;
            v.clear();
        }
        Begin::Rendering { colors, depth, stencil, .. } => {
            // The scratch views in the order `attachments` lists the views:
            // per attachment its view, then its resolve view, each the first
            // time it is named (the depth and stencil attachments of one
            // image share theirs).
            let mut it = views.iter().flatten();
            let mut seen: Vec<(vk::ImageView, vk::ImageView)> = Vec::new();
            let mut scratch = |real: vk::ImageView, it: &mut dyn Iterator<Item = &vk::ImageView>| {
                if let Some((_, s)) = seen.iter().find(|(r, _)| *r == real) {
                    return *s;
                }
                let s = *it.next().unwrap();
                seen.push((real, s));
                s
            };
            let mut fix = |a: &mut vk::RenderingAttachmentInfo<'static>,
                           it: &mut dyn Iterator<Item = &vk::ImageView>| {
                if a.image_view == vk::ImageView::null() {
                    return;
                }
                a.image_view = scratch(a.image_view, it);
                if a.resolve_mode != vk::ResolveModeFlags::NONE && a.resolve_image_view != vk::ImageView::null() {
                    a.resolve_image_view = scratch(a.resolve_image_view, it);
                }
            };
            for c in colors.iter_mut() {
                fix(c, &mut it);
            }
            if let Some(d) = depth {
                fix(d, &mut it);
            }
            if let Some(s) = stencil {
                fix(s, &mut it);
            }
        }
    }
}

/// The state at the start of the pass, then its commands, under `t`.
///
/// # Safety
/// The capture rule of [`super::commands`]: `cb` is the recording command
/// buffer `pass` was captured in, inside a (replay's) begin of the pass.
pub(super) unsafe fn replay_cmds(f: &Fdm, cb: vk::CommandBuffer, pass: &Pass, t: &Transform) {
    let mut st = pass.state.clone();
    // SAFETY: the caller's guarantee (the capture rule).
    unsafe {
        restore(f, cb, &pass.state, t);
        for c in &pass.cmds {
            emit(f, cb, c, t, &mut st);
        }
    }
}

//! Replay: recording the replays of a captured pass.
//!
//! At the end of the pass the layer plans replays ([`super::bins`]) and
//! records, per replay: a downscale of the attachments that load, the pass
//! into scratch targets `1/area` the size of the framebuffer (commands under
//! the replay's [`Transform`]), and an upscale of each of its bins into the
//! real attachments ([`super::scratch`]). A replay at 1x1 renders directly
//! into the real attachments where nothing it overwrites is still to be
//! loaded. `fdm_overlay` outlines each bin in a colour per area.

use super::bins::{self, Rect};
use super::commands::{emit, restore, Cmd, InputSubst, Transform};
use super::map_readback::density_map;
use super::pass::{attachments, begin_live, begin_real, end_real, Begin, Pass};
use super::scratch::{barrier, blit, scaled_regions, scratch_views, Transition};
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
unsafe fn overlay(f: &Fdm, cb: vk::CommandBuffer, replay: &bins::Replay, t: &Transform, has_color: bool) {
    if !has_color {
        return;
    }
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
    for b in &replay.bins {
        let e = t.rect(&vk::Rect2D {
            offset: vk::Offset2D { x: b.x as i32, y: b.y as i32 },
            extent: vk::Extent2D { width: b.w, height: b.h },
        });
        let (w, h) = (e.extent.width, e.extent.height);
        push(vk::Rect2D { offset: e.offset, extent: vk::Extent2D { width: w, height: 1.min(h) } });
        push(vk::Rect2D { offset: e.offset, extent: vk::Extent2D { width: 1.min(w), height: h } });
    }
    if !rects.is_empty() {
        (f.below.fp_v1_0().cmd_clear_attachments)(cb, 1, att.as_ptr(), rects.len() as u32, rects.as_ptr());
    }
}

/// Plans and records the replays of a captured pass; `Err(why)` when it
/// must render at 1x1 instead (nothing has been recorded then).
pub(super) unsafe fn replay(dev: &DeviceCore, f: &Fdm, cb: vk::CommandBuffer, pass: &mut Pass) -> Result<(), String> {
    let (atts, map, map_layout, extent, fb_layers, view_mask) = attachments(f, &pass.begin)?;
    let m = match &pass.map {
        Some(m) => m.clone(),
        None => density_map(dev, f, map, map_layout)?,
    };
    let (mw, mh, ml, texels) = (m.width, m.height, m.layers, &m.texels);
    let ra = pass.begin.area();
    let render_area =
        Rect { x: ra.offset.x.max(0) as u32, y: ra.offset.y.max(0) as u32, w: ra.extent.width, h: ra.extent.height };
    let texel = (
        bins::texel_size(extent.0, mw, super::MIN_TEXEL, super::MAX_TEXEL),
        bins::texel_size(extent.1, mh, super::MIN_TEXEL, super::MAX_TEXEL),
    );
    let views: Vec<u32> =
        if view_mask == 0 { vec![0] } else { (0..32).filter(|i| view_mask & (1 << i) != 0).collect() };
    let map = bins::DensityMap { width: mw, height: mh, layers: ml, texels };
    let layers: &[u32] = if ml > 1 { &views } else { &[0] };
    let vertex_cost = 2000.0 + pass.cmds.iter().map(Cmd::vertices).sum::<f64>();
    let mut replays = f.plans.get_or_plan(&m, (render_area, texel, layers, vertex_cost), || {
        bins::plan(&bins::bins(&map, render_area, texel, layers, super::MAX_AREA), vertex_cost)
    });
    if replays.len() == 1 && replays[0].area == (1, 1) && !f.overlay {
        // Density 1 everywhere: the pass exactly as the application recorded it.
        begin_live(f, cb, pass);
        end_real(f, cb, &pass.begin);
        return Ok(());
    }
    let scratch_needed = replays.iter().any(|r| r.area != (1, 1));
    if scratch_needed {
        for a in atts.iter().flatten() {
            if a.samples != vk::SampleCountFlags::TYPE_1 && (a.load || a.store) {
                return Err("a multisampled attachment loads or stores (no scaled blit for it)".into());
            }
            let need = vk::FormatFeatureFlags::BLIT_SRC | vk::FormatFeatureFlags::BLIT_DST;
            if (a.load || a.store) && !f.format_features(a.format).contains(need) {
                return Err(format!("{:?} cannot be blitted", a.format));
            }
            if (a.load || a.store)
                && !a.usage.contains(vk::ImageUsageFlags::TRANSFER_SRC | vk::ImageUsageFlags::TRANSFER_DST)
            {
                return Err("an attachment image was not created with transfer usage".into());
            }
        }
    }
    let loads = atts.iter().flatten().any(|a| a.load);
    // A direct 1x1 replay writes its whole rectangle: only first, and only
    // where nothing it overwrites must still be loaded by another replay.
    let direct = replays.first().is_some_and(|r| {
        r.area == (1, 1) && (!loads || replays[1..].iter().all(|o| o.bins.iter().all(|b| !b.intersects(&r.rect))))
    });
    if !direct {
        replays.sort_by_key(|r| (std::cmp::Reverse(r.area.0 * r.area.1), r.rect.y, r.rect.x));
    }
    let has_color = atts.iter().flatten().any(|a| a.range.aspect_mask == vk::ImageAspectFlags::COLOR);
    // Every replay's scratch targets exist before anything is recorded: a
    // failure to make one (out of memory) is a fallback to 1x1 with the
    // command buffer untouched, never a pass half replayed.
    let mut scratch = Vec::with_capacity(replays.len());
    for (k, r) in replays.iter().enumerate() {
        scratch.push(if k == 0 && direct {
            None
        } else {
            Some(
                scratch_views(dev, f, &pass.begin, &atts, r.area, extent, fb_layers)
                    .map_err(|e| format!("scratch targets: {e:?}"))?,
            )
        });
    }
    // Where each real attachment's layout is now.
    let mut cur: Vec<vk::ImageLayout> =
        atts.iter().map(|a| a.as_ref().map_or(vk::ImageLayout::UNDEFINED, |a| a.initial)).collect();
    for (r, scratch) in replays.iter().zip(scratch) {
        // Only the direct replay has no scratch targets.
        let Some((sviews, sfb)) = scratch else {
            let t = Transform { area: (1, 1), clip: Some(r.rect), inputs: None };
            let mut begin = pass.begin.clone();
            set_area(
                &mut begin,
                vk::Rect2D {
                    offset: vk::Offset2D { x: r.rect.x as i32, y: r.rect.y as i32 },
                    extent: vk::Extent2D { width: r.rect.w, height: r.rect.h },
                },
            );
            begin_real(f, cb, &begin);
            replay_cmds(f, cb, pass, &t);
            if f.overlay {
                overlay(f, cb, r, &t, has_color);
            }
            end_real(f, cb, &begin);
            for (c, a) in cur.iter_mut().zip(&atts) {
                if let Some(a) = a {
                    *c = a.final_;
                }
            }
            continue;
        };
        let simages: Vec<Option<vk::Image>> = {
            let cache = f.scratch.lock();
            let key_views: Vec<vk::ImageView> = atts.iter().flatten().map(|a| a.view).collect();
            cache.sets[&(key_views, r.area)].images.iter().map(|x| x.map(|x| x.0)).collect()
        };
        // Down: real (rect) -> scratch, for attachments that load.
        let mut t1 = Vec::new();
        for (i, a) in atts.iter().enumerate() {
            let (Some(a), Some(si)) = (a, simages[i]) else { continue };
            let srange = vk::ImageSubresourceRange { base_mip_level: 0, base_array_layer: 0, ..a.range };
            if a.load {
                t1.push(Transition {
                    image: a.image,
                    range: a.range,
                    old: cur[i],
                    new: vk::ImageLayout::TRANSFER_SRC_OPTIMAL,
                });
                cur[i] = vk::ImageLayout::TRANSFER_SRC_OPTIMAL;
                t1.push(Transition {
                    image: si,
                    range: srange,
                    old: vk::ImageLayout::UNDEFINED,
                    new: vk::ImageLayout::TRANSFER_DST_OPTIMAL,
                });
            }
        }
        if !t1.is_empty() {
            barrier(f, cb, &t1);
        }
        let mut t2 = Vec::new();
        for (i, a) in atts.iter().enumerate() {
            let (Some(a), Some(si)) = (a, simages[i]) else { continue };
            let srange = vk::ImageSubresourceRange { base_mip_level: 0, base_array_layer: 0, ..a.range };
            if a.load {
                blit(f, cb, (a.image, a), (si, a), &scaled_regions(r.rect, r.area), false, true);
                if a.initial != vk::ImageLayout::UNDEFINED {
                    t2.push(Transition {
                        image: si,
                        range: srange,
                        old: vk::ImageLayout::TRANSFER_DST_OPTIMAL,
                        new: a.initial,
                    });
                }
            } else if a.initial != vk::ImageLayout::UNDEFINED {
                t2.push(Transition { image: si, range: srange, old: vk::ImageLayout::UNDEFINED, new: a.initial });
            }
        }
        barrier(f, cb, &t2);
        // The pass, at this area.
        let subst = InputSubst {
            views: atts.iter().zip(&sviews).filter_map(|(a, sv)| Some((a.as_ref()?.view, (*sv)?))).collect(),
            ..Default::default()
        };
        let t = Transform { area: r.area, clip: Some(r.rect), inputs: Some(&subst) };
        let sarea = t.rect(&vk::Rect2D {
            offset: vk::Offset2D { x: r.rect.x as i32, y: r.rect.y as i32 },
            extent: vk::Extent2D { width: r.rect.w, height: r.rect.h },
        });
        let mut begin = pass.begin.clone();
        retarget(&mut begin, sarea, sfb, &sviews);
        begin_real(f, cb, &begin);
        replay_cmds(f, cb, pass, &t);
        if f.overlay {
            overlay(f, cb, r, &t, has_color);
        }
        end_real(f, cb, &begin);
        pass.shadow_pools.extend(subst.pools.take());
        // Up: scratch -> real, for the replay's bins.
        let mut t3 = Vec::new();
        for (i, a) in atts.iter().enumerate() {
            let (Some(a), Some(si)) = (a, simages[i]) else { continue };
            if a.store {
                let srange = vk::ImageSubresourceRange { base_mip_level: 0, base_array_layer: 0, ..a.range };
                t3.push(Transition {
                    image: si,
                    range: srange,
                    old: a.final_,
                    new: vk::ImageLayout::TRANSFER_SRC_OPTIMAL,
                });
                t3.push(Transition {
                    image: a.image,
                    range: a.range,
                    old: cur[i],
                    new: vk::ImageLayout::TRANSFER_DST_OPTIMAL,
                });
                cur[i] = vk::ImageLayout::TRANSFER_DST_OPTIMAL;
            }
        }
        if !t3.is_empty() {
            barrier(f, cb, &t3);
        }
        for (i, a) in atts.iter().enumerate() {
            let (Some(a), Some(si)) = (a, simages[i]) else { continue };
            if a.store {
                let pairs: Vec<(Rect, Rect)> =
                    bins::rectangles(&r.bins).into_iter().flat_map(|b| scaled_regions(b, r.area)).collect();
                blit(f, cb, (si, a), (a.image, a), &pairs, true, true);
            }
        }
    }
    // Every attachment ends in its final layout.
    let t4: Vec<Transition> = atts
        .iter()
        .enumerate()
        .filter_map(|(i, a)| {
            let a = a.as_ref()?;
            (cur[i] != a.final_ && a.final_ != vk::ImageLayout::UNDEFINED).then(|| Transition {
                image: a.image,
                range: a.range,
                old: cur[i],
                new: a.final_,
            })
        })
        .collect();
    barrier(f, cb, &t4);
    if dev.log().enabled(LogLevel::Debug) {
        let all_bins = bins::bins(&map, render_area, texel, layers, super::MAX_AREA);
        let (planned, ideal) = bins::shaded(&replays, &all_bins);
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
        dev.log().debug(
            id::FDM_PLAN,
            &format!(
                "{} bins, {} replays [{}]; fragments shaded {planned} (ideal {ideal}); {} commands replayed each",
                all_bins.len(),
                replays.len(),
                areas.join(", "),
                pass.cmds.len()
            ),
        );
    }
    Ok(())
}

fn set_area(begin: &mut Begin, area: vk::Rect2D) {
    match begin {
        Begin::RenderPass { area: a, .. } | Begin::Rendering { area: a, .. } => *a = area,
    }
}

/// Points a begin at the scratch targets.
fn retarget(begin: &mut Begin, area: vk::Rect2D, fb: vk::Framebuffer, views: &[Option<vk::ImageView>]) {
    set_area(begin, area);
    match begin {
        Begin::RenderPass { framebuffer, views: v, .. } => {
            *framebuffer = fb;
            v.clear();
        }
        Begin::Rendering { colors, depth, stencil, .. } => {
            let mut it = views.iter().flatten();
            let mut seen: Vec<(vk::ImageView, vk::ImageView)> = Vec::new();
            let mut fix = |a: &mut vk::RenderingAttachmentInfo<'static>,
                           it: &mut dyn Iterator<Item = &vk::ImageView>| {
                if a.image_view == vk::ImageView::null() {
                    return;
                }
                if let Some((_, s)) = seen.iter().find(|(r, _)| *r == a.image_view) {
                    a.image_view = *s;
                    return;
                }
                let s = *it.next().unwrap();
                seen.push((a.image_view, s));
                a.image_view = s;
                if a.resolve_mode != vk::ResolveModeFlags::NONE && a.resolve_image_view != vk::ImageView::null() {
                    a.resolve_image_view = *it.next().unwrap();
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

unsafe fn replay_cmds(f: &Fdm, cb: vk::CommandBuffer, pass: &Pass, t: &Transform) {
    let mut st = pass.state.clone();
    restore(f, cb, &pass.state, t);
    for c in &pass.cmds {
        emit(f, cb, c, t, &mut st);
    }
}

//! The host plan's composite by copies (`fdm_copies_composite`, on
//! llvmpipe by default; design H of `docs/design/density-map-recording.md`):
//! llvmpipe writes a full-HD attachment through its rasterizer in ~3.3 ms,
//! by buffer-to-image copies in ~0.3 ms. Per area `(ax, ay)` of the pass,
//! for a single-sampled colour attachment in a 2D view ([`Att::copies`]):
//!
//! 1. **Widen**: the upscale's draw in its rectangle mode at area `(ax, 1)`
//!    into the area's widened-rows image (`Targets::wides`: the
//!    framebuffer's width, the scratch target's height), the rectangles'
//!    rows divided by `ay`: each scratch texel `ax` times along its row,
//!    `1/ay` of the full-resolution pixels.
//! 2. **Repeat rows**: a copy of the widened rows into the pass's buffer
//!    laid out as the framebuffer (its width a row), in `ay` regions whose
//!    row stride is `ay` rows and whose offsets one row apart: every row
//!    lands `ay` times, and the buffer holds the area's pixels at full
//!    resolution.
//! 3. **Place**: one buffer-to-image region per rectangle the area covers.
//!
//! Pixel `p` gets texel `p / area` of the area's scratch target, bit for bit
//! the drawn composite's value (the same draw, its rows then copied).

use super::bins::Rect;
use super::gpu_objects::{self, Owned, Upscale, UpscaleDraw, RECTS};
use super::model::{texel_bytes, Att};
use super::replay_plan::{Composite, CompositeDraw};
use super::scratch::{barrier_between, Side, Targets, Transition};
use super::Fdm;
use ash::vk::{self, AccessFlags as A, PipelineStageFlags as S};

/// One area's steps of a composite by copies.
pub(super) struct Widened {
    area: (u32, u32),
    /// The widened rows and the framebuffer over them.
    image: vk::Image,
    framebuffer: vk::Framebuffer,
    /// Its height: the framebuffer's rows divided by the area's.
    rows: u32,
    draw: UpscaleDraw,
    /// The rectangles the area covers (framebuffer pixels).
    rects: Vec<Rect>,
}

/// A composite by copies: attachment `image` (its subresource `layers`,
/// texels of `bytes`), written per area.
pub(super) struct Copies {
    image: vk::Image,
    layers: vk::ImageSubresourceLayers,
    bytes: u32,
    up: Upscale,
    areas: Vec<Widened>,
}

/// The widened rectangles of `draws` (each rectangle's rows divided by its
/// area's, rounded out) appended to the table `words` at a multiple of 4
/// words; per draw its range of them (first, count), as the upscale's
/// rectangle mode reads instances.
pub(super) fn widened_ranges(draws: &[CompositeDraw], words: &mut Vec<u32>) -> Vec<(u32, u32)> {
    words.resize(words.len().next_multiple_of(4), 0);
    draws
        .iter()
        .map(|d| {
            let first = (words.len() / 4) as u32;
            for r in &d.rects {
                words.extend([r.x, r.y / d.area.1, r.x + r.w, (r.y + r.h).div_ceil(d.area.1)]);
            }
            (first, d.rects.len() as u32)
        })
        .collect()
}

/// The buffer bytes a composite by copies of `a` needs over `extent` (its
/// rows rounded up to a whole 4x4 area's).
pub(super) fn buffer_bytes(a: &Att, extent: (u32, u32)) -> u64 {
    extent.0 as u64 * extent.1.next_multiple_of(4) as u64 * texel_bytes(a.format).unwrap_or(0) as u64
}

/// The objects of composite `c` of attachment `a` by copies: per draw (an
/// area) a framebuffer over its widened rows, a set reading its scratch
/// target (from `pool`, the table `bi`), the widening draw over the
/// rectangles of `wide` (its draws' ranges in the table).
///
/// # Safety
/// As the composite's `prepare` (`composite.rs`); `o`'s common objects are made.
#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn prepare(
    d: &ash::Device,
    o: &mut gpu_objects::Objects,
    owned: &mut Owned,
    (pool, bi): (vk::DescriptorPool, &[vk::DescriptorBufferInfo]),
    c: &Composite,
    a: &Att,
    targets: &dyn Fn((u32, u32)) -> Option<Targets>,
    (extent, wide): ((u32, u32), &[(u32, u32)]),
) -> Result<Copies, vk::Result> {
    // SAFETY: the caller's guarantee; create infos built here from locals, the layer's own render pass and the
    // scratch targets' views (alive: the caller's guarantee).
    unsafe {
        let up = gpu_objects::upscale_pipeline(d, o, a.format, false, a.samples)?;
        let mut areas = Vec::new();
        for (draw, &(first, count)) in c.draws.iter().zip(wide) {
            let t = targets(draw.area).ok_or(vk::Result::ERROR_UNKNOWN)?;
            let (Some((image, view)), Some(scratch)) = (t.wides[c.attachment], t.views[c.attachment]) else {
                return Err(vk::Result::ERROR_UNKNOWN);
            };
            let rows = extent.1.div_ceil(draw.area.1);
            let views = [view];
            let framebuffer = d.create_framebuffer(
                &vk::FramebufferCreateInfo::default()
                    .render_pass(up.render_pass)
                    .attachments(&views)
                    .width(extent.0)
                    .height(rows)
                    .layers(1),
                None,
            )?;
            owned.framebuffers.push(framebuffer);
            let set = gpu_objects::allocate_sets(d, pool, o.up_set_layout, 1)?[0];
            gpu_objects::write_upscale_set(d, set, scratch, false, bi);
            // The upscale's rectangle mode at area (ax, 1) over the widened rows.
            let words = [draw.area.0, 1, 0, extent.0, rows, 0, RECTS, 0, 0, 0];
            let draw_words = UpscaleDraw { set, words, first, count };
            areas.push(Widened {
                area: draw.area,
                image,
                framebuffer,
                rows,
                draw: draw_words,
                rects: draw.rects.clone(),
            });
        }
        let layers = vk::ImageSubresourceLayers {
            aspect_mask: vk::ImageAspectFlags::COLOR,
            mip_level: a.range.base_mip_level,
            base_array_layer: a.range.base_array_layer,
            layer_count: 1,
        };
        let bytes = texel_bytes(a.format).ok_or(vk::Result::ERROR_FORMAT_NOT_SUPPORTED)?;
        Ok(Copies { image: a.image, layers, bytes, up, areas })
    }
}

/// The widened-rows images of `c`, from undefined to drawn (the composite's
/// first barrier).
pub(super) fn transitions(c: &Copies) -> impl Iterator<Item = Transition> + '_ {
    let range = vk::ImageSubresourceRange {
        aspect_mask: vk::ImageAspectFlags::COLOR,
        base_mip_level: 0,
        level_count: 1,
        base_array_layer: 0,
        layer_count: 1,
    };
    c.areas.iter().map(move |w| Transition {
        image: w.image,
        range,
        old: vk::ImageLayout::UNDEFINED,
        new: vk::ImageLayout::COLOR_ATTACHMENT_OPTIMAL,
    })
}

/// Records composite `c` by copies through `buffer` (from byte `at`, the
/// framebuffer `extent`'s rows), the upscale's pipeline layout `layout`.
///
/// # Safety
/// As the composite's `record` (`composite.rs`), after its barrier: the scratch targets
/// sampled, the widened rows drawn ([`transitions`]), the attachment in
/// `TRANSFER_DST_OPTIMAL`; `buffer` holds [`buffer_bytes`] from `at`.
pub(super) unsafe fn record(
    f: &Fdm,
    d: &ash::Device,
    cb: vk::CommandBuffer,
    layout: vk::PipelineLayout,
    c: &Copies,
    (buffer, at): (vk::Buffer, u64),
    extent: (u32, u32),
) {
    let row = extent.0 as u64 * c.bytes as u64;
    let single = vk::ImageSubresourceRange {
        aspect_mask: vk::ImageAspectFlags::COLOR,
        base_mip_level: 0,
        level_count: 1,
        base_array_layer: 0,
        layer_count: 1,
    };
    let layers0 = vk::ImageSubresourceLayers {
        aspect_mask: vk::ImageAspectFlags::COLOR,
        mip_level: 0,
        base_array_layer: 0,
        layer_count: 1,
    };
    for w in c.areas.iter().filter(|w| !w.rects.is_empty()) {
        let ay = w.area.1;
        let vp = vk::Viewport { width: extent.0 as f32, height: w.rows as f32, max_depth: 1.0, ..Default::default() };
        // The box of this area's rectangles, in widened rows: the widening pass's render area (llvmpipe loads and
        // stores every tile of it) and what is copied.
        let top = w.rects.iter().map(|r| r.y / ay).min().unwrap_or(0);
        let bottom = w.rects.iter().map(|r| (r.y + r.h).div_ceil(ay)).max().unwrap_or(0).min(w.rows);
        let left = w.rects.iter().map(|r| r.x).min().unwrap_or(0);
        let right = w.rects.iter().map(|r| r.x + r.w).max().unwrap_or(0).min(extent.0);
        let boxed = vk::Rect2D {
            offset: vk::Offset2D { x: left as i32, y: top as i32 },
            extent: vk::Extent2D { width: right - left, height: bottom - top },
        };
        let repeat: Vec<vk::BufferImageCopy> = (0..ay)
            .map(|k| vk::BufferImageCopy {
                buffer_offset: at + (top as u64 * ay as u64 + k as u64) * row + left as u64 * c.bytes as u64,
                buffer_row_length: extent.0 * ay,
                buffer_image_height: 0,
                image_subresource: layers0,
                image_offset: vk::Offset3D { x: left as i32, y: top as i32, z: 0 },
                image_extent: vk::Extent3D { width: right - left, height: bottom - top, depth: 1 },
            })
            .collect();
        let place: Vec<vk::BufferImageCopy> = w
            .rects
            .iter()
            .map(|r| vk::BufferImageCopy {
                buffer_offset: at + r.y as u64 * row + r.x as u64 * c.bytes as u64,
                buffer_row_length: extent.0,
                buffer_image_height: 0,
                image_subresource: c.layers,
                image_offset: vk::Offset3D { x: r.x as i32, y: r.y as i32, z: 0 },
                image_extent: vk::Extent3D { width: r.w, height: r.h, depth: 1 },
            })
            .collect();
        let to_copy = [Transition {
            image: w.image,
            range: single,
            old: vk::ImageLayout::COLOR_ATTACHMENT_OPTIMAL,
            new: vk::ImageLayout::TRANSFER_SRC_OPTIMAL,
        }];
        // SAFETY: the caller's guarantee; the images, framebuffer, pipeline and buffer are the layer's own or the
        // pass's, in the layouts named.
        unsafe {
            gpu_objects::record_upscale_pass(d, cb, &c.up, w.framebuffer, (boxed, vp), layout, &[w.draw]);
            // The widened rows drawn, and the buffer's previous area placed, before the rows are copied into it.
            barrier_between(
                f,
                cb,
                &to_copy,
                Side(S::COLOR_ATTACHMENT_OUTPUT | S::TRANSFER, A::COLOR_ATTACHMENT_WRITE),
                Side(S::TRANSFER, A::TRANSFER_READ | A::TRANSFER_WRITE),
            );
            d.cmd_copy_image_to_buffer(cb, w.image, vk::ImageLayout::TRANSFER_SRC_OPTIMAL, buffer, &repeat);
            barrier_between(f, cb, &[], Side(S::TRANSFER, A::TRANSFER_WRITE), Side(S::TRANSFER, A::TRANSFER_READ));
            d.cmd_copy_buffer_to_image(cb, buffer, c.image, vk::ImageLayout::TRANSFER_DST_OPTIMAL, &place);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each draw's rectangles, rows divided by its area's (rounded out), start at a multiple of 4 words after the
    /// table; the ranges count instances from the table's start.
    #[test]
    fn widened_rectangles_divide_the_rows_by_the_area() {
        let r = |x, y, w, h| Rect { x, y, w, h };
        let draws = [
            CompositeDraw { layer: None, area: (2, 2), rects: vec![r(0, 0, 16, 8), r(16, 4, 10, 9)] },
            CompositeDraw { layer: None, area: (4, 4), rects: vec![r(32, 8, 32, 30)] },
        ];
        let mut words = vec![7; 5];
        let ranges = widened_ranges(&draws, &mut words);
        assert_eq!(ranges, vec![(2, 2), (4, 1)]);
        assert_eq!(&words[8..12], &[0, 0, 16, 4]);
        // Rows 4..13 at 2: 2..7 (6.5 rounded out).
        assert_eq!(&words[12..16], &[16, 2, 26, 7]);
        // Rows 8..38 at 4: 2..10 (9.5 rounded out).
        assert_eq!(&words[16..20], &[32, 2, 64, 10]);
    }
}

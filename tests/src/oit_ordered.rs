//! Ordered OIT (issue 12): the interlock algorithm of nvpro's
//! `vk_order_independent_transparency` with tail blending, where the order
//! of a pixel's fragments changes the picture. Pass 1 (inside a
//! `pixel_interlock_ordered` section, `tests/shaders/oit_ordered_insert.frag`)
//! keeps each pixel's [`K`] nearest fragments; a fragment beyond `K` evicts
//! the farthest kept one (or is itself the farthest), and the evicted colour
//! is blended "over" the pixel's tail colour in arrival order. Pass 2
//! composites the tail under the kept fragments, far to near.
//!
//! The blends work in integers (8-bit colours, 8.16 fixed point; the tail
//! blends with alpha 3/4, the kept fragments with alpha 1/2), so the GPU
//! computes the same bits as [`reference`] on the CPU: a correct render
//! equals the reference exactly (tolerance 0: no float rounding anywhere,
//! the resolve writes n/255 for an integer n, which UNORM8 stores as n). A
//! swapped pair of the last two fragments in a pixel's tail changes its
//! colour by 9/64 of the two colours' difference (tens of levels with this
//! palette).
//!
//! [`reference`] processes each pixel's fragments in primitive order (layer
//! 0 first: the draw order), independently of the GPU path.

use crate::render::{Gpu, Image};
use ash::vk;

/// Fragments kept per pixel; the rest go to the tail.
pub const K: usize = 2;
/// Layers the scene can draw (the palette's size).
pub const MAX_LAYERS: u32 = 16;
const BACKGROUND: u32 = 26;
/// Depths of layers 0..16 (a permutation: draw order is not depth order).
const PERM: [u32; 16] = [9, 3, 14, 6, 0, 11, 5, 12, 2, 15, 8, 1, 13, 4, 10, 7];
const PALETTE: [[u32; 3]; 16] = [
    [230, 25, 75],
    [60, 180, 75],
    [255, 225, 25],
    [0, 130, 200],
    [245, 130, 48],
    [145, 30, 180],
    [70, 240, 240],
    [240, 50, 230],
    [210, 245, 60],
    [250, 190, 212],
    [0, 128, 128],
    [220, 190, 255],
    [170, 110, 40],
    [255, 250, 200],
    [128, 0, 0],
    [170, 255, 195],
];

/// Layer `i`'s rectangle (x0, y0, x1, y1) in the 64x64 grid, as
/// `tests/shaders/oit_ordered.vert` computes it.
pub fn rect(i: u32) -> [u32; 4] {
    [(i * 5) % 24, (i * 11) % 24, 64 - (i * 7) % 24, 64 - (i * 13) % 24]
}

fn covers(i: u32, x: u32, y: u32, width: u32, height: u32, full: bool) -> bool {
    let r = if full { [0, 0, 64, 64] } else { rect(i) };
    x * 64 >= r[0] * width && x * 64 < r[2] * width && y * 64 >= r[1] * height && y * 64 < r[3] * height
}

fn rgb(color: u32) -> [u32; 3] {
    [color & 255, (color >> 8) & 255, (color >> 16) & 255]
}

/// A kept fragment over what lies behind it (alpha 1/2).
fn over(color: u32, under: [u32; 3]) -> [u32; 3] {
    let c = rgb(color);
    [0, 1, 2].map(|k| ((c[k] << 16) + under[k]) >> 1)
}

/// An evicted fragment over the tail (alpha 3/4).
fn over_tail(color: u32, under: [u32; 3]) -> [u32; 3] {
    let c = rgb(color);
    [0, 1, 2].map(|k| ((c[k] << 16) * 3 + under[k]) >> 2)
}

/// One pixel's colour when the layers in `order` reach it in that order
/// (the shaders' algorithm, step for step).
pub fn pixel(order: impl IntoIterator<Item = u32>) -> [u8; 4] {
    let mut kept: Vec<(u32, u32)> = Vec::with_capacity(K); // (depth, colour)
    let mut tail: Option<[u32; 3]> = None;
    let bg = [BACKGROUND << 16; 3];
    for i in order {
        let p = PALETTE[(i % 16) as usize];
        let me = (PERM[(i % 16) as usize] + 16 * (i / 16), p[0] | p[1] << 8 | p[2] << 16);
        if kept.len() < K {
            kept.push(me);
            continue;
        }
        // The first farthest slot, as the shader's strict comparison finds it.
        let mut far = 0;
        for s in 1..K {
            if kept[s].0 > kept[far].0 {
                far = s;
            }
        }
        let evicted = if kept[far].0 > me.0 { std::mem::replace(&mut kept[far], me).1 } else { me.1 };
        tail = Some(over_tail(evicted, tail.unwrap_or(bg)));
    }
    kept.sort_by_key(|f| std::cmp::Reverse(f.0)); // far to near
    let c = kept.iter().fold(tail.unwrap_or(bg), |c, f| over(f.1, c));
    let q = c.map(|v| ((v + (1 << 15)) >> 16) as u8);
    [q[0], q[1], q[2], 255]
}

/// The expected picture (`reverse`: the layers reach each pixel last to
/// first — the wrong order, for the controls; `full`: every layer covers
/// the whole target).
pub fn reference(width: u32, height: u32, layers: u32, reverse: bool, full: bool) -> Image {
    let mut rgba = Vec::with_capacity((width * height * 4) as usize);
    for y in 0..height {
        for x in 0..width {
            let covering = (0..layers).filter(|&i| covers(i, x, y, width, height, full));
            let px = if reverse { pixel(covering.rev()) } else { pixel(covering) };
            rgba.extend(px);
        }
    }
    Image { width, height, rgba }
}

/// Pixels whose colours differ (any channel); every pixel when the sizes
/// differ.
pub fn differing_pixels(a: &Image, b: &Image) -> usize {
    if (a.width, a.height) != (b.width, b.height) || a.rgba.len() != b.rgba.len() {
        return (a.width * a.height).max(b.width * b.height) as usize;
    }
    a.rgba.chunks(4).zip(b.rgba.chunks(4)).filter(|(p, q)| p != q).count()
}

/// The critical section the insertion pass declares.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Section {
    Ordered,
    Unordered,
    None,
}

impl std::str::FromStr for Section {
    type Err = String;
    fn from_str(s: &str) -> Result<Section, String> {
        match s {
            "ordered" => Ok(Section::Ordered),
            "unordered" => Ok(Section::Unordered),
            "none" => Ok(Section::None),
            _ => Err(format!("unknown section {s} (ordered|unordered|none)")),
        }
    }
}

/// Renders the scene: `layers` rectangles in two draws (layers [0, n/2) and
/// [n/2, n), so the order crosses a draw boundary too), `reverse` drawing
/// them last to first, `full` every layer over the whole target, every draw
/// (both passes') going down as `kind`. Returns the picture, the
/// submission's wall time in nanoseconds (both passes) and, where the queue
/// writes timestamps, the GPU time of the insert pass (the ordered draws).
#[allow(clippy::too_many_arguments)]
pub fn render(
    gpu: &Gpu,
    width: u32,
    height: u32,
    layers: u32,
    section: Section,
    reverse: bool,
    full: bool,
    kind: crate::draw_kind::DrawKind,
) -> (Image, u64, Option<u64>) {
    let (image, frames) = render_frames(gpu, (width, height), layers, section, reverse, full, kind, Frames::default());
    (image, frames[0].0, frames[0].1)
}

/// `spv` with an `OpModuleProcessed "<line>"` added: the same shader in
/// other bytes.
fn tagged(spv: &[u8], line: &str) -> Vec<u8> {
    use rspirv::binary::Assemble;
    use rspirv::dr::{Instruction, Operand};
    let mut module = rspirv::dr::load_bytes(spv).expect("the test's own SPIR-V");
    module.debug_module_processed.push(Instruction::new(
        rspirv::spirv::Op::ModuleProcessed,
        None,
        None,
        vec![Operand::LiteralString(line.to_string())],
    ));
    module.assemble().iter().flat_map(|w| w.to_le_bytes()).collect()
}

/// How [`render_frames`] draws: `count` frames, `work` rounds of extra
/// work per fragment, and which objects each frame after the first makes
/// anew (`renew`; none by default, as a renderer draws).
#[derive(Clone, Copy, Debug)]
pub struct Frames {
    pub count: usize,
    pub work: u32,
    pub renew: Renew,
    /// Idle time before each frame after the first (the device's speed
    /// against wall time rather than against the objects made).
    pub pause: std::time::Duration,
}

impl Default for Frames {
    fn default() -> Self {
        Frames { count: 1, work: 0, renew: Renew::default(), pause: std::time::Duration::ZERO }
    }
}

/// The objects a frame of [`render_frames`] may make anew: the per-pixel
/// buffers (and the descriptor writes to them), the target (image,
/// render pass, framebuffer) and the two pipelines (`keep`: the old ones
/// destroyed only at the end).
#[derive(Clone, Copy, Debug, Default)]
pub struct Renew {
    pub buffers: bool,
    pub target: bool,
    pub pipelines: bool,
    /// With `pipelines`: the replaced pipelines kept until the end rather
    /// than destroyed at once.
    pub keep: bool,
    /// With `pipelines`: the frames draw with the first pipelines all the
    /// same; the new ones are made (and kept) but never bound.
    pub spare: bool,
    /// With `pipelines`: each new insert shader a module of its own bytes
    /// (an `OpModuleProcessed` line added), as an application's many
    /// shaders are, rather than the same module again.
    pub distinct: bool,
}

impl std::str::FromStr for Renew {
    type Err = String;
    /// A comma-separated list of `buffers`, `target`, `pipelines`, or `all`.
    fn from_str(s: &str) -> Result<Renew, String> {
        let mut r = Renew::default();
        for part in s.split(',') {
            match part {
                "buffers" => r.buffers = true,
                "target" => r.target = true,
                "pipelines" => r.pipelines = true,
                "keep" => r.keep = true,
                "spare" => r.spare = true,
                "distinct" => r.distinct = true,
                "all" => r = Renew { buffers: true, target: true, pipelines: true, ..r },
                other => {
                    return Err(format!("renew: {other}? (buffers, target, pipelines, keep, spare, distinct, all)"))
                }
            }
        }
        Ok(r)
    }
}

/// [`render`] `frames` times with the same buffers, pipelines and target,
/// as a renderer draws its frames (each frame clears the per-pixel state
/// and draws the scene again): the last frame's image and each frame's
/// submit and GPU time (ns). `work`: rounds of extra work per fragment,
/// live across the critical section (`oit_ordered_insert.frag`; the
/// picture is the same).
#[allow(clippy::too_many_arguments)]
pub fn render_frames(
    gpu: &Gpu,
    (width, height): (u32, u32),
    layers: u32,
    section: Section,
    reverse: bool,
    full: bool,
    kind: crate::draw_kind::DrawKind,
    frames: Frames,
) -> (Image, Vec<(u64, Option<u64>)>) {
    let Frames { count: frames, work, renew, pause } = frames;
    assert!(work < 1 << 23, "work below 2^23 rounds");
    assert!(width.is_multiple_of(64) && height.is_multiple_of(64), "OIT sizes are multiples of 64");
    assert!((1..=MAX_LAYERS).contains(&layers), "1 to {MAX_LAYERS} layers");
    let d = &gpu.device;
    let pixels = (width * height) as u64;
    unsafe {
        let usage = vk::BufferUsageFlags::STORAGE_BUFFER | vk::BufferUsageFlags::TRANSFER_DST;
        let buffers = || [pixels * 4, pixels * K as u64 * 8, pixels * 16].map(|size| gpu.buffer(size, usage, false));
        // counts, slots, tail
        let mut bufs = buffers();
        let new_target = || crate::render::Target::new(gpu, crate::render::RenderPath::RenderPass, width, height);
        let mut target = new_target();

        let bindings = [0, 1, 2].map(|b| {
            vk::DescriptorSetLayoutBinding::default()
                .binding(b)
                .descriptor_type(vk::DescriptorType::STORAGE_BUFFER)
                .descriptor_count(1)
                .stage_flags(vk::ShaderStageFlags::FRAGMENT)
        });
        let (set_layout, pool, set) = gpu.descriptor_set(&bindings);
        let layouts = [set_layout];
        let point_at = |buffers: [vk::Buffer; 3]| {
            let infos = buffers.map(|b| [vk::DescriptorBufferInfo { buffer: b, offset: 0, range: vk::WHOLE_SIZE }]);
            let writes: Vec<vk::WriteDescriptorSet> = (0..3)
                .map(|b| {
                    vk::WriteDescriptorSet::default()
                        .dst_set(set)
                        .dst_binding(b as u32)
                        .descriptor_type(vk::DescriptorType::STORAGE_BUFFER)
                        .buffer_info(&infos[b])
                })
                .collect();
            d.update_descriptor_sets(&writes, &[]);
        };
        point_at(bufs.each_ref().map(|b| b.buffer));
        let stages = vk::ShaderStageFlags::VERTEX | vk::ShaderStageFlags::FRAGMENT;
        let push = [vk::PushConstantRange { stage_flags: stages, offset: 0, size: 16 }];
        let layout = d
            .create_pipeline_layout(
                &vk::PipelineLayoutCreateInfo::default().set_layouts(&layouts).push_constant_ranges(&push),
                None,
            )
            .unwrap();
        let insert_fs: &[u8] = match section {
            Section::Ordered if work > 0 => {
                include_bytes!(concat!(env!("OUT_DIR"), "/oit_ordered_insert-ordered-work.frag.spv"))
            }
            Section::Unordered if work > 0 => {
                include_bytes!(concat!(env!("OUT_DIR"), "/oit_ordered_insert-unordered-work.frag.spv"))
            }
            Section::None if work > 0 => {
                include_bytes!(concat!(env!("OUT_DIR"), "/oit_ordered_insert-none-work.frag.spv"))
            }
            Section::Ordered => include_bytes!(concat!(env!("OUT_DIR"), "/oit_ordered_insert-ordered.frag.spv")),
            Section::Unordered => include_bytes!(concat!(env!("OUT_DIR"), "/oit_ordered_insert-unordered.frag.spv")),
            Section::None => include_bytes!(concat!(env!("OUT_DIR"), "/oit_ordered_insert-none.frag.spv")),
        };
        let made = std::cell::Cell::new(0u32);
        let pipelines = |target: &crate::render::Target| {
            // `distinct`: every insert shader after the first differs in
            // its bytes (a processed-by line), not in its code.
            let fs = match made.replace(made.get() + 1) {
                n if renew.distinct && n > 0 => tagged(insert_fs, &format!("overlap-testapp frame {n}")),
                _ => insert_fs.to_vec(),
            };
            target.oit_pipelines(
                gpu,
                layout,
                (include_bytes!(concat!(env!("OUT_DIR"), "/oit_ordered.vert.spv")), &fs),
                include_bytes!(concat!(env!("OUT_DIR"), "/oit_ordered_resolve.frag.spv")),
            )
        };
        let (mut insert, mut resolve) = pipelines(&target);
        let flags = reverse as u32 | (full as u32) << 1 | work << 8;
        let pc: Vec<u8> = [width, height, layers, flags].iter().flat_map(|v| v.to_ne_bytes()).collect();
        let half = layers / 2;
        let draws = crate::draw_kind::Draws::new(gpu, kind);
        let mut times = Vec::with_capacity(frames.max(1));
        let mut kept = Vec::new();
        let mut spares = Vec::new();
        for frame in 0..frames.max(1) {
            if frame > 0 {
                std::thread::sleep(pause);
            }
            // `renew`: objects made anew for this frame (the previous
            // frame's submission has completed: one_time_submit waits).
            if frame > 0 && renew.buffers {
                for b in std::mem::replace(&mut bufs, buffers()) {
                    gpu.destroy_buffer(b);
                }
                point_at(bufs.each_ref().map(|b| b.buffer));
            }
            if frame > 0 && renew.target {
                std::mem::replace(&mut target, new_target()).destroy(gpu);
            }
            if frame > 0 && renew.pipelines {
                if renew.spare {
                    spares.push(pipelines(&target));
                } else {
                    kept.push((insert, resolve));
                    (insert, resolve) = pipelines(&target);
                }
            }
            if !renew.keep {
                for (a, b) in kept.drain(..) {
                    d.destroy_pipeline(a, None);
                    d.destroy_pipeline(b, None);
                }
            }
            let timer = crate::render::PassTimer::new(gpu);
            let started = std::time::Instant::now();
            gpu.one_time_submit(|cb| {
                if let Some(t) = &timer {
                    t.reset(gpu, cb);
                }
                d.cmd_fill_buffer(cb, bufs[0].buffer, 0, vk::WHOLE_SIZE, 0);
                d.cmd_fill_buffer(cb, bufs[2].buffer, 0, vk::WHOLE_SIZE, 0);
                gpu.memory_barrier(
                    cb,
                    (vk::PipelineStageFlags::TRANSFER, vk::AccessFlags::TRANSFER_WRITE),
                    (
                        vk::PipelineStageFlags::FRAGMENT_SHADER,
                        vk::AccessFlags::SHADER_READ | vk::AccessFlags::SHADER_WRITE,
                    ),
                );
                if let Some(t) = &timer {
                    t.stamp(gpu, cb, 0);
                }
                target.begin(gpu, cb);
                d.cmd_bind_pipeline(cb, vk::PipelineBindPoint::GRAPHICS, insert);
                d.cmd_bind_descriptor_sets(cb, vk::PipelineBindPoint::GRAPHICS, layout, 0, &[set], &[]);
                d.cmd_push_constants(cb, layout, stages, 0, &pc);
                if half > 0 {
                    draws.draw(cb, 6, half, 0, 0);
                }
                draws.draw(cb, 6, layers - half, 0, half);
                target.end(gpu, cb);
                if let Some(t) = &timer {
                    t.stamp(gpu, cb, 1);
                }
                gpu.memory_barrier(
                    cb,
                    (vk::PipelineStageFlags::FRAGMENT_SHADER, vk::AccessFlags::SHADER_WRITE),
                    (vk::PipelineStageFlags::FRAGMENT_SHADER, vk::AccessFlags::SHADER_READ),
                );
                target.begin(gpu, cb);
                d.cmd_bind_pipeline(cb, vk::PipelineBindPoint::GRAPHICS, resolve);
                d.cmd_bind_descriptor_sets(cb, vk::PipelineBindPoint::GRAPHICS, layout, 0, &[set], &[]);
                d.cmd_push_constants(cb, layout, stages, 0, &pc);
                draws.draw(cb, 3, 1, 0, 0);
                target.end(gpu, cb);
                target.record_copy_out(gpu, cb);
            });
            let elapsed = started.elapsed().as_nanos() as u64;
            times.push((elapsed, timer.map(|t| t.read(gpu))));
        }
        let image = target.read(gpu);
        for (a, b) in kept.into_iter().chain(spares) {
            d.destroy_pipeline(a, None);
            d.destroy_pipeline(b, None);
        }
        d.destroy_pipeline(insert, None);
        d.destroy_pipeline(resolve, None);
        d.destroy_pipeline_layout(layout, None);
        d.destroy_descriptor_pool(pool, None);
        d.destroy_descriptor_set_layout(set_layout, None);
        target.destroy(gpu);
        for b in bufs {
            gpu.destroy_buffer(b);
        }
        (image, times)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The scene is order-sensitive where a pixel has more than K layers:
    /// the reversed order changes many pixels of the 8-layer scene, and
    /// none of a scene of at most K layers (no tail: the kept fragments are
    /// sorted, so their arrival order does not matter).
    #[test]
    fn order_changes_the_picture_only_through_the_tail() {
        let forward = reference(128, 128, 8, false, false);
        let reversed = reference(128, 128, 8, true, false);
        let differ = differing_pixels(&forward, &reversed);
        assert!(differ > 128 * 128 / 4, "{differ} pixels differ");
        for layers in 1..=K as u32 {
            assert_eq!(
                differing_pixels(&reference(64, 64, layers, false, false), &reference(64, 64, layers, true, false)),
                0
            );
        }
    }

    /// The tail in arrival order, by hand. Depths of layers 0..=3: 9, 3,
    /// 14, 6. In order 0..=3, K = 2 keeps 0 and 1; 2 (14) is farther than
    /// both and goes to the tail; 3 (6) evicts 0 (9): tail = 0 over 2. In
    /// order 0, 1, 3, 2: 3 evicts 0, then 2 goes to the tail: tail = 2
    /// over 0. Both keep 3 and 1; swapping the kept 0 and 1 changes nothing.
    #[test]
    fn the_tail_blends_in_arrival_order() {
        let base = pixel([0, 1, 2, 3]);
        assert_eq!(pixel([1, 0, 2, 3]), base);
        let swapped = pixel([0, 1, 3, 2]);
        let col = |i: usize| PALETTE[i][0] | PALETTE[i][1] << 8 | PALETTE[i][2] << 16;
        let bg = [BACKGROUND << 16; 3];
        // Kept 3 (6) and 1 (3) blended far to near over the tail.
        let finish = |tail: [u32; 3]| {
            let c = over(col(1), over(col(3), tail));
            let q = c.map(|v| ((v + (1 << 15)) >> 16) as u8);
            [q[0], q[1], q[2], 255]
        };
        assert_eq!(base, finish(over_tail(col(0), over_tail(col(2), bg))));
        assert_eq!(swapped, finish(over_tail(col(2), over_tail(col(0), bg))));
        // Visible: red (230, 25, 75) and yellow (255, 225, 25) swapped.
        let most = (0..3).map(|k| base[k].abs_diff(swapped[k])).max().unwrap();
        assert!(most >= 20, "{base:?} {swapped:?}");
    }

    #[test]
    fn every_layer_covers_the_centre_and_sizes_must_match() {
        for i in 0..MAX_LAYERS {
            assert!(covers(i, 32, 32, 64, 64, false), "layer {i}");
            assert!(covers(i, 0, 63, 64, 64, true), "layer {i}");
        }
        // Full layers: one colour everywhere, order-sensitive as well.
        let full = reference(64, 64, 8, false, true);
        assert!(full.rgba.chunks(4).all(|p| p == full.pixel(0, 0)));
        assert_ne!(full.pixel(0, 0), reference(64, 64, 8, true, true).pixel(0, 0));
        let a = reference(64, 64, 8, false, false);
        let b = reference(128, 64, 8, false, false);
        assert_eq!(differing_pixels(&a, &b), 128 * 64);
    }
}

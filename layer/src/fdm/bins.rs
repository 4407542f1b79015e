//! Planning a binned render: from the density map's texels to fragment
//! areas per bin, and from bins to replays.
//!
//! A *bin* is the framebuffer region of one density-map texel (the spec's
//! local framebuffer region, `fragmentDensityTexelSize` on a side), clipped
//! to the render area. Its *requested* area is `1/density` per axis; the
//! layer gives it the largest power of two no larger than that, than the
//! layer's maximum and than what keeps the bin's start aligned, so a bin
//! always starts on a fragment boundary (the seed's "`b_s` must be a
//! multiple of `1/s`").
//!
//! **Views.** A multiview pass plans per view: view `k` reads its own layer
//! of the map ([`View::layer`]) and has its own grid, shifted by its density
//! offset ([`View::offset`], `VK_EXT_fragment_density_map_offset`: the spec
//! fetches region centre `c` at `c - offset`, so the grid shifted by
//! `offset` gives every region exactly one texel, and the coarse regions
//! move with the map). A bin records which views ask for its area there
//! ([`Bin::views`], bit `k` for view `k`); where two views ask for the same
//! area over the same rectangle it is one bin. In turnip's terms each view
//! gets its own `b_s` and `s`; the replays below are shared by all views.
//!
//! A *replay* renders the whole captured pass once, at one fragment area,
//! over a rectangle (the bounding box of its bins), in every view, and
//! stores only its bins, each in the views that asked for it. Each replay
//! repeats all vertex work; pixels inside its rectangle but not in its bins
//! are shaded for nothing. The planner starts from one replay per area (the
//! union over views) and greedily merges the pair whose merge saves the most
//! (the merged replay uses the smaller area on each axis, which is always
//! allowed: an area may be smaller than requested), the a7xx bin-merging
//! idea applied to whole replays.

use std::sync::Arc;

/// An integer rectangle in framebuffer space.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Rect {
    pub x: u32,
    pub y: u32,
    pub w: u32,
    pub h: u32,
}

impl Rect {
    pub fn union(&self, o: &Rect) -> Rect {
        let (x, y) = (self.x.min(o.x), self.y.min(o.y));
        let (x1, y1) = ((self.x + self.w).max(o.x + o.w), (self.y + self.h).max(o.y + o.h));
        Rect { x, y, w: x1 - x, h: y1 - y }
    }
    pub fn intersects(&self, o: &Rect) -> bool {
        self.x < o.x + o.w && o.x < self.x + self.w && self.y < o.y + o.h && o.y < self.y + self.h
    }
    /// Where `self` and `o` overlap, if they do.
    pub fn intersection(&self, o: &Rect) -> Option<Rect> {
        let (x0, y0) = (self.x.max(o.x), self.y.max(o.y));
        let (x1, y1) = ((self.x + self.w).min(o.x + o.w), (self.y + self.h).min(o.y + o.h));
        (x0 < x1 && y0 < y1).then(|| Rect { x: x0, y: y0, w: x1 - x0, h: y1 - y0 })
    }
    /// `self` less `k`: at most four rectangles (the bands above and below
    /// `k`, then left and right of it), `self` itself where they do not
    /// overlap.
    pub fn minus(&self, k: &Rect) -> Vec<Rect> {
        let Some(o) = self.intersection(k) else { return vec![*self] };
        let (r1, o1) = ((self.x + self.w, self.y + self.h), (o.x + o.w, o.y + o.h));
        let pieces = [
            Rect { x: self.x, y: self.y, w: self.w, h: o.y - self.y },
            Rect { x: self.x, y: o1.1, w: self.w, h: r1.1 - o1.1 },
            Rect { x: self.x, y: o.y, w: o.x - self.x, h: o.h },
            Rect { x: o1.0, y: o.y, w: r1.0 - o1.0, h: o.h },
        ];
        pieces.into_iter().filter(|p| p.w > 0 && p.h > 0).collect()
    }
    pub fn pixels(&self) -> u64 {
        self.w as u64 * self.h as u64
    }
}

/// One bin and the area it gets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Bin {
    pub rect: Rect,
    /// The area the density map asks for (after the power-of-two, maximum
    /// and alignment clamps).
    pub area: (u32, u32),
    /// The views that ask for `area` over `rect`: bit `k` for the `k`-th
    /// [`View`] given to [`bins`].
    pub views: u32,
}

/// One view of the pass as the planner sees it: the map layer it reads and
/// its density offset in framebuffer pixels (`(0, 0)` without one).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct View {
    pub layer: u32,
    pub offset: (i32, i32),
}

impl View {
    /// A view of map layer `layer` without an offset.
    pub const fn layer(layer: u32) -> View {
        View { layer, offset: (0, 0) }
    }
}

/// One render of the captured pass.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Replay {
    pub area: (u32, u32),
    /// Bounding box of `bins`, aligned to `area` at its start.
    pub rect: Rect,
    /// The bins it stores, each in the views its mask names (shared: a
    /// cached plan is handed out per pass without copying them).
    pub bins: Arc<Vec<Bin>>,
    /// The bins' rectangles merged ([`rectangles`]; every view's): what its
    /// upscale or composite draws, computed once with the plan (a 1080p map
    /// has 32,400 bins: merging them took 0.38 ms a pass).
    pub stored: Vec<Rect>,
}

impl Replay {
    /// A replay of `bins` at `area` over `rect`.
    pub fn new(area: (u32, u32), rect: Rect, bins: Vec<Bin>) -> Replay {
        let stored = rectangles(&bins.iter().map(|b| b.rect).collect::<Vec<_>>());
        Replay { area, rect, bins: Arc::new(bins), stored }
    }

    /// The rectangles it stores in view `k`.
    pub fn rects_of(&self, k: u32) -> Vec<Rect> {
        self.bins.iter().filter(|b| b.views & (1 << k) != 0).map(|b| b.rect).collect()
    }

    /// Per view index (up to the highest in `views`, the pass's view
    /// indices in the order of the bins' view masks), the rectangle of this
    /// replay that view writes with per-view viewports: the bounding box of
    /// the bins it asked for; `None` for a view that asked for none here
    /// (and for indices that are no view).
    pub fn view_clips(&self, views: &[u32]) -> Vec<Option<Rect>> {
        let n = views.iter().max().map_or(0, |v| v + 1) as usize;
        let mut out = vec![None; n];
        for (k, &v) in views.iter().enumerate() {
            out[v as usize] = self.rects_of(k as u32).into_iter().reduce(|a, b| a.union(&b));
        }
        out
    }
}

/// The map as the planner needs it: per texel, the density in 1/255 units
/// per axis (R8G8_UNORM), per layer.
pub struct DensityMap<'a> {
    pub width: u32,
    pub height: u32,
    pub layers: u32,
    /// `layers × height × width` pairs.
    pub texels: &'a [[u8; 2]],
}

/// The largest power of two ≤ `1/density` (density in 1/255), at most `max`.
/// A zero density is undefined by the spec: it gets area 1.
pub fn area_for_density(d: u8, max: u32) -> u32 {
    if d == 0 {
        return 1;
    }
    let mut a = 1;
    // a ≤ 1/(d/255)  ⇔  a·d ≤ 255
    while a * 2 <= max && (a * 2) * d as u32 <= 255 {
        a *= 2;
    }
    a
}

/// The spec's region size before the limits clamp it (revision 3 of the
/// extension): `2^ceil(log2(floor(framebuffer / map)))`.
pub fn region_size(framebuffer: u32, map: u32) -> u32 {
    (framebuffer / map.max(1)).max(1).next_power_of_two()
}

/// The region size clamped to the texel size limits.
pub fn texel_size(framebuffer: u32, map: u32, min: u32, max: u32) -> u32 {
    region_size(framebuffer, map).clamp(min, max)
}

/// The largest fragment area along an axis: at most `max_area`, and no
/// larger than the region size before the limits, so that a fragment never
/// spans two of the formula's regions where the limits make the layer's
/// regions larger (a smaller area than the map asks for is always allowed).
pub fn area_cap(framebuffer: u32, map: u32, max_area: u32) -> u32 {
    region_size(framebuffer, map).min(max_area)
}

/// A pass's texel size and largest fragment area, per axis ([`texel_size`],
/// [`area_cap`]).
pub type TexelGrid = ((u32, u32), (u32, u32));

/// Largest power of two dividing `x` (`x = 0` allows anything).
pub(super) fn alignment(x: u32) -> u32 {
    if x == 0 {
        u32::MAX
    } else {
        1 << x.trailing_zeros()
    }
}

/// The grid cells of one axis that meet `[x0, x1)`: per cell, its start
/// and end clipped to the range and its texel index (clamped to the map, as
/// the spec clamps the offset fetch), for a grid of `t`-pixel cells whose
/// origin is at `origin`.
fn cells(x0: u32, x1: u32, t: u32, origin: i32, texels: u32) -> Vec<(u32, u32, u32)> {
    let (t64, o) = (t as i64, origin as i64);
    let mut k = (x0 as i64 - o).div_euclid(t64);
    let mut out = Vec::new();
    loop {
        let start = k * t64 + o;
        if start >= x1 as i64 {
            break;
        }
        let (a, b) = (start.max(x0 as i64), (start + t64).min(x1 as i64));
        if b > a {
            out.push((a as u32, b as u32, k.clamp(0, texels as i64 - 1) as u32));
        }
        k += 1;
    }
    out
}

/// The span `[a, b)` (starting on a fragment boundary of `area`) as spans of
/// whole fragments where it ends the render area at `end` (with `whole`):
/// its whole fragments at `area`, then the rest at the largest area that
/// divides it. A partial fragment at the render area's end would be covered
/// only where the primitive covers its centre, which lies beyond the end
/// (the CTS's quad ending at the viewport's edge would leave those pixels
/// uncovered). Elsewhere the span as it is.
pub(super) fn whole_fragments(a: u32, b: u32, area: u32, end: u32, whole: bool) -> Vec<(u32, u32, u32)> {
    if !whole || b != end || (b - a).is_multiple_of(area) {
        return vec![(a, b, area)];
    }
    let e = a + (b - a) / area * area;
    let rest = (e, b, alignment(b - e).min(area));
    if e > a {
        vec![(a, e, area), rest]
    } else {
        vec![rest]
    }
}

/// Bins of `render_area` with their areas, per view (`views[k]` names the
/// map layer and offset of view `k`). With `one_area` every view gets, per
/// region of the first view's grid, the smallest area any view asks for
/// there (part 1's rule; the tests' negative control). With `whole_edges`
/// a cell that ends the render area is cut into whole fragments
/// ([`whole_fragments`]).
pub fn bins(
    map: &DensityMap,
    render_area: Rect,
    texel: (u32, u32),
    views: &[View],
    max_area: (u32, u32),
    one_area: bool,
    whole_edges: bool,
) -> Vec<Bin> {
    let mut out: Vec<Bin> = Vec::new();
    if render_area.w == 0 || render_area.h == 0 || views.is_empty() || map.width == 0 || map.height == 0 {
        return out;
    }
    let (tw, th) = texel;
    let (x1, y1) = (render_area.x + render_area.w, render_area.y + render_area.h);
    let area_at = |view: &View, i: u32, j: u32| {
        let layer = view.layer.min(map.layers.max(1) - 1);
        let t = map.texels[((layer * map.height + j) * map.width + i) as usize];
        (area_for_density(t[0], max_area.0), area_for_density(t[1], max_area.1))
    };
    let all = if views.len() >= 32 { u32::MAX } else { (1u32 << views.len()) - 1 };
    // Where each (rectangle, area) is in `out`: views asking for the same
    // area over the same rectangle share a bin.
    let mut index: std::collections::HashMap<(Rect, (u32, u32)), usize> = Default::default();
    let grids: Vec<(usize, View)> =
        if one_area { vec![(0, views[0])] } else { views.iter().copied().enumerate().collect() };
    for (k, view) in grids {
        let rows = cells(render_area.y, y1, th, view.offset.1, map.height);
        let columns = cells(render_area.x, x1, tw, view.offset.0, map.width);
        for &(ya, yb, j) in &rows {
            for &(xa, xb, i) in &columns {
                let (ax, ay, mask) = if one_area {
                    views
                        .iter()
                        .map(|v| area_at(v, i, j))
                        .fold((max_area.0, max_area.1, all), |(ax, ay, m), (x, y)| (ax.min(x), ay.min(y), m))
                } else {
                    let (x, y) = area_at(&view, i, j);
                    (x, y, 1 << k)
                };
                // A bin starts on a fragment boundary.
                let (ax, ay) = (ax.min(alignment(xa)), ay.min(alignment(ya)));
                for (xa, xb, ax) in whole_fragments(xa, xb, ax, x1, whole_edges) {
                    for &(ya, yb, ay) in &whole_fragments(ya, yb, ay, y1, whole_edges) {
                        let rect = Rect { x: xa, y: ya, w: xb - xa, h: yb - ya };
                        match index.get(&(rect, (ax, ay))) {
                            Some(&n) => out[n].views |= mask,
                            None => {
                                index.insert((rect, (ax, ay)), out.len());
                                out.push(Bin { rect, area: (ax, ay), views: mask });
                            }
                        }
                    }
                }
            }
        }
    }
    out
}

/// The cost of a replay in pixel-equivalents: its fixed (vertex) cost plus
/// the fragments it shades.
fn cost(r: &Replay, vertex_cost: f64) -> f64 {
    vertex_cost + r.rect.pixels() as f64 / (r.area.0 * r.area.1) as f64
}

fn bounding_box(bins: &[Bin]) -> Rect {
    bins[1..].iter().fold(bins[0].rect, |b, r| b.union(&r.rect))
}

/// `b` extended to start on a fragment boundary of `area` (bins are
/// aligned, so this only matters for merged boxes; the end may be partial at
/// the framebuffer's edge).
fn aligned(b: Rect, area: (u32, u32)) -> Rect {
    let x = b.x / area.0 * area.0;
    let y = b.y / area.1 * area.1;
    Rect { x, y, w: b.w + (b.x - x), h: b.h + (b.y - y) }
}

/// Covers a set of disjoint grid-aligned rectangles with fewer, larger
/// ones: runs along rows first, then runs of equal span stacked vertically.
pub fn rectangles(rects: &[Rect]) -> Vec<Rect> {
    let mut v: Vec<Rect> = rects.to_vec();
    v.sort_by_key(|r| (r.y, r.x));
    let mut rows: Vec<Rect> = Vec::new();
    for r in v {
        match rows.last_mut() {
            Some(l) if l.y == r.y && l.h == r.h && l.x + l.w == r.x => l.w += r.w,
            _ => rows.push(r),
        }
    }
    rows.sort_by_key(|r| (r.x, r.w, r.y));
    let mut out: Vec<Rect> = Vec::new();
    for r in rows {
        match out.last_mut() {
            Some(l) if l.x == r.x && l.w == r.w && l.y + l.h == r.y => l.h += r.h,
            _ => out.push(r),
        }
    }
    out
}

/// Groups bins into replays. `vertex_cost` is what one more replay costs, in
/// shaded pixels.
pub fn plan(bins: &[Bin], vertex_cost: f64) -> Vec<Replay> {
    let mut by_area: Vec<((u32, u32), Vec<Bin>)> = Vec::new();
    for b in bins {
        match by_area.iter_mut().find(|(a, _)| *a == b.area) {
            Some((_, v)) => v.push(*b),
            None => by_area.push((b.area, vec![*b])),
        }
    }
    // Start from the rectangles each area's bins form (a ring of bins is
    // four rectangles, not one box around a hole), then merge.
    // Each replay with the unaligned bounding box of its bins: a merge's box
    // is the union of two boxes, so weighing a pair never walks its bins
    // (a 1080p map of 8x8 texels has 32,400 bins and starts from ~185
    // rectangles: walking the bins of every pair took over a second).
    let mut replays: Vec<(Replay, Rect)> = by_area
        .into_iter()
        .flat_map(|(area, bins)| {
            // Every bin lies in the rectangle that absorbed it (the views'
            // grids may overlap when their offsets differ: a bin goes to the
            // first rectangle holding it).
            let rects = rectangles(&bins.iter().map(|b| b.rect).collect::<Vec<_>>());
            let mut inside: Vec<Vec<Bin>> = vec![Vec::new(); rects.len()];
            for b in &bins {
                if let Some(k) = rects.iter().position(|r| r.union(&b.rect) == *r) {
                    inside[k].push(*b);
                }
            }
            inside.into_iter().filter(|v| !v.is_empty()).map(move |inside| {
                let b = bounding_box(&inside);
                (Replay { area, rect: aligned(b, area), bins: Arc::new(inside), stored: Vec::new() }, b)
            })
        })
        .collect();
    loop {
        let mut best: Option<(usize, usize, (u32, u32), Rect, f64)> = None;
        for i in 0..replays.len() {
            for j in i + 1..replays.len() {
                let ((a, ba), (b, bb)) = (&replays[i], &replays[j]);
                let area = (a.area.0.min(b.area.0), a.area.1.min(b.area.1));
                let bbox = ba.union(bb);
                let merged = Replay { area, rect: aligned(bbox, area), bins: Arc::default(), stored: Vec::new() };
                let saving = cost(a, vertex_cost) + cost(b, vertex_cost) - cost(&merged, vertex_cost);
                if saving > 0.0 && best.as_ref().is_none_or(|b| saving > b.4) {
                    best = Some((i, j, area, bbox, saving));
                }
            }
        }
        let Some((i, j, area, bbox, _)) = best else { break };
        let (gone, _) = replays.remove(j);
        let kept = &mut replays[i].0;
        Arc::make_mut(&mut kept.bins).extend(gone.bins.iter());
        *kept = Replay { area, rect: aligned(bbox, area), bins: std::mem::take(&mut kept.bins), stored: Vec::new() };
        replays[i].1 = bbox;
    }
    let mut replays: Vec<Replay> =
        replays.into_iter().map(|(r, _)| Replay::new(r.area, r.rect, Arc::unwrap_or_clone(r.bins))).collect();
    // Finest first: a direct (1x1) replay may then be followed by the others.
    replays.sort_by_key(|r| (r.area.0 * r.area.1, r.rect.y, r.rect.x));
    replays
}

/// Fragments shaded by a plan over `views` views (every replay renders all
/// of them), and by the ideal (every bin once at its own area in each view
/// that asks for it), for the benchmark and the log.
pub fn shaded(replays: &[Replay], bins: &[Bin], views: u32) -> (u64, u64) {
    let planned: u64 = replays.iter().map(|r| r.rect.pixels().div_ceil((r.area.0 * r.area.1) as u64)).sum();
    let ideal =
        bins.iter().map(|b| b.rect.pixels().div_ceil((b.area.0 * b.area.1) as u64) * b.views.count_ones() as u64).sum();
    (planned * views.max(1) as u64, ideal)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(x: u32, y: u32, w: u32, h: u32) -> Rect {
        Rect { x, y, w, h }
    }

    /// A rectangle less another: the bands above and below, then left and
    /// right of the overlap; itself where they do not meet, nothing where
    /// it is covered.
    #[test]
    fn a_rectangle_less_another_is_at_most_four() {
        assert_eq!(
            r(0, 0, 16, 16).minus(&r(4, 4, 8, 4)),
            vec![r(0, 0, 16, 4), r(0, 8, 16, 8), r(0, 4, 4, 4), r(12, 4, 4, 4)]
        );
        assert_eq!(r(0, 0, 16, 16).minus(&r(8, 0, 8, 16)), vec![r(0, 0, 8, 16)]);
        assert_eq!(r(0, 0, 8, 8).minus(&r(8, 0, 8, 8)), vec![r(0, 0, 8, 8)]);
        assert_eq!(r(2, 2, 4, 4).minus(&r(0, 0, 8, 8)), vec![]);
    }

    #[test]
    fn areas_from_densities() {
        assert_eq!(area_for_density(255, 4), 1);
        assert_eq!(area_for_density(128, 4), 1); // 1/0.502 < 2
        assert_eq!(area_for_density(127, 4), 2);
        assert_eq!(area_for_density(64, 4), 2); // 255/64 = 3.98
        assert_eq!(area_for_density(63, 4), 4);
        assert_eq!(area_for_density(1, 4), 4);
        assert_eq!(area_for_density(1, 2), 2);
        assert_eq!(area_for_density(0, 4), 1);
    }

    #[test]
    fn texel_size_follows_the_spec_formula() {
        assert_eq!(texel_size(256, 16, 8, 256), 16);
        assert_eq!(texel_size(250, 16, 8, 256), 16); // floor(250/16) = 15
        assert_eq!(texel_size(257, 16, 8, 256), 16); // revision 3: floor(257/16) = 16 (revision 2: 32)
        assert_eq!(texel_size(272, 16, 8, 256), 32);
        assert_eq!(texel_size(143, 16, 8, 256), 8); // floor: 8 (revision 2: 16)
        assert_eq!(texel_size(64, 64, 8, 256), 8); // clamped to the minimum
        assert_eq!(region_size(33, 16), 2); // the CTS's density_formula cases (revision 2: 4)
        assert_eq!(region_size(15, 16), 1);
    }

    #[test]
    fn cells_ending_the_render_area_end_on_whole_fragments() {
        assert_eq!(whole_fragments(224, 250, 4, 250, true), vec![(224, 248, 4), (248, 250, 2)]);
        assert_eq!(whole_fragments(248, 251, 4, 251, true), vec![(248, 251, 1)]);
        assert_eq!(whole_fragments(32, 33, 2, 33, true), vec![(32, 33, 1)]);
        assert_eq!(whole_fragments(224, 250, 4, 256, true), vec![(224, 250, 4)]); // not the end
        assert_eq!(whole_fragments(224, 248, 4, 248, true), vec![(224, 248, 4)]);
        assert_eq!(whole_fragments(224, 250, 4, 250, false), vec![(224, 250, 4)]);
    }

    #[test]
    fn fragment_areas_stay_within_the_unclamped_region() {
        // 33 pixels over 16 texels: regions of 2 before the 8-pixel minimum, so no fragment wider than 2.
        assert_eq!(area_cap(33, 16, 4), 2);
        assert_eq!(area_cap(64, 16, 4), 4);
        assert_eq!(area_cap(1024, 16, 4), 4);
        assert_eq!(area_cap(16, 16, 4), 1);
        // A uniform map asking for 4x4 over such a framebuffer gets 2x2 bins.
        let texels = vec![[63u8, 63u8]; 16 * 16];
        let map = DensityMap { width: 16, height: 16, layers: 1, texels: &texels };
        let area = Rect { x: 0, y: 0, w: 33, h: 33 };
        let view = View { layer: 0, offset: (0, 0) };
        let b = bins(&map, area, (8, 8), &[view], (area_cap(33, 16, 4), area_cap(33, 16, 4)), false, true);
        assert!(!b.is_empty() && b.iter().all(|b| b.area.0 <= 2 && b.area.1 <= 2), "{b:?}");
        assert!(b.iter().any(|b| b.area == (2, 2)));
    }

    fn map_of(w: u32, h: u32, f: impl Fn(u32, u32) -> [u8; 2]) -> Vec<[u8; 2]> {
        (0..h).flat_map(|y| (0..w).map(move |x| (x, y))).map(|(x, y)| f(x, y)).collect()
    }

    #[test]
    fn bins_cover_the_render_area_once() {
        let texels = map_of(4, 4, |x, _| [if x < 2 { 255 } else { 60 }, 255]);
        let map = DensityMap { width: 4, height: 4, layers: 1, texels: &texels };
        let area = Rect { x: 3, y: 0, w: 57, h: 61 };
        let b = bins(&map, area, (16, 16), &[View::layer(0)], (4, 4), false, true);
        let covered: u64 = b.iter().map(|b| b.rect.pixels()).sum();
        assert_eq!(covered, area.pixels());
        for (i, x) in b.iter().enumerate() {
            for y in &b[i + 1..] {
                assert!(!x.rect.intersects(&y.rect));
            }
        }
        // The first column starts at x = 3: only area 1 fits there.
        assert!(b.iter().filter(|b| b.rect.x == 3).all(|b| b.area.0 == 1));
        assert!(b.iter().filter(|b| b.rect.x >= 32).all(|b| b.area == (4, 1)));
    }

    /// Each view gets the areas of its own map layer; views asking for the
    /// same area over the same region share a bin. `one_area` (part 1's
    /// rule) gives both the smaller.
    #[test]
    fn multiview_bins_are_per_view() {
        let mut texels = map_of(2, 2, |x, _| if x == 0 { [60, 60] } else { [120, 255] });
        texels.extend(map_of(2, 2, |_, _| [120, 255]));
        let map = DensityMap { width: 2, height: 2, layers: 2, texels: &texels };
        let views = [View::layer(0), View::layer(1)];
        let b = bins(&map, Rect { x: 0, y: 0, w: 32, h: 32 }, (16, 16), &views, (4, 4), false, true);
        // Left column: view 0 asks for 4x4, view 1 for 2x1; right column: both 2x1.
        let left: Vec<&Bin> = b.iter().filter(|b| b.rect.x == 0).collect();
        assert_eq!(left.len(), 4, "{b:?}");
        assert!(left.iter().any(|b| b.area == (4, 4) && b.views == 0b01));
        assert!(left.iter().any(|b| b.area == (2, 1) && b.views == 0b10));
        assert!(b.iter().filter(|b| b.rect.x == 16).all(|b| b.area == (2, 1) && b.views == 0b11));
        assert_eq!(b.len(), 6);
        let one = bins(&map, Rect { x: 0, y: 0, w: 32, h: 32 }, (16, 16), &views, (4, 4), true, true);
        assert_eq!(one.len(), 4);
        assert!(one.iter().all(|b| b.area == (2, 1) && b.views == 0b11));
        // Every view holds every pixel once, in the plan too.
        for vertex_cost in [0.0, 1e9] {
            let replays = plan(&b, vertex_cost);
            for k in 0..2 {
                let px: u64 = replays.iter().flat_map(|r| r.rects_of(k)).map(|r| r.pixels()).sum();
                assert_eq!(px, 32 * 32, "view {k} at vertex cost {vertex_cost}");
            }
        }
    }

    /// Per-view viewports: each view's rectangle of a replay is the bounding
    /// box of its own bins, indexed by view index; a view with no bin there
    /// (and an index that is no view) gets none.
    #[test]
    fn a_replays_view_clips_bound_each_views_bins() {
        let r = |x, y, w, h| Rect { x, y, w, h };
        let bins = vec![
            Bin { rect: r(0, 0, 16, 16), area: (2, 2), views: 0b01 },
            Bin { rect: r(16, 0, 16, 16), area: (2, 2), views: 0b11 },
            Bin { rect: r(16, 16, 16, 16), area: (2, 2), views: 0b10 },
        ];
        let replay = Replay::new((2, 2), r(0, 0, 32, 32), bins);
        // Bit 0 is view 0, bit 1 view 2 (view 1 is not in the pass).
        let clips = replay.view_clips(&[0, 2]);
        assert_eq!(clips, vec![Some(r(0, 0, 32, 16)), None, Some(r(16, 0, 16, 32))]);
        let only_first =
            Replay::new((2, 2), r(0, 0, 16, 16), vec![Bin { rect: r(0, 0, 16, 16), area: (2, 2), views: 1 }]);
        assert_eq!(only_first.view_clips(&[0, 1]), vec![Some(r(0, 0, 16, 16)), None]);
    }

    /// A density offset shifts the view's grid by the offset: the region
    /// whose centre `c` fetches texel `(c - offset) / texel` is the texel's
    /// own region moved by the offset, and the fetch is clamped at the map's
    /// edges.
    #[test]
    fn an_offset_moves_the_regions_with_the_map() {
        // One 1x1 texel at (1, 1) of a 4x4 map of 4x4 texels, 16-pixel regions.
        let texels = map_of(4, 4, |x, y| if (x, y) == (1, 1) { [255, 255] } else { [50, 50] });
        let map = DensityMap { width: 4, height: 4, layers: 1, texels: &texels };
        let all = Rect { x: 0, y: 0, w: 64, h: 64 };
        let fine = |offset| -> Vec<Rect> {
            bins(&map, all, (16, 16), &[View { layer: 0, offset }], (4, 4), false, true)
                .into_iter()
                .filter(|b| b.area == (1, 1))
                .map(|b| b.rect)
                .collect()
        };
        assert_eq!(fine((0, 0)), [Rect { x: 16, y: 16, w: 16, h: 16 }]);
        assert_eq!(fine((8, -4)), [Rect { x: 24, y: 12, w: 16, h: 16 }]);
        assert_eq!(fine((-16, 32)), [Rect { x: 0, y: 48, w: 16, h: 16 }]);
        // The bins still cover the render area once.
        let b = bins(&map, all, (16, 16), &[View { layer: 0, offset: (8, -4) }], (4, 4), false, true);
        assert_eq!(b.iter().map(|b| b.rect.pixels()).sum::<u64>(), all.pixels());
        // The first column (x 0..8) fetches texel column -1, clamped to 0.
        assert!(b.iter().filter(|b| b.rect.x == 0).all(|b| b.area == (4, 4) || b.rect.y == 0));
    }

    #[test]
    fn rectangles_cover_exactly_what_they_are_given() {
        // A ring of 4x4 bins of 8 pixels around a 2x2 hole.
        let mut bins = Vec::new();
        for y in 0..4 {
            for x in 0..4 {
                if !(1..3).contains(&x) || !(1..3).contains(&y) {
                    bins.push(Rect { x: x * 8, y: y * 8, w: 8, h: 8 });
                }
            }
        }
        let r = rectangles(&bins);
        assert_eq!(r.len(), 4, "{r:?}");
        let covered: u64 = r.iter().map(Rect::pixels).sum();
        assert_eq!(covered, bins.iter().map(Rect::pixels).sum::<u64>());
        for b in &bins {
            assert_eq!(r.iter().filter(|x| x.union(b) == **x).count(), 1);
        }
    }

    #[test]
    fn plans_store_every_bin_once_at_no_more_than_its_area() {
        // Foveated: centre 1x1, a ring of 2x2, the rest 4x4.
        let texels = map_of(8, 8, |x, y| {
            let d = (x as i32 * 2 - 7).abs().max((y as i32 * 2 - 7).abs());
            let v = if d <= 1 {
                255
            } else if d <= 3 {
                100
            } else {
                50
            };
            [v, v]
        });
        let map = DensityMap { width: 8, height: 8, layers: 1, texels: &texels };
        let bins = bins(&map, Rect { x: 0, y: 0, w: 256, h: 256 }, (32, 32), &[View::layer(0)], (4, 4), false, true);
        for vertex_cost in [0.0, 1000.0, 1e9] {
            let replays = plan(&bins, vertex_cost);
            for b in &bins {
                let holders: Vec<&Replay> = replays.iter().filter(|r| r.bins.contains(b)).collect();
                assert_eq!(holders.len(), 1, "{b:?}");
                let r = holders[0];
                assert!(r.area.0 <= b.area.0 && r.area.1 <= b.area.1);
                assert!(r.rect.x % r.area.0 == 0 && r.rect.y % r.area.1 == 0);
                assert_eq!(r.rect.union(&b.rect), r.rect);
            }
            if vertex_cost == 0.0 {
                // The centre, and the two rings as four rectangles each.
                assert_eq!(replays.len(), 9, "no merging when replays are free");
                let (planned, ideal) = shaded(&replays, &bins, 1);
                assert_eq!(planned, ideal, "nothing shaded twice");
            }
            if vertex_cost == 1e9 {
                assert_eq!(replays.len(), 1, "one replay when vertex work dominates");
                assert_eq!(replays[0].area, (1, 1));
            }
            let (planned, ideal) = shaded(&replays, &bins, 1);
            assert!(planned >= ideal);
        }
    }

    /// The merge as first written: every pair's bins walked for its box.
    /// The oracle for the box-union merge (same savings, same ties).
    fn plan_by_walking_bins(bins: &[Bin], vertex_cost: f64) -> Vec<Replay> {
        let mut by_area: Vec<((u32, u32), Vec<Bin>)> = Vec::new();
        for b in bins {
            match by_area.iter_mut().find(|(a, _)| *a == b.area) {
                Some((_, v)) => v.push(*b),
                None => by_area.push((b.area, vec![*b])),
            }
        }
        let walk = |bins: &[Bin], area| aligned(bounding_box(bins), area);
        let mut replays: Vec<Replay> = by_area
            .into_iter()
            .flat_map(|(area, bins)| {
                rectangles(&bins.iter().map(|b| b.rect).collect::<Vec<_>>()).into_iter().map(move |r| {
                    let inside: Vec<Bin> = bins.iter().filter(|b| r.union(&b.rect) == r).copied().collect();
                    Replay::new(area, walk(&inside, area), inside)
                })
            })
            .collect();
        loop {
            let mut best: Option<(usize, usize, Replay, f64)> = None;
            for i in 0..replays.len() {
                for j in i + 1..replays.len() {
                    let area = (replays[i].area.0.min(replays[j].area.0), replays[i].area.1.min(replays[j].area.1));
                    let bins: Vec<Bin> = replays[i].bins.iter().chain(replays[j].bins.iter()).copied().collect();
                    let merged = Replay::new(area, walk(&bins, area), bins);
                    let saving =
                        cost(&replays[i], vertex_cost) + cost(&replays[j], vertex_cost) - cost(&merged, vertex_cost);
                    if saving > 0.0 && best.as_ref().is_none_or(|b| saving > b.3) {
                        best = Some((i, j, merged, saving));
                    }
                }
            }
            let Some((i, j, merged, _)) = best else { break };
            replays.remove(j);
            replays[i] = merged;
        }
        replays.sort_by_key(|r| (r.area.0 * r.area.1, r.rect.y, r.rect.x));
        replays
    }

    /// Radial (foveated, like google/bigwheels' benchmark) and noisy maps:
    /// the merge on box unions plans exactly what walking the bins planned.
    #[test]
    fn box_union_merge_plans_what_walking_the_bins_planned() {
        let mut seed = 0x2545_f491u32;
        let mut noise = move || {
            seed ^= seed << 13;
            seed ^= seed >> 17;
            seed ^= seed << 5;
            seed
        };
        let mut maps = vec![(
            60,
            34,
            map_of(60, 34, |x, y| {
                let (dx, dy) = (x as f32 - 30.0, y as f32 - 17.0);
                let r = (dx * dx + dy * dy).sqrt() / 34.0;
                let v = (255.0 * (1.0 - r).clamp(0.1, 1.0)) as u8;
                [v, v]
            }),
        )];
        for _ in 0..4 {
            let t: Vec<[u8; 2]> = (0..16 * 12).map(|_| [[255, 100, 40][noise() as usize % 3]; 2]).collect();
            maps.push((16, 12, t));
        }
        for (w, h, texels) in &maps {
            let map = DensityMap { width: *w, height: *h, layers: 1, texels };
            let bins =
                bins(&map, Rect { x: 0, y: 0, w: w * 8 - 3, h: h * 8 }, (8, 8), &[View::layer(0)], (4, 4), false, true);
            for vertex_cost in [0.0, 50.0, 2000.0, 1e9] {
                assert_eq!(plan(&bins, vertex_cost), plan_by_walking_bins(&bins, vertex_cost), "{w}x{h} {vertex_cost}");
            }
        }
    }
}

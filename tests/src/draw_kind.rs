//! One draw, issued as any of the draw commands real programs use (issue 37,
//! item 3): direct, indexed, indirect, indexed indirect, indirect count,
//! indexed indirect count, `vkCmdDrawMultiEXT` and `vkCmdDrawMultiIndexedEXT`.
//! Every kind draws the same vertices (`gl_VertexIndex` = the direct draw's
//! first vertex + i), the same instances and so the same picture: a scene
//! drawn by any kind is checked against the reference of the direct draw.
//!
//! How each kind goes down, so that the layer's handling of each argument is
//! exercised:
//! - indexed: an identity index buffer (index i holds i), `firstIndex` = the
//!   first vertex, `vertexOffset` 0;
//! - indexed indirect (and count): `firstIndex` 0, `vertexOffset` = the
//!   first vertex;
//! - indirect kinds: one command per call (so the ordered interlock strategy
//!   orders them; it falls back for more), at a nonzero offset with a
//!   stride larger than the command; the count kinds read the count (1) from
//!   a buffer at a nonzero offset, `maxDrawCount` 1;
//! - multi kinds: the vertices in two draws at a triangle boundary (one
//!   draw where there are fewer than six, or more than one instance: two
//!   draws of many instances would reorder the primitives, instance i's
//!   second triangle coming after instance j's first), multi-indexed with
//!   `pVertexOffset`.

use crate::render::{Buffer, Gpu};
use ash::vk;
use std::cell::RefCell;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum DrawKind {
    #[default]
    Direct,
    Indexed,
    Indirect,
    IndexedIndirect,
    IndirectCount,
    IndexedIndirectCount,
    Multi,
    MultiIndexed,
}

pub const ALL: [DrawKind; 8] = [
    DrawKind::Direct,
    DrawKind::Indexed,
    DrawKind::Indirect,
    DrawKind::IndexedIndirect,
    DrawKind::IndirectCount,
    DrawKind::IndexedIndirectCount,
    DrawKind::Multi,
    DrawKind::MultiIndexed,
];

/// The names of [`ALL`], in its order, which is the enum's (the test
/// program's `draw=` values).
pub const NAMES: [&str; 8] = [
    "direct",
    "indexed",
    "indirect",
    "indexed-indirect",
    "indirect-count",
    "indexed-indirect-count",
    "multi",
    "multi-indexed",
];

impl DrawKind {
    pub fn name(self) -> &'static str {
        NAMES[self as usize]
    }

    pub fn indexed(self) -> bool {
        matches!(
            self,
            DrawKind::Indexed | DrawKind::IndexedIndirect | DrawKind::IndexedIndirectCount | DrawKind::MultiIndexed
        )
    }

    /// Reads its arguments from a buffer on the GPU.
    pub fn indirect(self) -> bool {
        matches!(
            self,
            DrawKind::Indirect | DrawKind::IndexedIndirect | DrawKind::IndirectCount | DrawKind::IndexedIndirectCount
        )
    }

    /// Needs `VK_EXT_multi_draw`.
    pub fn multi(self) -> bool {
        matches!(self, DrawKind::Multi | DrawKind::MultiIndexed)
    }

    /// Needs `drawIndirectCount` (Vulkan 1.2).
    pub fn count(self) -> bool {
        matches!(self, DrawKind::IndirectCount | DrawKind::IndexedIndirectCount)
    }
}

impl std::fmt::Display for DrawKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for DrawKind {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        ALL.into_iter().find(|k| k.name() == s).ok_or_else(|| {
            let names: Vec<&str> = ALL.iter().map(|k| k.name()).collect();
            format!("draw kind {s:?}: one of {}", names.join(", "))
        })
    }
}

/// Indices in the identity index buffer (the most vertices one draw may reach).
const INDICES: u32 = 1 << 12;
/// Where the first indirect command starts, and the bytes between two.
const INDIRECT_BASE: u64 = 12;
const STRIDE: u32 = 28;
/// Indirect slots (distinct draws per render).
const SLOTS: u64 = 64;
/// Where the first draw count starts.
const COUNT_BASE: u64 = 8;

/// The buffers a kind needs, for the draws of one command buffer's recording
/// (the GPU reads the indirect commands when it executes: each distinct draw
/// has its own slot, written when it is first recorded).
pub struct Draws<'g> {
    gpu: &'g Gpu,
    pub kind: DrawKind,
    index: Option<Buffer>,
    indirect: Option<Buffer>,
    count: Option<Buffer>,
    multi: Option<ash::ext::multi_draw::Device>,
    /// The draws given slots so far: (vertices, instances, first vertex, first instance).
    slots: RefCell<Vec<[u32; 4]>>,
}

impl<'g> Draws<'g> {
    /// Panics where the device lacks what `kind` needs (the caller enables
    /// `VK_EXT_multi_draw` through `GpuOptions::multi_draw`).
    pub fn new(gpu: &'g Gpu, kind: DrawKind) -> Draws<'g> {
        let index = kind.indexed().then(|| {
            let b = gpu.buffer(INDICES as u64 * 4, vk::BufferUsageFlags::INDEX_BUFFER, true);
            let identity: Vec<u32> = (0..INDICES).collect();
            // SAFETY: a mapped host-visible buffer of INDICES words.
            unsafe { std::ptr::copy_nonoverlapping(identity.as_ptr(), b.map as *mut u32, identity.len()) };
            b
        });
        let indirect = kind
            .indirect()
            .then(|| gpu.buffer(INDIRECT_BASE + SLOTS * STRIDE as u64, vk::BufferUsageFlags::INDIRECT_BUFFER, true));
        let count =
            kind.count().then(|| gpu.buffer(COUNT_BASE + SLOTS * 4, vk::BufferUsageFlags::INDIRECT_BUFFER, true));
        if kind.multi() {
            assert!(gpu.multi_draw, "{kind}: VK_EXT_multi_draw is not enabled");
        }
        let multi = kind.multi().then(|| ash::ext::multi_draw::Device::new(&gpu.instance, &gpu.device));
        Draws { gpu, kind, index, indirect, count, multi, slots: RefCell::new(Vec::new()) }
    }

    /// The slot of this draw, its command (and count) written on first use.
    fn slot(&self, draw: [u32; 4]) -> u64 {
        let mut slots = self.slots.borrow_mut();
        if let Some(i) = slots.iter().position(|s| *s == draw) {
            return i as u64;
        }
        let i = slots.len() as u64;
        assert!(i < SLOTS, "more than {SLOTS} distinct draws");
        slots.push(draw);
        let [vertices, instances, first_vertex, first_instance] = draw;
        let words: Vec<u32> = if self.kind.indexed() {
            // VkDrawIndexedIndirectCommand: count, instances, firstIndex, vertexOffset, firstInstance.
            vec![vertices, instances, 0, first_vertex, first_instance]
        } else {
            // VkDrawIndirectCommand.
            vec![vertices, instances, first_vertex, first_instance]
        };
        let b = self.indirect.as_ref().expect("an indirect kind");
        // SAFETY: the slot lies inside the mapped buffer (SLOTS slots of STRIDE bytes, each command shorter).
        unsafe {
            let at = b.map.add((INDIRECT_BASE + i * STRIDE as u64) as usize) as *mut u32;
            std::ptr::copy_nonoverlapping(words.as_ptr(), at, words.len());
            if let Some(c) = &self.count {
                *(c.map.add((COUNT_BASE + i * 4) as usize) as *mut u32) = 1;
            }
        }
        i
    }

    /// Records the draw `vkCmdDraw(cb, vertices, instances, first_vertex,
    /// first_instance)` would, as this kind.
    pub fn draw(&self, cb: vk::CommandBuffer, vertices: u32, instances: u32, first_vertex: u32, first_instance: u32) {
        let d = &self.gpu.device;
        assert!(first_vertex + vertices <= INDICES, "{} vertices", first_vertex + vertices);
        // The vertices in two draws at a triangle boundary (multi kinds, one instance).
        let half = if instances == 1 { vertices / 6 * 3 } else { 0 };
        let pieces: Vec<(u32, u32)> =
            [(0, half), (half, vertices - half)].into_iter().filter(|(_, n)| *n > 0).collect();
        // SAFETY: the caller records inside a render pass or rendering with a
        // graphics pipeline bound; the buffers live as long as `self`.
        unsafe {
            if let Some(ib) = &self.index {
                d.cmd_bind_index_buffer(cb, ib.buffer, 0, vk::IndexType::UINT32);
            }
            let slot = || self.slot([vertices, instances, first_vertex, first_instance]);
            let offset = |s: u64| INDIRECT_BASE + s * STRIDE as u64;
            let buffer = || self.indirect.as_ref().unwrap().buffer;
            let count = || self.count.as_ref().unwrap().buffer;
            match self.kind {
                DrawKind::Direct => d.cmd_draw(cb, vertices, instances, first_vertex, first_instance),
                DrawKind::Indexed => d.cmd_draw_indexed(cb, vertices, instances, first_vertex, 0, first_instance),
                DrawKind::Indirect => {
                    let s = slot();
                    d.cmd_draw_indirect(cb, buffer(), offset(s), 1, STRIDE)
                }
                DrawKind::IndexedIndirect => {
                    let s = slot();
                    d.cmd_draw_indexed_indirect(cb, buffer(), offset(s), 1, STRIDE)
                }
                DrawKind::IndirectCount => {
                    let s = slot();
                    d.cmd_draw_indirect_count(cb, buffer(), offset(s), count(), COUNT_BASE + s * 4, 1, STRIDE)
                }
                DrawKind::IndexedIndirectCount => {
                    let s = slot();
                    d.cmd_draw_indexed_indirect_count(cb, buffer(), offset(s), count(), COUNT_BASE + s * 4, 1, STRIDE)
                }
                DrawKind::Multi => {
                    let draws: Vec<vk::MultiDrawInfoEXT> = pieces
                        .iter()
                        .map(|&(at, n)| vk::MultiDrawInfoEXT { first_vertex: first_vertex + at, vertex_count: n })
                        .collect();
                    let stride = std::mem::size_of::<vk::MultiDrawInfoEXT>() as u32;
                    let md = self.multi.as_ref().unwrap();
                    (md.fp().cmd_draw_multi_ext)(
                        cb,
                        draws.len() as u32,
                        draws.as_ptr(),
                        instances,
                        first_instance,
                        stride,
                    );
                }
                DrawKind::MultiIndexed => {
                    let draws: Vec<vk::MultiDrawIndexedInfoEXT> = pieces
                        .iter()
                        .map(|&(at, n)| vk::MultiDrawIndexedInfoEXT {
                            first_index: at,
                            index_count: n,
                            vertex_offset: 0,
                        })
                        .collect();
                    let stride = std::mem::size_of::<vk::MultiDrawIndexedInfoEXT>() as u32;
                    let vertex_offset = first_vertex as i32;
                    let md = self.multi.as_ref().unwrap();
                    (md.fp().cmd_draw_multi_indexed_ext)(
                        cb,
                        draws.len() as u32,
                        draws.as_ptr(),
                        instances,
                        first_instance,
                        stride,
                        &vertex_offset,
                    );
                }
            }
        }
    }
}

impl Drop for Draws<'_> {
    fn drop(&mut self) {
        for b in [self.index.take(), self.indirect.take(), self.count.take()].into_iter().flatten() {
            self.gpu.destroy_buffer(b);
        }
    }
}

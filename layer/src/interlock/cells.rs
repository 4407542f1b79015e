//! The ordered strategy's state on a device: its settings ([`Config`]),
//! the cells of primitive order and their sets ([`Cells`]), and what it
//! tracks per render pass, command buffer, dynamic rendering, query pool
//! and queue ([`Ordered`]). The reserved set owns it; `ordered.rs` records
//! with it.

use ash::vk;
use parking_lot::Mutex;
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};

/// The ordered strategy's settings and limits, fixed at device creation.
#[derive(Clone, Copy, Debug)]
pub struct Config {
    /// The fragment shaders' instance-index input location (the vertex
    /// shaders' output); the layer reports the varying limits below it.
    pub location: u32,
    pub slots: u32,
    pub grid: u32,
    pub wait: u32,
    pub reverse: bool,
    /// Testing only: the key search finds nothing (`debug_ordered_search_misses`).
    pub search_misses: bool,
    /// Measurement only (`debug_ordered_dedicated`): the cells a dedicated
    /// allocation, the control block in device-local host-visible memory
    /// where there is such a type.
    pub dedicated: bool,
    /// Measurement only (`debug_ordered_without`): bit 0 no waits, bit 1 no
    /// protocol in the run draw, bit 3 no lock nor wait, bit 4 no append in
    /// the count draw, bit 5 no reset (the layer zeroes the cells at every
    /// submission), bit 6 no search, bit 7 no wait for the previous slot's
    /// key in the count draw's order check, bit 8 no slot guess (the search
    /// alone: no arrivals counter) (the control block's `skip`);
    /// bit 2 no count draw.
    pub without: u32,
    /// The application enabled a fragment shading rate: fragment shaders
    /// read the coarse fragment's size.
    pub shading_rate: bool,
    /// The device has demote enabled: discards before a section are demoted
    /// (`overlap_shaders::ordered::Config::demote`).
    pub demote: bool,
}

/// `debug_ordered_without=early_lookup`'s bit in [`Config::without`]: the
/// one-cell build that looks its key up at the first section
/// (`overlap_shaders::ordered::Build::Late`).
pub const EARLY_LOOKUP: u32 = 1 << 9;

impl Config {
    /// The protocol build the measurement setting asks for: none by
    /// default, the late lookup for `early_lookup`, else the parts build.
    pub fn measure(&self) -> Option<overlap_shaders::ordered::Measure> {
        use overlap_shaders::ordered::Measure;
        match self.without {
            0 => None,
            w if w & EARLY_LOOKUP != 0 => Some(Measure::LateLookup),
            _ => Some(Measure::Parts),
        }
    }
}

/// Where a command buffer records.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Pass {
    None,
    /// A render pass instance (or a secondary inheriting one): the pass and
    /// the subpass.
    Subpass(vk::RenderPass, u32),
    /// Dynamic rendering: `Ok` where the layer can split it (its later
    /// parts are in `Ordered::splits`), else why not.
    Dynamic(Result<(), &'static str>),
    /// A secondary whose pass the layer does not know.
    Unknown,
}

#[derive(Clone, Copy, Debug)]
pub(super) struct CommandBufferState {
    pub(super) pass: Pass,
    /// Active queries the count draw would disturb.
    pub(super) counting_queries: u32,
    /// Queries begun inside the current dynamic rendering and not ended.
    pub(super) queries_inside: u32,
    /// Active occlusion queries (the samples of a count draw with early
    /// fragment tests would count).
    pub(super) occlusion_queries: u32,
}

/// A dynamic rendering instance the layer can split around ordered draws:
/// what every later part begins with (attachments loaded and stored).
pub(super) struct Split {
    pub(super) render_area: vk::Rect2D,
    pub(super) layer_count: u32,
    pub(super) colors: Vec<vk::RenderingAttachmentInfo<'static>>,
    pub(super) depth: Option<vk::RenderingAttachmentInfo<'static>>,
    pub(super) stencil: Option<vk::RenderingAttachmentInfo<'static>>,
    pub(super) rate: Option<vk::RenderingFragmentShadingRateAttachmentInfoKHR<'static>>,
}

// SAFETY: the structures hold handles and no pointer (their `pNext` are
// null: a chained one makes the rendering unsplittable).
unsafe impl Send for Split {}

/// The location the ordered strategy passes the instance index at: the last
/// the driver has in both the vertex outputs and the fragment inputs (the
/// layer reports the varying limits below it).
pub fn location(driver: &vk::PhysicalDeviceLimits) -> u32 {
    (driver.max_vertex_output_components.min(driver.max_fragment_input_components) / 4).saturating_sub(1)
}

/// The grid, halved until the cells (`grid`² cells of `slots` keys) fit in
/// `max_bytes` (the driver's `maxStorageBufferRange`, and its
/// `maxMemoryAllocationSize`): the cells are one storage buffer, bound
/// whole. Pixels further apart then share cells (contention, and keys from
/// more pixels in a cell).
pub fn fit_grid(grid: u32, slots: u32, max_bytes: u64) -> u32 {
    let cell = u64::from(overlap_shaders::ordered::CELL_HEADER + 2 * slots) * 4;
    let mut g = grid.max(1);
    while g > 1 && u64::from(g) * u64::from(g) * cell > max_bytes {
        g /= 2;
    }
    g
}

/// The smallest side of a grid sized by the render targets.
pub const MIN_GRID: u32 = 256;

/// The grid of cells (per row, per column) for render targets of at most
/// `targets` (width, height) and `max` cells per side (the setting, fitted
/// to the driver's limits: a power of two): each side the targets' rounded
/// up to a multiple of 8 (the cells' 8x8 blocks), at least [`MIN_GRID`], at
/// most `max`; `max` both ways where no target has been made (pipelines
/// made before their targets). A 1920x1080 target gets 1920x1080 cells
/// (597 MB at 32 slots), not the 2048x2048 (1.2 GB) of the next powers of two.
pub fn sized_grid(max: u32, targets: (u32, u32)) -> (u32, u32) {
    if targets.0 == 0 || targets.1 == 0 {
        return (max, max);
    }
    let side = |t: u32| t.checked_next_multiple_of(8).unwrap_or(max).max(MIN_GRID).min(max);
    (side(targets.0), side(targets.1))
}

/// The cells and their descriptor sets.
pub(super) struct Cells {
    pub(super) buffers: Vec<(vk::Buffer, vk::DeviceMemory)>,
    pub(super) counters: *const u32,
    /// The four control blocks (256 bytes apart), mapped.
    pub(super) control: *mut u32,
    pub(super) cells: vk::Buffer,
    pub(super) bytes: u64,
    /// Cells per row and per column.
    pub(super) grid: (u32, u32),
    pub(super) pool: vk::DescriptorPool,
    /// Count, count merging equal keys, run and unordered sets.
    pub(super) sets: [vk::DescriptorSet; 4],
    /// Not zeroed yet: the next submission does it first.
    pub(super) pending_clear: bool,
    /// The clear command buffer per queue family.
    pub(super) clear: HashMap<u32, (vk::CommandPool, vk::CommandBuffer)>,
    /// The counters last logged.
    pub(super) logged: [u32; overlap_shaders::ordered::COUNTERS],
    /// The cells are a dedicated allocation (`debug_ordered_dedicated`).
    pub(super) dedicated: bool,
}

impl Cells {
    /// Tells the protocol that pixels a grid apart may share these cells
    /// (a render area larger than the grid was seen), so that each copy of
    /// the grid keys its fragments apart: the control blocks' word 8 (`shares`).
    /// Set once, never cleared; a draw in flight that reads it either way
    /// is right, since where no pixel lies beyond the grid every copy index
    /// is 0.
    pub(super) fn share(&mut self) {
        if self.control.is_null() {
            return;
        }
        for k in 0..4 {
            // SAFETY: `control` maps the 1024-byte control buffer; block k's
            // word 8 is at 64·k + 8 words. A plain store of a word the GPU
            // only reads, coherent memory, visible at the next submission.
            unsafe { std::ptr::write_volatile(self.control.add(64 * k + 8), 1) };
        }
    }
}

// SAFETY: `counters` and `control` point into host-visible memory the layer
// mapped and owns until `destroy`; they are used under the `Mutex` that
// holds `Cells`.
unsafe impl Send for Cells {}

pub struct Ordered {
    pub cfg: Config,
    pub(super) cells: Mutex<Option<Result<Cells, ()>>>,
    /// Per render pass made on the device: per subpass, whether it has the
    /// layer's self-dependency (not in multiview subpasses).
    pub(super) render_passes: Mutex<HashMap<vk::RenderPass, Vec<bool>>>,
    pub(super) command_buffers: Mutex<HashMap<vk::CommandBuffer, CommandBufferState>>,
    /// The dynamic rendering each command buffer records in, where split.
    pub(super) splits: Mutex<HashMap<vk::CommandBuffer, std::sync::Arc<Split>>>,
    pub(super) secondaries: Mutex<HashSet<vk::CommandBuffer>>,
    pub(super) query_pools: Mutex<HashMap<vk::QueryPool, vk::QueryType>>,
    pub(super) queues: Mutex<HashMap<vk::Queue, u32>>,
    /// The largest width and height of the render targets made on the
    /// device (attachment images, framebuffers, swapchains, render areas):
    /// what the cells are sized by ([`Ordered::note_target`]).
    targets: [AtomicU32; 2],
    /// A target grew since the last ordered draw looked (the draws check
    /// the cells against the targets only then).
    targets_grew: AtomicBool,
    /// The cells the current ones grew out of (a larger render target made
    /// after them): command buffers recorded with them may be submitted
    /// again, so they live until the device is destroyed.
    pub(super) retired: Mutex<Vec<Cells>>,
}

impl Ordered {
    pub fn new(cfg: Config) -> Ordered {
        Ordered {
            cfg,
            cells: Mutex::new(None),
            render_passes: Default::default(),
            command_buffers: Default::default(),
            splits: Default::default(),
            secondaries: Default::default(),
            query_pools: Default::default(),
            queues: Default::default(),
            targets: Default::default(),
            targets_grew: AtomicBool::new(false),
            retired: Default::default(),
        }
    }

    /// A render target of `width` x `height` made.
    pub(super) fn note_target(&self, width: u32, height: u32) {
        // Every render pass begin comes here: a plain load first, the
        // read-modify-writes only for a larger target.
        if width <= self.targets[0].load(Ordering::Relaxed) && height <= self.targets[1].load(Ordering::Relaxed) {
            return;
        }
        let w = self.targets[0].fetch_max(width, Ordering::Relaxed);
        let h = self.targets[1].fetch_max(height, Ordering::Relaxed);
        if width > w || height > h {
            self.targets_grew.store(true, Ordering::Release);
        }
    }

    /// The largest render target's width and height so far.
    pub(super) fn targets(&self) -> (u32, u32) {
        (self.targets[0].load(Ordering::Relaxed), self.targets[1].load(Ordering::Relaxed))
    }

    /// Whether a target grew since the last call (every ordered draw asks:
    /// a plain load, the swap only when it is up).
    pub(super) fn targets_grew(&self) -> bool {
        self.targets_grew.load(Ordering::Acquire) && self.targets_grew.swap(false, Ordering::AcqRel)
    }

    /// The set layout bindings 1–3 (cells, control, counters).
    pub fn bindings() -> [vk::DescriptorSetLayoutBinding<'static>; 3] {
        use overlap_shaders::ordered::{BINDING_CELLS, BINDING_CONTROL, BINDING_COUNTERS};
        let b = |binding, ty| {
            vk::DescriptorSetLayoutBinding::default()
                .binding(binding)
                .descriptor_type(ty)
                .descriptor_count(1)
                .stage_flags(vk::ShaderStageFlags::FRAGMENT)
        };
        [
            b(BINDING_CELLS, vk::DescriptorType::STORAGE_BUFFER),
            b(BINDING_CONTROL, vk::DescriptorType::UNIFORM_BUFFER),
            b(BINDING_COUNTERS, vk::DescriptorType::STORAGE_BUFFER),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_grid_is_sized_by_the_render_targets() {
        // No target yet: the whole grid the setting asks.
        assert_eq!(sized_grid(2048, (0, 0)), (2048, 2048));
        // A 1024² target: a quarter of the cells; a 1080p one its own size
        // (half of 2048 x 2048); sides rounded up to a multiple of 8.
        assert_eq!(sized_grid(2048, (1024, 1024)), (1024, 1024));
        assert_eq!(sized_grid(2048, (1920, 1080)), (1920, 1080));
        assert_eq!(sized_grid(2048, (1280, 720)), (1280, 720));
        assert_eq!(sized_grid(2048, (1001, 333)), (1008, 336));
        // Small targets keep MIN_GRID; larger than the setting: the setting
        // (pixels further apart share cells); a setting below MIN_GRID holds.
        assert_eq!(sized_grid(2048, (64, 300)), (256, 304));
        assert_eq!(sized_grid(2048, (8192, 100)), (2048, 256));
        assert_eq!(sized_grid(128, (4000, 4000)), (128, 128));
        assert_eq!(sized_grid(2048, (u32::MAX, 1)), (2048, 256));
    }

    #[test]
    fn the_grid_fits_the_drivers_storage_buffer_range() {
        let cell = |slots: u32| u64::from(overlap_shaders::ordered::CELL_HEADER + 2 * slots) * 4;
        // Room for the grid asked: kept.
        assert_eq!(fit_grid(2048, 32, u64::from(u32::MAX)), 2048);
        // lavapipe's 128 MiB range: 2048 x 2048 cells of 32 keys are 1.1 GiB.
        let g = fit_grid(2048, 32, 128 << 20);
        assert!(u64::from(g) * u64::from(g) * cell(32) <= 128 << 20);
        assert!(u64::from(2 * g) * u64::from(2 * g) * cell(32) > 128 << 20, "halved once too often: {g}");
        assert_eq!(g, 512);
        // Nothing fits: one cell (every pixel shares it).
        assert_eq!(fit_grid(2048, 32, 1), 1);
    }
}

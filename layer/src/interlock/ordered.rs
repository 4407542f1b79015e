//! The device side of the `ordered` interlock strategy
//! (`overlap_shaders::ordered` rewrites the shaders and documents the
//! protocol).
//!
//! - **Cells**: a storage buffer of `grid`² cells (`8 + 2·slots` words
//!   each, laid out as planes of one field of every cell: see
//!   `shaders/glsl/ordered.frag`; pixels further apart share cells), a uniform block per mode
//!   (count, run, unordered) and a host-visible counters buffer, in three
//!   descriptor sets of the reserved set's layout (bindings 1–3; binding 0
//!   is the spinlock's lock image). They are made when the first ordered
//!   module is rewritten (not at device creation: 1.1 GB by default), and
//!   zeroed by a fill the layer submits, with a barrier, right before the
//!   application's next `vkQueueSubmit`; from then on the protocol leaves
//!   every cell zero after each draw.
//! - **Draws** with an ordered pipeline bound become `barrier, bind(count),
//!   draw, barrier, bind(run), draw` — the same command twice, so the same
//!   fragments. The barriers are by-region fragment-shader → fragment-shader
//!   memory barriers, which need a self-dependency in the subpass: every
//!   render pass made on the device gets one per subpass (and one from each
//!   subpass to the next), which changes no compatibility. Before every
//!   render pass (and dynamic rendering) a barrier orders the previous
//!   pass's cells before this one's.
//! - **Fallbacks** (logged once per reason, `OVERLAP-Interlock-Order-Fallback`):
//!   the draw binds the unordered set (a mutex per cell, no order) where
//!   order cannot be had — dynamic rendering the layer cannot split (below),
//!   multiview subpasses, a pass the layer does not
//!   know (a secondary without inheritance), an active pipeline-statistics,
//!   primitives-generated or transform-feedback query (the count draw would
//!   be counted), multi-draw indirect calls (one key space per call), and
//!   pipelines the layer cannot order (decided at creation: see
//!   [`super::reserved::PipelineKind`]; a link of graphics pipeline libraries is
//!   decided from what each library brought, [`super::reserved::LibraryPart`]).
//! - **Dynamic rendering** allows no barrier inside it (without
//!   `VK_KHR_dynamic_rendering_local_read`, whose barriers cover attachment
//!   accesses only), so around an ordered draw the layer ends the rendering
//!   and begins it again: `end, barrier, begin, count draw, end, barrier,
//!   begin, run draw`. Every part after the application's begins with its
//!   attachments loaded; the application's store operations become
//!   `STORE` (`NONE` for a read-only attachment), since a later part reads
//!   what an earlier part left — a `DONT_CARE` result is undefined, so a
//!   stored one is a correct one; resolves happen at the end of every part,
//!   the last one's last. Bound state (pipeline, sets, push constants,
//!   dynamic state) is command-buffer state and survives. Not split (the
//!   draw falls back, logged): rendering that suspends or resumes, records
//!   its draws in secondaries, has a view mask, chains a structure other
//!   than a shading-rate attachment, or has a query begun inside it (a
//!   query must end in the rendering it began in).
//! - **Counters**: overflowed cells, expired waits and keys not found are
//!   read at each submission and at device destruction, and logged
//!   (`OVERLAP-Interlock-Order-Lost`): order lost there, never silently.

use super::cells::{Cells, CommandBufferState, Ordered, Pass, Split};
use super::reserved::{PipelineKind, ReservedSet};
use crate::device::DeviceCore;
use crate::generated::args;
use crate::id;
use crate::render_pass::{CreateArgs, RenderPassInfo};
use ash::vk;
use overlap_shaders::ordered::{MODE_COUNT, MODE_COUNT_MERGED, MODE_RUN, MODE_UNORDERED};
use std::collections::HashMap;

/// Whether `layout` makes the attachment's aspect read-only (`stencil`: the
/// stencil aspect's, else the depth or colour one's).
fn read_only(layout: vk::ImageLayout, stencil: bool) -> bool {
    use vk::ImageLayout as L;
    match layout {
        L::DEPTH_STENCIL_READ_ONLY_OPTIMAL | L::READ_ONLY_OPTIMAL | L::SHADER_READ_ONLY_OPTIMAL => true,
        L::DEPTH_READ_ONLY_OPTIMAL | L::DEPTH_READ_ONLY_STENCIL_ATTACHMENT_OPTIMAL => !stencil,
        L::STENCIL_READ_ONLY_OPTIMAL | L::DEPTH_ATTACHMENT_STENCIL_READ_ONLY_OPTIMAL => stencil,
        _ => false,
    }
}

impl Split {
    /// The parts of `info`, if the layer can split it: what later parts
    /// begin with, and the application's attachments with their store
    /// operations made to keep what they hold (`none`: whether
    /// `VK_ATTACHMENT_STORE_OP_NONE` may be used).
    ///
    /// # Safety
    /// `info` is a valid `VkRenderingInfo`.
    #[allow(clippy::type_complexity)]
    unsafe fn of(
        info: &vk::RenderingInfo<'_>,
        none: bool,
    ) -> Result<(Split, [Vec<vk::RenderingAttachmentInfo<'static>>; 3]), &'static str> {
        use vk::RenderingFlags as F;
        if info.flags.intersects(F::SUSPENDING | F::RESUMING) {
            return Err("dynamic rendering that suspends or resumes (the layer does not split it)");
        }
        if info.flags.contains(F::CONTENTS_SECONDARY_COMMAND_BUFFERS) {
            return Err("dynamic rendering whose draws are in secondary command buffers");
        }
        if info.view_mask != 0 {
            return Err("multiview dynamic rendering");
        }
        let mut rate = None;
        let mut p = info.p_next;
        while !p.is_null() {
            // SAFETY: a valid chain (the caller's guarantee) starts every
            // structure with the base header.
            let base = unsafe { &*(p as *const vk::BaseInStructure) };
            if base.s_type != vk::StructureType::RENDERING_FRAGMENT_SHADING_RATE_ATTACHMENT_INFO_KHR {
                return Err("dynamic rendering with a chained structure the layer does not split it with");
            }
            // SAFETY: the structure of that sType.
            let r = unsafe { *(p as *const vk::RenderingFragmentShadingRateAttachmentInfoKHR<'_>) };
            rate = Some(vk::RenderingFragmentShadingRateAttachmentInfoKHR {
                p_next: std::ptr::null(),
                image_view: r.image_view,
                image_layout: r.image_layout,
                shading_rate_attachment_texel_size: r.shading_rate_attachment_texel_size,
                ..Default::default()
            });
            p = base.p_next as *const std::ffi::c_void;
        }
        let copy = |a: &vk::RenderingAttachmentInfo<'_>, stencil: bool| {
            if !a.p_next.is_null() {
                return Err("dynamic rendering with a chained attachment structure");
            }
            let kept = if read_only(a.image_layout, stencil) {
                match a.store_op {
                    vk::AttachmentStoreOp::DONT_CARE if none => vk::AttachmentStoreOp::NONE,
                    vk::AttachmentStoreOp::DONT_CARE => return Err("a read-only attachment stored with DONT_CARE"),
                    op => op,
                }
            } else {
                vk::AttachmentStoreOp::STORE
            };
            let first = vk::RenderingAttachmentInfo { p_next: std::ptr::null(), store_op: kept, ..*a };
            let later = vk::RenderingAttachmentInfo { load_op: vk::AttachmentLoadOp::LOAD, ..first };
            // SAFETY (lifetime): the copies hold no pointer.
            Ok(unsafe {
                std::mem::transmute::<
                    (vk::RenderingAttachmentInfo<'_>, vk::RenderingAttachmentInfo<'_>),
                    (vk::RenderingAttachmentInfo<'static>, vk::RenderingAttachmentInfo<'static>),
                >((first, later))
            })
        };
        // SAFETY: the counts and arrays of a valid VkRenderingInfo.
        let colors = unsafe { crate::ffi::slice(info.p_color_attachments, info.color_attachment_count) };
        let (mut first, mut later) = (Vec::new(), Vec::new());
        for a in colors {
            let (f, l) = copy(a, false)?;
            first.push(f);
            later.push(l);
        }
        // SAFETY: null or a valid attachment (the caller's guarantee).
        let depth = unsafe { info.p_depth_attachment.as_ref() }.map(|a| copy(a, false)).transpose()?;
        // SAFETY: as above.
        let stencil = unsafe { info.p_stencil_attachment.as_ref() }.map(|a| copy(a, true)).transpose()?;
        let split = Split {
            render_area: info.render_area,
            layer_count: info.layer_count,
            colors: later,
            depth: depth.map(|d| d.1),
            stencil: stencil.map(|d| d.1),
            rate,
        };
        Ok((split, [first, depth.map(|d| d.0).into_iter().collect(), stencil.map(|d| d.0).into_iter().collect()]))
    }

    /// Ends the current part of the rendering on `cb` and begins the next,
    /// with the barrier between them.
    fn next_part(&self, core: &DeviceCore, cb: vk::CommandBuffer) {
        let mut rate = self.rate;
        let mut info = vk::RenderingInfo::default()
            .render_area(self.render_area)
            .layer_count(self.layer_count)
            .color_attachments(&self.colors);
        if let Some(d) = &self.depth {
            info = info.depth_attachment(d);
        }
        if let Some(st) = &self.stencil {
            info = info.stencil_attachment(st);
        }
        if let Some(r) = rate.as_mut() {
            info = info.push_next(r);
        }
        // SAFETY: `cb` is recording inside the dynamic rendering `self` was
        // made from (the caller's draw is being recorded there); the new
        // part begins with the same attachments, loaded, as the spec allows
        // any rendering to.
        unsafe { (core.fns.fp_v1_3().cmd_end_rendering)(cb) };
        barrier(core, cb, false);
        // SAFETY: as above; `info` and what it points at live to the call.
        unsafe { (core.fns.fp_v1_3().cmd_begin_rendering)(cb, &info) };
    }
}

/// The barrier between the count and the run draw, and between ordered
/// draws: fragment-shader writes to fragment-shader reads and writes.
fn barrier(core: &DeviceCore, cb: vk::CommandBuffer, inside_pass: bool) {
    let mb = [vk::MemoryBarrier::default()
        .src_access_mask(vk::AccessFlags::SHADER_WRITE)
        .dst_access_mask(vk::AccessFlags::SHADER_READ | vk::AccessFlags::SHADER_WRITE)];
    let flags = if inside_pass { vk::DependencyFlags::BY_REGION } else { vk::DependencyFlags::empty() };
    // SAFETY: `cb` is recording (the caller's command is being recorded);
    // inside a render pass instance the subpass has the layer's
    // self-dependency with these scopes and BY_REGION
    // (VUID-vkCmdPipelineBarrier-None-07889), and only a memory barrier is
    // recorded there (VUID-vkCmdPipelineBarrier-bufferMemoryBarrierCount-01178).
    unsafe {
        (core.fns.fp_v1_0().cmd_pipeline_barrier)(
            cb,
            vk::PipelineStageFlags::FRAGMENT_SHADER,
            vk::PipelineStageFlags::FRAGMENT_SHADER,
            flags,
            1,
            mb.as_ptr(),
            0,
            std::ptr::null(),
            0,
            std::ptr::null(),
        )
    };
}

impl Ordered {
    /// Makes the cells if they are not made yet; false when they cannot be
    /// (the module is then lowered with the spinlock, logged).
    pub fn ready(&self, core: &DeviceCore, s: &ReservedSet) -> bool {
        let mut cells = self.cells.lock();
        if cells.is_none() {
            // Targets larger than the grid: the first draw's `fit_targets`
            // marks the cells shared (the growth flag is still up).
            let targets = self.targets();
            let made = self.make(core, s, super::cells::sized_grid(self.cfg.grid, targets));
            match &made {
                Ok(c) => core.log().info(
                    id::INTERLOCK_ORDERED_CELLS,
                    &format!(
                        "ordered interlock: {} x {} cells of {} keys ({} MiB{}; {}), zeroed before the next submission",
                        c.grid.0,
                        c.grid.1,
                        self.cfg.slots,
                        c.bytes >> 20,
                        if c.dedicated { ", a dedicated allocation" } else { "" },
                        match targets {
                            (0, _) | (_, 0) => "no render target made yet: the whole grid".to_string(),
                            (w, h) => format!("sized by the render targets made so far, up to {w} x {h}"),
                        }
                    ),
                ),
                Err(why) => core.log().error(
                    id::INTERLOCK_ORDERED_CELLS,
                    &format!("ordered interlock: cannot make the cells ({why}); ordered shaders get the spinlock"),
                ),
            }
            *cells = Some(made.map_err(|_| ()));
        }
        matches!(*cells, Some(Ok(_)))
    }

    /// Cells of `grid` (per row, per column), their control blocks and
    /// descriptor sets.
    fn make(&self, core: &DeviceCore, s: &ReservedSet, grid: (u32, u32)) -> Result<Cells, String> {
        let d = &core.fns;
        let words = u64::from(overlap_shaders::ordered::CELL_HEADER + 2 * self.cfg.slots);
        let bytes = u64::from(grid.0) * u64::from(grid.1) * words * 4;
        // SAFETY: the physical device the device was created on.
        let props = unsafe { core.instance.fns.get_physical_device_memory_properties(core.physical_device) };
        let mut c = Cells {
            buffers: Vec::new(),
            counters: std::ptr::null(),
            control: std::ptr::null_mut(),
            cells: vk::Buffer::null(),
            bytes,
            grid,
            pool: vk::DescriptorPool::null(),
            sets: [vk::DescriptorSet::null(); 4],
            pending_clear: true,
            clear: HashMap::new(),
            logged: [0; overlap_shaders::ordered::COUNTERS],
            dedicated: false,
        };
        let r = (|| -> Result<(), String> {
            // Measurement only (`debug_ordered_dedicated`): the cells a dedicated allocation (core in 1.1), the
            // control block device-local where the driver has a host-visible such type.
            let dedicated =
                self.cfg.dedicated && core.instance.api_version.min(core.facts.api_version) >= vk::API_VERSION_1_1;
            c.dedicated = dedicated;
            if self.cfg.dedicated && !dedicated {
                core.log()
                    .warn(id::SETTING_INVALID, "debug_ordered_dedicated: a Vulkan 1.0 device, no dedicated allocation");
            }
            let mut buffer = |size, usage, wants: &[vk::MemoryPropertyFlags], own| {
                let made = bound_buffer(core, &props, size, usage, wants, own)?;
                c.buffers.push(made);
                Ok::<_, String>(made)
            };
            let (cells, _) = buffer(
                bytes,
                vk::BufferUsageFlags::STORAGE_BUFFER | vk::BufferUsageFlags::TRANSFER_DST,
                &[vk::MemoryPropertyFlags::DEVICE_LOCAL],
                dedicated,
            )?;
            let host = vk::MemoryPropertyFlags::HOST_VISIBLE | vk::MemoryPropertyFlags::HOST_COHERENT;
            let control_wants: &[vk::MemoryPropertyFlags] =
                if dedicated { &[host | vk::MemoryPropertyFlags::DEVICE_LOCAL, host] } else { &[host] };
            let (control, control_mem) = buffer(1024, vk::BufferUsageFlags::UNIFORM_BUFFER, control_wants, false)?;
            let (counters, counters_mem) = buffer(64, vk::BufferUsageFlags::STORAGE_BUFFER, &[host], false)?;
            c.cells = cells;
            // SAFETY: host-visible memory of the layer's own, mapped once, whole.
            let map = |m| unsafe { d.map_memory(m, 0, vk::WHOLE_SIZE, vk::MemoryMapFlags::empty()) };
            let control_map = map(control_mem).map_err(|e| format!("vkMapMemory: {e:?}"))? as *mut u32;
            let counters_map = map(counters_mem).map_err(|e| format!("vkMapMemory: {e:?}"))? as *mut u32;
            for (k, mode) in [MODE_COUNT, MODE_COUNT_MERGED, MODE_RUN, MODE_UNORDERED].into_iter().enumerate() {
                let block = [
                    mode,
                    grid.0,
                    self.cfg.slots,
                    self.cfg.wait,
                    u32::from(self.cfg.reverse),
                    u32::from(self.cfg.search_misses),
                    self.cfg.without & !4,
                    grid.1,
                    0,
                ];
                // SAFETY: the mapping is 1024 bytes; block k is at 256·k, 36 bytes long.
                unsafe { std::ptr::copy_nonoverlapping(block.as_ptr(), control_map.add(64 * k), block.len()) };
            }
            // SAFETY: the mapping is 64 bytes (16 words).
            unsafe { std::ptr::write_bytes(counters_map, 0, 16) };
            c.counters = counters_map;
            c.control = control_map;
            let lock = s.lock_descriptor();
            // Per set: the locks, the cells and counters, the control block.
            let sizes = [
                vk::DescriptorPoolSize { ty: lock.ty, descriptor_count: 4 },
                vk::DescriptorPoolSize { ty: vk::DescriptorType::STORAGE_BUFFER, descriptor_count: 8 },
                vk::DescriptorPoolSize { ty: vk::DescriptorType::UNIFORM_BUFFER, descriptor_count: 4 },
            ];
            // SAFETY: a valid create info built here.
            c.pool = unsafe {
                d.create_descriptor_pool(&vk::DescriptorPoolCreateInfo::default().max_sets(4).pool_sizes(&sizes), None)
            }
            .map_err(|e| format!("vkCreateDescriptorPool: {e:?}"))?;
            let layouts = [s.lock_layout; 4];
            // SAFETY: the pool has room for four sets of the reserved layout.
            let sets = unsafe {
                d.allocate_descriptor_sets(
                    &vk::DescriptorSetAllocateInfo::default().descriptor_pool(c.pool).set_layouts(&layouts),
                )
            }
            .map_err(|e| format!("vkAllocateDescriptorSets: {e:?}"))?;
            c.sets.copy_from_slice(&sets);
            let cells_info = [vk::DescriptorBufferInfo { buffer: cells, offset: 0, range: vk::WHOLE_SIZE }];
            let counters_info = [vk::DescriptorBufferInfo { buffer: counters, offset: 0, range: vk::WHOLE_SIZE }];
            let controls: Vec<[vk::DescriptorBufferInfo; 1]> = (0..4u64)
                .map(|k| [vk::DescriptorBufferInfo { buffer: control, offset: 256 * k, range: 256 }])
                .collect();
            let mut writes = Vec::new();
            for (k, set) in c.sets.iter().enumerate() {
                let w = |binding, ty| {
                    vk::WriteDescriptorSet::default().dst_set(*set).dst_binding(binding).descriptor_type(ty)
                };
                writes.push(lock.write(*set));
                writes.push(w(1, vk::DescriptorType::STORAGE_BUFFER).buffer_info(&cells_info));
                writes.push(w(2, vk::DescriptorType::UNIFORM_BUFFER).buffer_info(&controls[k]));
                writes.push(w(3, vk::DescriptorType::STORAGE_BUFFER).buffer_info(&counters_info));
            }
            // SAFETY: each write matches its binding of the reserved layout;
            // the sets are new and used by no command buffer.
            unsafe { d.update_descriptor_sets(&writes, &[]) };
            Ok(())
        })();
        match r {
            Ok(()) => Ok(c),
            Err(e) => {
                // SAFETY: the layer's own objects, used by nothing yet.
                unsafe { destroy_cells(d, &c) };
                Err(e)
            }
        }
    }

    /// The cells' sets for a draw about to be recorded, the cells first
    /// fitted to the render targets where one grew since the last draw
    /// ([`Ordered::fit_targets`]).
    fn sets_for_draw(&self, core: &DeviceCore, s: &ReservedSet) -> Option<[vk::DescriptorSet; 4]> {
        let mut cells = self.cells.lock();
        let Some(Ok(c)) = &mut *cells else { return None };
        if self.targets_grew() {
            self.fit_targets(core, s, c);
        }
        Some(c.sets)
    }

    /// Where a render target made since the cells needs more of them (up to
    /// the setting's grid), cells of the larger grid replace them (the old
    /// ones are kept: command buffers recorded with them may be submitted
    /// again); where the targets need more than the setting allows, that is
    /// said once.
    fn fit_targets(&self, core: &DeviceCore, s: &ReservedSet, c: &mut Cells) {
        let targets = self.targets();
        let want = super::cells::sized_grid(self.cfg.grid, targets);
        if want.0 > c.grid.0 || want.1 > c.grid.1 {
            let grid = (want.0.max(c.grid.0), want.1.max(c.grid.1));
            match self.make(core, s, grid) {
                Ok(new) => {
                    core.log().info(
                        id::INTERLOCK_ORDERED_CELLS,
                        &format!(
                            "ordered interlock: the cells grow from {} x {} to {} x {} for a larger render target ({} MiB more; the old ones are kept until the device is destroyed)",
                            c.grid.0, c.grid.1, grid.0, grid.1, new.bytes >> 20
                        ),
                    );
                    let old = std::mem::replace(c, new);
                    self.retired.lock().push(old);
                }
                Err(why) => {
                    core.log().warn(
                        id::INTERLOCK_ORDERED_CELLS,
                        &format!(
                            "ordered interlock: cannot grow the cells from {} x {} to {} x {} ({why}; tried again only for a larger target): pixels {} x {} apart share cells, which costs slots (a cell that overflows loses order, logged)",
                            c.grid.0, c.grid.1, grid.0, grid.1, c.grid.0, c.grid.1
                        ),
                    );
                }
            }
        }
        if targets.0 > c.grid.0 || targets.1 > c.grid.1 {
            c.share();
            core.log().log_once(
                crate::settings::LogLevel::Warn,
                id::INTERLOCK_ORDERED_CELLS,
                "shared cells",
                &format!(
                    "ordered interlock: a render area of up to {} x {} exceeds the cells ({} x {}, interlock_ordered_grid fitted to the driver's limits): pixels {} x {} apart share cells, which then hold the keys of several pixels (a cell that overflows interlock_ordered_slots loses order, counted and logged) and contend",
                    targets.0, targets.1, c.grid.0, c.grid.1, c.grid.0, c.grid.1
                ),
            );
        }
    }

    fn sets(&self) -> Option<[vk::DescriptorSet; 4]> {
        match &*self.cells.lock() {
            Some(Ok(c)) => Some(c.sets),
            _ => None,
        }
    }

    /// Why the draw about to be recorded on `cb` cannot be ordered, if so.
    fn blocker(&self, cb: vk::CommandBuffer, early: bool) -> Option<&'static str> {
        let state = self.command_buffers.lock().get(&cb).copied();
        let Some(state) = state else { return Some("a command buffer the layer has not seen begin") };
        if state.counting_queries > 0 {
            return Some("a pipeline-statistics, primitives-generated or transform-feedback query is active (the count draw would be counted)");
        }
        if early && state.occlusion_queries > 0 {
            return Some("an occlusion query is active and the fragment shader has early fragment tests (the count draw's samples would be counted)");
        }
        match state.pass {
            Pass::Subpass(rp, subpass) => {
                let ok = self.render_passes.lock().get(&rp).and_then(|v| v.get(subpass as usize).copied());
                match ok {
                    Some(true) => None,
                    Some(false) => Some("a multiview subpass"),
                    None => Some("a render pass made before the layer's ordered strategy ran"),
                }
            }
            Pass::Dynamic(Err(why)) => Some(why),
            Pass::Dynamic(Ok(())) if state.queries_inside > 0 => {
                Some("a query begun inside dynamic rendering (it must end in the rendering it began in)")
            }
            Pass::Dynamic(Ok(())) => None,
            Pass::Unknown => Some("a secondary command buffer whose render pass the layer does not know"),
            Pass::None => Some("a draw outside a render pass"),
        }
    }
}

/// # Safety
/// The objects are the layer's own, on `d`, used by no pending work.
unsafe fn destroy_cells(d: &ash::Device, c: &Cells) {
    // SAFETY: the caller's guarantee; null handles are ignored.
    unsafe {
        for (pool, _) in c.clear.values() {
            d.destroy_command_pool(*pool, None);
        }
        d.destroy_descriptor_pool(c.pool, None);
        for (b, m) in &c.buffers {
            d.destroy_buffer(*b, None);
            d.free_memory(*m, None);
        }
    }
}

impl Ordered {
    /// Logs what the counters gained since the last submission (the device
    /// is idle: the last word).
    pub fn final_report(&self, log: &crate::log::Logger) {
        if let Some(Ok(c)) = &mut *self.cells.lock() {
            report_counters(log, c);
        }
        for c in self.retired.lock().iter_mut() {
            report_counters(log, c);
        }
    }

    /// # Safety
    /// The device is idle and being destroyed.
    pub unsafe fn destroy(&self, d: &ash::Device) {
        if let Some(Ok(c)) = &*self.cells.lock() {
            // SAFETY: the caller's guarantee.
            unsafe { destroy_cells(d, c) };
        }
        for c in self.retired.lock().iter() {
            // SAFETY: the caller's guarantee.
            unsafe { destroy_cells(d, c) };
        }
    }
}

/// Logs what the counters gained since they were last logged. A key not
/// found leaves its cell unreset (its slot never finishes), and an expired
/// wait may: the cells are then zeroed again before the next submission.
fn report_counters(log: &crate::log::Logger, c: &mut Cells) {
    if c.counters.is_null() {
        return;
    }
    let mut now = [0u32; overlap_shaders::ordered::COUNTERS];
    for (k, v) in now.iter_mut().enumerate() {
        // SAFETY: `counters` maps at least 16 words of coherent host-visible
        // memory the GPU updates atomically; a volatile read of a word.
        *v = unsafe { std::ptr::read_volatile(c.counters.add(k)) };
    }
    if now != c.logged {
        let d: Vec<u32> = now.iter().zip(&c.logged).map(|(a, b)| a.wrapping_sub(*b)).collect();
        log.warn(
            id::INTERLOCK_ORDER_LOST,
            &format!(
                "ordered interlock could not order some critical sections (mutual exclusion kept; where a key went unfound or a wait expired the cells are zeroed before the next submission, and later draws of this one may lose words there): {} cell(s) held more primitives of one draw than interlock_ordered_slots, {} wait(s) expired (interlock_ordered_wait), {} key(s) not found, {} cell(s) with an instance index of 2^24 or more; totals {:?}",
                d[0], d[1], d[2], d[3], now
            ),
        );
        if d[1] > 0 || d[2] > 0 {
            c.pending_clear = true;
        }
        c.logged = now;
    }
}

// Draws.

/// Before a draw with an interlock pipeline bound: binds the reserved set;
/// for an ordered pipeline that can be ordered here, records the count draw
/// (through `count`, the command with the same arguments, straight to the
/// next layer) between barriers first. `run` records the application's draw.
pub fn draw(
    core: &DeviceCore,
    s: &ReservedSet,
    cb: vk::CommandBuffer,
    multi_draw: bool,
    count: impl FnOnce(),
    run: impl FnOnce(),
) {
    let Some((layout, kind)) = s.bound.lock().get(&cb).copied() else { return run() };
    let bind = |set: vk::DescriptorSet| super::reserved::bind_set(core, s, cb, layout, set);
    let (o, order, merge, early) = match (&s.ordered, kind) {
        (Some(o), PipelineKind::Ordered { order, merge, early }) => (o, order, merge, early),
        _ => {
            bind(s.lock_set);
            return run();
        }
    };
    let Some([count_set, merged_set, run_set, unordered_set]) = o.sets_for_draw(core, s) else {
        // Cannot happen: ordered modules are made only once the cells exist.
        bind(s.lock_set);
        return run();
    };
    let why = order.err().or(multi_draw.then_some("a multi-draw indirect call")).or_else(|| o.blocker(cb, early));
    match why {
        None => {
            let split = o.splits.lock().get(&cb).cloned();
            let between = || match &split {
                Some(sp) => sp.next_part(core, cb),
                None => barrier(core, cb, true),
            };
            if o.cfg.without & 4 == 0 {
                between();
                bind(if merge { merged_set } else { count_set });
                count();
            }
            between();
            bind(run_set);
            run();
        }
        Some(why) => {
            core.log().log_once(
                crate::settings::LogLevel::Warn,
                id::INTERLOCK_ORDER_FALLBACK,
                why,
                &format!("ordered interlock: draws run with mutual exclusion but not primitive order here: {why}"),
            );
            bind(unordered_set);
            run();
        }
    }
}

// Render passes.

/// The dependencies the layer adds to a render pass: each subpass on itself
/// (for the barriers between the count and the run draw) and each subpass
/// on the one before (cells are reused across subpasses).
fn added_dependencies(subpasses: u32, multiview: &[bool]) -> Vec<vk::SubpassDependency> {
    let stage = vk::PipelineStageFlags::FRAGMENT_SHADER;
    let dep = |src, dst| vk::SubpassDependency {
        src_subpass: src,
        dst_subpass: dst,
        src_stage_mask: stage,
        dst_stage_mask: stage,
        src_access_mask: vk::AccessFlags::SHADER_WRITE,
        dst_access_mask: vk::AccessFlags::SHADER_READ | vk::AccessFlags::SHADER_WRITE,
        dependency_flags: vk::DependencyFlags::BY_REGION,
    };
    let mut v = Vec::new();
    for i in 0..subpasses {
        if !multiview.get(i as usize).copied().unwrap_or(false) {
            v.push(dep(i, i));
        }
        if i > 0 {
            v.push(dep(i - 1, i));
        }
    }
    v
}

/// `vkCreateRenderPass` and `vkCreateRenderPass2`: the layer's dependencies
/// added ([`added_dependencies`]; none in a version-1 multiview pass, whose
/// dependency count is tied to its view offsets; view-local in a version-2
/// one, and no self-dependency for its multiview subpasses).
pub(crate) fn create_render_pass<'a, A: CreateArgs<'a>>(_: &DeviceCore, s: &ReservedSet, a: A) -> vk::Result {
    let Some(o) = &s.ordered else { return a.down_chain() };
    let ci = a.info();
    // SAFETY: the -pCreateInfo-parameter VUID of either command: a valid create info, whose chain and arrays are
    // valid.
    let multiview = unsafe { ci.multiview() };
    let any = multiview.iter().any(|m| *m);
    let added: Option<Vec<<A::Info as RenderPassInfo>::Dependency>> =
        added_dependencies(multiview.len() as u32, &multiview)
            .into_iter()
            .map(|d| <A::Info as RenderPassInfo>::added_dependency(d, any))
            .collect();
    let Some(added) = added else {
        return note_render_pass(o, a, a.down_chain(), vec![false; multiview.len()]);
    };
    // SAFETY: as above.
    let (attachments, subpasses, dependencies) = unsafe { ci.arrays() };
    let mut deps = dependencies.to_vec();
    deps.extend(added);
    let copy = ci.with(ci.flags(), ci.p_next(), (attachments, subpasses, &deps));
    note_render_pass(o, a, a.next_with(&copy), multiview.iter().map(|m| !m).collect())
}

/// Notes the render pass the create call `a` made (where `r` is a success),
/// with per subpass whether it has the layer's self-dependency; returns `r`.
fn note_render_pass<'a>(o: &Ordered, a: impl CreateArgs<'a>, r: vk::Result, own: Vec<bool>) -> vk::Result {
    if r == vk::Result::SUCCESS {
        // SAFETY: the call succeeded.
        o.render_passes.lock().insert(unsafe { a.written() }, own);
    }
    r
}

pub fn forget_render_pass(s: &ReservedSet, rp: vk::RenderPass) {
    if let Some(o) = &s.ordered {
        o.render_passes.lock().remove(&rp);
    }
}

impl Ordered {
    fn set_pass(&self, cb: vk::CommandBuffer, pass: Pass) {
        if pass != Pass::Dynamic(Ok(())) {
            self.splits.lock().remove(&cb);
        }
        self.command_buffers
            .lock()
            .entry(cb)
            .or_insert(CommandBufferState {
                pass: Pass::None,
                counting_queries: 0,
                queries_inside: 0,
                occlusion_queries: 0,
            })
            .pass = pass;
    }
}

/// Before a render pass begins: the barrier that orders the cells of the
/// passes before it (only once the device has ordered shaders).
fn before_pass(core: &DeviceCore, o: &Ordered, cb: vk::CommandBuffer) {
    if o.sets().is_some() {
        barrier(core, cb, false);
    }
}

/// A render pass begins: the barrier that orders the cells of the passes
/// before it; its render area and pass noted.
fn begin_render_pass(core: &DeviceCore, s: &ReservedSet, cb: vk::CommandBuffer, info: &vk::RenderPassBeginInfo) {
    if let Some(o) = &s.ordered {
        before_pass(core, o, cb);
        note_render_area(s, info.render_area);
        o.set_pass(cb, Pass::Subpass(info.render_pass, 0));
    }
}

/// The begin-render-pass hooks of both versions ([`begin_render_pass`]).
macro_rules! begin_render_pass_hooks {
    ($($(#[$doc:meta])* $hook:ident $args:ident;)*) => {$(
        $(#[$doc])*
        pub fn $hook(core: &DeviceCore, s: &ReservedSet, a: args::$args) {
            begin_render_pass(core, s, a.command_buffer(), a.render_pass_begin());
            a.next()
        }
    )*};
}

begin_render_pass_hooks! {
    /// `vkCmdBeginRenderPass`.
    cmd_begin_render_pass CmdBeginRenderPass;
    /// `vkCmdBeginRenderPass2`.
    cmd_begin_render_pass2 CmdBeginRenderPass2;
}

/// `vkCmdNextSubpass`, `vkCmdNextSubpass2`: the command buffer is in the next subpass.
pub fn next_subpass(_: &DeviceCore, s: &ReservedSet, cb: vk::CommandBuffer) {
    if let Some(o) = &s.ordered {
        if let Some(st) = o.command_buffers.lock().get_mut(&cb) {
            if let Pass::Subpass(rp, i) = st.pass {
                st.pass = Pass::Subpass(rp, i + 1);
            }
        }
    }
}

/// At the end of a render pass or of dynamic rendering.
pub fn end_pass(_: &DeviceCore, s: &ReservedSet, cb: vk::CommandBuffer) {
    if let Some(o) = &s.ordered {
        o.set_pass(cb, Pass::None);
    }
}

pub fn cmd_begin_rendering(core: &DeviceCore, s: &ReservedSet, a: args::CmdBeginRendering) {
    let cb = a.command_buffer();
    if let Some(o) = &s.ordered {
        let i = a.rendering_info();
        note_render_area(s, i.render_area);
        if !i.flags.contains(vk::RenderingFlags::RESUMING) {
            before_pass(core, o, cb);
        }
        if let Some(st) = o.command_buffers.lock().get_mut(&cb) {
            st.queries_inside = 0;
        }
        // Split only once the device has ordered shaders (a draw can be
        // ordered only then): otherwise the store operations stay as asked.
        let version = core.facts.api_version.min(core.instance.api_version.max(vk::API_VERSION_1_0));
        let none = vk::api_version_minor(version) >= 3;
        let split = match o.sets() {
            // SAFETY: `i` is the valid VkRenderingInfo of this call.
            Some(_) => unsafe { Split::of(i, none) },
            None => Err("dynamic rendering begun before the device had ordered shaders"),
        };
        match split {
            Ok((split, [colors, depth, stencil])) => {
                o.splits.lock().insert(cb, std::sync::Arc::new(split));
                o.set_pass(cb, Pass::Dynamic(Ok(())));
                let mut patched = *i;
                patched.p_color_attachments = colors.as_ptr();
                patched.p_depth_attachment = depth.first().map_or(std::ptr::null(), |d| d as *const _);
                patched.p_stencil_attachment = stencil.first().map_or(std::ptr::null(), |d| d as *const _);
                return a.with_rendering_info(&patched).next();
            }
            Err(why) => {
                o.set_pass(cb, Pass::Dynamic(Err(why)));
            }
        }
    }
    a.next()
}

// Command buffers, queries, queues.

/// `vkAllocateCommandBuffers`: which command buffers are secondary.
pub fn allocate_command_buffers(_: &DeviceCore, s: &ReservedSet, a: args::AllocateCommandBuffers) -> vk::Result {
    let r = a.next();
    if let (Some(o), vk::Result::SUCCESS) = (&s.ordered, r) {
        // SAFETY: the command succeeded.
        let (ci, cbs) = (a.allocate_info(), unsafe { a.written_command_buffers() });
        let mut sec = o.secondaries.lock();
        for cb in cbs {
            // A handle may be reused after a pool was destroyed: its level is this allocation's.
            if ci.level == vk::CommandBufferLevel::SECONDARY {
                sec.insert(*cb);
            } else {
                sec.remove(cb);
            }
        }
    }
    r
}

/// `vkBeginCommandBuffer`: nothing bound, no query; a secondary continuing
/// a render pass records in its inherited subpass (or dynamic rendering).
pub fn begin_command_buffer(_: &DeviceCore, s: &ReservedSet, a: args::BeginCommandBuffer) -> vk::Result {
    let cb = a.command_buffer();
    if let Some(o) = &s.ordered {
        let mut state =
            CommandBufferState { pass: Pass::None, counting_queries: 0, queries_inside: 0, occlusion_queries: 0 };
        o.splits.lock().remove(&cb);
        let bi = a.begin_info();
        if o.secondaries.lock().contains(&cb) && bi.flags.contains(vk::CommandBufferUsageFlags::RENDER_PASS_CONTINUE) {
            state.pass = Pass::Unknown;
            if !bi.p_inheritance_info.is_null() {
                // SAFETY: a secondary command buffer's begin info points at a
                // valid inheritance info (VUID-vkBeginCommandBuffer-commandBuffer-00051),
                // whose chain is valid (VUID-VkCommandBufferInheritanceInfo-pNext-pNext).
                let inh = unsafe { &*bi.p_inheritance_info };
                if inh.render_pass != vk::RenderPass::null() {
                    state.pass = Pass::Subpass(inh.render_pass, inh.subpass);
                } else if unsafe { crate::pnext::find::<vk::CommandBufferInheritanceRenderingInfo>(inh.p_next) }
                    .is_some()
                {
                    state.pass = Pass::Dynamic(Err(
                        "a secondary command buffer inside dynamic rendering (the layer cannot end and begin the rendering there)",
                    ));
                }
                if !inh.pipeline_statistics.is_empty() {
                    state.counting_queries = 1;
                }
                if inh.occlusion_query_enable == vk::TRUE {
                    state.occlusion_queries = 1;
                }
            }
        }
        o.command_buffers.lock().insert(cb, state);
    }
    a.next()
}

/// A render target of `width` x `height` made: the largest sizes the cells
/// are sized by.
fn note_target(s: &ReservedSet, width: u32, height: u32) {
    if let Some(o) = &s.ordered {
        o.note_target(width, height);
    }
}

/// A render pass instance begun: its render area's far corner is a render
/// target's size, so the next ordered draw grows the cells to cover it
/// where they do not (pixels sharing cells cost slots and contention; the
/// protocol keys each copy of the grid apart, `ovl_begin`).
fn note_render_area(s: &ReservedSet, area: vk::Rect2D) {
    let end = |o: i32, e: u32| (o.max(0) as u32).saturating_add(e);
    note_target(s, end(area.offset.x, area.extent.width), end(area.offset.y, area.extent.height));
}

/// `vkCreateImage`: an attachment's size is a render target's.
pub fn note_image(s: &ReservedSet, info: &vk::ImageCreateInfo, _: vk::Image) {
    let attachment = vk::ImageUsageFlags::COLOR_ATTACHMENT
        | vk::ImageUsageFlags::DEPTH_STENCIL_ATTACHMENT
        | vk::ImageUsageFlags::INPUT_ATTACHMENT;
    if info.usage.intersects(attachment) {
        note_target(s, info.extent.width, info.extent.height);
    }
}

/// `vkCreateFramebuffer`: its size is a render target's (attachments or none).
pub fn note_framebuffer(s: &ReservedSet, info: &vk::FramebufferCreateInfo, _: vk::Framebuffer) {
    note_target(s, info.width, info.height);
}

/// `vkCreateSwapchainKHR`: its images are render targets.
pub fn note_swapchain(s: &ReservedSet, info: &vk::SwapchainCreateInfoKHR, _: vk::SwapchainKHR) {
    note_target(s, info.image_extent.width, info.image_extent.height);
}

/// `vkCreateQueryPool`: the layer remembers the pool's type.
pub fn note_query_pool(s: &ReservedSet, info: &vk::QueryPoolCreateInfo, pool: vk::QueryPool) {
    if let Some(o) = &s.ordered {
        o.query_pools.lock().insert(pool, info.query_type);
    }
}

pub fn forget_query_pool(s: &ReservedSet, pool: vk::QueryPool) {
    if let Some(o) = &s.ordered {
        o.query_pools.lock().remove(&pool);
    }
}

/// What a query of `pool` means to the count draw: (it counts the draw's
/// primitives or invocations, it is an occlusion query), from one lookup.
fn query_kind(o: &Ordered, pool: vk::QueryPool) -> (bool, bool) {
    let ty = o.query_pools.lock().get(&pool).copied();
    let counting = matches!(
        ty,
        Some(
            vk::QueryType::PIPELINE_STATISTICS
                | vk::QueryType::PRIMITIVES_GENERATED_EXT
                | vk::QueryType::TRANSFORM_FEEDBACK_STREAM_EXT
        )
    );
    (counting, ty == Some(vk::QueryType::OCCLUSION))
}

pub fn cmd_begin_query(_: &DeviceCore, s: &ReservedSet, a: args::CmdBeginQuery) {
    let (cb, pool) = (a.command_buffer(), a.query_pool());
    if let Some(o) = &s.ordered {
        let (counts, occlusion) = query_kind(o, pool);
        if let Some(st) = o.command_buffers.lock().get_mut(&cb) {
            st.counting_queries += u32::from(counts);
            st.occlusion_queries += u32::from(occlusion);
            st.queries_inside += u32::from(matches!(st.pass, Pass::Dynamic(_)));
        }
    }
    a.next()
}

pub fn cmd_end_query(_: &DeviceCore, s: &ReservedSet, a: args::CmdEndQuery) {
    let (cb, pool) = (a.command_buffer(), a.query_pool());
    if let Some(o) = &s.ordered {
        let (counts, occlusion) = query_kind(o, pool);
        if let Some(st) = o.command_buffers.lock().get_mut(&cb) {
            st.counting_queries = st.counting_queries.saturating_sub(u32::from(counts));
            st.occlusion_queries = st.occlusion_queries.saturating_sub(u32::from(occlusion));
            if matches!(st.pass, Pass::Dynamic(_)) {
                st.queries_inside = st.queries_inside.saturating_sub(1);
            }
        }
    }
    a.next()
}

/// `vkGetDeviceQueue`: the layer remembers each queue's family (its clear
/// command buffer must come from that family).
pub fn get_device_queue(_: &DeviceCore, s: &ReservedSet, a: args::GetDeviceQueue) {
    a.next();
    if let Some(o) = &s.ordered {
        // SAFETY: the command writes the queue (it has no result).
        o.queues.lock().insert(unsafe { a.written_queue() }, a.queue_family_index());
    }
}

pub fn get_device_queue2(_: &DeviceCore, s: &ReservedSet, a: args::GetDeviceQueue2) {
    a.next();
    if let Some(o) = &s.ordered {
        // SAFETY: the command writes the queue (or null; it has no result).
        let (family, q) = (a.queue_info().queue_family_index, unsafe { a.written_queue() });
        if q != vk::Queue::null() {
            o.queues.lock().insert(q, family);
        }
    }
}

impl Ordered {
    /// At a submission on `queue`: the counters logged, and the clear
    /// command buffers (recorded for the queue's family) of the cells still
    /// to be zeroed — the current ones and those the cells grew out of
    /// (command buffers recorded with them may be submitted again). Returns
    /// them, to go first in this submission.
    fn before_submit(&self, core: &DeviceCore, s: &ReservedSet, queue: vk::Queue) -> Vec<vk::CommandBuffer> {
        let mut guard = self.cells.lock();
        let Some(Ok(current)) = &mut *guard else { return Vec::new() };
        let mut retired = self.retired.lock();
        let mut clears = Vec::new();
        for c in std::iter::once(current).chain(retired.iter_mut()) {
            report_counters(core.log(), c);
            // Measurement only: no cell resets itself (`debug_ordered_without=reset`).
            c.pending_clear |= self.cfg.without & 32 != 0;
            if !c.pending_clear {
                continue;
            }
            let Some(family) = self.queues.lock().get(&queue).copied() else {
                core.log().log_once(
                    crate::settings::LogLevel::Error,
                    id::INTERLOCK_ORDERED_CELLS,
                    "queue",
                    "ordered interlock: a submission on a queue the layer did not see vkGetDeviceQueue return; the cells are zeroed on the next known queue",
                );
                return clears;
            };
            clears.extend(zeroing(core, s, c, family));
        }
        clears
    }
}

/// The command buffer that zeroes cells `c` on a queue of `family` (made
/// once per family), where it can be had; the cells are then no longer
/// pending.
fn zeroing(core: &DeviceCore, s: &ReservedSet, c: &mut Cells, family: u32) -> Option<vk::CommandBuffer> {
    let d = &core.fns;
    let cb = match c.clear.get(&family) {
        Some((_, cb)) => *cb,
        None => {
            // SAFETY: valid create and allocate infos for this device; the
            // family is one the application created a queue in.
            let made = unsafe {
                d.create_command_pool(&vk::CommandPoolCreateInfo::default().queue_family_index(family), None)
            }
            .and_then(|pool| {
                // SAFETY: as above.
                let cb = unsafe {
                    d.allocate_command_buffers(
                        &vk::CommandBufferAllocateInfo::default().command_pool(pool).command_buffer_count(1),
                    )
                };
                match cb {
                    Ok(v) => Ok((pool, v[0])),
                    Err(e) => {
                        // SAFETY: made above, used by nothing.
                        unsafe { d.destroy_command_pool(pool, None) };
                        Err(e)
                    }
                }
            });
            let Ok((pool, cb)) = made else {
                core.log().error(id::INTERLOCK_ORDERED_CELLS, "ordered interlock: cannot make the command buffer that zeroes the cells; tried again at the next submission");
                return None;
            };
            if let Some(set_data) = s.set_loader_data {
                // SAFETY: the loader's vkSetDeviceLoaderData on a
                // dispatchable object the layer got from the chain below
                // (LoaderLayerInterface.md, "Creating New Dispatchable Objects").
                unsafe {
                    let _ = set_data(d.handle(), vk::Handle::as_raw(cb) as *mut _);
                }
            }
            let range = vk::WHOLE_SIZE;
            // SAFETY: a fresh command buffer (submitted again after
            // errors, maybe while pending: simultaneous use); a barrier
            // orders the earlier fragment shaders' use of the cells before
            // the fill, which covers the layer's cells buffer
            // (TRANSFER_DST usage), then a barrier makes the zeros
            // visible to every later fragment shader on the queue.
            let rec = unsafe {
                let begin = vk::CommandBufferBeginInfo::default().flags(vk::CommandBufferUsageFlags::SIMULTANEOUS_USE);
                d.begin_command_buffer(cb, &begin).and_then(|_| {
                    let barrier = |(src, src_access), (dst, dst_access)| {
                        let mb = [vk::MemoryBarrier::default().src_access_mask(src_access).dst_access_mask(dst_access)];
                        d.cmd_pipeline_barrier(cb, src, dst, vk::DependencyFlags::empty(), &mb, &[], &[]);
                    };
                    let shaders = (
                        vk::PipelineStageFlags::FRAGMENT_SHADER,
                        vk::AccessFlags::SHADER_READ | vk::AccessFlags::SHADER_WRITE,
                    );
                    let transfer = (vk::PipelineStageFlags::TRANSFER, vk::AccessFlags::TRANSFER_WRITE);
                    barrier(shaders, transfer);
                    d.cmd_fill_buffer(cb, c.cells, 0, range, 0);
                    barrier(transfer, shaders);
                    d.end_command_buffer(cb)
                })
            };
            if rec.is_err() {
                // SAFETY: not submitted.
                unsafe { d.destroy_command_pool(pool, None) };
                core.log().error(
                    id::INTERLOCK_ORDERED_CELLS,
                    "ordered interlock: cannot record the zeroing of the cells; tried again at the next submission",
                );
                return None;
            }
            c.clear.insert(family, (pool, cb));
            cb
        }
    };
    c.pending_clear = false;
    core.log().info(id::INTERLOCK_ORDERED_CELLS, "ordered interlock: the cells are zeroed before this submission");
    Some(cb)
}

/// `vkQueueSubmit`: the cells' zeroing goes first where it is pending.
pub fn queue_submit(core: &DeviceCore, s: &ReservedSet, a: args::QueueSubmit) -> vk::Result {
    let clears = s.ordered.as_ref().map(|o| o.before_submit(core, s, a.queue())).unwrap_or_default();
    if clears.is_empty() {
        return a.next();
    }
    let mut all = vec![vk::SubmitInfo::default().command_buffers(&clears)];
    all.extend_from_slice(a.submits());
    a.with_submits(&all).next()
}

/// `vkQueueSubmit2`: as [`queue_submit`].
pub fn queue_submit2(core: &DeviceCore, s: &ReservedSet, a: args::QueueSubmit2) -> vk::Result {
    let clears = s.ordered.as_ref().map(|o| o.before_submit(core, s, a.queue())).unwrap_or_default();
    if clears.is_empty() {
        return a.next();
    }
    let cbs: Vec<vk::CommandBufferSubmitInfo> =
        clears.iter().map(|&cb| vk::CommandBufferSubmitInfo::default().command_buffer(cb)).collect();
    let mut all = vec![vk::SubmitInfo2::default().command_buffer_infos(&cbs)];
    all.extend_from_slice(a.submits());
    a.with_submits(&all).next()
}

/// The draw commands with an interlock pipeline bound: the reserved set
/// bound first, and for the ordered strategy the count draw before each
/// ([`draw`]). `several`: whether one call may draw more than once (a
/// multi-draw, or an indirect draw of more than one), which the ordered
/// strategy does not order.
macro_rules! draw_hooks {
    ($($(#[$doc:meta])* $name:ident $args:ident, several: |$a:ident| $several:expr, down |$core:ident| $fp:expr;)*) => {$(
        $(#[$doc])*
        pub fn $name($core: &DeviceCore, s: &ReservedSet, $a: args::$args) {
            // SAFETY: the same valid call, straight to the next layer (the multi draws' extension,
            // VK_EXT_multi_draw, is the application's: it recorded the command).
            let count = || unsafe { $a.call($fp) };
            draw($core, s, $a.command_buffer(), $several, count, || $a.next())
        }
    )*};
}

draw_hooks! {
    /// `vkCmdDraw`.
    cmd_draw CmdDraw, several: |a| false, down |core| core.fns.fp_v1_0().cmd_draw;
    /// `vkCmdDrawIndexed`.
    cmd_draw_indexed CmdDrawIndexed, several: |a| false, down |core| core.fns.fp_v1_0().cmd_draw_indexed;
    /// `vkCmdDrawMultiEXT`: more than one draw is a multi-draw for the ordered strategy (as an indirect draw of
    /// several).
    cmd_draw_multi CmdDrawMultiEXT, several: |a| a.draw_count() > 1, down |core| core.state.multi_draw.cmd_draw_multi_ext;
    /// `vkCmdDrawMultiIndexedEXT`: as `vkCmdDrawMultiEXT`.
    cmd_draw_multi_indexed CmdDrawMultiIndexedEXT, several: |a| a.draw_count() > 1,
        down |core| core.state.multi_draw.cmd_draw_multi_indexed_ext;
    /// `vkCmdDrawIndirect`: more than one draw per call is not ordered.
    cmd_draw_indirect CmdDrawIndirect, several: |a| a.draw_count() > 1, down |core| core.fns.fp_v1_0().cmd_draw_indirect;
    /// `vkCmdDrawIndexedIndirect`: as `vkCmdDrawIndirect`.
    cmd_draw_indexed_indirect CmdDrawIndexedIndirect, several: |a| a.draw_count() > 1,
        down |core| core.fns.fp_v1_0().cmd_draw_indexed_indirect;
    /// `vkCmdDrawIndirectCount`: `maxDrawCount` above 1 is not ordered.
    cmd_draw_indirect_count CmdDrawIndirectCount, several: |a| a.max_draw_count() > 1,
        down |core| core.fns.fp_v1_2().cmd_draw_indirect_count;
    /// `vkCmdDrawIndexedIndirectCount`: as `vkCmdDrawIndirectCount`.
    cmd_draw_indexed_indirect_count CmdDrawIndexedIndirectCount, several: |a| a.max_draw_count() > 1,
        down |core| core.fns.fp_v1_2().cmd_draw_indexed_indirect_count;
}

/// A buffer of `size` bytes bound to memory of the first type of `wants`
/// (in order of preference) its requirements allow; a dedicated allocation
/// where `own` (the caller checked the device has Vulkan 1.1).
fn bound_buffer(
    core: &DeviceCore,
    props: &vk::PhysicalDeviceMemoryProperties,
    size: u64,
    usage: vk::BufferUsageFlags,
    wants: &[vk::MemoryPropertyFlags],
    own: bool,
) -> Result<(vk::Buffer, vk::DeviceMemory), String> {
    let d = &core.fns;
    crate::guard::injected_failure(&core.settings().debug_fail, "vkCreateBuffer")
        .map_err(|e| format!("vkCreateBuffer: {e:?}"))?;
    // SAFETY: a valid create info built here, on the layer's device.
    let b = unsafe { d.create_buffer(&vk::BufferCreateInfo::default().size(size).usage(usage), None) }
        .map_err(|e| format!("vkCreateBuffer: {e:?}"))?;
    // SAFETY: `b` was just made on this device.
    let req = unsafe { d.get_buffer_memory_requirements(b) };
    let Some(ty) = wants.iter().find_map(|&want| {
        (0..props.memory_type_count).find(|&i| {
            req.memory_type_bits & (1 << i) != 0 && props.memory_types[i as usize].property_flags.contains(want)
        })
    }) else {
        // SAFETY: made above, used by nothing.
        unsafe { d.destroy_buffer(b, None) };
        return Err(format!("no memory type with {:?}", wants.last()));
    };
    crate::guard::injected_failure(&core.settings().debug_fail, "vkAllocateMemory")
        .map_err(|e| format!("vkAllocateMemory: {e:?}"))
        // SAFETY: made above, used by nothing.
        .inspect_err(|_| unsafe { d.destroy_buffer(b, None) })?;
    let mut own_memory = vk::MemoryDedicatedAllocateInfo::default().buffer(b);
    let mut info = vk::MemoryAllocateInfo::default().allocation_size(req.size).memory_type_index(ty);
    if own {
        // VUID-VkMemoryDedicatedAllocateInfo-buffer-01435: the size is the buffer's requirement.
        info = info.push_next(&mut own_memory);
    }
    // SAFETY: a size and a type the buffer's requirements allow
    // (VUID-vkBindBufferMemory-memory-01035).
    let m = match unsafe { d.allocate_memory(&info, None) } {
        Ok(m) => m,
        Err(e) => {
            // SAFETY: made above, used by nothing.
            unsafe { d.destroy_buffer(b, None) };
            return Err(format!("vkAllocateMemory ({size} bytes): {e:?}"));
        }
    };
    // SAFETY: the memory made for it, bound once at 0 (a dedicated one to its buffer:
    // VUID-vkBindBufferMemory-memory-01508).
    if let Err(e) = unsafe { d.bind_buffer_memory(b, m, 0) } {
        // SAFETY: made above, used by nothing.
        unsafe {
            d.destroy_buffer(b, None);
            d.free_memory(m, None);
        }
        return Err(format!("vkBindBufferMemory: {e:?}"));
    }
    Ok((b, m))
}

//! Command buffers: the state the layer keeps per command buffer
//! ([`CbState`]), its lifecycle (allocate, free, begin: a secondary begun
//! for a density-map render pass captures its commands), and the
//! synchronization commands, translated for the driver (the density-map
//! layout, stage and access become `GENERAL`, the fragment shader stage and
//! a shader read; transitions of density-map images are noted for the map
//! cache). Barriers, events and queries inside a captured pass cannot be
//! replayed: the pass goes live at 1x1 first.

use super::capture::unreplayable;
use super::descriptors::free_shadow_pools;
use super::model::{cb_state, CbState, Shared};
use super::{Fdm, Mode};
use crate::device::DeviceCore;
use crate::ffi::slice;
use crate::generated::args;
use ash::vk;
use parking_lot::Mutex;
use std::sync::Arc;

/// `vkAllocateCommandBuffers`: a fresh state per new command buffer.
pub fn allocate_command_buffers(_: &DeviceCore, f: &Fdm, a: args::AllocateCommandBuffers) -> vk::Result {
    // SAFETY: the next layer's command, with the application's arguments.
    let r = unsafe { a.call(f.below.fp_v1_0().allocate_command_buffers) };
    if r == vk::Result::SUCCESS {
        let ci = a.allocate_info();
        // SAFETY: the command succeeded.
        let new = unsafe { a.written_command_buffers() };
        let mut states = f.cb_states.write();
        for cb in new {
            let st = CbState {
                secondary: ci.level == vk::CommandBufferLevel::SECONDARY,
                pool: ci.command_pool,
                ..Default::default()
            };
            // A reused handle: the old command buffer went with its pool.
            if let Some(old) = states.insert(*cb, Arc::new(Mutex::new(st))) {
                let mut old = old.lock();
                // SAFETY: the old command buffer was freed with its pool,
                // which the application may do only once none of its command
                // buffers is pending (VUID-vkDestroyCommandPool-commandPool-00041).
                unsafe { free_shadow_pools(f, &mut old.shadow_pools) };
                if old.holds_scratch {
                    f.scratch.lock().release(*cb);
                }
            }
        }
    }
    r
}

/// `vkFreeCommandBuffers`: their states and shadow pools go.
pub fn free_command_buffers(_: &DeviceCore, f: &Fdm, a: args::FreeCommandBuffers) {
    let mut states = f.cb_states.write();
    for cb in a.command_buffers() {
        super::multiview_flush::forget_command_buffer(f, *cb);
        if let Some(st) = states.remove(cb) {
            let mut st = st.lock();
            // SAFETY: VUID-vkFreeCommandBuffers-pCommandBuffers-00047: the
            // command buffer is not pending, so neither are its replays.
            unsafe { free_shadow_pools(f, &mut st.shadow_pools) };
            if st.holds_scratch {
                f.scratch.lock().release(*cb);
            }
        }
    }
    drop(states);
    // SAFETY: the next layer's command, with the application's arguments.
    unsafe { a.call(f.below.fp_v1_0().free_command_buffers) }
}

impl Fdm {
    /// `vkDestroyCommandPool` frees the pool's command buffers: their states,
    /// shadow pools and scratch claims go.
    pub fn forget_command_pool(&self, pool: vk::CommandPool) {
        // Each state is looked at with no other lock held (a recording
        // thread may hold its command buffer's state and ask for the map).
        let all: Vec<(vk::CommandBuffer, Shared)> =
            self.cb_states.read().iter().map(|(cb, s)| (*cb, s.clone())).collect();
        let gone: Vec<vk::CommandBuffer> =
            all.into_iter().filter(|(_, s)| s.lock().pool == pool).map(|(cb, _)| cb).collect();
        for cb in gone {
            super::multiview_flush::forget_command_buffer(self, cb);
            let Some(st) = self.cb_states.write().remove(&cb) else { continue };
            let mut st = st.lock();
            // SAFETY: VUID-vkDestroyCommandPool-commandPool-00041: none of the
            // pool's command buffers is pending, so neither are their replays.
            unsafe { free_shadow_pools(self, &mut st.shadow_pools) };
            if st.holds_scratch {
                self.scratch.lock().release(cb);
            }
        }
    }
}

/// `vkBeginCommandBuffer`: its state starts again; a secondary continuing a
/// density-map render pass captures its commands (mode `binned`).
pub fn begin_command_buffer(_: &DeviceCore, f: &Fdm, a: args::BeginCommandBuffer) -> vk::Result {
    let cb = a.command_buffer();
    // SAFETY: the application's arguments of a valid call go down unchanged.
    let next = move || unsafe { a.call(f.below.fp_v1_0().begin_command_buffer) };
    let shared = cb_state(f, cb);
    let mut s = shared.lock();
    let (secondary, pool) = (s.secondary, s.pool);
    // SAFETY: VUID-vkBeginCommandBuffer-commandBuffer-00049: `cb` is not
    // recording or pending, so neither are its earlier replays.
    unsafe { free_shadow_pools(f, &mut s.shadow_pools) };
    if s.holds_scratch {
        // Not pending either (as above): its scratch sets are free.
        f.scratch.lock().release(cb);
    }
    *s = CbState { secondary, pool, ..Default::default() };
    super::multiview_flush::forget_command_buffer(f, cb);
    let ci = a.begin_info();
    // SAFETY: VUID-vkBeginCommandBuffer-commandBuffer-00051: a secondary's non-null inheritance info is valid, its
    // chain too (a primary's is ignored).
    let Some(inh) = (unsafe { ci.p_inheritance_info.as_ref() }).filter(|_| secondary) else {
        drop(s);
        return next();
    };
    // SAFETY: as above: a valid chain.
    let (conditional, rendering) = unsafe {
        (
            crate::pnext::find::<vk::CommandBufferInheritanceConditionalRenderingInfoEXT>(inh.p_next),
            crate::pnext::find::<vk::CommandBufferInheritanceRenderingInfo>(inh.p_next),
        )
    };
    s.app_conditional = conditional.is_some_and(|c| c.conditional_rendering_enable == vk::TRUE);
    if f.mode == Mode::Binned
        && ci.flags.contains(vk::CommandBufferUsageFlags::RENDER_PASS_CONTINUE)
        && f.passes.lock().get(&inh.render_pass).is_some_and(|p| p.density_map.is_some())
    {
        s.captured = Some(Vec::new());
    }
    drop(s);
    let per_layer = super::layered::RENDERING_PER_LAYER;
    if rendering.is_some_and(|r| r.flags.contains(per_layer)) {
        // The per-layer density bit of an inherited rendering comes off as it comes off the rendering's begin
        // (the two must match below).
        // SAFETY: as above.
        let mut chain = unsafe { crate::pnext::Chain::copy_prefix(inh.p_next) };
        if let Some(r) = chain.get_mut::<vk::CommandBufferInheritanceRenderingInfo>() {
            r.flags &= !per_layer;
        }
        let inh_copy = vk::CommandBufferInheritanceInfo { p_next: chain.head(), ..*inh };
        let info_copy = vk::CommandBufferBeginInfo { p_inheritance_info: &inh_copy, ..*ci };
        // SAFETY: the next layer's command, the application's valid info with its inheritance info and chain
        // copied (alive here), the one bit taken off.
        return unsafe { a.with_begin_info(&info_copy).call(f.below.fp_v1_0().begin_command_buffer) };
    }
    next()
}

/// Image barriers with the density-map layout, access translated; the
/// density maps' new layouts and writes are noted in `s`. The copies keep
/// the application's `pNext` (and its borrow).
fn translate_image_barriers<'a>(
    f: &Fdm,
    s: &mut CbState,
    b: &[vk::ImageMemoryBarrier<'a>],
) -> Vec<vk::ImageMemoryBarrier<'a>> {
    let images = f.images.lock();
    b.iter()
        .map(|x| {
            let mut c = *x;
            c.old_layout = super::layout(x.old_layout);
            c.new_layout = super::layout(x.new_layout);
            c.src_access_mask = super::access(x.src_access_mask);
            c.dst_access_mask = super::access(x.dst_access_mask);
            if images.get(&x.image).is_some_and(|i| i.density_map) {
                s.layouts.push((x.image, c.new_layout));
                s.map_writes.push(x.image);
            }
            c
        })
        .collect()
}

/// Memory and buffer barriers with the density-map access translated.
fn translate_memory_barriers<'a>(
    m: &[vk::MemoryBarrier<'a>],
    b: &[vk::BufferMemoryBarrier<'a>],
) -> (Vec<vk::MemoryBarrier<'a>>, Vec<vk::BufferMemoryBarrier<'a>>) {
    // Both structures have the two access masks.
    macro_rules! translated {
        ($xs:expr, $t:ident) => {
            $xs.iter()
                .map(|x| vk::$t {
                    src_access_mask: super::access(x.src_access_mask),
                    dst_access_mask: super::access(x.dst_access_mask),
                    ..*x
                })
                .collect()
        };
    }
    (translated!(m, MemoryBarrier), translated!(b, BufferMemoryBarrier))
}

/// The hook of a synchronization command of Vulkan 1.0 (`vkCmdPipelineBarrier`, `vkCmdWaitEvents`): a pass it
/// is in goes live first (`why`); its stages and barriers go down translated ([`translated_barriers`]).
macro_rules! v1_barrier_hook {
    ($(#[$doc:meta])* $hook:ident, $args:ident, $why:literal, $down:ident) => {
        $(#[$doc])*
        pub fn $hook(dev: &DeviceCore, f: &Fdm, a: args::$args) {
            let a = a.with_src_stage_mask(super::stages(a.src_stage_mask()));
            let a = a.with_dst_stage_mask(super::stages(a.dst_stage_mask()));
            let arrays = (a.memory_barriers(), a.buffer_memory_barriers(), a.image_memory_barriers());
            // SAFETY: `cb` is the application's recording command buffer, held during its call.
            unsafe {
                translated_barriers(dev, f, a.command_buffer(), $why, arrays, |m, b, i| {
                    let a = a.with_memory_barriers(m).with_buffer_memory_barriers(b).with_image_memory_barriers(i);
                    // SAFETY: the next layer's command, the application's call with the density-map stages,
                    // accesses and layouts translated (as many barriers).
                    a.call(f.below.fp_v1_0().$down)
                })
            }
        }
    };
}

v1_barrier_hook!(
    /// `vkCmdPipelineBarrier`, translated (a pass it is in goes live first).
    cmd_pipeline_barrier, CmdPipelineBarrier, "a pipeline barrier inside the pass", cmd_pipeline_barrier
);
v1_barrier_hook!(
    /// `vkCmdWaitEvents`, translated (a pass it is in goes live first).
    cmd_wait_events, CmdWaitEvents, "an event wait inside the pass", cmd_wait_events
);

/// The synchronization commands of Vulkan 1.0 (`vkCmdPipelineBarrier`,
/// `vkCmdWaitEvents`): a pass they are in goes live first (`why`); their
/// barriers go down translated (`down` gets the memory, buffer and image
/// barriers), and the density maps' new layouts are noted.
///
/// # Safety
/// `cb` is the application's recording command buffer, held during its call;
/// `down` records the command into it.
unsafe fn translated_barriers(
    dev: &DeviceCore,
    f: &Fdm,
    cb: vk::CommandBuffer,
    why: &'static str,
    (m, b, i): (&[vk::MemoryBarrier], &[vk::BufferMemoryBarrier], &[vk::ImageMemoryBarrier]),
    down: impl FnOnce(&[vk::MemoryBarrier], &[vk::BufferMemoryBarrier], &[vk::ImageMemoryBarrier]),
) {
    // SAFETY: the caller's command buffer, as above.
    if unsafe { unreplayable(dev, f, cb, why) } {
        return;
    }
    let shared = cb_state(f, cb);
    let mut s = shared.lock();
    let (mems, bufs) = translate_memory_barriers(m, b);
    let imgs = translate_image_barriers(f, &mut s, i);
    down(&mems, &bufs, &imgs)
}

/// A dependency info with the density-map stages, access and layouts
/// translated, and the arrays it points at; the density maps' new layouts
/// and writes are noted in `s`. The copies keep the application's `pNext`
/// chains (and their borrow).
///
/// # Safety
/// `d` is a valid dependency info (its barrier arrays hold their counts).
unsafe fn translate_dependency<'a>(
    f: &Fdm,
    s: &mut CbState,
    d: &vk::DependencyInfo<'a>,
) -> (
    vk::DependencyInfo<'a>,
    Box<(Vec<vk::MemoryBarrier2<'a>>, Vec<vk::BufferMemoryBarrier2<'a>>, Vec<vk::ImageMemoryBarrier2<'a>>)>,
) {
    let fix = |s_: &mut vk::PipelineStageFlags2, a: &mut vk::AccessFlags2| {
        *s_ = super::stages2(*s_);
        *a = super::access2(*a);
    };
    // SAFETY: VUID-VkDependencyInfo-pMemoryBarriers-parameter, VUID-VkDependencyInfo-pBufferMemoryBarriers-parameter
    // and VUID-VkDependencyInfo-pImageMemoryBarriers-parameter (the caller's guarantee): each array holds its count
    // of valid barriers.
    let (m, b, i) = unsafe {
        (
            slice(d.p_memory_barriers, d.memory_barrier_count),
            slice(d.p_buffer_memory_barriers, d.buffer_memory_barrier_count),
            slice(d.p_image_memory_barriers, d.image_memory_barrier_count),
        )
    };
    let mut mems: Vec<vk::MemoryBarrier2<'a>> = m.to_vec();
    for x in &mut mems {
        fix(&mut x.src_stage_mask, &mut x.src_access_mask);
        fix(&mut x.dst_stage_mask, &mut x.dst_access_mask);
    }
    let mut bufs: Vec<vk::BufferMemoryBarrier2<'a>> = b.to_vec();
    for x in &mut bufs {
        fix(&mut x.src_stage_mask, &mut x.src_access_mask);
        fix(&mut x.dst_stage_mask, &mut x.dst_access_mask);
    }
    let images = f.images.lock();
    let mut imgs: Vec<vk::ImageMemoryBarrier2<'a>> = i.to_vec();
    for x in &mut imgs {
        fix(&mut x.src_stage_mask, &mut x.src_access_mask);
        fix(&mut x.dst_stage_mask, &mut x.dst_access_mask);
        x.old_layout = super::layout(x.old_layout);
        x.new_layout = super::layout(x.new_layout);
        if images.get(&x.image).is_some_and(|i| i.density_map) {
            s.layouts.push((x.image, x.new_layout));
            s.map_writes.push(x.image);
        }
    }
    let held = Box::new((mems, bufs, imgs));
    let mut out = *d;
    out.p_memory_barriers = held.0.as_ptr();
    out.p_buffer_memory_barriers = held.1.as_ptr();
    out.p_image_memory_barriers = held.2.as_ptr();
    (out, held)
}

/// `vkCmdPipelineBarrier2`, translated (a pass it is in goes live first).
pub fn cmd_pipeline_barrier2(dev: &DeviceCore, f: &Fdm, a: args::CmdPipelineBarrier2) {
    let cb = a.command_buffer();
    // SAFETY: `cb` is the application's recording command buffer, held
    // during its call.
    if unsafe { unreplayable(dev, f, cb, "a pipeline barrier inside the pass") } {
        return;
    }
    let shared = cb_state(f, cb);
    let mut s = shared.lock();
    // SAFETY: the application's dependency info, valid (its arrays hold their counts).
    let (info, _held) = unsafe { translate_dependency(f, &mut s, a.dependency_info()) };
    // SAFETY: the next layer's command, the application's call translated; `info` points into `_held`, alive
    // until the end of this function.
    unsafe { a.with_dependency_info(&info).call(f.below.fp_v1_3().cmd_pipeline_barrier2) }
}

/// A query of the application's begins (`begins`) or ends in `cb`: a pass
/// it is in goes live first; the queries active in `cb` are counted (unless
/// `pool` is one the replays count); `down` records the command.
fn app_query(
    dev: &DeviceCore,
    f: &Fdm,
    (cb, pool): (vk::CommandBuffer, vk::QueryPool),
    begins: bool,
    down: impl FnOnce(),
) {
    // SAFETY: `cb` is the application's recording command buffer, held during its call.
    if unsafe { unreplayable(dev, f, cb, "a query inside the pass") } {
        return;
    }
    if !f.replays_count(pool) {
        let shared = cb_state(f, cb);
        let mut s = shared.lock();
        s.active_queries = if begins { s.active_queries + 1 } else { s.active_queries.saturating_sub(1) };
    }
    down()
}

/// `vkCmdBeginQuery` (a pass it is in goes live first).
pub fn cmd_begin_query(dev: &DeviceCore, f: &Fdm, a: args::CmdBeginQuery) {
    // SAFETY: the next layer's command, with the application's arguments.
    app_query(dev, f, (a.command_buffer(), a.query_pool()), true, || unsafe {
        a.call(f.below.fp_v1_0().cmd_begin_query)
    })
}

/// `vkCmdEndQuery` (a pass it is in goes live first).
pub fn cmd_end_query(dev: &DeviceCore, f: &Fdm, a: args::CmdEndQuery) {
    // SAFETY: as above.
    app_query(dev, f, (a.command_buffer(), a.query_pool()), false, || unsafe {
        a.call(f.below.fp_v1_0().cmd_end_query)
    })
}

/// The application's conditional rendering in command buffer `cb` begins
/// (`on`) or ends: a pass it is in goes live first (its replays would each
/// need the scope); `down` records the command. Whether the application's
/// scope is open is noted.
fn app_conditional(dev: &DeviceCore, f: &Fdm, cb: vk::CommandBuffer, on: bool, down: impl FnOnce()) {
    // SAFETY: `cb` is the application's recording command buffer, held during its call.
    if unsafe { unreplayable(dev, f, cb, "conditional rendering inside the pass") } {
        return;
    }
    cb_state(f, cb).lock().app_conditional = on;
    down()
}

/// `vkCmdBeginConditionalRenderingEXT`: the application's scope begins.
pub fn cmd_begin_conditional_rendering(dev: &DeviceCore, f: &Fdm, a: args::CmdBeginConditionalRenderingEXT) {
    let fp = dev.state.conditional.cmd_begin_conditional_rendering_ext;
    // SAFETY: the next layer's command, with the application's arguments (the entry point is handed out only where
    // the next layer has it).
    app_conditional(dev, f, a.command_buffer(), true, || unsafe { a.call(fp) })
}

/// `vkCmdEndConditionalRenderingEXT`: the application's scope ends.
pub fn cmd_end_conditional_rendering(dev: &DeviceCore, f: &Fdm, a: args::CmdEndConditionalRenderingEXT) {
    let fp = dev.state.conditional.cmd_end_conditional_rendering_ext;
    // SAFETY: as above.
    app_conditional(dev, f, a.command_buffer(), false, || unsafe { a.call(fp) })
}

/// `vkCmdWriteTimestamp` (a pass it is in goes live first).
pub fn cmd_write_timestamp(dev: &DeviceCore, f: &Fdm, a: args::CmdWriteTimestamp) {
    let cb = a.command_buffer();
    // SAFETY: the application's arguments of a valid call go down unchanged.
    let next = move || unsafe { a.call(f.below.fp_v1_0().cmd_write_timestamp) };
    // SAFETY: `cb` is the application's recording command buffer, held
    // during its call.
    if unsafe { unreplayable(dev, f, cb, "a timestamp inside the pass") } {
        return;
    }
    next()
}

impl Fdm {
    /// After vkCreateQueryPool: whether a query of the pool may stay active
    /// across a binned pass. Only a pipeline-statistics pool counting
    /// fragment-shader invocations alone may: that count is
    /// implementation-dependent (an implementation may execute more or fewer
    /// invocations than there are pixels), and replays at coarse areas shade
    /// fewer fragments, as density-map hardware does. Any other query (an
    /// occlusion count, vertex or primitive counts) would count each replay,
    /// so the pass renders once at 1x1 (`OVERLAP-FDM-Fallback`).
    pub fn note_query_pool(&self, info: &vk::QueryPoolCreateInfo, pool: vk::QueryPool) {
        let fs_only = info.query_type == vk::QueryType::PIPELINE_STATISTICS
            && info.pipeline_statistics == vk::QueryPipelineStatisticFlags::FRAGMENT_SHADER_INVOCATIONS;
        if fs_only {
            self.replay_counting_pools.lock().insert(pool);
        }
    }

    pub fn forget_query_pool(&self, pool: vk::QueryPool) {
        self.replay_counting_pools.lock().remove(&pool);
    }

    /// Whether queries of `pool` may stay active across a binned pass.
    fn replays_count(&self, pool: vk::QueryPool) -> bool {
        self.replay_counting_pools.lock().contains(&pool)
    }
}

/// The hooks of dynamic rendering local read's remappings: a captured pass
/// goes live first (the remapping is state of this one rendering, which its
/// replays' begins would reset; local reads inside a pass need a barrier
/// there, which makes it go live anyway).
macro_rules! local_read_hooks {
    ($($(#[$doc:meta])* $hook:ident $args:ident $why:literal => $down:ident;)*) => {$(
        $(#[$doc])*
        pub fn $hook(dev: &DeviceCore, f: &Fdm, a: args::$args) {
            // SAFETY: `cb` is the application's recording command buffer, held during its call.
            if unsafe { unreplayable(dev, f, a.command_buffer(), $why) } {
                return;
            }
            // SAFETY: the next layer's command, with the application's arguments (the entry point is handed out
            // only where the next layer has it).
            unsafe { a.call(dev.state.local_read.$down) }
        }
    )*};
}

local_read_hooks! {
    /// `vkCmdSetRenderingAttachmentLocationsKHR`.
    cmd_set_rendering_attachment_locations CmdSetRenderingAttachmentLocationsKHR
        "an attachment location remapping inside the pass" => cmd_set_rendering_attachment_locations_khr;
    /// `vkCmdSetRenderingInputAttachmentIndicesKHR`.
    cmd_set_rendering_input_attachment_indices CmdSetRenderingInputAttachmentIndicesKHR
        "an input attachment index remapping inside the pass" => cmd_set_rendering_input_attachment_indices_khr;
}

//! Binned rendering: capture a density-map pass, replay it per group of bins.
//!
//! At `vkCmdBeginRenderPass*` / `vkCmdBeginRendering` of a pass with a
//! density map (mode `binned`), nothing goes down: the commands recorded in
//! the pass (binds, push constants, dynamic state, draws, clears, subpass
//! changes, secondaries executed in it) are kept; the density map is read on
//! the host at that moment (the spec's time for a non-dynamic map). At the
//! end of the pass the layer plans replays ([`super::bins`]) and records,
//! per replay:
//! a downscale of the attachments that load, the pass into scratch targets
//! `1/area` the size of the framebuffer (viewports `x' = x/area`, scissors
//! and clear rectangles transformed and clipped to the replay's rectangle,
//! pipelines replaced by their per-area variants), and an upscale of each of
//! its bins into the real attachments. A replay at 1x1 renders directly into
//! the real attachments where nothing it overwrites is still to be loaded.
//!
//! A pass that cannot be replayed is rendered once at 1x1 (the spec always
//! allows it), logged once per reason: storage writes or atomics in a bound
//! pipeline, queries, barriers or events in the pass, a pipeline not made for
//! the pass, multisampled attachments that load or store, attachments without
//! blit support, structures the layer does not copy, secondaries it did not
//! capture. Commands outside passes go straight down, except that a pipeline
//! whose viewports the layer made dynamic gets its static ones set at bind.

use super::bins::{self, Rect};
use super::{fdm, Fdm, FramebufferInfo, Mode, PassInfo, PipelineInfo};
use crate::ffi::slice;
use crate::guard::{self, debug_panic};
use crate::id;
use crate::settings::LogLevel;
use crate::state::{self, DeviceData};
use ash::vk;
use parking_lot::Mutex;
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

/// A captured command.
#[derive(Clone, Debug)]
pub enum Cmd {
    BindPipeline(vk::PipelineBindPoint, vk::Pipeline),
    BindSets {
        point: vk::PipelineBindPoint,
        layout: vk::PipelineLayout,
        first: u32,
        sets: Vec<vk::DescriptorSet>,
        offsets: Vec<u32>,
    },
    BindVertex {
        first: u32,
        buffers: Vec<vk::Buffer>,
        offsets: Vec<vk::DeviceSize>,
        sizes: Option<Vec<vk::DeviceSize>>,
        strides: Option<Vec<vk::DeviceSize>>,
    },
    BindIndex(vk::Buffer, vk::DeviceSize, vk::IndexType),
    Push {
        layout: vk::PipelineLayout,
        stages: vk::ShaderStageFlags,
        offset: u32,
        data: Vec<u8>,
    },
    Viewport {
        first: u32,
        v: Vec<vk::Viewport>,
    },
    Scissor {
        first: u32,
        s: Vec<vk::Rect2D>,
    },
    LineWidth(f32),
    DepthBias(f32, f32, f32),
    Blend([f32; 4]),
    Bounds(f32, f32),
    StencilCompare(vk::StencilFaceFlags, u32),
    StencilWrite(vk::StencilFaceFlags, u32),
    StencilRef(vk::StencilFaceFlags, u32),
    Draw(u32, u32, u32, u32),
    DrawIndexed(u32, u32, u32, i32, u32),
    DrawIndirect(vk::Buffer, vk::DeviceSize, u32, u32),
    DrawIndexedIndirect(vk::Buffer, vk::DeviceSize, u32, u32),
    DrawIndirectCount(vk::Buffer, vk::DeviceSize, vk::Buffer, vk::DeviceSize, u32, u32),
    DrawIndexedIndirectCount(vk::Buffer, vk::DeviceSize, vk::Buffer, vk::DeviceSize, u32, u32),
    Clear {
        attachments: Vec<vk::ClearAttachment>,
        rects: Vec<vk::ClearRect>,
    },
    NextSubpass,
    /// `vkCmdSetViewportWithCount` / `vkCmdSetScissorWithCount`.
    ViewportCount(Vec<vk::Viewport>),
    ScissorCount(Vec<vk::Rect2D>),
    /// Other dynamic state, kept as the call to make (key: command, face).
    State {
        key: (u32, u32),
        call: StateCall,
    },
}

/// A captured dynamic-state call with its arguments.
#[derive(Clone)]
pub struct StateCall(Arc<dyn Fn(&ash::Device, vk::CommandBuffer) + Send + Sync>);

impl std::fmt::Debug for StateCall {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("StateCall")
    }
}

impl Cmd {
    /// Vertices this command processes, for the planner (indirect: a guess).
    fn vertices(&self) -> f64 {
        match self {
            Cmd::Draw(v, i, ..) => *v as f64 * *i as f64,
            Cmd::DrawIndexed(v, i, ..) => *v as f64 * *i as f64,
            Cmd::DrawIndirect(_, _, n, _) | Cmd::DrawIndexedIndirect(_, _, n, _) => *n as f64 * 3000.0,
            Cmd::DrawIndirectCount(.., max, _) | Cmd::DrawIndexedIndirectCount(.., max, _) => {
                (*max).min(64) as f64 * 3000.0
            }
            _ => 0.0,
        }
    }
}

/// The state commands in effect, to restore before each replay.
#[derive(Clone, Debug, Default)]
pub struct Snapshot {
    /// Keyed so that a later command replaces an earlier one of the same kind.
    cmds: BTreeMap<(u8, u32, u32), Cmd>,
    viewports: Vec<Option<vk::Viewport>>,
    scissors: Vec<Option<vk::Rect2D>>,
}

fn set_at<T: Copy>(v: &mut Vec<Option<T>>, first: u32, items: &[T]) {
    let end = first as usize + items.len();
    if v.len() < end {
        v.resize(end, None);
    }
    for (i, x) in items.iter().enumerate() {
        v[first as usize + i] = Some(*x);
    }
}

impl Snapshot {
    /// Records `cmd`; `pipeline` is what the layer knows of the pipeline a
    /// graphics `BindPipeline` binds ([`pipeline_info`]).
    fn apply(&mut self, cmd: &Cmd, pipeline: Option<&PipelineInfo>) {
        let key = |k: u8, a: u32, b: u32| (k, a, b);
        match cmd {
            Cmd::BindPipeline(vk::PipelineBindPoint::GRAPHICS, _) => {
                self.cmds.insert(key(0, 0, 0), cmd.clone());
                if let Some(info) = pipeline {
                    if let Some(v) = &info.static_viewports {
                        set_at(&mut self.viewports, 0, v);
                    }
                    if let Some(s) = &info.static_scissors {
                        set_at(&mut self.scissors, 0, s);
                    }
                }
            }
            Cmd::BindSets { point: vk::PipelineBindPoint::GRAPHICS, layout, first, sets, offsets } => {
                // One entry per set; dynamic offsets stay with the whole bind.
                if offsets.is_empty() {
                    for (i, s) in sets.iter().enumerate() {
                        let one = Cmd::BindSets {
                            point: vk::PipelineBindPoint::GRAPHICS,
                            layout: *layout,
                            first: first + i as u32,
                            sets: vec![*s],
                            offsets: vec![],
                        };
                        self.cmds.insert(key(1, first + i as u32, 0), one);
                    }
                } else {
                    self.cmds.insert(key(1, *first, 0), cmd.clone());
                }
            }
            Cmd::BindVertex { first, buffers, .. } if buffers.len() == 1 => {
                self.cmds.insert(key(2, *first, 0), cmd.clone());
            }
            Cmd::BindVertex { first, .. } => {
                self.cmds.insert(key(2, *first, 1), cmd.clone());
            }
            Cmd::BindIndex(..) => {
                self.cmds.insert(key(3, 0, 0), cmd.clone());
            }
            Cmd::Push { stages, offset, .. } => {
                self.cmds.insert(key(4, *offset, stages.as_raw()), cmd.clone());
            }
            Cmd::Viewport { first, v } => set_at(&mut self.viewports, *first, v),
            Cmd::Scissor { first, s } => set_at(&mut self.scissors, *first, s),
            Cmd::ViewportCount(v) => {
                self.viewports.clear();
                set_at(&mut self.viewports, 0, v);
                self.cmds.insert(key(13, 0, 0), cmd.clone());
            }
            Cmd::ScissorCount(v) => {
                self.scissors.clear();
                set_at(&mut self.scissors, 0, v);
                self.cmds.insert(key(14, 0, 0), cmd.clone());
            }
            Cmd::State { key: (name, face), .. } => drop(self.cmds.insert(key(12, *name, *face), cmd.clone())),
            Cmd::LineWidth(..) => drop(self.cmds.insert(key(5, 0, 0), cmd.clone())),
            Cmd::DepthBias(..) => drop(self.cmds.insert(key(6, 0, 0), cmd.clone())),
            Cmd::Blend(..) => drop(self.cmds.insert(key(7, 0, 0), cmd.clone())),
            Cmd::Bounds(..) => drop(self.cmds.insert(key(8, 0, 0), cmd.clone())),
            Cmd::StencilCompare(face, _) => drop(self.cmds.insert(key(9, face.as_raw(), 0), cmd.clone())),
            Cmd::StencilWrite(face, _) => drop(self.cmds.insert(key(10, face.as_raw(), 0), cmd.clone())),
            Cmd::StencilRef(face, _) => drop(self.cmds.insert(key(11, face.as_raw(), 0), cmd.clone())),
            _ => {}
        }
    }
}

/// Framebuffer space to rendering space for one replay.
#[derive(Clone, Copy, Debug)]
pub struct Transform<'a> {
    pub area: (u32, u32),
    /// Where the replay may write, in framebuffer space (`None`: anywhere).
    pub clip: Option<Rect>,
    /// For a replay into scratch targets: descriptor sets whose input
    /// attachments must read the scratch views instead.
    pub inputs: Option<&'a InputSubst>,
}

/// Input attachments of a replay into scratch targets: real view → scratch
/// view, and the shadow descriptor sets made for it.
#[derive(Debug, Default)]
pub struct InputSubst {
    pub views: HashMap<vk::ImageView, vk::ImageView>,
    shadows: std::cell::RefCell<HashMap<vk::DescriptorSet, vk::DescriptorSet>>,
    /// Pools of the shadow sets (freed with the command buffer's next reset).
    pub pools: std::cell::RefCell<Vec<vk::DescriptorPool>>,
}

impl Transform<'_> {
    pub const IDENTITY: Transform<'static> = Transform { area: (1, 1), clip: None, inputs: None };

    fn viewport(&self, v: &vk::Viewport) -> vk::Viewport {
        let (ax, ay) = (self.area.0 as f32, self.area.1 as f32);
        vk::Viewport { x: v.x / ax, y: v.y / ay, width: v.width / ax, height: v.height / ay, ..*v }
    }

    /// A framebuffer-space rectangle, clipped and scaled (ends rounded up:
    /// a partly covered fragment is rendered).
    fn rect(&self, r: &vk::Rect2D) -> vk::Rect2D {
        let (mut x0, mut y0) = (r.offset.x.max(0) as i64, r.offset.y.max(0) as i64);
        let (mut x1, mut y1) = (x0 + r.extent.width as i64, y0 + r.extent.height as i64);
        if let Some(c) = self.clip {
            x0 = x0.max(c.x as i64);
            y0 = y0.max(c.y as i64);
            x1 = x1.min((c.x + c.w) as i64);
            y1 = y1.min((c.y + c.h) as i64);
        }
        if x1 <= x0 || y1 <= y0 {
            return vk::Rect2D::default();
        }
        let (ax, ay) = (self.area.0 as i64, self.area.1 as i64);
        let (sx0, sy0) = (x0 / ax, y0 / ay);
        let (sx1, sy1) = ((x1 + ax - 1) / ax, (y1 + ay - 1) / ay);
        vk::Rect2D {
            offset: vk::Offset2D { x: sx0 as i32, y: sy0 as i32 },
            extent: vk::Extent2D { width: (sx1 - sx0) as u32, height: (sy1 - sy0) as u32 },
        }
    }
}

/// A pass as begun by the application, copied.
#[derive(Clone)]
enum Begin {
    RenderPass {
        render_pass: vk::RenderPass,
        framebuffer: vk::Framebuffer,
        area: vk::Rect2D,
        clears: Vec<vk::ClearValue>,
        /// Imageless framebuffers: the views given at begin.
        views: Vec<vk::ImageView>,
        pass: Arc<PassInfo>,
        fb: Arc<FramebufferInfo>,
    },
    Rendering {
        flags: vk::RenderingFlags,
        area: vk::Rect2D,
        layers: u32,
        view_mask: u32,
        colors: Vec<vk::RenderingAttachmentInfo<'static>>,
        depth: Option<vk::RenderingAttachmentInfo<'static>>,
        stencil: Option<vk::RenderingAttachmentInfo<'static>>,
        map: vk::ImageView,
        map_layout: vk::ImageLayout,
    },
}

impl Begin {
    fn area(&self) -> vk::Rect2D {
        match self {
            Begin::RenderPass { area, .. } | Begin::Rendering { area, .. } => *area,
        }
    }
}

struct Pass {
    begin: Begin,
    capturing: bool,
    cmds: Vec<Cmd>,
    /// State at the start of the pass (capture) or now (live).
    state: Snapshot,
    /// The density map, read on the host at the start of the pass.
    map: Option<Arc<MapTexels>>,
    /// Descriptor pools of shadow sets made for the replays.
    shadow_pools: Vec<vk::DescriptorPool>,
}

/// What the layer keeps per command buffer.
#[derive(Default)]
pub struct CbState {
    secondary: bool,
    /// A secondary recorded for a density-map render pass: its commands.
    captured: Option<Vec<Cmd>>,
    snapshot: Snapshot,
    pass: Option<Pass>,
    active_queries: u32,
    /// Density-map image layouts this command buffer leaves behind.
    pub layouts: Vec<(vk::Image, vk::ImageLayout)>,
    /// Density-map images this command buffer may write (transfers, layout
    /// transitions).
    pub map_writes: Vec<vk::Image>,
    /// Descriptor pools of shadow sets its replays use (freed at the next
    /// reset, when the recording cannot be pending any more).
    pub shadow_pools: Vec<vk::DescriptorPool>,
}

type Shared = Arc<Mutex<CbState>>;

/// The state of `cb`: a shared lookup on the recording path; the map is
/// written only when command buffers come and go.
fn cb_state(f: &Fdm, cb: vk::CommandBuffer) -> Shared {
    if let Some(s) = f.cb_states.read().get(&cb) {
        return s.clone();
    }
    f.cb_states.write().entry(cb).or_default().clone()
}

// ---------------------------------------------------------------------------
// Emission

/// What the layer knows of the pipeline `cmd` binds, if it is a graphics
/// `BindPipeline` of a pipeline made for a density-map pass.
fn pipeline_info(f: &Fdm, cmd: &Cmd) -> Option<Arc<PipelineInfo>> {
    match cmd {
        Cmd::BindPipeline(vk::PipelineBindPoint::GRAPHICS, p) => f.pipelines.lock().get(p).cloned(),
        _ => None,
    }
}

unsafe fn emit(f: &Fdm, cb: vk::CommandBuffer, cmd: &Cmd, t: &Transform, st: &mut Snapshot) {
    let info = pipeline_info(f, cmd);
    st.apply(cmd, info.as_deref());
    let d = &f.below;
    let v1 = d.fp_v1_0();
    match cmd {
        Cmd::BindPipeline(point, p) => {
            let chosen = info.as_ref().and_then(|i| i.variants.get(&t.area).copied()).unwrap_or(*p);
            (v1.cmd_bind_pipeline)(cb, *point, chosen);
            if let Some(info) = info {
                if info.static_viewports.is_some() {
                    emit_viewports(f, cb, t, st);
                }
                if info.static_scissors.is_some() {
                    emit_scissors(f, cb, t, st);
                }
            }
        }
        Cmd::BindSets { point, layout, first, sets, offsets } => {
            let shadowed: Vec<vk::DescriptorSet>;
            let sets: &[vk::DescriptorSet] = match t.inputs {
                Some(inputs) => {
                    shadowed = sets.iter().map(|set| shadow_set(f, *set, inputs)).collect();
                    &shadowed
                }
                None => sets,
            };
            (v1.cmd_bind_descriptor_sets)(
                cb,
                *point,
                *layout,
                *first,
                sets.len() as u32,
                sets.as_ptr(),
                offsets.len() as u32,
                offsets.as_ptr(),
            )
        }
        Cmd::BindVertex { first, buffers, offsets, sizes, strides } => {
            if sizes.is_some() || strides.is_some() {
                (d.fp_v1_3().cmd_bind_vertex_buffers2)(
                    cb,
                    *first,
                    buffers.len() as u32,
                    buffers.as_ptr(),
                    offsets.as_ptr(),
                    sizes.as_ref().map_or(std::ptr::null(), |s| s.as_ptr()),
                    strides.as_ref().map_or(std::ptr::null(), |s| s.as_ptr()),
                )
            } else {
                (v1.cmd_bind_vertex_buffers)(cb, *first, buffers.len() as u32, buffers.as_ptr(), offsets.as_ptr())
            }
        }
        Cmd::BindIndex(b, o, ty) => (v1.cmd_bind_index_buffer)(cb, *b, *o, *ty),
        Cmd::Push { layout, stages, offset, data } => {
            (v1.cmd_push_constants)(cb, *layout, *stages, *offset, data.len() as u32, data.as_ptr() as *const _)
        }
        Cmd::Viewport { first, v } => {
            let out: Vec<vk::Viewport> = v.iter().map(|v| t.viewport(v)).collect();
            (v1.cmd_set_viewport)(cb, *first, out.len() as u32, out.as_ptr())
        }
        Cmd::Scissor { first, s } => {
            let out: Vec<vk::Rect2D> = s.iter().map(|s| t.rect(s)).collect();
            (v1.cmd_set_scissor)(cb, *first, out.len() as u32, out.as_ptr())
        }
        Cmd::LineWidth(w) => (v1.cmd_set_line_width)(cb, *w),
        Cmd::DepthBias(a, b, c) => (v1.cmd_set_depth_bias)(cb, *a, *b, *c),
        Cmd::Blend(c) => (v1.cmd_set_blend_constants)(cb, c),
        Cmd::Bounds(a, b) => (v1.cmd_set_depth_bounds)(cb, *a, *b),
        Cmd::StencilCompare(face, v) => (v1.cmd_set_stencil_compare_mask)(cb, *face, *v),
        Cmd::StencilWrite(face, v) => (v1.cmd_set_stencil_write_mask)(cb, *face, *v),
        Cmd::StencilRef(face, v) => (v1.cmd_set_stencil_reference)(cb, *face, *v),
        Cmd::Draw(a, b, c, e) => (v1.cmd_draw)(cb, *a, *b, *c, *e),
        Cmd::DrawIndexed(a, b, c, o, e) => (v1.cmd_draw_indexed)(cb, *a, *b, *c, *o, *e),
        Cmd::DrawIndirect(b, o, n, s) => (v1.cmd_draw_indirect)(cb, *b, *o, *n, *s),
        Cmd::DrawIndexedIndirect(b, o, n, s) => (v1.cmd_draw_indexed_indirect)(cb, *b, *o, *n, *s),
        Cmd::DrawIndirectCount(b, o, cbuf, co, m, s) => {
            (d.fp_v1_2().cmd_draw_indirect_count)(cb, *b, *o, *cbuf, *co, *m, *s)
        }
        Cmd::DrawIndexedIndirectCount(b, o, cbuf, co, m, s) => {
            (d.fp_v1_2().cmd_draw_indexed_indirect_count)(cb, *b, *o, *cbuf, *co, *m, *s)
        }
        Cmd::Clear { attachments, rects } => {
            let rects: Vec<vk::ClearRect> = rects
                .iter()
                .map(|r| vk::ClearRect { rect: t.rect(&r.rect), ..*r })
                .filter(|r| r.rect.extent.width > 0 && r.rect.extent.height > 0)
                .collect();
            if !rects.is_empty() {
                (v1.cmd_clear_attachments)(
                    cb,
                    attachments.len() as u32,
                    attachments.as_ptr(),
                    rects.len() as u32,
                    rects.as_ptr(),
                )
            }
        }
        Cmd::NextSubpass => (v1.cmd_next_subpass)(cb, vk::SubpassContents::INLINE),
        Cmd::ViewportCount(v) => {
            let out: Vec<vk::Viewport> = v.iter().map(|v| t.viewport(v)).collect();
            (d.fp_v1_3().cmd_set_viewport_with_count)(cb, out.len() as u32, out.as_ptr())
        }
        Cmd::ScissorCount(s) => {
            let out: Vec<vk::Rect2D> = s.iter().map(|s| t.rect(s)).collect();
            (d.fp_v1_3().cmd_set_scissor_with_count)(cb, out.len() as u32, out.as_ptr())
        }
        Cmd::State { call, .. } => (call.0)(d, cb),
    }
}

/// `set`, or a copy of it whose input attachments name the replay's scratch
/// views (made once per set and replay target, freed with the command
/// buffer's next reset).
unsafe fn shadow_set(f: &Fdm, set: vk::DescriptorSet, inputs: &InputSubst) -> vk::DescriptorSet {
    if let Some(s) = inputs.shadows.borrow().get(&set) {
        return *s;
    }
    let Some(info) = f.sets.lock().get(&set).cloned() else { return set };
    if !info.inputs.iter().any(|(_, view, _)| inputs.views.contains_key(view)) {
        return set;
    }
    let Some(layout) = f.set_layouts.lock().get(&info.layout).cloned() else { return set };
    let d = &f.below;
    let mut sizes: Vec<vk::DescriptorPoolSize> = Vec::new();
    for b in layout.iter().filter(|b| b.count > 0) {
        match sizes.iter_mut().find(|s| s.ty == b.ty) {
            Some(s) => s.descriptor_count += b.count,
            None => sizes.push(vk::DescriptorPoolSize { ty: b.ty, descriptor_count: b.count }),
        }
    }
    let Ok(pool) =
        d.create_descriptor_pool(&vk::DescriptorPoolCreateInfo::default().max_sets(1).pool_sizes(&sizes), None)
    else {
        return set;
    };
    inputs.pools.borrow_mut().push(pool);
    let layouts = [info.layout];
    let Ok(shadow) = d.allocate_descriptor_sets(
        &vk::DescriptorSetAllocateInfo::default().descriptor_pool(pool).set_layouts(&layouts),
    ) else {
        return set;
    };
    let shadow = shadow[0];
    // Everything as the application wrote it, then the input attachments.
    let copies: Vec<vk::CopyDescriptorSet> = layout
        .iter()
        .filter(|b| b.count > 0 && info.written.contains(&b.binding))
        .map(|b| {
            vk::CopyDescriptorSet::default()
                .src_set(set)
                .src_binding(b.binding)
                .dst_set(shadow)
                .dst_binding(b.binding)
                .descriptor_count(b.count)
        })
        .collect();
    let images: Vec<[vk::DescriptorImageInfo; 1]> = info
        .inputs
        .iter()
        .map(|(_, view, layout)| {
            [vk::DescriptorImageInfo {
                sampler: vk::Sampler::null(),
                image_view: *inputs.views.get(view).unwrap_or(view),
                image_layout: *layout,
            }]
        })
        .collect();
    let writes: Vec<vk::WriteDescriptorSet> = info
        .inputs
        .iter()
        .zip(&images)
        .map(|((at, _, _), img)| {
            vk::WriteDescriptorSet::default()
                .dst_set(shadow)
                .dst_binding(at.0)
                .dst_array_element(at.1)
                .descriptor_type(vk::DescriptorType::INPUT_ATTACHMENT)
                .image_info(img)
        })
        .collect();
    // Copies are applied after writes within one call: two calls.
    d.update_descriptor_sets(&[], &copies);
    d.update_descriptor_sets(&writes, &[]);
    inputs.shadows.borrow_mut().insert(set, shadow);
    shadow
}

unsafe fn emit_viewports(f: &Fdm, cb: vk::CommandBuffer, t: &Transform, st: &Snapshot) {
    let v: Vec<vk::Viewport> = st.viewports.iter().map_while(|v| *v).map(|v| t.viewport(&v)).collect();
    if !v.is_empty() {
        (f.below.fp_v1_0().cmd_set_viewport)(cb, 0, v.len() as u32, v.as_ptr());
    }
}

unsafe fn emit_scissors(f: &Fdm, cb: vk::CommandBuffer, t: &Transform, st: &Snapshot) {
    let s: Vec<vk::Rect2D> = st.scissors.iter().map_while(|s| *s).map(|s| t.rect(&s)).collect();
    if !s.is_empty() {
        (f.below.fp_v1_0().cmd_set_scissor)(cb, 0, s.len() as u32, s.as_ptr());
    }
}

/// Re-establishes `st` (the state at the start of the pass) under `t`.
unsafe fn restore(f: &Fdm, cb: vk::CommandBuffer, st: &Snapshot, t: &Transform) {
    let mut scratch = st.clone();
    for cmd in st.cmds.values() {
        emit(f, cb, cmd, t, &mut scratch);
    }
    emit_viewports(f, cb, t, st);
    emit_scissors(f, cb, t, st);
}

// ---------------------------------------------------------------------------
// Recording entry points

/// Why a pass renders at 1x1, logged once per reason and pass.
fn fallback_log(dev: &DeviceData, begin: &Begin, why: &str) {
    let key = match begin {
        Begin::RenderPass { render_pass, .. } => format!("{render_pass:?} {why}"),
        Begin::Rendering { .. } => format!("rendering {why}"),
    };
    dev.log().log_once(
        LogLevel::Info,
        id::FDM_FALLBACK,
        &key,
        &format!("a density-map pass renders at a 1x1 fragment area: {why}"),
    );
}

/// Begins the application's pass for real (as translated) with `INLINE` contents.
unsafe fn begin_real(f: &Fdm, cb: vk::CommandBuffer, begin: &Begin) {
    match begin {
        Begin::RenderPass { render_pass, framebuffer, area, clears, views, .. } => {
            let mut attach = vk::RenderPassAttachmentBeginInfo::default().attachments(views);
            let mut info = vk::RenderPassBeginInfo::default()
                .render_pass(*render_pass)
                .framebuffer(*framebuffer)
                .render_area(*area)
                .clear_values(clears);
            if !views.is_empty() {
                info = info.push_next(&mut attach);
            }
            (f.below.fp_v1_0().cmd_begin_render_pass)(cb, &info, vk::SubpassContents::INLINE)
        }
        Begin::Rendering { flags, area, layers, view_mask, colors, depth, stencil, .. } => {
            let info = vk::RenderingInfo {
                flags: *flags & !vk::RenderingFlags::CONTENTS_SECONDARY_COMMAND_BUFFERS,
                render_area: *area,
                layer_count: *layers,
                view_mask: *view_mask,
                color_attachment_count: colors.len() as u32,
                p_color_attachments: colors.as_ptr(),
                p_depth_attachment: depth.as_ref().map_or(std::ptr::null(), |d| d as *const _),
                p_stencil_attachment: stencil.as_ref().map_or(std::ptr::null(), |d| d as *const _),
                ..Default::default()
            };
            (f.below.fp_v1_3().cmd_begin_rendering)(cb, &info)
        }
    }
}

unsafe fn end_real(f: &Fdm, cb: vk::CommandBuffer, begin: &Begin) {
    match begin {
        Begin::RenderPass { .. } => (f.below.fp_v1_0().cmd_end_render_pass)(cb),
        Begin::Rendering { .. } => (f.below.fp_v1_3().cmd_end_rendering)(cb),
    }
}

/// Stops capturing: the pass begins for real at 1x1 and what was captured
/// goes down unchanged.
unsafe fn go_live(dev: &DeviceData, f: &Fdm, cb: vk::CommandBuffer, pass: &mut Pass, why: &str) {
    fallback_log(dev, &pass.begin, why);
    begin_live(f, cb, pass);
}

/// The pass begins for real, as recorded, and what was captured so far goes
/// down unchanged; later commands go straight down.
unsafe fn begin_live(f: &Fdm, cb: vk::CommandBuffer, pass: &mut Pass) {
    begin_real(f, cb, &pass.begin);
    let mut st = pass.state.clone();
    restore(f, cb, &st.clone(), &Transform::IDENTITY);
    for c in std::mem::take(&mut pass.cmds) {
        emit(f, cb, &c, &Transform::IDENTITY, &mut st);
    }
    pass.state = st;
    pass.capturing = false;
}

/// A command recorded by the application.
unsafe fn record(cb: vk::CommandBuffer, cmd: Cmd) {
    let dev = state::device(cb);
    let f = fdm(dev);
    let shared = cb_state(f, cb);
    let mut s = shared.lock();
    record_in(dev, f, cb, &mut s, cmd);
}

unsafe fn record_in(dev: &DeviceData, f: &Fdm, cb: vk::CommandBuffer, s: &mut CbState, cmd: Cmd) {
    if let Some(c) = &mut s.captured {
        c.push(cmd);
        return;
    }
    let Some(pass) = &mut s.pass else {
        let mut st = std::mem::take(&mut s.snapshot);
        emit(f, cb, &cmd, &Transform::IDENTITY, &mut st);
        s.snapshot = st;
        return;
    };
    if pass.capturing && matches!(&pass.begin, Begin::RenderPass { pass: info, .. } if info.inputs) {
        if let Cmd::BindSets { sets, .. } = &cmd {
            let known = f.sets.lock();
            let layouts = f.set_layouts.lock();
            let copyable = sets.iter().all(|set| {
                known.get(set).is_some_and(|i| i.inputs.is_empty() || (!i.opaque && layouts.contains_key(&i.layout)))
            });
            drop((known, layouts));
            if !copyable {
                go_live(
                    dev,
                    f,
                    cb,
                    pass,
                    "a descriptor set it binds cannot be copied to read the scratch targets' input attachments",
                );
            }
        }
    }
    if pass.capturing {
        if let Cmd::BindPipeline(vk::PipelineBindPoint::GRAPHICS, p) = &cmd {
            let why = match f.pipelines.lock().get(p) {
                None => Some("a pipeline bound in it was not created for a density-map pass"),
                Some(i) if i.side_effects => Some("a pipeline bound in it writes storage or uses atomics"),
                Some(_) => None,
            };
            if let Some(why) = why {
                go_live(dev, f, cb, pass, why);
            }
        }
    }
    if pass.capturing {
        pass.cmds.push(cmd);
    } else {
        emit(f, cb, &cmd, &Transform::IDENTITY, &mut pass.state);
    }
}

/// A command the layer cannot replay, recorded inside a pass: the pass goes
/// live first. Returns whether the command is inside a capturing secondary
/// (where it cannot be honoured at all).
unsafe fn unreplayable(cb: vk::CommandBuffer, why: &str) -> bool {
    let dev = state::device(cb);
    let f = fdm(dev);
    let shared = cb_state(f, cb);
    let mut s = shared.lock();
    if s.captured.is_some() {
        dev.log().log_once(
            LogLevel::Warn,
            id::FDM_DROPPED,
            why,
            &format!("a secondary command buffer of a density-map pass records what the layer cannot replay ({why}); it is dropped"),
        );
        return true;
    }
    if let Some(pass) = &mut s.pass {
        if pass.capturing {
            go_live(dev, f, cb, pass, why);
        }
    }
    false
}

macro_rules! capture_hooks {
    ($( $name:literal $pfn:ident fn $hook:ident(cb $(, $a:ident: $t:ty)*) => $make:expr; )*) => {
        $(
            pub unsafe extern "system" fn $hook(cb: vk::CommandBuffer $(, $a: $t)*) {
                guard::entry(
                    $name,
                    || {
                        debug_panic(&state::device(cb).debug_panic, $name);
                        record(cb, $make)
                    },
                    || {},
                )
            }
            const _: vk::$pfn = $hook;
        )*

        fn capture_hook(name: &[u8]) -> vk::PFN_vkVoidFunction {
            use crate::ffi::pfn;
            match name {
                $( n if n == $name.as_bytes() => pfn!($hook as vk::$pfn), )*
                _ => None,
            }
        }
    };
}

unsafe fn v<T: Copy>(p: *const T, n: u32) -> Vec<T> {
    slice(p, n).to_vec()
}

capture_hooks! {
    "vkCmdBindPipeline" PFN_vkCmdBindPipeline fn cmd_bind_pipeline(cb, point: vk::PipelineBindPoint, p: vk::Pipeline)
        => Cmd::BindPipeline(point, p);
    "vkCmdBindDescriptorSets" PFN_vkCmdBindDescriptorSets fn cmd_bind_descriptor_sets(cb, point: vk::PipelineBindPoint,
        layout: vk::PipelineLayout, first: u32, n: u32, sets: *const vk::DescriptorSet, no: u32, offsets: *const u32)
        => Cmd::BindSets { point, layout, first, sets: v(sets, n), offsets: v(offsets, no) };
    "vkCmdBindVertexBuffers" PFN_vkCmdBindVertexBuffers fn cmd_bind_vertex_buffers(cb, first: u32, n: u32,
        buffers: *const vk::Buffer, offsets: *const vk::DeviceSize)
        => Cmd::BindVertex { first, buffers: v(buffers, n), offsets: v(offsets, n), sizes: None, strides: None };
    "vkCmdBindVertexBuffers2" PFN_vkCmdBindVertexBuffers2 fn cmd_bind_vertex_buffers2(cb, first: u32, n: u32,
        buffers: *const vk::Buffer, offsets: *const vk::DeviceSize, sizes: *const vk::DeviceSize, strides: *const vk::DeviceSize)
        => Cmd::BindVertex { first, buffers: v(buffers, n), offsets: v(offsets, n),
            sizes: (!sizes.is_null()).then(|| v(sizes, n)), strides: (!strides.is_null()).then(|| v(strides, n)) };
    "vkCmdBindIndexBuffer" PFN_vkCmdBindIndexBuffer fn cmd_bind_index_buffer(cb, b: vk::Buffer, o: vk::DeviceSize, ty: vk::IndexType)
        => Cmd::BindIndex(b, o, ty);
    "vkCmdPushConstants" PFN_vkCmdPushConstants fn cmd_push_constants(cb, layout: vk::PipelineLayout,
        stages: vk::ShaderStageFlags, offset: u32, size: u32, data: *const std::ffi::c_void)
        => Cmd::Push { layout, stages, offset, data: v(data as *const u8, size) };
    "vkCmdSetViewport" PFN_vkCmdSetViewport fn cmd_set_viewport(cb, first: u32, n: u32, vp: *const vk::Viewport)
        => Cmd::Viewport { first, v: v(vp, n) };
    "vkCmdSetScissor" PFN_vkCmdSetScissor fn cmd_set_scissor(cb, first: u32, n: u32, s: *const vk::Rect2D)
        => Cmd::Scissor { first, s: v(s, n) };
    "vkCmdSetLineWidth" PFN_vkCmdSetLineWidth fn cmd_set_line_width(cb, w: f32) => Cmd::LineWidth(w);
    "vkCmdSetDepthBias" PFN_vkCmdSetDepthBias fn cmd_set_depth_bias(cb, a: f32, b: f32, c: f32) => Cmd::DepthBias(a, b, c);
    "vkCmdSetBlendConstants" PFN_vkCmdSetBlendConstants fn cmd_set_blend_constants(cb, c: *const [f32; 4]) => Cmd::Blend(*c);
    "vkCmdSetDepthBounds" PFN_vkCmdSetDepthBounds fn cmd_set_depth_bounds(cb, a: f32, b: f32) => Cmd::Bounds(a, b);
    "vkCmdSetStencilCompareMask" PFN_vkCmdSetStencilCompareMask fn cmd_set_stencil_compare_mask(cb, face: vk::StencilFaceFlags, m: u32)
        => Cmd::StencilCompare(face, m);
    "vkCmdSetStencilWriteMask" PFN_vkCmdSetStencilWriteMask fn cmd_set_stencil_write_mask(cb, face: vk::StencilFaceFlags, m: u32)
        => Cmd::StencilWrite(face, m);
    "vkCmdSetStencilReference" PFN_vkCmdSetStencilReference fn cmd_set_stencil_reference(cb, face: vk::StencilFaceFlags, m: u32)
        => Cmd::StencilRef(face, m);
    "vkCmdDraw" PFN_vkCmdDraw fn cmd_draw(cb, a: u32, b: u32, c: u32, d: u32) => Cmd::Draw(a, b, c, d);
    "vkCmdDrawIndexed" PFN_vkCmdDrawIndexed fn cmd_draw_indexed(cb, a: u32, b: u32, c: u32, o: i32, d: u32)
        => Cmd::DrawIndexed(a, b, c, o, d);
    "vkCmdDrawIndirect" PFN_vkCmdDrawIndirect fn cmd_draw_indirect(cb, b: vk::Buffer, o: vk::DeviceSize, n: u32, s: u32)
        => Cmd::DrawIndirect(b, o, n, s);
    "vkCmdDrawIndexedIndirect" PFN_vkCmdDrawIndexedIndirect fn cmd_draw_indexed_indirect(cb, b: vk::Buffer, o: vk::DeviceSize, n: u32, s: u32)
        => Cmd::DrawIndexedIndirect(b, o, n, s);
    "vkCmdDrawIndirectCount" PFN_vkCmdDrawIndirectCount fn cmd_draw_indirect_count(cb, b: vk::Buffer, o: vk::DeviceSize,
        c: vk::Buffer, co: vk::DeviceSize, m: u32, s: u32) => Cmd::DrawIndirectCount(b, o, c, co, m, s);
    "vkCmdDrawIndexedIndirectCount" PFN_vkCmdDrawIndexedIndirectCount fn cmd_draw_indexed_indirect_count(cb, b: vk::Buffer,
        o: vk::DeviceSize, c: vk::Buffer, co: vk::DeviceSize, m: u32, s: u32) => Cmd::DrawIndexedIndirectCount(b, o, c, co, m, s);
    "vkCmdSetViewportWithCount" PFN_vkCmdSetViewportWithCount fn cmd_set_viewport_with_count(cb, n: u32, vp: *const vk::Viewport)
        => Cmd::ViewportCount(v(vp, n));
    "vkCmdSetScissorWithCount" PFN_vkCmdSetScissorWithCount fn cmd_set_scissor_with_count(cb, n: u32, sc: *const vk::Rect2D)
        => Cmd::ScissorCount(v(sc, n));
    "vkCmdClearAttachments" PFN_vkCmdClearAttachments fn cmd_clear_attachments(cb, n: u32, a: *const vk::ClearAttachment,
        nr: u32, r: *const vk::ClearRect) => Cmd::Clear { attachments: v(a, n), rects: v(r, nr) };
}

/// Destroys the shadow-set pools of a command buffer whose recording can no
/// longer be pending.
pub(super) unsafe fn free_shadow_pools(f: &Fdm, pools: &mut Vec<vk::DescriptorPool>) {
    for p in pools.drain(..) {
        f.below.destroy_descriptor_pool(p, None);
    }
}

/// Declares captured dynamic-state commands of Vulkan 1.3 (extended dynamic
/// state 1 and 2): each is kept as the call to make, keyed by its command
/// (and stencil face) for the state snapshot.
macro_rules! state_hooks {
    ($( $n:literal $name:literal $pfn:ident fn $hook:ident(cb $(, $a:ident: $t:ty)*) face $face:expr => $field:ident; )*) => {
        $(
            pub unsafe extern "system" fn $hook(cb: vk::CommandBuffer $(, $a: $t)*) {
                guard::entry(
                    $name,
                    || {
                        let call = StateCall(Arc::new(move |d: &ash::Device, cb| (d.fp_v1_3().$field)(cb $(, $a)*)));
                        record(cb, Cmd::State { key: ($n, $face), call })
                    },
                    || {},
                )
            }
            const _: vk::$pfn = $hook;
        )*

        fn state_hook(name: &[u8]) -> vk::PFN_vkVoidFunction {
            use crate::ffi::pfn;
            let core = name.strip_suffix(b"EXT").unwrap_or(name);
            match core {
                $( n if n == $name.as_bytes() => pfn!($hook as vk::$pfn), )*
                _ => None,
            }
        }
    };
}

state_hooks! {
    1 "vkCmdSetCullMode" PFN_vkCmdSetCullMode fn cmd_set_cull_mode(cb, m: vk::CullModeFlags) face 0 => cmd_set_cull_mode;
    2 "vkCmdSetFrontFace" PFN_vkCmdSetFrontFace fn cmd_set_front_face(cb, m: vk::FrontFace) face 0 => cmd_set_front_face;
    3 "vkCmdSetPrimitiveTopology" PFN_vkCmdSetPrimitiveTopology fn cmd_set_primitive_topology(cb, m: vk::PrimitiveTopology)
        face 0 => cmd_set_primitive_topology;
    4 "vkCmdSetDepthTestEnable" PFN_vkCmdSetDepthTestEnable fn cmd_set_depth_test_enable(cb, e: vk::Bool32)
        face 0 => cmd_set_depth_test_enable;
    5 "vkCmdSetDepthWriteEnable" PFN_vkCmdSetDepthWriteEnable fn cmd_set_depth_write_enable(cb, e: vk::Bool32)
        face 0 => cmd_set_depth_write_enable;
    6 "vkCmdSetDepthCompareOp" PFN_vkCmdSetDepthCompareOp fn cmd_set_depth_compare_op(cb, o: vk::CompareOp)
        face 0 => cmd_set_depth_compare_op;
    7 "vkCmdSetDepthBoundsTestEnable" PFN_vkCmdSetDepthBoundsTestEnable fn cmd_set_depth_bounds_test_enable(cb, e: vk::Bool32)
        face 0 => cmd_set_depth_bounds_test_enable;
    8 "vkCmdSetStencilTestEnable" PFN_vkCmdSetStencilTestEnable fn cmd_set_stencil_test_enable(cb, e: vk::Bool32)
        face 0 => cmd_set_stencil_test_enable;
    9 "vkCmdSetStencilOp" PFN_vkCmdSetStencilOp fn cmd_set_stencil_op(cb, face: vk::StencilFaceFlags, fail: vk::StencilOp,
        pass: vk::StencilOp, depth_fail: vk::StencilOp, op: vk::CompareOp) face face.as_raw() => cmd_set_stencil_op;
    10 "vkCmdSetRasterizerDiscardEnable" PFN_vkCmdSetRasterizerDiscardEnable fn cmd_set_rasterizer_discard_enable(cb, e: vk::Bool32)
        face 0 => cmd_set_rasterizer_discard_enable;
    11 "vkCmdSetDepthBiasEnable" PFN_vkCmdSetDepthBiasEnable fn cmd_set_depth_bias_enable(cb, e: vk::Bool32)
        face 0 => cmd_set_depth_bias_enable;
    12 "vkCmdSetPrimitiveRestartEnable" PFN_vkCmdSetPrimitiveRestartEnable fn cmd_set_primitive_restart_enable(cb, e: vk::Bool32)
        face 0 => cmd_set_primitive_restart_enable;
}

pub unsafe extern "system" fn cmd_begin_transform_feedback(
    cb: vk::CommandBuffer,
    first: u32,
    n: u32,
    buffers: *const vk::Buffer,
    offsets: *const vk::DeviceSize,
) {
    let next = move || {
        let dev = state::device(cb);
        let f = fdm(dev);
        if let Some(fp) = f.begin_transform_feedback {
            fp(cb, first, n, buffers, offsets)
        }
    };
    guard::entry(
        "vkCmdBeginTransformFeedbackEXT",
        || {
            if !unreplayable(cb, "transform feedback in the pass") {
                next()
            }
        },
        next,
    )
}

/// One binding of a descriptor set layout.
#[derive(Clone, Copy, Debug)]
pub struct LayoutBinding {
    pub binding: u32,
    pub ty: vk::DescriptorType,
    pub count: u32,
}

impl SetInfo {
    /// Records the input attachment at (binding, element).
    fn put_input(&mut self, at: (u32, u32), view: vk::ImageView, layout: vk::ImageLayout) {
        self.inputs.retain(|(a, _, _)| *a != at);
        self.inputs.push((at, view, layout));
    }
}

/// What the layer knows of a descriptor set, for shadow copies.
#[derive(Clone, Debug, Default)]
pub struct SetInfo {
    pub layout: vk::DescriptorSetLayout,
    /// Input attachments written: ((binding, element), view, layout).
    pub inputs: Vec<((u32, u32), vk::ImageView, vk::ImageLayout)>,
    /// Bindings written at least once (only those are copied).
    pub written: std::collections::HashSet<u32>,
    /// Updated through a template: contents unknown to the layer.
    pub opaque: bool,
}

pub unsafe extern "system" fn create_descriptor_set_layout(
    device: vk::Device,
    info: *const vk::DescriptorSetLayoutCreateInfo<'_>,
    alloc: *const vk::AllocationCallbacks<'_>,
    out: *mut vk::DescriptorSetLayout,
) -> vk::Result {
    let next =
        move || (fdm(state::device(device)).below.fp_v1_0().create_descriptor_set_layout)(device, info, alloc, out);
    guard::entry(
        "vkCreateDescriptorSetLayout",
        || {
            let f = fdm(state::device(device));
            let r = next();
            let ci = &*info;
            // Only plain layouts can be shadowed (no flags, no binding flags).
            if r == vk::Result::SUCCESS && ci.flags.is_empty() && ci.p_next.is_null() {
                let b = slice(ci.p_bindings, ci.binding_count)
                    .iter()
                    .map(|b| LayoutBinding { binding: b.binding, ty: b.descriptor_type, count: b.descriptor_count })
                    .collect();
                f.set_layouts.lock().insert(*out, Arc::new(b));
            }
            r
        },
        next,
    )
}

pub unsafe extern "system" fn allocate_descriptor_sets(
    device: vk::Device,
    info: *const vk::DescriptorSetAllocateInfo<'_>,
    out: *mut vk::DescriptorSet,
) -> vk::Result {
    let next = move || (fdm(state::device(device)).below.fp_v1_0().allocate_descriptor_sets)(device, info, out);
    guard::entry(
        "vkAllocateDescriptorSets",
        || {
            let f = fdm(state::device(device));
            let r = next();
            if r == vk::Result::SUCCESS {
                let ci = &*info;
                let mut sets = f.sets.lock();
                let layouts = slice(ci.p_set_layouts, ci.descriptor_set_count);
                for (set, layout) in slice(out, ci.descriptor_set_count).iter().zip(layouts) {
                    sets.insert(*set, SetInfo { layout: *layout, ..Default::default() });
                }
            }
            r
        },
        next,
    )
}

pub unsafe extern "system" fn update_descriptor_sets(
    device: vk::Device,
    nw: u32,
    writes: *const vk::WriteDescriptorSet<'_>,
    nc: u32,
    copies: *const vk::CopyDescriptorSet<'_>,
) {
    let next =
        move || (fdm(state::device(device)).below.fp_v1_0().update_descriptor_sets)(device, nw, writes, nc, copies);
    guard::entry(
        "vkUpdateDescriptorSets",
        || {
            let f = fdm(state::device(device));
            {
                let mut sets = f.sets.lock();
                for w in slice(writes, nw) {
                    let Some(info) = sets.get_mut(&w.dst_set) else { continue };
                    info.written.insert(w.dst_binding);
                    if w.descriptor_type == vk::DescriptorType::INPUT_ATTACHMENT {
                        for (i, img) in slice(w.p_image_info, w.descriptor_count).iter().enumerate() {
                            let at = (w.dst_binding, w.dst_array_element + i as u32);
                            info.put_input(at, img.image_view, img.image_layout);
                        }
                    }
                }
                for c in slice(copies, nc) {
                    let Some(src) = sets.get(&c.src_set).cloned() else { continue };
                    let Some(dst) = sets.get_mut(&c.dst_set) else { continue };
                    dst.written.insert(c.dst_binding);
                    dst.opaque |= src.opaque;
                    let range = c.src_array_element..c.src_array_element + c.descriptor_count;
                    for ((b, e), view, layout) in src.inputs {
                        if b == c.src_binding && range.contains(&e) {
                            let at = (c.dst_binding, c.dst_array_element + (e - c.src_array_element));
                            dst.put_input(at, view, layout);
                        }
                    }
                }
            }
            next()
        },
        next,
    )
}

pub unsafe extern "system" fn update_descriptor_set_with_template(
    device: vk::Device,
    set: vk::DescriptorSet,
    template: vk::DescriptorUpdateTemplate,
    data: *const std::ffi::c_void,
) {
    let next = move || {
        (fdm(state::device(device)).below.fp_v1_1().update_descriptor_set_with_template)(device, set, template, data)
    };
    guard::entry(
        "vkUpdateDescriptorSetWithTemplate",
        || {
            if let Some(info) = fdm(state::device(device)).sets.lock().get_mut(&set) {
                info.opaque = true;
            }
            next()
        },
        next,
    )
}

pub unsafe extern "system" fn allocate_command_buffers(
    device: vk::Device,
    info: *const vk::CommandBufferAllocateInfo<'_>,
    out: *mut vk::CommandBuffer,
) -> vk::Result {
    let next = move || (fdm(state::device(device)).below.fp_v1_0().allocate_command_buffers)(device, info, out);
    guard::entry(
        "vkAllocateCommandBuffers",
        || {
            let f = fdm(state::device(device));
            let r = next();
            if r == vk::Result::SUCCESS {
                let ci = &*info;
                let mut states = f.cb_states.write();
                for cb in slice(out, ci.command_buffer_count) {
                    let st = CbState { secondary: ci.level == vk::CommandBufferLevel::SECONDARY, ..Default::default() };
                    // A reused handle: the old command buffer went with its pool.
                    if let Some(old) = states.insert(*cb, Arc::new(Mutex::new(st))) {
                        free_shadow_pools(f, &mut old.lock().shadow_pools);
                    }
                }
            }
            r
        },
        next,
    )
}

pub unsafe extern "system" fn free_command_buffers(
    device: vk::Device,
    pool: vk::CommandPool,
    n: u32,
    cbs: *const vk::CommandBuffer,
) {
    let next = move || (fdm(state::device(device)).below.fp_v1_0().free_command_buffers)(device, pool, n, cbs);
    guard::entry(
        "vkFreeCommandBuffers",
        || {
            let f = fdm(state::device(device));
            let mut states = f.cb_states.write();
            for cb in slice(cbs, n) {
                if let Some(st) = states.remove(cb) {
                    free_shadow_pools(f, &mut st.lock().shadow_pools);
                }
            }
            drop(states);
            next()
        },
        next,
    )
}

pub unsafe extern "system" fn begin_command_buffer(
    cb: vk::CommandBuffer,
    info: *const vk::CommandBufferBeginInfo<'_>,
) -> vk::Result {
    let next = move || (fdm(state::device(cb)).below.fp_v1_0().begin_command_buffer)(cb, info);
    guard::entry(
        "vkBeginCommandBuffer",
        || {
            let f = fdm(state::device(cb));
            let shared = cb_state(f, cb);
            let mut s = shared.lock();
            let secondary = s.secondary;
            free_shadow_pools(f, &mut s.shadow_pools);
            *s = CbState { secondary, ..Default::default() };
            let ci = &*info;
            if secondary
                && f.mode == Mode::Binned
                && ci.flags.contains(vk::CommandBufferUsageFlags::RENDER_PASS_CONTINUE)
                && !ci.p_inheritance_info.is_null()
            {
                let inh = &*ci.p_inheritance_info;
                if f.passes.lock().get(&inh.render_pass).is_some_and(|p| p.density_map.is_some()) {
                    s.captured = Some(Vec::new());
                }
            }
            next()
        },
        next,
    )
}

unsafe fn translate_image_barriers(
    f: &Fdm,
    s: &mut CbState,
    b: &[vk::ImageMemoryBarrier],
) -> Vec<vk::ImageMemoryBarrier<'static>> {
    let images = f.images.lock();
    b.iter()
        .map(|x| {
            let mut c: vk::ImageMemoryBarrier<'static> = std::mem::transmute(*x);
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
    let mems = m
        .iter()
        .map(|x| vk::MemoryBarrier {
            src_access_mask: super::access(x.src_access_mask),
            dst_access_mask: super::access(x.dst_access_mask),
            ..*x
        })
        .collect();
    let bufs = b
        .iter()
        .map(|x| vk::BufferMemoryBarrier {
            src_access_mask: super::access(x.src_access_mask),
            dst_access_mask: super::access(x.dst_access_mask),
            ..*x
        })
        .collect();
    (mems, bufs)
}

pub unsafe extern "system" fn cmd_pipeline_barrier(
    cb: vk::CommandBuffer,
    src: vk::PipelineStageFlags,
    dst: vk::PipelineStageFlags,
    deps: vk::DependencyFlags,
    nm: u32,
    m: *const vk::MemoryBarrier<'_>,
    nb: u32,
    b: *const vk::BufferMemoryBarrier<'_>,
    ni: u32,
    i: *const vk::ImageMemoryBarrier<'_>,
) {
    let next =
        move || (fdm(state::device(cb)).below.fp_v1_0().cmd_pipeline_barrier)(cb, src, dst, deps, nm, m, nb, b, ni, i);
    guard::entry(
        "vkCmdPipelineBarrier",
        || {
            if unreplayable(cb, "a pipeline barrier inside the pass") {
                return;
            }
            let f = fdm(state::device(cb));
            let shared = cb_state(f, cb);
            let mut s = shared.lock();
            let (mems, bufs) = translate_memory_barriers(slice(m, nm), slice(b, nb));
            let imgs = translate_image_barriers(f, &mut s, slice(i, ni));
            (f.below.fp_v1_0().cmd_pipeline_barrier)(
                cb,
                super::stages(src),
                super::stages(dst),
                deps,
                nm,
                mems.as_ptr(),
                nb,
                bufs.as_ptr(),
                ni,
                imgs.as_ptr(),
            )
        },
        next,
    )
}

unsafe fn translate_dependency(
    f: &Fdm,
    s: &mut CbState,
    d: &vk::DependencyInfo,
) -> (
    vk::DependencyInfo<'static>,
    Box<(
        Vec<vk::MemoryBarrier2<'static>>,
        Vec<vk::BufferMemoryBarrier2<'static>>,
        Vec<vk::ImageMemoryBarrier2<'static>>,
    )>,
) {
    let fix = |s_: &mut vk::PipelineStageFlags2, a: &mut vk::AccessFlags2| {
        *s_ = super::stages2(*s_);
        *a = super::access2(*a);
    };
    let mut mems: Vec<vk::MemoryBarrier2<'static>> =
        slice(d.p_memory_barriers, d.memory_barrier_count).iter().map(|x| std::mem::transmute(*x)).collect();
    for x in &mut mems {
        fix(&mut x.src_stage_mask, &mut x.src_access_mask);
        fix(&mut x.dst_stage_mask, &mut x.dst_access_mask);
    }
    let mut bufs: Vec<vk::BufferMemoryBarrier2<'static>> =
        slice(d.p_buffer_memory_barriers, d.buffer_memory_barrier_count)
            .iter()
            .map(|x| std::mem::transmute(*x))
            .collect();
    for x in &mut bufs {
        fix(&mut x.src_stage_mask, &mut x.src_access_mask);
        fix(&mut x.dst_stage_mask, &mut x.dst_access_mask);
    }
    let images = f.images.lock();
    let mut imgs: Vec<vk::ImageMemoryBarrier2<'static>> =
        slice(d.p_image_memory_barriers, d.image_memory_barrier_count)
            .iter()
            .map(|x| std::mem::transmute(*x))
            .collect();
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
    let mut out: vk::DependencyInfo<'static> = std::mem::transmute(*d);
    out.p_memory_barriers = held.0.as_ptr();
    out.p_buffer_memory_barriers = held.1.as_ptr();
    out.p_image_memory_barriers = held.2.as_ptr();
    (out, held)
}

pub unsafe extern "system" fn cmd_pipeline_barrier2(cb: vk::CommandBuffer, d: *const vk::DependencyInfo<'_>) {
    let next = move || (fdm(state::device(cb)).below.fp_v1_3().cmd_pipeline_barrier2)(cb, d);
    guard::entry(
        "vkCmdPipelineBarrier2",
        || {
            if unreplayable(cb, "a pipeline barrier inside the pass") {
                return;
            }
            let f = fdm(state::device(cb));
            let shared = cb_state(f, cb);
            let mut s = shared.lock();
            let (info, _held) = translate_dependency(f, &mut s, &*d);
            (f.below.fp_v1_3().cmd_pipeline_barrier2)(cb, &info)
        },
        next,
    )
}

pub unsafe extern "system" fn cmd_wait_events(
    cb: vk::CommandBuffer,
    n: u32,
    events: *const vk::Event,
    src: vk::PipelineStageFlags,
    dst: vk::PipelineStageFlags,
    nm: u32,
    m: *const vk::MemoryBarrier<'_>,
    nb: u32,
    b: *const vk::BufferMemoryBarrier<'_>,
    ni: u32,
    i: *const vk::ImageMemoryBarrier<'_>,
) {
    let next =
        move || (fdm(state::device(cb)).below.fp_v1_0().cmd_wait_events)(cb, n, events, src, dst, nm, m, nb, b, ni, i);
    guard::entry(
        "vkCmdWaitEvents",
        || {
            if unreplayable(cb, "an event wait inside the pass") {
                return;
            }
            let f = fdm(state::device(cb));
            let shared = cb_state(f, cb);
            let mut s = shared.lock();
            let (mems, bufs) = translate_memory_barriers(slice(m, nm), slice(b, nb));
            let imgs = translate_image_barriers(f, &mut s, slice(i, ni));
            (f.below.fp_v1_0().cmd_wait_events)(
                cb,
                n,
                events,
                super::stages(src),
                super::stages(dst),
                nm,
                mems.as_ptr(),
                nb,
                bufs.as_ptr(),
                ni,
                imgs.as_ptr(),
            )
        },
        next,
    )
}

pub unsafe extern "system" fn cmd_begin_query(
    cb: vk::CommandBuffer,
    pool: vk::QueryPool,
    q: u32,
    flags: vk::QueryControlFlags,
) {
    let next = move || (fdm(state::device(cb)).below.fp_v1_0().cmd_begin_query)(cb, pool, q, flags);
    guard::entry(
        "vkCmdBeginQuery",
        || {
            if unreplayable(cb, "a query inside the pass") {
                return;
            }
            let f = fdm(state::device(cb));
            cb_state(f, cb).lock().active_queries += 1;
            next()
        },
        next,
    )
}

pub unsafe extern "system" fn cmd_end_query(cb: vk::CommandBuffer, pool: vk::QueryPool, q: u32) {
    let next = move || (fdm(state::device(cb)).below.fp_v1_0().cmd_end_query)(cb, pool, q);
    guard::entry(
        "vkCmdEndQuery",
        || {
            if unreplayable(cb, "a query inside the pass") {
                return;
            }
            let f = fdm(state::device(cb));
            let shared = cb_state(f, cb);
            let mut s = shared.lock();
            s.active_queries = s.active_queries.saturating_sub(1);
            drop(s);
            next()
        },
        next,
    )
}

pub unsafe extern "system" fn cmd_write_timestamp(
    cb: vk::CommandBuffer,
    stage: vk::PipelineStageFlags,
    pool: vk::QueryPool,
    q: u32,
) {
    let next = move || (fdm(state::device(cb)).below.fp_v1_0().cmd_write_timestamp)(cb, stage, pool, q);
    guard::entry(
        "vkCmdWriteTimestamp",
        || {
            if unreplayable(cb, "a timestamp inside the pass") {
                return;
            }
            next()
        },
        next,
    )
}

// ---------------------------------------------------------------------------
// Passes

/// Starts a density-map pass: capture (binned) or go down at once.
unsafe fn start(dev: &DeviceData, f: &Fdm, cb: vk::CommandBuffer, begin: Begin, early: Option<&str>) {
    let shared = cb_state(f, cb);
    let mut s = shared.lock();
    let mut why = early.map(str::to_string);
    if why.is_none() && s.active_queries > 0 {
        why = Some("a query is active across it".into());
    }
    if why.is_none() && f.mode == Mode::Baseline {
        why = Some(String::new());
    }
    let mut pass = Pass {
        begin,
        capturing: true,
        cmds: Vec::new(),
        state: s.snapshot.clone(),
        map: None,
        shadow_pools: Vec::new(),
    };
    if why.is_none() {
        // The spec's time for a non-dynamic map: read by the host now.
        match attachments(f, &pass.begin).and_then(|(_, view, layout, ..)| density_map(dev, f, view, layout)) {
            Ok(m) => pass.map = Some(m),
            Err(e) => why = Some(e),
        }
    }
    if let Some(why) = why {
        if why.is_empty() {
            begin_live(f, cb, &mut pass);
        } else {
            go_live(dev, f, cb, &mut pass, &why);
        }
    }
    s.pass = Some(pass);
}

unsafe fn render_pass_begin(f: &Fdm, info: &vk::RenderPassBeginInfo) -> Option<Begin> {
    let pass = f.passes.lock().get(&info.render_pass).cloned()?;
    pass.density_map?;
    let fb = f.framebuffers.lock().get(&info.framebuffer).cloned()?;
    let mut views = Vec::new();
    if fb.imageless {
        if let Some(a) = crate::pnext::find::<vk::RenderPassAttachmentBeginInfo>(info.p_next) {
            views = slice(a.p_attachments, a.attachment_count).to_vec();
        }
    }
    Some(Begin::RenderPass {
        render_pass: info.render_pass,
        framebuffer: info.framebuffer,
        area: info.render_area,
        clears: slice(info.p_clear_values, info.clear_value_count).to_vec(),
        views,
        pass,
        fb,
    })
}

/// Structures in a begin info's chain the layer can carry to a replay.
unsafe fn only_known(mut p: *const std::ffi::c_void, known: &[vk::StructureType]) -> bool {
    while !p.is_null() {
        let b = &*(p as *const vk::BaseInStructure);
        if !known.contains(&b.s_type) {
            return false;
        }
        p = b.p_next as *const _;
    }
    true
}

/// Why a render pass must render at 1x1 from its start, if it must.
unsafe fn early_render_pass(
    p_next: *const std::ffi::c_void,
    sub_next: *const std::ffi::c_void,
) -> Option<&'static str> {
    let copyable = only_known(p_next, &[vk::StructureType::RENDER_PASS_ATTACHMENT_BEGIN_INFO]) && sub_next.is_null();
    (!copyable).then_some("its begin info chains a structure the layer does not replay")
}

pub unsafe extern "system" fn cmd_begin_render_pass(
    cb: vk::CommandBuffer,
    info: *const vk::RenderPassBeginInfo<'_>,
    contents: vk::SubpassContents,
) {
    let next = move || (fdm(state::device(cb)).below.fp_v1_0().cmd_begin_render_pass)(cb, info, contents);
    guard::entry(
        "vkCmdBeginRenderPass",
        || {
            let dev = state::device(cb);
            let f = fdm(dev);
            let Some(begin) = render_pass_begin(f, &*info) else { return next() };
            let early = early_render_pass((*info).p_next, std::ptr::null());
            start(dev, f, cb, begin, early)
        },
        next,
    )
}

pub unsafe extern "system" fn cmd_begin_render_pass2(
    cb: vk::CommandBuffer,
    info: *const vk::RenderPassBeginInfo<'_>,
    sub: *const vk::SubpassBeginInfo<'_>,
) {
    let next = move || (fdm(state::device(cb)).below.fp_v1_2().cmd_begin_render_pass2)(cb, info, sub);
    guard::entry(
        "vkCmdBeginRenderPass2",
        || {
            let dev = state::device(cb);
            let f = fdm(dev);
            let Some(begin) = render_pass_begin(f, &*info) else { return next() };
            let early = early_render_pass((*info).p_next, (*sub).p_next);
            start(dev, f, cb, begin, early)
        },
        next,
    )
}

/// A subpass change or the end of a pass, in a density-map pass or not.
unsafe fn pass_command(cb: vk::CommandBuffer, end: bool, next: impl FnOnce()) {
    let dev = state::device(cb);
    let f = fdm(dev);
    let shared = cb_state(f, cb);
    let mut s = shared.lock();
    let Some(pass) = &mut s.pass else {
        drop(s);
        return next();
    };
    if !end {
        if pass.capturing {
            pass.cmds.push(Cmd::NextSubpass);
        } else {
            emit(f, cb, &Cmd::NextSubpass, &Transform::IDENTITY, &mut pass.state);
        }
        return;
    }
    let mut pass = s.pass.take().unwrap();
    if pass.capturing {
        if let Err(why) = replay(dev, f, cb, &mut pass) {
            go_live(dev, f, cb, &mut pass, &why);
            end_real(f, cb, &pass.begin);
        }
    } else {
        end_real(f, cb, &pass.begin);
    }
    s.shadow_pools.append(&mut pass.shadow_pools);
    // After a pass the state is the pass's last (replays restore it exactly
    // only for what they track; the application re-binds what it needs).
    s.snapshot = pass.state;
}

pub unsafe extern "system" fn cmd_next_subpass(cb: vk::CommandBuffer, contents: vk::SubpassContents) {
    let next = move || (fdm(state::device(cb)).below.fp_v1_0().cmd_next_subpass)(cb, contents);
    guard::entry("vkCmdNextSubpass", || pass_command(cb, false, next), next)
}

pub unsafe extern "system" fn cmd_next_subpass2(
    cb: vk::CommandBuffer,
    b: *const vk::SubpassBeginInfo<'_>,
    e: *const vk::SubpassEndInfo<'_>,
) {
    let next = move || (fdm(state::device(cb)).below.fp_v1_2().cmd_next_subpass2)(cb, b, e);
    guard::entry("vkCmdNextSubpass2", || pass_command(cb, false, next), next)
}

pub unsafe extern "system" fn cmd_end_render_pass(cb: vk::CommandBuffer) {
    let next = move || (fdm(state::device(cb)).below.fp_v1_0().cmd_end_render_pass)(cb);
    guard::entry("vkCmdEndRenderPass", || pass_command(cb, true, next), next)
}

pub unsafe extern "system" fn cmd_end_render_pass2(cb: vk::CommandBuffer, e: *const vk::SubpassEndInfo<'_>) {
    let next = move || (fdm(state::device(cb)).below.fp_v1_2().cmd_end_render_pass2)(cb, e);
    guard::entry("vkCmdEndRenderPass2", || pass_command(cb, true, next), next)
}

pub unsafe extern "system" fn cmd_begin_rendering(cb: vk::CommandBuffer, info: *const vk::RenderingInfo<'_>) {
    let next = move || (fdm(state::device(cb)).below.fp_v1_3().cmd_begin_rendering)(cb, info);
    guard::entry(
        "vkCmdBeginRendering",
        || {
            let dev = state::device(cb);
            let f = fdm(dev);
            let ri = &*info;
            let Some(map) = crate::pnext::find::<vk::RenderingFragmentDensityMapAttachmentInfoEXT>(ri.p_next)
                .filter(|m| m.image_view != vk::ImageView::null())
            else {
                return next();
            };
            let copy_att = |a: &vk::RenderingAttachmentInfo| -> vk::RenderingAttachmentInfo<'static> {
                let mut c: vk::RenderingAttachmentInfo<'static> = std::mem::transmute(*a);
                c.p_next = std::ptr::null();
                c
            };
            let colors: Vec<vk::RenderingAttachmentInfo<'static>> =
                slice(ri.p_color_attachments, ri.color_attachment_count).iter().map(copy_att).collect();
            let begin = Begin::Rendering {
                flags: ri.flags,
                area: ri.render_area,
                layers: ri.layer_count,
                view_mask: ri.view_mask,
                colors,
                depth: ri.p_depth_attachment.as_ref().map(copy_att),
                stencil: ri.p_stencil_attachment.as_ref().map(copy_att),
                map: map.image_view,
                map_layout: super::layout(map.image_layout),
            };
            let atts = slice(ri.p_color_attachments, ri.color_attachment_count)
                .iter()
                .chain(ri.p_depth_attachment.as_ref())
                .chain(ri.p_stencil_attachment.as_ref());
            let mut early = None;
            if atts.clone().any(|a| !a.p_next.is_null())
                || !only_known(ri.p_next, &[vk::StructureType::RENDERING_FRAGMENT_DENSITY_MAP_ATTACHMENT_INFO_EXT])
            {
                early = Some("its rendering info chains a structure the layer does not replay");
            } else if ri.flags.intersects(vk::RenderingFlags::SUSPENDING | vk::RenderingFlags::RESUMING) {
                early = Some("it is suspended or resumed");
            } else if ri.flags.contains(vk::RenderingFlags::CONTENTS_SECONDARY_COMMAND_BUFFERS) {
                early = Some("its contents are secondary command buffers");
            }
            if f.mode == Mode::Baseline || early.is_some() {
                // Down as the application gave it, without the density map.
                let mut chain = match crate::pnext::Chain::copy(ri.p_next) {
                    Ok(c) => c,
                    Err(_) => return next(),
                };
                chain.remove(vk::StructureType::RENDERING_FRAGMENT_DENSITY_MAP_ATTACHMENT_INFO_EXT);
                let mut c = *ri;
                c.p_next = chain.head();
                if let Some(why) = early {
                    fallback_log(dev, &begin, why);
                }
                (f.below.fp_v1_3().cmd_begin_rendering)(cb, &c);
                if f.mode == Mode::Baseline {
                    return;
                }
                let shared = cb_state(f, cb);
                let mut s = shared.lock();
                let st = s.snapshot.clone();
                s.pass = Some(Pass {
                    begin,
                    capturing: false,
                    cmds: Vec::new(),
                    state: st,
                    map: None,
                    shadow_pools: Vec::new(),
                });
                return;
            }
            start(dev, f, cb, begin, None)
        },
        next,
    )
}

pub unsafe extern "system" fn cmd_end_rendering(cb: vk::CommandBuffer) {
    let next = move || (fdm(state::device(cb)).below.fp_v1_3().cmd_end_rendering)(cb);
    guard::entry("vkCmdEndRendering", || pass_command(cb, true, next), next)
}

pub unsafe extern "system" fn cmd_execute_commands(cb: vk::CommandBuffer, n: u32, cbs: *const vk::CommandBuffer) {
    let next = move || (fdm(state::device(cb)).below.fp_v1_0().cmd_execute_commands)(cb, n, cbs);
    guard::entry(
        "vkCmdExecuteCommands",
        || {
            let dev = state::device(cb);
            let f = fdm(dev);
            let shared = cb_state(f, cb);
            let in_pass = shared.lock().pass.as_ref().is_some_and(|p| matches!(p.begin, Begin::RenderPass { .. }));
            if !in_pass {
                return next();
            }
            for sec in slice(cbs, n) {
                let cmds = cb_state(f, *sec).lock().captured.clone();
                match cmds {
                    Some(cmds) => {
                        let mut s = shared.lock();
                        for c in cmds {
                            record_in(dev, f, cb, &mut s, c);
                        }
                    }
                    None => dev.log().log_once(
                        LogLevel::Error,
                        id::FDM_SECONDARY,
                        "",
                        "a secondary command buffer executed in a density-map pass was not recorded for one; it is skipped",
                    ),
                }
            }
        },
        next,
    )
}

// ---------------------------------------------------------------------------
// Queues

unsafe fn note_submitted(f: &Fdm, cbs: impl Iterator<Item = vk::CommandBuffer>) {
    for cb in cbs {
        let (layouts, writes) = {
            let shared = cb_state(f, cb);
            let s = shared.lock();
            (s.layouts.clone(), s.map_writes.clone())
        };
        if !layouts.is_empty() {
            let mut m = f.map_layouts.lock();
            for (i, l) in layouts {
                m.insert(i, l);
            }
        }
        if !writes.is_empty() {
            let mut g = f.map_generation.lock();
            for i in writes {
                *g.entry(i).or_default() += 1;
            }
        }
    }
}

/// Transfer commands that write an image: a density map written by one is
/// read again at the next pass that uses it.
macro_rules! transfer_write_hooks {
    ($( $name:literal $pfn:ident fn $hook:ident(cb $(, $a:ident: $t:ty)*) => $dst:expr, $ver:ident.$field:ident; )*) => {
        $(
            pub unsafe extern "system" fn $hook(cb: vk::CommandBuffer $(, $a: $t)*) {
                let next = move || (fdm(state::device(cb)).below.$ver().$field)(cb $(, $a)*);
                guard::entry(
                    $name,
                    || {
                        let f = fdm(state::device(cb));
                        let dst: vk::Image = $dst;
                        if f.images.lock().get(&dst).is_some_and(|i| i.density_map) {
                            cb_state(f, cb).lock().map_writes.push(dst);
                        }
                        next()
                    },
                    next,
                )
            }
            const _: vk::$pfn = $hook;
        )*

        fn transfer_write_hook(name: &[u8]) -> vk::PFN_vkVoidFunction {
            use crate::ffi::pfn;
            match name {
                $( n if n == $name.as_bytes() => pfn!($hook as vk::$pfn), )*
                _ => None,
            }
        }
    };
}

transfer_write_hooks! {
    "vkCmdCopyBufferToImage" PFN_vkCmdCopyBufferToImage fn cmd_copy_buffer_to_image(cb, src: vk::Buffer, dst: vk::Image,
        layout: vk::ImageLayout, n: u32, r: *const vk::BufferImageCopy) => dst, fp_v1_0.cmd_copy_buffer_to_image;
    "vkCmdCopyImage" PFN_vkCmdCopyImage fn cmd_copy_image(cb, src: vk::Image, sl: vk::ImageLayout, dst: vk::Image,
        dl: vk::ImageLayout, n: u32, r: *const vk::ImageCopy) => dst, fp_v1_0.cmd_copy_image;
    "vkCmdBlitImage" PFN_vkCmdBlitImage fn cmd_blit_image(cb, src: vk::Image, sl: vk::ImageLayout, dst: vk::Image,
        dl: vk::ImageLayout, n: u32, r: *const vk::ImageBlit, filter: vk::Filter) => dst, fp_v1_0.cmd_blit_image;
    "vkCmdResolveImage" PFN_vkCmdResolveImage fn cmd_resolve_image(cb, src: vk::Image, sl: vk::ImageLayout, dst: vk::Image,
        dl: vk::ImageLayout, n: u32, r: *const vk::ImageResolve) => dst, fp_v1_0.cmd_resolve_image;
    "vkCmdClearColorImage" PFN_vkCmdClearColorImage fn cmd_clear_color_image(cb, image: vk::Image, l: vk::ImageLayout,
        c: *const vk::ClearColorValue, n: u32, r: *const vk::ImageSubresourceRange) => image, fp_v1_0.cmd_clear_color_image;
    "vkCmdCopyBufferToImage2" PFN_vkCmdCopyBufferToImage2 fn cmd_copy_buffer_to_image2(cb, i: *const vk::CopyBufferToImageInfo2)
        => (*i).dst_image, fp_v1_3.cmd_copy_buffer_to_image2;
    "vkCmdCopyImage2" PFN_vkCmdCopyImage2 fn cmd_copy_image2(cb, i: *const vk::CopyImageInfo2)
        => (*i).dst_image, fp_v1_3.cmd_copy_image2;
    "vkCmdBlitImage2" PFN_vkCmdBlitImage2 fn cmd_blit_image2(cb, i: *const vk::BlitImageInfo2)
        => (*i).dst_image, fp_v1_3.cmd_blit_image2;
    "vkCmdResolveImage2" PFN_vkCmdResolveImage2 fn cmd_resolve_image2(cb, i: *const vk::ResolveImageInfo2)
        => (*i).dst_image, fp_v1_3.cmd_resolve_image2;
}

pub unsafe extern "system" fn queue_submit(
    q: vk::Queue,
    n: u32,
    s: *const vk::SubmitInfo<'_>,
    fence: vk::Fence,
) -> vk::Result {
    let next = move || (fdm(state::device(q)).below.fp_v1_0().queue_submit)(q, n, s, fence);
    guard::entry(
        "vkQueueSubmit",
        || {
            let f = fdm(state::device(q));
            let _g = f.queue_lock.lock();
            note_submitted(
                f,
                slice(s, n).iter().flat_map(|x| slice(x.p_command_buffers, x.command_buffer_count)).copied(),
            );
            next()
        },
        next,
    )
}

pub unsafe extern "system" fn queue_submit2(
    q: vk::Queue,
    n: u32,
    s: *const vk::SubmitInfo2<'_>,
    fence: vk::Fence,
) -> vk::Result {
    let next = move || (fdm(state::device(q)).below.fp_v1_3().queue_submit2)(q, n, s, fence);
    guard::entry(
        "vkQueueSubmit2",
        || {
            let f = fdm(state::device(q));
            let _g = f.queue_lock.lock();
            note_submitted(
                f,
                slice(s, n)
                    .iter()
                    .flat_map(|x| slice(x.p_command_buffer_infos, x.command_buffer_info_count))
                    .map(|c| c.command_buffer),
            );
            next()
        },
        next,
    )
}

pub unsafe extern "system" fn queue_wait_idle(q: vk::Queue) -> vk::Result {
    let next = move || (fdm(state::device(q)).below.fp_v1_0().queue_wait_idle)(q);
    guard::entry(
        "vkQueueWaitIdle",
        || {
            let _g = fdm(state::device(q)).queue_lock.lock();
            next()
        },
        next,
    )
}

// ---------------------------------------------------------------------------
// Replay

/// One attachment of a pass, as the replay handles it.
#[derive(Clone, Debug)]
struct Att {
    view: vk::ImageView,
    image: vk::Image,
    range: vk::ImageSubresourceRange,
    format: vk::Format,
    samples: vk::SampleCountFlags,
    usage: vk::ImageUsageFlags,
    view_type: vk::ImageViewType,
    load: bool,
    store: bool,
    initial: vk::ImageLayout,
    final_: vk::ImageLayout,
}

fn aspect_of(format: vk::Format) -> vk::ImageAspectFlags {
    use vk::Format as F;
    match format {
        F::D16_UNORM | F::X8_D24_UNORM_PACK32 | F::D32_SFLOAT => vk::ImageAspectFlags::DEPTH,
        F::S8_UINT => vk::ImageAspectFlags::STENCIL,
        F::D16_UNORM_S8_UINT | F::D24_UNORM_S8_UINT | F::D32_SFLOAT_S8_UINT => {
            vk::ImageAspectFlags::DEPTH | vk::ImageAspectFlags::STENCIL
        }
        _ => vk::ImageAspectFlags::COLOR,
    }
}

fn att_of(f: &Fdm, view: vk::ImageView) -> Option<Att> {
    let v = *f.views.lock().get(&view)?;
    let i = *f.images.lock().get(&v.image)?;
    let mut range = v.range;
    range.aspect_mask = aspect_of(v.format);
    Some(Att {
        view,
        image: v.image,
        range,
        format: v.format,
        samples: i.samples,
        usage: i.usage,
        view_type: v.view_type,
        load: false,
        store: false,
        initial: vk::ImageLayout::UNDEFINED,
        final_: vk::ImageLayout::UNDEFINED,
    })
}

/// The pass's attachments (`None` for those the layer leaves alone: unused
/// ones and the density map) and the map's view and layout.
fn attachments(
    f: &Fdm,
    begin: &Begin,
) -> Result<(Vec<Option<Att>>, vk::ImageView, vk::ImageLayout, (u32, u32), u32, u32), String> {
    match begin {
        Begin::RenderPass { pass, fb, views, .. } => {
            let views = if fb.imageless { views.clone() } else { fb.views.clone() };
            let map_index = pass.density_map.unwrap() as usize;
            let map = *views.get(map_index).ok_or("the framebuffer lacks the density map")?;
            let mut out = Vec::new();
            for (i, d) in pass.attachments.iter().enumerate() {
                if i == map_index || !pass.used[i] {
                    out.push(None);
                    continue;
                }
                let mut a = att_of(f, views[i]).ok_or("an attachment view the layer has not seen")?;
                let depth_stencil = a.range.aspect_mask != vk::ImageAspectFlags::COLOR;
                a.load = d.load_op == vk::AttachmentLoadOp::LOAD
                    || (depth_stencil && d.stencil_load_op == vk::AttachmentLoadOp::LOAD);
                a.store = d.store_op == vk::AttachmentStoreOp::STORE
                    || (depth_stencil && d.stencil_store_op == vk::AttachmentStoreOp::STORE);
                a.initial = d.initial_layout;
                a.final_ = d.final_layout;
                out.push(Some(a));
            }
            let layout = pass.attachments[map_index].initial_layout;
            let views_mask = pass.view_mask;
            Ok((out, map, layout, fb.extent, fb.layers, views_mask))
        }
        Begin::Rendering { colors, depth, stencil, map, map_layout, area, layers, view_mask, .. } => {
            let mut out = Vec::new();
            let mut seen = Vec::new();
            let mut add = |a: &vk::RenderingAttachmentInfo, out: &mut Vec<Option<Att>>| -> Result<(), String> {
                if a.image_view == vk::ImageView::null() || seen.contains(&a.image_view) {
                    return Ok(());
                }
                seen.push(a.image_view);
                let mut x = att_of(f, a.image_view).ok_or("an attachment view the layer has not seen")?;
                x.load = a.load_op == vk::AttachmentLoadOp::LOAD;
                x.store = a.store_op == vk::AttachmentStoreOp::STORE;
                x.initial = a.image_layout;
                x.final_ = a.image_layout;
                out.push(Some(x));
                if a.resolve_mode != vk::ResolveModeFlags::NONE && a.resolve_image_view != vk::ImageView::null() {
                    let mut r = att_of(f, a.resolve_image_view).ok_or("a resolve view the layer has not seen")?;
                    r.store = true;
                    r.initial = a.resolve_image_layout;
                    r.final_ = a.resolve_image_layout;
                    out.push(Some(r));
                }
                Ok(())
            };
            for c in colors {
                add(c, &mut out)?;
            }
            if let Some(d) = depth {
                add(d, &mut out)?;
            }
            if let Some(s) = stencil {
                add(s, &mut out)?;
            }
            // The framebuffer of dynamic rendering: the render area's extent.
            let extent = (area.offset.x as u32 + area.extent.width, area.offset.y as u32 + area.extent.height);
            Ok((out, *map, *map_layout, extent, *layers, *view_mask))
        }
    }
}

fn memory_type(f: &Fdm, bits: u32, want: vk::MemoryPropertyFlags) -> Option<u32> {
    crate::ffi::memory_type(&f.memory, bits, want)
}

/// The host side of reading density maps.
pub struct MapReader {
    queue: vk::Queue,
    pool: vk::CommandPool,
    cb: vk::CommandBuffer,
    fence: vk::Fence,
    buffer: vk::Buffer,
    memory: vk::DeviceMemory,
    size: u64,
    ptr: *mut u8,
}

// SAFETY: used only under the device's reader lock.
unsafe impl Send for MapReader {}

impl MapReader {
    /// The reader's objects; on a failure, those already made are destroyed
    /// (null handles are ignored by the destroy commands).
    unsafe fn new(dev: &DeviceData, f: &Fdm, device: vk::Device, size: u64) -> Result<MapReader, vk::Result> {
        let d = &f.below;
        let fail = |command| crate::guard::injected_failure(&dev.settings().debug_fail, command);
        let queue = d.get_device_queue(f.queue_family, 0);
        let mut r = MapReader {
            queue,
            pool: vk::CommandPool::null(),
            cb: vk::CommandBuffer::null(),
            fence: vk::Fence::null(),
            buffer: vk::Buffer::null(),
            memory: vk::DeviceMemory::null(),
            size,
            ptr: std::ptr::null_mut(),
        };
        let made = (|| {
            fail("vkCreateCommandPool")?;
            r.pool = d.create_command_pool(
                &vk::CommandPoolCreateInfo::default()
                    .queue_family_index(f.queue_family)
                    .flags(vk::CommandPoolCreateFlags::RESET_COMMAND_BUFFER),
                None,
            )?;
            r.cb = d.allocate_command_buffers(
                &vk::CommandBufferAllocateInfo::default().command_pool(r.pool).command_buffer_count(1),
            )?[0];
            if let Some(set_data) = f.set_loader_data {
                let _ = set_data(device, vk::Handle::as_raw(queue) as *mut _);
                let _ = set_data(device, vk::Handle::as_raw(r.cb) as *mut _);
            }
            r.fence = d.create_fence(&vk::FenceCreateInfo::default(), None)?;
            fail("vkCreateBuffer")?;
            r.buffer = d.create_buffer(
                &vk::BufferCreateInfo::default().size(size).usage(vk::BufferUsageFlags::TRANSFER_DST),
                None,
            )?;
            let req = d.get_buffer_memory_requirements(r.buffer);
            let ty = memory_type(
                f,
                req.memory_type_bits,
                vk::MemoryPropertyFlags::HOST_VISIBLE | vk::MemoryPropertyFlags::HOST_COHERENT,
            )
            .ok_or(vk::Result::ERROR_OUT_OF_HOST_MEMORY)?;
            fail("vkAllocateMemory")?;
            r.memory = d.allocate_memory(
                &vk::MemoryAllocateInfo::default().allocation_size(req.size).memory_type_index(ty),
                None,
            )?;
            d.bind_buffer_memory(r.buffer, r.memory, 0)?;
            r.ptr = d.map_memory(r.memory, 0, vk::WHOLE_SIZE, vk::MemoryMapFlags::empty())? as *mut u8;
            Ok(())
        })();
        match made {
            Ok(()) => Ok(r),
            Err(e) => {
                r.destroy(d);
                Err(e)
            }
        }
    }

    pub unsafe fn destroy(self, d: &ash::Device) {
        d.destroy_buffer(self.buffer, None);
        d.free_memory(self.memory, None);
        d.destroy_fence(self.fence, None);
        d.destroy_command_pool(self.pool, None);
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
    texel: (u32, u32),
    layers: Vec<u32>,
    vertex_cost: f64,
}

impl PlanCache {
    const ENTRIES: usize = 8;

    /// The plan for `map` and `(render area, texel size, map layers, vertex
    /// cost)`, made by `plan` unless a recent pass had the same.
    pub fn get_or_plan(
        &self,
        map: &Arc<MapTexels>,
        (render_area, texel, layers, vertex_cost): (Rect, (u32, u32), &[u32], f64),
        plan: impl FnOnce() -> Vec<bins::Replay>,
    ) -> Vec<bins::Replay> {
        let same = |k: &PlanKey| {
            k.render_area == render_area
                && k.texel == texel
                && k.layers == layers
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
        let key = PlanKey { map: map.clone(), render_area, texel, layers: layers.to_vec(), vertex_cost };
        let mut plans = self.0.lock();
        plans.insert(0, (key, replays.clone()));
        plans.truncate(Self::ENTRIES);
        replays
    }
}

/// A density map as read on the host.
pub struct MapTexels {
    pub width: u32,
    pub height: u32,
    pub layers: u32,
    pub texels: Vec<[u8; 2]>,
}

/// The density map behind `view`, read on the host, or the last read of it
/// when no submission since could have written it: images the layer can
/// see every write to (usage only transfer, sampling and the map) are
/// re-read after a transfer or layout transition of theirs was submitted;
/// others are read every time.
unsafe fn density_map(
    dev: &DeviceData,
    f: &Fdm,
    view: vk::ImageView,
    expected: vk::ImageLayout,
) -> Result<Arc<MapTexels>, String> {
    let v = *f.views.lock().get(&view).ok_or("the density map view is unknown")?;
    let img = *f.images.lock().get(&v.image).ok_or("the density map image is unknown")?;
    let watched = vk::ImageUsageFlags::TRANSFER_SRC
        | vk::ImageUsageFlags::TRANSFER_DST
        | vk::ImageUsageFlags::SAMPLED
        | vk::ImageUsageFlags::FRAGMENT_DENSITY_MAP_EXT;
    let cacheable = watched.contains(img.usage);
    let generation = f.map_generation.lock().get(&v.image).copied().unwrap_or(0);
    if cacheable {
        if let Some((g, m)) = f.map_cache.lock().get(&view) {
            if *g == generation {
                return Ok(m.clone());
            }
        }
    }
    let (width, height, layers, texels) = read_map(dev, f, view, expected)?;
    let m = Arc::new(MapTexels { width, height, layers, texels });
    if cacheable {
        f.map_cache.lock().insert(view, (generation, m.clone()));
    }
    Ok(m)
}

/// Reads a density map (R8G8_UNORM) on the host: `(width, height, layers, texels)`.
unsafe fn read_map(
    dev: &DeviceData,
    f: &Fdm,
    view: vk::ImageView,
    expected: vk::ImageLayout,
) -> Result<(u32, u32, u32, Vec<[u8; 2]>), String> {
    let v = *f.views.lock().get(&view).ok_or("the density map view is unknown")?;
    let img = *f.images.lock().get(&v.image).ok_or("the density map image is unknown")?;
    if v.format != vk::Format::R8G8_UNORM {
        return Err(format!("the density map's format is {:?}, not R8G8_UNORM", v.format));
    }
    let mip = v.range.base_mip_level;
    let (w, h) = ((img.extent.width >> mip).max(1), (img.extent.height >> mip).max(1));
    let layers = v.range.layer_count.max(1);
    let size = (w * h * layers * 2) as u64;
    let layout = f.map_layouts.lock().get(&v.image).copied().unwrap_or(expected);
    let d = &f.below;
    let mut reader = f.reader.lock();
    if reader.as_ref().is_some_and(|r| r.size < size) {
        reader.take().unwrap().destroy(d);
    }
    if reader.is_none() {
        *reader = Some(
            MapReader::new(dev, f, dev.handle, size.max(64 * 1024))
                .map_err(|e| format!("cannot set up map reads: {e:?}"))?,
        );
    }
    let r = reader.as_ref().unwrap();
    let range = vk::ImageSubresourceRange { aspect_mask: vk::ImageAspectFlags::COLOR, level_count: 1, ..v.range };
    let e = |x: vk::Result| format!("map read failed: {x:?}");
    d.begin_command_buffer(
        r.cb,
        &vk::CommandBufferBeginInfo::default().flags(vk::CommandBufferUsageFlags::ONE_TIME_SUBMIT),
    )
    .map_err(e)?;
    let direct = layout == vk::ImageLayout::GENERAL || layout == vk::ImageLayout::TRANSFER_SRC_OPTIMAL;
    let src_layout = if direct { layout } else { vk::ImageLayout::TRANSFER_SRC_OPTIMAL };
    let barrier = |old, new| {
        [vk::ImageMemoryBarrier::default()
            .old_layout(old)
            .new_layout(new)
            .src_access_mask(vk::AccessFlags::MEMORY_WRITE)
            .dst_access_mask(vk::AccessFlags::MEMORY_READ | vk::AccessFlags::MEMORY_WRITE)
            .src_queue_family_index(vk::QUEUE_FAMILY_IGNORED)
            .dst_queue_family_index(vk::QUEUE_FAMILY_IGNORED)
            .image(v.image)
            .subresource_range(range)]
    };
    let all = vk::PipelineStageFlags::ALL_COMMANDS;
    d.cmd_pipeline_barrier(r.cb, all, all, vk::DependencyFlags::empty(), &[], &[], &barrier(layout, src_layout));
    let region = vk::BufferImageCopy::default()
        .image_subresource(vk::ImageSubresourceLayers {
            aspect_mask: vk::ImageAspectFlags::COLOR,
            mip_level: mip,
            base_array_layer: v.range.base_array_layer,
            layer_count: layers,
        })
        .image_extent(vk::Extent3D { width: w, height: h, depth: 1 });
    d.cmd_copy_image_to_buffer(r.cb, v.image, src_layout, r.buffer, &[region]);
    d.cmd_pipeline_barrier(
        r.cb,
        all,
        all | vk::PipelineStageFlags::HOST,
        vk::DependencyFlags::empty(),
        &[vk::MemoryBarrier::default()
            .src_access_mask(vk::AccessFlags::TRANSFER_WRITE)
            .dst_access_mask(vk::AccessFlags::HOST_READ)],
        &[],
        &barrier(src_layout, layout),
    );
    d.end_command_buffer(r.cb).map_err(e)?;
    {
        let _g = f.queue_lock.lock();
        let cbs = [r.cb];
        d.queue_submit(r.queue, &[vk::SubmitInfo::default().command_buffers(&cbs)], r.fence).map_err(e)?;
    }
    d.wait_for_fences(&[r.fence], true, u64::MAX).map_err(e)?;
    d.reset_fences(&[r.fence]).map_err(e)?;
    let bytes = std::slice::from_raw_parts(r.ptr, size as usize);
    let pick = |s: vk::ComponentSwizzle, own: usize, t: &[u8]| -> u8 {
        match s {
            vk::ComponentSwizzle::IDENTITY => t[own],
            vk::ComponentSwizzle::R => t[0],
            vk::ComponentSwizzle::G => t[1],
            vk::ComponentSwizzle::ONE | vk::ComponentSwizzle::A => 255,
            _ => 0,
        }
    };
    let texels = bytes.chunks_exact(2).map(|t| [pick(v.components.r, 0, t), pick(v.components.g, 1, t)]).collect();
    Ok((w, h, layers, texels))
}

/// Scratch targets, per (attachment views, area).
#[derive(Default)]
pub struct ScratchCache {
    sets: HashMap<(Vec<vk::ImageView>, (u32, u32)), ScratchSet>,
}

struct ScratchSet {
    images: Vec<Option<(vk::Image, vk::DeviceMemory, vk::ImageView)>>,
    framebuffer: vk::Framebuffer,
}

impl ScratchCache {
    pub unsafe fn destroy_all(&mut self, d: &ash::Device) {
        for (_, s) in self.sets.drain() {
            destroy_set(d, s);
        }
    }

    pub unsafe fn forget_view(&mut self, d: &ash::Device, view: vk::ImageView) {
        let keys: Vec<_> = self.sets.keys().filter(|k| k.0.contains(&view)).cloned().collect();
        for k in keys {
            if let Some(s) = self.sets.remove(&k) {
                destroy_set(d, s);
            }
        }
    }
}

unsafe fn destroy_set(d: &ash::Device, s: ScratchSet) {
    if s.framebuffer != vk::Framebuffer::null() {
        d.destroy_framebuffer(s.framebuffer, None);
    }
    for (i, m, v) in s.images.into_iter().flatten() {
        d.destroy_image_view(v, None);
        d.destroy_image(i, None);
        d.free_memory(m, None);
    }
}

fn scaled(n: u32, a: u32) -> u32 {
    n.div_ceil(a).max(1)
}

/// The scratch views for `atts` at `area` (created on first use).
unsafe fn scratch_views(
    dev: &DeviceData,
    f: &Fdm,
    begin: &Begin,
    atts: &[Option<Att>],
    area: (u32, u32),
    extent: (u32, u32),
    layers: u32,
) -> Result<(Vec<Option<vk::ImageView>>, vk::Framebuffer), vk::Result> {
    let key_views: Vec<vk::ImageView> = atts.iter().flatten().map(|a| a.view).collect();
    let key = (key_views, area);
    let mut cache = f.scratch.lock();
    if let Some(s) = cache.sets.get(&key) {
        return Ok((s.images.iter().map(|x| x.map(|x| x.2)).collect(), s.framebuffer));
    }
    let d = &f.below;
    let (w, h) = (scaled(extent.0, area.0), scaled(extent.1, area.1));
    // One attachment's scratch image, memory and view; nothing is left
    // behind when a step fails (handles not made yet are null, which
    // vkDestroy*/vkFreeMemory ignore).
    let make = |a: &Att| -> Result<(vk::Image, vk::DeviceMemory, vk::ImageView), vk::Result> {
        let mut made = (vk::Image::null(), vk::DeviceMemory::null(), vk::ImageView::null());
        let r = (|| {
            crate::guard::injected_failure(&dev.settings().debug_fail, "vkCreateImage")?;
            made.0 = d.create_image(
                &vk::ImageCreateInfo::default()
                    .image_type(vk::ImageType::TYPE_2D)
                    .format(a.format)
                    .extent(vk::Extent3D { width: w, height: h, depth: 1 })
                    .mip_levels(1)
                    .array_layers(a.range.layer_count)
                    .samples(a.samples)
                    .usage(
                        (a.usage & !vk::ImageUsageFlags::FRAGMENT_DENSITY_MAP_EXT)
                            | vk::ImageUsageFlags::TRANSFER_SRC
                            | vk::ImageUsageFlags::TRANSFER_DST,
                    ),
                None,
            )?;
            let req = d.get_image_memory_requirements(made.0);
            let ty = memory_type(f, req.memory_type_bits, vk::MemoryPropertyFlags::DEVICE_LOCAL)
                .ok_or(vk::Result::ERROR_OUT_OF_DEVICE_MEMORY)?;
            crate::guard::injected_failure(&dev.settings().debug_fail, "vkAllocateMemory")?;
            made.1 = d.allocate_memory(
                &vk::MemoryAllocateInfo::default().allocation_size(req.size).memory_type_index(ty),
                None,
            )?;
            d.bind_image_memory(made.0, made.1, 0)?;
            let range = vk::ImageSubresourceRange { base_mip_level: 0, base_array_layer: 0, ..a.range };
            made.2 = d.create_image_view(
                &vk::ImageViewCreateInfo::default()
                    .image(made.0)
                    .view_type(a.view_type)
                    .format(a.format)
                    .subresource_range(range),
                None,
            )?;
            Ok(())
        })();
        match r {
            Ok(()) => Ok(made),
            Err(e) => {
                destroy_set(d, ScratchSet { images: vec![Some(made)], framebuffer: vk::Framebuffer::null() });
                Err(e)
            }
        }
    };
    let mut images = Vec::new();
    for a in atts {
        match a.as_ref().map(make).transpose() {
            Ok(x) => images.push(x),
            Err(e) => {
                destroy_set(d, ScratchSet { images, framebuffer: vk::Framebuffer::null() });
                return Err(e);
            }
        }
    }
    let mut framebuffer = vk::Framebuffer::null();
    if let Begin::RenderPass { render_pass, fb, views, .. } = begin {
        let real = if fb.imageless { views.clone() } else { fb.views.clone() };
        let all: Vec<vk::ImageView> = images.iter().zip(&real).map(|(s, r)| s.map(|s| s.2).unwrap_or(*r)).collect();
        let made = d.create_framebuffer(
            &vk::FramebufferCreateInfo::default()
                .render_pass(*render_pass)
                .attachments(&all)
                .width(w)
                .height(h)
                .layers(layers),
            None,
        );
        match made {
            Ok(fb) => framebuffer = fb,
            Err(e) => {
                destroy_set(d, ScratchSet { images, framebuffer: vk::Framebuffer::null() });
                return Err(e);
            }
        }
    }
    let out = (images.iter().map(|x| x.map(|x| x.2)).collect(), framebuffer);
    cache.sets.insert(key, ScratchSet { images, framebuffer });
    Ok(out)
}

/// Pairs of (framebuffer-space, scratch-space) rectangles covering `r`
/// exactly at an integer scale (a partial last column/row maps one scratch
/// texel onto what is left).
fn scaled_regions(r: Rect, area: (u32, u32)) -> Vec<(Rect, Rect)> {
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

fn offsets(r: Rect) -> [vk::Offset3D; 2] {
    [
        vk::Offset3D { x: r.x as i32, y: r.y as i32, z: 0 },
        vk::Offset3D { x: (r.x + r.w) as i32, y: (r.y + r.h) as i32, z: 1 },
    ]
}

struct Transition {
    image: vk::Image,
    range: vk::ImageSubresourceRange,
    old: vk::ImageLayout,
    new: vk::ImageLayout,
}

unsafe fn barrier(f: &Fdm, cb: vk::CommandBuffer, t: &[Transition]) {
    let all = vk::PipelineStageFlags::ALL_COMMANDS;
    let rw = vk::AccessFlags::MEMORY_READ | vk::AccessFlags::MEMORY_WRITE;
    let imgs: Vec<vk::ImageMemoryBarrier> = t
        .iter()
        .map(|t| {
            vk::ImageMemoryBarrier::default()
                .old_layout(t.old)
                .new_layout(t.new)
                .src_access_mask(vk::AccessFlags::MEMORY_WRITE)
                .dst_access_mask(rw)
                .src_queue_family_index(vk::QUEUE_FAMILY_IGNORED)
                .dst_queue_family_index(vk::QUEUE_FAMILY_IGNORED)
                .image(t.image)
                .subresource_range(t.range)
        })
        .collect();
    let mem = [vk::MemoryBarrier::default().src_access_mask(vk::AccessFlags::MEMORY_WRITE).dst_access_mask(rw)];
    f.below.cmd_pipeline_barrier(cb, all, all, vk::DependencyFlags::empty(), &mem, &[], &imgs);
}

unsafe fn blit(
    f: &Fdm,
    cb: vk::CommandBuffer,
    src: (vk::Image, &Att),
    dst: (vk::Image, &Att),
    pairs: &[(Rect, Rect)],
    up: bool,
    scratch_layers: bool,
) {
    let (sa, da) = (src.1, dst.1);
    let layers = |a: &Att, scratch: bool| vk::ImageSubresourceLayers {
        aspect_mask: a.range.aspect_mask,
        mip_level: if scratch { 0 } else { a.range.base_mip_level },
        base_array_layer: if scratch { 0 } else { a.range.base_array_layer },
        layer_count: a.range.layer_count,
    };
    let regions: Vec<vk::ImageBlit> = pairs
        .iter()
        .map(|(fb, sc)| {
            let (s, d) = if up { (*sc, *fb) } else { (*fb, *sc) };
            vk::ImageBlit {
                src_subresource: layers(sa, up && scratch_layers),
                src_offsets: offsets(s),
                dst_subresource: layers(da, !up && scratch_layers),
                dst_offsets: offsets(d),
            }
        })
        .collect();
    if regions.is_empty() {
        return;
    }
    f.below.cmd_blit_image(
        cb,
        src.0,
        vk::ImageLayout::TRANSFER_SRC_OPTIMAL,
        dst.0,
        vk::ImageLayout::TRANSFER_DST_OPTIMAL,
        &regions,
        vk::Filter::NEAREST,
    );
}

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
unsafe fn replay(dev: &DeviceData, f: &Fdm, cb: vk::CommandBuffer, pass: &mut Pass) -> Result<(), String> {
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

/// The recording hooks (`baseline` needs only the translating ones; `None`:
/// any, for `vkGetInstanceProcAddr`).
pub fn hook(mode: Option<Mode>, name: &[u8]) -> vk::PFN_vkVoidFunction {
    use crate::ffi::pfn;
    if mode == Some(Mode::Baseline) {
        return match name {
            b"vkCmdPipelineBarrier" => pfn!(cmd_pipeline_barrier as vk::PFN_vkCmdPipelineBarrier),
            b"vkCmdPipelineBarrier2" | b"vkCmdPipelineBarrier2KHR" => {
                pfn!(cmd_pipeline_barrier2 as vk::PFN_vkCmdPipelineBarrier2)
            }
            b"vkCmdWaitEvents" => pfn!(cmd_wait_events as vk::PFN_vkCmdWaitEvents),
            b"vkCmdBeginRendering" | b"vkCmdBeginRenderingKHR" => {
                pfn!(cmd_begin_rendering as vk::PFN_vkCmdBeginRendering)
            }
            _ => None,
        };
    }
    match name {
        b"vkAllocateCommandBuffers" => pfn!(allocate_command_buffers as vk::PFN_vkAllocateCommandBuffers),
        b"vkFreeCommandBuffers" => pfn!(free_command_buffers as vk::PFN_vkFreeCommandBuffers),
        b"vkBeginCommandBuffer" => pfn!(begin_command_buffer as vk::PFN_vkBeginCommandBuffer),
        b"vkCmdPipelineBarrier" => pfn!(cmd_pipeline_barrier as vk::PFN_vkCmdPipelineBarrier),
        b"vkCmdPipelineBarrier2" | b"vkCmdPipelineBarrier2KHR" => {
            pfn!(cmd_pipeline_barrier2 as vk::PFN_vkCmdPipelineBarrier2)
        }
        b"vkCmdWaitEvents" => pfn!(cmd_wait_events as vk::PFN_vkCmdWaitEvents),
        b"vkCmdBeginQuery" => pfn!(cmd_begin_query as vk::PFN_vkCmdBeginQuery),
        b"vkCmdEndQuery" => pfn!(cmd_end_query as vk::PFN_vkCmdEndQuery),
        b"vkCmdWriteTimestamp" => pfn!(cmd_write_timestamp as vk::PFN_vkCmdWriteTimestamp),
        b"vkCmdBeginRenderPass" => pfn!(cmd_begin_render_pass as vk::PFN_vkCmdBeginRenderPass),
        b"vkCmdBeginRenderPass2" | b"vkCmdBeginRenderPass2KHR" => {
            pfn!(cmd_begin_render_pass2 as vk::PFN_vkCmdBeginRenderPass2)
        }
        b"vkCmdNextSubpass" => pfn!(cmd_next_subpass as vk::PFN_vkCmdNextSubpass),
        b"vkCmdNextSubpass2" | b"vkCmdNextSubpass2KHR" => pfn!(cmd_next_subpass2 as vk::PFN_vkCmdNextSubpass2),
        b"vkCmdEndRenderPass" => pfn!(cmd_end_render_pass as vk::PFN_vkCmdEndRenderPass),
        b"vkCmdEndRenderPass2" | b"vkCmdEndRenderPass2KHR" => pfn!(cmd_end_render_pass2 as vk::PFN_vkCmdEndRenderPass2),
        b"vkCmdBeginRendering" | b"vkCmdBeginRenderingKHR" => pfn!(cmd_begin_rendering as vk::PFN_vkCmdBeginRendering),
        b"vkCmdEndRendering" | b"vkCmdEndRenderingKHR" => pfn!(cmd_end_rendering as vk::PFN_vkCmdEndRendering),
        b"vkCmdExecuteCommands" => pfn!(cmd_execute_commands as vk::PFN_vkCmdExecuteCommands),
        b"vkQueueSubmit" => pfn!(queue_submit as vk::PFN_vkQueueSubmit),
        b"vkQueueSubmit2" | b"vkQueueSubmit2KHR" => pfn!(queue_submit2 as vk::PFN_vkQueueSubmit2),
        b"vkQueueWaitIdle" => pfn!(queue_wait_idle as vk::PFN_vkQueueWaitIdle),
        b"vkCmdCopyBufferToImage2KHR" => transfer_write_hook(b"vkCmdCopyBufferToImage2"),
        b"vkCmdCopyImage2KHR" => transfer_write_hook(b"vkCmdCopyImage2"),
        b"vkCmdBlitImage2KHR" => transfer_write_hook(b"vkCmdBlitImage2"),
        b"vkCmdResolveImage2KHR" => transfer_write_hook(b"vkCmdResolveImage2"),
        b"vkCreateDescriptorSetLayout" => {
            pfn!(create_descriptor_set_layout as vk::PFN_vkCreateDescriptorSetLayout)
        }
        b"vkAllocateDescriptorSets" => pfn!(allocate_descriptor_sets as vk::PFN_vkAllocateDescriptorSets),
        b"vkUpdateDescriptorSets" => pfn!(update_descriptor_sets as vk::PFN_vkUpdateDescriptorSets),
        b"vkUpdateDescriptorSetWithTemplate" | b"vkUpdateDescriptorSetWithTemplateKHR" => {
            pfn!(update_descriptor_set_with_template as vk::PFN_vkUpdateDescriptorSetWithTemplate)
        }
        b"vkCmdBeginTransformFeedbackEXT" => {
            pfn!(cmd_begin_transform_feedback as vk::PFN_vkCmdBeginTransformFeedbackEXT)
        }
        b"vkCmdSetViewportWithCountEXT" => capture_hook(b"vkCmdSetViewportWithCount"),
        b"vkCmdSetScissorWithCountEXT" => capture_hook(b"vkCmdSetScissorWithCount"),
        _ => capture_hook(name).or_else(|| transfer_write_hook(name)).or_else(|| state_hook(name)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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

    #[test]
    fn transform_scales_and_clips() {
        let t = Transform { area: (2, 4), clip: Some(Rect { x: 16, y: 16, w: 16, h: 16 }), inputs: None };
        let v =
            t.viewport(&vk::Viewport { x: 0.0, y: 8.0, width: 64.0, height: -32.0, min_depth: 0.0, max_depth: 1.0 });
        assert_eq!((v.x, v.y, v.width, v.height), (0.0, 2.0, 32.0, -8.0));
        let s = t
            .rect(&vk::Rect2D { offset: vk::Offset2D { x: 0, y: 0 }, extent: vk::Extent2D { width: 20, height: 100 } });
        assert_eq!((s.offset.x, s.offset.y, s.extent.width, s.extent.height), (8, 4, 2, 4));
        let none = t.rect(&vk::Rect2D {
            offset: vk::Offset2D { x: 40, y: 0 },
            extent: vk::Extent2D { width: 20, height: 100 },
        });
        assert_eq!(none.extent.width, 0);
    }
}

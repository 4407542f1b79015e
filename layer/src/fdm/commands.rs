//! The captured-command model: what a density-map pass records ([`Cmd`]),
//! the state in effect at its start ([`Snapshot`]), and a replay's
//! [`Transform`] (how `emit.rs` sends a command down again).
//!
//! **Why emitting is sound (the capture rule).** A command is emitted into
//! the command buffer the application recorded it in, while that command
//! buffer is still recording: at once, or at the end of its pass (the
//! application's `vkCmdEndRenderPass*`/`vkCmdEndRendering` is valid only in
//! the recording state: VUID-vkCmdEndRenderPass-commandBuffer-recording),
//! from the hook that holds it (its external synchronization). Destroying
//! an object a recording command buffer uses, or freeing or updating (without
//! update-after-bind) a descriptor set bound in it, makes it invalid, so
//! every handle a captured command names is still alive then. The arguments
//! were valid when the application recorded them and their arrays were
//! copied into the [`Cmd`]; a [`Transform`] changes only viewports and
//! scissors (scaled, clipped, never negative), pipelines (a per-area variant
//! made from the same create info) and descriptor sets (a shadow copy with
//! the same layout).

use super::bins::Rect;
use super::{Fdm, PipelineInfo};
use ash::vk;
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
    /// `vkCmdDrawMultiEXT`.
    DrawMulti {
        draws: Vec<vk::MultiDrawInfoEXT>,
        instances: u32,
        first_instance: u32,
    },
    /// `vkCmdDrawMultiIndexedEXT` (`vertex_offset`: its `pVertexOffset`).
    DrawMultiIndexed {
        draws: Vec<vk::MultiDrawIndexedInfoEXT>,
        instances: u32,
        first_instance: u32,
        vertex_offset: Option<i32>,
    },
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
    /// `vkCmdBindShadersEXT`.
    BindShaders(ShaderBinds),
}

/// The stages and shader objects of a `vkCmdBindShadersEXT`, kept without
/// allocating: each stage is named at most once
/// (VUID-vkCmdBindShadersEXT-pStages-08463), so eight cover every stage
/// but the rarest (a bind of more goes live: [`ShaderBinds::new`]).
#[derive(Clone, Copy, Debug)]
pub struct ShaderBinds {
    pub(super) n: usize,
    pub(super) stages: [vk::ShaderStageFlags; 8],
    pub(super) shaders: [vk::ShaderEXT; 8],
}

impl ShaderBinds {
    /// A copy of the call's arrays (`shaders` null: every stage unbound);
    /// `None` for more than eight stages.
    ///
    /// # Safety
    /// `stages` holds `n` stages and a non-null `shaders` `n` objects
    /// (VUID-vkCmdBindShadersEXT-pStages-parameter and -pShaders-parameter).
    pub unsafe fn new(n: u32, stages: *const vk::ShaderStageFlags, shaders: *const vk::ShaderEXT) -> Option<Self> {
        let n = n as usize;
        if n > 8 {
            return None;
        }
        let mut b = ShaderBinds { n, stages: Default::default(), shaders: Default::default() };
        // SAFETY: the caller's guarantee; `n <= 8`.
        let (st, sh) = unsafe { (crate::ffi::slice(stages, n as u32), crate::ffi::slice(shaders, n as u32)) };
        if st.len() != n {
            return None;
        }
        b.stages[..n].copy_from_slice(st);
        if sh.len() == n {
            b.shaders[..n].copy_from_slice(sh);
        }
        Some(b)
    }

    fn one(stage: vk::ShaderStageFlags, shader: vk::ShaderEXT) -> Self {
        let mut b = ShaderBinds { n: 1, stages: Default::default(), shaders: Default::default() };
        b.stages[0] = stage;
        b.shaders[0] = shader;
        b
    }

    /// Each stage with its object (null: unbound).
    pub fn iter(&self) -> impl Iterator<Item = (vk::ShaderStageFlags, vk::ShaderEXT)> + '_ {
        self.stages[..self.n].iter().copied().zip(self.shaders[..self.n].iter().copied())
    }
}

/// A captured dynamic-state call with its arguments. It is called only by
/// the emission (`emit.rs`), with the device and command buffer the call was captured for
/// (the capture rule above): its body calls the command down unchecked.
#[derive(Clone)]
pub struct StateCall(pub(super) Arc<dyn Fn(&ash::Device, vk::CommandBuffer) + Send + Sync>);

impl std::fmt::Debug for StateCall {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("StateCall")
    }
}

impl Cmd {
    /// Vertices this command processes, for the planner (indirect: a guess).
    pub(super) fn vertices(&self) -> f64 {
        match self {
            Cmd::Draw(v, i, ..) => *v as f64 * *i as f64,
            Cmd::DrawIndexed(v, i, ..) => *v as f64 * *i as f64,
            Cmd::DrawIndirect(_, _, n, _) | Cmd::DrawIndexedIndirect(_, _, n, _) => *n as f64 * 3000.0,
            Cmd::DrawIndirectCount(.., max, _) | Cmd::DrawIndexedIndirectCount(.., max, _) => {
                (*max).min(64) as f64 * 3000.0
            }
            Cmd::DrawMulti { draws, instances, .. } => {
                draws.iter().map(|d| d.vertex_count as f64).sum::<f64>() * *instances as f64
            }
            Cmd::DrawMultiIndexed { draws, instances, .. } => {
                draws.iter().map(|d| d.index_count as f64).sum::<f64>() * *instances as f64
            }
            _ => 0.0,
        }
    }

    /// A command that writes attachments (a draw or a clear): what the GPU
    /// plan issues once per region.
    pub(super) fn writes(&self) -> bool {
        matches!(
            self,
            Cmd::Draw(..)
                | Cmd::DrawIndexed(..)
                | Cmd::DrawIndirect(..)
                | Cmd::DrawIndexedIndirect(..)
                | Cmd::DrawIndirectCount(..)
                | Cmd::DrawIndexedIndirectCount(..)
                | Cmd::DrawMulti { .. }
                | Cmd::DrawMultiIndexed { .. }
                | Cmd::Clear { .. }
        )
    }
}

/// The state commands in effect, to restore before each replay.
#[derive(Clone, Debug, Default)]
pub struct Snapshot {
    /// Keyed so that a later command replaces an earlier one of the same kind.
    pub(super) cmds: BTreeMap<(u8, u32, u32), Cmd>,
    pub(super) viewports: Vec<Option<vk::Viewport>>,
    pub(super) scissors: Vec<Option<vk::Rect2D>>,
    /// Some graphics stage's shader object is among `cmds` (key 15).
    pub(super) shaders: bool,
    /// The compute pipeline and sets bound (keyed as `cmds`): not part of a
    /// replay, restored after the GPU plan's own dispatch (`emit.rs`).
    pub(super) compute: BTreeMap<(u8, u32, u32), Cmd>,
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
    /// The state commands in effect (bound pipelines and sets among them).
    pub(super) fn commands(&self) -> impl Iterator<Item = &Cmd> {
        self.cmds.values()
    }

    /// The state after `cmds`, recorded after this one (what the application
    /// has bound at the end of a captured pass).
    pub(super) fn after<'a>(&self, f: &Fdm, cmds: impl IntoIterator<Item = &'a Cmd>) -> Snapshot {
        let mut st = self.clone();
        for c in cmds {
            st.apply(c, pipeline_info(f, c).as_deref());
        }
        st
    }

    /// Records `cmd`; `pipeline` is what the layer knows of the pipeline a
    /// graphics `BindPipeline` binds ([`pipeline_info`]).
    pub(super) fn apply(&mut self, cmd: &Cmd, pipeline: Option<&PipelineInfo>) {
        let key = |k: u8, a: u32, b: u32| (k, a, b);
        match cmd {
            Cmd::BindPipeline(vk::PipelineBindPoint::GRAPHICS, _) => {
                // A graphics pipeline unbinds the graphics stages' shader objects.
                if std::mem::take(&mut self.shaders) {
                    self.cmds.retain(|k, _| k.0 != 15);
                }
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
            Cmd::BindPipeline(vk::PipelineBindPoint::COMPUTE, _) => {
                self.compute.insert(key(0, 0, 0), cmd.clone());
            }
            Cmd::BindSets { point: vk::PipelineBindPoint::COMPUTE, first, .. } => {
                // The latest bind from each first set, in set order.
                self.compute.insert(key(1, *first, 0), cmd.clone());
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
            // Per graphics stage (compute is not replayed with a pass); an
            // object bound to a graphics stage unbinds the graphics pipeline.
            Cmd::BindShaders(b) => {
                for (stage, shader) in b.iter().filter(|(s, _)| *s != vk::ShaderStageFlags::COMPUTE) {
                    self.cmds.insert(key(15, stage.as_raw(), 0), Cmd::BindShaders(ShaderBinds::one(stage, shader)));
                    self.cmds.remove(&key(0, 0, 0));
                    self.shaders = true;
                }
            }
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
    /// Per-view viewports (`per_view.rs`): per view index, where that
    /// view may write (`None`: nowhere); viewport `v` and scissor `v` are
    /// view `v`'s, and the pipelines bound are the per-view partners.
    pub views: Option<&'a [Option<Rect>]>,
    /// Where `views` are not a multiview pass's views but the rectangles
    /// the viewport-mask partners (`viewport_mask.rs`) send each primitive
    /// to: the pipelines bound are those partners, and a clear clears each
    /// rectangle.
    pub mask: MaskFrom,
}

/// Whether a replay binds the viewport-mask partners (`viewport_mask.rs`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MaskFrom {
    /// No: `views` (if any) are a multiview pass's views.
    None,
    /// The mask the layer's vertex binding holds: a run of a host plan's
    /// replays of one area, or a group of a GPU plan's regions.
    Binding,
}

/// Input attachments of a replay into scratch targets: real view → scratch
/// view, and the shadow descriptor sets made for it.
#[derive(Debug, Default)]
pub struct InputSubst {
    pub views: HashMap<vk::ImageView, vk::ImageView>,
    pub(super) shadows: std::cell::RefCell<HashMap<vk::DescriptorSet, vk::DescriptorSet>>,
    /// Pools of the shadow sets (freed with the command buffer's next reset).
    pub pools: std::cell::RefCell<Vec<vk::DescriptorPool>>,
}

impl Transform<'_> {
    pub const IDENTITY: Transform<'static> =
        Transform { area: (1, 1), clip: None, inputs: None, views: None, mask: MaskFrom::None };

    /// The viewports `v` (from `first`) under the transform: with per-view
    /// viewports, the first one's for every view.
    pub(super) fn viewports(&self, first: u32, v: &[vk::Viewport]) -> Vec<vk::Viewport> {
        match (self.views, v.first()) {
            (Some(views), Some(v0)) if first == 0 => vec![self.viewport(v0); views.len()],
            _ => v.iter().map(|v| self.viewport(v)).collect(),
        }
    }

    /// The scissors `s` (from `first`) under the transform: with per-view
    /// viewports, the first one's clipped to each view's rectangle (empty
    /// where the view writes nothing).
    pub(super) fn scissors(&self, first: u32, s: &[vk::Rect2D]) -> Vec<vk::Rect2D> {
        match (self.views, s.first()) {
            (Some(views), Some(s0)) if first == 0 => views
                .iter()
                .map(|c| match c {
                    Some(c) => Transform { clip: Some(*c), views: None, ..*self }.rect(s0),
                    None => vk::Rect2D::default(),
                })
                .collect(),
            _ => s.iter().map(|s| self.rect(s)).collect(),
        }
    }

    pub(super) fn viewport(&self, v: &vk::Viewport) -> vk::Viewport {
        let (ax, ay) = (self.area.0 as f32, self.area.1 as f32);
        vk::Viewport { x: v.x / ax, y: v.y / ay, width: v.width / ax, height: v.height / ay, ..*v }
    }

    /// A framebuffer-space rectangle, clipped and scaled (ends rounded up:
    /// a partly covered fragment is rendered).
    pub(super) fn rect(&self, r: &vk::Rect2D) -> vk::Rect2D {
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

    /// The rectangles of a `vkCmdClearAttachments`, transformed; those left
    /// empty by the clip are dropped. Masked, each is clipped to each
    /// replay's rectangle.
    pub(super) fn clear_rects(&self, rects: &[vk::ClearRect]) -> Vec<vk::ClearRect> {
        let clipped = |clip: Option<Rect>| {
            let t = Transform { clip, views: None, ..*self };
            rects.iter().map(move |r| vk::ClearRect { rect: t.rect(&r.rect), ..*r })
        };
        let nonempty = |r: &vk::ClearRect| r.rect.extent.width > 0 && r.rect.extent.height > 0;
        match self.views {
            Some(views) if self.mask != MaskFrom::None => {
                views.iter().flatten().flat_map(|c| clipped(Some(*c))).filter(nonempty).collect()
            }
            _ => clipped(self.clip).filter(nonempty).collect(),
        }
    }
}

/// What the layer knows of the pipeline `cmd` binds, if it is a graphics
/// `BindPipeline` of a pipeline made for a density-map pass.
pub(super) fn pipeline_info(f: &Fdm, cmd: &Cmd) -> Option<Arc<PipelineInfo>> {
    match cmd {
        Cmd::BindPipeline(vk::PipelineBindPoint::GRAPHICS, p) => f.pipelines.lock().get(p).cloned(),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_masked_transform_scissors_and_clears_each_replays_rectangle() {
        let (a, b) = (Rect { x: 0, y: 0, w: 64, h: 16 }, Rect { x: 0, y: 48, w: 64, h: 16 });
        let views = [Some(a), Some(b), None, None];
        let t = Transform {
            area: (4, 4),
            clip: Some(a.union(&b)),
            inputs: None,
            views: Some(&views),
            mask: MaskFrom::Binding,
        };
        let whole = vk::Rect2D { offset: vk::Offset2D { x: 0, y: 0 }, extent: vk::Extent2D { width: 64, height: 64 } };
        let s = t.scissors(0, &[whole]);
        let got: Vec<(i32, i32, u32, u32)> =
            s.iter().map(|s| (s.offset.x, s.offset.y, s.extent.width, s.extent.height)).collect();
        assert_eq!(got, [(0, 0, 16, 4), (0, 12, 16, 4), (0, 0, 0, 0), (0, 0, 0, 0)], "one scissor per viewport");
        assert_eq!(t.viewports(0, &[vk::Viewport { width: 64.0, height: 64.0, ..Default::default() }]).len(), 4);
        let clear = [vk::ClearRect { rect: whole, base_array_layer: 0, layer_count: 1 }];
        let rects: Vec<(i32, i32, u32, u32)> = t
            .clear_rects(&clear)
            .iter()
            .map(|c| (c.rect.offset.x, c.rect.offset.y, c.rect.extent.width, c.rect.extent.height))
            .collect();
        assert_eq!(rects, [(0, 0, 16, 4), (0, 12, 16, 4)], "each replay's rectangle cleared, not the box around them");
        // The same views for a multiview pass (not masked): the clear is the replay's whole clip.
        let per_view = Transform { mask: MaskFrom::None, ..t };
        assert_eq!(per_view.clear_rects(&clear).len(), 1);
    }

    #[test]
    fn transform_scales_and_clips() {
        let t = Transform {
            area: (2, 4),
            clip: Some(Rect { x: 16, y: 16, w: 16, h: 16 }),
            inputs: None,
            views: None,
            mask: MaskFrom::None,
        };
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

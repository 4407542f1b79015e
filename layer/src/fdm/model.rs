//! The pass model: a density-map pass as begun by the application
//! ([`Begin`]), as the layer holds it while capturing ([`Pass`]), and its
//! attachments as a replay handles them ([`Att`], [`attachments`]); what
//! the layer keeps per command buffer ([`CbState`]).

use super::commands::{Cmd, Snapshot};
use super::fallback::Fallback;
use super::map_readback::MapTexels;
use super::{Fdm, FramebufferInfo, PassInfo};
use ash::vk;
use parking_lot::Mutex;
use std::sync::Arc;

/// A pass as begun by the application, copied.
#[derive(Clone)]
pub(super) enum Begin {
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
    pub(super) fn area(&self) -> vk::Rect2D {
        match self {
            Begin::RenderPass { area, .. } | Begin::Rendering { area, .. } => *area,
        }
    }

    /// Begun with the per-layer density bit (`VK_VALVE_fragment_density_map_layered`).
    pub(super) fn per_layer(&self) -> bool {
        match self {
            Begin::RenderPass { pass, .. } => pass.per_layer,
            Begin::Rendering { flags, .. } => flags.contains(super::layered::RENDERING_PER_LAYER),
        }
    }

    /// The views the density map is planned for, as a mask: a multiview
    /// pass's `view_mask`; a per-layer pass's framebuffer layers (each reads
    /// its own map layer, with its own offset, as a view would: the
    /// framebuffer layer a primitive lands in is the shaders' choice, so
    /// every replay renders them all); 0 otherwise (one view, map layer 0).
    pub(super) fn planned_views(&self, view_mask: u32, fb_layers: u32, without_per_layer: bool) -> u32 {
        if view_mask != 0 {
            view_mask
        } else if self.per_layer() && fb_layers > 1 && !without_per_layer {
            let n = fb_layers.min(super::layered::MAX_LAYERS);
            if n >= 32 {
                u32::MAX
            } else {
                (1 << n) - 1
            }
        } else {
            0
        }
    }
}

pub(super) struct Pass {
    pub(super) begin: Begin,
    pub(super) capturing: bool,
    pub(super) cmds: Vec<Cmd>,
    /// State at the start of the pass (capture) or now (live).
    pub(super) state: Snapshot,
    /// The density map, read on the host at the start of the pass.
    pub(super) map: Option<Arc<MapTexels>>,
    /// Descriptor pools of shadow sets made for the replays.
    pub(super) shadow_pools: Vec<vk::DescriptorPool>,
    /// The density offsets per layer given at the end of the pass
    /// (`VK_EXT_fragment_density_map_offset`; empty: none).
    pub(super) offsets: Vec<vk::Offset2D>,
    /// Its map is dynamic or deferred: planned on the GPU at its end
    /// (`gpu_plan.rs`), never read on the host.
    pub(super) gpu: bool,
    /// Its replays bound the layer's compute pipeline (the composite's):
    /// the application's compute state goes back at its end.
    pub(super) compute_bound: bool,
    /// The subsampled attachments its composite stored packed (their
    /// tables written): every other subsampled attachment it stores gets
    /// the identity table at its end (`subsampled.rs`).
    pub(super) packed: Vec<vk::Image>,
    /// Recorded in a secondary command buffer: the layer's own render pass
    /// objects may not begin there (the composite's), dynamic rendering may.
    pub(super) secondary: bool,
}

impl Pass {
    /// The captured pass changes subpass (a replay may then not share its
    /// render pass instance, nor a conditional-rendering scope span it).
    pub(super) fn has_several_subpasses(&self) -> bool {
        self.cmds.iter().any(|c| matches!(c, Cmd::NextSubpass))
    }
}

/// One attachment of a pass, as the replay handles it.
#[derive(Clone, Debug)]
pub(super) struct Att {
    pub(super) view: vk::ImageView,
    pub(super) image: vk::Image,
    pub(super) range: vk::ImageSubresourceRange,
    pub(super) format: vk::Format,
    pub(super) samples: vk::SampleCountFlags,
    pub(super) usage: vk::ImageUsageFlags,
    pub(super) view_type: vk::ImageViewType,
    pub(super) load: bool,
    pub(super) store: bool,
    /// Its stencil aspect stores (a depth/stencil attachment's).
    pub(super) store_stencil: bool,
    pub(super) initial: vk::ImageLayout,
    pub(super) final_: vk::ImageLayout,
    /// The composite writes it as a storage image, in a compute shader
    /// (`composite.rs`): single-sampled colour, not integer, made with
    /// the storage usage (the layer adds it: [`Fdm::driver_usage`]) in a 2D
    /// or 2D array view whose format can be stored.
    pub(super) storage: bool,
    /// Its view is 2D with the identity swizzle and the image's usage: a
    /// storage view as it is.
    pub(super) plain: bool,
}

pub(super) fn aspect_of(format: vk::Format) -> vk::ImageAspectFlags {
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
    let storage = f.storage_composite
        && i.usage.contains(vk::ImageUsageFlags::STORAGE)
        && range.aspect_mask == vk::ImageAspectFlags::COLOR
        && i.samples == vk::SampleCountFlags::TYPE_1
        && matches!(v.view_type, vk::ImageViewType::TYPE_2D | vk::ImageViewType::TYPE_2D_ARRAY)
        && !integer(v.format)
        && f.format_features(v.format).contains(vk::FormatFeatureFlags::STORAGE_IMAGE);
    let c = v.components;
    let same = |s: vk::ComponentSwizzle, own| s == vk::ComponentSwizzle::IDENTITY || s == own;
    let plain = v.view_type == vk::ImageViewType::TYPE_2D
        && !v.own_usage
        && same(c.r, vk::ComponentSwizzle::R)
        && same(c.g, vk::ComponentSwizzle::G)
        && same(c.b, vk::ComponentSwizzle::B)
        && same(c.a, vk::ComponentSwizzle::A);
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
        store_stencil: false,
        initial: vk::ImageLayout::UNDEFINED,
        final_: vk::ImageLayout::UNDEFINED,
        storage,
        plain,
    })
}

/// The pass's attachments (`None` for those the layer leaves alone: unused
/// ones and the density map) and the map's view and layout.
pub(super) fn attachments(
    f: &Fdm,
    begin: &Begin,
) -> Result<(Vec<Option<Att>>, vk::ImageView, vk::ImageLayout, (u32, u32), u32, u32), Fallback> {
    match begin {
        Begin::RenderPass { pass, fb, views, .. } => {
            let views = if fb.imageless { views.clone() } else { fb.views.clone() };
            let map_index = pass.density_map.unwrap() as usize;
            let map = *views.get(map_index).ok_or(Fallback::NoMapInFramebuffer)?;
            let mut out = Vec::new();
            for (i, d) in pass.attachments.iter().enumerate() {
                if i == map_index || !pass.used[i] {
                    out.push(None);
                    continue;
                }
                let mut a = att_of(f, views[i]).ok_or(Fallback::UnknownAttachmentView)?;
                let depth_stencil = a.range.aspect_mask != vk::ImageAspectFlags::COLOR;
                a.load = d.load_op == vk::AttachmentLoadOp::LOAD
                    || (depth_stencil && d.stencil_load_op == vk::AttachmentLoadOp::LOAD);
                a.store_stencil = a.range.aspect_mask.contains(vk::ImageAspectFlags::STENCIL)
                    && d.stencil_store_op == vk::AttachmentStoreOp::STORE;
                a.store = d.store_op == vk::AttachmentStoreOp::STORE || (depth_stencil && a.store_stencil);
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
            let mut add =
                |a: &vk::RenderingAttachmentInfo, out: &mut Vec<Option<Att>>, stencil: bool| -> Result<(), Fallback> {
                    if a.image_view == vk::ImageView::null() {
                        return Ok(());
                    }
                    // A view named twice (the depth and stencil attachments of
                    // one image) is one attachment, loaded or stored where either
                    // aspect is; so is a resolve view.
                    let (load, store) =
                        (a.load_op == vk::AttachmentLoadOp::LOAD, a.store_op == vk::AttachmentStoreOp::STORE);
                    if let Some(x) = out.iter_mut().flatten().find(|x| x.view == a.image_view) {
                        x.load |= load;
                        x.store |= store;
                        x.store_stencil |= stencil && store;
                    } else if !seen.contains(&a.image_view) {
                        seen.push(a.image_view);
                        let mut x = att_of(f, a.image_view).ok_or(Fallback::UnknownAttachmentView)?;
                        (x.load, x.store, x.store_stencil) = (load, store, stencil && store);
                        x.initial = a.image_layout;
                        x.final_ = a.image_layout;
                        out.push(Some(x));
                    }
                    if a.resolve_mode != vk::ResolveModeFlags::NONE
                        && a.resolve_image_view != vk::ImageView::null()
                        && !seen.contains(&a.resolve_image_view)
                    {
                        seen.push(a.resolve_image_view);
                        let mut r = att_of(f, a.resolve_image_view).ok_or(Fallback::UnknownResolveView)?;
                        r.store = true;
                        r.store_stencil = stencil;
                        r.initial = a.resolve_image_layout;
                        r.final_ = a.resolve_image_layout;
                        out.push(Some(r));
                    }
                    Ok(())
                };
            for c in colors {
                add(c, &mut out, false)?;
            }
            if let Some(d) = depth {
                add(d, &mut out, false)?;
            }
            if let Some(s) = stencil {
                add(s, &mut out, true)?;
            }
            // The framebuffer of dynamic rendering: the render area's extent.
            let extent = (area.offset.x as u32 + area.extent.width, area.offset.y as u32 + area.extent.height);
            Ok((out, *map, *map_layout, extent, *layers, *view_mask))
        }
    }
}

/// An integer (unnormalized, unscaled) format: never filtered or drawn by
/// the GPU plan's upscale.
pub(super) fn integer(format: vk::Format) -> bool {
    format!("{format:?}").contains("INT")
}

/// What the layer keeps per command buffer.
#[derive(Default)]
pub struct CbState {
    pub(super) secondary: bool,
    /// The pool it was allocated from (its destruction frees it).
    pub(super) pool: vk::CommandPool,
    /// A secondary recorded for a density-map render pass: its commands.
    pub(super) captured: Option<Vec<Cmd>>,
    pub(super) snapshot: Snapshot,
    pub(super) pass: Option<Pass>,
    pub(super) active_queries: u32,
    /// The application's conditional rendering is active (begun in it and
    /// not ended), or inherited (a secondary begun with
    /// `conditionalRenderingEnable`): the GPU plan's scopes may not nest in it.
    pub(super) app_conditional: bool,
    /// Density-map image layouts this command buffer leaves behind.
    pub layouts: Vec<(vk::Image, vk::ImageLayout)>,
    /// Density-map images this command buffer may write (transfers, layout
    /// transitions).
    pub map_writes: Vec<vk::Image>,
    /// Descriptor pools of shadow sets its replays use (freed at the next
    /// reset, when the recording cannot be pending any more).
    pub shadow_pools: Vec<vk::DescriptorPool>,
    /// Its replays claimed scratch sets (released when it is begun again or
    /// freed: `ScratchCache` in `scratch.rs`).
    pub(super) holds_scratch: bool,
}

pub(super) type Shared = Arc<Mutex<CbState>>;

/// The state of `cb`: a shared lookup on the recording path; the map is
/// written only when command buffers come and go.
pub(super) fn cb_state(f: &Fdm, cb: vk::CommandBuffer) -> Shared {
    if let Some(s) = f.cb_states.read().get(&cb) {
        return s.clone();
    }
    f.cb_states.write().entry(cb).or_default().clone()
}

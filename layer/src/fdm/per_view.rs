//! Per-view viewports for the replays of a multiview pass (issue 33 item 4).
//!
//! A replay renders every view of a multiview pass over its rectangle, but
//! each view stores only the bins it asked for at the replay's area: where
//! the views' maps differ (an eye's offset), each view also shades the other
//! views' finer bins. Where the device has `multiViewport` and
//! `VK_EXT_shader_viewport_index_layer`, every pipeline made for a multiview
//! density-map pass gets a partner whose vertex shader writes
//! `ViewportIndex = ViewIndex` ([`overlap_shaders::viewport_index`]) and
//! whose viewport and scissor counts are the pass's views; a replay that
//! binds only such pipelines binds the partners and gives view `v` viewport
//! `v` (the replay's viewport, the same for every view) and scissor `v`: the
//! bounding box of the bins view `v` asked for at the replay's area, empty
//! where it asked for none ([`super::bins::Replay::view_clips`]). The composite takes each view's
//! bins from its layer as before, so nothing else changes.
//!
//! The pipelines covered are those the multiview flush covers (filled
//! triangles drawn by a vertex shader module, no library, no tessellation,
//! geometry or mesh stage; [`super::multiview_flush`]) with one viewport and
//! no `*_WITH_COUNT` dynamic state, whose vertex shader does not write
//! `ViewportIndex` or `Layer`. A pass binding any other pipeline, or shader
//! objects, replays as before. Where the multiview flush runs too (lavapipe),
//! each partner gets the flush's partner in turn, its code gated.

use super::multiview_flush::{
    cached, eligible, gated_partner, replayed_viewports, rewritten, with_vertex, Eligible, Rewritten,
};
use super::Fdm;
use crate::device::DeviceCore;
use crate::id;
use ash::vk;
use parking_lot::Mutex;
use std::collections::HashMap;
use std::ffi::CStr;
use std::sync::Arc;

/// `VK_EXT_shader_viewport_index_layer`.
pub const EXTENSION: &CStr = c"VK_EXT_shader_viewport_index_layer";

/// The per-view viewports of a device where they run.
pub struct PerView {
    /// `maxViewports`: passes of more views replay as before.
    pub max_viewports: u32,
    /// Pipeline (the application's, or a per-area variant) → its partner.
    pub(super) partners: Mutex<HashMap<vk::Pipeline, vk::Pipeline>>,
    /// Per vertex module and entry point: its rewritten code (validated), or
    /// `None` where it cannot be rewritten.
    pub(super) rewritten: Rewritten,
    /// The same, gated for the multiview flush where it runs too.
    pub(super) gated: Rewritten,
}

impl PerView {
    pub fn new(max_viewports: u32) -> PerView {
        PerView {
            max_viewports,
            partners: Default::default(),
            rewritten: Default::default(),
            gated: Default::default(),
        }
    }

    /// The partner of `pipeline`, if it has one.
    pub fn partner(&self, pipeline: vk::Pipeline) -> Option<vk::Pipeline> {
        self.partners.lock().get(&pipeline).copied()
    }
}

/// `words` with entry point `name` writing `ViewportIndex = ViewIndex`,
/// validated; `None` (logged once per reason) where that cannot be done.
fn rewrite(dev: &DeviceCore, words: &[u32], name: &str) -> Option<Arc<Vec<u32>>> {
    let pass =
        |m: &mut rspirv::dr::Module| overlap_shaders::viewport_index::per_view(m, name).map_err(|e| e.to_string());
    let refused = |why: &str| {
        format!("a multiview pipeline's vertex shader cannot write the viewport index ({why}); its passes shade every view at the finest area any view asks for")
    };
    rewritten(dev, words, pass, (id::FDM_PER_VIEW, refused), "the density map's per-view viewports")
}

/// After the pipeline `made` was created from `info`: its partner, made
/// where per-view viewports run and `info` is covered (module doc); a
/// failure leaves the pipeline without one.
///
/// # Safety
/// `made.info` is the valid create info `made.pipeline` was just created
/// from on `f`'s device, through `f.below`.
pub(super) unsafe fn make_partner(dev: &DeviceCore, f: &Fdm, made: &super::Made) {
    let (cache, info, made) = (made.cache, made.info, made.pipeline);
    let Some(pv) = &f.per_view else { return };
    // SAFETY: the caller's guarantee.
    let (at, vs, words, name, view_mask) = match unsafe { eligible(f, info) } {
        Eligible::Yes(at, vs, words, name, view_mask) => (at, vs, words, name, view_mask),
        _ => return,
    };
    let views = 32 - view_mask.leading_zeros();
    if views > pv.max_viewports {
        return;
    }
    // SAFETY: the caller's guarantee.
    let Some(vp) = (unsafe { replayed_viewports(info, views) }) else { return };
    let key = (vs, name);
    let Some(code) = cached(&pv.rewritten, key.clone(), |key| rewrite(dev, &words, &key.1)) else { return };
    // SAFETY: the caller's guarantee; the rewritten code is validated (the interface plus a built-in output), the
    // viewport counts within `maxViewports` (the layer enabled `multiViewport`), viewports and scissors dynamic.
    if let Some(partner) = unsafe { with_vertex(dev, f, cache, info, (at, &code, None), (Some(&vp), None)) } {
        pv.partners.lock().insert(made, partner);
        // Where lavapipe's multiview flush runs too, the partner gets the flush's partner in turn: its code gated.
        // SAFETY: as above; `partner` was just made so.
        unsafe { gated_partner(dev, f, (cache, info), (at, &code, key, &pv.gated), Some(&vp), partner) };
    }
}

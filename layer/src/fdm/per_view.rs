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
//! where it asked for none ([`view_clips`]). The composite takes each view's
//! bins from its layer as before, so nothing else changes.
//!
//! The pipelines covered are those the multiview flush covers (filled
//! triangles drawn by a vertex shader module, no library, no tessellation,
//! geometry or mesh stage; [`super::multiview_flush`]) with one viewport and
//! no `*_WITH_COUNT` dynamic state, whose vertex shader does not write
//! `ViewportIndex` or `Layer`. A pass binding any other pipeline, or shader
//! objects, replays as before. Not where the multiview flush runs (lavapipe
//! by default): its partners are the flush's.

use super::bins::{Rect, Replay};
use super::multiview_flush::{eligible, Eligible};
use super::Fdm;
use crate::device::DeviceCore;
use crate::ffi::slice;
use crate::id;
use crate::settings::LogLevel;
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
    partners: Mutex<HashMap<vk::Pipeline, vk::Pipeline>>,
    /// Per vertex module and entry point: its rewritten code (validated), or
    /// `None` where it cannot be rewritten.
    rewritten: Mutex<HashMap<(vk::ShaderModule, String), Option<Arc<Vec<u32>>>>>,
}

impl PerView {
    pub fn new(max_viewports: u32) -> PerView {
        PerView { max_viewports, partners: Default::default(), rewritten: Default::default() }
    }
}

/// `words` with entry point `name` writing `ViewportIndex = ViewIndex`,
/// validated; `None` (logged once per reason) where that cannot be done.
fn rewrite(dev: &DeviceCore, words: &[u32], name: &str) -> Option<Arc<Vec<u32>>> {
    let mut m = overlap_shaders::parse(words).ok()?;
    if let Err(e) = overlap_shaders::viewport_index::per_view(&mut m, name) {
        let why = e.to_string();
        dev.log().log_once(
            LogLevel::Info,
            id::FDM_PER_VIEW,
            &why,
            &format!("a multiview pipeline's vertex shader cannot write the viewport index ({why}); its passes shade every view at the finest area any view asks for"),
        );
        return None;
    }
    let out = overlap_shaders::assemble(&m);
    crate::spirv::checked_output(dev, "the density map's per-view viewports", words, &out).then(|| Arc::new(out))
}

/// After the pipeline `made` was created from `info`: its partner, made
/// where per-view viewports run and `info` is covered (module doc); a
/// failure leaves the pipeline without one.
///
/// # Safety
/// `info` is the valid create info `made` was just created from on `f`'s
/// device, through `f.below`.
pub(super) unsafe fn make_partner(
    dev: &DeviceCore,
    f: &Fdm,
    cache: vk::PipelineCache,
    info: &vk::GraphicsPipelineCreateInfo,
    made: vk::Pipeline,
) {
    let Some(pv) = &f.per_view else { return };
    // SAFETY: the caller's guarantee.
    let (at, vs, words, name, view_mask) = match unsafe { eligible(f, info) } {
        Eligible::Yes(at, vs, words, name, view_mask) => (at, vs, words, name, view_mask),
        _ => return,
    };
    let views = 32 - view_mask.leading_zeros();
    // SAFETY: VUID-VkGraphicsPipelineCreateInfo-pDynamicState-parameter and -pViewportState-…: valid when non-null.
    let (dynamic, viewport): (&[vk::DynamicState], Option<&vk::PipelineViewportStateCreateInfo>) = unsafe {
        (
            info.p_dynamic_state.as_ref().map_or(&[], |d| slice(d.p_dynamic_states, d.dynamic_state_count)),
            info.p_viewport_state.as_ref(),
        )
    };
    let counted = [vk::DynamicState::VIEWPORT_WITH_COUNT, vk::DynamicState::SCISSOR_WITH_COUNT];
    let Some(viewport) = viewport.filter(|v| v.viewport_count == 1 && v.scissor_count == 1) else { return };
    // A density-map pass's pipelines have dynamic viewports and scissors (the layer made them so); others replay
    // nothing and need no partner.
    let replayed = dynamic.contains(&vk::DynamicState::VIEWPORT) && dynamic.contains(&vk::DynamicState::SCISSOR);
    if !replayed || views > pv.max_viewports || dynamic.iter().any(|d| counted.contains(d)) {
        return;
    }
    let key = (vs, name);
    let known = pv.rewritten.lock().get(&key).cloned();
    let code = match known {
        Some(c) => c,
        None => {
            let c = rewrite(dev, &words, &key.1);
            pv.rewritten.lock().insert(key, c.clone());
            c
        }
    };
    let Some(code) = code else { return };
    let d = f.below.fp_v1_0();
    let mci = vk::ShaderModuleCreateInfo { code_size: code.len() * 4, p_code: code.as_ptr(), ..Default::default() };
    let mut module = vk::ShaderModule::null();
    // SAFETY: a create info built here over a live Vec of validated code.
    if unsafe { (d.create_shader_module)(dev.handle, &mci, std::ptr::null(), &mut module) } != vk::Result::SUCCESS {
        return;
    }
    // SAFETY: as for `info` (the caller's guarantee): `stageCount` valid stages.
    let mut stages = unsafe { slice(info.p_stages, info.stage_count) }.to_vec();
    stages[at].module = module;
    // The layer made viewports and scissors dynamic for every density-map pipeline: only the counts change.
    let mut vp = *viewport;
    (vp.viewport_count, vp.scissor_count, vp.p_viewports, vp.p_scissors) =
        (views, views, std::ptr::null(), std::ptr::null());
    let mut copy = *info;
    copy.p_stages = stages.as_ptr();
    copy.p_viewport_state = &vp;
    let mut partner = vk::Pipeline::null();
    // SAFETY: the valid info with its vertex module replaced by the rewritten one (the same interface plus a
    // built-in output, alive until after the call) and its viewport counts raised (dynamic viewports, within
    // `maxViewports`; the layer enabled `multiViewport`), its arrays in live locals.
    let r = unsafe {
        let r = (d.create_graphics_pipelines)(dev.handle, cache, 1, &copy, std::ptr::null(), &mut partner);
        (d.destroy_shader_module)(dev.handle, module, std::ptr::null());
        r
    };
    if r == vk::Result::SUCCESS {
        pv.partners.lock().insert(made, partner);
    }
}

/// The partner of `pipeline`, if it has one.
pub(super) fn partner(f: &Fdm, pipeline: vk::Pipeline) -> Option<vk::Pipeline> {
    f.per_view.as_ref()?.partners.lock().get(&pipeline).copied()
}

/// `module` is being destroyed: its rewritten code goes with it.
pub(super) fn forget_module(f: &Fdm, module: vk::ShaderModule) {
    if let Some(pv) = &f.per_view {
        pv.rewritten.lock().retain(|(m, _), _| *m != module);
    }
}

/// `pipeline` is being destroyed: its partner goes with it.
pub(super) fn forget(f: &Fdm, pipeline: vk::Pipeline) {
    let Some(pv) = &f.per_view else { return };
    if let Some(partner) = pv.partners.lock().remove(&pipeline) {
        // SAFETY: the partner is the layer's own, made with `pipeline`, which no pending work uses
        // (VUID-vkDestroyPipeline-pipeline-00765).
        unsafe { (f.below.fp_v1_0().destroy_pipeline)(f.below.handle(), partner, std::ptr::null()) };
    }
}

/// Per view index (up to the highest in `views`, the pass's view indices in
/// the order of the bins' view masks), the rectangle of `r` that view
/// writes: the bounding box of the bins it asked for; `None` for a view
/// that asked for none here (and for indices that are no view).
pub(super) fn view_clips(r: &Replay, views: &[u32]) -> Vec<Option<Rect>> {
    let n = views.iter().max().map_or(0, |v| v + 1) as usize;
    let mut out = vec![None; n];
    for (k, &v) in views.iter().enumerate() {
        out[v as usize] = r.rects_of(k as u32).into_iter().reduce(|a, b| a.union(&b));
    }
    out
}

//! The replays of one area as viewports of one replay (issue 33; design D of
//! `docs/design/density-map-recording.md`, within an area).
//!
//! The replays of one area share a render pass instance, a scratch target
//! and a transform (`1/area`, no offset): they differ only in the rectangle
//! they are scissored to. Recording every captured draw once per replay is
//! what recording a binned pass costs (the driver's own cost of a draw, times
//! the replays). Where the device has `VK_NV_viewport_array2`, every pipeline
//! made for a single-view density-map pass gets a partner whose vertex
//! shader writes `ViewportMaskNV[0]` = the low [`VIEWPORTS`] bits
//! ([`overlap_shaders::viewport_index::viewport_mask_to`]) with that many
//! viewports and scissors: the GPU sends each primitive to every viewport.
//! Up to [`VIEWPORTS`] replays of one area then record the pass once: every
//! viewport the area's scaled viewport, scissor `k` replay `k`'s rectangle
//! (empty for the viewports no replay takes), and a `vkCmdClearAttachments`
//! clears each replay's rectangle. The scratch targets, the composite and
//! the per-area fragment variants are unchanged: a fragment is shaded where
//! and at the area it was before.
//!
//! The pipelines covered are those the per-view viewports cover (filled
//! triangles drawn by a vertex shader module, no library, no tessellation,
//! geometry or mesh stage, one viewport, no `*_WITH_COUNT` dynamic state, a
//! vertex shader that writes neither `ViewportIndex`, `Layer` nor a mask),
//! for passes of one view. A pass binding any other pipeline or shader
//! objects, a multiview pass, or a pass outlined by `fdm_overlay` replays as
//! before (`replay.rs`, `mask_ready`); `debug_fdm_without=viewport_mask`
//! turns it off.

use super::multiview_flush::{
    cached, covered, replayed_viewports, rewritten, view_mask, with_vertex, Eligible, Rewritten,
};
use super::Fdm;
use crate::device::DeviceCore;
use crate::ffi::slice;
use crate::id;
use ash::vk;
use overlap_shaders::viewport_index::VIEWPORT_MASK_SPEC_ID;
use parking_lot::Mutex;
use std::collections::HashMap;
use std::ffi::CStr;
use std::sync::Arc;

/// `VK_NV_viewport_array2`.
pub const EXTENSION: &CStr = c"VK_NV_viewport_array2";

/// The viewports of a partner: the replays of one area recorded at once
/// (more are recorded in groups of this many). Four covers a ring of bins
/// (four rectangles); each viewport a primitive is sent to costs the GPU a
/// primitive setup, so the mask is not wider than that.
pub const VIEWPORTS: u32 = 4;

/// The viewports of a GPU plan's partner: a group of regions.
pub const PLAN_VIEWPORTS: u32 = 16;

/// The viewport-mask partners of a device where they run.
pub struct Masks {
    /// Pipeline (the application's, or a per-area variant) → its partner.
    pub(super) partners: Mutex<HashMap<vk::Pipeline, vk::Pipeline>>,
    /// Per vertex module and entry point: its rewritten code (validated), or
    /// `None` where it cannot be rewritten.
    pub(super) rewritten: Rewritten,
    /// The GPU plan's partners, where the GPU plan runs, the application
    /// enabled dynamic or deferred maps and the device has
    /// [`PLAN_VIEWPORTS`] viewports.
    pub plan: Option<PlanMasks>,
}

/// The GPU plan's partners (design E): each writes the mask the plan shader
/// wrote for a group of regions and an area, read from the layer's vertex
/// binding `binding` (stride 0: every vertex reads the same word) at input
/// `location`.
pub struct PlanMasks {
    pub(super) partners: Mutex<HashMap<vk::Pipeline, vk::Pipeline>>,
    pub(super) rewritten: Rewritten,
    /// The vertex binding and input location the layer takes: the device's
    /// last (at most 31).
    pub binding: u32,
    pub location: u32,
}

impl Masks {
    /// The masks of a device of `limits`, the GPU plan's too where it runs.
    pub fn new(limits: &vk::PhysicalDeviceLimits, gpu_plan: bool) -> Masks {
        let plan = (gpu_plan
            && limits.max_viewports >= PLAN_VIEWPORTS
            && limits.max_vertex_input_bindings > 1
            && limits.max_vertex_input_attributes > 1)
            .then(|| PlanMasks {
                partners: Default::default(),
                rewritten: Default::default(),
                binding: limits.max_vertex_input_bindings.min(32) - 1,
                location: limits.max_vertex_input_attributes.min(32) - 1,
            });
        Masks { partners: Default::default(), rewritten: Default::default(), plan }
    }

    /// The partner of `pipeline`, if it has one.
    pub fn partner(&self, pipeline: vk::Pipeline) -> Option<vk::Pipeline> {
        self.partners.lock().get(&pipeline).copied()
    }

    /// The GPU plan's partner of `pipeline`, if it has one.
    pub fn plan_partner(&self, pipeline: vk::Pipeline) -> Option<vk::Pipeline> {
        self.plan.as_ref().and_then(|p| p.partners.lock().get(&pipeline).copied())
    }
}

/// `words` with entry point `name` writing the mask of [`VIEWPORTS`]
/// viewports, validated; `None` (logged once per reason) where that cannot
/// be done.
fn rewrite(dev: &DeviceCore, words: &[u32], name: &str) -> Option<Arc<Vec<u32>>> {
    let all = (1u32 << VIEWPORTS) - 1;
    let pass = |m: &mut rspirv::dr::Module| {
        overlap_shaders::viewport_index::viewport_mask_to(m, name, all).map_err(|e| e.to_string())
    };
    let refused = |why: &str| {
        format!("a pipeline's vertex shader cannot write a viewport mask ({why}); its passes record each replay of an area apart")
    };
    rewritten(dev, words, pass, (id::FDM_VIEWPORT_MASK, refused), "the density map's viewport mask")
}

/// `words` with entry point `name` writing the mask read from input
/// `location`, validated; `None` (logged once per reason) where that cannot
/// be done.
fn rewrite_input(dev: &DeviceCore, words: &[u32], name: &str, location: u32) -> Option<Arc<Vec<u32>>> {
    let pass = |m: &mut rspirv::dr::Module| {
        overlap_shaders::viewport_index::viewport_mask_from_input(m, name, location).map_err(|e| e.to_string())
    };
    let refused = |why: &str| {
        format!("a pipeline's vertex shader cannot read the GPU plan's viewport mask ({why}); its passes with a dynamic or deferred map record each region apart")
    };
    rewritten(dev, words, pass, (id::FDM_VIEWPORT_MASK, refused), "the density map's plan mask")
}

/// After the pipeline `made` was created: its partner, made where viewport
/// masks run and the pipeline is covered (module doc); a failure leaves the
/// pipeline without one.
///
/// # Safety
/// `made.info` is the valid create info `made.pipeline` was just created
/// from on `f`'s device, through `f.below`.
pub(super) unsafe fn make_partner(dev: &DeviceCore, f: &Fdm, made: &super::Made) {
    let (cache, info, made) = (made.cache, made.info, made.pipeline);
    let Some(masks) = &f.masks else { return };
    // SAFETY: the caller's guarantee.
    if unsafe { view_mask(f, info) } != 0 {
        return;
    }
    // SAFETY: as above.
    let Eligible::Yes(at, vs, words, name, _) = (unsafe { covered(f, info, 0) }) else { return };
    // SAFETY: as above.
    unsafe { make_constant_partner(dev, f, masks, (cache, info, made), (at, vs, &words, name.clone())) };
    if let Some(plan) = &masks.plan {
        // SAFETY: as above.
        unsafe { make_plan_partner(dev, f, plan, (cache, info, made), (at, vs, &words, name)) };
    }
}

/// The constant-mask partner of `made` (made from `info`, its vertex stage
/// at `at`: module `vs`, `words`, entry point `name`).
///
/// # Safety
/// As [`make_partner`].
unsafe fn make_constant_partner(
    dev: &DeviceCore,
    f: &Fdm,
    masks: &Masks,
    (cache, info, made): (vk::PipelineCache, &vk::GraphicsPipelineCreateInfo, vk::Pipeline),
    (at, vs, words, name): (usize, vk::ShaderModule, &Arc<Vec<u32>>, String),
) {
    // SAFETY: the caller's guarantee.
    let Some(vp) = (unsafe { replayed_viewports(info, VIEWPORTS) }) else { return };
    // The mask is the constant's default: an application that specializes the reserved id (its module does not
    // use it: the rewrite refuses those) would set it; that pipeline gets no partner.
    // SAFETY: as above: `stageCount` valid stages, each specialization info valid where non-null
    // (VUID-VkPipelineShaderStageCreateInfo-pSpecializationInfo-parameter), with `mapEntryCount` entries.
    let specialized = unsafe {
        slice(info.p_stages, info.stage_count)[at].p_specialization_info.as_ref().is_some_and(|s| {
            slice(s.p_map_entries, s.map_entry_count).iter().any(|e| e.constant_id == VIEWPORT_MASK_SPEC_ID)
        })
    };
    if specialized {
        return;
    }
    let Some(code) = cached(&masks.rewritten, (vs, name), |key| rewrite(dev, words, &key.1)) else { return };
    // SAFETY: the caller's guarantee; the rewritten code is validated (the interface plus a built-in output), the
    // viewport counts within `maxViewports` (checked when the layer enabled the extension and `multiViewport`),
    // viewports and scissors dynamic.
    if let Some(partner) = unsafe { with_vertex(dev, f, cache, info, (at, &code), (Some(&vp), None)) } {
        masks.partners.lock().insert(made, partner);
    }
}

/// The GPU plan's partner of `made` (made from `info`, its vertex stage at
/// `at`: module `vs`, `words`, entry point `name`), where its vertex input is
/// static and leaves the plan's binding and location alone.
///
/// # Safety
/// As [`make_partner`].
unsafe fn make_plan_partner(
    dev: &DeviceCore,
    f: &Fdm,
    plan: &PlanMasks,
    (cache, info, made): (vk::PipelineCache, &vk::GraphicsPipelineCreateInfo, vk::Pipeline),
    (at, vs, words, name): (usize, vk::ShaderModule, &Arc<Vec<u32>>, String),
) {
    // SAFETY: the caller's guarantee: valid when non-null (VUID-VkGraphicsPipelineCreateInfo-pDynamicState-parameter);
    // with a vertex stage and static vertex input, `pVertexInputState` is valid
    // (VUID-VkGraphicsPipelineCreateInfo-pStages-02097), its arrays of their counts.
    let (dynamic, input) = unsafe {
        let dynamic =
            info.p_dynamic_state.as_ref().map_or(&[][..], |d| slice(d.p_dynamic_states, d.dynamic_state_count));
        (dynamic, info.p_vertex_input_state.as_ref())
    };
    let own = [vk::DynamicState::VERTEX_INPUT_EXT, vk::DynamicState::VERTEX_INPUT_BINDING_STRIDE];
    let Some(input) = input.filter(|_| !dynamic.iter().any(|d| own.contains(d))) else { return };
    // SAFETY: as above.
    let (bindings, attributes) = unsafe {
        (
            slice(input.p_vertex_binding_descriptions, input.vertex_binding_description_count),
            slice(input.p_vertex_attribute_descriptions, input.vertex_attribute_description_count),
        )
    };
    if bindings.iter().any(|b| b.binding == plan.binding) || attributes.iter().any(|a| a.location == plan.location) {
        return;
    }
    // SAFETY: the caller's guarantee.
    let Some(vp) = (unsafe { replayed_viewports(info, PLAN_VIEWPORTS) }) else { return };
    let Some(code) = cached(&plan.rewritten, (vs, name), |key| rewrite_input(dev, words, &key.1, plan.location)) else {
        return;
    };
    let mut bindings = bindings.to_vec();
    bindings.push(vk::VertexInputBindingDescription {
        binding: plan.binding,
        stride: 0,
        input_rate: vk::VertexInputRate::VERTEX,
    });
    let mut attributes = attributes.to_vec();
    attributes.push(vk::VertexInputAttributeDescription {
        location: plan.location,
        binding: plan.binding,
        format: vk::Format::R32_UINT,
        offset: 0,
    });
    let mut vi = *input;
    (vi.vertex_binding_description_count, vi.p_vertex_binding_descriptions) =
        (bindings.len() as u32, bindings.as_ptr());
    (vi.vertex_attribute_description_count, vi.p_vertex_attribute_descriptions) =
        (attributes.len() as u32, attributes.as_ptr());
    // SAFETY: the caller's guarantee; the rewritten code is validated (the interface plus the input the new attribute
    // feeds, `R32_UINT` to a `uint`, a format every device reads as a vertex attribute), the binding and location
    // unused by the pipeline and within the device's limits, viewports and scissors dynamic.
    if let Some(partner) = unsafe { with_vertex(dev, f, cache, info, (at, code.as_slice()), (Some(&vp), Some(&vi))) } {
        plan.partners.lock().insert(made, partner);
    }
}

//! Replays as viewports of one replay (issue 33; designs D, E and F of
//! `docs/design/density-map-recording.md`), where the device has
//! `VK_NV_viewport_array2` — or, without it, geometry shaders
//! ([`Broadcast::Geometry`]: the mask passed on to a geometry stage of the
//! layer's that emits each triangle to the viewports it names; by default
//! on llvmpipe only, where its GPU cost was measured).
//!
//! Recording a binned pass costs the driver's own cost of a draw times the
//! replays of each captured draw. Two kinds of replays differ only in the
//! rectangle they are scissored to: the replays of one area of a host plan
//! (they share a render pass instance, a scratch target and a transform,
//! `1/area` with no offset), and the regions of one area of a GPU plan.
//! Every pipeline made for a single-view density-map pass gets a partner
//! whose vertex shader writes `ViewportMaskNV[0]` from a `uint` input
//! ([`overlap_shaders::viewport_index::viewport_mask_from_input`]) fed by a
//! vertex binding of the layer's ([`Masks::binding`], stride 0: every vertex
//! reads the same word, a `R32_UINT` attribute at [`Masks::location`]), with
//! [`VIEWPORTS`] dynamic viewports and scissors: the GPU sends each primitive
//! to the viewports the word names. Up to [`VIEWPORTS`] replays then record
//! the pass once: every viewport the area's scaled viewport, scissor `k`
//! replay (or region) `k`'s rectangle, a `vkCmdClearAttachments` clipped to
//! each. A host plan's run of `n` replays binds the word `(1 << n) - 1` of
//! the layer's small buffer of them ([`Masks::run_words`]); a GPU plan binds
//! the word its plan shader wrote for the group and area (`gpu_plan.rs`).
//! What is shaded, where and at which area is unchanged (scratch targets,
//! composite and per-area fragment variants as before).
//!
//! The pipelines covered are those the per-view viewports cover (filled
//! triangles drawn by a vertex shader module, no library, no tessellation,
//! geometry or mesh stage, one viewport, no `*_WITH_COUNT` dynamic state, a
//! vertex shader that writes neither `ViewportIndex`, `Layer` nor a mask)
//! whose vertex input is static and leaves the layer's binding and location
//! free, for passes of one view. A pass binding any other pipeline, shader
//! objects or the layer's binding, a multiview pass, or a pass outlined by
//! `fdm_overlay` replays as before ([`covers`], which `replay.rs` and
//! `gpu_plan.rs` ask); `debug_fdm_without=viewport_mask` turns it off.

use super::commands::Cmd;
use super::model::Pass;
use super::multiview_flush::{
    cached, covered, replayed_viewports, rewritten, view_mask, with_vertex, Eligible, Rewritten,
};
use super::Fdm;
use crate::device::DeviceCore;
use crate::ffi::slice;
use crate::id;
use ash::vk;
use parking_lot::Mutex;
use std::collections::HashMap;
use std::ffi::CStr;
use std::sync::Arc;

/// `VK_NV_viewport_array2`.
pub const EXTENSION: &CStr = c"VK_NV_viewport_array2";

/// The viewports of a partner: the replays of one area (host plan) or the
/// regions of one group (GPU plan) recorded at once.
pub const VIEWPORTS: u32 = 16;

/// How a partner sends a primitive to the viewports of its mask.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Broadcast {
    /// The vertex shader writes `ViewportMaskNV` (`VK_NV_viewport_array2`).
    MaskNV,
    /// A geometry shader of the layer's emits the triangle once per viewport
    /// of the mask ([`overlap_shaders::viewport_broadcast`]): devices with
    /// `geometryShader` and `multiViewport` but without the NVIDIA extension.
    Geometry,
}

impl Broadcast {
    /// The broadcast a device of `limits` and `features` runs: the NVIDIA
    /// mask where it has the extension (`nv`), else, where the geometry path
    /// is wanted (`geometry`), a geometry shader where it can run one of
    /// [`VIEWPORTS`] invocations; `None` without `multiViewport` or where
    /// [`Masks::fits`] does not hold.
    pub fn of(
        limits: &vk::PhysicalDeviceLimits,
        features: &vk::PhysicalDeviceFeatures,
        (nv, geometry): (bool, bool),
    ) -> Option<Broadcast> {
        let geometry = geometry
            && features.geometry_shader == vk::TRUE
            && limits.max_geometry_shader_invocations >= overlap_shaders::viewport_broadcast::INVOCATIONS
            && limits.max_geometry_output_vertices >= 3
            && limits.max_geometry_input_components >= 8;
        if features.multi_viewport != vk::TRUE || !Masks::fits(limits) {
            None
        } else if nv {
            Some(Broadcast::MaskNV)
        } else {
            geometry.then_some(Broadcast::Geometry)
        }
    }
}

/// The viewport-mask partners of a device where they run.
pub struct Masks {
    pub broadcast: Broadcast,
    /// Pipeline (the application's, or a per-area variant) → its partner.
    pub(super) partners: Mutex<HashMap<vk::Pipeline, vk::Pipeline>>,
    /// Per vertex module and entry point: its rewritten code (validated), or
    /// `None` where it cannot be rewritten.
    pub(super) rewritten: Rewritten,
    /// With [`Broadcast::Geometry`]: per vertex module and entry point, the
    /// geometry shader that goes with its rewritten code (validated).
    pub(super) geometry: Rewritten,
    /// With [`Broadcast::Geometry`]: the output locations its vertex shader
    /// may use, the mask's included (what the geometry stage takes in and
    /// emits three vertices of).
    outputs: u32,
    /// The vertex binding and input location the layer takes: the device's
    /// last (at most 31).
    pub binding: u32,
    pub location: u32,
    /// The words `(1 << n) - 1` for `n` = 1..=[`VIEWPORTS`] (word `n - 1`): a
    /// host plan's run of `n` replays binds its word. Made at first use.
    runs: Mutex<Option<(vk::Buffer, vk::DeviceMemory)>>,
}

impl Masks {
    /// Whether a device of `limits` can run the masks: [`VIEWPORTS`]
    /// viewports, a vertex binding and an attribute for the layer besides
    /// the application's.
    pub fn fits(limits: &vk::PhysicalDeviceLimits) -> bool {
        limits.max_viewports >= VIEWPORTS
            && limits.max_vertex_input_bindings > 1
            && limits.max_vertex_input_attributes > 1
    }

    /// The masks of a device of `limits`; `None` where they do not
    /// [`fit`](Masks::fits).
    pub fn new(limits: &vk::PhysicalDeviceLimits, broadcast: Broadcast) -> Option<Masks> {
        let components = limits
            .max_geometry_input_components
            .min(limits.max_geometry_output_components)
            .min(limits.max_geometry_total_output_components / 3)
            .min(limits.max_vertex_output_components);
        Masks::fits(limits).then(|| Masks {
            broadcast,
            partners: Default::default(),
            rewritten: Default::default(),
            geometry: Default::default(),
            outputs: components / 4,
            binding: limits.max_vertex_input_bindings.min(32) - 1,
            location: limits.max_vertex_input_attributes.min(32) - 1,
            runs: Default::default(),
        })
    }

    /// The partner of `pipeline`, if it has one.
    pub fn partner(&self, pipeline: vk::Pipeline) -> Option<vk::Pipeline> {
        self.partners.lock().get(&pipeline).copied()
    }

    /// The buffer of run masks, made (host-visible, written once) at the
    /// first call; `None` where it cannot be made.
    pub(super) fn run_words(&self, f: &Fdm) -> Option<vk::Buffer> {
        let mut runs = self.runs.lock();
        if let Some((buffer, _)) = *runs {
            return Some(buffer);
        }
        let words: Vec<u32> = (1..=VIEWPORTS).map(|n| ((1u64 << n) - 1) as u32).collect();
        let d = &f.below;
        let size = (words.len() * 4) as u64;
        let mut made = (vk::Buffer::null(), vk::DeviceMemory::null());
        // SAFETY: create infos built here from locals; the handles are the layer's own, destroyed on failure
        // (null ones are ignored); the mapping covers the whole allocation, host-coherent, and is unmapped before use.
        let r = (|| unsafe {
            made.0 = d.create_buffer(
                &vk::BufferCreateInfo::default().size(size).usage(vk::BufferUsageFlags::VERTEX_BUFFER),
                None,
            )?;
            let req = d.get_buffer_memory_requirements(made.0);
            let host = vk::MemoryPropertyFlags::HOST_VISIBLE | vk::MemoryPropertyFlags::HOST_COHERENT;
            let ty = super::memory_type(f, req.memory_type_bits, host).ok_or(vk::Result::ERROR_OUT_OF_DEVICE_MEMORY)?;
            made.1 = d.allocate_memory(
                &vk::MemoryAllocateInfo::default().allocation_size(req.size).memory_type_index(ty),
                None,
            )?;
            d.bind_buffer_memory(made.0, made.1, 0)?;
            let p = d.map_memory(made.1, 0, vk::WHOLE_SIZE, vk::MemoryMapFlags::empty())? as *mut u32;
            std::ptr::copy_nonoverlapping(words.as_ptr(), p, words.len());
            d.unmap_memory(made.1);
            Ok::<(), vk::Result>(())
        })();
        if r.is_err() {
            // SAFETY: the layer's own objects, just made, never used.
            unsafe {
                d.destroy_buffer(made.0, None);
                d.free_memory(made.1, None);
            }
            return None;
        }
        *runs = Some(made);
        Some(made.0)
    }

    /// Destroys the partners and the run words.
    ///
    /// # Safety
    /// The device is idle.
    pub(super) unsafe fn destroy(&self, f: &Fdm) {
        // SAFETY: the caller's guarantee; the layer's own objects.
        unsafe {
            super::multiview_flush::destroy_all(f, &self.partners);
            if let Some((buffer, memory)) = self.runs.lock().take() {
                f.below.destroy_buffer(buffer, None);
                f.below.free_memory(memory, None);
            }
        }
    }
}

/// Whether the replays of `pass` at `areas` can bind the partners: the masks
/// run (and `debug_fdm_without=viewport_mask` is not set), every graphics
/// pipeline the pass binds has its partner at each of `areas` (its per-area
/// variant's where it has one), and nothing it records binds the layer's
/// vertex binding, sets viewports or scissors with a count, or binds shader
/// objects. The host plan's check (`replay.rs`) and the GPU plan's
/// (`gpu_plan.rs`).
pub(super) fn covers(f: &Fdm, pass: &Pass, areas: &[(u32, u32)]) -> bool {
    let Some(masks) = f.masks.as_ref().filter(|_| !f.controls.without_viewport_mask) else { return false };
    let pipelines = f.pipelines.lock();
    pass.state.commands().chain(&pass.cmds).all(|c| match c {
        Cmd::BindPipeline(vk::PipelineBindPoint::GRAPHICS, p) => areas.iter().all(|area| {
            let chosen = pipelines.get(p).and_then(|i| i.variants.get(area).copied()).unwrap_or(*p);
            masks.partner(chosen).is_some()
        }),
        Cmd::BindVertex { first, buffers, .. } => !(*first..*first + buffers.len() as u32).contains(&masks.binding),
        Cmd::BindShaders(_) | Cmd::ViewportCount(_) | Cmd::ScissorCount(_) => false,
        _ => true,
    })
}

/// `words` with entry point `name` writing the mask read from input
/// `masks.location` (with [`Broadcast::Geometry`]: passing it on to the
/// geometry shader made beside, kept in `masks.geometry`), validated;
/// `None` (logged once per reason) where that cannot be done.
fn rewrite(dev: &DeviceCore, masks: &Masks, words: &[u32], key: &(vk::ShaderModule, String)) -> Option<Arc<Vec<u32>>> {
    let (name, location) = (key.1.as_str(), masks.location);
    let mut geometry = None;
    let pass = |m: &mut rspirv::dr::Module| match masks.broadcast {
        Broadcast::MaskNV => {
            overlap_shaders::viewport_index::viewport_mask_from_input(m, name, location).map_err(|e| e.to_string())
        }
        Broadcast::Geometry => {
            let at = overlap_shaders::viewport_index::mask_to_output(m, name, location, masks.outputs)
                .map_err(|e| e.to_string())?;
            geometry = Some(overlap_shaders::viewport_broadcast::geometry(m, name, at).map_err(|e| e.to_string())?);
            Ok(())
        }
    };
    let refused = |why: &str| {
        format!("a pipeline's vertex shader cannot write a viewport mask ({why}); its passes record each replay of an area (each region of a GPU plan) apart")
    };
    let code = rewritten(dev, words, pass, (id::FDM_VIEWPORT_MASK, refused), "the density map's viewport mask")?;
    if let Some(gs) = geometry {
        let out = overlap_shaders::assemble(&gs);
        if !crate::spirv::checked_output(dev, "the density map's viewport broadcast", words, &out) {
            return None;
        }
        masks.geometry.lock().insert(key.clone(), Some(Arc::new(out)));
    }
    Some(code)
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
    // SAFETY: as above: valid when non-null (VUID-VkGraphicsPipelineCreateInfo-pDynamicState-parameter); with a
    // vertex stage and static vertex input, `pVertexInputState` is valid
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
    if bindings.iter().any(|b| b.binding == masks.binding) || attributes.iter().any(|a| a.location == masks.location) {
        return;
    }
    // SAFETY: as above.
    let Some(vp) = (unsafe { replayed_viewports(info, VIEWPORTS) }) else { return };
    let key = (vs, name);
    let Some(code) = cached(&masks.rewritten, key.clone(), |key| rewrite(dev, masks, &words, key)) else {
        return;
    };
    // With the geometry path, the geometry shader `rewrite` made beside the vertex code.
    let geometry = masks.geometry.lock().get(&key).cloned().flatten();
    if masks.broadcast == Broadcast::Geometry && geometry.is_none() {
        return;
    }
    let mut bindings = bindings.to_vec();
    bindings.push(vk::VertexInputBindingDescription {
        binding: masks.binding,
        stride: 0,
        input_rate: vk::VertexInputRate::VERTEX,
    });
    let mut attributes = attributes.to_vec();
    attributes.push(vk::VertexInputAttributeDescription {
        location: masks.location,
        binding: masks.binding,
        format: vk::Format::R32_UINT,
        offset: 0,
    });
    let mut vi = *input;
    (vi.vertex_binding_description_count, vi.p_vertex_binding_descriptions) =
        (bindings.len() as u32, bindings.as_ptr());
    (vi.vertex_attribute_description_count, vi.p_vertex_attribute_descriptions) =
        (attributes.len() as u32, attributes.as_ptr());
    // SAFETY: the caller's guarantee; the rewritten code is validated (the interface plus a built-in output and the
    // input the new attribute feeds, `R32_UINT` to a `uint`, a format every device reads as a vertex attribute), the
    // binding and location unused by the pipeline and within the device's limits, the viewport counts within
    // `maxViewports` (`Masks::new`; the layer enabled `multiViewport`), viewports and scissors dynamic; with
    // `Broadcast::Geometry` the validated geometry code takes the rewritten vertex shader's outputs (locations within
    // the geometry stage's limits, `Masks::outputs`) in a pipeline without geometry or tessellation stages
    // (`covered`), the layer having enabled `geometryShader`.
    let stages = (at, code.as_slice(), geometry.as_ref().map(|g| g.as_slice()));
    if let Some(partner) = unsafe { with_vertex(dev, f, cache, info, stages, (Some(&vp), Some(&vi))) } {
        masks.partners.lock().insert(made, partner);
        dev.log().debug(id::FDM_VIEWPORT_MASK, &format!("pipeline {made:?}: viewport-mask partner {partner:?}"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(viewports: u32, invocations: u32) -> vk::PhysicalDeviceLimits {
        vk::PhysicalDeviceLimits {
            max_viewports: viewports,
            max_vertex_input_bindings: 32,
            max_vertex_input_attributes: 32,
            max_geometry_shader_invocations: invocations,
            max_geometry_output_vertices: 256,
            max_geometry_input_components: 64,
            ..Default::default()
        }
    }

    fn features(multi_viewport: bool, geometry: bool) -> vk::PhysicalDeviceFeatures {
        vk::PhysicalDeviceFeatures {
            multi_viewport: multi_viewport.into(),
            geometry_shader: geometry.into(),
            ..Default::default()
        }
    }

    #[test]
    fn the_nvidia_mask_comes_first_then_a_geometry_stage() {
        let (l, both) = (limits(16, 32), features(true, true));
        assert_eq!(Broadcast::of(&l, &both, (true, true)), Some(Broadcast::MaskNV));
        assert_eq!(Broadcast::of(&l, &both, (false, true)), Some(Broadcast::Geometry));
        // The mask needs no geometry stage; the geometry stage needs the feature and 16 invocations.
        assert_eq!(Broadcast::of(&l, &features(true, false), (true, true)), Some(Broadcast::MaskNV));
        assert_eq!(Broadcast::of(&l, &features(true, false), (false, true)), None);
        assert_eq!(Broadcast::of(&limits(16, 8), &both, (false, true)), None);
        // Either needs multiViewport and 16 viewports.
        assert_eq!(Broadcast::of(&l, &features(false, true), (true, true)), None);
        assert_eq!(Broadcast::of(&limits(8, 32), &both, (true, true)), None);
    }

    #[test]
    fn the_geometry_stage_bounds_the_vertex_shaders_output_locations() {
        // lavapipe's: 64 input components, 128 output, 1024 in all → 16 locations.
        let l = vk::PhysicalDeviceLimits {
            max_geometry_output_components: 128,
            max_geometry_total_output_components: 1024,
            max_vertex_output_components: 128,
            ..limits(16, 32)
        };
        assert_eq!(Masks::new(&l, Broadcast::Geometry).unwrap().outputs, 16);
        // Three vertices of all the outputs must fit the total.
        let tight = vk::PhysicalDeviceLimits { max_geometry_total_output_components: 96, ..l };
        assert_eq!(Masks::new(&tight, Broadcast::Geometry).unwrap().outputs, 8);
    }
}

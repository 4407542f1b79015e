//! `VK_VALVE_fragment_density_map_layered`: a layered framebuffer whose
//! layers each read their own layer of the density map (and their own
//! density offset), outside multiview.
//!
//! The emulation plans such a pass as it plans a multiview pass: each
//! framebuffer layer is a view of the plan (its map layer, its offset), every
//! replay renders every layer (the shaders choose a primitive's layer), and
//! the upscale takes each layer's bins from its own choice of area. The
//! structures and flag bits are newer than ash 0.38 ([`crate::vk_newer`]):
//! they are stripped before the driver.
//!
//! The extension needs `VK_KHR_maintenance5` or Vulkan 1.4 (its pipeline bit
//! exists only in `VkPipelineCreateFlags2`): it is listed only where the
//! driver has one of them.

pub use crate::vk_newer::{
    FeaturesValve, PipelineInfoValve, PropertiesValve, EXTENSION, FEATURES, PIPELINE_INFO, PIPELINE_PER_LAYER,
    PROPERTIES, RENDERING_PER_LAYER, RENDER_PASS_PER_LAYER,
};
use ash::vk;

/// The most layers a per-layer pass may have: as many as the plan's view
/// masks hold, within the driver's framebuffer layers.
pub const MAX_LAYERS: u32 = 32;

pub fn fill_features(f: &mut FeaturesValve) {
    f.fragment_density_map_layered = vk::TRUE;
}

pub fn fill_properties(p: &mut PropertiesValve, limits: &vk::PhysicalDeviceLimits) {
    p.max_fragment_density_map_layers = limits.max_framebuffer_layers.clamp(2, MAX_LAYERS);
}

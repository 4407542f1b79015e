//! Vulkan definitions newer than ash 0.38 that the layer needs: their
//! structures (in the registry's layout, with their structure types), flag
//! bits (their sizes are in `generated::newer_struct_sizes`, from the
//! registry).
//!
//! `VK_VALVE_fragment_density_map_layered` (its emulation: `fdm::layered`).

use ash::vk;
use std::ffi::{c_void, CStr};

pub const EXTENSION: &CStr = c"VK_VALVE_fragment_density_map_layered";
pub const FEATURES: vk::StructureType = vk::StructureType::from_raw(1_000_611_000);
pub const PROPERTIES: vk::StructureType = vk::StructureType::from_raw(1_000_611_001);
pub const PIPELINE_INFO: vk::StructureType = vk::StructureType::from_raw(1_000_611_002);
/// `VK_RENDER_PASS_CREATE_PER_LAYER_FRAGMENT_DENSITY_BIT_VALVE`.
pub const RENDER_PASS_PER_LAYER: vk::RenderPassCreateFlags = vk::RenderPassCreateFlags::from_raw(0x4);
/// `VK_RENDERING_PER_LAYER_FRAGMENT_DENSITY_BIT_VALVE`.
pub const RENDERING_PER_LAYER: vk::RenderingFlags = vk::RenderingFlags::from_raw(0x20);
/// `VK_PIPELINE_CREATE_2_PER_LAYER_FRAGMENT_DENSITY_BIT_VALVE`.
pub const PIPELINE_PER_LAYER: vk::PipelineCreateFlags2KHR = vk::PipelineCreateFlags2KHR::from_raw(1 << 40);

/// `VkPhysicalDeviceFragmentDensityMapLayeredFeaturesVALVE`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct FeaturesValve {
    pub s_type: vk::StructureType,
    pub p_next: *mut c_void,
    pub fragment_density_map_layered: vk::Bool32,
}

/// `VkPhysicalDeviceFragmentDensityMapLayeredPropertiesVALVE`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct PropertiesValve {
    pub s_type: vk::StructureType,
    pub p_next: *mut c_void,
    pub max_fragment_density_map_layers: u32,
}

/// `VkPipelineFragmentDensityMapLayeredCreateInfoVALVE`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct PipelineInfoValve {
    pub s_type: vk::StructureType,
    pub p_next: *const c_void,
    pub max_fragment_density_map_layers: u32,
}

// SAFETY: each begins with its own structure type and `pNext`, as the
// registry defines it.
unsafe impl vk::TaggedStructure for FeaturesValve {
    const STRUCTURE_TYPE: vk::StructureType = FEATURES;
}
// SAFETY: as above.
unsafe impl vk::TaggedStructure for PropertiesValve {
    const STRUCTURE_TYPE: vk::StructureType = PROPERTIES;
}
// SAFETY: as above.
unsafe impl vk::TaggedStructure for PipelineInfoValve {
    const STRUCTURE_TYPE: vk::StructureType = PIPELINE_INFO;
}

/// Whether the driver satisfies the extension's dependency (Vulkan 1.4,
/// `VK_KHR_maintenance5` or `VK_KHR_extended_flags`).
pub fn fdm_layered_available(api_version: u32, has_extension: impl Fn(&str) -> bool) -> bool {
    vk::api_version_minor(api_version) >= 4
        || vk::api_version_major(api_version) > 1
        || has_extension("VK_KHR_maintenance5")
        || has_extension("VK_KHR_extended_flags")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn structures_have_the_registry_layout() {
        // sType, padding, pNext, one 32-bit member, padding.
        assert_eq!(std::mem::size_of::<FeaturesValve>(), 24);
        assert_eq!(std::mem::size_of::<PropertiesValve>(), 24);
        assert_eq!(std::mem::size_of::<PipelineInfoValve>(), 24);
        assert_eq!(std::mem::offset_of!(FeaturesValve, fragment_density_map_layered), 16);
    }

    #[test]
    fn listed_only_with_its_dependency() {
        let none = |_: &str| false;
        assert!(!fdm_layered_available(vk::make_api_version(0, 1, 3, 230), none));
        assert!(fdm_layered_available(vk::make_api_version(0, 1, 4, 300), none));
        assert!(fdm_layered_available(vk::make_api_version(0, 1, 3, 230), |e| e == "VK_KHR_maintenance5"));
    }
}

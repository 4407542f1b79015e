//! What the layer keeps of an instance: the next layer's commands, the
//! settings and log it was created with, and the emulated architecture.

use crate::log::Logger;
use crate::settings::Settings;
use ash::vk;
use std::sync::Arc;

pub struct InstanceData {
    pub handle: vk::Instance,
    pub next_gipa: vk::PFN_vkGetInstanceProcAddr,
    /// The next layer's instance commands.
    pub fns: ash::Instance,
    /// `VkApplicationInfo::apiVersion` (1.0 when absent).
    pub api_version: u32,
    pub settings: Settings,
    pub log: Logger,
    pub ext: InstanceExtFns,
    /// The emulated architecture (`architecture` or `profile_file`).
    pub profile: Option<Arc<crate::profile::Profile>>,
}

/// The next layer's extension commands, resolved inside `vkCreateInstance`:
/// after creation the loader's terminator answers `vkGetInstanceProcAddr`
/// with its own trampolines, which would call back into this layer.
#[derive(Clone, Copy, Default)]
pub struct InstanceExtFns {
    pub create_debug_utils_messenger: Option<vk::PFN_vkCreateDebugUtilsMessengerEXT>,
    pub destroy_debug_utils_messenger: Option<vk::PFN_vkDestroyDebugUtilsMessengerEXT>,
    pub enumerate_physical_device_groups: Option<vk::PFN_vkEnumeratePhysicalDeviceGroups>,
    pub get_physical_device_features2_khr: Option<vk::PFN_vkGetPhysicalDeviceFeatures2>,
    pub get_physical_device_properties2_khr: Option<vk::PFN_vkGetPhysicalDeviceProperties2>,
    pub get_physical_device_fragment_shading_rates: Option<vk::PFN_vkGetPhysicalDeviceFragmentShadingRatesKHR>,
}

impl InstanceExtFns {
    /// # Safety
    /// `instance` must have just been created through `gipa`.
    pub unsafe fn load(gipa: vk::PFN_vkGetInstanceProcAddr, instance: vk::Instance) -> InstanceExtFns {
        let get = |name: &std::ffi::CStr| gipa(instance, name.as_ptr());
        // SAFETY: each pointer is cast to the type of the command it was asked for.
        InstanceExtFns {
            create_debug_utils_messenger: get(c"vkCreateDebugUtilsMessengerEXT").map(|f| std::mem::transmute(f)),
            destroy_debug_utils_messenger: get(c"vkDestroyDebugUtilsMessengerEXT").map(|f| std::mem::transmute(f)),
            enumerate_physical_device_groups: get(c"vkEnumeratePhysicalDeviceGroups")
                .or_else(|| get(c"vkEnumeratePhysicalDeviceGroupsKHR"))
                .map(|f| std::mem::transmute(f)),
            get_physical_device_features2_khr: get(c"vkGetPhysicalDeviceFeatures2KHR").map(|f| std::mem::transmute(f)),
            get_physical_device_properties2_khr: get(c"vkGetPhysicalDeviceProperties2KHR")
                .map(|f| std::mem::transmute(f)),
            get_physical_device_fragment_shading_rates: get(c"vkGetPhysicalDeviceFragmentShadingRatesKHR")
                .map(|f| std::mem::transmute(f)),
        }
    }
}

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
        // SAFETY: `gipa` is the next layer's vkGetInstanceProcAddr and
        // `instance` was created through it (the caller's guarantee); the
        // names are null-terminated (VUID-vkGetInstanceProcAddr-pName-parameter).
        let get = |name: &std::ffi::CStr| unsafe { gipa(instance, name.as_ptr()) };
        // SAFETY (every `cast!`, a transmute): vkGetInstanceProcAddr returns, as
        // `PFN_vkVoidFunction`, a pointer to the command it was asked for, or
        // NULL; the caller must cast it to that command's type (the spec's
        // "Command Function Pointers"), which is the `PFN_` named in each
        // cast. `Option<fn>` of any signature has the layout of a
        // nullable pointer, so NULL stays `None`. Core and KHR names of a
        // promoted command share one signature.
        macro_rules! cast {
            ($pfn:ty, $f:expr) => {
                std::mem::transmute::<vk::PFN_vkVoidFunction, Option<$pfn>>($f)
            };
        }
        unsafe {
            InstanceExtFns {
                create_debug_utils_messenger: cast!(
                    vk::PFN_vkCreateDebugUtilsMessengerEXT,
                    get(c"vkCreateDebugUtilsMessengerEXT")
                ),
                destroy_debug_utils_messenger: cast!(
                    vk::PFN_vkDestroyDebugUtilsMessengerEXT,
                    get(c"vkDestroyDebugUtilsMessengerEXT")
                ),
                enumerate_physical_device_groups: cast!(
                    vk::PFN_vkEnumeratePhysicalDeviceGroups,
                    get(c"vkEnumeratePhysicalDeviceGroups").or_else(|| get(c"vkEnumeratePhysicalDeviceGroupsKHR"))
                ),
                get_physical_device_features2_khr: cast!(
                    vk::PFN_vkGetPhysicalDeviceFeatures2,
                    get(c"vkGetPhysicalDeviceFeatures2KHR")
                ),
                get_physical_device_properties2_khr: cast!(
                    vk::PFN_vkGetPhysicalDeviceProperties2,
                    get(c"vkGetPhysicalDeviceProperties2KHR")
                ),
                get_physical_device_fragment_shading_rates: cast!(
                    vk::PFN_vkGetPhysicalDeviceFragmentShadingRatesKHR,
                    get(c"vkGetPhysicalDeviceFragmentShadingRatesKHR")
                ),
            }
        }
    }
}

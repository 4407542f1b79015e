//! The device core: what every capability may use of a device — its handle,
//! the next layer's commands, the driver's facts and the plan for them, the
//! instance's settings and log. Capabilities receive it from the dispatch
//! table (`dispatch.rs`, above them) with their own state; they never look a
//! device up themselves and never see each other's state.

use crate::instance::InstanceData;
use crate::log::Logger;
use crate::plan::{DriverFacts, Plan};
use crate::settings::Settings;
use ash::vk;
use std::sync::Arc;

pub struct DeviceCore {
    pub handle: vk::Device,
    pub physical_device: vk::PhysicalDevice,
    pub instance: Arc<InstanceData>,
    pub next_gdpa: vk::PFN_vkGetDeviceProcAddr,
    /// The next layer's device commands.
    pub fns: ash::Device,
    pub facts: DriverFacts,
    pub plan: Plan,
    /// The shader route rewrites (and validates) every module that declares
    /// interlock: the application enabled the emulated extension.
    pub interlock_rewrite: bool,
    /// Copied from the settings: checked by every hook.
    pub debug_panic: Option<String>,
    /// The next layer's VK_EXT_shader_object commands, where the chain has them.
    pub shader_object: Option<ash::ext::shader_object::DeviceFn>,
    /// The next layer's `vkCreateShadersEXT`, where the chain has it.
    pub next_create_shaders: Option<vk::PFN_vkCreateShadersEXT>,
    /// The next layer's `vkCmdSetFragmentShadingRateKHR`, where the chain has it.
    pub next_set_fragment_shading_rate: Option<vk::PFN_vkCmdSetFragmentShadingRateKHR>,
    /// The next layer's `vkCmdBeginTransformFeedbackEXT`, where the chain has it.
    pub next_begin_transform_feedback: Option<vk::PFN_vkCmdBeginTransformFeedbackEXT>,
    /// The next layer's `vkQueuePresentKHR`, where the chain has it.
    pub next_queue_present: Option<vk::PFN_vkQueuePresentKHR>,
    /// The next layer's `vkCreateSwapchainKHR`, where the chain has it.
    pub next_create_swapchain: Option<vk::PFN_vkCreateSwapchainKHR>,
    /// The next layer's dynamic-state commands of extensions.
    pub state: StateFns,
}

/// The next layer's dynamic-state commands beyond Vulkan 1.3 (colour write
/// enable, extended dynamic state 2 and 3, line stipple). A command the chain
/// lacks is ash's stub; its entry point is handed out only where the next
/// layer has the command (`vkGetDeviceProcAddr` asks it first), so the
/// application never reaches a stub, and the density map calls one only to
/// replay a call the application made.
pub struct StateFns {
    pub color_write: ash::ext::color_write_enable::DeviceFn,
    pub eds2: ash::ext::extended_dynamic_state2::DeviceFn,
    pub eds3: ash::ext::extended_dynamic_state3::DeviceFn,
    pub line: ash::ext::line_rasterization::DeviceFn,
    pub line_khr: ash::khr::line_rasterization::DeviceFn,
    /// `vkCmdSetVertexInputEXT` (vertex input dynamic state, or shader objects).
    pub vertex_input: ash::ext::vertex_input_dynamic_state::DeviceFn,
    /// The application's own conditional rendering (the density map's GPU
    /// plan must not nest in it).
    pub conditional: ash::ext::conditional_rendering::DeviceFn,
    /// `VK_KHR_dynamic_rendering_local_read`'s remapping commands (state of
    /// one dynamic rendering: a density-map pass goes live at them).
    pub local_read: ash::khr::dynamic_rendering_local_read::DeviceFn,
    /// `VK_EXT_multi_draw`'s draws (captured in density-map passes; the
    /// layer's multiview flush issues them too).
    pub multi_draw: ash::ext::multi_draw::DeviceFn,
}

impl StateFns {
    /// Loads them with `load` (a name to the next layer's pointer, or null).
    pub fn load(mut load: impl FnMut(&std::ffi::CStr) -> *const std::ffi::c_void) -> StateFns {
        StateFns {
            color_write: ash::ext::color_write_enable::DeviceFn::load(&mut load),
            eds2: ash::ext::extended_dynamic_state2::DeviceFn::load(&mut load),
            eds3: ash::ext::extended_dynamic_state3::DeviceFn::load(&mut load),
            line: ash::ext::line_rasterization::DeviceFn::load(&mut load),
            line_khr: ash::khr::line_rasterization::DeviceFn::load(&mut load),
            vertex_input: ash::ext::vertex_input_dynamic_state::DeviceFn::load(&mut load),
            conditional: ash::ext::conditional_rendering::DeviceFn::load(&mut load),
            local_read: ash::khr::dynamic_rendering_local_read::DeviceFn::load(&mut load),
            multi_draw: ash::ext::multi_draw::DeviceFn::load(&mut load),
        }
    }
}

impl DeviceCore {
    pub fn log(&self) -> &Logger {
        &self.instance.log
    }

    pub fn settings(&self) -> &Settings {
        &self.instance.settings
    }
}

/// The next layer's device command `$name` as its own type `$pfn`, `None`
/// where the chain below lacks it.
macro_rules! next_device_command {
    ($gdpa:expr, $device:expr, $name:literal as $pfn:ty) => {
        // SAFETY: `$gdpa` is the next layer's vkGetDeviceProcAddr and `$device`
        // was created through it; the name is a null-terminated literal
        // (VUID-vkGetDeviceProcAddr-pName-parameter). What it returns for a
        // command, as `PFN_vkVoidFunction`, is cast back to that command's own
        // type (the spec's "Command Function Pointers"): `$pfn` is the PFN of
        // `$name`. `Option` of a function pointer is a nullable pointer, so
        // NULL stays `None`.
        unsafe { std::mem::transmute::<vk::PFN_vkVoidFunction, Option<$pfn>>(($gdpa)($device, $name.as_ptr())) }
    };
}

impl DeviceCore {
    /// The core of a device just created through `next_gdpa`: the next
    /// layer's commands (core names, or their extension aliases where the
    /// application's API version lacks the core command:
    /// `ffi::resolve_command`), loaded through the next layer's
    /// `vkGetDeviceProcAddr` (the loader's own cannot be called inside
    /// `vkCreateDevice`).
    ///
    /// # Safety
    /// `handle` was just created through `next_gdpa` on `c.pd`.
    pub unsafe fn new(
        c: &Creation,
        handle: vk::Device,
        next_gdpa: vk::PFN_vkGetDeviceProcAddr,
        interlock_rewrite: bool,
    ) -> DeviceCore {
        // SAFETY: `next_gdpa` is the next layer's vkGetDeviceProcAddr and `handle` was created through it (the
        // caller's guarantee), with null-terminated names (VUID-vkGetDeviceProcAddr-pName-parameter): each name
        // resolves to its command or null, as `load_with` requires; ash casts each pointer to its command's type.
        let next = |name: &std::ffi::CStr| unsafe {
            next_gdpa(handle, name.as_ptr()).map_or(std::ptr::null(), |f| f as *const std::ffi::c_void)
        };
        // SAFETY: as above.
        let fns = unsafe {
            ash::Device::load_with(|name| crate::ffi::resolve_command(name, |n| next_gdpa(handle, n)), handle)
        };
        let next_create_shaders =
            next_device_command!(next_gdpa, handle, c"vkCreateShadersEXT" as vk::PFN_vkCreateShadersEXT);
        DeviceCore {
            interlock_rewrite,
            handle,
            physical_device: c.pd,
            debug_panic: c.inst.settings.debug_panic.clone(),
            instance: c.inst.clone(),
            next_gdpa,
            fns,
            facts: c.facts.clone(),
            plan: c.plan.clone(),
            shader_object: next_create_shaders.map(|_| ash::ext::shader_object::DeviceFn::load(next)),
            next_create_shaders,
            next_set_fragment_shading_rate: next_device_command!(
                next_gdpa,
                handle,
                c"vkCmdSetFragmentShadingRateKHR" as vk::PFN_vkCmdSetFragmentShadingRateKHR
            ),
            next_begin_transform_feedback: next_device_command!(
                next_gdpa,
                handle,
                c"vkCmdBeginTransformFeedbackEXT" as vk::PFN_vkCmdBeginTransformFeedbackEXT
            ),
            next_queue_present: next_device_command!(
                next_gdpa,
                handle,
                c"vkQueuePresentKHR" as vk::PFN_vkQueuePresentKHR
            ),
            next_create_swapchain: next_device_command!(
                next_gdpa,
                handle,
                c"vkCreateSwapchainKHR" as vk::PFN_vkCreateSwapchainKHR
            ),
            state: StateFns::load(next),
        }
    }
}

/// The physical-device structures a capability answers itself: hidden from
/// the driver during `vkGetPhysicalDeviceFeatures2` /
/// `vkGetPhysicalDeviceProperties2` (it may not know them), then filled in
/// the application's output chain. `entry` loops over the capabilities the
/// plan emulates.
pub struct Answers {
    pub features: &'static [vk::StructureType],
    pub properties: &'static [vk::StructureType],
    /// Fills the capability's feature structures found in `chain`.
    ///
    /// # Safety
    /// `chain` is null or a valid, writable output chain.
    pub fill_features: unsafe fn(plan: &Plan, chain: *mut std::ffi::c_void),
    /// Fills its property structures found in `chain` (`limits`: the
    /// driver's, as the command filled them).
    ///
    /// # Safety
    /// As for `fill_features`.
    pub fill_properties: unsafe fn(plan: &Plan, limits: &vk::PhysicalDeviceLimits, chain: *mut std::ffi::c_void),
}

/// What a capability may look at while `vkCreateDevice` prepares the call
/// down, before the device exists: the instance, the physical device, the
/// driver's facts and the plan for them, and the physical device's features
/// as the layer answers them (`vkGetPhysicalDeviceFeatures2` through the
/// layer, so that an architecture's profile is seen as the application sees
/// it). Each capability's `prepare` takes it with the create info.
pub struct Creation<'a> {
    pub inst: &'a Arc<InstanceData>,
    pub pd: vk::PhysicalDevice,
    pub facts: &'a DriverFacts,
    pub plan: &'a Plan,
    /// Fills a `VkPhysicalDeviceFeatures2` chain of structures the driver
    /// knows (the caller checks the extension or version first).
    pub features2: &'a dyn Fn(&mut vk::PhysicalDeviceFeatures2),
}

impl Creation<'_> {
    /// What `vkCreateDevice` does about a create info `what` (a capability)
    /// cannot strip: a feature the layer does not provide fails device
    /// creation, as the spec says (`Err`); a structure it cannot copy sends
    /// the create info down unchanged (`Ok`, logged).
    pub fn strip_failed(&self, e: &crate::pnext::StripError, what: &str) -> Result<(), vk::Result> {
        let log = &self.inst.log;
        match e {
            crate::pnext::StripError::FeatureNotPresent(_) => {
                log.warn(crate::id::FEATURE_NOT_PRESENT, &format!("{e}; vkCreateDevice fails as the spec says"));
                Err(vk::Result::ERROR_FEATURE_NOT_PRESENT)
            }
            crate::pnext::StripError::Unknown(_) => {
                log.error(
                    crate::id::CREATE_INFO_UNKNOWN,
                    &format!("vkCreateDevice: {e}; {what} cannot be stripped, the create info goes down unchanged"),
                );
                Ok(())
            }
        }
    }

    /// The application's effective API version on this device.
    pub fn effective_version(&self) -> u32 {
        self.inst.api_version.min(self.facts.api_version)
    }

    /// The driver's Vulkan 1.1 properties query (`p2` a chain of structures
    /// the driver knows).
    pub fn properties2(&self, p2: &mut vk::PhysicalDeviceProperties2) {
        // SAFETY: `pd` is valid (VUID-vkCreateDevice-physicalDevice-parameter) and `p2` a live chain the
        // driver knows (the caller's check).
        unsafe { (self.inst.fns.fp_v1_1().get_physical_device_properties2)(self.pd, p2) };
    }
}

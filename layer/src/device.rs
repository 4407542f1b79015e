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

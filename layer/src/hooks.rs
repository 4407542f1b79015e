//! The device-level hook table: the one place that maps command names to the
//! layer's hooks. `vkGetDeviceProcAddr` hands these out only for devices whose
//! [`Plan`](crate::plan::Plan) has hooks active; elsewhere the application
//! calls the next layer directly.
//!
//! Two groups: the shader hooks (every path SPIR-V takes to the driver,
//! [`crate::shader`]), installed where the application enabled an emulated
//! capability that rewrites shaders; and
//! pass-through hooks, which find the device's state (the cost `ci/bench`
//! measures) and call down, installed by `force_enable` until a capability
//! gives them work.

use crate::ffi::pfn;
use crate::guard;
use crate::state;
use ash::vk;

/// Declares pass-through hooks: each looks its device up, honours
/// `debug_panic`, and calls the next layer's command of the same name. A
/// panic falls back to calling the next layer unchanged.
macro_rules! passthrough_hooks {
    ($( $name:literal $pfn:ident fn $hook:ident($h:ident: $ht:ty $(, $a:ident: $t:ty)*) $(-> $ret:ty)? => $ver:ident.$field:ident; )*) => {
        $(
            unsafe extern "system" fn $hook($h: $ht $(, $a: $t)*) $(-> $ret)? {
                guard::entry(
                    $name,
                    || {
                        let dev = state::device($h);
                        guard::debug_panic(&dev.debug_panic, $name);
                        (dev.fns.$ver().$field)($h $(, $a)*)
                    },
                    || (state::device($h).fns.$ver().$field)($h $(, $a)*),
                )
            }
            const _: vk::$pfn = $hook;
        )*

        /// The layer's pass-through hook for a device command, if it has one
        /// (installed only by `force_enable`).
        pub fn passthrough_hook(name: &[u8]) -> vk::PFN_vkVoidFunction {
            match name {
                $( n if n == $name.as_bytes() => pfn!($hook as vk::$pfn), )*
                _ => None,
            }
        }

        /// Names of every pass-through hook.
        pub const PASSTHROUGH: &[&str] = &[$($name),*];
    };
}

passthrough_hooks! {
    "vkCreatePipelineLayout" PFN_vkCreatePipelineLayout
        fn create_pipeline_layout(device: vk::Device, info: *const vk::PipelineLayoutCreateInfo<'_>,
            alloc: *const vk::AllocationCallbacks<'_>, out: *mut vk::PipelineLayout) -> vk::Result
        => fp_v1_0.create_pipeline_layout;
    "vkBeginCommandBuffer" PFN_vkBeginCommandBuffer
        fn begin_command_buffer(cb: vk::CommandBuffer, info: *const vk::CommandBufferBeginInfo<'_>) -> vk::Result
        => fp_v1_0.begin_command_buffer;
    "vkCmdBindPipeline" PFN_vkCmdBindPipeline
        fn cmd_bind_pipeline(cb: vk::CommandBuffer, bind_point: vk::PipelineBindPoint, pipeline: vk::Pipeline)
        => fp_v1_0.cmd_bind_pipeline;
    "vkCmdBeginRenderPass" PFN_vkCmdBeginRenderPass
        fn cmd_begin_render_pass(cb: vk::CommandBuffer, info: *const vk::RenderPassBeginInfo<'_>,
            contents: vk::SubpassContents)
        => fp_v1_0.cmd_begin_render_pass;
    "vkCmdEndRenderPass" PFN_vkCmdEndRenderPass
        fn cmd_end_render_pass(cb: vk::CommandBuffer)
        => fp_v1_0.cmd_end_render_pass;
    "vkCmdBeginRendering" PFN_vkCmdBeginRendering
        fn cmd_begin_rendering(cb: vk::CommandBuffer, info: *const vk::RenderingInfo<'_>)
        => fp_v1_3.cmd_begin_rendering;
    "vkCmdEndRendering" PFN_vkCmdEndRendering
        fn cmd_end_rendering(cb: vk::CommandBuffer)
        => fp_v1_3.cmd_end_rendering;
    "vkCmdDraw" PFN_vkCmdDraw
        fn cmd_draw(cb: vk::CommandBuffer, vertex_count: u32, instance_count: u32, first_vertex: u32, first_instance: u32)
        => fp_v1_0.cmd_draw;
    "vkCmdDrawIndexed" PFN_vkCmdDrawIndexed
        fn cmd_draw_indexed(cb: vk::CommandBuffer, index_count: u32, instance_count: u32, first_index: u32,
            vertex_offset: i32, first_instance: u32)
        => fp_v1_0.cmd_draw_indexed;
    "vkQueueSubmit" PFN_vkQueueSubmit
        fn queue_submit(queue: vk::Queue, count: u32, submits: *const vk::SubmitInfo<'_>, fence: vk::Fence) -> vk::Result
        => fp_v1_0.queue_submit;
}

/// The shader hooks, for devices whose plan rewrites shaders.
pub fn shader_hook(name: &[u8]) -> vk::PFN_vkVoidFunction {
    use crate::shader;
    match name {
        b"vkCreateShaderModule" => {
            pfn!(shader::create_shader_module as vk::PFN_vkCreateShaderModule)
        }
        b"vkCreateGraphicsPipelines" => {
            pfn!(shader::create_graphics_pipelines as vk::PFN_vkCreateGraphicsPipelines)
        }
        b"vkCreateShadersEXT" => pfn!(shader::create_shaders_ext as vk::PFN_vkCreateShadersEXT),
        b"vkDestroyShaderModule" => pfn!(crate::spinlock::destroy_shader_module as vk::PFN_vkDestroyShaderModule),
        // What each pipeline layout lets the fragment stage read (the linker's
        // uniform propagation); the spinlock extends layouts in the same hook.
        b"vkCreatePipelineLayout" => {
            pfn!(crate::spinlock::create_pipeline_layout as vk::PFN_vkCreatePipelineLayout)
        }
        b"vkCreateDescriptorSetLayout" => {
            pfn!(crate::link::create_descriptor_set_layout as vk::PFN_vkCreateDescriptorSetLayout)
        }
        _ => None,
    }
}

/// The hook for `name` on `dev`, if the layer installs one there.
pub fn device_hook_for(dev: &crate::state::DeviceData, name: &[u8]) -> vk::PFN_vkVoidFunction {
    let force = dev.plan.force_hooks;
    if let Some(f) = &dev.fdm {
        if let Some(h) = crate::fdm::hook(Some(f.mode), name) {
            return Some(h);
        }
    }
    if dev.shading_rate.is_some() && name == b"vkCmdSetFragmentShadingRateKHR" {
        return pfn!(crate::shading_rate::cmd_set_fragment_shading_rate as vk::PFN_vkCmdSetFragmentShadingRateKHR);
    }
    if dev.spinlock.is_some() || dev.shading_rate.is_some() {
        if let Some(h) = crate::spinlock::hook(name) {
            return Some(h);
        }
    }
    let shaders = if dev.rewrites_shaders() || dev.shading_rate.is_some() || force { shader_hook(name) } else { None };
    shaders.or_else(|| if force { passthrough_hook(name) } else { None })
}

/// Any hook for `name` (for `vkGetInstanceProcAddr`, which knows no device).
pub fn device_hook(name: &[u8]) -> vk::PFN_vkVoidFunction {
    if name == b"vkCmdSetFragmentShadingRateKHR" {
        return pfn!(crate::shading_rate::cmd_set_fragment_shading_rate as vk::PFN_vkCmdSetFragmentShadingRateKHR);
    }
    crate::fdm::hook(None, name)
        .or_else(|| shader_hook(name))
        .or_else(|| crate::spinlock::hook(name))
        .or_else(|| passthrough_hook(name))
}

//! The dispatch table: every device command the layer intercepts, listed
//! once, with the capabilities that handle or observe it, top first.
//!
//! For each row the [`device_commands!`] macro generates the `extern
//! "system"` entry point the application (or the layer above) calls: it
//! looks the device up (one thread-local cache hit, [`state::device`]),
//! honours `debug_panic`, and runs the row's chain under [`guard::entry`].
//! Each handler receives the device core, its own capability's state and
//! `next`, the rest of the chain (the next handler, finally the next
//! layer's command), which it calls once with the arguments it wants the
//! driver to see. A capability that is not running on the device is skipped;
//! a row none of whose capabilities runs on a device is not handed out by
//! `vkGetDeviceProcAddr` at all (the application calls the next layer
//! directly), unless `force_enable` asks for every hook.
//!
//! The density-map capability records commands and replays them later, so
//! it keeps its own table of "the commands below it": the same entry points
//! instantiated with `BELOW_FDM = true`, which skip its handlers
//! ([`below_fdm`]).
//!
//! Adding a capability: a module under `layer/src`, a field in
//! [`DeviceData`] with its accessor below, and its handlers in the rows of
//! the commands it needs.

use crate::device::DeviceCore;
use crate::ffi::pfn;
use crate::guard;
use crate::state::{self, DeviceData};
use ash::vk;

/// The capability slots a row can name. Each takes `below_fdm`: true in the
/// entry points the density-map capability calls down through, which skip
/// it.
impl DeviceData {
    #[inline]
    fn fdm_slot(&self, below_fdm: bool) -> Option<&crate::fdm::Fdm> {
        if below_fdm {
            None
        } else {
            self.fdm.as_ref()
        }
    }
    /// The density-map capability where it captures passes (mode `binned`).
    #[inline]
    fn fdm_binned_slot(&self, below_fdm: bool) -> Option<&crate::fdm::Fdm> {
        self.fdm_slot(below_fdm).filter(|f| f.mode == crate::fdm::Mode::Binned)
    }
    #[inline]
    fn spinlock_slot(&self, _: bool) -> Option<&crate::spinlock::Spinlock> {
        self.spinlock.as_ref()
    }
    #[inline]
    fn shading_rate_slot(&self, _: bool) -> Option<&crate::shading_rate::ForceOneByOne> {
        self.shading_rate.as_ref()
    }
    #[inline]
    fn varyings_slot(&self, _: bool) -> Option<&crate::link::Varyings> {
        self.varyings.as_ref()
    }
    /// The shader route ([`crate::shader`]): where a capability that
    /// rewrites SPIR-V or judges pipelines by their shaders runs. It composes
    /// several capabilities, so it receives the whole device.
    #[inline]
    fn shaders_slot(&self, _: bool) -> Option<&DeviceData> {
        (self.rewrites_shaders() || self.shading_rate.is_some()).then_some(self)
    }
}

/// Runs a row's handlers in order, then the next layer's command. A `wrap`
/// handler gets `next` and calls it; a `before` handler observes the
/// dispatchable handle and the chain goes on.
macro_rules! chain {
    ($dev:ident, $below:ident, [], ($($a:ident: $t:ty),*), $down:expr) => {
        $down
    };
    ($dev:ident, $below:ident, [$slot:ident => $kind:ident $handler:path $(, $rslot:ident => $rkind:ident $rhandler:path)*],
        ($h:ident: $ht:ty $(, $a:ident: $t:ty)*), $down:expr) => {{
        let next = |$h: $ht $(, $a: $t)*| {
            chain!($dev, $below, [$($rslot => $rkind $rhandler),*], ($h: $ht $(, $a: $t)*), $down)
        };
        match $dev.$slot($below) {
            Some(s) => chain!(@call $kind, $handler, &$dev.core, s, next, ($h $(, $a)*)),
            None => next($h $(, $a)*),
        }
    }};
    (@call wrap, $handler:path, $core:expr, $s:ident, $next:ident, ($($a:ident),*)) => {
        $handler($core, $s, $($a,)* $next)
    };
    (@call before, $handler:path, $core:expr, $s:ident, $next:ident, ($h:ident $(, $a:ident)*)) => {{
        $handler($core, $s, $h);
        $next($h $(, $a)*)
    }};
}

/// Declares the table. A row: the command's names (core name first, then
/// the aliases that share its entry point), its signature with the
/// dispatchable handle first, the next layer's command (`|core| pointer`),
/// and the handlers by slot, top first.
macro_rules! device_commands {
    ($(
        $name:literal $(| $alias:literal)* fn $entry:ident($h:ident: $ht:ty $(, $a:ident: $t:ty)*) $(-> $ret:ty)?
            = $pfn:ident, down |$c:ident| $down:expr;
            [$($slot:ident => $kind:ident $handler:path),* $(,)?];
    )*) => {
        $(
            unsafe extern "system" fn $entry<const BELOW_FDM: bool>($h: $ht $(, $a: $t)*) $(-> $ret)? {
                guard::entry(
                    $name,
                    || {
                        let dev = state::device($h);
                        guard::debug_panic(&dev.debug_panic, $name);
                        chain!(dev, BELOW_FDM, [$($slot => $kind $handler),*], ($h: $ht $(, $a: $t)*), {
                            let $c: &DeviceCore = &dev.core;
                            ($down)($h $(, $a)*)
                        })
                    },
                    || {
                        let $c: &DeviceCore = &state::device($h).core;
                        ($down)($h $(, $a)*)
                    },
                )
            }
            const _: vk::$pfn = $entry::<false>;
        )*

        /// The row of a command name: its entry points (whole chain, below
        /// the density map) and whether a device runs one of its handlers
        /// (`below_fdm` as for the slots).
        fn row(name: &[u8]) -> Option<Row> {
            match name {
                $(
                    n if n == $name.as_bytes() $(|| n == $alias.as_bytes())* => Some(Row {
                        top: pfn!($entry::<false> as vk::$pfn),
                        below_fdm: pfn!($entry::<true> as vk::$pfn),
                        active: |_dev: &DeviceData, _below: bool| false $(|| _dev.$slot(_below).is_some())*,
                    }),
                )*
                _ => None,
            }
        }

        /// Every intercepted command name, core names first.
        pub const COMMANDS: &[&str] = &[$($name),*];
    };
}

struct Row {
    top: vk::PFN_vkVoidFunction,
    below_fdm: vk::PFN_vkVoidFunction,
    active: fn(&DeviceData, bool) -> bool,
}

/// The entry point for `name` on `dev`, where the layer intercepts it there.
pub fn hook_for(dev: &DeviceData, name: &[u8]) -> vk::PFN_vkVoidFunction {
    if let Some(h) = dev.fdm.as_ref().and_then(|f| crate::fdm::hook(Some(f.mode), name)) {
        return Some(h);
    }
    let row = row(name)?;
    (dev.plan.force_hooks || (row.active)(dev, false)).then_some(row.top).flatten()
}

/// What the density-map capability calls for `name`: the entry point below
/// it where another capability intercepts the command, else `None` (the next
/// layer's command).
pub fn below_fdm(dev: &DeviceData, name: &[u8]) -> vk::PFN_vkVoidFunction {
    let row = row(name)?;
    (dev.plan.force_hooks || (row.active)(dev, true)).then_some(row.below_fdm).flatten()
}

/// Any entry point for `name` (for `vkGetInstanceProcAddr`, which knows no
/// device).
pub fn any_hook(name: &[u8]) -> vk::PFN_vkVoidFunction {
    crate::fdm::hook(None, name).or_else(|| row(name)?.top)
}

// Commands of optional extensions: the next layer's pointer where it has
// the command (the entry points are handed out only then), else a stub.
unsafe extern "system" fn no_create_shaders(
    _: vk::Device,
    _: u32,
    _: *const vk::ShaderCreateInfoEXT<'_>,
    _: *const vk::AllocationCallbacks<'_>,
    _: *mut vk::ShaderEXT,
) -> vk::Result {
    vk::Result::ERROR_EXTENSION_NOT_PRESENT
}
unsafe extern "system" fn no_bind_shaders(
    _: vk::CommandBuffer,
    _: u32,
    _: *const vk::ShaderStageFlags,
    _: *const vk::ShaderEXT,
) {
}
unsafe extern "system" fn no_set_fragment_shading_rate(
    _: vk::CommandBuffer,
    _: *const vk::Extent2D,
    _: *const [vk::FragmentShadingRateCombinerOpKHR; 2],
) {
}
unsafe extern "system" fn no_destroy_shader(_: vk::Device, _: vk::ShaderEXT, _: *const vk::AllocationCallbacks<'_>) {}

impl DeviceCore {
    fn down_create_shaders(&self) -> vk::PFN_vkCreateShadersEXT {
        self.next_create_shaders.unwrap_or(no_create_shaders)
    }
    fn down_bind_shaders(&self) -> vk::PFN_vkCmdBindShadersEXT {
        self.shader_object.as_ref().map_or(no_bind_shaders, |f| f.cmd_bind_shaders_ext)
    }
    fn down_set_fragment_shading_rate(&self) -> vk::PFN_vkCmdSetFragmentShadingRateKHR {
        self.next_set_fragment_shading_rate.unwrap_or(no_set_fragment_shading_rate)
    }
    fn down_destroy_shader(&self) -> vk::PFN_vkDestroyShaderEXT {
        self.shader_object.as_ref().map_or(no_destroy_shader, |f| f.destroy_shader_ext)
    }
}

use crate::{link, shader, shading_rate, spinlock};

device_commands! {
    // Shader and pipeline creation: the shader route composes the
    // capabilities that rewrite SPIR-V (interlock, varying linking) and
    // judge pipelines by their shaders (1x1 shading rate, spinlock).
    "vkCreateShaderModule" fn create_shader_module(device: vk::Device, info: *const vk::ShaderModuleCreateInfo<'_>,
        alloc: *const vk::AllocationCallbacks<'_>, out: *mut vk::ShaderModule) -> vk::Result
        = PFN_vkCreateShaderModule, down |c| c.fns.fp_v1_0().create_shader_module;
        [shaders_slot => wrap shader::create_shader_module];
    "vkDestroyShaderModule" fn destroy_shader_module(device: vk::Device, module: vk::ShaderModule,
        alloc: *const vk::AllocationCallbacks<'_>)
        = PFN_vkDestroyShaderModule, down |c| c.fns.fp_v1_0().destroy_shader_module;
        [spinlock_slot => wrap spinlock::destroy_shader_module, shading_rate_slot => wrap shading_rate::destroy_shader_module,
         varyings_slot => wrap link::destroy_shader_module];
    "vkCreateGraphicsPipelines" fn create_graphics_pipelines(device: vk::Device, cache: vk::PipelineCache, count: u32,
        infos: *const vk::GraphicsPipelineCreateInfo<'_>, alloc: *const vk::AllocationCallbacks<'_>,
        out: *mut vk::Pipeline) -> vk::Result
        = PFN_vkCreateGraphicsPipelines, down |c| c.fns.fp_v1_0().create_graphics_pipelines;
        [shaders_slot => wrap shader::create_graphics_pipelines];
    "vkDestroyPipeline" fn destroy_pipeline(device: vk::Device, pipeline: vk::Pipeline,
        alloc: *const vk::AllocationCallbacks<'_>)
        = PFN_vkDestroyPipeline, down |c| c.fns.fp_v1_0().destroy_pipeline;
        [spinlock_slot => wrap spinlock::destroy_pipeline, shading_rate_slot => wrap shading_rate::destroy_pipeline];
    "vkCreateShadersEXT" fn create_shaders(device: vk::Device, count: u32, infos: *const vk::ShaderCreateInfoEXT<'_>,
        alloc: *const vk::AllocationCallbacks<'_>, out: *mut vk::ShaderEXT) -> vk::Result
        = PFN_vkCreateShadersEXT, down |c| c.down_create_shaders();
        [shaders_slot => wrap shader::create_shaders_ext];
    "vkDestroyShaderEXT" fn destroy_shader(device: vk::Device, shader: vk::ShaderEXT,
        alloc: *const vk::AllocationCallbacks<'_>)
        = PFN_vkDestroyShaderEXT, down |c| c.down_destroy_shader();
        [spinlock_slot => wrap spinlock::destroy_shader];
    "vkCreatePipelineLayout" fn create_pipeline_layout(device: vk::Device, info: *const vk::PipelineLayoutCreateInfo<'_>,
        alloc: *const vk::AllocationCallbacks<'_>, out: *mut vk::PipelineLayout) -> vk::Result
        = PFN_vkCreatePipelineLayout, down |c| c.fns.fp_v1_0().create_pipeline_layout;
        // The linker notes the application's layout; the spinlock extends it.
        [varyings_slot => wrap link::create_pipeline_layout, spinlock_slot => wrap spinlock::create_pipeline_layout];
    "vkCreateDescriptorSetLayout" fn create_descriptor_set_layout(device: vk::Device,
        info: *const vk::DescriptorSetLayoutCreateInfo<'_>, alloc: *const vk::AllocationCallbacks<'_>,
        out: *mut vk::DescriptorSetLayout) -> vk::Result
        = PFN_vkCreateDescriptorSetLayout, down |c| c.fns.fp_v1_0().create_descriptor_set_layout;
        [varyings_slot => wrap link::create_descriptor_set_layout];

    // Command buffers and binds.
    "vkBeginCommandBuffer" fn begin_command_buffer(cb: vk::CommandBuffer, info: *const vk::CommandBufferBeginInfo<'_>)
        -> vk::Result
        = PFN_vkBeginCommandBuffer, down |c| c.fns.fp_v1_0().begin_command_buffer;
        [spinlock_slot => wrap spinlock::begin_command_buffer, shading_rate_slot => wrap shading_rate::begin_command_buffer];
    "vkCmdBindPipeline" fn cmd_bind_pipeline(cb: vk::CommandBuffer, point: vk::PipelineBindPoint, pipeline: vk::Pipeline)
        = PFN_vkCmdBindPipeline, down |c| c.fns.fp_v1_0().cmd_bind_pipeline;
        [spinlock_slot => wrap spinlock::cmd_bind_pipeline, shading_rate_slot => wrap shading_rate::cmd_bind_pipeline];
    "vkCmdBindShadersEXT" fn cmd_bind_shaders(cb: vk::CommandBuffer, count: u32, stages: *const vk::ShaderStageFlags,
        shaders: *const vk::ShaderEXT)
        = PFN_vkCmdBindShadersEXT, down |c| c.down_bind_shaders();
        [spinlock_slot => wrap spinlock::cmd_bind_shaders];
    "vkCmdSetFragmentShadingRateKHR" fn cmd_set_fragment_shading_rate(cb: vk::CommandBuffer,
        size: *const vk::Extent2D, ops: *const [vk::FragmentShadingRateCombinerOpKHR; 2])
        = PFN_vkCmdSetFragmentShadingRateKHR, down |c| c.down_set_fragment_shading_rate();
        [shading_rate_slot => wrap shading_rate::cmd_set_fragment_shading_rate];

    // Render passes and submission: no capability in this table yet (the
    // density map hooks its own, `crate::fdm::hook`); `force_enable` hooks
    // them to measure the dispatch cost.
    "vkCmdBeginRenderPass" fn cmd_begin_render_pass(cb: vk::CommandBuffer, info: *const vk::RenderPassBeginInfo<'_>,
        contents: vk::SubpassContents)
        = PFN_vkCmdBeginRenderPass, down |c| c.fns.fp_v1_0().cmd_begin_render_pass;
        [];
    "vkCmdEndRenderPass" fn cmd_end_render_pass(cb: vk::CommandBuffer)
        = PFN_vkCmdEndRenderPass, down |c| c.fns.fp_v1_0().cmd_end_render_pass;
        [];
    "vkCmdBeginRendering" fn cmd_begin_rendering(cb: vk::CommandBuffer, info: *const vk::RenderingInfo<'_>)
        = PFN_vkCmdBeginRendering, down |c| c.fns.fp_v1_3().cmd_begin_rendering;
        [];
    "vkCmdEndRendering" fn cmd_end_rendering(cb: vk::CommandBuffer)
        = PFN_vkCmdEndRendering, down |c| c.fns.fp_v1_3().cmd_end_rendering;
        [];
    "vkQueueSubmit" fn queue_submit(queue: vk::Queue, count: u32, submits: *const vk::SubmitInfo<'_>, fence: vk::Fence)
        -> vk::Result
        = PFN_vkQueueSubmit, down |c| c.fns.fp_v1_0().queue_submit;
        [];

    // Draws: the spinlock binds its lock set where the bound pipeline locks.
    "vkCmdDraw" fn cmd_draw(cb: vk::CommandBuffer, vertex_count: u32, instance_count: u32, first_vertex: u32,
        first_instance: u32)
        = PFN_vkCmdDraw, down |c| c.fns.fp_v1_0().cmd_draw;
        [spinlock_slot => before spinlock::bind_locks];
    "vkCmdDrawIndexed" fn cmd_draw_indexed(cb: vk::CommandBuffer, index_count: u32, instance_count: u32,
        first_index: u32, vertex_offset: i32, first_instance: u32)
        = PFN_vkCmdDrawIndexed, down |c| c.fns.fp_v1_0().cmd_draw_indexed;
        [spinlock_slot => before spinlock::bind_locks];
    "vkCmdDrawIndirect" fn cmd_draw_indirect(cb: vk::CommandBuffer, buffer: vk::Buffer, offset: vk::DeviceSize,
        count: u32, stride: u32)
        = PFN_vkCmdDrawIndirect, down |c| c.fns.fp_v1_0().cmd_draw_indirect;
        [spinlock_slot => before spinlock::bind_locks];
    "vkCmdDrawIndexedIndirect" fn cmd_draw_indexed_indirect(cb: vk::CommandBuffer, buffer: vk::Buffer,
        offset: vk::DeviceSize, count: u32, stride: u32)
        = PFN_vkCmdDrawIndexedIndirect, down |c| c.fns.fp_v1_0().cmd_draw_indexed_indirect;
        [spinlock_slot => before spinlock::bind_locks];
    "vkCmdDrawIndirectCount" | "vkCmdDrawIndirectCountKHR" fn cmd_draw_indirect_count(cb: vk::CommandBuffer,
        buffer: vk::Buffer, offset: vk::DeviceSize, count_buffer: vk::Buffer, count_offset: vk::DeviceSize, max: u32,
        stride: u32)
        = PFN_vkCmdDrawIndirectCount, down |c| c.fns.fp_v1_2().cmd_draw_indirect_count;
        [spinlock_slot => before spinlock::bind_locks];
    "vkCmdDrawIndexedIndirectCount" | "vkCmdDrawIndexedIndirectCountKHR" fn cmd_draw_indexed_indirect_count(
        cb: vk::CommandBuffer, buffer: vk::Buffer, offset: vk::DeviceSize, count_buffer: vk::Buffer,
        count_offset: vk::DeviceSize, max: u32, stride: u32)
        = PFN_vkCmdDrawIndexedIndirectCount, down |c| c.fns.fp_v1_2().cmd_draw_indexed_indirect_count;
        [spinlock_slot => before spinlock::bind_locks];
}

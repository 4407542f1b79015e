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
//! directly), unless `force_enable` asks for every hook: then such a row's
//! entry point is its pass-through instance (`PASS`: the lookup,
//! `debug_panic` and the call down, no chain), the cost `ci/bench` measures.
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
        self.fdm_slot(below_fdm).filter(|f| f.is_binned())
    }
    #[inline]
    fn reserved_slot(&self, _: bool) -> Option<&crate::interlock::reserved::ReservedSet> {
        self.reserved.as_ref()
    }
    /// The spinlock capability where it runs the ordered strategy.
    #[inline]
    fn ordered_slot(&self, _: bool) -> Option<&crate::interlock::reserved::ReservedSet> {
        self.reserved.as_ref().filter(|s| s.ordered.is_some())
    }
    #[inline]
    fn views_slot(&self, _: bool) -> Option<&crate::deferred_views::DeferredViews> {
        self.views.as_ref()
    }
    #[inline]
    fn shading_rate_slot(&self, _: bool) -> Option<&crate::shading_rate::ForceOneByOne> {
        self.shading_rate.as_ref()
    }
    #[inline]
    fn varyings_slot(&self, _: bool) -> Option<&crate::link::Linker> {
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
/// handler gets `next` and calls it; an `own` handler (the density map's)
/// calls down through its own table of the commands below it, which is the
/// rest of this chain ([`below_fdm`]). Observers: `before` sees the
/// dispatchable handle before the chain goes on; `forget` (destroy commands)
/// sees the destroyed handle before it goes down; `created` (create commands
/// of the form `(device, info, allocator, out)`) sees the create info and the
/// new handle after a successful creation.
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
        // SAFETY: the handler's contract: the arguments are those the
        // application (or the layer above) passed to this Vulkan command,
        // which its valid usage rules make valid (the loader calls down with
        // them unchanged), and `next` is the rest of the chain for them.
        unsafe { $handler($core, $s, $($a,)* $next) }
    };
    (@call own, $handler:path, $core:expr, $s:ident, $next:ident, ($($a:ident),*)) => {
        // SAFETY: as for `wrap`: the arguments of a valid call of this command.
        unsafe { $handler($core, $s, $($a),*) }
    };
    (@call forget, $handler:path, $core:expr, $s:ident, $next:ident, ($h:ident, $x:ident $(, $a:ident)*)) => {{
        $handler($s, $x);
        $next($h, $x $(, $a)*)
    }};
    (@call created, $handler:path, $core:expr, $s:ident, $next:ident, ($h:ident, $info:ident, $alloc:ident, $out:ident)) => {{
        let r = $next($h, $info, $alloc, $out);
        if r == vk::Result::SUCCESS {
            // SAFETY: the create info of a valid call (its -pCreateInfo-parameter
            // VUID) and the handle the command wrote on success (its output
            // pointer's -parameter VUID).
            unsafe { $handler($s, &*$info, *$out) };
        }
        r
    }};
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
            #[doc = concat!("`", $name, "` through the layer's handlers (below the density map when `BELOW_FDM`).")]
            ///
            /// # Safety
            /// The loader, the layer above or the density-map capability calls
            /// it with the arguments of a valid call of the command, per its
            /// valid usage rules.
            unsafe extern "system" fn $entry<const BELOW_FDM: bool, const PASS: bool>($h: $ht $(, $a: $t)*) $(-> $ret)? {
                guard::entry(
                    $name,
                    || {
                        let dev = state::device($h);
                        guard::debug_panic(&dev.debug_panic, $name);
                        if PASS {
                            let $c: &DeviceCore = &dev.core;
                            // SAFETY: the next layer's command with the caller's
                            // arguments, unchanged (a valid call of it).
                            return unsafe { ($down)($h $(, $a)*) };
                        }
                        chain!(dev, BELOW_FDM, [$($slot => $kind $handler),*], ($h: $ht $(, $a: $t)*), {
                            let $c: &DeviceCore = &dev.core;
                            // SAFETY: the next layer's command (or the stub that
                            // stands for an optional one it lacks), with the
                            // arguments of a valid call of it: the caller's, or
                            // those a handler made valid in their place.
                            unsafe { ($down)($h $(, $a)*) }
                        })
                    },
                    || {
                        let $c: &DeviceCore = &state::device($h).core;
                        // SAFETY: the next layer's command with the caller's
                        // arguments, unchanged (a valid call of it).
                        unsafe { ($down)($h $(, $a)*) }
                    },
                )
            }
            const _: vk::$pfn = $entry::<false, false>;
        )*

        /// The row of a command name: its entry points (whole chain, below
        /// the density map) and whether a device runs one of its handlers
        /// (`below_fdm` as for the slots).
        fn row(name: &[u8]) -> Option<Row> {
            match name {
                $(
                    n if n == $name.as_bytes() $(|| n == $alias.as_bytes())* => Some(Row {
                        top: pfn!($entry::<false, false> as vk::$pfn),
                        below_fdm: pfn!($entry::<true, false> as vk::$pfn),
                        pass: pfn!($entry::<false, true> as vk::$pfn),
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
    /// Lookup, `debug_panic` and the call down only: what `force_enable`
    /// installs where no capability of the row runs on the device.
    pass: vk::PFN_vkVoidFunction,
    active: fn(&DeviceData, bool) -> bool,
}

/// The entry point for `name` on `data`, where the layer intercepts it there.
pub fn hook_for(data: &DeviceData, name: &[u8]) -> vk::PFN_vkVoidFunction {
    let row = row(name)?;
    if (row.active)(data, false) {
        row.top
    } else if data.plan.force_hooks {
        row.pass
    } else {
        None
    }
}

/// What the density-map capability calls for `name`: the entry point below
/// it where another capability intercepts the command, else `None` (the next
/// layer's command).
pub fn below_fdm(data: &DeviceData, name: &[u8]) -> vk::PFN_vkVoidFunction {
    let row = row(name)?;
    if (row.active)(data, true) {
        row.below_fdm
    } else if data.plan.force_hooks {
        row.pass
    } else {
        None
    }
}

/// Any entry point for `name` (for `vkGetInstanceProcAddr`, which knows no
/// device).
pub fn any_hook(name: &[u8]) -> vk::PFN_vkVoidFunction {
    row(name)?.top
}

/// Commands the layer provides itself, whether or not the chain below has
/// them: `vkCmdEndRendering2EXT` (and its `KHR` alias) of the emulated
/// `VK_EXT_fragment_density_map_offset`.
pub fn provided(data: &DeviceData, name: &[u8]) -> vk::PFN_vkVoidFunction {
    match name {
        b"vkCmdEndRendering2EXT" | b"vkCmdEndRendering2KHR" if data.fdm.is_some() => {
            // SAFETY: a function pointer cast to the type-erased
            // `PFN_vkVoidFunction`; the application calls it as the command
            // it asked for, whose type is `cmd_end_rendering2`'s.
            Some(unsafe {
                std::mem::transmute::<crate::fdm::PfnCmdEndRendering2, unsafe extern "system" fn()>(cmd_end_rendering2)
            })
        }
        _ => None,
    }
}

/// `vkCmdEndRendering2EXT`: the end of a dynamic render pass with its
/// density offsets; the driver gets `vkCmdEndRendering` (it lacks the
/// command and the offsets are the layer's).
///
/// # Safety
/// The application calls it with the arguments of a valid call of the command.
unsafe extern "system" fn cmd_end_rendering2(cb: vk::CommandBuffer, info: *const crate::fdm::RenderingEndInfo) {
    const NAME: &str = "vkCmdEndRendering2EXT";
    guard::entry(
        NAME,
        || {
            let dev = state::device(cb);
            guard::debug_panic(&dev.debug_panic, NAME);
            if let Some(s) = dev.ordered_slot(false) {
                crate::interlock::ordered::end_pass(&dev.core, s, cb);
            }
            match dev.fdm_binned_slot(false) {
                // SAFETY: the arguments of a valid call (the caller's guarantee).
                Some(f) => unsafe { crate::fdm::pass::cmd_end_rendering2(&dev.core, f, cb, info) },
                // SAFETY: the end of the render pass instance the valid call
                // ends, without the structure the driver lacks.
                None => unsafe { (dev.core.fns.fp_v1_3().cmd_end_rendering)(cb) },
            }
        },
        // SAFETY: as above.
        || unsafe { (state::device(cb).core.fns.fp_v1_3().cmd_end_rendering)(cb) },
    )
}

// Commands of optional extensions: the next layer's pointer where it has
// the command (the entry points are handed out only then), else a stub.
/// A stub for a command the chain below lacks.
///
/// # Safety
/// None: it ignores its arguments (`unsafe` only to have the command's type).
unsafe extern "system" fn no_create_shaders(
    _: vk::Device,
    _: u32,
    _: *const vk::ShaderCreateInfoEXT<'_>,
    _: *const vk::AllocationCallbacks<'_>,
    _: *mut vk::ShaderEXT,
) -> vk::Result {
    vk::Result::ERROR_EXTENSION_NOT_PRESENT
}
/// A stub for a command the chain below lacks.
///
/// # Safety
/// None: it ignores its arguments (`unsafe` only to have the command's type).
unsafe extern "system" fn no_bind_shaders(
    _: vk::CommandBuffer,
    _: u32,
    _: *const vk::ShaderStageFlags,
    _: *const vk::ShaderEXT,
) {
}
/// A stub for a command the chain below lacks.
///
/// # Safety
/// None: it ignores its arguments (`unsafe` only to have the command's type).
unsafe extern "system" fn no_set_fragment_shading_rate(
    _: vk::CommandBuffer,
    _: *const vk::Extent2D,
    _: *const [vk::FragmentShadingRateCombinerOpKHR; 2],
) {
}
/// A stub for a command the chain below lacks.
///
/// # Safety
/// None: it ignores its arguments (`unsafe` only to have the command's type).
unsafe extern "system" fn no_begin_transform_feedback(
    _: vk::CommandBuffer,
    _: u32,
    _: u32,
    _: *const vk::Buffer,
    _: *const vk::DeviceSize,
) {
}
/// A stub for a command the chain below lacks.
///
/// # Safety
/// None: it ignores its arguments (`unsafe` only to have the command's type).
unsafe extern "system" fn no_destroy_shader(_: vk::Device, _: vk::ShaderEXT, _: *const vk::AllocationCallbacks<'_>) {}

/// A stub for a command the chain below lacks.
///
/// # Safety
/// None: it ignores its arguments (`unsafe` only to have the command's type).
unsafe extern "system" fn no_queue_present(_: vk::Queue, _: *const vk::PresentInfoKHR<'_>) -> vk::Result {
    vk::Result::ERROR_EXTENSION_NOT_PRESENT
}

unsafe extern "system" fn no_create_swapchain(
    _: vk::Device,
    _: *const vk::SwapchainCreateInfoKHR<'_>,
    _: *const vk::AllocationCallbacks<'_>,
    _: *mut vk::SwapchainKHR,
) -> vk::Result {
    vk::Result::ERROR_EXTENSION_NOT_PRESENT
}

impl DeviceCore {
    fn down_queue_present(&self) -> vk::PFN_vkQueuePresentKHR {
        self.next_queue_present.unwrap_or(no_queue_present)
    }
    fn down_create_swapchain(&self) -> vk::PFN_vkCreateSwapchainKHR {
        self.next_create_swapchain.unwrap_or(no_create_swapchain)
    }
    fn down_create_shaders(&self) -> vk::PFN_vkCreateShadersEXT {
        self.next_create_shaders.unwrap_or(no_create_shaders)
    }
    fn down_bind_shaders(&self) -> vk::PFN_vkCmdBindShadersEXT {
        self.shader_object.as_ref().map_or(no_bind_shaders, |f| f.cmd_bind_shaders_ext)
    }
    fn down_set_fragment_shading_rate(&self) -> vk::PFN_vkCmdSetFragmentShadingRateKHR {
        self.next_set_fragment_shading_rate.unwrap_or(no_set_fragment_shading_rate)
    }
    fn down_begin_transform_feedback(&self) -> vk::PFN_vkCmdBeginTransformFeedbackEXT {
        self.next_begin_transform_feedback.unwrap_or(no_begin_transform_feedback)
    }
    fn down_destroy_shader(&self) -> vk::PFN_vkDestroyShaderEXT {
        self.shader_object.as_ref().map_or(no_destroy_shader, |f| f.destroy_shader_ext)
    }
}

use crate::interlock::{ordered, reserved};
use crate::{deferred_views, fdm, link, shader, shading_rate};

// The captured dynamic-state commands' rows are generated
// (`layer/gen/dynamic_state.py`, from `layer/gen/dynamic_state.json`).
include!("generated/dynamic_state_rows.rs");

with_dynamic_state_rows!(device_commands {
    // Resources the density map translates or remembers.
    "vkCreateImage" fn create_image(device: vk::Device, info: *const vk::ImageCreateInfo<'_>, alloc: *const vk::AllocationCallbacks<'_>, out: *mut vk::Image) -> vk::Result
        = PFN_vkCreateImage, down |dc| dc.fns.fp_v1_0().create_image;
        [fdm_slot => own fdm::create_image, ordered_slot => created ordered::note_image];
    "vkDestroyImage" fn destroy_image(device: vk::Device, handle: vk::Image, alloc: *const vk::AllocationCallbacks<'_>)
        = PFN_vkDestroyImage, down |dc| dc.fns.fp_v1_0().destroy_image;
        [fdm_slot => forget fdm::Fdm::forget_image, views_slot => wrap deferred_views::destroy_image];
    "vkCreateImageView" fn create_image_view(device: vk::Device, info: *const vk::ImageViewCreateInfo<'_>, alloc: *const vk::AllocationCallbacks<'_>, out: *mut vk::ImageView) -> vk::Result
        = PFN_vkCreateImageView, down |dc| dc.fns.fp_v1_0().create_image_view;
        [fdm_slot => own fdm::create_image_view, views_slot => created deferred_views::DeferredViews::note_view];
    "vkDestroyImageView" fn destroy_image_view(device: vk::Device, handle: vk::ImageView, alloc: *const vk::AllocationCallbacks<'_>)
        = PFN_vkDestroyImageView, down |dc| dc.fns.fp_v1_0().destroy_image_view;
        [fdm_slot => forget fdm::Fdm::forget_view, views_slot => wrap deferred_views::destroy_image_view];
    "vkCreateSampler" fn create_sampler(device: vk::Device, info: *const vk::SamplerCreateInfo<'_>, alloc: *const vk::AllocationCallbacks<'_>, out: *mut vk::Sampler) -> vk::Result
        = PFN_vkCreateSampler, down |dc| dc.fns.fp_v1_0().create_sampler;
        [fdm_slot => own fdm::create_sampler];
    "vkCreateRenderPass" fn create_render_pass(device: vk::Device, info: *const vk::RenderPassCreateInfo<'_>, alloc: *const vk::AllocationCallbacks<'_>, out: *mut vk::RenderPass) -> vk::Result
        = PFN_vkCreateRenderPass, down |dc| dc.fns.fp_v1_0().create_render_pass;
        [fdm_slot => own fdm::create_render_pass, ordered_slot => wrap ordered::create_render_pass];
    "vkCreateRenderPass2" | "vkCreateRenderPass2KHR" fn create_render_pass2(device: vk::Device, info: *const vk::RenderPassCreateInfo2<'_>, alloc: *const vk::AllocationCallbacks<'_>, out: *mut vk::RenderPass) -> vk::Result
        = PFN_vkCreateRenderPass2, down |dc| dc.fns.fp_v1_2().create_render_pass2;
        [fdm_slot => own fdm::create_render_pass, ordered_slot => wrap ordered::create_render_pass];
    "vkDestroyRenderPass" fn destroy_render_pass(device: vk::Device, handle: vk::RenderPass, alloc: *const vk::AllocationCallbacks<'_>)
        = PFN_vkDestroyRenderPass, down |dc| dc.fns.fp_v1_0().destroy_render_pass;
        [fdm_slot => forget fdm::Fdm::forget_render_pass, ordered_slot => forget ordered::forget_render_pass];
    "vkCreateFramebuffer" fn create_framebuffer(device: vk::Device, info: *const vk::FramebufferCreateInfo<'_>, alloc: *const vk::AllocationCallbacks<'_>, out: *mut vk::Framebuffer) -> vk::Result
        = PFN_vkCreateFramebuffer, down |dc| dc.fns.fp_v1_0().create_framebuffer;
        [fdm_slot => own fdm::create_framebuffer, ordered_slot => created ordered::note_framebuffer];
    // The ordered interlock strategy sizes its cells by the render targets made before them.
    "vkCreateSwapchainKHR" fn create_swapchain(device: vk::Device, info: *const vk::SwapchainCreateInfoKHR<'_>,
        alloc: *const vk::AllocationCallbacks<'_>, out: *mut vk::SwapchainKHR) -> vk::Result
        = PFN_vkCreateSwapchainKHR, down |dc| dc.down_create_swapchain();
        [ordered_slot => created ordered::note_swapchain];
    "vkDestroyFramebuffer" fn destroy_framebuffer(device: vk::Device, handle: vk::Framebuffer, alloc: *const vk::AllocationCallbacks<'_>)
        = PFN_vkDestroyFramebuffer, down |dc| dc.fns.fp_v1_0().destroy_framebuffer;
        [fdm_slot => forget fdm::Fdm::forget_framebuffer];
    "vkCreateDescriptorSetLayout" fn create_descriptor_set_layout(device: vk::Device, info: *const vk::DescriptorSetLayoutCreateInfo<'_>, alloc: *const vk::AllocationCallbacks<'_>, out: *mut vk::DescriptorSetLayout) -> vk::Result
        = PFN_vkCreateDescriptorSetLayout, down |dc| dc.fns.fp_v1_0().create_descriptor_set_layout;
        [fdm_binned_slot => created fdm::Fdm::note_set_layout, varyings_slot => created link::Linker::note_set_layout];
    "vkDestroyDescriptorSetLayout" fn destroy_descriptor_set_layout(device: vk::Device, handle: vk::DescriptorSetLayout, alloc: *const vk::AllocationCallbacks<'_>)
        = PFN_vkDestroyDescriptorSetLayout, down |dc| dc.fns.fp_v1_0().destroy_descriptor_set_layout;
        [fdm_binned_slot => forget fdm::Fdm::forget_set_layout];
    "vkFreeDescriptorSets" fn free_descriptor_sets(device: vk::Device, pool: vk::DescriptorPool, n: u32, sets: *const vk::DescriptorSet) -> vk::Result
        = PFN_vkFreeDescriptorSets, down |dc| dc.fns.fp_v1_0().free_descriptor_sets;
        [fdm_binned_slot => own fdm::descriptors::free_descriptor_sets, views_slot => wrap deferred_views::free_descriptor_sets];
    "vkResetDescriptorPool" fn reset_descriptor_pool(device: vk::Device, pool: vk::DescriptorPool, flags: vk::DescriptorPoolResetFlags) -> vk::Result
        = PFN_vkResetDescriptorPool, down |dc| dc.fns.fp_v1_0().reset_descriptor_pool;
        [fdm_binned_slot => forget fdm::Fdm::forget_pool, views_slot => wrap deferred_views::reset_descriptor_pool];
    "vkDestroyDescriptorPool" fn destroy_descriptor_pool(device: vk::Device, pool: vk::DescriptorPool, alloc: *const vk::AllocationCallbacks<'_>)
        = PFN_vkDestroyDescriptorPool, down |dc| dc.fns.fp_v1_0().destroy_descriptor_pool;
        [fdm_binned_slot => forget fdm::Fdm::forget_pool, views_slot => wrap deferred_views::destroy_descriptor_pool];
    "vkAllocateDescriptorSets" fn allocate_descriptor_sets(device: vk::Device, info: *const vk::DescriptorSetAllocateInfo<'_>, out: *mut vk::DescriptorSet) -> vk::Result
        = PFN_vkAllocateDescriptorSets, down |dc| dc.fns.fp_v1_0().allocate_descriptor_sets;
        [fdm_binned_slot => own fdm::descriptors::allocate_descriptor_sets, views_slot => wrap deferred_views::allocate_descriptor_sets];
    "vkUpdateDescriptorSets" fn update_descriptor_sets(device: vk::Device, nw: u32, writes: *const vk::WriteDescriptorSet<'_>, nc: u32, copies: *const vk::CopyDescriptorSet<'_>)
        = PFN_vkUpdateDescriptorSets, down |dc| dc.fns.fp_v1_0().update_descriptor_sets;
        [fdm_binned_slot => own fdm::descriptors::update_descriptor_sets, views_slot => wrap deferred_views::update_descriptor_sets];
    "vkUpdateDescriptorSetWithTemplate" | "vkUpdateDescriptorSetWithTemplateKHR" fn update_descriptor_set_with_template(device: vk::Device, set: vk::DescriptorSet, template: vk::DescriptorUpdateTemplate, data: *const std::ffi::c_void)
        = PFN_vkUpdateDescriptorSetWithTemplate, down |dc| dc.fns.fp_v1_1().update_descriptor_set_with_template;
        [fdm_binned_slot => own fdm::descriptors::update_descriptor_set_with_template, views_slot => wrap deferred_views::update_descriptor_set_with_template];
    "vkCreateDescriptorUpdateTemplate" | "vkCreateDescriptorUpdateTemplateKHR" fn create_descriptor_update_template(device: vk::Device, info: *const vk::DescriptorUpdateTemplateCreateInfo<'_>, alloc: *const vk::AllocationCallbacks<'_>, out: *mut vk::DescriptorUpdateTemplate) -> vk::Result
        = PFN_vkCreateDescriptorUpdateTemplate, down |dc| dc.fns.fp_v1_1().create_descriptor_update_template;
        [views_slot => created deferred_views::DeferredViews::note_template];
    "vkDestroyDescriptorUpdateTemplate" | "vkDestroyDescriptorUpdateTemplateKHR" fn destroy_descriptor_update_template(device: vk::Device, handle: vk::DescriptorUpdateTemplate, alloc: *const vk::AllocationCallbacks<'_>)
        = PFN_vkDestroyDescriptorUpdateTemplate, down |dc| dc.fns.fp_v1_1().destroy_descriptor_update_template;
        [views_slot => forget deferred_views::DeferredViews::forget_template];

    // Shaders and pipelines: the density map makes per-area variants; the shader route composes
    // the capabilities that rewrite SPIR-V (interlock, varying linking) and judge pipelines by their
    // shaders (1x1 shading rate, spinlock).
    "vkCreateShaderModule" fn create_shader_module(device: vk::Device, info: *const vk::ShaderModuleCreateInfo<'_>, alloc: *const vk::AllocationCallbacks<'_>, out: *mut vk::ShaderModule) -> vk::Result
        = PFN_vkCreateShaderModule, down |dc| dc.fns.fp_v1_0().create_shader_module;
        [fdm_slot => own fdm::create_shader_module, shaders_slot => wrap shader::create_shader_module];
    "vkDestroyShaderModule" fn destroy_shader_module(device: vk::Device, handle: vk::ShaderModule, alloc: *const vk::AllocationCallbacks<'_>)
        = PFN_vkDestroyShaderModule, down |dc| dc.fns.fp_v1_0().destroy_shader_module;
        [fdm_slot => forget fdm::Fdm::forget_module, reserved_slot => forget reserved::ReservedSet::forget_module,
         shading_rate_slot => forget shading_rate::ForceOneByOne::forget_module,
         varyings_slot => forget link::Linker::forget];
    "vkCreateGraphicsPipelines" fn create_graphics_pipelines(device: vk::Device, cache: vk::PipelineCache, count: u32, infos: *const vk::GraphicsPipelineCreateInfo<'_>, alloc: *const vk::AllocationCallbacks<'_>, out: *mut vk::Pipeline) -> vk::Result
        = PFN_vkCreateGraphicsPipelines, down |dc| dc.fns.fp_v1_0().create_graphics_pipelines;
        [fdm_slot => own fdm::create_graphics_pipelines, shaders_slot => wrap shader::create_graphics_pipelines];
    "vkDestroyPipeline" fn destroy_pipeline(device: vk::Device, handle: vk::Pipeline, alloc: *const vk::AllocationCallbacks<'_>)
        = PFN_vkDestroyPipeline, down |dc| dc.fns.fp_v1_0().destroy_pipeline;
        [fdm_slot => forget fdm::Fdm::forget_pipeline, reserved_slot => forget reserved::ReservedSet::forget_pipeline,
         shading_rate_slot => forget shading_rate::ForceOneByOne::forget_pipeline,
         varyings_slot => forget link::Linker::forget_pipeline];

    // Command buffers and synchronization.
    "vkAllocateCommandBuffers" fn allocate_command_buffers(device: vk::Device, info: *const vk::CommandBufferAllocateInfo<'_>, out: *mut vk::CommandBuffer) -> vk::Result
        = PFN_vkAllocateCommandBuffers, down |dc| dc.fns.fp_v1_0().allocate_command_buffers;
        [fdm_binned_slot => own fdm::command_buffers::allocate_command_buffers,
         ordered_slot => wrap ordered::allocate_command_buffers];
    "vkFreeCommandBuffers" fn free_command_buffers(device: vk::Device, pool: vk::CommandPool, n: u32, cbs: *const vk::CommandBuffer)
        = PFN_vkFreeCommandBuffers, down |dc| dc.fns.fp_v1_0().free_command_buffers;
        [fdm_binned_slot => own fdm::command_buffers::free_command_buffers];
    "vkDestroyCommandPool" fn destroy_command_pool(device: vk::Device, handle: vk::CommandPool, alloc: *const vk::AllocationCallbacks<'_>)
        = PFN_vkDestroyCommandPool, down |dc| dc.fns.fp_v1_0().destroy_command_pool;
        [fdm_binned_slot => forget fdm::Fdm::forget_command_pool];
    "vkBeginCommandBuffer" fn begin_command_buffer(cb: vk::CommandBuffer, info: *const vk::CommandBufferBeginInfo<'_>) -> vk::Result
        = PFN_vkBeginCommandBuffer, down |dc| dc.fns.fp_v1_0().begin_command_buffer;
        [fdm_binned_slot => own fdm::command_buffers::begin_command_buffer, reserved_slot => before reserved::forget_bound,
         ordered_slot => wrap ordered::begin_command_buffer, shading_rate_slot => before shading_rate::begin_command_buffer];
    "vkCmdPipelineBarrier" fn cmd_pipeline_barrier(cb: vk::CommandBuffer, src: vk::PipelineStageFlags, dst: vk::PipelineStageFlags, deps: vk::DependencyFlags, nm: u32, m: *const vk::MemoryBarrier<'_>, nb: u32, b: *const vk::BufferMemoryBarrier<'_>, ni: u32, i: *const vk::ImageMemoryBarrier<'_>)
        = PFN_vkCmdPipelineBarrier, down |dc| dc.fns.fp_v1_0().cmd_pipeline_barrier;
        [fdm_slot => own fdm::command_buffers::cmd_pipeline_barrier];
    "vkCmdPipelineBarrier2" | "vkCmdPipelineBarrier2KHR" fn cmd_pipeline_barrier2(cb: vk::CommandBuffer, d: *const vk::DependencyInfo<'_>)
        = PFN_vkCmdPipelineBarrier2, down |dc| dc.fns.fp_v1_3().cmd_pipeline_barrier2;
        [fdm_slot => own fdm::command_buffers::cmd_pipeline_barrier2];
    "vkCmdWaitEvents" fn cmd_wait_events(cb: vk::CommandBuffer, n: u32, events: *const vk::Event, src: vk::PipelineStageFlags, dst: vk::PipelineStageFlags, nm: u32, m: *const vk::MemoryBarrier<'_>, nb: u32, b: *const vk::BufferMemoryBarrier<'_>, ni: u32, i: *const vk::ImageMemoryBarrier<'_>)
        = PFN_vkCmdWaitEvents, down |dc| dc.fns.fp_v1_0().cmd_wait_events;
        [fdm_slot => own fdm::command_buffers::cmd_wait_events];
    "vkCmdBeginQuery" fn cmd_begin_query(cb: vk::CommandBuffer, pool: vk::QueryPool, q: u32, flags: vk::QueryControlFlags)
        = PFN_vkCmdBeginQuery, down |dc| dc.fns.fp_v1_0().cmd_begin_query;
        [fdm_binned_slot => own fdm::command_buffers::cmd_begin_query, ordered_slot => wrap ordered::cmd_begin_query];
    "vkCmdEndQuery" fn cmd_end_query(cb: vk::CommandBuffer, pool: vk::QueryPool, q: u32)
        = PFN_vkCmdEndQuery, down |dc| dc.fns.fp_v1_0().cmd_end_query;
        [fdm_binned_slot => own fdm::command_buffers::cmd_end_query, ordered_slot => wrap ordered::cmd_end_query];
    "vkCmdWriteTimestamp" fn cmd_write_timestamp(cb: vk::CommandBuffer, stage: vk::PipelineStageFlags, pool: vk::QueryPool, q: u32)
        = PFN_vkCmdWriteTimestamp, down |dc| dc.fns.fp_v1_0().cmd_write_timestamp;
        [fdm_binned_slot => own fdm::command_buffers::cmd_write_timestamp];

    // Passes.
    "vkCmdBeginRenderPass" fn cmd_begin_render_pass(cb: vk::CommandBuffer, info: *const vk::RenderPassBeginInfo<'_>, contents: vk::SubpassContents)
        = PFN_vkCmdBeginRenderPass, down |dc| dc.fns.fp_v1_0().cmd_begin_render_pass;
        [fdm_binned_slot => own fdm::pass::cmd_begin_render_pass, ordered_slot => wrap ordered::cmd_begin_render_pass];
    "vkCmdBeginRenderPass2" | "vkCmdBeginRenderPass2KHR" fn cmd_begin_render_pass2(cb: vk::CommandBuffer, info: *const vk::RenderPassBeginInfo<'_>, sub: *const vk::SubpassBeginInfo<'_>)
        = PFN_vkCmdBeginRenderPass2, down |dc| dc.fns.fp_v1_2().cmd_begin_render_pass2;
        [fdm_binned_slot => own fdm::pass::cmd_begin_render_pass2, ordered_slot => wrap ordered::cmd_begin_render_pass2];
    "vkCmdNextSubpass" fn cmd_next_subpass(cb: vk::CommandBuffer, contents: vk::SubpassContents)
        = PFN_vkCmdNextSubpass, down |dc| dc.fns.fp_v1_0().cmd_next_subpass;
        [fdm_binned_slot => own fdm::pass::cmd_next_subpass, ordered_slot => wrap ordered::cmd_next_subpass];
    "vkCmdNextSubpass2" | "vkCmdNextSubpass2KHR" fn cmd_next_subpass2(cb: vk::CommandBuffer, b: *const vk::SubpassBeginInfo<'_>, e: *const vk::SubpassEndInfo<'_>)
        = PFN_vkCmdNextSubpass2, down |dc| dc.fns.fp_v1_2().cmd_next_subpass2;
        [fdm_binned_slot => own fdm::pass::cmd_next_subpass2, ordered_slot => wrap ordered::cmd_next_subpass2];
    "vkCmdEndRenderPass" fn cmd_end_render_pass(cb: vk::CommandBuffer)
        = PFN_vkCmdEndRenderPass, down |dc| dc.fns.fp_v1_0().cmd_end_render_pass;
        [fdm_binned_slot => own fdm::pass::cmd_end_render_pass, ordered_slot => before ordered::end_pass];
    "vkCmdEndRenderPass2" | "vkCmdEndRenderPass2KHR" fn cmd_end_render_pass2(cb: vk::CommandBuffer, e: *const vk::SubpassEndInfo<'_>)
        = PFN_vkCmdEndRenderPass2, down |dc| dc.fns.fp_v1_2().cmd_end_render_pass2;
        [fdm_binned_slot => own fdm::pass::cmd_end_render_pass2, ordered_slot => before ordered::end_pass];
    "vkCmdBeginRendering" | "vkCmdBeginRenderingKHR" fn cmd_begin_rendering(cb: vk::CommandBuffer, info: *const vk::RenderingInfo<'_>)
        = PFN_vkCmdBeginRendering, down |dc| dc.fns.fp_v1_3().cmd_begin_rendering;
        [fdm_slot => own fdm::pass::cmd_begin_rendering, ordered_slot => wrap ordered::cmd_begin_rendering];
    "vkCmdEndRendering" | "vkCmdEndRenderingKHR" fn cmd_end_rendering(cb: vk::CommandBuffer)
        = PFN_vkCmdEndRendering, down |dc| dc.fns.fp_v1_3().cmd_end_rendering;
        [fdm_binned_slot => own fdm::pass::cmd_end_rendering, ordered_slot => before ordered::end_pass];
    "vkCmdExecuteCommands" fn cmd_execute_commands(cb: vk::CommandBuffer, n: u32, cbs: *const vk::CommandBuffer)
        = PFN_vkCmdExecuteCommands, down |dc| dc.fns.fp_v1_0().cmd_execute_commands;
        [fdm_binned_slot => own fdm::pass::cmd_execute_commands];

    // What a density-map pass captures; draws also bind the spinlock's lock set.
    "vkCmdBindPipeline" fn cmd_bind_pipeline(cb: vk::CommandBuffer, point: vk::PipelineBindPoint, p: vk::Pipeline)
        = PFN_vkCmdBindPipeline, down |dc| dc.fns.fp_v1_0().cmd_bind_pipeline;
        [fdm_binned_slot => own fdm::capture::cmd_bind_pipeline, reserved_slot => wrap reserved::cmd_bind_pipeline, shading_rate_slot => wrap shading_rate::cmd_bind_pipeline];
    "vkCmdBindDescriptorSets" fn cmd_bind_descriptor_sets(cb: vk::CommandBuffer, point: vk::PipelineBindPoint, layout: vk::PipelineLayout, first: u32, n: u32, sets: *const vk::DescriptorSet, no: u32, offsets: *const u32)
        = PFN_vkCmdBindDescriptorSets, down |dc| dc.fns.fp_v1_0().cmd_bind_descriptor_sets;
        [fdm_binned_slot => own fdm::capture::cmd_bind_descriptor_sets];
    "vkCmdBindVertexBuffers" fn cmd_bind_vertex_buffers(cb: vk::CommandBuffer, first: u32, n: u32, buffers: *const vk::Buffer, offsets: *const vk::DeviceSize)
        = PFN_vkCmdBindVertexBuffers, down |dc| dc.fns.fp_v1_0().cmd_bind_vertex_buffers;
        [fdm_binned_slot => own fdm::capture::cmd_bind_vertex_buffers];
    "vkCmdBindVertexBuffers2" | "vkCmdBindVertexBuffers2EXT" fn cmd_bind_vertex_buffers2(cb: vk::CommandBuffer, first: u32, n: u32, buffers: *const vk::Buffer, offsets: *const vk::DeviceSize, sizes: *const vk::DeviceSize, strides: *const vk::DeviceSize)
        = PFN_vkCmdBindVertexBuffers2, down |dc| dc.fns.fp_v1_3().cmd_bind_vertex_buffers2;
        [fdm_binned_slot => own fdm::capture::cmd_bind_vertex_buffers2];
    "vkCmdBindIndexBuffer" fn cmd_bind_index_buffer(cb: vk::CommandBuffer, b: vk::Buffer, o: vk::DeviceSize, ty: vk::IndexType)
        = PFN_vkCmdBindIndexBuffer, down |dc| dc.fns.fp_v1_0().cmd_bind_index_buffer;
        [fdm_binned_slot => own fdm::capture::cmd_bind_index_buffer];
    "vkCmdPushConstants" fn cmd_push_constants(cb: vk::CommandBuffer, layout: vk::PipelineLayout, stages: vk::ShaderStageFlags, offset: u32, size: u32, data: *const std::ffi::c_void)
        = PFN_vkCmdPushConstants, down |dc| dc.fns.fp_v1_0().cmd_push_constants;
        [fdm_binned_slot => own fdm::capture::cmd_push_constants];
    "vkCmdSetViewport" fn cmd_set_viewport(cb: vk::CommandBuffer, first: u32, n: u32, vp: *const vk::Viewport)
        = PFN_vkCmdSetViewport, down |dc| dc.fns.fp_v1_0().cmd_set_viewport;
        [fdm_binned_slot => own fdm::capture::cmd_set_viewport];
    "vkCmdSetScissor" fn cmd_set_scissor(cb: vk::CommandBuffer, first: u32, n: u32, s: *const vk::Rect2D)
        = PFN_vkCmdSetScissor, down |dc| dc.fns.fp_v1_0().cmd_set_scissor;
        [fdm_binned_slot => own fdm::capture::cmd_set_scissor];
    "vkCmdSetLineWidth" fn cmd_set_line_width(cb: vk::CommandBuffer, w: f32)
        = PFN_vkCmdSetLineWidth, down |dc| dc.fns.fp_v1_0().cmd_set_line_width;
        [fdm_binned_slot => own fdm::capture::cmd_set_line_width];
    "vkCmdSetDepthBias" fn cmd_set_depth_bias(cb: vk::CommandBuffer, a: f32, b: f32, c: f32)
        = PFN_vkCmdSetDepthBias, down |dc| dc.fns.fp_v1_0().cmd_set_depth_bias;
        [fdm_binned_slot => own fdm::capture::cmd_set_depth_bias];
    "vkCmdSetBlendConstants" fn cmd_set_blend_constants(cb: vk::CommandBuffer, c: *const [f32; 4])
        = PFN_vkCmdSetBlendConstants, down |dc| dc.fns.fp_v1_0().cmd_set_blend_constants;
        [fdm_binned_slot => own fdm::capture::cmd_set_blend_constants];
    "vkCmdSetDepthBounds" fn cmd_set_depth_bounds(cb: vk::CommandBuffer, a: f32, b: f32)
        = PFN_vkCmdSetDepthBounds, down |dc| dc.fns.fp_v1_0().cmd_set_depth_bounds;
        [fdm_binned_slot => own fdm::capture::cmd_set_depth_bounds];
    "vkCmdSetStencilCompareMask" fn cmd_set_stencil_compare_mask(cb: vk::CommandBuffer, face: vk::StencilFaceFlags, m: u32)
        = PFN_vkCmdSetStencilCompareMask, down |dc| dc.fns.fp_v1_0().cmd_set_stencil_compare_mask;
        [fdm_binned_slot => own fdm::capture::cmd_set_stencil_compare_mask];
    "vkCmdSetStencilWriteMask" fn cmd_set_stencil_write_mask(cb: vk::CommandBuffer, face: vk::StencilFaceFlags, m: u32)
        = PFN_vkCmdSetStencilWriteMask, down |dc| dc.fns.fp_v1_0().cmd_set_stencil_write_mask;
        [fdm_binned_slot => own fdm::capture::cmd_set_stencil_write_mask];
    "vkCmdSetStencilReference" fn cmd_set_stencil_reference(cb: vk::CommandBuffer, face: vk::StencilFaceFlags, m: u32)
        = PFN_vkCmdSetStencilReference, down |dc| dc.fns.fp_v1_0().cmd_set_stencil_reference;
        [fdm_binned_slot => own fdm::capture::cmd_set_stencil_reference];
    "vkCmdDraw" fn cmd_draw(cb: vk::CommandBuffer, a: u32, b: u32, c: u32, d: u32)
        = PFN_vkCmdDraw, down |dc| dc.fns.fp_v1_0().cmd_draw;
        [fdm_binned_slot => own fdm::capture::cmd_draw, reserved_slot => wrap ordered::cmd_draw];
    "vkCmdDrawIndexed" fn cmd_draw_indexed(cb: vk::CommandBuffer, a: u32, b: u32, c: u32, o: i32, d: u32)
        = PFN_vkCmdDrawIndexed, down |dc| dc.fns.fp_v1_0().cmd_draw_indexed;
        [fdm_binned_slot => own fdm::capture::cmd_draw_indexed, reserved_slot => wrap ordered::cmd_draw_indexed];
    "vkCmdDrawIndirect" fn cmd_draw_indirect(cb: vk::CommandBuffer, b: vk::Buffer, o: vk::DeviceSize, n: u32, s: u32)
        = PFN_vkCmdDrawIndirect, down |dc| dc.fns.fp_v1_0().cmd_draw_indirect;
        [fdm_binned_slot => own fdm::capture::cmd_draw_indirect, reserved_slot => wrap ordered::cmd_draw_indirect];
    "vkCmdDrawIndexedIndirect" fn cmd_draw_indexed_indirect(cb: vk::CommandBuffer, b: vk::Buffer, o: vk::DeviceSize, n: u32, s: u32)
        = PFN_vkCmdDrawIndexedIndirect, down |dc| dc.fns.fp_v1_0().cmd_draw_indexed_indirect;
        [fdm_binned_slot => own fdm::capture::cmd_draw_indexed_indirect, reserved_slot => wrap ordered::cmd_draw_indexed_indirect];
    "vkCmdDrawIndirectCount" | "vkCmdDrawIndirectCountKHR" | "vkCmdDrawIndirectCountAMD" fn cmd_draw_indirect_count(cb: vk::CommandBuffer, b: vk::Buffer, o: vk::DeviceSize, c: vk::Buffer, co: vk::DeviceSize, m: u32, s: u32)
        = PFN_vkCmdDrawIndirectCount, down |dc| dc.fns.fp_v1_2().cmd_draw_indirect_count;
        [fdm_binned_slot => own fdm::capture::cmd_draw_indirect_count, reserved_slot => wrap ordered::cmd_draw_indirect_count];
    "vkCmdDrawIndexedIndirectCount" | "vkCmdDrawIndexedIndirectCountKHR" | "vkCmdDrawIndexedIndirectCountAMD" fn cmd_draw_indexed_indirect_count(cb: vk::CommandBuffer, b: vk::Buffer, o: vk::DeviceSize, c: vk::Buffer, co: vk::DeviceSize, m: u32, s: u32)
        = PFN_vkCmdDrawIndexedIndirectCount, down |dc| dc.fns.fp_v1_2().cmd_draw_indexed_indirect_count;
        [fdm_binned_slot => own fdm::capture::cmd_draw_indexed_indirect_count, reserved_slot => wrap ordered::cmd_draw_indexed_indirect_count];
    "vkCmdDrawMultiEXT" fn cmd_draw_multi(cb: vk::CommandBuffer, n: u32, draws: *const vk::MultiDrawInfoEXT, instances: u32, first: u32, stride: u32)
        = PFN_vkCmdDrawMultiEXT, down |dc| dc.state.multi_draw.cmd_draw_multi_ext;
        [fdm_binned_slot => own fdm::capture::cmd_draw_multi, reserved_slot => wrap ordered::cmd_draw_multi];
    "vkCmdDrawMultiIndexedEXT" fn cmd_draw_multi_indexed(cb: vk::CommandBuffer, n: u32, draws: *const vk::MultiDrawIndexedInfoEXT, instances: u32, first: u32, stride: u32, offset: *const i32)
        = PFN_vkCmdDrawMultiIndexedEXT, down |dc| dc.state.multi_draw.cmd_draw_multi_indexed_ext;
        [fdm_binned_slot => own fdm::capture::cmd_draw_multi_indexed, reserved_slot => wrap ordered::cmd_draw_multi_indexed];
    "vkCmdSetViewportWithCount" | "vkCmdSetViewportWithCountEXT" fn cmd_set_viewport_with_count(cb: vk::CommandBuffer, n: u32, vp: *const vk::Viewport)
        = PFN_vkCmdSetViewportWithCount, down |dc| dc.fns.fp_v1_3().cmd_set_viewport_with_count;
        [fdm_binned_slot => own fdm::capture::cmd_set_viewport_with_count];
    "vkCmdSetScissorWithCount" | "vkCmdSetScissorWithCountEXT" fn cmd_set_scissor_with_count(cb: vk::CommandBuffer, n: u32, sc: *const vk::Rect2D)
        = PFN_vkCmdSetScissorWithCount, down |dc| dc.fns.fp_v1_3().cmd_set_scissor_with_count;
        [fdm_binned_slot => own fdm::capture::cmd_set_scissor_with_count];
    "vkCmdClearAttachments" fn cmd_clear_attachments(cb: vk::CommandBuffer, n: u32, a: *const vk::ClearAttachment, nr: u32, r: *const vk::ClearRect)
        = PFN_vkCmdClearAttachments, down |dc| dc.fns.fp_v1_0().cmd_clear_attachments;
        [fdm_binned_slot => own fdm::capture::cmd_clear_attachments];
    "vkCmdBeginTransformFeedbackEXT" fn cmd_begin_transform_feedback(cb: vk::CommandBuffer, first: u32, n: u32, buffers: *const vk::Buffer, offsets: *const vk::DeviceSize)
        = PFN_vkCmdBeginTransformFeedbackEXT, down |dc| dc.down_begin_transform_feedback();
        [fdm_binned_slot => own fdm::capture::cmd_begin_transform_feedback];

    // Transfers that may write a density map, and submission.
    "vkCmdCopyBufferToImage" fn cmd_copy_buffer_to_image(cb: vk::CommandBuffer, src: vk::Buffer, dst: vk::Image, layout: vk::ImageLayout, n: u32, r: *const vk::BufferImageCopy)
        = PFN_vkCmdCopyBufferToImage, down |dc| dc.fns.fp_v1_0().cmd_copy_buffer_to_image;
        [fdm_binned_slot => own fdm::queue::cmd_copy_buffer_to_image];
    "vkCmdCopyImage" fn cmd_copy_image(cb: vk::CommandBuffer, src: vk::Image, sl: vk::ImageLayout, dst: vk::Image, dl: vk::ImageLayout, n: u32, r: *const vk::ImageCopy)
        = PFN_vkCmdCopyImage, down |dc| dc.fns.fp_v1_0().cmd_copy_image;
        [fdm_binned_slot => own fdm::queue::cmd_copy_image];
    "vkCmdBlitImage" fn cmd_blit_image(cb: vk::CommandBuffer, src: vk::Image, sl: vk::ImageLayout, dst: vk::Image, dl: vk::ImageLayout, n: u32, r: *const vk::ImageBlit, filter: vk::Filter)
        = PFN_vkCmdBlitImage, down |dc| dc.fns.fp_v1_0().cmd_blit_image;
        [fdm_binned_slot => own fdm::queue::cmd_blit_image];
    "vkCmdResolveImage" fn cmd_resolve_image(cb: vk::CommandBuffer, src: vk::Image, sl: vk::ImageLayout, dst: vk::Image, dl: vk::ImageLayout, n: u32, r: *const vk::ImageResolve)
        = PFN_vkCmdResolveImage, down |dc| dc.fns.fp_v1_0().cmd_resolve_image;
        [fdm_binned_slot => own fdm::queue::cmd_resolve_image];
    "vkCmdClearColorImage" fn cmd_clear_color_image(cb: vk::CommandBuffer, image: vk::Image, l: vk::ImageLayout, c: *const vk::ClearColorValue, n: u32, r: *const vk::ImageSubresourceRange)
        = PFN_vkCmdClearColorImage, down |dc| dc.fns.fp_v1_0().cmd_clear_color_image;
        [fdm_binned_slot => own fdm::queue::cmd_clear_color_image];
    "vkCmdCopyBufferToImage2" | "vkCmdCopyBufferToImage2KHR" fn cmd_copy_buffer_to_image2(cb: vk::CommandBuffer, i: *const vk::CopyBufferToImageInfo2)
        = PFN_vkCmdCopyBufferToImage2, down |dc| dc.fns.fp_v1_3().cmd_copy_buffer_to_image2;
        [fdm_binned_slot => own fdm::queue::cmd_copy_buffer_to_image2];
    "vkCmdCopyImage2" | "vkCmdCopyImage2KHR" fn cmd_copy_image2(cb: vk::CommandBuffer, i: *const vk::CopyImageInfo2)
        = PFN_vkCmdCopyImage2, down |dc| dc.fns.fp_v1_3().cmd_copy_image2;
        [fdm_binned_slot => own fdm::queue::cmd_copy_image2];
    "vkCmdBlitImage2" | "vkCmdBlitImage2KHR" fn cmd_blit_image2(cb: vk::CommandBuffer, i: *const vk::BlitImageInfo2)
        = PFN_vkCmdBlitImage2, down |dc| dc.fns.fp_v1_3().cmd_blit_image2;
        [fdm_binned_slot => own fdm::queue::cmd_blit_image2];
    "vkCmdResolveImage2" | "vkCmdResolveImage2KHR" fn cmd_resolve_image2(cb: vk::CommandBuffer, i: *const vk::ResolveImageInfo2)
        = PFN_vkCmdResolveImage2, down |dc| dc.fns.fp_v1_3().cmd_resolve_image2;
        [fdm_binned_slot => own fdm::queue::cmd_resolve_image2];
    "vkQueueSubmit" fn queue_submit(q: vk::Queue, n: u32, s: *const vk::SubmitInfo<'_>, fence: vk::Fence) -> vk::Result
        = PFN_vkQueueSubmit, down |dc| dc.fns.fp_v1_0().queue_submit;
        [fdm_binned_slot => own fdm::queue::queue_submit, ordered_slot => wrap ordered::queue_submit];
    "vkQueueSubmit2" | "vkQueueSubmit2KHR" fn queue_submit2(q: vk::Queue, n: u32, s: *const vk::SubmitInfo2<'_>, fence: vk::Fence) -> vk::Result
        = PFN_vkQueueSubmit2, down |dc| dc.fns.fp_v1_3().queue_submit2;
        [fdm_binned_slot => own fdm::queue::queue_submit2, ordered_slot => wrap ordered::queue_submit2];
    "vkQueueWaitIdle" fn queue_wait_idle(q: vk::Queue) -> vk::Result
        = PFN_vkQueueWaitIdle, down |dc| dc.fns.fp_v1_0().queue_wait_idle;
        [fdm_binned_slot => own fdm::queue::queue_wait_idle];
    // The layer's map reads submit on a queue of the application's: every command that needs the queue (or all
    // queues) externally synchronized takes the same lock.
    "vkQueueBindSparse" fn queue_bind_sparse(q: vk::Queue, n: u32, b: *const vk::BindSparseInfo<'_>, fence: vk::Fence) -> vk::Result
        = PFN_vkQueueBindSparse, down |dc| dc.fns.fp_v1_0().queue_bind_sparse;
        [fdm_binned_slot => own fdm::queue::queue_bind_sparse];
    "vkQueuePresentKHR" fn queue_present(q: vk::Queue, info: *const vk::PresentInfoKHR<'_>) -> vk::Result
        = PFN_vkQueuePresentKHR, down |dc| dc.down_queue_present();
        [fdm_binned_slot => own fdm::queue::queue_present];
    "vkDeviceWaitIdle" fn device_wait_idle(device: vk::Device) -> vk::Result
        = PFN_vkDeviceWaitIdle, down |dc| dc.fns.fp_v1_0().device_wait_idle;
        [fdm_binned_slot => own fdm::queue::device_wait_idle];
    // Waits return the device loss the layer's own map read met.
    "vkWaitForFences" fn wait_for_fences(device: vk::Device, n: u32, fences: *const vk::Fence, all: vk::Bool32,
        timeout: u64) -> vk::Result
        = PFN_vkWaitForFences, down |dc| dc.fns.fp_v1_0().wait_for_fences;
        [fdm_binned_slot => own fdm::queue::wait_for_fences];
    "vkGetFenceStatus" fn get_fence_status(device: vk::Device, fence: vk::Fence) -> vk::Result
        = PFN_vkGetFenceStatus, down |dc| dc.fns.fp_v1_0().get_fence_status;
        [fdm_binned_slot => own fdm::queue::get_fence_status];

    // Query pools: the density map lets fragment-invocation statistics stay
    // active across a binned pass.
    "vkCreateQueryPool" fn create_query_pool(device: vk::Device, info: *const vk::QueryPoolCreateInfo<'_>,
        alloc: *const vk::AllocationCallbacks<'_>, out: *mut vk::QueryPool) -> vk::Result
        = PFN_vkCreateQueryPool, down |dc| dc.fns.fp_v1_0().create_query_pool;
        [fdm_binned_slot => created fdm::Fdm::note_query_pool, ordered_slot => created ordered::note_query_pool];
    "vkDestroyQueryPool" fn destroy_query_pool(device: vk::Device, pool: vk::QueryPool,
        alloc: *const vk::AllocationCallbacks<'_>)
        = PFN_vkDestroyQueryPool, down |dc| dc.fns.fp_v1_0().destroy_query_pool;
        [fdm_binned_slot => forget fdm::Fdm::forget_query_pool, ordered_slot => forget ordered::forget_query_pool];

    // The application's conditional rendering: the density map's GPU plan
    // records its own scopes only outside it.
    "vkCmdBeginConditionalRenderingEXT" fn cmd_begin_conditional_rendering(cb: vk::CommandBuffer,
        info: *const vk::ConditionalRenderingBeginInfoEXT<'_>)
        = PFN_vkCmdBeginConditionalRenderingEXT, down |dc| dc.state.conditional.cmd_begin_conditional_rendering_ext;
        [fdm_binned_slot => own fdm::command_buffers::cmd_begin_conditional_rendering];
    "vkCmdEndConditionalRenderingEXT" fn cmd_end_conditional_rendering(cb: vk::CommandBuffer)
        = PFN_vkCmdEndConditionalRenderingEXT, down |dc| dc.state.conditional.cmd_end_conditional_rendering_ext;
        [fdm_binned_slot => own fdm::command_buffers::cmd_end_conditional_rendering];

    // Dynamic state beyond Vulkan 1.3 (colour write enable, extended dynamic
    // state 2 and 3, line stipple): captured in a binned pass, so each replay
    // sees the value each draw saw.
    // Dynamic rendering local read's remapping: state of the rendering it is recorded in (its begin resets it), so a
    // captured pass goes live at it rather than carry it into other passes' replays.
    "vkCmdSetRenderingAttachmentLocationsKHR" fn cmd_set_rendering_attachment_locations(cb: vk::CommandBuffer,
        i: *const vk::RenderingAttachmentLocationInfoKHR<'_>)
        = PFN_vkCmdSetRenderingAttachmentLocationsKHR, down |dc| dc.state.local_read.cmd_set_rendering_attachment_locations_khr;
        [fdm_binned_slot => own fdm::command_buffers::cmd_set_rendering_attachment_locations];
    "vkCmdSetRenderingInputAttachmentIndicesKHR" fn cmd_set_rendering_input_attachment_indices(cb: vk::CommandBuffer,
        i: *const vk::RenderingInputAttachmentIndexInfoKHR<'_>)
        = PFN_vkCmdSetRenderingInputAttachmentIndicesKHR, down |dc| dc.state.local_read.cmd_set_rendering_input_attachment_indices_khr;
        [fdm_binned_slot => own fdm::command_buffers::cmd_set_rendering_input_attachment_indices];

    // Shader objects (the density map's variants and captured binds), pipeline layouts and the shading rate.
    "vkCreateShadersEXT" fn create_shaders(device: vk::Device, count: u32, infos: *const vk::ShaderCreateInfoEXT<'_>,
        alloc: *const vk::AllocationCallbacks<'_>, out: *mut vk::ShaderEXT) -> vk::Result
        = PFN_vkCreateShadersEXT, down |dc| dc.down_create_shaders();
        [fdm_slot => own fdm::shader_objects::create_shaders, shaders_slot => wrap shader::create_shaders_ext];
    "vkDestroyShaderEXT" fn destroy_shader(device: vk::Device, shader: vk::ShaderEXT,
        alloc: *const vk::AllocationCallbacks<'_>)
        = PFN_vkDestroyShaderEXT, down |dc| dc.down_destroy_shader();
        [fdm_slot => forget fdm::Fdm::forget_shader, reserved_slot => wrap reserved::destroy_shader];
    "vkCreatePipelineLayout" fn create_pipeline_layout(device: vk::Device, info: *const vk::PipelineLayoutCreateInfo<'_>,
        alloc: *const vk::AllocationCallbacks<'_>, out: *mut vk::PipelineLayout) -> vk::Result
        = PFN_vkCreatePipelineLayout, down |dc| dc.fns.fp_v1_0().create_pipeline_layout;
        [varyings_slot => created link::Linker::note_pipeline_layout, reserved_slot => wrap reserved::create_pipeline_layout];
    "vkCmdBindShadersEXT" fn cmd_bind_shaders(cb: vk::CommandBuffer, count: u32, stages: *const vk::ShaderStageFlags,
        shaders: *const vk::ShaderEXT)
        = PFN_vkCmdBindShadersEXT, down |dc| dc.down_bind_shaders();
        [fdm_binned_slot => own fdm::capture::cmd_bind_shaders, reserved_slot => wrap reserved::cmd_bind_shaders];
    // The ordered interlock strategy zeroes its cells on the queue of the next submission: it needs each
    // queue's family.
    "vkGetDeviceQueue" fn get_device_queue(device: vk::Device, family: u32, index: u32, out: *mut vk::Queue)
        = PFN_vkGetDeviceQueue, down |dc| dc.fns.fp_v1_0().get_device_queue;
        [ordered_slot => wrap ordered::get_device_queue];
    "vkGetDeviceQueue2" fn get_device_queue2(device: vk::Device, info: *const vk::DeviceQueueInfo2<'_>, out: *mut vk::Queue)
        = PFN_vkGetDeviceQueue2, down |dc| dc.fns.fp_v1_1().get_device_queue2;
        [ordered_slot => wrap ordered::get_device_queue2];
    "vkCmdSetFragmentShadingRateKHR" fn cmd_set_fragment_shading_rate(cb: vk::CommandBuffer,
        size: *const vk::Extent2D, ops: *const [vk::FragmentShadingRateCombinerOpKHR; 2])
        = PFN_vkCmdSetFragmentShadingRateKHR, down |dc| dc.down_set_fragment_shading_rate();
        [shading_rate_slot => wrap shading_rate::cmd_set_fragment_shading_rate];
});

#[cfg(test)]
mod tests {
    use super::COMMANDS;

    /// The captured dynamic-state commands' rows and capture hooks are what
    /// `layer/gen/dynamic_state.py` makes from `layer/gen/dynamic_state.json`.
    #[test]
    fn generated_dynamic_state_is_current() {
        crate::generated::assert_current("dynamic_state.py");
    }

    /// Every command of the generated source is a row, under each of its
    /// names.
    #[test]
    fn every_generated_dynamic_state_command_is_a_row() {
        let source = include_str!("../gen/dynamic_state.json");
        let names: Vec<&str> = source.split('"').filter(|w| w.starts_with("vkCmd")).collect();
        assert!(names.len() >= 34, "{names:?}");
        for name in names {
            assert!(COMMANDS.contains(&name) || super::row(name.as_bytes()).is_some(), "{name}");
        }
    }

    /// The density map's reads submit on queue 0 of a family the application
    /// created (`ffi::layer_queue`) under the queue lock: every command that needs that queue
    /// externally synchronized is a row (whose density-map handler takes the
    /// lock), not only the submissions.
    #[test]
    fn every_command_that_synchronizes_a_queue_is_a_row() {
        for name in [
            "vkQueueSubmit",
            "vkQueueSubmit2",
            "vkQueueWaitIdle",
            "vkQueueBindSparse",
            "vkQueuePresentKHR",
            "vkDeviceWaitIdle",
        ] {
            assert!(COMMANDS.contains(&name), "{name}");
        }
    }
}

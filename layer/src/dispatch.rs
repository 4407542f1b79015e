//! The dispatch table: every device command the layer intercepts, listed
//! once, with the capabilities that handle or observe it, top first.
//!
//! For each row the [`device_commands!`] macro generates the `extern
//! "system"` entry point the application (or the layer above) calls: it
//! looks the device up (one thread-local cache hit, [`state::device`]),
//! honours `debug_panic`, and runs the row's chain under [`guard::entry`].
//! The rows are generated (`layer/gen/boundary.py`, from
//! `layer/gen/dispatch.json` and the registry), as is each command's
//! argument type (`generated::args`). A `typed` handler receives the device
//! core, its own capability's state and the arguments, whose `next()` is
//! the rest of the chain (the next handler, finally the next layer's
//! command), called once with the arguments it wants the driver to see. A
//! capability that is not running on the device is skipped;
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
//! `layer/gen/dispatch.json` of the commands it needs.

use crate::device::DeviceCore;
use crate::ffi::pfn;
use crate::generated::args;
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

/// Runs a row's handlers in order, then the next layer's command. A `typed`
/// handler gets the arguments (`generated::args`), the rest of the chain in
/// them; the density map's handlers call down through its own table of the
/// commands below it instead, which is the rest of this chain
/// ([`below_fdm`]); `own` is the density map's raw form, left to the
/// captured dynamic-state commands (`fdm::capture`'s generated hooks).
/// Observers: `before` sees the
/// dispatchable handle before the chain goes on; `forget` (destroy commands)
/// sees the destroyed handle before it goes down; `created` (create commands
/// of the form `(device, info, allocator, out)`) sees the create info and the
/// new handle after a successful creation.
macro_rules! chain {
    ($dev:ident, $below:ident, [], $args:tt, ($($a:ident: $t:ty),*), $down:expr) => {
        $down
    };
    ($dev:ident, $below:ident, [$slot:ident => $kind:ident $handler:path $(, $rslot:ident => $rkind:ident $rhandler:path)*],
        $args:tt, ($h:ident: $ht:ty $(, $a:ident: $t:ty)*), $down:expr) => {{
        let next = |$h: $ht $(, $a: $t)*| {
            chain!($dev, $below, [$($rslot => $rkind $rhandler),*], $args, ($h: $ht $(, $a: $t)*), $down)
        };
        match $dev.$slot($below) {
            Some(s) => chain!(@call $kind, $handler, &$dev.core, s, next, $args, ($h $(, $a)*)),
            None => next($h $(, $a)*),
        }
    }};
    (@call typed, $handler:path, $core:expr, $s:ident, $next:ident, [$args:ident], ($($a:ident),*)) => {{
        let next = |a: args::$args<'_>| $next($(a.$a()),*);
        // SAFETY: the arguments the application (or the layer above) passed
        // to this command, which its valid usage rules make valid.
        let a = unsafe { args::$args::new($($a),*) }.chained(&next);
        $handler($core, $s, a)
    }};
    (@call own, $handler:path, $core:expr, $s:ident, $next:ident, $args:tt, ($($a:ident),*)) => {
        // SAFETY: the handler's contract: the arguments are those the
        // application (or the layer above) passed to this Vulkan command,
        // which its valid usage rules make valid.
        unsafe { $handler($core, $s, $($a),*) }
    };
    (@call forget, $handler:path, $core:expr, $s:ident, $next:ident, $args:tt, ($h:ident, $x:ident $(, $a:ident)*)) => {{
        $handler($s, $x);
        $next($h, $x $(, $a)*)
    }};
    (@call created, $handler:path, $core:expr, $s:ident, $next:ident, $args:tt, ($h:ident, $info:ident, $alloc:ident, $out:ident)) => {{
        let r = $next($h, $info, $alloc, $out);
        if r == vk::Result::SUCCESS {
            // SAFETY: the create info of a valid call (its -pCreateInfo-parameter
            // VUID) and the handle the command wrote on success (its output
            // pointer's -parameter VUID).
            unsafe { $handler($s, &*$info, *$out) };
        }
        r
    }};
    (@call before, $handler:path, $core:expr, $s:ident, $next:ident, $args:tt, ($h:ident $(, $a:ident)*)) => {{
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
            = $pfn:ident, $(args $args:ident,)? down |$c:ident| $down:expr;
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
                        chain!(dev, BELOW_FDM, [$($slot => $kind $handler),*], [$($args)?], ($h: $ht $(, $a: $t)*), {
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
    entry_point(data, name, false)
}

/// What the density-map capability calls for `name`: the entry point below
/// it where another capability intercepts the command, else `None` (the next
/// layer's command).
pub fn below_fdm(data: &DeviceData, name: &[u8]) -> vk::PFN_vkVoidFunction {
    entry_point(data, name, true)
}

/// The entry point of `name`'s row on `data` (its whole chain, or the part
/// below the density map), its pass-through one where `force_enable` asks
/// for every hook, or `None`.
fn entry_point(data: &DeviceData, name: &[u8], below_fdm: bool) -> vk::PFN_vkVoidFunction {
    let row = row(name)?;
    if (row.active)(data, below_fdm) {
        if below_fdm {
            row.below_fdm
        } else {
            row.top
        }
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

use crate::interlock::{ordered, reserved};
use crate::{deferred_views, fdm, link, shader, shading_rate};

// The rows are generated (`layer/gen/boundary.py`, from `layer/gen/dispatch.json`,
// `layer/gen/dynamic_state.json` and the registry).
include!("generated/dispatch_rows.rs");
dispatch_rows!(device_commands);

#[cfg(test)]
mod tests {
    use super::COMMANDS;

    /// The captured dynamic-state commands' capture hooks are what
    /// `layer/gen/dynamic_state.py` makes from `layer/gen/dynamic_state.json`.
    #[test]
    fn generated_dynamic_state_is_current() {
        crate::generated::assert_current("dynamic_state.py");
    }

    /// The rows and argument types are what `layer/gen/boundary.py` makes
    /// from `layer/gen/dispatch.json`, `layer/gen/dynamic_state.json` and
    /// the registry.
    #[test]
    fn generated_boundary_is_current() {
        crate::generated::assert_current("boundary.py");
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

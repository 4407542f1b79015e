//! The loader-facing entry points: negotiation, `vkGetInstanceProcAddr`,
//! `vkGetDeviceProcAddr`, the enumerate functions, and the instance-level
//! hooks (instance and device creation, physical-device bookkeeping, debug
//! messengers). Every exported function runs under [`guard::entry`].

use crate::device::DeviceCore;
use crate::dispatch;
use crate::ffi::{self, dispatch_key, pfn, NegotiateLayerInterface};
use crate::guard::{self, debug_panic};
use crate::id;
use crate::interlock::reserved::ReservedSet;
use crate::log::{chained_messengers, Logger, Messenger};
use crate::plan::{InterlockStrategy, Plan};
use crate::pnext;
use crate::settings::{LogLevel, Settings, LAYER_NAME};
use crate::state::{self, DeviceData, InstanceData};
use ash::vk;
use std::ffi::{c_char, CStr};
use std::sync::Arc;

pub const LAYER_DESCRIPTION: &str = "Overlap: interlock, fragment density map and varying-linking emulation";
pub const IMPLEMENTATION_VERSION: u32 = 1;

/// # Safety
/// Called by the loader with a valid `VkNegotiateLayerInterface`.
#[no_mangle]
pub unsafe extern "system" fn vkNegotiateLoaderLayerInterfaceVersion(p: *mut NegotiateLayerInterface) -> vk::Result {
    guard::entry(
        "vkNegotiateLoaderLayerInterfaceVersion",
        || {
            if p.is_null() {
                return vk::Result::ERROR_INITIALIZATION_FAILED;
            }
            // SAFETY: the loader passes a valid, writable
            // VkNegotiateLayerInterface for the layer to fill
            // (LoaderLayerInterface.md, "Layer Version Negotiation"); not null.
            let p = unsafe { &mut *p };
            if p.s_type != ffi::LAYER_NEGOTIATE_INTERFACE_STRUCT {
                return vk::Result::ERROR_INITIALIZATION_FAILED;
            }
            if p.loader_layer_interface_version < 2 {
                return vk::Result::ERROR_INITIALIZATION_FAILED;
            }
            p.loader_layer_interface_version = ffi::CURRENT_LOADER_LAYER_INTERFACE_VERSION;
            p.pfn_get_instance_proc_addr = Some(vkGetInstanceProcAddr);
            p.pfn_get_device_proc_addr = Some(vkGetDeviceProcAddr);
            p.pfn_get_physical_device_proc_addr = None;
            vk::Result::SUCCESS
        },
        || vk::Result::ERROR_INITIALIZATION_FAILED,
    )
}

/// Global and instance commands the layer implements itself.
fn instance_hook(name: &[u8]) -> vk::PFN_vkVoidFunction {
    match name {
        b"vkGetInstanceProcAddr" => pfn!(vkGetInstanceProcAddr as vk::PFN_vkGetInstanceProcAddr),
        b"vkGetDeviceProcAddr" => pfn!(vkGetDeviceProcAddr as vk::PFN_vkGetDeviceProcAddr),
        b"vkCreateInstance" => pfn!(create_instance as vk::PFN_vkCreateInstance),
        b"vkDestroyInstance" => pfn!(destroy_instance as vk::PFN_vkDestroyInstance),
        b"vkEnumerateInstanceLayerProperties" => {
            pfn!(vkEnumerateInstanceLayerProperties as vk::PFN_vkEnumerateInstanceLayerProperties)
        }
        b"vkEnumerateInstanceExtensionProperties" => {
            pfn!(vkEnumerateInstanceExtensionProperties as vk::PFN_vkEnumerateInstanceExtensionProperties)
        }
        b"vkEnumerateDeviceLayerProperties" => {
            pfn!(vkEnumerateDeviceLayerProperties as vk::PFN_vkEnumerateDeviceLayerProperties)
        }
        b"vkEnumerateDeviceExtensionProperties" => {
            pfn!(vkEnumerateDeviceExtensionProperties as vk::PFN_vkEnumerateDeviceExtensionProperties)
        }
        b"vkEnumeratePhysicalDevices" => {
            pfn!(enumerate_physical_devices as vk::PFN_vkEnumeratePhysicalDevices)
        }
        b"vkEnumeratePhysicalDeviceGroups" | b"vkEnumeratePhysicalDeviceGroupsKHR" => {
            pfn!(enumerate_physical_device_groups as vk::PFN_vkEnumeratePhysicalDeviceGroups)
        }
        b"vkCreateDevice" => pfn!(create_device as vk::PFN_vkCreateDevice),
        b"vkGetPhysicalDeviceProperties" => {
            pfn!(get_physical_device_properties as vk::PFN_vkGetPhysicalDeviceProperties)
        }
        b"vkGetPhysicalDeviceProperties2" => {
            pfn!(get_physical_device_properties2 as vk::PFN_vkGetPhysicalDeviceProperties2)
        }
        b"vkGetPhysicalDeviceProperties2KHR" => {
            pfn!(get_physical_device_properties2_khr as vk::PFN_vkGetPhysicalDeviceProperties2)
        }
        b"vkGetPhysicalDeviceFragmentShadingRatesKHR" => {
            pfn!(get_physical_device_fragment_shading_rates as vk::PFN_vkGetPhysicalDeviceFragmentShadingRatesKHR)
        }
        b"vkGetPhysicalDeviceFeatures2" => {
            pfn!(get_physical_device_features2 as vk::PFN_vkGetPhysicalDeviceFeatures2)
        }
        b"vkGetPhysicalDeviceFeatures2KHR" => {
            pfn!(get_physical_device_features2_khr as vk::PFN_vkGetPhysicalDeviceFeatures2)
        }
        b"vkGetPhysicalDeviceFormatProperties" => {
            pfn!(get_physical_device_format_properties as vk::PFN_vkGetPhysicalDeviceFormatProperties)
        }
        b"vkGetPhysicalDeviceFormatProperties2" | b"vkGetPhysicalDeviceFormatProperties2KHR" => {
            pfn!(get_physical_device_format_properties2 as vk::PFN_vkGetPhysicalDeviceFormatProperties2)
        }
        b"vkGetPhysicalDeviceImageFormatProperties" => {
            pfn!(get_physical_device_image_format_properties as vk::PFN_vkGetPhysicalDeviceImageFormatProperties)
        }
        b"vkGetPhysicalDeviceImageFormatProperties2" | b"vkGetPhysicalDeviceImageFormatProperties2KHR" => {
            pfn!(get_physical_device_image_format_properties2 as vk::PFN_vkGetPhysicalDeviceImageFormatProperties2)
        }
        b"vkCreateDebugUtilsMessengerEXT" => {
            pfn!(create_debug_utils_messenger as vk::PFN_vkCreateDebugUtilsMessengerEXT)
        }
        b"vkDestroyDebugUtilsMessengerEXT" => {
            pfn!(destroy_debug_utils_messenger as vk::PFN_vkDestroyDebugUtilsMessengerEXT)
        }
        _ => None,
    }
}

/// Commands the layer answers without an instance (loader interface rules).
const GLOBAL_COMMANDS: &[&[u8]] = &[
    b"vkGetInstanceProcAddr",
    b"vkCreateInstance",
    b"vkEnumerateInstanceLayerProperties",
    b"vkEnumerateInstanceExtensionProperties",
];

/// # Safety
/// Called by the loader or the layer above, per the Vulkan spec.
#[no_mangle]
pub unsafe extern "system" fn vkGetInstanceProcAddr(
    instance: vk::Instance,
    p_name: *const c_char,
) -> vk::PFN_vkVoidFunction {
    guard::entry(
        "vkGetInstanceProcAddr",
        || {
            if p_name.is_null() {
                return None;
            }
            // SAFETY: VUID-vkGetInstanceProcAddr-pName-parameter: a
            // null-terminated UTF-8 string.
            let name = unsafe { CStr::from_ptr(p_name) }.to_bytes();
            if GLOBAL_COMMANDS.contains(&name) {
                return instance_hook(name);
            }
            if instance == vk::Instance::null() {
                return None;
            }
            // SAFETY: VUID-vkGetInstanceProcAddr-instance-parameter: a valid
            // (so dispatchable) instance.
            let inst = state::instance(unsafe { dispatch_key(instance) })?;
            // SAFETY: the next layer's vkGetInstanceProcAddr for an instance
            // created through it, with the caller's valid arguments.
            let next = unsafe { (inst.next_gipa)(instance, p_name) };
            // Never offer a command the chain below does not have.
            next?;
            instance_hook(name).or_else(|| dispatch::any_hook(name)).or(next)
        },
        || None,
    )
}

/// # Safety
/// Called by the loader or the layer above, per the Vulkan spec.
#[no_mangle]
pub unsafe extern "system" fn vkGetDeviceProcAddr(device: vk::Device, p_name: *const c_char) -> vk::PFN_vkVoidFunction {
    guard::entry(
        "vkGetDeviceProcAddr",
        || {
            if p_name.is_null() || device == vk::Device::null() {
                return None;
            }
            // SAFETY: VUID-vkGetDeviceProcAddr-pName-parameter: a
            // null-terminated UTF-8 string.
            let name = unsafe { CStr::from_ptr(p_name) }.to_bytes();
            match name {
                b"vkGetDeviceProcAddr" => return pfn!(vkGetDeviceProcAddr as vk::PFN_vkGetDeviceProcAddr),
                b"vkDestroyDevice" => return pfn!(destroy_device as vk::PFN_vkDestroyDevice),
                _ => {}
            }
            // SAFETY: VUID-vkGetDeviceProcAddr-device-parameter: a valid (so
            // dispatchable) device.
            let dev = state::device_by_key(unsafe { dispatch_key(device) })?;
            // SAFETY: the next layer's vkGetDeviceProcAddr for a device created
            // through it, with the caller's valid arguments.
            let next = unsafe { (dev.next_gdpa)(device, p_name) };
            // Commands the layer provides where the chain below lacks them.
            if let Some(provided) = dispatch::provided(dev, name) {
                return Some(provided);
            }
            next?;
            if let Some(hook) = dispatch::hook_for(dev, name) {
                return Some(hook);
            }
            // Zero cost: the application calls the next layer directly.
            next
        },
        || None,
    )
}

fn layer_properties() -> vk::LayerProperties {
    let mut p = vk::LayerProperties {
        spec_version: vk::make_api_version(0, 1, 3, 239),
        implementation_version: IMPLEMENTATION_VERSION,
        ..Default::default()
    };
    copy_str(&mut p.layer_name, LAYER_NAME);
    copy_str(&mut p.description, LAYER_DESCRIPTION);
    p
}

fn copy_str(dst: &mut [c_char], src: &str) {
    let max = dst.len() - 1;
    for (d, s) in dst.iter_mut().zip(src.bytes().take(max)) {
        *d = s as c_char;
    }
}

/// The two-call idiom: the count, or up to `*count` items and `VK_INCOMPLETE`.
///
/// # Safety
/// `count` must be valid; `out`, when non-null, must hold `*count` items.
pub unsafe fn fill<T: Copy>(items: &[T], count: *mut u32, out: *mut T) -> vk::Result {
    // SAFETY: `count` is valid and writable (the caller's guarantee; the
    // command's "-pPropertyCount-parameter" valid usage).
    let count = unsafe { &mut *count };
    if out.is_null() {
        *count = items.len() as u32;
        return vk::Result::SUCCESS;
    }
    let n = (*count as usize).min(items.len());
    // SAFETY: `out` holds `*count` ≥ `n` items (the caller's guarantee; the
    // command's "-pProperties-parameter" valid usage), the application's
    // memory, which cannot overlap the layer's `items`.
    unsafe { std::ptr::copy_nonoverlapping(items.as_ptr(), out, n) };
    *count = n as u32;
    if n < items.len() {
        vk::Result::INCOMPLETE
    } else {
        vk::Result::SUCCESS
    }
}

/// Whether `pLayerName` names this layer.
///
/// # Safety
/// `p_layer_name` is null or a null-terminated string.
unsafe fn is_this_layer(p_layer_name: *const c_char) -> bool {
    // SAFETY: not null here, so a null-terminated string (the caller's
    // guarantee; the "-pLayerName-parameter" valid usage of the command).
    !p_layer_name.is_null() && unsafe { CStr::from_ptr(p_layer_name) }.to_bytes() == LAYER_NAME.as_bytes()
}

/// # Safety
/// Per the Vulkan spec.
#[no_mangle]
pub unsafe extern "system" fn vkEnumerateInstanceLayerProperties(
    count: *mut u32,
    props: *mut vk::LayerProperties,
) -> vk::Result {
    guard::entry(
        "vkEnumerateInstanceLayerProperties",
        // SAFETY: VUID-vkEnumerateInstanceLayerProperties-pPropertyCount-parameter
        // and -pProperties-parameter: `count` is valid, `props` null or holding `*count` items.
        || unsafe { fill(&[layer_properties()], count, props) },
        || vk::Result::ERROR_UNKNOWN,
    )
}

/// # Safety
/// Per the Vulkan spec.
#[no_mangle]
pub unsafe extern "system" fn vkEnumerateInstanceExtensionProperties(
    p_layer_name: *const c_char,
    count: *mut u32,
    _props: *mut vk::ExtensionProperties,
) -> vk::Result {
    guard::entry(
        "vkEnumerateInstanceExtensionProperties",
        || {
            // SAFETY: VUID-vkEnumerateInstanceExtensionProperties-pLayerName-parameter
            // and -pPropertyCount-parameter: null or a string, and a valid count.
            if unsafe { is_this_layer(p_layer_name) } {
                // SAFETY: as above.
                unsafe { *count = 0 };
                vk::Result::SUCCESS
            } else {
                vk::Result::ERROR_LAYER_NOT_PRESENT
            }
        },
        || vk::Result::ERROR_UNKNOWN,
    )
}

/// # Safety
/// Per the Vulkan spec.
#[no_mangle]
pub unsafe extern "system" fn vkEnumerateDeviceLayerProperties(
    _pd: vk::PhysicalDevice,
    count: *mut u32,
    props: *mut vk::LayerProperties,
) -> vk::Result {
    guard::entry(
        "vkEnumerateDeviceLayerProperties",
        // SAFETY: VUID-vkEnumerateDeviceLayerProperties-pPropertyCount-parameter
        // and -pProperties-parameter: `count` is valid, `props` null or holding `*count` items.
        || unsafe { fill(&[layer_properties()], count, props) },
        || vk::Result::ERROR_UNKNOWN,
    )
}

/// The layer's own device extensions (with `pLayerName` naming it), or the
/// driver's list plus the emulated ones, without duplicates.
///
/// # Safety
/// Per the Vulkan spec.
#[no_mangle]
pub unsafe extern "system" fn vkEnumerateDeviceExtensionProperties(
    pd: vk::PhysicalDevice,
    p_layer_name: *const c_char,
    count: *mut u32,
    props: *mut vk::ExtensionProperties,
) -> vk::Result {
    guard::entry(
        "vkEnumerateDeviceExtensionProperties",
        || {
            let pdd = state::physical_device(pd);
            let added = match &pdd {
                Some(pdd) => added_extensions(pdd.plan()),
                None => Vec::new(),
            };
            // SAFETY: VUID-vkEnumerateDeviceExtensionProperties-pLayerName-parameter,
            // -pPropertyCount-parameter and -pProperties-parameter: a string or
            // null, a valid count, and null or room for `*count` items.
            if unsafe { is_this_layer(p_layer_name) } {
                // SAFETY: as above.
                return unsafe { fill(&added, count, props) };
            }
            let Some(pdd) = pdd else {
                return vk::Result::ERROR_INITIALIZATION_FAILED;
            };
            let next = pdd.instance.fns.fp_v1_0().enumerate_device_extension_properties;
            let hidden = pdd.plan().hidden_extensions.clone();
            if (added.is_empty() && hidden.is_empty()) || !p_layer_name.is_null() {
                // SAFETY: the next layer's command with the caller's valid arguments.
                return unsafe { next(pd, p_layer_name, count, props) };
            }
            let mut n = 0u32;
            // SAFETY: `pd` is valid (VUID-vkEnumerateDeviceExtensionProperties-physicalDevice-parameter),
            // `pLayerName` null here; a live count and no array.
            let r = unsafe { next(pd, p_layer_name, &mut n, std::ptr::null_mut()) };
            if r != vk::Result::SUCCESS {
                return r;
            }
            let mut all = vec![vk::ExtensionProperties::default(); n as usize];
            // SAFETY: as above, with `all`, a live Vec of `n` items.
            let r = unsafe { next(pd, p_layer_name, &mut n, all.as_mut_ptr()) };
            if r.as_raw() < 0 {
                return r;
            }
            all.truncate(n as usize);
            all.retain(|e| {
                !hidden
                    .iter()
                    .any(|h| e.extension_name_as_c_str().map(|c| c.to_bytes() == h.as_bytes()).unwrap_or(false))
            });
            for e in added {
                if !all.iter().any(|a| a.extension_name_as_c_str() == e.extension_name_as_c_str()) {
                    all.push(e);
                }
            }
            // SAFETY: as for `added` above.
            unsafe { fill(&all, count, props) }
        },
        || vk::Result::ERROR_UNKNOWN,
    )
}

/// The emulated extensions for `pd` (decided from the driver's own list).
fn added_extensions(plan: &Plan) -> Vec<vk::ExtensionProperties> {
    plan.added_extensions()
        .into_iter()
        .map(|(name, spec_version)| {
            let mut e = vk::ExtensionProperties { spec_version, ..Default::default() };
            copy_str(&mut e.extension_name, name.to_str().unwrap_or(""));
            e
        })
        .collect()
}

/// # Safety
/// The loader calls it with the arguments of a valid `vkCreateInstance`
/// call, the chain holding this layer's link info.
unsafe extern "system" fn create_instance(
    p_create_info: *const vk::InstanceCreateInfo,
    p_allocator: *const vk::AllocationCallbacks,
    p_instance: *mut vk::Instance,
) -> vk::Result {
    guard::entry(
        "vkCreateInstance",
        || {
            // SAFETY: the loader's create info for this layer's vkCreateInstance
            // (VUID-vkCreateInstance-pCreateInfo-parameter), whose chain holds
            // the link info (LoaderLayerInterface.md, "Layer Instance Creation").
            let Some(next_gipa) = (unsafe { ffi::take_instance_link(p_create_info) }) else {
                crate::log::global().error(id::LOADER_LINK, "no loader link info in vkCreateInstance");
                return vk::Result::ERROR_INITIALIZATION_FAILED;
            };
            // SAFETY: VUID-vkCreateInstance-pCreateInfo-parameter: a valid
            // create info, alive for the call.
            let info = unsafe { &*p_create_info };
            // SAFETY: as above.
            let (settings, diagnostics) = unsafe { Settings::for_instance(info) };
            debug_panic(&settings.debug_panic, "vkCreateInstance");
            // SAFETY: the next layer's vkGetInstanceProcAddr, asked for a
            // global command with a null instance (its valid usage allows it).
            let Some(next_create) = (unsafe { next_gipa(vk::Instance::null(), c"vkCreateInstance".as_ptr()) }) else {
                return vk::Result::ERROR_INITIALIZATION_FAILED;
            };
            // SAFETY: vkGetInstanceProcAddr returns, for "vkCreateInstance",
            // that command as `PFN_vkVoidFunction`, to be cast back to its own
            // type (the spec's "Command Function Pointers"): PFN_vkCreateInstance.
            let next_create =
                unsafe { std::mem::transmute::<unsafe extern "system" fn(), vk::PFN_vkCreateInstance>(next_create) };
            // SAFETY: as for `info`.
            let stripped = unsafe { crate::settings::strip_own_settings(info) };
            let down = stripped.as_ref().map(|s| &s.info as *const vk::InstanceCreateInfo).unwrap_or(p_create_info);
            // SAFETY: the next layer's vkCreateInstance with the caller's
            // valid arguments, or a copy of its create info without this
            // layer's own settings structure (alive in `stripped`).
            let r = unsafe { next_create(down, p_allocator, p_instance) };
            if r != vk::Result::SUCCESS {
                return r;
            }
            // SAFETY: VUID-vkCreateInstance-pInstance-parameter: a valid
            // pointer, written by the successful command.
            let handle = unsafe { *p_instance };
            // Core names, or their extension aliases for a 1.0 instance.
            // SAFETY: `next_gipa` is the next layer's vkGetInstanceProcAddr and
            // `handle` was just created through it, so each name resolves to
            // its command or null, as `load_with` requires; ash asks with
            // null-terminated names (VUID-vkGetInstanceProcAddr-pName-parameter).
            let fns = unsafe {
                ash::Instance::load_with(|name| ffi::resolve_command(name, |n| next_gipa(handle, n)), handle)
            };
            // SAFETY: VUID-VkInstanceCreateInfo-pApplicationInfo-parameter: a
            // non-null pApplicationInfo points at a valid VkApplicationInfo.
            let app = unsafe { info.p_application_info.as_ref() };
            let api_version = match app {
                Some(a) if a.api_version != 0 => a.api_version,
                _ => vk::API_VERSION_1_0,
            };
            // Messengers chained to the create info hear about creation only.
            // SAFETY: a valid create info has a valid chain (VUID-VkInstanceCreateInfo-pNext-pNext).
            let log = Logger::new(settings.log_level, unsafe { chained_messengers(info.p_next) });
            for d in &diagnostics {
                log.warn(d.id, &d.message);
            }
            log.info(
                id::INSTANCE_CREATED,
                &format!(
                    "{LAYER_NAME} {} active (architecture {}, interlock_strategy {}, fdm {}, varyings {}, force_enable {})",
                    env!("CARGO_PKG_VERSION"),
                    settings.architecture,
                    settings.interlock_strategy,
                    settings.fdm,
                    settings.varyings,
                    settings.force_enable
                ),
            );
            log.remove_messenger(vk::DebugUtilsMessengerEXT::null());
            // SAFETY: `handle` was just created through `next_gipa`.
            let ext = unsafe { crate::state::InstanceExtFns::load(next_gipa, handle) };
            let (profile, profile_error) = crate::profile::for_settings(&settings);
            if let Some(e) = profile_error {
                log.error(id::PROFILE_INVALID, &format!("{e}; running as native"));
            }
            let data = InstanceData { handle, next_gipa, fns, api_version, settings, log, ext, profile };
            // SAFETY: a valid instance, just created (dispatchable).
            state::insert_instance(unsafe { dispatch_key(handle) }, Arc::new(data));
            vk::Result::SUCCESS
        },
        || vk::Result::ERROR_INITIALIZATION_FAILED,
    )
}

/// # Safety
/// The loader calls it with the arguments of a valid `vkDestroyInstance` call.
unsafe extern "system" fn destroy_instance(instance: vk::Instance, p_allocator: *const vk::AllocationCallbacks) {
    if instance == vk::Instance::null() {
        return;
    }
    // SAFETY: VUID-vkDestroyInstance-instance-parameter: a non-null instance
    // is valid (so dispatchable).
    let key = unsafe { dispatch_key(instance) };
    let destroy = move || {
        if let Some(inst) = state::remove_instance(key) {
            // SAFETY: the next layer's vkDestroyInstance with the caller's valid
            // arguments; the layer's entry is gone, and the application
            // destroyed every child first (VUID-vkDestroyInstance-instance-00629).
            unsafe { (inst.fns.fp_v1_0().destroy_instance)(instance, p_allocator) };
        }
    };
    guard::entry(
        "vkDestroyInstance",
        || {
            if let Some(inst) = state::instance(key) {
                debug_panic(&inst.settings.debug_panic, "vkDestroyInstance");
            }
            destroy()
        },
        destroy,
    )
}

/// # Safety
/// The loader or the layer above calls it with the arguments of a valid
/// `vkEnumeratePhysicalDevices` call.
unsafe extern "system" fn enumerate_physical_devices(
    instance: vk::Instance,
    count: *mut u32,
    pds: *mut vk::PhysicalDevice,
) -> vk::Result {
    guard::entry(
        "vkEnumeratePhysicalDevices",
        || {
            // SAFETY: VUID-vkEnumeratePhysicalDevices-instance-parameter: a
            // valid (so dispatchable) instance.
            let Some(inst) = state::instance(unsafe { dispatch_key(instance) }) else {
                return vk::Result::ERROR_INITIALIZATION_FAILED;
            };
            // SAFETY: the next layer's command with the caller's valid arguments.
            let r = unsafe { (inst.fns.fp_v1_0().enumerate_physical_devices)(instance, count, pds) };
            if r.as_raw() >= 0 && !pds.is_null() {
                // SAFETY: on success or VK_INCOMPLETE the command wrote `*count`
                // handles to `pds` (VUID-vkEnumeratePhysicalDevices-pPhysicalDevices-parameter
                // makes it an array of the count the caller passed, the most it may write).
                let written = unsafe { std::slice::from_raw_parts(pds, *count as usize) };
                state::insert_physical_devices(&inst, written);
            }
            r
        },
        || vk::Result::ERROR_UNKNOWN,
    )
}

/// # Safety
/// The loader or the layer above calls it with the arguments of a valid
/// `vkEnumeratePhysicalDeviceGroups` call.
unsafe extern "system" fn enumerate_physical_device_groups(
    instance: vk::Instance,
    count: *mut u32,
    groups: *mut vk::PhysicalDeviceGroupProperties,
) -> vk::Result {
    guard::entry(
        "vkEnumeratePhysicalDeviceGroups",
        || {
            // SAFETY: VUID-vkEnumeratePhysicalDeviceGroups-instance-parameter:
            // a valid (so dispatchable) instance.
            let Some(inst) = state::instance(unsafe { dispatch_key(instance) }) else {
                return vk::Result::ERROR_INITIALIZATION_FAILED;
            };
            // Core and KHR names share a signature; whichever the chain has.
            let Some(next) = inst.ext.enumerate_physical_device_groups else {
                return vk::Result::ERROR_INITIALIZATION_FAILED;
            };
            // SAFETY: the next layer's command with the caller's valid arguments.
            let r = unsafe { next(instance, count, groups) };
            if r.as_raw() >= 0 && !groups.is_null() {
                // SAFETY: as in enumerate_physical_devices: `*count` structures
                // written (VUID-vkEnumeratePhysicalDeviceGroups-pPhysicalDeviceGroupProperties-parameter).
                let written = unsafe { std::slice::from_raw_parts(groups, *count as usize) };
                for g in written {
                    state::insert_physical_devices(&inst, &g.physical_devices[..g.physical_device_count as usize]);
                }
            }
            r
        },
        || vk::Result::ERROR_UNKNOWN,
    )
}

/// # Safety
/// The loader calls it with the arguments of a valid `vkCreateDevice` call,
/// the chain holding this layer's link info.
unsafe extern "system" fn create_device(
    pd: vk::PhysicalDevice,
    p_create_info: *const vk::DeviceCreateInfo,
    p_allocator: *const vk::AllocationCallbacks,
    p_device: *mut vk::Device,
) -> vk::Result {
    guard::entry(
        "vkCreateDevice",
        || {
            let Some(pdd) = state::physical_device(pd) else {
                crate::log::global()
                    .error(id::UNKNOWN_HANDLE, "vkCreateDevice on a physical device the layer has not seen");
                return vk::Result::ERROR_INITIALIZATION_FAILED;
            };
            let inst = pdd.instance.clone();
            // SAFETY: the loader's create info for this layer's vkCreateDevice
            // (VUID-vkCreateDevice-pCreateInfo-parameter), whose chain holds
            // the link info (LoaderLayerInterface.md, "Layer Device Creation").
            let Some((_, next_gdpa)) = (unsafe { ffi::take_device_link(p_create_info) }) else {
                inst.log.error(id::LOADER_LINK, "no loader link info in vkCreateDevice");
                return vk::Result::ERROR_INITIALIZATION_FAILED;
            };
            debug_panic(&inst.settings.debug_panic, "vkCreateDevice");
            // SAFETY: as above.
            let set_loader_data = unsafe { ffi::device_loader_data_callback(p_create_info) };
            // SAFETY: VUID-vkCreateDevice-pCreateInfo-parameter: a valid create
            // info, alive for the call.
            let info = unsafe { &*p_create_info };
            let (facts, plan) = pdd.decided().clone();
            // SAFETY: `pd` is valid (VUID-vkCreateDevice-physicalDevice-parameter); each capability passes a
            // chain of structures the driver knows.
            let features2 = |f2: &mut vk::PhysicalDeviceFeatures2| unsafe {
                features2(pd, f2, inst.fns.fp_v1_1().get_physical_device_features2)
            };
            let c = crate::device::Creation { inst: &inst, pd, facts: &facts, plan: &plan, features2: &features2 };
            // SAFETY: `info` is valid (as above).
            if let Some(r) = unsafe { refused_by_profile(&c, info) } {
                return r;
            }
            // Emulated extensions and features never reach the driver: each capability strips the create info
            // (the density map the interlock copy, where there is one).
            // SAFETY: `info` is valid (as above).
            let interlock = match unsafe { crate::interlock::prepare(&c, info) } {
                Ok(p) => p,
                Err(r) => return r,
            };
            let mut down: &vk::DeviceCreateInfo =
                interlock.as_ref().and_then(|p| p.stripped.as_ref()).map_or(info, |s| &s.info);
            let locked = interlock.as_ref().is_some_and(|p| p.strategy.locks());
            // SAFETY: `down` is `info` or the interlock copy of it, alive in `interlock`.
            let fdm = match unsafe { crate::fdm::prepare(&c, down, locked) } {
                Ok(s) => s,
                Err(r) => return r,
            };
            if let Some(s) = &fdm {
                down = &s.info;
            }
            // SAFETY: the next layer's vkCreateDevice with the caller's
            // arguments, the create info possibly a copy without the emulated
            // extensions and features (alive in `interlock` and `fdm`).
            let r = unsafe { (inst.fns.fp_v1_0().create_device)(pd, down, p_allocator, p_device) };
            if r != vk::Result::SUCCESS {
                return r;
            }
            // SAFETY: VUID-vkCreateDevice-pDevice-parameter: a valid pointer,
            // written by the successful command.
            let handle = unsafe { *p_device };
            let enabled = crate::interlock::enabled(&c, interlock.as_ref());
            // SAFETY: `handle` was just created through `next_gdpa` on `pd`.
            let core = unsafe { DeviceCore::new(&c, handle, next_gdpa, enabled.is_some()) };
            // SAFETY: the device was just created from `down` on `pd`, `set_loader_data` the loader's callback
            // from its chain; `info` is valid (as above).
            let reserved = match unsafe {
                ReservedSet::for_device(&c, interlock.as_ref(), info, &core.fns, down, set_loader_data)
            } {
                Ok(r) => r,
                // SAFETY: the device was created above, with `p_allocator`, and the application has not seen it.
                Err(e) => return unsafe { reserved_set_failed(&inst.log, &core, p_allocator, e) },
            };
            let emulates = enabled.is_some() || fdm.as_ref().is_some_and(|s| s.enabled);
            let mut data = DeviceData {
                core,
                interlock: enabled,
                reserved,
                // SAFETY: `info` is valid (as above).
                shading_rate: unsafe { crate::shading_rate::ForceOneByOne::for_device(&plan, info) },
                varyings: crate::link::Linker::for_device(&c),
                fdm: None,
                views: crate::deferred_views::DeferredViews::for_device(&c, emulates),
            };
            if let (Some(mode), Some(s)) = (plan.fdm_mode(), fdm.as_ref().filter(|s| s.enabled)) {
                // What the density-map hooks call: the layer's entry point of the command's row where another
                // capability intercepts it on this device (declared with its PFN type in the dispatch table),
                // else the next layer's command.
                // SAFETY: `next_gdpa` is the next layer's vkGetDeviceProcAddr and `handle` was created through it.
                let below = |name: &CStr| match dispatch::below_fdm(&data, name.to_bytes()) {
                    Some(hook) => hook as *const std::ffi::c_void,
                    None => unsafe { ffi::resolve_command(name, |n| next_gdpa(handle, n)) },
                };
                // SAFETY: the device was just created from `s.info`'s original, with `set_loader_data` from its
                // chain; `below` resolves each name to a pointer of its command's type or null.
                let f = unsafe { crate::fdm::Fdm::for_device(&data.core, mode, s, set_loader_data, &below) };
                data.fdm = Some(f);
            }
            let driver =
                if data.facts.driver_name.is_empty() { "driver name not reported" } else { &data.facts.driver_name };
            data.log().info(
                id::DEVICE_PLAN,
                &format!("{} ({driver}): {}; hooks: {}", data.facts.device_name, data.plan, data.hooks_description()),
            );
            for c in &data.plan.clamped {
                data.log().log_once(LogLevel::Info, id::PROFILE_ADJUSTED, c, c);
            }
            // SAFETY: a valid device, just created (dispatchable).
            state::insert_device(unsafe { dispatch_key(handle) }, Arc::new(data));
            vk::Result::SUCCESS
        },
        || vk::Result::ERROR_INITIALIZATION_FAILED,
    )
}

/// An architecture's profile refuses what the application asks for (a
/// feature the architecture lacks): what `vkCreateDevice` returns, logged.
///
/// # Safety
/// `info` is a valid `VkDeviceCreateInfo`.
unsafe fn refused_by_profile(c: &crate::device::Creation, info: &vk::DeviceCreateInfo) -> Option<vk::Result> {
    c.plan.profile.as_ref()?;
    // Ask only for structures of extensions the chain below knows.
    let mut available = crate::architecture::Available::default();
    let mut f2 = vk::PhysicalDeviceFeatures2::default();
    if c.facts.has_extension(crate::plan::SHADING_RATE_EXTENSION) {
        f2 = f2.push_next(&mut available.shading_rate);
    }
    if c.facts.has_extension("VK_EXT_fragment_shader_interlock") || c.plan.interlock_strategy().is_some() {
        f2 = f2.push_next(&mut available.interlock);
    }
    (c.features2)(&mut f2);
    // SAFETY: the caller's guarantee.
    let (r, why) = unsafe { crate::architecture::refuse(c.plan, info, &available) }?;
    c.inst.log.warn(id::FEATURE_NOT_PRESENT, &format!("vkCreateDevice: {why}"));
    Some(r)
}

/// The reserved set of the locked interlock strategies cannot be made:
/// logged, the device destroyed, and what `vkCreateDevice` returns (out of
/// memory as it is, anything else a failed initialization).
///
/// # Safety
/// `core.handle` was created with `p_allocator` and the application has
/// not seen it; `ReservedSet::create` destroyed the objects it had made.
unsafe fn reserved_set_failed(
    log: &Logger,
    core: &DeviceCore,
    p_allocator: *const vk::AllocationCallbacks,
    e: crate::interlock::reserved::InitError,
) -> vk::Result {
    log.error(id::SPINLOCK_INIT, &format!("cannot create the interlock locks ({e}); vkCreateDevice fails"));
    // SAFETY: the caller's guarantee (VUID-vkDestroyDevice-device-05137: nothing of the device's remains).
    unsafe {
        let _ = core.fns.device_wait_idle();
        (core.fns.fp_v1_0().destroy_device)(core.handle, p_allocator);
    }
    match e.1 {
        vk::Result::ERROR_OUT_OF_HOST_MEMORY | vk::Result::ERROR_OUT_OF_DEVICE_MEMORY => e.1,
        _ => vk::Result::ERROR_INITIALIZATION_FAILED,
    }
}

/// Fills the emulated features after the driver filled the rest of the chain.
///
/// # Safety
/// `next` is the next layer's `vkGetPhysicalDeviceFeatures2` (or its KHR
/// alias) and `pd`, `p` valid arguments for it: `p` a writable
/// `VkPhysicalDeviceFeatures2` with a valid output chain.
unsafe fn features2(
    pd: vk::PhysicalDevice,
    p: *mut vk::PhysicalDeviceFeatures2,
    next: vk::PFN_vkGetPhysicalDeviceFeatures2,
) {
    // SAFETY: the caller's guarantee (VUID-vkGetPhysicalDeviceFeatures2-pFeatures-parameter).
    let mut next = || unsafe { next(pd, p) };
    let Some(pdd) = state::physical_device(pd) else { return next() };
    let plan = pdd.plan();
    let answering = answering(plan);
    // Structures of emulated extensions never reach the driver.
    let hidden: Vec<vk::StructureType> = answering.iter().flat_map(|a| a.features.iter().copied()).collect();
    // SAFETY: `p` is the caller's writable structure with a valid output chain
    // (VUID-VkPhysicalDeviceFeatures2-pNext-pNext).
    unsafe { pnext::without_outputs(p as *mut vk::BaseOutStructure, &hidden, &mut next) };
    // SAFETY: `p` is valid (the caller's guarantee); `without_outputs` linked
    // back what it unlinked, so this is the application's output chain.
    let chain = unsafe { (*p).p_next };
    for a in &answering {
        // SAFETY: a valid, writable output chain (as above).
        unsafe { (a.fill_features)(plan, chain) };
    }
    // SAFETY: as above.
    unsafe { crate::architecture::apply_features(&pdd.instance.log, plan, chain) };
}

/// The capabilities that answer physical-device structures themselves on a
/// device with this plan.
fn answering(plan: &Plan) -> Vec<&'static crate::device::Answers> {
    let mut v = Vec::new();
    if plan.interlock_strategy().is_some() {
        v.push(&crate::interlock::ANSWERS);
    }
    if plan.fdm_mode().is_some() {
        v.push(&crate::fdm::ANSWERS);
    }
    v
}

/// # Safety
/// The application (or the layer above) calls it with the arguments of a
/// valid `vkDestroyDevice` call.
unsafe extern "system" fn destroy_device(device: vk::Device, p_allocator: *const vk::AllocationCallbacks) {
    if device == vk::Device::null() {
        return;
    }
    // SAFETY: VUID-vkDestroyDevice-device-parameter: a non-null device is
    // valid (so dispatchable).
    let key = unsafe { dispatch_key(device) };
    let destroy = move || {
        if let Some(dev) = state::remove_device(key) {
            // SAFETY: the application destroyed every child of the device and
            // no command on it runs (VUID-vkDestroyDevice-device-05137, and
            // `device` is externally synchronized); the layer's own objects go
            // first, once the device is idle, then the next layer's
            // vkDestroyDevice with the caller's arguments. The registry entry is
            // gone, so no hook finds the device again.
            // `debug_leak`: the controls of the leak detectors (the validation layer below, valgrind).
            let leak = dev.instance.settings.debug_leak.clone().unwrap_or_default();
            unsafe {
                if let Some(s) = &dev.reserved {
                    let _ = dev.fns.device_wait_idle();
                    if let Some(o) = &s.ordered {
                        o.final_report(dev.log());
                    }
                    if leak != "vulkan" {
                        s.destroy(&dev.fns);
                    }
                }
                if let Some(f) = dev.fdm.as_ref().filter(|_| leak != "vulkan") {
                    let _ = dev.fns.device_wait_idle();
                    f.destroy();
                }
                // The views and images the application destroyed while its sets held them.
                if let Some(v) = &dev.views {
                    v.destroy(&dev.core);
                }
                (dev.fns.fp_v1_0().destroy_device)(device, p_allocator);
            }
            if leak == "host" {
                std::mem::forget(dev);
            }
        }
    };
    guard::entry(
        "vkDestroyDevice",
        || {
            if let Some(dev) = state::device_by_key(key) {
                debug_panic(&dev.debug_panic, "vkDestroyDevice");
            }
            destroy()
        },
        destroy,
    )
}

/// # Safety
/// The loader or the layer above calls it with the arguments of a valid
/// `vkCreateDebugUtilsMessengerEXT` call.
unsafe extern "system" fn create_debug_utils_messenger(
    instance: vk::Instance,
    p_create_info: *const vk::DebugUtilsMessengerCreateInfoEXT,
    p_allocator: *const vk::AllocationCallbacks,
    p_messenger: *mut vk::DebugUtilsMessengerEXT,
) -> vk::Result {
    guard::entry(
        "vkCreateDebugUtilsMessengerEXT",
        || {
            // SAFETY: VUID-vkCreateDebugUtilsMessengerEXT-instance-parameter: a
            // valid (so dispatchable) instance.
            let Some(inst) = state::instance(unsafe { dispatch_key(instance) }) else {
                return vk::Result::ERROR_INITIALIZATION_FAILED;
            };
            let Some(next) = inst.ext.create_debug_utils_messenger else {
                return vk::Result::ERROR_EXTENSION_NOT_PRESENT;
            };
            // SAFETY: the next layer's command with the caller's valid arguments.
            let r = unsafe { next(instance, p_create_info, p_allocator, p_messenger) };
            if r == vk::Result::SUCCESS {
                // SAFETY: VUID-vkCreateDebugUtilsMessengerEXT-pCreateInfo-parameter
                // (with a valid pfnUserCallback) and -pMessenger-parameter, which
                // the successful command wrote.
                if let Some(m) = unsafe { Messenger::from_create_info(&*p_create_info, *p_messenger) } {
                    inst.log.add_messenger(m);
                }
            }
            r
        },
        || vk::Result::ERROR_UNKNOWN,
    )
}

/// # Safety
/// The loader or the layer above calls it with the arguments of a valid
/// `vkDestroyDebugUtilsMessengerEXT` call.
unsafe extern "system" fn destroy_debug_utils_messenger(
    instance: vk::Instance,
    messenger: vk::DebugUtilsMessengerEXT,
    p_allocator: *const vk::AllocationCallbacks,
) {
    guard::entry(
        "vkDestroyDebugUtilsMessengerEXT",
        || {
            // SAFETY: VUID-vkDestroyDebugUtilsMessengerEXT-instance-parameter:
            // a valid (so dispatchable) instance.
            let Some(inst) = state::instance(unsafe { dispatch_key(instance) }) else {
                return;
            };
            inst.log.remove_messenger(messenger);
            if let Some(next) = inst.ext.destroy_debug_utils_messenger {
                // SAFETY: the next layer's command with the caller's valid
                // arguments; the layer no longer calls the messenger.
                unsafe { next(instance, messenger, p_allocator) };
            }
        },
        || {},
    )
}

/// The architecture profile's properties and identity.
///
/// # Safety
/// `p_next` is null or a valid, writable output chain.
unsafe fn apply_identity(
    pd: vk::PhysicalDevice,
    props: &mut vk::PhysicalDeviceProperties,
    p_next: *mut std::ffi::c_void,
) {
    let Some(pdd) = state::physical_device(pd) else { return };
    let inst = &pdd.instance;
    // SAFETY: the caller's guarantee.
    unsafe {
        crate::architecture::apply_properties(&inst.log, pdd.plan(), inst.settings.spoof_identity, props, p_next)
    };
    // Emulated interlock covers coarse fragments (the spinlock's blocks, the
    // ordered strategy's areas), unless the architecture forbids rates with
    // interlock (its profile already said false).
    if pdd.plan().interlock_strategy().is_some()
        && !pdd.plan().profile_forbids_rates_with_interlock()
        && !p_next.is_null()
    {
        // SAFETY: the caller's guarantee (a valid, writable output chain).
        if let Some(p) = unsafe { pnext::find_mut::<vk::PhysicalDeviceFragmentShadingRatePropertiesKHR>(p_next) } {
            p.fragment_shading_rate_with_fragment_shader_interlock = vk::TRUE;
        }
    }
}

/// Limits the spinlock and ordered strategies take for themselves: one
/// descriptor set (the last) and what it holds (the lock image; the ordered
/// strategy's two storage buffers and uniform buffer), and, for the ordered
/// strategy, the last varying location (the instance index).
fn adjust_limits(pd: vk::PhysicalDevice, limits: &mut vk::PhysicalDeviceLimits) {
    let Some(pdd) = state::physical_device(pd) else { return };
    let strategy = pdd.plan().interlock_strategy();
    if !strategy.is_some_and(|s| s.locks()) {
        return;
    }
    let log = &pdd.instance.log;
    let take = |name: &str, v: &mut u32, n: u32, why: &str| {
        let before = *v;
        *v = v.saturating_sub(n);
        log.log_once(
            crate::settings::LogLevel::Info,
            id::LIMIT_ADJUSTED,
            name,
            &format!("{name} {before} -> {} ({why})", *v),
        );
    };
    let set = "the last descriptor set holds the interlock locks";
    let ordered = strategy == Some(InterlockStrategy::Ordered);
    take("maxBoundDescriptorSets", &mut limits.max_bound_descriptor_sets, 1, set);
    take("maxPerStageDescriptorStorageImages", &mut limits.max_per_stage_descriptor_storage_images, 1, set);
    take("maxDescriptorSetStorageImages", &mut limits.max_descriptor_set_storage_images, 1, set);
    take("maxPerStageResources", &mut limits.max_per_stage_resources, if ordered { 4 } else { 1 }, set);
    if ordered {
        take("maxPerStageDescriptorStorageBuffers", &mut limits.max_per_stage_descriptor_storage_buffers, 2, set);
        take("maxDescriptorSetStorageBuffers", &mut limits.max_descriptor_set_storage_buffers, 2, set);
        take("maxPerStageDescriptorUniformBuffers", &mut limits.max_per_stage_descriptor_uniform_buffers, 1, set);
        take("maxDescriptorSetUniformBuffers", &mut limits.max_descriptor_set_uniform_buffers, 1, set);
        let kept = 4 * crate::interlock::cells::location(limits);
        let why = "the last location carries the instance index for ordered interlock";
        let v = limits.max_vertex_output_components;
        take("maxVertexOutputComponents", &mut limits.max_vertex_output_components, v.saturating_sub(kept), why);
        let f = limits.max_fragment_input_components;
        take("maxFragmentInputComponents", &mut limits.max_fragment_input_components, f.saturating_sub(kept), why);
    }
}

/// # Safety
/// The loader or the layer above calls it with the arguments of a valid
/// `vkGetPhysicalDeviceProperties` call.
unsafe extern "system" fn get_physical_device_properties(pd: vk::PhysicalDevice, p: *mut vk::PhysicalDeviceProperties) {
    let next = |pd| state::physical_device(pd).map(|d| d.instance.fns.fp_v1_0().get_physical_device_properties);
    guard::entry(
        "vkGetPhysicalDeviceProperties",
        || {
            if let Some(n) = next(pd) {
                // SAFETY: the next layer's command with the caller's valid
                // arguments; VUID-vkGetPhysicalDeviceProperties-pProperties-parameter:
                // `p` is valid and writable, filled by the command.
                unsafe {
                    n(pd, p);
                    adjust_limits(pd, &mut (*p).limits);
                    apply_identity(pd, &mut *p, std::ptr::null_mut());
                }
            }
        },
        || {
            if let Some(n) = next(pd) {
                // SAFETY: the next layer's command with the caller's valid arguments.
                unsafe { n(pd, p) }
            }
        },
    )
}

/// The driver's properties with the emulated and governed ones filled.
///
/// # Safety
/// `next` is the next layer's `vkGetPhysicalDeviceProperties2` (or its KHR
/// alias) and `pd`, `p` valid arguments for it: `p` a writable
/// `VkPhysicalDeviceProperties2` with a valid output chain.
unsafe fn properties2(
    pd: vk::PhysicalDevice,
    p: *mut vk::PhysicalDeviceProperties2,
    next: vk::PFN_vkGetPhysicalDeviceProperties2,
) {
    // SAFETY: the caller's guarantee (VUID-vkGetPhysicalDeviceProperties2-pProperties-parameter).
    let mut next = || unsafe { next(pd, p) };
    let pdd = state::physical_device(pd);
    let answering = pdd.as_ref().map(|d| answering(d.plan())).unwrap_or_default();
    let hidden: Vec<vk::StructureType> = answering.iter().flat_map(|a| a.properties.iter().copied()).collect();
    // SAFETY: `p` is the caller's writable structure with a valid output chain
    // (VUID-VkPhysicalDeviceProperties2-pNext-pNext).
    unsafe { pnext::without_outputs(p as *mut vk::BaseOutStructure, &hidden, &mut next) };
    // SAFETY: `p` is valid and writable, filled by the command (the caller's
    // guarantee); `without_outputs` linked back what it unlinked.
    let props = unsafe { &mut *p };
    if let Some(d) = &pdd {
        let limits = props.properties.limits;
        for a in &answering {
            // SAFETY: the application's valid, writable output chain (as above).
            unsafe { (a.fill_properties)(d.plan(), &limits, props.p_next) };
        }
    }
    adjust_limits(pd, &mut props.properties.limits);
    // SAFETY: as above.
    unsafe { apply_identity(pd, &mut props.properties, props.p_next) };
}

/// The `*2` physical-device queries, core and KHR: `body` with the next
/// layer's command; after a panic, the next layer's command alone.
macro_rules! query2_hooks {
    ($( $hook:ident $name:literal $pfn:ident $info:ident => $body:ident, |$d:ident| $next:expr; )*) => {
        $(
            #[doc = concat!("`", $name, "`.")]
            ///
            /// # Safety
            /// The loader or the layer above calls it with the arguments of a
            /// valid call of the command.
            unsafe extern "system" fn $hook(pd: vk::PhysicalDevice, p: *mut vk::$info<'_>) {
                let next = |pd| state::physical_device(pd).and_then(|$d| $next);
                guard::entry(
                    $name,
                    || {
                        if let Some(n) = next(pd) {
                            // SAFETY: `n` is the next layer's command and `pd`,
                            // `p` the caller's valid arguments for it, as `$body`
                            // requires.
                            unsafe { $body(pd, p, n) }
                        }
                    },
                    || {
                        if let Some(n) = next(pd) {
                            // SAFETY: the next layer's command with the caller's valid arguments.
                            unsafe { n(pd, p) }
                        }
                    },
                )
            }
            const _: vk::$pfn = $hook;
        )*
    };
}

query2_hooks! {
    get_physical_device_features2 "vkGetPhysicalDeviceFeatures2" PFN_vkGetPhysicalDeviceFeatures2 PhysicalDeviceFeatures2
        => features2, |d| Some(d.instance.fns.fp_v1_1().get_physical_device_features2);
    get_physical_device_features2_khr "vkGetPhysicalDeviceFeatures2KHR" PFN_vkGetPhysicalDeviceFeatures2 PhysicalDeviceFeatures2
        => features2, |d| d.instance.ext.get_physical_device_features2_khr;
    get_physical_device_properties2 "vkGetPhysicalDeviceProperties2" PFN_vkGetPhysicalDeviceProperties2 PhysicalDeviceProperties2
        => properties2, |d| Some(d.instance.fns.fp_v1_1().get_physical_device_properties2);
    get_physical_device_properties2_khr "vkGetPhysicalDeviceProperties2KHR" PFN_vkGetPhysicalDeviceProperties2 PhysicalDeviceProperties2
        => properties2, |d| d.instance.ext.get_physical_device_properties2_khr;
}

/// The driver's fragment shading rates, without those larger than the
/// architecture's `maxFragmentSize` (the list keeps its required order).
///
/// # Safety
/// The loader or the layer above calls it with the arguments of a valid
/// `vkGetPhysicalDeviceFragmentShadingRatesKHR` call.
unsafe extern "system" fn get_physical_device_fragment_shading_rates(
    pd: vk::PhysicalDevice,
    count: *mut u32,
    rates: *mut vk::PhysicalDeviceFragmentShadingRateKHR<'_>,
) -> vk::Result {
    let next = move || -> vk::Result {
        match state::physical_device(pd).and_then(|d| d.instance.ext.get_physical_device_fragment_shading_rates) {
            // SAFETY: the next layer's command with the caller's valid arguments.
            Some(n) => unsafe { n(pd, count, rates) },
            None => vk::Result::ERROR_EXTENSION_NOT_PRESENT,
        }
    };
    guard::entry(
        "vkGetPhysicalDeviceFragmentShadingRatesKHR",
        || {
            let Some(pdd) = state::physical_device(pd) else { return next() };
            let max = pdd.plan().profile.as_ref().and_then(|p| {
                let v = p.property("VkPhysicalDeviceFragmentShadingRatePropertiesKHR", "maxFragmentSize")?;
                Some((v["width"].as_u64()? as u32, v["height"].as_u64()? as u32))
            });
            let (Some((mw, mh)), Some(n)) = (max, pdd.instance.ext.get_physical_device_fragment_shading_rates) else {
                return next();
            };
            let mut total = 0u32;
            // SAFETY: `pd` is valid
            // (VUID-vkGetPhysicalDeviceFragmentShadingRatesKHR-physicalDevice-parameter);
            // a live count and no array.
            let r = unsafe { n(pd, &mut total, std::ptr::null_mut()) };
            if r != vk::Result::SUCCESS {
                return r;
            }
            let mut all = vec![vk::PhysicalDeviceFragmentShadingRateKHR::default(); total as usize];
            // SAFETY: as above, with `all`, a live Vec of `total` structures.
            let r = unsafe { n(pd, &mut total, all.as_mut_ptr()) };
            if r.as_raw() < 0 {
                return r;
            }
            all.truncate(total as usize);
            all.retain(|f| f.fragment_size.width <= mw && f.fragment_size.height <= mh);
            // SAFETY: VUID-vkGetPhysicalDeviceFragmentShadingRatesKHR-pFragmentShadingRateCount-parameter:
            // a valid, writable count.
            let count = unsafe { &mut *count };
            if rates.is_null() {
                *count = all.len() as u32;
                return vk::Result::SUCCESS;
            }
            // Output structures keep the application's sType and pNext.
            // SAFETY: VUID-vkGetPhysicalDeviceFragmentShadingRatesKHR-pFragmentShadingRates-parameter:
            // a non-null array holds `*count` structures, writable.
            let out = unsafe { std::slice::from_raw_parts_mut(rates, *count as usize) };
            for (o, f) in out.iter_mut().zip(&all) {
                o.sample_counts = f.sample_counts;
                o.fragment_size = f.fragment_size;
            }
            let written = out.len().min(all.len());
            *count = written as u32;
            if written < all.len() {
                vk::Result::INCOMPLETE
            } else {
                vk::Result::SUCCESS
            }
        },
        next,
    )
}

fn emulates_fdm(pd: vk::PhysicalDevice) -> bool {
    state::physical_device(pd).is_some_and(|d| d.plan().fdm_mode().is_some())
}

/// # Safety
/// The loader or the layer above calls it with the arguments of a valid
/// `vkGetPhysicalDeviceFormatProperties` call.
unsafe extern "system" fn get_physical_device_format_properties(
    pd: vk::PhysicalDevice,
    format: vk::Format,
    p: *mut vk::FormatProperties,
) {
    let next = move || {
        if let Some(d) = state::physical_device(pd) {
            // SAFETY: the next layer's command with the caller's valid arguments.
            unsafe { (d.instance.fns.fp_v1_0().get_physical_device_format_properties)(pd, format, p) }
        }
    };
    guard::entry(
        "vkGetPhysicalDeviceFormatProperties",
        || {
            next();
            if emulates_fdm(pd) {
                // SAFETY: VUID-vkGetPhysicalDeviceFormatProperties-pFormatProperties-parameter:
                // valid and writable.
                crate::fdm::fill_format(format, unsafe { &mut *p });
            }
        },
        next,
    )
}

/// # Safety
/// The loader or the layer above calls it with the arguments of a valid
/// `vkGetPhysicalDeviceFormatProperties2` call.
unsafe extern "system" fn get_physical_device_format_properties2(
    pd: vk::PhysicalDevice,
    format: vk::Format,
    p: *mut vk::FormatProperties2<'_>,
) {
    let next = move || {
        if let Some(d) = state::physical_device(pd) {
            // SAFETY: the next layer's command with the caller's valid arguments.
            unsafe { (d.instance.fns.fp_v1_1().get_physical_device_format_properties2)(pd, format, p) }
        }
    };
    guard::entry(
        "vkGetPhysicalDeviceFormatProperties2",
        || {
            next();
            if emulates_fdm(pd) {
                // SAFETY: VUID-vkGetPhysicalDeviceFormatProperties2-pFormatProperties-parameter:
                // valid and writable.
                let p = unsafe { &mut *p };
                crate::fdm::fill_format(format, &mut p.format_properties);
                // SAFETY: a valid, writable output chain (VUID-VkFormatProperties2-pNext-pNext).
                if let Some(f3) = unsafe { pnext::find_mut::<vk::FormatProperties3>(p.p_next) } {
                    crate::fdm::fill_format3(format, f3);
                }
            }
        },
        next,
    )
}

/// # Safety
/// The loader or the layer above calls it with the arguments of a valid
/// `vkGetPhysicalDeviceImageFormatProperties` call.
unsafe extern "system" fn get_physical_device_image_format_properties(
    pd: vk::PhysicalDevice,
    format: vk::Format,
    ty: vk::ImageType,
    tiling: vk::ImageTiling,
    usage: vk::ImageUsageFlags,
    flags: vk::ImageCreateFlags,
    p: *mut vk::ImageFormatProperties,
) -> vk::Result {
    let next = move |usage, flags| match state::physical_device(pd) {
        // SAFETY: the next layer's command with the caller's valid arguments,
        // `usage` and `flags` possibly translated (valid values of their types).
        Some(d) => unsafe {
            (d.instance.fns.fp_v1_0().get_physical_device_image_format_properties)(
                pd, format, ty, tiling, usage, flags, p,
            )
        },
        None => vk::Result::ERROR_INITIALIZATION_FAILED,
    };
    guard::entry(
        "vkGetPhysicalDeviceImageFormatProperties",
        || {
            if !emulates_fdm(pd) {
                return next(usage, flags);
            }
            match crate::fdm::translate_image_query(format, tiling, usage, flags) {
                Some((u, f)) => next(u, f),
                None => vk::Result::ERROR_FORMAT_NOT_SUPPORTED,
            }
        },
        move || next(usage, flags),
    )
}

/// # Safety
/// The loader or the layer above calls it with the arguments of a valid
/// `vkGetPhysicalDeviceImageFormatProperties2` call.
unsafe extern "system" fn get_physical_device_image_format_properties2(
    pd: vk::PhysicalDevice,
    info: *const vk::PhysicalDeviceImageFormatInfo2<'_>,
    p: *mut vk::ImageFormatProperties2<'_>,
) -> vk::Result {
    let next = move |info: *const vk::PhysicalDeviceImageFormatInfo2| match state::physical_device(pd) {
        // SAFETY: the next layer's command with the caller's valid arguments,
        // or a copy of its info with usage and flags translated.
        Some(d) => unsafe { (d.instance.fns.fp_v1_1().get_physical_device_image_format_properties2)(pd, info, p) },
        None => vk::Result::ERROR_INITIALIZATION_FAILED,
    };
    guard::entry(
        "vkGetPhysicalDeviceImageFormatProperties2",
        || {
            if !emulates_fdm(pd) {
                return next(info);
            }
            // SAFETY: VUID-vkGetPhysicalDeviceImageFormatProperties2-pImageFormatInfo-parameter:
            // a valid structure.
            let i = unsafe { &*info };
            match crate::fdm::translate_image_query(i.format, i.tiling, i.usage, i.flags) {
                Some((usage, flags)) => {
                    let mut copy = *i;
                    copy.usage = usage;
                    copy.flags = flags;
                    next(&copy)
                }
                None => vk::Result::ERROR_FORMAT_NOT_SUPPORTED,
            }
        },
        move || next(info),
    )
}

//! The loader-facing entry points: negotiation, `vkGetInstanceProcAddr`,
//! `vkGetDeviceProcAddr`, the enumerate functions, and the instance-level
//! hooks (instance and device creation, physical-device bookkeeping, debug
//! messengers). Every exported function runs under [`guard::entry`].

use crate::device::DeviceCore;
use crate::dispatch;
use crate::ffi::{self, dispatch_key, pfn, NegotiateLayerInterface};
use crate::guard::{self, debug_panic};
use crate::id;
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
            if p.is_null() || (*p).s_type != ffi::LAYER_NEGOTIATE_INTERFACE_STRUCT {
                return vk::Result::ERROR_INITIALIZATION_FAILED;
            }
            if (*p).loader_layer_interface_version < 2 {
                return vk::Result::ERROR_INITIALIZATION_FAILED;
            }
            (*p).loader_layer_interface_version = ffi::CURRENT_LOADER_LAYER_INTERFACE_VERSION;
            (*p).pfn_get_instance_proc_addr = Some(vkGetInstanceProcAddr);
            (*p).pfn_get_device_proc_addr = Some(vkGetDeviceProcAddr);
            (*p).pfn_get_physical_device_proc_addr = None;
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
            let name = CStr::from_ptr(p_name).to_bytes();
            if GLOBAL_COMMANDS.contains(&name) {
                return instance_hook(name);
            }
            if instance == vk::Instance::null() {
                return None;
            }
            let inst = state::instance(dispatch_key(instance))?;
            let next = (inst.next_gipa)(instance, p_name);
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
            let name = CStr::from_ptr(p_name).to_bytes();
            match name {
                b"vkGetDeviceProcAddr" => return pfn!(vkGetDeviceProcAddr as vk::PFN_vkGetDeviceProcAddr),
                b"vkDestroyDevice" => return pfn!(destroy_device as vk::PFN_vkDestroyDevice),
                _ => {}
            }
            let dev = state::device_by_key(dispatch_key(device))?;
            let next = (dev.next_gdpa)(device, p_name);
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
    if out.is_null() {
        *count = items.len() as u32;
        return vk::Result::SUCCESS;
    }
    let n = (*count as usize).min(items.len());
    std::ptr::copy_nonoverlapping(items.as_ptr(), out, n);
    *count = n as u32;
    if n < items.len() {
        vk::Result::INCOMPLETE
    } else {
        vk::Result::SUCCESS
    }
}

unsafe fn is_this_layer(p_layer_name: *const c_char) -> bool {
    !p_layer_name.is_null() && CStr::from_ptr(p_layer_name).to_bytes() == LAYER_NAME.as_bytes()
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
        || fill(&[layer_properties()], count, props),
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
            if is_this_layer(p_layer_name) {
                *count = 0;
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
        || fill(&[layer_properties()], count, props),
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
            if is_this_layer(p_layer_name) {
                return fill(&added, count, props);
            }
            let Some(pdd) = pdd else {
                return vk::Result::ERROR_INITIALIZATION_FAILED;
            };
            let next = pdd.instance.fns.fp_v1_0().enumerate_device_extension_properties;
            let hidden = pdd.plan().hidden_extensions.clone();
            if (added.is_empty() && hidden.is_empty()) || !p_layer_name.is_null() {
                return next(pd, p_layer_name, count, props);
            }
            let mut n = 0u32;
            let r = next(pd, p_layer_name, &mut n, std::ptr::null_mut());
            if r != vk::Result::SUCCESS {
                return r;
            }
            let mut all = vec![vk::ExtensionProperties::default(); n as usize];
            let r = next(pd, p_layer_name, &mut n, all.as_mut_ptr());
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
            fill(&all, count, props)
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

unsafe extern "system" fn create_instance(
    p_create_info: *const vk::InstanceCreateInfo,
    p_allocator: *const vk::AllocationCallbacks,
    p_instance: *mut vk::Instance,
) -> vk::Result {
    guard::entry(
        "vkCreateInstance",
        || {
            let Some(next_gipa) = ffi::take_instance_link(p_create_info) else {
                crate::log::global().error(id::LOADER_LINK, "no loader link info in vkCreateInstance");
                return vk::Result::ERROR_INITIALIZATION_FAILED;
            };
            let info = &*p_create_info;
            let (settings, diagnostics) = Settings::for_instance(info);
            debug_panic(&settings.debug_panic, "vkCreateInstance");
            let Some(next_create) = next_gipa(vk::Instance::null(), c"vkCreateInstance".as_ptr()) else {
                return vk::Result::ERROR_INITIALIZATION_FAILED;
            };
            let next_create: vk::PFN_vkCreateInstance = std::mem::transmute(next_create);
            let stripped = crate::settings::strip_own_settings(info);
            let down = stripped.as_ref().map(|s| &s.info as *const vk::InstanceCreateInfo).unwrap_or(p_create_info);
            let r = next_create(down, p_allocator, p_instance);
            if r != vk::Result::SUCCESS {
                return r;
            }
            let handle = *p_instance;
            // Core names, or their extension aliases for a 1.0 instance.
            let fns = ash::Instance::load_with(|name| ffi::resolve_command(name, |n| next_gipa(handle, n)), handle);
            let api_version = if info.p_application_info.is_null() || (*info.p_application_info).api_version == 0 {
                vk::API_VERSION_1_0
            } else {
                (*info.p_application_info).api_version
            };
            // Messengers chained to the create info hear about creation only.
            let log = Logger::new(settings.log_level, chained_messengers(info.p_next));
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
            let ext = crate::state::InstanceExtFns::load(next_gipa, handle);
            let (profile, profile_error) = crate::profile::for_settings(&settings);
            if let Some(e) = profile_error {
                log.error(id::PROFILE_INVALID, &format!("{e}; running as native"));
            }
            let data = InstanceData { handle, next_gipa, fns, api_version, settings, log, ext, profile };
            state::insert_instance(dispatch_key(handle), Arc::new(data));
            vk::Result::SUCCESS
        },
        || vk::Result::ERROR_INITIALIZATION_FAILED,
    )
}

unsafe extern "system" fn destroy_instance(instance: vk::Instance, p_allocator: *const vk::AllocationCallbacks) {
    if instance == vk::Instance::null() {
        return;
    }
    let key = dispatch_key(instance);
    let destroy = move || {
        if let Some(inst) = state::remove_instance(key) {
            (inst.fns.fp_v1_0().destroy_instance)(instance, p_allocator);
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

unsafe extern "system" fn enumerate_physical_devices(
    instance: vk::Instance,
    count: *mut u32,
    pds: *mut vk::PhysicalDevice,
) -> vk::Result {
    guard::entry(
        "vkEnumeratePhysicalDevices",
        || {
            let Some(inst) = state::instance(dispatch_key(instance)) else {
                return vk::Result::ERROR_INITIALIZATION_FAILED;
            };
            let r = (inst.fns.fp_v1_0().enumerate_physical_devices)(instance, count, pds);
            if r.as_raw() >= 0 && !pds.is_null() {
                state::insert_physical_devices(&inst, std::slice::from_raw_parts(pds, *count as usize));
            }
            r
        },
        || vk::Result::ERROR_UNKNOWN,
    )
}

unsafe extern "system" fn enumerate_physical_device_groups(
    instance: vk::Instance,
    count: *mut u32,
    groups: *mut vk::PhysicalDeviceGroupProperties,
) -> vk::Result {
    guard::entry(
        "vkEnumeratePhysicalDeviceGroups",
        || {
            let Some(inst) = state::instance(dispatch_key(instance)) else {
                return vk::Result::ERROR_INITIALIZATION_FAILED;
            };
            // Core and KHR names share a signature; whichever the chain has.
            let Some(next) = inst.ext.enumerate_physical_device_groups else {
                return vk::Result::ERROR_INITIALIZATION_FAILED;
            };
            let r = next(instance, count, groups);
            if r.as_raw() >= 0 && !groups.is_null() {
                for g in std::slice::from_raw_parts(groups, *count as usize) {
                    state::insert_physical_devices(&inst, &g.physical_devices[..g.physical_device_count as usize]);
                }
            }
            r
        },
        || vk::Result::ERROR_UNKNOWN,
    )
}

/// A create info the layer cannot strip: a feature it does not provide fails
/// device creation, as the spec says; a structure it cannot copy sends the
/// create info down unchanged (`None`).
fn strip_failed(log: &Logger, what: &str, e: crate::pnext::StripError) -> Option<vk::Result> {
    match e {
        crate::pnext::StripError::FeatureNotPresent(_) => {
            log.warn(id::FEATURE_NOT_PRESENT, &format!("{e}; vkCreateDevice fails as the spec says"));
            Some(vk::Result::ERROR_FEATURE_NOT_PRESENT)
        }
        crate::pnext::StripError::Unknown(_) => {
            log.error(
                id::CREATE_INFO_UNKNOWN,
                &format!("vkCreateDevice: {e}; {what} cannot be stripped, the create info goes down unchanged"),
            );
            None
        }
    }
}

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
            let Some((_, next_gdpa)) = ffi::take_device_link(p_create_info) else {
                inst.log.error(id::LOADER_LINK, "no loader link info in vkCreateDevice");
                return vk::Result::ERROR_INITIALIZATION_FAILED;
            };
            debug_panic(&inst.settings.debug_panic, "vkCreateDevice");
            let set_loader_data = ffi::device_loader_data_callback(p_create_info);
            let (facts, plan) = pdd.decided().clone();
            if plan.profile.is_some() {
                // Ask only for structures of extensions the chain below knows.
                let mut available = crate::architecture::Available::default();
                let mut f2 = vk::PhysicalDeviceFeatures2::default();
                if facts.has_extension(crate::plan::SHADING_RATE_EXTENSION) {
                    f2 = f2.push_next(&mut available.shading_rate);
                }
                if facts.has_extension("VK_EXT_fragment_shader_interlock") || plan.interlock_strategy().is_some() {
                    f2 = f2.push_next(&mut available.interlock);
                }
                features2(pd, &mut f2, inst.fns.fp_v1_1().get_physical_device_features2);
                if let Some((r, why)) = crate::architecture::refuse(&plan, &*p_create_info, &available) {
                    inst.log.warn(id::FEATURE_NOT_PRESENT, &format!("vkCreateDevice: {why}"));
                    return r;
                }
            }
            // Emulated extensions and features never reach the driver.
            let mut stripped = None;
            if let Some(strategy) = plan.interlock_strategy() {
                match crate::interlock::strip(&*p_create_info, strategy, strategy == InterlockStrategy::Spinlock) {
                    Ok(s) => stripped = Some(s),
                    Err(e) => {
                        if let Some(r) = strip_failed(&inst.log, "interlock", e) {
                            return r;
                        }
                    }
                }
            }
            let mut down = stripped.as_ref().map(|s| &s.info as *const vk::DeviceCreateInfo).unwrap_or(p_create_info);
            let mut fdm_stripped = None;
            if plan.fdm_mode().is_some() {
                match crate::fdm::strip(&*down) {
                    Ok(s) => fdm_stripped = Some(s),
                    Err(e) => {
                        if let Some(r) = strip_failed(&inst.log, "the density map", e) {
                            return r;
                        }
                    }
                }
            }
            if let Some(s) = &fdm_stripped {
                down = &s.info;
            }
            let r = (inst.fns.fp_v1_0().create_device)(pd, down, p_allocator, p_device);
            if r != vk::Result::SUCCESS {
                return r;
            }
            let handle = *p_device;
            // Core names, or their extension aliases where the application's
            // API version lacks the core command (`ffi::resolve_command`).
            let fns = ash::Device::load_with(|name| ffi::resolve_command(name, |n| next_gdpa(handle, n)), handle);
            let enabled = stripped.as_ref().is_some_and(|s| s.interlock.extension_enabled);
            let mut spinlock = None;
            if enabled && plan.interlock_strategy() == Some(InterlockStrategy::Spinlock) {
                let set = inst.fns.get_physical_device_properties(pd).limits.max_bound_descriptor_sets - 1;
                match crate::spinlock::Spinlock::create(&inst.fns, pd, &fns, &*down, set_loader_data, set) {
                    Ok(s) => spinlock = Some(s),
                    Err(crate::spinlock::InitError(what, e)) => {
                        inst.log.error(
                            id::SPINLOCK_INIT,
                            &format!("cannot create the interlock locks ({what}: {e:?}); vkCreateDevice fails"),
                        );
                        let _ = fns.device_wait_idle();
                        (fns.fp_v1_0().destroy_device)(handle, p_allocator);
                        return vk::Result::ERROR_INITIALIZATION_FAILED;
                    }
                }
            }
            let next_create_shaders = next_gdpa(handle, c"vkCreateShadersEXT".as_ptr()).map(|f| std::mem::transmute(f));
            let fsr_enabled = {
                let ci = &*p_create_info;
                (0..ci.enabled_extension_count as usize).any(|i| {
                    std::ffi::CStr::from_ptr(*ci.pp_enabled_extension_names.add(i)).to_bytes()
                        == crate::plan::SHADING_RATE_EXTENSION.as_bytes()
                })
            };
            let next_set_fragment_shading_rate: Option<vk::PFN_vkCmdSetFragmentShadingRateKHR> =
                next_gdpa(handle, c"vkCmdSetFragmentShadingRateKHR".as_ptr()).map(|f| std::mem::transmute(f));
            let shading_rate = (fsr_enabled && plan.forces_one_by_one_with_interlock())
                .then(|| crate::shading_rate::ForceOneByOne::new(next_set_fragment_shading_rate));
            // Shaders need the layer only where the application enabled interlock.
            let interlock = stripped.map(|s| s.interlock).filter(|i| i.extension_enabled);
            if interlock.as_ref().is_some_and(|i| i.strategy == InterlockStrategy::Serialized) && !facts.is_llvmpipe() {
                inst.log.warn(
                    id::INTERLOCK_SERIALIZED_INEXACT,
                    &format!("interlock_strategy=serialized on {}: exact only where the rasterizer shades overlapping fragments in primitive order (llvmpipe)", facts.device_name),
                );
            }
            // Loaded through the next layer's GDPA: the loader's own
            // vkGetDeviceProcAddr cannot be called inside vkCreateDevice.
            let shader_object = next_create_shaders.map(|_| {
                ash::ext::shader_object::DeviceFn::load(|name| std::mem::transmute(next_gdpa(handle, name.as_ptr())))
            });
            // Uniform propagation measured slower on llvmpipe (docs/BENCHMARKS.md).
            let uniforms = match inst.settings.varyings_uniforms {
                "on" => true,
                "off" => false,
                _ => !facts.is_llvmpipe(),
            };
            let varyings = plan.varyings_level().map(|l| crate::link::Varyings::new(l, uniforms));
            let mut data = DeviceData {
                core: DeviceCore {
                    interlock_rewrite: interlock.is_some(),
                    handle,
                    physical_device: pd,
                    debug_panic: inst.settings.debug_panic.clone(),
                    instance: inst,
                    next_gdpa,
                    fns,
                    facts,
                    plan,
                    shader_object,
                    next_create_shaders,
                    next_set_fragment_shading_rate,
                    next_begin_transform_feedback: next_gdpa(handle, c"vkCmdBeginTransformFeedbackEXT".as_ptr())
                        .map(|f| std::mem::transmute(f)),
                },
                interlock,
                spinlock,
                shading_rate,
                varyings,
                fdm: None,
            };
            if let (Some(mode), Some(s)) = (data.plan.fdm_mode(), fdm_stripped.as_ref().filter(|s| s.enabled)) {
                // What the density-map hooks call: the layer's other hooks for
                // this device where it has them, else the next layer.
                let below = ash::Device::load_with(
                    |name| match dispatch::below_fdm(&data, name.to_bytes()) {
                        Some(hook) => hook as *const std::ffi::c_void,
                        None => ffi::resolve_command(name, |n| next_gdpa(handle, n)),
                    },
                    handle,
                );
                let fdm = crate::fdm::Fdm::new(
                    mode,
                    below,
                    &data.instance.fns,
                    pd,
                    &s.info,
                    set_loader_data,
                    data.instance.settings.fdm_overlay,
                );
                data.fdm = Some(fdm);
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
            state::insert_device(dispatch_key(handle), Arc::new(data));
            vk::Result::SUCCESS
        },
        || vk::Result::ERROR_INITIALIZATION_FAILED,
    )
}

/// Fills the emulated features after the driver filled the rest of the chain.
unsafe fn features2(
    pd: vk::PhysicalDevice,
    p: *mut vk::PhysicalDeviceFeatures2,
    next: vk::PFN_vkGetPhysicalDeviceFeatures2,
) {
    let Some(pdd) = state::physical_device(pd) else { return next(pd, p) };
    let plan = pdd.plan();
    let head = p as *mut vk::BaseOutStructure;
    let interlock = plan.interlock_strategy().is_some();
    let fdm = plan.fdm_mode().is_some();
    // Structures of emulated extensions never reach the driver.
    let call = || {
        if interlock {
            let s_type = vk::StructureType::PHYSICAL_DEVICE_FRAGMENT_SHADER_INTERLOCK_FEATURES_EXT;
            pnext::without_output(head, s_type, || next(pd, p))
        } else {
            next(pd, p)
        }
    };
    if fdm {
        let fdm2 = vk::StructureType::PHYSICAL_DEVICE_FRAGMENT_DENSITY_MAP_2_FEATURES_EXT;
        pnext::without_output(head, vk::StructureType::PHYSICAL_DEVICE_FRAGMENT_DENSITY_MAP_FEATURES_EXT, || {
            pnext::without_output(head, fdm2, call)
        });
        if let Some(f) = pnext::find_mut::<vk::PhysicalDeviceFragmentDensityMapFeaturesEXT>((*p).p_next) {
            crate::fdm::fill_features(f);
        }
        if let Some(f) = pnext::find_mut::<vk::PhysicalDeviceFragmentDensityMap2FeaturesEXT>((*p).p_next) {
            crate::fdm::fill_features2(f);
        }
    } else {
        call();
    }
    if interlock {
        if let Some(f) = pnext::find_mut::<vk::PhysicalDeviceFragmentShaderInterlockFeaturesEXT>((*p).p_next) {
            crate::interlock::fill_features(f);
        }
    }
    crate::architecture::apply_features(&pdd.instance.log, plan, (*p).p_next);
}

unsafe extern "system" fn destroy_device(device: vk::Device, p_allocator: *const vk::AllocationCallbacks) {
    if device == vk::Device::null() {
        return;
    }
    let key = dispatch_key(device);
    let destroy = move || {
        if let Some(dev) = state::remove_device(key) {
            if let Some(s) = &dev.spinlock {
                let _ = dev.fns.device_wait_idle();
                s.destroy(&dev.fns);
            }
            if let Some(f) = &dev.fdm {
                let _ = dev.fns.device_wait_idle();
                f.destroy();
            }
            (dev.fns.fp_v1_0().destroy_device)(device, p_allocator);
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

unsafe extern "system" fn create_debug_utils_messenger(
    instance: vk::Instance,
    p_create_info: *const vk::DebugUtilsMessengerCreateInfoEXT,
    p_allocator: *const vk::AllocationCallbacks,
    p_messenger: *mut vk::DebugUtilsMessengerEXT,
) -> vk::Result {
    guard::entry(
        "vkCreateDebugUtilsMessengerEXT",
        || {
            let Some(inst) = state::instance(dispatch_key(instance)) else {
                return vk::Result::ERROR_INITIALIZATION_FAILED;
            };
            let Some(next) = inst.ext.create_debug_utils_messenger else {
                return vk::Result::ERROR_EXTENSION_NOT_PRESENT;
            };
            let r = next(instance, p_create_info, p_allocator, p_messenger);
            if r == vk::Result::SUCCESS {
                if let Some(m) = Messenger::from_create_info(&*p_create_info, *p_messenger) {
                    inst.log.add_messenger(m);
                }
            }
            r
        },
        || vk::Result::ERROR_UNKNOWN,
    )
}

unsafe extern "system" fn destroy_debug_utils_messenger(
    instance: vk::Instance,
    messenger: vk::DebugUtilsMessengerEXT,
    p_allocator: *const vk::AllocationCallbacks,
) {
    guard::entry(
        "vkDestroyDebugUtilsMessengerEXT",
        || {
            let Some(inst) = state::instance(dispatch_key(instance)) else {
                return;
            };
            inst.log.remove_messenger(messenger);
            if let Some(next) = inst.ext.destroy_debug_utils_messenger {
                next(instance, messenger, p_allocator);
            }
        },
        || {},
    )
}

/// The architecture profile's properties and identity.
unsafe fn apply_identity(
    pd: vk::PhysicalDevice,
    props: &mut vk::PhysicalDeviceProperties,
    p_next: *mut std::ffi::c_void,
) {
    let Some(pdd) = state::physical_device(pd) else { return };
    let inst = &pdd.instance;
    crate::architecture::apply_properties(&inst.log, pdd.plan(), inst.settings.spoof_identity, props, p_next);
}

/// Limits the spinlock strategy takes for itself: one descriptor set (the
/// last) and the storage image in it.
fn adjust_limits(pd: vk::PhysicalDevice, limits: &mut vk::PhysicalDeviceLimits) {
    let Some(pdd) = state::physical_device(pd) else { return };
    if pdd.plan().interlock_strategy() != Some(InterlockStrategy::Spinlock) {
        return;
    }
    let log = &pdd.instance.log;
    let take = |name: &str, v: &mut u32| {
        let before = *v;
        *v = v.saturating_sub(1);
        log.log_once(
            crate::settings::LogLevel::Info,
            id::LIMIT_ADJUSTED,
            name,
            &format!("{name} {before} -> {} (the last descriptor set holds the interlock locks)", *v),
        );
    };
    take("maxBoundDescriptorSets", &mut limits.max_bound_descriptor_sets);
    take("maxPerStageDescriptorStorageImages", &mut limits.max_per_stage_descriptor_storage_images);
    take("maxDescriptorSetStorageImages", &mut limits.max_descriptor_set_storage_images);
    take("maxPerStageResources", &mut limits.max_per_stage_resources);
}

unsafe extern "system" fn get_physical_device_properties(pd: vk::PhysicalDevice, p: *mut vk::PhysicalDeviceProperties) {
    let next = |pd| state::physical_device(pd).map(|d| d.instance.fns.fp_v1_0().get_physical_device_properties);
    guard::entry(
        "vkGetPhysicalDeviceProperties",
        || {
            if let Some(n) = next(pd) {
                n(pd, p);
                adjust_limits(pd, &mut (*p).limits);
                apply_identity(pd, &mut *p, std::ptr::null_mut());
            }
        },
        || {
            if let Some(n) = next(pd) {
                n(pd, p)
            }
        },
    )
}

unsafe fn properties2(
    pd: vk::PhysicalDevice,
    p: *mut vk::PhysicalDeviceProperties2,
    next: vk::PFN_vkGetPhysicalDeviceProperties2,
) {
    let fdm = state::physical_device(pd).is_some_and(|d| d.plan().fdm_mode().is_some());
    if fdm {
        let s_type = vk::StructureType::PHYSICAL_DEVICE_FRAGMENT_DENSITY_MAP_PROPERTIES_EXT;
        let s_type2 = vk::StructureType::PHYSICAL_DEVICE_FRAGMENT_DENSITY_MAP_2_PROPERTIES_EXT;
        let head = p as *mut vk::BaseOutStructure;
        pnext::without_output(head, s_type, || pnext::without_output(head, s_type2, || next(pd, p)));
        if let Some(f) = pnext::find_mut::<vk::PhysicalDeviceFragmentDensityMapPropertiesEXT>((*p).p_next) {
            crate::fdm::fill_properties(f);
        }
        let limits = (*p).properties.limits;
        if let Some(f) = pnext::find_mut::<vk::PhysicalDeviceFragmentDensityMap2PropertiesEXT>((*p).p_next) {
            crate::fdm::fill_properties2(f, &limits);
        }
    } else {
        next(pd, p);
    }
    adjust_limits(pd, &mut (*p).properties.limits);
    apply_identity(pd, &mut (*p).properties, (*p).p_next);
}

/// The `*2` physical-device queries, core and KHR: `body` with the next
/// layer's command; after a panic, the next layer's command alone.
macro_rules! query2_hooks {
    ($( $hook:ident $name:literal $pfn:ident $info:ident => $body:ident, |$d:ident| $next:expr; )*) => {
        $(
            unsafe extern "system" fn $hook(pd: vk::PhysicalDevice, p: *mut vk::$info<'_>) {
                let next = |pd| state::physical_device(pd).and_then(|$d| $next);
                guard::entry(
                    $name,
                    || {
                        if let Some(n) = next(pd) {
                            $body(pd, p, n)
                        }
                    },
                    || {
                        if let Some(n) = next(pd) {
                            n(pd, p)
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
unsafe extern "system" fn get_physical_device_fragment_shading_rates(
    pd: vk::PhysicalDevice,
    count: *mut u32,
    rates: *mut vk::PhysicalDeviceFragmentShadingRateKHR<'_>,
) -> vk::Result {
    let next = move || -> vk::Result {
        match state::physical_device(pd).and_then(|d| d.instance.ext.get_physical_device_fragment_shading_rates) {
            Some(n) => n(pd, count, rates),
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
            let r = n(pd, &mut total, std::ptr::null_mut());
            if r != vk::Result::SUCCESS {
                return r;
            }
            let mut all = vec![vk::PhysicalDeviceFragmentShadingRateKHR::default(); total as usize];
            let r = n(pd, &mut total, all.as_mut_ptr());
            if r.as_raw() < 0 {
                return r;
            }
            all.truncate(total as usize);
            all.retain(|f| f.fragment_size.width <= mw && f.fragment_size.height <= mh);
            if rates.is_null() {
                *count = all.len() as u32;
                return vk::Result::SUCCESS;
            }
            // Output structures keep the application's sType and pNext.
            let out = std::slice::from_raw_parts_mut(rates, *count as usize);
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

unsafe extern "system" fn get_physical_device_format_properties(
    pd: vk::PhysicalDevice,
    format: vk::Format,
    p: *mut vk::FormatProperties,
) {
    let next = move || {
        if let Some(d) = state::physical_device(pd) {
            (d.instance.fns.fp_v1_0().get_physical_device_format_properties)(pd, format, p)
        }
    };
    guard::entry(
        "vkGetPhysicalDeviceFormatProperties",
        || {
            next();
            if emulates_fdm(pd) {
                crate::fdm::fill_format(format, &mut *p);
            }
        },
        next,
    )
}

unsafe extern "system" fn get_physical_device_format_properties2(
    pd: vk::PhysicalDevice,
    format: vk::Format,
    p: *mut vk::FormatProperties2<'_>,
) {
    let next = move || {
        if let Some(d) = state::physical_device(pd) {
            (d.instance.fns.fp_v1_1().get_physical_device_format_properties2)(pd, format, p)
        }
    };
    guard::entry(
        "vkGetPhysicalDeviceFormatProperties2",
        || {
            next();
            if emulates_fdm(pd) {
                crate::fdm::fill_format(format, &mut (*p).format_properties);
                if let Some(f3) = pnext::find_mut::<vk::FormatProperties3>((*p).p_next) {
                    crate::fdm::fill_format3(format, f3);
                }
            }
        },
        next,
    )
}

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
        Some(d) => (d.instance.fns.fp_v1_0().get_physical_device_image_format_properties)(
            pd, format, ty, tiling, usage, flags, p,
        ),
        None => vk::Result::ERROR_INITIALIZATION_FAILED,
    };
    guard::entry(
        "vkGetPhysicalDeviceImageFormatProperties",
        || {
            if !emulates_fdm(pd) {
                return next(usage, flags);
            }
            match crate::fdm::translate_image_query(format, tiling, usage, flags) {
                Ok((u, f)) => next(u, f),
                Err(()) => vk::Result::ERROR_FORMAT_NOT_SUPPORTED,
            }
        },
        move || next(usage, flags),
    )
}

unsafe extern "system" fn get_physical_device_image_format_properties2(
    pd: vk::PhysicalDevice,
    info: *const vk::PhysicalDeviceImageFormatInfo2<'_>,
    p: *mut vk::ImageFormatProperties2<'_>,
) -> vk::Result {
    let next = move |info: *const vk::PhysicalDeviceImageFormatInfo2| match state::physical_device(pd) {
        Some(d) => (d.instance.fns.fp_v1_1().get_physical_device_image_format_properties2)(pd, info, p),
        None => vk::Result::ERROR_INITIALIZATION_FAILED,
    };
    guard::entry(
        "vkGetPhysicalDeviceImageFormatProperties2",
        || {
            if !emulates_fdm(pd) {
                return next(info);
            }
            let i = &*info;
            match crate::fdm::translate_image_query(i.format, i.tiling, i.usage, i.flags) {
                Ok((usage, flags)) => {
                    let mut copy = *i;
                    copy.usage = usage;
                    copy.flags = flags;
                    next(&copy)
                }
                Err(()) => vk::Result::ERROR_FORMAT_NOT_SUPPORTED,
            }
        },
        move || next(info),
    )
}

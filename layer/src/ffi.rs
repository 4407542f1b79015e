//! The loader ↔ layer interface (`vk_layer.h`), which `vk.xml` (and so `ash`)
//! does not describe. Layouts follow the Vulkan-Loader's `LoaderLayerInterface.md`.

use ash::vk;
use std::ffi::{c_char, c_void};

/// `VkNegotiateLayerStructType::LAYER_NEGOTIATE_INTERFACE_STRUCT`.
pub const LAYER_NEGOTIATE_INTERFACE_STRUCT: u32 = 1;
/// The newest loader–layer interface this layer speaks.
pub const CURRENT_LOADER_LAYER_INTERFACE_VERSION: u32 = 2;

pub type PfnGetPhysicalDeviceProcAddr =
    Option<unsafe extern "system" fn(vk::Instance, *const c_char) -> vk::PFN_vkVoidFunction>;

#[repr(C)]
pub struct NegotiateLayerInterface {
    pub s_type: u32,
    pub p_next: *mut c_void,
    pub loader_layer_interface_version: u32,
    pub pfn_get_instance_proc_addr: Option<vk::PFN_vkGetInstanceProcAddr>,
    pub pfn_get_device_proc_addr: Option<vk::PFN_vkGetDeviceProcAddr>,
    pub pfn_get_physical_device_proc_addr: PfnGetPhysicalDeviceProcAddr,
}

/// `VkLayerFunction`: what a loader create-info in the `pNext` chain carries.
pub const VK_LAYER_LINK_INFO: u32 = 0;
/// `VkLayerFunction::VK_LOADER_DATA_CALLBACK`.
pub const VK_LOADER_DATA_CALLBACK: u32 = 1;

/// `PFN_vkSetDeviceLoaderData`: gives a dispatchable object the layer created
/// itself (a queue or command buffer) the loader's dispatch pointer.
pub type PfnSetDeviceLoaderData = unsafe extern "system" fn(vk::Device, *mut c_void) -> vk::Result;

#[repr(C)]
pub struct LayerInstanceLink {
    pub p_next: *mut LayerInstanceLink,
    pub pfn_next_get_instance_proc_addr: vk::PFN_vkGetInstanceProcAddr,
    pub pfn_next_get_physical_device_proc_addr: PfnGetPhysicalDeviceProcAddr,
}

/// `VkLayerInstanceCreateInfo` (sType `LOADER_INSTANCE_CREATE_INFO`). The
/// union is two pointers wide (its largest member is the `layerDevice` pair).
#[repr(C)]
pub struct LayerInstanceCreateInfo {
    pub s_type: vk::StructureType,
    pub p_next: *const c_void,
    pub function: u32,
    pub u: [*mut c_void; 2],
}

#[repr(C)]
pub struct LayerDeviceLink {
    pub p_next: *mut LayerDeviceLink,
    pub pfn_next_get_instance_proc_addr: vk::PFN_vkGetInstanceProcAddr,
    pub pfn_next_get_device_proc_addr: vk::PFN_vkGetDeviceProcAddr,
}

/// `VkLayerDeviceCreateInfo` (sType `LOADER_DEVICE_CREATE_INFO`).
#[repr(C)]
pub struct LayerDeviceCreateInfo {
    pub s_type: vk::StructureType,
    pub p_next: *const c_void,
    pub function: u32,
    pub u: [*mut c_void; 2],
}

/// Finds the loader's link-info struct of type `s_type` in a create-info
/// `pNext` chain.
///
/// # Safety
/// `p_next` must be a valid Vulkan `pNext` chain.
unsafe fn find_link_info(mut p_next: *const c_void, s_type: vk::StructureType) -> *mut c_void {
    while !p_next.is_null() {
        // SAFETY: every structure of a valid pNext chain starts with the
        // VkBaseInStructure header (the caller's guarantee; VUID-VkInstanceCreateInfo-pNext-pNext,
        // VUID-VkDeviceCreateInfo-pNext-pNext).
        let base = unsafe { &*(p_next as *const vk::BaseInStructure) };
        if base.s_type == s_type {
            // SAFETY: a structure of a loader create-info sType is a
            // `VkLayerInstanceCreateInfo` or `VkLayerDeviceCreateInfo`, which
            // share this layout (LoaderLayerInterface.md, `vk_layer.h`).
            let info = unsafe { &*(p_next as *const LayerInstanceCreateInfo) };
            if info.function == VK_LAYER_LINK_INFO {
                return p_next as *mut c_void;
            }
        }
        p_next = base.p_next as *const c_void;
    }
    std::ptr::null_mut()
}

/// Takes this layer's link from the instance create-info chain: returns the
/// next layer's `vkGetInstanceProcAddr` and advances the chain for the next
/// layer, as the loader's interface requires.
///
/// # Safety
/// `create_info` must be the `VkInstanceCreateInfo` the loader passed to this
/// layer's `vkCreateInstance`.
pub unsafe fn take_instance_link(create_info: *const vk::InstanceCreateInfo) -> Option<vk::PFN_vkGetInstanceProcAddr> {
    // SAFETY: the caller passes the loader's valid create info, whose chain
    // is valid (VUID-vkCreateInstance-pCreateInfo-parameter).
    let info = unsafe { find_link_info((*create_info).p_next, vk::StructureType::LOADER_INSTANCE_CREATE_INFO) }
        as *mut LayerInstanceCreateInfo;
    if info.is_null() {
        return None;
    }
    // SAFETY: the loader's link-info structure holds `pLayerInfo`, a list of
    // `VkLayerInstanceLink` with this layer's first, and the layer advances
    // it for the next layer (LoaderLayerInterface.md, "Layer Instance
    // Creation"). The loader owns the structure for the duration of the
    // call and expects this write.
    unsafe {
        let link = (*info).u[0] as *mut LayerInstanceLink;
        if link.is_null() {
            return None;
        }
        let gipa = (*link).pfn_next_get_instance_proc_addr;
        (*info).u[0] = (*link).p_next as *mut c_void;
        Some(gipa)
    }
}

/// The device counterpart of [`take_instance_link`]: the next layer's GIPA
/// and GDPA, with the chain advanced.
///
/// # Safety
/// `create_info` must be the `VkDeviceCreateInfo` the loader passed to this
/// layer's `vkCreateDevice`.
pub unsafe fn take_device_link(
    create_info: *const vk::DeviceCreateInfo,
) -> Option<(vk::PFN_vkGetInstanceProcAddr, vk::PFN_vkGetDeviceProcAddr)> {
    // SAFETY: the caller passes the loader's valid create info, whose chain
    // is valid (VUID-vkCreateDevice-pCreateInfo-parameter).
    let info = unsafe { find_link_info((*create_info).p_next, vk::StructureType::LOADER_DEVICE_CREATE_INFO) }
        as *mut LayerDeviceCreateInfo;
    if info.is_null() {
        return None;
    }
    // SAFETY: as in `take_instance_link`, with `VkLayerDeviceLink`
    // (LoaderLayerInterface.md, "Layer Device Creation").
    unsafe {
        let link = (*info).u[0] as *mut LayerDeviceLink;
        if link.is_null() {
            return None;
        }
        let out = ((*link).pfn_next_get_instance_proc_addr, (*link).pfn_next_get_device_proc_addr);
        (*info).u[0] = (*link).p_next as *mut c_void;
        Some(out)
    }
}

/// The dispatch key of a dispatchable handle: the loader's dispatch-table
/// pointer stored in its first word. Instances, devices and the queues and
/// command buffers of a device share keys with their parents.
///
/// # Safety
/// `handle` must be a valid dispatchable handle.
#[inline]
pub unsafe fn dispatch_key<H: vk::Handle>(handle: H) -> usize {
    // SAFETY: a dispatchable handle points at an object whose first word is
    // the loader's dispatch table pointer (LoaderLayerInterface.md,
    // "Dispatchable Object Creation"); the caller guarantees the handle is valid.
    unsafe { *(handle.as_raw() as *const usize) }
}

/// The loader's `vkSetDeviceLoaderData` from a device create info chain.
///
/// # Safety
/// `create_info` must be the `VkDeviceCreateInfo` the loader passed down.
pub unsafe fn device_loader_data_callback(create_info: *const vk::DeviceCreateInfo) -> Option<PfnSetDeviceLoaderData> {
    // SAFETY: the loader's valid create info (VUID-vkCreateDevice-pCreateInfo-parameter).
    let mut p = unsafe { (*create_info).p_next };
    while !p.is_null() {
        // SAFETY: every structure of a valid chain starts with the
        // VkBaseInStructure header (VUID-VkDeviceCreateInfo-pNext-pNext).
        let base = unsafe { &*(p as *const vk::BaseInStructure) };
        if base.s_type == vk::StructureType::LOADER_DEVICE_CREATE_INFO {
            // SAFETY: a structure of this sType is the loader's
            // `VkLayerDeviceCreateInfo` (LoaderLayerInterface.md, `vk_layer.h`).
            let info = unsafe { &*(p as *const LayerDeviceCreateInfo) };
            if info.function == VK_LOADER_DATA_CALLBACK {
                let f = info.u[0];
                // SAFETY: with `function == VK_LOADER_DATA_CALLBACK` the
                // union holds `pfnSetDeviceLoaderData`, a
                // `PFN_vkSetDeviceLoaderData` (`vk_layer.h`), which
                // `PfnSetDeviceLoaderData` declares with the same ABI and
                // signature; a data pointer and a function pointer have the
                // same size on every platform Vulkan runs on. Null was ruled out.
                return (!f.is_null())
                    .then(|| unsafe { std::mem::transmute::<*mut c_void, PfnSetDeviceLoaderData>(f) });
            }
        }
        p = base.p_next as *const c_void;
    }
    None
}

/// `n` items at `p` (empty for a null pointer or a zero count), as create
/// infos pass their arrays.
///
/// # Safety
/// A non-null `p` points at `n` valid items that outlive the slice.
pub unsafe fn slice<'a, T>(p: *const T, n: u32) -> &'a [T] {
    if p.is_null() || n == 0 {
        &[]
    } else {
        // SAFETY: non-null and non-empty: the caller guarantees `n` valid
        // items that outlive `'a` (for create infos, the array's
        // "-parameter" valid usage).
        unsafe { std::slice::from_raw_parts(p, n as usize) }
    }
}

/// The device's enabled extension names without `name`, and whether `name`
/// was among them (for stripping an emulated extension).
///
/// # Safety
/// `info` is a valid `VkDeviceCreateInfo`.
pub unsafe fn extensions_without(
    info: &vk::DeviceCreateInfo,
    name: &std::ffi::CStr,
) -> (Vec<*const std::ffi::c_char>, bool) {
    // SAFETY: VUID-VkDeviceCreateInfo-ppEnabledExtensionNames-parameter: an
    // array of `enabledExtensionCount` null-terminated UTF-8 strings.
    let names = unsafe { slice(info.pp_enabled_extension_names, info.enabled_extension_count) };
    // SAFETY: each name is a null-terminated string (as above).
    let is_it = |n: &*const std::ffi::c_char| unsafe { std::ffi::CStr::from_ptr(*n) } == name;
    (names.iter().copied().filter(|n| !is_it(n)).collect(), names.iter().any(is_it))
}

/// A memory type among `bits` with `want`, else any among `bits`.
pub fn memory_type(
    props: &vk::PhysicalDeviceMemoryProperties,
    bits: u32,
    want: vk::MemoryPropertyFlags,
) -> Option<u32> {
    let allowed = |i: &u32| bits & (1 << i) != 0;
    (0..props.memory_type_count)
        .filter(allowed)
        .find(|&i| props.memory_types[i as usize].property_flags.contains(want))
        .or_else(|| (0..props.memory_type_count).find(allowed))
}

/// A queue the application created that the layer may also submit to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LayerQueue {
    pub family: u32,
    /// The flags of the queue's create info: `vkGetDeviceQueue` may only
    /// fetch a queue created with none (VUID-vkGetDeviceQueue-flags-01841),
    /// `vkGetDeviceQueue2` names them.
    pub flags: vk::DeviceQueueCreateFlags,
}

/// The queue for the layer's own work: queue 0 of a family the application
/// created queues of, whose family can run `needs` (graphics or compute
/// work includes transfers), preferring one created without flags; `None`
/// when no created family can.
pub fn layer_queue(
    created: &[vk::DeviceQueueCreateInfo],
    families: &[vk::QueueFamilyProperties],
    needs: vk::QueueFlags,
) -> Option<LayerQueue> {
    let capable = |q: &&vk::DeviceQueueCreateInfo| {
        q.queue_count > 0
            && families.get(q.queue_family_index as usize).is_some_and(|f| f.queue_flags.intersects(needs))
    };
    let q = created.iter().filter(capable).find(|q| q.flags.is_empty()).or_else(|| created.iter().find(capable))?;
    Some(LayerQueue { family: q.queue_family_index, flags: q.flags })
}

/// Queue 0 of `q`, through `vkGetDeviceQueue2` where its create info had flags.
///
/// # Safety
/// `device` was created with queue 0 of `q.family` and `q.flags` (a
/// [`layer_queue`] of its create info).
pub unsafe fn get_layer_queue(device: &ash::Device, q: LayerQueue) -> vk::Queue {
    if q.flags.is_empty() {
        // SAFETY: VUID-vkGetDeviceQueue-queueFamilyIndex-00384, -queueIndex-00385 and -flags-01841: queue 0 of a
        // family the device was created with, from a create info without flags (the caller's guarantee).
        unsafe { device.get_device_queue(q.family, 0) }
    } else {
        let info = vk::DeviceQueueInfo2::default().flags(q.flags).queue_family_index(q.family).queue_index(0);
        // SAFETY: VUID-VkDeviceQueueInfo2-flags-06225 and -queueIndex-01843: the flags, family and index of a queue
        // the device was created with (the caller's guarantee); queue create flags exist only from Vulkan 1.1, where
        // vkGetDeviceQueue2 is core.
        unsafe { device.get_device_queue2(&info) }
    }
}

/// Extension suffixes under which a core command is also known. Every command
/// promoted to core keeps its name plus the suffix of the extension it came
/// from (`vkCreateRenderPass2KHR`, `vkCmdSetCullModeEXT`,
/// `vkCmdDrawIndirectCountAMD`), with the same signature.
const ALIAS_SUFFIXES: [&[u8]; 3] = [b"KHR", b"EXT", b"AMD"];

/// The next layer's command `name`, looked up by that name and, where the
/// chain does not return it, by its extension aliases.
///
/// A Vulkan 1.1 application that enables `VK_KHR_create_renderpass2` calls
/// `vkCreateRenderPass2KHR`; `vkGetDeviceProcAddr` below returns NULL for the
/// core name there (the spec requires it for commands beyond the
/// application's API version), so a table loaded by core names only would
/// hold `ash`'s panicking stub. Every command the layer calls on its own
/// behalf mirrors one the application called, under a name valid for it, so
/// one of these names resolves.
///
/// # Safety
/// `lookup` must be a `vkGet*ProcAddr` of the chain below (valid for any name).
pub unsafe fn resolve_command(
    name: &std::ffi::CStr,
    lookup: impl Fn(*const c_char) -> vk::PFN_vkVoidFunction,
) -> *const c_void {
    if let Some(f) = lookup(name.as_ptr()) {
        return f as *const c_void;
    }
    let mut alias = Vec::with_capacity(name.to_bytes().len() + 4);
    for suffix in ALIAS_SUFFIXES {
        alias.clear();
        alias.extend_from_slice(name.to_bytes());
        alias.extend_from_slice(suffix);
        alias.push(0);
        if let Some(f) = lookup(alias.as_ptr() as *const c_char) {
            return f as *const c_void;
        }
    }
    std::ptr::null()
}

/// Casts a hook to the type `vkGet*ProcAddr` returns.
macro_rules! pfn {
    ($f:expr) => {
        // SAFETY: `PFN_vkVoidFunction` is the type `vkGet*ProcAddr` returns for
        // every command; the caller casts it back to the command's own type
        // (the spec's "Command Function Pointers"), which `$f` has, checked by
        // the `as vk::PFN_…` cast at each use (a function item coerces only to
        // its own signature). Function pointers of any signature have one size.
        Some(unsafe { std::mem::transmute::<*const (), unsafe extern "system" fn()>($f as *const ()) })
    };
}
pub(crate) use pfn;

#[cfg(test)]
mod tests {
    use super::{layer_queue, LayerQueue};
    use ash::vk;

    #[test]
    fn the_layer_queue_is_a_created_capable_one_preferring_no_flags() {
        let fam = |f| vk::QueueFamilyProperties { queue_flags: f, queue_count: 2, ..Default::default() };
        let families = [fam(vk::QueueFlags::TRANSFER), fam(vk::QueueFlags::GRAPHICS | vk::QueueFlags::COMPUTE)];
        let q = |family, flags| vk::DeviceQueueCreateInfo {
            queue_family_index: family,
            queue_count: 1,
            flags,
            ..Default::default()
        };
        let protected = vk::DeviceQueueCreateFlags::PROTECTED;
        let need = vk::QueueFlags::GRAPHICS | vk::QueueFlags::COMPUTE;
        // The first created family cannot clear an image: the next one.
        assert_eq!(
            layer_queue(&[q(0, vk::DeviceQueueCreateFlags::empty()), q(1, protected)], &families, need),
            Some(LayerQueue { family: 1, flags: protected })
        );
        // A protected-capable queue only where no other is created.
        assert_eq!(
            layer_queue(&[q(1, protected), q(1, vk::DeviceQueueCreateFlags::empty())], &families, need),
            Some(LayerQueue { family: 1, flags: vk::DeviceQueueCreateFlags::empty() })
        );
        assert_eq!(layer_queue(&[q(0, vk::DeviceQueueCreateFlags::empty())], &families, need), None);
        assert_eq!(layer_queue(&[], &families, need), None);
    }
}

//! Editable copies of `pNext` chains.
//!
//! The layer must not modify what the application passed in, but must often
//! send down a create info without one structure (an emulated feature), with
//! one replaced (a rewritten shader) or with one added. [`Chain`] copies
//! every structure of a chain (shallowly: pointers inside still point at the
//! application's memory, which stays valid for the duration of the call),
//! lets the caller edit the list, and links the copies on demand. The size of
//! each structure comes from the generated table of every structure `ash`
//! knows; a chain holding an unknown structure cannot be copied, and the
//! caller falls back with a logged reason — or, with [`Chain::copy_prefix`],
//! the copy stops at the first unknown structure and links the rest of the
//! application's chain as it is (what can be edited is the known prefix).

use crate::generated::newer_struct_sizes::newer_struct_size;
use crate::generated::struct_sizes::struct_size;
use ash::vk;
use std::ffi::c_void;

/// One copied structure, in 8-byte words so that it is suitably aligned.
struct Node {
    s_type: vk::StructureType,
    words: Vec<u64>,
}

/// The size of a structure the layer can copy: one of ash's, one the
/// registry defines after it (Vulkan 1.4.360), or the loader's create info
/// (which the loader chains into instance and device create infos).
fn copied_size(s_type: vk::StructureType) -> Option<usize> {
    struct_size(s_type).or_else(|| newer_struct_size(s_type.as_raw())).or_else(|| {
        (s_type == vk::StructureType::LOADER_DEVICE_CREATE_INFO
            || s_type == vk::StructureType::LOADER_INSTANCE_CREATE_INFO)
            .then_some(std::mem::size_of::<crate::ffi::LayerDeviceCreateInfo>())
    })
}

#[derive(Default)]
pub struct Chain {
    nodes: Vec<Node>,
    /// The application's chain from its first unknown structure on, linked
    /// after the copies as it is ([`Chain::copy_prefix`]).
    tail: Option<std::ptr::NonNull<c_void>>,
}

/// A structure the layer does not know the size of.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("unknown structure {0:?} in a pNext chain")]
pub struct UnknownStructure(pub vk::StructureType);

/// Why an emulated extension cannot be removed from a `VkDeviceCreateInfo`
/// (interlock, density map).
#[derive(Debug, thiserror::Error)]
pub enum StripError {
    /// The application asked for a feature the layer does not provide.
    #[error("{0} is not provided")]
    FeatureNotPresent(&'static str),
    /// The create info's chain holds a structure the layer cannot copy.
    #[error(transparent)]
    Unknown(#[from] UnknownStructure),
}

/// Turns on core features of a device create info through `enable`: in the
/// `VkPhysicalDeviceFeatures2` of its copied chain `chain`, or else in a copy
/// of its `pEnabledFeatures` (returned: the caller points its copy of the
/// create info at it). `None` (nothing changed) where the
/// `VkPhysicalDeviceFeatures2` lies in the part of the chain that could not
/// be copied.
///
/// # Safety
/// `info` is a valid `VkDeviceCreateInfo` whose chain `chain` copies.
pub unsafe fn enable_core_features(
    info: &vk::DeviceCreateInfo,
    chain: &mut Chain,
    enable: impl Fn(&mut vk::PhysicalDeviceFeatures),
) -> Option<Option<Box<vk::PhysicalDeviceFeatures>>> {
    if chain.tail_find::<vk::PhysicalDeviceFeatures2>().is_some() {
        return None;
    }
    if let Some(f2) = chain.get_mut::<vk::PhysicalDeviceFeatures2>() {
        enable(&mut f2.features);
        return Some(None);
    }
    let mut f = if info.p_enabled_features.is_null() {
        vk::PhysicalDeviceFeatures::default()
    } else {
        // SAFETY: VUID-VkDeviceCreateInfo-pEnabledFeatures-parameter: a non-null pEnabledFeatures points at a valid
        // structure.
        unsafe { *info.p_enabled_features }
    };
    enable(&mut f);
    Some(Some(Box::new(f)))
}

impl Chain {
    /// Copies the chain starting at `p_next`.
    ///
    /// # Safety
    /// `p_next` must be a valid `pNext` chain.
    pub unsafe fn copy(p_next: *const c_void) -> Result<Chain, UnknownStructure> {
        // SAFETY: the caller's guarantee.
        let chain = unsafe { Chain::copy_prefix(p_next) };
        chain.tail_error()?;
        Ok(chain)
    }

    /// Copies the chain starting at `p_next` up to its first structure of
    /// unknown size; that structure and the rest stay the application's,
    /// linked after the copies (read them with [`Chain::tail_contains`]).
    ///
    /// # Safety
    /// `p_next` must be a valid `pNext` chain, alive while the chain's head
    /// is used.
    pub unsafe fn copy_prefix(mut p_next: *const c_void) -> Chain {
        let mut nodes = Vec::new();
        while !p_next.is_null() {
            // SAFETY: every structure of a valid pNext chain starts with the
            // VkBaseInStructure header (the caller's guarantee; the
            // "VUID-…-pNext-pNext" valid usage of the structure it extends).
            let base = unsafe { &*(p_next as *const vk::BaseInStructure) };
            let Some(size) = copied_size(base.s_type) else { break };
            let mut words = vec![0u64; size.div_ceil(8)];
            // SAFETY: the structure at `p_next` has sType `base.s_type`, whose
            // size is `size` (the generated table of ash's structures, or the
            // loader's create-info layout); `words` is a fresh Vec of at
            // least `size` bytes, so the ranges are valid and disjoint.
            unsafe { std::ptr::copy_nonoverlapping(p_next as *const u8, words.as_mut_ptr() as *mut u8, size) };
            nodes.push(Node { s_type: base.s_type, words });
            p_next = base.p_next as *const c_void;
        }
        Chain { nodes, tail: std::ptr::NonNull::new(p_next as *mut c_void) }
    }

    /// The first structure the copy stopped at ([`Chain::copy_prefix`]), as
    /// an error; `Ok` when the whole chain was copied.
    pub fn tail_error(&self) -> Result<(), UnknownStructure> {
        match self.tail {
            // SAFETY: the tail is the rest of the valid chain given to `copy_prefix` (its caller's guarantee): a
            // structure starting with the VkBaseInStructure header.
            Some(t) => Err(UnknownStructure(unsafe { (*(t.as_ptr() as *const vk::BaseInStructure)).s_type })),
            None => Ok(()),
        }
    }

    /// The first structure of type `T` in the application's part of the
    /// chain ([`Chain::copy_prefix`]): readable, not editable.
    pub fn tail_find<T: vk::TaggedStructure>(&self) -> Option<&T> {
        let tail = self.tail?;
        // SAFETY: the tail is the rest of the valid chain given to `copy_prefix` (its caller's guarantee).
        unsafe { find::<T>(tail.as_ptr() as *const c_void) }
    }

    /// Whether the application's part of the chain (after its first unknown
    /// structure, [`Chain::copy_prefix`]) holds a structure of `s_type`,
    /// which the copy cannot remove or edit.
    pub fn tail_contains(&self, s_type: vk::StructureType) -> bool {
        let mut p = self.tail.map_or(std::ptr::null(), |t| t.as_ptr() as *const c_void);
        while !p.is_null() {
            // SAFETY: the tail is the rest of the valid chain given to `copy_prefix` (its caller's guarantee).
            let base = unsafe { &*(p as *const vk::BaseInStructure) };
            if base.s_type == s_type {
                return true;
            }
            p = base.p_next as *const c_void;
        }
        false
    }

    pub fn contains(&self, s_type: vk::StructureType) -> bool {
        self.nodes.iter().any(|n| n.s_type == s_type)
    }

    /// Removes every structure of type `s_type`; true if there was one.
    pub fn remove(&mut self, s_type: vk::StructureType) -> bool {
        let before = self.nodes.len();
        self.nodes.retain(|n| n.s_type != s_type);
        self.nodes.len() != before
    }

    /// The first structure of type `T`, if present.
    pub fn get<T: vk::TaggedStructure>(&self) -> Option<&T> {
        self.nodes
            .iter()
            .find(|n| n.s_type == T::STRUCTURE_TYPE)
            // SAFETY: the bytes were copied from a structure of this sType, whose
            // Rust type is `T` (ash's TaggedStructure), and are 8-byte aligned.
            .map(|n| unsafe { &*(n.words.as_ptr() as *const T) })
    }

    /// The first structure of type `T`, mutably.
    pub fn get_mut<T: vk::TaggedStructure>(&mut self) -> Option<&mut T> {
        self.nodes
            .iter_mut()
            .find(|n| n.s_type == T::STRUCTURE_TYPE)
            // SAFETY: as in `get`.
            .map(|n| unsafe { &mut *(n.words.as_mut_ptr() as *mut T) })
    }

    /// Appends a copy of `value` (its own `pNext` is ignored).
    pub fn push<T: vk::TaggedStructure>(&mut self, value: &T) {
        let size = std::mem::size_of::<T>();
        let mut words = vec![0u64; size.div_ceil(8)];
        // SAFETY: `value` is a live `T` of `size` bytes (a plain Vulkan
        // structure, no padding read as anything but bytes); `words` is a
        // fresh Vec of at least `size` bytes, disjoint from it.
        unsafe { std::ptr::copy_nonoverlapping(value as *const T as *const u8, words.as_mut_ptr() as *mut u8, size) };
        self.nodes.push(Node { s_type: T::STRUCTURE_TYPE, words });
    }

    /// Links the copies in order and returns the head (null when empty).
    /// The pointer stays valid until the chain is edited or dropped.
    pub fn head(&mut self) -> *const c_void {
        let ptrs: Vec<*mut u64> = self.nodes.iter_mut().map(|n| n.words.as_mut_ptr()).collect();
        let tail = self.tail.map_or(std::ptr::null_mut(), |t| t.as_ptr() as *mut u64);
        if ptrs.is_empty() {
            return tail as *const c_void;
        }
        for (i, p) in ptrs.iter().enumerate() {
            let next = ptrs.get(i + 1).copied().unwrap_or(tail);
            // SAFETY: every node is a copied Vulkan structure, which starts
            // with the VkBaseOutStructure header; `*p` points into a live
            // node's Vec (`ptrs` was just taken from `self.nodes`).
            unsafe { (*(*p as *mut vk::BaseOutStructure)).p_next = next as *mut vk::BaseOutStructure };
        }
        ptrs[0] as *const c_void
    }
}

/// Finds the first structure of type `T` in a chain without copying it.
///
/// # Safety
/// `p_next` must be a valid `pNext` chain.
pub unsafe fn find<'a, T: vk::TaggedStructure>(mut p_next: *const c_void) -> Option<&'a T> {
    while !p_next.is_null() {
        // SAFETY: every structure of a valid pNext chain starts with the
        // VkBaseInStructure header (the caller's guarantee).
        let base = unsafe { &*(p_next as *const vk::BaseInStructure) };
        if base.s_type == T::STRUCTURE_TYPE {
            // SAFETY: a structure of sType `T::STRUCTURE_TYPE` is a `T`
            // (ash's `TaggedStructure`), valid for the chain's lifetime.
            return Some(unsafe { &*(p_next as *const T) });
        }
        p_next = base.p_next as *const c_void;
    }
    None
}

/// Finds the first output structure of type `T` in a chain the application
/// passed for the layer to fill.
///
/// # Safety
/// `p_next` must be a valid, writable `pNext` chain.
pub unsafe fn find_mut<'a, T: vk::TaggedStructure>(mut p_next: *mut c_void) -> Option<&'a mut T> {
    while !p_next.is_null() {
        // SAFETY: every structure of a valid output chain starts with the
        // VkBaseOutStructure header, and is writable (the caller's guarantee;
        // the "-pNext-pNext" valid usage of the structure it extends).
        let base = unsafe { &mut *(p_next as *mut vk::BaseOutStructure) };
        if base.s_type == T::STRUCTURE_TYPE {
            // SAFETY: a structure of sType `T::STRUCTURE_TYPE` is a `T` (ash's
            // `TaggedStructure`); `base` is not used again.
            return Some(unsafe { &mut *(p_next as *mut T) });
        }
        p_next = base.p_next as *mut c_void;
    }
    None
}

/// [`without_output`] for every structure type of `s_types` at once.
///
/// # Safety
/// As for [`without_output`].
pub unsafe fn without_outputs(head: *mut vk::BaseOutStructure, s_types: &[vk::StructureType], f: &mut dyn FnMut()) {
    match s_types.split_first() {
        None => f(),
        // SAFETY: the caller's guarantee.
        Some((t, rest)) => unsafe { without_output(head, *t, || without_outputs(head, rest, f)) },
    }
}

/// Unlinks every output structure of `s_type` from a writable chain for the
/// duration of `f` (which calls down), then links them back where they were.
/// Output structures are the application's to have written, so this edits
/// nothing the application reads before the command returns.
///
/// # Safety
/// `head` must be a valid, writable structure with a `pNext` chain.
pub unsafe fn without_output<R>(
    head: *mut vk::BaseOutStructure,
    s_type: vk::StructureType,
    f: impl FnOnce() -> R,
) -> R {
    let mut removed: Vec<(*mut vk::BaseOutStructure, *mut vk::BaseOutStructure)> = Vec::new();
    let mut prev = head;
    // SAFETY: `head` and every structure of its chain are valid, writable
    // structures that start with the VkBaseOutStructure header (the caller's
    // guarantee); only their `pNext` members are written.
    unsafe {
        while !(*prev).p_next.is_null() {
            let cur = (*prev).p_next;
            if (*cur).s_type == s_type {
                (*prev).p_next = (*cur).p_next;
                removed.push((prev, cur));
            } else {
                prev = cur;
            }
        }
    }
    let r = f();
    // SAFETY: the same structures as above, still valid (the caller's
    // guarantee covers the call), relinked in reverse order of unlinking.
    unsafe {
        for (prev, cur) in removed.into_iter().rev() {
            (*cur).p_next = (*prev).p_next;
            (*prev).p_next = cur;
        }
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_prefix_copy_edits_what_precedes_an_unknown_structure() {
        let mut a = vk::PhysicalDeviceFragmentShaderInterlockFeaturesEXT::default();
        // A structure no table knows (a made-up sType), then a known one after it.
        let mut c = vk::PhysicalDeviceVulkan13Features::default().dynamic_rendering(true);
        let mut unknown = vk::BaseOutStructure {
            s_type: vk::StructureType::from_raw(1_000_999_000),
            p_next: &mut c as *mut _ as *mut vk::BaseOutStructure,
            ..Default::default()
        };
        a.p_next = &mut unknown as *mut _ as *mut c_void;
        let info = vk::DeviceCreateInfo { p_next: &a as *const _ as *const c_void, ..Default::default() };
        // SAFETY: `info`'s chain links the live structures above.
        assert!(unsafe { Chain::copy(info.p_next) }.is_err());
        // SAFETY: as above.
        let mut chain = unsafe { Chain::copy_prefix(info.p_next) };
        assert!(chain.tail_contains(vk::StructureType::PHYSICAL_DEVICE_VULKAN_1_3_FEATURES));
        assert!(!chain.tail_contains(vk::StructureType::PHYSICAL_DEVICE_FRAGMENT_SHADER_INTERLOCK_FEATURES_EXT));
        assert!(chain.remove(vk::StructureType::PHYSICAL_DEVICE_FRAGMENT_SHADER_INTERLOCK_FEATURES_EXT));
        chain.push(&vk::PhysicalDeviceConditionalRenderingFeaturesEXT::default().conditional_rendering(true));
        let head = chain.head();
        // SAFETY: the copies (alive with `chain`) then the application's unknown structure and the one after it.
        unsafe {
            assert!(find::<vk::PhysicalDeviceFragmentShaderInterlockFeaturesEXT>(head).is_none());
            assert!(find::<vk::PhysicalDeviceConditionalRenderingFeaturesEXT>(head).is_some());
            assert_eq!(find::<vk::PhysicalDeviceVulkan13Features>(head).unwrap().dynamic_rendering, vk::TRUE);
        }
        // Nothing known before the unknown structure: the head is the application's chain.
        // SAFETY: as above.
        let mut only = unsafe { Chain::copy_prefix(&unknown as *const _ as *const c_void) };
        assert_eq!(only.head(), &unknown as *const _ as *const c_void);
    }

    #[test]
    fn copy_edit_and_relink() {
        let mut a = vk::PhysicalDeviceVulkan12Features::default().timeline_semaphore(true);
        let mut b =
            vk::PhysicalDeviceFragmentShaderInterlockFeaturesEXT::default().fragment_shader_pixel_interlock(true);
        let mut c = vk::PhysicalDeviceVulkan13Features::default().dynamic_rendering(true);
        let info = vk::DeviceCreateInfo::default().push_next(&mut a).push_next(&mut b).push_next(&mut c);
        // SAFETY: `info`'s chain links the three live structures above.
        let mut chain = unsafe { Chain::copy(info.p_next) }.unwrap();
        assert!(
            chain
                .get::<vk::PhysicalDeviceFragmentShaderInterlockFeaturesEXT>()
                .unwrap()
                .fragment_shader_pixel_interlock
                == vk::TRUE
        );
        assert!(chain.remove(vk::StructureType::PHYSICAL_DEVICE_FRAGMENT_SHADER_INTERLOCK_FEATURES_EXT));
        let head = chain.head();
        // SAFETY: `head` is the relinked copy, alive with `chain`; `info`'s
        // chain is the live structures above.
        unsafe {
            assert!(find::<vk::PhysicalDeviceFragmentShaderInterlockFeaturesEXT>(head).is_none());
            assert_eq!(find::<vk::PhysicalDeviceVulkan12Features>(head).unwrap().timeline_semaphore, vk::TRUE);
            assert_eq!(find::<vk::PhysicalDeviceVulkan13Features>(head).unwrap().dynamic_rendering, vk::TRUE);
            // The application's chain is untouched.
            assert!(find::<vk::PhysicalDeviceFragmentShaderInterlockFeaturesEXT>(info.p_next).is_some());
        }
    }

    #[test]
    fn unknown_structure_is_refused() {
        let mut odd = vk::BaseOutStructure {
            s_type: vk::StructureType::from_raw(0x7fff_fff0),
            p_next: std::ptr::null_mut(),
            ..Default::default()
        };
        // SAFETY: a one-structure chain: `odd`, a live header with a null `pNext`.
        let r = unsafe { Chain::copy(&mut odd as *mut _ as *const c_void) };
        assert_eq!(r.err(), Some(UnknownStructure(vk::StructureType::from_raw(0x7fff_fff0))));
    }

    #[test]
    fn output_structure_is_unlinked_and_restored() {
        let mut a = vk::PhysicalDeviceVulkan12Features::default();
        let mut b = vk::PhysicalDeviceFragmentShaderInterlockFeaturesEXT::default();
        let mut c = vk::PhysicalDeviceVulkan13Features::default();
        let mut f2 = vk::PhysicalDeviceFeatures2::default().push_next(&mut a).push_next(&mut b).push_next(&mut c);
        let head = &mut f2 as *mut _ as *mut vk::BaseOutStructure;
        // SAFETY: `f2`'s chain links the three live structures above.
        unsafe {
            without_output(head, vk::StructureType::PHYSICAL_DEVICE_FRAGMENT_SHADER_INTERLOCK_FEATURES_EXT, || {
                assert!(find::<vk::PhysicalDeviceFragmentShaderInterlockFeaturesEXT>(f2.p_next).is_none());
                assert!(find::<vk::PhysicalDeviceVulkan12Features>(f2.p_next).is_some());
            });
            assert!(find::<vk::PhysicalDeviceFragmentShaderInterlockFeaturesEXT>(f2.p_next).is_some());
            assert!(find::<vk::PhysicalDeviceVulkan12Features>(f2.p_next).is_some());
            assert!(find::<vk::PhysicalDeviceVulkan13Features>(f2.p_next).is_some());
        }
    }

    /// The generated table is what the generator makes from this ash.
    #[test]
    fn generated_struct_sizes_are_current() {
        crate::generated::assert_current("struct_sizes.py");
    }

    /// The registry-made table's layout computation gives ash's (rustc's)
    /// size for every structure both know, and knows none ash knows.
    #[test]
    fn the_registry_sizes_agree_with_ash() {
        use crate::generated::newer_struct_sizes::CHECKED;
        assert!(CHECKED.len() > 700, "{}", CHECKED.len());
        let mut wrong = Vec::new();
        for &(s_type, size) in CHECKED {
            let t = vk::StructureType::from_raw(s_type);
            if struct_size(t) != Some(size) {
                wrong.push(format!("{t:?}: ash {:?}, registry {size}", struct_size(t)));
            }
            assert_eq!(newer_struct_size(s_type), None, "{t:?}");
        }
        assert!(wrong.is_empty(), "{wrong:#?}");
        // Newer ones the layer meets: the layered density map's, and the structure the CTS chains into its
        // devices on the NVIDIA machine (cooperative matrix 2).
        assert_eq!(newer_struct_size(1_000_611_002), Some(24));
        assert_eq!(newer_struct_size(1_000_593_000), Some(48));
        assert_eq!(copied_size(vk::StructureType::from_raw(1_000_593_000)), Some(48));
    }
}

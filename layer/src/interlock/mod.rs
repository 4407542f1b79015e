//! `VK_EXT_fragment_shader_interlock` on drivers that lack it.
//!
//! Advertising: the extension is added to the driver's list and
//! `VkPhysicalDeviceFragmentShaderInterlockFeaturesEXT` is filled (pixel and
//! sample interlock; shading-rate interlock where the driver has
//! `VK_KHR_fragment_shading_rate`: the locks cover coarse fragments) after
//! the driver filled the rest of the chain without it. At `vkCreateDevice` the extension name and
//! the feature structure are removed from what goes down, and the device
//! remembers what was enabled. Shaders are lowered by the strategy the
//! device's plan chose (see `overlap_shaders::interlock`), in the shader
//! route (`shader.rs`, above the capabilities).

pub mod cells;
pub mod ordered;
pub mod reserved;

use crate::plan::{InterlockStrategy, INTERLOCK_EXTENSION};
use crate::pnext::Chain;
use ash::vk;
use std::ffi::c_char;

/// What a device created with emulated interlock remembers.
#[derive(Clone, Debug)]
pub struct DeviceInterlock {
    pub strategy: InterlockStrategy,
    /// The application enabled the extension.
    extension_enabled: bool,
    /// Every interlock shader gets a discard that is never taken
    /// (`interlock_never_opaque`; `overlap_shaders::opaque`), so that
    /// llvmpipe keeps the earlier primitives of a tile a later one covers.
    pub never_opaque: bool,
}

/// Device features the strategy needs from the driver.
#[derive(Clone, Copy, Debug, Default)]
pub struct Needs {
    /// `fragmentStoresAndAtomics` (the locks and cells).
    pub atomics: bool,
    /// `geometryShader` (the ordered strategy reads `PrimitiveId`).
    pub geometry: bool,
    /// `shaderDemoteToHelperInvocation` (the ordered strategy demotes
    /// discards before a section), where the driver has it.
    pub demote: bool,
}

/// What `vkCreateDevice` keeps of interlock between stripping the create
/// info and creating the device's resources.
pub struct Prepared<'a> {
    /// The strategy this device runs (the plan's, or the spinlock where the
    /// ordered strategy lacks `geometryShader`).
    pub strategy: InterlockStrategy,
    /// The ordered strategy demotes discards (the driver has
    /// `shaderDemoteToHelperInvocation`, Vulkan 1.3).
    pub demote: bool,
    /// The create info without the extension, or `None` where it goes down
    /// unchanged (a structure the layer cannot copy, logged).
    pub stripped: Option<StrippedDeviceInfo<'a>>,
}

/// Interlock's part of `vkCreateDevice` before the call down: the device's
/// strategy, the driver features it needs, the create info stripped.
/// `Ok(None)` where the plan emulates no interlock; `Err` is what
/// `vkCreateDevice` returns.
///
/// # Safety
/// `info` must be a valid `VkDeviceCreateInfo`.
pub unsafe fn prepare<'a>(
    c: &crate::device::Creation,
    info: &vk::DeviceCreateInfo<'a>,
) -> Result<Option<Prepared<'a>>, vk::Result> {
    let Some(mut strategy) = c.plan.interlock_strategy() else { return Ok(None) };
    // The ordered strategy reads PrimitiveId: without geometryShader the device gets the spinlock (logged).
    // SAFETY: `pd` is valid (VUID-vkCreateDevice-physicalDevice-parameter).
    if strategy == InterlockStrategy::Ordered
        && unsafe { c.inst.fns.get_physical_device_features(c.pd) }.geometry_shader != vk::TRUE
    {
        c.inst.log.warn(
            crate::id::INTERLOCK_ORDER_FALLBACK,
            "ordered interlock needs geometryShader (PrimitiveId in fragment shaders), which the driver lacks: the device gets the spinlock (mutual exclusion, not primitive order)",
        );
        strategy = InterlockStrategy::Spinlock;
    }
    // Demote (Vulkan 1.3 core): the ordered strategy's discards.
    let demote = strategy == InterlockStrategy::Ordered && vk::api_version_minor(c.facts.api_version) >= 3 && {
        let mut d = vk::PhysicalDeviceShaderDemoteToHelperInvocationFeatures::default();
        // A Vulkan 1.3 driver knows the structure.
        (c.features2)(&mut vk::PhysicalDeviceFeatures2::default().push_next(&mut d));
        d.shader_demote_to_helper_invocation == vk::TRUE
    };
    let needs = Needs { atomics: strategy.locks(), geometry: strategy == InterlockStrategy::Ordered, demote };
    let shading_rate = c.plan.exposes(crate::plan::SHADING_RATE_EXTENSION);
    // SAFETY: the caller's guarantee.
    let stripped = match unsafe { strip(info, strategy, needs, shading_rate) } {
        Ok(s) => Some(s),
        Err(e) => {
            c.strip_failed(&e, "interlock")?;
            None
        }
    };
    Ok(Some(Prepared { strategy, demote, stripped }))
}

/// What the device remembers of interlock, where the application enabled
/// the extension: `never_opaque` from its setting (`auto`: on llvmpipe,
/// which drops a tile's earlier commands under an opaque full-tile
/// triangle, memory writes and all — `overlap_shaders::opaque`); the
/// serialized strategy forced on another driver is logged as inexact.
pub fn enabled(c: &crate::device::Creation, prepared: Option<&Prepared>) -> Option<DeviceInterlock> {
    let i = prepared?.stripped.as_ref()?.interlock.clone();
    if !i.extension_enabled {
        return None;
    }
    let never_opaque = crate::settings::switch(c.inst.settings.interlock_never_opaque, c.facts.is_llvmpipe());
    if i.strategy == InterlockStrategy::Serialized && !c.facts.is_llvmpipe() {
        c.inst.log.warn(
            crate::id::INTERLOCK_SERIALIZED_INEXACT,
            &format!("interlock_strategy=serialized on {}: exact only where the rasterizer shades overlapping fragments in primitive order (llvmpipe)", c.facts.device_name),
        );
    }
    Some(DeviceInterlock { never_opaque, ..i })
}

/// The structures interlock answers: its feature structure (no properties).
pub const ANSWERS: crate::device::Answers = crate::device::Answers {
    features: &[vk::StructureType::PHYSICAL_DEVICE_FRAGMENT_SHADER_INTERLOCK_FEATURES_EXT],
    properties: &[],
    fill_features: fill_feature_chain,
    fill_properties: |_, _, _| {},
};

/// [`fill_features`] on the structure of `chain`, where it has one.
///
/// # Safety
/// `chain` is null or a valid, writable output chain.
unsafe fn fill_feature_chain(plan: &crate::plan::Plan, chain: *mut std::ffi::c_void) {
    // SAFETY: the caller's guarantee.
    if let Some(f) = unsafe { crate::pnext::find_mut::<vk::PhysicalDeviceFragmentShaderInterlockFeaturesEXT>(chain) } {
        fill_features(f, plan.exposes(crate::plan::SHADING_RATE_EXTENSION));
    }
}

/// Fills the interlock features the layer provides: shading-rate interlock
/// where the driver has fragment shading rates (`shading_rate`).
pub fn fill_features(f: &mut vk::PhysicalDeviceFragmentShaderInterlockFeaturesEXT, shading_rate: bool) {
    f.fragment_shader_pixel_interlock = vk::TRUE;
    f.fragment_shader_sample_interlock = vk::TRUE;
    f.fragment_shader_shading_rate_interlock = vk::Bool32::from(shading_rate);
}

/// `VkDeviceCreateInfo` without the emulated extension and feature structure.
///
/// `info` borrows the application's create info for `'a` (queue create
/// infos, extension names, the structures the copied chain points at) and
/// points into the fields below for the rest: heap memory (`Vec`, `Box`,
/// the chain's nodes), which stays put when the struct moves.
pub struct StrippedDeviceInfo<'a> {
    pub info: vk::DeviceCreateInfo<'a>,
    pub interlock: DeviceInterlock,
    _names: Vec<*const c_char>,
    _chain: Chain,
    _features: Option<Box<vk::PhysicalDeviceFeatures>>,
}

pub use crate::pnext::StripError;

/// Removes the extension and its feature structure from `info`, and
/// enables what the strategy `needs`; shading-rate interlock is accepted
/// where the driver has fragment shading rates (`shading_rate`).
///
/// # Safety
/// `info` must be a valid `VkDeviceCreateInfo`.
pub unsafe fn strip<'a>(
    info: &vk::DeviceCreateInfo<'a>,
    strategy: InterlockStrategy,
    needs: Needs,
    shading_rate: bool,
) -> Result<StrippedDeviceInfo<'a>, StripError> {
    // SAFETY: `info` is a valid create info (the caller's guarantee), so its
    // extension names and chain are valid
    // (VUID-VkDeviceCreateInfo-ppEnabledExtensionNames-parameter,
    // VUID-VkDeviceCreateInfo-pNext-pNext).
    let (kept, extension_enabled) = unsafe { crate::ffi::extensions_without(info, INTERLOCK_EXTENSION) };
    // SAFETY: as above; the chain is alive for the call.
    let mut chain = unsafe { Chain::copy_prefix(info.p_next) };
    // What this strip reads, removes or edits must lie before any structure the layer cannot copy (a newer
    // extension's, after them, is linked as it is).
    let edited = [
        vk::StructureType::PHYSICAL_DEVICE_FRAGMENT_SHADER_INTERLOCK_FEATURES_EXT,
        vk::StructureType::PHYSICAL_DEVICE_VULKAN_1_3_FEATURES,
        vk::StructureType::PHYSICAL_DEVICE_SHADER_DEMOTE_TO_HELPER_INVOCATION_FEATURES,
        vk::StructureType::PHYSICAL_DEVICE_FEATURES_2,
    ];
    if edited.iter().any(|t| chain.tail_contains(*t)) {
        chain.tail_error()?;
    }
    // The feature structure goes (the driver lacks it); which of its modes
    // the application enabled changes nothing the layer does, but shading
    // rate interlock needs shading rates.
    if let Some(f) = chain.get::<vk::PhysicalDeviceFragmentShaderInterlockFeaturesEXT>() {
        if f.fragment_shader_shading_rate_interlock == vk::TRUE && !shading_rate {
            return Err(StripError::FeatureNotPresent("fragmentShaderShadingRateInterlock"));
        }
    }
    chain.remove(vk::StructureType::PHYSICAL_DEVICE_FRAGMENT_SHADER_INTERLOCK_FEATURES_EXT);
    // The spinlock's atomics on the lock image need fragmentStoresAndAtomics;
    // the ordered strategy's PrimitiveId, geometryShader.
    if needs.demote && extension_enabled {
        if let Some(f) = chain.get_mut::<vk::PhysicalDeviceVulkan13Features>() {
            f.shader_demote_to_helper_invocation = vk::TRUE;
        } else if let Some(f) = chain.get_mut::<vk::PhysicalDeviceShaderDemoteToHelperInvocationFeatures>() {
            f.shader_demote_to_helper_invocation = vk::TRUE;
        } else {
            chain.push(
                &vk::PhysicalDeviceShaderDemoteToHelperInvocationFeatures::default()
                    .shader_demote_to_helper_invocation(true),
            );
        }
    }
    let mut features = None;
    if (needs.atomics || needs.geometry) && extension_enabled {
        let enable = |f: &mut vk::PhysicalDeviceFeatures| {
            if needs.atomics {
                f.fragment_stores_and_atomics = vk::TRUE;
            }
            if needs.geometry {
                f.geometry_shader = vk::TRUE;
            }
        };
        // (A feature structure the layer could not copy was refused above.)
        // SAFETY: `info` is valid and `chain` copies its chain (as above).
        features = unsafe { crate::pnext::enable_core_features(info, &mut chain, enable) }.flatten();
    }
    // A plain copy: the borrow of the application's data keeps its lifetime `'a`.
    let mut out: vk::DeviceCreateInfo<'a> = *info;
    if let Some(f) = &features {
        out.p_enabled_features = &**f;
    }
    out.p_next = chain.head();
    out.enabled_extension_count = kept.len() as u32;
    out.pp_enabled_extension_names = if kept.is_empty() { std::ptr::null() } else { kept.as_ptr() };
    Ok(StrippedDeviceInfo {
        info: out,
        interlock: DeviceInterlock { strategy, extension_enabled, never_opaque: false },
        _names: kept,
        _chain: chain,
        _features: features,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pnext;
    use std::ffi::CStr;

    #[test]
    fn strips_name_and_features_and_remembers_them() {
        let names = [c"VK_KHR_swapchain".as_ptr(), INTERLOCK_EXTENSION.as_ptr()];
        let mut f =
            vk::PhysicalDeviceFragmentShaderInterlockFeaturesEXT::default().fragment_shader_pixel_interlock(true);
        let mut v12 = vk::PhysicalDeviceVulkan12Features::default().timeline_semaphore(true);
        let info =
            vk::DeviceCreateInfo::default().enabled_extension_names(&names).push_next(&mut f).push_next(&mut v12);
        // SAFETY: `info` is built from the live arrays and structures above.
        let s = unsafe { strip(&info, InterlockStrategy::Serialized, Needs::default(), false) }.unwrap();
        assert_eq!(s.info.enabled_extension_count, 1);
        // SAFETY: `s` keeps the one remaining name, a literal.
        assert_eq!(unsafe { CStr::from_ptr(*s.info.pp_enabled_extension_names) }, c"VK_KHR_swapchain");
        // SAFETY: `s.info`'s chain is the copy `s` owns.
        unsafe {
            assert!(pnext::find::<vk::PhysicalDeviceFragmentShaderInterlockFeaturesEXT>(s.info.p_next).is_none());
            assert!(pnext::find::<vk::PhysicalDeviceVulkan12Features>(s.info.p_next).is_some());
        }
        assert!(s.interlock.extension_enabled);
    }

    /// Shading-rate interlock is refused where the driver has no shading
    /// rates, accepted where it has.
    #[test]
    fn shading_rate_interlock_needs_shading_rates() {
        let mut f = vk::PhysicalDeviceFragmentShaderInterlockFeaturesEXT::default()
            .fragment_shader_shading_rate_interlock(true);
        let info = vk::DeviceCreateInfo::default().push_next(&mut f);
        // SAFETY: `info` links only the live `f`.
        assert!(matches!(
            unsafe { strip(&info, InterlockStrategy::Serialized, Needs::default(), false) },
            Err(StripError::FeatureNotPresent(_))
        ));
        // SAFETY: as above.
        let s = unsafe { strip(&info, InterlockStrategy::Spinlock, Needs::default(), true) };
        assert!(s.is_ok(), "{:?}", s.err());
    }
}

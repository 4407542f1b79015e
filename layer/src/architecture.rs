//! Applying an emulated architecture ([`crate::profile`]) to what the
//! application sees: governed features ANDed with the profile (all false
//! where the extension is hidden), governed properties clamped, the identity
//! optionally replaced, and device creation refusing what is hidden, as the
//! spec says (`VK_ERROR_EXTENSION_NOT_PRESENT`, `VK_ERROR_FEATURE_NOT_PRESENT`).
//! Every value changed from what the driver (plus emulation) reported is
//! logged once as `OVERLAP-Profile-Adjusted`.

use crate::id;
use crate::log::Logger;
use crate::plan::{Plan, FDM_EXTENSION, SHADING_RATE_EXTENSION};
use crate::pnext;
use crate::profile::{clamp, Profile};
use crate::settings::LogLevel;
use ash::vk;
use serde_json::{json, Value};
use std::ffi::c_char;

const INTERLOCK: &str = "VK_EXT_fragment_shader_interlock";
const S_INTERLOCK: &str = "VkPhysicalDeviceFragmentShaderInterlockFeaturesEXT";
const S_FSR_FEATURES: &str = "VkPhysicalDeviceFragmentShadingRateFeaturesKHR";
const S_FSR_PROPS: &str = "VkPhysicalDeviceFragmentShadingRatePropertiesKHR";
const S_FDM_FEATURES: &str = "VkPhysicalDeviceFragmentDensityMapFeaturesEXT";
const S_FDM_PROPS: &str = "VkPhysicalDeviceFragmentDensityMapPropertiesEXT";

fn adjusted(log: &Logger, profile: Option<&Profile>, what: &str, before: &Value, after: &Value) {
    if before != after {
        let arch = profile.map(|p| p.arch.as_str()).unwrap_or("native");
        log.log_once(LogLevel::Info, id::PROFILE_ADJUSTED, what, &format!("{what}: {before} -> {after} ({arch})"));
    }
}

/// ANDs boolean members with the profile's (all false when not exposed).
fn bools(log: &Logger, plan: &Plan, structure: &str, exposed: bool, members: &mut [(&str, &mut vk::Bool32)]) {
    let profile = plan.profile.as_deref();
    for (name, v) in members.iter_mut() {
        let before = **v == vk::TRUE;
        let after = exposed && before && profile.and_then(|p| p.feature(structure, name)).unwrap_or(true);
        **v = after as vk::Bool32;
        adjusted(log, profile, &format!("{structure}.{name}"), &json!(before), &json!(after));
    }
}

/// Applies the plan to a features chain the driver (and emulation) filled.
///
/// # Safety
/// `p_next` is a valid, writable output chain.
pub unsafe fn apply_features(log: &Logger, plan: &Plan, p_next: *mut std::ffi::c_void) {
    if plan.profile.is_none() && plan.hidden_extensions.is_empty() {
        return;
    }
    // SAFETY: `p_next` is a valid, writable output chain (the caller's
    // guarantee; the "-pNext-pNext" valid usage of the structure it extends).
    if let Some(f) = unsafe { pnext::find_mut::<vk::PhysicalDeviceFragmentShaderInterlockFeaturesEXT>(p_next) } {
        bools(
            log,
            plan,
            S_INTERLOCK,
            plan.exposes(INTERLOCK),
            &mut [
                ("fragmentShaderSampleInterlock", &mut f.fragment_shader_sample_interlock),
                ("fragmentShaderPixelInterlock", &mut f.fragment_shader_pixel_interlock),
                ("fragmentShaderShadingRateInterlock", &mut f.fragment_shader_shading_rate_interlock),
            ],
        );
    }
    // SAFETY: as above.
    if let Some(f) = unsafe { pnext::find_mut::<vk::PhysicalDeviceFragmentShadingRateFeaturesKHR>(p_next) } {
        bools(
            log,
            plan,
            S_FSR_FEATURES,
            plan.exposes(SHADING_RATE_EXTENSION),
            &mut [
                ("pipelineFragmentShadingRate", &mut f.pipeline_fragment_shading_rate),
                ("primitiveFragmentShadingRate", &mut f.primitive_fragment_shading_rate),
                ("attachmentFragmentShadingRate", &mut f.attachment_fragment_shading_rate),
            ],
        );
    }
    // SAFETY: as above.
    if let Some(f) = unsafe { pnext::find_mut::<vk::PhysicalDeviceFragmentDensityMapFeaturesEXT>(p_next) } {
        bools(
            log,
            plan,
            S_FDM_FEATURES,
            plan.exposes(FDM_EXTENSION),
            &mut [
                ("fragmentDensityMap", &mut f.fragment_density_map),
                ("fragmentDensityMapDynamic", &mut f.fragment_density_map_dynamic),
                ("fragmentDensityMapNonSubsampledImages", &mut f.fragment_density_map_non_subsampled_images),
            ],
        );
    }
}

/// A property member, seen as JSON for clamping.
enum Member<'a> {
    Bool(&'a mut vk::Bool32),
    U32(&'a mut u32),
    Extent(&'a mut vk::Extent2D),
    Samples(&'a mut vk::SampleCountFlags),
}

impl Member<'_> {
    fn get(&self) -> Value {
        match self {
            Member::Bool(v) => json!(**v == vk::TRUE),
            Member::U32(v) => json!(**v),
            Member::Extent(e) => json!({"width": e.width, "height": e.height}),
            Member::Samples(s) => json!(s.as_raw()),
        }
    }
    fn set(&mut self, v: &Value) {
        match self {
            Member::Bool(x) => **x = v.as_bool().unwrap_or(false) as vk::Bool32,
            Member::U32(x) => **x = v.as_u64().unwrap_or(0) as u32,
            Member::Extent(e) => {
                e.width = v["width"].as_u64().unwrap_or(0) as u32;
                e.height = v["height"].as_u64().unwrap_or(0) as u32;
            }
            Member::Samples(s) => **s = vk::SampleCountFlags::from_raw(v.as_u64().unwrap_or(0) as u32),
        }
    }
}

fn clamp_members(log: &Logger, plan: &Plan, structure: &str, members: &mut [(&str, Member)]) {
    let Some(profile) = plan.profile.as_deref() else { return };
    for (name, m) in members.iter_mut() {
        let Some(pv) = profile.property(structure, name) else { continue };
        let before = m.get();
        let after = clamp(name, &before, pv);
        m.set(&after);
        adjusted(log, Some(profile), &format!("{structure}.{name}"), &before, &after);
    }
}

/// Applies the plan to properties the driver filled: the governed
/// structures in `p_next`, and the identity in `props` with `spoof`.
///
/// # Safety
/// `p_next` is a valid, writable output chain (or null).
pub unsafe fn apply_properties(
    log: &Logger,
    plan: &Plan,
    spoof: bool,
    props: &mut vk::PhysicalDeviceProperties,
    p_next: *mut std::ffi::c_void,
) {
    let Some(profile) = plan.profile.as_deref() else { return };
    if spoof {
        if let Some(vendor) = profile.vendor_id() {
            props.vendor_id = vendor;
        }
        let driver_name = props.device_name_as_c_str().map(|c| c.to_string_lossy().into_owned()).unwrap_or_default();
        let name = format!("Overlap {} ({driver_name})", profile.arch);
        let dst = &mut props.device_name;
        let n = name.len().min(dst.len() - 1);
        for (d, s) in dst.iter_mut().zip(name.bytes().take(n)) {
            *d = s as c_char;
        }
        dst[n] = 0;
    }
    if p_next.is_null() {
        return;
    }
    // SAFETY: `p_next` is a valid, writable output chain (the caller's
    // guarantee; the "-pNext-pNext" valid usage of the structure it extends).
    if let Some(p) = unsafe { pnext::find_mut::<vk::PhysicalDeviceFragmentShadingRatePropertiesKHR>(p_next) } {
        clamp_members(
            log,
            plan,
            S_FSR_PROPS,
            &mut [
                (
                    "minFragmentShadingRateAttachmentTexelSize",
                    Member::Extent(&mut p.min_fragment_shading_rate_attachment_texel_size),
                ),
                (
                    "maxFragmentShadingRateAttachmentTexelSize",
                    Member::Extent(&mut p.max_fragment_shading_rate_attachment_texel_size),
                ),
                (
                    "maxFragmentShadingRateAttachmentTexelSizeAspectRatio",
                    Member::U32(&mut p.max_fragment_shading_rate_attachment_texel_size_aspect_ratio),
                ),
                (
                    "primitiveFragmentShadingRateWithMultipleViewports",
                    Member::Bool(&mut p.primitive_fragment_shading_rate_with_multiple_viewports),
                ),
                ("layeredShadingRateAttachments", Member::Bool(&mut p.layered_shading_rate_attachments)),
                (
                    "fragmentShadingRateNonTrivialCombinerOps",
                    Member::Bool(&mut p.fragment_shading_rate_non_trivial_combiner_ops),
                ),
                ("maxFragmentSize", Member::Extent(&mut p.max_fragment_size)),
                ("maxFragmentSizeAspectRatio", Member::U32(&mut p.max_fragment_size_aspect_ratio)),
                (
                    "maxFragmentShadingRateCoverageSamples",
                    Member::U32(&mut p.max_fragment_shading_rate_coverage_samples),
                ),
                (
                    "maxFragmentShadingRateRasterizationSamples",
                    Member::Samples(&mut p.max_fragment_shading_rate_rasterization_samples),
                ),
                (
                    "fragmentShadingRateWithShaderDepthStencilWrites",
                    Member::Bool(&mut p.fragment_shading_rate_with_shader_depth_stencil_writes),
                ),
                ("fragmentShadingRateWithSampleMask", Member::Bool(&mut p.fragment_shading_rate_with_sample_mask)),
                (
                    "fragmentShadingRateWithShaderSampleMask",
                    Member::Bool(&mut p.fragment_shading_rate_with_shader_sample_mask),
                ),
                (
                    "fragmentShadingRateWithConservativeRasterization",
                    Member::Bool(&mut p.fragment_shading_rate_with_conservative_rasterization),
                ),
                (
                    "fragmentShadingRateWithFragmentShaderInterlock",
                    Member::Bool(&mut p.fragment_shading_rate_with_fragment_shader_interlock),
                ),
                (
                    "fragmentShadingRateWithCustomSampleLocations",
                    Member::Bool(&mut p.fragment_shading_rate_with_custom_sample_locations),
                ),
                (
                    "fragmentShadingRateStrictMultiplyCombiner",
                    Member::Bool(&mut p.fragment_shading_rate_strict_multiply_combiner),
                ),
            ],
        );
    }
    // SAFETY: as above.
    if let Some(p) = unsafe { pnext::find_mut::<vk::PhysicalDeviceFragmentDensityMapPropertiesEXT>(p_next) } {
        clamp_fdm_properties(log, plan, p);
    }
}

/// The density-map properties clamped towards the profile's (what the
/// application is told, and what the emulation's binning uses).
pub fn clamp_fdm_properties(log: &Logger, plan: &Plan, p: &mut vk::PhysicalDeviceFragmentDensityMapPropertiesEXT) {
    clamp_members(
        log,
        plan,
        S_FDM_PROPS,
        &mut [
            ("minFragmentDensityTexelSize", Member::Extent(&mut p.min_fragment_density_texel_size)),
            ("maxFragmentDensityTexelSize", Member::Extent(&mut p.max_fragment_density_texel_size)),
            ("fragmentDensityInvocations", Member::Bool(&mut p.fragment_density_invocations)),
        ],
    );
}

/// Why `vkCreateDevice` must fail under the plan, if it must: a hidden
/// extension enabled, or a governed feature enabled that `available` (the
/// features as the layer reports them) does not have.
///
/// # Safety
/// `info` is a valid `VkDeviceCreateInfo`.
pub unsafe fn refuse(plan: &Plan, info: &vk::DeviceCreateInfo, available: &Available) -> Option<(vk::Result, String)> {
    let names: &[*const c_char] = if info.enabled_extension_count == 0 {
        &[]
    } else {
        // SAFETY: VUID-VkDeviceCreateInfo-ppEnabledExtensionNames-parameter:
        // `enabledExtensionCount` null-terminated UTF-8 strings (`info` is
        // valid, the caller's guarantee).
        unsafe { std::slice::from_raw_parts(info.pp_enabled_extension_names, info.enabled_extension_count as usize) }
    };
    for n in names {
        // SAFETY: as above.
        let n = unsafe { std::ffi::CStr::from_ptr(*n) }.to_string_lossy();
        if plan.hidden_extensions.iter().any(|h| *h == n) {
            return Some((
                vk::Result::ERROR_EXTENSION_NOT_PRESENT,
                format!("{n} is hidden by the architecture profile"),
            ));
        }
    }
    let check = |asked: &[(&str, vk::Bool32)], have: &[(&str, vk::Bool32)]| {
        asked
            .iter()
            .zip(have)
            .find(|((_, a), (_, h))| *a == vk::TRUE && *h != vk::TRUE)
            .map(|((n, _), _)| n.to_string())
    };
    // SAFETY: a valid create info has a valid chain (VUID-VkDeviceCreateInfo-pNext-pNext).
    if let Some(f) = unsafe { pnext::find::<vk::PhysicalDeviceFragmentShadingRateFeaturesKHR>(info.p_next) } {
        let asked = [
            ("pipelineFragmentShadingRate", f.pipeline_fragment_shading_rate),
            ("primitiveFragmentShadingRate", f.primitive_fragment_shading_rate),
            ("attachmentFragmentShadingRate", f.attachment_fragment_shading_rate),
        ];
        let have = [
            ("", available.shading_rate.pipeline_fragment_shading_rate),
            ("", available.shading_rate.primitive_fragment_shading_rate),
            ("", available.shading_rate.attachment_fragment_shading_rate),
        ];
        if let Some(n) = check(&asked, &have) {
            return Some((
                vk::Result::ERROR_FEATURE_NOT_PRESENT,
                format!("{n} is not available under the architecture profile"),
            ));
        }
    }
    // SAFETY: as above.
    if let Some(f) = unsafe { pnext::find::<vk::PhysicalDeviceFragmentShaderInterlockFeaturesEXT>(info.p_next) } {
        let asked = [
            ("fragmentShaderSampleInterlock", f.fragment_shader_sample_interlock),
            ("fragmentShaderPixelInterlock", f.fragment_shader_pixel_interlock),
            ("fragmentShaderShadingRateInterlock", f.fragment_shader_shading_rate_interlock),
        ];
        let have = [
            ("", available.interlock.fragment_shader_sample_interlock),
            ("", available.interlock.fragment_shader_pixel_interlock),
            ("", available.interlock.fragment_shader_shading_rate_interlock),
        ];
        if let Some(n) = check(&asked, &have) {
            return Some((
                vk::Result::ERROR_FEATURE_NOT_PRESENT,
                format!("{n} is not available under the architecture profile"),
            ));
        }
    }
    None
}

/// The governed features as the layer reports them.
#[derive(Default)]
pub struct Available {
    pub interlock: vk::PhysicalDeviceFragmentShaderInterlockFeaturesEXT<'static>,
    pub shading_rate: vk::PhysicalDeviceFragmentShadingRateFeaturesKHR<'static>,
}

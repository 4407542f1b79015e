//! Shader objects (`VK_EXT_shader_object`) in density-map passes.
//!
//! **Creation.** The driver never sees the density-map flag
//! (`VK_SHADER_CREATE_FRAGMENT_DENSITY_MAP_ATTACHMENT_BIT_EXT`) nor the
//! density built-ins: a fragment shader object reading `FragSizeEXT` or
//! `FragInvocationCountEXT` is created from its code lowered for a 1x1 area
//! (as [`super::create_shader_module`] lowers a module). In mode `binned`, a
//! fragment shader object that reads `FragCoord` or a density built-in gets
//! one variant per fragment area ([`super::AREAS`], the same lowering the
//! pipeline path uses), made right after the application's objects with the
//! same create infos (set layouts, push constant ranges, specialization)
//! but the variant's code. A linked set (`VK_SHADER_CREATE_LINK_STAGE_BIT_EXT`)
//! must be bound whole, so each area's variant is created in a linked set of
//! its own: copies of every linked partner with the fragment stage's code
//! replaced; each partner then has a variant per area too, and a replay
//! binds the whole set of its area. The variants go with the application's
//! object (`vkDestroyShaderEXT`, or the device's destruction).
//!
//! **Replays.** `vkCmdBindShadersEXT` is captured like the other binds
//! (`capture.rs`); a replay at area `a` binds each object's variant
//! for `a` ([`super::commands`]). Shader objects need all their state
//! dynamic: what the capture records (Vulkan 1.3's extended dynamic state,
//! extended dynamic state 2 and 3, vertex input) is restored before every
//! replay. A pass binding a shader object the layer cannot replay (binary
//! code, side effects, a variant that could not be made, a density built-in
//! under sample-rate shading, whose invocation count depends on the
//! rasterization samples set at draw time) renders at 1x1 ([`check`]).

use super::{variant_words, Fdm, Mode, AREAS};
use crate::device::DeviceCore;
use crate::generated::args;
use ash::vk;
use overlap_shaders::fdm as shader_fdm;
use std::collections::HashMap;
use std::ffi::c_void;
use std::sync::Arc;

/// What the layer knows of a shader object made on a density-map device.
#[derive(Debug, Default)]
pub struct ShaderObjectInfo {
    /// The object per fragment area, the application's at 1x1 (only for an
    /// object that needs variants).
    pub variants: HashMap<(u32, u32), vk::ShaderEXT>,
    /// A replay above 1x1 must bind its variant: a fragment shader reading
    /// `FragCoord` or a density built-in, or a linked partner of one.
    pub needs_variants: bool,
    /// Why a pass binding it cannot be replayed (`None`: it can).
    pub unreplayable: Option<&'static str>,
}

/// What one create info asks of the layer.
struct Facts {
    /// The code lowered for 1x1 (density built-ins only).
    lowered: Option<Vec<u32>>,
    /// The application's code, where variants are to be made from it.
    variant_source: Option<Vec<u32>>,
    unreplayable: Option<&'static str>,
}

/// # Safety
/// `info` is a valid create info of `vkCreateShadersEXT`.
unsafe fn facts(dev: &DeviceCore, info: &vk::ShaderCreateInfoEXT) -> Facts {
    let mut out = Facts { lowered: None, variant_source: None, unreplayable: None };
    if info.code_type != vk::ShaderCodeTypeEXT::SPIRV || info.p_code.is_null() {
        out.unreplayable = Some("a shader object bound in it was made from binary code the layer cannot read");
        return out;
    }
    // SAFETY: VUID-VkShaderCreateInfoEXT-pCode-parameter: `pCode` holds
    // `codeSize` bytes; SPIR-V code is aligned to 4 bytes
    // (VUID-VkShaderCreateInfoEXT-pCode-08493).
    let code = unsafe { crate::spirv::words(info.p_code as *const u32, info.code_size) };
    let density = shader_fdm::uses_density_builtins(code);
    let Ok(module) = overlap_shaders::parse(code) else {
        out.unreplayable = Some("a shader object bound in it has code the layer cannot parse");
        return out;
    };
    if shader_fdm::has_side_effects(&module) {
        out.unreplayable = Some("a shader object bound in it writes storage or uses atomics");
    }
    let fragment = info.stage == vk::ShaderStageFlags::FRAGMENT;
    let sample_rate = module.capabilities.iter().any(|c| {
        c.operands.first() == Some(&rspirv::dr::Operand::Capability(rspirv::spirv::Capability::SampleRateShading))
    });
    if fragment && density && sample_rate && out.unreplayable.is_none() {
        out.unreplayable =
            Some("a fragment shader object bound in it reads a density built-in under sample-rate shading");
    }
    if density {
        out.lowered = variant_words(dev, code, shader_fdm::Params { area: (1, 1), invocations: 1 });
    }
    if fragment && (density || shader_fdm::reads_frag_coord(&module)) {
        out.variant_source = Some(code.to_vec());
    }
    out
}

/// `vkCreateShadersEXT`: the density-map flag and built-ins translated, the
/// per-area variants made (module doc), through the command below the
/// density map.
pub fn create_shaders(dev: &DeviceCore, f: &Fdm, a: args::CreateShadersEXT) -> vk::Result {
    let Some(so) = &f.below_shader_object else { return vk::Result::ERROR_EXTENSION_NOT_PRESENT };
    let create = so.create_shaders_ext;
    let infos_in = a.create_infos();
    if infos_in.is_empty() {
        // SAFETY: the next layer's command, with the application's arguments.
        return unsafe { a.call(create) };
    }
    // Shader objects with a subsampled sampler in their set layouts are not rewritten: packing goes off.
    for i in infos_in {
        // SAFETY: VUID-VkShaderCreateInfoEXT-pSetLayouts-parameter: `setLayoutCount` handles.
        let layouts = unsafe { crate::ffi::slice(i.p_set_layouts, i.set_layout_count) };
        if layouts.iter().any(|l| f.subsampled_layout(*l)) {
            f.subsampled_off(dev, "a shader object's set layouts hold a subsampled sampler");
        }
    }
    // SAFETY: each is a valid create info (as above).
    let facts: Vec<Facts> = infos_in.iter().map(|i| unsafe { facts(dev, i) }).collect();
    let fdm_flag = vk::ShaderCreateFlagsEXT::FRAGMENT_DENSITY_MAP_ATTACHMENT;
    let copies: Vec<vk::ShaderCreateInfoEXT> = infos_in
        .iter()
        .zip(&facts)
        .map(|(info, fa)| {
            let mut c = *info;
            c.flags &= !fdm_flag;
            if let Some(w) = &fa.lowered {
                c.code_size = w.len() * 4;
                c.p_code = w.as_ptr() as *const c_void;
            }
            c
        })
        .collect();
    // SAFETY: the application's valid infos, copied without the flag the
    // driver lacks and with lowered code (live Vecs in `facts`).
    let r = unsafe { a.with_create_infos(&copies).call(create) };
    if r != vk::Result::SUCCESS {
        return r;
    }
    // SAFETY: the call succeeded.
    let made = unsafe { a.written_shaders() }.to_vec();
    let mut objects: Vec<ShaderObjectInfo> =
        facts.iter().map(|fa| ShaderObjectInfo { unreplayable: fa.unreplayable, ..Default::default() }).collect();
    let wanted: Vec<usize> = (0..facts.len()).filter(|i| facts[*i].variant_source.is_some()).collect();
    if f.mode == Mode::Binned && !f.controls.without_shader_object_variants && !wanted.is_empty() {
        let link = vk::ShaderCreateFlagsEXT::LINK_STAGE;
        // A linked fragment stage: every linked partner is made again with
        // it (VUID-vkCreateShadersEXT-pCreateInfos-08402: in a linked call
        // every graphics stage is linked); unlinked ones alone.
        let group: Vec<usize> = if wanted.iter().any(|i| infos_in[*i].flags.contains(link)) {
            (0..infos_in.len()).filter(|i| infos_in[*i].flags.contains(link)).collect()
        } else {
            wanted.clone()
        };
        for &i in &group {
            objects[i].needs_variants = true;
            objects[i].variants.insert((1, 1), made[i]);
        }
        let mut complete = true;
        for &area in &AREAS[1..] {
            let mut words: Vec<Vec<u32>> = Vec::new();
            let mut area_infos: Vec<vk::ShaderCreateInfoEXT> = Vec::new();
            for &i in &group {
                let mut c = copies[i];
                if let Some(src) = &facts[i].variant_source {
                    let Some(w) = variant_words(dev, src, shader_fdm::Params { area, invocations: 1 }) else {
                        complete = false;
                        area_infos.clear();
                        break;
                    };
                    words.push(w);
                    let w = words.last().unwrap();
                    c.code_size = w.len() * 4;
                    c.p_code = w.as_ptr() as *const c_void;
                }
                area_infos.push(c);
            }
            if area_infos.len() != group.len() {
                continue;
            }
            let mut handles = vec![vk::ShaderEXT::null(); group.len()];
            let injected = crate::guard::injected_failure(&dev.settings().debug_fail, "vkCreateShadersEXT");
            // SAFETY: the application's valid infos (copied above), the
            // fragment stage's code replaced by the variant's (lowered and
            // validated, alive in `words`); `handles` holds one per info.
            let r = injected.err().unwrap_or_else(|| unsafe {
                create(a.device(), area_infos.len() as u32, area_infos.as_ptr(), std::ptr::null(), handles.as_mut_ptr())
            });
            if r != vk::Result::SUCCESS {
                complete = false;
                continue;
            }
            for (&i, h) in group.iter().zip(handles) {
                objects[i].variants.insert(area, h);
            }
        }
        if !complete {
            super::warn_incomplete_variants(dev, "shader object");
        }
    }
    let mut known = f.shader_objects.lock();
    for (h, o) in made.into_iter().zip(objects) {
        known.insert(h, Arc::new(o));
    }
    vk::Result::SUCCESS
}

impl Fdm {
    /// The per-area variants go with the application's shader object.
    pub fn forget_shader(&self, shader: vk::ShaderEXT) {
        let Some(o) = self.shader_objects.lock().remove(&shader) else { return };
        // SAFETY: the variants are the layer's own, made with the
        // application's object, which no pending work uses
        // (VUID-vkDestroyShaderEXT-shader-08482), nor do replays binding them.
        unsafe { self.destroy_variants(&o) };
    }

    /// # Safety
    /// No pending work uses `o`'s variants.
    pub(super) unsafe fn destroy_variants(&self, o: &ShaderObjectInfo) {
        let Some(so) = &self.below_shader_object else { return };
        for (area, v) in &o.variants {
            if *area != (1, 1) {
                // SAFETY: the caller's guarantee; the variant is the layer's own object of this device.
                unsafe { (so.destroy_shader_ext)(self.below.handle(), *v, std::ptr::null()) };
            }
        }
    }
}

/// Why a pass binding `shaders` (stage and object; compute ones are not
/// replayed with it) at the replays' `areas` cannot be replayed, if it cannot.
pub(super) fn check(
    f: &Fdm,
    shaders: impl Iterator<Item = (vk::ShaderStageFlags, vk::ShaderEXT)>,
    areas: &[(u32, u32)],
) -> Option<&'static str> {
    let known = f.shader_objects.lock();
    for (_, s) in shaders.filter(|(st, s)| *st != vk::ShaderStageFlags::COMPUTE && *s != vk::ShaderEXT::null()) {
        let Some(o) = known.get(&s) else { return Some("a shader object bound in it is unknown to the layer") };
        if let Some(why) = o.unreplayable {
            return Some(why);
        }
        if o.needs_variants && areas.iter().any(|a| !o.variants.contains_key(a)) {
            return Some("a shader object it binds lacks the per-area variant a replay needs");
        }
    }
    None
}

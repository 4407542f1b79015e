//! Shader objects (`VK_EXT_shader_object`) for the varying linker.
//!
//! Shader objects created together in one `vkCreateShadersEXT` call with
//! `VK_SHADER_CREATE_LINK_STAGE_BIT_EXT` form a linked set: the application
//! promises to bind them together, so their interface may change as a
//! pipeline's does. Such a set's stages that are SPIR-V and carry the link
//! flag form a chain (vertex, tessellation control and evaluation, geometry,
//! fragment) linked like a pipeline's, every adjacent pair, the last first
//! (the same caches, the same log line). Their linked code replaces `pCode`/`codeSize` in the copies of
//! the create infos sent down (the application's arrays are never written).
//! Unlinked shader objects can be bound with any partner, so they are left
//! alone.
//!
//! The fragment stage's environment (which uniform buffers and push
//! constants it may read) comes from the fragment create info's set
//! layouts and push constant ranges, as a pipeline's comes from its layout.

use super::{chain_of, log_linked, outcome_of, Linker, Outcome};
use crate::device::DeviceCore;
use ash::vk;
use overlap_shaders::varyings::LinkEnv;
use std::sync::Arc;

/// The linked code the copied create infos point at; alive until
/// `vkCreateShadersEXT` has returned.
#[derive(Default)]
pub struct LinkedShaders {
    _outcomes: Vec<Arc<Outcome>>,
}

impl Linker {
    /// What a fragment stage created with these set layouts and push
    /// constant ranges may read (see `note_pipeline_layout`).
    fn env_of(&self, sets: &[vk::DescriptorSetLayout], ranges: &[vk::PushConstantRange]) -> Arc<LinkEnv> {
        if !self.uniforms {
            return Arc::default();
        }
        Arc::new(self.env_from(sets, ranges))
    }
}

/// The SPIR-V words of a create info, if it is SPIR-V that may be linked.
///
/// # Safety
/// `info` is a valid create info.
unsafe fn linkable(info: &vk::ShaderCreateInfoEXT<'_>) -> Option<Arc<Vec<u32>>> {
    let ok = info.code_type == vk::ShaderCodeTypeEXT::SPIRV
        && info.flags.contains(vk::ShaderCreateFlagsEXT::LINK_STAGE)
        && !info.p_code.is_null();
    // SAFETY: VUID-VkShaderCreateInfoEXT-pCode-parameter: `pCode` holds
    // `codeSize` bytes; SPIR-V code is 4-byte aligned
    // (VUID-VkShaderCreateInfoEXT-pCode-08493).
    let words = ok.then(|| unsafe { crate::spirv::words(info.p_code as *const u32, info.code_size) })?;
    (!words.is_empty()).then(|| Arc::new(words.to_vec()))
}

/// Links the fragment shader of the linked set in `infos` (the copies that
/// go down, their code already as the driver gets it) with its producer,
/// pointing both copies at the linked code, which the result keeps alive.
///
/// # Safety
/// `infos` are valid create infos of one `vkCreateShadersEXT` call on `dev`.
pub unsafe fn link_shader_objects(
    dev: &DeviceCore,
    v: &Linker,
    infos: &mut [vk::ShaderCreateInfoEXT<'_>],
) -> LinkedShaders {
    let mut out = LinkedShaders::default();
    let linked = |i: &vk::ShaderCreateInfoEXT<'_>| i.flags.contains(vk::ShaderCreateFlagsEXT::LINK_STAGE);
    let chain = chain_of(|s| infos.iter().position(|i| i.stage == s && linked(i)));
    let mut codes = Vec::with_capacity(chain.len());
    for at in &chain {
        // SAFETY: valid create infos (the caller's guarantee).
        let Some(code) = (unsafe { linkable(&infos[*at]) }) else { return out };
        codes.push(code);
    }
    if codes.len() < 2 {
        return out;
    }
    // What the fragment stage may read, when it is the chain's last.
    let env = match chain.last().map(|f| &infos[*f]).filter(|i| i.stage == vk::ShaderStageFlags::FRAGMENT) {
        Some(fi) => {
            // SAFETY: VUID-VkShaderCreateInfoEXT-pSetLayouts-parameter and
            // -pPushConstantRanges-parameter: the counts' worth of valid elements.
            let (sets, ranges) = unsafe {
                (
                    crate::ffi::slice(fi.p_set_layouts, fi.set_layout_count),
                    crate::ffi::slice(fi.p_push_constant_ranges, fi.push_constant_range_count),
                )
            };
            v.env_of(sets, ranges)
        }
        None => Arc::default(),
    };
    let (outcome, source) = outcome_of(dev, v, codes, env);
    let Some(outcome) = outcome else { return out };
    for (k, at) in chain.iter().enumerate() {
        infos[*at].code_size = outcome.stages[k].len() * 4;
        infos[*at].p_code = outcome.stages[k].as_ptr() as *const std::ffi::c_void;
    }
    log_linked(dev, &outcome, &source);
    out._outcomes.push(outcome);
    out
}

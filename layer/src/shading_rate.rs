//! Architecture behaviour for fragment shading rate: on GFX10.3, POPS forces
//! a 1x1 shading rate (`pops.rst`, "Variable-rate shading interaction"), so
//! under a profile whose `fragmentShadingRateWithFragmentShaderInterlock` is
//! false, on a driver that has VRS, a pipeline whose fragment shader declares
//! an interlock mode runs at 1x1 whatever the pipeline state, the dynamic
//! `vkCmdSetFragmentShadingRateKHR` rate, or the primitive and attachment
//! rates ask: the layer forces a 1x1 fragment size with both combiner
//! operations KEEP, as the hardware would. Under GFX11 the requested rates
//! apply, and so do they under the layer's emulated interlock, whose locks
//! cover coarse fragments (`Plan::forces_one_by_one_with_interlock`).
//!
//! Static state is rewritten at pipeline creation. For pipelines with the
//! rate dynamic, the layer sets 1x1/KEEP after binding them and while they
//! are bound, remembers what the application set, and restores it when a
//! pipeline without interlock is bound.

use crate::device::DeviceCore;
use crate::generated::args;
use crate::id;
use crate::pnext::Chain;
use ash::vk;
use parking_lot::Mutex;
use std::collections::{HashMap, HashSet};

pub const KEEP: [vk::FragmentShadingRateCombinerOpKHR; 2] =
    [vk::FragmentShadingRateCombinerOpKHR::KEEP, vk::FragmentShadingRateCombinerOpKHR::KEEP];
pub const ONE: vk::Extent2D = vk::Extent2D { width: 1, height: 1 };

#[derive(Default)]
struct CommandBufferRate {
    /// An interlock pipeline with a dynamic rate is bound.
    forcing: bool,
    /// The application's last vkCmdSetFragmentShadingRateKHR.
    app: Option<(vk::Extent2D, [vk::FragmentShadingRateCombinerOpKHR; 2])>,
}

#[derive(Default)]
pub struct ForceOneByOne {
    modules: Mutex<HashSet<vk::ShaderModule>>,
    dynamic_pipelines: Mutex<HashSet<vk::Pipeline>>,
    command_buffers: Mutex<HashMap<vk::CommandBuffer, CommandBufferRate>>,
}

impl ForceOneByOne {
    /// Where the architecture forces a 1x1 rate with interlock and the
    /// application enabled `VK_KHR_fragment_shading_rate`.
    ///
    /// # Safety
    /// `info` is a valid `VkDeviceCreateInfo`.
    pub unsafe fn for_device(plan: &crate::plan::Plan, info: &vk::DeviceCreateInfo) -> Option<ForceOneByOne> {
        // SAFETY: VUID-VkDeviceCreateInfo-ppEnabledExtensionNames-parameter: `enabledExtensionCount`
        // null-terminated UTF-8 strings (the caller's guarantee).
        let names = unsafe { crate::ffi::slice(info.pp_enabled_extension_names, info.enabled_extension_count) };
        // SAFETY: as above.
        let enabled = names.iter().any(|n| {
            unsafe { std::ffi::CStr::from_ptr(*n) }.to_bytes() == crate::plan::SHADING_RATE_EXTENSION.as_bytes()
        });
        (enabled && plan.forces_one_by_one_with_interlock()).then(ForceOneByOne::default)
    }

    pub fn note_module(&self, module: vk::ShaderModule, code: &[u32]) {
        if overlap_shaders::interlock::uses_interlock(code) {
            self.modules.lock().insert(module);
        }
    }

    pub fn forget_module(&self, module: vk::ShaderModule) {
        self.modules.lock().remove(&module);
    }

    pub fn forget_pipeline(&self, pipeline: vk::Pipeline) {
        self.dynamic_pipelines.lock().remove(&pipeline);
    }

    /// Whether a pipeline's fragment stage declares interlock.
    ///
    /// # Safety
    /// `stages` are valid stage create infos.
    unsafe fn uses_interlock(&self, stages: &[vk::PipelineShaderStageCreateInfo]) -> bool {
        let modules = self.modules.lock();
        stages.iter().filter(|s| s.stage == vk::ShaderStageFlags::FRAGMENT).any(|s| {
            if modules.contains(&s.module) {
                return true;
            }
            // SAFETY: a valid stage create info has a valid chain
            // (VUID-VkPipelineShaderStageCreateInfo-pNext-pNext); an inline
            // module's pCode holds codeSize / 4 words
            // (VUID-VkShaderModuleCreateInfo-pCode-parameter).
            unsafe {
                crate::pnext::find::<vk::ShaderModuleCreateInfo>(s.p_next).is_some_and(|m| {
                    !m.p_code.is_null()
                        && overlap_shaders::interlock::uses_interlock(std::slice::from_raw_parts(
                            m.p_code,
                            m.code_size / 4,
                        ))
                })
            }
        })
    }

    /// Rewrites the static rate of interlock pipelines to 1x1/KEEP; returns
    /// the chains the modified infos point at (kept alive by the caller) and
    /// which pipelines keep a dynamic rate.
    ///
    /// # Safety
    /// `infos` are valid create infos.
    pub unsafe fn force_static(
        &self,
        dev: &DeviceCore,
        infos: &mut [vk::GraphicsPipelineCreateInfo],
    ) -> (Vec<Chain>, Vec<bool>) {
        let mut chains = Vec::new();
        let mut dynamic = vec![false; infos.len()];
        for (i, info) in infos.iter_mut().enumerate() {
            let stages = if info.stage_count == 0 {
                &[][..]
            } else {
                // SAFETY: VUID-VkGraphicsPipelineCreateInfo-pStages-06600: a
                // pipeline with shader stages points pStages at `stageCount`
                // valid stage create infos.
                unsafe { std::slice::from_raw_parts(info.p_stages, info.stage_count as usize) }
            };
            // SAFETY: the stages are valid (as above).
            if !unsafe { self.uses_interlock(stages) } {
                continue;
            }
            // SAFETY: a non-null pDynamicState points at a valid
            // VkPipelineDynamicStateCreateInfo (VkGraphicsPipelineCreateInfo's
            // valid usage), whose pDynamicStates holds `dynamicStateCount`
            // values (VUID-VkPipelineDynamicStateCreateInfo-pDynamicStates-parameter).
            let dynamic_rate = !info.p_dynamic_state.is_null()
                && unsafe {
                    let d = &*info.p_dynamic_state;
                    d.dynamic_state_count > 0
                        && std::slice::from_raw_parts(d.p_dynamic_states, d.dynamic_state_count as usize)
                            .contains(&vk::DynamicState::FRAGMENT_SHADING_RATE_KHR)
                };
            dynamic[i] = dynamic_rate;
            if dynamic_rate {
                continue;
            }
            // SAFETY: a valid create info has a valid chain
            // (VUID-VkGraphicsPipelineCreateInfo-pNext-pNext).
            let copied = unsafe { Chain::copy(info.p_next) };
            let kept = |e| format!("an interlock pipeline keeps its shading rate: {e}");
            let Some(mut chain) = copied.map_err(|e| dev.log().warn(id::SHADING_RATE_NOT_FORCED, &kept(e))).ok() else {
                continue;
            };
            match chain.get_mut::<vk::PipelineFragmentShadingRateStateCreateInfoKHR>() {
                Some(s) => {
                    s.fragment_size = ONE;
                    s.combiner_ops = KEEP;
                }
                None => chain.push(
                    &vk::PipelineFragmentShadingRateStateCreateInfoKHR::default().fragment_size(ONE).combiner_ops(KEEP),
                ),
            }
            info.p_next = chain.head();
            chains.push(chain);
        }
        (chains, dynamic)
    }

    pub fn note_pipelines(&self, pipelines: &[vk::Pipeline], dynamic: &[bool]) {
        let mut set = self.dynamic_pipelines.lock();
        for (p, d) in pipelines.iter().zip(dynamic) {
            if *d && *p != vk::Pipeline::null() {
                set.insert(*p);
            }
        }
    }

    pub fn begin(&self, cb: vk::CommandBuffer) {
        self.command_buffers.lock().remove(&cb);
    }

    /// After vkCmdBindPipeline: force 1x1 for interlock pipelines with a
    /// dynamic rate, restore the application's rate after them, through
    /// `set_rate` (the next layer's vkCmdSetFragmentShadingRateKHR).
    ///
    /// # Safety
    /// `cb` is a command buffer of this device in the recording state, as
    /// vkCmdBindPipeline just required (VUID-vkCmdBindPipeline-commandBuffer-recording).
    pub unsafe fn bound(
        &self,
        set_rate: Option<vk::PFN_vkCmdSetFragmentShadingRateKHR>,
        cb: vk::CommandBuffer,
        point: vk::PipelineBindPoint,
        pipeline: vk::Pipeline,
    ) {
        if point != vk::PipelineBindPoint::GRAPHICS {
            return;
        }
        let Some(set_rate) = set_rate else { return };
        let forcing = self.dynamic_pipelines.lock().contains(&pipeline);
        let mut cbs = self.command_buffers.lock();
        let state = cbs.entry(cb).or_default();
        let was = std::mem::replace(&mut state.forcing, forcing);
        if forcing {
            // SAFETY: `cb` is recording (the caller's guarantee); a live 1x1
            // size and KEEP ops (VUID-vkCmdSetFragmentShadingRateKHR-pFragmentSize-parameter),
            // valid for the device since the pipeline asked for this dynamic state.
            unsafe { set_rate(cb, &ONE, &KEEP) };
        } else if was {
            if let Some((size, ops)) = state.app {
                // SAFETY: `cb` is recording; the application's own last rate
                // on this command buffer, which was valid when it set it.
                unsafe { set_rate(cb, &size, &ops) };
            }
        }
    }
}

/// Remembers the application's rate; while an interlock pipeline with a
/// dynamic rate is bound, sends 1x1/KEEP down instead.
pub fn cmd_set_fragment_shading_rate(_: &DeviceCore, s: &ForceOneByOne, a: args::CmdSetFragmentShadingRateKHR) {
    let mut cbs = s.command_buffers.lock();
    let state = cbs.entry(a.command_buffer()).or_default();
    state.app = Some((*a.fragment_size(), *a.combiner_ops_array()));
    if state.forcing {
        a.with_fragment_size(&ONE).with_combiner_ops_array(&KEEP).next()
    } else {
        a.next()
    }
}

/// Forces or restores the rate after the bind ([`ForceOneByOne::bound`]).
pub fn cmd_bind_pipeline(core: &DeviceCore, s: &ForceOneByOne, a: args::CmdBindPipeline) {
    let (cb, point, pipeline) = (a.command_buffer(), a.pipeline_bind_point(), a.pipeline());
    a.next();
    // SAFETY: `cb` is recording (VUID-vkCmdBindPipeline-commandBuffer-recording).
    unsafe { s.bound(core.next_set_fragment_shading_rate, cb, point, pipeline) };
}

/// At vkBeginCommandBuffer: the command buffer's rates start over.
pub fn begin_command_buffer(_: &DeviceCore, s: &ForceOneByOne, cb: vk::CommandBuffer) {
    s.begin(cb);
}

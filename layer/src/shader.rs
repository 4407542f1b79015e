//! Every path by which SPIR-V reaches the driver goes through [`rewrite`]:
//! `vkCreateShaderModule`, a `VkShaderModuleCreateInfo` chained to a
//! pipeline stage (graphics pipeline libraries included), and
//! `vkCreateShadersEXT`. A module the layer has nothing to do for is not
//! even parsed (a scan of its capabilities); a module it cannot handle is
//! passed down unchanged with a warning naming the reason; a rewritten module
//! that fails validation (SPIRV-Tools, in process) is never sent down (the original goes, with an
//! error).

use crate::device::DeviceCore;
use crate::generated::args;
use crate::id;
use crate::interlock::reserved::{ModuleKind, PipelineKind};
use crate::plan::InterlockStrategy;
use crate::pnext::{self, Chain};
use crate::settings::LogLevel;
use crate::spirv::{checked_output, words};
use crate::state::DeviceData;
use ash::vk;
use overlap_shaders::{interlock, ordered, spinlock};
use std::ffi::c_void;

/// A module as the driver must see it.
pub struct Rewritten {
    pub words: Vec<u32>,
    /// What the rewrite made of it.
    pub kind: ModuleKind,
}

/// A module that declares interlock goes down unchanged: checked first
/// where it may be one the layer made (a density-map variant, which the
/// density map leaves for this route to check: `DeviceCore::interlock_rewrite`),
/// so that every module the layer makes is validated exactly once.
fn unchanged(data: &DeviceData, code: &[u32]) -> Option<Rewritten> {
    if data.fdm.is_some() {
        crate::spirv::checked_output(data, "a module the interlock rewrite left unchanged", code, code);
    }
    None
}

/// The spinlock's lowering: the summary for the log, and the kind.
fn lower_locked(
    s: &crate::interlock::reserved::ReservedSet,
    module: &mut rspirv::dr::Module,
) -> Result<(String, ModuleKind), spinlock::Unsupported> {
    let cfg = spinlock::Config {
        set: s.set,
        binding: 0,
        size: crate::interlock::reserved::LOCK_SIZE,
        block: s.block,
        quad: s.quad,
        ttas: s.ttas,
        buffer: s.lock_buffer,
    };
    let r = spinlock::lower(module, &cfg)?;
    Ok((
        format!(
            "{} section(s) locked per {}{}{}, {} value(s) spilled, locks in the lock {}",
            r.sections,
            if r.quad_locks {
                "quad"
            } else if r.per_sample_locks {
                "sample"
            } else {
                "pixel"
            },
            {
                // A quad block lock covers a quad's 2x2 fragments of the largest size.
                let b = if r.quad_locks { (s.block.0 + 1, s.block.1 + 1) } else { s.block };
                if b != (0, 0) {
                    format!(" in {}x{} blocks", 1 << b.0, 1 << b.1)
                } else {
                    String::new()
                }
            },
            if !r.quad_locks && s.quad {
                format!(
                    " ({} entered per quad: derivatives, implicit-LOD samples or group operations inside)",
                    r.quad_sections
                )
            } else {
                String::new()
            },
            r.spilled_values,
            if s.lock_buffer { "buffer" } else { "image" }
        ),
        ModuleKind::Locked { ordered: r.ordered() },
    ))
}

/// A vertex shader on a device running the ordered strategy gets the
/// instance-index output its ordered fragment shaders read.
fn rewrite_vertex(data: &DeviceData, code: &[u32]) -> Option<Rewritten> {
    let s = data.reserved.as_ref()?;
    let o = s.ordered.as_ref()?;
    if !ordered::declares_vertex_entry(code) {
        return None;
    }
    let log = data.log();
    let mut module = match overlap_shaders::parse(code) {
        Ok(m) => m,
        Err(e) => {
            log.warn(
                id::SHADER_SKIPPED,
                &format!("a vertex shader is passed down without the instance index that ordered interlock needs: {e}"),
            );
            return None;
        }
    };
    let report = match ordered::add_instance_output(&mut module, o.cfg.location) {
        Ok(Some(r)) => r,
        Ok(None) => return None,
        Err(e) => {
            log.warn(
                id::SHADER_SKIPPED,
                &format!("a vertex shader is passed down without the instance index ({e}); ordered interlock pipelines with it are not ordered"),
            );
            return None;
        }
    };
    let out = overlap_shaders::assemble(&module);
    if !checked_output(data, "the ordered strategy's instance output", code, &out) {
        return None;
    }
    Some(Rewritten {
        words: out,
        kind: ModuleKind::Vertex { side_effects: report.side_effects, transform_feedback: report.transform_feedback },
    })
}

/// The module as the driver must see it, or `None` to send it unchanged.
pub fn rewrite(data: &DeviceData, code: &[u32]) -> Option<Rewritten> {
    let il = data.interlock.as_ref()?;
    if !interlock::uses_interlock(code) {
        return rewrite_vertex(data, code);
    }
    let log = data.log();
    let started = std::time::Instant::now();
    let mut module = match overlap_shaders::parse(code) {
        Ok(m) => m,
        Err(e) => {
            log.warn(id::SHADER_SKIPPED, &format!("a module using interlock is passed down unchanged: {e}"));
            return unchanged(data, code);
        }
    };
    let skipped = |e: &dyn std::fmt::Display| {
        log.warn(
            id::SHADER_SKIPPED,
            &format!("{} interlock cannot lower this module ({e}); passed down unchanged", il.strategy),
        );
        unchanged(data, code)
    };
    let (summary, kind) = match (il.strategy, &data.reserved) {
        (InterlockStrategy::Serialized, _) => {
            let r = interlock::lower_serialized(&mut module);
            (
                format!("{} begin / {} end removed", r.begins, r.ends),
                ModuleKind::Locked { ordered: r.modes.iter().any(|m| m.ordered) },
            )
        }
        (InterlockStrategy::Spinlock, Some(s)) => match lower_locked(s, &mut module) {
            Ok(r) => r,
            Err(e) => return skipped(&e),
        },
        (InterlockStrategy::Ordered, Some(s)) => {
            let wants_order = interlock::modes(&module).iter().any(|m| m.ordered);
            let lowered = match &s.ordered {
                Some(o) if wants_order && o.ready(data, s) => {
                    let cfg = ordered::Config {
                        set: s.set,
                        location: o.cfg.location,
                        shading_rate: o.cfg.shading_rate,
                        demote: o.cfg.demote,
                        measure: o.cfg.measure(),
                    };
                    match ordered::lower(&mut module, &cfg) {
                        Ok(r) => Some((
                            format!(
                                "{} section(s) in primitive order{}, {} value(s) spilled, {} discard(s) demoted",
                                r.sections,
                                if cfg.shading_rate { " per coarse fragment" } else { "" },
                                r.spilled_values,
                                r.kills_demoted
                            ),
                            ModuleKind::Ordered {
                                early_fragment_tests: r.early_fragment_tests,
                                per_sample: r.per_sample,
                            },
                        )),
                        Err(e) => {
                            log.warn(
                                id::INTERLOCK_ORDER_FALLBACK,
                                &format!("ordered interlock cannot lower this module ({e}); it gets the spinlock: mutual exclusion but not primitive order"),
                            );
                            None
                        }
                    }
                }
                _ => None,
            };
            match lowered {
                Some(r) => r,
                None => match lower_locked(s, &mut module) {
                    Ok(r) => r,
                    Err(e) => return skipped(&e),
                },
            }
        }
        (other, _) => return skipped(&format!("no resources for the {other} strategy")),
    };
    // llvmpipe would drop earlier primitives under an opaque full-tile one (overlap_shaders::opaque).
    let summary = match il.never_opaque.then(|| overlap_shaders::opaque::add_untaken_discard(&mut module)) {
        None => summary,
        Some(Ok(_)) => format!("{summary}, an untaken discard so that llvmpipe never takes it as opaque"),
        Some(Err(e)) => return skipped(&e),
    };
    let out = overlap_shaders::assemble(&module);
    let rewrite_us = started.elapsed().as_micros();
    let validating = std::time::Instant::now();
    let strategy = match kind {
        ModuleKind::Ordered { .. } => "ordered".to_string(),
        ModuleKind::Locked { .. } if il.strategy == InterlockStrategy::Ordered => "spinlock".to_string(),
        _ => il.strategy.to_string(),
    };
    if !checked_output(data, &format!("the {strategy} rewrite"), code, &out) {
        // The output is invalid: the input goes down (and was checked there
        // against validation too, so a density-map variant is not checked again).
        return None;
    }
    if log.enabled(LogLevel::Debug) {
        let modes: Vec<String> =
            interlock::modes(&overlap_shaders::parse(code).ok()?).iter().map(|m| m.to_string()).collect();
        let validate_us = validating.elapsed().as_micros();
        log.debug(
            id::SHADER_REWRITTEN,
            &format!("{strategy}: {} ({summary}; rewrite_us={rewrite_us} validate_us={validate_us})", modes.join(", ")),
        );
    }
    Some(Rewritten { words: out, kind })
}

/// `vkCreateShaderModule`: the interlock rewrite, then the notes of the
/// 1x1 rate, the linker and the spinlock.
pub fn create_shader_module(_: &DeviceCore, data: &DeviceData, a: args::CreateShaderModule) -> vk::Result {
    let ci = a.create_info();
    // SAFETY: VUID-VkShaderModuleCreateInfo-pCode-parameter: `pCode` holds `codeSize` bytes, alive for this call.
    let code = unsafe { words(ci.p_code, ci.code_size) };
    let rewritten = rewrite(data, code);
    let r = match &rewritten {
        Some(w) => {
            let mut copy = *ci;
            copy.code_size = w.words.len() * 4;
            copy.p_code = w.words.as_ptr();
            let r = a.with_create_info(&copy).next();
            if let (vk::Result::SUCCESS, Some(s)) = (r, &data.reserved) {
                // SAFETY: the call down succeeded.
                s.modules.lock().insert(unsafe { a.written_shader_module() }, w.kind);
            }
            r
        }
        None => a.next(),
    };
    if r == vk::Result::SUCCESS {
        // SAFETY: the call down succeeded.
        let module = unsafe { a.written_shader_module() };
        // Judged on the application's code, which still declares interlock.
        if let Some(s) = &data.shading_rate {
            s.note_module(module, code);
        }
        // The linker works on what the driver got.
        if let Some(v) = &data.varyings {
            v.note_module(module, rewritten.as_ref().map(|w| &w.words[..]).unwrap_or(code));
        }
    }
    r
}

/// The stages of one pipeline, rewritten where a stage carries its module
/// inline (`VkShaderModuleCreateInfo` in the stage's `pNext`).
struct RewrittenStages<'a> {
    /// The application's stages (borrowing what they borrow), with the
    /// rewritten ones pointing at `_chains`.
    stages: Vec<vk::PipelineShaderStageCreateInfo<'a>>,
    /// What the rewrite made of each stage (`None`: not rewritten).
    kinds: Vec<Option<ModuleKind>>,
    _chains: Vec<Chain>,
    _code: Vec<Vec<u32>>,
}

/// # Safety
/// `stages` are valid stage create infos (VUID-VkGraphicsPipelineCreateInfo-pStages-06600):
/// their `pNext` chains are valid and an inline `VkShaderModuleCreateInfo`
/// holds `codeSize` bytes of code.
unsafe fn rewrite_stages<'a>(
    data: &DeviceData,
    stages: &[vk::PipelineShaderStageCreateInfo<'a>],
) -> Option<RewrittenStages<'a>> {
    let mut out: Option<RewrittenStages> = None;
    for (i, stage) in stages.iter().enumerate() {
        if stage.module != vk::ShaderModule::null() {
            continue;
        }
        // SAFETY: VUID-VkPipelineShaderStageCreateInfo-pNext-pNext (the
        // caller's guarantee): the stage's chain is valid; an inline module's
        // `pCode` holds `codeSize` bytes (VUID-VkShaderModuleCreateInfo-pCode-parameter).
        let Some(inline) = (unsafe { pnext::find::<vk::ShaderModuleCreateInfo>(stage.p_next) }) else {
            continue;
        };
        // SAFETY: as above (VUID-VkShaderModuleCreateInfo-pCode-parameter).
        let Some(Rewritten { words: code, kind }) = rewrite(data, unsafe { words(inline.p_code, inline.code_size) })
        else {
            continue;
        };
        // SAFETY: VUID-VkPipelineShaderStageCreateInfo-pNext-pNext: the chain is valid.
        let copied = unsafe { Chain::copy(stage.p_next) };
        let skipped = |e| format!("an inline pipeline stage module is passed down unchanged: {e}");
        let Some(mut chain) = copied.map_err(|e| data.log().warn(id::SHADER_SKIPPED, &skipped(e))).ok() else {
            continue;
        };
        let m = chain.get_mut::<vk::ShaderModuleCreateInfo>().expect("copied");
        m.code_size = code.len() * 4;
        m.p_code = code.as_ptr();
        let r = out.get_or_insert_with(|| RewrittenStages {
            stages: stages.to_vec(),
            kinds: vec![None; stages.len()],
            _chains: Vec::new(),
            _code: Vec::new(),
        });
        r.kinds[i] = Some(kind);
        r.stages[i].p_next = chain.head();
        r._chains.push(chain);
        r._code.push(code);
    }
    out
}

/// `vkCreateGraphicsPipelines`: inline modules rewritten, the 1x1 rate
/// forced, the varyings linked; the spinlock and the 1x1 rate note the
/// pipelines made.
pub fn create_graphics_pipelines(_: &DeviceCore, data: &DeviceData, a: args::CreateGraphicsPipelines) -> vk::Result {
    let infos_in = a.create_infos();
    if (data.interlock.is_none() && data.shading_rate.is_none() && data.varyings.is_none()) || infos_in.is_empty() {
        return a.next();
    }
    let mut rewritten: Vec<Option<RewrittenStages>> = Vec::with_capacity(infos_in.len());
    for info in infos_in {
        let stages = if info.stage_count == 0 || info.p_stages.is_null() {
            &[][..]
        } else {
            // SAFETY: VUID-VkGraphicsPipelineCreateInfo-pStages-06600: a
            // non-null `pStages` points at `stageCount` valid stage infos.
            unsafe { std::slice::from_raw_parts(info.p_stages, info.stage_count as usize) }
        };
        // SAFETY: the stages are valid (VUID-VkGraphicsPipelineCreateInfo-pStages-06600).
        rewritten.push(unsafe { rewrite_stages(data, stages) });
    }
    let inline: Vec<Vec<Option<ModuleKind>>> =
        rewritten.iter().map(|r| r.as_ref().map(|r| r.kinds.clone()).unwrap_or_default()).collect();
    if data.reserved.is_none()
        && data.shading_rate.is_none()
        && data.varyings.is_none()
        && rewritten.iter().all(Option::is_none)
    {
        return a.next();
    }
    let mut copies: Vec<vk::GraphicsPipelineCreateInfo> = infos_in
        .iter()
        .zip(&rewritten)
        .map(|(info, r)| {
            let mut c = *info;
            if let Some(r) = r {
                c.p_stages = r.stages.as_ptr();
            }
            c
        })
        .collect();
    // The architecture's 1x1 rate for interlock pipelines (judged on the
    // application's stages, which still declare interlock).
    let mut forced = (Vec::new(), vec![false; copies.len()]);
    if let Some(s) = &data.shading_rate {
        let mut originals: Vec<vk::GraphicsPipelineCreateInfo> = infos_in.to_vec();
        // SAFETY: VUID-vkCreateGraphicsPipelines-pCreateInfos-parameter:
        // `originals` are copies of the application's valid create infos.
        forced = unsafe { s.force_static(data, &mut originals) };
        for (c, o) in copies.iter_mut().zip(&originals) {
            c.p_next = o.p_next;
        }
    }
    let linked = match &data.varyings {
        // SAFETY: VUID-vkCreateGraphicsPipelines-pCreateInfos-parameter:
        // `copies` are the valid create infos with stages that point into
        // `rewritten` (alive until after the call down).
        Some(v) => unsafe { crate::link::link_pipelines(data, v, &mut copies) },
        None => Default::default(),
    };
    let r = a.with_create_infos(&copies).next();
    if let (Some(v), true) = (&data.varyings, r.as_raw() >= 0) {
        // SAFETY: the call down wrote every handle (VK_NULL_HANDLE where one failed).
        let made = unsafe { a.written_pipelines() };
        for (info, pipeline) in copies.iter().zip(made) {
            if info.flags.contains(vk::PipelineCreateFlags::LIBRARY_KHR) && *pipeline != vk::Pipeline::null() {
                // SAFETY: as above: the create info `pipeline` was made from.
                unsafe { v.note_library(data, info, *pipeline) };
            }
        }
    }
    linked.finish(data);
    // SAFETY: where the result is not an error, the call down wrote every
    // handle (a failed one as VK_NULL_HANDLE).
    let pipelines = || unsafe { a.written_pipelines() };
    if let (Some(s), true) = (&data.shading_rate, r.as_raw() >= 0) {
        s.note_pipelines(pipelines(), &forced.1);
    }
    drop(forced);
    if let (Some(s), true) = (&data.reserved, r.as_raw() >= 0) {
        // Failed entries are VK_NULL_HANDLE and skipped.
        // SAFETY: `infos_in` and `pipelines()` are the arrays of a successful
        // vkCreateGraphicsPipelines (the function's contract).
        unsafe { crate::interlock::reserved::note_pipelines(data, s, infos_in, &inline, pipelines()) };
    }
    r
}

/// `vkCreateShadersEXT`: SPIR-V code rewritten, a linked set's varyings
/// linked (`link::link_shader_objects`), set layouts extended under the
/// spinlock, locked fragment shaders noted.
pub fn create_shaders_ext(_: &DeviceCore, data: &DeviceData, a: args::CreateShadersEXT) -> vk::Result {
    if data.next_create_shaders.is_none() {
        return vk::Result::ERROR_EXTENSION_NOT_PRESENT;
    }
    let infos_in = a.create_infos();
    if infos_in.is_empty() {
        return a.next();
    }
    let mut code: Vec<Option<Vec<u32>>> = Vec::with_capacity(infos_in.len());
    let mut kinds: Vec<Option<ModuleKind>> = Vec::with_capacity(infos_in.len());
    for info in infos_in {
        let spirv = info.code_type == vk::ShaderCodeTypeEXT::SPIRV && !info.p_code.is_null();
        let r = if spirv {
            // SAFETY: VUID-VkShaderCreateInfoEXT-pCode-parameter: `pCode`
            // holds `codeSize` bytes; SPIR-V code is aligned to 4 bytes
            // (VUID-VkShaderCreateInfoEXT-pCode-08493).
            rewrite(data, unsafe { words(info.p_code as *const u32, info.code_size) })
        } else {
            None
        };
        kinds.push(r.as_ref().map(|r| r.kind));
        code.push(r.map(|r| r.words));
    }
    // Under the spinlock every shader object's set layouts are extended
    // like pipeline layouts (linked shaders must agree), and locked ones
    // get a pipeline layout to bind the lock set with.
    let spin = data.reserved.as_ref();
    if spin.is_none() && data.varyings.is_none() && code.iter().all(Option::is_none) {
        return a.next();
    }
    let mut set_layouts: Vec<Option<Vec<vk::DescriptorSetLayout>>> = Vec::with_capacity(infos_in.len());
    for (info, c) in infos_in.iter().zip(&code) {
        // SAFETY: VUID-VkShaderCreateInfoEXT-pSetLayouts-parameter: a non-zero
        // `setLayoutCount` comes with that many valid set layouts.
        let extended = spin.and_then(|s| unsafe {
            crate::interlock::reserved::extend_set_layouts(s, info.set_layout_count, info.p_set_layouts)
        });
        if c.is_some() && spin.is_some() && extended.is_none() {
            data.log().error(
                id::LAYOUT_TOO_MANY_SETS,
                "vkCreateShadersEXT: an interlock shader uses the set reserved for the locks",
            );
            return vk::Result::ERROR_INITIALIZATION_FAILED;
        }
        set_layouts.push(extended);
    }
    let mut copies: Vec<vk::ShaderCreateInfoEXT> = infos_in
        .iter()
        .zip(&code)
        .zip(&set_layouts)
        .map(|((info, c), layouts)| {
            let mut copy = *info;
            if let Some(c) = c {
                copy.code_size = c.len() * 4;
                copy.p_code = c.as_ptr() as *const c_void;
            }
            if let Some(l) = layouts {
                copy.set_layout_count = l.len() as u32;
                copy.p_set_layouts = l.as_ptr();
            }
            copy
        })
        .collect();
    // SAFETY: `copies` are the valid create infos, their arrays alive in
    // `infos_in`, `code` and `set_layouts` until after the call down.
    let _linked = data.varyings.as_ref().map(|v| unsafe { crate::link::link_shader_objects(data, v, &mut copies) });
    let r = a.with_create_infos(&copies).next();
    if let (Some(s), vk::Result::SUCCESS) = (spin, r) {
        // SAFETY: the call down succeeded.
        let shaders = unsafe { a.written_shaders() };
        let mut noted = Ok(());
        for ((shader, copy), k) in shaders.iter().zip(&copies).zip(&kinds) {
            let kind = match k {
                // Whether its draws are ordered is decided when it is bound,
                // from its partners (`spinlock::cmd_bind_shaders`); the
                // rasterization state is dynamic, so keys are merged.
                Some(ModuleKind::Ordered { early_fragment_tests, .. }) => {
                    PipelineKind::Ordered { order: Ok(()), merge: true, early: *early_fragment_tests }
                }
                Some(ModuleKind::Locked { .. }) => PipelineKind::Locked,
                Some(vertex @ ModuleKind::Vertex { .. }) if copy.stage == vk::ShaderStageFlags::VERTEX => {
                    s.note_vertex_object(*shader, *vertex);
                    continue;
                }
                _ => continue,
            };
            if noted.is_ok() && copy.stage == vk::ShaderStageFlags::FRAGMENT {
                // SAFETY: `copy` is the create info `shader` was made from
                // (its arrays live in `copies`, `code` and `set_layouts`).
                noted = unsafe { s.note_shader(&data.fns, *shader, copy, kind, &data.settings().debug_fail) };
            }
        }
        if let Err(e) = noted {
            // A locked shader without its layout could not have its lock set bound: the creation fails as the
            // driver's would have, and nothing of it stays.
            data.log().error(
                id::SPINLOCK_INIT,
                &format!("vkCreateShadersEXT: the lock's pipeline layout cannot be made ({e:?}); the creation fails"),
            );
            for shader in shaders {
                // SAFETY: the shaders just made by the call down, which the application has not seen, and the
                // layouts the layer made for them: nothing uses them (VUID-vkDestroyShaderEXT-shader-08482).
                unsafe {
                    s.forget_shader(&data.fns, *shader);
                    if let Some(so) = &data.shader_object {
                        (so.destroy_shader_ext)(a.device(), *shader, a.p_allocator());
                    }
                }
            }
            // SAFETY: VUID-vkCreateShadersEXT-pShaders-parameter: `createInfoCount` writable handles.
            unsafe { std::slice::from_raw_parts_mut(a.p_shaders(), infos_in.len()) }.fill(vk::ShaderEXT::null());
            return e;
        }
    }
    r
}

//! The varying linker at pipeline creation (`overlap_shaders::varyings`).
//!
//! Modules' SPIR-V is kept from `vkCreateShaderModule` (as sent to the
//! driver). At `vkCreateGraphicsPipelines`, the fragment shader and its
//! producer — the last pre-rasterization stage: geometry, else tessellation
//! evaluation, else vertex — get linked when both are in the create info's
//! stages, as shader modules or inline (`VkShaderModuleCreateInfo` in the
//! stage's `pNext`). A linked module stage goes down as a temporary module,
//! destroyed once the pipeline exists; a linked inline stage goes down inline,
//! in a copy of its chain. Anything else — libraries, mesh pipelines, a link
//! or validation failure — keeps the original stages.

use crate::device::DeviceCore;
use crate::id;
use crate::settings::LogLevel;
use ash::vk;
use overlap_shaders::varyings::{link_with, Level, LinkEnv};
use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::Arc;

pub struct Varyings {
    pub level: Level,
    /// Whether uniform expressions move into the fragment shader
    /// (`varyings_uniforms`).
    pub uniforms: bool,
    modules: Mutex<HashMap<vk::ShaderModule, Arc<Vec<u32>>>>,
    /// Link results by the content of the pair: apps build many pipelines
    /// from one shader pair (different blend, depth or render pass state),
    /// and linking plus validating costs milliseconds.
    cache: Mutex<HashMap<u64, Cached>>,
    /// Per descriptor set layout: (binding, type, stages) of its bindings.
    set_layouts: Mutex<HashMap<vk::DescriptorSetLayout, Vec<(u32, vk::DescriptorType, vk::ShaderStageFlags)>>>,
    /// Per pipeline layout: what its fragment stage may read.
    layouts: Mutex<HashMap<vk::PipelineLayout, Arc<LinkEnv>>>,
}

/// At most this many pairs are remembered; the cache is emptied when full.
const CACHE_PAIRS: usize = 256;

struct Cached {
    producer: Arc<Vec<u32>>,
    consumer: Arc<Vec<u32>>,
    env: Arc<LinkEnv>,
    /// `None`: linking gains nothing or failed; the originals are used.
    outcome: Option<Arc<Outcome>>,
}

/// A linked pair and what the linker did, for the debug log.
struct Outcome {
    producer: Vec<u32>,
    consumer: Vec<u32>,
    summary: String,
    link_us: u128,
    validate_us: u128,
}

impl Varyings {
    pub fn new(level: Level, uniforms: bool) -> Varyings {
        Varyings {
            level,
            uniforms,
            modules: Default::default(),
            cache: Default::default(),
            set_layouts: Default::default(),
            layouts: Default::default(),
        }
    }

    pub fn note_module(&self, module: vk::ShaderModule, code: &[u32]) {
        self.modules.lock().insert(module, Arc::new(code.to_vec()));
    }

    /// # Safety
    /// `info` is a valid create info.
    pub unsafe fn note_set_layout(&self, info: &vk::DescriptorSetLayoutCreateInfo, layout: vk::DescriptorSetLayout) {
        // SAFETY: VUID-VkDescriptorSetLayoutCreateInfo-pBindings-parameter:
        // `bindingCount` valid bindings (`info` is valid, the caller's guarantee).
        let bindings = unsafe { crate::ffi::slice(info.p_bindings, info.binding_count) }
            .iter()
            .map(|b| (b.binding, b.descriptor_type, b.stage_flags))
            .collect();
        self.set_layouts.lock().insert(layout, bindings);
    }

    /// Remembers which uniform buffers and push constants the fragment stage
    /// of `layout` may read.
    ///
    /// # Safety
    /// `info` is a valid create info.
    pub unsafe fn note_pipeline_layout(&self, info: &vk::PipelineLayoutCreateInfo, layout: vk::PipelineLayout) {
        let mut env = LinkEnv::default();
        // SAFETY: VUID-VkPipelineLayoutCreateInfo-pSetLayouts-parameter:
        // `setLayoutCount` handles (`info` is valid, the caller's guarantee).
        let sets = unsafe { crate::ffi::slice(info.p_set_layouts, info.set_layout_count) };
        let known = self.set_layouts.lock();
        for (set, l) in sets.iter().enumerate() {
            for (binding, ty, stages) in known.get(l).map(|v| &v[..]).unwrap_or(&[]) {
                let ubo =
                    matches!(*ty, vk::DescriptorType::UNIFORM_BUFFER | vk::DescriptorType::UNIFORM_BUFFER_DYNAMIC);
                if ubo && stages.contains(vk::ShaderStageFlags::FRAGMENT) {
                    env.uniform_buffers.insert((set as u32, *binding));
                }
            }
        }
        // SAFETY: VUID-VkPipelineLayoutCreateInfo-pPushConstantRanges-parameter:
        // `pushConstantRangeCount` valid ranges.
        let ranges = unsafe { crate::ffi::slice(info.p_push_constant_ranges, info.push_constant_range_count) };
        for r in ranges {
            if r.stage_flags.contains(vk::ShaderStageFlags::FRAGMENT) {
                env.push_constants.push((r.offset, r.size));
            }
        }
        self.layouts.lock().insert(layout, Arc::new(env));
    }

    fn env(&self, layout: vk::PipelineLayout) -> Arc<LinkEnv> {
        if !self.uniforms {
            return Arc::default();
        }
        self.layouts.lock().get(&layout).cloned().unwrap_or_default()
    }

    pub fn forget(&self, module: vk::ShaderModule) {
        self.modules.lock().remove(&module);
    }

    fn code(&self, module: vk::ShaderModule) -> Option<Arc<Vec<u32>>> {
        self.modules.lock().get(&module).cloned()
    }

    /// The cached outcome for this pair: `Some(outcome)` on a hit.
    fn cached(&self, key: u64, producer: &[u32], consumer: &[u32], env: &LinkEnv) -> Option<Option<Arc<Outcome>>> {
        let cache = self.cache.lock();
        let hit = cache.get(&key)?;
        // A hash collision must not hand out another pair's shaders.
        (hit.producer[..] == *producer && hit.consumer[..] == *consumer && *hit.env == *env)
            .then(|| hit.outcome.clone())
    }

    fn remember(
        &self,
        key: u64,
        producer: Arc<Vec<u32>>,
        consumer: Arc<Vec<u32>>,
        env: Arc<LinkEnv>,
        outcome: Option<Arc<Outcome>>,
    ) {
        let mut cache = self.cache.lock();
        if cache.len() >= CACHE_PAIRS {
            cache.clear();
        }
        cache.insert(key, Cached { producer, consumer, env, outcome });
    }
}

/// The cache key of a pair and what its pipeline layout lets the fragment
/// stage read (the level is fixed per device, as is the cache).
fn pair_key(producer: &[u32], consumer: &[u32], env: &LinkEnv) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    producer.hash(&mut h);
    consumer.hash(&mut h);
    let mut ubos: Vec<&(u32, u32)> = env.uniform_buffers.iter().collect();
    ubos.sort();
    ubos.hash(&mut h);
    env.push_constants.hash(&mut h);
    h.finish()
}

/// Links one pair; `None` when the originals should be used.
fn link_pair(dev: &DeviceCore, level: Level, env: &LinkEnv, vcode: &[u32], fcode: &[u32]) -> Option<Outcome> {
    let started = std::time::Instant::now();
    let (mut p, mut c) = (overlap_shaders::parse(vcode).ok()?, overlap_shaders::parse(fcode).ok()?);
    let log = dev.log();
    let report = match link_with(&mut p, &mut c, level, env) {
        Ok(r) => r,
        Err(e) => {
            log.log_once(
                LogLevel::Warn,
                id::VARYINGS_SKIPPED,
                &e.to_string(),
                &format!("varying linking skipped: {e}"),
            );
            return None;
        }
    };
    if report.locations_after == report.locations_before && report.components_after == report.components_before {
        return None; // nothing to gain
    }
    let (pw, cw) = (overlap_shaders::assemble(&p), overlap_shaders::assemble(&c));
    let link_us = started.elapsed().as_micros();
    let validating = std::time::Instant::now();
    if dev.settings().validate_shaders {
        let env = crate::spirv::target_env(dev);
        let checked = overlap_shaders::validate(&pw, env).and_then(|_| overlap_shaders::validate(&cw, env));
        if let Err(e @ overlap_shaders::Error::Invalid(_)) = checked {
            log.error(
                id::SHADER_INVALID_OUTPUT,
                &format!("the linked pair fails validation ({e}); the originals are used"),
            );
            return None;
        }
    }
    let summary = format!(
        "locations {} -> {}, components {} -> {} (dead {:?}, constants {:?}, uniforms {:?}, duplicates {:?}, sums moved {:?}, constant ops moved {:?}, narrowed {:?}, packed {:?}",
        report.locations_before,
        report.locations_after,
        report.components_before,
        report.components_after,
        report.removed_dead,
        report.propagated_constants,
        report.propagated_uniforms,
        report.deduplicated,
        report.moved_sums,
        report.moved_constant_ops,
        report.narrowed,
        report.packed,
    );
    Some(Outcome { producer: pw, consumer: cw, summary, link_us, validate_us: validating.elapsed().as_micros() })
}

/// Linked stage arrays for some pipelines, and the temporary modules to
/// destroy after `vkCreateGraphicsPipelines`. The stage arrays are copies of
/// the application's, so they borrow what it passed for `'a` (entry point
/// names, specialization info, `pNext`).
#[derive(Default)]
pub struct Linked<'a> {
    stages: Vec<Vec<vk::PipelineShaderStageCreateInfo<'a>>>,
    pub temporary: Vec<vk::ShaderModule>,
    /// The copied chains of linked inline stages, and the linked code they
    /// point at.
    chains: Vec<crate::pnext::Chain>,
    outcomes: Vec<Arc<Outcome>>,
}

/// The code of a stage as the driver gets it: its module's (noted at
/// `vkCreateShaderModule`), or the inline `VkShaderModuleCreateInfo`'s.
///
/// # Safety
/// `stage` is a valid stage create info (its chain valid, inline code of
/// `codeSize` bytes).
unsafe fn stage_code(v: &Varyings, stage: &vk::PipelineShaderStageCreateInfo<'_>) -> Option<Arc<Vec<u32>>> {
    if stage.module != vk::ShaderModule::null() {
        return v.code(stage.module);
    }
    // SAFETY: VUID-VkPipelineShaderStageCreateInfo-pNext-pNext: the stage's
    // chain is valid (the caller's guarantee).
    let inline = unsafe { crate::pnext::find::<vk::ShaderModuleCreateInfo>(stage.p_next) }?;
    // SAFETY: VUID-VkShaderModuleCreateInfo-pCode-parameter: `pCode` holds
    // `codeSize` bytes, alive for this call.
    let code = unsafe { crate::spirv::words(inline.p_code, inline.code_size) };
    (!code.is_empty()).then(|| Arc::new(code.to_vec()))
}

/// Points `stage` at `code`: a temporary module for a module stage, a copy of
/// its chain with the linked code for an inline stage.
///
/// # Safety
/// `stage` is a valid stage create info; `outcome` stays alive (in `out`)
/// until the pipeline is created.
unsafe fn point_at(
    dev: &DeviceCore,
    stage: &mut vk::PipelineShaderStageCreateInfo<'_>,
    code: &[u32],
    out: &mut Linked<'_>,
) -> Result<(), String> {
    if stage.module != vk::ShaderModule::null() {
        let m = module(dev, code).map_err(|e| format!("cannot create a linked module ({e:?})"))?;
        out.temporary.push(m);
        stage.module = m;
        return Ok(());
    }
    // SAFETY: VUID-VkPipelineShaderStageCreateInfo-pNext-pNext: the chain is valid.
    let mut chain = unsafe { crate::pnext::Chain::copy(stage.p_next) }.map_err(|e| e.to_string())?;
    let m = chain.get_mut::<vk::ShaderModuleCreateInfo>().ok_or("no inline module")?;
    m.code_size = code.len() * 4;
    m.p_code = code.as_ptr();
    stage.p_next = chain.head();
    out.chains.push(chain);
    Ok(())
}

fn module(dev: &DeviceCore, words: &[u32]) -> Result<vk::ShaderModule, vk::Result> {
    crate::guard::injected_failure(&dev.settings().debug_fail, "vkCreateShaderModule")?;
    let info = vk::ShaderModuleCreateInfo::default().code(words);
    let mut m = vk::ShaderModule::null();
    // SAFETY: a valid create info for the device, sent to the next layer:
    // `code` sets pCode and codeSize from the live slice `words`
    // (VUID-VkShaderModuleCreateInfo-pCode-parameter), `m` is a live output
    // (VUID-vkCreateShaderModule-pShaderModule-parameter).
    let r = unsafe { (dev.fns.fp_v1_0().create_shader_module)(dev.handle, &info, std::ptr::null(), &mut m) };
    r.result_with_success(m)
}

/// Links the vertex→fragment interface of each eligible pipeline in
/// `infos`, pointing its stages at linked temporary modules.
///
/// # Safety
/// `infos` are valid create infos of `dev`.
pub unsafe fn link_pipelines<'a>(
    dev: &DeviceCore,
    v: &Varyings,
    infos: &mut [vk::GraphicsPipelineCreateInfo<'a>],
) -> Linked<'a> {
    let mut out = Linked::default();
    for info in infos.iter_mut() {
        if info.stage_count < 2
            || info.flags.contains(vk::PipelineCreateFlags::LIBRARY_KHR)
            // SAFETY: a valid create info has a valid chain
            // (VUID-VkGraphicsPipelineCreateInfo-pNext-pNext).
            || unsafe { crate::pnext::find::<vk::PipelineLibraryCreateInfoKHR>(info.p_next) }.is_some()
        {
            continue;
        }
        // SAFETY: VUID-VkGraphicsPipelineCreateInfo-pStages-06600: a pipeline
        // with shader stages (not a library, `stageCount` ≥ 2) points pStages
        // at `stageCount` valid stage create infos.
        let stages = unsafe { std::slice::from_raw_parts(info.p_stages, info.stage_count as usize) };
        // The fragment shader's producer: the last pre-rasterization stage.
        let find = |s: vk::ShaderStageFlags| stages.iter().position(|x| x.stage == s);
        let producer = find(vk::ShaderStageFlags::GEOMETRY)
            .or_else(|| find(vk::ShaderStageFlags::TESSELLATION_EVALUATION))
            .or_else(|| find(vk::ShaderStageFlags::VERTEX));
        let (Some(vs), Some(fs)) = (producer, find(vk::ShaderStageFlags::FRAGMENT)) else {
            continue;
        };
        // SAFETY: the stages are valid (pStages-06600 above).
        let (Some(vcode), Some(fcode)) = (unsafe { stage_code(v, &stages[vs]) }, unsafe { stage_code(v, &stages[fs]) })
        else {
            continue;
        };
        let env = v.env(info.layout);
        let key = pair_key(&vcode, &fcode, &env);
        let (outcome, cached) = match v.cached(key, &vcode, &fcode, &env) {
            Some(hit) => (hit, true),
            None => {
                let fresh = link_pair(dev, v.level, &env, &vcode, &fcode).map(Arc::new);
                v.remember(key, vcode, fcode, env, fresh.clone());
                (fresh, false)
            }
        };
        let Some(outcome) = outcome else { continue };
        let mut copy: Vec<vk::PipelineShaderStageCreateInfo<'a>> = stages.to_vec();
        let (made, chains) = (out.temporary.len(), out.chains.len());
        // SAFETY: the stages are valid (pStages-06600); `outcome` is kept in
        // `out` until the pipeline is created.
        let pointed = unsafe { point_at(dev, &mut copy[vs], &outcome.producer, &mut out) }
            .and_then(|_| unsafe { point_at(dev, &mut copy[fs], &outcome.consumer, &mut out) });
        if let Err(e) = pointed {
            dev.log().log_once(
                LogLevel::Warn,
                id::VARYINGS_SKIPPED,
                "linked stages",
                &format!("cannot pass the linked stages down ({e}); pipelines are created unlinked"),
            );
            for m in out.temporary.drain(made..) {
                // SAFETY: made by `module` for this call and used by nothing
                // yet (VUID-vkDestroyShaderModule-shaderModule-parameter).
                unsafe { (dev.fns.fp_v1_0().destroy_shader_module)(dev.handle, m, std::ptr::null()) };
            }
            out.chains.truncate(chains);
            continue;
        }
        out.outcomes.push(outcome.clone());
        info.p_stages = copy.as_ptr();
        out.stages.push(copy);
        let log = dev.log();
        if log.enabled(LogLevel::Debug) {
            let cost = if cached {
                "cached".to_string()
            } else {
                format!("link_us={} validate_us={}", outcome.link_us, outcome.validate_us)
            };
            log.debug(id::VARYINGS_LINKED, &format!("{}; {cost})", outcome.summary));
        }
    }
    out
}

impl Linked<'_> {
    /// Destroys the temporary modules.
    pub fn finish(self, dev: &DeviceCore) {
        for m in self.temporary {
            // SAFETY: created by `module` for this call and used only by it; a
            // shader module may be destroyed while pipelines created from it
            // are in use (vkDestroyShaderModule), and pipeline creation has returned.
            unsafe { (dev.fns.fp_v1_0().destroy_shader_module)(dev.handle, m, std::ptr::null()) };
        }
    }
}

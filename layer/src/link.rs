//! The varying linker at pipeline creation (`overlap_shaders::varyings`).
//!
//! Modules' SPIR-V is kept from `vkCreateShaderModule` (as sent to the
//! driver). At `vkCreateGraphicsPipelines`, the create info's stages — as
//! shader modules or inline (`VkShaderModuleCreateInfo` in the stage's
//! `pNext`) — form a chain (vertex, tessellation control and evaluation,
//! geometry, fragment: those present, in that order), and every adjacent
//! pair of it is linked, the last pair first (`link_stages`); only the
//! fragment stage's environment is known (uniform expressions move into it
//! alone). A linked module stage goes down as a temporary module,
//! destroyed once the pipeline exists; a linked inline stage goes down inline,
//! in a copy of its chain. Anything else — libraries, mesh pipelines, a link
//! or validation failure — keeps the original stages. Shader objects made as
//! a linked set are linked the same way (`shader_object`).
//!
//! Link results are cached by content: in memory for the device, and on disk
//! (`link_cache`, `crate::disk_cache`) for later processes. A disk entry
//! holds a pair that was linked and validated (or found not worth linking)
//! under exactly the key's settings, so a hit is used without either.

use crate::device::DeviceCore;
use crate::disk_cache::DiskCache;
use crate::id;
use crate::settings::LogLevel;
use ash::vk;
use overlap_shaders::varyings::{link_stages, Level, LinkEnv, PairReport, Report};
use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

mod library;
mod shader_object;

pub use shader_object::{link_shader_objects, LinkedShaders};

pub struct Linker {
    level: Level,
    /// Whether uniform expressions move into the fragment shader
    /// (`varyings_uniforms`).
    uniforms: bool,
    modules: Mutex<HashMap<vk::ShaderModule, Arc<Vec<u32>>>>,
    /// Link results by the content of the pair: apps build many pipelines
    /// from one shader pair (different blend, depth or render pass state),
    /// and linking plus validating costs milliseconds.
    cache: Mutex<HashMap<u64, Cached>>,
    /// Per descriptor set layout: (binding, type, stages) of its bindings.
    set_layouts: Mutex<HashMap<vk::DescriptorSetLayout, Vec<(u32, vk::DescriptorType, vk::ShaderStageFlags)>>>,
    /// Per pipeline layout: what its fragment stage may read.
    layouts: Mutex<HashMap<vk::PipelineLayout, Arc<LinkEnv>>>,
    /// The cache on disk, opened with the device and read ahead from then
    /// (`None`: `link_cache=off` or no cache folder).
    disk: Option<DiskCache>,
    /// The words every disk key starts with (the layer version, linker
    /// revision, level, target environment and validation).
    key_context: OnceLock<Vec<u32>>,
    /// The graphics pipeline libraries remembered, by handle (`library`).
    libraries: Mutex<HashMap<vk::Pipeline, Arc<library::Library>>>,
}

/// The bound of the cache on disk.
const DISK_BYTES: u64 = 64 << 20;

/// The newest entries up to this many bytes are read ahead from the first
/// lookup on (a few hundred pipelines' worth).
const READ_AHEAD_BYTES: u64 = 8 << 20;

/// Part of every disk key, with the layer's version: bump it whenever the
/// linker (`overlap_shaders::varyings`, what it calls, or `link_pair` here)
/// changes what a link produces, so that caches written by an older build of
/// the same version are not used.
const LINKER_REVISION: u32 = 4;

/// At most this many pairs are remembered; the cache is emptied when full.
const CACHE_PAIRS: usize = 256;

struct Cached {
    /// The chain's stages, in pipeline order.
    codes: Vec<Arc<Vec<u32>>>,
    env: Arc<LinkEnv>,
    /// `None`: linking gains nothing or failed; the originals are used.
    outcome: Option<Arc<Outcome>>,
}

/// A linked chain of stages (in pipeline order) and what the linker did, for
/// the debug log.
struct Outcome {
    stages: Vec<Vec<u32>>,
    summary: String,
    link_us: u128,
    validate_us: u128,
}

impl Linker {
    /// The linker of a device; `link_cache`: whether linked chains are kept
    /// on disk (read ahead from the first lookup on: a device that links
    /// nothing reads nothing).
    /// The linker of a new device, where the plan links varyings: uniform
    /// propagation as `varyings_uniforms` asks (`auto`: everywhere but on
    /// llvmpipe, where it measured slower, docs/BENCHMARKS.md).
    pub fn for_device(c: &crate::device::Creation) -> Option<Linker> {
        let uniforms = crate::settings::switch(c.inst.settings.varyings_uniforms, !c.facts.is_llvmpipe());
        c.plan.varyings_level().map(|l| Linker::new(l, uniforms, c.inst.settings.link_cache))
    }

    pub fn new(level: Level, uniforms: bool, link_cache: bool) -> Linker {
        let disk = link_cache
            .then(|| crate::disk_cache::default_dir("linked"))
            .flatten()
            .map(|d| DiskCache::new(d, DISK_BYTES));
        Linker {
            level,
            uniforms,
            modules: Default::default(),
            cache: Default::default(),
            set_layouts: Default::default(),
            layouts: Default::default(),
            disk,
            key_context: OnceLock::new(),
            libraries: Default::default(),
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
        // SAFETY: VUID-VkPipelineLayoutCreateInfo-pSetLayouts-parameter:
        // `setLayoutCount` handles (`info` is valid, the caller's guarantee).
        let sets = unsafe { crate::ffi::slice(info.p_set_layouts, info.set_layout_count) };
        // SAFETY: VUID-VkPipelineLayoutCreateInfo-pPushConstantRanges-parameter:
        // `pushConstantRangeCount` valid ranges.
        let ranges = unsafe { crate::ffi::slice(info.p_push_constant_ranges, info.push_constant_range_count) };
        self.layouts.lock().insert(layout, Arc::new(self.env_from(sets, ranges)));
    }

    /// What a fragment stage using these set layouts and push constant
    /// ranges may read: the uniform buffers visible to it, its push
    /// constant ranges (the pipeline layouts' and the shader objects' rule).
    fn env_from(&self, sets: &[vk::DescriptorSetLayout], ranges: &[vk::PushConstantRange]) -> LinkEnv {
        let mut env = LinkEnv::default();
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
        for r in ranges {
            if r.stage_flags.contains(vk::ShaderStageFlags::FRAGMENT) {
                env.push_constants.push((r.offset, r.size));
            }
        }
        env
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

    /// The cached outcome for this chain: `Some(outcome)` on a hit.
    fn cached(&self, key: u64, codes: &[Arc<Vec<u32>>], env: &LinkEnv) -> Option<Option<Arc<Outcome>>> {
        let cache = self.cache.lock();
        let hit = cache.get(&key)?;
        // A hash collision must not hand out another chain's shaders.
        let same = hit.codes.len() == codes.len() && hit.codes.iter().zip(codes).all(|(a, b)| a[..] == b[..]);
        (same && *hit.env == *env).then(|| hit.outcome.clone())
    }

    fn remember(&self, key: u64, codes: Vec<Arc<Vec<u32>>>, env: Arc<LinkEnv>, outcome: Option<Arc<Outcome>>) {
        let mut cache = self.cache.lock();
        if cache.len() >= CACHE_PAIRS {
            cache.clear();
        }
        cache.insert(key, Cached { codes, env, outcome });
    }
}

/// The cache key of a chain and what its pipeline layout lets the fragment
/// stage read (the level is fixed per device, as is the cache).
fn chain_key(codes: &[Arc<Vec<u32>>], env: &LinkEnv) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    for c in codes {
        c[..].hash(&mut h);
    }
    let mut ubos: Vec<&(u32, u32)> = env.uniform_buffers.iter().collect();
    ubos.sort();
    ubos.hash(&mut h);
    env.push_constants.hash(&mut h);
    h.finish()
}

/// What linking one chain gave.
enum Linking {
    Linked(Outcome),
    /// Nothing to gain: the originals are used (and this is worth caching).
    Nothing,
    /// Linking or validation failed (logged); the originals are used, and
    /// the next process tries again (and logs it again).
    Failed,
}

/// One pair's figures and steps, as the log line gives them.
fn pair_summary(r: &Report) -> String {
    format!(
        "locations {} -> {}, components {} -> {} (dead {:?}, constants {:?}, uniforms {:?}, duplicates {:?}, sums moved {:?}, constant ops moved {:?}, narrowed {:?}, packed {:?}, split {:?}, convergent {:?}, arrays split {:?}",
        r.locations_before,
        r.locations_after,
        r.components_before,
        r.components_after,
        r.removed_dead,
        r.propagated_constants,
        r.propagated_uniforms,
        r.deduplicated,
        r.moved_sums,
        r.moved_constant_ops,
        r.narrowed,
        r.packed,
        r.split,
        r.convergent,
        r.split_arrays,
    )
}

/// The log's account of a chain's links: the last pair's as
/// [`pair_summary`] says it, then each earlier pair's, in linking order
/// (named by its stages, with the inputs found unused, the outputs read back
/// and those kept in place or placed last).
fn chain_summary(reports: &[PairReport]) -> String {
    let mut out = String::new();
    for (k, p) in reports.iter().enumerate() {
        let r = &p.report;
        if k > 0 {
            out += &format!(", then {}->{}: ", p.producer.name(), p.consumer.name());
        }
        out += &pair_summary(r);
        let extra = [("unused inputs", &r.unused_inputs), ("read back", &r.read_back), ("in place", &r.kept_in_place)];
        for (what, v) in extra {
            if !v.is_empty() {
                out += &format!(", {what} {v:?}");
            }
        }
        if !r.placed_last.is_empty() {
            out += &format!(", placed last {:?}", r.placed_last);
        }
    }
    out
}

/// Links one chain of stages (pipeline order); `env`: what the fragment
/// stage, if it is the last, may read.
fn link_chain(dev: &DeviceCore, level: Level, env: &LinkEnv, codes: &[Arc<Vec<u32>>]) -> Linking {
    let started = std::time::Instant::now();
    let Ok(mut modules) = codes.iter().map(|c| overlap_shaders::parse(c)).collect::<Result<Vec<_>, _>>() else {
        return Linking::Failed;
    };
    let log = dev.log();
    // Only the fragment stage's environment is known (the pipeline layout's
    // rule for what a stage may read is per stage; the others get none).
    let mut envs = vec![LinkEnv::default(); modules.len()];
    if let Some(last) = envs.last_mut() {
        *last = env.clone();
    }
    let reports = match link_stages(&mut modules, level, &envs) {
        Ok(r) => r,
        Err(e) => {
            log.log_once(
                LogLevel::Warn,
                id::VARYINGS_SKIPPED,
                &e.to_string(),
                &format!("varying linking skipped: {e}"),
            );
            return Linking::Failed;
        }
    };
    let unchanged = |r: &Report| r.locations_after == r.locations_before && r.components_after == r.components_before;
    if reports.iter().all(|p| unchanged(&p.report)) {
        return Linking::Nothing;
    }
    let words: Vec<Vec<u32>> = modules.iter().map(overlap_shaders::assemble).collect();
    let link_us = started.elapsed().as_micros();
    let validating = std::time::Instant::now();
    // The one gate of every module the layer rewrites (dumped, validated).
    for (code, w) in codes.iter().zip(&words) {
        if !crate::spirv::checked_output(dev, "the varying linker's output", code, w) {
            return Linking::Failed;
        }
    }
    let summary = chain_summary(&reports);
    let validate_us = validating.elapsed().as_micros();
    Linking::Linked(Outcome { stages: words, summary, link_us, validate_us })
}

/// Words of `text`, four bytes each (zero-padded).
fn text_words(text: &str) -> impl Iterator<Item = u32> + '_ {
    text.as_bytes().chunks(4).map(|c| {
        let mut b = [0u8; 4];
        b[..c.len()].copy_from_slice(c);
        u32::from_le_bytes(b)
    })
}

/// The disk key of a chain: everything a link's result depends on — the
/// layer's version and `LINKER_REVISION`, the level, the target environment
/// (validation), `validate_shaders`, what the pipeline layout lets the
/// fragment stage read, and every stage's words.
fn disk_key(v: &Linker, dev: &DeviceCore, env: &LinkEnv, codes: &[Arc<Vec<u32>>]) -> Vec<u32> {
    let context = v.key_context.get_or_init(|| {
        let text = format!(
            "overlap {} linker {LINKER_REVISION} level {:?} target {:?} validate {}",
            env!("CARGO_PKG_VERSION"),
            v.level,
            crate::spirv::target_env(dev),
            dev.settings().validate_shaders,
        );
        std::iter::once(text.len() as u32).chain(text_words(&text)).collect()
    });
    let mut key = Vec::with_capacity(context.len() + 8 + codes.iter().map(|c| c.len() + 1).sum::<usize>());
    key.extend_from_slice(context);
    let mut ubos: Vec<&(u32, u32)> = env.uniform_buffers.iter().collect();
    ubos.sort();
    key.push(ubos.len() as u32);
    key.extend(ubos.iter().flat_map(|(s, b)| [*s, *b]));
    key.push(env.push_constants.len() as u32);
    key.extend(env.push_constants.iter().flat_map(|(o, s)| [*o, *s]));
    key.push(codes.len() as u32);
    for c in codes {
        key.push(c.len() as u32);
        key.extend_from_slice(c);
    }
    key
}

/// A disk entry's payload: `[linked, stages, summary bytes, each stage's
/// words]`, then the stages' words and the summary (an unlinked entry has
/// none of them).
fn encode(outcome: Option<&Outcome>) -> Vec<u32> {
    let Some(o) = outcome else {
        return vec![0, 0, 0];
    };
    let mut w = vec![1, o.stages.len() as u32, o.summary.len() as u32];
    w.extend(o.stages.iter().map(|s| s.len() as u32));
    for s in &o.stages {
        w.extend_from_slice(s);
    }
    w.extend(text_words(&o.summary));
    w
}

/// Most stages a chain has (vertex to fragment).
const MAX_STAGES: usize = 5;

/// The outcome a payload holds (`Ok(None)`: not worth linking), or why it
/// is not one.
fn decode(w: &[u32]) -> Result<Option<Outcome>, &'static str> {
    let [linked, n, s, rest @ ..] = w else {
        return Err("short payload");
    };
    let (n, s) = (*n as usize, *s as usize);
    match linked {
        0 if rest.is_empty() && n == 0 && s == 0 => return Ok(None),
        1 if (2..=MAX_STAGES).contains(&n) && rest.len() >= n => {}
        _ => return Err("payload lengths"),
    }
    let (lens, mut rest) = rest.split_at(n);
    let total: usize = lens.iter().map(|l| *l as usize).sum();
    if rest.len() != total + s.div_ceil(4) {
        return Err("payload lengths");
    }
    let mut stages = Vec::with_capacity(n);
    for l in lens {
        let (stage, tail) = rest.split_at(*l as usize);
        // Every stage is whole SPIR-V: the magic number and a header.
        if stage.len() < 5 || stage[0] != 0x0723_0203 {
            return Err("not SPIR-V");
        }
        stages.push(stage.to_vec());
        rest = tail;
    }
    let bytes: Vec<u8> = rest.iter().flat_map(|w| w.to_le_bytes()).take(s).collect();
    let summary = String::from_utf8(bytes).map_err(|_| "summary")?;
    Ok(Some(Outcome { stages, summary, link_us: 0, validate_us: 0 }))
}

impl Linker {
    fn disk(&self) -> Option<&DiskCache> {
        self.disk.as_ref()
    }
}

fn disk_warning(dev: &DeviceCore, bad: &crate::disk_cache::Bad) {
    let key = match bad {
        crate::disk_cache::Bad::Corrupt(p, _) | crate::disk_cache::Bad::Io(p, _) => p.display().to_string(),
    };
    dev.log().log_once(
        LogLevel::Warn,
        id::LINK_CACHE,
        &key,
        &format!("link cache: {bad}; the entry is ignored and the pair linked again"),
    );
}

/// Where a pair's outcome came from, for the debug log.
enum Source {
    Memory,
    Disk {
        read_us: u128,
    },
    /// Linked now; `stored`: written to the disk cache.
    Linked {
        stored: bool,
    },
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
    /// Final links of libraries sent down as monolithic pipelines.
    monolithic: Vec<library::Monolithic>,
}

/// The code of a stage as the driver gets it: its module's (noted at
/// `vkCreateShaderModule`), or the inline `VkShaderModuleCreateInfo`'s.
///
/// # Safety
/// `stage` is a valid stage create info (its chain valid, inline code of
/// `codeSize` bytes).
unsafe fn stage_code(v: &Linker, stage: &vk::PipelineShaderStageCreateInfo<'_>) -> Option<Arc<Vec<u32>>> {
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

/// Links the stage interfaces of each eligible pipeline in `infos`,
/// pointing its stages at linked temporary modules. A final link
/// of graphics pipeline libraries that asks for link-time optimization goes
/// down as the monolithic pipeline it stands for when that links
/// (`library`); any other final link goes down as it is.
///
/// # Safety
/// `infos` are valid create infos of `dev`.
pub unsafe fn link_pipelines<'a>(
    dev: &DeviceCore,
    v: &Linker,
    infos: &mut [vk::GraphicsPipelineCreateInfo<'a>],
) -> Linked<'a> {
    let mut out = Linked::default();
    let log = dev.log();
    for info in infos.iter_mut() {
        // SAFETY: a valid create info (the caller's guarantee).
        match unsafe { library::final_link(info) } {
            // SAFETY: as above.
            None => _ = unsafe { link_one(dev, v, info, &mut out) },
            Some(false) => log.log_once(
                LogLevel::Debug,
                id::VARYINGS_SKIPPED,
                "fast link",
                "a final link of pipeline libraries without link-time optimization (fast linking) is left unlinked",
            ),
            Some(true) => {
                let built = crate::guard::injected_failure(&dev.settings().debug_fail, "link-libraries")
                    .map_err(|e| format!("{e:?} (debug_fail)"))
                    // SAFETY: a valid create info, a final link.
                    .and_then(|_| unsafe { library::monolithic(v, info) });
                match built {
                    Err(why) => log.debug(
                        id::VARYINGS_SKIPPED,
                        &format!("a final link of pipeline libraries is passed down unlinked: {why}"),
                    ),
                    Ok(m) => {
                        let original = *info;
                        *info = m.info;
                        // SAFETY: `m.info` is a valid monolithic create info
                        // (what `m` owns, and `info`'s chain), alive in `out`.
                        if unsafe { link_one(dev, v, info, &mut out) } {
                            out.monolithic.push(m);
                        } else {
                            *info = original;
                        }
                    }
                }
            }
        }
    }
    out
}

/// Links one pipeline's chain of stages (see `link_pipelines`); true if its stages now
/// point at linked code.
///
/// # Safety
/// `info` is a valid create info of `dev`.
unsafe fn link_one<'a>(
    dev: &DeviceCore,
    v: &Linker,
    info: &mut vk::GraphicsPipelineCreateInfo<'a>,
    out: &mut Linked<'a>,
) -> bool {
    if info.stage_count < 2
        || info.flags.contains(vk::PipelineCreateFlags::LIBRARY_KHR)
        // SAFETY: a valid create info has a valid chain
        // (VUID-VkGraphicsPipelineCreateInfo-pNext-pNext).
        || unsafe { crate::pnext::find::<vk::PipelineLibraryCreateInfoKHR>(info.p_next) }.is_some()
    {
        return false;
    }
    // SAFETY: VUID-VkGraphicsPipelineCreateInfo-pStages-06600: a pipeline
    // with shader stages (not a library, `stageCount` ≥ 2) points pStages
    // at `stageCount` valid stage create infos.
    let stages = unsafe { std::slice::from_raw_parts(info.p_stages, info.stage_count as usize) };
    let chain = chain_of(|s| stages.iter().position(|x| x.stage == s));
    let mut codes = Vec::with_capacity(chain.len());
    for at in &chain {
        // SAFETY: the stages are valid (pStages-06600 above).
        let Some(code) = (unsafe { stage_code(v, &stages[*at]) }) else { return false };
        codes.push(code);
    }
    if codes.len() < 2 {
        return false;
    }
    let env = v.env(info.layout);
    let (outcome, source) = outcome_of(dev, v, codes.clone(), env);
    let Some(outcome) = outcome else { return false };
    let mut copy: Vec<vk::PipelineShaderStageCreateInfo<'a>> = stages.to_vec();
    let (made, chains) = (out.temporary.len(), out.chains.len());
    // Each stage the link changed points at its linked code.
    let mut pointed = Ok(());
    for (k, at) in chain.iter().enumerate() {
        if pointed.is_ok() && outcome.stages[k] != *codes[k] {
            // SAFETY: the stages are valid (pStages-06600); `outcome` is
            // kept in `out` until the pipeline is created.
            pointed = unsafe { point_at(dev, &mut copy[*at], &outcome.stages[k], out) };
        }
    }
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
        return false;
    }
    out.outcomes.push(outcome.clone());
    info.p_stages = copy.as_ptr();
    out.stages.push(copy);
    log_linked(dev, &outcome, &source);
    true
}

/// The positions of a pipeline's stages in chain order (vertex,
/// tessellation control, tessellation evaluation, geometry, fragment; those
/// `find` finds).
fn chain_of(find: impl Fn(vk::ShaderStageFlags) -> Option<usize>) -> Vec<usize> {
    [
        vk::ShaderStageFlags::VERTEX,
        vk::ShaderStageFlags::TESSELLATION_CONTROL,
        vk::ShaderStageFlags::TESSELLATION_EVALUATION,
        vk::ShaderStageFlags::GEOMETRY,
        vk::ShaderStageFlags::FRAGMENT,
    ]
    .into_iter()
    .filter_map(find)
    .collect()
}

/// The outcome for a chain: from the memory cache, the disk cache, or
/// linked now (and remembered in both).
fn outcome_of(
    dev: &DeviceCore,
    v: &Linker,
    codes: Vec<Arc<Vec<u32>>>,
    env: Arc<LinkEnv>,
) -> (Option<Arc<Outcome>>, Source) {
    let key = chain_key(&codes, &env);
    match v.cached(key, &codes, &env) {
        Some(hit) => (hit, Source::Memory),
        None => {
            let reading = std::time::Instant::now();
            let disk = v.disk().map(|d| {
                d.read_ahead(READ_AHEAD_BYTES);
                (d, disk_key(v, dev, &env, &codes))
            });
            let stored = disk.as_ref().and_then(|(d, k)| match d.get(k) {
                Ok(hit) => hit,
                Err(bad) => {
                    disk_warning(dev, &bad);
                    None
                }
            });
            let decoded = stored.and_then(|w| match decode(&w) {
                Ok(o) => Some(o),
                Err(why) => {
                    let path = disk.as_ref().map(|(d, _)| d.dir().display().to_string()).unwrap_or_default();
                    disk_warning(dev, &crate::disk_cache::Bad::Corrupt(path.into(), why));
                    None
                }
            });
            let (fresh, source) = match decoded {
                Some(o) => {
                    // Validated when it was linked; dumped again where this process asks for dumps.
                    if let Some(linked) = &o {
                        for (code, w) in codes.iter().zip(&linked.stages) {
                            crate::spirv::dump(dev, code, w);
                        }
                    }
                    (o, Source::Disk { read_us: reading.elapsed().as_micros() })
                }
                None => match link_chain(dev, v.level, &env, &codes) {
                    Linking::Failed => (None, Source::Linked { stored: false }),
                    done => {
                        let o = match done {
                            Linking::Linked(o) => Some(o),
                            _ => None,
                        };
                        let stored = disk.as_ref().is_some_and(|(d, k)| match d.put(k, &encode(o.as_ref())) {
                            Ok(()) => true,
                            Err(bad) => {
                                disk_warning(dev, &bad);
                                false
                            }
                        });
                        (o, Source::Linked { stored })
                    }
                },
            };
            let fresh = fresh.map(Arc::new);
            v.remember(key, codes, env, fresh.clone());
            (fresh, source)
        }
    }
}

/// The debug log's line for a linked chain (`OVERLAP-Varyings-Linked`).
fn log_linked(dev: &DeviceCore, outcome: &Outcome, source: &Source) {
    let log = dev.log();
    if log.enabled(LogLevel::Debug) {
        let cost = match *source {
            Source::Memory => "cached".to_string(),
            Source::Disk { read_us } => format!("disk_cache=hit read_us={read_us}"),
            Source::Linked { stored } => format!(
                "link_us={} validate_us={} disk_cache={}",
                outcome.link_us,
                outcome.validate_us,
                if stored { "stored" } else { "off" }
            ),
        };
        log.debug(id::VARYINGS_LINKED, &format!("{}; {cost})", outcome.summary));
    }
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

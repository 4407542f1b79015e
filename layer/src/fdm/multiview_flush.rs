//! lavapipe's multiview loss, worked around (setting `fdm_multiview_flush`).
//!
//! **The driver's fault.** lavapipe hands each draw to gallium's draw
//! module, which loops over the views of a multiview pass inside the draw.
//! Primitives that need clipping go through its primitive pipeline, whose
//! last stage buffers them and takes the rasterizer's view index only when a
//! run starts (after a flush); the view loop flushes nothing, so once a
//! view's clipped primitives are buffered, the next view's clipped
//! primitives join them and land in the earlier view's layer. Chunks that
//! need no clipping take the other path, which flushes first and sets the
//! view index every time. (Mesa 22.3 to 24.0 at least; the tests' control
//! shows it with no layer loaded: `overlap-testapp multiview-ladder plain
//! clipped|mirrored`.)
//!
//! **The workaround.** A direct draw of a pipeline made for a multiview
//! pass goes down as `vkCmdDrawMultiEXT` (or its indexed form) of two draws:
//! the application's first triangle again, then the application's draw.
//! The pipeline bound for it is a partner whose vertex shader went through
//! [`overlap_shaders::first_draw::gate`]: where `DrawIndex` is 0 the
//! triangle collapses to one point inside the clip volume (no clipping, no
//! coverage), and the application's draw sees its own `DrawIndex`. In every
//! view the collapsed triangle takes the unclipped path, which flushes the
//! earlier view's buffered primitives with their own index and starts the
//! next run with this view's.
//!
//! **What it costs and where it stops.** A second pipeline per multiview
//! pipeline, made with it; pipeline-statistics and primitives-generated
//! queries count one more primitive per view and instance. It applies to
//! pipelines of triangles (static topology, filled polygons) whose last
//! pre-rasterization stage is a vertex shader module without side effects,
//! transform feedback or cull distances, outside graphics pipeline
//! libraries; to direct draws of at least one triangle. Indirect draws go
//! down as they are, with the application's pipeline bound (the partner's
//! `DrawIndex` rule would hide their first draw).

use super::commands::Cmd;
use super::Fdm;
use crate::device::DeviceCore;
use crate::ffi::slice;
use crate::id;
use crate::pnext::Chain;
use crate::settings::LogLevel;
use ash::vk;
use parking_lot::Mutex;
use std::collections::HashMap;
use std::ffi::{c_char, CStr};

/// `VK_EXT_multi_draw`.
pub const MULTI_DRAW: &CStr = c"VK_EXT_multi_draw";

/// The workaround's state on a device where it runs.
pub struct Flush {
    /// Some partner was ever made (until then binds and draws cost one load).
    any: std::sync::atomic::AtomicBool,
    /// Pipeline (the application's, or a per-area variant) → its partner.
    partners: Mutex<HashMap<vk::Pipeline, vk::Pipeline>>,
    /// Per command buffer: the pipeline with a partner the application has
    /// bound, and whether the partner is what the driver has bound now.
    bound: Mutex<HashMap<vk::CommandBuffer, Bound>>,
    /// Per vertex module and entry point: its gated code (validated), or
    /// `None` where it cannot be gated. Made once for the application's
    /// pipeline and all its per-area variants; forgotten with the module.
    gated: Rewritten,
}

/// A vertex module's gated code.
type Gated = std::sync::Arc<Vec<u32>>;

#[derive(Clone, Copy, Debug)]
struct Bound {
    plain: vk::Pipeline,
    partner: vk::Pipeline,
    partner_bound: bool,
}

impl Flush {
    pub fn new() -> Flush {
        Flush {
            any: Default::default(),
            partners: Default::default(),
            bound: Default::default(),
            gated: Default::default(),
        }
    }
}

impl Default for Flush {
    fn default() -> Self {
        Flush::new()
    }
}

/// Enables `VK_EXT_multi_draw` with `multiDraw`, and `shaderDrawParameters`,
/// in a device create info being stripped (`kept`: its extension names,
/// `chain`: its copied chain); false (nothing changed) where a structure it
/// would change lies beyond what the layer could copy.
///
/// # Safety
/// `info` is the valid create info `kept` and `chain` were made from.
pub(super) unsafe fn enable(info: &vk::DeviceCreateInfo, kept: &mut Vec<*const c_char>, chain: &mut Chain) -> bool {
    let tail_draw = chain.tail_find::<vk::PhysicalDeviceMultiDrawFeaturesEXT>().map(|f| f.multi_draw == vk::TRUE);
    let tail_params =
        chain.tail_find::<vk::PhysicalDeviceVulkan11Features>().map(|f| f.shader_draw_parameters == vk::TRUE).or(chain
            .tail_find::<vk::PhysicalDeviceShaderDrawParametersFeatures>()
            .map(|f| f.shader_draw_parameters == vk::TRUE));
    if tail_draw == Some(false) || tail_params == Some(false) {
        return false;
    }
    // SAFETY: the caller's guarantee.
    let (_, listed) = unsafe { crate::ffi::extensions_without(info, MULTI_DRAW) };
    if !listed {
        kept.push(MULTI_DRAW.as_ptr());
    }
    if tail_draw.is_none() {
        match chain.get_mut::<vk::PhysicalDeviceMultiDrawFeaturesEXT>() {
            Some(f) => f.multi_draw = vk::TRUE,
            None => chain.push(&vk::PhysicalDeviceMultiDrawFeaturesEXT::default().multi_draw(true)),
        }
    }
    if tail_params.is_none() {
        if let Some(f) = chain.get_mut::<vk::PhysicalDeviceVulkan11Features>() {
            f.shader_draw_parameters = vk::TRUE;
        } else if let Some(f) = chain.get_mut::<vk::PhysicalDeviceShaderDrawParametersFeatures>() {
            f.shader_draw_parameters = vk::TRUE;
        } else {
            chain.push(&vk::PhysicalDeviceShaderDrawParametersFeatures::default().shader_draw_parameters(true));
        }
    }
    true
}

/// Whether the workaround applies to a pipeline (and the per-view viewports,
/// `per_view.rs`, which cover the same pipelines).
pub(super) enum Eligible {
    /// Yes: its vertex stage's index, module, words and entry point name,
    /// and the pass's view mask.
    Yes(usize, vk::ShaderModule, std::sync::Arc<Vec<u32>>, String, u32),
    /// Nothing to do: not a multiview pipeline of filled triangles drawn by
    /// a vertex shader.
    NotMultiviewTriangles,
    /// A multiview pipeline the workaround cannot cover, and why.
    Uncovered(&'static str),
}

/// Whether `info` describes a pipeline the workaround applies to.
///
/// # Safety
/// `info` is a valid graphics pipeline create info of `f`'s device.
pub(super) unsafe fn eligible(f: &Fdm, info: &vk::GraphicsPipelineCreateInfo) -> Eligible {
    // SAFETY: the caller's guarantee.
    let view_mask = unsafe { view_mask(f, info) };
    if view_mask.count_ones() < 2 {
        return Eligible::NotMultiviewTriangles;
    }
    // SAFETY: as above.
    unsafe { covered(f, info, view_mask) }
}

/// The view mask of the pass `info` is made for (0: not multiview).
///
/// # Safety
/// As [`eligible`].
pub(super) unsafe fn view_mask(f: &Fdm, info: &vk::GraphicsPipelineCreateInfo) -> u32 {
    // SAFETY: VUID-VkGraphicsPipelineCreateInfo-pNext-pNext: a valid chain.
    let rendering = unsafe { crate::pnext::find::<vk::PipelineRenderingCreateInfo>(info.p_next).map(|r| r.view_mask) };
    if info.render_pass == vk::RenderPass::null() {
        rendering.unwrap_or(0)
    } else {
        f.passes.lock().get(&info.render_pass).map_or(0, |p| p.view_mask)
    }
}

/// Whether a vertex stage partner can be made for `info` (a pass of
/// `view_mask`, any number of views): filled triangles drawn by a vertex
/// shader whose code the layer kept, no library, no other pre-rasterization
/// stage ([`eligible`]'s rules past the view count).
///
/// # Safety
/// As [`eligible`].
pub(super) unsafe fn covered(f: &Fdm, info: &vk::GraphicsPipelineCreateInfo, view_mask: u32) -> Eligible {
    // SAFETY: VUID-VkGraphicsPipelineCreateInfo-pNext-pNext: a valid chain.
    let (library, libraries) = unsafe {
        (
            crate::pnext::find::<vk::GraphicsPipelineLibraryCreateInfoEXT>(info.p_next).is_some(),
            crate::pnext::find::<vk::PipelineLibraryCreateInfoKHR>(info.p_next).is_some(),
        )
    };
    if library || libraries || info.flags.contains(vk::PipelineCreateFlags::LIBRARY_KHR) {
        return Eligible::Uncovered("a graphics pipeline library");
    }
    // SAFETY: VUID-VkGraphicsPipelineCreateInfo-pDynamicState-parameter: a
    // non-null dynamic state is valid, with `dynamicStateCount` states.
    let dynamic: &[vk::DynamicState] = unsafe {
        match info.p_dynamic_state.as_ref() {
            Some(d) => slice(d.p_dynamic_states, d.dynamic_state_count),
            None => &[],
        }
    };
    if dynamic.contains(&vk::DynamicState::PRIMITIVE_TOPOLOGY) || dynamic.contains(&vk::DynamicState::POLYGON_MODE_EXT)
    {
        return Eligible::Uncovered("a dynamic topology or polygon mode");
    }
    // SAFETY: with a vertex stage, `pInputAssemblyState` is a valid pointer
    // where the topology is static (VUID-VkGraphicsPipelineCreateInfo-pStages-02098),
    // and a non-null rasterization state is valid.
    let (topology, polygon) = unsafe {
        (
            info.p_input_assembly_state.as_ref().map(|a| a.topology),
            info.p_rasterization_state.as_ref().map(|r| r.polygon_mode),
        )
    };
    let triangles = [
        vk::PrimitiveTopology::TRIANGLE_LIST,
        vk::PrimitiveTopology::TRIANGLE_STRIP,
        vk::PrimitiveTopology::TRIANGLE_FAN,
    ];
    match topology {
        None => return Eligible::NotMultiviewTriangles,
        Some(t) if !triangles.contains(&t) => return Eligible::Uncovered("lines, points or patches"),
        Some(_) => {}
    }
    if polygon.is_some_and(|p| p != vk::PolygonMode::FILL) {
        return Eligible::Uncovered("a polygon mode other than fill");
    }
    // SAFETY: VUID-VkGraphicsPipelineCreateInfo-pStages-06600: `stageCount` valid stages.
    let stages = unsafe { slice(info.p_stages, info.stage_count) };
    let pre_raster = vk::ShaderStageFlags::TESSELLATION_CONTROL
        | vk::ShaderStageFlags::TESSELLATION_EVALUATION
        | vk::ShaderStageFlags::GEOMETRY
        | vk::ShaderStageFlags::MESH_EXT
        | vk::ShaderStageFlags::TASK_EXT;
    if stages.iter().any(|s| s.stage.intersects(pre_raster)) {
        return Eligible::Uncovered("a tessellation, geometry or mesh stage");
    }
    let Some(at) = stages.iter().position(|s| s.stage == vk::ShaderStageFlags::VERTEX) else {
        return Eligible::NotMultiviewTriangles;
    };
    let vs = &stages[at];
    let words = f.modules.lock().get(&vs.module).and_then(|m| m.vertex.clone());
    let Some(words) = words else { return Eligible::Uncovered("a vertex shader given inline or by identifier") };
    // SAFETY: VUID-VkPipelineShaderStageCreateInfo-pName-parameter: a null-terminated UTF-8 string.
    let name = unsafe { CStr::from_ptr(vs.p_name) }.to_string_lossy().into_owned();
    Eligible::Yes(at, vs.module, words, name, view_mask)
}

/// The viewport state of a partner of `info`'s with `n` viewports and
/// scissors, dynamic: where `info` is a pipeline the layer replays (its
/// viewports and scissors dynamic, as the layer makes them for every
/// density-map pipeline) with one viewport, no `*_WITH_COUNT` state.
///
/// # Safety
/// As [`eligible`].
pub(super) unsafe fn replayed_viewports<'a>(
    info: &'a vk::GraphicsPipelineCreateInfo,
    n: u32,
) -> Option<vk::PipelineViewportStateCreateInfo<'a>> {
    // SAFETY: VUID-VkGraphicsPipelineCreateInfo-pDynamicState-parameter and -pViewportState-…: valid when non-null.
    let (dynamic, viewport): (&[vk::DynamicState], Option<&vk::PipelineViewportStateCreateInfo>) = unsafe {
        (
            info.p_dynamic_state.as_ref().map_or(&[], |d| slice(d.p_dynamic_states, d.dynamic_state_count)),
            info.p_viewport_state.as_ref(),
        )
    };
    let counted = [vk::DynamicState::VIEWPORT_WITH_COUNT, vk::DynamicState::SCISSOR_WITH_COUNT];
    let viewport = viewport.filter(|v| v.viewport_count == 1 && v.scissor_count == 1)?;
    // A density-map pass's pipelines have dynamic viewports and scissors (the layer made them so); others replay
    // nothing and need no partner.
    let replayed = dynamic.contains(&vk::DynamicState::VIEWPORT) && dynamic.contains(&vk::DynamicState::SCISSOR);
    if !replayed || dynamic.iter().any(|d| counted.contains(d)) {
        return None;
    }
    // Structures of the viewport state sized by its viewport count (NVIDIA's swizzle, W scaling, exclusive scissor,
    // shading-rate image) would no longer match the partner's: no partner.
    // SAFETY: VUID-VkPipelineViewportStateCreateInfo-pNext-pNext: a valid chain.
    let counted = unsafe {
        crate::pnext::find::<vk::PipelineViewportSwizzleStateCreateInfoNV>(viewport.p_next).is_some()
            || crate::pnext::find::<vk::PipelineViewportWScalingStateCreateInfoNV>(viewport.p_next).is_some()
            || crate::pnext::find::<vk::PipelineViewportExclusiveScissorStateCreateInfoNV>(viewport.p_next).is_some()
            || crate::pnext::find::<vk::PipelineViewportShadingRateImageStateCreateInfoNV>(viewport.p_next).is_some()
    };
    if counted {
        return None;
    }
    let mut vp = *viewport;
    (vp.viewport_count, vp.scissor_count, vp.p_viewports, vp.p_scissors) = (n, n, std::ptr::null(), std::ptr::null());
    Some(vp)
}

/// `words` with the first draw of entry point `name` gated, validated;
/// `None` (logged once per reason) where that cannot be done.
fn gate(dev: &DeviceCore, words: &[u32], name: &str) -> Option<Gated> {
    let pass = |m: &mut rspirv::dr::Module| overlap_shaders::first_draw::gate(m, name).map_err(|e| e.to_string());
    let refused =
        |why: &str| format!("a multiview pipeline's vertex shader cannot be gated ({why}); it draws as recorded");
    rewritten(dev, words, pass, (id::FDM_MULTIVIEW_FLUSH, refused), "the multiview flush's first-draw gate")
}

/// `words` through `pass`, validated (as `what`); `None` where the module
/// does not parse, `pass` refuses it (logged once per reason under `id`,
/// with the message `refused` makes of the reason) or the output fails
/// validation (logged by the check).
pub(super) fn rewritten(
    dev: &DeviceCore,
    words: &[u32],
    pass: impl FnOnce(&mut rspirv::dr::Module) -> Result<(), String>,
    (id, refused): (&str, impl FnOnce(&str) -> String),
    what: &str,
) -> Option<std::sync::Arc<Vec<u32>>> {
    let mut m = overlap_shaders::parse(words).ok()?;
    if let Err(why) = pass(&mut m) {
        dev.log().log_once(LogLevel::Info, id, &why, &refused(&why));
        return None;
    }
    let out = overlap_shaders::assemble(&m);
    crate::spirv::checked_output(dev, what, words, &out).then(|| std::sync::Arc::new(out))
}

/// After the pipeline `made` was created from `info`: its partner, made
/// where the workaround applies (a failure is logged; the pipeline then
/// draws as recorded).
///
/// # Safety
/// `made.info` is the valid create info `made.pipeline` was just created
/// from on `f`'s device, through `f.below`.
pub(super) unsafe fn make_partner(dev: &DeviceCore, f: &Fdm, made: &super::Made) {
    let (cache, info, made) = (made.cache, made.info, made.pipeline);
    let Some(flush) = &f.flush else { return };
    // SAFETY: the caller's guarantee.
    let (at, vs, words, name) = match unsafe { eligible(f, info) } {
        Eligible::Yes(at, vs, words, name, _) => (at, vs, words, name),
        Eligible::NotMultiviewTriangles => return,
        Eligible::Uncovered(why) => {
            dev.log().log_once(
                LogLevel::Info,
                id::FDM_MULTIVIEW_FLUSH,
                why,
                &format!("a multiview pipeline with {why} draws as recorded (lavapipe may put clipped primitives of later views into view 0)"),
            );
            return;
        }
    };
    // SAFETY: the caller's guarantee: `made` was made from `info`, its vertex stage at `at` running `words`.
    unsafe { gated_partner(dev, f, (cache, info), (at, &words, (vs, name), &flush.gated), None, made) };
}

/// The flush's partner of `made`, a pipeline made from `info` with the
/// vertex stage at `at` running `code` (and `viewport` as its viewport
/// state): the same pipeline with `code` gated — for an application's
/// pipeline, and for a per-view viewports' partner on a device where the
/// flush runs too. `gated` caches the gated code per module and entry
/// point.
///
/// # Safety
/// As [`with_vertex`]; `made` was just created that way.
pub(super) unsafe fn gated_partner(
    dev: &DeviceCore,
    f: &Fdm,
    (cache, info): (vk::PipelineCache, &vk::GraphicsPipelineCreateInfo),
    (at, code, key, gated): (usize, &[u32], (vk::ShaderModule, String), &Rewritten),
    viewport: Option<&vk::PipelineViewportStateCreateInfo>,
    made: vk::Pipeline,
) {
    let Some(flush) = &f.flush else { return };
    let Some(gated) = cached(gated, key, |key| gate(dev, code, &key.1)) else { return };
    // SAFETY: the caller's guarantee; the gated code is validated, with the same interface.
    if let Some(partner) = unsafe { with_vertex(dev, f, cache, info, (at, &gated, None), (viewport, None)) } {
        flush.partners.lock().insert(made, partner);
        flush.any.store(true, std::sync::atomic::Ordering::Release);
    }
}

/// Every partner the flush made (the device is idle, being destroyed).
///
/// # Safety
/// No pending work uses them.
pub(super) unsafe fn destroy_partners(f: &Fdm) {
    if let Some(flush) = &f.flush {
        // SAFETY: the caller's guarantee.
        unsafe { destroy_all(f, &flush.partners) };
    }
}

/// Every partner in `partners`, destroyed.
///
/// # Safety
/// No pending work uses them.
pub(super) unsafe fn destroy_all(f: &Fdm, partners: &Mutex<HashMap<vk::Pipeline, vk::Pipeline>>) {
    for (_, p) in partners.lock().drain() {
        // SAFETY: the caller's guarantee; the partners are the layer's own.
        unsafe { (f.below.fp_v1_0().destroy_pipeline)(f.below.handle(), p, std::ptr::null()) };
    }
}

/// The code of a vertex module and entry point, made once by `make` and
/// kept in `map` (`None` too: it could not be made).
pub(super) type Rewritten = Mutex<HashMap<(vk::ShaderModule, String), Option<std::sync::Arc<Vec<u32>>>>>;

/// `map`'s code for `key`, made by `make` the first time.
pub(super) fn cached(
    map: &Rewritten,
    key: (vk::ShaderModule, String),
    make: impl FnOnce(&(vk::ShaderModule, String)) -> Option<std::sync::Arc<Vec<u32>>>,
) -> Option<std::sync::Arc<Vec<u32>>> {
    if let Some(known) = map.lock().get(&key).cloned() {
        return known;
    }
    let made = make(&key);
    map.lock().insert(key, made.clone());
    made
}

/// A pipeline like `info`'s with the vertex stage at `at` running `code`
/// (given, a geometry stage running `geometry`'s entry point `main`, and
/// `viewport` as its viewport state), through `f.below`
/// without an allocator: a partner of the layer's. Creation feedback is the
/// application's pipeline's, so the partner's creation leaves it alone.
/// `None` where a creation failed.
///
/// # Safety
/// `info` is a valid create info of `f`'s device; `code` is validated code
/// with the interface of the stage it replaces (plus built-in outputs and,
/// given `vertex_input`, the inputs it adds); `geometry`, given, validated
/// code whose outputs are `code`'s and whose inputs `code` writes (the
/// pipeline has no geometry or tessellation stage, the device enabled
/// `geometryShader`); `viewport` and `vertex_input` are valid for the
/// pipeline.
pub(super) unsafe fn with_vertex(
    dev: &DeviceCore,
    f: &Fdm,
    cache: vk::PipelineCache,
    info: &vk::GraphicsPipelineCreateInfo,
    (at, code, geometry): (usize, &[u32], Option<&[u32]>),
    (viewport, vertex_input): (
        Option<&vk::PipelineViewportStateCreateInfo>,
        Option<&vk::PipelineVertexInputStateCreateInfo>,
    ),
) -> Option<vk::Pipeline> {
    let d = f.below.fp_v1_0();
    let make = |code: &[u32]| {
        let mci = vk::ShaderModuleCreateInfo { code_size: code.len() * 4, p_code: code.as_ptr(), ..Default::default() };
        let mut module = vk::ShaderModule::null();
        // SAFETY: a create info built here over live validated code.
        let r = unsafe { (d.create_shader_module)(dev.handle, &mci, std::ptr::null(), &mut module) };
        (r == vk::Result::SUCCESS).then_some(module)
    };
    let module = make(code)?;
    let gs = match geometry.map(make) {
        Some(None) => {
            // SAFETY: the module just made, unused.
            unsafe { (d.destroy_shader_module)(dev.handle, module, std::ptr::null()) };
            return None;
        }
        other => other.flatten(),
    };
    // SAFETY: as for `info` (the caller's guarantee): `stageCount` valid stages.
    let mut stages = unsafe { slice(info.p_stages, info.stage_count) }.to_vec();
    stages[at].module = module;
    if let Some(gs) = gs {
        stages.push(
            vk::PipelineShaderStageCreateInfo::default().stage(vk::ShaderStageFlags::GEOMETRY).module(gs).name(c"main"),
        );
    }
    let mut copy = *info;
    copy.p_stages = stages.as_ptr();
    copy.stage_count = stages.len() as u32;
    if let Some(v) = viewport {
        copy.p_viewport_state = v;
    }
    if let Some(v) = vertex_input {
        copy.p_vertex_input_state = v;
    }
    let mut chain = None;
    // SAFETY: VUID-VkGraphicsPipelineCreateInfo-pNext-pNext: a valid chain.
    if unsafe { crate::pnext::find::<vk::PipelineCreationFeedbackCreateInfo>(info.p_next) }.is_some() {
        // SAFETY: as above.
        let mut c = unsafe { Chain::copy_prefix(info.p_next) };
        c.remove(vk::StructureType::PIPELINE_CREATION_FEEDBACK_CREATE_INFO);
        copy.p_next = c.head();
        chain = Some(c);
    }
    let mut partner = vk::Pipeline::null();
    // SAFETY: the valid info with its vertex module replaced (alive until after the call), its stages in a live
    // Vec, its chain (if copied) in `chain`, its viewport state the caller's.
    let r = unsafe {
        let r = (d.create_graphics_pipelines)(dev.handle, cache, 1, &copy, std::ptr::null(), &mut partner);
        (d.destroy_shader_module)(dev.handle, module, std::ptr::null());
        if let Some(gs) = gs {
            (d.destroy_shader_module)(dev.handle, gs, std::ptr::null());
        }
        r
    };
    drop(chain);
    (r == vk::Result::SUCCESS).then_some(partner)
}

/// `module` is being destroyed: its gated code goes with it (a later module
/// may get its handle).
pub(super) fn forget_module(f: &Fdm, module: vk::ShaderModule) {
    if let Some(flush) = &f.flush {
        forget_code(&flush.gated, module);
    }
}

/// `pipeline` is being destroyed: its partner goes with it.
pub(super) fn forget(f: &Fdm, pipeline: vk::Pipeline) {
    if let Some(flush) = &f.flush {
        forget_partner(f, &flush.partners, pipeline);
    }
}

/// `module`'s code in `map` goes (the module is being destroyed).
pub(super) fn forget_code(map: &Rewritten, module: vk::ShaderModule) {
    map.lock().retain(|(m, _), _| *m != module);
}

/// `pipeline`'s partner in `partners` is destroyed with it.
pub(super) fn forget_partner(f: &Fdm, partners: &Mutex<HashMap<vk::Pipeline, vk::Pipeline>>, pipeline: vk::Pipeline) {
    if let Some(partner) = partners.lock().remove(&pipeline) {
        // SAFETY: the partner is the layer's own, made with `pipeline`, which
        // no pending work uses (VUID-vkDestroyPipeline-pipeline-00765).
        unsafe { (f.below.fp_v1_0().destroy_pipeline)(f.below.handle(), partner, std::ptr::null()) };
    }
}

/// `cb` is freed or begun again: nothing of it is bound any more.
pub(super) fn forget_command_buffer(f: &Fdm, cb: vk::CommandBuffer) {
    if let Some(flush) = &f.flush {
        flush.bound.lock().remove(&cb);
    }
}

/// The graphics pipeline `pipeline` was just bound in `cb` (the driver has
/// it bound; `null`: shader objects replaced it).
pub(super) fn bound(f: &Fdm, cb: vk::CommandBuffer, pipeline: vk::Pipeline) {
    let Some(flush) = f.flush.as_ref().filter(|f| f.any.load(std::sync::atomic::Ordering::Acquire)) else { return };
    let partner = flush.partners.lock().get(&pipeline).copied();
    let mut b = flush.bound.lock();
    match partner {
        Some(partner) => drop(b.insert(cb, Bound { plain: pipeline, partner, partner_bound: false })),
        None => drop(b.remove(&cb)),
    }
}

/// The command `cmd` is about to go down in `cb`: true where it was a
/// direct draw of a pipeline with a partner, now drawn as a multi-draw led
/// by the collapsed triangle; false leaves it to the caller (any other draw
/// with the application's pipeline bound again).
///
/// # Safety
/// `cb` is a recording command buffer of `f`'s device held by the caller,
/// inside the pass `cmd` was recorded in, with its valid arguments.
pub(super) unsafe fn draw(f: &Fdm, cb: vk::CommandBuffer, cmd: &Cmd) -> bool {
    let Some(flush) = f.flush.as_ref().filter(|f| f.any.load(std::sync::atomic::Ordering::Acquire)) else {
        return false;
    };
    let (one, one_indexed);
    let which = match cmd {
        Cmd::Draw(count, instances, first_vertex, first_instance) => {
            one = [vk::MultiDrawInfoEXT { first_vertex: *first_vertex, vertex_count: *count }];
            Direct::Vertices { draws: &one, instances: *instances, first_instance: *first_instance }
        }
        Cmd::DrawIndexed(count, instances, first_index, vertex_offset, first_instance) => {
            one_indexed = [vk::MultiDrawIndexedInfoEXT {
                first_index: *first_index,
                index_count: *count,
                vertex_offset: *vertex_offset,
            }];
            Direct::Indexed {
                draws: &one_indexed,
                instances: *instances,
                first_instance: *first_instance,
                vertex_offset: None,
            }
        }
        Cmd::DrawMulti { draws, instances, first_instance } => {
            Direct::Vertices { draws, instances: *instances, first_instance: *first_instance }
        }
        Cmd::DrawMultiIndexed { draws, instances, first_instance, vertex_offset } => Direct::Indexed {
            draws,
            instances: *instances,
            first_instance: *first_instance,
            vertex_offset: *vertex_offset,
        },
        Cmd::DrawIndirect(..)
        | Cmd::DrawIndexedIndirect(..)
        | Cmd::DrawIndirectCount(..)
        | Cmd::DrawIndexedIndirectCount(..) => Direct::Indirect,
        _ => return false,
    };
    let mut all = flush.bound.lock();
    let Some(b) = all.get_mut(&cb) else { return false };
    // The collapsed triangle: the first three vertices of the first draw of
    // at least one triangle (drawn once per instance).
    let lead = match which {
        Direct::Vertices { draws, instances, .. } => (instances > 0)
            .then(|| draws.iter().find(|d| d.vertex_count >= 3))
            .flatten()
            .map(|d| Lead::Vertices(vk::MultiDrawInfoEXT { vertex_count: 3, ..*d })),
        Direct::Indexed { draws, instances, .. } => (instances > 0)
            .then(|| draws.iter().find(|d| d.index_count >= 3))
            .flatten()
            .map(|d| Lead::Indexed(vk::MultiDrawIndexedInfoEXT { index_count: 3, ..*d })),
        Direct::Indirect => None,
    };
    let drawable = lead.is_some();
    let want = if drawable { b.partner } else { b.plain };
    if b.partner_bound != drawable {
        // SAFETY: the caller's guarantee: `cb` is recording; both pipelines
        // were made from the same create info, so the state the
        // application set stays valid.
        unsafe { (f.below.fp_v1_0().cmd_bind_pipeline)(cb, vk::PipelineBindPoint::GRAPHICS, want) };
        b.partner_bound = drawable;
    }
    drop(all);
    // SAFETY: the caller's guarantee; the arrays are live for the calls.
    unsafe {
        match (lead, which) {
            (Some(Lead::Vertices(lead)), Direct::Vertices { draws, instances, first_instance }) => {
                let all: Vec<vk::MultiDrawInfoEXT> = std::iter::once(lead).chain(draws.iter().copied()).collect();
                let stride = std::mem::size_of::<vk::MultiDrawInfoEXT>() as u32;
                (f.multi_draw.cmd_draw_multi_ext)(cb, all.len() as u32, all.as_ptr(), instances, first_instance, stride)
            }
            (Some(Lead::Indexed(lead)), Direct::Indexed { draws, instances, first_instance, vertex_offset }) => {
                let all: Vec<vk::MultiDrawIndexedInfoEXT> =
                    std::iter::once(lead).chain(draws.iter().copied()).collect();
                let stride = std::mem::size_of::<vk::MultiDrawIndexedInfoEXT>() as u32;
                (f.multi_draw.cmd_draw_multi_indexed_ext)(
                    cb,
                    all.len() as u32,
                    all.as_ptr(),
                    instances,
                    first_instance,
                    stride,
                    vertex_offset.as_ref().map_or(std::ptr::null(), |o| o as *const i32),
                )
            }
            _ => return false,
        }
    }
    true
}

enum Lead {
    Vertices(vk::MultiDrawInfoEXT),
    Indexed(vk::MultiDrawIndexedInfoEXT),
}

/// A draw about to go down: direct ones as the draws of a multi-draw
/// (`vertex_offset`: a multi-draw's shared `pVertexOffset`).
#[derive(Clone, Copy, Debug)]
enum Direct<'a> {
    Vertices {
        draws: &'a [vk::MultiDrawInfoEXT],
        instances: u32,
        first_instance: u32,
    },
    Indexed {
        draws: &'a [vk::MultiDrawIndexedInfoEXT],
        instances: u32,
        first_instance: u32,
        vertex_offset: Option<i32>,
    },
    /// Any indirect draw.
    Indirect,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pnext::find;
    use std::ffi::c_void;

    /// What `enable` leaves in a create info: extension names and the two
    /// features as the driver would read them.
    fn enabled(info: &vk::DeviceCreateInfo) -> Option<(Vec<String>, bool, bool)> {
        let mut kept: Vec<*const c_char> = Vec::new();
        // SAFETY: `info` and its chain are live (built by the caller).
        let mut chain = unsafe { Chain::copy_prefix(info.p_next) };
        // SAFETY: as above.
        if !unsafe { enable(info, &mut kept, &mut chain) } {
            return None;
        }
        // SAFETY: the names are the layer's own constants.
        let names = kept.iter().map(|n| unsafe { CStr::from_ptr(*n) }.to_string_lossy().into_owned()).collect();
        let head = chain.head();
        // SAFETY: the copied chain, alive with `chain`.
        let (draw, params) = unsafe {
            (
                find::<vk::PhysicalDeviceMultiDrawFeaturesEXT>(head).is_some_and(|f| f.multi_draw == vk::TRUE),
                find::<vk::PhysicalDeviceVulkan11Features>(head).map(|f| f.shader_draw_parameters).or(find::<
                    vk::PhysicalDeviceShaderDrawParametersFeatures,
                >(
                    head
                )
                .map(|f| f.shader_draw_parameters))
                    == Some(vk::TRUE),
            )
        };
        Some((names, draw, params))
    }

    #[test]
    fn the_features_are_added_or_set_where_the_application_chained_them() {
        // Nothing chained: both structures pushed, the extension named.
        let info = vk::DeviceCreateInfo::default();
        assert_eq!(enabled(&info), Some((vec!["VK_EXT_multi_draw".into()], true, true)));
        // The application's Vulkan 1.1 features (the CTS chains them): set there, no second structure.
        let mut v11 = vk::PhysicalDeviceVulkan11Features::default().multiview(true);
        let mut md = vk::PhysicalDeviceMultiDrawFeaturesEXT::default();
        let info = vk::DeviceCreateInfo::default().push_next(&mut v11).push_next(&mut md);
        let (_, draw, params) = enabled(&info).unwrap();
        assert!(draw && params);
        let mut kept = Vec::new();
        // SAFETY: `info`'s chain links the live structures above.
        let mut chain = unsafe { Chain::copy_prefix(info.p_next) };
        // SAFETY: as above.
        assert!(unsafe { enable(&info, &mut kept, &mut chain) });
        assert!(chain.get::<vk::PhysicalDeviceShaderDrawParametersFeatures>().is_none());
        assert_eq!(chain.get::<vk::PhysicalDeviceVulkan11Features>().unwrap().multiview, vk::TRUE);
    }

    #[test]
    fn a_feature_off_beyond_the_copyable_chain_leaves_the_create_info_alone() {
        // The application's multi-draw features after a structure the layer cannot copy: off there, the create
        // info is left alone; on there, it stays in place (the driver reads it there) and the rest is added.
        for on in [false, true] {
            let mut md = vk::PhysicalDeviceMultiDrawFeaturesEXT::default().multi_draw(on);
            let mut unknown = vk::BaseOutStructure {
                s_type: vk::StructureType::from_raw(1_000_999_000),
                p_next: &mut md as *mut _ as *mut vk::BaseOutStructure,
                ..Default::default()
            };
            let info = vk::DeviceCreateInfo { p_next: &mut unknown as *mut _ as *const c_void, ..Default::default() };
            let expected = on.then(|| (vec!["VK_EXT_multi_draw".to_string()], true, true));
            assert_eq!(enabled(&info), expected);
        }
    }
}

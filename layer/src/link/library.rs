//! Graphics pipeline libraries (`VK_EXT_graphics_pipeline_library`) for the
//! varying linker.
//!
//! A library's interface is never linked: the application may link it with
//! several partners. Instead, each library the driver creates is remembered
//! as an owned deep copy of what rebuilds its subsets (stage code, entry
//! names, specialization, the fixed-function state of its subsets, the render
//! pass or dynamic-rendering formats, the layout). A final link that asks for
//! link-time optimization (`VK_PIPELINE_CREATE_LINK_TIME_OPTIMIZATION_BIT_EXT`,
//! the driver compiles the whole pipeline then) is sent down as one
//! monolithic create info rebuilt from those copies, which
//! `link_pipelines` then links like any other. A library holding a structure
//! the copy does not know (one with pointers besides `pNext`) is not
//! remembered, and its final links stay as the application made them.

use super::Linker;
use crate::pnext::Chain;
use ash::vk;
use std::ffi::{c_void, CStr, CString};
use std::sync::Arc;

type Subsets = vk::GraphicsPipelineLibraryFlagsEXT;

const ALL: Subsets = Subsets::from_raw(
    Subsets::VERTEX_INPUT_INTERFACE.as_raw()
        | Subsets::PRE_RASTERIZATION_SHADERS.as_raw()
        | Subsets::FRAGMENT_SHADER.as_raw()
        | Subsets::FRAGMENT_OUTPUT_INTERFACE.as_raw(),
);

/// Structures whose only pointer is `pNext`: a byte copy is a deep copy.
const PLAIN: &[vk::StructureType] = &[
    vk::StructureType::PIPELINE_RASTERIZATION_STATE_STREAM_CREATE_INFO_EXT,
    vk::StructureType::PIPELINE_RASTERIZATION_CONSERVATIVE_STATE_CREATE_INFO_EXT,
    vk::StructureType::PIPELINE_RASTERIZATION_DEPTH_CLIP_STATE_CREATE_INFO_EXT,
    vk::StructureType::PIPELINE_RASTERIZATION_LINE_STATE_CREATE_INFO_KHR,
    vk::StructureType::PIPELINE_RASTERIZATION_PROVOKING_VERTEX_STATE_CREATE_INFO_EXT,
    vk::StructureType::PIPELINE_TESSELLATION_DOMAIN_ORIGIN_STATE_CREATE_INFO,
    vk::StructureType::PIPELINE_VIEWPORT_DEPTH_CLIP_CONTROL_CREATE_INFO_EXT,
    vk::StructureType::PIPELINE_SHADER_STAGE_REQUIRED_SUBGROUP_SIZE_CREATE_INFO,
    vk::StructureType::PIPELINE_COLOR_BLEND_ADVANCED_STATE_CREATE_INFO_EXT,
];

/// A copy of the plain structures of the chain at `p_next`; structures of
/// `dropped` types are left out. Any other structure is refused.
///
/// # Safety
/// `p_next` is a valid `pNext` chain.
unsafe fn plain_chain(p_next: *const c_void, dropped: &[vk::StructureType]) -> Result<Chain, String> {
    let mut p = p_next;
    while !p.is_null() {
        // SAFETY: every structure of a valid chain starts with the
        // VkBaseInStructure header (the caller's guarantee).
        let base = unsafe { &*(p as *const vk::BaseInStructure) };
        if !PLAIN.contains(&base.s_type) && !dropped.contains(&base.s_type) {
            return Err(format!("{:?} cannot be copied", base.s_type));
        }
        p = base.p_next as *const c_void;
    }
    // SAFETY: the chain is valid (the caller's guarantee).
    let mut chain = unsafe { Chain::copy(p_next) }.map_err(|e| e.to_string())?;
    for t in dropped {
        chain.remove(*t);
    }
    Ok(chain)
}

/// A fixed-function state structure with its plain chain, owned.
struct Kept<T> {
    value: Box<T>,
    _chain: Chain,
}

/// # Safety
/// `src` is a valid Vulkan structure (its chain valid); its other pointers
/// are replaced by the caller with owned ones.
unsafe fn keep<T: Copy>(src: &T, p_next: *const c_void) -> Result<Kept<T>, String> {
    // SAFETY: the caller's guarantee.
    let mut chain = unsafe { plain_chain(p_next, &[]) }?;
    let mut value = Box::new(*src);
    // SAFETY: every Vulkan structure starts with the VkBaseOutStructure
    // header; `value` is our own copy.
    unsafe { (*(&mut *value as *mut T as *mut vk::BaseOutStructure)).p_next = chain.head() as *mut _ };
    Ok(Kept { value, _chain: chain })
}

/// Specialization info with its map entries and data, owned.
type Specialization = (vk::SpecializationInfo<'static>, Vec<vk::SpecializationMapEntry>, Vec<u8>);

/// One stage, owned: code, entry name, specialization, plain chain with the
/// code inline (`VkShaderModuleCreateInfo`).
struct Stage {
    info: vk::PipelineShaderStageCreateInfo<'static>,
    _code: Arc<Vec<u32>>,
    _name: CString,
    _spec: Option<Box<Specialization>>,
    _chain: Chain,
}

/// What rebuilds one library's subsets (or the final link's own state).
pub struct Library {
    subsets: Subsets,
    layout: vk::PipelineLayout,
    render_pass: vk::RenderPass,
    subpass: u32,
    stages: Vec<Stage>,
    vertex_input: Option<Kept<vk::PipelineVertexInputStateCreateInfo<'static>>>,
    input_assembly: Option<Kept<vk::PipelineInputAssemblyStateCreateInfo<'static>>>,
    tessellation: Option<Kept<vk::PipelineTessellationStateCreateInfo<'static>>>,
    viewport: Option<Kept<vk::PipelineViewportStateCreateInfo<'static>>>,
    rasterization: Option<Kept<vk::PipelineRasterizationStateCreateInfo<'static>>>,
    multisample: Option<Kept<vk::PipelineMultisampleStateCreateInfo<'static>>>,
    depth_stencil: Option<Kept<vk::PipelineDepthStencilStateCreateInfo<'static>>>,
    color_blend: Option<Kept<vk::PipelineColorBlendStateCreateInfo<'static>>>,
    dynamic: Vec<vk::DynamicState>,
    rendering: Option<Box<vk::PipelineRenderingCreateInfo<'static>>>,
    /// The arrays the kept structures point at.
    _bindings: Vec<vk::VertexInputBindingDescription>,
    _attributes: Vec<vk::VertexInputAttributeDescription>,
    _viewports: Vec<vk::Viewport>,
    _scissors: Vec<vk::Rect2D>,
    _sample_mask: Vec<vk::SampleMask>,
    _attachments: Vec<vk::PipelineColorBlendAttachmentState>,
    _formats: Vec<vk::Format>,
}

// SAFETY: every pointer inside a `Library` points into heap memory the
// `Library` owns (its boxes, vectors, chains and code) and never changes
// after construction; nothing is shared with the application.
unsafe impl Send for Library {}
// SAFETY: as above; a `Library` is never mutated after construction.
unsafe impl Sync for Library {}

/// An owned copy of `v`'s slice of `n` items at `p` (empty for null).
///
/// # Safety
/// `p` is null or points at `n` valid items.
unsafe fn owned<T: Copy>(p: *const T, n: u32) -> Vec<T> {
    // SAFETY: the caller's guarantee.
    unsafe { crate::ffi::slice(p, n) }.to_vec()
}

/// The owned copy of `stage`.
///
/// # Safety
/// `stage` is a valid stage create info.
unsafe fn stage_copy(v: &Linker, stage: &vk::PipelineShaderStageCreateInfo<'_>) -> Result<Stage, String> {
    // SAFETY: the stage is valid (the caller's guarantee).
    let code = unsafe { super::stage_code(v, stage) }.ok_or("a stage's code is unknown")?;
    // SAFETY: VUID-VkPipelineShaderStageCreateInfo-pName-parameter: a
    // null-terminated string.
    let name = if stage.p_name.is_null() {
        return Err("no entry name".into());
    } else {
        unsafe { CStr::from_ptr(stage.p_name) }
    }
    .to_owned();
    // SAFETY: VUID-VkPipelineShaderStageCreateInfo-pNext-pNext: a valid chain.
    let mut chain = unsafe { plain_chain(stage.p_next, &[vk::StructureType::SHADER_MODULE_CREATE_INFO]) }?;
    chain.push(&vk::ShaderModuleCreateInfo { code_size: code.len() * 4, p_code: code.as_ptr(), ..Default::default() });
    let spec = if stage.p_specialization_info.is_null() {
        None
    } else {
        // SAFETY: VUID-VkPipelineShaderStageCreateInfo-pSpecializationInfo-parameter.
        let s = unsafe { &*stage.p_specialization_info };
        // SAFETY: VUID-VkSpecializationInfo-pMapEntries-parameter.
        let entries = unsafe { owned(s.p_map_entries, s.map_entry_count) };
        let data = if s.data_size == 0 || s.p_data.is_null() {
            Vec::new()
        } else {
            // SAFETY: VUID-VkSpecializationInfo-pData-parameter: `dataSize` bytes.
            unsafe { std::slice::from_raw_parts(s.p_data as *const u8, s.data_size) }.to_vec()
        };
        let mut b = Box::new((vk::SpecializationInfo::default(), entries, data));
        b.0.p_map_entries = b.1.as_ptr();
        b.0.map_entry_count = b.1.len() as u32;
        b.0.p_data = b.2.as_ptr() as *const c_void;
        b.0.data_size = b.2.len();
        Some(b)
    };
    let mut info = *stage;
    info.p_next = chain.head();
    info.module = vk::ShaderModule::null();
    info.p_name = name.as_ptr();
    info.p_specialization_info = spec.as_ref().map_or(std::ptr::null(), |b| &b.0 as *const _);
    // SAFETY: the lifetime only ties the pointers to what they point at,
    // which the `Stage` owns.
    let info: vk::PipelineShaderStageCreateInfo<'static> = unsafe { std::mem::transmute(info) };
    Ok(Stage { info, _code: code, _name: name, _spec: spec, _chain: chain })
}

/// Copies of the structure at `p` (`None` for null), with `keep`.
///
/// # Safety
/// `p` is null or a valid structure.
unsafe fn kept<T: Copy>(p: *const T) -> Result<Option<Kept<T>>, String> {
    if p.is_null() {
        return Ok(None);
    }
    // SAFETY: non-null: a valid structure (the caller's guarantee), which
    // starts with the VkBaseInStructure header.
    let (value, next) = unsafe { (&*p, (*(p as *const vk::BaseInStructure)).p_next as *const c_void) };
    // SAFETY: as above.
    unsafe { keep(value, next) }.map(Some)
}

/// A library of `subsets` of `info` with nothing copied yet: its render
/// pass and subpass only.
fn empty(info: &vk::GraphicsPipelineCreateInfo<'_>, subsets: Subsets) -> Library {
    Library {
        subsets,
        layout: vk::PipelineLayout::null(),
        render_pass: info.render_pass,
        subpass: info.subpass,
        stages: Vec::new(),
        vertex_input: None,
        input_assembly: None,
        tessellation: None,
        viewport: None,
        rasterization: None,
        multisample: None,
        depth_stencil: None,
        color_blend: None,
        dynamic: Vec::new(),
        rendering: None,
        _bindings: Vec::new(),
        _attributes: Vec::new(),
        _viewports: Vec::new(),
        _scissors: Vec::new(),
        _sample_mask: Vec::new(),
        _attachments: Vec::new(),
        _formats: Vec::new(),
    }
}

/// Into `lib`, a copy of the dynamic-rendering structure of `info` (its
/// colour formats where `subsets` have the fragment output interface).
///
/// # Safety
/// `info` is a valid create info.
unsafe fn keep_rendering(lib: &mut Library, info: &vk::GraphicsPipelineCreateInfo<'_>, subsets: Subsets) {
    // SAFETY: VUID-VkGraphicsPipelineCreateInfo-pNext-pNext: a valid chain.
    if let Some(r) = unsafe { crate::pnext::find::<vk::PipelineRenderingCreateInfo>(info.p_next) } {
        let formats = if subsets.contains(Subsets::FRAGMENT_OUTPUT_INTERFACE) {
            // SAFETY: VUID-VkPipelineRenderingCreateInfo-pColorAttachmentFormats-parameter.
            unsafe { owned(r.p_color_attachment_formats, r.color_attachment_count) }
        } else {
            Vec::new()
        };
        let mut copy = Box::new(*r);
        copy.p_next = std::ptr::null();
        copy.color_attachment_count = formats.len() as u32;
        copy.p_color_attachment_formats = if formats.is_empty() { std::ptr::null() } else { formats.as_ptr() };
        lib._formats = formats;
        // SAFETY: the lifetime only ties the pointers to what they point at,
        // which `lib` owns.
        lib.rendering = Some(unsafe {
            std::mem::transmute::<Box<vk::PipelineRenderingCreateInfo<'_>>, Box<vk::PipelineRenderingCreateInfo<'static>>>(
                copy,
            )
        });
    }
}

/// Into `lib`, the pre-rasterization state of `info` (`dynamic` its
/// dynamic states): rasterization, the viewports and scissors unless
/// rasterization is discarded (their arrays where static), tessellation
/// where its stages tessellate.
///
/// # Safety
/// `info` is a valid create info of a pipeline with that subset, whose
/// stages `lib` holds.
unsafe fn keep_pre_rasterization(
    lib: &mut Library,
    info: &vk::GraphicsPipelineCreateInfo<'_>,
    dynamic: &[vk::DynamicState],
) -> Result<(), String> {
    let dynamic = |s: vk::DynamicState| dynamic.contains(&s);
    // SAFETY: VUID-VkGraphicsPipelineCreateInfo-pRasterizationState-parameter.
    lib.rasterization = unsafe { kept(info.p_rasterization_state.cast()) }?;
    let discard = lib.rasterization.as_ref().is_some_and(|r| r.value.rasterizer_discard_enable != 0)
        && !dynamic(vk::DynamicState::RASTERIZER_DISCARD_ENABLE);
    if !discard {
        // SAFETY: VUID-VkGraphicsPipelineCreateInfo-pViewportState-parameter.
        lib.viewport = unsafe { kept(info.p_viewport_state.cast()) }?;
    }
    if let Some(k) = &mut lib.viewport {
        let s = &mut *k.value;
        if !dynamic(vk::DynamicState::VIEWPORT) && !dynamic(vk::DynamicState::VIEWPORT_WITH_COUNT) {
            // SAFETY: static viewports: VUID-VkPipelineViewportStateCreateInfo-pViewports-parameter.
            lib._viewports = unsafe { owned(s.p_viewports, s.viewport_count) };
        }
        if !dynamic(vk::DynamicState::SCISSOR) && !dynamic(vk::DynamicState::SCISSOR_WITH_COUNT) {
            // SAFETY: static scissors: VUID-VkPipelineViewportStateCreateInfo-pScissors-parameter.
            lib._scissors = unsafe { owned(s.p_scissors, s.scissor_count) };
        }
        s.p_viewports = if lib._viewports.is_empty() { std::ptr::null() } else { lib._viewports.as_ptr() };
        s.p_scissors = if lib._scissors.is_empty() { std::ptr::null() } else { lib._scissors.as_ptr() };
    }
    let tessellated = lib.stages.iter().any(|s| s.info.stage == vk::ShaderStageFlags::TESSELLATION_CONTROL);
    if tessellated {
        // SAFETY: VUID-VkGraphicsPipelineCreateInfo-pStages-00731: a
        // tessellated pipeline has a valid tessellation state.
        lib.tessellation = unsafe { kept(info.p_tessellation_state.cast()) }?;
    }
    Ok(())
}

/// Into `lib`, the colour blend state of `info` (`dynamic` its dynamic
/// states), with its attachments unless the state they give is all dynamic.
///
/// # Safety
/// `info` is a valid create info of a pipeline with the fragment output
/// interface.
unsafe fn keep_color_blend(
    lib: &mut Library,
    info: &vk::GraphicsPipelineCreateInfo<'_>,
    dynamic: &[vk::DynamicState],
) -> Result<(), String> {
    let dynamic = |s: vk::DynamicState| dynamic.contains(&s);
    // SAFETY: VUID-VkGraphicsPipelineCreateInfo-pColorBlendState-parameter (null or valid).
    lib.color_blend = unsafe { kept(info.p_color_blend_state.cast()) }?;
    if let Some(k) = &mut lib.color_blend {
        let s = &mut *k.value;
        let ignored = [
            vk::DynamicState::COLOR_BLEND_ENABLE_EXT,
            vk::DynamicState::COLOR_BLEND_EQUATION_EXT,
            vk::DynamicState::COLOR_WRITE_MASK_EXT,
        ]
        .iter()
        .all(|d| dynamic(*d));
        if !ignored {
            // SAFETY: VUID-VkPipelineColorBlendStateCreateInfo-pAttachments-07353.
            lib._attachments = unsafe { owned(s.p_attachments, s.attachment_count) };
        }
        s.p_attachments = if lib._attachments.is_empty() { std::ptr::null() } else { lib._attachments.as_ptr() };
    }
    Ok(())
}

/// The owned copy of what rebuilds `subsets` of `info`.
///
/// # Safety
/// `info` is a valid create info for a pipeline with those subsets.
pub(super) unsafe fn record(
    v: &Linker,
    info: &vk::GraphicsPipelineCreateInfo<'_>,
    subsets: Subsets,
) -> Result<Library, String> {
    let mut lib = empty(info, subsets);
    if !info.p_dynamic_state.is_null() {
        // SAFETY: VUID-VkGraphicsPipelineCreateInfo-pDynamicState-parameter.
        let d = unsafe { &*info.p_dynamic_state };
        if !d.p_next.is_null() {
            return Err("a dynamic state chain".into());
        }
        // SAFETY: VUID-VkPipelineDynamicStateCreateInfo-pDynamicStates-parameter.
        lib.dynamic = unsafe { owned(d.p_dynamic_states, d.dynamic_state_count) };
    }
    let states = lib.dynamic.clone();
    let dynamic = |s: vk::DynamicState| states.contains(&s);
    // SAFETY: a valid info (the caller's guarantee).
    unsafe { keep_rendering(&mut lib, info, subsets) };
    let stages = if info.stage_count == 0 || info.p_stages.is_null() {
        &[][..]
    } else {
        // SAFETY: VUID-VkGraphicsPipelineCreateInfo-pStages-06600.
        unsafe { std::slice::from_raw_parts(info.p_stages, info.stage_count as usize) }
    };
    let fragment = |s: &vk::PipelineShaderStageCreateInfo| s.stage == vk::ShaderStageFlags::FRAGMENT;
    let pre = subsets.contains(Subsets::PRE_RASTERIZATION_SHADERS);
    let fs = subsets.contains(Subsets::FRAGMENT_SHADER);
    for s in stages.iter().filter(|s| if fragment(s) { fs } else { pre }) {
        // SAFETY: a valid stage (pStages-06600).
        lib.stages.push(unsafe { stage_copy(v, s) }?);
    }
    if pre || fs {
        lib.layout = info.layout;
    }
    if subsets.contains(Subsets::VERTEX_INPUT_INTERFACE) {
        if !dynamic(vk::DynamicState::VERTEX_INPUT_EXT) {
            // SAFETY: VUID-VkGraphicsPipelineCreateInfo-pVertexInputState-parameter.
            lib.vertex_input = unsafe { kept(info.p_vertex_input_state.cast()) }?;
            if let Some(k) = &mut lib.vertex_input {
                let s = &mut *k.value;
                // SAFETY: the arrays of a valid vertex input state.
                lib._bindings = unsafe { owned(s.p_vertex_binding_descriptions, s.vertex_binding_description_count) };
                // SAFETY: as above.
                lib._attributes =
                    unsafe { owned(s.p_vertex_attribute_descriptions, s.vertex_attribute_description_count) };
                s.p_vertex_binding_descriptions = lib._bindings.as_ptr();
                s.p_vertex_attribute_descriptions = lib._attributes.as_ptr();
            }
        }
        // SAFETY: VUID-VkGraphicsPipelineCreateInfo-pInputAssemblyState-parameter.
        lib.input_assembly = unsafe { kept(info.p_input_assembly_state.cast()) }?;
    }
    if pre {
        // SAFETY: the caller's guarantee: a valid info with this subset; `lib` holds its stages (above).
        unsafe { keep_pre_rasterization(&mut lib, info, &states) }?;
    }
    if fs {
        // SAFETY: VUID-VkGraphicsPipelineCreateInfo-pDepthStencilState-parameter (null or valid).
        lib.depth_stencil = unsafe { kept(info.p_depth_stencil_state.cast()) }?;
    }
    if fs || subsets.contains(Subsets::FRAGMENT_OUTPUT_INTERFACE) {
        // SAFETY: VUID-VkGraphicsPipelineCreateInfo-pMultisampleState-parameter (null or valid).
        lib.multisample = unsafe { kept(info.p_multisample_state.cast()) }?;
        if let Some(k) = &mut lib.multisample {
            let s = &mut *k.value;
            let words = s.rasterization_samples.as_raw().div_ceil(32);
            // SAFETY: VUID-VkPipelineMultisampleStateCreateInfo-pSampleMask-parameter:
            // null or ceil(samples / 32) masks.
            lib._sample_mask = unsafe { owned(s.p_sample_mask, words) };
            s.p_sample_mask = if lib._sample_mask.is_empty() { std::ptr::null() } else { lib._sample_mask.as_ptr() };
        }
    }
    if subsets.contains(Subsets::FRAGMENT_OUTPUT_INTERFACE) {
        // SAFETY: the caller's guarantee: a valid info with this subset.
        unsafe { keep_color_blend(&mut lib, info, &states) }?;
    }
    Ok(lib)
}

/// Where a kept structure is (null for none).
fn ptr<T>(k: &Option<Kept<T>>) -> *const T {
    k.as_ref().map_or(std::ptr::null(), |k| &*k.value as *const T)
}

/// A final link rebuilt as one monolithic create info; what it points at.
pub struct Monolithic {
    pub info: vk::GraphicsPipelineCreateInfo<'static>,
    _parts: Vec<Arc<Library>>,
    _stages: Vec<vk::PipelineShaderStageCreateInfo<'static>>,
    _dynamic: Box<(vk::PipelineDynamicStateCreateInfo<'static>, Vec<vk::DynamicState>)>,
    _chain: Chain,
}

/// Top-level structures of a library create info the copy accepts: the
/// subsets, the formats (copied) and creation feedback (the library's own
/// output, not part of its state).
const LIBRARY_TOP: &[vk::StructureType] = &[
    vk::StructureType::GRAPHICS_PIPELINE_LIBRARY_CREATE_INFO_EXT,
    vk::StructureType::PIPELINE_RENDERING_CREATE_INFO,
    vk::StructureType::PIPELINE_CREATION_FEEDBACK_CREATE_INFO,
];

impl Linker {
    /// Remembers the library `pipeline` made from `info` (the driver created
    /// it), or logs why not.
    ///
    /// # Safety
    /// `info` is the valid create info `pipeline` was made from.
    pub unsafe fn note_library(
        &self,
        dev: &crate::device::DeviceCore,
        info: &vk::GraphicsPipelineCreateInfo<'_>,
        pipeline: vk::Pipeline,
    ) {
        // SAFETY: the caller's guarantee (a valid chain).
        let made = unsafe { plain_chain(info.p_next, LIBRARY_TOP) }.and_then(|_| {
            // SAFETY: as above.
            let subsets = unsafe { crate::pnext::find::<vk::GraphicsPipelineLibraryCreateInfoEXT>(info.p_next) }
                .map(|g| g.flags & ALL)
                .filter(|f| !f.is_empty())
                .ok_or("no subsets")?;
            // SAFETY: the caller's guarantee.
            unsafe { record(self, info, subsets) }
        });
        match made {
            Ok(lib) => {
                self.libraries.lock().insert(pipeline, Arc::new(lib));
            }
            Err(why) => dev.log().log_once(
                crate::settings::LogLevel::Debug,
                crate::id::VARYINGS_SKIPPED,
                &format!("library {why}"),
                &format!(
                    "a graphics pipeline library is not remembered ({why}): pipelines linked from it stay unlinked"
                ),
            ),
        }
    }

    pub fn forget_pipeline(&self, pipeline: vk::Pipeline) {
        self.libraries.lock().remove(&pipeline);
    }
}

/// Whether `info` is a final link that asks for link-time optimization;
/// `Some(false)` for one that does not (fast linking).
///
/// # Safety
/// `info` is a valid create info.
pub(super) unsafe fn final_link(info: &vk::GraphicsPipelineCreateInfo<'_>) -> Option<bool> {
    // SAFETY: VUID-VkGraphicsPipelineCreateInfo-pNext-pNext: a valid chain.
    let libs = unsafe { crate::pnext::find::<vk::PipelineLibraryCreateInfoKHR>(info.p_next) }?;
    if info.flags.contains(vk::PipelineCreateFlags::LIBRARY_KHR) || libs.library_count == 0 {
        return None;
    }
    Some(info.flags.contains(vk::PipelineCreateFlags::LINK_TIME_OPTIMIZATION_EXT))
}

/// The monolithic create info equivalent to the final link `info`.
///
/// # Safety
/// `info` is a valid create info, a final link (`final_link`); the result
/// borrows its chain, valid for the call.
pub(super) unsafe fn monolithic(v: &Linker, info: &vk::GraphicsPipelineCreateInfo<'_>) -> Result<Monolithic, String> {
    // SAFETY: a valid chain (the caller's guarantee).
    let libs = unsafe { crate::pnext::find::<vk::PipelineLibraryCreateInfoKHR>(info.p_next) }.ok_or("no libraries")?;
    // SAFETY: VUID-VkPipelineLibraryCreateInfoKHR-pLibraries-parameter.
    let handles = unsafe { crate::ffi::slice(libs.p_libraries, libs.library_count) };
    let mut parts: Vec<Arc<Library>> = {
        let known = v.libraries.lock();
        handles.iter().map(|h| known.get(h).cloned()).collect::<Option<_>>().ok_or("a library is not remembered")?
    };
    let covered = parts.iter().fold(Subsets::empty(), |a, p| a | p.subsets);
    let missing = ALL & !covered;
    if !missing.is_empty() {
        // SAFETY: the final link's own state defines the subsets no library has.
        parts.push(Arc::new(unsafe { record(v, info, missing) }?));
    }
    let pick = |s: Subsets| parts.iter().find(|p| p.subsets.contains(s)).ok_or("a subset is missing");
    let (vi, pre, fs, fo) = (
        pick(Subsets::VERTEX_INPUT_INTERFACE)?,
        pick(Subsets::PRE_RASTERIZATION_SHADERS)?,
        pick(Subsets::FRAGMENT_SHADER)?,
        pick(Subsets::FRAGMENT_OUTPUT_INTERFACE)?,
    );
    let layout = if info.layout != vk::PipelineLayout::null() {
        info.layout
    } else {
        let mut ls: Vec<vk::PipelineLayout> =
            parts.iter().map(|p| p.layout).filter(|l| *l != vk::PipelineLayout::null()).collect();
        ls.dedup();
        match ls[..] {
            [l] => l,
            _ => return Err("the libraries' layouts differ".into()),
        }
    };
    let stages: Vec<vk::PipelineShaderStageCreateInfo<'static>> =
        pre.stages.iter().chain(&fs.stages).map(|s| s.info).collect();
    let mut states: Vec<vk::DynamicState> = Vec::new();
    for d in parts.iter().flat_map(|p| &p.dynamic) {
        if !states.contains(d) {
            states.push(*d);
        }
    }
    let mut dynamic = Box::new((vk::PipelineDynamicStateCreateInfo::default(), states));
    dynamic.0.dynamic_state_count = dynamic.1.len() as u32;
    dynamic.0.p_dynamic_states = dynamic.1.as_ptr();
    // SAFETY: a valid chain (the caller's guarantee), alive for the call.
    let mut chain = unsafe { Chain::copy(info.p_next) }.map_err(|e| e.to_string())?;
    chain.remove(vk::StructureType::PIPELINE_LIBRARY_CREATE_INFO_KHR);
    chain.remove(vk::StructureType::GRAPHICS_PIPELINE_LIBRARY_CREATE_INFO_EXT);
    if chain
        .get::<vk::PipelineCreationFeedbackCreateInfo>()
        .is_some_and(|f| f.pipeline_stage_creation_feedback_count != 0)
    {
        return Err("per-stage creation feedback".into());
    }
    if !chain.contains(vk::StructureType::PIPELINE_RENDERING_CREATE_INFO) {
        if let Some(r) = [fo, pre, fs].iter().find_map(|p| p.rendering.as_deref()) {
            chain.push(r);
        }
    }
    let mut out = *info;
    out.p_next = chain.head();
    out.flags &= !(vk::PipelineCreateFlags::LINK_TIME_OPTIMIZATION_EXT
        | vk::PipelineCreateFlags::RETAIN_LINK_TIME_OPTIMIZATION_INFO_EXT
        | vk::PipelineCreateFlags::LIBRARY_KHR);
    out.stage_count = stages.len() as u32;
    out.p_stages = stages.as_ptr();
    out.p_vertex_input_state = ptr(&vi.vertex_input);
    out.p_input_assembly_state = ptr(&vi.input_assembly);
    out.p_tessellation_state = ptr(&pre.tessellation);
    out.p_viewport_state = ptr(&pre.viewport);
    out.p_rasterization_state = ptr(&pre.rasterization);
    out.p_multisample_state = if fo.multisample.is_some() { ptr(&fo.multisample) } else { ptr(&fs.multisample) };
    out.p_depth_stencil_state = ptr(&fs.depth_stencil);
    out.p_color_blend_state = ptr(&fo.color_blend);
    out.p_dynamic_state = if dynamic.1.is_empty() { std::ptr::null() } else { &dynamic.0 };
    out.layout = layout;
    out.render_pass = pre.render_pass;
    out.subpass = pre.subpass;
    // SAFETY: the lifetime only ties the pointers to what they point at:
    // `Monolithic` owns it, or it is the application's chain, valid for the
    // call (the caller's guarantee).
    let info: vk::GraphicsPipelineCreateInfo<'static> = unsafe { std::mem::transmute(out) };
    Ok(Monolithic { info, _parts: parts, _stages: stages, _dynamic: dynamic, _chain: chain })
}

#[cfg(test)]
mod library_tests {
    use super::*;

    /// A chain of structures without pointers besides `pNext` is copied
    /// (the dropped types left out); one with another pointer is refused.
    #[test]
    fn only_plain_chains_are_kept() {
        let mut size = vk::PipelineShaderStageRequiredSubgroupSizeCreateInfo::default().required_subgroup_size(32);
        let mut inline = vk::ShaderModuleCreateInfo::default();
        let info = vk::PipelineShaderStageCreateInfo::default().push_next(&mut size).push_next(&mut inline);
        // SAFETY: a chain of live structures built just above.
        let chain = unsafe { plain_chain(info.p_next, &[vk::StructureType::SHADER_MODULE_CREATE_INFO]) }.unwrap();
        assert!(!chain.contains(vk::StructureType::SHADER_MODULE_CREATE_INFO));
        assert_eq!(
            chain.get::<vk::PipelineShaderStageRequiredSubgroupSizeCreateInfo>().unwrap().required_subgroup_size,
            32
        );
        let enables = [vk::TRUE];
        let mut writes = vk::PipelineColorWriteCreateInfoEXT::default().color_write_enables(&enables);
        let blend = vk::PipelineColorBlendStateCreateInfo::default().push_next(&mut writes);
        // SAFETY: as above.
        let refused = unsafe { plain_chain(blend.p_next, &[]) };
        assert!(refused.is_err_and(|e| e.contains("PIPELINE_COLOR_WRITE_CREATE_INFO_EXT")));
    }
}

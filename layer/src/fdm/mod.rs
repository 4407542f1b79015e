//! `VK_EXT_fragment_density_map` on drivers that lack it.
//!
//! **Surface.** The extension, its features (`fragmentDensityMap`,
//! `fragmentDensityMapNonSubsampledImages`; never `fragmentDensityMapDynamic`),
//! its properties and the `FRAGMENT_DENSITY_MAP` format feature of
//! `R8G8_UNORM` (the one format the spec requires) are added. Everything the
//! driver would reject is translated before it goes down and remembered: the
//! image usage bit (such images get `TRANSFER_SRC` so the layer can read
//! them), `SUBSAMPLED` image and sampler flags (images are stored at full
//! resolution), the `FRAGMENT_DENSITY_MAP_OPTIMAL` layout (as `GENERAL`), the
//! density-process stage (as the fragment shader stage) and access (as a
//! shader read), the render pass and dynamic rendering attachment
//! structures, and the pipeline creation flag. `VK_EXT_fragment_density_map_offset`
//! (and its QCOM original) is listed with it: the offsets given at the end of a
//! pass shift each view's bin grid ([`bins`]); the offset image flag is
//! translated away; `vkCmdEndRendering2EXT` is the layer's own.
//!
//! **Shaders.** `overlap_shaders::fdm` turns `FragSizeEXT` and
//! `FragInvocationCountEXT` into constants and scales `FragCoord`; a
//! pipeline whose fragment shader needs it gets one variant per fragment
//! area (constants baked in, no descriptor set or push constant taken from
//! the application).
//!
//! **Modes** (`fdm` setting): `baseline` renders every pass at a 1x1 area
//! (always allowed by the spec); `binned` captures each pass and replays it
//! per group of bins at lower resolution.
//!
//! **Binned rendering.** At the begin of a pass with a density map nothing
//! goes down: the commands recorded in the pass are kept and the density map
//! is read on the host. At the end of the pass the layer plans replays and
//! records, per replay, a downscale of the attachments that load and the
//! pass into scratch targets `1/area` the size of the framebuffer (the
//! replays of one area in one render pass instance), then one composite per
//! stored attachment that draws every bin into it (or, where that cannot
//! be, an upscale of each replay's bins by blits); a pass that cannot be
//! replayed renders once at 1x1. The files, in layers (each imports only
//! from its own layer or those below; `ci/module-cycles` checks that no
//! two files import each other, directly or not):
//!
//! - **model**: `commands` (the captured-command model: `Cmd`, the state
//!   snapshot, the replay transform), `model` (the pass as begun and as
//!   captured, its attachments, the per-command-buffer state), `map_readback`
//!   (the density map's texels, read on the host), [`bins`], [`layered`]
//!   (`VK_VALVE_fragment_density_map_layered`), `fallback` (why a pass
//!   renders at 1x1: one variant per reason);
//! - **plan** (pure, unit-tested): [`bins`] from the map to bins and
//!   replays; `replay_plan` from the bin plan to the steps each replay
//!   records, and the bin plans of recent passes;
//! - **recording**: `emit` (a captured command sent down under a replay's
//!   transform), [`multiview_flush`] (lavapipe's multiview loss worked
//!   around) and [`per_view`], [`descriptors`] (sets, shadowed for input
//!   attachments), `scratch` (the scratch targets and the blits to and from
//!   them), `gpu_objects` (the layer's pipelines and sets for the plan, the
//!   upscale and the composite), `composite`, `replay` (recording a host
//!   plan), `gpu_plan` (dynamic and deferred maps planned on the GPU),
//!   `live` (a pass going down for real, or live at 1x1);
//! - **hooks**: [`capture`] (commands inside a pass), [`shader_objects`],
//!   [`command_buffers`] (lifecycle, translated barriers, events and
//!   queries), [`pass`] (begin, subpass changes, end, secondaries),
//!   [`queue`] (submissions, and which density maps they may have written).

mod asked;
pub mod bins;
pub mod capture;
pub mod command_buffers;
mod commands;
mod composite;
pub mod descriptors;
mod emit;
mod fallback;
mod gpu_objects;
mod gpu_plan;
pub mod layered;
mod live;
mod map_readback;
mod model;
pub mod multiview_flush;
pub mod pass;
pub mod per_view;
pub mod queue;
mod region_clears;
mod replay;
mod replay_plan;
mod scratch;
pub mod shader_objects;
mod steps;
pub mod subsampled;
pub mod viewport_mask;

use crate::device::DeviceCore;
use crate::ffi::slice;
use crate::generated::args;
use crate::id;
use crate::pnext::Chain;
use crate::render_pass::{CreateArgs, RenderPassInfo};
use crate::settings::LogLevel;
use ash::vk;
use overlap_shaders::fdm as shader_fdm;
use parking_lot::Mutex;
use std::collections::HashMap;
use std::ffi::{c_char, CStr};
use std::sync::Arc;

pub use model::CbState;

pub const EXTENSION: &CStr = crate::plan::FDM_EXTENSION_NAME;
/// Largest fragment area per axis the layer renders.
pub const MAX_AREA: u32 = 4;
pub const MIN_TEXEL: u32 = 8;
pub const MAX_TEXEL: u32 = 256;
/// The areas a pipeline variant is made for.
pub const AREAS: [(u32, u32); 9] = [(1, 1), (1, 2), (1, 4), (2, 1), (2, 2), (2, 4), (4, 1), (4, 2), (4, 4)];

/// The structures the density map answers: its features and properties,
/// those of FDM2, of the offsets and (where the plan has it) of
/// `VK_VALVE_fragment_density_map_layered`.
pub const ANSWERS: crate::device::Answers = crate::device::Answers {
    features: &[
        vk::StructureType::PHYSICAL_DEVICE_FRAGMENT_DENSITY_MAP_FEATURES_EXT,
        vk::StructureType::PHYSICAL_DEVICE_FRAGMENT_DENSITY_MAP_2_FEATURES_EXT,
        vk::StructureType::PHYSICAL_DEVICE_FRAGMENT_DENSITY_MAP_OFFSET_FEATURES_QCOM,
        layered::FEATURES,
    ],
    properties: &[
        vk::StructureType::PHYSICAL_DEVICE_FRAGMENT_DENSITY_MAP_PROPERTIES_EXT,
        vk::StructureType::PHYSICAL_DEVICE_FRAGMENT_DENSITY_MAP_2_PROPERTIES_EXT,
        vk::StructureType::PHYSICAL_DEVICE_FRAGMENT_DENSITY_MAP_OFFSET_PROPERTIES_QCOM,
        layered::PROPERTIES,
    ],
    fill_features: fill_feature_chain,
    fill_properties: fill_property_chain,
};

/// The density map's feature structures of `chain`, filled.
///
/// # Safety
/// `chain` is null or a valid, writable output chain.
unsafe fn fill_feature_chain(plan: &crate::plan::Plan, chain: *mut std::ffi::c_void) {
    use crate::pnext::find_mut;
    // SAFETY: the caller's guarantee, for each structure looked up.
    unsafe {
        if let Some(f) = find_mut::<vk::PhysicalDeviceFragmentDensityMapFeaturesEXT>(chain) {
            fill_features(f);
        }
        if let Some(f) = find_mut::<vk::PhysicalDeviceFragmentDensityMap2FeaturesEXT>(chain) {
            fill_features2(f);
        }
        if let Some(f) = find_mut::<vk::PhysicalDeviceFragmentDensityMapOffsetFeaturesQCOM>(chain) {
            fill_offset_features(f);
        }
        if let Some(f) = find_mut::<layered::FeaturesValve>(chain).filter(|_| plan.fdm_layered) {
            layered::fill_features(f);
        }
    }
}

/// The density map's property structures of `chain`, filled.
///
/// # Safety
/// `chain` is null or a valid, writable output chain.
unsafe fn fill_property_chain(
    plan: &crate::plan::Plan,
    limits: &vk::PhysicalDeviceLimits,
    chain: *mut std::ffi::c_void,
) {
    use crate::pnext::find_mut;
    // SAFETY: the caller's guarantee, for each structure looked up.
    unsafe {
        if let Some(p) = find_mut::<vk::PhysicalDeviceFragmentDensityMapPropertiesEXT>(chain) {
            fill_properties(p);
        }
        if let Some(p) = find_mut::<vk::PhysicalDeviceFragmentDensityMap2PropertiesEXT>(chain) {
            fill_properties2(p, limits);
        }
        if let Some(p) = find_mut::<vk::PhysicalDeviceFragmentDensityMapOffsetPropertiesQCOM>(chain) {
            fill_offset_properties(p);
        }
        if let Some(p) = find_mut::<layered::PropertiesValve>(chain).filter(|_| plan.fdm_layered) {
            layered::fill_properties(p, limits);
        }
    }
}

/// Dynamic and deferred maps (`fragmentDensityMapDynamic`,
/// `fragmentDensityMapDeferred`) are honoured at density 1: a pass whose map
/// view has either flag renders at 1x1 — a fragment area no larger than any
/// map asks for, which the spec allows — without reading the map, so its
/// contents may come from anywhere, at any time before the pass executes.
/// Logged per pass (`OVERLAP-FDM-Fallback`); no work is saved there.
pub fn fill_features(f: &mut vk::PhysicalDeviceFragmentDensityMapFeaturesEXT) {
    f.fragment_density_map = vk::TRUE;
    f.fragment_density_map_dynamic = vk::TRUE;
    f.fragment_density_map_non_subsampled_images = vk::TRUE;
}

/// `VK_EXT_fragment_density_map2`, listed with the emulated FDM; deferred
/// maps are honoured at density 1 (see [`fill_features`]).
pub const EXTENSION2: &CStr = crate::plan::FDM2_EXTENSION_NAME;

pub fn fill_features2(f: &mut vk::PhysicalDeviceFragmentDensityMap2FeaturesEXT) {
    f.fragment_density_map_deferred = vk::TRUE;
}

/// What the emulation honours: subsampled images are stored at full
/// resolution and subsampled samplers are plain samplers, so the device's
/// own limits for array layers and samplers apply; a load of a subsampled
/// attachment is resampled to the pass's own density (the replay downscales
/// the full-resolution contents to each fragment's area: `subsampledLoads`);
/// no sampler reads early (no coarse reconstruction in the vertex stage).
pub fn fill_properties2(p: &mut vk::PhysicalDeviceFragmentDensityMap2PropertiesEXT, limits: &vk::PhysicalDeviceLimits) {
    p.subsampled_loads = vk::TRUE;
    p.subsampled_coarse_reconstruction_early_access = vk::FALSE;
    p.max_subsampled_array_layers = limits.max_image_array_layers.max(2);
    p.max_descriptor_set_subsampled_samplers = limits.max_descriptor_set_samplers.max(1);
}

/// `VK_EXT_fragment_density_map_offset` (and the QCOM original, whose
/// structures have the same types): offsets are applied by shifting each
/// view's bin grid ([`bins`]).
pub const OFFSET_EXTENSIONS: [&CStr; 2] =
    [crate::plan::FDM_OFFSET_EXTENSION_NAME, crate::plan::FDM_OFFSET_QCOM_EXTENSION_NAME];

pub fn fill_offset_features(f: &mut vk::PhysicalDeviceFragmentDensityMapOffsetFeaturesQCOM) {
    f.fragment_density_map_offset = vk::TRUE;
}

/// Offsets in multiples of the largest area: a shifted bin still starts on
/// a fragment boundary of every area (`b_s` a multiple of `1/s`).
pub fn fill_offset_properties(p: &mut vk::PhysicalDeviceFragmentDensityMapOffsetPropertiesQCOM) {
    p.fragment_density_offset_granularity = vk::Extent2D { width: MAX_AREA, height: MAX_AREA };
}

/// `VkRenderingEndInfoEXT` (`VK_EXT_fragment_density_map_offset`; ash
/// 0.38 predates it): the end of a dynamic render pass, whose chain may hold
/// the density offsets.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct RenderingEndInfo {
    pub s_type: vk::StructureType,
    pub p_next: *const std::ffi::c_void,
}

/// `VK_STRUCTURE_TYPE_RENDERING_END_INFO_EXT` (= `_KHR`).
pub const RENDERING_END_INFO: vk::StructureType = vk::StructureType::from_raw(1_000_619_003);

/// `vkCmdEndRendering2EXT` / `vkCmdEndRendering2KHR`.
pub type PfnCmdEndRendering2 = unsafe extern "system" fn(vk::CommandBuffer, *const RenderingEndInfo);

/// The density offsets a `pNext` chain at the end of a pass gives
/// (`VkRenderPassFragmentDensityMapOffsetEndInfoEXT`, the QCOM structure's
/// type), empty without them.
///
/// # Safety
/// `p_next` is a valid `pNext` chain.
pub unsafe fn end_offsets(p_next: *const std::ffi::c_void) -> Vec<vk::Offset2D> {
    // SAFETY: the caller's guarantee.
    match unsafe { crate::pnext::find::<vk::SubpassFragmentDensityMapOffsetEndInfoQCOM>(p_next) } {
        // SAFETY: VUID-VkRenderPassFragmentDensityMapOffsetEndInfoEXT-pFragmentDensityOffsets-parameter:
        // `fragmentDensityOffsetCount` offsets.
        Some(o) => unsafe { slice(o.p_fragment_density_offsets, o.fragment_density_offset_count) }.to_vec(),
        None => Vec::new(),
    }
}

pub fn fill_properties(p: &mut vk::PhysicalDeviceFragmentDensityMapPropertiesEXT) {
    p.min_fragment_density_texel_size = vk::Extent2D { width: MIN_TEXEL, height: MIN_TEXEL };
    p.max_fragment_density_texel_size = vk::Extent2D { width: MAX_TEXEL, height: MAX_TEXEL };
    p.fragment_density_invocations = vk::FALSE;
}

/// The density-map texel size limits the device reports under `plan` (the
/// emulation's, clamped by the profile's: `architecture`'s clamp, which
/// `vkGetPhysicalDeviceProperties2` applies): `(min, max)` per axis. The
/// binning must use what the application was told.
pub fn texel_limits(log: &crate::log::Logger, plan: &crate::plan::Plan) -> ((u32, u32), (u32, u32)) {
    let mut p = vk::PhysicalDeviceFragmentDensityMapPropertiesEXT::default();
    fill_properties(&mut p);
    crate::architecture::clamp_fdm_properties(log, plan, &mut p);
    let (min, max) = (p.min_fragment_density_texel_size, p.max_fragment_density_texel_size);
    // A profile whose minimum exceeds the emulation's maximum: the minimum wins (never an empty range).
    ((min.width, min.height), (max.width.max(min.width), max.height.max(min.height)))
}

impl Fdm {
    /// The texel size (within the limits the device reports) and the largest
    /// fragment area of a pass of `extent` over a map of `map` texels: what
    /// both plans bin with.
    pub(super) fn texel_grid(&self, extent: (u32, u32), map: (u32, u32)) -> bins::TexelGrid {
        let ((min_w, min_h), (max_w, max_h)) = self.texel_limits;
        let texel = (bins::texel_size(extent.0, map.0, min_w, max_w), bins::texel_size(extent.1, map.1, min_h, max_h));
        (texel, (bins::area_cap(extent.0, map.0, MAX_AREA), bins::area_cap(extent.1, map.1, MAX_AREA)))
    }
}

/// Adds the density-map format feature where the spec requires it.
pub fn fill_format(format: vk::Format, p: &mut vk::FormatProperties) {
    if format == vk::Format::R8G8_UNORM {
        p.optimal_tiling_features |= vk::FormatFeatureFlags::FRAGMENT_DENSITY_MAP_EXT;
    }
}

pub fn fill_format3(format: vk::Format, p: &mut vk::FormatProperties3) {
    if format == vk::Format::R8G8_UNORM {
        p.optimal_tiling_features |= vk::FormatFeatureFlags2::FRAGMENT_DENSITY_MAP_EXT;
    }
}

/// An image format query as the driver can answer it (its usage and flags),
/// or `None` where the layer's answer is "not supported".
pub fn translate_image_query(
    format: vk::Format,
    tiling: vk::ImageTiling,
    usage: vk::ImageUsageFlags,
    flags: vk::ImageCreateFlags,
) -> Option<(vk::ImageUsageFlags, vk::ImageCreateFlags)> {
    let mut usage = usage;
    if usage.contains(vk::ImageUsageFlags::FRAGMENT_DENSITY_MAP_EXT) {
        // EXTENDED_USAGE: a usage that some view format of the image
        // supports. Every view format shares the image's compatibility class
        // (with or without a format list: conformant drivers, and the CTS's
        // extended_usage_bit_compatibility group, judge by the class).
        let extended = flags.contains(vk::ImageCreateFlags::EXTENDED_USAGE) && in_r8g8_class(format);
        if (format != vk::Format::R8G8_UNORM && !extended) || tiling != vk::ImageTiling::OPTIMAL {
            return None;
        }
        usage = (usage & !vk::ImageUsageFlags::FRAGMENT_DENSITY_MAP_EXT)
            | vk::ImageUsageFlags::TRANSFER_SRC
            | vk::ImageUsageFlags::SAMPLED;
    }
    Some((usage, flags & !DRIVER_LACKS_FLAGS))
}

/// Image create flags of the emulated extensions: images are stored at full
/// resolution and never shifted, so the driver is asked without them.
pub const DRIVER_LACKS_FLAGS: vk::ImageCreateFlags =
    vk::ImageCreateFlags::from_raw(vk::ImageCreateFlags::SUBSAMPLED_EXT.as_raw() | 0x0000_8000);

/// Whether `format` is in the 16-bit compatibility class of `R8G8_UNORM`
/// (the spec's table of compatible formats): the formats an image can be
/// viewed as `R8G8_UNORM` from.
pub fn in_r8g8_class(format: vk::Format) -> bool {
    use vk::Format as F;
    matches!(
        format,
        F::R4G4B4A4_UNORM_PACK16
            | F::B4G4R4A4_UNORM_PACK16
            | F::R5G6B5_UNORM_PACK16
            | F::B5G6R5_UNORM_PACK16
            | F::R5G5B5A1_UNORM_PACK16
            | F::B5G5R5A1_UNORM_PACK16
            | F::A1R5G5B5_UNORM_PACK16
            | F::A4R4G4B4_UNORM_PACK16
            | F::A4B4G4R4_UNORM_PACK16
            | F::R8G8_UNORM
            | F::R8G8_SNORM
            | F::R8G8_USCALED
            | F::R8G8_SSCALED
            | F::R8G8_UINT
            | F::R8G8_SINT
            | F::R8G8_SRGB
            | F::R16_UNORM
            | F::R16_SNORM
            | F::R16_USCALED
            | F::R16_SSCALED
            | F::R16_UINT
            | F::R16_SINT
            | F::R16_SFLOAT
    )
}

pub fn layout(l: vk::ImageLayout) -> vk::ImageLayout {
    if l == vk::ImageLayout::FRAGMENT_DENSITY_MAP_OPTIMAL_EXT {
        vk::ImageLayout::GENERAL
    } else {
        l
    }
}

/// Functions replacing a density-map flag the driver does not know by the
/// nearest one it does.
macro_rules! translate_flag {
    ($( $name:ident($t:ident): $from:ident => $to:ident; )*) => {
        $(
            fn $name(x: vk::$t) -> vk::$t {
                if x.contains(vk::$t::$from) {
                    (x & !vk::$t::$from) | vk::$t::$to
                } else {
                    x
                }
            }
        )*
    };
}

translate_flag! {
    stages(PipelineStageFlags): FRAGMENT_DENSITY_PROCESS_EXT => FRAGMENT_SHADER;
    access(AccessFlags): FRAGMENT_DENSITY_MAP_READ_EXT => SHADER_READ;
    stages2(PipelineStageFlags2): FRAGMENT_DENSITY_PROCESS_EXT => FRAGMENT_SHADER;
    access2(AccessFlags2): FRAGMENT_DENSITY_MAP_READ_EXT => SHADER_READ;
}

/// `fdm=baseline|binned` (decided by the plan).
pub use crate::plan::FdmMode as Mode;

#[derive(Clone, Copy, Debug)]
pub struct ImageInfo {
    pub format: vk::Format,
    pub extent: vk::Extent3D,
    pub samples: vk::SampleCountFlags,
    pub usage: vk::ImageUsageFlags,
    pub layers: u32,
    pub density_map: bool,
    /// Made with `VK_IMAGE_CREATE_SUBSAMPLED_BIT_EXT`: a density-map pass
    /// may store it packed ([`subsampled`]).
    pub subsampled: bool,
    /// A framebuffer made with it (or a pass recorded) loads it in a
    /// density-map pass: never packed (the layer's downscales read it at
    /// full resolution).
    pub loaded: bool,
    /// A recorded pass stored it packed.
    pub packed: bool,
}

#[derive(Clone, Copy, Debug)]
pub struct ViewInfo {
    pub image: vk::Image,
    pub format: vk::Format,
    pub range: vk::ImageSubresourceRange,
    pub view_type: vk::ImageViewType,
    pub components: vk::ComponentMapping,
    /// Made with a `VkImageViewUsageCreateInfo`: its usage may lack what the
    /// layer added to the image's.
    pub own_usage: bool,
    /// Made with the dynamic or deferred density-map flag: passes with it as
    /// their map render at 1x1 ([`fill_features`]).
    pub dynamic_or_deferred: bool,
}

/// A render pass as the layer needs it.
#[derive(Clone, Debug)]
pub struct PassInfo {
    pub attachments: Vec<vk::AttachmentDescription>,
    /// The density map attachment, if the pass has one.
    pub density_map: Option<u32>,
    /// Attachments some subpass uses (colour, resolve, depth/stencil, input,
    /// depth/stencil resolve).
    pub used: Vec<bool>,
    /// Multiview: the union of the subpasses' view masks (0 without).
    pub view_mask: u32,
    /// Some subpass reads input attachments.
    pub inputs: bool,
    /// Created with the per-layer density bit
    /// (`VK_VALVE_fragment_density_map_layered`).
    pub per_layer: bool,
    /// The first subpass's colour references (the attachment per slot,
    /// `None` unused) and its depth/stencil attachment: what a
    /// `vkCmdClearAttachments` of the layer's names.
    pub first_subpass: (Vec<Option<u32>>, Option<u32>),
    /// The layer's twin of the pass whose attachments never clear (`CLEAR`
    /// loads as `DONT_CARE`; compatible with it): the GPU plan's replays
    /// begin with it and clear only the regions they render. Null where
    /// nothing clears.
    pub unclearing: vk::RenderPass,
}

#[derive(Clone, Debug)]
pub struct FramebufferInfo {
    pub views: Vec<vk::ImageView>,
    pub imageless: bool,
    pub extent: (u32, u32),
    pub layers: u32,
}

/// What the layer learnt from a shader module.
#[derive(Clone, Debug, Default)]
pub struct ModuleFacts {
    pub side_effects: bool,
    pub sample_rate: bool,
    /// The application's SPIR-V, kept for fragment shaders that read
    /// FragCoord or a density built-in: they need a variant per area.
    pub words: Option<Arc<Vec<u32>>>,
    /// The application's SPIR-V of a module with a vertex entry point, kept
    /// where the multiview flush runs (its partner pipelines gate it).
    pub vertex: Option<Arc<Vec<u32>>>,
    /// The application's SPIR-V of a module that declares a combined image
    /// sampler: rewritten where a pipeline's layout has a subsampled one
    /// ([`subsampled`]).
    pub sampled: Option<Arc<Vec<u32>>>,
}

/// A pipeline made for a density-map pass.
#[derive(Debug, Default)]
pub struct PipelineInfo {
    /// Whether the application's viewports/scissors were static (the layer
    /// made them dynamic and sets them at bind).
    pub static_viewports: Option<Vec<vk::Viewport>>,
    pub static_scissors: Option<Vec<vk::Rect2D>>,
    /// Variants per fragment area (the application's handle is area 1x1).
    pub variants: HashMap<(u32, u32), vk::Pipeline>,
    /// Its fragment shader reads FragCoord or a density built-in: a replay
    /// above 1x1 needs its variant (one that could not be made renders the
    /// pass at 1x1).
    pub needs_variants: bool,
    pub side_effects: bool,
}

/// The device's density-map state, private to the density-map module
/// (its submodules reach the fields; the rest of the layer asks through
/// methods: [`Fdm::is_binned`], [`Fdm::is_lost`], …).
pub struct Fdm {
    mode: Mode,
    /// The commands below this part of the layer: the layer's other hooks
    /// where the device has them, else the next layer.
    below: ash::Device,
    images: Mutex<HashMap<vk::Image, ImageInfo>>,
    views: Mutex<HashMap<vk::ImageView, ViewInfo>>,
    passes: Mutex<HashMap<vk::RenderPass, Arc<PassInfo>>>,
    framebuffers: Mutex<HashMap<vk::Framebuffer, Arc<FramebufferInfo>>>,
    modules: Mutex<HashMap<vk::ShaderModule, Arc<ModuleFacts>>>,
    /// Subsampled samplers, their set layouts' hidden table bindings, the
    /// images' bin tables ([`subsampled`]).
    subsampled: subsampled::State,
    pipelines: Mutex<HashMap<vk::Pipeline, Arc<PipelineInfo>>>,
    /// Shader objects made on this device, with their per-area variants.
    shader_objects: Mutex<HashMap<vk::ShaderEXT, Arc<shader_objects::ShaderObjectInfo>>>,
    /// `VK_EXT_shader_object`'s commands below the density map (the layer's
    /// other hooks where it has them, else the next layer's), where the
    /// chain has the extension.
    below_shader_object: Option<ash::ext::shader_object::DeviceFn>,
    cb_states: parking_lot::RwLock<HashMap<vk::CommandBuffer, Arc<Mutex<CbState>>>>,
    /// Layouts of density-map images after the last submission that changed them.
    map_layouts: Mutex<HashMap<vk::Image, vk::ImageLayout>>,
    /// Per density-map image: how many submissions may have written it.
    map_generation: Mutex<HashMap<vk::Image, u64>>,
    /// The last host read of each density-map view, with the generation it saw.
    map_cache: Mutex<HashMap<vk::ImageView, (u64, Arc<map_readback::MapTexels>)>>,
    /// Recent bin plans, by map contents and pass shape.
    plans: replay_plan::PlanCache,
    /// Held around every queue submission, the layer's and the application's.
    queue_lock: Mutex<()>,
    reader: Mutex<Option<map_readback::MapReader>>,
    scratch: Mutex<scratch::ScratchCache>,
    memory: vk::PhysicalDeviceMemoryProperties,
    /// The application's queue the map reads submit on (`None`: no queue
    /// can copy, every pass renders at 1x1).
    queue: Option<crate::ffi::LayerQueue>,
    /// A `VK_ERROR_DEVICE_LOST` met by the layer's own submission or wait
    /// (inside a command that returns nothing): the device's later
    /// submissions and waits return it.
    lost: std::sync::atomic::AtomicBool,
    set_loader_data: Option<crate::ffi::PfnSetDeviceLoaderData>,
    /// Pipeline-statistics pools counting fragment-shader invocations alone:
    /// their queries may stay active across a binned pass.
    replay_counting_pools: Mutex<std::collections::HashSet<vk::QueryPool>>,
    /// The texel size limits the device reports (`MIN_TEXEL`/`MAX_TEXEL`,
    /// or the architecture profile's): the binning's.
    texel_limits: ((u32, u32), (u32, u32)),
    /// `fdm_overlay`: tint each bin by its area.
    overlay: bool,
    /// The tests' controls (`debug_fdm_misreplay`, `debug_fdm_without`).
    controls: Controls,
    /// The driver's `VK_EXT_conditional_rendering`, enabled by the layer:
    /// passes with a dynamic or deferred map are planned on the GPU
    /// ([`gpu_plan`]); `None`: they render at 1x1.
    conditional: Option<ash::ext::conditional_rendering::DeviceFn>,
    /// The GPU plan's pipelines, made at first use.
    gpu_plan: Mutex<gpu_objects::Objects>,
    /// The next layer's device commands, none of them the layer's own
    /// hooks: the GPU plan's objects are made and destroyed through it (the
    /// layer's hooks must not see them, and are gone at vkDestroyDevice).
    raw: Option<ash::Device>,
    /// The layer enabled `shaderStorageImageWriteWithoutFormat` in `binned`
    /// mode ([`StrippedFdm::storage_composite`]): single-sampled colour
    /// attachments get the storage usage and the composite writes them in a
    /// compute shader ([`composite`]).
    storage_composite: bool,
    /// lavapipe's multiview loss worked around ([`multiview_flush`]); `None`
    /// where it does not run.
    flush: Option<multiview_flush::Flush>,
    /// `fdm_dynamic_areas`: the areas the GPU plan's regions may take
    /// ([`asked`]: each is one more emission of every draw).
    dynamic_areas: asked::DynamicAreas,
    /// `debug_fdm_steps`: the GPU plan's step times, and the device's
    /// nanoseconds per timestamp tick.
    steps: Option<steps::Steps>,
    timestamp_period: f32,
    /// Per-view viewports for multiview replays ([`per_view`]); `None`
    /// where they do not run.
    per_view: Option<per_view::PerView>,
    /// The replays of one area as viewports of one replay
    /// ([`viewport_mask`]); `None` where they do not run.
    masks: Option<viewport_mask::Masks>,
    /// `VK_EXT_multi_draw`'s draws of the next layer (the device core's
    /// `state.multi_draw`; null where neither the application nor the layer
    /// enabled it: then nothing calls them).
    multi_draw: ash::ext::multi_draw::DeviceFn,
    /// Format features, for blits.
    format_features: Mutex<HashMap<vk::Format, vk::FormatFeatureFlags>>,
    /// The sample counts of sampled colour images (non-integer formats): the
    /// GPU plan's upscale of a multisampled attachment samples its scratch
    /// target.
    sampled_color_samples: vk::SampleCountFlags,
    /// The same for depth images (the upscale of a stored depth attachment).
    sampled_depth_samples: vk::SampleCountFlags,
    instance: ash::Instance,
    physical_device: vk::PhysicalDevice,
    /// Descriptor set layouts (plain ones) and sets, for shadow copies whose
    /// input attachments read scratch views.
    set_layouts: Mutex<HashMap<vk::DescriptorSetLayout, Arc<descriptors::LayoutInfo>>>,
    sets: Mutex<HashMap<vk::DescriptorSet, descriptors::SetInfo>>,
}

/// The tests' controls of the density map: deliberately wrong or older
/// behaviours that show a check firing (`debug_fdm_misreplay`, and
/// `debug_fdm_without`, a comma-separated list of the names below without
/// `without_`; `per_view_areas` for `one_area_per_pass`). All off in use.
#[derive(Clone, Copy, Debug, Default)]
pub struct Controls {
    /// `debug_fdm_misreplay`: replays above 1x1 shift their viewports by one
    /// fragment (a deliberately wrong replay, for the tests' controls).
    pub misreplay: bool,
    /// `debug_fdm_without=per_view_areas`: a multiview pass gives every view
    /// the smallest area any view asks for (part 1's rule; a control).
    pub one_area_per_pass: bool,
    /// `debug_fdm_without=offsets`: density offsets are ignored (a control).
    pub without_offsets: bool,
    /// `debug_fdm_without=per_layer`: a per-layer pass's layers all read
    /// map layer 0 (a control).
    pub without_per_layer: bool,
    /// `debug_fdm_without=edge_fragments`: a bin or region that ends the
    /// render area may end inside a fragment (a control).
    pub without_edge_fragments: bool,
    /// `debug_fdm_without=library_variants`: a link of graphics pipeline
    /// libraries gets no per-area variants (part 1's behaviour; a control).
    pub without_library_variants: bool,
    /// `debug_fdm_without=shader_object_variants`: shader objects get no
    /// per-area variants; the application's object is replayed at every
    /// area (a control).
    pub without_shader_object_variants: bool,
    /// `debug_fdm_without=msaa`: a multisampled attachment that loads or
    /// stores renders its pass at 1x1 (part 1's fallback; a control).
    pub without_msaa: bool,
    /// `debug_fdm_without=dynamic_state`: dynamic state beyond Vulkan 1.3 goes
    /// down at once instead of being captured (part 1's behaviour; a control).
    pub without_dynamic_state: bool,
    /// `debug_fdm_without=gpu_plan`: a dynamic or deferred map is read on the
    /// host when the pass is recorded, as a static one (stale where the GPU
    /// writes it later; a control).
    pub without_gpu_plan: bool,
    /// `debug_fdm_without=compute_restore`: the application's compute
    /// pipeline and sets are not bound again after the GPU plan's dispatch
    /// or the composite's (a control).
    pub without_compute_restore: bool,
    /// `debug_fdm_without=region_clears`: the GPU plan's render pass
    /// instances clear nothing and neither do its regions (a planted fault:
    /// a control).
    pub without_region_clears: bool,
    /// `debug_fdm_without=clear_draws`: the GPU plan's region clears are a
    /// `vkCmdClearAttachments` under each region's predicate, never one
    /// draw per area (`region_clears.rs`).
    pub without_clear_draws: bool,
    /// `debug_fdm_without=plan_barrier`: the GPU plan's shader is not
    /// ordered after the transfers that write its inputs (a planted fault:
    /// the control of the synchronization validation test).
    pub without_plan_barrier: bool,
    /// `debug_fdm_without=direct_1x1`: the GPU plan renders area 1x1 into
    /// a scratch target and upscales it like every other area, instead of
    /// into the attachments themselves.
    pub without_direct_1x1: bool,
    /// `debug_fdm_without=full_resolution_write` (measuring only): the host
    /// plan's composite draws and the GPU plan's upscales are not recorded
    /// (their barriers are), so a pass costs everything but writing its
    /// coarse areas into the attachments; the pixels are wrong.
    pub without_full_resolution_write: bool,
    /// `debug_fdm_without=packed_subsampled`: subsampled attachments are
    /// stored at full resolution, never packed.
    pub without_packed_subsampled: bool,
    /// `debug_fdm_without=subsampled_reads` (a planted fault): pipelines
    /// sample subsampled bindings as they are, not through the bin table.
    pub without_subsampled_reads: bool,
    /// `debug_fdm_without=painters_order`: the host plan's drawn composite
    /// draws every area's rectangles exactly, never the most common area's
    /// bounding box first (`composite::painted`).
    pub without_painters_order: bool,
    /// `debug_fdm_without=per_view_viewports`: a multiview pass's replays
    /// give every view the replay's whole rectangle (no per-view viewports;
    /// the earlier path, for the benchmarks and the tests).
    pub without_per_view_viewports: bool,
    /// `debug_fdm_without=viewport_mask`: the replays of one area record
    /// the pass each (no viewport-mask partners; the earlier path, for the
    /// benchmarks and the tests).
    pub without_viewport_mask: bool,
    /// `debug_fdm_without=viewport_mask_nv`: the viewport masks broadcast
    /// through the layer's geometry shader even where the device has
    /// `VK_NV_viewport_array2` (the geometry path tried on such a device).
    pub without_viewport_mask_nv: bool,
    /// `debug_fdm_without=gpu_plan_by_draw`: the GPU plan always replays the
    /// whole pass per region and area (the other form, for the tests).
    pub without_gpu_plan_by_draw: bool,
    /// `debug_fdm_without=app_conditional`: the GPU plan ignores the
    /// application's conditional rendering around a pass (and nests its own
    /// in it, which the spec forbids: a control).
    pub without_app_conditional: bool,
    /// `debug_fdm_without=composite`: a host-planned pass upscales each
    /// replay by blits or copies instead of sharing one render pass instance
    /// per area and one composite per attachment (the earlier path, for the
    /// benchmarks and the tests).
    pub without_composite: bool,
    /// `debug_fdm_without=scratch_per_command_buffer`: the scratch cache's
    /// `shared` switch (`scratch::ScratchCache::shared`; a control).
    pub scratch_per_command_buffer: bool,
}

impl Controls {
    /// The controls the settings ask for.
    pub fn from_settings(settings: &crate::settings::Settings) -> Controls {
        let without = settings.debug_fdm_without.as_deref().unwrap_or_default();
        let without: Vec<&str> = without.split(',').map(str::trim).collect();
        let has = |name: &str| without.contains(&name);
        Controls {
            misreplay: settings.debug_fdm_misreplay,
            one_area_per_pass: has("per_view_areas"),
            without_composite: has("composite"),
            without_offsets: has("offsets"),
            without_per_layer: has("per_layer"),
            without_edge_fragments: has("edge_fragments"),
            without_library_variants: has("library_variants"),
            without_shader_object_variants: has("shader_object_variants"),
            without_msaa: has("msaa"),
            without_dynamic_state: has("dynamic_state"),
            without_gpu_plan: has("gpu_plan"),
            without_compute_restore: has("compute_restore"),
            without_gpu_plan_by_draw: has("gpu_plan_by_draw"),
            without_region_clears: has("region_clears"),
            without_clear_draws: has("clear_draws"),
            without_plan_barrier: has("plan_barrier"),
            without_direct_1x1: has("direct_1x1"),
            without_full_resolution_write: has("full_resolution_write"),
            without_packed_subsampled: has("packed_subsampled"),
            without_subsampled_reads: has("subsampled_reads"),
            without_painters_order: has("painters_order"),
            without_per_view_viewports: has("per_view_viewports"),
            without_viewport_mask: has("viewport_mask"),
            without_viewport_mask_nv: has("viewport_mask_nv"),
            without_app_conditional: has("app_conditional"),
            scratch_per_command_buffer: has("scratch_per_command_buffer"),
        }
    }
}

/// The density map's part of `vkCreateDevice` before the call down, on
/// `down` (the application's create info, or interlock's copy of it): the
/// driver's conditional rendering for the GPU plan of dynamic and deferred
/// maps, and the multiview flush where the setting asks for it (`auto`:
/// llvmpipe) and the driver has multi-draw and draw parameters — not beside
/// the locked interlock strategies (`locked`), whose draw hooks its
/// multi-draws would pass by. `Ok(None)`: no density map, or a create info
/// that goes down unchanged (logged); `Err` is what `vkCreateDevice` returns.
///
/// # Safety
/// `down` must be a valid `VkDeviceCreateInfo`.
pub unsafe fn prepare<'a>(
    c: &crate::device::Creation,
    down: &vk::DeviceCreateInfo<'a>,
    locked: bool,
) -> Result<Option<StrippedFdm<'a>>, vk::Result> {
    let Some(mode) = c.plan.fdm_mode() else { return Ok(None) };
    // The extension needs Vulkan 1.1 (or VK_KHR_get_physical_device_properties2): only where the application's
    // effective version is 1.1 or later (its instance may then query the feature).
    let v11 = vk::api_version_minor(c.effective_version()) >= 1;
    let conditional = mode == Mode::Binned && v11 && {
        // SAFETY: `pd` is valid (VUID-vkCreateDevice-physicalDevice-parameter).
        let listed = unsafe { c.inst.fns.enumerate_device_extension_properties(c.pd) }.unwrap_or_default();
        listed.iter().any(|e| e.extension_name_as_c_str() == Ok(CONDITIONAL_RENDERING)) && {
            let mut cr = vk::PhysicalDeviceConditionalRenderingFeaturesEXT::default();
            // The driver lists the extension, so it knows the structure.
            (c.features2)(&mut vk::PhysicalDeviceFeatures2::default().push_next(&mut cr));
            cr.conditional_rendering == vk::TRUE
        }
    };
    let flush = mode == Mode::Binned
        && crate::settings::switch(c.inst.settings.fdm_multiview_flush, c.facts.is_llvmpipe())
        && !locked
        && v11
        && c.facts.has_extension("VK_EXT_multi_draw")
        && {
            let mut m = vk::PhysicalDeviceMultiDrawFeaturesEXT::default();
            let mut p = vk::PhysicalDeviceShaderDrawParametersFeatures::default();
            // The driver lists the extension (it knows the structure), and Vulkan 1.1 has draw parameters.
            (c.features2)(&mut vk::PhysicalDeviceFeatures2::default().push_next(&mut m).push_next(&mut p));
            m.multi_draw == vk::TRUE && p.shader_draw_parameters == vk::TRUE
        };
    // The core features, asked for only where their users can run (binned, Vulkan 1.1: a 1.0 application may not
    // have `vkGetPhysicalDeviceFeatures2` called for it).
    let core = (mode == Mode::Binned && v11)
        .then(|| {
            let mut core = vk::PhysicalDeviceFeatures2::default();
            (c.features2)(&mut core);
            core.features
        })
        .unwrap_or_default();
    // The composite's compute shader writes attachments of any format as storage images.
    let storage = mode == Mode::Binned
        && conditional
        && core.shader_storage_image_write_without_format == vk::TRUE
        && crate::settings::switch(c.inst.settings.fdm_storage_composite, !c.facts.is_llvmpipe());
    // Per-view viewports (beside the multiview flush, their partners get the flush's partners in turn).
    let per_view = mode == Mode::Binned
        && v11
        && c.facts.has_extension(per_view::EXTENSION.to_str().unwrap_or_default())
        && !Controls::from_settings(&c.inst.settings).without_per_view_viewports
        && core.multi_viewport == vk::TRUE;
    // The replays of one area as viewports (single-view passes): the mask needs `multiViewport` and as many
    // viewports, and the NVIDIA extension or a geometry stage.
    let controls = Controls::from_settings(&c.inst.settings);
    let nv = c.facts.has_extension(viewport_mask::EXTENSION.to_str().unwrap_or_default())
        && !controls.without_viewport_mask_nv;
    // SAFETY: `pd` is valid (VUID-vkCreateDevice-physicalDevice-parameter).
    let limits = unsafe { c.inst.fns.get_physical_device_properties(c.pd) }.limits;
    // The geometry path by default only where it was measured (llvmpipe: no GPU cost at `fdm-bench`'s geometry);
    // elsewhere its cost on geometry-heavy passes is unknown. `debug_fdm_without=viewport_mask_nv` asks for it.
    let geometry = c.facts.is_llvmpipe() || controls.without_viewport_mask_nv;
    let mask = (mode == Mode::Binned && v11 && !controls.without_viewport_mask)
        .then(|| viewport_mask::Broadcast::of(&limits, &core, (nv, geometry)))
        .flatten();
    // SAFETY: the caller's guarantee.
    // Subsampled attachments packed: by default where the full-resolution write costs more than the table's reads.
    let packed = match c.inst.settings.fdm_subsampled {
        "packed" => true,
        "full" => false,
        _ => c.facts.is_llvmpipe(),
    };
    match unsafe { strip(down, conditional, flush, (storage, per_view, mask)) } {
        Ok(s) => Ok(Some(StrippedFdm { subsampled: s.gpu_plan && packed, ..s })),
        Err(e) => c.strip_failed(&e, "the density map").map(|()| None),
    }
}

/// What `vkCreateDevice` strips for the layer.
/// `info` borrows what the application's create info borrows (its queue
/// infos, features, layer and extension names: `_names` points at the
/// application's strings) and points into `_names` and `_chain`.
pub struct StrippedFdm<'a> {
    pub info: vk::DeviceCreateInfo<'a>,
    pub enabled: bool,
    /// The layer enabled `VK_EXT_conditional_rendering` for the GPU plan of
    /// dynamic and deferred maps ([`gpu_plan`]).
    pub gpu_plan: bool,
    /// The layer enabled `VK_EXT_multi_draw` and `shaderDrawParameters` for
    /// the multiview flush ([`multiview_flush`]).
    pub flush: bool,
    /// The layer enabled `shaderStorageImageWriteWithoutFormat` for the
    /// composite's compute shader (the driver has it; `binned` mode).
    pub storage_composite: bool,
    /// The layer enabled `multiViewport` and
    /// `VK_EXT_shader_viewport_index_layer` for per-view viewports.
    pub per_view: bool,
    /// Subsampled attachments may be stored packed (`fdm_subsampled`;
    /// `binned` mode with the GPU plan's objects: [`subsampled`]).
    pub subsampled: bool,
    /// The layer enabled `multiViewport` and `VK_NV_viewport_array2` (or
    /// `geometryShader`) for the viewport masks ([`viewport_mask`]).
    pub viewport_mask: Option<viewport_mask::Broadcast>,
    _names: Vec<*const c_char>,
    _chain: Chain,
    /// The application's `pEnabledFeatures` with the layer's feature added,
    /// where the application gave no `VkPhysicalDeviceFeatures2`.
    _features: Option<Box<vk::PhysicalDeviceFeatures>>,
}

pub use crate::pnext::StripError;

/// `VK_EXT_conditional_rendering`: the GPU plan's predicates.
pub const CONDITIONAL_RENDERING: &CStr = c"VK_EXT_conditional_rendering";

/// Removes the extension and its feature structure from `info`.
///
/// # Safety
/// `info` must be a valid `VkDeviceCreateInfo`.
/// With `conditional` (the driver has `VK_EXT_conditional_rendering` and its
/// feature, mode `binned`), the layer enables it for the GPU plan, with its
/// `conditionalRendering` feature; where the application enabled the
/// extension itself, the layer shares it (a pass inside the application's
/// own conditional rendering renders at 1x1: the layer's scopes may not
/// nest in it).
/// With `flush` (the driver has what [`multiview_flush`] needs, and the
/// setting asks for it), the layer enables `VK_EXT_multi_draw` with
/// `multiDraw` and `shaderDrawParameters`, unless a feature structure it
/// would have to change lies out of its reach.
pub unsafe fn strip<'a>(
    info: &vk::DeviceCreateInfo<'a>,
    conditional: bool,
    flush: bool,
    (storage, per_view, mask): (bool, bool, Option<viewport_mask::Broadcast>),
) -> Result<StrippedFdm<'a>, StripError> {
    // SAFETY: the caller's guarantee: a valid create info.
    let (kept, mut enabled) = unsafe { crate::ffi::extensions_without(info, EXTENSION) };
    // SAFETY: as above.
    let (_, app_conditional) = unsafe { crate::ffi::extensions_without(info, CONDITIONAL_RENDERING) };
    let gpu_plan = conditional;
    // FDM2 requires FDM (VUID-vkCreateDevice-ppEnabledExtensionNames-01387).
    // SAFETY: VUID-VkDeviceCreateInfo-ppEnabledExtensionNames-parameter: each
    // name is a null-terminated UTF-8 string.
    let kept: Vec<*const c_char> = kept
        .into_iter()
        .filter(|n| {
            // SAFETY: as above.
            let n = unsafe { CStr::from_ptr(*n) };
            n != EXTENSION2 && !OFFSET_EXTENSIONS.contains(&n) && n != layered::EXTENSION
        })
        .collect();
    // SAFETY: VUID-VkDeviceCreateInfo-pNext-pNext: a valid chain, alive for the call.
    let mut chain = unsafe { Chain::copy_prefix(info.p_next) };
    // What this strip must remove lies before any structure the layer cannot copy (a newer extension's, after
    // them in the chain, is linked as it is); a density-map feature structure after one is left in place where it
    // asks for nothing (a driver ignores structures of extensions it lacks; asking for a feature it would refuse).
    // (fragmentDensityMap, fragmentDensityMapDynamic, fragmentDensityMapNonSubsampledImages) of a structure there.
    let tail_fdm = chain.tail_find::<vk::PhysicalDeviceFragmentDensityMapFeaturesEXT>().map(|f| {
        (
            f.fragment_density_map == vk::TRUE,
            f.fragment_density_map_dynamic == vk::TRUE,
            f.fragment_density_map_non_subsampled_images == vk::TRUE,
        )
    });
    let tail_asks = tail_fdm.is_some_and(|(a, b, c)| a || b || c)
        || chain
            .tail_find::<vk::PhysicalDeviceFragmentDensityMap2FeaturesEXT>()
            .is_some_and(|f| f.fragment_density_map_deferred == vk::TRUE)
        || chain
            .tail_find::<vk::PhysicalDeviceFragmentDensityMapOffsetFeaturesQCOM>()
            .is_some_and(|f| f.fragment_density_map_offset == vk::TRUE)
        || chain.tail_find::<layered::FeaturesValve>().is_some_and(|f| f.fragment_density_map_layered == vk::TRUE);
    // (Without the extension enabled nothing needs removing: those bits are the application's own mistake.)
    if tail_asks && enabled {
        chain.tail_error()?;
    }
    chain.remove(vk::StructureType::PHYSICAL_DEVICE_FRAGMENT_DENSITY_MAP_2_FEATURES_EXT);
    chain.remove(vk::StructureType::PHYSICAL_DEVICE_FRAGMENT_DENSITY_MAP_OFFSET_FEATURES_QCOM);
    chain.remove(layered::FEATURES);
    let asked = chain
        .get::<vk::PhysicalDeviceFragmentDensityMapFeaturesEXT>()
        .map(|f| f.fragment_density_map == vk::TRUE || f.fragment_density_map_non_subsampled_images == vk::TRUE)
        .or(tail_fdm.map(|(a, _, c)| a || c));
    if let Some(asked) = asked {
        enabled &= asked;
    }
    chain.remove(vk::StructureType::PHYSICAL_DEVICE_FRAGMENT_DENSITY_MAP_FEATURES_EXT);
    let mut kept = kept;
    let mut gpu_plan = gpu_plan;
    if gpu_plan && enabled {
        let tail_conditional =
            chain.tail_find::<vk::PhysicalDeviceConditionalRenderingFeaturesEXT>().map(|c| c.conditional_rendering);
        match tail_conditional {
            // The application's structure, out of reach: on already, or the GPU plan goes without.
            Some(on) => gpu_plan = on == vk::TRUE && app_conditional,
            None => {
                if !app_conditional {
                    kept.push(CONDITIONAL_RENDERING.as_ptr());
                }
                // The application's inherited-conditional-rendering choice is kept.
                let inherited = chain
                    .get::<vk::PhysicalDeviceConditionalRenderingFeaturesEXT>()
                    .is_some_and(|c| c.inherited_conditional_rendering == vk::TRUE);
                chain.remove(vk::StructureType::PHYSICAL_DEVICE_CONDITIONAL_RENDERING_FEATURES_EXT);
                chain.push(
                    &vk::PhysicalDeviceConditionalRenderingFeaturesEXT::default()
                        .conditional_rendering(true)
                        .inherited_conditional_rendering(inherited),
                );
            }
        }
    }
    let gpu_plan = gpu_plan && enabled;
    // SAFETY: as above.
    let flush = flush && enabled && unsafe { multiview_flush::enable(info, &mut kept, &mut chain) };
    // `shaderStorageImageWriteWithoutFormat` for the compute composite, `multiViewport` for per-view viewports;
    // neither where the application's feature structure lies beyond what the layer could copy.
    let (storage, per_view, mask) = (storage && gpu_plan, per_view && enabled, mask.filter(|_| enabled));
    // SAFETY: as above.
    let features = (storage || per_view || mask.is_some()).then(|| unsafe {
        crate::pnext::enable_core_features(info, &mut chain, |f| {
            if storage {
                f.shader_storage_image_write_without_format = vk::TRUE;
            }
            if per_view || mask.is_some() {
                f.multi_viewport = vk::TRUE;
            }
            if mask == Some(viewport_mask::Broadcast::Geometry) {
                f.geometry_shader = vk::TRUE;
            }
        })
    });
    let enabled_any = features.as_ref().is_some_and(Option::is_some);
    let features = features.flatten().flatten();
    let (storage_composite, mut per_view) = (storage && enabled_any, per_view && enabled_any);
    let viewport_mask = mask.filter(|_| enabled_any);
    // SAFETY: as above.
    if viewport_mask == Some(viewport_mask::Broadcast::MaskNV)
        && !unsafe { crate::ffi::extensions_without(info, viewport_mask::EXTENSION) }.1
    {
        kept.push(viewport_mask::EXTENSION.as_ptr());
    }
    // With the extension, a Vulkan 1.2 feature structure must enable both of its output built-ins
    // (VUID-VkDeviceCreateInfo-ppEnabledExtensionNames-02835).
    if per_view {
        if chain.tail_find::<vk::PhysicalDeviceVulkan12Features>().is_some() {
            per_view = false;
        } else if let Some(v12) = chain.get_mut::<vk::PhysicalDeviceVulkan12Features>() {
            v12.shader_output_viewport_index = vk::TRUE;
            v12.shader_output_layer = vk::TRUE;
        }
    }
    // SAFETY: as above.
    if per_view && !unsafe { crate::ffi::extensions_without(info, per_view::EXTENSION) }.1 {
        kept.push(per_view::EXTENSION.as_ptr());
    }
    let mut out = StrippedFdm {
        info: *info,
        enabled,
        gpu_plan,
        flush,
        storage_composite,
        per_view,
        subsampled: false,
        viewport_mask,
        _names: kept,
        _chain: chain,
        _features: features,
    };
    if let Some(f) = &out._features {
        out.info.p_enabled_features = &**f;
    }
    out.info.enabled_extension_count = out._names.len() as u32;
    out.info.pp_enabled_extension_names = out._names.as_ptr();
    out.info.p_next = out._chain.head();
    Ok(out)
}

impl Fdm {
    /// An image's usage as the driver sees it: density maps are read by the
    /// layer (transfer source; `SAMPLED` keeps views of them valid), and in
    /// `binned` mode attachments are read and written by the replays' blits
    /// where every format they may be viewed with allows it, and
    /// single-sampled colour attachments of one format (no
    /// `MUTABLE_FORMAT`) that can be storage images are written by the
    /// composite's compute shader ([`Fdm::storage_composite`]), unless the
    /// image is `shared` (external memory, or not optimally tiled: another
    /// API or process must agree on its parameters). The same rule for
    /// `vkCreateImage` and an imageless framebuffer's image infos.
    pub fn driver_usage(
        &self,
        usage: vk::ImageUsageFlags,
        flags: vk::ImageCreateFlags,
        formats: &[vk::Format],
        samples: vk::SampleCountFlags,
        shared: bool,
    ) -> vk::ImageUsageFlags {
        let mut out = usage & !vk::ImageUsageFlags::FRAGMENT_DENSITY_MAP_EXT;
        if usage.contains(vk::ImageUsageFlags::FRAGMENT_DENSITY_MAP_EXT) {
            out |= vk::ImageUsageFlags::TRANSFER_SRC | vk::ImageUsageFlags::SAMPLED;
        }
        let attachment = vk::ImageUsageFlags::COLOR_ATTACHMENT | vk::ImageUsageFlags::DEPTH_STENCIL_ATTACHMENT;
        let transfer = vk::FormatFeatureFlags::TRANSFER_SRC | vk::FormatFeatureFlags::TRANSFER_DST;
        if self.mode == Mode::Binned
            && usage.intersects(attachment)
            && !formats.is_empty()
            && formats.iter().all(|f| self.format_features(*f).contains(transfer))
        {
            out |= vk::ImageUsageFlags::TRANSFER_SRC | vk::ImageUsageFlags::TRANSFER_DST;
        }
        if self.storage_composite
            && !shared
            && usage.contains(vk::ImageUsageFlags::COLOR_ATTACHMENT)
            && !flags.contains(vk::ImageCreateFlags::MUTABLE_FORMAT)
            && samples == vk::SampleCountFlags::TYPE_1
            && formats.len() == 1
            && !model::integer(formats[0])
            && self.format_features(formats[0]).contains(vk::FormatFeatureFlags::STORAGE_IMAGE)
        {
            out |= vk::ImageUsageFlags::STORAGE;
        }
        out
    }

    /// # Safety
    /// `dev` was just created from `info` on `pd`, a physical device of
    /// `instance`; `below` loads its commands.
    pub unsafe fn new(
        mode: Mode,
        below: ash::Device,
        instance: &ash::Instance,
        pd: vk::PhysicalDevice,
        info: &vk::DeviceCreateInfo,
        set_loader_data: Option<crate::ffi::PfnSetDeviceLoaderData>,
        overlay: bool,
    ) -> Fdm {
        // SAFETY: VUID-VkDeviceCreateInfo-pQueueCreateInfos-parameter: `queueCreateInfoCount` valid queue create
        // infos; `pd` is the physical device of `instance` the device was created from (the caller's guarantee).
        let (created, families) = unsafe {
            (
                crate::ffi::slice(info.p_queue_create_infos, info.queue_create_info_count),
                instance.get_physical_device_queue_family_properties(pd),
            )
        };
        // The map read copies an image into a buffer: any graphics, compute or transfer queue.
        let queue = crate::ffi::layer_queue(
            created,
            &families,
            vk::QueueFlags::GRAPHICS | vk::QueueFlags::COMPUTE | vk::QueueFlags::TRANSFER,
        );
        // SAFETY: `pd` is the physical device of `instance` the device was
        // created from (the caller's guarantee).
        let memory = unsafe { instance.get_physical_device_memory_properties(pd) };
        // SAFETY: as above.
        let timestamp_period = unsafe { instance.get_physical_device_properties(pd) }.limits.timestamp_period;
        // SAFETY: as above.
        let limits = unsafe { instance.get_physical_device_properties(pd) }.limits;
        Fdm {
            sampled_color_samples: limits.sampled_image_color_sample_counts,
            sampled_depth_samples: limits.sampled_image_depth_sample_counts,
            mode,
            below,
            images: Default::default(),
            views: Default::default(),
            passes: Default::default(),
            framebuffers: Default::default(),
            modules: Default::default(),
            subsampled: Default::default(),
            pipelines: Default::default(),
            shader_objects: Default::default(),
            below_shader_object: None,
            cb_states: Default::default(),
            map_layouts: Default::default(),
            map_generation: Default::default(),
            map_cache: Default::default(),
            plans: Default::default(),
            queue_lock: Default::default(),
            reader: Default::default(),
            scratch: Default::default(),
            memory,
            queue,
            lost: Default::default(),
            set_loader_data,
            overlay,
            controls: Controls::default(),
            conditional: None,
            gpu_plan: Default::default(),
            raw: None,
            storage_composite: false,
            dynamic_areas: asked::DynamicAreas::All,
            steps: None,
            timestamp_period,
            texel_limits: ((MIN_TEXEL, MIN_TEXEL), (MAX_TEXEL, MAX_TEXEL)),
            replay_counting_pools: Default::default(),
            format_features: Default::default(),
            flush: None,
            per_view: None,
            masks: None,
            multi_draw: ash::ext::multi_draw::DeviceFn::load(|_| std::ptr::null()),
            instance: instance.clone(),
            physical_device: pd,
            set_layouts: Default::default(),
            sets: Default::default(),
        }
    }

    /// The density map of a device just created from `s` (its
    /// `vkCreateDevice` step before the call down: [`prepare`]): `below`
    /// resolves a command to what the density-map hooks call — the layer's
    /// other hooks for this device where it has them, else the next layer;
    /// the GPU plan's objects go through the next layer alone.
    ///
    /// # Safety
    /// `core.handle` was just created from `s.info`'s original on
    /// `core.physical_device`, with `set_loader_data` from its chain; `below`
    /// returns, for each name, a pointer of that command's type or null.
    pub unsafe fn for_device(
        core: &DeviceCore,
        mode: Mode,
        s: &StrippedFdm,
        set_loader_data: Option<crate::ffi::PfnSetDeviceLoaderData>,
        below: &dyn Fn(&std::ffi::CStr) -> *const std::ffi::c_void,
    ) -> Fdm {
        let (handle, next_gdpa, settings) = (core.handle, core.next_gdpa, &core.instance.settings);
        // SAFETY: `below` resolves each name as `load_with` requires (the caller's guarantee).
        let below_fns = unsafe { ash::Device::load_with(below, handle) };
        // SAFETY: the device was just created from `s.info`'s original on `core.physical_device` (the caller's
        // guarantee), and `below_fns` loads its commands (`new`'s contract).
        let mut fdm = unsafe {
            Fdm::new(
                mode,
                below_fns,
                &core.instance.fns,
                core.physical_device,
                &s.info,
                set_loader_data,
                settings.fdm_overlay,
            )
        };
        fdm.below_shader_object = core.next_create_shaders.map(|_| ash::ext::shader_object::DeviceFn::load(below));
        fdm.controls = Controls::from_settings(settings);
        fdm.dynamic_areas = asked::DynamicAreas::from_setting(settings.fdm_dynamic_areas);
        fdm.steps = settings.debug_fdm_steps.then(steps::Steps::default);
        fdm.scratch.get_mut().shared = fdm.controls.scratch_per_command_buffer;
        fdm.texel_limits = texel_limits(&core.instance.log, &core.plan);
        // The next layer's own commands: the layer enabled conditional rendering on this device (`s.gpu_plan`),
        // so the next layer resolves its commands.
        // SAFETY: `next_gdpa` is the next layer's vkGetDeviceProcAddr and `handle` was created through it: each
        // name resolves to its command (of that command's type) or null, as `load_with` requires.
        let next = |name: &std::ffi::CStr| unsafe { crate::ffi::resolve_command(name, |n| next_gdpa(handle, n)) };
        fdm.raw = s.gpu_plan.then(|| unsafe { ash::Device::load_with(next, handle) });
        fdm.conditional = s.gpu_plan.then(|| ash::ext::conditional_rendering::DeviceFn::load(next));
        fdm.storage_composite = s.gpu_plan && s.storage_composite;
        fdm.subsampled.on = s.gpu_plan && s.subsampled;
        fdm.flush = s.flush.then(multiview_flush::Flush::new);
        // SAFETY: the device's physical device, of its instance.
        let limits = unsafe { core.instance.fns.get_physical_device_properties(core.physical_device) }.limits;
        fdm.per_view = s.per_view.then(|| per_view::PerView::new(limits.max_viewports));
        fdm.masks = s.viewport_mask.and_then(|b| viewport_mask::Masks::new(&limits, b));
        fdm.multi_draw = core.state.multi_draw.clone();
        fdm
    }

    /// Whether passes are captured and replayed per area (mode `binned`),
    /// not rendered at 1x1 (`baseline`).
    pub fn is_binned(&self) -> bool {
        self.mode == Mode::Binned
    }

    /// The layer's own work met `VK_ERROR_DEVICE_LOST` ([`Fdm::lost`]).
    pub fn is_lost(&self) -> bool {
        self.lost.load(std::sync::atomic::Ordering::Acquire)
    }

    pub fn format_features(&self, format: vk::Format) -> vk::FormatFeatureFlags {
        // SAFETY: `physical_device` is the physical device of `instance` the
        // device was created from (both outlive the device).
        *self.format_features.lock().entry(format).or_insert_with(|| unsafe {
            self.instance.get_physical_device_format_properties(self.physical_device, format).optimal_tiling_features
        })
    }

    /// # Safety
    /// The device is idle.
    pub unsafe fn destroy(&self) {
        // SAFETY: the caller's guarantee: the device is idle.
        unsafe { self.destroy_tables() };
        let d = &self.below;
        // SAFETY: the layer's own objects (pipeline variants, scratch
        // targets, shadow pools, the map reader) on an idle device (the
        // caller's guarantee): no submitted work uses them.
        unsafe {
            for (_, p) in self.pipelines.lock().drain() {
                for (area, v) in &p.variants {
                    if *area != (1, 1) {
                        d.destroy_pipeline(*v, None);
                    }
                }
            }
            for (_, o) in self.shader_objects.lock().drain() {
                self.destroy_variants(&o);
            }
            // Made only through `raw` (the GPU plan runs only where it is set).
            if let Some(raw) = &self.raw {
                self.gpu_plan.lock().destroy(raw);
            }
            self.scratch.lock().destroy_all(d);
            for (_, st) in self.cb_states.write().drain() {
                descriptors::free_shadow_pools(self, &mut st.lock().shadow_pools);
            }
            if let Some(r) = self.reader.lock().take() {
                r.destroy(d);
            }
            // Partners of pipelines the application left alive.
            multiview_flush::destroy_partners(self);
            if let Some(pv) = &self.per_view {
                multiview_flush::destroy_all(self, &pv.partners);
            }
            if let Some(m) = &self.masks {
                m.destroy(self);
            }
            self.dynamic_areas.destroy(self);
            if let Some(s) = &self.steps {
                s.destroy(self);
            }
        }
    }
}

fn memory_type(f: &Fdm, bits: u32, want: vk::MemoryPropertyFlags) -> Option<u32> {
    crate::ffi::memory_type(&f.memory, bits, want)
}

// ---------------------------------------------------------------------------
// Resource hooks

/// `vkCreateImage`: the density-map usage and subsampled flag translated;
/// the image remembered.
pub fn create_image(_: &DeviceCore, f: &Fdm, a: args::CreateImage) -> vk::Result {
    let ci = a.create_info();
    let mut copy = *ci;
    let density_map = ci.usage.contains(vk::ImageUsageFlags::FRAGMENT_DENSITY_MAP_EXT);
    copy.flags &= !DRIVER_LACKS_FLAGS;
    // SAFETY: VUID-VkImageCreateInfo-pNext-pNext: a valid chain.
    let external = unsafe { crate::pnext::find::<vk::ExternalMemoryImageCreateInfo>(ci.p_next) }.is_some();
    let shared = external || ci.tiling != vk::ImageTiling::OPTIMAL;
    copy.usage = f.driver_usage(ci.usage, ci.flags, &[ci.format], ci.samples, shared);
    // SAFETY: the next layer's command, with a copy of the application's info
    // whose usage and flags the driver supports.
    let r = unsafe { a.with_create_info(&copy).call(f.below.fp_v1_0().create_image) };
    if r == vk::Result::SUCCESS {
        if ci.flags.contains(vk::ImageCreateFlags::SUBSAMPLED_EXT) {
            f.subsampled.any.store(true, std::sync::atomic::Ordering::Release);
        }
        f.images.lock().insert(
            // SAFETY: the command succeeded.
            unsafe { a.written_image() },
            ImageInfo {
                format: ci.format,
                extent: ci.extent,
                samples: ci.samples,
                usage: copy.usage,
                layers: ci.array_layers,
                density_map,
                subsampled: ci.flags.contains(vk::ImageCreateFlags::SUBSAMPLED_EXT),
                loaded: false,
                packed: false,
            },
        );
    }
    r
}

/// `vkCreateImageView`: the density-map flags dropped; the view remembered.
pub fn create_image_view(_: &DeviceCore, f: &Fdm, a: args::CreateImageView) -> vk::Result {
    let ci = a.create_info();
    let mut copy = *ci;
    copy.flags &= !(vk::ImageViewCreateFlags::FRAGMENT_DENSITY_MAP_DYNAMIC_EXT
        | vk::ImageViewCreateFlags::FRAGMENT_DENSITY_MAP_DEFERRED_EXT);
    // SAFETY: the next layer's command, without the flags the driver lacks.
    let r = unsafe { a.with_create_info(&copy).call(f.below.fp_v1_0().create_image_view) };
    if r == vk::Result::SUCCESS {
        let mut range = ci.subresource_range;
        if let Some(img) = f.images.lock().get(&ci.image) {
            if range.layer_count == vk::REMAINING_ARRAY_LAYERS {
                range.layer_count = img.layers - range.base_array_layer;
            }
        }
        if range.level_count == vk::REMAINING_MIP_LEVELS {
            range.level_count = 1;
        }
        f.views.lock().insert(
            // SAFETY: the command succeeded.
            unsafe { a.written_view() },
            ViewInfo {
                image: ci.image,
                format: ci.format,
                range,
                view_type: ci.view_type,
                components: ci.components,
                // SAFETY: VUID-VkImageViewCreateInfo-pNext-pNext: a valid chain.
                own_usage: unsafe { crate::pnext::find::<vk::ImageViewUsageCreateInfo>(ci.p_next) }.is_some(),
                dynamic_or_deferred: ci.flags.intersects(
                    vk::ImageViewCreateFlags::FRAGMENT_DENSITY_MAP_DYNAMIC_EXT
                        | vk::ImageViewCreateFlags::FRAGMENT_DENSITY_MAP_DEFERRED_EXT,
                ),
            },
        );
    }
    r
}

/// `vkCreateSampler`: the subsampled flags dropped (a subsampled sampler
/// remembered: its bindings read through the bin table, [`subsampled`]).
pub fn create_sampler(_: &DeviceCore, f: &Fdm, a: args::CreateSampler) -> vk::Result {
    let mut copy = *a.create_info();
    copy.flags &=
        !(vk::SamplerCreateFlags::SUBSAMPLED_EXT | vk::SamplerCreateFlags::SUBSAMPLED_COARSE_RECONSTRUCTION_EXT);
    // SAFETY: the next layer's command, without the subsampled flags.
    let r = unsafe { a.with_create_info(&copy).call(f.below.fp_v1_0().create_sampler) };
    if r == vk::Result::SUCCESS {
        // SAFETY: the command succeeded.
        f.note_sampler(unsafe { a.written_sampler() }, a.create_info());
    }
    r
}

/// Render pass attachment descriptions of either version.
pub(crate) trait Attachment {
    fn fields(
        &mut self,
    ) -> (&mut vk::ImageLayout, &mut vk::ImageLayout, &mut vk::AttachmentLoadOp, &mut vk::AttachmentStoreOp);
    fn stencil_load_op(&mut self) -> &mut vk::AttachmentLoadOp;
}

/// Both versions' attachment descriptions have the same fields.
macro_rules! impl_attachment {
    ($($t:ty),*) => {$(
        impl Attachment for $t {
            fn fields(
                &mut self,
            ) -> (&mut vk::ImageLayout, &mut vk::ImageLayout, &mut vk::AttachmentLoadOp, &mut vk::AttachmentStoreOp) {
                (&mut self.initial_layout, &mut self.final_layout, &mut self.load_op, &mut self.store_op)
            }
            fn stencil_load_op(&mut self) -> &mut vk::AttachmentLoadOp {
                &mut self.stencil_load_op
            }
        }
    )*};
}

impl_attachment!(vk::AttachmentDescription, vk::AttachmentDescription2<'_>);

/// The attachments as the driver gets them: layouts translated, and the
/// density map (which no subpass uses, so no load or store happens to it)
/// loaded and stored, so nothing discards it.
fn translate_attachments<A: Attachment>(attachments: &mut [A], density_map: Option<u32>) {
    for a in attachments.iter_mut() {
        let (initial, final_, _, _) = a.fields();
        *initial = layout(*initial);
        *final_ = layout(*final_);
    }
    if let Some(a) = density_map.and_then(|m| attachments.get_mut(m as usize)) {
        let (_, _, load, store) = a.fields();
        *load = vk::AttachmentLoadOp::LOAD;
        *store = vk::AttachmentStoreOp::STORE;
    }
}

/// A copy of a render pass create info's chain without the density-map
/// structure, and the density map's attachment; `None` (logged) when the
/// chain holds a structure the layer cannot copy.
///
/// # Safety
/// `p_next` is a valid `pNext` chain.
unsafe fn render_pass_chain(
    dev: &DeviceCore,
    command: &str,
    p_next: *const std::ffi::c_void,
) -> Option<(Chain, Option<u32>)> {
    // SAFETY: the caller's guarantee.
    let mut chain = match unsafe { Chain::copy(p_next) } {
        Ok(c) => c,
        Err(e) => {
            dev.log().warn(id::CREATE_INFO_UNKNOWN, &format!("{command}: {e}; passed down unchanged"));
            return None;
        }
    };
    let density_map = chain
        .get::<vk::RenderPassFragmentDensityMapCreateInfoEXT>()
        .map(|d| d.fragment_density_map_attachment.attachment)
        .filter(|a| *a != vk::ATTACHMENT_UNUSED);
    chain.remove(vk::StructureType::RENDER_PASS_FRAGMENT_DENSITY_MAP_CREATE_INFO_EXT);
    Some((chain, density_map))
}

/// An attachment reference of either render pass command: the attachment
/// it names, and itself with its layout translated.
pub(crate) trait AttachmentRef: Copy {
    fn attachment(&self) -> u32;
    fn translated(&self) -> Self;
}

impl AttachmentRef for vk::AttachmentReference {
    fn attachment(&self) -> u32 {
        self.attachment
    }
    fn translated(&self) -> Self {
        vk::AttachmentReference { attachment: self.attachment, layout: layout(self.layout) }
    }
}

impl AttachmentRef for vk::AttachmentReference2<'_> {
    fn attachment(&self) -> u32 {
        self.attachment
    }
    fn translated(&self) -> Self {
        vk::AttachmentReference2 { layout: layout(self.layout), ..*self }
    }
}

/// A subpass description of either render pass command: its reference
/// lists (input, colour, resolve, depth/stencil) with their counts, and
/// the same description pointing at other lists.
pub(crate) trait SubpassRefs: Copy {
    type Ref: AttachmentRef;
    fn lists(&self) -> [(*const Self::Ref, u32); 4];
    fn with_lists(&self, lists: [*const Self::Ref; 4]) -> Self;
}

macro_rules! subpass_refs {
    ($subpass:ty, $reference:ty) => {
        impl<'a> SubpassRefs for $subpass {
            type Ref = $reference;
            fn lists(&self) -> [(*const Self::Ref, u32); 4] {
                [
                    (self.p_input_attachments, self.input_attachment_count),
                    (self.p_color_attachments, self.color_attachment_count),
                    (self.p_resolve_attachments, self.color_attachment_count),
                    (self.p_depth_stencil_attachment, 1),
                ]
            }
            fn with_lists(&self, [input, color, resolve, depth]: [*const Self::Ref; 4]) -> Self {
                let mut s = *self;
                s.p_input_attachments = input;
                s.p_color_attachments = color;
                s.p_resolve_attachments = resolve;
                s.p_depth_stencil_attachment = depth;
                s
            }
        }
    };
}
subpass_refs!(vk::SubpassDescription<'a>, vk::AttachmentReference);
subpass_refs!(vk::SubpassDescription2<'a>, vk::AttachmentReference2<'a>);

/// A reference list with its layouts translated, kept in `refs` (which
/// must outlive the call down), its attachments marked in `used`; null
/// stays null.
///
/// # Safety
/// `p` is null or points at `n` valid references.
unsafe fn translate_refs<R: AttachmentRef>(p: *const R, n: u32, used: &mut [bool], refs: &mut Vec<Vec<R>>) -> *const R {
    if p.is_null() {
        return p;
    }
    // SAFETY: the caller's guarantee.
    let v: Vec<R> = unsafe { slice(p, n) }
        .iter()
        .map(|r| {
            if let Some(u) = used.get_mut(r.attachment() as usize) {
                *u = true;
            }
            r.translated()
        })
        .collect();
    refs.push(v);
    refs.last().unwrap().as_ptr()
}

/// A subpass with every reference list translated ([`translate_refs`]).
///
/// # Safety
/// `s` is a valid subpass description (the -parameter VUIDs of its
/// pInputAttachments, pColorAttachments, pResolveAttachments and
/// pDepthStencilAttachment: each array with its count, the optional ones
/// null or valid).
unsafe fn translate_subpass<S: SubpassRefs>(s: &S, used: &mut [bool], refs: &mut Vec<Vec<S::Ref>>) -> S {
    // SAFETY: the caller's guarantee, list by list.
    s.with_lists(s.lists().map(|(p, n)| unsafe { translate_refs(p, n, used, refs) }))
}

/// Remembers a render pass the driver made.
///
/// # Safety
/// `out` was written by the successful call that returned `r`.
unsafe fn remember_pass(
    f: &Fdm,
    r: vk::Result,
    out: *mut vk::RenderPass,
    info: impl FnOnce() -> PassInfo,
) -> vk::Result {
    if r == vk::Result::SUCCESS {
        // SAFETY: the caller's guarantee (VUID-vkCreateRenderPass-pRenderPass-parameter and its v2 twin).
        let pass = unsafe { *out };
        f.passes.lock().insert(pass, Arc::new(info()));
    }
    r
}

/// What the density map adds to the create infos of `vkCreateRenderPass`
/// and `vkCreateRenderPass2` ([`RenderPassInfo`]), for one translation of
/// both ([`create_any_render_pass`]).
pub(crate) trait RenderPassCreate: RenderPassInfo<Attachment: Attachment, Subpass: SubpassRefs> {
    /// The command itself, on the next layer, for `(device, allocator, output)`.
    ///
    /// # Safety
    /// `self` is a valid create info; the allocator and output as the command takes them.
    unsafe fn create(&self, f: &Fdm, down: CreateDown) -> vk::Result;
    /// What a subpass carries besides its reference lists (`pNext`), for
    /// the translated `copy`; copied chains kept in `chains` (nothing in a
    /// version-1 subpass).
    ///
    /// # Safety
    /// `s` is a valid subpass description.
    unsafe fn subpass_extras(
        _s: &Self::Subpass,
        _copy: &mut Self::Subpass,
        _used: &mut [bool],
        _refs: &mut Vec<Vec<<Self::Subpass as SubpassRefs>::Ref>>,
        _chains: &mut Vec<Chain>,
    ) {
    }
    /// A dependency with its stages and accesses translated.
    ///
    /// # Safety
    /// `d` is a valid dependency.
    unsafe fn dependency(d: &Self::Dependency, chains: &mut Vec<Chain>) -> Self::Dependency;
    fn description(a: &Self::Attachment) -> vk::AttachmentDescription;
}

/// Where [`RenderPassCreate::create`] makes its render pass: the device, the
/// allocator (valid or null) and the output.
type CreateDown<'a> = (vk::Device, *const vk::AllocationCallbacks<'a>, *mut vk::RenderPass);

/// The command of [`RenderPassCreate::create`]: the next layer's `$create`
/// of its `$version` table.
macro_rules! render_pass_create {
    ($version:ident, $create:ident) => {
        unsafe fn create(&self, f: &Fdm, (device, alloc, out): CreateDown) -> vk::Result {
            // SAFETY: the caller's guarantee.
            unsafe { (f.below.$version().$create)(device, self, alloc, out) }
        }
    };
}

impl<'a> RenderPassCreate for vk::RenderPassCreateInfo<'a> {
    render_pass_create!(fp_v1_0, create_render_pass);
    unsafe fn dependency(d: &Self::Dependency, _: &mut Vec<Chain>) -> Self::Dependency {
        vk::SubpassDependency {
            src_stage_mask: stages(d.src_stage_mask),
            dst_stage_mask: stages(d.dst_stage_mask),
            src_access_mask: access(d.src_access_mask),
            dst_access_mask: access(d.dst_access_mask),
            ..*d
        }
    }
    fn description(a: &Self::Attachment) -> vk::AttachmentDescription {
        *a
    }
}

impl<'a> RenderPassCreate for vk::RenderPassCreateInfo2<'a> {
    render_pass_create!(fp_v1_2, create_render_pass2);
    unsafe fn subpass_extras(
        s: &Self::Subpass,
        copy: &mut Self::Subpass,
        used: &mut [bool],
        refs: &mut Vec<Vec<vk::AttachmentReference2<'a>>>,
        chains: &mut Vec<Chain>,
    ) {
        // SAFETY: VUID-VkSubpassDescription2-pNext-pNext: a valid chain;
        // VUID-VkSubpassDescriptionDepthStencilResolve-pDepthStencilResolveAttachment-parameter:
        // null or one valid reference (marked used; the copied chain below keeps the original).
        if let Some(ds) = unsafe { crate::pnext::find::<vk::SubpassDescriptionDepthStencilResolve>(s.p_next) } {
            // SAFETY: as above.
            unsafe { translate_refs(ds.p_depth_stencil_resolve_attachment, 1, used, refs) };
        }
        // SAFETY: VUID-VkSubpassDescription2-pNext-pNext: a valid chain.
        if let Ok(mut sc) = unsafe { Chain::copy(s.p_next) } {
            copy.p_next = sc.head();
            chains.push(sc);
        }
    }
    unsafe fn dependency(d: &Self::Dependency, chains: &mut Vec<Chain>) -> Self::Dependency {
        let mut c = *d;
        c.src_stage_mask = stages(d.src_stage_mask);
        c.dst_stage_mask = stages(d.dst_stage_mask);
        c.src_access_mask = access(d.src_access_mask);
        c.dst_access_mask = access(d.dst_access_mask);
        // SAFETY: VUID-VkSubpassDependency2-pNext-pNext: a valid chain.
        if let Ok(mut ch) = unsafe { Chain::copy(d.p_next) } {
            if let Some(b) = ch.get_mut::<vk::MemoryBarrier2>() {
                b.src_stage_mask = stages2(b.src_stage_mask);
                b.dst_stage_mask = stages2(b.dst_stage_mask);
                b.src_access_mask = access2(b.src_access_mask);
                b.dst_access_mask = access2(b.dst_access_mask);
            }
            c.p_next = ch.head();
            chains.push(ch);
        }
        c
    }
    fn description(a: &Self::Attachment) -> vk::AttachmentDescription {
        vk::AttachmentDescription {
            flags: a.flags,
            format: a.format,
            samples: a.samples,
            load_op: a.load_op,
            store_op: a.store_op,
            stencil_load_op: a.stencil_load_op,
            stencil_store_op: a.stencil_store_op,
            initial_layout: a.initial_layout,
            final_layout: a.final_layout,
        }
    }
}

/// Either render pass command: layouts, stages and access translated, the
/// density-map structure dropped; the pass remembered. `down` calls the
/// driver with a create info.
///
/// # Safety
/// `ci` is the create info of a valid call, which `down` completes, writing
/// `out` when it succeeds.
unsafe fn create_any_render_pass<I: RenderPassCreate>(
    dev: &DeviceCore,
    f: &Fdm,
    ci: &I,
    down: impl Fn(&I, Option<&mut vk::RenderPass>) -> vk::Result,
    out: *mut vk::RenderPass,
) -> vk::Result {
    // SAFETY: a valid create info has a valid chain (the -pNext-pNext VUIDs).
    let Some((mut chain, density_map)) = (unsafe { render_pass_chain(dev, I::COMMAND, ci.p_next()) }) else {
        return down(ci, None);
    };
    // SAFETY: the caller's guarantee.
    let (attachments_in, subpasses, dependencies) = unsafe { ci.arrays() };
    let mut attachments = attachments_in.to_vec();
    translate_attachments(&mut attachments, density_map);
    let mut used = vec![false; attachments.len()];
    // The references and copied chains keep the application's `pNext` (and
    // its borrow: they are used only within this call).
    let mut refs = Vec::new();
    let mut chains = Vec::new();
    let subs: Vec<I::Subpass> = subpasses
        .iter()
        .map(|s| {
            // SAFETY: valid subpass descriptions (the -pSubpasses-parameter VUIDs).
            unsafe {
                let mut c = translate_subpass(s, &mut used, &mut refs);
                I::subpass_extras(s, &mut c, &mut used, &mut refs, &mut chains);
                c
            }
        })
        .collect();
    // SAFETY: valid dependencies (the -pDependencies-parameter VUIDs).
    let deps: Vec<I::Dependency> = dependencies.iter().map(|d| unsafe { I::dependency(d, &mut chains) }).collect();
    let inputs = subpasses.iter().any(|s| s.lists()[0].1 > 0);
    // SAFETY: the caller's guarantee (a valid create info).
    let view_mask = unsafe { ci.view_mask() };
    let per_layer = ci.flags().contains(layered::RENDER_PASS_PER_LAYER);
    let copy = ci.with(ci.flags() & !layered::RENDER_PASS_PER_LAYER, chain.head(), (&attachments, &subs, &deps));
    // The application's valid call with its arrays translated into live
    // Vecs of the same counts and its chains copied (alive in `chain` and
    // `chains`) without the density-map structure.
    let r = down(&copy, None);
    // The twin that never clears (the layer's own: no application allocator), where something clears.
    let mut unclearing = vk::RenderPass::null();
    let mut twin = attachments.clone();
    let mut clears = false;
    for a in &mut twin {
        for stencil in [false, true] {
            let op = if stencil { a.stencil_load_op() } else { a.fields().2 };
            if *op == vk::AttachmentLoadOp::CLEAR {
                *op = vk::AttachmentLoadOp::DONT_CARE;
                clears = true;
            }
        }
    }
    if r == vk::Result::SUCCESS && clears && f.raw.is_some() {
        let copy = ci.with(ci.flags() & !layered::RENDER_PASS_PER_LAYER, chain.head(), (&twin, &subs, &deps));
        if down(&copy, Some(&mut unclearing)) != vk::Result::SUCCESS {
            unclearing = vk::RenderPass::null();
        }
    }
    let first_subpass = subpasses.first().map_or((Vec::new(), None), |s| {
        let [_, (colors, n), _, (depth, _)] = s.lists();
        // SAFETY: the -pColorAttachments-parameter and -pDepthStencilAttachment-parameter VUIDs.
        let colors = unsafe { slice(colors, n) };
        let used = |a: u32| (a != vk::ATTACHMENT_UNUSED).then_some(a);
        // SAFETY: as above (a non-null pointer to one reference).
        let depth = unsafe { depth.as_ref() }.and_then(|d| used(d.attachment()));
        (colors.iter().map(|c| used(c.attachment())).collect(), depth)
    });
    let info = || PassInfo {
        attachments: attachments.iter().map(I::description).collect(),
        density_map,
        used,
        view_mask,
        inputs,
        per_layer,
        first_subpass,
        unclearing,
    };
    // SAFETY: `out` is written by the call when it succeeds (the caller's guarantee).
    unsafe { remember_pass(f, r, out, info) }
}

/// `vkCreateRenderPass` and `vkCreateRenderPass2` (the create info's type
/// says which), through [`create_any_render_pass`]: the call down is the
/// application's (its create info or a translated copy, its allocator and
/// handle) or the layer's twin (no allocator, the layer's handle).
pub(crate) fn create_render_pass<'a, A: CreateArgs<'a>>(dev: &DeviceCore, f: &Fdm, a: A) -> vk::Result
where
    A::Info: RenderPassCreate,
{
    let (device, alloc, out) = a.parts();
    let down = |ci: &A::Info, twin: Option<&mut vk::RenderPass>| match twin {
        // SAFETY: the application's call, with its create info or a translated copy of it.
        None => unsafe { ci.create(f, (device, alloc, out)) },
        // SAFETY: the layer's twin of it: the same valid create info with other load ops, no allocator.
        Some(t) => unsafe { ci.create(f, (device, std::ptr::null(), t)) },
    };
    // SAFETY: the application's valid create info; `down` completes the call.
    unsafe { create_any_render_pass(dev, f, a.info(), down, out) }
}

/// `vkCreateFramebuffer`: an imageless framebuffer's image usage translated
/// as `vkCreateImage` translates it; the framebuffer remembered.
pub fn create_framebuffer(dev: &DeviceCore, f: &Fdm, a: args::CreateFramebuffer) -> vk::Result {
    let ci = a.create_info();
    // An imageless framebuffer declares its images' usage, which must
    // match the images as created (VUID-VkRenderPassBeginInfo-framebuffer-04627):
    // translated as `vkCreateImage` translates it.
    // SAFETY: VUID-VkFramebufferCreateInfo-pNext-pNext: a valid chain.
    let attachments_info = unsafe { crate::pnext::find::<vk::FramebufferAttachmentsCreateInfo>(ci.p_next) };
    let translated = match attachments_info {
        Some(att) if ci.flags.contains(vk::FramebufferCreateFlags::IMAGELESS) => {
            // The image infos give no sample count, and no format where the images have no format list: the
            // pass's attachment descriptions do, where the layer remembered the pass (one with a density map);
            // elsewhere one sample is assumed.
            let pass = f.passes.lock().get(&ci.render_pass).cloned();
            // SAFETY: VUID-VkFramebufferAttachmentsCreateInfo-pAttachmentImageInfos-parameter.
            let infos: Vec<vk::FramebufferAttachmentImageInfo> =
                unsafe { slice(att.p_attachment_image_infos, att.attachment_image_info_count) }
                    .iter()
                    .enumerate()
                    .map(|(k, i)| {
                        let described = pass.as_ref().and_then(|p| p.attachments.get(k));
                        // SAFETY: VUID-VkFramebufferAttachmentImageInfo-pViewFormats-parameter.
                        let listed = unsafe { slice(i.p_view_formats, i.view_format_count) };
                        let own = described.map(|d| [d.format]);
                        let formats = match (&own, listed.is_empty()) {
                            (Some(own), true) => &own[..],
                            _ => listed,
                        };
                        let samples = described.map_or(vk::SampleCountFlags::TYPE_1, |d| d.samples);
                        vk::FramebufferAttachmentImageInfo {
                            usage: f.driver_usage(i.usage, i.flags, formats, samples, false),
                            // As the images were created (VUID-VkRenderPassBeginInfo-framebuffer-03211).
                            flags: i.flags & !DRIVER_LACKS_FLAGS,
                            ..*i
                        }
                    })
                    .collect();
            // SAFETY: VUID-VkFramebufferCreateInfo-pNext-pNext: a valid chain.
            match unsafe { crate::pnext::Chain::copy(ci.p_next) } {
                Ok(mut chain) => {
                    if let Some(c) = chain.get_mut::<vk::FramebufferAttachmentsCreateInfo>() {
                        c.p_attachment_image_infos = infos.as_ptr();
                    }
                    Some((chain, infos))
                }
                Err(e) => {
                    dev.log().log_once(
                        LogLevel::Warn,
                        id::CREATE_INFO_UNKNOWN,
                        "vkCreateFramebuffer",
                        &format!("vkCreateFramebuffer: {e}; the imageless framebuffer's usage goes down untranslated"),
                    );
                    None
                }
            }
        }
        _ => None,
    };
    let r = match translated {
        Some((mut chain, _infos)) => {
            let copy = vk::FramebufferCreateInfo { p_next: chain.head(), ..*ci };
            // SAFETY: the next layer's command, the application's valid call with its chain copied and the image
            // infos' usage translated (alive in `chain`, `_infos`).
            unsafe { a.with_create_info(&copy).call(f.below.fp_v1_0().create_framebuffer) }
        }
        // SAFETY: the next layer's command, with the application's arguments.
        None => unsafe { a.call(f.below.fp_v1_0().create_framebuffer) },
    };
    if r == vk::Result::SUCCESS {
        let imageless = ci.flags.contains(vk::FramebufferCreateFlags::IMAGELESS);
        // SAFETY: VUID-VkFramebufferCreateInfo-flags-02778: without the
        // imageless flag, `pAttachments` holds `attachmentCount` views.
        let views =
            if imageless { Vec::new() } else { unsafe { slice(ci.p_attachments, ci.attachment_count) }.to_vec() };
        // A subsampled image that a density-map pass loads, or that a pass without a density map renders to: that
        // image is never packed.
        if let Some(pass) = f.passes.lock().get(&ci.render_pass) {
            let views_known = f.views.lock();
            let mut images = f.images.lock();
            for (v, d) in views.iter().zip(&pass.attachments) {
                if d.load_op == vk::AttachmentLoadOp::LOAD || pass.density_map.is_none() {
                    if let Some(i) = views_known.get(v).and_then(|v| images.get_mut(&v.image)) {
                        i.loaded = true;
                    }
                }
            }
        }
        f.framebuffers.lock().insert(
            // SAFETY: the command succeeded.
            unsafe { a.written_framebuffer() },
            Arc::new(FramebufferInfo { views, imageless, extent: (ci.width, ci.height), layers: ci.layers }),
        );
    }
    r
}

// ---------------------------------------------------------------------------
// Shaders and pipelines

/// `vkCreateShaderModule`: the density built-ins lowered for a 1x1 area;
/// what variants need remembered.
pub fn create_shader_module(dev: &DeviceCore, f: &Fdm, a: args::CreateShaderModule) -> vk::Result {
    // SAFETY: the application's arguments of a valid call go down unchanged.
    let next = move || unsafe { a.call(f.below.fp_v1_0().create_shader_module) };
    let ci = a.create_info();
    // SAFETY: VUID-VkShaderModuleCreateInfo-pCode-parameter: the code holds `codeSize` bytes, alive for this call.
    let code = unsafe { crate::spirv::words(ci.p_code, ci.code_size) };
    let density = shader_fdm::uses_density_builtins(code);
    let Ok(module) = overlap_shaders::parse(code) else { return next() };
    let fragment = module.entry_points.iter().any(|e| {
        e.operands.first() == Some(&rspirv::dr::Operand::ExecutionModel(rspirv::spirv::ExecutionModel::Fragment))
    });
    let needs_variants = fragment && (density || shader_fdm::reads_frag_coord(&module));
    let facts = ModuleFacts {
        side_effects: shader_fdm::has_side_effects(&module),
        sample_rate: module.capabilities.iter().any(|c| {
            c.operands.first() == Some(&rspirv::dr::Operand::Capability(rspirv::spirv::Capability::SampleRateShading))
        }),
        words: needs_variants.then(|| Arc::new(code.to_vec())),
        vertex: ((f.flush.is_some() || f.per_view.is_some() || f.masks.is_some())
            && module.entry_points.iter().any(|e| {
                e.operands.first() == Some(&rspirv::dr::Operand::ExecutionModel(rspirv::spirv::ExecutionModel::Vertex))
            }))
        .then(|| Arc::new(code.to_vec())),
        sampled: f.subsampled.on.then(|| subsampled::sampled_words(code)).flatten(),
    };
    // The driver never sees the density capability: the module as
    // created holds the 1x1 values.
    let r = if density {
        match variant_words(dev, code, shader_fdm::Params { area: (1, 1), invocations: 1 }) {
            Some(w) => {
                let mut copy = *ci;
                copy.code_size = w.len() * 4;
                copy.p_code = w.as_ptr();
                // SAFETY: the next layer's command, the application's valid call with its code lowered (a live
                // Vec, validated).
                unsafe { a.with_create_info(&copy).call(f.below.fp_v1_0().create_shader_module) }
            }
            None => next(),
        }
    } else {
        next()
    };
    if r == vk::Result::SUCCESS {
        // SAFETY: the command succeeded.
        f.modules.lock().insert(unsafe { a.written_shader_module() }, Arc::new(facts));
    }
    r
}

/// A module made from `code` as the application's are, through this part
/// of the layer's own `vkCreateShaderModule` (density built-ins lowered,
/// facts remembered), then the commands below it.
///
/// # Safety
/// `code` is valid SPIR-V.
pub(super) unsafe fn create_module_below(
    dev: &DeviceCore,
    f: &Fdm,
    code: &[u32],
) -> Result<vk::ShaderModule, vk::Result> {
    let ci = vk::ShaderModuleCreateInfo::default().code(code);
    let mut module = vk::ShaderModule::null();
    // SAFETY: the layer's own valid call, handed to the commands below this part of the layer.
    let next = |a: args::CreateShaderModule<'_>| unsafe { a.call(f.below.fp_v1_0().create_shader_module) };
    // SAFETY: the arguments of a valid call: a create info built here, no allocator, a live output.
    let a =
        unsafe { args::CreateShaderModule::new(f.below.handle(), &ci, std::ptr::null(), &mut module) }.chained(&next);
    match create_shader_module(dev, f, a) {
        vk::Result::SUCCESS => Ok(module),
        e => Err(e),
    }
}

/// The module lowered for one variant, validated; `None` (logged) when it
/// cannot be.
fn variant_words(dev: &DeviceCore, code: &[u32], p: shader_fdm::Params) -> Option<Vec<u32>> {
    let mut m = overlap_shaders::parse(code).ok()?;
    if let Err(e) = shader_fdm::lower(&mut m, &p) {
        dev.log()
            .warn(id::SHADER_SKIPPED, &format!("density built-ins cannot be lowered ({e}); passed down unchanged"));
        return None;
    }
    let out = overlap_shaders::assemble(&m);
    if dev.interlock_rewrite && overlap_shaders::interlock::uses_interlock(&out) {
        // The shader route below rewrites this variant for interlock and
        // validates what it sends down (its rewrite, or this module where it
        // cannot rewrite it): one validation per module sent down.
        return Some(out);
    }
    crate::spirv::checked_output(dev, "the density-map lowering", code, &out).then_some(out)
}

/// Invocations per fragment a pipeline asks for (`FragInvocationCountEXT`).
///
/// # Safety
/// `info` is a valid create info of a pipeline with a fragment shader.
unsafe fn invocations(info: &vk::GraphicsPipelineCreateInfo, sample_rate: bool) -> u32 {
    // SAFETY: VUID-VkGraphicsPipelineCreateInfo-pMultisampleState-09027: a
    // non-null `pMultisampleState` is valid.
    let Some(ms) = (unsafe { info.p_multisample_state.as_ref() }) else { return 1 };
    let samples = ms.rasterization_samples.as_raw().max(1);
    if sample_rate {
        samples
    } else if ms.sample_shading_enable == vk::TRUE {
        ((ms.min_sample_shading * samples as f32).ceil() as u32).clamp(1, samples)
    } else {
        1
    }
}

/// `vkCreateGraphicsPipelines`: one at a time, each density-map pipeline
/// with its per-area variants.
pub fn create_graphics_pipelines(dev: &DeviceCore, f: &Fdm, a: args::CreateGraphicsPipelines) -> vk::Result {
    let infos_in = a.create_infos();
    if infos_in.is_empty() {
        // SAFETY: the next layer's command, with the application's arguments.
        return unsafe { a.call(f.below.fp_v1_0().create_graphics_pipelines) };
    }
    let down = Down { dev, f, cache: a.pipeline_cache(), alloc: a.p_allocator() };
    let out = a.p_pipelines();
    let mut result = vk::Result::SUCCESS;
    // One at a time: each density-map pipeline may need variants.
    for (i, info) in infos_in.iter().enumerate() {
        // A layout with subsampled samplers: the stages that sample them read through the bin table.
        // SAFETY: VUID-VkGraphicsPipelineCreateInfo-pStages-06600: `stageCount` valid stages.
        let rewritten =
            unsafe { subsampled::rewrite_stages(dev, f, info.layout, slice(info.p_stages, info.stage_count)) };
        let mut with_stages = *info;
        if let Some((stages, _)) = &rewritten {
            with_stages.p_stages = stages.as_ptr();
        }
        // SAFETY: VUID-vkCreateGraphicsPipelines-pPipelines-parameter: `out`
        // holds `count` handles, `i < count`; `info` is valid (its stages, or their rewrites).
        let r = unsafe { create_one(&down, &with_stages, out.add(i)) };
        if let Some((_, made)) = &rewritten {
            // SAFETY: the pipeline (and its variants) are made: the modules are no longer needed.
            unsafe { subsampled::destroy_modules(f, made) };
        }
        if r != vk::Result::SUCCESS {
            result = r;
            if info.flags.contains(vk::PipelineCreateFlags::EARLY_RETURN_ON_FAILURE) {
                for j in i + 1..infos_in.len() {
                    // SAFETY: as above, `j < count`.
                    unsafe { *out.add(j) = vk::Pipeline::null() };
                }
                break;
            }
        }
    }
    result
}

/// Where [`create_one`]'s pipelines go down ([`Down::create`]): the device,
/// the application's cache and its allocator (valid or null).
struct Down<'a> {
    dev: &'a DeviceCore,
    f: &'a Fdm,
    cache: vk::PipelineCache,
    alloc: *const vk::AllocationCallbacks<'a>,
}

/// A pipeline just made through `below`: the cache and create info it was
/// made with, for the partners made beside it.
pub(super) struct Made<'a> {
    pub(super) cache: vk::PipelineCache,
    pub(super) info: &'a vk::GraphicsPipelineCreateInfo<'a>,
    pub(super) pipeline: vk::Pipeline,
}

impl Down<'_> {
    /// One pipeline made through `below`, with its multiview-flush partner
    /// where that runs (every pipeline [`create_one`] makes: the application's
    /// and each per-area variant).
    ///
    /// # Safety
    /// `info` is a valid create info of the device, `alloc` valid or null,
    /// `out` writable.
    unsafe fn create(
        &self,
        info: &vk::GraphicsPipelineCreateInfo,
        alloc: *const vk::AllocationCallbacks,
        out: *mut vk::Pipeline,
    ) -> vk::Result {
        let (dev, f, cache) = (self.dev, self.f, self.cache);
        // SAFETY: the caller's guarantee.
        let r = unsafe { (f.below.fp_v1_0().create_graphics_pipelines)(dev.handle, cache, 1, info, alloc, out) };
        if r == vk::Result::SUCCESS {
            // SAFETY: `out` was written by the successful call from `info`.
            let made = Made { cache, info, pipeline: unsafe { *out } };
            if f.flush.is_some() {
                // SAFETY: `info` made `made.pipeline` through `f.below`, just now.
                unsafe { multiview_flush::make_partner(dev, f, &made) };
            }
            if f.per_view.is_some() {
                // SAFETY: as above.
                unsafe { per_view::make_partner(dev, f, &made) };
            }
            if f.masks.is_some() {
                // SAFETY: as above.
                unsafe { viewport_mask::make_partner(dev, f, &made) };
            }
        }
        r
    }
}

/// One pipeline of a `vkCreateGraphicsPipelines` (and, for a density-map
/// pass, its per-area variants).
///
/// # Safety
/// `info` is a valid create info of the device's pipeline, `alloc` valid or
/// null, and `out` a writable handle.
unsafe fn create_one(down: &Down, info: &vk::GraphicsPipelineCreateInfo, out: *mut vk::Pipeline) -> vk::Result {
    let (dev, f, cache, alloc) = (down.dev, down.f, down.cache, down.alloc);
    let flag = vk::PipelineCreateFlags::RENDERING_FRAGMENT_DENSITY_MAP_ATTACHMENT_EXT;
    // The graphics pipeline libraries it links, and what the layer made of
    // those made for a density-map pass.
    // SAFETY: the caller's guarantee: a valid info (VUID-VkPipelineLibraryCreateInfoKHR-pLibraries-parameter).
    let libraries = unsafe { libraries(info) };
    let library_infos: Vec<Option<Arc<PipelineInfo>>> = {
        let pipelines = f.pipelines.lock();
        libraries.iter().map(|l| pipelines.get(l).cloned()).collect()
    };
    // SAFETY: the caller's guarantee: a valid info.
    let (flags2, mut chain) = unsafe { density_chain(dev, info) };
    let flag2 = vk::PipelineCreateFlags2KHR::RENDERING_FRAGMENT_DENSITY_MAP_ATTACHMENT_EXT;
    let for_density_map = info.flags.contains(flag)
        || flags2.is_some_and(|f| f.contains(flag2))
        || f.passes.lock().get(&info.render_pass).is_some_and(|p| p.density_map.is_some())
        || library_infos.iter().any(Option::is_some);
    // SAFETY: VUID-VkGraphicsPipelineCreateInfo-pStages-06600: `stageCount`
    // valid stages (none for a library without shader stages).
    let stages = unsafe { slice(info.p_stages, info.stage_count) };
    let facts: Vec<Option<Arc<ModuleFacts>>> = {
        let modules = f.modules.lock();
        stages.iter().map(|s| modules.get(&s.module).cloned()).collect()
    };
    let side_effects = facts.iter().flatten().any(|m| m.side_effects);
    let mut copy = *info;
    copy.flags &= !flag;
    if let Some(c) = chain.as_mut() {
        copy.p_next = c.head();
    }
    if !for_density_map {
        // SAFETY: the application's valid info, without the density-map flag.
        return unsafe { down.create(&copy, alloc, out) };
    }
    let mut pinfo = linked_info(side_effects, &library_infos);
    // Binned replays set viewports and scissors per bin: make them dynamic.
    // SAFETY: the caller's guarantee: a valid info.
    let dynamic = unsafe { dynamic_viewports(f, info, &mut pinfo) };
    let mut dyn_info;
    if let Some(dynamic) = &dynamic {
        // SAFETY: VUID-VkGraphicsPipelineCreateInfo-pDynamicState-parameter: a non-null dynamic state is valid.
        dyn_info = unsafe { info.p_dynamic_state.as_ref() }.copied().unwrap_or_default();
        dyn_info.dynamic_state_count = dynamic.len() as u32;
        dyn_info.p_dynamic_states = dynamic.as_ptr();
        copy.p_dynamic_state = &dyn_info;
    }
    // The fragment stage, if variants are needed.
    let fs = stages
        .iter()
        .zip(&facts)
        .position(|(s, m)| s.stage == vk::ShaderStageFlags::FRAGMENT && m.as_ref().is_some_and(|m| m.words.is_some()));
    let areas: &[(u32, u32)] = match (fs, f.mode) {
        (None, _) => &[],
        (Some(_), Mode::Baseline) => &AREAS[..1],
        (Some(_), Mode::Binned) => &AREAS[..],
    };
    // A fragment-shader library with per-area variants: the link is made once
    // per variant.
    let variant_library = library_infos.iter().position(|l| l.as_ref().is_some_and(|l| l.needs_variants));
    if let (true, Some(k), false) = (areas.is_empty(), variant_library, f.controls.without_library_variants) {
        let lib = library_infos[k].clone().unwrap();
        // SAFETY: the caller's guarantee; `copy` is the application's info
        // with viewports and scissors made dynamic.
        return unsafe { link_variants(dev, f, cache, &copy, alloc, out, (libraries, k, &lib), pinfo) };
    }
    if areas.is_empty() {
        // SAFETY: the application's valid info with viewports and scissors
        // made dynamic (`dyn_info`, `dynamic` alive); `out` is writable and
        // written on success (the caller's guarantee).
        return unsafe { create_plain(&down, &copy, out, pinfo) };
    }
    let fs = fs.unwrap();
    let m = facts[fs].clone().unwrap();
    pinfo.needs_variants = true;
    // SAFETY: the caller's guarantee: a valid info, with a fragment stage.
    let inv = unsafe { invocations(info, m.sample_rate) };
    // SAFETY: as for a pipeline without variants above; `stages` are `copy`'s.
    let made = match unsafe { create_variants(&down, &copy, stages, fs, &m, areas, inv) } {
        Ok(made) => made,
        Err(r) => return r,
    };
    if made.first().map(|m| m.0) != Some((1, 1)) {
        // The variants could not be made: the application's stages as they are (its passes render at 1x1).
        dev.log().log_once(
            LogLevel::Warn,
            id::FDM_VARIANTS,
            "",
            "some per-area pipeline variants could not be made; passes binding them render at 1x1",
        );
        // SAFETY: as for a pipeline without variants above.
        return unsafe { create_plain(&down, &copy, out, pinfo) };
    }
    if made.len() < areas.len() {
        dev.log().log_once(
            LogLevel::Warn,
            id::FDM_VARIANTS,
            "",
            "some per-area pipeline variants could not be made; passes binding them render at 1x1",
        );
    }
    let first = made[0].1;
    // SAFETY: `out` is writable (the caller's guarantee).
    unsafe { *out = first };
    pinfo.variants = made.into_iter().collect();
    f.pipelines.lock().insert(first, Arc::new(pinfo));
    vk::Result::SUCCESS
}

/// The flags of `info`'s `VkPipelineCreateFlags2CreateInfoKHR` (which then
/// replace `flags`), and where the density-map bit comes through it or the
/// per-layer bit of VK_VALVE_fragment_density_map_layered or that
/// extension's structure is chained, a copy of the chain without them: none
/// of them reach the driver.
///
/// # Safety
/// `info` is a valid create info.
unsafe fn density_chain(
    dev: &DeviceCore,
    info: &vk::GraphicsPipelineCreateInfo,
) -> (Option<vk::PipelineCreateFlags2KHR>, Option<Chain>) {
    let flag2 = vk::PipelineCreateFlags2KHR::RENDERING_FRAGMENT_DENSITY_MAP_ATTACHMENT_EXT;
    // SAFETY: VUID-VkGraphicsPipelineCreateInfo-pNext-pNext: a valid chain.
    let flags2 = unsafe { crate::pnext::find::<vk::PipelineCreateFlags2CreateInfoKHR>(info.p_next) }.map(|c| c.flags);
    // SAFETY: as above.
    let layered_info = unsafe { crate::pnext::find::<layered::PipelineInfoValve>(info.p_next) }.is_some();
    if !layered_info && !flags2.is_some_and(|f| f.intersects(flag2 | layered::PIPELINE_PER_LAYER)) {
        return (flags2, None);
    }
    // SAFETY: as above.
    let mut c = unsafe { Chain::copy_prefix(info.p_next) };
    if c.tail_contains(layered::PIPELINE_INFO) {
        // Left in place (after a structure the layer cannot copy): the driver ignores what it does not know.
        dev.log().warn(id::CREATE_INFO_UNKNOWN, "vkCreateGraphicsPipelines: the layered density-map structure follows a structure the layer cannot copy; passed down in place");
    }
    c.remove(layered::PIPELINE_INFO);
    if let Some(f2) = c.get_mut::<vk::PipelineCreateFlags2CreateInfoKHR>() {
        f2.flags &= !(flag2 | layered::PIPELINE_PER_LAYER);
    }
    (flags2, Some(c))
}

/// The record of a density-map pipeline whose own stages have
/// `side_effects`, with what its linked libraries bring: their side
/// effects, the static viewports and scissors the layer made dynamic in them.
fn linked_info(side_effects: bool, library_infos: &[Option<Arc<PipelineInfo>>]) -> PipelineInfo {
    let mut pinfo = PipelineInfo { side_effects, ..Default::default() };
    for l in library_infos.iter().flatten() {
        pinfo.side_effects |= l.side_effects;
        if pinfo.static_viewports.is_none() {
            pinfo.static_viewports = l.static_viewports.clone();
        }
        if pinfo.static_scissors.is_none() {
            pinfo.static_scissors = l.static_scissors.clone();
        }
    }
    pinfo
}

/// In binned mode, `info`'s dynamic states with the viewports and scissors
/// it has static (kept in `pinfo`) made dynamic; `None` where nothing was
/// added.
///
/// # Safety
/// `info` is a valid create info.
unsafe fn dynamic_viewports(
    f: &Fdm,
    info: &vk::GraphicsPipelineCreateInfo,
    pinfo: &mut PipelineInfo,
) -> Option<Vec<vk::DynamicState>> {
    if f.mode != Mode::Binned {
        return None;
    }
    // SAFETY: VUID-VkGraphicsPipelineCreateInfo-pDynamicState-parameter: a non-null dynamic state is valid.
    let dynamic_in: Vec<vk::DynamicState> = unsafe { info.p_dynamic_state.as_ref() }
        // SAFETY: VUID-VkPipelineDynamicStateCreateInfo-pDynamicStates-parameter: `dynamicStateCount` states.
        .map(|d| unsafe { slice(d.p_dynamic_states, d.dynamic_state_count) }.to_vec())
        .unwrap_or_default();
    let mut dynamic = dynamic_in.clone();
    // SAFETY: VUID-VkGraphicsPipelineCreateInfo-pViewportState-09025: a
    // non-null `pViewportState` is valid.
    let viewport_state = unsafe { info.p_viewport_state.as_ref() };
    if let Some(vs) = viewport_state {
        if !dynamic_in.contains(&vk::DynamicState::VIEWPORT)
            && !dynamic_in.contains(&vk::DynamicState::VIEWPORT_WITH_COUNT)
        {
            // SAFETY: static viewports: `pViewports` holds `viewportCount`
            // viewports (it is ignored only where they are dynamic).
            pinfo.static_viewports = Some(unsafe { slice(vs.p_viewports, vs.viewport_count) }.to_vec());
            dynamic.push(vk::DynamicState::VIEWPORT);
        }
        if !dynamic_in.contains(&vk::DynamicState::SCISSOR)
            && !dynamic_in.contains(&vk::DynamicState::SCISSOR_WITH_COUNT)
        {
            // SAFETY: static scissors: `pScissors` holds `scissorCount`
            // rectangles (it is ignored only where they are dynamic).
            pinfo.static_scissors = Some(unsafe { slice(vs.p_scissors, vs.scissor_count) }.to_vec());
            dynamic.push(vk::DynamicState::SCISSOR);
        }
    }
    (dynamic.len() != dynamic_in.len()).then_some(dynamic)
}

/// The pipeline made from `info` as it is (its passes render at 1x1 or
/// need no variant), recorded as its own 1x1 variant on success.
///
/// # Safety
/// `info` is a valid create info of `down`'s device (what it points to
/// alive); `out` is writable.
unsafe fn create_plain(
    down: &Down,
    info: &vk::GraphicsPipelineCreateInfo,
    out: *mut vk::Pipeline,
    mut pinfo: PipelineInfo,
) -> vk::Result {
    // SAFETY: the caller's guarantee.
    let r = unsafe { down.create(info, down.alloc, out) };
    if r == vk::Result::SUCCESS {
        // SAFETY: `out` was written by the successful call.
        let p = unsafe { *out };
        pinfo.variants.insert((1, 1), p);
        down.f.pipelines.lock().insert(p, Arc::new(pinfo));
    }
    r
}

/// Pipeline variants made, with their areas.
type Variants = Vec<((u32, u32), vk::Pipeline)>;

/// The per-area variants of the pipeline of `info`, in the order of
/// `areas`, as far as they can be made: per area the fragment stage
/// (`stages[fs]`, of module `m`, `inv` invocations per fragment) lowered
/// for the area and the pipeline made with it; the 1x1 one, the
/// application's pipeline, with its allocator. `Err` (the driver's result)
/// where the 1x1 pipeline fails.
///
/// # Safety
/// `info` is a valid create info of `down`'s device (what it points to
/// alive) and `stages` its stages.
unsafe fn create_variants(
    down: &Down,
    info: &vk::GraphicsPipelineCreateInfo,
    stages: &[vk::PipelineShaderStageCreateInfo],
    fs: usize,
    m: &ModuleFacts,
    areas: &[(u32, u32)],
    inv: u32,
) -> Result<Variants, vk::Result> {
    let (dev, f) = (down.dev, down.f);
    let fail = |command| crate::guard::injected_failure(&dev.settings().debug_fail, command);
    let mut made: Variants = Vec::new();
    for &area in areas {
        let Some(words) = variant_words(dev, m.words.as_ref().unwrap(), shader_fdm::Params { area, invocations: inv })
        else {
            break;
        };
        let mci =
            vk::ShaderModuleCreateInfo { code_size: words.len() * 4, p_code: words.as_ptr(), ..Default::default() };
        let mut module = vk::ShaderModule::null();
        // SAFETY: a create info built here over a live Vec of the lowered
        // (validated) code.
        let r = fail("vkCreateShaderModule").err().unwrap_or_else(|| unsafe {
            (f.below.fp_v1_0().create_shader_module)(dev.handle, &mci, std::ptr::null(), &mut module)
        });
        if r != vk::Result::SUCCESS {
            break;
        }
        let mut st: Vec<vk::PipelineShaderStageCreateInfo> = stages.to_vec();
        st[fs].module = module;
        let mut c = *info;
        c.p_stages = st.as_ptr();
        let mut p = vk::Pipeline::null();
        // SAFETY: the application's valid info with the fragment stage's module replaced by the variant's (a module
        // of this device, alive until after the call) and the stages in a live Vec; a module may be destroyed once
        // the pipelines made from it exist.
        // (The 1x1 variant is the application's pipeline: only the layer's own variants take the injection.)
        let injected = if area == (1, 1) { None } else { fail("vkCreateGraphicsPipelines").err() };
        let r = unsafe {
            let alloc = if area == (1, 1) { down.alloc } else { std::ptr::null() };
            let r = injected.unwrap_or_else(|| down.create(&c, alloc, &mut p));
            (f.below.fp_v1_0().destroy_shader_module)(dev.handle, module, std::ptr::null());
            r
        };
        if r != vk::Result::SUCCESS {
            if area == (1, 1) {
                return Err(r);
            }
            break;
        }
        made.push((area, p));
    }
    Ok(made)
}

/// The graphics pipeline libraries `info` links (none without
/// `VkPipelineLibraryCreateInfoKHR`).
///
/// # Safety
/// `info` is a valid create info.
unsafe fn libraries<'a>(info: &'a vk::GraphicsPipelineCreateInfo) -> &'a [vk::Pipeline] {
    // SAFETY: the caller's guarantee: a valid chain
    // (VUID-VkGraphicsPipelineCreateInfo-pNext-pNext), whose library list
    // holds `libraryCount` handles (VUID-VkPipelineLibraryCreateInfoKHR-pLibraries-parameter).
    unsafe {
        match crate::pnext::find::<vk::PipelineLibraryCreateInfoKHR>(info.p_next) {
            Some(l) => slice(l.p_libraries, l.library_count),
            None => &[],
        }
    }
}

/// A link of graphics pipeline libraries of which library `k` of
/// `libraries` (`lib`) has per-area variants: the application's link is the
/// 1x1 variant; each other area links the same libraries with library `k`'s
/// variant for that area in its place (a variant that cannot be made leaves
/// that area out: passes replayed at it render at 1x1). `pinfo` is what the
/// pipeline carries besides its variants.
///
/// # Safety
/// As [`create_one`]; `info` is its create info (the application's, with
/// viewports and scissors made dynamic), `libraries` the libraries it links.
#[allow(clippy::too_many_arguments)]
unsafe fn link_variants(
    dev: &DeviceCore,
    f: &Fdm,
    cache: vk::PipelineCache,
    info: &vk::GraphicsPipelineCreateInfo,
    alloc: *const vk::AllocationCallbacks,
    out: *mut vk::Pipeline,
    (libraries, k, lib): (&[vk::Pipeline], usize, &PipelineInfo),
    mut pinfo: PipelineInfo,
) -> vk::Result {
    let down = f.below.fp_v1_0().create_graphics_pipelines;
    // SAFETY: the caller's guarantee: a valid info; `out` is writable.
    let r = unsafe { down(dev.handle, cache, 1, info, alloc, out) };
    if r != vk::Result::SUCCESS {
        return r;
    }
    // SAFETY: `out` was written by the successful call.
    let first = unsafe { *out };
    let mut made = vec![((1, 1), first)];
    // SAFETY: the caller's guarantee: a valid chain.
    let chain = unsafe { Chain::copy(info.p_next) };
    let mut complete = chain.is_ok();
    if let Ok(mut chain) = chain {
        for area in AREAS[1..].iter().copied() {
            let Some(variant) = lib.variants.get(&area) else {
                complete = false;
                continue;
            };
            let mut list = libraries.to_vec();
            list[k] = *variant;
            if let Some(l) = chain.get_mut::<vk::PipelineLibraryCreateInfoKHR>() {
                l.p_libraries = list.as_ptr();
            }
            let mut c = *info;
            c.p_next = chain.head();
            let mut p = vk::Pipeline::null();
            let injected = crate::guard::injected_failure(&dev.settings().debug_fail, "vkCreateGraphicsPipelines");
            // SAFETY: the application's valid info with its chain copied and the library list naming library `k`'s
            // variant instead (a library the layer made from the same create info but the fragment stage's code,
            // alive), both live locals.
            let r =
                injected.err().unwrap_or_else(|| unsafe { down(dev.handle, cache, 1, &c, std::ptr::null(), &mut p) });
            if r != vk::Result::SUCCESS {
                complete = false;
                continue;
            }
            made.push((area, p));
        }
    }
    if !complete {
        warn_incomplete_variants(dev, "pipeline");
    }
    pinfo.needs_variants = true;
    pinfo.variants = made.into_iter().collect();
    f.pipelines.lock().insert(first, Arc::new(pinfo));
    vk::Result::SUCCESS
}

/// Said once per kind (`pipeline`, `shader object`): some per-area variants
/// of that kind could not be made.
fn warn_incomplete_variants(dev: &DeviceCore, kind: &str) {
    let what = format!("some per-area {kind} variants could not be made; passes binding them render at 1x1");
    dev.log().log_once(LogLevel::Warn, id::FDM_VARIANTS, kind, &what);
}

/// What the layer forgets when the application destroys an object (the
/// `forget` handlers of the destroy rows, before the object goes down).
impl Fdm {
    pub fn forget_image(&self, image: vk::Image) {
        self.images.lock().remove(&image);
        self.retire_table(image);
        self.map_layouts.lock().remove(&image);
        self.map_generation.lock().remove(&image);
        self.dynamic_areas.forget(image);
    }

    pub fn forget_view(&self, view: vk::ImageView) {
        self.views.lock().remove(&view);
        self.map_cache.lock().remove(&view);
        // SAFETY: the scratch targets made for this view are the layer's own and
        // no longer used by pending work (VUID-vkDestroyImageView-imageView-01026:
        // the view's own pending work is complete, and replays using it too).
        unsafe { self.scratch.lock().forget_view(&self.below, view) };
    }

    pub fn forget_render_pass(&self, pass: vk::RenderPass) {
        if let Some(p) = self.passes.lock().remove(&pass) {
            if p.unclearing != vk::RenderPass::null() {
                // SAFETY: the layer's twin of the pass, made without an allocator; the work begun with it was
                // recorded in the application's pass, whose pending work is complete
                // (VUID-vkDestroyRenderPass-renderPass-00873).
                unsafe { self.below.destroy_render_pass(p.unclearing, None) };
            }
        }
        if let Some(raw) = &self.raw {
            if let Some(p) = self.gpu_plan.lock().clears.remove(&pass) {
                // SAFETY: the layer's clear pipeline for the pass, used only in its instances, whose pending work
                // is complete (VUID-vkDestroyRenderPass-renderPass-00873).
                unsafe { raw.destroy_pipeline(p, None) };
            }
        }
        // SAFETY: the scratch targets made for this render pass are the
        // layer's own and no longer used by pending work
        // (VUID-vkDestroyRenderPass-renderPass-00873: the render pass's
        // pending work is complete, and the replays begun with it too).
        unsafe { self.scratch.lock().forget_render_pass(&self.below, pass) };
    }

    pub fn forget_framebuffer(&self, fb: vk::Framebuffer) {
        self.framebuffers.lock().remove(&fb);
    }

    pub fn forget_module(&self, module: vk::ShaderModule) {
        self.modules.lock().remove(&module);
        multiview_flush::forget_module(self, module);
        if let Some(pv) = &self.per_view {
            multiview_flush::forget_code(&pv.rewritten, module);
            multiview_flush::forget_code(&pv.gated, module);
        }
        if let Some(m) = &self.masks {
            multiview_flush::forget_code(&m.rewritten, module);
            multiview_flush::forget_code(&m.geometry, module);
        }
    }

    /// The partners of `pipeline` (the multiview flush's, per-view
    /// viewports') go with it.
    fn forget_partners(&self, pipeline: vk::Pipeline) {
        multiview_flush::forget(self, pipeline);
        if let Some(pv) = &self.per_view {
            // The per-view partner's own flush partner first.
            if let Some(p) = pv.partner(pipeline) {
                multiview_flush::forget(self, p);
            }
            multiview_flush::forget_partner(self, &pv.partners, pipeline);
        }
        if let Some(m) = &self.masks {
            multiview_flush::forget_partner(self, &m.partners, pipeline);
        }
    }

    /// The per-area variants go with the application's pipeline.
    pub fn forget_pipeline(&self, pipeline: vk::Pipeline) {
        self.forget_partners(pipeline);
        if let Some(p) = self.pipelines.lock().remove(&pipeline) {
            for (area, v) in &p.variants {
                if *area != (1, 1) {
                    self.forget_partners(*v);
                    // SAFETY: the variant is the layer's own, made with the
                    // application's pipeline, which no pending work uses
                    // (VUID-vkDestroyPipeline-pipeline-00765).
                    unsafe { (self.below.fp_v1_0().destroy_pipeline)(self.below.handle(), *v, std::ptr::null()) };
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::plan::{DriverFacts, Plan};
    use crate::settings::Settings;
    use ash::vk;

    #[test]
    fn binning_uses_the_texel_limits_the_device_reports() {
        let facts = DriverFacts {
            device_name: "llvmpipe (LLVM 15.0.6, 256 bits)".into(),
            vendor_id: 0x10005,
            api_version: vk::make_api_version(0, 1, 3, 230),
            driver_id: None,
            driver_name: String::new(),
            extensions: Vec::new(),
        };
        let log = crate::log::Logger::new(crate::settings::LogLevel::Error, Vec::new());
        let native = Plan::new(&Settings::defaults(), &facts, None);
        assert_eq!(super::texel_limits(&log, &native), ((8, 8), (256, 256)));
        // The a6xx profile's minimum is 32x32 (its maximum, 1024, above the emulation's).
        let a6xx =
            Plan::new(&Settings::defaults(), &facts, crate::profile::Profile::builtin("a6xx").map(std::sync::Arc::new));
        assert_eq!(super::texel_limits(&log, &a6xx), ((32, 32), (256, 256)));
    }
}

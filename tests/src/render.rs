//! A small headless ash renderer, shared by every suite: instance and device
//! creation (with a debug messenger that records every message), an offscreen
//! colour target drawn through a render pass or dynamic rendering, and
//! readback to memory and PNG.

use ash::vk;
use std::ffi::{c_void, CStr, CString};
use std::sync::Mutex;

pub const SCENE_VERT: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/scene.vert.spv"));
pub const SCENE_FRAG: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/scene.frag.spv"));
pub const COLOR_FORMAT: vk::Format = vk::Format::R8G8B8A8_UNORM;
/// The clear colour of every render, as stored in R8G8B8A8_UNORM.
pub const CLEAR_RGBA: [u8; 4] = [0, 0, 64, 255];

/// One message a debug messenger received.
#[derive(Clone, Debug)]
pub struct Message {
    pub severity: vk::DebugUtilsMessageSeverityFlagsEXT,
    pub id: String,
    pub text: String,
}

static MESSAGES: Mutex<Vec<Message>> = Mutex::new(Vec::new());

unsafe extern "system" fn on_message(
    severity: vk::DebugUtilsMessageSeverityFlagsEXT,
    _ty: vk::DebugUtilsMessageTypeFlagsEXT,
    data: *const vk::DebugUtilsMessengerCallbackDataEXT<'_>,
    _user: *mut c_void,
) -> vk::Bool32 {
    let d = &*data;
    let text = |p: *const std::ffi::c_char| {
        if p.is_null() {
            String::new()
        } else {
            CStr::from_ptr(p).to_string_lossy().into_owned()
        }
    };
    MESSAGES.lock().unwrap().push(Message { severity, id: text(d.p_message_id_name), text: text(d.p_message) });
    vk::FALSE
}

/// Every message received so far.
pub fn messages() -> Vec<Message> {
    MESSAGES.lock().unwrap().clone()
}

/// Errors reported by layers other than Overlap (the validation layer below it).
pub fn validation_errors() -> Vec<Message> {
    messages()
        .into_iter()
        .filter(|m| m.severity.contains(vk::DebugUtilsMessageSeverityFlagsEXT::ERROR) && !m.id.starts_with("OVERLAP-"))
        // The loader's note on a vkCreateDevice that a test expects to fail.
        .filter(|m| !(m.id == "Loader Message" && m.text.contains("Failed to create device chain")))
        .collect()
}

/// Prints the validation errors (stderr), their count and the ids of
/// Overlap's messages (stdout, the lines the suites read), and returns the
/// errors.
pub fn print_messages() -> Vec<Message> {
    let errors = validation_errors();
    for e in &errors {
        eprintln!("VALIDATION ERROR [{}] {}", e.id, e.text);
    }
    let overlap: Vec<String> = messages().into_iter().filter(|m| m.id.starts_with("OVERLAP-")).map(|m| m.id).collect();
    println!("VALIDATION_ERRORS={}", errors.len());
    println!("OVERLAP_MESSAGES={}", overlap.join(","));
    errors
}

/// A value for `VkLayerSettingsCreateInfoEXT`.
#[derive(Clone, Debug)]
pub enum SettingValue {
    Bool(bool),
    Str(String),
}

#[derive(Clone, Debug, Default)]
pub struct GpuOptions {
    /// Settings for Overlap passed through `VkLayerSettingsCreateInfoEXT`.
    pub layer_settings: Vec<(String, SettingValue)>,
    /// Enable VK_EXT_fragment_shader_interlock (pixel and sample) where listed.
    pub interlock: bool,
    /// Enable VK_EXT_graphics_pipeline_library (inline shader modules).
    pub pipeline_library: bool,
    /// Enable VK_KHR_fragment_shading_rate (pipeline rates) where listed.
    pub shading_rate: bool,
    /// Enable VK_EXT_shader_object where listed.
    pub shader_object: bool,
    /// Enable VK_EXT_fragment_density_map where listed.
    pub fdm: bool,
    /// Also enable VK_EXT_fragment_density_map2 (with its feature structure;
    /// `fragmentDensityMapDeferred` as given) where listed.
    pub fdm2: Option<bool>,
    /// With `fdm`, also ask for `fragmentDensityMapDynamic`.
    pub fdm_dynamic: bool,
    /// Also enable VK_EXT_fragment_density_map_offset (and its feature)
    /// where listed.
    pub fdm_offset: bool,
    /// Enable VK_EXT_conditional_rendering (the application's own, with its
    /// feature) where listed.
    pub conditional_rendering: bool,
    /// Enable VK_KHR_dynamic_rendering_local_read (and multiview) where listed.
    pub local_read: bool,
    /// Enable VK_EXT_multi_draw (and its feature) where listed.
    pub multi_draw: bool,
    /// With `fdm`, enable VK_VALVE_fragment_density_map_layered (its
    /// feature, `VK_KHR_maintenance5` and `shaderOutputLayer`) where listed.
    pub fdm_layered: bool,
    /// Enable VK_NV_viewport_array2 (and `multiViewport`) where listed.
    pub viewport_mask: bool,
    /// Chain a structure no layer or driver knows (a made-up sType) into the
    /// device create info: `Some(true)` at the end of the chain (after the
    /// density-map features), `Some(false)` at its head (before them).
    pub unknown_structure: Option<bool>,
    /// Enable the dynamic state beyond Vulkan 1.3 the driver lists: colour
    /// write enable, extended dynamic state 2 (logic op) and 3 (colour write
    /// mask), line rasterization (stippled lines), with the features they need.
    pub dynamic_state: bool,
    /// Be a Vulkan 1.1 application: render pass 2, dynamic rendering and
    /// synchronization 2 come from their KHR extensions, and every command of
    /// a newer core version is called by its extension name (`…KHR`).
    pub khr_1_1: bool,
    /// Ask for a second queue of the graphics family where it has one.
    pub second_queue: bool,
}

pub struct Gpu {
    pub entry: ash::Entry,
    pub instance: ash::Instance,
    debug_utils: Option<(ash::ext::debug_utils::Instance, vk::DebugUtilsMessengerEXT)>,
    pub pd: vk::PhysicalDevice,
    pub device: ash::Device,
    pub queue: vk::Queue,
    /// Queue 1 of the same family ([`GpuOptions::second_queue`]).
    pub second_queue: Option<vk::Queue>,
    pub queue_family: u32,
    pub memory: vk::PhysicalDeviceMemoryProperties,
    pub dynamic_rendering: bool,
    pub device_name: String,
    /// VK_EXT_fragment_shader_interlock was enabled.
    pub interlock: bool,
    /// VK_KHR_fragment_shading_rate was enabled.
    pub shading_rate: bool,
    /// ... with primitiveFragmentShadingRate.
    pub primitive_shading_rate: bool,
    /// fragmentShaderShadingRateInterlock was enabled (with shading rates and interlock).
    pub shading_rate_interlock: bool,
    /// VK_EXT_shader_object was enabled.
    pub shader_object: bool,
    /// VK_EXT_fragment_density_map was enabled.
    pub fdm: bool,
    /// VK_EXT_fragment_density_map_offset was enabled.
    pub fdm_offset: bool,
    /// VK_VALVE_fragment_density_map_layered was enabled (`GpuOptions::fdm_layered`).
    pub fdm_layered: bool,
    /// VK_NV_viewport_array2 and `multiViewport` were enabled (`GpuOptions::viewport_mask`).
    pub viewport_mask: bool,
    /// VK_EXT_multi_draw was enabled (`GpuOptions::multi_draw`).
    pub multi_draw: bool,
    /// The application's VK_EXT_conditional_rendering
    /// (`GpuOptions::conditional_rendering`).
    pub conditional_rendering: Option<ash::ext::conditional_rendering::Device>,
    /// What `GpuOptions::dynamic_state` enabled.
    pub dynamic_state: DynamicStateSupport,
    /// A Vulkan 1.1 application using the KHR names (`GpuOptions::khr_1_1`).
    pub khr_1_1: bool,
    pub properties: vk::PhysicalDeviceProperties,
    /// VK_KHR_pipeline_executable_properties enabled
    /// (`OVERLAP_TEST_PIPELINE_STATISTICS=1`, where listed).
    pub pipeline_statistics: bool,
}

/// Dynamic state beyond Vulkan 1.3 that a device was created with.
#[derive(Clone, Copy, Debug, Default)]
pub struct DynamicStateSupport {
    /// `vkCmdSetColorWriteEnableEXT`.
    pub color_write_enable: bool,
    /// `vkCmdSetLogicOpEXT` (and the `logicOp` feature).
    pub logic_op: bool,
    /// `vkCmdSetColorWriteMaskEXT`.
    pub color_write_mask: bool,
    /// `vkCmdSetLineStippleEXT`, with this line mode's stippling.
    pub line_stipple: Option<vk::LineRasterizationModeEXT>,
}

#[derive(Debug)]
pub enum GpuError {
    Load(String),
    Vk(&'static str, vk::Result),
    NoDevice,
}

impl std::fmt::Display for GpuError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            GpuError::Load(e) => write!(f, "cannot load the Vulkan loader: {e}"),
            GpuError::Vk(what, r) => write!(f, "{what} failed: {r:?}"),
            GpuError::NoDevice => write!(f, "no Vulkan physical device"),
        }
    }
}

fn check<T>(what: &'static str, r: Result<T, vk::Result>) -> Result<T, GpuError> {
    r.map_err(|e| GpuError::Vk(what, e))
}

/// Creates an instance with a messenger (chained at creation, and created
/// after), for the instance layers the environment names.
pub fn create_instance(
    entry: &ash::Entry,
    opts: &GpuOptions,
) -> Result<(ash::Instance, Option<(ash::ext::debug_utils::Instance, vk::DebugUtilsMessengerEXT)>), GpuError> {
    let has_debug_utils = unsafe { entry.enumerate_instance_extension_properties(None) }
        .unwrap_or_default()
        .iter()
        .any(|e| e.extension_name_as_c_str() == Ok(ash::ext::debug_utils::NAME));
    let api = if opts.khr_1_1 { vk::API_VERSION_1_1 } else { vk::API_VERSION_1_3 };
    let app = vk::ApplicationInfo::default().api_version(api).application_name(c"overlap-testapp");
    let exts = if has_debug_utils { vec![ash::ext::debug_utils::NAME.as_ptr()] } else { vec![] };
    let severities = vk::DebugUtilsMessageSeverityFlagsEXT::ERROR
        | vk::DebugUtilsMessageSeverityFlagsEXT::WARNING
        | vk::DebugUtilsMessageSeverityFlagsEXT::INFO;
    let types = vk::DebugUtilsMessageTypeFlagsEXT::GENERAL
        | vk::DebugUtilsMessageTypeFlagsEXT::VALIDATION
        | vk::DebugUtilsMessageTypeFlagsEXT::PERFORMANCE;
    let mut chained = vk::DebugUtilsMessengerCreateInfoEXT::default()
        .message_severity(severities)
        .message_type(types)
        .pfn_user_callback(Some(on_message));

    // Keep the setting values alive until vkCreateInstance returns.
    let layer = c"VK_LAYER_OVERLAP_emulation";
    let names: Vec<CString> = opts.layer_settings.iter().map(|(k, _)| CString::new(k.as_str()).unwrap()).collect();
    let bools: Vec<vk::Bool32> =
        opts.layer_settings.iter().map(|(_, v)| matches!(v, SettingValue::Bool(true)) as u32).collect();
    let strs: Vec<CString> = opts
        .layer_settings
        .iter()
        .map(|(_, v)| CString::new(if let SettingValue::Str(s) = v { s.as_str() } else { "" }).unwrap())
        .collect();
    let str_ptrs: Vec<*const std::ffi::c_char> = strs.iter().map(|s| s.as_ptr()).collect();
    let entries: Vec<vk::LayerSettingEXT> = opts
        .layer_settings
        .iter()
        .enumerate()
        .map(|(i, (_, v))| {
            let (ty, p) = match v {
                SettingValue::Bool(_) => (vk::LayerSettingTypeEXT::BOOL32, &bools[i] as *const u32 as *const c_void),
                SettingValue::Str(_) => (vk::LayerSettingTypeEXT::STRING, &str_ptrs[i] as *const _ as *const c_void),
            };
            vk::LayerSettingEXT {
                p_layer_name: layer.as_ptr(),
                p_setting_name: names[i].as_ptr(),
                ty,
                value_count: 1,
                p_values: p,
                ..Default::default()
            }
        })
        .collect();
    let mut settings = vk::LayerSettingsCreateInfoEXT::default().settings(&entries);
    let mut info = vk::InstanceCreateInfo::default().application_info(&app).enabled_extension_names(&exts);
    if has_debug_utils {
        info = info.push_next(&mut chained);
    }
    if !entries.is_empty() {
        info = info.push_next(&mut settings);
    }
    let instance = check("vkCreateInstance", unsafe { entry.create_instance(&info, None) })?;
    let debug_utils = if has_debug_utils {
        let du = ash::ext::debug_utils::Instance::new(entry, &instance);
        let info = vk::DebugUtilsMessengerCreateInfoEXT::default()
            .message_severity(severities)
            .message_type(types)
            .pfn_user_callback(Some(on_message));
        let m = check("vkCreateDebugUtilsMessengerEXT", unsafe { du.create_debug_utils_messenger(&info, None) })?;
        Some((du, m))
    } else {
        None
    };
    Ok((instance, debug_utils))
}

impl Gpu {
    pub fn new(opts: &GpuOptions) -> Result<Gpu, GpuError> {
        let entry = unsafe { ash::Entry::load() }.map_err(|e| GpuError::Load(e.to_string()))?;
        let (instance, debug_utils) = create_instance(&entry, opts)?;
        let pds = check("vkEnumeratePhysicalDevices", unsafe { instance.enumerate_physical_devices() })?;
        let pd = *pds.first().ok_or(GpuError::NoDevice)?;
        let props = unsafe { instance.get_physical_device_properties(pd) };
        let device_name = unsafe { CStr::from_ptr(props.device_name.as_ptr()) }.to_string_lossy().into_owned();
        let families = unsafe { instance.get_physical_device_queue_family_properties(pd) };
        let queue_family =
            families.iter().position(|q| q.queue_flags.contains(vk::QueueFlags::GRAPHICS)).ok_or(GpuError::NoDevice)?
                as u32;
        let two_queues = opts.second_queue && families[queue_family as usize].queue_count >= 2;
        let mut f13 = vk::PhysicalDeviceVulkan13Features::default();
        let mut f11 = vk::PhysicalDeviceVulkan11Features::default();
        let mut f12 = vk::PhysicalDeviceVulkan12Features::default();
        let mut f2 = vk::PhysicalDeviceFeatures2::default().push_next(&mut f13).push_next(&mut f11);
        if vk::api_version_minor(props.api_version) >= 2 {
            f2 = f2.push_next(&mut f12);
        }
        unsafe { instance.get_physical_device_features2(pd, &mut f2) };
        let listed = unsafe { instance.enumerate_device_extension_properties(pd) }.unwrap_or_default();
        let has = |n: &CStr| listed.iter().any(|e| e.extension_name_as_c_str() == Ok(n));
        let khr_names = [
            ash::khr::create_renderpass2::NAME,
            ash::khr::depth_stencil_resolve::NAME,
            ash::khr::dynamic_rendering::NAME,
            ash::khr::synchronization2::NAME,
        ];
        let khr = opts.khr_1_1 && khr_names.iter().all(|n| has(n));
        let dynamic_rendering = if opts.khr_1_1 {
            khr
        } else {
            vk::api_version_minor(props.api_version) >= 3 && f13.dynamic_rendering == vk::TRUE
        };
        let prio = [1.0f32, 1.0];
        let queues = [vk::DeviceQueueCreateInfo::default()
            .queue_family_index(queue_family)
            .queue_priorities(&prio[..if two_queues { 2 } else { 1 }])];
        let mut enable13 = vk::PhysicalDeviceVulkan13Features::default().dynamic_rendering(dynamic_rendering);
        let mut enable11 = vk::PhysicalDeviceVulkan11Features::default().multiview(f11.multiview == vk::TRUE);
        // drawIndirectCount: the indirect-count draws of `draw_kind`.
        let mut enable12 = vk::PhysicalDeviceVulkan12Features::default()
            .imageless_framebuffer(f12.imageless_framebuffer == vk::TRUE)
            .draw_indirect_count(f12.draw_indirect_count == vk::TRUE);
        let interlock = opts.interlock
            && listed.iter().any(|e| e.extension_name_as_c_str() == Ok(ash::ext::fragment_shader_interlock::NAME));
        let supported = unsafe { instance.get_physical_device_features(pd) };
        let features = vk::PhysicalDeviceFeatures::default()
            .fragment_stores_and_atomics(supported.fragment_stores_and_atomics == vk::TRUE)
            .sample_rate_shading(supported.sample_rate_shading == vk::TRUE)
            .geometry_shader(supported.geometry_shader == vk::TRUE)
            .tessellation_shader(supported.tessellation_shader == vk::TRUE)
            .pipeline_statistics_query(supported.pipeline_statistics_query == vk::TRUE)
            .logic_op(opts.dynamic_state && supported.logic_op == vk::TRUE)
            .multi_viewport(opts.viewport_mask && supported.multi_viewport == vk::TRUE);
        let mut supported_interlock = vk::PhysicalDeviceFragmentShaderInterlockFeaturesEXT::default();
        if interlock {
            let mut q = vk::PhysicalDeviceFeatures2::default().push_next(&mut supported_interlock);
            unsafe { instance.get_physical_device_features2(pd, &mut q) };
        }
        let shading_rate_interlock = interlock
            && opts.shading_rate
            && has(ash::khr::fragment_shading_rate::NAME)
            && supported_interlock.fragment_shader_shading_rate_interlock == vk::TRUE;
        let mut enable_interlock = vk::PhysicalDeviceFragmentShaderInterlockFeaturesEXT::default()
            .fragment_shader_pixel_interlock(true)
            .fragment_shader_sample_interlock(true)
            .fragment_shader_shading_rate_interlock(shading_rate_interlock);
        let mut exts = if interlock { vec![ash::ext::fragment_shader_interlock::NAME.as_ptr()] } else { vec![] };
        // An extension asked for and listed is enabled (with the ones it needs before it).
        let mut enable = |asked: bool, names: &[&'static CStr]| -> bool {
            let on = asked && has(names[names.len() - 1]);
            if on {
                exts.extend(names.iter().map(|n| n.as_ptr()));
            }
            on
        };
        let gpl = enable(
            opts.pipeline_library,
            &[ash::khr::pipeline_library::NAME, ash::ext::graphics_pipeline_library::NAME],
        );
        let mut enable_gpl =
            vk::PhysicalDeviceGraphicsPipelineLibraryFeaturesEXT::default().graphics_pipeline_library(true);
        let fsr = enable(opts.shading_rate, &[ash::khr::fragment_shading_rate::NAME]);
        let shader_object = enable(opts.shader_object, &[ash::ext::shader_object::NAME]);
        let mut enable_so = vk::PhysicalDeviceShaderObjectFeaturesEXT::default().shader_object(true);
        let fdm = enable(opts.fdm, &[ash::ext::fragment_density_map::NAME]);
        let mut enable_fdm = vk::PhysicalDeviceFragmentDensityMapFeaturesEXT::default()
            .fragment_density_map(true)
            .fragment_density_map_dynamic(opts.fdm_dynamic);
        let fdm2 = opts.fdm2.filter(|_| enable(fdm, &[ash::ext::fragment_density_map2::NAME]));
        let mut enable_fdm2 = vk::PhysicalDeviceFragmentDensityMap2FeaturesEXT::default()
            .fragment_density_map_deferred(fdm2 == Some(true));
        // The EXT extension's structures have the QCOM original's types.
        let fdm_offset = enable(opts.fdm_offset && fdm, &[c"VK_EXT_fragment_density_map_offset"]);
        let mut enable_fdm_offset =
            vk::PhysicalDeviceFragmentDensityMapOffsetFeaturesQCOM::default().fragment_density_map_offset(true);
        // The per-layer pipeline bit lives in VkPipelineCreateFlags2 (maintenance5).
        let fdm_layered = enable(
            opts.fdm_layered && fdm && f12.shader_output_layer == vk::TRUE,
            &[ash::khr::maintenance5::NAME, crate::fdm::layered::EXTENSION],
        );
        let mut enable_m5 = vk::PhysicalDeviceMaintenance5FeaturesKHR::default().maintenance5(true);
        let mut enable_layered = crate::fdm::layered::Features::new();
        if fdm_layered {
            enable12 = enable12.shader_output_layer(true);
        }
        let viewport_mask =
            enable(opts.viewport_mask && supported.multi_viewport == vk::TRUE, &[c"VK_NV_viewport_array2"]);
        let conditional = enable(opts.conditional_rendering, &[ash::ext::conditional_rendering::NAME]);
        let mut enable_conditional =
            vk::PhysicalDeviceConditionalRenderingFeaturesEXT::default().conditional_rendering(true);
        let multi_draw = enable(opts.multi_draw, &[ash::ext::multi_draw::NAME]);
        let mut enable_multi_draw = vk::PhysicalDeviceMultiDrawFeaturesEXT::default().multi_draw(true);
        let local_read = enable(opts.local_read, &[ash::khr::dynamic_rendering_local_read::NAME]);
        // `OVERLAP_TEST_PIPELINE_STATISTICS=1`: the driver's statistics of
        // every executable of the pipelines made through `pipeline_stages`
        // (registers, code size where the driver says), printed as
        // `pipeline_statistics …` lines: what a shader rewrite costs in
        // occupancy, read on the driver that runs it.
        let pipeline_statistics = enable(
            std::env::var_os("OVERLAP_TEST_PIPELINE_STATISTICS").is_some_and(|v| v == "1"),
            &[ash::khr::pipeline_executable_properties::NAME],
        );
        let mut enable_statistics =
            vk::PhysicalDevicePipelineExecutablePropertiesFeaturesKHR::default().pipeline_executable_info(true);
        let mut enable_local_read =
            vk::PhysicalDeviceDynamicRenderingLocalReadFeaturesKHR::default().dynamic_rendering_local_read(true);
        // Dynamic state beyond 1.3: what the driver lists and supports.
        let mut cwe = vk::PhysicalDeviceColorWriteEnableFeaturesEXT::default();
        let mut eds2 = vk::PhysicalDeviceExtendedDynamicState2FeaturesEXT::default();
        let mut eds3 = vk::PhysicalDeviceExtendedDynamicState3FeaturesEXT::default();
        let mut lines = vk::PhysicalDeviceLineRasterizationFeaturesEXT::default();
        if opts.dynamic_state {
            let mut q = vk::PhysicalDeviceFeatures2::default()
                .push_next(&mut cwe)
                .push_next(&mut eds2)
                .push_next(&mut eds3)
                .push_next(&mut lines);
            unsafe { instance.get_physical_device_features2(pd, &mut q) };
        }
        let ds = opts.dynamic_state;
        let mut dynamic_state = DynamicStateSupport {
            color_write_enable: ds && has(ash::ext::color_write_enable::NAME) && cwe.color_write_enable == vk::TRUE,
            logic_op: ds
                && has(ash::ext::extended_dynamic_state2::NAME)
                && eds2.extended_dynamic_state2_logic_op == vk::TRUE
                && supported.logic_op == vk::TRUE,
            color_write_mask: ds
                && has(ash::ext::extended_dynamic_state3::NAME)
                && eds3.extended_dynamic_state3_color_write_mask == vk::TRUE,
            line_stipple: None,
        };
        if ds && has(ash::ext::line_rasterization::NAME) {
            if lines.rectangular_lines == vk::TRUE && lines.stippled_rectangular_lines == vk::TRUE {
                dynamic_state.line_stipple = Some(vk::LineRasterizationModeEXT::RECTANGULAR);
            } else if lines.bresenham_lines == vk::TRUE && lines.stippled_bresenham_lines == vk::TRUE {
                dynamic_state.line_stipple = Some(vk::LineRasterizationModeEXT::BRESENHAM);
            }
        }
        let mut enable_cwe = vk::PhysicalDeviceColorWriteEnableFeaturesEXT::default().color_write_enable(true);
        let mut enable_eds2 =
            vk::PhysicalDeviceExtendedDynamicState2FeaturesEXT::default().extended_dynamic_state2_logic_op(true);
        let mut enable_eds3 = vk::PhysicalDeviceExtendedDynamicState3FeaturesEXT::default()
            .extended_dynamic_state3_color_write_mask(true);
        let mut enable_lines = vk::PhysicalDeviceLineRasterizationFeaturesEXT::default();
        match dynamic_state.line_stipple {
            Some(vk::LineRasterizationModeEXT::RECTANGULAR) => {
                enable_lines = enable_lines.rectangular_lines(true).stippled_rectangular_lines(true)
            }
            Some(_) => enable_lines = enable_lines.bresenham_lines(true).stippled_bresenham_lines(true),
            None => {}
        }
        if dynamic_state.color_write_enable {
            exts.push(ash::ext::color_write_enable::NAME.as_ptr());
        }
        if dynamic_state.logic_op {
            exts.push(ash::ext::extended_dynamic_state2::NAME.as_ptr());
        }
        if dynamic_state.color_write_mask {
            exts.push(ash::ext::extended_dynamic_state3::NAME.as_ptr());
        }
        if dynamic_state.line_stipple.is_some() {
            exts.push(ash::ext::line_rasterization::NAME.as_ptr());
        }
        let mut supported_fsr = vk::PhysicalDeviceFragmentShadingRateFeaturesKHR::default();
        if fsr {
            let mut q = vk::PhysicalDeviceFeatures2::default().push_next(&mut supported_fsr);
            unsafe { instance.get_physical_device_features2(pd, &mut q) };
        }
        let primitive_fsr = fsr && supported_fsr.primitive_fragment_shading_rate == vk::TRUE;
        let mut enable_fsr = vk::PhysicalDeviceFragmentShadingRateFeaturesKHR::default()
            .pipeline_fragment_shading_rate(true)
            .primitive_fragment_shading_rate(primitive_fsr);
        if khr {
            exts.extend(khr_names.iter().map(|n| n.as_ptr()));
        }
        let mut enable_dr = vk::PhysicalDeviceDynamicRenderingFeatures::default().dynamic_rendering(true);
        let mut enable_sync2 = vk::PhysicalDeviceSynchronization2Features::default().synchronization2(true);
        let mut info = vk::DeviceCreateInfo::default()
            .queue_create_infos(&queues)
            .enabled_extension_names(&exts)
            .enabled_features(&features);
        if opts.khr_1_1 {
            // Vulkan 1.1: the 1.2/1.3 feature structures are not valid here.
            if khr {
                info = info.push_next(&mut enable_dr).push_next(&mut enable_sync2);
            }
        } else {
            info = info.push_next(&mut enable13);
            // Multiview (the multiview checks) and imageless framebuffers.
            if vk::api_version_minor(props.api_version) >= 2 {
                info = info.push_next(&mut enable11).push_next(&mut enable12);
            }
        }
        if interlock {
            info = info.push_next(&mut enable_interlock);
        }
        if gpl {
            info = info.push_next(&mut enable_gpl);
        }
        if fsr {
            info = info.push_next(&mut enable_fsr);
        }
        if shader_object {
            info = info.push_next(&mut enable_so);
        }
        if fdm {
            info = info.push_next(&mut enable_fdm);
        }
        if fdm2.is_some() {
            info = info.push_next(&mut enable_fdm2);
        }
        if conditional {
            info = info.push_next(&mut enable_conditional);
        }
        if multi_draw {
            info = info.push_next(&mut enable_multi_draw);
        }
        if local_read {
            info = info.push_next(&mut enable_local_read);
        }
        if pipeline_statistics {
            info = info.push_next(&mut enable_statistics);
        }
        if fdm_offset {
            info = info.push_next(&mut enable_fdm_offset);
        }
        if fdm_layered {
            info = info.push_next(&mut enable_m5).push_next(&mut enable_layered);
        }
        if dynamic_state.color_write_enable {
            info = info.push_next(&mut enable_cwe);
        }
        if dynamic_state.logic_op {
            info = info.push_next(&mut enable_eds2);
        }
        if dynamic_state.color_write_mask {
            info = info.push_next(&mut enable_eds3);
        }
        if dynamic_state.line_stipple.is_some() {
            info = info.push_next(&mut enable_lines);
        }
        let mut unknown =
            vk::BaseOutStructure { s_type: vk::StructureType::from_raw(1_000_999_000), ..Default::default() };
        match opts.unknown_structure {
            Some(false) => {
                unknown.p_next = info.p_next as *mut vk::BaseOutStructure;
                info.p_next = &unknown as *const _ as *const c_void;
            }
            Some(true) => unsafe {
                // The chain's structures are the locals above: the last one's pNext goes to the unknown one.
                let mut p = info.p_next as *mut vk::BaseOutStructure;
                if p.is_null() {
                    info.p_next = &unknown as *const _ as *const c_void;
                } else {
                    while !(*p).p_next.is_null() {
                        p = (*p).p_next;
                    }
                    (*p).p_next = &mut unknown;
                }
            },
            None => {}
        }
        let device = if opts.khr_1_1 {
            let mut raw = vk::Device::null();
            let r = unsafe { (instance.fp_v1_0().create_device)(pd, &info, std::ptr::null(), &mut raw) };
            check("vkCreateDevice", r.result())?;
            // Commands newer than 1.1 resolve only by their extension names.
            let gdpa = instance.fp_v1_0().get_device_proc_addr;
            unsafe {
                ash::Device::load_with(
                    |name| {
                        let f = gdpa(raw, name.as_ptr()).or_else(|| {
                            let khr = CString::new([name.to_bytes(), b"KHR"].concat()).unwrap();
                            gdpa(raw, khr.as_ptr())
                        });
                        f.map_or(std::ptr::null(), |f| f as *const c_void)
                    },
                    raw,
                )
            }
        } else {
            check("vkCreateDevice", unsafe { instance.create_device(pd, &info, None) })?
        };
        let queue = unsafe { device.get_device_queue(queue_family, 0) };
        let second_queue = two_queues.then(|| unsafe { device.get_device_queue(queue_family, 1) });
        let memory = unsafe { instance.get_physical_device_memory_properties(pd) };
        let conditional_rendering =
            conditional.then(|| ash::ext::conditional_rendering::Device::new(&instance, &device));
        Ok(Gpu {
            entry,
            instance,
            debug_utils,
            pd,
            device,
            queue,
            second_queue,
            queue_family,
            memory,
            dynamic_rendering,
            device_name,
            interlock,
            shading_rate: fsr,
            primitive_shading_rate: primitive_fsr,
            shading_rate_interlock,
            shader_object,
            fdm,
            fdm_offset,
            fdm_layered,
            viewport_mask,
            multi_draw,
            conditional_rendering,
            dynamic_state,
            khr_1_1: opts.khr_1_1,
            properties: props,
            pipeline_statistics,
        })
    }

    /// Whether the device lists the fragment size w×h at `samples` samples
    /// (vkGetPhysicalDeviceFragmentShadingRatesKHR).
    pub fn supports_rate(&self, w: u32, h: u32, samples: u32) -> bool {
        let fsr = ash::khr::fragment_shading_rate::Instance::new(&self.entry, &self.instance);
        let mut n = 0u32;
        let _ =
            unsafe { (fsr.fp().get_physical_device_fragment_shading_rates_khr)(self.pd, &mut n, std::ptr::null_mut()) };
        let mut rates = vec![vk::PhysicalDeviceFragmentShadingRateKHR::default(); n as usize];
        let _ =
            unsafe { (fsr.fp().get_physical_device_fragment_shading_rates_khr)(self.pd, &mut n, rates.as_mut_ptr()) };
        rates.iter().take(n as usize).any(|r| {
            r.fragment_size.width == w
                && r.fragment_size.height == h
                && r.sample_counts.contains(vk::SampleCountFlags::from_raw(samples))
        })
    }

    pub fn memory_type(&self, bits: u32, flags: vk::MemoryPropertyFlags) -> u32 {
        (0..self.memory.memory_type_count)
            .find(|&i| bits & (1 << i) != 0 && self.memory.memory_types[i as usize].property_flags.contains(flags))
            .expect("no suitable memory type")
    }

    /// A compute pipeline of `spirv` (entry point `main`) with `layout`.
    pub fn compute_pipeline(&self, spirv: &[u8], layout: vk::PipelineLayout) -> vk::Pipeline {
        let module = self.shader(spirv);
        let stage = vk::PipelineShaderStageCreateInfo::default()
            .stage(vk::ShaderStageFlags::COMPUTE)
            .module(module)
            .name(c"main");
        unsafe {
            let pipe = self
                .device
                .create_compute_pipelines(
                    vk::PipelineCache::null(),
                    &[vk::ComputePipelineCreateInfo::default().stage(stage).layout(layout)],
                    None,
                )
                .unwrap()[0];
            self.device.destroy_shader_module(module, None);
            pipe
        }
    }

    /// `CAPTURE_STATISTICS` where [`Gpu::pipeline_statistics`], for the
    /// create info of a pipeline [`Gpu::print_pipeline_statistics`] reads.
    pub fn statistics_flags(&self) -> vk::PipelineCreateFlags {
        if self.pipeline_statistics {
            vk::PipelineCreateFlags::CAPTURE_STATISTICS_KHR
        } else {
            vk::PipelineCreateFlags::empty()
        }
    }

    /// Prints the driver's statistics of each executable of `pipeline`
    /// (made with `CAPTURE_STATISTICS`) where [`Gpu::pipeline_statistics`]:
    /// one `pipeline_statistics` line an executable, `NAME=VALUE` pairs
    /// with the names' spaces removed.
    pub fn print_pipeline_statistics(&self, pipeline: vk::Pipeline) {
        if !self.pipeline_statistics {
            return;
        }
        let f = ash::khr::pipeline_executable_properties::Device::new(&self.instance, &self.device);
        let info = vk::PipelineInfoKHR::default().pipeline(pipeline);
        let Ok(executables) = (unsafe { f.get_pipeline_executable_properties(&info) }) else { return };
        for (i, e) in executables.iter().enumerate() {
            let name = e.name_as_c_str().map(|n| n.to_string_lossy().replace(' ', "_")).unwrap_or_default();
            let at = vk::PipelineExecutableInfoKHR::default().pipeline(pipeline).executable_index(i as u32);
            let stats = unsafe { f.get_pipeline_executable_statistics(&at) }.unwrap_or_default();
            let fields: Vec<String> = stats
                .iter()
                .map(|s| {
                    let n = s.name_as_c_str().map(|n| n.to_string_lossy().replace(' ', "_")).unwrap_or_default();
                    // SAFETY: the union member read is the one `format` names.
                    let v = unsafe {
                        match s.format {
                            vk::PipelineExecutableStatisticFormatKHR::BOOL32 => s.value.b32.to_string(),
                            vk::PipelineExecutableStatisticFormatKHR::INT64 => s.value.i64.to_string(),
                            vk::PipelineExecutableStatisticFormatKHR::UINT64 => s.value.u64.to_string(),
                            _ => format!("{:.2}", s.value.f64),
                        }
                    };
                    format!("{n}={v}")
                })
                .collect();
            println!("pipeline_statistics executable={name} stages={:?} {}", e.stages, fields.join(" "));
        }
    }

    pub fn shader(&self, spirv: &[u8]) -> vk::ShaderModule {
        let words = ash::util::read_spv(&mut std::io::Cursor::new(spirv)).expect("SPIR-V");
        unsafe { self.device.create_shader_module(&vk::ShaderModuleCreateInfo::default().code(&words), None) }
            .expect("vkCreateShaderModule")
    }

    /// The shared object that provides `vkGetDeviceProcAddr(device, name)`:
    /// tells whether Overlap's hook or the next layer answers a command.
    pub fn device_proc_owner(&self, name: &CStr) -> String {
        let f = unsafe { (self.instance.fp_v1_0().get_device_proc_addr)(self.device.handle(), name.as_ptr()) };
        let Some(f) = f else { return "null".into() };
        let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
        if unsafe { libc::dladdr(f as *const c_void, &mut info) } == 0 || info.dli_fname.is_null() {
            return "unknown".into();
        }
        let path = unsafe { CStr::from_ptr(info.dli_fname) }.to_string_lossy().into_owned();
        path.rsplit('/').next().unwrap_or(&path).to_string()
    }

    /// A global memory barrier from (stage, access) to (stage, access).
    pub fn memory_barrier(
        &self,
        cb: vk::CommandBuffer,
        src: (vk::PipelineStageFlags, vk::AccessFlags),
        dst: (vk::PipelineStageFlags, vk::AccessFlags),
    ) {
        if self.khr_1_1 {
            // vkCmdPipelineBarrier2KHR (the flags of both versions share bits).
            let b = [vk::MemoryBarrier2::default()
                .src_stage_mask(vk::PipelineStageFlags2::from_raw(src.0.as_raw() as u64))
                .src_access_mask(vk::AccessFlags2::from_raw(src.1.as_raw() as u64))
                .dst_stage_mask(vk::PipelineStageFlags2::from_raw(dst.0.as_raw() as u64))
                .dst_access_mask(vk::AccessFlags2::from_raw(dst.1.as_raw() as u64))];
            unsafe { self.device.cmd_pipeline_barrier2(cb, &vk::DependencyInfo::default().memory_barriers(&b)) };
            return;
        }
        let b = [vk::MemoryBarrier::default().src_access_mask(src.1).dst_access_mask(dst.1)];
        unsafe { self.device.cmd_pipeline_barrier(cb, src.0, dst.0, vk::DependencyFlags::empty(), &b, &[], &[]) };
    }

    /// A buffer in memory of its own: host-visible, coherent and mapped
    /// (`host`: `map` points at it while the buffer lives) or device-local.
    pub fn buffer(&self, size: u64, usage: vk::BufferUsageFlags, host: bool) -> Buffer {
        let d = &self.device;
        unsafe {
            let buffer = d.create_buffer(&vk::BufferCreateInfo::default().size(size).usage(usage), None).unwrap();
            let req = d.get_buffer_memory_requirements(buffer);
            let flags = if host {
                vk::MemoryPropertyFlags::HOST_VISIBLE | vk::MemoryPropertyFlags::HOST_COHERENT
            } else {
                vk::MemoryPropertyFlags::DEVICE_LOCAL
            };
            let memory = d
                .allocate_memory(
                    &vk::MemoryAllocateInfo::default()
                        .allocation_size(req.size)
                        .memory_type_index(self.memory_type(req.memory_type_bits, flags)),
                    None,
                )
                .unwrap();
            d.bind_buffer_memory(buffer, memory, 0).unwrap();
            let map = if host {
                d.map_memory(memory, 0, vk::WHOLE_SIZE, vk::MemoryMapFlags::empty()).unwrap() as *mut u8
            } else {
                std::ptr::null_mut()
            };
            Buffer { buffer, memory, map }
        }
    }

    pub fn destroy_buffer(&self, b: Buffer) {
        unsafe {
            self.device.destroy_buffer(b.buffer, None);
            self.device.free_memory(b.memory, None);
        }
    }

    /// Destroys an image made by [`Self::image`] or [`Self::image_2d`].
    pub fn destroy_image(&self, (image, memory, view): (vk::Image, vk::DeviceMemory, vk::ImageView)) {
        unsafe {
            self.device.destroy_image_view(view, None);
            self.device.destroy_image(image, None);
            self.device.free_memory(memory, None);
        }
    }

    /// Copies the first `layers` layers of a colour image (in `layout`) to
    /// `buffer`, tightly packed, after everything recorded before (a render
    /// pass's implicit dependency to what follows waits for nothing).
    pub fn copy_image_to_buffer(
        &self,
        cb: vk::CommandBuffer,
        image: vk::Image,
        layout: vk::ImageLayout,
        size: (u32, u32),
        layers: u32,
        buffer: vk::Buffer,
    ) {
        self.memory_barrier(
            cb,
            (vk::PipelineStageFlags::ALL_COMMANDS, vk::AccessFlags::MEMORY_WRITE),
            (vk::PipelineStageFlags::TRANSFER, vk::AccessFlags::TRANSFER_READ),
        );
        unsafe { self.device.cmd_copy_image_to_buffer(cb, image, layout, buffer, &[copy_region(size, layers)]) };
    }

    /// Copies tightly packed texels from `buffer` into the first `layers`
    /// layers of a colour image in TRANSFER_DST_OPTIMAL.
    pub fn copy_buffer_to_image(
        &self,
        cb: vk::CommandBuffer,
        buffer: vk::Buffer,
        image: vk::Image,
        size: (u32, u32),
        layers: u32,
    ) {
        let region = [copy_region(size, layers)];
        unsafe {
            self.device.cmd_copy_buffer_to_image(cb, buffer, image, vk::ImageLayout::TRANSFER_DST_OPTIMAL, &region)
        };
    }

    /// A framebuffer of `views` (one layer) for `render_pass`.
    pub fn framebuffer(
        &self,
        render_pass: vk::RenderPass,
        views: &[vk::ImageView],
        (width, height): (u32, u32),
    ) -> vk::Framebuffer {
        unsafe {
            self.device.create_framebuffer(
                &vk::FramebufferCreateInfo::default()
                    .render_pass(render_pass)
                    .attachments(views)
                    .width(width)
                    .height(height)
                    .layers(1),
                None,
            )
        }
        .unwrap()
    }

    /// Zeroes `buffer` and makes the zeros visible to fragment shaders'
    /// reads and writes.
    pub fn zero_for_fragment_shaders(&self, cb: vk::CommandBuffer, buffer: vk::Buffer) {
        unsafe { self.device.cmd_fill_buffer(cb, buffer, 0, vk::WHOLE_SIZE, 0) };
        self.memory_barrier(
            cb,
            (vk::PipelineStageFlags::TRANSFER, vk::AccessFlags::TRANSFER_WRITE),
            (vk::PipelineStageFlags::FRAGMENT_SHADER, vk::AccessFlags::SHADER_READ | vk::AccessFlags::SHADER_WRITE),
        );
    }

    /// Creates a graphics pipeline of `stages` without vertex input: filled
    /// and unculled, one sample, one colour attachment (`color_writes`: all
    /// of RGBA, or none), viewport and scissor dynamic, and `dynamic` too.
    /// `create` completes the create info (render pass or rendering info,
    /// flags, chained state) and creates the pipeline.
    pub fn pipeline<R>(
        &self,
        stages: &[vk::PipelineShaderStageCreateInfo],
        layout: vk::PipelineLayout,
        topology: vk::PrimitiveTopology,
        color_writes: bool,
        dynamic: &[vk::DynamicState],
        create: impl FnOnce(vk::GraphicsPipelineCreateInfo<'_>) -> R,
    ) -> R {
        let vertex = vk::PipelineVertexInputStateCreateInfo::default();
        let ia = vk::PipelineInputAssemblyStateCreateInfo::default().topology(topology);
        let vp = vk::PipelineViewportStateCreateInfo::default().viewport_count(1).scissor_count(1);
        let rs = vk::PipelineRasterizationStateCreateInfo::default()
            .polygon_mode(vk::PolygonMode::FILL)
            .cull_mode(vk::CullModeFlags::NONE)
            .line_width(1.0);
        let ms = vk::PipelineMultisampleStateCreateInfo::default().rasterization_samples(vk::SampleCountFlags::TYPE_1);
        let mask = if color_writes { vk::ColorComponentFlags::RGBA } else { vk::ColorComponentFlags::empty() };
        let blend = [vk::PipelineColorBlendAttachmentState::default().color_write_mask(mask)];
        let cb = vk::PipelineColorBlendStateCreateInfo::default().attachments(&blend);
        let dyn_states: Vec<vk::DynamicState> =
            [vk::DynamicState::VIEWPORT, vk::DynamicState::SCISSOR].iter().chain(dynamic).copied().collect();
        let dyn_info = vk::PipelineDynamicStateCreateInfo::default().dynamic_states(&dyn_states);
        create(
            vk::GraphicsPipelineCreateInfo::default()
                .stages(stages)
                .vertex_input_state(&vertex)
                .input_assembly_state(&ia)
                .viewport_state(&vp)
                .rasterization_state(&rs)
                .multisample_state(&ms)
                .color_blend_state(&cb)
                .dynamic_state(&dyn_info)
                .layout(layout),
        )
    }

    /// A 2D single-level image in device-local memory, and a view of it.
    pub fn image_2d(
        &self,
        format: vk::Format,
        size: (u32, u32),
        samples: vk::SampleCountFlags,
        usage: vk::ImageUsageFlags,
    ) -> (vk::Image, vk::DeviceMemory, vk::ImageView) {
        self.image(format, size, 1, samples, usage, vk::ImageAspectFlags::COLOR)
    }

    /// A 2D single-level image of `layers` layers in device-local memory, and
    /// a view of all of them (an array view for more than one) for `aspect`.
    pub fn image(
        &self,
        format: vk::Format,
        size: (u32, u32),
        layers: u32,
        samples: vk::SampleCountFlags,
        usage: vk::ImageUsageFlags,
        aspect: vk::ImageAspectFlags,
    ) -> (vk::Image, vk::DeviceMemory, vk::ImageView) {
        self.image_with_flags(vk::ImageCreateFlags::empty(), format, size, layers, samples, usage, aspect)
    }

    /// As [`Gpu::image`], created with `flags`.
    #[allow(clippy::too_many_arguments)]
    pub fn image_with_flags(
        &self,
        flags: vk::ImageCreateFlags,
        format: vk::Format,
        (width, height): (u32, u32),
        layers: u32,
        samples: vk::SampleCountFlags,
        usage: vk::ImageUsageFlags,
        aspect: vk::ImageAspectFlags,
    ) -> (vk::Image, vk::DeviceMemory, vk::ImageView) {
        let d = &self.device;
        unsafe {
            let image = d
                .create_image(
                    &vk::ImageCreateInfo::default()
                        .flags(flags)
                        .image_type(vk::ImageType::TYPE_2D)
                        .format(format)
                        .extent(vk::Extent3D { width, height, depth: 1 })
                        .mip_levels(1)
                        .array_layers(layers)
                        .samples(samples)
                        .usage(usage),
                    None,
                )
                .unwrap();
            let req = d.get_image_memory_requirements(image);
            let memory = d
                .allocate_memory(
                    &vk::MemoryAllocateInfo::default().allocation_size(req.size).memory_type_index(
                        self.memory_type(req.memory_type_bits, vk::MemoryPropertyFlags::DEVICE_LOCAL),
                    ),
                    None,
                )
                .unwrap();
            d.bind_image_memory(image, memory, 0).unwrap();
            let range = vk::ImageSubresourceRange { aspect_mask: aspect, layer_count: layers, ..color_range() };
            let view_type = if layers > 1 { vk::ImageViewType::TYPE_2D_ARRAY } else { vk::ImageViewType::TYPE_2D };
            let view = d
                .create_image_view(
                    &vk::ImageViewCreateInfo::default()
                        .image(image)
                        .view_type(view_type)
                        .format(format)
                        .subresource_range(range),
                    None,
                )
                .unwrap();
            (image, memory, view)
        }
    }

    /// A set of one storage buffer at binding 0 for the fragment stage,
    /// `buffer` written into it whole: its layout, pool and the set.
    pub fn storage_buffer_set(
        &self,
        buffer: vk::Buffer,
    ) -> (vk::DescriptorSetLayout, vk::DescriptorPool, vk::DescriptorSet) {
        let binding = [vk::DescriptorSetLayoutBinding::default()
            .binding(0)
            .descriptor_type(vk::DescriptorType::STORAGE_BUFFER)
            .descriptor_count(1)
            .stage_flags(vk::ShaderStageFlags::FRAGMENT)];
        let (set_layout, pool, set) = self.descriptor_set(&binding);
        let info = [vk::DescriptorBufferInfo { buffer, offset: 0, range: vk::WHOLE_SIZE }];
        let write = [vk::WriteDescriptorSet::default()
            .dst_set(set)
            .dst_binding(0)
            .descriptor_type(vk::DescriptorType::STORAGE_BUFFER)
            .buffer_info(&info)];
        unsafe { self.device.update_descriptor_sets(&write, &[]) };
        (set_layout, pool, set)
    }

    /// A set layout of `bindings`, a pool sized for exactly one set of it,
    /// and that set.
    pub fn descriptor_set(
        &self,
        bindings: &[vk::DescriptorSetLayoutBinding],
    ) -> (vk::DescriptorSetLayout, vk::DescriptorPool, vk::DescriptorSet) {
        self.descriptor_set_chained(bindings, false)
    }

    /// [`Gpu::descriptor_set`], the layout made with `binding_flags`: a
    /// `VkDescriptorSetLayoutBindingFlagsCreateInfo` whose flags are all
    /// empty (what some programs always chain, the CTS among them).
    pub fn descriptor_set_chained(
        &self,
        bindings: &[vk::DescriptorSetLayoutBinding],
        binding_flags: bool,
    ) -> (vk::DescriptorSetLayout, vk::DescriptorPool, vk::DescriptorSet) {
        let d = &self.device;
        let flags = vec![vk::DescriptorBindingFlags::empty(); bindings.len()];
        let mut chained = vk::DescriptorSetLayoutBindingFlagsCreateInfo::default().binding_flags(&flags);
        let mut info = vk::DescriptorSetLayoutCreateInfo::default().bindings(bindings);
        if binding_flags {
            info = info.push_next(&mut chained);
        }
        let sizes: Vec<vk::DescriptorPoolSize> = bindings
            .iter()
            .map(|b| vk::DescriptorPoolSize { ty: b.descriptor_type, descriptor_count: b.descriptor_count })
            .collect();
        unsafe {
            let set_layout = d.create_descriptor_set_layout(&info, None).unwrap();
            let pool = d
                .create_descriptor_pool(&vk::DescriptorPoolCreateInfo::default().max_sets(1).pool_sizes(&sizes), None)
                .unwrap();
            let layouts = [set_layout];
            let set = d
                .allocate_descriptor_sets(
                    &vk::DescriptorSetAllocateInfo::default().descriptor_pool(pool).set_layouts(&layouts),
                )
                .unwrap()[0];
            (set_layout, pool, set)
        }
    }

    /// Moves `image` (contents discarded) from UNDEFINED to `layout`, made
    /// available to `dst`.
    pub fn image_from_undefined(
        &self,
        cb: vk::CommandBuffer,
        image: vk::Image,
        range: vk::ImageSubresourceRange,
        layout: vk::ImageLayout,
        dst: (vk::PipelineStageFlags, vk::AccessFlags),
    ) {
        let top = (vk::PipelineStageFlags::TOP_OF_PIPE, vk::AccessFlags::empty());
        self.image_barrier(cb, image, range, (vk::ImageLayout::UNDEFINED, layout), top, dst);
    }

    /// A layout transition of `image` (`layouts`: old, new) from the writes
    /// `src` to the accesses `dst`.
    pub fn image_barrier(
        &self,
        cb: vk::CommandBuffer,
        image: vk::Image,
        range: vk::ImageSubresourceRange,
        (old, new): (vk::ImageLayout, vk::ImageLayout),
        src: (vk::PipelineStageFlags, vk::AccessFlags),
        dst: (vk::PipelineStageFlags, vk::AccessFlags),
    ) {
        let b = [vk::ImageMemoryBarrier::default()
            .old_layout(old)
            .new_layout(new)
            .src_access_mask(src.1)
            .dst_access_mask(dst.1)
            .src_queue_family_index(vk::QUEUE_FAMILY_IGNORED)
            .dst_queue_family_index(vk::QUEUE_FAMILY_IGNORED)
            .image(image)
            .subresource_range(range)];
        unsafe { self.device.cmd_pipeline_barrier(cb, src.0, dst.0, vk::DependencyFlags::empty(), &[], &[], &b) };
    }

    pub fn one_time_submit(&self, record: impl FnOnce(vk::CommandBuffer)) {
        unsafe {
            let pool = self
                .device
                .create_command_pool(&vk::CommandPoolCreateInfo::default().queue_family_index(self.queue_family), None)
                .unwrap();
            let cb = self
                .device
                .allocate_command_buffers(
                    &vk::CommandBufferAllocateInfo::default().command_pool(pool).command_buffer_count(1),
                )
                .unwrap()[0];
            self.device.begin_command_buffer(cb, &vk::CommandBufferBeginInfo::default()).unwrap();
            record(cb);
            self.device.end_command_buffer(cb).unwrap();
            self.submit_wait(&[cb]);
            self.device.destroy_command_pool(pool, None);
        }
    }

    pub fn submit_wait(&self, cbs: &[vk::CommandBuffer]) {
        unsafe {
            let fence = self.device.create_fence(&vk::FenceCreateInfo::default(), None).unwrap();
            if self.khr_1_1 {
                // vkQueueSubmit2KHR.
                let infos: Vec<_> =
                    cbs.iter().map(|&c| vk::CommandBufferSubmitInfo::default().command_buffer(c)).collect();
                let submit = [vk::SubmitInfo2::default().command_buffer_infos(&infos)];
                self.device.queue_submit2(self.queue, &submit, fence).unwrap();
            } else {
                self.device.queue_submit(self.queue, &[vk::SubmitInfo::default().command_buffers(cbs)], fence).unwrap();
            }
            self.device.wait_for_fences(&[fence], true, u64::MAX).unwrap();
            self.device.destroy_fence(fence, None);
        }
    }
}

impl Drop for Gpu {
    fn drop(&mut self) {
        unsafe {
            let _ = self.device.device_wait_idle();
            self.device.destroy_device(None);
            if let Some((du, m)) = self.debug_utils.take() {
                du.destroy_debug_utils_messenger(m, None);
            }
            self.instance.destroy_instance(None);
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RenderPath {
    RenderPass,
    Dynamic,
}

impl std::str::FromStr for RenderPath {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "renderpass" => Ok(RenderPath::RenderPass),
            "dynamic" => Ok(RenderPath::Dynamic),
            _ => Err(format!("unknown render path '{s}' (renderpass|dynamic)")),
        }
    }
}

/// RGBA8 pixels read back from a target.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Image {
    pub width: u32,
    pub height: u32,
    pub rgba: Vec<u8>,
}

impl Image {
    /// FNV-1a over the RGBA bytes: a render's fingerprint for comparisons.
    pub fn checksum(&self) -> u64 {
        self.rgba.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, b| (h ^ *b as u64).wrapping_mul(0x100_0000_01b3))
    }

    pub fn pixel(&self, x: u32, y: u32) -> [u8; 4] {
        let i = ((y * self.width + x) * 4) as usize;
        self.rgba[i..i + 4].try_into().unwrap()
    }

    pub fn write_png(&self, path: &std::path::Path) -> std::io::Result<()> {
        let file = std::io::BufWriter::new(std::fs::File::create(path)?);
        let mut enc = png::Encoder::new(file, self.width, self.height);
        enc.set_color(png::ColorType::Rgba);
        enc.set_depth(png::BitDepth::Eight);
        let mut w = enc.write_header().map_err(std::io::Error::other)?;
        w.write_image_data(&self.rgba).map_err(std::io::Error::other)
    }

    pub fn read_png(path: &std::path::Path) -> std::io::Result<Image> {
        let dec = png::Decoder::new(std::io::BufReader::new(std::fs::File::open(path)?));
        let mut reader = dec.read_info().map_err(std::io::Error::other)?;
        let mut buf = vec![0; reader.output_buffer_size()];
        let info = reader.next_frame(&mut buf).map_err(std::io::Error::other)?;
        buf.truncate(info.buffer_size());
        Ok(Image { width: info.width, height: info.height, rgba: buf })
    }
}

/// An offscreen colour target with the scene pipeline, drawable through a
/// render pass or dynamic rendering.
pub struct Target {
    pub path: RenderPath,
    pub width: u32,
    pub height: u32,
    image: vk::Image,
    memory: vk::DeviceMemory,
    view: vk::ImageView,
    render_pass: vk::RenderPass,
    framebuffer: vk::Framebuffer,
    layout: vk::PipelineLayout,
    pub pipeline: vk::Pipeline,
    readback: Buffer,
}

impl Target {
    pub fn new(gpu: &Gpu, path: RenderPath, width: u32, height: u32) -> Target {
        assert!(path == RenderPath::RenderPass || gpu.dynamic_rendering, "dynamic rendering unsupported");
        let d = &gpu.device;
        unsafe {
            let (image, memory, view) = gpu.image_2d(
                COLOR_FORMAT,
                (width, height),
                vk::SampleCountFlags::TYPE_1,
                vk::ImageUsageFlags::COLOR_ATTACHMENT | vk::ImageUsageFlags::TRANSFER_SRC,
            );
            let (render_pass, framebuffer) = if path == RenderPath::RenderPass {
                let att = [vk::AttachmentDescription::default()
                    .format(COLOR_FORMAT)
                    .samples(vk::SampleCountFlags::TYPE_1)
                    .load_op(vk::AttachmentLoadOp::CLEAR)
                    .store_op(vk::AttachmentStoreOp::STORE)
                    .initial_layout(vk::ImageLayout::UNDEFINED)
                    .final_layout(vk::ImageLayout::TRANSFER_SRC_OPTIMAL)];
                let refs =
                    [vk::AttachmentReference { attachment: 0, layout: vk::ImageLayout::COLOR_ATTACHMENT_OPTIMAL }];
                let sub = [vk::SubpassDescription::default().color_attachments(&refs)];
                let deps = [vk::SubpassDependency {
                    src_subpass: 0,
                    dst_subpass: vk::SUBPASS_EXTERNAL,
                    src_stage_mask: vk::PipelineStageFlags::COLOR_ATTACHMENT_OUTPUT,
                    dst_stage_mask: vk::PipelineStageFlags::TRANSFER,
                    src_access_mask: vk::AccessFlags::COLOR_ATTACHMENT_WRITE,
                    dst_access_mask: vk::AccessFlags::TRANSFER_READ,
                    dependency_flags: vk::DependencyFlags::empty(),
                }];
                let rp = d
                    .create_render_pass(
                        &vk::RenderPassCreateInfo::default().attachments(&att).subpasses(&sub).dependencies(&deps),
                        None,
                    )
                    .unwrap();
                (rp, gpu.framebuffer(rp, &[view], (width, height)))
            } else {
                (vk::RenderPass::null(), vk::Framebuffer::null())
            };
            let layout = d.create_pipeline_layout(&vk::PipelineLayoutCreateInfo::default(), None).unwrap();
            let pipeline = scene_pipeline(gpu, layout, render_pass);
            let readback = gpu.buffer((width * height * 4) as u64, vk::BufferUsageFlags::TRANSFER_DST, true);
            Target { path, width, height, image, memory, view, render_pass, framebuffer, layout, pipeline, readback }
        }
    }

    pub fn render_pass(&self) -> vk::RenderPass {
        self.render_pass
    }

    /// Another pipeline for this target.
    pub fn pipeline_with(
        &self,
        gpu: &Gpu,
        layout: vk::PipelineLayout,
        vert: &[u8],
        frag: &[u8],
        color_writes: bool,
    ) -> vk::Pipeline {
        pipeline(gpu, layout, self.render_pass, vert, frag, color_writes)
    }

    /// An order-independent-transparency pair: the insert pass (`vert`,
    /// `insert`, no colour writes) and the full-screen resolve (`resolve`,
    /// writing the colour), both on `layout`.
    pub fn oit_pipelines(
        &self,
        gpu: &Gpu,
        layout: vk::PipelineLayout,
        (vert, insert): (&[u8], &[u8]),
        resolve: &[u8],
    ) -> (vk::Pipeline, vk::Pipeline) {
        let fullscreen = include_bytes!(concat!(env!("OUT_DIR"), "/fullscreen.vert.spv"));
        (
            self.pipeline_with(gpu, layout, vert, insert, false),
            self.pipeline_with(gpu, layout, fullscreen, resolve, true),
        )
    }

    /// The pipeline of [`Target::pipeline_with`] with both stages' code
    /// inline: a `VkShaderModuleCreateInfo` in each stage's `pNext`, no
    /// module (needs [`GpuOptions::pipeline_library`]).
    pub fn pipeline_inline(&self, gpu: &Gpu, layout: vk::PipelineLayout, vert: &[u8], frag: &[u8]) -> vk::Pipeline {
        let read = |b: &[u8]| ash::util::read_spv(&mut std::io::Cursor::new(b)).expect("SPIR-V");
        let (vw, fw) = (read(vert), read(frag));
        let mut vi = vk::ShaderModuleCreateInfo::default().code(&vw);
        let mut fi = vk::ShaderModuleCreateInfo::default().code(&fw);
        let stages = [
            vk::PipelineShaderStageCreateInfo::default()
                .stage(vk::ShaderStageFlags::VERTEX)
                .name(c"main")
                .push_next(&mut vi),
            vk::PipelineShaderStageCreateInfo::default()
                .stage(vk::ShaderStageFlags::FRAGMENT)
                .name(c"main")
                .push_next(&mut fi),
        ];
        let formats = [COLOR_FORMAT];
        let mut rendering = vk::PipelineRenderingCreateInfo::default().color_attachment_formats(&formats);
        gpu.pipeline(&stages, layout, vk::PrimitiveTopology::TRIANGLE_LIST, true, &[], |info| {
            let mut info = info.render_pass(self.render_pass);
            if self.render_pass == vk::RenderPass::null() {
                info = info.push_next(&mut rendering);
            }
            unsafe { gpu.device.create_graphics_pipelines(vk::PipelineCache::null(), &[info], None) }
                .map_err(|(_, e)| e)
                .expect("vkCreateGraphicsPipelines")[0]
        })
    }

    /// The pipeline of [`Target::pipeline_with`] built from four graphics
    /// pipeline libraries (vertex input, pre-rasterization, fragment shader,
    /// fragment output; the modules destroyed once the libraries exist) and
    /// linked with link-time optimization (`lto`) or without (fast linking);
    /// also returns the libraries (needs [`GpuOptions::pipeline_library`]).
    /// `own_interfaces`: only the two shader libraries; the final link
    /// defines the vertex input and fragment output state itself.
    pub fn pipeline_libraries(
        &self,
        gpu: &Gpu,
        layout: vk::PipelineLayout,
        vert: &[u8],
        frag: &[u8],
        lto: bool,
        own_interfaces: bool,
    ) -> (vk::Pipeline, Vec<vk::Pipeline>) {
        self.pipeline_libraries_with_stages(gpu, layout, vert, &[], frag, lto, own_interfaces)
    }

    /// [`Target::pipeline_libraries`] with `extra` stages (tessellation,
    /// geometry; 3-vertex patches when tessellated) in the
    /// pre-rasterization library beside the vertex shader.
    #[allow(clippy::too_many_arguments)]
    pub fn pipeline_libraries_with_stages(
        &self,
        gpu: &Gpu,
        layout: vk::PipelineLayout,
        vert: &[u8],
        extra: &[(vk::ShaderStageFlags, &[u8])],
        frag: &[u8],
        lto: bool,
        own_interfaces: bool,
    ) -> (vk::Pipeline, Vec<vk::Pipeline>) {
        let d = &gpu.device;
        let (vs, fs) = (gpu.shader(vert), gpu.shader(frag));
        let extra_modules: Vec<(vk::ShaderStageFlags, vk::ShaderModule)> =
            extra.iter().map(|(st, code)| (*st, gpu.shader(code))).collect();
        // Pre-rasterization stages first (vertex and the extra ones), the fragment shader last.
        let mut stages = vec![stage(vk::ShaderStageFlags::VERTEX, vs)];
        stages.extend(extra_modules.iter().map(|(st, m)| stage(*st, *m)));
        stages.push(stage(vk::ShaderStageFlags::FRAGMENT, fs));
        let tessellated = extra.iter().any(|(st, _)| *st == vk::ShaderStageFlags::TESSELLATION_CONTROL);
        let tess = vk::PipelineTessellationStateCreateInfo::default().patch_control_points(3);
        let topology =
            if tessellated { vk::PrimitiveTopology::PATCH_LIST } else { vk::PrimitiveTopology::TRIANGLE_LIST };
        let split = LibrarySplit { pre_stages: stages.len() - 1, lto, own_interfaces };
        let out = gpu.pipeline(&stages, layout, topology, true, &[], |full| {
            let mut full = full.render_pass(self.render_pass);
            if tessellated {
                full = full.tessellation_state(&tess);
            }
            // SAFETY: a complete pipeline's create info, its stages in pipeline order.
            unsafe { link_libraries(d, &full, split) }
        });
        unsafe {
            d.destroy_shader_module(vs, None);
            d.destroy_shader_module(fs, None);
            for (_, m) in &extra_modules {
                d.destroy_shader_module(*m, None);
            }
        }
        out
    }

    /// A pipeline with a geometry stage between `vert` and `frag`.
    pub fn pipeline_with_geometry(
        &self,
        gpu: &Gpu,
        layout: vk::PipelineLayout,
        vert: &[u8],
        geom: &[u8],
        frag: &[u8],
    ) -> vk::Pipeline {
        pipeline_stages(gpu, layout, self.render_pass, vert, &[(vk::ShaderStageFlags::GEOMETRY, geom)], frag, true)
    }

    /// A pipeline with tessellation stages (3-vertex patches) between `vert` and `frag`.
    pub fn pipeline_with_tessellation(
        &self,
        gpu: &Gpu,
        layout: vk::PipelineLayout,
        vert: &[u8],
        tesc: &[u8],
        tese: &[u8],
        frag: &[u8],
    ) -> vk::Pipeline {
        let extra =
            [(vk::ShaderStageFlags::TESSELLATION_CONTROL, tesc), (vk::ShaderStageFlags::TESSELLATION_EVALUATION, tese)];
        pipeline_stages(gpu, layout, self.render_pass, vert, &extra, frag, true)
    }

    /// A pipeline of `vert`, the `extra` stages (tessellation, geometry) and
    /// `frag` (3-vertex patches when tessellated).
    pub fn pipeline_with_stages(
        &self,
        gpu: &Gpu,
        layout: vk::PipelineLayout,
        vert: &[u8],
        extra: &[(vk::ShaderStageFlags, &[u8])],
        frag: &[u8],
    ) -> vk::Pipeline {
        pipeline_stages(gpu, layout, self.render_pass, vert, extra, frag, true)
    }

    /// Begins rendering into the target, clearing it to [`CLEAR_RGBA`].
    pub fn begin(&self, gpu: &Gpu, cb: vk::CommandBuffer) {
        let d = &gpu.device;
        let clear = vk::ClearValue { color: vk::ClearColorValue { float32: [0.0, 0.0, 64.0 / 255.0, 1.0] } };
        let area = vk::Rect2D {
            offset: vk::Offset2D::default(),
            extent: vk::Extent2D { width: self.width, height: self.height },
        };
        unsafe {
            match self.path {
                RenderPath::RenderPass => {
                    let clears = [clear];
                    d.cmd_begin_render_pass(
                        cb,
                        &vk::RenderPassBeginInfo::default()
                            .render_pass(self.render_pass)
                            .framebuffer(self.framebuffer)
                            .render_area(area)
                            .clear_values(&clears),
                        vk::SubpassContents::INLINE,
                    );
                }
                RenderPath::Dynamic => {
                    self.barrier(
                        gpu,
                        cb,
                        (vk::ImageLayout::UNDEFINED, vk::PipelineStageFlags::TOP_OF_PIPE, vk::AccessFlags::empty()),
                        (
                            vk::ImageLayout::COLOR_ATTACHMENT_OPTIMAL,
                            vk::PipelineStageFlags::COLOR_ATTACHMENT_OUTPUT,
                            vk::AccessFlags::COLOR_ATTACHMENT_WRITE,
                        ),
                    );
                    let atts = [vk::RenderingAttachmentInfo::default()
                        .image_view(self.view)
                        .image_layout(vk::ImageLayout::COLOR_ATTACHMENT_OPTIMAL)
                        .load_op(vk::AttachmentLoadOp::CLEAR)
                        .store_op(vk::AttachmentStoreOp::STORE)
                        .clear_value(clear)];
                    d.cmd_begin_rendering(
                        cb,
                        &vk::RenderingInfo::default().render_area(area).layer_count(1).color_attachments(&atts),
                    );
                }
            }
            d.cmd_bind_pipeline(cb, vk::PipelineBindPoint::GRAPHICS, self.pipeline);
            d.cmd_set_viewport(
                cb,
                0,
                &[vk::Viewport {
                    x: 0.0,
                    y: 0.0,
                    width: self.width as f32,
                    height: self.height as f32,
                    min_depth: 0.0,
                    max_depth: 1.0,
                }],
            );
            d.cmd_set_scissor(cb, 0, &[area]);
        }
    }

    /// Draws the scene: a red quad over the left half, a colour triangle on the right.
    pub fn draw_scene(&self, gpu: &Gpu, cb: vk::CommandBuffer) {
        unsafe { gpu.device.cmd_draw(cb, 9, 1, 0, 0) };
    }

    /// Ends rendering and leaves the image in TRANSFER_SRC_OPTIMAL.
    pub fn end(&self, gpu: &Gpu, cb: vk::CommandBuffer) {
        unsafe {
            match self.path {
                RenderPath::RenderPass => gpu.device.cmd_end_render_pass(cb),
                RenderPath::Dynamic => {
                    gpu.device.cmd_end_rendering(cb);
                    self.barrier(
                        gpu,
                        cb,
                        (
                            vk::ImageLayout::COLOR_ATTACHMENT_OPTIMAL,
                            vk::PipelineStageFlags::COLOR_ATTACHMENT_OUTPUT,
                            vk::AccessFlags::COLOR_ATTACHMENT_WRITE,
                        ),
                        (
                            vk::ImageLayout::TRANSFER_SRC_OPTIMAL,
                            vk::PipelineStageFlags::TRANSFER,
                            vk::AccessFlags::TRANSFER_READ,
                        ),
                    );
                }
            }
        }
    }

    fn barrier(
        &self,
        gpu: &Gpu,
        cb: vk::CommandBuffer,
        from: (vk::ImageLayout, vk::PipelineStageFlags, vk::AccessFlags),
        to: (vk::ImageLayout, vk::PipelineStageFlags, vk::AccessFlags),
    ) {
        gpu.image_barrier(cb, self.image, color_range(), (from.0, to.0), (from.1, from.2), (to.1, to.2));
    }

    /// Copies the image (in TRANSFER_SRC_OPTIMAL) to the readback buffer.
    pub fn record_copy_out(&self, gpu: &Gpu, cb: vk::CommandBuffer) {
        let size = (self.width, self.height);
        gpu.copy_image_to_buffer(cb, self.image, vk::ImageLayout::TRANSFER_SRC_OPTIMAL, size, 1, self.readback.buffer);
        unsafe {
            let b = [vk::BufferMemoryBarrier::default()
                .src_access_mask(vk::AccessFlags::TRANSFER_WRITE)
                .dst_access_mask(vk::AccessFlags::HOST_READ)
                .src_queue_family_index(vk::QUEUE_FAMILY_IGNORED)
                .dst_queue_family_index(vk::QUEUE_FAMILY_IGNORED)
                .buffer(self.readback.buffer)
                .size(vk::WHOLE_SIZE)];
            gpu.device.cmd_pipeline_barrier(
                cb,
                vk::PipelineStageFlags::TRANSFER,
                vk::PipelineStageFlags::HOST,
                vk::DependencyFlags::empty(),
                &[],
                &b,
                &[],
            );
        }
    }

    /// Reads the readback buffer (after a submission that ran [`Self::record_copy_out`]).
    /// (The readback buffer stays mapped: `_gpu` is not needed.)
    pub fn read(&self, _gpu: &Gpu) -> Image {
        let size = (self.width * self.height * 4) as usize;
        let rgba = unsafe { std::slice::from_raw_parts(self.readback.map, size) }.to_vec();
        Image { width: self.width, height: self.height, rgba }
    }

    /// Renders the scene once and reads it back.
    pub fn render(&self, gpu: &Gpu) -> Image {
        gpu.one_time_submit(|cb| {
            self.begin(gpu, cb);
            self.draw_scene(gpu, cb);
            self.end(gpu, cb);
            self.record_copy_out(gpu, cb);
        });
        self.read(gpu)
    }

    pub fn destroy(self, gpu: &Gpu) {
        let d = &gpu.device;
        unsafe {
            d.destroy_pipeline(self.pipeline, None);
            d.destroy_pipeline_layout(self.layout, None);
            if self.framebuffer != vk::Framebuffer::null() {
                d.destroy_framebuffer(self.framebuffer, None);
                d.destroy_render_pass(self.render_pass, None);
            }
        }
        gpu.destroy_image((self.image, self.memory, self.view));
        gpu.destroy_buffer(self.readback);
    }
}

/// A shader stage running `module`'s `main`.
pub fn stage(stage: vk::ShaderStageFlags, module: vk::ShaderModule) -> vk::PipelineShaderStageCreateInfo<'static> {
    vk::PipelineShaderStageCreateInfo::default().stage(stage).module(module).name(c"main")
}

/// A buffer and its memory, made by [`Gpu::buffer`].
pub struct Buffer {
    pub buffer: vk::Buffer,
    pub memory: vk::DeviceMemory,
    /// The mapped memory of a host-visible buffer; null otherwise.
    pub map: *mut u8,
}

// The mapping is the buffer's memory, valid while the buffer lives; reads
// and writes through it are ordered by the caller, as for the handles.
unsafe impl Send for Buffer {}
unsafe impl Sync for Buffer {}

/// A tightly packed copy of the first `layers` layers of a colour image's
/// first level.
fn copy_region((width, height): (u32, u32), layers: u32) -> vk::BufferImageCopy {
    vk::BufferImageCopy::default()
        .image_subresource(vk::ImageSubresourceLayers {
            aspect_mask: vk::ImageAspectFlags::COLOR,
            mip_level: 0,
            base_array_layer: 0,
            layer_count: layers,
        })
        .image_extent(vk::Extent3D { width, height, depth: 1 })
}

/// The GPU time of one interval of a command buffer: a timestamp before
/// and one after (at the bottom of the pipe, so the first waits for what
/// came before), where the queue writes timestamps.
pub struct PassTimer {
    pool: vk::QueryPool,
    /// [`crate::fdm_bench::timestamps`]: valid bits, nanoseconds per tick.
    stamps: (u32, f64),
}

impl PassTimer {
    /// `None` where the queue family writes no timestamps.
    pub fn new(gpu: &Gpu) -> Option<PassTimer> {
        let stamps = crate::fdm_bench::timestamps(gpu)?;
        let info = vk::QueryPoolCreateInfo::default().query_type(vk::QueryType::TIMESTAMP).query_count(2);
        // SAFETY: a valid create info on the test's device.
        let pool = unsafe { gpu.device.create_query_pool(&info, None) }.ok()?;
        Some(PassTimer { pool, stamps })
    }

    /// Outside a render pass, before `start`.
    pub fn reset(&self, gpu: &Gpu, cb: vk::CommandBuffer) {
        // SAFETY: `cb` is recording, outside a render pass.
        unsafe { gpu.device.cmd_reset_query_pool(cb, self.pool, 0, 2) };
    }

    /// Before the interval (`0`) or after it (`1`).
    pub fn stamp(&self, gpu: &Gpu, cb: vk::CommandBuffer, which: u32) {
        // SAFETY: `cb` is recording; the query was reset in it.
        unsafe { gpu.device.cmd_write_timestamp(cb, vk::PipelineStageFlags::BOTTOM_OF_PIPE, self.pool, which) };
    }

    /// The interval in nanoseconds, once the submission completed; the pool destroyed.
    pub fn read(self, gpu: &Gpu) -> u64 {
        let mut ticks = [0u64; 2];
        // SAFETY: both queries were written by a completed submission.
        unsafe {
            gpu.device
                .get_query_pool_results(
                    self.pool,
                    0,
                    &mut ticks,
                    vk::QueryResultFlags::TYPE_64 | vk::QueryResultFlags::WAIT,
                )
                .expect("timestamps");
            gpu.device.destroy_query_pool(self.pool, None);
        }
        crate::fdm_bench::elapsed_ns(self.stamps, ticks[0], ticks[1]) as u64
    }
}

pub fn color_range() -> vk::ImageSubresourceRange {
    vk::ImageSubresourceRange {
        aspect_mask: vk::ImageAspectFlags::COLOR,
        base_mip_level: 0,
        level_count: 1,
        base_array_layer: 0,
        layer_count: 1,
    }
}

fn scene_pipeline(gpu: &Gpu, layout: vk::PipelineLayout, render_pass: vk::RenderPass) -> vk::Pipeline {
    pipeline(gpu, layout, render_pass, SCENE_VERT, SCENE_FRAG, true)
}

/// A triangle-list pipeline for the target's render pass (or dynamic
/// rendering), viewport and scissor dynamic.
fn pipeline(
    gpu: &Gpu,
    layout: vk::PipelineLayout,
    render_pass: vk::RenderPass,
    vert: &[u8],
    frag: &[u8],
    color_writes: bool,
) -> vk::Pipeline {
    pipeline_stages(gpu, layout, render_pass, vert, &[], frag, color_writes)
}

fn pipeline_stages(
    gpu: &Gpu,
    layout: vk::PipelineLayout,
    render_pass: vk::RenderPass,
    vert: &[u8],
    extra: &[(vk::ShaderStageFlags, &[u8])],
    frag: &[u8],
    color_writes: bool,
) -> vk::Pipeline {
    let d = &gpu.device;
    let vs = gpu.shader(vert);
    let fs = gpu.shader(frag);
    let extra_modules: Vec<(vk::ShaderStageFlags, vk::ShaderModule)> =
        extra.iter().map(|(st, code)| (*st, gpu.shader(code))).collect();
    let mut stages = vec![stage(vk::ShaderStageFlags::VERTEX, vs), stage(vk::ShaderStageFlags::FRAGMENT, fs)];
    stages.extend(extra_modules.iter().map(|(st, m)| stage(*st, *m)));
    let tessellated = extra.iter().any(|(st, _)| *st == vk::ShaderStageFlags::TESSELLATION_CONTROL);
    let tess = vk::PipelineTessellationStateCreateInfo::default().patch_control_points(3);
    let topology = if tessellated { vk::PrimitiveTopology::PATCH_LIST } else { vk::PrimitiveTopology::TRIANGLE_LIST };
    let formats = [COLOR_FORMAT];
    let mut rendering = vk::PipelineRenderingCreateInfo::default().color_attachment_formats(&formats);
    let p = gpu.pipeline(&stages, layout, topology, color_writes, &[], |info| {
        let mut info = info.render_pass(render_pass);
        if render_pass == vk::RenderPass::null() {
            info = info.push_next(&mut rendering);
        }
        if tessellated {
            info = info.tessellation_state(&tess);
        }
        info = info.flags(info.flags | gpu.statistics_flags());
        unsafe { d.create_graphics_pipelines(vk::PipelineCache::null(), &[info], None) }
            .map_err(|(_, e)| e)
            .expect("vkCreateGraphicsPipelines")[0]
    });
    gpu.print_pipeline_statistics(p);
    unsafe {
        d.destroy_shader_module(vs, None);
        d.destroy_shader_module(fs, None);
        for (_, m) in extra_modules {
            d.destroy_shader_module(m, None);
        }
    }
    p
}

/// The scene as the test expects it, computed independently of any GPU:
/// returns the expected colour where it is certain (the clear colour far from
/// the triangle, red well inside the quad), `None` near edges.
pub fn expected_scene_pixel(x: u32, y: u32, width: u32, height: u32) -> Option<[u8; 4]> {
    // Pixel centre in normalized device coordinates.
    let nx = (x as f32 + 0.5) / width as f32 * 2.0 - 1.0;
    let ny = (y as f32 + 0.5) / height as f32 * 2.0 - 1.0;
    let margin = 2.0 * 2.0 / width.min(height) as f32;
    if nx < -margin {
        return Some([255, 0, 0, 255]);
    }
    // Outside the triangle's bounding box (x in [0.1, 0.9], y in [-0.8, 0.8]).
    if nx > margin && (nx < 0.1 - margin || nx > 0.9 + margin || ny < -0.8 - margin || ny > 0.8 + margin) {
        return Some(CLEAR_RGBA);
    }
    None
}

/// How [`link_libraries`] makes a pipeline of graphics pipeline libraries.
#[derive(Clone, Copy, Debug, Default)]
pub struct LibrarySplit {
    /// The first `pre_stages` stages go to the pre-rasterization library,
    /// the next (the fragment shader) to the fragment-shader library.
    pub pre_stages: usize,
    /// Linked with link-time optimization (the libraries retaining what it
    /// needs), else fast.
    pub lto: bool,
    /// Only the two shader libraries: the link defines the vertex input and
    /// fragment output state itself.
    pub own_interfaces: bool,
}

/// The pipeline `full` describes (a complete pipeline's create info, its
/// stages in pipeline order) made as graphics pipeline libraries — vertex
/// input, pre-rasterization shaders, fragment shader, fragment output, each
/// with the state its subset takes (the chain's rendering formats, its
/// shading rate and `full`'s flags where the shader and output subsets take
/// them) — and linked; returns the link and the libraries (keep them
/// until the link is destroyed: lavapipe 22.3 crashes drawing with a link
/// whose libraries are gone). Needs `VK_EXT_graphics_pipeline_library`.
///
/// # Safety
/// `full` is valid and its chain holds only structures that may chain to a
/// graphics pipeline's create info.
pub unsafe fn link_libraries(
    d: &ash::Device,
    full: &vk::GraphicsPipelineCreateInfo,
    split: LibrarySplit,
) -> (vk::Pipeline, Vec<vk::Pipeline>) {
    type F = vk::GraphicsPipelineLibraryFlagsEXT;
    // (The rendering formats of dynamic rendering, and a shading rate.)
    let (mut rendering, mut rate) = (None, None);
    let mut chain = full.p_next;
    while !chain.is_null() {
        // SAFETY: a valid chain (the caller's guarantee).
        let base = unsafe { &*(chain as *const vk::BaseInStructure) };
        match base.s_type {
            vk::StructureType::PIPELINE_RENDERING_CREATE_INFO => {
                rendering = Some(unsafe { *(chain as *const vk::PipelineRenderingCreateInfo) })
            }
            vk::StructureType::PIPELINE_FRAGMENT_SHADING_RATE_STATE_CREATE_INFO_KHR => {
                rate = Some(unsafe { *(chain as *const vk::PipelineFragmentShadingRateStateCreateInfoKHR) })
            }
            _ => {}
        }
        chain = base.p_next as *const c_void;
    }
    let retain = if split.lto {
        vk::PipelineCreateFlags::RETAIN_LINK_TIME_OPTIMIZATION_INFO_EXT
    } else {
        vk::PipelineCreateFlags::empty()
    };
    // SAFETY: `pStages` holds `stageCount` stages (the caller's guarantee).
    let stages = unsafe { std::slice::from_raw_parts(full.p_stages, full.stage_count as usize) };
    let make = |subset: F| -> vk::Pipeline {
        let mut gpl = vk::GraphicsPipelineLibraryCreateInfoEXT::default().flags(subset);
        let mut info = vk::GraphicsPipelineCreateInfo::default()
            .flags(vk::PipelineCreateFlags::LIBRARY_KHR | retain)
            .push_next(&mut gpl);
        info.render_pass = full.render_pass;
        let mut r = rendering.map(|r| vk::PipelineRenderingCreateInfo { p_next: std::ptr::null(), ..r });
        let mut q =
            rate.map(|q| vk::PipelineFragmentShadingRateStateCreateInfoKHR { p_next: std::ptr::null_mut(), ..q });
        match subset {
            F::VERTEX_INPUT_INTERFACE => {
                info.p_vertex_input_state = full.p_vertex_input_state;
                info.p_input_assembly_state = full.p_input_assembly_state;
            }
            F::PRE_RASTERIZATION_SHADERS => {
                info.stage_count = split.pre_stages as u32;
                info.p_stages = stages.as_ptr();
                info.p_tessellation_state = full.p_tessellation_state;
                info.p_viewport_state = full.p_viewport_state;
                info.p_rasterization_state = full.p_rasterization_state;
                info.p_dynamic_state = full.p_dynamic_state;
                info.layout = full.layout;
            }
            F::FRAGMENT_SHADER => {
                info.stage_count = 1;
                info.p_stages = &stages[split.pre_stages];
                info.p_multisample_state = full.p_multisample_state;
                info.p_depth_stencil_state = full.p_depth_stencil_state;
                info.layout = full.layout;
            }
            _ => {
                info.p_color_blend_state = full.p_color_blend_state;
                info.p_multisample_state = full.p_multisample_state;
            }
        }
        if subset != F::VERTEX_INPUT_INTERFACE {
            info.flags |= full.flags;
        }
        // The rendering formats where they are read: the fragment shader and
        // output subsets (Debian's validation layer takes a pre-rasterization
        // library with them for one with fragment output state).
        if let (Some(r), F::FRAGMENT_SHADER | F::FRAGMENT_OUTPUT_INTERFACE) = (r.as_mut(), subset) {
            info = info.push_next(r);
        }
        if let (Some(q), F::PRE_RASTERIZATION_SHADERS | F::FRAGMENT_SHADER) = (q.as_mut(), subset) {
            info = info.push_next(q);
        }
        // SAFETY: a library's create info made of `full`'s valid state.
        unsafe { d.create_graphics_pipelines(vk::PipelineCache::null(), &[info], None) }
            .map_err(|(_, e)| e)
            .expect("vkCreateGraphicsPipelines (library)")[0]
    };
    let subsets: &[F] = if split.own_interfaces {
        &[F::PRE_RASTERIZATION_SHADERS, F::FRAGMENT_SHADER]
    } else {
        &[F::VERTEX_INPUT_INTERFACE, F::PRE_RASTERIZATION_SHADERS, F::FRAGMENT_SHADER, F::FRAGMENT_OUTPUT_INTERFACE]
    };
    let libs: Vec<vk::Pipeline> = subsets.iter().map(|s| make(*s)).collect();
    let mut linked = vk::PipelineLibraryCreateInfoKHR::default().libraries(&libs);
    let lto =
        if split.lto { vk::PipelineCreateFlags::LINK_TIME_OPTIMIZATION_EXT } else { vk::PipelineCreateFlags::empty() };
    let mut info =
        vk::GraphicsPipelineCreateInfo::default().flags(lto | full.flags).layout(full.layout).push_next(&mut linked);
    let mut gpl = vk::GraphicsPipelineLibraryCreateInfoEXT::default()
        .flags(F::VERTEX_INPUT_INTERFACE | F::FRAGMENT_OUTPUT_INTERFACE);
    let mut r = rendering.map(|r| vk::PipelineRenderingCreateInfo { p_next: std::ptr::null(), ..r });
    if split.own_interfaces {
        info = info.push_next(&mut gpl);
        info.p_vertex_input_state = full.p_vertex_input_state;
        info.p_input_assembly_state = full.p_input_assembly_state;
        info.p_color_blend_state = full.p_color_blend_state;
        info.p_multisample_state = full.p_multisample_state;
        info.render_pass = full.render_pass;
        if let Some(r) = r.as_mut() {
            info = info.push_next(r);
        }
    }
    // SAFETY: the libraries just made, and `full`'s layout.
    let p = unsafe { d.create_graphics_pipelines(vk::PipelineCache::null(), &[info], None) }
        .map_err(|(_, e)| e)
        .expect("vkCreateGraphicsPipelines (link)")[0];
    (p, libs)
}

//! Layer settings, read by the Vulkan-Utility-Libraries conventions.
//!
//! Every key `k` is looked up, highest priority first, in
//! 1. the environment: `VK_OVERLAP_EMULATION_<K>` (upper case);
//! 2. `vk_layer_settings.txt`: lines `overlap_emulation.<k> = value`. The file
//!    is searched where the Khronos layers search: `$VK_LAYER_SETTINGS_PATH`
//!    (the file, or a folder holding it), then Vulkan Configurator's
//!    `$XDG_DATA_HOME/vulkan/settings.d/` (`~/.local/share/...` when unset),
//!    then the working directory;
//! 3. `VkLayerSettingsCreateInfoEXT` chained to `VkInstanceCreateInfo`, for
//!    settings whose `pLayerName` is this layer.
//!
//! Values are typed. An unknown key or a value that does not parse produces a
//! [`Diagnostic`] (logged by the caller as `OVERLAP-Setting-Unknown` /
//! `OVERLAP-Setting-Invalid`) and the default is used.
//!
//! [`SETTINGS`] is the single table of keys; `manifest/VkLayer_overlap.json.in`
//! mirrors it in `features.settings` and a test keeps the two in step.

use crate::id;
use ash::vk;
use std::collections::BTreeMap;
use std::ffi::CStr;
use std::path::{Path, PathBuf};

pub const LAYER_NAME: &str = "VK_LAYER_OVERLAP_emulation";
/// Prefix of the environment variables (`VK_` + layer name without `VK_LAYER_`).
pub const ENV_PREFIX: &str = "VK_OVERLAP_EMULATION_";
/// Prefix of keys in `vk_layer_settings.txt`.
pub const FILE_PREFIX: &str = "overlap_emulation.";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Bool,
    Enum(&'static [&'static str]),
    String,
    /// A folder path (Vulkan Configurator's `SAVE_FOLDER`).
    Folder,
    /// A file to read (Vulkan Configurator's `LOAD_FILE`).
    File,
}

#[derive(Debug)]
pub struct SettingDef {
    pub key: &'static str,
    pub kind: Kind,
    pub default: &'static str,
    pub label: &'static str,
    pub description: &'static str,
}

/// The settings table, generated from `layer/gen/settings.json` (with both
/// manifests' settings blocks) by `layer/gen/settings.py`.
pub use crate::generated::settings::SETTINGS;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum LogLevel {
    Off,
    Error,
    Warn,
    Info,
    Debug,
}

impl LogLevel {
    pub fn name(self) -> &'static str {
        crate::generated::settings::LOG_LEVEL_VALUES[self as usize]
    }
}

/// The typed settings of one instance.
#[derive(Clone, Debug)]
pub struct Settings {
    pub log_level: LogLevel,
    pub force_enable: bool,
    pub architecture: &'static str,
    pub profile_file: Option<PathBuf>,
    pub spoof_identity: bool,
    pub interlock_strategy: &'static str,
    /// `interlock_ordered_slots`, `_grid`, `_wait`: the ordered strategy's cells.
    pub interlock_ordered_slots: u32,
    pub interlock_ordered_grid: u32,
    pub interlock_ordered_wait: u32,
    /// `debug_ordered_reverse`: testing only, reverse primitive order.
    pub debug_ordered_reverse: bool,
    /// `debug_ordered_search_misses`: testing only, the key search finds nothing.
    pub debug_ordered_search_misses: bool,
    /// `debug_ordered_dedicated`: measurement only, the cells a dedicated
    /// allocation and the control block device-local.
    pub debug_ordered_dedicated: bool,
    /// `debug_spinlock_per_lane`: testing only, the per-lane spinlock lowering.
    pub debug_spinlock_per_lane: bool,
    /// `interlock_spinlock_try`: `cas` or `ttas` (quad locks).
    pub interlock_spinlock_try: &'static str,
    /// `interlock_spinlock_lock`: `image` or `buffer` (where the lock words live).
    pub interlock_spinlock_lock: &'static str,
    /// `interlock_never_opaque`: `auto`, `on` or `off`.
    pub interlock_never_opaque: &'static str,
    /// `defer_view_destruction`: `auto`, `on` or `off`.
    pub defer_view_destruction: &'static str,
    pub fdm: &'static str,
    pub fdm_overlay: bool,
    /// `fdm_multiview_flush`: `auto`, `on` or `off`.
    pub fdm_multiview_flush: &'static str,
    /// `fdm_dynamic_areas`: `all` or `square` (the GPU plan's candidate areas).
    pub fdm_dynamic_areas: &'static str,
    /// `fdm_storage_composite`: `auto`, `on` or `off`.
    pub fdm_storage_composite: &'static str,
    /// `fdm_subsampled`: `auto`, `packed` or `full`.
    pub fdm_subsampled: &'static str,
    pub varyings: &'static str,
    pub varyings_uniforms: &'static str,
    /// `link_cache=on`: linked pairs are kept on disk.
    pub link_cache: bool,
    pub validate_shaders: bool,
    pub dump_shaders: Option<PathBuf>,
    pub debug_panic: Option<String>,
    /// `debug_fail`: the layer's own calls that fail (comma-separated names).
    pub debug_fail: Option<String>,
    /// `debug_leak`: `vulkan` or `host`, what the layer forgets at vkDestroyDevice.
    pub debug_leak: Option<String>,
    /// `debug_fdm_misreplay`: replays above 1x1 shift their viewports by one fragment.
    pub debug_fdm_misreplay: bool,
    /// `debug_fdm_steps`: the GPU plan's step times logged.
    pub debug_fdm_steps: bool,
    /// `debug_ordered_without`: parts of the ordered strategy left out, for
    /// measuring them (comma-separated: waits, protocol, count).
    pub debug_ordered_without: Option<String>,
    /// `debug_fdm_without`: density-map features left out (comma-separated).
    pub debug_fdm_without: Option<String>,
}

/// Where a setting's value came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    Environment,
    File,
    CreateInfo,
}

impl Source {
    fn describe(self) -> &'static str {
        match self {
            Source::Environment => "environment",
            Source::File => "vk_layer_settings.txt",
            Source::CreateInfo => "VkLayerSettingsCreateInfoEXT",
        }
    }
}

/// A problem found while reading settings, for the caller to log.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Diagnostic {
    pub id: &'static str,
    pub message: String,
}

/// Raw string values by key, the highest-priority source winning.
#[derive(Default, Debug)]
pub struct RawSettings {
    values: BTreeMap<String, (String, Source)>,
    pub diagnostics: Vec<Diagnostic>,
}

impl RawSettings {
    fn offer(&mut self, key: &str, value: String, source: Source) {
        if find_def(key).is_none() {
            self.diagnostics.push(Diagnostic {
                id: id::SETTING_UNKNOWN,
                message: format!("unknown setting '{key}' (from {}) is ignored", source.describe()),
            });
            return;
        }
        // Sources are offered lowest priority first; a later one overrides.
        self.values.insert(key.to_string(), (value, source));
    }
}

pub fn find_def(key: &str) -> Option<&'static SettingDef> {
    SETTINGS.iter().find(|d| d.key == key)
}

pub fn env_name(key: &str) -> String {
    format!("{ENV_PREFIX}{}", key.to_ascii_uppercase())
}

/// The `vk_layer_settings.txt` that applies, if any.
pub fn settings_file() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("VK_LAYER_SETTINGS_PATH") {
        let p = PathBuf::from(p);
        let file = if p.is_dir() { p.join("vk_layer_settings.txt") } else { p };
        return file.is_file().then_some(file);
    }
    let data_home = std::env::var_os("XDG_DATA_HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".local/share")));
    if let Some(dir) = data_home {
        let file = dir.join("vulkan/settings.d/vk_layer_settings.txt");
        if file.is_file() {
            return Some(file);
        }
    }
    let cwd = PathBuf::from("vk_layer_settings.txt");
    cwd.is_file().then_some(cwd)
}

/// Reads `overlap_emulation.*` lines of a settings file.
pub fn parse_settings_file(text: &str) -> Vec<(String, String)> {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .filter_map(|l| l.split_once('='))
        .filter_map(|(k, v)| {
            let k = k.trim().strip_prefix(FILE_PREFIX)?;
            let v = v.trim().trim_matches('"');
            Some((k.to_string(), v.to_string()))
        })
        .collect()
}

/// Reads `VkLayerSettingsCreateInfoEXT` entries for this layer.
///
/// # Safety
/// `p_next` must be a valid `VkInstanceCreateInfo::pNext` chain.
pub unsafe fn create_info_settings(mut p_next: *const std::ffi::c_void) -> Vec<(String, String)> {
    let mut out = Vec::new();
    while !p_next.is_null() {
        // SAFETY: every structure of a valid pNext chain starts with the
        // VkBaseInStructure header (the caller's guarantee;
        // VUID-VkInstanceCreateInfo-pNext-pNext).
        let base = unsafe { &*(p_next as *const vk::BaseInStructure) };
        if base.s_type == vk::StructureType::LAYER_SETTINGS_CREATE_INFO_EXT {
            // SAFETY: a structure of this sType is a VkLayerSettingsCreateInfoEXT.
            let info = unsafe { &*(p_next as *const vk::LayerSettingsCreateInfoEXT) };
            let settings: &[vk::LayerSettingEXT] = if info.setting_count == 0 || info.p_settings.is_null() {
                &[]
            } else {
                // SAFETY: VUID-VkLayerSettingsCreateInfoEXT-pSettings-parameter:
                // `settingCount` valid VkLayerSettingEXT structures.
                unsafe { std::slice::from_raw_parts(info.p_settings, info.setting_count as usize) }
            };
            for s in settings {
                if s.p_layer_name.is_null() || s.p_setting_name.is_null() {
                    continue;
                }
                // SAFETY: VUID-VkLayerSettingEXT-pLayerName-parameter and
                // VUID-VkLayerSettingEXT-pSettingName-parameter: null-terminated
                // UTF-8 strings (null was ruled out above).
                let (layer, name) = unsafe { (CStr::from_ptr(s.p_layer_name), CStr::from_ptr(s.p_setting_name)) };
                if layer.to_bytes() != LAYER_NAME.as_bytes() {
                    continue;
                }
                let key = name.to_string_lossy().into_owned();
                // SAFETY: `s` is a valid VkLayerSettingEXT (as above).
                if let Some(v) = unsafe { setting_value_string(s) } {
                    out.push((key, v));
                }
            }
        }
        p_next = base.p_next as *const std::ffi::c_void;
    }
    out
}

/// `vkCreateInstance`'s create info with Overlap's own
/// `VkLayerSettingsCreateInfoEXT` unlinked, so layers below that predate
/// `VK_EXT_layer_settings` (the validation layer of Vulkan 1.3.239 rejects its
/// sType) never see it. A struct that also carries other layers' settings
/// stays; a chain the layer cannot copy is passed down unchanged.
///
/// `info` borrows the application's create info for `'a` and points at
/// `_chain`'s nodes (heap memory, which stays put when the struct moves) for
/// its `pNext`.
pub struct StrippedInstanceInfo<'a> {
    pub info: vk::InstanceCreateInfo<'a>,
    _chain: crate::pnext::Chain,
}

/// Whether `p` is a `VkLayerSettingsCreateInfoEXT` holding only Overlap's settings.
///
/// # Safety
/// `info` must be a valid `VkLayerSettingsCreateInfoEXT`.
unsafe fn is_own_settings(info: &vk::LayerSettingsCreateInfoEXT) -> bool {
    if info.setting_count == 0 || info.p_settings.is_null() {
        return false;
    }
    // SAFETY: VUID-VkLayerSettingsCreateInfoEXT-pSettings-parameter: `settingCount`
    // valid structures (null and zero were ruled out above).
    let settings = unsafe { std::slice::from_raw_parts(info.p_settings, info.setting_count as usize) };
    settings.iter().all(|s| {
        // SAFETY: VUID-VkLayerSettingEXT-pLayerName-parameter: a null-terminated
        // UTF-8 string (null was ruled out).
        !s.p_layer_name.is_null() && unsafe { CStr::from_ptr(s.p_layer_name) }.to_bytes() == LAYER_NAME.as_bytes()
    })
}

/// See [`StrippedInstanceInfo`]; `None` when there is nothing to unlink.
///
/// # Safety
/// `info` must be a valid `VkInstanceCreateInfo`.
pub unsafe fn strip_own_settings<'a>(info: &vk::InstanceCreateInfo<'a>) -> Option<StrippedInstanceInfo<'a>> {
    // SAFETY: `info` is valid (the caller's guarantee), so is its chain
    // (VUID-VkInstanceCreateInfo-pNext-pNext), and a structure found in it is
    // a valid VkLayerSettingsCreateInfoEXT.
    let own = unsafe { crate::pnext::find::<vk::LayerSettingsCreateInfoEXT>(info.p_next) }?;
    // SAFETY: as above.
    if !unsafe { is_own_settings(own) } {
        return None;
    }
    // SAFETY: as above.
    let mut chain = unsafe { crate::pnext::Chain::copy(info.p_next) }.ok()?;
    chain.remove(vk::StructureType::LAYER_SETTINGS_CREATE_INFO_EXT);
    // A plain copy: the borrow of the application's data keeps its lifetime `'a`.
    let mut out: vk::InstanceCreateInfo<'a> = *info;
    out.p_next = chain.head();
    Some(StrippedInstanceInfo { info: out, _chain: chain })
}

/// The first value of a `VkLayerSettingEXT`, as text.
///
/// # Safety
/// `s` must be a valid `VkLayerSettingEXT`.
unsafe fn setting_value_string(s: &vk::LayerSettingEXT) -> Option<String> {
    if s.value_count == 0 || s.p_values.is_null() {
        return None;
    }
    let p = s.p_values;
    // SAFETY: VUID-VkLayerSettingEXT-pValues-parameter: with `valueCount` not 0,
    // `pValues` points at `valueCount` values of the type `type` names (the
    // VkLayerSettingEXT description); only the first is read. A STRING value
    // is a pointer to a null-terminated UTF-8 string, checked for null.
    Some(unsafe {
        match s.ty {
            vk::LayerSettingTypeEXT::BOOL32 => (*(p as *const vk::Bool32) != 0).to_string(),
            vk::LayerSettingTypeEXT::INT32 => (*(p as *const i32)).to_string(),
            vk::LayerSettingTypeEXT::INT64 => (*(p as *const i64)).to_string(),
            vk::LayerSettingTypeEXT::UINT32 => (*(p as *const u32)).to_string(),
            vk::LayerSettingTypeEXT::UINT64 => (*(p as *const u64)).to_string(),
            vk::LayerSettingTypeEXT::FLOAT32 => (*(p as *const f32)).to_string(),
            vk::LayerSettingTypeEXT::FLOAT64 => (*(p as *const f64)).to_string(),
            vk::LayerSettingTypeEXT::STRING => {
                let strs = p as *const *const std::ffi::c_char;
                if (*strs).is_null() {
                    return None;
                }
                CStr::from_ptr(*strs).to_string_lossy().into_owned()
            }
            _ => return None,
        }
    })
}

impl RawSettings {
    /// Gathers every source. `create_info` holds the entries of
    /// `VkLayerSettingsCreateInfoEXT` (lowest priority).
    pub fn gather(create_info: Vec<(String, String)>) -> RawSettings {
        let mut raw = RawSettings::default();
        for (k, v) in create_info {
            raw.offer(&k, v, Source::CreateInfo);
        }
        if let Some(path) = settings_file() {
            match std::fs::read_to_string(&path) {
                Ok(text) => {
                    for (k, v) in parse_settings_file(&text) {
                        raw.offer(&k, v, Source::File);
                    }
                }
                Err(e) => raw
                    .diagnostics
                    .push(Diagnostic { id: id::SETTING_FILE, message: format!("cannot read {}: {e}", path.display()) }),
            }
        }
        for (name, value) in std::env::vars_os() {
            let Some(name) = name.to_str() else { continue };
            let Some(key) = name.strip_prefix(ENV_PREFIX) else {
                continue;
            };
            raw.offer(&key.to_ascii_lowercase(), value.to_string_lossy().into_owned(), Source::Environment);
        }
        raw
    }

    /// Types every value; a bad one is reported and replaced by its default.
    pub fn resolve(mut self) -> (Settings, Vec<Diagnostic>) {
        let mut get = |key: &'static str| -> String {
            let def = find_def(key).expect("key in SETTINGS");
            let Some((value, source)) = self.values.get(key) else {
                return def.default.to_string();
            };
            match normalize(def.kind, value) {
                Some(v) => v,
                None => {
                    let expected = match def.kind {
                        Kind::Bool => "true or false".to_string(),
                        Kind::Enum(vals) => format!("one of {}", vals.join(", ")),
                        Kind::String | Kind::Folder | Kind::File => "text".to_string(),
                    };
                    self.diagnostics.push(Diagnostic {
                        id: id::SETTING_INVALID,
                        message: format!(
                            "setting '{key}' = '{value}' (from {}) is not valid: expected {expected}; using the default '{}'",
                            source.describe(),
                            def.default
                        ),
                    });
                    def.default.to_string()
                }
            }
        };
        // An enum's value, as the table's own string (`get` has checked it is one of its values).
        macro_rules! pick {
            ($key:literal) => {
                choice($key, &get($key))
            };
        }
        let log_level = pick!("log_level");
        let settings = Settings {
            log_level: match log_level {
                "off" => LogLevel::Off,
                "error" => LogLevel::Error,
                "info" => LogLevel::Info,
                "debug" => LogLevel::Debug,
                _ => LogLevel::Warn,
            },
            force_enable: get("force_enable") == "true",
            architecture: pick!("architecture"),
            profile_file: Some(get("profile_file")).filter(|s| !s.is_empty()).map(PathBuf::from),
            spoof_identity: get("spoof_identity") == "true",
            interlock_strategy: pick!("interlock_strategy"),
            interlock_ordered_slots: pick!("interlock_ordered_slots").parse().unwrap_or(32),
            interlock_ordered_grid: pick!("interlock_ordered_grid").parse().unwrap_or(2048),
            interlock_ordered_wait: pick!("interlock_ordered_wait").parse().unwrap_or(1 << 20),
            debug_ordered_reverse: get("debug_ordered_reverse") == "true",
            debug_ordered_search_misses: get("debug_ordered_search_misses") == "true",
            debug_ordered_dedicated: get("debug_ordered_dedicated") == "true",
            debug_spinlock_per_lane: get("debug_spinlock_per_lane") == "true",
            interlock_spinlock_try: pick!("interlock_spinlock_try"),
            interlock_spinlock_lock: pick!("interlock_spinlock_lock"),
            interlock_never_opaque: pick!("interlock_never_opaque"),
            defer_view_destruction: pick!("defer_view_destruction"),
            fdm: pick!("fdm"),
            fdm_overlay: get("fdm_overlay") == "true",
            fdm_multiview_flush: pick!("fdm_multiview_flush"),
            fdm_dynamic_areas: pick!("fdm_dynamic_areas"),
            fdm_storage_composite: pick!("fdm_storage_composite"),
            fdm_subsampled: pick!("fdm_subsampled"),
            varyings: pick!("varyings"),
            varyings_uniforms: pick!("varyings_uniforms"),
            link_cache: get("link_cache") == "on",
            validate_shaders: get("validate_shaders") == "true",
            dump_shaders: Some(get("dump_shaders")).filter(|s| !s.is_empty()).map(PathBuf::from),
            debug_panic: Some(get("debug_panic")).filter(|s| !s.is_empty()),
            debug_fail: Some(get("debug_fail")).filter(|s| !s.is_empty()),
            debug_leak: Some(get("debug_leak")).filter(|s| !s.is_empty()),
            debug_fdm_misreplay: get("debug_fdm_misreplay") == "true",
            debug_fdm_steps: get("debug_fdm_steps") == "true",
            debug_ordered_without: Some(get("debug_ordered_without")).filter(|s| !s.is_empty()),
            debug_fdm_without: Some(get("debug_fdm_without")).filter(|s| !s.is_empty()),
        };
        (settings, self.diagnostics)
    }
}

/// An `auto` / `on` / `off` setting's answer: `auto` is `by_default`.
pub fn switch(value: &str, by_default: bool) -> bool {
    match value {
        "on" => true,
        "off" => false,
        _ => by_default,
    }
}

/// The table's string for `value` of the enum setting `key` ("" for a key
/// that is no enum: `pick!` names only enums).
fn choice(key: &str, value: &str) -> &'static str {
    match find_def(key).map(|d| d.kind) {
        Some(Kind::Enum(vals)) => vals.iter().copied().find(|x| *x == value).unwrap_or(vals[0]),
        _ => "",
    }
}

/// The canonical text of a value of `kind`, or `None` when it does not parse.
fn normalize(kind: Kind, value: &str) -> Option<String> {
    let v = value.trim();
    match kind {
        Kind::Bool => match v.to_ascii_lowercase().as_str() {
            "1" | "true" | "on" | "yes" => Some("true".into()),
            "0" | "false" | "off" | "no" => Some("false".into()),
            _ => None,
        },
        Kind::Enum(vals) => {
            let lower = v.to_ascii_lowercase();
            vals.iter().find(|x| **x == lower).map(|x| x.to_string())
        }
        Kind::String => Some(v.to_string()),
        Kind::Folder => Some(v.to_string()).filter(|p| p.is_empty() || !Path::new(p).is_file()),
        Kind::File => Some(v.to_string()),
    }
}

impl Settings {
    /// Settings from the environment and the settings file alone: what applies
    /// before any instance exists (and to the CLI).
    pub fn from_environment() -> (Settings, Vec<Diagnostic>) {
        RawSettings::gather(Vec::new()).resolve()
    }

    /// All sources, for `vkCreateInstance`.
    ///
    /// # Safety
    /// `create_info` must be a valid `VkInstanceCreateInfo`.
    pub unsafe fn for_instance(create_info: &vk::InstanceCreateInfo) -> (Settings, Vec<Diagnostic>) {
        // SAFETY: a valid create info has a valid chain (VUID-VkInstanceCreateInfo-pNext-pNext).
        RawSettings::gather(unsafe { create_info_settings(create_info.p_next) }).resolve()
    }

    pub fn defaults() -> Settings {
        RawSettings::default().resolve().0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The settings table and both manifests' settings blocks are what
    /// `layer/gen/settings.py` makes from `layer/gen/settings.json`.
    #[test]
    fn generated_settings_are_current() {
        crate::generated::assert_current("settings.py");
    }

    /// Every setting has its line in the README's brief list and its row in
    /// docs/settings.md (the two places a setting is written by hand); a
    /// line removed fails it (tried when it was written).
    #[test]
    fn every_setting_is_documented() {
        let root = concat!(env!("CARGO_MANIFEST_DIR"), "/..");
        let readme = std::fs::read_to_string(format!("{root}/README.md")).unwrap();
        let page = std::fs::read_to_string(format!("{root}/docs/settings.md")).unwrap();
        for d in SETTINGS {
            assert!(readme.contains(&format!("- `{}` —", d.key)), "README lacks `{}`", d.key);
            assert!(page.contains(&format!("| `{}` |", d.key)), "docs/settings.md lacks `{}`", d.key);
        }
    }

    fn resolve(pairs: &[(&str, &str)]) -> (Settings, Vec<Diagnostic>) {
        let mut raw = RawSettings::default();
        for (k, v) in pairs {
            raw.offer(k, v.to_string(), Source::File);
        }
        raw.resolve()
    }

    #[test]
    fn defaults_match_table() {
        let s = Settings::defaults();
        assert_eq!(s.log_level, LogLevel::Warn);
        assert!(!s.force_enable);
        assert_eq!(s.architecture, "native");
        assert_eq!(s.interlock_strategy, "auto");
        assert_eq!(s.fdm, "binned");
        assert_eq!(s.varyings, "safe");
        assert!(s.validate_shaders);
        assert!(s.dump_shaders.is_none());
    }

    #[test]
    fn typed_values_parse() {
        let (s, d) = resolve(&[("force_enable", "1"), ("architecture", "GFX10_3"), ("log_level", "debug")]);
        assert!(d.is_empty(), "{d:?}");
        assert!(s.force_enable);
        assert_eq!(s.architecture, "gfx10_3");
        assert_eq!(s.log_level, LogLevel::Debug);
    }

    #[test]
    fn bad_value_warns_and_uses_default() {
        let (s, d) = resolve(&[("fdm", "sometimes"), ("force_enable", "maybe")]);
        assert_eq!(s.fdm, "binned");
        assert!(!s.force_enable);
        assert_eq!(d.len(), 2);
        assert!(d.iter().all(|d| d.id == id::SETTING_INVALID));
        let fdm = d.iter().find(|d| d.message.contains("'fdm' = 'sometimes'")).expect("fdm diagnostic");
        assert!(fdm.message.contains("off, baseline, binned"), "{}", fdm.message);
    }

    #[test]
    fn unknown_key_warns() {
        let (_, d) = resolve(&[("no_such_key", "1")]);
        assert_eq!(d.len(), 1);
        assert_eq!(d[0].id, id::SETTING_UNKNOWN);
        assert!(d[0].message.contains("no_such_key"));
    }

    #[test]
    fn later_source_wins() {
        let mut raw = RawSettings::default();
        raw.offer("fdm", "off".into(), Source::CreateInfo);
        raw.offer("fdm", "baseline".into(), Source::File);
        assert_eq!(raw.resolve().0.fdm, "baseline");
    }

    #[test]
    fn settings_file_syntax() {
        let text = "# comment\noverlap_emulation.fdm = baseline\nkhronos_validation.foo = 1\n  overlap_emulation.force_enable=true \n";
        assert_eq!(
            parse_settings_file(text),
            vec![("fdm".to_string(), "baseline".to_string()), ("force_enable".to_string(), "true".to_string())]
        );
    }

    #[test]
    fn create_info_values_are_read() {
        let layer = c"VK_LAYER_OVERLAP_emulation";
        let other = c"VK_LAYER_KHRONOS_validation";
        let yes: vk::Bool32 = 1;
        let arch = c"gfx11";
        let arch_ptr = [arch.as_ptr()];
        let entries = [
            vk::LayerSettingEXT {
                p_layer_name: layer.as_ptr(),
                p_setting_name: c"force_enable".as_ptr(),
                ty: vk::LayerSettingTypeEXT::BOOL32,
                value_count: 1,
                p_values: &yes as *const _ as *const _,
                ..Default::default()
            },
            vk::LayerSettingEXT {
                p_layer_name: layer.as_ptr(),
                p_setting_name: c"architecture".as_ptr(),
                ty: vk::LayerSettingTypeEXT::STRING,
                value_count: 1,
                p_values: arch_ptr.as_ptr() as *const _,
                ..Default::default()
            },
            vk::LayerSettingEXT {
                p_layer_name: other.as_ptr(),
                p_setting_name: c"fdm".as_ptr(),
                ty: vk::LayerSettingTypeEXT::STRING,
                value_count: 1,
                p_values: arch_ptr.as_ptr() as *const _,
                ..Default::default()
            },
        ];
        let info = vk::LayerSettingsCreateInfoEXT::default().settings(&entries);
        // SAFETY: a one-structure chain: `info`, over the live entries above.
        let got = unsafe { create_info_settings(&info as *const _ as *const _) };
        assert_eq!(
            got,
            vec![("force_enable".to_string(), "true".to_string()), ("architecture".to_string(), "gfx11".to_string())]
        );
    }
}

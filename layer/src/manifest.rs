//! The layer manifests (`manifest/*.json.in`), filled with the library's
//! path. Used by the CLI (`overlap run`, `overlap install`, `overlap info`)
//! and the test harness; the installed layout is described in
//! `layer/src/bin/overlap.rs` (install).
//!
//! Both list the settings and presets for Vulkan Configurator and
//! `VK_EXT_layer_settings` (see [`LAYER_SETTINGS_LOADER`]). Neither lists
//! `device_extensions`: what the layer adds depends on the driver, the
//! settings and the architecture profile (it reports that per device through
//! `vkEnumerateDeviceExtensionProperties`), while the loader takes a
//! manifest's list as always true. For an implicit layer it appends the list
//! to the driver's own (`terminator_EnumerateDeviceExtensionProperties`, loader
//! 1.3.239 to today), so the layer, asking below itself, finds its extensions
//! "native" and emulates nothing; for any layer it lets `vkCreateDevice` enable
//! them unchecked, where the spec wants `VK_ERROR_EXTENSION_NOT_PRESENT` from
//! a device whose profile hides them. `tests/tests/install.rs` shows both.

#![deny(unsafe_op_in_unsafe_fn)]

use std::io;
use std::path::{Component, Path, PathBuf};

pub const IMPLICIT_TEMPLATE: &str = include_str!("../../manifest/VkLayer_overlap.json.in");
pub const EXPLICIT_TEMPLATE: &str = include_str!("../../manifest/VkLayer_overlap_explicit.json.in");
pub const MANIFEST_FILE_NAME: &str = "VkLayer_overlap.json";
pub const LIBRARY_FILE_NAME: &str = "libVkLayer_overlap.so";
/// What `overlap install` put where (JSON), so `overlap uninstall` removes
/// exactly that: `<data>/overlap/installed.json`, `<data>` being the folder
/// that holds `vulkan/implicit_layer.d`.
pub const RECORD_FILE_NAME: &str = "installed.json";

/// The instance extension the manifests list for the settings the layer
/// reads from `VkLayerSettingsCreateInfoEXT`.
pub const LAYER_SETTINGS_EXTENSION: &str = "VK_EXT_layer_settings";
/// The first loader that knows `VK_EXT_layer_settings` (1.3.272). Older ones
/// (Debian bookworm's 1.3.239) list an enabled implicit layer's instance
/// extensions as available but refuse `vkCreateInstance` when one they do not
/// know is enabled ("not found in list of known instance extensions"), so an
/// application that enables every listed extension (vulkaninfo does) fails
/// with `OVERLAP=1`. The implicit manifest leaves the extension out for them.
pub const LAYER_SETTINGS_LOADER: u32 = ash::vk::make_api_version(0, 1, 3, 272);
/// The `instance_extensions` block of both templates, exactly as written.
const LAYER_SETTINGS_BLOCK: &str = r#"    "instance_extensions": [
      {
        "name": "VK_EXT_layer_settings",
        "spec_version": "2"
      }
    ],
"#;

/// The Debian multiarch triple of this build (`lib/<triple>` holds the
/// packaged library).
pub const MULTIARCH: &str = if cfg!(all(target_arch = "x86_64", target_os = "linux")) {
    "x86_64-linux-gnu"
} else if cfg!(all(target_arch = "aarch64", target_os = "linux")) {
    "aarch64-linux-gnu"
} else {
    ""
};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// Loaded when `OVERLAP=1`, skipped when `DISABLE_OVERLAP=1`.
    Implicit,
    /// Loaded when named (`VK_INSTANCE_LAYERS`, `VK_LOADER_LAYERS_ENABLE`, the app).
    Explicit,
}

impl Kind {
    /// The loader's folder name for this kind of manifest.
    pub fn folder(self) -> &'static str {
        match self {
            Kind::Implicit => "implicit_layer.d",
            Kind::Explicit => "explicit_layer.d",
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Kind::Implicit => "implicit",
            Kind::Explicit => "explicit",
        }
    }
}

/// The manifest text for a library at `library` (made absolute), listing
/// everything the template lists.
pub fn render(kind: Kind, library: &Path) -> io::Result<String> {
    let library = std::path::absolute(library)?;
    render_path(kind, &library.to_string_lossy(), None)
}

/// The manifest text with `library_path` exactly as given (absolute, relative
/// to the manifest's folder, or a bare file name for the dynamic linker), for
/// a loader of version `loader` (`vkEnumerateInstanceVersion`; `None`: do not
/// adapt to a loader). An implicit manifest for a loader older than
/// [`LAYER_SETTINGS_LOADER`] (or an unknown one, `Some(0)`) leaves
/// `VK_EXT_layer_settings` out.
pub fn render_path(kind: Kind, library_path: &str, loader: Option<u32>) -> io::Result<String> {
    let template = match kind {
        Kind::Implicit => IMPLICIT_TEMPLATE,
        Kind::Explicit => EXPLICIT_TEMPLATE,
    };
    // JSON string escaping of the path.
    let escaped = serde_json::to_string(library_path).map_err(io::Error::other)?;
    let mut text = template.replace("\"@LIBRARY_PATH@\"", &escaped);
    if kind == Kind::Implicit && loader.is_some_and(|v| !loader_knows_layer_settings(v)) {
        if !text.contains(LAYER_SETTINGS_BLOCK) {
            return Err(io::Error::other("the implicit manifest template's instance_extensions block changed"));
        }
        text = text.replacen(LAYER_SETTINGS_BLOCK, "", 1);
    }
    Ok(text)
}

/// Whether a loader of this version accepts `VK_EXT_layer_settings`.
pub fn loader_knows_layer_settings(loader: u32) -> bool {
    let v = |x: u32| (ash::vk::api_version_major(x), ash::vk::api_version_minor(x), ash::vk::api_version_patch(x));
    v(loader) >= v(LAYER_SETTINGS_LOADER)
}

/// Writes `dir/VkLayer_overlap.json` and returns its path.
pub fn write(kind: Kind, library: &Path, dir: &Path) -> io::Result<PathBuf> {
    std::fs::create_dir_all(dir)?;
    let path = dir.join(MANIFEST_FILE_NAME);
    std::fs::write(&path, render(kind, library)?)?;
    Ok(path)
}

/// `$XDG_DATA_HOME`, or `~/.local/share` when it is unset or not absolute:
/// the user data folder the loader searches (`vulkan/implicit_layer.d`).
pub fn user_data_dir() -> Option<PathBuf> {
    std::env::var_os("XDG_DATA_HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .or_else(|| std::env::var_os("HOME").filter(|h| !h.is_empty()).map(|h| PathBuf::from(h).join(".local/share")))
}

/// `$XDG_DATA_HOME` (or `~/.local/share`) `/vulkan/implicit_layer.d`: where the
/// loader looks for a user's implicit layers.
pub fn user_implicit_dir() -> Option<PathBuf> {
    Some(user_data_dir()?.join("vulkan/implicit_layer.d"))
}

/// `to` relative to the folder `from` (both absolute and free of `.`/`..`,
/// e.g. canonical): `../../../lib/x.so`.
pub fn relative_path(from: &Path, to: &Path) -> PathBuf {
    let a: Vec<Component> = from.components().collect();
    let b: Vec<Component> = to.components().collect();
    let common = a.iter().zip(&b).take_while(|(x, y)| x == y).count();
    let mut out = PathBuf::new();
    for _ in common..a.len() {
        out.push("..");
    }
    for c in &b[common..] {
        out.push(c);
    }
    out
}

/// The loader's folders for layer manifests of `kind` on Linux, in its search
/// order (loader 1.3.239, `read_data_files_in_search_paths`): the additional
/// explicit path (`VK_ADD_LAYER_PATH`) or the override (`VK_LAYER_PATH`, then
/// nothing else), `$XDG_CONFIG_HOME` (`~/.config`), `$XDG_CONFIG_DIRS`
/// (`/etc/xdg`), `/etc`, `$XDG_DATA_HOME` (`~/.local/share`),
/// `$XDG_DATA_DIRS` (`/usr/local/share:/usr/share`), each + `vulkan/<kind>`.
pub fn loader_search_dirs(kind: Kind) -> Vec<PathBuf> {
    let var = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty());
    let split =
        |v: std::ffi::OsString| std::env::split_paths(&v).filter(|p| !p.as_os_str().is_empty()).collect::<Vec<_>>();
    if kind == Kind::Explicit {
        if let Some(over) = var("VK_LAYER_PATH") {
            return split(over);
        }
    }
    let mut dirs = Vec::new();
    if kind == Kind::Explicit {
        if let Some(add) = var("VK_ADD_LAYER_PATH") {
            dirs.extend(split(add));
        }
    }
    let home = var("HOME").map(PathBuf::from);
    let mut bases = Vec::new();
    bases.extend(var("XDG_CONFIG_HOME").map(PathBuf::from).or_else(|| home.as_ref().map(|h| h.join(".config"))));
    bases.extend(split(var("XDG_CONFIG_DIRS").unwrap_or_else(|| "/etc/xdg".into())));
    bases.push(PathBuf::from("/etc"));
    bases.extend(var("XDG_DATA_HOME").map(PathBuf::from).or_else(|| home.as_ref().map(|h| h.join(".local/share"))));
    bases.extend(split(var("XDG_DATA_DIRS").unwrap_or_else(|| "/usr/local/share:/usr/share".into())));
    for b in bases {
        let d = b.join("vulkan").join(kind.folder());
        if !dirs.contains(&d) {
            dirs.push(d);
        }
    }
    dirs
}

/// Where the loader finds the library a manifest in `manifest_dir` names:
/// a path with a `/` is relative to the manifest's folder (or absolute); a
/// bare file name is the dynamic linker's (looked for in `LD_LIBRARY_PATH`
/// and the usual library folders; `None` when not there).
pub fn resolve_library(manifest_dir: &Path, library_path: &str) -> Option<PathBuf> {
    if library_path.contains('/') {
        return Some(manifest_dir.join(library_path));
    }
    let mut dirs: Vec<PathBuf> =
        std::env::var_os("LD_LIBRARY_PATH").map(|v| std::env::split_paths(&v).collect()).unwrap_or_default();
    for d in ["/usr/local/lib", "/lib", "/usr/lib"] {
        if !MULTIARCH.is_empty() {
            dirs.push(Path::new(d).join(MULTIARCH));
        }
        dirs.push(PathBuf::from(d));
    }
    dirs.into_iter().map(|d| d.join(library_path)).find(|p| p.is_file())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::settings::{Kind as SettingKind, SETTINGS};
    use serde_json::Value;

    fn parse(kind: Kind) -> Value {
        serde_json::from_str(&render(kind, Path::new("/opt/overlap/libVkLayer_overlap.so")).unwrap()).unwrap()
    }

    #[test]
    fn manifests_name_the_layer_and_library() {
        for kind in [Kind::Implicit, Kind::Explicit] {
            let m = parse(kind);
            assert_eq!(m["file_format_version"], "1.2.0");
            assert_eq!(m["layer"]["name"], crate::settings::LAYER_NAME);
            assert_eq!(m["layer"]["library_path"], "/opt/overlap/libVkLayer_overlap.so");
        }
        let implicit = parse(Kind::Implicit);
        assert_eq!(implicit["layer"]["enable_environment"]["OVERLAP"], "1");
        assert_eq!(implicit["layer"]["disable_environment"]["DISABLE_OVERLAP"], "1");
        assert!(parse(Kind::Explicit)["layer"].get("disable_environment").is_none());
    }

    /// The manifests' `features.settings` mirror the settings table exactly.
    #[test]
    fn manifest_settings_mirror_the_table() {
        for kind in [Kind::Implicit, Kind::Explicit] {
            let m = parse(kind);
            let listed = m["layer"]["features"]["settings"].as_array().unwrap();
            let keys: Vec<&str> = listed.iter().map(|s| s["key"].as_str().unwrap()).collect();
            let table: Vec<&str> = SETTINGS.iter().map(|d| d.key).collect();
            assert_eq!(keys, table);
            for (s, def) in listed.iter().zip(SETTINGS) {
                assert_eq!(s["env"], crate::settings::env_name(def.key));
                assert_eq!(s["label"], def.label);
                assert_eq!(s["description"], def.description);
                match def.kind {
                    SettingKind::Bool => {
                        assert_eq!(s["type"], "BOOL");
                        assert_eq!(s["default"], Value::Bool(def.default == "true"));
                    }
                    SettingKind::Enum(values) => {
                        assert_eq!(s["type"], "ENUM");
                        assert_eq!(s["default"], def.default);
                        let flags: Vec<&str> =
                            s["flags"].as_array().unwrap().iter().map(|f| f["key"].as_str().unwrap()).collect();
                        assert_eq!(flags, values);
                    }
                    SettingKind::String => assert_eq!(s["type"], "STRING"),
                    SettingKind::Folder => assert_eq!(s["type"], "SAVE_FOLDER"),
                    SettingKind::File => assert_eq!(s["type"], "LOAD_FILE"),
                }
            }
        }
    }
    /// The two templates say the same but for the implicit one's environment
    /// switches, and neither lists device extensions (module documentation).
    #[test]
    fn templates_agree_but_for_the_environment() {
        let mut implicit = parse(Kind::Implicit);
        let layer = implicit["layer"].as_object_mut().unwrap();
        assert!(layer.remove("enable_environment").is_some());
        assert!(layer.remove("disable_environment").is_some());
        let explicit = parse(Kind::Explicit);
        assert_eq!(implicit, explicit);
        assert!(explicit["layer"].get("device_extensions").is_none());
        assert_eq!(explicit["layer"]["instance_extensions"][0]["name"], LAYER_SETTINGS_EXTENSION);
    }

    /// Every enum value has a label and a description of its own (Vulkan
    /// Configurator shows both), not the key again.
    #[test]
    fn enum_values_have_real_labels_and_descriptions() {
        let m = parse(Kind::Implicit);
        for s in m["layer"]["features"]["settings"].as_array().unwrap() {
            let Some(flags) = s.get("flags") else { continue };
            let mut labels = Vec::new();
            for f in flags.as_array().unwrap() {
                let (key, label, description) =
                    (f["key"].as_str().unwrap(), f["label"].as_str().unwrap(), f["description"].as_str().unwrap());
                assert!(!label.is_empty() && !labels.contains(&label), "{}: label {label:?}", s["key"]);
                labels.push(label);
                assert!(
                    description.len() > 30 && description != key && description != label && description.ends_with('.'),
                    "{}.{key}: description {description:?}",
                    s["key"]
                );
            }
        }
    }

    /// Presets name settings of the table, with values of their type.
    #[test]
    fn presets_set_real_settings_to_valid_values() {
        let m = parse(Kind::Implicit);
        let presets = m["layer"]["features"]["presets"].as_array().unwrap();
        let labels: Vec<&str> = presets.iter().map(|p| p["label"].as_str().unwrap()).collect();
        for want in ["RDNA2 (gfx10_3)", "Adreno a7xx with foveation", "Debug: dump and validate shaders"] {
            assert!(labels.contains(&want), "{labels:?}");
        }
        for p in presets {
            let settings = p["settings"].as_array().unwrap();
            assert!(!settings.is_empty());
            for s in settings {
                let key = s["key"].as_str().unwrap();
                let def =
                    crate::settings::find_def(key).unwrap_or_else(|| panic!("preset {}: no setting {key}", p["label"]));
                let value = &s["value"];
                match def.kind {
                    SettingKind::Bool => assert!(value.is_boolean(), "{key}: {value}"),
                    SettingKind::Enum(values) => assert!(values.contains(&value.as_str().unwrap()), "{key}: {value}"),
                    SettingKind::String | SettingKind::Folder | SettingKind::File => assert!(value.is_string()),
                }
            }
        }
    }

    #[test]
    fn layer_settings_extension_only_for_loaders_that_know_it() {
        let ext = |kind, loader| {
            let text = render_path(kind, "libVkLayer_overlap.so", loader).unwrap();
            let m: Value = serde_json::from_str(&text).unwrap();
            m["layer"]["instance_extensions"]
                .as_array()
                .map(|a| a.iter().map(|e| e["name"].clone()).collect::<Vec<_>>())
        };
        let listed = Some(vec![Value::from(LAYER_SETTINGS_EXTENSION)]);
        let v = |p| ash::vk::make_api_version(0, 1, 3, p);
        assert_eq!(ext(Kind::Implicit, Some(v(239))), None);
        assert_eq!(ext(Kind::Implicit, Some(0)), None);
        assert_eq!(ext(Kind::Implicit, Some(v(272))), listed);
        assert_eq!(ext(Kind::Implicit, Some(ash::vk::make_api_version(0, 1, 4, 0))), listed);
        assert_eq!(ext(Kind::Implicit, None), listed);
        assert_eq!(ext(Kind::Explicit, Some(v(239))), listed);
    }

    #[test]
    fn relative_library_paths() {
        assert_eq!(
            relative_path(
                Path::new("/usr/share/vulkan/implicit_layer.d"),
                Path::new("/usr/lib/x86_64-linux-gnu/libVkLayer_overlap.so")
            ),
            Path::new("../../../lib/x86_64-linux-gnu/libVkLayer_overlap.so")
        );
        assert_eq!(relative_path(Path::new("/a/b"), Path::new("/a/b/c.so")), Path::new("c.so"));
        let dir = Path::new("/opt/o/share/vulkan/implicit_layer.d");
        assert_eq!(resolve_library(dir, "../../../lib/x.so"), Some(dir.join("../../../lib/x.so")));
    }
}

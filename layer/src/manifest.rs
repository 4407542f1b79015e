//! The layer manifests (`manifest/*.json.in`), filled with the library's
//! absolute path. Used by the CLI (`overlap run`, `overlap install`) and the
//! test harness.

use std::io;
use std::path::{Path, PathBuf};

pub const IMPLICIT_TEMPLATE: &str = include_str!("../../manifest/VkLayer_overlap.json.in");
pub const EXPLICIT_TEMPLATE: &str = include_str!("../../manifest/VkLayer_overlap_explicit.json.in");
pub const MANIFEST_FILE_NAME: &str = "VkLayer_overlap.json";
pub const LIBRARY_FILE_NAME: &str = "libVkLayer_overlap.so";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// Loaded when `OVERLAP=1`, skipped when `DISABLE_OVERLAP=1`.
    Implicit,
    /// Loaded when named (`VK_INSTANCE_LAYERS`, `VK_LOADER_LAYERS_ENABLE`, the app).
    Explicit,
}

/// The manifest text for a library at `library` (made absolute).
pub fn render(kind: Kind, library: &Path) -> io::Result<String> {
    let library = std::path::absolute(library)?;
    let template = match kind {
        Kind::Implicit => IMPLICIT_TEMPLATE,
        Kind::Explicit => EXPLICIT_TEMPLATE,
    };
    // JSON string escaping of the path.
    let escaped = serde_json::to_string(&library.to_string_lossy()).map_err(io::Error::other)?;
    Ok(template.replace("\"@LIBRARY_PATH@\"", &escaped))
}

/// Writes `dir/VkLayer_overlap.json` and returns its path.
pub fn write(kind: Kind, library: &Path, dir: &Path) -> io::Result<PathBuf> {
    std::fs::create_dir_all(dir)?;
    let path = dir.join(MANIFEST_FILE_NAME);
    std::fs::write(&path, render(kind, library)?)?;
    Ok(path)
}

/// `$XDG_DATA_HOME` (or `~/.local/share`) `/vulkan/implicit_layer.d`: where the
/// loader looks for a user's implicit layers.
pub fn user_implicit_dir() -> Option<PathBuf> {
    let base = std::env::var_os("XDG_DATA_HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".local/share")))?;
    Some(base.join("vulkan/implicit_layer.d"))
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
}

//! Emulated architectures: Khronos Vulkan Profiles JSON (capability blocks of
//! extensions, features and properties), built in for `gfx9`, `gfx10`,
//! `gfx10_3`, `gfx11`, `a6xx`, `a7xx` (`manifest/profiles/`, embedded), or
//! loaded from the `profile_file` setting.
//!
//! A profile governs the capability areas Overlap deals with — fragment shader
//! interlock, fragment shading rate, fragment density map — and is applied
//! as an intersection with what the driver plus Overlap's emulation can do:
//! an extension is exposed only where the profile lists it *and* it can be
//! honoured; boolean features are ANDed; limits are clamped towards the more
//! restrictive of the two. It never claims more than the driver can do.

#![deny(unsafe_op_in_unsafe_fn)]

use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::path::Path;

/// The extensions a profile governs.
pub const GOVERNED_EXTENSIONS: [&str; 3] =
    ["VK_EXT_fragment_shader_interlock", "VK_KHR_fragment_shading_rate", "VK_EXT_fragment_density_map"];

pub const BUILTIN: [(&str, &str); 6] = [
    ("gfx9", include_str!("../../manifest/profiles/VP_OVERLAP_gfx9.json")),
    ("gfx10", include_str!("../../manifest/profiles/VP_OVERLAP_gfx10.json")),
    ("gfx10_3", include_str!("../../manifest/profiles/VP_OVERLAP_gfx10_3.json")),
    ("gfx11", include_str!("../../manifest/profiles/VP_OVERLAP_gfx11.json")),
    ("a6xx", include_str!("../../manifest/profiles/VP_OVERLAP_a6xx.json")),
    ("a7xx", include_str!("../../manifest/profiles/VP_OVERLAP_a7xx.json")),
];

/// A profile, its capability blocks merged.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Profile {
    /// The profile's name (`VP_OVERLAP_gfx11`, or the file's).
    pub name: String,
    /// The short architecture name shown to users.
    pub arch: String,
    pub label: String,
    pub extensions: BTreeMap<String, u32>,
    /// Structure name → member → value.
    pub features: BTreeMap<String, Map<String, Value>>,
    pub properties: BTreeMap<String, Map<String, Value>>,
}

#[derive(Debug, thiserror::Error, PartialEq)]
#[error("{source_name}: {problem}")]
pub struct ProfileError {
    pub source_name: String,
    pub problem: String,
}

impl Profile {
    pub fn has_extension(&self, name: &str) -> bool {
        self.extensions.contains_key(name)
    }

    /// A boolean feature the profile states, if it states it.
    pub fn feature(&self, structure: &str, member: &str) -> Option<bool> {
        self.features.get(structure)?.get(member)?.as_bool()
    }

    pub fn property(&self, structure: &str, member: &str) -> Option<&Value> {
        self.properties.get(structure)?.get(member)
    }

    /// The vendor the profile's hardware reports (for `spoof_identity`).
    pub fn vendor_id(&self) -> Option<u32> {
        self.property("VkPhysicalDeviceProperties", "vendorID").and_then(Value::as_u64).map(|v| v as u32)
    }

    /// Parses Vulkan Profiles JSON; `source_name` names it in errors.
    pub fn parse(text: &str, source_name: &str, arch: &str) -> Result<Profile, ProfileError> {
        let err = |problem: String| ProfileError { source_name: source_name.to_string(), problem };
        let root: Value = serde_json::from_str(text).map_err(|e| err(format!("not valid JSON: {e}")))?;
        let caps = root
            .get("capabilities")
            .and_then(Value::as_object)
            .ok_or_else(|| err("no \"capabilities\" object".into()))?;
        let profiles =
            root.get("profiles").and_then(Value::as_object).ok_or_else(|| err("no \"profiles\" object".into()))?;
        let (name, profile) = profiles.iter().next().ok_or_else(|| err("\"profiles\" is empty".into()))?;
        let wanted = profile
            .get("capabilities")
            .and_then(Value::as_array)
            .ok_or_else(|| err(format!("profile {name} has no \"capabilities\" list")))?;
        let mut out = Profile {
            name: name.clone(),
            arch: arch.to_string(),
            label: profile.get("label").and_then(Value::as_str).unwrap_or(name).to_string(),
            ..Default::default()
        };
        for entry in wanted {
            // A list entry is a block name, or a list of alternatives (the first is taken).
            let block_name = match entry {
                Value::String(s) => s.as_str(),
                Value::Array(alts) => alts
                    .first()
                    .and_then(Value::as_str)
                    .ok_or_else(|| err(format!("profile {name}: empty alternative")))?,
                other => return Err(err(format!("profile {name}: capability entry {other} is not a name"))),
            };
            let block = caps.get(block_name).and_then(Value::as_object).ok_or_else(|| {
                err(format!("profile {name} names capability block \"{block_name}\", which is not defined"))
            })?;
            if let Some(exts) = block.get("extensions") {
                let exts = exts.as_object().ok_or_else(|| err(format!("{block_name}.extensions is not an object")))?;
                for (e, v) in exts {
                    let v = v
                        .as_u64()
                        .ok_or_else(|| err(format!("{block_name}.extensions.{e}: spec version must be a number")))?;
                    out.extensions.insert(e.clone(), v as u32);
                }
            }
            for (key, target) in [("features", &mut out.features), ("properties", &mut out.properties)] {
                if let Some(structs) = block.get(key) {
                    let structs =
                        structs.as_object().ok_or_else(|| err(format!("{block_name}.{key} is not an object")))?;
                    for (s, members) in structs {
                        let members = members
                            .as_object()
                            .ok_or_else(|| err(format!("{block_name}.{key}.{s} is not an object")))?;
                        target.entry(s.clone()).or_default().extend(members.clone());
                    }
                }
            }
        }
        Ok(out)
    }

    /// A built-in profile by architecture name.
    pub fn builtin(arch: &str) -> Option<Profile> {
        let (_, text) = BUILTIN.iter().find(|(a, _)| *a == arch)?;
        Some(Profile::parse(text, &format!("built-in profile {arch}"), arch).expect("built-in profiles parse (tested)"))
    }

    /// A user's profile file.
    pub fn load(path: &Path) -> Result<Profile, ProfileError> {
        let text = std::fs::read_to_string(path).map_err(|e| ProfileError {
            source_name: path.display().to_string(),
            problem: format!("cannot read: {e}"),
        })?;
        let stem = path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
        Profile::parse(&text, &path.display().to_string(), &stem)
    }
}

/// The profile the settings ask for: `profile_file` first, then a built-in
/// `architecture` (`native`: none). A file that cannot be used is reported
/// and the layer runs as `native`.
pub fn for_settings(settings: &crate::settings::Settings) -> (Option<std::sync::Arc<Profile>>, Option<ProfileError>) {
    if let Some(path) = &settings.profile_file {
        return match Profile::load(path) {
            Ok(p) => (Some(std::sync::Arc::new(p)), None),
            Err(e) => (None, Some(e)),
        };
    }
    (Profile::builtin(settings.architecture).map(std::sync::Arc::new), None)
}

/// Clamps a driver's value towards a profile's: booleans are ANDed, `max*`
/// limits take the smaller, `min*` limits the larger (extents per component).
pub fn clamp(member: &str, driver: &Value, profile: &Value) -> Value {
    match (driver, profile) {
        (Value::Bool(d), Value::Bool(p)) => Value::Bool(*d && *p),
        (Value::Number(d), Value::Number(p)) => {
            let (d, p) = (d.as_u64().unwrap_or(0), p.as_u64().unwrap_or(0));
            Value::from(if member.starts_with("min") { d.max(p) } else { d.min(p) })
        }
        (Value::Object(d), Value::Object(p)) => {
            let mut out = d.clone();
            for (k, v) in d {
                if let Some(pv) = p.get(k) {
                    // Components of an extent follow the member's direction.
                    out.insert(k.clone(), clamp(member, v, pv));
                }
            }
            Value::Object(out)
        }
        _ => driver.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_builtin_profile_parses() {
        for (arch, _) in BUILTIN {
            let p = Profile::builtin(arch).unwrap();
            assert!(p.name.ends_with(arch), "{}", p.name);
        }
    }

    #[test]
    fn malformed_files_name_the_problem() {
        let e = Profile::parse("{", "x.json", "x").unwrap_err();
        assert!(e.problem.contains("not valid JSON"), "{e}");
        assert_eq!(e.source_name, "x.json");
        let e =
            Profile::parse(r#"{"capabilities": {}, "profiles": {"P": {"capabilities": ["missing"]}}}"#, "y.json", "y")
                .unwrap_err();
        assert!(e.problem.contains("\"missing\", which is not defined"), "{e}");
        let e = Profile::parse(r#"{"profiles": {}}"#, "z.json", "z").unwrap_err();
        assert!(e.problem.contains("capabilities"), "{e}");
        let e = Profile::parse(
            r#"{"capabilities": {"b": {"extensions": {"VK_X": "one"}}}, "profiles": {"P": {"capabilities": ["b"]}}}"#,
            "w",
            "w",
        )
        .unwrap_err();
        assert!(e.problem.contains("spec version"), "{e}");
    }

    #[test]
    fn partial_profile_with_extensions_only() {
        let p = Profile::parse(
            r#"{"capabilities": {"b": {"extensions": {"VK_EXT_fragment_shader_interlock": 1}}}, "profiles": {"VP_TEST": {"capabilities": [["b", "c"]]}}}"#,
            "p.json",
            "p",
        )
        .unwrap();
        assert!(p.has_extension("VK_EXT_fragment_shader_interlock"));
        assert_eq!(
            p.feature("VkPhysicalDeviceFragmentShaderInterlockFeaturesEXT", "fragmentShaderPixelInterlock"),
            None
        );
    }

    #[test]
    fn clamping_never_exceeds_the_driver() {
        use serde_json::json;
        assert_eq!(clamp("x", &json!(true), &json!(false)), json!(false));
        assert_eq!(clamp("x", &json!(false), &json!(true)), json!(false));
        assert_eq!(
            clamp("maxFragmentSize", &json!({"width": 4, "height": 4}), &json!({"width": 2, "height": 2})),
            json!({"width": 2, "height": 2})
        );
        assert_eq!(
            clamp("maxFragmentSize", &json!({"width": 2, "height": 2}), &json!({"width": 4, "height": 4})),
            json!({"width": 2, "height": 2})
        );
        assert_eq!(
            clamp(
                "minFragmentShadingRateAttachmentTexelSize",
                &json!({"width": 8, "height": 8}),
                &json!({"width": 16, "height": 16})
            ),
            json!({"width": 16, "height": 16})
        );
    }
}

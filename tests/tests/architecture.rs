//! Emulated architectures on lavapipe: each built-in profile's capability
//! set, as vulkaninfo and the layer's own queries show it, device creation
//! with and without what the profile hides, identity, and profile files.

use overlap_tests::harness::{self, app, overlap_cli, run, vk_command, Layers};
use std::process::Command;

/// The expected interlock exposure on lavapipe per profile, from the
/// profiles' sources: AMD GFX9+ have POPS interlock, Adreno has none.
/// No profile exposes VK_KHR_fragment_shading_rate here (lavapipe has no
/// VRS) nor VK_EXT_fragment_density_map (not emulated in this build).
const TABLE: &[(&str, bool)] =
    &[("gfx9", true), ("gfx10", true), ("gfx10_3", true), ("gfx11", true), ("a6xx", false), ("a7xx", false)];

fn vulkaninfo(arch: &str) -> String {
    let mut cmd = vk_command(overlap_cli(), Layers::None);
    cmd.args(["run", "--arch", arch, "--", "vulkaninfo"]);
    let o = run(&mut cmd);
    assert_eq!(o.code, Some(0), "{}", o.stderr);
    o.stdout
}

/// The members of a structure's section in vulkaninfo's text.
fn section(text: &str, name: &str) -> Option<Vec<String>> {
    let mut lines = text.lines().skip_while(|l| *l != format!("{name}:"));
    lines.next()?;
    lines.next(); // underline
    Some(
        lines
            .take_while(|l| !l.trim().is_empty())
            .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
            .collect(),
    )
}

#[test]
fn vulkaninfo_shows_each_profiles_capability_set() {
    for (arch, interlock) in TABLE {
        let text = vulkaninfo(arch);
        let listed = |e: &str| text.lines().any(|l| l.trim_start().starts_with(e) && l.contains("extension revision"));
        assert_eq!(listed("VK_EXT_fragment_shader_interlock"), *interlock, "{arch}");
        assert!(!listed("VK_KHR_fragment_shading_rate"), "{arch}");
        // Emulated where the profile has it (the Adreno ones), hidden elsewhere.
        assert_eq!(listed("VK_EXT_fragment_density_map"), arch.starts_with('a'), "{arch}");
        let features = section(&text, "VkPhysicalDeviceFragmentShaderInterlockFeaturesEXT");
        if *interlock {
            assert_eq!(
                features.unwrap(),
                [
                    "fragmentShaderSampleInterlock = true",
                    "fragmentShaderPixelInterlock = true",
                    "fragmentShaderShadingRateInterlock = false"
                ],
                "{arch}"
            );
        } else {
            assert!(features.is_none(), "{arch}");
        }
        // The identity stays the driver's unless spoof_identity is set.
        assert!(text.contains("deviceName        = llvmpipe"), "{arch}");
    }
}

#[test]
fn layer_queries_and_device_creation_follow_the_profile() {
    for (arch, interlock) in TABLE {
        let o =
            run(app(Layers::OverlapOverValidation, &["interlock-features"])
                .env("VK_OVERLAP_EMULATION_ARCHITECTURE", arch));
        let expected = if *interlock { "1 sample=1 shading_rate=0" } else { "0 sample=0 shading_rate=0" };
        assert_eq!(o.value("pixel"), Some(expected), "{arch}");
        // Creating a device with the reported features works; with a hidden
        // extension it fails as the spec says.
        assert_eq!(o.value("enabled"), Some(if *interlock { "true" } else { "false" }), "{arch}");
        let refused = if *interlock { "ERROR_FEATURE_NOT_PRESENT" } else { "ERROR_EXTENSION_NOT_PRESENT" };
        assert_eq!(o.value("shading_rate_device"), Some(refused), "{arch}");
        // The matrix runs where interlock is exposed, with validation below.
        if *interlock {
            let m = run(app(Layers::OverlapOverValidation, &["interlock", "quick"])
                .env("VK_OVERLAP_EMULATION_ARCHITECTURE", arch));
            m.assert_ok();
        }
    }
}

#[test]
fn spoofed_identity_names_the_architecture() {
    for (arch, vendor) in [("gfx11", "0x1002"), ("a7xx", "0x5143")] {
        let o = run(app(Layers::OverlapOverValidation, &["probe"])
            .env("VK_OVERLAP_EMULATION_ARCHITECTURE", arch)
            .env("VK_OVERLAP_EMULATION_SPOOF_IDENTITY", "true"));
        o.assert_ok();
        assert!(
            o.value("device").unwrap().starts_with(&format!("Overlap {arch} (llvmpipe")),
            "{:?}",
            o.value("device")
        );
        assert_eq!(o.value("vendor_id"), Some(vendor));
    }
    let o = run(app(Layers::OverlapOverValidation, &["probe"]).env("VK_OVERLAP_EMULATION_ARCHITECTURE", "gfx11"));
    assert!(o.value("device").unwrap().starts_with("llvmpipe"));
    assert_eq!(o.value("vendor_id"), Some("0x10005"));
}

#[test]
fn profile_files_good_and_malformed() {
    let dir = harness::scratch("profiles");
    // A user's profile: the gfx9 one without interlock is an AMD part with nothing.
    let good = dir.join("VP_MY_amd.json");
    std::fs::write(
        &good,
        r#"{"capabilities": {"none": {"extensions": {}}}, "profiles": {"VP_MY_amd": {"version": 1, "api-version": "1.3.0", "label": "mine", "description": "d", "capabilities": ["none"]}}}"#,
    )
    .unwrap();
    let o = run(
        app(Layers::OverlapOverValidation, &["interlock-features"]).env("VK_OVERLAP_EMULATION_PROFILE_FILE", &good)
    );
    assert_eq!(o.value("pixel"), Some("0 sample=0 shading_rate=0"));
    // A malformed one: a clear message naming the file, and the layer runs as native.
    let bad = dir.join("broken.json");
    std::fs::write(&bad, "{ \"capabilities\": ").unwrap();
    let o =
        run(app(Layers::OverlapOverValidation, &["interlock-features"]).env("VK_OVERLAP_EMULATION_PROFILE_FILE", &bad));
    assert!(o.stderr.contains("OVERLAP-Profile-Invalid"), "{}", o.stderr);
    assert!(o.stderr.contains("broken.json: not valid JSON"), "{}", o.stderr);
    assert_eq!(o.value("pixel"), Some("1 sample=1 shading_rate=0"));
}

#[test]
fn info_prints_the_effective_table_with_what_was_clamped() {
    let out = Command::new(overlap_cli())
        .args(["info", "--arch", "a7xx"])
        .env("VK_DRIVER_FILES", harness::LAVAPIPE_ICD)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success());
    assert!(text.contains("architecture              : a7xx"), "{text}");
    assert!(
        text.contains(
            "fragment shader interlock : hidden (the a7xx profile does not have VK_EXT_fragment_shader_interlock)"
        ),
        "{text}"
    );
    assert!(text.contains("clamped                   : VK_KHR_fragment_shading_rate"), "{text}");
    assert!(text.contains("fragment density map      : emulated (binned)"), "{text}");
    assert!(!text.contains("clamped                   : VK_EXT_fragment_density_map"), "{text}");
}

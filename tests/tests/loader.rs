//! The loader interface, the per-device hook switch, settings and logging,
//! observed from a real application on lavapipe through the real loader.

use overlap_tests::harness::{self, app, run, Layers};
use std::process::Command;

const HOOKED: &str = "libVkLayer_overlap.so";

#[test]
fn library_exports_only_the_loader_interface() {
    let out = Command::new("nm").args(["-D", "--defined-only"]).arg(harness::layer_library()).output().expect("nm");
    let text = String::from_utf8_lossy(&out.stdout);
    let mut symbols: Vec<&str> = text.lines().filter_map(|l| l.split_whitespace().nth(2)).collect();
    symbols.sort();
    assert_eq!(
        symbols,
        [
            "vkEnumerateDeviceExtensionProperties",
            "vkEnumerateDeviceLayerProperties",
            "vkEnumerateInstanceExtensionProperties",
            "vkEnumerateInstanceLayerProperties",
            "vkGetDeviceProcAddr",
            "vkGetInstanceProcAddr",
            "vkNegotiateLoaderLayerInterfaceVersion",
        ]
    );
}

#[test]
fn pass_through_by_default_and_quiet() {
    let o = run(&mut app(Layers::OverlapOverValidation, &["probe"]));
    o.assert_ok().assert_quiet();
    assert!(o.value("instance_layers").unwrap().contains(harness::LAYER));
    // Commands go straight to the validation layer; only shader and pipeline
    // creation pass through Overlap (the varying linker, on by default).
    assert_eq!(o.value("hook_owner.vkCmdDraw"), Some("libVkLayer_khronos_validation.so"));
    assert_eq!(o.value("hook_owner.vkQueueSubmit"), Some("libVkLayer_khronos_validation.so"));
    assert_eq!(o.value("hook_owner.vkCreateShaderModule"), Some("libVkLayer_overlap.so"));
    // With the linker off and nothing else enabled, nothing at all.
    let o = run(app(Layers::OverlapOverValidation, &["probe"]).env("VK_OVERLAP_EMULATION_VARYINGS", "off"));
    o.assert_ok().assert_quiet();
    assert_eq!(o.value("hook_owner.vkCreateShaderModule"), Some("libVkLayer_khronos_validation.so"));
}

#[test]
fn device_extensions_are_the_drivers_without_duplicates() {
    let with = run(&mut app(Layers::OverlapOverValidation, &["probe"]));
    let without = run(&mut app(Layers::Validation, &["probe"]));
    with.assert_ok();
    without.assert_ok();
    // The driver's list plus exactly the emulated extensions, each once.
    let list = |o: &overlap_tests::harness::Outcome| -> Vec<String> {
        o.value("device_extensions").unwrap().split(',').map(str::to_string).collect()
    };
    let mut expected = list(&without);
    assert!(!expected.iter().any(|e| e == "VK_EXT_fragment_shader_interlock"));
    assert!(!expected.iter().any(|e| e == "VK_EXT_fragment_density_map"));
    assert!(!expected.iter().any(|e| e == "VK_EXT_fragment_density_map2"));
    assert!(!expected.iter().any(|e| e.ends_with("_fragment_density_map_offset")));
    expected.push("VK_EXT_fragment_shader_interlock".into());
    expected.push("VK_EXT_fragment_density_map".into());
    expected.push("VK_EXT_fragment_density_map2".into());
    expected.push("VK_EXT_fragment_density_map_offset".into());
    expected.push("VK_QCOM_fragment_density_map_offset".into());
    expected.sort();
    assert_eq!(list(&with), expected);
    assert_eq!(with.value("device_extension_duplicates"), Some("0"));
    // Asked by name, the layer lists its own: the emulated ones.
    assert_eq!(with.value("overlap_device_extensions"), Some("5"));
    // With emulation off, the driver's list exactly.
    let native = run(app(Layers::OverlapOverValidation, &["probe"])
        .env("VK_OVERLAP_EMULATION_INTERLOCK_STRATEGY", "native")
        .env("VK_OVERLAP_EMULATION_FDM", "off"));
    assert_eq!(native.value("device_extensions"), without.value("device_extensions"));
}

#[test]
fn force_enable_from_the_environment() {
    let o = run(app(Layers::OverlapOverValidation, &["probe"]).env("VK_OVERLAP_EMULATION_FORCE_ENABLE", "true"));
    o.assert_ok();
    for cmd in ["vkCmdDraw", "vkCreateShaderModule", "vkQueueSubmit", "vkCmdBeginRendering"] {
        assert_eq!(o.value(&format!("hook_owner.{cmd}")), Some(HOOKED), "{cmd}");
    }
    // vkDestroyDevice is always the loader's trampoline to the layer's hook.
    assert_eq!(o.value("hook_owner.vkDestroyDevice"), Some("libvulkan.so.1"));
}

#[test]
fn force_enable_from_layer_settings_create_info() {
    let o = run(&mut app(Layers::OverlapOverValidation, &["--setting", "force_enable=true", "probe"]));
    o.assert_ok();
    assert_eq!(o.value("hook_owner.vkCmdDraw"), Some(HOOKED));
}

#[test]
fn force_enable_from_settings_file() {
    let dir = harness::scratch("settings");
    std::fs::write(dir.join("vk_layer_settings.txt"), "# test\noverlap_emulation.force_enable = true\n").unwrap();
    let o = run(app(Layers::OverlapOverValidation, &["probe"]).env("VK_LAYER_SETTINGS_PATH", &dir));
    o.assert_ok();
    assert_eq!(o.value("hook_owner.vkCmdDraw"), Some(HOOKED));
    // The same file in the working directory is found too.
    let o = run(app(Layers::OverlapOverValidation, &["probe"]).current_dir(&dir));
    assert_eq!(o.value("hook_owner.vkCmdDraw"), Some(HOOKED));
}

#[test]
fn settings_priority_is_environment_then_file_then_create_info() {
    let dir = harness::scratch("priority");
    let file = dir.join("vk_layer_settings.txt");
    std::fs::write(&file, "overlap_emulation.force_enable = false\n").unwrap();
    // File (false) beats create info (true).
    let o = run(app(Layers::OverlapOverValidation, &["--setting", "force_enable=true", "probe"])
        .env("VK_LAYER_SETTINGS_PATH", &file));
    assert_eq!(o.value("hook_owner.vkCmdDraw"), Some("libVkLayer_khronos_validation.so"));
    // Environment (true) beats the file (false).
    let o = run(app(Layers::OverlapOverValidation, &["probe"])
        .env("VK_LAYER_SETTINGS_PATH", &file)
        .env("VK_OVERLAP_EMULATION_FORCE_ENABLE", "1"));
    assert_eq!(o.value("hook_owner.vkCmdDraw"), Some(HOOKED));
}

#[test]
fn bad_and_unknown_settings_warn_and_use_defaults() {
    let o = run(app(Layers::OverlapOverValidation, &["probe"])
        .env("VK_OVERLAP_EMULATION_FORCE_ENABLE", "perhaps")
        .env("VK_OVERLAP_EMULATION_NO_SUCH_KEY", "1"));
    o.assert_ok();
    assert!(o.stderr.contains("OVERLAP-Setting-Invalid"), "{}", o.stderr);
    assert!(o.stderr.contains("'force_enable' = 'perhaps'"), "{}", o.stderr);
    assert!(o.stderr.contains("OVERLAP-Setting-Unknown"), "{}", o.stderr);
    // The default (false) applies.
    assert_eq!(o.value("hook_owner.vkCmdDraw"), Some("libVkLayer_khronos_validation.so"));
    // Warnings reach the messenger chained at instance creation too.
    assert!(o.overlap_messages().contains(&"OVERLAP-Setting-Invalid"), "{:?}", o.overlap_messages());
}

#[test]
fn messages_reach_debug_utils_messengers_by_their_own_severity() {
    // stderr is silenced, but the app's messenger asked for INFO.
    let o = run(app(Layers::OverlapOverValidation, &["probe"]).env("VK_OVERLAP_EMULATION_LOG_LEVEL", "off"));
    o.assert_ok().assert_quiet();
    let ids = o.overlap_messages();
    assert!(ids.contains(&"OVERLAP-Instance-Created"), "{ids:?}");
    assert!(ids.contains(&"OVERLAP-Device-Plan"), "{ids:?}");
    // Without the layer, no such message exists.
    let o = run(&mut app(Layers::Validation, &["probe"]));
    assert!(o.overlap_messages().is_empty());
}

#[test]
fn log_level_info_reports_the_plan_on_stderr() {
    let o = run(app(Layers::OverlapOverValidation, &["probe"]).env("VK_OVERLAP_EMULATION_LOG_LEVEL", "info"));
    o.assert_ok();
    assert!(o.stderr.contains("OVERLAP-Device-Plan: llvmpipe"), "{}", o.stderr);
    assert!(o.stderr.contains("hooks: shader, layout and pipeline creation (varying linking)"), "{}", o.stderr);
}

/// The implicit manifest: loaded with OVERLAP=1, never with DISABLE_OVERLAP=1.
#[test]
fn implicit_manifest_enable_and_disable_environment() {
    let data = harness::scratch("xdg");
    let out = Command::new(harness::overlap_cli()).arg("install").env("XDG_DATA_HOME", &data).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let manifest = data.join("vulkan/implicit_layer.d/VkLayer_overlap.json");
    assert!(manifest.is_file());
    let cases =
        [(&[("OVERLAP", "1")][..], true), (&[][..], false), (&[("OVERLAP", "1"), ("DISABLE_OVERLAP", "1")][..], false)];
    for (vars, loaded) in cases {
        let mut cmd = app(Layers::Validation, &["probe"]);
        cmd.env("XDG_DATA_HOME", &data).env("VK_OVERLAP_EMULATION_LOG_LEVEL", "info");
        for (k, v) in vars {
            cmd.env(k, v);
        }
        let o = run(&mut cmd);
        o.assert_ok();
        assert_eq!(o.stderr.contains("OVERLAP-Instance-Created"), loaded, "{vars:?}:\n{}", o.stderr);
    }
    let out = Command::new(harness::overlap_cli()).arg("uninstall").env("XDG_DATA_HOME", &data).output().unwrap();
    assert!(out.status.success());
    assert!(!manifest.exists());
}

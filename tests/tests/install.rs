//! Installing the layer: `overlap install` / `uninstall` for a user and into a
//! prefix, the Debian package (`ci/package`), and the manifests against
//! Vulkan Configurator's layer schema (`manifest/schema/layers_schema.json`).
//!
//! Every check runs the real CLI and the real loader: installs go to scratch
//! folders named by `HOME`, `XDG_DATA_HOME` or `--prefix`, and whether the
//! layer loaded is read from what the device reports (lavapipe has no
//! `VK_EXT_fragment_shader_interlock`; with the layer it is listed and its
//! features are true) and from `overlap info`, which names the library the
//! loader mapped.

use overlap_tests::harness::{self, run, vk_command, Layers, Outcome};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

const LIBRARY: &str = "libVkLayer_overlap.so";
const MANIFEST: &str = "VkLayer_overlap.json";

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

/// A command in the clean test environment with `HOME` (and, if given,
/// `XDG_DATA_HOME`) set; `XDG_DATA_HOME` is removed otherwise. The system's
/// data folders are out of the loader's search (`XDG_DATA_DIRS`), so a copy
/// installed on this machine (the package) does not count.
fn with_home(program: impl AsRef<std::ffi::OsStr>, home: &Path, data: Option<&Path>) -> Command {
    let mut cmd = vk_command(program, Layers::None);
    cmd.env("HOME", home).env_remove("XDG_CONFIG_HOME").env("XDG_DATA_DIRS", home.join("no-system-data"));
    match data {
        Some(d) => cmd.env("XDG_DATA_HOME", d),
        None => cmd.env_remove("XDG_DATA_HOME"),
    };
    cmd
}

#[track_caller]
fn ok(o: Outcome) -> Outcome {
    assert_eq!(o.code, Some(0), "failed:\n--- stdout\n{}\n--- stderr\n{}", o.stdout, o.stderr);
    o
}

/// Every path under `dir` (relative), with each file's contents: what a
/// test compares before and after.
fn snapshot(dir: &Path) -> Vec<(PathBuf, Option<Vec<u8>>)> {
    fn walk(root: &Path, dir: &Path, out: &mut Vec<(PathBuf, Option<Vec<u8>>)>) {
        let Ok(entries) = std::fs::read_dir(dir) else { return };
        for e in entries {
            let p = e.unwrap().path();
            let rel = p.strip_prefix(root).unwrap().to_path_buf();
            if p.is_dir() {
                out.push((rel, None));
                walk(root, &p, out);
            } else {
                out.push((rel, Some(std::fs::read(&p).unwrap())));
            }
        }
    }
    let mut out = Vec::new();
    walk(dir, dir, &mut out);
    out.sort();
    out
}

fn names(s: &[(PathBuf, Option<Vec<u8>>)]) -> Vec<&Path> {
    s.iter().map(|(p, _)| p.as_path()).collect()
}

/// A throw-away "build tree": copies of the CLI and the library as cargo
/// leaves them in target/release.
fn build_tree() -> (PathBuf, PathBuf) {
    let root = harness::scratch("build-tree");
    let release = root.join("target/release");
    std::fs::create_dir_all(&release).unwrap();
    std::fs::copy(harness::overlap_cli(), release.join("overlap")).unwrap();
    std::fs::copy(harness::layer_library(), release.join(LIBRARY)).unwrap();
    (root, release.join("overlap"))
}

/// The device extensions vulkaninfo lists for the GPU (not the layer list,
/// which shows a manifest's `device_extensions` whether the layer loads or not).
fn device_extensions(vulkaninfo: &str) -> Vec<String> {
    let mut lines = vulkaninfo.lines().skip_while(|l| !l.starts_with("Device Extensions: count = "));
    lines.next();
    lines.next(); // the underline
    lines.take_while(|l| !l.trim().is_empty()).map(|l| l.split_whitespace().next().unwrap_or("").to_string()).collect()
}

/// vulkaninfo's `fragmentShaderPixelInterlock`, where it shows the structure.
fn pixel_interlock(vulkaninfo: &str) -> Option<bool> {
    let line = vulkaninfo.lines().skip_while(|l| *l != "VkPhysicalDeviceFragmentShaderInterlockFeaturesEXT:").nth(3)?;
    match line.split_whitespace().collect::<Vec<_>>()[..] {
        ["fragmentShaderPixelInterlock", "=", v] => Some(v == "true"),
        _ => None,
    }
}

/// vulkaninfo with `cmd`'s environment: whether the device offers the
/// emulated interlock with its features on, i.e. Overlap is active.
#[track_caller]
fn overlap_active(mut cmd: Command) -> bool {
    let o = ok(run(&mut cmd));
    let listed = device_extensions(&o.stdout).iter().any(|e| e == "VK_EXT_fragment_shader_interlock");
    let pixel = pixel_interlock(&o.stdout) == Some(true);
    assert_eq!(listed, pixel, "interlock listed without its features (or the reverse):\n{}", o.stdout);
    listed
}

fn vulkaninfo(home: &Path, data: Option<&Path>, vars: &[(&str, &str)]) -> Command {
    assert!(harness::have("vulkaninfo"), "vulkaninfo is missing: run ci/setup");
    let mut cmd = with_home("vulkaninfo", home, data);
    cmd.envs(vars.iter().copied());
    cmd
}

fn read_json(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))).unwrap()
}

/// `vkEnumerateInstanceVersion` as vulkaninfo reports it: (major, minor, patch).
fn loader_version() -> (u32, u32, u32) {
    let o = ok(run(vk_command("vulkaninfo", Layers::None).arg("--summary")));
    let v = o.stdout.lines().find_map(|l| l.strip_prefix("Vulkan Instance Version: "));
    let n: Vec<u32> = v.expect("instance version").trim().split('.').map(|x| x.parse().unwrap()).collect();
    (n[0], n[1], n[2])
}

fn loader_knows_layer_settings() -> bool {
    loader_version() >= (1, 3, 272)
}

/// The line `overlap info` ends with: which copy loads with OVERLAP=1.
fn info_loaded_line(cmd: &mut Command) -> String {
    let o = ok(run(cmd.arg("info")));
    o.stdout.lines().find(|l| l.starts_with("with OVERLAP=1")).unwrap_or_else(|| panic!("{}", o.stdout)).to_string()
}

#[test]
fn user_install_survives_the_build_tree_and_uninstall_leaves_nothing() {
    let home = harness::scratch("home");
    let before = snapshot(&home);
    // Nothing installed: nothing loads.
    assert_eq!(
        info_loaded_line(&mut with_home(harness::overlap_cli(), &home, None)),
        "with OVERLAP=1 no copy of the layer loads"
    );
    assert!(!overlap_active(vulkaninfo(&home, None, &[("OVERLAP", "1")])));

    // Install from a build tree, then delete the build tree.
    let (tree, cli) = build_tree();
    let o = ok(run(with_home(&cli, &home, None).arg("install")));
    let data = home.join(".local/share");
    let lib = data.join("overlap").join(LIBRARY);
    let manifest = data.join("vulkan/implicit_layer.d").join(MANIFEST);
    assert!(o.stdout.contains(&format!("installed {}", lib.display())), "{}", o.stdout);
    assert!(o.stdout.contains(&format!("installed {}", manifest.display())), "{}", o.stdout);
    assert!(std::fs::symlink_metadata(&lib).unwrap().file_type().is_file(), "a copy, not a link");
    assert_eq!(std::fs::read(&lib).unwrap(), std::fs::read(harness::layer_library()).unwrap());
    let m = read_json(&manifest);
    assert_eq!(m["layer"]["library_path"], lib.to_str().unwrap());
    assert_eq!(m["layer"]["enable_environment"]["OVERLAP"], "1");
    assert!(m["layer"].get("device_extensions").is_none());
    std::fs::remove_dir_all(&tree).unwrap();

    // The installed copy loads with OVERLAP=1, never without, never with DISABLE_OVERLAP=1.
    assert!(overlap_active(vulkaninfo(&home, None, &[("OVERLAP", "1")])));
    assert!(!overlap_active(vulkaninfo(&home, None, &[])));
    assert!(!overlap_active(vulkaninfo(&home, None, &[("OVERLAP", "1"), ("DISABLE_OVERLAP", "1")])));
    let probe = ok(run(with_home(harness::testapp(), &home, None)
        .arg("probe")
        .env("OVERLAP", "1")
        .env("VK_OVERLAP_EMULATION_FORCE_ENABLE", "true")));
    assert_eq!(probe.value("hook_owner.vkCmdDraw"), Some(LIBRARY));
    assert!(probe.value("instance_layers").unwrap().contains(harness::LAYER));
    // The copy that loads is the installed one, at this CLI's version.
    assert_eq!(
        info_loaded_line(&mut with_home(harness::overlap_cli(), &home, None)),
        format!(
            "with OVERLAP=1 this copy loads: {} (Overlap {}, the same version as this overlap)",
            lib.display(),
            env!("CARGO_PKG_VERSION")
        )
    );
    let info = ok(run(with_home(harness::overlap_cli(), &home, None).arg("info")));
    assert!(info.stdout.contains(&format!("  implicit {}", manifest.display())), "{}", info.stdout);
    assert!(
        info.stdout.contains(&format!("library {}: identical to this overlap's library", lib.display())),
        "{}",
        info.stdout
    );

    // Idempotent: a second install changes nothing.
    let installed = snapshot(&home);
    let inode = std::os::unix::fs::MetadataExt::ino(&std::fs::metadata(&lib).unwrap());
    let o = ok(run(with_home(harness::overlap_cli(), &home, None).arg("install")));
    assert!(o.stdout.contains(&format!("up to date {}", lib.display())), "{}", o.stdout);
    assert!(o.stdout.contains(&format!("up to date {}", manifest.display())), "{}", o.stdout);
    assert_eq!(snapshot(&home), installed);
    assert_eq!(std::os::unix::fs::MetadataExt::ino(&std::fs::metadata(&lib).unwrap()), inode);

    // Uninstall removes exactly that: the home folder is as it was.
    let o = ok(run(with_home(harness::overlap_cli(), &home, None).arg("uninstall")));
    assert!(o.stdout.contains(&format!("removed {}", lib.display())), "{}", o.stdout);
    assert_eq!(names(&snapshot(&home)), names(&before));
    let o = ok(run(with_home(harness::overlap_cli(), &home, None).arg("uninstall")));
    assert!(o.stdout.starts_with("not installed"), "{}", o.stdout);
}

#[test]
fn user_install_goes_to_xdg_data_home_and_keeps_what_others_put_there() {
    let home = harness::scratch("home");
    let data = home.join("xdg/data");
    // Another layer's manifest shares the folder: it stays, and so does the folder.
    let other = data.join("vulkan/implicit_layer.d/VkLayer_other.json");
    std::fs::create_dir_all(other.parent().unwrap()).unwrap();
    std::fs::write(&other, "{}").unwrap();
    let before = snapshot(&home);
    ok(run(with_home(harness::overlap_cli(), &home, Some(&data)).arg("install")));
    assert!(data.join("overlap").join(LIBRARY).is_file());
    assert!(data.join("vulkan/implicit_layer.d").join(MANIFEST).is_file());
    assert!(!home.join(".local").exists(), "XDG_DATA_HOME replaces ~/.local/share");
    assert!(overlap_active(vulkaninfo(&home, Some(&data), &[("OVERLAP", "1")])));
    ok(run(with_home(harness::overlap_cli(), &home, Some(&data)).arg("uninstall")));
    assert_eq!(snapshot(&home), before);
}

/// A new build replaces the copy by rename: a program that has the old one
/// mapped keeps reading the old file.
#[test]
fn reinstall_replaces_the_library_by_rename() {
    let home = harness::scratch("home");
    let cli = || with_home(harness::overlap_cli(), &home, None);
    ok(run(cli().arg("install")));
    let lib = home.join(".local/share/overlap").join(LIBRARY);
    let old = std::fs::File::open(&lib).unwrap();
    let old_inode = std::os::unix::fs::MetadataExt::ino(&old.metadata().unwrap());
    let old_bytes = std::fs::read(&lib).unwrap();

    // Another build: the same library with bytes appended (it still loads).
    let (tree, new_cli) = build_tree();
    let new_lib = new_cli.with_file_name(LIBRARY);
    let mut bytes = std::fs::read(&new_lib).unwrap();
    bytes.extend_from_slice(b"\0another build\0");
    std::fs::write(&new_lib, &bytes).unwrap();
    let o = ok(run(with_home(&new_cli, &home, None).arg("install")));
    assert!(o.stdout.contains(&format!("installed {}", lib.display())), "{}", o.stdout);
    std::fs::remove_dir_all(&tree).unwrap();

    assert_eq!(std::fs::read(&lib).unwrap(), bytes);
    assert_ne!(std::os::unix::fs::MetadataExt::ino(&std::fs::metadata(&lib).unwrap()), old_inode);
    // The old file, still open, is intact.
    let mut still = Vec::new();
    std::io::Read::read_to_end(&mut &old, &mut still).unwrap();
    assert_eq!(still, old_bytes);
    // No temporary file is left behind.
    let leftovers: Vec<_> = std::fs::read_dir(lib.parent().unwrap())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with('.'))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
    // The new copy loads; info says it is not this CLI's build.
    assert!(overlap_active(vulkaninfo(&home, None, &[("OVERLAP", "1")])));
    let info = ok(run(cli().arg("info")));
    assert!(
        info.stdout.contains(&format!("library {}: differs from this overlap's library", lib.display())),
        "{}",
        info.stdout
    );
    ok(run(cli().arg("uninstall")));
    assert!(snapshot(&home).is_empty());
}

/// `--prefix`: DIR/lib and DIR/share/vulkan, the manifest naming the library
/// relative to itself, so the tree still loads after it is moved.
#[test]
fn prefix_install_is_relocatable_and_uninstalls_cleanly() {
    let scratch = harness::scratch("prefix");
    let home = scratch.join("home");
    std::fs::create_dir(&home).unwrap();
    let before = snapshot(&scratch);
    let prefix = scratch.join("staging/usr");
    let o = ok(run(with_home(harness::overlap_cli(), &home, None).args([
        "install",
        "--prefix",
        prefix.to_str().unwrap(),
        "--libdir",
        "lib/x86_64-linux-gnu",
    ])));
    assert!(o.stdout.contains("note: the Vulkan loader does not search"), "{}", o.stdout);
    let lib = prefix.join("lib/x86_64-linux-gnu").join(LIBRARY);
    let manifest = prefix.join("share/vulkan/implicit_layer.d").join(MANIFEST);
    assert!(lib.is_file());
    assert_eq!(read_json(&manifest)["layer"]["library_path"], "../../../lib/x86_64-linux-gnu/libVkLayer_overlap.so");
    assert!(prefix.join("share/overlap/installed.json").is_file());

    // Moved elsewhere, found through XDG_DATA_DIRS: it loads.
    let moved = scratch.join("moved");
    std::fs::rename(scratch.join("staging"), &moved).unwrap();
    let share = moved.join("usr/share");
    assert!(overlap_active(vulkaninfo(&home, None, &[("OVERLAP", "1"), ("XDG_DATA_DIRS", share.to_str().unwrap())])));
    assert!(!overlap_active(vulkaninfo(&home, None, &[("XDG_DATA_DIRS", share.to_str().unwrap())])));
    std::fs::rename(&moved, scratch.join("staging")).unwrap();

    let o = ok(run(with_home(harness::overlap_cli(), &home, None).args([
        "uninstall",
        "--prefix",
        prefix.to_str().unwrap(),
    ])));
    assert!(o.stdout.contains(&format!("removed {}", manifest.display())), "{}", o.stdout);
    assert_eq!(snapshot(&scratch), before, "the folders install created are gone too");
}

/// `--explicit`: loads by name only, and replaces an implicit install at the
/// same place (one Overlap manifest per location).
#[test]
fn explicit_install_loads_by_name_and_replaces_the_implicit_one() {
    let home = harness::scratch("home");
    let cli = || with_home(harness::overlap_cli(), &home, None);
    let data = home.join(".local/share");
    ok(run(cli().arg("install")));
    let o = ok(run(cli().args(["install", "--explicit"])));
    let implicit = data.join("vulkan/implicit_layer.d").join(MANIFEST);
    let explicit = data.join("vulkan/explicit_layer.d").join(MANIFEST);
    assert!(o.stdout.contains(&format!("removed {}", implicit.display())), "{}", o.stdout);
    assert!(!implicit.exists() && explicit.is_file());
    let m = read_json(&explicit);
    assert!(m["layer"].get("enable_environment").is_none());
    assert_eq!(m["layer"]["instance_extensions"][0]["name"], "VK_EXT_layer_settings");
    assert!(m["layer"].get("device_extensions").is_none());

    assert!(!overlap_active(vulkaninfo(&home, None, &[("OVERLAP", "1")])));
    assert!(overlap_active(vulkaninfo(&home, None, &[("VK_INSTANCE_LAYERS", harness::LAYER)])));
    let probe = ok(run(with_home(harness::testapp(), &home, None)
        .arg("probe")
        .env("VK_INSTANCE_LAYERS", harness::LAYER)
        .env("VK_OVERLAP_EMULATION_FORCE_ENABLE", "true")));
    assert_eq!(probe.value("hook_owner.vkCmdDraw"), Some(LIBRARY));

    ok(run(cli().arg("uninstall")));
    assert!(snapshot(&home).is_empty());
}

/// A manifest left by the `overlap install` of before (it named the build
/// tree's library; no record): install replaces it, uninstall removes it.
#[test]
fn manifest_of_an_older_install_is_replaced_and_removed() {
    let home = harness::scratch("home");
    let cli = || with_home(harness::overlap_cli(), &home, None);
    let dir = home.join(".local/share/vulkan/implicit_layer.d");
    std::fs::create_dir_all(&dir).unwrap();
    let before = snapshot(&home);
    let stale = implicit_template().replace("\"@LIBRARY_PATH@\"", "\"/gone/target/release/libVkLayer_overlap.so\"");
    std::fs::write(dir.join(MANIFEST), &stale).unwrap();
    // Without a record, uninstall removes the old manifest.
    let o = ok(run(cli().arg("uninstall")));
    assert!(o.stdout.contains(&format!("removed {}", dir.join(MANIFEST).display())), "{}", o.stdout);
    assert_eq!(snapshot(&home), before);
    // Install over it: replaced, loads.
    std::fs::write(dir.join(MANIFEST), &stale).unwrap();
    ok(run(cli().arg("install")));
    assert!(overlap_active(vulkaninfo(&home, None, &[("OVERLAP", "1")])));
    ok(run(cli().arg("uninstall")));
    assert_eq!(snapshot(&home), before, "the folders that were there before stay");
}

fn implicit_template() -> String {
    std::fs::read_to_string(repo().join("manifest/VkLayer_overlap.json.in")).unwrap()
}

fn explicit_template_json() -> Value {
    serde_json::from_str(
        &std::fs::read_to_string(repo().join("manifest/VkLayer_overlap_explicit.json.in"))
            .unwrap()
            .replace("\"@LIBRARY_PATH@\"", "\"libVkLayer_overlap.so\""),
    )
    .unwrap()
}

#[test]
fn bad_install_arguments_exit_2() {
    for args in [
        &["install", "--prefix"][..],
        &["install", "--libdir", "lib"],
        &["install", "--bogus"],
        &["uninstall", "--explicit"],
        &["uninstall", "--prefix", "/tmp/x", "--libdir", "lib"],
    ] {
        let o = run(vk_command(harness::overlap_cli(), Layers::None).args(args));
        assert_eq!(o.code, Some(2), "{args:?}: {}", o.stderr);
        assert!(o.stderr.contains("usage:"), "{args:?}");
    }
}

/// The device extensions the layer adds on lavapipe (spec versions and
/// commands as in the registry): what a manifest's `device_extensions` would
/// list.
const LAYER_DEVICE_EXTENSIONS: [(&str, &str, &[&str]); 5] = [
    ("VK_EXT_fragment_density_map", "3", &[]),
    ("VK_EXT_fragment_density_map2", "1", &[]),
    ("VK_EXT_fragment_density_map_offset", "1", &["vkCmdEndRendering2EXT"]),
    ("VK_EXT_fragment_shader_interlock", "1", &[]),
    ("VK_QCOM_fragment_density_map_offset", "3", &[]),
];

/// Extensions whose registry entry is newer than this machine's `vk.xml`
/// (1.3.239): their versions and commands above are the Vulkan 1.4 headers'
/// (`VK_EXT_FRAGMENT_DENSITY_MAP_OFFSET_SPEC_VERSION 1` with
/// `vkCmdEndRendering2EXT`; `VK_QCOM_FRAGMENT_DENSITY_MAP_OFFSET_SPEC_VERSION 3`,
/// which also extends `VkRenderingEndInfoEXT`); the local registry may only
/// lack them or hold an older revision.
/// `VK_EXT_fragment_density_map` is at revision 3 (2025: the texel size's
/// floor), the local registry's at 2.
const NEWER_THAN_LOCAL_REGISTRY: [&str; 3] =
    ["VK_EXT_fragment_density_map", "VK_EXT_fragment_density_map_offset", "VK_QCOM_fragment_density_map_offset"];

/// `device_extensions` as the Khronos extension layers write them, with
/// their entry points.
fn device_extensions_json() -> Value {
    LAYER_DEVICE_EXTENSIONS
        .iter()
        .map(|(name, v, commands)| serde_json::json!({"name": name, "spec_version": v, "entrypoints": commands}))
        .collect()
}

/// What the layer adds is what `LAYER_DEVICE_EXTENSIONS` says, and the
/// registry gives those extensions these versions and no commands.
#[test]
fn layer_device_extensions_and_their_entry_points() {
    let list = |layers| -> Vec<String> {
        let o = ok(run(&mut harness::app(layers, &["probe"])));
        o.value("device_extensions").unwrap().split(',').map(str::to_string).collect()
    };
    let (with, without) = (list(Layers::Overlap), list(Layers::None));
    let added: Vec<&str> = with.iter().filter(|e| !without.contains(e)).map(String::as_str).collect();
    assert_eq!(added, LAYER_DEVICE_EXTENSIONS.map(|(n, ..)| n));
    let registry = std::fs::read_to_string("/usr/share/vulkan/registry/vk.xml").expect("vk.xml (libvulkan-dev)");
    for e in device_extensions_json().as_array().unwrap() {
        let name = e["name"].as_str().unwrap();
        let newer = NEWER_THAN_LOCAL_REGISTRY.contains(&name);
        let Some(start) = registry.find(&format!("<extension name=\"{name}\"")) else {
            assert!(newer, "{name} not in vk.xml");
            continue;
        };
        let block = &registry[start..start + registry[start..].find("</extension>").unwrap()];
        let commands: Vec<&str> = block.split("<command name=\"").skip(1).map(|c| &c[..c.find('"').unwrap()]).collect();
        let listed: Vec<&str> = e["entrypoints"].as_array().unwrap().iter().map(|x| x.as_str().unwrap()).collect();
        let spec = block.split("<enum ").map(|e| &e[..e.find('>').unwrap()]).find(|e| e.contains("_SPEC_VERSION\""));
        let version = spec.map(|e| {
            let v = &e[e.find("value=\"").unwrap() + 7..];
            &v[..v.find('"').unwrap()]
        });
        let ours = e["spec_version"].as_str().unwrap();
        if newer {
            // An older revision: no later version, no command ours lacks.
            assert!(version.is_some_and(|v| v <= ours), "{name}: vk.xml has {version:?}, the layer {ours}");
            assert!(commands.iter().all(|c| listed.contains(c)), "{name}");
            continue;
        }
        assert_eq!(listed, commands, "{name}");
        assert_eq!(Some(ours), version, "{name}");
    }
}

/// Why neither manifest lists `device_extensions` (an explicit layer here):
/// the loader then lets `vkCreateDevice` enable them without asking the
/// layer, so a device whose profile hides interlock (a6xx) no longer refuses
/// it with VK_ERROR_EXTENSION_NOT_PRESENT. Should the layer refuse such
/// extensions itself, this fails: the list can then go into the explicit
/// manifest.
#[test]
fn device_extensions_in_a_manifest_bypass_the_loaders_check() {
    let dir = harness::scratch("explicit-manifest");
    let mut m = explicit_template_json();
    m["layer"]["library_path"] = harness::layer_library().canonicalize().unwrap().to_str().unwrap().into();
    m["layer"]["device_extensions"] = device_extensions_json();
    std::fs::write(dir.join(MANIFEST), serde_json::to_string_pretty(&m).unwrap()).unwrap();
    let a6xx = |cmd: &mut Command| {
        let o = run(cmd.arg("interlock-features").env("VK_OVERLAP_EMULATION_ARCHITECTURE", "a6xx"));
        assert_eq!(o.value("enabled"), Some("false"), "{}", o.stdout);
        o.value("shading_rate_device").unwrap().to_string()
    };
    assert_eq!(a6xx(&mut harness::app(Layers::Overlap, &[])), "ERROR_EXTENSION_NOT_PRESENT");
    let mut listed = vk_command(harness::testapp(), Layers::None);
    listed.env("VK_INSTANCE_LAYERS", harness::LAYER).env("VK_ADD_LAYER_PATH", &dir);
    assert_ne!(a6xx(&mut listed), "ERROR_EXTENSION_NOT_PRESENT");
}

/// Why the installed manifests differ from the templates on this loader:
/// each left-out field, put back, breaks `OVERLAP=1` here. Should a loader stop
/// doing so, this says which workaround can go.
#[test]
fn installed_implicit_manifest_leaves_out_what_breaks_this_loader() {
    let home = harness::scratch("home");
    ok(run(with_home(harness::overlap_cli(), &home, None).arg("install")));
    let manifest = home.join(".local/share/vulkan/implicit_layer.d").join(MANIFEST);
    let installed = read_json(&manifest);
    let knows = loader_knows_layer_settings();
    assert_eq!(installed["layer"].get("instance_extensions").is_some(), knows);
    assert!(overlap_active(vulkaninfo(&home, None, &[("OVERLAP", "1")])));

    let with = |field: &str, value: Value| {
        let mut m = installed.clone();
        m["layer"][field] = value;
        std::fs::write(&manifest, serde_json::to_string_pretty(&m).unwrap()).unwrap();
    };
    // VK_EXT_layer_settings: a loader before 1.3.272 refuses it, and
    // vulkaninfo enables every instance extension listed.
    if !knows {
        with("instance_extensions", explicit_template_json()["layer"]["instance_extensions"].clone());
        let o = run(&mut vulkaninfo(&home, None, &[("OVERLAP", "1")]));
        assert_ne!(o.code, Some(0));
        assert!(
            o.stderr.contains("VK_EXT_layer_settings not found in list of known instance extensions"),
            "{}",
            o.stderr
        );
        std::fs::write(&manifest, serde_json::to_string_pretty(&installed).unwrap()).unwrap();
    }
    // device_extensions: the loader adds an implicit layer's to the driver's
    // list, so the layer finds interlock "native" and emulates nothing.
    with("device_extensions", device_extensions_json());
    let o = ok(run(&mut vulkaninfo(&home, None, &[("OVERLAP", "1"), ("VK_OVERLAP_EMULATION_LOG_LEVEL", "info")])));
    assert!(o.stderr.contains("fragment shader interlock: native (pass-through)"), "{}", o.stderr);
    assert!(device_extensions(&o.stdout).iter().any(|e| e == "VK_EXT_fragment_shader_interlock"));
    assert_eq!(pixel_interlock(&o.stdout), Some(false), "{}", o.stdout);
    ok(run(with_home(harness::overlap_cli(), &home, None).arg("uninstall")));
}

// ---------------------------------------------------------------------------
// The Debian package

/// The package ci/test built (`OVERLAP_DEB`), or one built now from the
/// binaries under test.
fn debian_package() -> PathBuf {
    if let Some(deb) = std::env::var_os("OVERLAP_DEB").filter(|d| !d.is_empty()) {
        return PathBuf::from(deb);
    }
    let out = harness::scratch("deb");
    let o = ok(run(Command::new(repo().join("ci/package")).args([
        "--no-build",
        "--bin-dir",
        harness::bin_dir().to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ])));
    PathBuf::from(o.stdout.lines().last().expect("ci/package prints the package's path"))
}

#[test]
fn debian_package_installs_and_the_layer_loads_from_it() {
    assert!(harness::have("dpkg-deb"), "dpkg-deb is missing");
    let deb = debian_package();
    let field = |name: &str| {
        let o = ok(run(Command::new("dpkg-deb").args(["--field"]).arg(&deb).arg(name)));
        o.stdout.trim().to_string()
    };
    assert_eq!(field("Package"), "overlap");
    assert_eq!(field("Version"), format!("{}-1", env!("CARGO_PKG_VERSION")));
    assert!(field("Depends").contains("libvulkan1"), "{}", field("Depends"));
    let listing = ok(run(Command::new("dpkg-deb").arg("--contents").arg(&deb))).stdout;
    let multiarch = ok(run(Command::new("gcc").arg("-print-multiarch"))).stdout.trim().to_string();
    let mut want = vec![
        format!("./usr/lib/{multiarch}/{LIBRARY}"),
        format!("./usr/share/vulkan/implicit_layer.d/{MANIFEST}"),
        "./usr/bin/overlap".to_string(),
        "./usr/share/man/man1/overlap.1.gz".to_string(),
        "./usr/share/doc/overlap/copyright".to_string(),
    ];
    for arch in ["gfx9", "gfx10", "gfx10_3", "gfx11", "a6xx", "a7xx"] {
        want.push(format!("./usr/share/overlap/profiles/VP_OVERLAP_{arch}.json"));
    }
    let files: Vec<&str> = listing.lines().filter(|l| !l.ends_with('/')).collect();
    for w in &want {
        assert!(files.iter().any(|l| l.ends_with(&format!(" {w}"))), "{w} missing from\n{listing}");
    }
    assert_eq!(files.len(), want.len(), "unexpected files (an install record?):\n{listing}");
    assert!(listing.lines().all(|l| l.contains(" root/root ")), "{listing}");

    // Into a throw-away root.
    let scratch = harness::scratch("deb-root");
    let root = scratch.join("root");
    ok(run(Command::new("dpkg-deb").arg("-x").arg(&deb).arg(&root)));
    let manifest = root.join("usr/share/vulkan/implicit_layer.d").join(MANIFEST);
    let m = read_json(&manifest);
    // Relative to the manifest: /usr/lib/<multiarch>/... once installed, the
    // extracted copy here.
    assert_eq!(m["layer"]["library_path"], format!("../../../lib/{multiarch}/{LIBRARY}"));
    assert_eq!(m["layer"]["enable_environment"]["OVERLAP"], "1");
    assert_eq!(m["layer"]["disable_environment"]["DISABLE_OVERLAP"], "1");
    let man = ok(run(Command::new("sh")
        .arg("-c")
        .arg("gzip -dc \"$0\" | head -1")
        .arg(root.join("usr/share/man/man1/overlap.1.gz"))));
    assert!(man.stdout.starts_with(".TH OVERLAP 1"), "{}", man.stdout);
    let help = ok(run(Command::new(root.join("usr/bin/overlap")).arg("--help")));
    assert!(help.stdout.contains("overlap install [--prefix DIR"), "{}", help.stdout);

    // The loader finds the package's manifest where it finds /usr/share's.
    let home = scratch.join("home");
    std::fs::create_dir(&home).unwrap();
    let share = root.join("usr/share");
    let env = |overlap: bool| {
        let mut vars = vec![("XDG_DATA_DIRS", share.to_str().unwrap().to_string())];
        if overlap {
            vars.push(("OVERLAP", "1".to_string()));
        }
        vars
    };
    let vi = |overlap: bool| {
        let mut cmd = with_home("vulkaninfo", &home, None);
        cmd.envs(env(overlap));
        cmd
    };
    assert!(overlap_active(vi(true)));
    assert!(!overlap_active(vi(false)));
    // The packaged CLI finds its library in ../lib/<multiarch>, and names the
    // copy the loader maps: the extracted one.
    let mut info = with_home(root.join("usr/bin/overlap"), &home, None);
    info.envs(env(false));
    let lib = root.join("usr/lib").join(&multiarch).join(LIBRARY).canonicalize().unwrap();
    assert_eq!(
        info_loaded_line(&mut info),
        format!(
            "with OVERLAP=1 this copy loads: {} (Overlap {}, the same version as this overlap)",
            lib.display(),
            env!("CARGO_PKG_VERSION")
        )
    );
    // `overlap run` from the package uses the packaged library too.
    let mut run_cmd = with_home(root.join("usr/bin/overlap"), &home, None);
    run_cmd.envs(env(false)).args(["run", "--set", "force_enable=true", "--"]).arg(harness::testapp()).arg("probe");
    let o = ok(run(&mut run_cmd));
    assert_eq!(o.value("hook_owner.vkCmdDraw"), Some(LIBRARY));
    // The package's files are dpkg's: `overlap uninstall --prefix` leaves them.
    let before = snapshot(&root);
    let o = ok(run(with_home(root.join("usr/bin/overlap"), &home, None)
        .args(["uninstall", "--prefix"])
        .arg(root.join("usr"))));
    assert!(o.stdout.starts_with("not installed"), "{}", o.stdout);
    assert_eq!(snapshot(&root), before);
}

// ---------------------------------------------------------------------------
// The manifests against Vulkan Configurator's schema

fn schema() -> Value {
    read_json(&repo().join("manifest/schema/layers_schema.json"))
}

/// Both templates as rendered for an install (absolute path, and the implicit
/// one as this loader gets it), plus the package's relative form.
fn manifests() -> Vec<(String, Value)> {
    let render = |file: &str, path: &str| -> Value {
        serde_json::from_str(
            &std::fs::read_to_string(repo().join("manifest").join(file))
                .unwrap()
                .replace("\"@LIBRARY_PATH@\"", &serde_json::to_string(path).unwrap()),
        )
        .unwrap()
    };
    let implicit = render("VkLayer_overlap.json.in", "/home/u/.local/share/overlap/libVkLayer_overlap.so");
    let mut without_settings_ext = implicit.clone();
    without_settings_ext["layer"].as_object_mut().unwrap().remove("instance_extensions");
    vec![
        ("implicit".into(), implicit),
        ("implicit, no VK_EXT_layer_settings".into(), without_settings_ext),
        (
            "explicit".into(),
            render("VkLayer_overlap_explicit.json.in", "../../../lib/x86_64-linux-gnu/libVkLayer_overlap.so"),
        ),
    ]
}

#[test]
fn manifests_validate_against_the_vulkan_configurator_schema() {
    let schema = schema();
    for (name, m) in manifests() {
        let errors = validate(&schema, &m);
        assert!(errors.is_empty(), "{name} manifest:\n{}", errors.join("\n"));
        // What the schema leaves open, by the loader's rules (loader 1.3.239,
        // loader_read_layer_json): extension names, spec versions as strings
        // (read with atoi), entry points as strings.
        let layer = &m["layer"];
        assert_eq!(layer["type"], "GLOBAL");
        for list in ["instance_extensions", "device_extensions"] {
            for e in layer.get(list).and_then(Value::as_array).into_iter().flatten() {
                assert!(regex_search("^VK_[A-Z0-9]+_[a-z0-9_]+$", e["name"].as_str().unwrap()), "{e}");
                assert!(regex_search("^[0-9]+$", e["spec_version"].as_str().unwrap()), "{e}");
                if list == "device_extensions" {
                    assert!(e["entrypoints"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .all(|x| x.as_str().is_some_and(|s| s.starts_with("vk"))));
                }
            }
        }
        for env in ["enable_environment", "disable_environment"] {
            for (_, v) in layer.get(env).and_then(Value::as_object).into_iter().flatten() {
                assert!(v.is_string(), "{env}: {v}");
            }
        }
        // Vulkan Configurator's own checks: enum defaults among the flags,
        // presets naming settings with values of their type.
        let settings = layer["features"]["settings"].as_array().unwrap();
        for s in settings {
            if s["type"] == "ENUM" {
                let keys: Vec<&Value> = s["flags"].as_array().unwrap().iter().map(|f| &f["key"]).collect();
                assert!(keys.contains(&&s["default"]), "{}", s["key"]);
            }
        }
        for p in layer["features"]["presets"].as_array().unwrap() {
            for ps in p["settings"].as_array().unwrap() {
                let s = settings
                    .iter()
                    .find(|s| s["key"] == ps["key"])
                    .unwrap_or_else(|| panic!("preset {}: {}", p["label"], ps["key"]));
                match s["type"].as_str().unwrap() {
                    "BOOL" => assert!(ps["value"].is_boolean()),
                    "ENUM" => assert!(s["flags"].as_array().unwrap().iter().any(|f| f["key"] == ps["value"]), "{ps}"),
                    _ => assert!(ps["value"].is_string()),
                }
            }
        }
    }
}

/// The validator is not a rubber stamp: each of these breaks a rule of the schema.
#[test]
fn schema_validator_rejects_what_the_schema_forbids() {
    let schema = schema();
    let (_, good) = manifests().remove(0);
    type Break = Box<dyn Fn(&mut Value)>;
    let cases: Vec<(&str, Break)> = vec![
        ("version pattern", Box::new(|m| m["file_format_version"] = "1.2".into())),
        ("layer name pattern", Box::new(|m| m["layer"]["name"] = "OVERLAP".into())),
        (
            "required description",
            Box::new(|m| {
                m["layer"].as_object_mut().unwrap().remove("description");
            }),
        ),
        ("platform enum", Box::new(|m| m["layer"]["platforms"] = serde_json::json!(["LINUX", "BEOS"]))),
        (
            "flag without description",
            Box::new(|m| {
                m["layer"]["features"]["settings"][0]["flags"][0].as_object_mut().unwrap().remove("description");
            }),
        ),
        ("BOOL default as a string", Box::new(|m| m["layer"]["features"]["settings"][1]["default"] = "false".into())),
        ("unknown setting property", Box::new(|m| m["layer"]["features"]["settings"][0]["lable"] = "x".into())),
        ("setting type", Box::new(|m| m["layer"]["features"]["settings"][0]["type"] = "CHOICE".into())),
        (
            "preset without settings",
            Box::new(|m| {
                m["layer"]["features"]["presets"][0].as_object_mut().unwrap().remove("settings");
            }),
        ),
        (
            "preset value type",
            Box::new(|m| m["layer"]["features"]["presets"][0]["settings"][0]["value"] = serde_json::json!({"x": 1})),
        ),
    ];
    assert!(validate(&schema, &good).is_empty());
    for (what, break_it) in cases {
        let mut m = good.clone();
        break_it(&mut m);
        assert!(!validate(&schema, &m).is_empty(), "{what}: accepted");
    }
}

/// Errors of `v` against the draft-07 `schema`, for the keywords the vendored
/// file uses; any other keyword panics, so a newer schema is never
/// half-checked.
fn validate(schema: &Value, v: &Value) -> Vec<String> {
    let mut errors = Vec::new();
    check(schema, schema, v, "$", &mut errors);
    errors
}

fn check(root: &Value, schema: &Value, v: &Value, at: &str, errors: &mut Vec<String>) {
    let s = match schema {
        Value::Bool(true) => return,
        Value::Bool(false) => return errors.push(format!("{at}: not allowed")),
        Value::Object(s) => s,
        _ => panic!("schema at {at} is not an object"),
    };
    if let Some(r) = s.get("$ref") {
        // draft-07: $ref replaces its siblings.
        let pointer = r.as_str().unwrap().strip_prefix('#').expect("local $ref");
        let target = root.pointer(pointer).unwrap_or_else(|| panic!("$ref {pointer}"));
        return check(root, target, v, at, errors);
    }
    for (k, sv) in s {
        match k.as_str() {
            "$schema" | "$id" | "title" | "description" | "examples" | "default" | "definitions" | "$comment" => {}
            "type" => {
                let types: Vec<&str> = match sv {
                    Value::String(t) => vec![t],
                    Value::Array(a) => a.iter().map(|t| t.as_str().unwrap()).collect(),
                    _ => panic!("type"),
                };
                if !types.iter().any(|t| has_type(v, t)) {
                    errors.push(format!("{at}: expected {types:?}, got {v}"));
                }
            }
            "enum" => {
                if !sv.as_array().unwrap().contains(v) {
                    errors.push(format!("{at}: {v} not in {sv}"));
                }
            }
            "const" => {
                if sv != v {
                    errors.push(format!("{at}: {v} is not {sv}"));
                }
            }
            "pattern" => {
                if let Some(text) = v.as_str() {
                    if !regex_search(sv.as_str().unwrap(), text) {
                        errors.push(format!("{at}: {text:?} does not match {sv}"));
                    }
                }
            }
            "required" => {
                if let Some(o) = v.as_object() {
                    for r in sv.as_array().unwrap() {
                        if !o.contains_key(r.as_str().unwrap()) {
                            errors.push(format!("{at}: required {r} missing"));
                        }
                    }
                }
            }
            "properties" => {
                if let Some(o) = v.as_object() {
                    for (name, ps) in sv.as_object().unwrap() {
                        if let Some(pv) = o.get(name) {
                            check(root, ps, pv, &format!("{at}.{name}"), errors);
                        }
                    }
                }
            }
            "additionalProperties" => {
                if let Some(o) = v.as_object() {
                    let known = s.get("properties").and_then(Value::as_object);
                    assert!(s.get("patternProperties").is_none());
                    for (name, pv) in o {
                        if !known.is_some_and(|k| k.contains_key(name)) {
                            check(root, sv, pv, &format!("{at}.{name}"), errors);
                        }
                    }
                }
            }
            "items" => {
                if let Some(a) = v.as_array() {
                    assert!(sv.is_object() || sv.is_boolean(), "tuple items at {at}");
                    for (i, item) in a.iter().enumerate() {
                        check(root, sv, item, &format!("{at}[{i}]"), errors);
                    }
                }
            }
            "contains" => {
                if let Some(a) = v.as_array() {
                    if !a.iter().any(|item| matches(root, sv, item)) {
                        errors.push(format!("{at}: no item matches {sv}"));
                    }
                }
            }
            "uniqueItems" => {
                if let (Some(true), Some(a)) = (sv.as_bool(), v.as_array()) {
                    for (i, x) in a.iter().enumerate() {
                        if a[..i].contains(x) {
                            errors.push(format!("{at}: {x} repeated"));
                        }
                    }
                }
            }
            "oneOf" => {
                let n = sv.as_array().unwrap().iter().filter(|alt| matches(root, alt, v)).count();
                if n != 1 {
                    errors.push(format!("{at}: {n} of oneOf's alternatives match (one must)"));
                }
            }
            "anyOf" => {
                if !sv.as_array().unwrap().iter().any(|alt| matches(root, alt, v)) {
                    errors.push(format!("{at}: no anyOf alternative matches"));
                }
            }
            "allOf" => {
                for alt in sv.as_array().unwrap() {
                    check(root, alt, v, at, errors);
                }
            }
            other => panic!("schema keyword {other:?} at {at} is not implemented by this validator"),
        }
    }
}

fn matches(root: &Value, schema: &Value, v: &Value) -> bool {
    let mut e = Vec::new();
    check(root, schema, v, "", &mut e);
    e.is_empty()
}

fn has_type(v: &Value, t: &str) -> bool {
    match t {
        "object" => v.is_object(),
        "array" => v.is_array(),
        "string" => v.is_string(),
        "boolean" => v.is_boolean(),
        "null" => v.is_null(),
        "number" => v.is_number(),
        "integer" => v.is_i64() || v.is_u64() || v.as_f64().is_some_and(|f| f.fract() == 0.0),
        _ => panic!("type {t}"),
    }
}

// A small regular-expression matcher for the schema's patterns (ECMA-262
// subset: ^ $ . [..] [^..] (..) | * + ? {m} {m,} {m,n} and \ escapes),
// searching anywhere in the text as JSON Schema's "pattern" does.

#[derive(Debug)]
enum Node {
    Char(char),
    Any,
    Class(bool, Vec<(char, char)>),
    Group(Vec<Vec<(Node, usize, usize)>>),
    Start,
    End,
}

fn parse_alt(p: &[char], i: &mut usize) -> Vec<Vec<(Node, usize, usize)>> {
    let mut alts = vec![Vec::new()];
    while *i < p.len() && p[*i] != ')' {
        let c = p[*i];
        *i += 1;
        let node = match c {
            '|' => {
                alts.push(Vec::new());
                continue;
            }
            '^' => Node::Start,
            '$' => Node::End,
            '.' => Node::Any,
            '(' => {
                let g = parse_alt(p, i);
                assert_eq!(p.get(*i), Some(&')'), "unclosed group");
                *i += 1;
                Node::Group(g)
            }
            '[' => {
                let neg = p[*i] == '^';
                if neg {
                    *i += 1;
                }
                let mut ranges = Vec::new();
                while p[*i] != ']' {
                    let mut a = p[*i];
                    if a == '\\' {
                        *i += 1;
                        a = p[*i];
                    }
                    *i += 1;
                    if p[*i] == '-' && p[*i + 1] != ']' {
                        ranges.push((a, p[*i + 1]));
                        *i += 2;
                    } else {
                        ranges.push((a, a));
                    }
                }
                *i += 1;
                Node::Class(neg, ranges)
            }
            '\\' => {
                let e = p[*i];
                *i += 1;
                assert!(!e.is_ascii_alphanumeric(), "escape \\{e} not implemented");
                Node::Char(e)
            }
            '*' | '+' | '?' | '{' => panic!("quantifier without an atom"),
            c => Node::Char(c),
        };
        let (min, max) = match p.get(*i) {
            Some('*') => (0, usize::MAX),
            Some('+') => (1, usize::MAX),
            Some('?') => (0, 1),
            Some('{') => {
                let end = *i + p[*i..].iter().position(|&c| c == '}').unwrap();
                let body: String = p[*i + 1..end].iter().collect();
                *i = end;
                match body.split_once(',') {
                    Some((a, "")) => (a.parse().unwrap(), usize::MAX),
                    Some((a, b)) => (a.parse().unwrap(), b.parse().unwrap()),
                    None => (body.parse().unwrap(), body.parse().unwrap()),
                }
            }
            _ => {
                alts.last_mut().unwrap().push((node, 1, 1));
                continue;
            }
        };
        *i += 1;
        alts.last_mut().unwrap().push((node, min, max));
    }
    alts
}

fn match_alts(alts: &[Vec<(Node, usize, usize)>], t: &[char], pos: usize, k: &mut dyn FnMut(usize) -> bool) -> bool {
    alts.iter().any(|seq| match_seq(seq, t, pos, k))
}

fn match_seq(seq: &[(Node, usize, usize)], t: &[char], pos: usize, k: &mut dyn FnMut(usize) -> bool) -> bool {
    let Some(((node, min, max), rest)) = seq.split_first() else { return k(pos) };
    match_rep(node, *min, *max, 0, t, pos, &mut |p| match_seq(rest, t, p, k))
}

/// Greedy repetition with backtracking; an empty iteration ends the loop.
fn match_rep(
    node: &Node,
    min: usize,
    max: usize,
    count: usize,
    t: &[char],
    pos: usize,
    k: &mut dyn FnMut(usize) -> bool,
) -> bool {
    if count < max && match_node(node, t, pos, &mut |p| p != pos && match_rep(node, min, max, count + 1, t, p, k)) {
        return true;
    }
    if count < min {
        // Zero-width atoms (anchors, empty groups) may still satisfy the minimum.
        return match_node(node, t, pos, &mut |p| p == pos && count + 1 >= min && k(p));
    }
    k(pos)
}

fn match_node(node: &Node, t: &[char], pos: usize, k: &mut dyn FnMut(usize) -> bool) -> bool {
    match node {
        Node::Start => pos == 0 && k(pos),
        Node::End => pos == t.len() && k(pos),
        Node::Any => pos < t.len() && t[pos] != '\n' && k(pos + 1),
        Node::Char(c) => t.get(pos) == Some(c) && k(pos + 1),
        Node::Class(neg, ranges) => {
            t.get(pos).is_some_and(|c| ranges.iter().any(|(a, b)| (a..=b).contains(&c)) != *neg) && k(pos + 1)
        }
        Node::Group(alts) => match_alts(alts, t, pos, k),
    }
}

fn regex_search(pattern: &str, text: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let mut i = 0;
    let alts = parse_alt(&p, &mut i);
    assert_eq!(i, p.len(), "unbalanced ) in {pattern}");
    let t: Vec<char> = text.chars().collect();
    (0..=t.len()).any(|start| match_alts(&alts, &t, start, &mut |_| true))
}

#[test]
fn pattern_matcher() {
    let version = "^[0-9]+.[0-9]+.[0-9]+$";
    assert!(regex_search(version, "1.2.0"));
    assert!(!regex_search(version, "1.2"));
    assert!(!regex_search(version, "1.2.0 "));
    let name = "^VK_LAYER_[A-Z0-9]+_[A-Za-z0-9_]+";
    assert!(regex_search(name, "VK_LAYER_OVERLAP_emulation"));
    assert!(!regex_search(name, "VK_LAYER_overlap_emulation"));
    assert!(!regex_search(name, "X_VK_LAYER_OVERLAP_emulation"));
    let frames = "^([0-9]+([-][0-9]+){0,2})(,([0-9]+([-][0-9]+){0,2}))*$";
    for good in ["76-82,75", "1", "1-2-3", "1,2,3-4"] {
        assert!(regex_search(frames, good), "{good}");
    }
    for bad in ["1-2-3-4", "a", "1,", ""] {
        assert!(!regex_search(frames, bad), "{bad}");
    }
    assert!(regex_search("b|^a$", "xb"));
    assert!(regex_search("[^0-9]", "1a"));
    assert!(regex_search("^a{2}b{1}$", "aab"));
    assert!(!regex_search("^a{2}b{1,}$", "ab"));
    assert!(!regex_search("^[^0-9]+$", "1a"));
}

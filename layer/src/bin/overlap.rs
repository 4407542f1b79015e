//! `overlap`: run Vulkan programs with the freshly built layer, install it,
//! and show what it would emulate.
//!
//! ```text
//! overlap run [--arch NAME] [--set KEY=VALUE]... -- CMD [ARGS]
//! overlap install | uninstall
//! overlap info [--arch NAME] [--set KEY=VALUE]...
//! ```

use ash::vk;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use VkLayer_overlap::manifest::{self, Kind};
use VkLayer_overlap::plan::{DriverFacts, Plan};
use VkLayer_overlap::settings::{self, RawSettings, Settings, LAYER_NAME};

const USAGE: &str = "usage:
  overlap run [--arch NAME] [--set KEY=VALUE]... -- CMD [ARGS]...
      run CMD with the layer beside this program active (nothing is installed)
  overlap install      install the implicit layer manifest for this user (enable with OVERLAP=1)
  overlap uninstall    remove it
  overlap info [--arch NAME] [--set KEY=VALUE]...
      list the Vulkan drivers and what Overlap would emulate on each
  overlap link-varyings PRODUCER.spv CONSUMER.spv [--level safe|full] [--uniforms-visible] [--json] [-o DIR]
      link a vertex shader's outputs to a fragment shader's inputs and report";

fn usage_error(msg: &str) -> ExitCode {
    eprintln!("overlap: {msg}\n{USAGE}");
    ExitCode::from(2)
}

/// `println!` for the CLI's output: a reader that closes the pipe early
/// (`overlap link-varyings VS FS | head -1`) ends the program quietly, as
/// command-line tools do, instead of a panic with a backtrace.
macro_rules! say {
    ($($t:tt)*) => {
        say_line(format_args!($($t)*))
    };
}

fn say_line(line: std::fmt::Arguments<'_>) {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    if let Err(e) = writeln!(out, "{line}").and_then(|_| out.flush()) {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            std::process::exit(0);
        }
        eprintln!("overlap: cannot write the output: {e}");
        std::process::exit(1);
    }
}

fn main() -> ExitCode {
    let args: Vec<OsString> = std::env::args_os().skip(1).collect();
    let Some(cmd) = args.first().and_then(|a| a.to_str()) else {
        return usage_error("no command given");
    };
    match cmd {
        "run" => run(&args[1..]),
        "install" if args.len() == 1 => install(),
        "uninstall" if args.len() == 1 => uninstall(),
        "info" => info(&args[1..]),
        "link-varyings" => link_varyings(&args[1..]),
        "-h" | "--help" | "help" => {
            say!("{USAGE}");
            ExitCode::SUCCESS
        }
        "install" | "uninstall" => usage_error(&format!("'{cmd}' takes no arguments")),
        _ => usage_error(&format!("unknown command '{cmd}'")),
    }
}

/// `--arch NAME` and `--set KEY=VALUE` options, checked against the settings
/// table, as (environment variable, value) pairs. Returns the rest.
/// (environment variable, value) pairs.
type SettingEnv = Vec<(String, String)>;

fn parse_settings(args: &[OsString]) -> Result<(SettingEnv, &[OsString]), String> {
    let mut env = Vec::new();
    let mut i = 0;
    while i < args.len() {
        let a = args[i].to_str().unwrap_or("");
        let (key, value) = match a {
            "--arch" => (
                "architecture".to_string(),
                args.get(i + 1).and_then(|v| v.to_str()).ok_or("--arch needs a NAME")?.to_string(),
            ),
            "--set" => {
                let kv = args.get(i + 1).and_then(|v| v.to_str()).ok_or("--set needs KEY=VALUE")?;
                let (k, v) = kv.split_once('=').ok_or_else(|| format!("--set {kv}: expected KEY=VALUE"))?;
                (k.to_string(), v.to_string())
            }
            _ => break,
        };
        let def = settings::find_def(&key).ok_or_else(|| {
            let keys: Vec<&str> = settings::SETTINGS.iter().map(|d| d.key).collect();
            format!("unknown setting '{key}' (known: {})", keys.join(", "))
        })?;
        if let settings::Kind::Enum(values) = def.kind {
            if !values.contains(&value.to_ascii_lowercase().as_str()) {
                return Err(format!("'{value}' is not a valid {key} (one of {})", values.join(", ")));
            }
        }
        env.push((settings::env_name(&key), value));
        i += 2;
    }
    Ok((env, &args[i..]))
}

/// The layer library built beside this program.
fn library() -> Result<PathBuf, String> {
    let exe = std::env::current_exe().map_err(|e| format!("cannot find this program's path: {e}"))?;
    let lib = exe.parent().unwrap_or(Path::new(".")).join(manifest::LIBRARY_FILE_NAME);
    if lib.is_file() {
        Ok(lib)
    } else {
        Err(format!("{} not found (build it with cargo build --release)", lib.display()))
    }
}

fn prepend_path(var: &str, dir: &Path, sep: &str) -> OsString {
    let mut v = OsString::from(dir.as_os_str());
    if let Some(old) = std::env::var_os(var).filter(|o| !o.is_empty()) {
        v.push(sep);
        v.push(old);
    }
    v
}

fn run(args: &[OsString]) -> ExitCode {
    let (env, rest) = match parse_settings(args) {
        Ok(x) => x,
        Err(e) => return usage_error(&e),
    };
    let Some(first) = rest.first() else {
        return usage_error("run: missing '-- CMD'");
    };
    if first != "--" {
        return usage_error(&format!("run: unexpected '{}' (options, then -- CMD)", first.to_string_lossy()));
    }
    let Some(program) = rest.get(1) else {
        return usage_error("run: no command after --");
    };
    let lib = match library() {
        Ok(l) => l,
        Err(e) => {
            eprintln!("overlap: {e}");
            return ExitCode::from(1);
        }
    };
    let dir = std::env::temp_dir().join(format!("overlap-run-{}", std::process::id()));
    if let Err(e) = manifest::write(Kind::Explicit, &lib, &dir) {
        eprintln!("overlap: cannot write the layer manifest in {}: {e}", dir.display());
        return ExitCode::from(1);
    }
    let mut cmd = Command::new(program);
    cmd.args(&rest[2..])
        // The loader finds the manifest here and enables the layer.
        .env("VK_ADD_LAYER_PATH", prepend_path("VK_ADD_LAYER_PATH", &dir, ":"))
        .env("VK_LOADER_LAYERS_ENABLE", {
            let mut v = OsString::from(LAYER_NAME);
            if let Some(old) = std::env::var_os("VK_LOADER_LAYERS_ENABLE").filter(|o| !o.is_empty()) {
                v.push(",");
                v.push(old);
            }
            v
        })
        // An installed implicit copy must not load a second time.
        .env("DISABLE_OVERLAP", "1");
    for (k, v) in &env {
        cmd.env(k, v);
    }
    let status = cmd.status();
    let _ = std::fs::remove_dir_all(&dir);
    match status {
        Ok(s) => match s.code() {
            Some(c) => ExitCode::from(c as u8),
            None => {
                use std::os::unix::process::ExitStatusExt;
                ExitCode::from(128 + s.signal().unwrap_or(0) as u8)
            }
        },
        Err(e) => {
            eprintln!("overlap: cannot run {}: {e}", program.to_string_lossy());
            ExitCode::from(127)
        }
    }
}

fn install() -> ExitCode {
    let result = (|| -> Result<PathBuf, String> {
        let lib = library()?.canonicalize().map_err(|e| e.to_string())?;
        let dir = manifest::user_implicit_dir().ok_or("neither XDG_DATA_HOME nor HOME is set")?;
        manifest::write(Kind::Implicit, &lib, &dir).map_err(|e| format!("cannot write in {}: {e}", dir.display()))
    })();
    match result {
        Ok(path) => {
            say!("installed {path}\nenable it with OVERLAP=1; DISABLE_OVERLAP=1 turns it off", path = path.display());
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("overlap: install: {e}");
            ExitCode::from(1)
        }
    }
}

fn uninstall() -> ExitCode {
    let Some(dir) = manifest::user_implicit_dir() else {
        eprintln!("overlap: uninstall: neither XDG_DATA_HOME nor HOME is set");
        return ExitCode::from(1);
    };
    let path = dir.join(manifest::MANIFEST_FILE_NAME);
    match std::fs::remove_file(&path) {
        Ok(()) => {
            say!("removed {}", path.display());
            ExitCode::SUCCESS
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            say!("not installed ({} does not exist)", path.display());
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("overlap: uninstall: cannot remove {}: {e}", path.display());
            ExitCode::from(1)
        }
    }
}

fn info(args: &[OsString]) -> ExitCode {
    let (env, rest) = match parse_settings(args) {
        Ok(x) => x,
        Err(e) => return usage_error(&e),
    };
    if let Some(extra) = rest.first() {
        return usage_error(&format!("info: unexpected '{}'", extra.to_string_lossy()));
    }
    // The options override the environment, as they would under `run`.
    // SAFETY: single-threaded here, before the loader is loaded.
    for (k, v) in &env {
        std::env::set_var(k, v);
    }
    // Ask the drivers themselves, not an installed copy of the layer.
    std::env::set_var("DISABLE_OVERLAP", "1");
    let (settings, diagnostics) = RawSettings::gather(Vec::new()).resolve();
    for d in diagnostics {
        eprintln!("overlap: warning {}: {}", d.id, d.message);
    }
    match query_drivers(&settings) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("overlap: info: {e}");
            ExitCode::from(1)
        }
    }
}

fn query_drivers(settings: &Settings) -> Result<(), String> {
    let entry = unsafe { ash::Entry::load() }.map_err(|e| format!("cannot load the Vulkan loader: {e}"))?;
    let api = unsafe { entry.try_enumerate_instance_version() }.ok().flatten().unwrap_or(vk::API_VERSION_1_0);
    let app = vk::ApplicationInfo::default().api_version(api).application_name(c"overlap info");
    let instance = unsafe { entry.create_instance(&vk::InstanceCreateInfo::default().application_info(&app), None) }
        .map_err(|e| format!("vkCreateInstance failed: {e:?}"))?;
    let pds = unsafe { instance.enumerate_physical_devices() }.unwrap_or_default();
    say!("Overlap {} (layer {LAYER_NAME})", env!("CARGO_PKG_VERSION"));
    say!(
        "settings: architecture={} interlock_strategy={} fdm={} varyings={} force_enable={}",
        settings.architecture,
        settings.interlock_strategy,
        settings.fdm,
        settings.varyings,
        settings.force_enable
    );
    say!("Vulkan drivers found: {}", pds.len());
    for (i, pd) in pds.iter().enumerate() {
        let facts = unsafe { DriverFacts::query(&instance, api, *pd) };
        let (profile, error) = VkLayer_overlap::profile::for_settings(settings);
        if let Some(e) = error {
            eprintln!("overlap: error OVERLAP-Profile-Invalid: {e}; running as native");
        }
        let plan = Plan::new(settings, &facts, profile);
        say!(
            "[{i}] {} — driver {} ({}), Vulkan {}.{}.{}",
            facts.device_name,
            if facts.driver_name.is_empty() { "unknown" } else { &facts.driver_name },
            facts.driver_id.map(|d| format!("{d:?}")).unwrap_or_else(|| "no driver id".into()),
            vk::api_version_major(facts.api_version),
            vk::api_version_minor(facts.api_version),
            vk::api_version_patch(facts.api_version)
        );
        if let Some(p) = &plan.profile {
            say!("    architecture              : {} ({}, {})", p.arch, p.name, p.label);
        }
        say!("    fragment shader interlock : {}", plan.interlock);
        say!("    fragment shading rate     : {}", plan.shading_rate);
        say!("    fragment density map      : {}", plan.fdm);
        say!("    varying linking           : {}", plan.varyings);
        say!(
            "    device hooks              : {}",
            if plan.force_hooks {
                "all, on every device (force_enable)"
            } else if plan.emulates_anything() {
                "shader creation and more, on devices that enable an emulated extension (spinlock interlock: also binds and draws; density map: resources, barriers, render passes and the commands inside them)"
            } else if plan.varyings_level().is_some() {
                "shader, layout and pipeline creation (varying linking), on every device; commands go straight to the driver"
            } else if plan.forces_one_by_one_with_interlock() {
                "shader and pipeline creation and pipeline binds, on devices that enable VK_KHR_fragment_shading_rate (1x1 with interlock)"
            } else {
                "none (every command goes straight to the driver)"
            }
        );
        for c in &plan.clamped {
            say!("    clamped                   : {c}");
        }
    }
    unsafe { instance.destroy_instance(None) };
    Ok(())
}

fn link_varyings(args: &[OsString]) -> ExitCode {
    use overlap_shaders::varyings::{link_with, Level, LinkEnv};
    let mut files = Vec::new();
    let (mut level, mut json, mut out_dir) = (Level::Safe, false, None);
    let mut env = LinkEnv::default();
    let mut i = 0;
    while i < args.len() {
        match args[i].to_str().unwrap_or("") {
            "--level" => {
                level = match args.get(i + 1).and_then(|v| v.to_str()) {
                    Some("safe") => Level::Safe,
                    Some("full") => Level::Full,
                    _ => return usage_error("--level takes safe or full"),
                };
                i += 1;
            }
            "--json" => json = true,
            "--uniforms-visible" => env.all_visible = true,
            "-o" => {
                let Some(d) = args.get(i + 1) else { return usage_error("-o needs a folder") };
                out_dir = Some(PathBuf::from(d));
                i += 1;
            }
            a if a.starts_with('-') => return usage_error(&format!("link-varyings: unknown option '{a}'")),
            _ => files.push(PathBuf::from(&args[i])),
        }
        i += 1;
    }
    let [producer_path, consumer_path] = files.as_slice() else {
        return usage_error("link-varyings takes PRODUCER.spv CONSUMER.spv");
    };
    let load = |p: &Path| -> Result<rspirv::dr::Module, String> {
        let bytes = std::fs::read(p).map_err(|e| format!("{}: {e}", p.display()))?;
        overlap_shaders::parse_bytes(&bytes).map_err(|e| format!("{}: {e}", p.display()))
    };
    let (mut producer, mut consumer) = match (load(producer_path), load(consumer_path)) {
        (Ok(p), Ok(c)) => (p, c),
        (Err(e), _) | (_, Err(e)) => {
            eprintln!("overlap: {e}");
            return ExitCode::from(1);
        }
    };
    let report = match link_with(&mut producer, &mut consumer, level, &env) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("overlap: link-varyings: {e}");
            return ExitCode::from(1);
        }
    };
    if let Some(dir) = out_dir {
        let write = |name: &Path, m: &rspirv::dr::Module| -> std::io::Result<()> {
            let words = overlap_shaders::assemble(m);
            let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
            std::fs::create_dir_all(&dir)?;
            std::fs::write(dir.join(name.file_name().unwrap_or(name.as_os_str())), bytes)
        };
        if let Err(e) = write(producer_path, &producer).and_then(|_| write(consumer_path, &consumer)) {
            eprintln!("overlap: cannot write into {}: {e}", dir.display());
            return ExitCode::from(1);
        }
    }
    if json {
        // Both sides of the interface change together: one location set.
        let side = serde_json::json!({
            "locations_before": report.locations_before,
            "locations_after": report.locations_after,
            "components_before": report.components_before,
            "components_after": report.components_after,
        });
        let doc = serde_json::json!({
            "producer": side,
            "consumer": side,
            "removed_dead": report.removed_dead,
            "propagated_constants": report.propagated_constants,
            "propagated_uniforms": report.propagated_uniforms,
            "deduplicated": report.deduplicated,
            "narrowed": report.narrowed,
            "moved_sums": report.moved_sums,
            "moved_constant_ops": report.moved_constant_ops,
            "relocated": report.relocated,
            "packed": report.packed,
            "notes": report.notes,
        });
        say!("{}", serde_json::to_string_pretty(&doc).unwrap());
    } else {
        say!(
            "locations {} -> {}, scalar components {} -> {}",
            report.locations_before,
            report.locations_after,
            report.components_before,
            report.components_after
        );
        say!("dead outputs removed at locations {:?}", report.removed_dead);
        say!("constants moved to the consumer from locations {:?}", report.propagated_constants);
        say!("uniform expressions moved to the consumer from locations {:?}", report.propagated_uniforms);
        say!("deduplicated (removed, kept) {:?}", report.deduplicated);
        say!("narrowed (location, components before, after) {:?}", report.narrowed);
        say!("sums moved to the producer (kept, removed) {:?}", report.moved_sums);
        say!("operations with constants moved to the producer, by input location {:?}", report.moved_constant_ops);
        say!("relocated (old, new) {:?}", report.relocated);
        say!("packed (old, new, component) {:?}", report.packed);
        for n in &report.notes {
            say!("note: {n}");
        }
    }
    ExitCode::SUCCESS
}

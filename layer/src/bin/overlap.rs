//! `overlap`: run Vulkan programs with the freshly built layer, install it,
//! and show what it would emulate.
//!
//! ```text
//! overlap run [--arch NAME] [--set KEY=VALUE]... -- CMD [ARGS]
//! overlap install [--prefix DIR [--libdir DIR]] [--explicit]
//! overlap uninstall [--prefix DIR]
//! overlap info [--arch NAME] [--set KEY=VALUE]...
//! ```

#![deny(unsafe_op_in_unsafe_fn)]

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
  overlap install [--prefix DIR [--libdir DIR]] [--explicit]
      copy the layer library and write its manifest: for this user, the library to
      $XDG_DATA_HOME/overlap (default ~/.local/share/overlap) and the manifest to
      $XDG_DATA_HOME/vulkan/implicit_layer.d; with --prefix, to DIR/lib (DIR/LIBDIR)
      and DIR/share/vulkan/implicit_layer.d, the manifest naming the library relative
      to itself. Enable it with OVERLAP=1. --explicit writes the explicit manifest
      (explicit_layer.d): enable it by name, VK_INSTANCE_LAYERS=VK_LAYER_OVERLAP_emulation.
      Running it again updates the copy in place.
  overlap uninstall [--prefix DIR]
      remove exactly what install put there
  overlap info [--arch NAME] [--set KEY=VALUE]...
      list the Vulkan drivers, what Overlap would emulate on each, the installed
      copies and which one loads with OVERLAP=1
  overlap link-varyings PRODUCER.spv CONSUMER.spv [--level safe|full] [--uniforms-visible] [--as-spelled] [--json] [-o DIR]
  overlap link-varyings VERT.spv [TESC.spv TESE.spv] [GEOM.spv] FRAG.spv ...   (every adjacent pair, the last first)
      link each stage's outputs to the next stage's inputs and report";

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
        "install" => install_command("install", &args[1..], install_with),
        "uninstall" => install_command("uninstall", &args[1..], uninstall_with),
        "info" => info(&args[1..]),
        // Run by `overlap info` in a child process: which copy the loader maps.
        LOADED_LAYER_PROBE => loaded_layer_probe(),
        "link-varyings" => link_varyings(&args[1..]),
        "-h" | "--help" | "help" => {
            say!("{USAGE}");
            ExitCode::SUCCESS
        }
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

/// The layer library that goes with this program: beside it (the build
/// tree), or in `../lib/<multiarch>` or `../lib` (a package or `--prefix`
/// install: `/usr/bin/overlap`, `/usr/lib/x86_64-linux-gnu/libVkLayer_overlap.so`).
fn library() -> Result<PathBuf, String> {
    let exe = std::env::current_exe().map_err(|e| format!("cannot find this program's path: {e}"))?;
    let dir = exe.parent().unwrap_or(Path::new("."));
    let beside = dir.join(manifest::LIBRARY_FILE_NAME);
    let mut candidates = vec![beside.clone()];
    if !manifest::MULTIARCH.is_empty() {
        candidates.push(dir.join("../lib").join(manifest::MULTIARCH).join(manifest::LIBRARY_FILE_NAME));
    }
    candidates.push(dir.join("../lib").join(manifest::LIBRARY_FILE_NAME));
    candidates
        .into_iter()
        .find(|p| p.is_file())
        .ok_or_else(|| format!("{} not found (build it with cargo build --release)", beside.display()))
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

// ---------------------------------------------------------------------------
// install / uninstall
//
// A user install (no --prefix) puts, under the user data folder <data>
// ($XDG_DATA_HOME, or ~/.local/share):
//   <data>/overlap/libVkLayer_overlap.so                 a copy of the library
//   <data>/vulkan/implicit_layer.d/VkLayer_overlap.json  naming it by absolute path
//   <data>/overlap/installed.json                        what was installed
// `--prefix DIR` puts the library in DIR/lib (DIR/LIBDIR with --libdir), the
// manifest in DIR/share/vulkan/implicit_layer.d naming the library relative to
// itself (so the tree can be staged for a package or moved), and the record in
// DIR/share/overlap. `--explicit` writes the manifest to explicit_layer.d.
// Files are written under a temporary name in their folder and renamed over
// the old one, so a program that has the old library mapped keeps its copy.
// The record lists the files and the folders install created; uninstall
// removes those files and, of those folders, the ones left empty.

/// Where an install goes.
struct Layout {
    /// The folder holding `implicit_layer.d` and `explicit_layer.d`.
    vulkan_dir: PathBuf,
    lib_dir: PathBuf,
    record: PathBuf,
    /// The manifest names the library relative to itself (`--prefix`).
    relative: bool,
}

impl Layout {
    fn manifest(&self, kind: Kind) -> PathBuf {
        self.vulkan_dir.join(kind.folder()).join(manifest::MANIFEST_FILE_NAME)
    }
}

struct InstallOptions {
    prefix: Option<PathBuf>,
    libdir: Option<PathBuf>,
    kind: Kind,
}

fn parse_install_options(cmd: &str, args: &[OsString]) -> Result<InstallOptions, String> {
    let mut opts = InstallOptions { prefix: None, libdir: None, kind: Kind::Implicit };
    let mut i = 0;
    while i < args.len() {
        let a = args[i].to_str().unwrap_or("");
        match a {
            "--prefix" | "--libdir" => {
                let v = args.get(i + 1).filter(|v| !v.is_empty()).ok_or(format!("{cmd}: {a} needs a folder"))?;
                let slot = if a == "--prefix" { &mut opts.prefix } else { &mut opts.libdir };
                *slot = Some(PathBuf::from(v));
                i += 1;
            }
            "--explicit" if cmd == "install" => opts.kind = Kind::Explicit,
            _ => return Err(format!("{cmd}: unexpected '{}'", args[i].to_string_lossy())),
        }
        i += 1;
    }
    if opts.libdir.is_some() && (opts.prefix.is_none() || cmd == "uninstall") {
        return Err(format!("{cmd}: --libdir goes with install --prefix"));
    }
    Ok(opts)
}

fn layout(opts: &InstallOptions) -> Result<Layout, String> {
    match &opts.prefix {
        None => {
            let data = manifest::user_data_dir().ok_or("neither XDG_DATA_HOME nor HOME is set")?;
            Ok(Layout {
                vulkan_dir: data.join("vulkan"),
                lib_dir: data.join("overlap"),
                record: data.join("overlap").join(manifest::RECORD_FILE_NAME),
                relative: false,
            })
        }
        Some(prefix) => {
            let prefix = std::path::absolute(prefix).map_err(|e| format!("{}: {e}", prefix.display()))?;
            let lib_dir = prefix.join(opts.libdir.as_deref().unwrap_or(Path::new("lib")));
            Ok(Layout {
                vulkan_dir: prefix.join("share/vulkan"),
                lib_dir,
                record: prefix.join("share/overlap").join(manifest::RECORD_FILE_NAME),
                relative: true,
            })
        }
    }
}

/// What an install put where (`installed.json`).
struct Record {
    version: String,
    kind: Kind,
    library: PathBuf,
    manifest: PathBuf,
    /// Folders the install created, to remove when empty.
    created_dirs: Vec<PathBuf>,
}

impl Record {
    fn read(path: &Path) -> Result<Option<Record>, String> {
        let text = match std::fs::read_to_string(path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(format!("cannot read {}: {e}", path.display())),
        };
        let bad = || format!("{} is not an Overlap install record (remove it to go on)", path.display());
        let v: serde_json::Value = serde_json::from_str(&text).map_err(|_| bad())?;
        let s = |k: &str| v[k].as_str().map(str::to_string).ok_or_else(bad);
        let kind = match s("kind")?.as_str() {
            "implicit" => Kind::Implicit,
            "explicit" => Kind::Explicit,
            _ => return Err(bad()),
        };
        let created_dirs = v["created_dirs"]
            .as_array()
            .ok_or_else(bad)?
            .iter()
            .map(|d| d.as_str().map(PathBuf::from).ok_or_else(bad))
            .collect::<Result<_, _>>()?;
        Ok(Some(Record {
            version: s("overlap_version")?,
            kind,
            library: PathBuf::from(s("library")?),
            manifest: PathBuf::from(s("manifest")?),
            created_dirs,
        }))
    }

    fn to_json(&self) -> String {
        let doc = serde_json::json!({
            "overlap_version": self.version,
            "kind": self.kind.name(),
            "library": self.library,
            "manifest": self.manifest,
            "created_dirs": self.created_dirs,
        });
        serde_json::to_string_pretty(&doc).unwrap() + "\n"
    }
}

/// Creates `dir` and its missing parents, adding each one created to `created`.
fn create_dirs(dir: &Path, created: &mut Vec<PathBuf>) -> Result<(), String> {
    let mut missing = Vec::new();
    let mut d = Some(dir);
    while let Some(p) = d.filter(|p| !p.as_os_str().is_empty() && !p.exists()) {
        missing.push(p.to_path_buf());
        d = p.parent();
    }
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    for m in missing.into_iter().rev() {
        if !created.contains(&m) {
            created.push(m);
        }
    }
    Ok(())
}

/// Writes `bytes` to `dest` through a temporary file in the same folder and a
/// rename (a program with the old file open or mapped keeps the old one).
/// Returns false, touching nothing, when `dest` already holds `bytes`.
fn write_atomically(dest: &Path, bytes: &[u8]) -> Result<bool, String> {
    use std::io::Write;
    use std::os::unix::fs::PermissionsExt;
    if std::fs::read(dest).is_ok_and(|old| old == bytes) {
        return Ok(false);
    }
    let name = dest.file_name().unwrap_or_default().to_string_lossy();
    let tmp = dest.with_file_name(format!(".{name}.tmp-{}", std::process::id()));
    let result = (|| -> std::io::Result<()> {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(bytes)?;
        f.set_permissions(std::fs::Permissions::from_mode(0o644))?;
        f.sync_all()?;
        std::fs::rename(&tmp, dest)
    })();
    result.map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        format!("cannot write {}: {e}", dest.display())
    })?;
    Ok(true)
}

/// Whether `path` is a layer manifest naming this layer.
fn is_overlap_manifest(path: &Path) -> bool {
    std::fs::read_to_string(path)
        .ok()
        .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
        .is_some_and(|v| v["layer"]["name"] == LAYER_NAME)
}

/// The Vulkan loader's version (`vkEnumerateInstanceVersion`), if one loads.
fn loader_version() -> Option<u32> {
    // SAFETY: ash's `Entry::load` contract: the library it opens is the
    // system's Vulkan loader, whose initialisers are trusted, and `entry`
    // outlives every object made through it.
    let entry = unsafe { ash::Entry::load() }.ok()?;
    // SAFETY: a global command with ash's own valid output pointer
    // (VUID-vkEnumerateInstanceVersion-pApiVersion-parameter).
    Some(unsafe { entry.try_enumerate_instance_version() }.ok().flatten().unwrap_or(vk::API_VERSION_1_0))
}

fn version_text(v: u32) -> String {
    format!("{}.{}.{}", vk::api_version_major(v), vk::api_version_minor(v), vk::api_version_patch(v))
}

/// Whether the loader searches `dir` for manifests of `kind` with the current
/// environment.
fn loader_searches(kind: Kind, dir: &Path) -> bool {
    let canon = |p: &Path| p.canonicalize().unwrap_or_else(|_| p.to_path_buf());
    manifest::loader_search_dirs(kind).iter().any(|d| canon(d) == canon(dir))
}

/// `overlap install|uninstall` (`command`): its options parsed, then `run`.
fn install_command(command: &str, args: &[OsString], run: fn(&InstallOptions) -> Result<(), String>) -> ExitCode {
    let opts = match parse_install_options(command, args) {
        Ok(o) => o,
        Err(e) => return usage_error(&e),
    };
    match run(&opts) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("overlap: {command}: {e}");
            ExitCode::from(1)
        }
    }
}

fn install_with(opts: &InstallOptions) -> Result<(), String> {
    let source = library()?.canonicalize().map_err(|e| e.to_string())?;
    let bytes = std::fs::read(&source).map_err(|e| format!("cannot read {}: {e}", source.display()))?;
    let layout = layout(opts)?;
    let old = Record::read(&layout.record)?;
    let mut created = old.as_ref().map(|r| r.created_dirs.clone()).unwrap_or_default();
    let manifest_path = layout.manifest(opts.kind);
    let manifest_dir = manifest_path.parent().unwrap().to_path_buf();
    for dir in [&layout.lib_dir, &manifest_dir, &layout.record.parent().unwrap().to_path_buf()] {
        create_dirs(dir, &mut created)?;
    }
    let canon = |p: &Path| p.canonicalize().map_err(|e| format!("{}: {e}", p.display()));
    let library = canon(&layout.lib_dir)?.join(manifest::LIBRARY_FILE_NAME);
    let manifest_path = canon(&manifest_dir)?.join(manifest::MANIFEST_FILE_NAME);

    let library_path = if layout.relative {
        manifest::relative_path(manifest_path.parent().unwrap(), &library).to_string_lossy().into_owned()
    } else {
        library.to_string_lossy().into_owned()
    };
    // Unknown loader (none loads): leave VK_EXT_layer_settings out, the safe side.
    let loader = loader_version();
    let text = manifest::render_path(opts.kind, &library_path, Some(loader.unwrap_or(0)))
        .map_err(|e| format!("cannot render the manifest: {e}"))?;

    // The record first: an install cut short leaves nothing uninstall misses.
    let record = Record {
        version: env!("CARGO_PKG_VERSION").to_string(),
        kind: opts.kind,
        library: library.clone(),
        manifest: manifest_path.clone(),
        created_dirs: created,
    };
    write_atomically(&layout.record, record.to_json().as_bytes())?;
    let mut report = Vec::new();
    let status = |changed: bool| if changed { "installed" } else { "up to date" };
    let changed = write_atomically(&library, &bytes)?;
    report.push(format!("{} {} (from {})", status(changed), library.display(), source.display()));
    let changed = write_atomically(&manifest_path, text.as_bytes())?;
    report.push(format!("{} {}", status(changed), manifest_path.display()));

    // One Overlap manifest per location: the other kind's goes, and so does
    // a library the previous install put elsewhere (another --libdir).
    let other = layout.manifest(if opts.kind == Kind::Implicit { Kind::Explicit } else { Kind::Implicit });
    if is_overlap_manifest(&other) {
        std::fs::remove_file(&other).map_err(|e| format!("cannot remove {}: {e}", other.display()))?;
        report.push(format!("removed {}", other.display()));
    }
    if let Some(old) = &old {
        if old.library != library
            && old.library.file_name() == Some(manifest::LIBRARY_FILE_NAME.as_ref())
            && std::fs::remove_file(&old.library).is_ok()
        {
            report.push(format!("removed {}", old.library.display()));
        }
    }

    for line in report {
        say!("{line}");
    }
    match opts.kind {
        Kind::Implicit => say!("enable it with OVERLAP=1; DISABLE_OVERLAP=1 turns it off"),
        Kind::Explicit => say!("enable it by name: VK_INSTANCE_LAYERS={LAYER_NAME} (or VK_LOADER_LAYERS_ENABLE)"),
    }
    if !loader_searches(opts.kind, manifest_path.parent().unwrap()) {
        let data = layout.vulkan_dir.parent().unwrap_or(&layout.vulkan_dir);
        say!(
            "note: the Vulkan loader does not search {} with this environment: add {} to XDG_DATA_DIRS (default /usr/local/share:/usr/share){}",
            manifest_path.parent().unwrap().display(),
            data.display(),
            if opts.kind == Kind::Explicit { " or the folder to VK_ADD_LAYER_PATH" } else { "" }
        );
    }
    if opts.kind == Kind::Implicit && !loader.is_some_and(manifest::loader_knows_layer_settings) {
        say!(
            "note: the manifest leaves out {}: this Vulkan loader ({}) predates it ({}) and would refuse programs that enable every listed instance extension (the layer still reads VkLayerSettingsCreateInfoEXT)",
            manifest::LAYER_SETTINGS_EXTENSION,
            loader.map(version_text).unwrap_or_else(|| "none found".into()),
            version_text(manifest::LAYER_SETTINGS_LOADER)
        );
    }
    Ok(())
}

fn uninstall_with(opts: &InstallOptions) -> Result<(), String> {
    let layout = layout(opts)?;
    let remove = |path: &Path| -> Result<bool, String> {
        match std::fs::remove_file(path) {
            Ok(()) => {
                say!("removed {}", path.display());
                Ok(true)
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
            Err(e) => Err(format!("cannot remove {}: {e}", path.display())),
        }
    };
    let Some(record) = Record::read(&layout.record)? else {
        // No record: for a user, a manifest an older `overlap install` wrote
        // (it named the build tree's library), or nothing. Under a prefix
        // (no older install used one), what is there is not ours: a
        // package's files belong to its package manager.
        let mut any = false;
        for kind in [Kind::Implicit, Kind::Explicit] {
            let m = layout.manifest(kind);
            if opts.prefix.is_none() && is_overlap_manifest(&m) {
                any |= remove(&m)?;
            }
        }
        if !any {
            say!("not installed ({} does not exist)", layout.record.display());
        }
        return Ok(());
    };
    // Only what this layout's install writes: never a path a damaged record
    // names elsewhere.
    let canon = |p: &Path| p.canonicalize().unwrap_or_else(|_| p.to_path_buf());
    let manifests = [layout.manifest(Kind::Implicit), layout.manifest(Kind::Explicit)];
    if !manifests.iter().any(|m| canon(m) == canon(&record.manifest)) {
        return Err(format!(
            "{} names {}, which is not this location's manifest",
            layout.record.display(),
            record.manifest.display()
        ));
    }
    if record.library.file_name() != Some(manifest::LIBRARY_FILE_NAME.as_ref()) {
        return Err(format!(
            "{} names {}, which is not the layer library",
            layout.record.display(),
            record.library.display()
        ));
    }
    remove(&record.manifest)?;
    remove(&record.library)?;
    remove(&layout.record)?;
    // The folders install created, deepest first, where now empty (another
    // layer's manifest keeps its folder).
    let ours = [&record.library, &manifests[0], &manifests[1], &layout.record, &layout.lib_dir];
    let mut dirs: Vec<&PathBuf> = record
        .created_dirs
        .iter()
        .filter(|d| ours.iter().any(|f| f.starts_with(d) || f.starts_with(canon(d))))
        .collect();
    dirs.sort_by_key(|d| std::cmp::Reverse(d.components().count()));
    for d in dirs {
        let _ = std::fs::remove_dir(d);
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// info: the installed copies

/// The hidden command `overlap info` runs in a child process with
/// `OVERLAP=1`: creates an instance and prints the layer libraries mapped.
const LOADED_LAYER_PROBE: &str = "__loaded-layer";

fn loaded_layer_probe() -> ExitCode {
    // SAFETY: ash's `Entry::load` contract: the library it opens is the
    // system's Vulkan loader, whose initialisers are trusted, and `entry`
    // outlives every object made through it.
    let Ok(entry) = (unsafe { ash::Entry::load() }) else { return ExitCode::from(1) };
    let app = vk::ApplicationInfo::default().api_version(vk::API_VERSION_1_0).application_name(c"overlap info");
    // SAFETY: a valid create info built here, alive for the call
    // (VUID-vkCreateInstance-pCreateInfo-parameter).
    let Ok(instance) =
        (unsafe { entry.create_instance(&vk::InstanceCreateInfo::default().application_info(&app), None) })
    else {
        return ExitCode::from(1);
    };
    let maps = std::fs::read_to_string("/proc/self/maps").unwrap_or_default();
    let mut seen = Vec::new();
    for path in maps.lines().filter_map(|l| l.split_whitespace().nth(5)) {
        if path.ends_with(manifest::LIBRARY_FILE_NAME) && !seen.contains(&path) {
            seen.push(path);
            say!("loaded={path}");
        }
    }
    // SAFETY: nothing was created from `instance`
    // (VUID-vkDestroyInstance-instance-00629), and it is not used again.
    unsafe { instance.destroy_instance(None) };
    ExitCode::SUCCESS
}

/// What loads with `OVERLAP=1` in this environment: the library's path and
/// the version the layer reports about itself (its `OVERLAP-Instance-Created`
/// message), or why nothing could be found out.
fn loaded_copy() -> Result<Option<(PathBuf, Option<String>)>, String> {
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let mut cmd = Command::new(exe);
    cmd.arg(LOADED_LAYER_PROBE);
    for (k, _) in std::env::vars_os() {
        if k.to_string_lossy().starts_with(settings::ENV_PREFIX) {
            cmd.env_remove(k);
        }
    }
    let out = cmd
        .env("OVERLAP", "1")
        .env_remove("DISABLE_OVERLAP")
        .env(settings::env_name("log_level"), "info")
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|e| format!("cannot run the probe: {e}"))?;
    if !out.status.success() {
        return Err("vkCreateInstance with OVERLAP=1 failed".into());
    }
    let stdout = String::from_utf8_lossy(&out.stdout);
    let Some(path) = stdout.lines().find_map(|l| l.strip_prefix("loaded=")) else { return Ok(None) };
    // "... OVERLAP-Instance-Created: VK_LAYER_OVERLAP_emulation 0.1.0 active (...)"
    let stderr = String::from_utf8_lossy(&out.stderr);
    let version = stderr.lines().filter(|l| l.contains("OVERLAP-Instance-Created")).find_map(|l| {
        let rest = &l[l.find(&format!("{LAYER_NAME} "))? + LAYER_NAME.len() + 1..];
        let mut words = rest.split_whitespace();
        let v = words.next()?;
        (words.next() == Some("active")).then(|| v.to_string())
    });
    Ok(Some((PathBuf::from(path), version)))
}

/// Every manifest naming this layer in the loader's folders, in its search
/// order, and what this CLI would install: the text `overlap info` prints.
fn installed_copies(loaded: Result<Option<(PathBuf, Option<String>)>, String>) {
    let ours = library().ok().and_then(|l| std::fs::read(l).ok());
    say!("installed copies (in the loader's search order; with OVERLAP=1 the first implicit one loads):");
    let mut found = 0;
    for kind in [Kind::Implicit, Kind::Explicit] {
        for dir in manifest::loader_search_dirs(kind) {
            let Ok(entries) = std::fs::read_dir(&dir) else { continue };
            let mut files: Vec<PathBuf> = entries
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|x| x == "json") && is_overlap_manifest(p))
                .collect();
            files.sort();
            for m in files {
                found += 1;
                say!("  {:8} {}", kind.name(), m.display());
                let text = std::fs::read_to_string(&m).unwrap_or_default();
                let v: serde_json::Value = serde_json::from_str(&text).unwrap_or_default();
                let named = v["layer"]["library_path"].as_str().unwrap_or("");
                let lib = manifest::resolve_library(&dir, named).map(|l| l.canonicalize().unwrap_or(l));
                let state = match &lib {
                    None => "not found by the dynamic linker".to_string(),
                    Some(l) => match std::fs::read(l) {
                        Err(_) => "MISSING: programs run without the layer".to_string(),
                        Ok(b) if ours.as_ref().is_some_and(|o| *o == b) => "identical to this overlap's library".into(),
                        Ok(_) if ours.is_some() => "differs from this overlap's library".into(),
                        Ok(_) => "present".into(),
                    },
                };
                say!(
                    "           library {}: {state}",
                    lib.as_ref().map(|l| l.display().to_string()).unwrap_or_else(|| named.to_string())
                );
                // The record beside an `overlap install`: <data>/overlap/installed.json.
                let record =
                    dir.parent().and_then(Path::parent).map(|d| d.join("overlap").join(manifest::RECORD_FILE_NAME));
                if let Some(r) = record
                    .and_then(|r| Record::read(&r).ok().flatten())
                    .filter(|r| Some(&r.manifest) == m.canonicalize().ok().as_ref())
                {
                    say!("           installed by overlap install {}", r.version);
                }
            }
        }
    }
    if found == 0 {
        say!("  none (overlap install puts one in {})", layout_hint());
    }
    let mine = env!("CARGO_PKG_VERSION");
    match loaded {
        Ok(Some((path, Some(v)))) if v == mine => {
            say!("with OVERLAP=1 this copy loads: {} (Overlap {v}, the same version as this overlap)", path.display())
        }
        Ok(Some((path, Some(v)))) => {
            say!("with OVERLAP=1 this copy loads: {} (Overlap {v}, NOT this overlap's version {mine})", path.display())
        }
        Ok(Some((path, None))) => {
            say!("with OVERLAP=1 this copy loads: {} (its version is unknown: it did not report one)", path.display())
        }
        Ok(None) => say!("with OVERLAP=1 no copy of the layer loads"),
        Err(e) => say!("with OVERLAP=1: cannot tell which copy loads ({e})"),
    }
}

fn layout_hint() -> String {
    manifest::user_implicit_dir()
        .map(|d| d.display().to_string())
        .unwrap_or_else(|| "~/.local/share/vulkan/implicit_layer.d".into())
}

fn info(args: &[OsString]) -> ExitCode {
    let (env, rest) = match parse_settings(args) {
        Ok(x) => x,
        Err(e) => return usage_error(&e),
    };
    if let Some(extra) = rest.first() {
        return usage_error(&format!("info: unexpected '{}'", extra.to_string_lossy()));
    }
    // Which installed copy loads, asked before this process's environment changes.
    let loaded = loaded_copy();
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
    let result = query_drivers(&settings);
    installed_copies(loaded);
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("overlap: info: {e}");
            ExitCode::from(1)
        }
    }
}

fn query_drivers(settings: &Settings) -> Result<(), String> {
    // SAFETY: ash's `Entry::load` contract: the library it opens is the
    // system's Vulkan loader, whose initialisers are trusted, and `entry`
    // outlives every object made through it.
    let entry = unsafe { ash::Entry::load() }.map_err(|e| format!("cannot load the Vulkan loader: {e}"))?;
    // SAFETY: a global command with ash's own valid output pointer
    // (VUID-vkEnumerateInstanceVersion-pApiVersion-parameter).
    let api = unsafe { entry.try_enumerate_instance_version() }.ok().flatten().unwrap_or(vk::API_VERSION_1_0);
    let app = vk::ApplicationInfo::default().api_version(api).application_name(c"overlap info");
    // SAFETY: a valid create info built here, alive for the call
    // (VUID-vkCreateInstance-pCreateInfo-parameter).
    let instance = unsafe { entry.create_instance(&vk::InstanceCreateInfo::default().application_info(&app), None) }
        .map_err(|e| format!("vkCreateInstance failed: {e:?}"))?;
    // SAFETY: `instance` is valid (VUID-vkEnumeratePhysicalDevices-instance-parameter).
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
        // SAFETY: `pd` was enumerated from `instance` (DriverFacts::query's contract).
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
    // SAFETY: nothing was created from `instance` (physical devices are not
    // created; VUID-vkDestroyInstance-instance-00629), and it is not used again.
    unsafe { instance.destroy_instance(None) };
    Ok(())
}

/// `link-varyings` of three or more stages (a pipeline's, in order): every
/// adjacent pair linked, the last first; one report per pair, in linking
/// order (the fragment stage, last, sees what `env` says; the others nothing).
fn link_stage_chain(
    files: &[PathBuf],
    level: overlap_shaders::varyings::Level,
    env: &overlap_shaders::varyings::LinkEnv,
    json: bool,
    out_dir: Option<&Path>,
) -> ExitCode {
    use overlap_shaders::varyings::{link_stages, LinkEnv};
    let mut modules = Vec::new();
    for p in files {
        let parsed = std::fs::read(p)
            .map_err(|e| e.to_string())
            .and_then(|b| overlap_shaders::parse_bytes(&b).map_err(|e| e.to_string()));
        match parsed {
            Ok(m) => modules.push(m),
            Err(e) => {
                eprintln!("overlap: {}: {e}", p.display());
                return ExitCode::from(1);
            }
        }
    }
    // (`--as-spelled`, the control, holds for every pair.)
    let mut envs = vec![LinkEnv { as_spelled: env.as_spelled, ..Default::default() }; modules.len()];
    if let Some(last) = envs.last_mut() {
        *last = env.clone();
    }
    let reports = match link_stages(&mut modules, level, &envs) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("overlap: link-varyings: {e}");
            return ExitCode::from(1);
        }
    };
    if let Some(dir) = out_dir {
        for (p, m) in files.iter().zip(&modules) {
            let words = overlap_shaders::assemble(m);
            let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
            let written = std::fs::create_dir_all(dir)
                .and_then(|_| std::fs::write(dir.join(p.file_name().unwrap_or(p.as_os_str())), bytes));
            if let Err(e) = written {
                eprintln!("overlap: cannot write into {}: {e}", dir.display());
                return ExitCode::from(1);
            }
        }
    }
    if json {
        let pairs: Vec<serde_json::Value> = reports
            .iter()
            .map(|p| {
                let r = &p.report;
                serde_json::json!({
                    "producer": p.producer.name(),
                    "consumer": p.consumer.name(),
                    "locations_before": r.locations_before,
                    "locations_after": r.locations_after,
                    "components_before": r.components_before,
                    "components_after": r.components_after,
                    "removed_dead": r.removed_dead,
                    "unused_inputs": r.unused_inputs,
                    "propagated_constants": r.propagated_constants,
                    "propagated_uniforms": r.propagated_uniforms,
                    "deduplicated": r.deduplicated,
                    "narrowed": r.narrowed,
                    "read_back": r.read_back,
                    "kept_in_place": r.kept_in_place,
                    "placed_last": r.placed_last,
                    "relocated": r.relocated,
                    "packed": r.packed,
                    "notes": r.notes,
                })
            })
            .collect();
        say!("{}", serde_json::to_string_pretty(&serde_json::json!({ "pairs": pairs })).unwrap());
    } else {
        for p in &reports {
            let r = &p.report;
            say!(
                "{} -> {}: locations {} -> {}, scalar components {} -> {} (dead {:?}, unused inputs {:?}, constants {:?}, duplicates {:?}, read back {:?}, in place {:?}, placed last {:?})",
                p.producer.name(),
                p.consumer.name(),
                r.locations_before,
                r.locations_after,
                r.components_before,
                r.components_after,
                r.removed_dead,
                r.unused_inputs,
                r.propagated_constants,
                r.deduplicated,
                r.read_back,
                r.kept_in_place,
                r.placed_last
            );
        }
    }
    ExitCode::SUCCESS
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
            "--as-spelled" => env.as_spelled = true,
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
    if files.len() > 2 {
        return link_stage_chain(&files, level, &env, json, out_dir.as_deref());
    }
    let [producer_path, consumer_path] = files.as_slice() else {
        return usage_error("link-varyings takes PRODUCER.spv CONSUMER.spv, or a pipeline's stages in order");
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
            "split": report.split,
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
        say!("split (old, components in the first part, second location) {:?}", report.split);
        say!("convergent, in another interpolation group (old location, now flat) {:?}", report.convergent);
        say!("arrays and matrices split into elements, by location {:?}", report.split_arrays);
        for n in &report.notes {
            say!("note: {n}");
        }
    }
    ExitCode::SUCCESS
}

//! Starting Vulkan programs in child processes on lavapipe, with Overlap
//! loaded above the Khronos validation layer.
//!
//! The children get a clean environment: every inherited `VK_*`, `OVERLAP`
//! and `DISABLE_OVERLAP` variable is removed, lavapipe is the only driver,
//! `XDG_DATA_HOME`, `XDG_CACHE_HOME` and the working directory are empty
//! scratch folders (so no installed layer, settings file or link cache of an
//! earlier run leaks in), and the layers are named explicitly through
//! `VK_INSTANCE_LAYERS`.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

pub const LAVAPIPE_ICD: &str = "/usr/share/vulkan/icd.d/lvp_icd.x86_64.json";
pub const LAYER: &str = "VK_LAYER_OVERLAP_emulation";
pub const VALIDATION: &str = "VK_LAYER_KHRONOS_validation";

/// `target/<profile>`: where cargo put the layer, the CLI and the test app.
pub fn bin_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("test binary path");
    let mut dir = exe.parent().unwrap().to_path_buf();
    if dir.ends_with("deps") {
        dir.pop();
    }
    dir
}

fn built(name: &str) -> PathBuf {
    let p = bin_dir().join(name);
    assert!(p.exists(), "{} is missing: build the workspace first (cargo build --release; ci/test does)", p.display());
    p
}

pub fn layer_library() -> PathBuf {
    built("libVkLayer_overlap.so")
}
pub fn testapp() -> PathBuf {
    built("overlap-testapp")
}
pub fn overlap_cli() -> PathBuf {
    built("overlap")
}

/// A folder holding the explicit manifest for the freshly built layer.
pub fn explicit_manifest_dir() -> PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = bin_dir().join("overlap-test-manifest");
        std::fs::create_dir_all(&dir).unwrap();
        let text = std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../manifest/VkLayer_overlap_explicit.json.in"),
        )
        .unwrap()
        .replace("\"@LIBRARY_PATH@\"", &format!("{:?}", layer_library().canonicalize().unwrap().to_string_lossy()));
        // Written under a per-process name and renamed: tests run in parallel.
        let tmp = dir.join(format!("VkLayer_overlap.json.{}", std::process::id()));
        std::fs::write(&tmp, text).unwrap();
        std::fs::rename(&tmp, dir.join("VkLayer_overlap.json")).unwrap();
        dir
    })
    .clone()
}

/// A new empty folder for one test.
pub fn scratch(name: &str) -> PathBuf {
    static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("overlap-test-{}-{n}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Which layers a child runs with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Layers {
    /// No layer at all: the driver alone.
    None,
    /// Only the validation layer.
    Validation,
    /// Overlap directly above the validation layer (the normal test setup).
    OverlapOverValidation,
    /// Overlap alone.
    Overlap,
}

/// A command with the clean test environment.
pub fn vk_command(program: impl AsRef<std::ffi::OsStr>, layers: Layers) -> Command {
    let mut cmd = Command::new(program);
    for (k, _) in std::env::vars_os() {
        let k = k.to_string_lossy().to_string();
        if k.starts_with("VK_") || k == "OVERLAP" || k == "DISABLE_OVERLAP" {
            cmd.env_remove(&k);
        }
    }
    let home = scratch("home");
    cmd.env("VK_DRIVER_FILES", LAVAPIPE_ICD)
        .env("NODEVICE_SELECT", "1")
        .env("XDG_DATA_HOME", home.join("data"))
        .env("XDG_CONFIG_HOME", home.join("config"))
        .env("XDG_CACHE_HOME", home.join("cache"))
        .current_dir(&home);
    let list = match layers {
        Layers::None => None,
        Layers::Validation => Some(VALIDATION.to_string()),
        Layers::OverlapOverValidation => Some(format!("{LAYER}:{VALIDATION}")),
        Layers::Overlap => Some(LAYER.to_string()),
    };
    if let Some(list) = list {
        cmd.env("VK_INSTANCE_LAYERS", list).env("VK_ADD_LAYER_PATH", explicit_manifest_dir());
    }
    cmd
}

/// The test app with `args`.
pub fn app(layers: Layers, args: &[&str]) -> Command {
    let mut cmd = vk_command(testapp(), layers);
    cmd.args(args);
    cmd
}

/// What a child did.
#[derive(Debug)]
pub struct Outcome {
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

impl Outcome {
    /// The value of a `key=value` line of stdout.
    pub fn value(&self, key: &str) -> Option<&str> {
        self.stdout.lines().find_map(|l| l.strip_prefix(key).and_then(|r| r.strip_prefix('=')))
    }

    /// The ids Overlap sent to the app's debug messengers.
    pub fn overlap_messages(&self) -> Vec<&str> {
        self.value("OVERLAP_MESSAGES").unwrap_or("").split(',').filter(|s| !s.is_empty()).collect()
    }

    /// Exit 0 and a silent validation layer.
    #[track_caller]
    pub fn assert_ok(&self) -> &Self {
        assert_eq!(self.code, Some(0), "child failed:\n--- stdout\n{}\n--- stderr\n{}", self.stdout, self.stderr);
        assert!(!self.stderr.contains("VALIDATION ERROR"), "validation errors:\n{}", self.stderr);
        self
    }

    /// Overlap printed nothing to stderr.
    #[track_caller]
    pub fn assert_quiet(&self) -> &Self {
        assert!(!self.stderr.contains("[overlap]"), "the layer was not quiet:\n{}", self.stderr);
        self
    }
}

/// Runs `cmd` to completion, killing it after `timeout` (a hang fails the test).
#[track_caller]
pub fn run_with_timeout(cmd: &mut Command, timeout: Duration) -> Outcome {
    let out_dir = scratch("out");
    let (out_path, err_path) = (out_dir.join("stdout"), out_dir.join("stderr"));
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&out_path).unwrap())
        .stderr(std::fs::File::create(&err_path).unwrap())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {cmd:?}: {e}"));
    let start = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if start.elapsed() > timeout {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "{cmd:?} did not finish in {timeout:?} (deadlock?)\n--- stderr\n{}",
                std::fs::read_to_string(&err_path).unwrap_or_default()
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let outcome = Outcome {
        code: status.code(),
        stdout: std::fs::read_to_string(&out_path).unwrap_or_default(),
        stderr: std::fs::read_to_string(&err_path).unwrap_or_default(),
    };
    let _ = std::fs::remove_dir_all(&out_dir);
    outcome
}

/// Runs `cmd` with a two-minute limit.
#[track_caller]
pub fn run(cmd: &mut Command) -> Outcome {
    run_with_timeout(cmd, Duration::from_secs(120))
}

/// Whether a program is on PATH (real-client tests need Debian's packages).
pub fn have(program: &str) -> bool {
    std::env::var_os("PATH").map(|p| std::env::split_paths(&p).any(|d| d.join(program).is_file())).unwrap_or(false)
}

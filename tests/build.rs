//! Compiles the test shaders (GLSL) to SPIR-V with glslangValidator, which
//! `ci/setup` installs (Debian's glslang-tools).
use std::path::Path;
use std::process::Command;

fn main() {
    let out = std::env::var("OUT_DIR").unwrap();
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("shaders");
    println!("cargo:rerun-if-changed={}", dir.display());
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        if !(name.ends_with(".vert") || name.ends_with(".frag") || name.ends_with(".comp")) {
            continue;
        }
        if name == "interlock.frag" {
            interlock_variants(&path, Path::new(&out));
            continue;
        }
        if name == "vrs.frag" {
            for (suffix, define) in [("", None), ("-interlock", Some("-DINTERLOCK"))] {
                let mut cmd = Command::new("glslangValidator");
                cmd.args(["-V", "--target-env", "vulkan1.2"]);
                cmd.args(define);
                let status = cmd
                    .arg("-o")
                    .arg(Path::new(&out).join(format!("vrs{suffix}.frag.spv")))
                    .arg(&path)
                    .status()
                    .unwrap();
                assert!(status.success(), "glslangValidator failed on {name}");
            }
            continue;
        }
        if name == "oit_insert.frag" {
            for (suffix, define) in [("", None), ("-none", Some("-DNO_INTERLOCK"))] {
                let mut cmd = Command::new("glslangValidator");
                cmd.args(["-V", "--target-env", "vulkan1.1"]);
                cmd.args(define);
                let status = cmd
                    .arg("-o")
                    .arg(Path::new(&out).join(format!("oit_insert{suffix}.frag.spv")))
                    .arg(&path)
                    .status()
                    .unwrap();
                assert!(status.success(), "glslangValidator failed on {name}");
            }
            continue;
        }
        let spv = Path::new(&out).join(format!("{name}.spv"));
        let env = if name.starts_with("vrs") { "vulkan1.2" } else { "vulkan1.0" };
        let status = Command::new("glslangValidator")
            .args(["-V", "--target-env", env, "-o"])
            .arg(&spv)
            .arg(&path)
            .status()
            .expect("glslangValidator not found: run ci/setup (Debian package glslang-tools)");
        assert!(status.success(), "glslangValidator failed on {name}");
    }
}

/// interlock.frag: every interlock mode, with and without per-sample words,
/// plus the no-interlock negative control.
fn interlock_variants(src: &Path, out: &Path) {
    let modes = [
        "pixel_interlock_ordered",
        "pixel_interlock_unordered",
        "sample_interlock_ordered",
        "sample_interlock_unordered",
        "none",
    ];
    for mode in modes {
        for per_sample in [false, true] {
            let name = format!("interlock-{mode}-{}.frag.spv", if per_sample { "sample" } else { "pixel" });
            let mut cmd = Command::new("glslangValidator");
            cmd.args(["-V", "--target-env", "vulkan1.1", "-S", "frag"]);
            if mode == "none" {
                cmd.arg("-DNO_INTERLOCK");
            } else {
                cmd.arg(format!("-DMODE={mode}"));
            }
            if per_sample {
                cmd.arg("-DPER_SAMPLE");
            }
            let status = cmd.arg("-o").arg(out.join(&name)).arg(src).status().expect("glslangValidator");
            assert!(status.success(), "glslangValidator failed on {name}");
        }
    }
}

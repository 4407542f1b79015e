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
        let spv = Path::new(&out).join(format!("{name}.spv"));
        let status = Command::new("glslangValidator")
            .args(["-V", "--target-env", "vulkan1.0", "-o"])
            .arg(&spv)
            .arg(&path)
            .status()
            .expect("glslangValidator not found: run ci/setup (Debian package glslang-tools)");
        assert!(status.success(), "glslangValidator failed on {name}");
    }
}

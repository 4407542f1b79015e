//! Compiles the test shaders (GLSL) to SPIR-V with glslangValidator, which
//! `ci/setup` installs (Debian's glslang-tools).
use std::path::Path;
use std::process::Command;

fn main() {
    let out = std::env::var("OUT_DIR").unwrap();
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("shaders");
    println!("cargo:rerun-if-changed={}", dir.display());
    varying_corpus(Path::new(&out));
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        if !(name.ends_with(".vert")
            || name.ends_with(".frag")
            || name.ends_with(".comp")
            || name.ends_with(".geom")
            || name.ends_with(".tesc")
            || name.ends_with(".tese"))
        {
            continue;
        }
        if name == "interlock.frag" {
            interlock_variants(&path, Path::new(&out));
            continue;
        }
        if name == "interlock_coverage.frag" {
            coverage_variants(&path, Path::new(&out));
            continue;
        }
        if name == "vrs.frag" {
            for (suffix, defines) in
                [("", &[][..]), ("-interlock", &["-DINTERLOCK"][..]), ("-ordered", &["-DINTERLOCK", "-DORDERED"][..])]
            {
                let mut cmd = Command::new("glslangValidator");
                cmd.args(["-V", "--target-env", "vulkan1.2"]);
                cmd.args(defines);
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
        if name == "oit_ordered_insert.frag" {
            for (suffix, define) in [("ordered", Some("-DORDERED")), ("unordered", Some("-DUNORDERED")), ("none", None)]
            {
                let mut cmd = Command::new("glslangValidator");
                cmd.args(["-V", "--target-env", "vulkan1.1"]);
                cmd.args(define);
                let status = cmd
                    .arg("-o")
                    .arg(Path::new(&out).join(format!("oit_ordered_insert-{suffix}.frag.spv")))
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
        // The geometry pair goes through spirv-opt -O, as the corpus does (SSA form).
        let optimize = name == "passthrough.geom" || name == "passthrough.tese";
        let env = if name.starts_with("vrs") {
            "vulkan1.2"
        } else if name.starts_with("fdm") {
            "vulkan1.1"
        } else {
            "vulkan1.0"
        };
        let status = Command::new("glslangValidator")
            .args(["-V", "--target-env", env, "-o"])
            .arg(&spv)
            .arg(&path)
            .status()
            .expect("glslangValidator not found: run ci/setup (Debian package glslang-tools)");
        assert!(status.success(), "glslangValidator failed on {name}");
        if optimize {
            let ok = Command::new("spirv-opt").arg("-O").arg(&spv).arg("-o").arg(&spv).status().unwrap().success();
            assert!(ok, "spirv-opt {name}");
        }
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

fn coverage_variants(src: &Path, out: &Path) {
    for mode in [
        "pixel_interlock_ordered",
        "pixel_interlock_unordered",
        "shading_rate_interlock_ordered",
        "shading_rate_interlock_unordered",
        "none",
    ] {
        // Per-sample words: the shading-rate modes only (the first family
        // has the pixel and sample modes with sample shading).
        let per_sample: &[bool] = if mode.starts_with("shading_rate") { &[false, true] } else { &[false] };
        for &sample in per_sample {
            let name = format!("interlock_coverage-{mode}{}.frag.spv", if sample { "-sample" } else { "" });
            let mut cmd = Command::new("glslangValidator");
            cmd.args(["-V", "--target-env", "vulkan1.1", "-S", "frag"]);
            if mode == "none" {
                cmd.arg("-DNO_INTERLOCK");
            } else {
                cmd.arg(format!("-DMODE={mode}"));
            }
            if sample {
                cmd.arg("-DSAMPLE_WORDS");
            }
            let status = cmd.arg("-o").arg(out.join(&name)).arg(src).status().expect("glslangValidator");
            assert!(status.success(), "glslangValidator failed on {name}");
        }
    }
}

/// The varying corpus: 32 generated vertex/fragment pairs mixing used, dead,
/// constant (flat and interpolated), uniform (push-constant expressions, flat
/// and interpolated), duplicated, non-constant flat and partly read vector
/// varyings at dense or sparse locations, compiled and optimised to SSA form
/// (as front ends hand drivers their SPIR-V). Writes corpus.rs, a table of
/// (vertex, fragment) SPIR-V.
pub fn varying_corpus(out: &Path) {
    let mut table = String::from("pub const CORPUS: &[(&[u8], &[u8])] = &[\n");
    // A bit mixer (not a period): every pair differs from every other.
    let mix = |a: u32| {
        let mut x = a.wrapping_mul(0x9e37_79b1);
        x ^= x >> 15;
        x = x.wrapping_mul(0x85eb_ca77);
        x ^ (x >> 13)
    };
    let mut seen = std::collections::HashSet::new();
    for n in 0..32u32 {
        let sparse = mix(n) % 3 == 0;
        let slots = 3 + mix(n + 1000) % 4;
        let mut vs = String::from(
            "#version 450\nconst vec2 POS[3] = vec2[3](vec2(-0.9, -0.8), vec2(0.85, -0.2), vec2(-0.3, 0.9));\n",
        );
        let mut fs = String::from("#version 450\nlayout(location = 0) out vec4 o_color;\n");
        let mut body_vs = String::from("    vec2 p = POS[gl_VertexIndex];\n    gl_Position = vec4(p, 0.0, 1.0);\n    vec4 base = vec4(p * 0.5 + 0.5, 0.25, 1.0);\n");
        let mut body_fs = String::from("    vec4 c = vec4(0.0);\n");
        let mut uses_pc = false;
        for i in 0..slots {
            let loc = if sparse { i * 2 } else { i };
            let kind = mix(n * 16 + i + 2000) % 10;
            match kind {
                0 | 4 => {
                    // 4: the same value as any other kind-0/4 slot (duplicates).
                    vs += &format!("layout(location = {loc}) out vec4 v{i};\n");
                    fs += &format!("layout(location = {loc}) in vec4 v{i};\n");
                    body_vs += &format!(
                        "    v{i} = {};\n",
                        if kind == 4 { "base".to_string() } else { format!("base * {:.3}", 0.2 + 0.1 * i as f32) }
                    );
                    body_fs += &format!("    c += v{i} * 0.2;\n");
                }
                1 => {
                    vs += &format!("layout(location = {loc}) out vec4 v{i};\n");
                    body_vs += &format!("    v{i} = base.yxzw;\n");
                }
                2 => {
                    vs += &format!("layout(location = {loc}) flat out int v{i};\n");
                    fs += &format!("layout(location = {loc}) flat in int v{i};\n");
                    body_vs += &format!("    v{i} = {};\n", 3 + i);
                    body_fs += &format!("    c.x += float(v{i}) * 0.01;\n");
                }
                3 => {
                    vs += &format!("layout(location = {loc}) out vec4 v{i};\n");
                    fs += &format!("layout(location = {loc}) in vec4 v{i};\n");
                    body_vs += &format!("    v{i} = vec4(0.125, 0.25, 0.5, 1.0);\n");
                    body_fs += &format!("    c += v{i} * 0.1;\n");
                }
                6 => {
                    // Partly read: the fragment shader uses .xy only.
                    vs += &format!("layout(location = {loc}) out vec4 v{i};\n");
                    fs += &format!("layout(location = {loc}) in vec4 v{i};\n");
                    body_vs += &format!("    v{i} = base.zxyw * {:.3};\n", 0.5 + 0.05 * i as f32);
                    body_fs += &format!("    c.xy += v{i}.xy * 0.3;\n");
                }
                8 | 9 => {
                    // A uniform expression (push constants the fragment stage
                    // sees too): flat (moves at safe) or interpolated (full).
                    let q = if kind == 8 { "flat " } else { "" };
                    vs += &format!("layout(location = {loc}) {q}out vec4 v{i};\n");
                    fs += &format!("layout(location = {loc}) {q}in vec4 v{i};\n");
                    // A plain load, or one multiplication: cheap enough to move.
                    if kind == 8 {
                        body_vs += &format!("    v{i} = pc.tint;\n");
                    } else {
                        body_vs += &format!("    v{i} = pc.tint * {:.3};\n", 0.25 + 0.05 * i as f32);
                    }
                    body_fs += &format!("    c += v{i} * 0.15;\n");
                    uses_pc = true;
                }
                7 => {
                    // Partly read: the fragment shader uses .z only.
                    vs += &format!("layout(location = {loc}) out vec3 v{i};\n");
                    fs += &format!("layout(location = {loc}) in vec3 v{i};\n");
                    body_vs += &format!("    v{i} = base.xyz + vec3({:.3});\n", 0.1 * i as f32);
                    body_fs += &format!("    c.w += v{i}.z * 0.25;\n");
                }
                _ => {
                    vs += &format!("layout(location = {loc}) flat out uint v{i};\n");
                    fs += &format!("layout(location = {loc}) flat in uint v{i};\n");
                    body_vs += &format!("    v{i} = uint(gl_VertexIndex) + {i}u;\n");
                    body_fs += &format!("    c.z += float(v{i} % 3u) * 0.05;\n");
                }
            }
        }
        // Some pairs also sum two interpolated inputs in the fragment shader
        // (moved to the producer at `full`).
        if mix(n + 3000) % 3 == 0 {
            vs += "layout(location = 14) out vec4 s0;\nlayout(location = 15) out vec4 s1;\n";
            fs += "layout(location = 14) in vec4 s0;\nlayout(location = 15) in vec4 s1;\n";
            body_vs += "    s0 = base * 0.3;\n    s1 = base.yzwx * 0.2;\n";
            body_fs += "    c += s0 + s1;\n";
        }
        if uses_pc {
            vs += "layout(push_constant) uniform P { vec4 tint; } pc;\n";
        }
        vs += &format!("void main() {{\n{body_vs}}}\n");
        fs += &format!("void main() {{\n{body_fs}    o_color = clamp(c, 0.0, 1.0);\n}}\n");
        assert!(seen.insert((vs.clone(), fs.clone())), "corpus pair {n} repeats an earlier one");
        for (ext, src) in [("vert", &vs), ("frag", &fs)] {
            let glsl = out.join(format!("corpus{n}.{ext}"));
            std::fs::write(&glsl, src).unwrap();
            let raw = out.join(format!("corpus{n}.{ext}.raw.spv"));
            let spv = out.join(format!("corpus{n}.{ext}.spv"));
            let ok = Command::new("glslangValidator")
                .args(["-V", "--target-env", "vulkan1.0", "-o"])
                .arg(&raw)
                .arg(&glsl)
                .status()
                .unwrap()
                .success();
            assert!(ok, "corpus {n} {ext}:\n{src}");
            let ok = Command::new("spirv-opt")
                .arg("-O")
                .arg(&raw)
                .arg("-o")
                .arg(&spv)
                .status()
                .expect("spirv-opt (spirv-tools)")
                .success();
            assert!(ok, "spirv-opt corpus {n} {ext}");
        }
        table += &format!("    (include_bytes!(concat!(env!(\"OUT_DIR\"), \"/corpus{n}.vert.spv\")), include_bytes!(concat!(env!(\"OUT_DIR\"), \"/corpus{n}.frag.spv\"))),\n");
    }
    table += "];\n";
    std::fs::write(out.join("corpus.rs"), table).unwrap();
}

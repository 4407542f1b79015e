//! Compiles the test shaders (GLSL) to SPIR-V with glslangValidator, which
//! `ci/setup` installs (Debian's glslang-tools).
use std::path::Path;
use std::process::Command;

fn main() {
    let out = std::env::var("OUT_DIR").unwrap();
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("shaders");
    println!("cargo:rerun-if-changed={}", dir.display());
    varying_corpus(Path::new(&out));
    stage_corpus(Path::new(&out));
    readback_corpus(Path::new(&out));
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
            // Each section variant plain and with the extra work (`-work`),
            // so that the plain shader holds no registers for work it never does.
            let sections = [("ordered", Some("-DORDERED")), ("unordered", Some("-DUNORDERED")), ("none", None)];
            for ((suffix, define), work) in sections.into_iter().flat_map(|s| [(s, false), (s, true)]) {
                let mut cmd = Command::new("glslangValidator");
                cmd.args(["-V", "--target-env", "vulkan1.1"]);
                cmd.args(define);
                if work {
                    cmd.arg("-DWORK");
                }
                let work = if work { "-work" } else { "" };
                let status = cmd
                    .arg("-o")
                    .arg(Path::new(&out).join(format!("oit_ordered_insert-{suffix}{work}.frag.spv")))
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

/// Compiles the fragment shader `src` to `out/name` with the `-D` defines:
/// `MODE=<mode>` (or `NO_INTERLOCK` for the mode `none`) and `extra`.
fn frag_variant(src: &Path, out: &Path, name: &str, mode: &str, extra: &[&str]) {
    let mut cmd = Command::new("glslangValidator");
    cmd.args(["-V", "--target-env", "vulkan1.1", "-S", "frag"]);
    if mode == "none" {
        cmd.arg("-DNO_INTERLOCK");
    } else {
        cmd.arg(format!("-DMODE={mode}"));
    }
    cmd.args(extra.iter().map(|d| format!("-D{d}")));
    let status = cmd.arg("-o").arg(out.join(name)).arg(src).status().expect("glslangValidator");
    assert!(status.success(), "glslangValidator failed on {name}");
}

/// interlock.frag: every interlock mode, with and without per-sample words,
/// plus the no-interlock negative control, and the ordered modes with early
/// fragment tests.
fn interlock_variants(src: &Path, out: &Path) {
    let modes = [
        "pixel_interlock_ordered",
        "pixel_interlock_unordered",
        "sample_interlock_ordered",
        "sample_interlock_unordered",
        "none",
    ];
    let words = |per_sample: bool| if per_sample { "sample" } else { "pixel" };
    let defines = |per_sample: bool| if per_sample { &["PER_SAMPLE"][..] } else { &[][..] };
    for mode in modes {
        for per_sample in [false, true] {
            let name = format!("interlock-{mode}-{}.frag.spv", words(per_sample));
            frag_variant(src, out, &name, mode, defines(per_sample));
        }
    }
    for mode in ["pixel_interlock_ordered", "sample_interlock_ordered"] {
        for per_sample in [false, true] {
            let name = format!("interlock-early-{mode}-{}.frag.spv", words(per_sample));
            frag_variant(src, out, &name, mode, &[&["EARLY"][..], defines(per_sample)].concat());
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
            frag_variant(src, out, &name, mode, if sample { &["SAMPLE_WORDS"] } else { &[] });
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

/// A stage chain of the corpus: its stages (GLSL extension, source), whether
/// it renders (transform feedback needs a device feature the renderer does
/// not enable), and per pair, in linking order (the last pair first), what
/// the sources declare: (producer extension, consumer extension, locations
/// before, locations after at `safe`, dead output locations, constant
/// output locations, outputs read back, locations kept in place).
struct Chain {
    stages: Vec<(&'static str, String)>,
    render: bool,
    pairs: Vec<Declared>,
}

/// One pair's declared figures (see `Chain`).
type Declared = (&'static str, &'static str, u32, u32, Vec<u32>, Vec<u32>, Vec<u32>, Vec<u32>);

/// The vertex shader of a chain: `pos` (read on), `chain` (read by the next
/// stage into an output that dies only once the later pairs are linked) and
/// `k` (the same constant for every vertex), at locations `loc`.
fn chain_vert(loc: [u32; 3], flat_int: bool) -> String {
    let k = if flat_int {
        format!("layout(location = {}) flat out int k_v;", loc[2])
    } else {
        format!("layout(location = {}) out float k_v;", loc[2])
    };
    let kv = if flat_int { "2" } else { "0.5" };
    format!(
        "#version 450
layout(location = {}) out vec4 pos_v;
layout(location = {}) out vec4 chain_v;
{k}
void main() {{
    vec2 p = vec2(float(gl_VertexIndex & 1), float(gl_VertexIndex >> 1)) * 1.5 - 0.75;
    gl_Position = vec4(p, 0.0, 1.0);
    pos_v = vec4(p * 0.5 + 0.5, 0.25, 1.0);
    chain_v = vec4(p, p * 2.0);
    k_v = {kv};
}}
",
        loc[0], loc[1]
    )
}

/// The tessellation control shader: `pos_t` (read), `chain_t` (fed only
/// the evaluation shader's unread output), `back_t` (read back, not read by
/// the evaluation shader), `konst_p` (a constant patch varying), `used_p`
/// (patch, read), `arr_p[2]` (patch array).
fn chain_tesc(loc: [u32; 3]) -> String {
    format!(
        "#version 450
layout(vertices = 3) out;
layout(location = {}) in vec4 pos_v[];
layout(location = {}) in vec4 chain_v[];
layout(location = {}) in float k_v[];
layout(location = 0) out vec4 pos_t[];
layout(location = 1) out vec4 chain_t[];
layout(location = 2) out vec4 back_t[];
layout(location = 3) patch out vec4 konst_p;
layout(location = 4) patch out vec4 used_p;
layout(location = 5) patch out vec4 arr_p[2];
void main() {{
    int i = gl_InvocationID;
    gl_out[gl_InvocationID].gl_Position = gl_in[i].gl_Position;
    pos_t[gl_InvocationID] = pos_v[i] * k_v[i];
    chain_t[gl_InvocationID] = chain_v[i] + vec4(1.0);
    back_t[gl_InvocationID] = pos_v[i] * 0.25;
    barrier();
    if (i == 0) {{
        gl_TessLevelInner[0] = 1.0;
        gl_TessLevelOuter[0] = 1.0;
        gl_TessLevelOuter[1] = 1.0;
        gl_TessLevelOuter[2] = 1.0;
        konst_p = vec4(0.25, 0.5, 0.75, 1.0);
        used_p = back_t[0] + back_t[1] + back_t[2];
        arr_p[0] = vec4(0.125);
        arr_p[1] = pos_v[0] * 0.5;
    }}
}}
",
        loc[0], loc[1], loc[2]
    )
}

/// The evaluation shader: `color` (read on) and `chain_e` (not read by
/// the next stage, or read into a geometry output that is not); `arr_p`
/// indexed by a non-constant (`indirect`) or a constant.
fn chain_tese(indirect: bool) -> String {
    let index = if indirect { "int(t.x > 0.5)" } else { "1" };
    format!(
        "#version 450
layout(triangles, equal_spacing, ccw) in;
layout(location = 0) in vec4 pos_t[];
layout(location = 1) in vec4 chain_t[];
layout(location = 3) patch in vec4 konst_p;
layout(location = 4) patch in vec4 used_p;
layout(location = 5) patch in vec4 arr_p[2];
layout(location = 0) out vec4 color;
layout(location = 1) out vec4 chain_e;
void main() {{
    vec3 t = gl_TessCoord;
    gl_Position = t.x * gl_in[0].gl_Position + t.y * gl_in[1].gl_Position + t.z * gl_in[2].gl_Position;
    color = (t.x * pos_t[0] + t.y * pos_t[1] + t.z * pos_t[2]) * konst_p + used_p * 0.1 + arr_p[{index}] * 0.5;
    chain_e = chain_t[0] + chain_t[1] + chain_t[2];
}}
"
    )
}

/// The geometry shader: reads `a` and `d` (and a flat per-vertex constant
/// `k` when `k`) at locations `loc`; writes `ca` (read), `e` (not read)
/// and, with `xfb`, `cap` (captured by transform feedback only).
fn chain_geom(loc: [u32; 3], k: bool, xfb: bool) -> String {
    let mut s = String::from("#version 450\nlayout(triangles) in;\nlayout(triangle_strip, max_vertices = 3) out;\n");
    s += &format!("layout(location = {}) in vec4 a[];\nlayout(location = {}) in vec4 d[];\n", loc[0], loc[1]);
    if k {
        s += &format!("layout(location = {}) flat in int k[];\n", loc[2]);
    }
    s += "layout(location = 0) out vec4 ca;\nlayout(location = 1) out vec4 e;\n";
    if xfb {
        s += "layout(xfb_buffer = 0, xfb_offset = 0, location = 2) out vec4 cap;\n";
    }
    s += "void main() {\n    for (int i = 0; i < 3; i++) {\n        gl_Position = gl_in[i].gl_Position;\n";
    let scale = if k { "float(k[i]) * 0.5" } else { "1.0" };
    s += &format!("        ca = a[i] * {scale};\n        e = d[i];\n");
    if xfb {
        s += "        cap = a[i];\n";
    }
    s += "        EmitVertex();\n    }\n    EndPrimitive();\n}\n";
    s
}

const CHAIN_FRAG: &str = "#version 450
layout(location = 0) in vec4 color;
layout(location = 0) out vec4 o_color;
void main() { o_color = clamp(color, 0.0, 1.0); }
";

/// The stage-chain corpus (issue 13, item 4): vertex → tessellation →
/// fragment, vertex → geometry → fragment and all five stages, each with
/// dense or sparse vertex outputs, an indirectly or directly indexed patch
/// array, with or without a transform-feedback output; the expectations are
/// the roles the generator gave each varying (see `Chain`).
///
/// Where each figure comes from: the sources above, by the linker's
/// documented rules (docs/varyings.md), not from its output. Pairs link
/// last pair first, so a consumer's output that a later stage does not read
/// is already dead when its inputs are judged.
/// - `X → frag` (X = tese or geom): `color`/`ca` at 0 is read, `chain_e`/`e`
///   at 1 is not (the fragment shader reads location 0 only): 2 before, 1
///   after, dead [1]; with transform feedback `cap` at 2 is captured, so
///   kept: one more before and after.
/// - `tese → geom`: `color` feeds `ca` (read), `chain_e` feeds `e` (dead):
///   2 before, 1 after, dead [1].
/// - `tesc → tese`: 7 locations before (`pos_t` 0, `chain_t` 1, `back_t` 2,
///   `konst_p` 3, `used_p` 4, `arr_p[2]` 5-6); `chain_t` only feeds the dead
///   `chain_e` (dead [1]), `konst_p` is the same constant everywhere
///   (constants [3]), `back_t` is read back by the control shader itself
///   (read back [2], so kept though the evaluation shader never reads it).
///   `arr_p` indexed by a constant is split and its unread element 0
///   (location 5) dies: 4 after (`pos_t`, `back_t`, `used_p`, `arr_p[1]`),
///   dead [1, 5]; indexed by a non-constant it stays whole where it is: 5
///   after, dead [1], kept in place [5].
/// - `vert → tesc` / `vert → geom`: `pos` read, `chain` feeds only the dead
///   `chain_t` / `e` (dead [loc 1]), `k` is a constant for every vertex
///   (constants [loc 2]): 3 before, 1 after.
fn stage_corpus(out: &Path) {
    let mut chains = Vec::new();
    for variant in 0..4u32 {
        let (a, b) = (variant & 1 == 1, variant & 2 == 2);
        // Vertex → tessellation control → evaluation → fragment (a: sparse, b: indirect).
        let loc = if a { [0, 2, 4] } else { [0, 1, 2] };
        let in_place = if b { vec![5] } else { vec![] };
        // A constant-indexed arr_p is split into its elements; the unread
        // one (location 5) dies.
        let (arr_after, arr_dead) = if b { (5, vec![1]) } else { (4, vec![1, 5]) };
        chains.push(Chain {
            stages: vec![
                ("vert", chain_vert(loc, false)),
                ("tesc", chain_tesc(loc)),
                ("tese", chain_tese(b)),
                ("frag", CHAIN_FRAG.to_string()),
            ],
            render: true,
            pairs: vec![
                ("tese", "frag", 2, 1, vec![1], vec![], vec![], vec![]),
                ("tesc", "tese", 7, arr_after, arr_dead, vec![3], vec![2], in_place.clone()),
                ("vert", "tesc", 3, 1, vec![loc[1]], vec![loc[2]], vec![], vec![]),
            ],
        });
        // Vertex → geometry → fragment (a: sparse, b: transform feedback).
        let xfb = u32::from(b);
        chains.push(Chain {
            stages: vec![
                ("vert", chain_vert(loc, true)),
                ("geom", chain_geom(loc, true, b)),
                ("frag", CHAIN_FRAG.to_string()),
            ],
            render: !b,
            pairs: vec![
                ("geom", "frag", 2 + xfb, 1 + xfb, vec![1], vec![], vec![], vec![]),
                ("vert", "geom", 3, 1, vec![loc[1]], vec![loc[2]], vec![], vec![]),
            ],
        });
        // All five stages (a: indirect, b: transform feedback).
        let in_place = if a { vec![5] } else { vec![] };
        let (arr_after, arr_dead) = if a { (5, vec![1]) } else { (4, vec![1, 5]) };
        chains.push(Chain {
            stages: vec![
                ("vert", chain_vert([0, 1, 2], false)),
                ("tesc", chain_tesc([0, 1, 2])),
                ("tese", chain_tese(a)),
                ("geom", chain_geom([0, 1, 2], false, b)),
                ("frag", CHAIN_FRAG.to_string()),
            ],
            render: !b,
            pairs: vec![
                ("geom", "frag", 2 + xfb, 1 + xfb, vec![1], vec![], vec![], vec![]),
                ("tese", "geom", 2, 1, vec![1], vec![], vec![], vec![]),
                ("tesc", "tese", 7, arr_after, arr_dead, vec![3], vec![2], in_place),
                ("vert", "tesc", 3, 1, vec![1], vec![2], vec![], vec![]),
            ],
        });
    }
    let mut table = String::from(
        "/// (stages as (GLSL extension, SPIR-V), renders, per pair in linking order: (producer, consumer,\n/// locations before, after, dead, constants, read back, kept in place)).\n#[allow(clippy::type_complexity)]\npub const STAGE_CORPUS: &[(&[(&str, &[u8])], bool, &[(&str, &str, u32, u32, &[u32], &[u32], &[u32], &[u32])])] = &[\n",
    );
    for (n, c) in chains.iter().enumerate() {
        table += "    (&[";
        for (ext, src) in &c.stages {
            let glsl = out.join(format!("chain{n}.{ext}"));
            std::fs::write(&glsl, src).unwrap();
            let spv = out.join(format!("chain{n}.{ext}.spv"));
            let ok = Command::new("glslangValidator")
                .args(["-V", "--target-env", "vulkan1.0", "-o"])
                .arg(&spv)
                .arg(&glsl)
                .status()
                .unwrap()
                .success();
            assert!(ok, "chain {n} {ext}:\n{src}");
            let ok = Command::new("spirv-opt").arg("-O").arg(&spv).arg("-o").arg(&spv).status().unwrap().success();
            assert!(ok, "spirv-opt chain {n} {ext}");
            table += &format!("(\"{ext}\", include_bytes!(concat!(env!(\"OUT_DIR\"), \"/chain{n}.{ext}.spv\"))), ");
        }
        table += &format!("], {}, &[", c.render);
        for (p, q, before, after, dead, constants, back, in_place) in &c.pairs {
            table += &format!(
                "(\"{p}\", \"{q}\", {before}, {after}, &{dead:?}, &{constants:?}, &{back:?}, &{in_place:?}), "
            );
        }
        table += "]),\n";
    }
    table += "];\n";
    std::fs::write(out.join("stage_corpus.rs"), table).unwrap();
}

/// The read-back corpus (issue 35): vertex shaders that read back, write in
/// parts, under conditions, repeatedly, in called functions and in loops
/// their own outputs, each with its fragment shader (tests/corpus/readback,
/// `NAME.frag` for every producer `NAME.vert`, `NAME.hlsl` or
/// `NAME.spvasm`). Producers are compiled by every route a driver sees them
/// from: GLSL by glslang as it is and through `spirv-opt -O`, HLSL by
/// glslang's HLSL front end as it is (legalized) and with `-Od` (calls with
/// out parameters kept), SPIR-V assembly (as DXBC/DXIL translators shape
/// outputs) by spirv-as. Writes readback_corpus.rs, a table of (name,
/// vertex SPIR-V file, fragment SPIR-V file), files in OUT_DIR.
fn readback_corpus(out: &Path) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("corpus/readback");
    println!("cargo:rerun-if-changed={}", dir.display());
    let mut files: Vec<_> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).collect();
    files.sort();
    let run = |cmd: &mut Command, what: &str| assert!(cmd.status().unwrap().success(), "{what}");
    let mut table = String::from("pub const READBACK_CORPUS: &[(&str, &str, &str)] = &[\n");
    // The same pairs' SPIR-V in the binary (`overlap-testapp varyings readback`, run where OUT_DIR is not).
    let mut bytes = String::from("pub const READBACK_BYTES: &[(&str, &[u8], &[u8])] = &[\n");
    for path in &files {
        let (Some(stem), Some(ext)) = (path.file_stem(), path.extension()) else { continue };
        let (stem, ext) = (stem.to_string_lossy(), ext.to_string_lossy());
        if !["vert", "hlsl", "spvasm"].contains(&ext.as_ref()) {
            continue;
        }
        let frag = dir.join(format!("{stem}.frag"));
        let fs = format!("readback-{stem}.frag.spv");
        let glsl = |src: &Path, spv: &str| {
            let mut c = Command::new("glslangValidator");
            c.args(["-V", "--target-env", "vulkan1.0", "-o"]).arg(out.join(spv)).arg(src);
            c
        };
        run(&mut glsl(&frag, &fs), &format!("{}", frag.display()));
        let forms: Vec<(&str, Command)> = match ext.as_ref() {
            "vert" => {
                let raw = format!("readback-{stem}-glsl.vert.spv");
                run(&mut glsl(path, &raw), &format!("{}", path.display()));
                let mut opt = Command::new("spirv-opt");
                opt.arg("-O").arg(out.join(&raw)).arg("-o").arg(out.join(format!("readback-{stem}-glsl-O.vert.spv")));
                vec![("glsl", Command::new("true")), ("glsl-O", opt)]
            }
            "hlsl" => ["hlsl", "hlsl-Od"]
                .into_iter()
                .map(|form| {
                    let mut c = Command::new("glslangValidator");
                    c.args(["-D", "-e", "main", "-S", "vert", "-V"]);
                    if form == "hlsl-Od" {
                        c.arg("-Od");
                    }
                    c.arg("-o").arg(out.join(format!("readback-{stem}-{form}.vert.spv"))).arg(path);
                    (form, c)
                })
                .collect(),
            _ => {
                let mut c = Command::new("spirv-as");
                c.args(["--target-env", "vulkan1.0", "-o"])
                    .arg(out.join(format!("readback-{stem}-asm.vert.spv")))
                    .arg(path);
                vec![("asm", c)]
            }
        };
        for (form, mut cmd) in forms {
            run(&mut cmd, &format!("{form} {}", path.display()));
            table += &format!("    (\"{stem} ({form})\", \"readback-{stem}-{form}.vert.spv\", \"{fs}\"),\n");
            let (vp, fp) = (out.join(format!("readback-{stem}-{form}.vert.spv")), out.join(&fs));
            bytes += &format!(
                "    (\"{stem} ({form})\", include_bytes!({:?}), include_bytes!({:?})),\n",
                vp.display().to_string(),
                fp.display().to_string()
            );
        }
    }
    table += "];\n";
    bytes += "];\n";
    std::fs::write(out.join("readback_corpus.rs"), table).unwrap();
    std::fs::write(out.join("readback_corpus_bytes.rs"), bytes).unwrap();
}

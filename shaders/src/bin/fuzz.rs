//! A deterministic mutation fuzzer for the passes of `overlap-shaders`, on
//! stable Rust and without dependencies of its own.
//!
//! Each case takes a seed module (the project's test shaders compiled with
//! glslangValidator, a few shapes of the crate's unit tests, the read-back
//! corpus of tests/corpus/readback — vertex shaders that read back, write in
//! parts, under conditions, repeatedly, in calls and in loops their own
//! outputs, from GLSL, HLSL and SPIR-V assembly, each with its fragment
//! shader — and any `.spv` file of `--corpus` directories), applies one to four word-level mutations
//! (flip a bit of a word, replace an operand with a nearby id, a defined id,
//! the instruction's own result or a small constant, duplicate, drop or
//! swap instructions, change an opcode to one of the same word count) and
//! runs every pass that applies to it — the serialized and spinlock interlock
//! rewrites, the density-map lowering, and the varying linker with a partner
//! seed of an adjacent stage (either way; vertex, tessellation, geometry,
//! fragment), as a pair or through the chain driver — each inside `catch_unwind`, timed. Inputs are
//! classified with spirv-val, and every pass outcome as: valid output,
//! refusal (an error value), panic, invalid output, or slow (over a second
//! of the thread's CPU time, not of wall clock: a shared runner may stall a
//! pass; where the CPU time cannot be read, slow passes are reported only).
//!
//! The linker's oracle goes beyond spirv-val: a vertex → fragment pair
//! linked from a valid input is evaluated on the CPU before and after the
//! link ([`overlap_shaders::interp`]: three triangles, the fragment outputs
//! at one point of each) and a different result is a failure (WRONG), where
//! the interpreter can run the original (else the case counts as not
//! evaluated). Before the cases, every read-back seed pair is linked
//! unmutated at `safe` and `full` and evaluated the same way.
//!
//! It exits non-zero on a panic, an invalid output from a valid input, a
//! wrong link (the oracle above), a slow pass, or a hang (a watchdog, on wall clock); a stack overflow aborts the process, so
//! `--save-current FILE` keeps each input on disk before it runs. Every case
//! is a function of `--seed` and its index: `--skip N --iterations 1` replays
//! case N (with the same seeds).
//!
//! ```text
//! cargo run --release -p overlap-shaders --bin fuzz -- --seed 1 --seconds 180
//! OVERLAP_SHADERS_CORPUS=/tmp/corpus cargo test --release -p overlap-shaders
//! cargo run --release -p overlap-shaders --bin fuzz -- --corpus /tmp/corpus --iterations 20000
//! ```

use overlap_shaders::varyings::{link_stages, stage_of, Level, LinkEnv, Stage};
use overlap_shaders::{assemble, fdm, interlock, interp, parse, spinlock, subsampled, validate, TargetEnv};
use rspirv::dr::{Module, Operand};
use rspirv::grammar::{OperandKind, INSTRUCTION_TABLE};
use rspirv::spirv::{ExecutionModel, Op};
use std::collections::{BTreeMap, HashSet};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A pass taking more CPU time than this on one module is a failure (its
/// thread's CPU time: a pass stalled by other work on the machine is not
/// slow; one over this in wall clock alone is reported, not failed).
const SLOW: Duration = Duration::from_secs(1);
/// A case running longer than this is a hang: the watchdog stops the run.
const HANG: Duration = Duration::from_secs(60);

const USAGE: &str = "usage: fuzz [--seed N] [--iterations N | --seconds N] [--skip N] [--corpus DIR]... \
[--glsl DIR] [--readback DIR] [--dump DIR] [--save-current FILE] [--stack-kib N] [--verbose]";

struct Args {
    seed: u64,
    iterations: Option<u64>,
    seconds: Option<u64>,
    skip: u64,
    corpus: Vec<PathBuf>,
    glsl: PathBuf,
    readback: PathBuf,
    dump: PathBuf,
    save_current: Option<PathBuf>,
    stack_kib: usize,
    verbose: bool,
}

fn parse_args() -> Result<Args, String> {
    let mut a = Args {
        seed: 1,
        iterations: None,
        seconds: None,
        skip: 0,
        corpus: Vec::new(),
        glsl: Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/shaders"),
        readback: Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/corpus/readback"),
        dump: std::env::temp_dir().join("overlap-fuzz"),
        save_current: None,
        stack_kib: 1024,
        verbose: false,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().ok_or(format!("{flag} needs a value"));
        let number = |v: String| v.parse::<u64>().map_err(|e| format!("{flag} {v}: {e}"));
        match flag.as_str() {
            "--seed" => a.seed = number(value()?)?,
            "--iterations" => a.iterations = Some(number(value()?)?),
            "--seconds" => a.seconds = Some(number(value()?)?),
            "--skip" => a.skip = number(value()?)?,
            "--corpus" => a.corpus.push(value()?.into()),
            "--glsl" => a.glsl = value()?.into(),
            "--readback" => a.readback = value()?.into(),
            "--dump" => a.dump = value()?.into(),
            "--save-current" => a.save_current = Some(value()?.into()),
            "--stack-kib" => a.stack_kib = number(value()?)? as usize,
            "--verbose" => a.verbose = true,
            "--help" | "-h" => return Err(USAGE.into()),
            other => return Err(format!("unknown argument {other}\n{USAGE}")),
        }
    }
    if a.iterations.is_none() && a.seconds.is_none() {
        a.iterations = Some(1000);
    }
    Ok(a)
}

/// xorshift64* (Vigna), seeded through splitmix64.
struct Rng(u64);

impl Rng {
    fn new(seed: u64, case: u64) -> Rng {
        let mut z = seed ^ case.wrapping_mul(0x9e37_79b9_7f4a_7c15);
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        Rng((z ^ (z >> 31)) | 1)
    }

    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// Uniform in `0..n` (`n` > 0).
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }
}

// ---------------------------------------------------------------- seeds

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Side {
    /// A vertex, tessellation evaluation or geometry shader.
    Producer,
    /// A fragment shader.
    Consumer,
    Other,
}

struct Seed {
    name: String,
    words: Vec<u32>,
    env: TargetEnv,
    /// Interface locations: outputs of a producer, inputs of a consumer.
    locations: HashSet<u32>,
    /// The graphics stage the linker sees (None: not a linkable stage).
    stage: Option<Stage>,
    /// Seeds of an adjacent stage (either way) with the most locations in
    /// common: the partners the linker is fuzzed with.
    partners: Vec<usize>,
    /// A read-back producer's own fragment shader (chosen as the partner
    /// half the time: the pair the oracle can evaluate whole).
    mate: Option<usize>,
}

/// The Vulkan environment for a module's SPIR-V version.
fn env_of(words: &[u32]) -> TargetEnv {
    match words.get(1).map(|v| (v >> 8) & 0xff) {
        Some(0..=0x00) => TargetEnv::Vulkan1_0,
        Some(0x01..=0x03) => TargetEnv::Vulkan1_1,
        Some(0x04..=0x05) => TargetEnv::Vulkan1_2,
        _ => TargetEnv::Vulkan1_3,
    }
}

fn side_of(m: &Module) -> Side {
    let models: Vec<ExecutionModel> = m
        .entry_points
        .iter()
        .filter_map(|e| match e.operands.first() {
            Some(Operand::ExecutionModel(x)) => Some(*x),
            _ => None,
        })
        .collect();
    if models.contains(&ExecutionModel::Fragment) {
        Side::Consumer
    } else if models.iter().any(|x| {
        matches!(x, ExecutionModel::Vertex | ExecutionModel::TessellationEvaluation | ExecutionModel::Geometry)
    }) {
        Side::Producer
    } else {
        Side::Other
    }
}

fn locations(m: &Module, class: rspirv::spirv::StorageClass) -> HashSet<u32> {
    let vars: HashSet<u32> = m
        .types_global_values
        .iter()
        .filter(|i| i.class.opcode == Op::Variable && i.operands.first() == Some(&Operand::StorageClass(class)))
        .filter_map(|i| i.result_id)
        .collect();
    m.annotations
        .iter()
        .filter_map(|a| match a.operands.as_slice() {
            [Operand::IdRef(t), Operand::Decoration(rspirv::spirv::Decoration::Location), Operand::LiteralBit32(l)]
                if vars.contains(t) =>
            {
                Some(*l)
            }
            _ => None,
        })
        .collect()
}

fn words_of(bytes: &[u8]) -> Option<Vec<u32>> {
    if !bytes.len().is_multiple_of(4) || bytes.len() < 20 {
        return None;
    }
    Some(bytes.chunks_exact(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect())
}

fn scratch(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("overlap-fuzz-{}-{name}", std::process::id()))
}

/// Compiles GLSL (a file) with glslangValidator, plus its `spirv-opt -O`
/// form (SSA, as most drivers' front ends hand modules over).
fn compile(path: &Path, stage: Option<&str>, env: &str, defines: &[&str]) -> Vec<Vec<u32>> {
    let out = scratch("seed.spv");
    let mut cmd = Command::new("glslangValidator");
    cmd.args(["-V", "--target-env", env]);
    if let Some(s) = stage {
        cmd.args(["-S", s]);
    }
    cmd.args(defines.iter().map(|d| format!("-D{d}")));
    let ok = cmd.arg("-o").arg(&out).arg(path).output().is_ok_and(|o| o.status.success());
    let mut forms = Vec::new();
    if let Some(w) = ok.then(|| std::fs::read(&out).ok()).flatten().and_then(|b| words_of(&b)) {
        forms.push(w);
        let opt = scratch("seed-opt.spv");
        let ran = Command::new("spirv-opt").arg("-O").arg(&out).arg("-o").arg(&opt).output();
        if ran.is_ok_and(|o| o.status.success()) {
            forms.extend(std::fs::read(&opt).ok().and_then(|b| words_of(&b)));
        }
        let _ = std::fs::remove_file(&opt);
    }
    let _ = std::fs::remove_file(&out);
    forms
}

/// The project's test shaders (tests/shaders), with the variants tests/build.rs compiles.
fn glsl_dir_seeds(dir: &Path) -> Vec<(String, Vec<u32>)> {
    let mut names: Vec<PathBuf> =
        std::fs::read_dir(dir).map(|d| d.filter_map(|e| e.ok().map(|e| e.path())).collect()).unwrap_or_default();
    names.sort();
    let mut out = Vec::new();
    for path in names {
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let stages = ["vert", "frag", "geom", "tesc", "tese", "comp"];
        if !stages.iter().any(|s| name.ends_with(&format!(".{s}"))) {
            continue;
        }
        let env = if name.starts_with("vrs") {
            "vulkan1.2"
        } else if name.starts_with("fdm") || name.starts_with("interlock") || name.starts_with("oit") {
            "vulkan1.1"
        } else {
            "vulkan1.0"
        };
        let variants: Vec<Vec<&str>> = match name.as_str() {
            "interlock.frag" => vec![
                vec!["MODE=pixel_interlock_ordered"],
                vec!["MODE=sample_interlock_unordered", "PER_SAMPLE"],
                vec!["MODE=sample_interlock_ordered"],
                vec!["NO_INTERLOCK"],
            ],
            "vrs.frag" => vec![vec![], vec!["INTERLOCK"]],
            "oit_insert.frag" => vec![vec![], vec!["NO_INTERLOCK"]],
            _ => vec![vec![]],
        };
        let stage = (name == "interlock.frag").then_some("frag");
        for defines in variants {
            for (k, w) in compile(&path, stage, env, &defines).into_iter().enumerate() {
                out.push((format!("{name}{}{}", defines.join(","), if k == 1 { " (opt)" } else { "" }), w));
            }
        }
    }
    out
}

/// Shapes of the crate's unit tests (more come from `--corpus`, see the
/// module documentation).
const BUILTIN: &[(&str, &str)] = &[
    ("vert", "#version 450\nlayout(location=0) out vec4 a;\nlayout(location=3) out vec4 dead;\nlayout(location=5) out vec2 b;\nvoid main() { gl_Position = vec4(0); a = vec4(1,2,3,float(gl_VertexIndex)); dead = a * 2.0; b = a.xy; }\n"),
    ("frag", "#version 450\nlayout(location=0) out vec4 o;\nlayout(location=0) in vec4 a;\nlayout(location=5) in vec2 b;\nvoid main() { o = a + vec4(b, 0, 0); }\n"),
    ("vert", "#version 450\nlayout(location=0) out vec4 a;\nlayout(location=1) out vec4 b;\nlayout(location=2) out vec3 c;\nvoid main() { float f = float(gl_VertexIndex); gl_Position = vec4(f); a = vec4(f, f + 1.0, f + 2.0, f + 3.0); b = vec4(f * 2.0); b.w = f * 5.0; b.y = 9.0; c = vec3(f, 7.0, f * 3.0); }\n"),
    ("frag", "#version 450\nlayout(location=0) out vec4 o;\nlayout(location=0) in vec4 a;\nlayout(location=1) in vec4 b;\nlayout(location=2) in vec3 c;\nvoid main() { o = vec4(a.xy, b.w, 0.0) + c.xzxz; }\n"),
    ("vert", "#version 450\nlayout(set=0, binding=1) uniform U { vec4 tint; float k; };\nlayout(push_constant) uniform P { vec4 offset; };\nlayout(location=0) flat out vec4 a;\nlayout(location=1) out vec4 b;\nlayout(location=2) out vec4 v;\nvoid main() { gl_Position = vec4(0); a = tint * k + offset; b = tint * 2.0; v = vec4(float(gl_VertexIndex)); }\n"),
    ("frag", "#version 450\nlayout(location=0) out vec4 o;\nlayout(location=0) flat in vec4 a;\nlayout(location=1) in vec4 b;\nlayout(location=2) in vec4 v;\nvoid main() { o = a + b + v; }\n"),
    ("vert", "#version 450\nlayout(location=0) out vec4 a;\nlayout(location=1) out vec4 b;\nlayout(location=2) noperspective out float t;\nvoid main() { float x = float(gl_VertexIndex); gl_Position = vec4(x); a = vec4(x, 1, 2, 3); b = vec4(2, x, 4, x); t = x * 0.25; }\n"),
    ("frag", "#version 450\nlayout(location=0) out vec4 o;\nlayout(location=0) in vec4 a;\nlayout(location=1) in vec4 b;\nlayout(location=2) noperspective in float t;\nvoid main() { o = (a + b) * 0.5 + vec4(t * 3.0 + 1.0); }\n"),
    ("vert", "#version 450\nlayout(location=0) flat out int k;\nlayout(location=1) out vec4 v;\nlayout(location=2) flat out uint h;\nlayout(location=3) out float c;\nvoid main() { gl_Position = vec4(0); k = 7; v = vec4(float(gl_VertexIndex)); h = uint(gl_VertexIndex); c = 0.5; }\n"),
    ("frag", "#version 450\nlayout(location=0) out vec4 o;\nlayout(location=0) flat in int k;\nlayout(location=1) in vec4 v;\nlayout(location=2) flat in uint h;\nlayout(location=3) in float c;\nvoid main() { o = v * float(k) + vec4(float(h), c, 0, 0); }\n"),
    ("vert", "#version 450\nlayout(location=0) out vec4 a[2];\nlayout(location=2) out mat2 m;\nlayout(location=4, component=0) flat out int p;\nlayout(location=4, component=1) flat out int q;\nvoid main() { gl_Position = vec4(0); a[0] = vec4(gl_VertexIndex); a[1] = vec4(1); m = mat2(float(gl_VertexIndex)); p = 3; q = gl_VertexIndex; }\n"),
    ("frag", "#version 450\nlayout(location=0) out vec4 o;\nlayout(location=0) in vec4 a[2];\nlayout(location=2) in mat2 m;\nlayout(location=4, component=0) flat in int p;\nlayout(location=4, component=1) flat in int q;\nvoid main() { o = a[0] + a[1] + vec4(m[0], m[1]) + vec4(p, q, 0, 0); }\n"),
    ("geom", "#version 450\nlayout(triangles) in;\nlayout(triangle_strip, max_vertices = 3) out;\nlayout(location=0) out vec4 a;\nlayout(location=1) flat out int b;\nvoid main() { for (int i = 0; i < 3; i++) { gl_Position = gl_in[i].gl_Position; a = vec4(float(i)); b = 5; EmitVertex(); } EndPrimitive(); }\n"),
    ("tese", "#version 450\nlayout(triangles) in;\nlayout(location=0) out vec4 a;\nlayout(location=1) flat out int b;\nvoid main() { gl_Position = vec4(gl_TessCoord, 1.0); a = vec4(gl_TessCoord.x); b = gl_PrimitiveID; }\n"),
    ("frag", "#version 450\nlayout(location=0) out vec4 o;\nlayout(location=0) in vec4 a;\nlayout(location=1) flat in int b;\nvoid main() { o = a * float(b); }\n"),
    ("frag", "#version 450\n#extension GL_EXT_fragment_invocation_density : require\nlayout(location = 0) out vec4 color;\nvoid main() { ivec2 s = gl_FragSizeEXT; color = vec4(1.0 / float(s.x), 1.0 / float(s.y), float(gl_FragInvocationCountEXT), gl_FragCoord.x + gl_FragCoord.y * 0.5); }\n"),
    ("frag", "#version 450\n#extension GL_ARB_fragment_shader_interlock : require\nlayout(pixel_interlock_ordered) in;\nlayout(binding=0, r32ui) coherent uniform uimage2D img;\nlayout(location=0) flat in int n;\nlayout(location=0) out vec4 o;\nvoid main() { ivec2 p = ivec2(gl_FragCoord.xy); beginInvocationInterlockARB(); uint v = imageLoad(img, p).x; for (int i = 0; i < n; i++) { if ((v & 1u) == 0u) v += 3u; else v -= 1u; } imageStore(img, p, uvec4(v)); endInvocationInterlockARB(); o = vec4(float(v)); }\n"),
    ("frag", "#version 450\n#extension GL_ARB_fragment_shader_interlock : require\nlayout(sample_interlock_unordered) in;\nlayout(binding=0, r32ui) coherent uniform uimage2D img;\nlayout(location=0) out vec4 o;\nvoid touch(ivec2 p) { imageStore(img, p, imageLoad(img, p) * 2u); }\nvoid main() { if (gl_FragCoord.x < 2.0) discard; ivec2 p = ivec2(gl_FragCoord.x * 4.0 + float(gl_SampleID), gl_FragCoord.y); beginInvocationInterlockARB(); touch(p); endInvocationInterlockARB(); o = vec4(1); }\n"),
];

fn builtin_seeds() -> Vec<(String, Vec<u32>)> {
    let mut out = Vec::new();
    for (n, (stage, src)) in BUILTIN.iter().enumerate() {
        let path = scratch(&format!("builtin.{stage}"));
        if std::fs::write(&path, src).is_err() {
            continue;
        }
        for (k, w) in compile(&path, None, "vulkan1.1", &[]).into_iter().enumerate() {
            out.push((format!("builtin {n}{}", if k == 1 { " (opt)" } else { "" }), w));
        }
        let _ = std::fs::remove_file(&path);
    }
    out
}

/// The read-back corpus (tests/corpus/readback, as tests/build.rs compiles
/// it): each producer (`NAME.vert` as it is and through `spirv-opt -O`,
/// `NAME.hlsl` by glslang's HLSL front end legalized and with `-Od`,
/// `NAME.spvasm` by spirv-as) and its fragment shader `NAME.frag`, with NAME.
fn readback_seeds(dir: &Path) -> Vec<(String, Vec<u32>, String)> {
    let mut paths: Vec<PathBuf> =
        std::fs::read_dir(dir).map(|d| d.filter_map(|e| e.ok().map(|e| e.path())).collect()).unwrap_or_default();
    paths.sort();
    let mut out = Vec::new();
    for path in paths {
        let (Some(stem), Some(ext)) = (path.file_stem(), path.extension()) else { continue };
        let (stem, ext) = (stem.to_string_lossy().into_owned(), ext.to_string_lossy().into_owned());
        let forms: Vec<(String, Vec<u32>)> = match ext.as_str() {
            "vert" | "frag" => compile(&path, None, "vulkan1.0", &[])
                .into_iter()
                .enumerate()
                .map(|(k, w)| (format!("{stem}.{ext}{}", if k == 1 { " (opt)" } else { "" }), w))
                .collect(),
            "hlsl" | "spvasm" => {
                let variants: &[&[&str]] = if ext == "hlsl" {
                    &[
                        &["glslangValidator", "-D", "-e", "main", "-S", "vert", "-V"],
                        &["glslangValidator", "-D", "-e", "main", "-S", "vert", "-V", "-Od"],
                    ]
                } else {
                    &[&["spirv-as", "--target-env", "vulkan1.0"]]
                };
                let spv = scratch("readback.spv");
                let mut forms = Vec::new();
                for v in variants {
                    let ok = Command::new(v[0])
                        .args(&v[1..])
                        .arg("-o")
                        .arg(&spv)
                        .arg(&path)
                        .output()
                        .is_ok_and(|o| o.status.success());
                    if let Some(w) = ok.then(|| std::fs::read(&spv).ok()).flatten().and_then(|b| words_of(&b)) {
                        forms.push((format!("{stem}.{ext} ({})", v[1..].join(" ")), w));
                    }
                }
                let _ = std::fs::remove_file(&spv);
                forms
            }
            _ => vec![],
        };
        out.extend(forms.into_iter().map(|(n, w)| (format!("readback {n}"), w, stem.clone())));
    }
    out
}

fn corpus_seeds(dirs: &[PathBuf]) -> Vec<(String, Vec<u32>)> {
    let mut out = Vec::new();
    for dir in dirs {
        let mut paths: Vec<PathBuf> =
            std::fs::read_dir(dir).map(|d| d.filter_map(|e| e.ok().map(|e| e.path())).collect()).unwrap_or_else(|e| {
                eprintln!("fuzz: {}: {e}", dir.display());
                Vec::new()
            });
        paths.retain(|p| p.extension().is_some_and(|e| e == "spv"));
        paths.sort();
        for p in paths {
            if let Some(w) = std::fs::read(&p).ok().and_then(|b| words_of(&b)) {
                out.push((p.display().to_string(), w));
            }
        }
    }
    out
}

/// Keeps the valid, distinct modules, and pairs producers with consumers.
fn seeds(args: &Args) -> Vec<Seed> {
    let mut raw: Vec<(String, Vec<u32>, Option<String>)> =
        glsl_dir_seeds(&args.glsl).into_iter().map(|(n, w)| (n, w, None)).collect();
    raw.extend(builtin_seeds().into_iter().map(|(n, w)| (n, w, None)));
    raw.extend(readback_seeds(&args.readback).into_iter().map(|(n, w, pair)| (n, w, Some(pair))));
    raw.extend(corpus_seeds(&args.corpus).into_iter().map(|(n, w)| (n, w, None)));
    // The seed each module is (a repeat is the first of its words), and the
    // read-back pairs: (producer seed, pair name), pair name → consumer seed.
    let mut seen: std::collections::HashMap<Vec<u32>, usize> = std::collections::HashMap::new();
    let mut producers: Vec<(usize, String)> = Vec::new();
    let mut consumers: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    let mut out: Vec<Seed> = Vec::new();
    for (name, words, pair) in raw {
        let mut note_pair = |at: usize, side: Side| {
            if let Some(pair) = &pair {
                match side {
                    Side::Consumer => {
                        consumers.entry(pair.clone()).or_insert(at);
                    }
                    _ => producers.push((at, pair.clone())),
                }
            }
        };
        if let Some(&at) = seen.get(&words) {
            note_pair(at, if name.contains(".frag") { Side::Consumer } else { Side::Producer });
            continue;
        }
        let env = env_of(&words);
        let Ok(m) = parse(&words) else { continue };
        if validate(&words, env).is_err() {
            if args.verbose {
                eprintln!("fuzz: seed {name} does not validate; left out");
            }
            continue;
        }
        let side = side_of(&m);
        let class = match side {
            Side::Producer => rspirv::spirv::StorageClass::Output,
            _ => rspirv::spirv::StorageClass::Input,
        };
        let mut locations = locations(&m, class);
        // (A tessellation control shader is both: its inputs and outputs.)
        locations.extend(self::locations(&m, rspirv::spirv::StorageClass::Output));
        let stage = stage_of(&m, "seed").ok();
        seen.insert(words.clone(), out.len());
        note_pair(out.len(), side);
        out.push(Seed { name, words, env, locations, stage, partners: Vec::new(), mate: None });
    }
    for (producer, pair) in producers {
        out[producer].mate = consumers.get(&pair).copied();
    }
    for i in 0..out.len() {
        let Some(stage) = out[i].stage else { continue };
        let mut scored: Vec<(usize, usize)> = (0..out.len())
            .filter(|j| out[*j].stage.is_some_and(|t| stage.feeds(t) || t.feeds(stage)))
            .map(|j| (out[i].locations.intersection(&out[j].locations).count(), j))
            .collect();
        scored.sort_by_key(|(score, j)| (std::cmp::Reverse(*score), *j));
        out[i].partners = scored.into_iter().take(4).map(|(_, j)| j).collect();
    }
    out
}

// ------------------------------------------------------------ mutations

/// (offset, word count) of each instruction after the header, up to the
/// first malformed word count.
fn instructions(words: &[u32]) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut at = 5;
    while let Some(&w) = words.get(at) {
        let len = (w >> 16) as usize;
        if len == 0 || at + len > words.len() {
            break;
        }
        out.push((at, len));
        at += len;
    }
    out
}

/// The index, within its instruction, of the word holding the result id.
fn result_word(op: u32) -> Option<usize> {
    let g = INSTRUCTION_TABLE.lookup_opcode(op)?;
    g.operands.iter().position(|o| o.kind == OperandKind::IdResult).map(|p| p + 1)
}

fn result_ids(words: &[u32], insts: &[(usize, usize)]) -> Vec<u32> {
    insts
        .iter()
        .filter_map(|&(at, len)| result_word(words[at] & 0xffff).filter(|k| *k < len).map(|k| words[at + k]))
        .collect()
}

/// Whether an instruction of grammar `g` may have `n` operand words
/// (counting one word an operand, many for strings and repeated operands).
fn fits(g: &rspirv::grammar::Instruction, n: usize) -> bool {
    use rspirv::grammar::OperandQuantifier;
    let min = g.operands.iter().filter(|o| o.quantifier == OperandQuantifier::One).count();
    let open = g
        .operands
        .iter()
        .any(|o| o.quantifier == OperandQuantifier::ZeroOrMore || o.kind == OperandKind::LiteralString);
    let max = g.operands.len();
    min <= n && (open || n <= max)
}

fn mutate(words: &mut Vec<u32>, rng: &mut Rng) -> String {
    let insts = instructions(words);
    if insts.is_empty() || words.len() <= 5 {
        let at = rng.below(words.len().max(1));
        if let Some(w) = words.get_mut(at) {
            *w ^= 1 << rng.below(32);
        }
        return format!("flip word {at}");
    }
    // Mostly an instruction that does not shape functions and blocks:
    // moving those makes modules rspirv cannot even load.
    let structural = |(at, _): &(usize, usize)| {
        let op = words[*at] & 0xffff;
        [Op::Function, Op::FunctionParameter, Op::FunctionEnd, Op::Label, Op::Return, Op::Branch]
            .iter()
            .any(|s| *s as u32 == op)
            || rspirv::grammar::reflect::is_block_terminator(Op::from_u32(op).unwrap_or(Op::Nop))
    };
    let plain: Vec<(usize, usize)> = insts.iter().filter(|i| !structural(i)).copied().collect();
    let (at, len) =
        if rng.chance(80) && !plain.is_empty() { plain[rng.below(plain.len())] } else { insts[rng.below(insts.len())] };
    // Weights: operands 35, bits 10, duplicates 10, drops 15, swaps 15, opcodes 15.
    let kind = match rng.below(100) {
        0..=34 => 1,
        35..=44 => 0,
        45..=54 => 2,
        55..=69 => 3,
        70..=84 => 4,
        _ => 5,
    };
    match kind {
        0 => {
            // Mostly operand words; now and then any word, header included.
            let w = if rng.chance(5) || len < 2 { rng.below(words.len()) } else { at + 1 + rng.below(len - 1) };
            let bit = rng.below(32);
            words[w] ^= 1 << bit;
            format!("flip bit {bit} of word {w}")
        }
        1 if len >= 2 => {
            let k = 1 + rng.below(len - 1);
            let old = words[at + k];
            let new = match rng.below(4) {
                0 => old.wrapping_add(rng.below(7) as u32).wrapping_sub(3),
                1 => {
                    let ids = result_ids(words, &insts);
                    ids.get(rng.below(ids.len().max(1))).copied().unwrap_or(old)
                }
                2 => result_word(words[at] & 0xffff).filter(|r| *r < len).map_or(old, |r| words[at + r]),
                _ => rng.below(9) as u32,
            };
            words[at + k] = new;
            format!("word {k} of the instruction at {at}: {old} -> {new}")
        }
        2 => {
            let copy: Vec<u32> = words[at..at + len].to_vec();
            let (to, _) = insts[rng.below(insts.len())];
            words.splice(to..to, copy);
            format!("duplicate the instruction at {at} before {to}")
        }
        3 => {
            words.drain(at..at + len);
            format!("drop the instruction at {at}")
        }
        4 => {
            // The next instruction, or one nearby (far ones mostly leave their block).
            let here = insts.iter().position(|i| i.0 == at).unwrap_or(0);
            let pick = if rng.chance(50) { here + 1 } else { (here + rng.below(17)).saturating_sub(8) };
            let Some(&(bt, blen)) = insts.get(pick) else { return "swap nothing".into() };
            let ((a, alen), (b, blen)) = if at < bt { ((at, len), (bt, blen)) } else { ((bt, blen), (at, len)) };
            if a == b {
                return "swap nothing".into();
            }
            let first = words[a..a + alen].to_vec();
            let second = words[b..b + blen].to_vec();
            let middle = words[a + alen..b].to_vec();
            let swapped: Vec<u32> = second.into_iter().chain(middle).chain(first).collect();
            words.splice(a..b + blen, swapped);
            format!("swap the instructions at {a} and {b}")
        }
        _ => {
            // Another opcode of the same word count: from the module, or any.
            let same: Vec<u32> = insts.iter().filter(|(_, l)| *l == len).map(|(a, _)| words[*a] & 0xffff).collect();
            let op = if rng.chance(70) && !same.is_empty() {
                same[rng.below(same.len())]
            } else {
                let fitting: Vec<u32> =
                    INSTRUCTION_TABLE.iter().filter(|g| fits(g, len - 1)).map(|g| g.opcode as u32).collect();
                fitting.get(rng.below(fitting.len().max(1))).copied().unwrap_or(words[at] & 0xffff)
            };
            let old = words[at] & 0xffff;
            words[at] = (words[at] & 0xffff_0000) | op;
            format!("opcode at {at}: {old} -> {op}")
        }
    }
}

// --------------------------------------------------------------- passes

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Pass {
    /// `parse`, and the word-level scans the layer runs before parsing.
    Parse,
    Serialized,
    Spinlock,
    /// The ordered strategy's fragment lowering and vertex output.
    Ordered,
    Fdm,
    /// The first-draw gate of lavapipe's multiview workaround.
    FirstDraw,
    /// The density map's per-view viewports (`ViewportIndex = ViewIndex`).
    ViewportIndex,
    /// Design D's viewport mask (`ViewportMaskNV` from a specialization constant).
    ViewportMask,
    /// The density built-ins from a flat input at location 31 (design G's
    /// one variant for every area).
    FdmInput,
    /// The same mask from a `uint` input at location 31 (design E).
    MaskInput,
    /// The mask passed on to the geometry shader made from the vertex
    /// shader (both outputs validated).
    Broadcast,
    /// Subsampled images read through their bin table, every combined image
    /// sampler of sets 0-3, bindings 0-15 taken for a subsampled one.
    Subsampled,
    Link,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Outcome {
    ValidOk,
    ValidRefused,
    ValidInvalidOutput,
    InvalidOk,
    InvalidRefused,
    Panic,
    Slow,
    /// A valid link that evaluates differently from the original pair.
    Wrong,
}

impl Outcome {
    fn failure(self) -> bool {
        matches!(self, Outcome::ValidInvalidOutput | Outcome::Panic | Outcome::Slow | Outcome::Wrong)
    }
}

std::thread_local! {
    static PANIC: std::cell::RefCell<Option<String>> = const { std::cell::RefCell::new(None) };
}

/// Runs `f`, catching a panic as its message.
fn guarded<T>(f: impl FnOnce() -> T) -> Result<T, String> {
    PANIC.with(|p| p.borrow_mut().take());
    catch_unwind(AssertUnwindSafe(f))
        .map_err(|_| PANIC.with(|p| p.borrow_mut().take()).unwrap_or_else(|| "panic".into()))
}

/// What one pass made: output modules (words, environment) or a refusal.
type Made = Result<Vec<(Vec<u32>, TargetEnv)>, String>;

struct Failure {
    case: u64,
    pass: Pass,
    outcome: Outcome,
    detail: String,
    mutations: Vec<String>,
}

#[derive(Default)]
struct Stats {
    runs: u64,
    unparsable: u64,
    invalid: u64,
    valid: u64,
    outcomes: BTreeMap<(Pass, Outcome), u64>,
    /// Why valid inputs were refused, per pass: how often, and the first case.
    refusals: BTreeMap<(Pass, String), (u64, u64)>,
    failures: Vec<Failure>,
    /// The most CPU time a pass took (wall clock where CPU time is not read).
    slowest: (Duration, u64, Option<Pass>),
    /// Passes over SLOW in wall clock but not in CPU time (reported only).
    wall_slow: u64,
    /// Whether the CPU time was read (else slow passes are reported only).
    cpu_time: bool,
    /// The oracle on valid vertex → fragment links: evaluated the same,
    /// not evaluated (why, how often), panics of the interpreter.
    evaluated: u64,
    not_evaluated: BTreeMap<String, u64>,
    oracle_panics: u64,
}

/// Evaluates the pair before (`original`) and after (`linked`, as words)
/// the link: None where they agree or the original cannot be evaluated
/// (counted), else what differs.
fn oracle(stats: &mut Stats, original: &(Module, Module), linked: &[(Vec<u32>, TargetEnv)]) -> Option<String> {
    let verdict = guarded(|| {
        let (Some(Ok(p)), Some(Ok(c))) = (linked.first().map(|x| parse(&x.0)), linked.get(1).map(|x| parse(&x.0)))
        else {
            return interp::Verdict::Differs("the linked pair does not parse".into());
        };
        interp::same(&original.0, &original.1, &p, &c)
    });
    match verdict {
        Ok(interp::Verdict::Same) => stats.evaluated += 1,
        Ok(interp::Verdict::NotEvaluated(why)) => {
            let short: String = reason(&why).chars().take(60).collect();
            *stats.not_evaluated.entry(short).or_default() += 1;
        }
        Ok(interp::Verdict::Differs(what)) => return Some(what),
        Err(_) => stats.oracle_panics += 1,
    }
    None
}

/// The CPU time the calling thread has used: /proc/thread-self/schedstat
/// (nanoseconds on the CPU), else utime + stime of /proc/thread-self/stat
/// (in USER_HZ ticks, 100 a second on Linux); None elsewhere.
fn thread_cpu() -> Option<Duration> {
    if let Ok(s) = std::fs::read_to_string("/proc/thread-self/schedstat") {
        if let Some(ns) = s.split_whitespace().next().and_then(|n| n.parse::<u64>().ok()) {
            return Some(Duration::from_nanos(ns));
        }
    }
    let stat = std::fs::read_to_string("/proc/thread-self/stat").ok()?;
    // Fields after the command name (in parentheses, which may hold spaces):
    // state is field 3, utime 14, stime 15.
    let rest = &stat[stat.rfind(')')? + 1..];
    let mut fields = rest.split_whitespace().skip(11);
    let ticks = fields.next()?.parse::<u64>().ok()? + fields.next()?.parse::<u64>().ok()?;
    Some(Duration::from_millis(ticks * 10))
}

/// A refusal's message without its ids and numbers, to group them.
fn reason(e: &str) -> String {
    let mut out = String::new();
    for word in e.split(' ') {
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(if word.chars().any(|c| c.is_ascii_digit()) { "N" } else { word });
    }
    out
}

struct Case<'a> {
    index: u64,
    words: Vec<u32>,
    env: TargetEnv,
    partner: Option<&'a Seed>,
    mutations: Vec<String>,
}

/// The case parsed, counted in `stats` (`valid`: it passed validation);
/// `None` where it could not be (a refusal, or a panic: a failure).
fn parse_case(case: &Case, stats: &mut Stats, dump: &Path, valid: bool) -> Option<Module> {
    match guarded(|| parse(&case.words)) {
        Ok(Ok(m)) => {
            *stats
                .outcomes
                .entry((Pass::Parse, if valid { Outcome::ValidOk } else { Outcome::InvalidOk }))
                .or_default() += 1;
            Some(m)
        }
        Ok(Err(e)) => {
            stats.unparsable += 1;
            let outcome = if valid { Outcome::ValidRefused } else { Outcome::InvalidRefused };
            *stats.outcomes.entry((Pass::Parse, outcome)).or_default() += 1;
            if valid {
                stats.refusals.entry((Pass::Parse, reason(&e.to_string()))).or_insert((0, case.index)).0 += 1;
            }
            None
        }
        Err(panic) => {
            stats.unparsable += 1;
            fail(stats, case, Pass::Parse, Outcome::Panic, panic, dump);
            None
        }
    }
}

/// The spinlock's configuration in the fuzzed cases, but for what varies by case.
const LOCKS: spinlock::Config =
    spinlock::Config { set: 7, binding: 0, size: 2048, block: (0, 0), quad: false, ttas: false, buffer: false };

/// The passes of a vertex entry point `main` (the output for `env`): the
/// first-draw gate, the per-view viewport index and the viewport mask, each
/// on its own copy.
/// The subsampled-image rewrite with every combined image sampler of sets
/// 0-3, bindings 0-15 taken for a subsampled one (filter and border drawn
/// from `rng`), validated for `env`.
fn subsampled_pass<'a>(module: &Module, env: TargetEnv, rng: &mut Rng) -> (Pass, Box<dyn FnOnce() -> Made + 'a>) {
    let mut m = module.clone();
    let (linear, border) = (rng.below(2) == 1, (rng.below(2) == 1, rng.below(2) == 1));
    let bindings: Vec<subsampled::Binding> = (0..4)
        .flat_map(|set| (0..16).map(move |binding| (set, binding)))
        .map(|(set, binding)| subsampled::Binding { set, binding, table: 100 + binding, linear, border })
        .collect();
    (
        Pass::Subsampled,
        Box::new(move || {
            let cfg = subsampled::Config { bindings: &bindings, cell: (8, 8) };
            subsampled::rewrite(&mut m, &cfg).map(|_| vec![(assemble(&m), env)]).map_err(|e| e.to_string())
        }),
    )
}

fn vertex_passes<'a>(module: &Module, env: TargetEnv) -> Vec<(Pass, Box<dyn FnOnce() -> Made + 'a>)> {
    fn pass<'a, E: std::fmt::Display + 'a>(
        module: &Module,
        env: TargetEnv,
        which: Pass,
        rewrite: fn(&mut Module, &str) -> Result<(), E>,
    ) -> (Pass, Box<dyn FnOnce() -> Made + 'a>) {
        let mut m = module.clone();
        (which, Box::new(move || rewrite(&mut m, "main").map(|_| vec![(assemble(&m), env)]).map_err(|e| e.to_string())))
    }
    vec![
        pass(module, env, Pass::FirstDraw, overlap_shaders::first_draw::gate),
        pass(module, env, Pass::ViewportIndex, overlap_shaders::viewport_index::per_view),
        pass(module, env, Pass::ViewportMask, overlap_shaders::viewport_index::viewport_mask),
        pass(module, env, Pass::MaskInput, |m, e| overlap_shaders::viewport_index::viewport_mask_from_input(m, e, 31)),
        (Pass::Broadcast, {
            let mut m = module.clone();
            Box::new(move || {
                let at = overlap_shaders::viewport_index::mask_to_output(&mut m, "main", 31, 16)
                    .map_err(|e| e.to_string())?;
                let gs = overlap_shaders::viewport_broadcast::geometry(&m, "main", at).map_err(|e| e.to_string())?;
                Ok(vec![(assemble(&m), env), (assemble(&gs), env)])
            })
        }),
    ]
}

fn run_case(case: &Case, rng: &mut Rng, stats: &mut Stats, dump: &Path) {
    stats.runs += 1;
    let valid = validate(&case.words, case.env).is_ok();
    if valid {
        stats.valid += 1;
    } else {
        stats.invalid += 1;
    }
    let Some(module) = parse_case(case, stats, dump, valid) else { return };
    let words = &case.words;
    let side = side_of(&module);
    let mut passes: Vec<(Pass, Box<dyn FnOnce() -> Made + '_>)> = Vec::new();
    let env = case.env;
    let one = move |m: &Module| vec![(assemble(m), env)];
    let scans = guarded(|| (interlock::uses_interlock(words), fdm::uses_density_builtins(words)));
    let uses_interlock = match scans {
        Ok((interlock, _)) => interlock,
        Err(panic) => {
            fail(stats, case, Pass::Parse, Outcome::Panic, panic, dump);
            true
        }
    };
    if uses_interlock {
        let mut m = module.clone();
        passes.push((
            Pass::Serialized,
            Box::new(move || {
                interlock::lower_serialized(&mut m);
                Ok(one(&m))
            }),
        ));
        let mut m = module.clone();
        let cfg = spinlock::Config {
            // Quad locks on every other case, buffer locks on every third (not
            // drawn from `rng`, which keeps the cases of a seed); quads need SPIR-V 1.3.
            quad: case.index % 2 == 1 && !matches!(env, TargetEnv::Vulkan1_0),
            ttas: case.index % 4 == 1,
            buffer: case.index % 3 == 2,
            ..LOCKS
        };
        passes.push((
            Pass::Spinlock,
            Box::new(move || spinlock::lower(&mut m, &cfg).map(|_| one(&m)).map_err(|e| e.to_string())),
        ));
        let mut m = module.clone();
        let cfg = overlap_shaders::ordered::Config {
            set: 7,
            location: 31,
            shading_rate: rng.chance(50),
            demote: rng.chance(50),
            measure: ordered_measure(case.index),
        };
        passes.push((
            Pass::Ordered,
            Box::new(move || overlap_shaders::ordered::lower(&mut m, &cfg).map(|_| one(&m)).map_err(|e| e.to_string())),
        ));
    } else if overlap_shaders::ordered::declares_vertex_entry(&case.words) {
        let mut m = module.clone();
        passes.push((
            Pass::Ordered,
            Box::new(move || {
                overlap_shaders::ordered::add_instance_output(&mut m, 31).map(|_| one(&m)).map_err(|e| e.to_string())
            }),
        ));
    }
    if overlap_shaders::ordered::declares_vertex_entry(&case.words) {
        passes.extend(vertex_passes(&module, env));
    }
    if side == Side::Consumer {
        let mut m = module.clone();
        let areas = [(1, 1), (2, 2), (2, 4), (4, 4)];
        let p = fdm::Params { area: areas[rng.below(areas.len())], invocations: [1, 4][rng.below(2)] };
        passes.push((Pass::Fdm, Box::new(move || fdm::lower(&mut m, &p).map(|_| one(&m)).map_err(|e| e.to_string()))));
        let mut m = module.clone();
        passes.push((
            Pass::FdmInput,
            Box::new(move || fdm::lower_from_input(&mut m, 1, 31).map(|_| one(&m)).map_err(|e| e.to_string())),
        ));
    }
    passes.push(subsampled_pass(&module, env, rng));
    let (link, original) = link_pass(case, &module, env, rng, valid).unzip();
    let original = original.flatten();
    passes.extend(link.map(|l| (Pass::Link, l)));
    for (pass, run) in passes {
        let started = Instant::now();
        let cpu_started = thread_cpu();
        let made = guarded(run);
        let wall = started.elapsed();
        let cpu = cpu_started.and_then(|c0| Some(thread_cpu()?.saturating_sub(c0)));
        stats.cpu_time = cpu.is_some();
        let took = cpu.unwrap_or(wall);
        if took > stats.slowest.0 {
            stats.slowest = (took, case.index, Some(pass));
        }
        let outcome = match &made {
            Err(panic) => {
                fail(stats, case, pass, Outcome::Panic, panic.clone(), dump);
                continue;
            }
            Ok(Err(refusal)) => {
                if valid {
                    stats.refusals.entry((pass, reason(refusal))).or_insert((0, case.index)).0 += 1;
                    Outcome::ValidRefused
                } else {
                    Outcome::InvalidRefused
                }
            }
            Ok(Ok(outputs)) if valid => {
                let bad = outputs.iter().find_map(|(w, e)| validate(w, *e).err());
                match bad {
                    Some(e) => {
                        fail(stats, case, pass, Outcome::ValidInvalidOutput, e.to_string(), dump);
                        continue;
                    }
                    None => Outcome::ValidOk,
                }
            }
            Ok(Ok(_)) => Outcome::InvalidOk,
        };
        if cpu.is_some_and(|c| c > SLOW) {
            fail(stats, case, pass, Outcome::Slow, format!("{took:?} of CPU time ({wall:?} wall clock)"), dump);
            continue;
        }
        if let (Pass::Link, Outcome::ValidOk, Ok(Ok(outputs)), Some(pair)) = (pass, outcome, &made, &original) {
            if let Some(what) = oracle(stats, pair, outputs) {
                fail(stats, case, pass, Outcome::Wrong, what, dump);
                continue;
            }
        }
        if wall > SLOW {
            // Reported, not failed: the CPU time is under SLOW (the runner
            // stalled the pass) or could not be read.
            stats.wall_slow += 1;
            eprintln!(
                "fuzz: case {} {pass:?}: {wall:?} wall clock, {} (not a failure)",
                case.index,
                cpu.map_or("CPU time not read".to_string(), |c| format!("{c:?} of CPU time"))
            );
        }
        *stats.outcomes.entry((pass, outcome)).or_default() += 1;
    }
}

/// The linker's pass on the case and its partner (in pipeline order, at a
/// level, environment and driver drawn from `rng`), and the vertex →
/// fragment pair the oracle evaluates before and after it (valid inputs).
#[allow(clippy::type_complexity)]
fn link_pass(
    case: &Case,
    module: &Module,
    env: TargetEnv,
    rng: &mut Rng,
    valid: bool,
) -> Option<(Box<dyn FnOnce() -> Made>, Option<(Module, Module)>)> {
    if let (Some(partner), Ok(stage)) = (case.partner, stage_of(module, "case")) {
        if let (Ok(other), Some(theirs)) = (parse(&partner.words), partner.stage) {
            let level = if rng.chance(50) { Level::Safe } else { Level::Full };
            let link_env = LinkEnv { all_visible: rng.chance(50), ..Default::default() };
            // In pipeline order: the partner first where it feeds this stage.
            let (p, c, pe, ce) = if theirs.feeds(stage) {
                (other, module.clone(), partner.env, env)
            } else {
                (module.clone(), other, env, partner.env)
            };
            let stages = if theirs.feeds(stage) { (theirs, stage) } else { (stage, theirs) };
            let original = (valid && stages == (Stage::Vertex, Stage::Fragment)).then(|| (p.clone(), c.clone()));
            let mut pair = [p, c];
            // Half the time through the chain driver (every adjacent pair),
            // else the pair alone (a fragment consumer's uniform rule).
            let chain = rng.chance(50);
            let link: Box<dyn FnOnce() -> Made> = Box::new(move || {
                let linked = if chain {
                    link_stages(&mut pair, level, &[LinkEnv::default(), link_env]).map(|_| ())
                } else {
                    let [p, c] = &mut pair;
                    overlap_shaders::varyings::link_with(p, c, level, &link_env).map(|_| ())
                };
                linked.map(|_| vec![(assemble(&pair[0]), pe), (assemble(&pair[1]), ce)]).map_err(|e| e.to_string())
            });
            return Some((link, original));
        }
    }
    None
}

fn fail(stats: &mut Stats, case: &Case, pass: Pass, outcome: Outcome, detail: String, dump: &Path) {
    *stats.outcomes.entry((pass, outcome)).or_default() += 1;
    let _ = std::fs::create_dir_all(dump);
    let bytes = |w: &[u32]| w.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
    let file = dump.join(format!("case-{}-{pass:?}.spv", case.index));
    let _ = std::fs::write(&file, bytes(&case.words));
    if let Some(p) = case.partner {
        let _ = std::fs::write(dump.join(format!("case-{}-{pass:?}-partner.spv", case.index)), bytes(&p.words));
    }
    eprintln!(
        "fuzz: case {} {pass:?}: {outcome:?}: {detail}\n      mutations: {}\n      input: {}",
        case.index,
        case.mutations.join("; "),
        file.display()
    );
    stats.failures.push(Failure { case: case.index, pass, outcome, detail, mutations: case.mutations.clone() });
}

// ------------------------------------------------------------------ run

/// Shared with the watchdog: the case running and when it started.
#[derive(Default)]
struct Progress {
    case: AtomicU64,
    started_ms: AtomicU64,
    running: AtomicBool,
    input: Mutex<Vec<u32>>,
}

fn fuzz(args: &Args, seeds: &[Seed], progress: &Progress, clock: Instant) -> Stats {
    let mut stats = Stats::default();
    let deadline = args.seconds.map(|s| clock + Duration::from_secs(s));
    let last = args.iterations.map_or(u64::MAX, |n| args.skip.saturating_add(n));
    let mut index = args.skip;
    let mut report_at = clock + Duration::from_secs(30);
    while index < last && deadline.is_none_or(|d| Instant::now() < d) {
        let mut rng = Rng::new(args.seed, index);
        let seed = &seeds[rng.below(seeds.len())];
        let mut words = seed.words.clone();
        let mutations: Vec<String> = (0..1 + rng.below(4)).map(|_| mutate(&mut words, &mut rng)).collect();
        let partner = match seed.mate {
            Some(mate) if rng.chance(50) => Some(&seeds[mate]),
            _ => (!seed.partners.is_empty()).then(|| &seeds[seed.partners[rng.below(seed.partners.len())]]),
        };
        let case = Case { index, words, env: seed.env, partner, mutations };
        if args.verbose {
            eprintln!("fuzz: case {index}: {} + {}", seed.name, case.mutations.join("; "));
        }
        if let Some(path) = &args.save_current {
            let bytes: Vec<u8> = case.words.iter().flat_map(|x| x.to_le_bytes()).collect();
            let _ = std::fs::write(path, bytes);
        }
        if let Ok(mut input) = progress.input.lock() {
            input.clone_from(&case.words);
        }
        progress.case.store(index, Ordering::SeqCst);
        progress.started_ms.store(clock.elapsed().as_millis() as u64, Ordering::SeqCst);
        progress.running.store(true, Ordering::SeqCst);
        run_case(&case, &mut rng, &mut stats, &args.dump);
        progress.running.store(false, Ordering::SeqCst);
        index += 1;
        if Instant::now() > report_at {
            eprintln!(
                "fuzz: {} runs, {} valid, {} failures ({:.0} s)",
                stats.runs,
                stats.valid,
                stats.failures.len(),
                clock.elapsed().as_secs_f64()
            );
            report_at += Duration::from_secs(30);
        }
    }
    stats
}

fn print(stats: &Stats, seeds: &[Seed], args: &Args, took: Duration) {
    println!(
        "fuzz: seed {}, cases {}..{}, {} runs in {:.1} s ({:.0} runs/s), {} seeds",
        args.seed,
        args.skip,
        args.skip + stats.runs,
        stats.runs,
        took.as_secs_f64(),
        stats.runs as f64 / took.as_secs_f64().max(1e-9),
        seeds.len()
    );
    println!(
        "inputs: {} valid, {} invalid (spirv-val); {} of all unparsable (rspirv)",
        stats.valid, stats.invalid, stats.unparsable
    );
    let outcomes = [
        (Outcome::ValidOk, "valid→valid"),
        (Outcome::ValidRefused, "valid→refused"),
        (Outcome::ValidInvalidOutput, "valid→INVALID"),
        (Outcome::InvalidOk, "invalid→output"),
        (Outcome::InvalidRefused, "invalid→refused"),
        (Outcome::Panic, "PANIC"),
        (Outcome::Slow, "SLOW"),
        (Outcome::Wrong, "valid→WRONG"),
    ];
    print!("{:<12}", "pass");
    for (_, name) in &outcomes {
        print!("{name:>17}");
    }
    println!();
    for pass in [
        Pass::Parse,
        Pass::Serialized,
        Pass::Spinlock,
        Pass::Ordered,
        Pass::Fdm,
        Pass::FdmInput,
        Pass::FirstDraw,
        Pass::ViewportIndex,
        Pass::ViewportMask,
        Pass::MaskInput,
        Pass::Broadcast,
        Pass::Link,
    ] {
        print!("{:<12}", format!("{pass:?}"));
        for (o, _) in &outcomes {
            print!("{:>17}", stats.outcomes.get(&(pass, *o)).copied().unwrap_or(0));
        }
        println!();
    }
    if !stats.refusals.is_empty() {
        println!("refusals of valid inputs:");
        let mut by_count: Vec<_> = stats.refusals.iter().collect();
        by_count.sort_by_key(|(k, (n, _))| (std::cmp::Reverse(*n), (*k).clone()));
        for ((pass, why), (n, first)) in by_count.iter().take(12) {
            println!("  {n:>7} {pass:?}: {why} (first: case {first})");
        }
    }
    let not_evaluated: u64 = stats.not_evaluated.values().sum();
    println!(
        "oracle (valid vertex→fragment links evaluated on the CPU before and after): {} the same, {} WRONG, \
         {not_evaluated} not evaluated, {} interpreter panics",
        stats.evaluated,
        stats.outcomes.get(&(Pass::Link, Outcome::Wrong)).copied().unwrap_or(0),
        stats.oracle_panics
    );
    let mut why: Vec<_> = stats.not_evaluated.iter().collect();
    why.sort_by_key(|(k, n)| (std::cmp::Reverse(**n), (*k).clone()));
    for (k, n) in why.iter().take(5) {
        println!("  {n:>7} not evaluated: {k}");
    }
    let (t, case, pass) = &stats.slowest;
    let clock = if stats.cpu_time { "CPU time" } else { "wall clock: CPU time not read, slow passes not failed" };
    println!("slowest pass: {t:?} of {clock} (case {case}, {pass:?})");
    println!("passes over {SLOW:?} of wall clock only (not failures): {}", stats.wall_slow);
    println!("failures: {}", stats.failures.len());
    for f in stats.failures.iter().take(20) {
        println!("  case {} {:?} {:?}: {} [{}]", f.case, f.pass, f.outcome, f.detail, f.mutations.join("; "));
    }
}

/// Links every read-back seed pair as it is at `safe` and `full` and
/// evaluates it before and after (the oracle of the cases, unmutated);
/// prints the figures and returns how many pairs link wrong.
fn check_readback_pairs(seeds: &[Seed]) -> usize {
    let (mut pairs, mut same, mut wrong, mut other) = (0, 0, 0, Vec::new());
    for (producer, consumer) in seeds.iter().filter_map(|s| Some((s, &seeds[s.mate?]))) {
        pairs += 1;
        for level in [Level::Safe, Level::Full] {
            let checked = guarded(|| {
                let (p0, c0) = (parse(&producer.words).ok()?, parse(&consumer.words).ok()?);
                let (mut p, mut c) = (p0.clone(), c0.clone());
                let linked = overlap_shaders::varyings::link(&mut p, &mut c, level);
                if let Err(e) = linked {
                    return Some(interp::Verdict::NotEvaluated(format!("refused: {e}")));
                }
                for (m, env) in [(&p, producer.env), (&c, consumer.env)] {
                    if let Err(e) = validate(&assemble(m), env) {
                        return Some(interp::Verdict::Differs(format!("invalid: {e}")));
                    }
                }
                Some(interp::same(&p0, &c0, &p, &c))
            });
            match checked {
                Ok(Some(interp::Verdict::Same)) => same += 1,
                Ok(Some(interp::Verdict::Differs(what))) => {
                    wrong += 1;
                    eprintln!("fuzz: read-back pair {} at {level:?}: WRONG: {what}", producer.name);
                }
                Ok(Some(interp::Verdict::NotEvaluated(why))) => {
                    other.push(format!("{} {level:?}: {why}", producer.name))
                }
                Ok(None) => other.push(format!("{}: does not parse", producer.name)),
                Err(panic) => {
                    wrong += 1;
                    eprintln!("fuzz: read-back pair {} at {level:?}: panic: {panic}", producer.name);
                }
            }
        }
    }
    println!(
        "read-back seed pairs: {pairs}, linked at safe and full and evaluated: {same} the same, {wrong} WRONG, {} not evaluated",
        other.len()
    );
    for o in other.iter().take(5) {
        println!("  not evaluated: {o}");
    }
    wrong
}

fn main() -> ExitCode {
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    std::panic::set_hook(Box::new(|info| {
        let text = info.to_string();
        PANIC.with(|p| *p.borrow_mut() = Some(text));
    }));
    let seeds = seeds(&args);
    if seeds.is_empty() {
        eprintln!("fuzz: no valid seed (is glslangValidator installed? --corpus DIR?)");
        return ExitCode::from(2);
    }
    let wrong_pairs = check_readback_pairs(&seeds);
    let clock = Instant::now();
    let progress = Arc::new(Progress::default());
    let args = Arc::new(args);
    let seeds = Arc::new(seeds);
    let worker = {
        let (args, seeds, progress) = (Arc::clone(&args), Arc::clone(&seeds), Arc::clone(&progress));
        std::thread::Builder::new()
            .name("fuzz".into())
            .stack_size(args.stack_kib * 1024)
            .spawn(move || fuzz(&args, &seeds, &progress, clock))
    };
    let worker = match worker {
        Ok(w) => w,
        Err(e) => {
            eprintln!("fuzz: {e}");
            return ExitCode::from(2);
        }
    };
    // The watchdog: a case running past HANG stops the run.
    while !worker.is_finished() {
        std::thread::sleep(Duration::from_millis(200));
        let started = Duration::from_millis(progress.started_ms.load(Ordering::SeqCst));
        if progress.running.load(Ordering::SeqCst) && clock.elapsed().saturating_sub(started) > HANG {
            let case = progress.case.load(Ordering::SeqCst);
            let file = args.dump.join(format!("case-{case}-hang.spv"));
            if let Ok(input) = progress.input.lock() {
                let _ = std::fs::create_dir_all(&args.dump);
                let _ = std::fs::write(&file, input.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>());
            }
            eprintln!(
                "fuzz: case {case} hangs (over {HANG:?}); input in {}; replay with --seed {} --skip {case} --iterations 1",
                file.display(),
                args.seed
            );
            return ExitCode::from(3);
        }
    }
    let stats = match worker.join() {
        Ok(s) => s,
        Err(_) => {
            eprintln!("fuzz: the worker thread panicked outside a case");
            return ExitCode::from(2);
        }
    };
    print(&stats, &seeds, &args, clock.elapsed());
    if wrong_pairs > 0 || stats.failures.iter().any(|f| f.outcome.failure()) {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

/// The ordered lowering's measurement build for case `index`: every
/// seventh case the late lookup, every fifth (of the rest) the parts.
fn ordered_measure(index: u64) -> Option<overlap_shaders::ordered::Measure> {
    use overlap_shaders::ordered::Measure;
    match index {
        i if i % 7 == 6 => Some(Measure::LateLookup),
        i if i % 5 == 4 => Some(Measure::Parts),
        _ => None,
    }
}

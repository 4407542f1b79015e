//! The varying linker at pipeline creation, on a generated corpus of 32
//! vertex/fragment pairs (tests/build.rs): rendering is bit-identical with
//! `safe` (and, on lavapipe, with `full`) to `off`, the validation layer below
//! sees valid linked pipelines (and a deliberately mis-linked pair changes
//! the checksums those comparisons use), and the linker removes what the
//! corpus's own sources declare removable (dead, flat constant, duplicated
//! outputs), at least what spirv-opt's own interface passes remove.

use overlap_tests::harness::{self, app, overlap_cli, run, vk_command, Layers};
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::process::Command;

/// A `layout(location = N) [flat] in|out TYPE NAME;` declaration.
#[derive(Clone, Debug)]
struct Varying {
    location: u32,
    flat: bool,
    ty: String,
    name: String,
}

/// What a GLSL stage of the corpus (or tests/shaders) declares: its
/// location-decorated outputs and inputs, and the last expression assigned
/// to each name (`name = expr;` statements).
struct Stage {
    outputs: Vec<Varying>,
    inputs: Vec<Varying>,
    assigned: HashMap<String, String>,
    lines: Vec<String>,
}

fn stage(path: &Path) -> Stage {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let (mut outputs, mut inputs, mut assigned) = (Vec::new(), Vec::new(), HashMap::new());
    for line in text.lines().map(str::trim) {
        if let Some(rest) = line.strip_prefix("layout(location = ") {
            let (loc, decl) = rest.split_once(')').unwrap();
            let words: Vec<&str> = decl.trim_end_matches(';').split_whitespace().collect();
            let flat = words[0] == "flat";
            let words = &words[flat as usize..];
            let v = Varying { location: loc.parse().unwrap(), flat, ty: words[1].into(), name: words[2].into() };
            match words[0] {
                "out" => outputs.push(v),
                "in" => inputs.push(v),
                other => panic!("{}: {other} in {line}", path.display()),
            }
        } else if let Some((lhs, rhs)) = line.strip_suffix(';').and_then(|l| l.split_once(" = ")) {
            if lhs.chars().all(|c| c.is_alphanumeric() || c == '_') {
                assigned.insert(lhs.to_string(), rhs.to_string());
            }
        }
    }
    Stage { outputs, inputs, assigned, lines: text.lines().map(str::to_string).collect() }
}

/// Scalar components of a GLSL type.
fn components(ty: &str) -> u32 {
    match ty {
        "float" | "int" | "uint" | "bool" => 1,
        _ if ["vec", "ivec", "uvec", "bvec"].iter().any(|p| ty.strip_prefix(p).is_some_and(|n| n.len() == 1)) => {
            ty[ty.len() - 1..].parse().unwrap()
        }
        _ => panic!("type {ty}"),
    }
}

/// An expression with its number literals written one way (`0.300` and
/// `0.3` are the same value) and no spaces.
fn normalized(expr: &str) -> String {
    let mut out = String::new();
    let mut chars = expr.chars().peekable();
    let mut prev_ident = false;
    while let Some(c) = chars.next() {
        if c.is_ascii_digit() && !prev_ident {
            let mut num = c.to_string();
            while let Some(&d) = chars.peek().filter(|d| d.is_ascii_digit() || **d == '.') {
                num.push(d);
                chars.next();
            }
            out += &format!("{:?}", num.parse::<f64>().unwrap());
            prev_ident = false;
        } else if !c.is_whitespace() {
            out.push(c);
            prev_ident = c.is_alphanumeric() || c == '_';
        }
    }
    out
}

/// A constant: a number, or a vector constructor of numbers.
fn is_literal(expr: &str) -> bool {
    let e = normalized(expr);
    let e = e.trim_end_matches('u');
    let inner = e.split_once('(').filter(|(f, _)| f.ends_with("vec2") || f.ends_with("vec3") || f.ends_with("vec4"));
    match inner {
        Some((_, args)) => args.trim_end_matches(')').split(',').all(|a| a.parse::<f64>().is_ok()),
        None => e.parse::<f64>().is_ok(),
    }
}

/// What the producer → consumer interface declares removable at `safe`,
/// derived from the sources alone: outputs the consumer never declares
/// (dead), flat outputs always assigned a literal (constants), flat outputs
/// assigned a push-constant expression (uniform candidates), and outputs
/// assigned the same value (after normalising literals) as an earlier
/// output of the same type and interpolation (duplicates, as (later,
/// earlier) locations; uniform candidates left out, since which of those
/// move is the linker's choice).
#[derive(Debug, Default)]
struct Declared {
    dead: Vec<u32>,
    constants: Vec<u32>,
    uniforms: Vec<u32>,
    duplicates: Vec<(u32, u32)>,
    locations: u32,
    components: u32,
    /// Components of the outputs none of the above removes.
    kept_components: u32,
}

fn declared(producer: &Stage, consumer: &Stage) -> Declared {
    let read: Vec<u32> = consumer.inputs.iter().map(|v| v.location).collect();
    let mut outs = producer.outputs.clone();
    outs.sort_by_key(|v| v.location);
    let expr =
        |v: &Varying| producer.assigned.get(&v.name).unwrap_or_else(|| panic!("{} is never assigned", v.name)).clone();
    let mut d = Declared {
        locations: outs.len() as u32,
        components: outs.iter().map(|v| components(&v.ty)).sum(),
        ..Default::default()
    };
    let mut first: BTreeMap<(bool, String, String), u32> = BTreeMap::new();
    for v in &outs {
        let e = expr(v);
        if !read.contains(&v.location) {
            d.dead.push(v.location);
        } else if v.flat && is_literal(&e) {
            d.constants.push(v.location);
        } else if v.flat && e.contains("pc.") {
            d.uniforms.push(v.location);
        } else if let Some(&earlier) = first.get(&(v.flat, v.ty.clone(), normalized(&e))) {
            d.duplicates.push((v.location, earlier));
        } else {
            first.insert((v.flat, v.ty.clone(), normalized(&e)), v.location);
            d.kept_components += components(&v.ty);
        }
    }
    d
}

fn out_dir() -> &'static Path {
    Path::new(env!("OUT_DIR"))
}

fn shader_source(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("shaders").join(name)
}

fn corpus(level: &str) -> (harness::Outcome, std::path::PathBuf) {
    let dir = harness::scratch(&format!("corpus-{level}"));
    let o = run(app(Layers::OverlapOverValidation, &["varyings", dir.to_str().unwrap()])
        .env("VK_OVERLAP_EMULATION_VARYINGS", level)
        .env("VK_OVERLAP_EMULATION_VARYINGS_UNIFORMS", "on")
        .env("VK_OVERLAP_EMULATION_LOG_LEVEL", "debug"));
    o.assert_ok();
    (o, dir)
}

/// The corpus with every stage's code inline (`VkShaderModuleCreateInfo`
/// in the stage's `pNext`, no module; issue 13, item 3): linked like modules,
/// bit-identical at `safe` to `off`, the validation layer below silent.
#[test]
fn inline_stages_are_linked_and_render_the_same() {
    let inline = |level: &str| {
        let o = run(app(Layers::OverlapOverValidation, &["varyings", "inline"])
            .env("VK_OVERLAP_EMULATION_VARYINGS", level)
            .env("VK_OVERLAP_EMULATION_VARYINGS_UNIFORMS", "on")
            .env("VK_OVERLAP_EMULATION_LOG_LEVEL", "debug"));
        o.assert_ok();
        o
    };
    let (off, safe) = (inline("off"), inline("safe"));
    let sums = |o: &harness::Outcome| -> Vec<String> {
        o.stdout.lines().filter(|l| l.starts_with("pair=")).map(|l| l.split_whitespace().take(2).collect()).collect()
    };
    assert_eq!(sums(&off).len(), 32);
    assert_eq!(sums(&safe), sums(&off), "inline stages at safe must be bit-identical");
    assert_eq!(off.stderr.matches("OVERLAP-Varyings-Linked").count(), 0);
    // What the module path links on the same corpus, link for link: the
    // report of each linked pair (what was removed, merged and packed), its
    // timing and cache notes cut off.
    let (modules, _) = corpus("safe");
    let reports = |o: &harness::Outcome| -> Vec<String> {
        let mut r: Vec<String> = o
            .stderr
            .lines()
            .filter(|l| l.contains("OVERLAP-Varyings-Linked") && !l.ends_with("; cached)"))
            .map(|l| l.split("; link_us=").next().unwrap_or(l).to_string())
            .collect();
        r.sort();
        r
    };
    let wanted = reports(&modules);
    assert!(!wanted.is_empty(), "the module path linked nothing:\n{}", modules.stderr);
    assert_eq!(reports(&safe), wanted, "inline stages must be linked as their modules are");
}

/// Issue 13, item 1: the corpus pairs built as four graphics pipeline
/// libraries (vertex input, pre-rasterization, fragment shader, fragment
/// output) and linked with link-time optimization are linked exactly as the
/// module path links the same pairs (every report, cache hits included, so
/// the same count), render bit-identical to `off`, and the validation layer
/// below stays silent; so are two shader libraries whose final link holds
/// the interface state itself. Controls: fast linking (no link-time optimization)
/// links nothing, and neither does the library route disabled
/// (`debug_fail=link-libraries`, which also shows the fallback: the
/// application's final link goes down as it is and renders the same).
#[test]
fn pipeline_libraries_are_linked_at_link_time_optimization() {
    let corpus = |route: &str, level: &str, fail: &str| {
        let o = run(app(Layers::OverlapOverValidation, &["varyings", route])
            .env("VK_OVERLAP_EMULATION_VARYINGS", level)
            .env("VK_OVERLAP_EMULATION_VARYINGS_UNIFORMS", "on")
            .env("VK_OVERLAP_EMULATION_DEBUG_FAIL", fail)
            .env("VK_OVERLAP_EMULATION_LOG_LEVEL", "debug"));
        o.assert_ok();
        o
    };
    let sums = |o: &harness::Outcome| -> Vec<String> {
        o.stdout.lines().filter(|l| l.contains("checksum=")).map(|l| l.split_whitespace().take(2).collect()).collect()
    };
    // Each linked pipeline's report, its cost (timings, cache) cut off.
    let reports = |o: &harness::Outcome| -> Vec<String> {
        let mut r: Vec<String> = o
            .stderr
            .lines()
            .filter(|l| l.contains("OVERLAP-Varyings-Linked"))
            .map(|l| l.rsplit_once("; ").map_or(l, |(a, _)| a).to_string())
            .collect();
        r.sort();
        r
    };
    let modules = corpus("pairs", "safe", "");
    let wanted = reports(&modules);
    assert!(!wanted.is_empty(), "the module path linked nothing:\n{}", modules.stderr);
    let linked_as_modules = |o: &harness::Outcome| -> Result<(), String> {
        let got = reports(o);
        (got == wanted).then_some(()).ok_or(format!("{} linked pipelines, {} wanted", got.len(), wanted.len()))
    };
    let off = corpus("libraries", "off", "");
    assert_eq!(sums(&off).len(), 2 * 32, "{}", off.stdout);
    assert_eq!(sums(&modules), sums(&off), "libraries at off render as modules do");
    let lto = corpus("libraries", "safe", "");
    assert_eq!(sums(&lto), sums(&off), "linked libraries at safe must be bit-identical");
    linked_as_modules(&lto).unwrap();
    // Two shader libraries; the final link defines the vertex input and
    // fragment output state itself.
    let own = corpus("libraries-own", "safe", "");
    assert_eq!(sums(&own), sums(&off), "linked shader libraries at safe must be bit-identical");
    linked_as_modules(&own).unwrap();
    let fast = corpus("libraries-fast", "safe", "");
    assert_eq!(sums(&fast), sums(&off));
    assert!(linked_as_modules(&fast).is_err());
    assert_eq!(reports(&fast).len(), 0, "fast linking must stay unlinked");
    let disabled = corpus("libraries", "safe", "link-libraries");
    assert_eq!(sums(&disabled), sums(&off), "the fallback renders the same");
    assert!(linked_as_modules(&disabled).is_err());
    assert_eq!(reports(&disabled).len(), 0, "disabled, the library route links nothing");
    assert!(disabled.stderr.contains("passed down unlinked"), "{}", disabled.stderr);
}

/// Checksums equal at `off` and `safe` (the control that a wrong link would
/// change them is `a_wrong_link_changes_the_render_checksum`).
#[test]
fn corpus_renders_the_same_with_the_linker() {
    let (off, off_dir) = corpus("off");
    let (safe, _) = corpus("safe");
    let (full, full_dir) = corpus("full");
    let sums = |o: &harness::Outcome| -> Vec<String> {
        o.stdout
            .lines()
            .filter(|l| l.starts_with("pair="))
            .map(|l| l.split_whitespace().take(2).collect::<Vec<_>>().join(" "))
            .collect()
    };
    assert_eq!(sums(&off).len(), 32);
    assert_eq!(sums(&safe), sums(&off), "safe must be bit-identical");
    assert_eq!(off.stderr.matches("OVERLAP-Varyings-Linked").count(), 0);
    // Each linked pair is linked once (the corpus pairs all differ); its
    // repeat, from new modules with the same code, comes from the cache.
    let lines = |o: &harness::Outcome, cached: bool| {
        o.stderr.lines().filter(|l| l.contains("OVERLAP-Varyings-Linked") && l.ends_with("; cached)") == cached).count()
    };
    let linked = lines(&safe, false);
    // Uniform expressions moved (flat ones at safe), and the renders above are equal.
    let moved = |o: &harness::Outcome| {
        o.stderr.lines().filter(|l| l.contains("OVERLAP-Varyings-Linked") && !l.contains("uniforms []")).count()
    };
    assert!(moved(&safe) > 0, "no uniform expression moved at safe");
    // Sums of two interpolated inputs move to the producer at full only.
    let moved_sums = |o: &harness::Outcome| o.stderr.lines().filter(|l| l.contains("sums moved [(")).count();
    assert_eq!(moved_sums(&safe), 0);
    assert!(moved_sums(&full) > 0, "no sum moved at full");
    assert!(moved(&full) >= moved(&safe));
    assert!(linked >= 25, "only {linked} of 32 pairs linked at safe");
    assert!(lines(&full, false) >= linked);
    // The geometry and tessellation pairs are not repeated.
    assert_eq!(lines(&safe, true), linked - 2, "{}", safe.stderr);
    assert_eq!(lines(&full, true), lines(&full, false) - 2);
    let repeats = |o: &harness::Outcome| -> Vec<String> {
        o.stdout
            .lines()
            .filter(|l| l.starts_with("repeat="))
            .map(|l| l.replace("repeat=", "pair=").split_whitespace().take(2).collect::<Vec<_>>().join(" "))
            .collect()
    };
    assert_eq!(repeats(&safe), sums(&safe), "a cached link renders differently");
    assert_eq!(repeats(&full), sums(&full));
    // The geometry shader → fragment shader pair is linked too.
    let geometry = |o: &harness::Outcome| o.value("geometry").map(str::to_string);
    assert!(geometry(&off).is_some());
    assert_eq!(geometry(&safe), geometry(&off));
    // So is the tessellation evaluation shader → fragment shader pair.
    assert!(off.value("tessellation").is_some());
    assert_eq!(safe.value("tessellation"), off.value("tessellation"));
    // Their link reports, derived from what the producers declare
    // (tests/shaders/passthrough.geom and .tese: `used` read, `dead` not, `k`
    // a flat constant, `dup` the same value as `used`) and what
    // geom_consumer.frag reads (every component of what it reads): each pair
    // linked once, at `safe`.
    let consumer = stage(&shader_source("geom_consumer.frag"));
    let mut reports: BTreeMap<String, usize> = BTreeMap::new();
    for producer in ["passthrough.geom", "passthrough.tese"] {
        let d = declared(&stage(&shader_source(producer)), &consumer);
        assert!(!d.dead.is_empty() && !d.constants.is_empty() && !d.duplicates.is_empty(), "{producer}: {d:?}");
        let removed = (d.dead.len() + d.constants.len() + d.uniforms.len() + d.duplicates.len()) as u32;
        let line = format!(
            "locations {} -> {}, components {} -> {} (dead {:?}, constants {:?}, uniforms {:?}, duplicates {:?}, sums moved []",
            d.locations,
            d.locations - removed,
            d.components,
            d.kept_components,
            d.dead,
            d.constants,
            d.uniforms,
            d.duplicates
        );
        *reports.entry(line).or_default() += 1;
    }
    for (line, producers) in reports {
        assert_eq!(safe.stderr.matches(&line).count(), producers, "expected {line:?}:\n{}", safe.stderr);
    }
    // full: within one step of 8-bit rounding.
    for n in 0..32 {
        let a = std::fs::read(off_dir.join(format!("{n}.rgba"))).unwrap();
        let b = std::fs::read(full_dir.join(format!("{n}.rgba"))).unwrap();
        let worst = a.iter().zip(&b).map(|(x, y)| x.abs_diff(*y)).max().unwrap();
        assert!(worst <= 1, "pair {n}: full differs by {worst}");
    }
}

fn link_json(vert: &Path, frag: &Path) -> serde_json::Value {
    // The corpus's pipelines let the fragment stage read the push constants.
    let o = run(vk_command(overlap_cli(), Layers::None)
        .arg("link-varyings")
        .arg(vert)
        .arg(frag)
        .arg("--json")
        .arg("--uniforms-visible"));
    assert_eq!(o.code, Some(0), "{}", o.stderr);
    serde_json::from_str(&o.stdout).unwrap()
}

/// The linker against spirv-opt's interface passes, and against what the
/// corpus declares removable. spirv-opt removes nothing from this corpus
/// (every output is written, so `m <= o` alone only says "never adds"); the
/// specific claim is per pair, from the GLSL the corpus was generated from
/// (tests/build.rs): exactly the declared-dead outputs and the flat literal
/// constants go, every declared duplicate is merged, a moved uniform
/// expression is one the producer assigns from push constants, and each of
/// those frees its location.
#[test]
fn linker_removes_at_least_what_spirv_opt_removes() {
    let out = out_dir();
    let dir = harness::scratch("spirv-opt");
    let (mut ours, mut theirs, mut before) = (0, 0, 0);
    let (mut comps_before, mut comps_after, mut narrowed, mut uniforms) = (0, 0, 0, 0);
    let (mut declared_dead, mut declared_constants, mut declared_duplicates) = (0, 0, 0);
    let locations =
        |v: &serde_json::Value| -> Vec<u64> { v.as_array().unwrap().iter().map(|l| l.as_u64().unwrap()).collect() };
    for n in 0..32 {
        let (v, f) = (out.join(format!("corpus{n}.vert.spv")), out.join(format!("corpus{n}.frag.spv")));
        // spirv-opt's passes that shrink an interface, each stage on its own.
        let (ov, of) = (dir.join(format!("{n}.vert.spv")), dir.join(format!("{n}.frag.spv")));
        for (src, dst, passes) in [
            (&v, &ov, &["--remove-unused-interface-variables"][..]),
            (&f, &of, &["--remove-unused-interface-variables", "--eliminate-dead-input-components"][..]),
        ] {
            let ok = Command::new("spirv-opt").args(passes).arg(src).arg("-o").arg(dst).status().unwrap().success();
            assert!(ok);
        }
        let mine = link_json(&v, &f);
        let opt = link_json(&ov, &of);
        let (m, o) = (
            mine["producer"]["locations_after"].as_u64().unwrap(),
            opt["producer"]["locations_before"].as_u64().unwrap(),
        );
        assert!(m <= o, "pair {n}: {m} locations after linking, spirv-opt leaves {o}");

        let d = declared(&stage(&out.join(format!("corpus{n}.vert"))), &stage(&out.join(format!("corpus{n}.frag"))));
        let u64s = |v: &[u32]| v.iter().map(|&l| l as u64).collect::<Vec<_>>();
        assert_eq!(mine["producer"]["locations_before"].as_u64().unwrap(), d.locations as u64, "pair {n}");
        assert_eq!(mine["producer"]["components_before"].as_u64().unwrap(), d.components as u64, "pair {n}");
        assert_eq!(locations(&mine["removed_dead"]), u64s(&d.dead), "pair {n}: dead outputs");
        assert_eq!(locations(&mine["propagated_constants"]), u64s(&d.constants), "pair {n}: flat constants");
        let merged: Vec<(u64, u64)> = mine["deduplicated"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| (p[0].as_u64().unwrap(), p[1].as_u64().unwrap()))
            .collect();
        for &(dup, first) in &d.duplicates {
            assert!(merged.contains(&(dup as u64, first as u64)), "pair {n}: {dup} duplicates {first}: {merged:?}");
        }
        let moved = locations(&mine["propagated_uniforms"]);
        assert!(moved.iter().all(|l| d.uniforms.contains(&(*l as u32))), "pair {n}: {moved:?} vs {:?}", d.uniforms);
        let removed = d.dead.len() + d.constants.len() + merged.len() + moved.len();
        assert!(
            m <= (d.locations as usize - removed) as u64,
            "pair {n}: {m} locations left of {}, {removed} removed",
            d.locations
        );
        declared_dead += d.dead.len();
        declared_constants += d.constants.len();
        declared_duplicates += d.duplicates.len();

        ours += m;
        theirs += o;
        before += mine["producer"]["locations_before"].as_u64().unwrap();
        comps_before += mine["producer"]["components_before"].as_u64().unwrap();
        comps_after += mine["producer"]["components_after"].as_u64().unwrap();
        narrowed += mine["narrowed"].as_array().unwrap().len();
        uniforms += moved.len();
    }
    println!("corpus locations: {before} before, {theirs} after spirv-opt, {ours} after the linker");
    println!(
        "corpus components: {comps_before} before, {comps_after} after the linker ({narrowed} vectors narrowed, {uniforms} uniform expressions moved)"
    );
    println!("declared: {declared_dead} dead, {declared_constants} flat constants, {declared_duplicates} duplicates");
    // The corpus exercises each kind (a generator change that dropped one
    // would leave its assertions above vacuous).
    assert!(declared_dead > 0 && declared_constants > 0 && declared_duplicates > 0);
    assert!(uniforms > 0, "the corpus has flat uniform expressions: some must move at safe");
    assert!(narrowed > 0, "the corpus has partly read vectors: some must be narrowed");
    assert!(ours < theirs);
}

/// Where the child below finds its pairs.
const RENDER_PAIRS: &str = "OVERLAP_TEST_RENDER_PAIRS";

/// Renders the vertex/fragment SPIR-V pairs listed in $OVERLAP_TEST_RENDER_PAIRS
/// (`VERT,FRAG` per line) exactly as `overlap-testapp varyings` renders a
/// corpus pair (one triangle into a 64x64 target, the same push constants),
/// printing `render<i>=<checksum>`: the child process of
/// `a_wrong_link_changes_the_render_checksum`, which starts this test binary
/// in the harness's environment. Without the variable it does nothing.
#[test]
#[ignore = "the child process of a_wrong_link_changes_the_render_checksum"]
fn render_pairs_child() {
    use overlap_tests::render::{self, Gpu, GpuOptions};
    let Some(list) = std::env::var_os(RENDER_PAIRS) else {
        return;
    };
    let gpu = Gpu::new(&GpuOptions::default()).unwrap();
    println!(); // libtest's "test render_pairs_child ... " has no newline yet
    for (i, line) in std::fs::read_to_string(list).unwrap().lines().enumerate() {
        let (vert, frag) = line.split_once(',').unwrap();
        let (vert, frag) = (std::fs::read(vert).unwrap(), std::fs::read(frag).unwrap());
        println!("render{i}={:016x}", overlap_tests::varyings::render_pair(&gpu, &vert, &frag));
    }
    for e in render::validation_errors() {
        eprintln!("VALIDATION ERROR [{}] {}", e.id, e.text);
    }
}

/// The control for "renders are bit-identical with the linker": a wrongly
/// linked pair must change the checksum those comparisons use. For every
/// corpus pair with two interpolated vec4 outputs that the fragment shader
/// reads differently and that hold different values, the vertex shader is
/// rebuilt (as tests/build.rs builds the corpus) with those two outputs'
/// locations swapped, a valid interface wired wrong, which is what a linker
/// assigning locations wrongly would hand the driver. Each is rendered next
/// to the unmodified pair (whose checksum must be the testapp's at `off`),
/// with the linker off: every swapped pair's checksum must differ.
#[test]
fn a_wrong_link_changes_the_render_checksum() {
    let out = out_dir();
    let dir = harness::scratch("mislinked");
    let o = run(app(Layers::OverlapOverValidation, &["varyings"]).env("VK_OVERLAP_EMULATION_VARYINGS", "off"));
    o.assert_ok();
    let (mut list, mut mislinked) = (String::new(), String::new());
    let mut swapped = Vec::new();
    for n in 0..32 {
        list += &format!(
            "{},{}\n",
            out.join(format!("corpus{n}.vert.spv")).display(),
            out.join(format!("corpus{n}.frag.spv")).display()
        );
        let vs = stage(&out.join(format!("corpus{n}.vert")));
        let fs = stage(&out.join(format!("corpus{n}.frag")));
        // The fragment shader's statements that use an input, the input's
        // name taken out (`c += _ * 0.2`).
        let uses = |name: &str| -> Vec<String> {
            fs.lines
                .iter()
                .filter(|l| !l.trim_start().starts_with("layout"))
                .filter(|l| l.split(|c: char| !(c.is_alphanumeric() || c == '_')).any(|w| w == name))
                .map(|l| normalized(l))
                .collect()
        };
        let usage = |name: &str| -> Vec<String> { uses(name).iter().map(|l| l.replace(name, "_")).collect() };
        let candidates: Vec<&Varying> = vs
            .outputs
            .iter()
            .filter(|v| !v.flat && v.ty == "vec4" && fs.inputs.iter().any(|i| i.location == v.location))
            .collect();
        let pick = candidates.iter().enumerate().find_map(|(k, a)| {
            candidates[k + 1..]
                .iter()
                .find(|b| {
                    // Used apart (not `s0 + s1`, where a swap cancels out), differently, and
                    // holding different values.
                    uses(&a.name).iter().all(|l| !uses(&b.name).contains(l))
                        && usage(&a.name) != usage(&b.name)
                        && normalized(&vs.assigned[&a.name]) != normalized(&vs.assigned[&b.name])
                })
                .map(|b| (*a, *b))
        });
        let Some((a, b)) = pick else { continue };
        let decl = |v: &Varying, loc: u32| format!("layout(location = {loc}) out vec4 {};", v.name);
        let src = std::fs::read_to_string(out.join(format!("corpus{n}.vert"))).unwrap();
        assert!(src.contains(&decl(a, a.location)) && src.contains(&decl(b, b.location)));
        let src = src
            .replace(&decl(a, a.location), "@A@")
            .replace(&decl(b, b.location), &decl(b, a.location))
            .replace("@A@", &decl(a, b.location));
        let glsl = dir.join(format!("mislinked{n}.vert"));
        std::fs::write(&glsl, &src).unwrap();
        let (raw, spv) = (dir.join(format!("mislinked{n}.raw.spv")), dir.join(format!("mislinked{n}.vert.spv")));
        let ok = Command::new("glslangValidator")
            .args(["-V", "--target-env", "vulkan1.0", "-o"])
            .arg(&raw)
            .arg(&glsl)
            .output()
            .unwrap()
            .status
            .success();
        assert!(ok, "{src}");
        assert!(Command::new("spirv-opt").arg("-O").arg(&raw).arg("-o").arg(&spv).status().unwrap().success());
        swapped.push((n, format!("{} <-> {}", a.location, b.location)));
        mislinked += &format!("{},{}\n", spv.display(), out.join(format!("corpus{n}.frag.spv")).display());
    }
    // The 32 pairs as they are first, then the swapped ones.
    list += &mislinked;
    println!("mis-linked (pair, locations swapped): {swapped:?}");
    assert!(swapped.len() >= 8, "only {} pairs can be mis-linked: {swapped:?}", swapped.len());
    let pairs = dir.join("pairs");
    std::fs::write(&pairs, list).unwrap();
    let exe = std::env::current_exe().unwrap();
    let child = run(vk_command(&exe, Layers::OverlapOverValidation)
        .args(["render_pairs_child", "--exact", "--ignored", "--nocapture", "--test-threads=1"])
        .env(RENDER_PAIRS, &pairs)
        .env("VK_OVERLAP_EMULATION_VARYINGS", "off"));
    child.assert_ok();
    assert!(child.stdout.contains("1 passed"), "{}", child.stdout);
    let sum = |i: usize| child.value(&format!("render{i}")).unwrap_or_else(|| panic!("render{i}:\n{}", child.stdout));
    for n in 0..32 {
        let testapp = o.stdout.lines().find_map(|l| l.strip_prefix(&format!("pair={n} checksum="))).unwrap();
        assert_eq!(sum(n), &testapp[..16], "pair {n}: the child renders differently from the testapp");
    }
    for (k, (n, what)) in swapped.iter().enumerate() {
        assert_ne!(sum(32 + k), sum(*n), "pair {n} with locations {what} swapped renders the same");
    }
}

/// Shipped (unoptimized) SPIR-V: each corpus pair as glslang emits it
/// without `-O` (every read of a local variable a fresh load) links to
/// exactly the locations and components of the same pair after
/// `spirv-opt -O`, at `safe` and at `full`. Before the linker numbered
/// values (issue 13), the unoptimized corpus kept 110 locations at `safe`
/// (102 optimized) and 83 at `full` (76).
#[test]
fn unoptimized_spirv_links_like_optimized() {
    let out = out_dir();
    let after = |v: &serde_json::Value, side: &str, key: &str| v[side][key].as_u64().unwrap();
    let (mut raw_total, mut opt_total) = (0, 0);
    for level in ["safe", "full"] {
        for n in 0..32 {
            let pair = |suffix: &str| {
                let (v, f) =
                    (out.join(format!("corpus{n}.vert{suffix}.spv")), out.join(format!("corpus{n}.frag{suffix}.spv")));
                let o = run(vk_command(overlap_cli(), Layers::None)
                    .arg("link-varyings")
                    .args(["--level", level, "--json", "--uniforms-visible"])
                    .arg(v)
                    .arg(f));
                assert_eq!(o.code, Some(0), "{}", o.stderr);
                serde_json::from_str::<serde_json::Value>(&o.stdout).unwrap()
            };
            let (raw, opt) = (pair(".raw"), pair(""));
            for (side, key) in [("producer", "locations_after"), ("consumer", "components_after")] {
                assert_eq!(
                    after(&raw, side, key),
                    after(&opt, side, key),
                    "pair {n} at {level}: {side} {key} unoptimized vs optimized"
                );
            }
            raw_total += after(&raw, "producer", "locations_after");
            opt_total += after(&opt, "producer", "locations_after");
        }
    }
    assert_eq!(raw_total, opt_total);
}

/// The checksums of a corpus run: every pair, the geometry and tessellation
/// pairs.
fn render_sums(o: &harness::Outcome) -> Vec<String> {
    let mut sums: Vec<String> = o
        .stdout
        .lines()
        .filter(|l| l.starts_with("pair="))
        .map(|l| l.split_whitespace().take(2).collect::<Vec<_>>().join(" "))
        .collect();
    assert_eq!(sums.len(), 32, "{}", o.stdout);
    for key in ["geometry", "tessellation"] {
        sums.push(format!("{key}={}", o.value(key).expect(key)));
    }
    sums
}

/// The corpus at `safe` with the link cache in `cache` (`XDG_CACHE_HOME`).
fn cached_corpus(cache: &Path, layers: Layers, extra: &[(&str, &str)]) -> Command {
    let dir = harness::scratch("cached-corpus");
    let mut cmd = app(layers, &["varyings", dir.to_str().unwrap()]);
    cmd.env("XDG_CACHE_HOME", cache)
        .env("VK_OVERLAP_EMULATION_VARYINGS", "safe")
        .env("VK_OVERLAP_EMULATION_VARYINGS_UNIFORMS", "on")
        .env("VK_OVERLAP_EMULATION_LOG_LEVEL", "debug");
    for (k, v) in extra {
        cmd.env(k, v);
    }
    cmd
}

/// `OVERLAP-Varyings-Linked` lines whose cost says `what` (`disk_cache=hit`,
/// `disk_cache=stored`, ...).
fn linked_with(o: &harness::Outcome, what: &str) -> usize {
    o.stderr.lines().filter(|l| l.contains("OVERLAP-Varyings-Linked") && l.contains(what)).count()
}

/// The entries of the link cache under `cache`, and whether anything else
/// (a temporary file) is there.
fn cache_entries(cache: &Path) -> (Vec<PathBuf>, Vec<PathBuf>) {
    let dir = cache.join("overlap/linked");
    let all: Vec<PathBuf> = match std::fs::read_dir(&dir) {
        Ok(d) => d.map(|e| e.unwrap().path()).collect(),
        Err(_) => Vec::new(),
    };
    all.into_iter().partition(|p| p.extension().is_some_and(|x| x == "olc"))
}

/// Issue 13, item 6: a first process fills the cache on disk (one entry per
/// distinct pair, linked or not worth linking); a second finds every linked
/// pair there (neither links nor validates) and renders the same, with the
/// validation layer below silent.
#[test]
fn a_second_process_finds_every_pair_in_the_disk_cache() {
    let cache = harness::scratch("link-cache");
    let first = run(&mut cached_corpus(&cache, Layers::OverlapOverValidation, &[]));
    first.assert_ok();
    let stored = linked_with(&first, "disk_cache=stored");
    assert!(stored >= 25, "only {stored} pairs stored:\n{}", first.stderr);
    assert_eq!(linked_with(&first, "disk_cache=hit"), 0);
    let (entries, other) = cache_entries(&cache);
    assert!(other.is_empty(), "{other:?}");
    // One per distinct pair (the corpus, its geometry and tessellation
    // pairs, ...), linked or not worth linking.
    assert!(entries.len() >= stored, "{stored} linked, {} entries", entries.len());
    let second = run(&mut cached_corpus(&cache, Layers::OverlapOverValidation, &[]));
    second.assert_ok();
    assert_eq!(linked_with(&second, "disk_cache=hit"), stored, "{}", second.stderr);
    assert_eq!(linked_with(&second, "link_us="), 0, "a pair was linked again:\n{}", second.stderr);
    assert!(!second.stderr.contains("OVERLAP-Link-Cache"), "{}", second.stderr);
    assert!(!second.stderr.contains("OVERLAP-Shader-Checked"), "{}", second.stderr);
    assert_eq!(render_sums(&second), render_sums(&first));
    assert_eq!(cache_entries(&cache).0.len(), entries.len());
}

/// A truncated, a bit-flipped and an overwritten entry are each ignored with
/// one `OVERLAP-Link-Cache` warning, linked again (and rewritten), and the
/// render does not change.
#[test]
fn a_damaged_disk_cache_entry_is_ignored_with_a_warning() {
    let cache = harness::scratch("link-cache-damaged");
    let first = run(&mut cached_corpus(&cache, Layers::Overlap, &[]));
    first.assert_ok();
    let stored = linked_with(&first, "disk_cache=stored");
    let (mut entries, _) = cache_entries(&cache);
    // The largest entries: most likely linked pairs (an unlinked one holds
    // no modules of its own).
    entries.sort_by_key(|p| std::cmp::Reverse(std::fs::metadata(p).unwrap().len()));
    let bytes = std::fs::read(&entries[0]).unwrap();
    std::fs::write(&entries[0], &bytes[..bytes.len() / 2]).unwrap();
    let mut bytes = std::fs::read(&entries[1]).unwrap();
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0x10;
    std::fs::write(&entries[1], bytes).unwrap();
    std::fs::write(&entries[2], b"not a cache entry at all").unwrap();
    let second = run(&mut cached_corpus(&cache, Layers::Overlap, &[]));
    second.assert_ok();
    let warnings = second.stderr.lines().filter(|l| l.contains("OVERLAP-Link-Cache")).count();
    assert_eq!(warnings, 3, "{}", second.stderr);
    // The damaged entries were linked again (those that hold a linked pair
    // say so), the others found.
    let (restored, hits) = (linked_with(&second, "disk_cache=stored"), linked_with(&second, "disk_cache=hit"));
    assert!((1..=3).contains(&restored), "{}", second.stderr);
    assert_eq!(restored + hits, stored, "{}", second.stderr);
    assert_eq!(render_sums(&second), render_sums(&first));
    // Rewritten: a third process finds them all.
    let third = run(&mut cached_corpus(&cache, Layers::Overlap, &[]));
    third.assert_ok();
    assert_eq!(linked_with(&third, "disk_cache=hit"), stored, "{}", third.stderr);
    assert!(!third.stderr.contains("OVERLAP-Link-Cache"));
}

/// Two processes filling one cache at once both succeed, render the same,
/// and leave only whole entries (a third process uses every one, with no
/// warning) and no temporary file.
#[test]
fn two_processes_fill_the_disk_cache_at_once() {
    let cache = harness::scratch("link-cache-concurrent");
    let (a, b) = std::thread::scope(|s| {
        let a = s.spawn(|| run(&mut cached_corpus(&cache, Layers::Overlap, &[])));
        let b = s.spawn(|| run(&mut cached_corpus(&cache, Layers::Overlap, &[])));
        (a.join().unwrap(), b.join().unwrap())
    });
    a.assert_ok();
    b.assert_ok();
    assert_eq!(render_sums(&a), render_sums(&b));
    for o in [&a, &b] {
        assert!(!o.stderr.contains("OVERLAP-Link-Cache"), "{}", o.stderr);
    }
    let (entries, other) = cache_entries(&cache);
    assert!(entries.len() >= 34, "{entries:?}");
    assert!(other.is_empty(), "{other:?}");
    let linked = linked_with(&a, "disk_cache=");
    let third = run(&mut cached_corpus(&cache, Layers::Overlap, &[]));
    third.assert_ok();
    assert_eq!(linked_with(&third, "disk_cache=hit"), linked, "{}", third.stderr);
    assert!(!third.stderr.contains("OVERLAP-Link-Cache"));
    assert_eq!(render_sums(&third), render_sums(&a));
}

/// `link_cache=off` writes nothing and reads nothing.
#[test]
fn link_cache_off_writes_nothing() {
    let cache = harness::scratch("link-cache-off");
    let off = [("VK_OVERLAP_EMULATION_LINK_CACHE", "off")];
    let o = run(&mut cached_corpus(&cache, Layers::Overlap, &off));
    o.assert_ok();
    assert!(linked_with(&o, "disk_cache=off") >= 25, "{}", o.stderr);
    assert_eq!(linked_with(&o, "disk_cache=stored") + linked_with(&o, "disk_cache=hit"), 0);
    // (The driver may keep its own cache there.)
    assert!(!cache.join("overlap").exists(), "link_cache=off wrote into {}", cache.display());
}

/// Issue 13, item 2: shader objects made together with
/// `VK_SHADER_CREATE_LINK_STAGE_BIT_EXT` are linked as a set — tested on the
/// NVIDIA GPU (`ci/gpu-nvidia`, `shader_objects`), since lavapipe 22.3 has no
/// `VK_EXT_shader_object`. Here the testapp's modes say so, for the driver's
/// own reason: the driver under the validation layer alone lists no such
/// extension either, and the modes report the same without Overlap.
#[test]
fn shader_objects_are_unsupported_by_lavapipe_itself() {
    let probe = run(&mut app(Layers::Validation, &["probe"]));
    probe.assert_ok();
    let exts = probe.stdout.lines().find(|l| l.starts_with("device_extensions=")).expect("probe lists extensions");
    assert!(exts.contains("VK_KHR_"), "{exts}");
    assert!(!exts.contains("VK_EXT_shader_object"), "the driver lists VK_EXT_shader_object: {exts}");
    for layers in [Layers::Validation, Layers::OverlapOverValidation] {
        for mode in ["shader-objects", "shader-objects-unlinked"] {
            let o = run(app(layers, &["varyings", mode]).env("VK_OVERLAP_EMULATION_VARYINGS", "safe"));
            o.assert_ok();
            assert!(
                o.stdout.contains("shader_objects=unsupported: the driver has no VK_EXT_shader_object"),
                "{mode}: {}",
                o.stdout
            );
            assert!(!o.stdout.contains("checksum="), "{}", o.stdout);
        }
    }
    // Counted in the log (the stderr handle itself: libtest captures
    // eprintln! of a passing test). The linked sets are judged in ci/gpu-nvidia.
    let skipped = b"SKIPPED: VK_EXT_shader_object (varyings shader-objects: linked sets of shader objects)\n";
    let _ = std::io::Write::write_all(&mut std::io::stderr(), skipped);
}

/// Pairs of the public corpus where `spirv-opt -O` finds more than the
/// linker on the shipped SPIR-V, and why: folds that do not keep every value
/// bit-exact, which the linker (whose `safe` renders must equal `off`)
/// does not make.
const SPIRV_OPT_INEXACT: [(&str, &str); 2] = [
    // `vec3(0.0) - pos.xyz` folded to `-pos.xyz` (0 − 0 is +0, −0 is −0),
    // then deduplicated with `outViewVec = -pos.xyz`.
    ("multithreading/phong", "0 - x folded to -x"),
    // `... * shininess` with `shininess = 0.0` folded to 0 (x·0 is NaN for
    // an infinite x), which leaves `inEyePos` unread.
    ("vulkanscene/logo", "x * 0 folded to 0"),
];

/// The vertex/fragment pairs of the public corpus (tests/corpus/README.md),
/// by `sample/name`.
fn public_corpus() -> (PathBuf, Vec<String>) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("corpus/saschawillems-vulkan");
    let mut pairs = Vec::new();
    for sample in std::fs::read_dir(&root).unwrap() {
        let sample = sample.unwrap().path();
        if !sample.is_dir() {
            continue;
        }
        for f in std::fs::read_dir(&sample).unwrap() {
            let name = f.unwrap().file_name().into_string().unwrap();
            if let Some(stem) = name.strip_suffix(".vert.spv") {
                if sample.join(format!("{stem}.frag.spv")).exists() {
                    let s = sample.file_name().unwrap().to_str().unwrap();
                    pairs.push(format!("{s}/{stem}"));
                }
            }
        }
    }
    pairs.sort();
    (root, pairs)
}

/// Real shaders nobody here wrote (136 pairs of a public sample collection,
/// as shipped: glslang without `-O`), linked at `safe` and `full`: no crash
/// (a module the linker cannot read is a clean error), every rewritten module
/// valid where its input was, and the shipped SPIR-V linked to what the same
/// pairs after `spirv-opt -O` link to, pair by pair, but for the folds
/// listed in [`SPIRV_OPT_INEXACT`]. Control: the same pairs compared as
/// spelled (`--as-spelled`) keep clearly more scalar components.
#[test]
fn public_corpus_links_like_optimized() {
    let (root, pairs) = public_corpus();
    assert!(pairs.len() >= 130, "{} pairs in {}", pairs.len(), root.display());
    let dir = harness::scratch("public-corpus");
    let valid = |p: &Path| {
        Command::new("spirv-val").args(["--target-env", "vulkan1.3"]).arg(p).output().unwrap().status.success()
    };
    // Each module after spirv-opt -O (None where spirv-opt cannot take it).
    let optimized = |pair: &str, stage: &str| -> Option<PathBuf> {
        let out = dir.join("opt").join(format!("{}.{stage}.spv", pair.replace('/', "_")));
        std::fs::create_dir_all(out.parent().unwrap()).unwrap();
        let src = root.join(format!("{pair}.{stage}.spv"));
        Command::new("spirv-opt").arg("-O").arg(&src).arg("-o").arg(&out).status().unwrap().success().then_some(out)
    };
    let link = |v: &Path, f: &Path, level: &str, extra: &[&str], out: &Path| -> Option<serde_json::Value> {
        let o = run(vk_command(overlap_cli(), Layers::None)
            .arg("link-varyings")
            .args(["--level", level, "--json", "--uniforms-visible"])
            .args(extra)
            .arg("-o")
            .arg(out)
            .arg(v)
            .arg(f));
        assert!(!o.stderr.contains("panicked"), "{}: {}", v.display(), o.stderr);
        match o.code {
            Some(0) => Some(serde_json::from_str(&o.stdout).unwrap()),
            Some(1) if o.stderr.starts_with("overlap: ") => None,
            c => panic!("{}: exit {c:?}: {}", v.display(), o.stderr),
        }
    };
    let after = |j: &serde_json::Value| {
        (j["producer"]["locations_after"].as_u64().unwrap(), j["consumer"]["components_after"].as_u64().unwrap())
    };
    for level in ["safe", "full"] {
        let (mut before, mut shipped, mut opt, mut spelled, mut errors) = (0, 0, 0, 0, 0);
        // Scalar components after: what the control is judged on (packing
        // hides part of a difference in locations).
        let (mut shipped_components, mut spelled_components) = (0, 0);
        for pair in &pairs {
            let (v, f) = (root.join(format!("{pair}.vert.spv")), root.join(format!("{pair}.frag.spv")));
            let out = dir.join(level).join(pair);
            let Some(raw) = link(&v, &f, level, &[], &out) else {
                errors += 1;
                continue;
            };
            // Valid in, valid out.
            for (input, name) in [(&v, "vert"), (&f, "frag")] {
                let written = out.join(input.file_name().unwrap());
                if valid(input) {
                    assert!(valid(&written), "{pair}.{name} at {level}: the linked module does not validate");
                }
            }
            before += raw["producer"]["locations_before"].as_u64().unwrap();
            shipped += after(&raw).0;
            shipped_components += after(&raw).1;
            let as_spelled = link(&v, &f, level, &["--as-spelled"], &dir.join("spelled")).unwrap();
            spelled += after(&as_spelled).0;
            spelled_components += after(&as_spelled).1;
            let (Some(ov), Some(of)) = (optimized(pair, "vert"), optimized(pair, "frag")) else { continue };
            let o = link(&ov, &of, level, &[], &dir.join("optimized")).unwrap();
            opt += after(&o).0;
            match SPIRV_OPT_INEXACT.iter().find(|(p, _)| p == pair) {
                None => assert_eq!(after(&raw), after(&o), "{pair} at {level}: shipped vs optimized"),
                Some((_, why)) => assert!(
                    after(&raw).1 > after(&o).1 && after(&raw).0 >= after(&o).0,
                    "{pair} at {level}: expected spirv-opt's {why}"
                ),
            }
        }
        println!(
            "public corpus at {level}: {n} pairs, {errors} not readable; locations {before} -> {shipped} \
             (after spirv-opt -O: {opt}; compared as spelled: {spelled}); scalar components after: \
             {shipped_components} (as spelled: {spelled_components})",
            n = pairs.len()
        );
        assert!(errors <= 2, "{errors} pairs the linker cannot read");
        assert!(
            spelled_components >= shipped_components + 40,
            "{level}: components as spelled {spelled_components}, canonical {shipped_components}: no effect seen"
        );
    }
}

/// The stage name `link-varyings` reports for a GLSL extension.
fn stage_name(ext: &str) -> &'static str {
    match ext {
        "vert" => "vertex",
        "tesc" => "tess control",
        "tese" => "tess evaluation",
        "geom" => "geometry",
        "frag" => "fragment",
        _ => panic!("{ext}"),
    }
}

/// The location-decorated `Input` or `Output` variables of a disassembled
/// module: (location, component) → (pointee type name with a per-vertex
/// array level taken off where `arrayed` and the variable is not `Patch`).
fn interface_of(text: &str, class: &str, arrayed: bool) -> BTreeMap<(u32, u32), String> {
    let mut location = HashMap::new();
    let mut component = HashMap::new();
    let mut patch = Vec::new();
    let mut out = BTreeMap::new();
    for line in text.lines().map(str::trim) {
        let w: Vec<&str> = line.split_whitespace().collect();
        match w.as_slice() {
            ["OpDecorate", id, "Location", l] => _ = location.insert(id.to_string(), l.parse::<u32>().unwrap()),
            ["OpDecorate", id, "Component", c] => _ = component.insert(id.to_string(), c.parse::<u32>().unwrap()),
            ["OpDecorate", id, "Patch"] => patch.push(id.to_string()),
            [id, "=", "OpVariable", ty, c, ..] if *c == class => {
                let Some(l) = location.get(*id) else { continue };
                let pointee = ty.strip_prefix(&format!("%_ptr_{class}_")).unwrap_or(ty).to_string();
                // `_arr_v4float_uint_32`: one array level over vertices.
                let pointee = if arrayed && !patch.contains(&id.to_string()) {
                    let inner = pointee.strip_prefix("_arr_").unwrap_or_else(|| panic!("{line}: not an array"));
                    inner.rsplit_once("_uint_").map_or(inner, |(e, _)| e).to_string()
                } else {
                    pointee
                };
                out.insert((*l, component.get(*id).copied().unwrap_or(0)), pointee);
            }
            _ => {}
        }
    }
    out
}

/// Issue 13, item 4: every adjacent stage pair of the generated chains
/// (vertex → tessellation → fragment, vertex → geometry → fragment, all five
/// stages) is linked, the last pair first: per pair exactly the outputs the
/// generator made dead go — among them the vertex shader's `chain_v`, which
/// only dies once the later pairs are linked — the constants it made (a
/// constant patch varying, a per-vertex constant) move, the tessellation
/// control output read back stays and is placed last, the indirectly
/// indexed patch array stays in place (and moves in the variants indexing it
/// directly), a transform-feedback output stays and is placed last; every
/// linked stage passes spirv-val and every consumer input has its producer
/// output, location by location and component by component, of the same
/// type. Control: the vertex → tessellation control (or geometry) pair
/// linked alone keeps `chain_v`.
#[test]
fn stage_chains_link_every_pair_last_first() {
    let out = out_dir();
    let dir = harness::scratch("chains");
    let (mut before, mut after) = (0, 0);
    for (n, (stages, _, pairs)) in overlap_tests::varyings::STAGE_CORPUS.iter().enumerate() {
        let files: Vec<PathBuf> = stages.iter().map(|(ext, _)| out.join(format!("chain{n}.{ext}.spv"))).collect();
        // Whether the generator gave the geometry shader a captured output.
        let xfb = std::fs::read_to_string(out.join(format!("chain{n}.geom"))).is_ok_and(|g| g.contains("xfb_offset"));
        let linked = dir.join(n.to_string());
        let o = run(vk_command(overlap_cli(), Layers::None)
            .arg("link-varyings")
            .args(&files)
            .arg("--json")
            .arg("-o")
            .arg(&linked));
        assert_eq!(o.code, Some(0), "chain {n}: {}", o.stderr);
        let doc: serde_json::Value = serde_json::from_str(&o.stdout).unwrap();
        let got = doc["pairs"].as_array().unwrap();
        assert_eq!(got.len(), pairs.len(), "chain {n}");
        let list = |v: &serde_json::Value| -> Vec<u32> {
            v.as_array().unwrap().iter().map(|l| l.as_u64().unwrap() as u32).collect()
        };
        for (g, (p, c, b, a, dead, constants, back, in_place)) in got.iter().zip(pairs.iter()) {
            let ctx = format!("chain {n} {p}->{c}: {g}");
            assert_eq!(
                (g["producer"].as_str().unwrap(), g["consumer"].as_str().unwrap()),
                (stage_name(p), stage_name(c))
            );
            assert_eq!(g["locations_before"].as_u64().unwrap() as u32, *b, "{ctx}");
            assert_eq!(g["locations_after"].as_u64().unwrap() as u32, *a, "{ctx}");
            assert_eq!(list(&g["removed_dead"]), *dead, "{ctx}");
            assert_eq!(list(&g["propagated_constants"]), *constants, "{ctx}");
            assert_eq!(list(&g["read_back"]), *back, "{ctx}");
            assert_eq!(list(&g["kept_in_place"]), *in_place, "{ctx}");
            // Outputs the consumer does not read (read back, captured) go last.
            let last = g["placed_last"].as_array().unwrap().len();
            let captured = *p == "geom" && xfb;
            assert_eq!(last, back.len() + usize::from(captured), "{ctx}");
            before += b;
            after += a;
        }
        // Every linked stage valid; every adjacent interface matching.
        let texts: Vec<String> = stages
            .iter()
            .map(|(ext, _)| {
                let f = linked.join(format!("chain{n}.{ext}.spv"));
                let ok = Command::new("spirv-val").args(["--target-env", "vulkan1.0"]).arg(&f).status().unwrap();
                assert!(ok.success(), "chain {n} {ext}: spirv-val");
                let dis = Command::new("spirv-dis").arg(&f).output().unwrap();
                String::from_utf8(dis.stdout).unwrap()
            })
            .collect();
        for k in 1..stages.len() {
            let (p, c) = (stages[k - 1].0, stages[k].0);
            let outputs = interface_of(&texts[k - 1], "Output", p == "tesc");
            let inputs = interface_of(&texts[k], "Input", matches!(c, "tesc" | "tese" | "geom"));
            assert!(!inputs.is_empty(), "chain {n} {c}: no inputs left");
            for (at, ty) in &inputs {
                assert_eq!(outputs.get(at), Some(ty), "chain {n} {p}->{c}: input at {at:?}");
            }
        }
        // Control: the first pair alone keeps the varying that dies only
        // once the later pairs are linked.
        let first = run(vk_command(overlap_cli(), Layers::None).arg("link-varyings").args(&files[..2]).arg("--json"));
        let first: serde_json::Value = serde_json::from_str(&first.stdout).unwrap();
        let (_, _, _, _, dead, ..) = pairs.last().unwrap();
        assert!(!dead.is_empty());
        assert!(!list(&first["removed_dead"]).contains(&dead[0]), "chain {n}: the first pair alone removed {dead:?}");
    }
    println!("stage chains: {before} locations before, {after} after linking every pair (safe)");
}

/// The chains that render (no transform feedback: its device feature is
/// not enabled) render bit-identically at `safe` and `full` to `off`, the validation layer below silent; at `safe` each is
/// linked once, the log line naming every pair.
#[test]
fn stage_chains_render_the_same_with_the_linker() {
    let chains_via = |level: &str, route: &[&str]| {
        let mut args = vec!["varyings", "stages"];
        args.extend(route);
        let o = run(app(Layers::OverlapOverValidation, &args)
            .env("VK_OVERLAP_EMULATION_VARYINGS", level)
            .env("VK_OVERLAP_EMULATION_LOG_LEVEL", "debug"));
        o.assert_ok();
        o
    };
    let chains = |level: &str| chains_via(level, &[]);
    let sums = |o: &harness::Outcome| -> Vec<String> {
        o.stdout.lines().filter(|l| l.starts_with("chain=")).map(str::to_string).collect()
    };
    let (off, safe, full) = (chains("off"), chains("safe"), chains("full"));
    let rendered = overlap_tests::varyings::STAGE_CORPUS.iter().filter(|c| c.1).count();
    assert_eq!(sums(&off).len(), rendered);
    assert!(rendered >= 8, "{rendered}");
    assert_eq!(sums(&safe), sums(&off), "safe must be bit-identical");
    assert_eq!(off.stderr.matches("OVERLAP-Varyings-Linked").count(), 0);
    let linked: Vec<&str> = safe.stderr.lines().filter(|l| l.contains("OVERLAP-Varyings-Linked")).collect();
    assert_eq!(linked.len(), rendered, "{}", safe.stderr);
    for (n, (stages, renders, _)) in overlap_tests::varyings::STAGE_CORPUS.iter().enumerate() {
        if !renders {
            continue;
        }
        // Each earlier pair is named in the chain's line, in linking order.
        let names: Vec<String> = stages
            .windows(2)
            .rev()
            .skip(1)
            .map(|w| format!("then {}->{}:", stage_name(w[0].0), stage_name(w[1].0)))
            .collect();
        assert!(
            linked.iter().any(|l| names.iter().all(|name| l.contains(name.as_str()))),
            "chain {n}: no line names {names:?}"
        );
    }
    // full: nothing in these chains is exact only up to rounding (no code
    // moves out of their fragment shaders), so bit-identical too.
    assert_eq!(sums(&full), sums(&off), "full");
    // The renders see the varyings: the variants indexing the patch array
    // by a non-constant render otherwise than those indexing it by 1.
    let distinct: std::collections::HashSet<String> =
        sums(&off).iter().map(|l| l.split_once(' ').unwrap().1.to_string()).collect();
    assert!(distinct.len() >= 3, "{distinct:?}");
    // Inline stages: linked as modules are (each line the same, cost cut
    // off), rendering the same.
    let inline = chains_via("safe", &["inline"]);
    assert_eq!(sums(&inline), sums(&off), "inline stages at safe must be bit-identical");
    let reports = |o: &harness::Outcome| -> Vec<String> {
        let mut r: Vec<String> = o
            .stderr
            .lines()
            .filter(|l| l.contains("OVERLAP-Varyings-Linked"))
            .map(|l| l.rsplit_once("; ").map_or(l, |(a, _)| a).to_string())
            .collect();
        r.sort();
        r
    };
    assert_eq!(reports(&inline), reports(&safe), "inline stages must be linked as their modules are");
    // Pipeline libraries (every stage before the fragment shader in the
    // pre-rasterization library), linked with link-time optimization: the
    // same reports and renders as the modules. Control: a fast link is not
    // linked (the libraries' interfaces stay as the application made them).
    let libraries = chains_via("safe", &["libraries"]);
    assert_eq!(sums(&libraries), sums(&off), "chains through pipeline libraries at safe must be bit-identical");
    assert_eq!(reports(&libraries), reports(&safe), "chains through libraries must be linked as their modules are");
    let fast = chains_via("safe", &["libraries-fast"]);
    assert_eq!(sums(&fast), sums(&off));
    assert_eq!(fast.stderr.matches("OVERLAP-Varyings-Linked").count(), 0, "{}", fast.stderr);
}

/// Pairs whose interpolated and flat vectors only fit fewer locations when
/// one is split across two (scalar granularity); read whole, by component
/// and written through component chains. The vertex shader draws the
/// full-screen triangle `render_pairs_child` draws, every varying changing
/// across it.
const SPLIT_PAIRS: [(&str, &str); 3] = [
    (
        "layout(location=0) out vec3 a;\nlayout(location=1) out vec3 b;\nlayout(location=2) out vec2 c;\n\
         void main() { a = vec3(p, p.x * p.y); b = a.zyx * 3.0 + 0.5; c = p * 0.25; }",
        "layout(location=0) in vec3 a;\nlayout(location=1) in vec3 b;\nlayout(location=2) in vec2 c;\n\
         void main() { o = vec4(a * 0.5 + b.zxy * 0.1, b.y * 0.2 + c.x) + vec4(c.y); }",
    ),
    (
        "layout(location=0) flat out ivec3 a;\nlayout(location=1) flat out ivec2 b;\nlayout(location=2) flat out ivec3 c;\n\
         void main() { ivec2 q = ivec2(p * 100.0); a = ivec3(q, q.x ^ q.y); b = q.yx + 7; c = ivec3(q.x * 3, q.y * 5, gl_VertexIndex); }",
        "layout(location=0) flat in ivec3 a;\nlayout(location=1) flat in ivec2 b;\nlayout(location=2) flat in ivec3 c;\n\
         void main() { o = vec4(vec3(a + c) * 0.004, float(b.x - b.y + c.z) * 0.01); }",
    ),
    (
        "layout(location=0) out vec2 a;\nlayout(location=1) out vec3 b;\nlayout(location=2) out vec3 c;\n\
         void main() { a = p.yx; b = vec3(p.x); b.y = p.y * 2.0; b.z = 0.75; c = vec3(1.0 - p.x, p.y * p.y, 0.3); }",
        "layout(location=0) in vec2 a;\nlayout(location=1) in vec3 b;\nlayout(location=2) in vec3 c;\n\
         void main() { o = vec4(a.x * b.x, b.y - c.z, c.x + c.y + b.z, a.y) * 0.5; }",
    ),
];

/// Scalar granularity renders what the unlinked pairs render: each of
/// [`SPLIT_PAIRS`] at `off` and at `safe` (a vector split across two
/// locations, logged), bit for bit, with the validation layer below
/// Overlap. Control: the producer as linked at `safe` with the consumer as
/// written renders differently, so the split placement is what the
/// checksums see.
#[test]
fn split_vectors_render_the_same() {
    let (off, safe, _) = render_linked_pairs(
        "split",
        &SPLIT_PAIRS,
        "safe",
        "split [(",
        "split (old, components in the first part, second location) [(",
    );
    for n in 0..SPLIT_PAIRS.len() {
        let sum = |o: &harness::Outcome| o.value(&format!("render{n}")).unwrap().to_string();
        assert_eq!(sum(&off), sum(&safe), "pair {n}: safe renders differently from off");
    }
}

/// Pairs whose arrays and matrices, indexed only with constants, the linker
/// splits into one varying per element (column) at `safe` (issue 13, item 5).
const ARRAY_PAIRS: [(&str, &str); 2] = [
    (
        "layout(location=0) out vec2 a[2];\nlayout(location=2) out mat2 m;\nlayout(location=4) out float w[3];\n\
         void main() { a[0] = p.yx; a[1] = p * 0.5 + 0.125; m = mat2(p.x, p.y * 2.0, 1.0 - p.x, 0.25); \
         w[0] = p.x * p.y; w[1] = 3.0; w[2] = p.y + 0.5; }",
        "layout(location=0) in vec2 a[2];\nlayout(location=2) in mat2 m;\nlayout(location=4) in float w[3];\n\
         void main() { o = vec4(a[0] + m * a[1], w[0], w[2]) * 0.5; }",
    ),
    (
        "layout(location=0) flat out ivec2 k[3];\nlayout(location=3) flat out int j;\n\
         void main() { ivec2 q = ivec2(p * 90.0); k[0] = q; k[1] = q.yx * 3 + 20; k[2] = q + 40; j = q.x ^ 5; }",
        "layout(location=0) flat in ivec2 k[3];\nlayout(location=3) flat in int j;\n\
         void main() { o = vec4(vec2(k[1]) * 0.004, vec2(k[2] - j) * 0.006); }",
    ),
];

/// Pairs with convergent varyings (push-constant expressions, the same on
/// every vertex; the fragment shader is not shown the push constants, as
/// `varyings_uniforms=off` sets), which the linker packs with another
/// interpolation group at `full` (issue 13, item 5).
const CONVERGENT_PAIRS: [(&str, &str); 3] = [
    (
        "layout(push_constant) uniform P { vec4 tint; } pc;\n\
         layout(location=0) out vec3 a;\nlayout(location=1) flat out vec3 b;\n\
         layout(location=2) out float u;\nlayout(location=3) noperspective out float v;\n\
         void main() { a = vec3(p, p.x * p.y); b = vec3(p.yx, 0.5); u = pc.tint.x * pc.tint.y * pc.tint.z; \
         v = pc.tint.w - pc.tint.y; }",
        "layout(location=0) in vec3 a;\nlayout(location=1) flat in vec3 b;\n\
         layout(location=2) in float u;\nlayout(location=3) noperspective in float v;\n\
         void main() { o = vec4(a * 0.5, u) + vec4(b * 0.25, 0.0) * v; }",
    ),
    (
        "layout(push_constant) uniform P { vec4 tint; } pc;\n\
         layout(location=0) flat out vec3 f;\nlayout(location=1) out vec2 d;\nlayout(location=2) out vec4 c;\n\
         layout(location=3) out float t;\nlayout(location=4) out vec2 s;\n\
         void main() { f = vec3(p.yx, float(gl_VertexIndex)); d = p * 0.75; c = vec4(p, 1.0 - p.x, p.y * 0.5); \
         t = pc.tint.x * pc.tint.z - pc.tint.w; s = pc.tint.yx * pc.tint.z + 0.25; }",
        "layout(location=0) flat in vec3 f;\nlayout(location=1) in vec2 d;\nlayout(location=2) in vec4 c;\n\
         layout(location=3) in float t;\nlayout(location=4) in vec2 s;\n\
         void main() { o = c * s.x + vec4(f * 0.01 + t, d.x * s.y - d.y); }",
    ),
    // A convergent vec2 with no room whole anywhere: split over the holes
    // of two groups, its first component smooth, its second flat.
    (
        "layout(push_constant) uniform P { vec4 tint; } pc;\n\
         layout(location=0) out vec3 a;\nlayout(location=1) flat out vec3 b;\n\
         layout(location=2) noperspective out vec2 w;\n\
         void main() { a = vec3(p, p.x * p.y); b = vec3(p.yx, 0.5); w = pc.tint.xy * pc.tint.zw; }",
        "layout(location=0) in vec3 a;\nlayout(location=1) flat in vec3 b;\n\
         layout(location=2) noperspective in vec2 w;\n\
         void main() { o = vec4(a * w.x, w.y) + vec4(b * 0.25, 0.0); }",
    ),
];

/// Renders `pairs` (vertex, fragment bodies over `p`, the corner of a
/// full-screen triangle) at `off` and at `level` through Overlap with the
/// validation layer below, and the control: each producer as the CLI links
/// it at `level` next to the consumer as written, without the linker.
/// Returns (off, linked, control) outcomes after checking that `level`
/// linked every pair with `marker` in its log line and the CLI said
/// `cli_marker`.
fn render_linked_pairs(
    tag: &str,
    pairs: &[(&str, &str)],
    level: &str,
    marker: &str,
    cli_marker: &str,
) -> (harness::Outcome, harness::Outcome, harness::Outcome) {
    let dir = harness::scratch(tag);
    let (mut list, mut control) = (String::new(), String::new());
    for (n, (vs, fs)) in pairs.iter().enumerate() {
        let vs = format!(
            "#version 450\n{}",
            vs.replace(
                "void main() {",
                "void main() { vec2 p = vec2((gl_VertexIndex << 1) & 2, gl_VertexIndex & 2); \
                 gl_Position = vec4(p * 2.0 - 1.0, 0.0, 1.0);"
            )
        );
        let fs = format!("#version 450\nlayout(location=0) out vec4 o;\n{fs}");
        for (src, ext) in [(&vs, "vert"), (&fs, "frag")] {
            let glsl = dir.join(format!("{tag}{n}.{ext}"));
            std::fs::write(&glsl, src).unwrap();
            let ok = Command::new("glslangValidator")
                .args(["-V", "-o"])
                .arg(dir.join(format!("{tag}{n}.{ext}.spv")))
                .arg(&glsl)
                .status()
                .unwrap()
                .success();
            assert!(ok, "{src}");
        }
        let (v, f) = (dir.join(format!("{tag}{n}.vert.spv")), dir.join(format!("{tag}{n}.frag.spv")));
        let linked = dir.join("linked");
        let o = run(vk_command(overlap_cli(), Layers::None)
            .args(["link-varyings", "--level", level, "-o"])
            .arg(&linked)
            .arg(&v)
            .arg(&f));
        assert_eq!(o.code, Some(0), "{}", o.stderr);
        assert!(o.stdout.contains(cli_marker), "{}", o.stdout);
        let renamed = dir.join(format!("linked{n}.vert.spv"));
        std::fs::rename(linked.join(format!("{tag}{n}.vert.spv")), &renamed).unwrap();
        list += &format!("{},{}\n", v.display(), f.display());
        control += &format!("{},{}\n{},{}\n", v.display(), f.display(), renamed.display(), f.display());
    }
    let (list_file, mismatched) = (dir.join("pairs.txt"), dir.join("control.txt"));
    std::fs::write(&list_file, &list).unwrap();
    std::fs::write(&mismatched, &control).unwrap();
    let exe = std::env::current_exe().unwrap();
    let render = |level: &str, file: &Path, layers: Layers| {
        let child = run(vk_command(&exe, layers)
            .args(["render_pairs_child", "--exact", "--ignored", "--nocapture", "--test-threads=1"])
            .env(RENDER_PAIRS, file)
            .env("VK_OVERLAP_EMULATION_VARYINGS", level)
            .env("VK_OVERLAP_EMULATION_VARYINGS_UNIFORMS", "off")
            .env("VK_OVERLAP_EMULATION_LOG_LEVEL", "debug"));
        assert!(child.stdout.contains("1 passed"), "{}\n{}", child.stdout, child.stderr);
        child
    };
    let off = render("off", &list_file, Layers::OverlapOverValidation);
    let linked = render(level, &list_file, Layers::OverlapOverValidation);
    // (An interface that does not match: no validation layer, no linker.)
    let control = render("off", &mismatched, Layers::None);
    assert!(
        !off.stderr.contains("VALIDATION ERROR") && !linked.stderr.contains("VALIDATION ERROR"),
        "{}",
        linked.stderr
    );
    let marked = linked.stderr.lines().filter(|l| l.contains("OVERLAP-Varyings-Linked") && l.contains(marker)).count();
    assert!(marked >= pairs.len(), "{marked} linked pipelines with {marker}:\n{}", linked.stderr);
    for n in 0..pairs.len() {
        let sum = |o: &harness::Outcome, i: usize| o.value(&format!("render{i}")).unwrap().to_string();
        assert_eq!(sum(&control, 2 * n), sum(&off, n), "pair {n}: the control renders the pair differently");
        assert_ne!(sum(&control, 2 * n), sum(&control, 2 * n + 1), "pair {n}: the linked placement changes nothing");
    }
    (off, linked, control)
}

/// Arrays and matrices split into elements render what the unlinked pairs
/// render at `safe`, bit for bit, with the validation layer below Overlap.
/// Control: each producer as linked at `safe` with its consumer as written
/// renders differently, so the elements' new places are what the checksums
/// see.
#[test]
fn split_arrays_render_the_same() {
    let (off, safe, _) = render_linked_pairs(
        "array-pairs",
        &ARRAY_PAIRS,
        "safe",
        "arrays split [",
        "arrays and matrices split into elements, by location [",
    );
    for n in 0..ARRAY_PAIRS.len() {
        let sum = |o: &harness::Outcome| o.value(&format!("render{n}")).unwrap().to_string();
        assert_eq!(sum(&off), sum(&safe), "pair {n}: safe renders differently from off");
    }
}

/// Convergent varyings packed with another interpolation group at `full`
/// (interpolated ones promoted to flat, noperspective ones packed with
/// perspective ones) render, on lavapipe, what the unlinked pairs render,
/// bit for bit (`full` promises this only up to interpolation rounding:
/// lavapipe interpolates equal values exactly for these pairs), with the
/// validation layer below. Control as in [`split_arrays_render_the_same`].
#[test]
fn convergent_varyings_render_the_same() {
    let (off, full, _) = render_linked_pairs(
        "convergent-pairs",
        &CONVERGENT_PAIRS,
        "full",
        "convergent [(",
        "convergent, in another interpolation group (old location, now flat) [(",
    );
    for n in 0..CONVERGENT_PAIRS.len() {
        let sum = |o: &harness::Outcome| o.value(&format!("render{n}")).unwrap().to_string();
        assert_eq!(sum(&off), sum(&full), "pair {n}: full renders differently from off");
    }
}

mod readback {
    include!(concat!(env!("OUT_DIR"), "/readback_corpus.rs"));
}

/// The read-back corpus (issue 35; tests/corpus/readback, compiled by
/// tests/build.rs from GLSL as it is and through `spirv-opt -O`, from HLSL
/// by glslang's HLSL front end legalized and with `-Od`, and from SPIR-V
/// assembly shaped as DXBC/DXIL translators emit outputs): vertex shaders
/// that read back their own outputs, write them in parts, under conditions,
/// repeatedly, in called functions and in loops. Every pair renders
/// bit-identically at `off`, `safe` and `full` on lavapipe, with the
/// validation layer below silent, and is linked at `safe` and `full`.
/// (With the linker of before issue 35 the pair renders
/// differently at `full`: its sum moved into the output read back.)
#[test]
fn readback_corpus_renders_the_same_at_every_level() {
    let dir = harness::scratch("readback-corpus");
    let list: String = readback::READBACK_CORPUS
        .iter()
        .map(|(_, v, f)| format!("{},{}\n", out_dir().join(v).display(), out_dir().join(f).display()))
        .collect();
    let list_file = dir.join("pairs.txt");
    std::fs::write(&list_file, list).unwrap();
    let exe = std::env::current_exe().unwrap();
    let render = |level: &str| {
        let child = run(vk_command(&exe, Layers::OverlapOverValidation)
            .args(["render_pairs_child", "--exact", "--ignored", "--nocapture", "--test-threads=1"])
            .env(RENDER_PAIRS, &list_file)
            .env("VK_OVERLAP_EMULATION_VARYINGS", level)
            .env("VK_OVERLAP_EMULATION_VARYINGS_UNIFORMS", "off")
            .env("VK_OVERLAP_EMULATION_LOG_LEVEL", "debug"));
        assert!(child.stdout.contains("1 passed"), "{}\n{}", child.stdout, child.stderr);
        assert!(!child.stderr.contains("VALIDATION ERROR"), "{level}:\n{}", child.stderr);
        child
    };
    let (off, safe, full) = (render("off"), render("safe"), render("full"));
    let n = readback::READBACK_CORPUS.len();
    let sum = |o: &harness::Outcome, i: usize| o.value(&format!("render{i}")).map(str::to_string);
    let mut differ = vec![];
    for (i, (name, _, _)) in readback::READBACK_CORPUS.iter().enumerate() {
        assert!(sum(&off, i).is_some(), "{name}: no render\n{}", off.stdout);
        for (level, o) in [("safe", &safe), ("full", &full)] {
            if sum(o, i) != sum(&off, i) {
                differ.push(format!("{name} at {level}"));
            }
        }
    }
    assert!(differ.is_empty(), "render differently from off: {differ:#?}");
    let linked = |o: &harness::Outcome| o.stderr.lines().filter(|l| l.contains("OVERLAP-Varyings-Linked")).count();
    assert_eq!(linked(&off), 0);
    // (A pair with nothing to change is passed down unlinked: the vec4
    // pairs at safe.)
    assert!(
        linked(&safe) >= n * 2 / 3 && linked(&full) >= linked(&safe),
        "safe {}, full {}",
        linked(&safe),
        linked(&full)
    );
    // The shapes reach the passes issue 35 is about: sums move at full
    // (where an output is not read back), dead outputs read back go.
    let with = |o: &harness::Outcome, what: &str| o.stderr.lines().filter(|l| l.contains(what)).count();
    assert!(with(&full, "sums moved [(") > 0, "{}", full.stderr);
    assert!(with(&safe, "sums moved [(") == 0);
    assert!(with(&safe, "dead [") > with(&safe, "dead []"), "{}", safe.stderr);
    println!(
        "read-back corpus: {n} pairs bit-identical at off, safe and full ({} linked at safe, {} at full, {} with sums moved at full)",
        linked(&safe),
        linked(&full),
        with(&full, "sums moved [(")
    );
}

//! The varying linker at pipeline creation, on a generated corpus of 32
//! vertex/fragment pairs (tests/build.rs): rendering is bit-identical with
//! `safe` (and, on lavapipe, with `full`) to `off`, the validation layer below
//! sees valid linked pipelines, and the linker removes at least what
//! spirv-opt's own interface passes remove.

use overlap_tests::harness::{self, app, overlap_cli, run, vk_command, Layers};
use std::path::Path;
use std::process::Command;

fn corpus(level: &str) -> (harness::Outcome, std::path::PathBuf) {
    let dir = harness::scratch(&format!("corpus-{level}"));
    let o = run(app(Layers::OverlapOverValidation, &["varyings", dir.to_str().unwrap()])
        .env("VK_OVERLAP_EMULATION_VARYINGS", level)
        .env("VK_OVERLAP_EMULATION_VARYINGS_UNIFORMS", "on")
        .env("VK_OVERLAP_EMULATION_LOG_LEVEL", "debug"));
    o.assert_ok();
    (o, dir)
}

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
    assert_eq!(
        safe.stderr
            .matches("locations 4 -> 1, components 13 -> 4 (dead [2], constants [4], uniforms [], duplicates [(5, 0)], sums moved []")
            .count(),
        2,
        "{}",
        safe.stderr
    );
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

#[test]
fn linker_removes_at_least_what_spirv_opt_removes() {
    let out = Path::new(env!("OUT_DIR"));
    let dir = harness::scratch("spirv-opt");
    let (mut ours, mut theirs, mut before) = (0, 0, 0);
    let (mut comps_before, mut comps_after, mut narrowed, mut uniforms) = (0, 0, 0, 0);
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
        ours += m;
        theirs += o;
        before += mine["producer"]["locations_before"].as_u64().unwrap();
        comps_before += mine["producer"]["components_before"].as_u64().unwrap();
        comps_after += mine["producer"]["components_after"].as_u64().unwrap();
        narrowed += mine["narrowed"].as_array().unwrap().len();
        uniforms += mine["propagated_uniforms"].as_array().unwrap().len();
    }
    println!("corpus locations: {before} before, {theirs} after spirv-opt, {ours} after the linker");
    println!(
        "corpus components: {comps_before} before, {comps_after} after the linker ({narrowed} vectors narrowed, {uniforms} uniform expressions moved)"
    );
    assert!(uniforms > 0, "the corpus has flat uniform expressions: some must move at safe");
    assert!(narrowed > 0, "the corpus has partly read vectors: some must be narrowed");
    assert!(ours < theirs);
}

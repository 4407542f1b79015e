//! `dump_shaders` writes every SPIR-V module the layer rewrites — the
//! varying linker's output included (it once validated on its own and
//! dumped nothing): the varying corpus at `safe` dumps linked modules, each
//! valid; with the linker off (nothing else in the corpus is rewritten) the
//! folder stays empty.

use overlap_tests::harness::{self, app, run, Layers};

fn corpus(level: &str) -> (harness::Outcome, Vec<std::path::PathBuf>) {
    let out = harness::scratch(&format!("dump-corpus-{level}"));
    let dump = harness::scratch(&format!("dump-{level}"));
    let o = run(app(Layers::OverlapOverValidation, &["varyings", out.to_str().unwrap()])
        .env("VK_OVERLAP_EMULATION_VARYINGS", level)
        .env("VK_OVERLAP_EMULATION_DUMP_SHADERS", &dump)
        .env("VK_OVERLAP_EMULATION_LOG_LEVEL", "debug"));
    o.assert_ok();
    let files = std::fs::read_dir(&dump).map(|d| d.map(|e| e.unwrap().path()).collect()).unwrap_or_default();
    (o, files)
}

#[test]
fn linked_modules_are_dumped_and_valid() {
    let (o, files) = corpus("safe");
    let linked = o.stderr.lines().filter(|l| l.contains("OVERLAP-Varyings-Linked")).count();
    assert!(linked > 0, "nothing linked:\n{}", o.stderr);
    let outs: Vec<_> = files.iter().filter(|p| p.to_string_lossy().ends_with(".out.spv")).collect();
    let ins = files.iter().filter(|p| p.to_string_lossy().ends_with(".in.spv")).count();
    assert_eq!(outs.len(), ins, "every output beside its input");
    // A linked chain dumps each of its stages (modules of equal input share a name).
    assert!(outs.len() >= 2, "{} dumps for {linked} linked chains", outs.len());
    let mut stages = std::collections::HashSet::new();
    for p in outs {
        let val = std::process::Command::new("spirv-val").args(["--target-env", "vulkan1.1"]).arg(p).output().unwrap();
        assert!(val.status.success(), "{}: {}", p.display(), String::from_utf8_lossy(&val.stderr));
        let dis = std::process::Command::new("spirv-dis").arg(p).output().unwrap();
        let text = String::from_utf8_lossy(&dis.stdout).into_owned();
        for model in ["Vertex", "Fragment"] {
            if text.contains(&format!("OpEntryPoint {model}")) {
                stages.insert(model);
            }
        }
    }
    assert_eq!(stages.len(), 2, "both stages of linked pairs dumped: {stages:?}");
}

#[test]
fn nothing_is_dumped_with_the_linker_off() {
    let (o, files) = corpus("off");
    assert!(!o.stderr.contains("OVERLAP-Varyings-Linked"), "{}", o.stderr);
    assert!(files.is_empty(), "{files:?}");
}

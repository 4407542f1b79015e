//! VK_EXT_fragment_shader_interlock on lavapipe through Overlap (serialized
//! strategy), CTS-style, with the validation layer below the layer.

use overlap_tests::harness::{self, app, run, run_with_timeout, Layers};
use overlap_tests::interlock;
use std::time::Duration;

/// The whole matrix under `strategy`; returns the rewritten modules.
fn full_matrix(strategy: &str) -> (harness::Outcome, Vec<String>) {
    let dump = harness::scratch("dump");
    let o = run_with_timeout(
        app(Layers::OverlapOverValidation, &["interlock"])
            .env("VK_OVERLAP_EMULATION_INTERLOCK_STRATEGY", strategy)
            .env("VK_OVERLAP_EMULATION_DUMP_SHADERS", &dump)
            .env("VK_OVERLAP_EMULATION_LOG_LEVEL", "debug"),
        Duration::from_secs(300),
    );
    o.assert_ok();
    let cases: Vec<&str> = o.stdout.lines().filter(|l| l.starts_with("case=")).collect();
    assert_eq!(cases.len(), interlock::matrix(false).len());
    assert_eq!(cases.len(), 128);
    assert!(cases.iter().all(|l| l.ends_with("result=pass")), "{}", o.stdout);
    let mut outs_text = Vec::new();
    assert_eq!(o.value("failures"), Some("0"));
    assert!(o.stderr.contains(&format!("OVERLAP-Shader-Rewritten: {strategy}")), "{}", o.stderr);
    // Every rewritten module is valid SPIR-V without any interlock left.
    let outs: Vec<_> = std::fs::read_dir(&dump)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(".out.spv"))
        .collect();
    assert_eq!(outs.len(), 8, "one rewrite per interlock shader variant");
    for p in outs {
        let val = std::process::Command::new("spirv-val").args(["--target-env", "vulkan1.1"]).arg(&p).output().unwrap();
        assert!(val.status.success(), "{}: {}", p.display(), String::from_utf8_lossy(&val.stderr));
        let dis = std::process::Command::new("spirv-dis").arg(&p).output().unwrap();
        let text = String::from_utf8_lossy(&dis.stdout);
        assert!(!text.contains("Interlock"), "{}", p.display());
        outs_text.push(text.into_owned());
    }
    (o, outs_text)
}

#[test]
fn full_matrix_passes_under_the_serialized_strategy() {
    let (_, modules) = full_matrix("serialized");
    assert!(modules.iter().all(|t| !t.contains("OpAtomicCompareExchange")));
}

/// lavapipe serializes anyway, so this proves the locked shaders, the
/// reserved set, the extended layouts and the lock binding are valid and
/// exact; the race behaviour is measured on a GPU (docs/BENCHMARKS.md).
#[test]
fn full_matrix_passes_under_the_forced_spinlock_strategy() {
    let (o, modules) = full_matrix("spinlock");
    assert!(modules.iter().all(|t| t.contains("OpAtomicCompareExchange") && t.contains("OpLoopMerge")));
    // Ordered modes get their one-time warning per pipeline.
    assert!(o.overlap_messages().contains(&"OVERLAP-Interlock-Order"));
    assert!(o.overlap_messages().contains(&"OVERLAP-Limit-Adjusted"));
}

#[test]
fn spinlock_reserves_the_last_descriptor_set() {
    let native = run(&mut app(Layers::OverlapOverValidation, &["interlock-features"]));
    let spin = run(app(Layers::OverlapOverValidation, &["interlock-features"])
        .env("VK_OVERLAP_EMULATION_INTERLOCK_STRATEGY", "spinlock"));
    native.assert_ok();
    spin.assert_ok();
    let sets = |o: &harness::Outcome| o.value("max_bound_descriptor_sets").unwrap().parse::<u32>().unwrap();
    assert_eq!(sets(&spin), sets(&native) - 1);
    assert_eq!(spin.value("pixel"), Some("1 sample=1 shading_rate=0"));
}

#[test]
fn features_are_pixel_and_sample_never_shading_rate() {
    let o = run(&mut app(Layers::OverlapOverValidation, &["interlock-features"]));
    o.assert_ok();
    assert_eq!(o.value("pixel"), Some("1 sample=1 shading_rate=0"));
    assert_eq!(o.value("enabled"), Some("true"));
    assert_eq!(o.value("shading_rate_device"), Some("ERROR_FEATURE_NOT_PRESENT"));
}

#[test]
fn lavapipe_alone_has_no_interlock() {
    for (layers, env) in [(Layers::Validation, None), (Layers::OverlapOverValidation, Some("native"))] {
        let mut cmd = app(layers, &["interlock", "quick"]);
        if let Some(s) = env {
            cmd.env("VK_OVERLAP_EMULATION_INTERLOCK_STRATEGY", s);
        }
        let o = run(&mut cmd);
        assert_eq!(o.code, Some(1), "{}", o.stdout);
        assert_eq!(o.value("interlock"), Some("unsupported"));
    }
}

/// The same test without a critical section: on lavapipe it passes too (the
/// rasterizer serializes), which is why the race detector runs on a GPU
/// (docs/BENCHMARKS.md); here it checks the checker's expected words.
#[test]
fn negative_control_runs() {
    let o = run(&mut app(Layers::OverlapOverValidation, &["interlock", "none"]));
    o.assert_ok();
    assert!(o.stdout.lines().filter(|l| l.starts_with("case=none.")).count() >= 8, "{}", o.stdout);
}

/// OIT through interlock matches the CPU reference (sorted per-pixel lists
/// composited back to front), under both strategies.
#[test]
fn oit_scene_matches_its_cpu_reference() {
    for strategy in ["serialized", "spinlock"] {
        let o = run(app(Layers::OverlapOverValidation, &["oit", "256", "192"])
            .env("VK_OVERLAP_EMULATION_INTERLOCK_STRATEGY", strategy));
        o.assert_ok();
        let line = o.stdout.lines().find(|l| l.starts_with("oit=")).unwrap();
        assert!(line.contains("max_diff=0 wrong_pixels=0"), "{strategy}: {line}");
    }
}

/// The same cases with the fragment shader passed inline (a
/// VkShaderModuleCreateInfo chained to the pipeline stage, as graphics
/// pipeline libraries allow): the rewrite must reach that path too.
#[test]
fn inline_stage_modules_are_rewritten_too() {
    for strategy in ["serialized", "spinlock"] {
        let o = run(app(Layers::OverlapOverValidation, &["interlock", "inline"])
            .env("VK_OVERLAP_EMULATION_INTERLOCK_STRATEGY", strategy)
            .env("VK_OVERLAP_EMULATION_LOG_LEVEL", "debug"));
        o.assert_ok();
        assert_eq!(o.value("failures"), Some("0"), "{strategy}");
        // One rewrite per pipeline: nothing went through vkCreateShaderModule.
        let rewrites = o.stderr.matches("OVERLAP-Shader-Rewritten").count();
        assert_eq!(rewrites, o.stdout.lines().filter(|l| l.starts_with("case=")).count(), "{strategy}");
    }
}

//! Issue 18's shape, many times: `oit_stress` mirrors the Vulkan use of
//! nvpro-samples' `vk_order_independent_transparency` running its interlock
//! algorithm after its spinlock one (a storage-image OIT pass with an ordered
//! interlock section, tail blending, a composite pass, several frames, a
//! read-back each frame, the stale descriptor the sample leaves behind). The
//! sample was reported to crash in 30–45% of runs on lavapipe through
//! Overlap; this shape has not crashed here (see the closing note of the
//! session that added it). Every run must exit 0 — a signal (SIGSEGV, an
//! abort) fails the test — with the validation layer below and silent, and
//! the frames stable and equal to a reference sequence (no interlock, made
//! afresh after the script: on llvmpipe every algorithm gives its picture),
//! whose control is `--plant-reverse`.

use overlap_tests::harness::{bin_dir, run, vk_command, Layers};

fn stress(runs: u32, strategy: &str, script: &str) {
    for i in 0..runs {
        let o = run(vk_command(bin_dir().join("oit_stress"), Layers::OverlapOverValidation)
            .args(["--script", script])
            .env("VK_OVERLAP_EMULATION_INTERLOCK_STRATEGY", strategy));
        assert_eq!(o.code, Some(0), "{strategy} {script}, run {i}: {o:?}");
        assert_eq!(o.value("VALIDATION_ERRORS"), Some("0"), "{strategy} run {i}");
        let seqs: Vec<&str> = o.stdout.lines().filter(|l| l.starts_with("seq=")).collect();
        assert_eq!(seqs.len(), script.split(',').count(), "{}", o.stdout);
        assert!(seqs.iter().all(|l| l.ends_with("stable=true agrees=true")), "{}", o.stdout);
        assert!(o.stdout.lines().any(|l| l.starts_with("reference mode=None ") && l.ends_with("stable=true")));
    }
}

/// The control of `agrees`: the ordered sequence's triangles drawn last to
/// first (`--plant-reverse`, a wrong order that tail blending shows) differ
/// from the reference, and the run fails; the spinlock sequence before it
/// still agrees.
#[test]
fn a_wrong_order_fails_the_agreement_check() {
    let o = run(vk_command(bin_dir().join("oit_stress"), Layers::OverlapOverValidation)
        .args(["--script", "spin,ordered", "--plant-reverse"])
        .env("VK_OVERLAP_EMULATION_INTERLOCK_STRATEGY", "serialized"));
    assert_eq!(o.code, Some(1), "{o:?}");
    assert!(o.stdout.lines().any(|l| l.starts_with("seq=0 mode=Spin ") && l.ends_with("agrees=true")), "{}", o.stdout);
    assert!(
        o.stdout.lines().any(|l| l.starts_with("seq=1 mode=Ordered ") && l.ends_with("agrees=false")),
        "{}",
        o.stdout
    );
    assert!(o.stderr.contains("CHECK FAILED: sequence 1 (Ordered): differs from the reference"), "{}", o.stderr);
    assert_eq!(o.value("VALIDATION_ERRORS"), Some("0"));
}

#[test]
fn interlock_after_spinlock_never_crashes_serialized() {
    stress(20, "serialized", "spin,ordered");
}

#[test]
fn interlock_after_spinlock_never_crashes_spinlock() {
    stress(20, "spinlock", "spin,ordered");
}

/// Separate interface variables: the varying linker makes temporary modules
/// and destroys them right after pipeline creation.
#[test]
fn linked_interlock_pipelines_never_crash() {
    stress(10, "serialized", "spin,flat,unordered");
}

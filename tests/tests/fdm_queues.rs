//! Scratch targets and command buffers that may execute at once (issue 17,
//! item 5): two command buffers recorded before either is submitted, both
//! replaying density-map passes of the same attachments at the same area
//! (`overlap-testapp fdm-queues`), must not share scratch targets — on a
//! driver with two graphics queues they run at once (`ci/gpu-nvidia`: the
//! picture on two queues equals the one-queue run and the exact one).
//! lavapipe has one queue: the pictures are checked on it (each run's
//! `one_queue … wrong_pixels=0`: every stripe its command buffer's colour),
//! and the keying through the layer's debug plan line ("N scratch sets for
//! its attachments"). One queue runs the command buffers one after the other,
//! so shared scratch targets leave the picture right here (the control below
//! shows it): the picture that would show the sharing is the two-queue one,
//! judged in `ci/gpu-nvidia` (5 rounds equal to the one-queue run), whose
//! control (shared targets on two queues) is a race not run there (a gap in
//! docs/TESTING.md).

use overlap_tests::harness::{app, run, Layers};

/// The scratch-set counts of the plan lines, in recording order.
fn scratch_sets(log: &str) -> Vec<u32> {
    log.lines()
        .filter(|l| l.contains("OVERLAP-FDM-Plan"))
        .filter_map(|l| l.split("; ").find_map(|p| p.strip_suffix(" scratch sets for its attachments")))
        .map(|n| n.trim().parse().expect("a count"))
        .collect()
}

#[test]
fn two_command_buffers_recorded_at_once_never_share_scratch_targets() {
    let o = run(app(Layers::OverlapOverValidation, &["fdm-queues"]).env("VK_OVERLAP_EMULATION_LOG_LEVEL", "debug"));
    o.assert_ok();
    assert!(o.stdout.contains("fdm_queues one_queue size=320x64 passes=14 wrong_pixels=0"), "{}", o.stdout);
    let sets = scratch_sets(&format!("{}\n{}", o.stdout, o.stderr));
    assert_eq!(sets.len(), 28, "{}", o.stderr);
    // The first command buffer's passes use one set (its own, reused pass
    // after pass); the second's, recorded while the first holds it, a second.
    assert!(sets[..14].iter().all(|n| *n == 1), "{sets:?}");
    assert!(sets[14..].iter().all(|n| *n == 2), "{sets:?}");
    assert!(!o.overlap_messages().contains(&"OVERLAP-FDM-Fallback"), "{}", o.stderr);
}

/// The negative control: with one set per key shared by every command
/// buffer (`debug_fdm_without=scratch_per_command_buffer`, part 1's rule)
/// the second command buffer's passes use the first's set.
#[test]
fn shared_scratch_targets_fail_the_keying_check() {
    let o = run(app(Layers::OverlapOverValidation, &["fdm-queues"])
        .env("VK_OVERLAP_EMULATION_LOG_LEVEL", "debug")
        .env("VK_OVERLAP_EMULATION_DEBUG_FDM_WITHOUT", "scratch_per_command_buffer"));
    o.assert_ok();
    let sets = scratch_sets(&format!("{}\n{}", o.stdout, o.stderr));
    assert_eq!(sets.len(), 28, "{}", o.stderr);
    assert!(sets.iter().all(|n| *n == 1), "{sets:?}");
    // One queue: the sharing leaves the picture right (see the module's note).
    assert!(o.stdout.contains("fdm_queues one_queue size=320x64 passes=14 wrong_pixels=0"), "{}", o.stdout);
}

/// A command buffer begun again gives its sets back: three rounds of two of
/// three command buffers (the third begun again empty each round) never
/// need a third set, and the picture stays exact. (That the count would
/// reach 3 without the release at `vkBeginCommandBuffer` has not been shown:
/// no switch removes the release; a gap in docs/TESTING.md.)
#[test]
fn scratch_sets_are_released_when_command_buffers_are_recorded_again() {
    let o = run(app(Layers::OverlapOverValidation, &["fdm-queues", "320", "64", "1", "3"])
        .env("VK_OVERLAP_EMULATION_LOG_LEVEL", "debug"));
    o.assert_ok();
    let sets = scratch_sets(&format!("{}\n{}", o.stdout, o.stderr));
    assert_eq!(sets.len(), 28 * 3, "{}", o.stderr);
    assert_eq!(sets.iter().max(), Some(&2), "{sets:?}");
    assert!(o.stdout.contains("fdm_queues one_queue size=320x64 passes=14 wrong_pixels=0"), "{}", o.stdout);
}

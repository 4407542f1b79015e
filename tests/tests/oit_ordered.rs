//! The ordered OIT scene (issue 12; `overlap_tests::oit_ordered`): tail
//! blending, where the order of a pixel's fragments changes the picture,
//! through Overlap's emulated interlock on lavapipe with the validation
//! layer below. lavapipe shades a tile's fragments in primitive order, so
//! `serialized` (what `auto` picks here) is exact: the picture must equal the
//! CPU reference, pixel for pixel. The GPU's side (native, ordered emulation,
//! the spinlock's disorder) is `ci/gpu-nvidia`.

use overlap_tests::harness::{app, run_with_timeout, Layers, Outcome};
use std::time::Duration;

fn scene(strategy: &str, args: &[&str]) -> Outcome {
    let mut all = vec!["oit-ordered", "128", "128"];
    all.extend_from_slice(args);
    run_with_timeout(
        app(Layers::OverlapOverValidation, &all)
            .env("VK_OVERLAP_EMULATION_INTERLOCK_STRATEGY", strategy)
            .env("VK_OVERLAP_EMULATION_INTERLOCK_ORDERED_GRID", "256"),
        Duration::from_secs(300),
    )
}

/// The test program with `args` under the ordered strategy, the layer's
/// log at `info`, and `env` besides.
fn logged(args: &[&str], env: &[(&str, &str)]) -> Outcome {
    let mut cmd = app(Layers::OverlapOverValidation, args);
    cmd.env("VK_OVERLAP_EMULATION_INTERLOCK_STRATEGY", "ordered").env("VK_OVERLAP_EMULATION_LOG_LEVEL", "info");
    for (k, v) in env {
        cmd.env(k, v);
    }
    run_with_timeout(&mut cmd, Duration::from_secs(300))
}

/// `wrong_pixels` of the result line.
fn wrong_pixels(o: &Outcome) -> usize {
    let line = o.stdout.lines().find(|l| l.starts_with("oit_ordered=")).unwrap_or_else(|| panic!("{o:?}"));
    line.split(' ').find_map(|f| f.strip_prefix("wrong_pixels=")).unwrap().parse().unwrap()
}

/// Every strategy equals the reference on lavapipe (the ordered one forced:
/// its count and run draws, across the scene's two draws), at 8 layers (6
/// beyond the kept 2 go to the tail) and 16, and 16 full-target layers;
/// validation silent.
#[test]
fn ordered_oit_matches_its_cpu_reference() {
    for strategy in ["serialized", "ordered", "spinlock"] {
        for layers in ["layers=8", "layers=16"] {
            let o = scene(strategy, &[layers]);
            o.assert_ok();
            assert_eq!(o.value("VALIDATION_ERRORS"), Some("0"));
            assert_eq!(wrong_pixels(&o), 0, "{strategy} {layers}: {}", o.stdout);
        }
    }
    // Every layer over the whole target (the benchmark's shape).
    let o = scene("ordered", &["layers=16", "full"]);
    o.assert_ok();
    assert_eq!(wrong_pixels(&o), 0, "{}", o.stdout);
}

/// Frames drawn as a renderer draws them — the same buffers, pipelines and
/// target, three submissions — stay ordered under the ordered strategy:
/// each frame's count and run draws find the cells the last frame's draws
/// reset (the picture of the last frame equals the reference; validation
/// silent). The reference check is the detector; its control, `reverse`
/// with the same reuse, fails it.
#[test]
fn frames_reusing_their_objects_stay_ordered() {
    let o = scene("ordered", &["layers=8", "reps=3", "reuse"]);
    o.assert_ok();
    assert_eq!(o.value("VALIDATION_ERRORS"), Some("0"));
    assert_eq!(wrong_pixels(&o), 0, "{}", o.stdout);
    let each = o.stdout.lines().find_map(|l| l.split(' ').find_map(|f| f.strip_prefix("gpu_us_each=")));
    assert_eq!(each.map(|e| e.split(',').count()), Some(3), "{}", o.stdout);
    let o = scene("ordered", &["layers=8", "reps=3", "reuse", "reverse", "nocheck"]);
    o.assert_ok();
    assert!(wrong_pixels(&o) > 1000, "{}", o.stdout);
}

/// Frames that make some of their objects anew (`renew=`, which told the
/// NVIDIA driver's slowdown after many pipelines apart from the layer's
/// state, docs/design/ordered-interlock.md §16) stay ordered: new buffers,
/// target and pipelines every frame, pipelines kept or made as spares, and
/// insert modules of distinct bytes (an `OpModuleProcessed` line, which
/// the validation layer's SPIR-V check must accept). A wrong name is an
/// error, and `renew` without `reuse` too.
#[test]
fn frames_renewing_their_objects_stay_ordered() {
    for renew in ["all", "pipelines,keep", "pipelines,spare,distinct", "pipelines,distinct"] {
        let o = scene("ordered", &["layers=8", "reps=3", "reuse", &format!("renew={renew}")]);
        o.assert_ok();
        assert_eq!(o.value("VALIDATION_ERRORS"), Some("0"), "{renew}");
        assert_eq!(wrong_pixels(&o), 0, "{renew}: {}", o.stdout);
    }
    let o = scene("ordered", &["layers=8", "reps=2", "reuse", "renew=shaders"]);
    assert!(o.code != Some(0) && o.stderr.contains("renew: shaders?"), "{o:?}");
    let o = scene("ordered", &["layers=8", "reps=2", "renew=all"]);
    assert!(o.code != Some(0) && o.stderr.contains("goes with reuse"), "{o:?}");
}

/// Extra work per fragment (`work=W`: a heavier shader, its values live
/// across the critical section, as the benchmark's heavy variant runs it)
/// leaves the picture as it was: equal to the reference under the ordered
/// strategy, validation silent.
#[test]
fn extra_work_per_fragment_keeps_the_picture() {
    let o = scene("ordered", &["layers=8", "work=16"]);
    o.assert_ok();
    assert_eq!(o.value("VALIDATION_ERRORS"), Some("0"));
    assert_eq!(wrong_pixels(&o), 0, "{}", o.stdout);
}

/// The check can fail: the layers drawn last to first (a wrong order) give
/// thousands of differing pixels and a failed run; the same scene without
/// the tail (2 layers, both kept and sorted) is order-independent and
/// passes reversed. And the driver alone has no interlock: the scene cannot
/// run without Overlap.
#[test]
fn a_wrong_order_fails_the_reference_check() {
    let o = scene("serialized", &["reverse"]);
    assert_eq!(o.code, Some(1), "{o:?}");
    assert!(o.stderr.contains("CHECK FAILED: ordered OIT:"), "{}", o.stderr);
    assert!(wrong_pixels(&o) > 1000, "{}", o.stdout);
    let o = scene("serialized", &["reverse", "nocheck"]);
    o.assert_ok();
    assert!(wrong_pixels(&o) > 1000, "{}", o.stdout);
    let o = scene("serialized", &["reverse", "layers=2"]);
    o.assert_ok();
    assert_eq!(wrong_pixels(&o), 0);

    let o = run_with_timeout(&mut app(Layers::Validation, &["oit-ordered", "128", "128"]), Duration::from_secs(120));
    assert_ne!(o.code, Some(0), "{o:?}");
    assert!(o.stderr.contains("VK_EXT_fragment_shader_interlock is not available"), "{}", o.stderr);
}

/// The draw kinds (issue 37, item 3) under the ordered strategy (forced):
/// both passes' draws go down as indexed, indirect, indexed indirect, the
/// two indirect-count forms, and `vkCmdDrawMultiEXT` /
/// `vkCmdDrawMultiIndexedEXT` (one draw a call, so each is ordered, with the
/// count draw the layer adds: no `OVERLAP-Interlock-Order-Fallback`), and
/// each equals the CPU reference pixel for pixel; the reversed layer order
/// fails that check for each (the control). The multi draws had no
/// reserved-set wrap before (set 7 never bound: `VUID-vkCmdDrawMultiEXT-None-02697`
/// and a wrong picture).
#[test]
fn every_draw_kind_is_ordered_and_matches_the_reference() {
    // Every kind but the direct draw (the other tests' own).
    let kinds = &overlap_tests::draw_kind::NAMES[1..];
    for kind in kinds {
        let draw = format!("draw={kind}");
        let o = scene("ordered", &["layers=16", &draw]);
        o.assert_ok();
        assert_eq!(o.value("VALIDATION_ERRORS"), Some("0"));
        assert_eq!(wrong_pixels(&o), 0, "{kind}: {}", o.stdout);
        assert!(o.stdout.contains(&format!(" {draw}")), "{}", o.stdout);
        assert!(!o.stdout.contains("OVERLAP-Interlock-Order-Fallback"), "{kind}: {}", o.stdout);
        let o = scene("ordered", &["layers=16", "reverse", &draw]);
        assert_eq!(o.code, Some(1), "{kind}: {o:?}");
        assert!(wrong_pixels(&o) > 1000, "{kind}: {}", o.stdout);
    }
}

/// The measurement setting `debug_ordered_dedicated` (the cells a
/// dedicated allocation, the control block device-local where the driver
/// has such a host-visible type) changes only where the memory is: the
/// ordered scene still equals its reference with the validation layer
/// below (which checks the dedicated allocation's rules), and the log says
/// which allocation the cells got — dedicated with the setting, not
/// without it.
#[test]
fn dedicated_cells_draw_the_same_picture() {
    for (dedicated, said) in [("true", true), ("false", false)] {
        let o = run_with_timeout(
            app(Layers::OverlapOverValidation, &["oit-ordered", "128", "128", "layers=8"])
                .env("VK_OVERLAP_EMULATION_INTERLOCK_STRATEGY", "ordered")
                .env("VK_OVERLAP_EMULATION_INTERLOCK_ORDERED_GRID", "256")
                .env("VK_OVERLAP_EMULATION_DEBUG_ORDERED_DEDICATED", dedicated)
                .env("VK_OVERLAP_EMULATION_LOG_LEVEL", "info"),
            Duration::from_secs(300),
        );
        o.assert_ok();
        assert_eq!(o.value("VALIDATION_ERRORS"), Some("0"), "{}", o.stderr);
        assert_eq!(wrong_pixels(&o), 0, "{}", o.stdout);
        assert!(o.stderr.contains("cells of 32 keys"), "{}", o.stderr);
        assert_eq!(o.stderr.contains("a dedicated allocation"), said, "{}", o.stderr);
    }
}

/// The cells are sized by the render targets made before them: with the
/// default grid (2048 a side, 1.2 GB of cells), a 128 x 128 scene gets the
/// smallest grid, 256 x 256, and a 320 x 192 one 320 x 256 (each side the
/// targets' rounded up to a multiple of 8, at least 256) — and both still
/// equal their reference, validation silent.
#[test]
fn the_cells_are_sized_by_the_render_targets() {
    for (w, h, cells) in [("128", "128", "256 x 256 cells"), ("320", "192", "320 x 256 cells")] {
        let o = logged(&["oit-ordered", w, h, "layers=8"], &[]);
        o.assert_ok();
        assert_eq!(o.value("VALIDATION_ERRORS"), Some("0"), "{}", o.stderr);
        assert_eq!(wrong_pixels(&o), 0, "{}", o.stdout);
        assert!(o.stderr.contains(cells), "{w}x{h}: {}", o.stderr);
        assert!(o.stderr.contains("sized by the render targets made so far"), "{}", o.stderr);
    }
}

/// A render target made after the cells that needs more of them: the cells
/// grow (the old ones kept for command buffers recorded with them) to the
/// target's size, 448 x 320 (no power of two: the 8x8 blocks of a row are
/// 56), and the larger scene drawn on the same device still equals its
/// reference. Without the growth the 448 x 320 scene would run on 256 x 256
/// cells.
#[test]
fn the_cells_grow_for_a_larger_target_made_later() {
    let grow = ["oit-ordered", "128", "128", "layers=8", "grow=448x320"];
    let o = logged(&grow, &[]);
    o.assert_ok();
    assert_eq!(o.value("VALIDATION_ERRORS"), Some("0"), "{}", o.stderr);
    assert!(o.stdout.contains("oit_ordered_grown size=448x320 wrong_pixels=0"), "{}", o.stdout);
    assert_eq!(wrong_pixels(&o), 0, "{}", o.stdout);
    assert!(o.stderr.contains("256 x 256 cells of 32 keys"), "{}", o.stderr);
    // Sized to the target (multiples of 8), not its next powers of two.
    assert!(o.stderr.contains("the cells grow from 256 x 256 to 448 x 320"), "{}", o.stderr);
    // The growth's allocation failing (the layer's fifth vkAllocateMemory in
    // this program: the lock image's, the first cells' three, then this):
    // said once, not tried again at every draw, and the larger scene runs
    // on the shared 256 x 256 cells — still its reference, since each copy
    // of the grid keys its fragments apart.
    let o = logged(&grow, &[("VK_OVERLAP_EMULATION_DEBUG_FAIL", "vkAllocateMemory@5")]);
    o.assert_ok();
    assert!(o.stdout.contains("oit_ordered_grown size=448x320 wrong_pixels=0"), "{}", o.stdout);
    assert_eq!(o.stderr.matches("cannot grow the cells from 256 x 256 to 448 x 320").count(), 1, "{}", o.stderr);
    assert!(!o.stderr.contains("the cells grow from"), "{}", o.stderr);
}

/// Cells of a side that is no power of two, shared along the other: a
/// 640 x 320 scene with the grid held at 512 gets 512 x 320 cells (rows
/// wrap, columns do not), and equals its reference.
#[test]
fn cells_of_any_multiple_of_eight_stay_ordered() {
    let o =
        logged(&["oit-ordered", "640", "320", "layers=8"], &[("VK_OVERLAP_EMULATION_INTERLOCK_ORDERED_GRID", "512")]);
    o.assert_ok();
    assert_eq!(o.value("VALIDATION_ERRORS"), Some("0"), "{}", o.stderr);
    assert!(o.stderr.contains("512 x 320 cells of 32 keys"), "{}", o.stderr);
    assert!(o.stderr.contains("exceeds the cells (512 x 320"), "{}", o.stderr);
    assert_eq!(wrong_pixels(&o), 0, "{}", o.stdout);
}

/// Where a render area is larger than the cells can be (here the grid held
/// at 256 by `interlock_ordered_grid`), pixels 256 apart share cells: each
/// copy of the grid keys its fragments apart, so the 320 x 64 scene still
/// equals its reference (it had thousands of wrong pixels before the copies
/// were keyed apart, with no counter firing: the reference check is the
/// detector, `reverse` its control), on one rasterizer thread too, and the
/// layer says once that the cells are shared. Control: a render area the
/// cells cover says nothing.
#[test]
fn render_areas_larger_than_the_cells_stay_ordered() {
    let scene_at = |w: &str, threads: &str| {
        run_with_timeout(
            app(Layers::OverlapOverValidation, &["oit-ordered", w, "64", "layers=8"])
                .env("VK_OVERLAP_EMULATION_INTERLOCK_STRATEGY", "ordered")
                .env("VK_OVERLAP_EMULATION_INTERLOCK_ORDERED_GRID", "256")
                .env("LP_NUM_THREADS", threads),
            Duration::from_secs(300),
        )
    };
    let said = "exceeds the cells (256 x 256";
    for threads in ["1", "2"] {
        let o = scene_at("320", threads);
        o.assert_ok();
        assert_eq!(o.value("VALIDATION_ERRORS"), Some("0"), "{}", o.stderr);
        assert_eq!(wrong_pixels(&o), 0, "{}", o.stdout);
        assert_eq!(o.stderr.matches(said).count(), 1, "{}", o.stderr);
    }
    let o = scene_at("256", "2");
    o.assert_ok();
    assert!(!o.stderr.contains(said), "{}", o.stderr);
    assert_eq!(wrong_pixels(&o), 0, "{}", o.stdout);
}

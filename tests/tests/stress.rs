//! Concurrency and leaks: instances and devices created and destroyed from
//! several threads, command buffers recorded on 8 threads through the forced
//! hooks, density-map passes with interlock and linked pipelines recorded on
//! 8 threads at once, and create/destroy/render cycles of every capability
//! under valgrind memcheck.

use overlap_tests::harness::{self, app, run, run_with_timeout, Layers};
use std::path::Path;
use std::time::Duration;

#[test]
fn instances_and_devices_from_several_threads() {
    for force in ["0", "1"] {
        let o = run_with_timeout(
            app(Layers::OverlapOverValidation, &["threads", "4", "6"]).env("VK_OVERLAP_EMULATION_FORCE_ENABLE", force),
            Duration::from_secs(180),
        );
        o.assert_ok();
        assert_eq!(o.value("threads"), Some("4 cycles=6"));
    }
}

#[test]
fn recording_on_eight_threads_through_forced_hooks() {
    let o = run_with_timeout(
        app(Layers::OverlapOverValidation, &["record", "8", "400"]).env("VK_OVERLAP_EMULATION_FORCE_ENABLE", "1"),
        Duration::from_secs(180),
    );
    o.assert_ok();
    assert_eq!(o.value("recorded"), Some("8x400"));
    assert_eq!(o.value("hook_owner.vkCmdDraw"), Some("libVkLayer_overlap.so"));
}

/// Definite leaks fail the run; the suppressions (driver and rtld only) are
/// in tests/valgrind.supp with the reason for each.
#[test]
fn create_destroy_and_render_are_leak_free_under_valgrind() {
    assert!(harness::have("valgrind"), "valgrind is missing: run ci/setup");
    let supp = Path::new(env!("CARGO_MANIFEST_DIR")).join("valgrind.supp");
    // The last run creates the spinlock's lock image, set and layouts (and
    // must destroy them with the device).
    for (args, strategy) in [
        (&["cycle", "3"][..], "auto"),
        (&["render", "renderpass", "32", "32"][..], "auto"),
        (&["interlock-features"][..], "spinlock"),
    ] {
        let mut cmd = memcheck(&supp);
        cmd.args(args)
            .env("VK_OVERLAP_EMULATION_FORCE_ENABLE", "1")
            .env("VK_OVERLAP_EMULATION_INTERLOCK_STRATEGY", strategy);
        let o = run_with_timeout(&mut cmd, Duration::from_secs(300));
        assert_eq!(o.code, Some(0), "valgrind {args:?} reports errors:\n{}", o.stderr);
        assert!(
            o.stderr.contains("definitely lost: 0 bytes") || o.stderr.contains("All heap blocks were freed"),
            "{}",
            o.stderr
        );
    }
}

/// The leak detector every suite relies on, shown firing: a planted leak (a
/// buffer the test app never destroys) is reported by the validation layer
/// at vkDestroyDevice. It sits below Overlap, so the layer's own objects
/// (scratch targets, map reader, lock image, temporary modules) are checked
/// the same way in every test that ends with a silent validation layer —
/// valgrind's lavapipe suppression does not hide them from it.
#[test]
fn a_planted_leak_is_reported_at_device_destruction() {
    let o = run(&mut app(Layers::OverlapOverValidation, &["leak"]));
    assert_eq!(o.code, Some(3), "{}\n{}", o.stdout, o.stderr);
    let handle = o.value("leaked_buffer").expect("the leaked handle");
    assert!(
        o.stdout.contains("VUID-vkDestroyDevice-device-00378")
            || o.stderr.contains("VUID-vkDestroyDevice-device-00378"),
        "{}\n{}",
        o.stdout,
        o.stderr
    );
    assert!(o.stdout.contains(handle) || o.stderr.contains(handle), "{}", o.stdout);
    assert_eq!(o.value("VALIDATION_ERRORS"), Some("1"));
}

/// The same detector shown firing on the layer's own objects, not the test
/// app's: with `debug_leak=vulkan` the layer leaves its reserved set (the
/// spinlock's lock image, its memory and view, the set layouts and pool)
/// undestroyed at vkDestroyDevice, and the validation layer below reports
/// them; without it the same run is silent.
#[test]
fn a_leak_of_the_layers_own_vulkan_objects_is_reported() {
    let spin = |leak: &str| {
        run(app(Layers::OverlapOverValidation, &["interlock-features"])
            .env("VK_OVERLAP_EMULATION_INTERLOCK_STRATEGY", "spinlock")
            .env("VK_OVERLAP_EMULATION_DEBUG_LEAK", leak))
    };
    spin("").assert_ok();
    let o = spin("vulkan");
    assert_eq!(o.code, Some(3), "{}\n{}", o.stdout, o.stderr);
    let all = format!("{}{}", o.stdout, o.stderr);
    assert!(all.contains("VUID-vkDestroyDevice-device-00378"), "{all}");
    for object in ["VkImage", "VkDeviceMemory", "VkImageView", "VkDescriptorPool"] {
        assert!(all.contains(object), "{object} not reported:\n{all}");
    }
}

/// Every capability at once on 8 threads (`overlap-testapp stress`): each
/// thread creates a linked pipeline reading the fragment area and an
/// interlock pipeline (the spinlock's rewrite, or the serialized one), then
/// records, submits and checks 4 command buffers, each with a binned
/// density-map pass of the first and a density-map pass of the second (at
/// 1x1: it stores). Lavapipe offers one queue (one family, one queue), so
/// the submissions share it under the program's lock. Validation silent, the
/// areas and fragment ids right (fdm::check_sizes), every pixel counted once
/// per interlock draw. The control: under `fdm=baseline` the same program
/// fails its coarse check.
#[test]
fn density_maps_with_interlock_and_linked_pipelines_on_eight_threads() {
    for strategy in ["auto", "spinlock"] {
        let o = run_with_timeout(
            app(Layers::OverlapOverValidation, &["stress", "8", "4"])
                .env("VK_OVERLAP_EMULATION_INTERLOCK_STRATEGY", strategy)
                .env("VK_OVERLAP_EMULATION_LOG_LEVEL", "debug"),
            Duration::from_secs(240),
        );
        o.assert_ok();
        assert!(o.stdout.contains("stress threads=8 iterations=4 coarse_pixels_per_thread="), "{}", o.stdout);
        assert!(!o.stdout.contains("coarse_pixels_per_thread=0 "), "{}", o.stdout);
        assert_eq!(o.value("VALIDATION_ERRORS"), Some("0"));
        for id in ["OVERLAP-Varyings-Linked", "OVERLAP-Shader-Rewritten", "OVERLAP-FDM-Plan"] {
            assert!(o.stderr.contains(id), "{strategy}: {id} missing");
        }
    }
    let control = run_with_timeout(
        app(Layers::OverlapOverValidation, &["stress", "8", "1"]).env("VK_OVERLAP_EMULATION_FDM", "baseline"),
        Duration::from_secs(240),
    );
    assert_eq!(control.code, Some(1), "{}", control.stdout);
    assert!(control.stderr.contains("nothing was shaded coarsely"), "{}", control.stderr);
}

/// The cross-capability stress program (density maps binned and at 1x1,
/// interlock, linked pipelines; 2 threads, 2 cycles each of record, submit,
/// check, then everything destroyed) under valgrind memcheck, for both
/// interlock strategies: no definite leak on the host. The Vulkan objects the
/// layer makes are checked by the validation layer's leak report in the test
/// above (see `a_planted_leak_is_reported_at_device_destruction`).
#[test]
fn every_capability_is_leak_free_under_valgrind() {
    assert!(harness::have("valgrind"), "valgrind is missing: run ci/setup");
    let supp = Path::new(env!("CARGO_MANIFEST_DIR")).join("valgrind.supp");
    for strategy in ["auto", "spinlock"] {
        let mut cmd = memcheck(&supp);
        cmd.args(["stress", "2", "2"]).env("VK_OVERLAP_EMULATION_INTERLOCK_STRATEGY", strategy);
        let o = run_with_timeout(&mut cmd, Duration::from_secs(300));
        assert_eq!(o.code, Some(0), "valgrind stress ({strategy}) reports errors:\n{}\n{}", o.stdout, o.stderr);
        assert!(o.stdout.contains("stress threads=2 iterations=2"), "{}", o.stdout);
        assert!(o.stderr.contains("definitely lost: 0 bytes") || o.stderr.contains("All heap blocks were freed"));
    }
    // The control: the same valgrind command fails a program that drops its
    // only pointers to heap blocks (the suppressions hide nothing of ours).
    let mut cmd = harness::vk_command("valgrind", Layers::None);
    cmd.args(["--leak-check=full", "--errors-for-leak-kinds=definite", "--error-exitcode=99"])
        .arg(format!("--suppressions={}", supp.display()))
        .arg(harness::testapp())
        .arg("host-leak");
    let o = run_with_timeout(&mut cmd, Duration::from_secs(120));
    assert_eq!(o.code, Some(99), "{}", o.stderr);
    assert!(o.stderr.contains("definitely lost: 65,536 bytes in 16 blocks"), "{}", o.stderr);
    // And one the layer makes: `debug_leak=host` forgets the device's state
    // (heap blocks the layer allocated, none the suppressions cover; "possibly
    // lost", see `memcheck`).
    let mut cmd = memcheck(&supp);
    cmd.arg("interlock-features")
        .env("VK_OVERLAP_EMULATION_INTERLOCK_STRATEGY", "spinlock")
        .env("VK_OVERLAP_EMULATION_DEBUG_LEAK", "host");
    let o = run_with_timeout(&mut cmd, Duration::from_secs(300));
    assert_eq!(o.code, Some(99), "{}", o.stderr);
    assert!(
        o.stderr.contains("VkLayer_overlap::entry::create_device"),
        "the leak is not traced to the layer:\n{}",
        o.stderr
    );
    assert!(!o.stderr.contains("possibly lost: 0 bytes"), "{}", o.stderr);
}

/// valgrind memcheck through Overlap over the test app: definite and
/// possible leaks and memory errors exit 99, with the project's
/// suppressions. Possible leaks count: the layer's device state, forgotten
/// whole (`debug_leak=host`), is only "possibly lost" (a thread of the link
/// cache still points inside it), and a clean run has none.
fn memcheck(supp: &Path) -> std::process::Command {
    let mut cmd = harness::vk_command("valgrind", Layers::Overlap);
    cmd.args([
        "--keep-debuginfo=yes",
        "--leak-check=full",
        "--errors-for-leak-kinds=definite,possible",
        "--error-exitcode=99",
    ])
    .arg(format!("--suppressions={}", supp.display()))
    .arg(harness::testapp());
    cmd
}

//! Issue 36: lavapipe 22.3 reads every image descriptor of a bound set when
//! a draw executes, also those of bindings no pipeline uses, so an image
//! view the application destroyed (legally: nothing uses its binding any
//! more) is read after it was freed — nvpro's OIT sample crashed that way
//! when it switched algorithms. `overlap-testapp stale-view` is that shape,
//! with the freed heap chunks refilled so the read crashes every time
//! (`overlap_tests::stale_view`). Through Overlap (`defer_view_destruction`,
//! auto on llvmpipe where the layer emulates something) the view and its
//! image are destroyed only when the set lets them go.

use overlap_tests::harness::{app, run, Layers};

/// A crash: killed by a signal (no exit code), as the sample's runs were.
fn crashed(o: &overlap_tests::harness::Outcome) -> bool {
    o.code.is_none() || o.code == Some(139)
}

#[test]
fn lavapipe_alone_crashes_on_a_destroyed_view_in_an_unused_binding() {
    // The validation layer finds nothing wrong with the program: the crash is the driver's.
    let o = run(&mut app(Layers::Validation, &["stale-view", "16"]));
    assert!(crashed(&o), "{o:?}");
    assert!(!o.stderr.contains("VALIDATION ERROR"), "{}", o.stderr);
}

#[test]
fn overlap_keeps_the_view_until_the_set_lets_it_go() {
    let o = run(&mut app(Layers::OverlapOverValidation, &["stale-view", "64"]));
    o.assert_ok();
    assert!(
        o.stdout.contains("stale_view draws=64 update=Writes interlock=true pixel=[51, 102, 153, 255]"),
        "{}",
        o.stdout
    );
    assert_eq!(o.value("VALIDATION_ERRORS"), Some("0"));
}

/// The same with the set written by a descriptor update template (as
/// vkd3d-proton and DXVK write theirs); its control crashes too.
#[test]
fn views_written_by_a_template_are_kept_too() {
    let o = run(&mut app(Layers::OverlapOverValidation, &["stale-view", "64", "template"]));
    o.assert_ok();
    assert!(o.stdout.contains("update=Template interlock=true pixel=[51, 102, 153, 255]"), "{}", o.stdout);
    let o = run(app(Layers::OverlapOverValidation, &["stale-view", "16", "template"])
        .env("VK_OVERLAP_EMULATION_DEFER_VIEW_DESTRUCTION", "off"));
    assert!(crashed(&o), "{o:?}");
}

#[test]
fn without_the_workaround_overlap_crashes_too() {
    let o = run(app(Layers::OverlapOverValidation, &["stale-view", "16"])
        .env("VK_OVERLAP_EMULATION_DEFER_VIEW_DESTRUCTION", "off"));
    assert!(crashed(&o), "{o:?}");
}

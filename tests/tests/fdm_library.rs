//! The density built-ins in graphics pipeline libraries (issue 17, item 5)
//! on lavapipe through the layer, validation layer below: a fragment-shader
//! library reading `FragSizeEXT` and `FragCoord`, linked fast and with
//! link-time optimization, for a render pass and for dynamic rendering, gets
//! its per-area variants at the final link;
//! and the negative control.

use overlap_tests::harness::{app, run, Layers};

#[test]
fn a_fragment_shader_library_gets_per_area_variants_at_the_link() {
    let o = run(&mut app(Layers::OverlapOverValidation, &["fdm-library"]));
    o.assert_ok();
    for dynamic in ["false", "true"] {
        for lto in ["false", "true"] {
            let head = format!("fdm_library dynamic={dynamic} lto={lto} coarse_pixels=");
            assert!(o.stdout.lines().any(|l| l.starts_with(&head)), "missing {head:?} in\n{}", o.stdout);
        }
    }
    assert!(!o.overlap_messages().contains(&"OVERLAP-FDM-Fallback"), "{}", o.stderr);
}

/// The negative control: without per-area links (`debug_fdm_without=
/// library_variants`, part 1's behaviour) the linked pipeline is the 1x1
/// one, replayed at every area: its `FragCoord` is in scratch space and
/// `FragSizeEXT` says 1x1 over coarse blocks, and the check fires.
#[test]
fn links_without_variants_fail_the_size_check() {
    let o = run(app(Layers::OverlapOverValidation, &["fdm-library"])
        .env("VK_OVERLAP_EMULATION_DEBUG_FDM_WITHOUT", "library_variants"));
    assert_eq!(o.code, Some(1), "{}\n{}", o.stdout, o.stderr);
    assert!(o.stderr.contains("CHECK FAILED: fdm_library dynamic=false lto=false"), "{}", o.stderr);
    assert_eq!(o.value("VALIDATION_ERRORS"), Some("0"));
}

//! Multisampled attachments that load and store in binned density-map
//! passes (issue 17, item 5) on lavapipe through the layer, validation layer
//! below: `overlap-testapp fdm-msaa` judges every sample of a colour and a
//! depth/stencil attachment against the known scene, for render pass 1, 2
//! and dynamic rendering, with and without resolves, at a size of whole map
//! texels and one cut short; and its negative control.

use overlap_tests::harness::{app, run, Layers};

#[test]
fn multisampled_loads_and_stores_are_binned_sample_for_sample() {
    let o = run(&mut app(Layers::OverlapOverValidation, &["fdm-msaa"]));
    o.assert_ok();
    let cases: Vec<&str> = o.stdout.lines().filter(|l| l.starts_with("fdm_msaa path=")).collect();
    // lavapipe offers 4 samples (besides 1): 2 sizes, 3 paths, with and without resolves.
    assert_eq!(cases.len(), 12, "{}", o.stdout);
    for size in ["256x256", "250x190"] {
        for path in ["RenderPass", "RenderPass2", "Dynamic"] {
            for resolve in ["false", "true"] {
                let head = format!("fdm_msaa path={path} samples=4 size={size} resolve={resolve} coarse_pixels=");
                assert!(cases.iter().any(|l| l.starts_with(&head)), "missing {head:?} in\n{}", o.stdout);
            }
        }
    }
    assert!(!o.overlap_messages().contains(&"OVERLAP-FDM-Fallback"), "{}", o.stderr);
}

/// The negative control: part 1's fallback (`debug_fdm_without=msaa`)
/// renders these passes at 1x1, which the spec allows, but the check asks for
/// coarse blocks and fires.
#[test]
fn the_one_by_one_fallback_fails_the_multisampled_check() {
    let o =
        run(app(Layers::OverlapOverValidation, &["fdm-msaa"]).env("VK_OVERLAP_EMULATION_DEBUG_FDM_WITHOUT", "msaa"));
    assert_eq!(o.code, Some(1), "{}\n{}", o.stdout, o.stderr);
    assert!(o.stderr.contains("too little was shaded coarsely ("), "{}", o.stderr);
    assert!(o.overlap_messages().contains(&"OVERLAP-FDM-Fallback"), "{}", o.stderr);
    assert_eq!(o.value("VALIDATION_ERRORS"), Some("0"));
}

/// The same passes with a dynamic map, planned on the GPU (issue 17, items
/// 2 and 5 together): the multisampled colour attachment that loads and
/// stores is scaled down by copies and up one sample at a time, and every
/// colour sample is judged (the depth/stencil attachment loads but does not
/// store: the GPU plan's upscale serves colour). Every pass is planned on
/// the GPU; with `debug_fdm_without=msaa` they render at 1x1 and the check
/// fires.
#[test]
fn multisampled_colour_with_a_dynamic_map_is_planned_on_the_gpu() {
    let o = run(
        app(Layers::OverlapOverValidation, &["fdm-msaa", "dynamic"]).env("VK_OVERLAP_EMULATION_LOG_LEVEL", "debug")
    );
    o.assert_ok();
    let cases = o.stdout.lines().filter(|l| l.starts_with("fdm_msaa path=") && l.contains(" map=dynamic ")).count();
    assert_eq!(cases, 12, "{}", o.stdout);
    assert_eq!(o.stderr.matches("GPU plan:").count(), 12, "{}", o.stderr);
    assert!(!o.overlap_messages().contains(&"OVERLAP-FDM-Fallback"), "{}", o.stderr);
    let o = run(app(Layers::OverlapOverValidation, &["fdm-msaa", "dynamic"])
        .env("VK_OVERLAP_EMULATION_DEBUG_FDM_WITHOUT", "msaa"));
    assert_eq!(o.code, Some(1), "{}\n{}", o.stdout, o.stderr);
    assert!(o.stderr.contains("too little was shaded coarsely ("), "{}", o.stderr);
    assert_eq!(o.value("VALIDATION_ERRORS"), Some("0"));
}

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
/// exact; the race behaviour is measured on a GPU (docs/BENCHMARKS.md). The
/// lock itself is only checked structurally here (a compare-exchange in a
/// loop): a lock that never blocks would pass on lavapipe too.
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

/// The driver-alone control of the rasterizer-ordered-view shape
/// (`interlock rov-none`, no layer, no critical section): llvmpipe takes a
/// fragment shader without discard that writes its one colour attachment
/// with the full mask, unblended, at one sample, as *opaque*, and when a
/// later triangle of it covers a whole 64x64 tile it drops the commands
/// binned for that tile before it, memory writes and all. Words lose bits
/// at one sample; at four samples (never opaque) and with a discard in the
/// shader (`rov-none-discard`) nothing is lost — the matrix above
/// (`interlock none`, no colour written) never meets the rule at all.
#[test]
fn lavapipe_alone_drops_earlier_primitives_under_an_opaque_full_tile_one() {
    let o = run(&mut app(Layers::Validation, &["interlock", "rov-none"]));
    o.assert_ok();
    let lines = case_lines(&o);
    assert_eq!(lines.len(), interlock::rov_matrix(&[(256, 192)], &["none"], false).len(), "{}", o.stdout);
    for (name, words, wrong, _) in &lines {
        assert_eq!(*words, 256 * 192, "{name}");
        if name.contains(".1x.") {
            assert!(
                *wrong > 0,
                "{name}: lavapipe kept every primitive (the opaque-tile rule no longer fires?)\n{}",
                o.stdout
            );
        } else {
            assert_eq!(*wrong, 0, "{name}: lost words at 4 samples\n{}", o.stdout);
        }
    }
    let o = run(&mut app(Layers::Validation, &["interlock", "rov-none-discard"]));
    o.assert_ok();
    let lines = case_lines(&o);
    assert_eq!(lines.len(), 8);
    assert!(lines.iter().all(|(_, _, wrong, _)| *wrong == 0), "{}", o.stdout);
}

/// The rasterizer-ordered-view shape through Overlap: `(strategy,
/// interlock_never_opaque)`; the rewritten modules are valid (spirv-val)
/// and hold a discard exactly where the setting is on.
fn rov(strategy: &str, never_opaque: &str) -> harness::Outcome {
    let dump = harness::scratch("dump");
    let o = run_with_timeout(
        app(Layers::OverlapOverValidation, &["interlock", "rov"])
            .env("VK_OVERLAP_EMULATION_INTERLOCK_STRATEGY", strategy)
            .env("VK_OVERLAP_EMULATION_INTERLOCK_NEVER_OPAQUE", never_opaque)
            .env("VK_OVERLAP_EMULATION_DUMP_SHADERS", &dump)
            .env("VK_OVERLAP_EMULATION_LOG_LEVEL", "debug"),
        Duration::from_secs(300),
    );
    let outs: Vec<_> = std::fs::read_dir(&dump)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(".out.spv"))
        .collect();
    assert!(!outs.is_empty(), "{strategy}: nothing rewritten");
    for p in outs {
        let val = std::process::Command::new("spirv-val").args(["--target-env", "vulkan1.1"]).arg(&p).output().unwrap();
        assert!(val.status.success(), "{}: {}", p.display(), String::from_utf8_lossy(&val.stderr));
        let kills = |p: &std::path::Path| {
            let dis = std::process::Command::new("spirv-dis").arg(p).output().unwrap();
            String::from_utf8_lossy(&dis.stdout).matches("OpKill").count()
        };
        let input = std::path::PathBuf::from(p.to_string_lossy().replace(".out.spv", ".in.spv"));
        assert_eq!(kills(&p), kills(&input) + usize::from(never_opaque != "off"), "{}", p.display());
    }
    o
}

/// A real ROV program's shape (31 full-screen quads in one draw, the colour
/// attachment written unblended, an ordered read-modify-write checked
/// against every earlier primitive) is exact under both lavapipe strategies,
/// render pass and dynamic rendering, image and buffer, 1 and 4 samples:
/// the interlock shaders carry a discard that is never taken
/// (`interlock_never_opaque`, auto on llvmpipe).
#[test]
fn rov_programs_are_exact_under_serialized_and_spinlock() {
    for strategy in ["serialized", "spinlock"] {
        let o = rov(strategy, "auto");
        o.assert_ok();
        let lines = case_lines(&o);
        assert_eq!(lines.len(), 16, "{}", o.stdout);
        assert!(lines.iter().any(|(n, ..)| n.contains(".dynamic")) && lines.iter().any(|(n, ..)| n.contains(".ssbo.")));
        for (name, words, wrong, order) in &lines {
            assert_eq!((*wrong, *order), (0, 0), "{strategy} {name}: {words} words");
        }
        assert!(o.stderr.contains("an untaken discard so that llvmpipe never takes it as opaque"), "{}", o.stderr);
    }
}

/// The control: with `interlock_never_opaque=off` the same program loses
/// earlier primitives at one sample under either strategy.
#[test]
fn rov_programs_lose_earlier_primitives_without_the_untaken_discard() {
    for strategy in ["serialized", "spinlock"] {
        let o = rov(strategy, "off");
        assert_eq!(o.code, Some(1), "{strategy}: {}", o.stdout);
        assert!(!o.stderr.contains("untaken discard"), "{}", o.stderr);
        // Every case ran to its line: the failure is the lost words, not an abort.
        let lines = case_lines(&o);
        assert_eq!(lines.len(), 16, "{strategy}: {}", o.stdout);
        for (name, _, wrong, order) in lines {
            if name.contains(".1x.") {
                assert!(wrong + order > 0, "{strategy} {name}: nothing lost without the discard");
            }
        }
    }
}

/// One `case=` line of `overlap-testapp interlock`: (name, words, wrong, order_errors).
fn case_lines(o: &harness::Outcome) -> Vec<(String, usize, usize, usize)> {
    o.stdout
        .lines()
        .filter_map(|l| l.strip_prefix("case="))
        .map(|l| {
            let name = l.split_whitespace().next().unwrap().to_string();
            let field = |k: &str| -> usize {
                l.split_whitespace()
                    .find_map(|f| f.strip_prefix(k).and_then(|r| r.strip_prefix('=')))
                    .unwrap_or_else(|| panic!("no {k} in {l}"))
                    .parse()
                    .unwrap()
            };
            (name, field("words"), field("wrong"), field("order_errors"))
        })
        .collect()
}

/// The interlock cases without a critical section (`interlock none`: the
/// `NO_INTERLOCK` build of interlock.frag, the pixel_interlock_unordered
/// cases of the quick matrix). This is not a negative control on lavapipe
/// and cannot be one: llvmpipe shades each tile on one thread, primitive
/// after primitive (the premise of the serialized strategy), so fragments of
/// a pixel never overlap and nothing can race; the testapp also returns Ok
/// whatever `none` finds. The control that must lose words runs on a GPU
/// (`ci/gpu-nvidia`, docs/BENCHMARKS.md). What it checks here:
/// - the control shader really has no critical section, and the layer
///   leaves it alone (nothing rewritten);
/// - every case the matrix defines ran, over width × height words (times
///   the samples with sample shading), as many as the interlock run of the
///   same case (that the checker counts a word missing from a readback as
///   wrong is unit-tested in overlap_tests::interlock);
/// - no word lost or flagged, and the totals are the sums of the cases: on
///   lavapipe this is the serialization the serialized strategy relies on
///   (if it ever fails, lavapipe overlaps a pixel's fragments and
///   `serialized` is no longer exact).
#[test]
fn no_critical_section_run_checks_every_word_and_lavapipe_serializes_it() {
    for variant in ["pixel", "sample"] {
        let spv = std::path::Path::new(env!("OUT_DIR")).join(format!("interlock-none-{variant}.frag.spv"));
        let dis = std::process::Command::new("spirv-dis").arg(&spv).output().unwrap();
        assert!(dis.status.success());
        let text = String::from_utf8_lossy(&dis.stdout);
        assert!(text.contains("OpImageWrite") && !text.contains("InterlockEXT"), "{}:\n{text}", spv.display());
    }
    let o =
        run(app(Layers::OverlapOverValidation, &["interlock", "none"]).env("VK_OVERLAP_EMULATION_LOG_LEVEL", "debug"));
    o.assert_ok();
    assert!(!o.stderr.contains("OVERLAP-Shader-Rewritten"), "{}", o.stderr);
    let locked = run(app(Layers::OverlapOverValidation, &["interlock", "quick"])
        .env("VK_OVERLAP_EMULATION_INTERLOCK_STRATEGY", "serialized"));
    locked.assert_ok();
    let locked = case_lines(&locked);

    let expected: Vec<interlock::Case> = interlock::matrix(true)
        .into_iter()
        .filter(|c| c.mode == "pixel_interlock_unordered")
        .map(|c| interlock::Case { mode: "none", ..c })
        .collect();
    let cases = case_lines(&o);
    assert_eq!(
        cases.iter().map(|c| c.0.clone()).collect::<Vec<_>>(),
        expected.iter().map(|c| c.name()).collect::<Vec<_>>(),
        "{}",
        o.stdout
    );
    for ((name, words, wrong, order_errors), case) in cases.iter().zip(&expected) {
        let per_pixel = if case.sample_shading { case.samples } else { 1 };
        assert_eq!(*words, (case.width * case.height * per_pixel) as usize, "{name}");
        let twin = name.replacen("none.", "pixel_interlock_unordered.", 1);
        let with_lock = locked.iter().find(|c| c.0 == twin).unwrap_or_else(|| panic!("{twin} did not run"));
        assert_eq!(with_lock.1, *words, "{name}: the interlock run checked another number of words");
        assert_eq!((*wrong, *order_errors), (0, 0), "{name}: lavapipe no longer serializes a pixel's fragments");
    }
    let lost: usize = cases.iter().map(|c| c.2).sum();
    let failed = cases.iter().filter(|c| c.2 + c.3 > 0).count();
    assert_eq!(o.value("lost_words"), Some(lost.to_string().as_str()));
    assert_eq!(o.value("failures"), Some(failed.to_string().as_str()));
}

/// OIT through interlock matches the CPU reference (sorted per-pixel lists
/// composited back to front), under every strategy. The spinlock takes its
/// sections (no derivative inside) per lane, one lock a pixel.
#[test]
fn oit_scene_matches_its_cpu_reference() {
    for strategy in ["serialized", "spinlock", "ordered"] {
        let o = run(app(Layers::OverlapOverValidation, &["oit", "256", "192"])
            .env("VK_OVERLAP_EMULATION_INTERLOCK_STRATEGY", strategy)
            .env("VK_OVERLAP_EMULATION_LOG_LEVEL", "debug")
            .env("VK_OVERLAP_EMULATION_INTERLOCK_ORDERED_GRID", "256"));
        o.assert_ok();
        let line = o.stdout.lines().find(|l| l.starts_with("oit=")).unwrap();
        assert!(line.contains("max_diff=0 wrong_pixels=0"), "{strategy}: {line}");
        if strategy == "spinlock" {
            assert!(o.stderr.contains("section(s) locked per pixel (0 entered per quad"), "{}", o.stderr);
        }
    }
}

/// The same cases with the fragment shader passed inline (a
/// VkShaderModuleCreateInfo chained to the pipeline stage, as graphics
/// pipeline libraries allow): the rewrite must reach that path too.
#[test]
fn inline_stage_modules_are_rewritten_too() {
    for strategy in ["serialized", "spinlock", "ordered"] {
        let o = run(app(Layers::OverlapOverValidation, &["interlock", "inline"])
            .env("VK_OVERLAP_EMULATION_INTERLOCK_STRATEGY", strategy)
            .env("VK_OVERLAP_EMULATION_INTERLOCK_ORDERED_GRID", "256")
            .env("VK_OVERLAP_EMULATION_INTERLOCK_ORDERED_SLOTS", "64")
            .env("VK_OVERLAP_EMULATION_LOG_LEVEL", "debug"));
        o.assert_ok();
        assert_eq!(o.value("failures"), Some("0"), "{strategy}");
        // One rewrite per pipeline: nothing went through vkCreateShaderModule.
        let rewrites = o.stderr.matches("OVERLAP-Shader-Rewritten").count();
        assert_eq!(rewrites, o.stdout.lines().filter(|l| l.starts_with("case=")).count(), "{strategy}");
    }
}

/// The ordered strategy (forced on lavapipe, whose CPU rasterizer shades a
/// tile's primitives in order, so no section ever waits here: this checks
/// the plumbing — the rewritten fragment and vertex shaders, the count and
/// run draws, the barriers inside render passes, the reserved set's cells —
/// with the validation layer silent; the order itself is measured on a GPU,
/// `ci/gpu-ordered`). A small grid keeps lavapipe's memory down.
fn ordered(variant: &str) -> harness::Outcome {
    let dump = harness::scratch("dump-ordered");
    let o = run_with_timeout(
        ordered_app(variant)
            .env("VK_OVERLAP_EMULATION_DUMP_SHADERS", &dump)
            .env("VK_OVERLAP_EMULATION_LOG_LEVEL", "debug"),
        Duration::from_secs(600),
    );
    o.assert_ok();
    assert_eq!(o.value("failures"), Some("0"), "{}", o.stdout);
    assert_eq!(o.value("VALIDATION_ERRORS"), Some("0"));
    // Nothing the GPU could not order, no fallback.
    for id in ["OVERLAP-Interlock-Order-Lost", "OVERLAP-Interlock-Order-Fallback", "OVERLAP-Shader-Skipped"] {
        assert!(!o.overlap_messages().contains(&id), "{id}: {}", o.stderr);
    }
    // Every module the layer sent down validates with spirv-val on its own
    // (as well as in the layer).
    for p in std::fs::read_dir(&dump).unwrap().map(|e| e.unwrap().path()) {
        if p.to_string_lossy().ends_with(".out.spv") {
            let val =
                std::process::Command::new("spirv-val").args(["--target-env", "vulkan1.3"]).arg(&p).output().unwrap();
            assert!(val.status.success(), "{}: {}", p.display(), String::from_utf8_lossy(&val.stderr));
        }
    }
    o
}

#[test]
fn full_matrix_passes_under_the_forced_ordered_strategy() {
    let o = ordered("all");
    let cases: Vec<&str> = o.stdout.lines().filter(|l| l.starts_with("case=")).collect();
    assert_eq!(cases.len(), 128);
    // Ordered modes get the ordered rewrite (discards before the section
    // demoted), unordered ones the spinlock, vertex shaders the instance.
    assert!(o.stderr.contains("OVERLAP-Shader-Rewritten: ordered: pixel interlock, ordered"), "{}", o.stderr);
    assert!(o.stderr.contains("discard(s) demoted"), "{}", o.stderr);
    assert!(o.stderr.contains("OVERLAP-Shader-Rewritten: spinlock: pixel interlock, unordered"), "{}", o.stderr);
    assert!(o.overlap_messages().contains(&"OVERLAP-Interlock-Ordered-Cells"));
    // The spinlock's warning for ordered pipelines is gone.
    assert!(!o.overlap_messages().contains(&"OVERLAP-Interlock-Order"), "{}", o.stderr);
}

/// Across draws (31 draws of one instance, 4 draws) and across secondary
/// command buffers, and the CTS's coverage rows (lavapipe has no shading
/// rates: those rows report unsupported, the pixel ones run).
#[test]
fn draws_secondaries_and_coverage_under_the_ordered_strategy() {
    let o = ordered("draws");
    let names: Vec<&str> = o.stdout.lines().filter_map(|l| l.strip_prefix("case=")).collect();
    assert_eq!(names.len(), interlock::draws_matrix(&[(37, 23)]).len());
    assert!(names.iter().any(|l| l.contains(".secondaries4 ")) && names.iter().any(|l| l.contains(".draws31 ")));
    let o = ordered("coverage");
    let ran = o.stdout.lines().filter(|l| l.starts_with("case=coverage.pixel") && l.ends_with("result=pass")).count();
    assert_eq!(ran, 16, "{}", o.stdout);
    // 16 shading-rate rows, and 8 with sample shading (4x).
    let unsupported = o.stdout.lines().filter(|l| l.ends_with("result=unsupported")).count();
    assert_eq!(unsupported, 24, "{}", o.stdout);
    // The matrix's render pass made with vkCreateRenderPass2: the layer adds
    // its self-dependency there too, every case exact. (Checked by hand with
    // a build that adds none: the validation layer then reports
    // VUID-vkCmdPipelineBarrier-pDependencies-02285 at every barrier inside
    // the subpass, 64 errors; no switch keeps that control.)
    let o = ordered("rp2");
    let passed = o.stdout.lines().filter(|l| l.starts_with("case=") && l.ends_with("result=pass")).count();
    assert_eq!(passed, interlock::matrix_sized(&[(37, 23)]).len(), "{}", o.stdout);
}

/// Negative control: the waits really gate the sections. With the key
/// order reversed, every invocation on lavapipe (which shades in primitive
/// order) waits for one that comes after it: each wait runs into its bound
/// (64 polls here), enters under the mutex (no word lost), and the GPU's
/// counters say so (`OVERLAP-Interlock-Order-Lost`). A wait that did not
/// gate would expire nothing. The test program's own order check cannot
/// fire here: llvmpipe shades a tile's fragments on one thread in primitive
/// order, so an expired wait still enters in that order (`failures=0`,
/// asserted). Its order check fires under the reversal on the GPU:
/// `ci/gpu-nvidia`'s reversed-key OIT run must differ from the reference.
#[test]
fn reversed_order_expires_waits_and_says_so() {
    let (_, expired) = reversed("quick");
    assert!(expired > 1000);
    // Without the reversal, nothing expires (the ordered() runs above).
}

/// `interlock VARIANT` under the forced ordered strategy, validation below,
/// on a small grid (lavapipe's memory) of 64 slots.
fn ordered_app(variant: &str) -> std::process::Command {
    let mut c = app(Layers::OverlapOverValidation, &["interlock", variant]);
    c.env("VK_OVERLAP_EMULATION_INTERLOCK_STRATEGY", "ordered")
        .env("VK_OVERLAP_EMULATION_INTERLOCK_ORDERED_GRID", "256")
        .env("VK_OVERLAP_EMULATION_INTERLOCK_ORDERED_SLOTS", "64");
    c
}

/// The sum, over the `OVERLAP-Interlock-Order-Lost` messages, of the count
/// just before `label` (" wait(s) expired", " key(s) not found").
fn order_lost(stderr: &str, label: &str) -> u64 {
    stderr
        .lines()
        .filter(|l| l.contains("OVERLAP-Interlock-Order-Lost"))
        .filter_map(|l| l.split(label).next()?.rsplit(' ').next()?.parse::<u64>().ok())
        .sum()
}

/// Runs `interlock VARIANT` under the ordered strategy with its keys in
/// reverse order and short waits: no word lost, and the waits that expired
/// (counted by the GPU, logged as `OVERLAP-Interlock-Order-Lost`).
fn reversed(variant: &str) -> (harness::Outcome, u64) {
    let o = run_with_timeout(
        ordered_app(variant)
            .env("VK_OVERLAP_EMULATION_INTERLOCK_ORDERED_WAIT", "64")
            .env("VK_OVERLAP_EMULATION_DEBUG_ORDERED_REVERSE", "true"),
        Duration::from_secs(600),
    );
    o.assert_ok();
    assert_eq!(o.value("lost_words"), Some("0"));
    assert_eq!(o.value("failures"), Some("0"), "llvmpipe's order changed: {}", o.stdout);
    let expired = order_lost(&o.stderr, " wait(s) expired");
    assert!(expired > 0, "{}", o.stderr);
    (o, expired)
}

/// The run draw searches for its key where a cell's keys came in
/// increasing order (on llvmpipe, which shades a tile's primitives in
/// order, nearly everywhere). Planted fault: with the search made to find
/// nothing, keys go unfound, counted and said; without it none is. A cell
/// whose key went unfound is not reset, so the layer zeroes the cells
/// again before the next submission: the program, which submits each case
/// apart, then keeps every word. Control: without the fault the cells are
/// zeroed once, at the first submission.
#[test]
fn the_key_search_runs_where_keys_came_in_order() {
    let run = |misses: &str| {
        let o = run_with_timeout(
            ordered_app("quick")
                .env("VK_OVERLAP_EMULATION_LOG_LEVEL", "info")
                .env("VK_OVERLAP_EMULATION_DEBUG_ORDERED_SEARCH_MISSES", misses),
            Duration::from_secs(600),
        );
        o.assert_ok();
        assert_eq!(o.value("lost_words"), Some("0"));
        assert_eq!(o.value("failures"), Some("0"), "{}", o.stdout);
        let unfound = order_lost(&o.stderr, " key(s) not found");
        let zeroings = o.stderr.matches("the cells are zeroed before this submission").count();
        (unfound, zeroings)
    };
    let (unfound, zeroings) = run("true");
    assert!(unfound > 1000 && zeroings > 1, "{unfound} keys unfound, {zeroings} zeroings");
    assert_eq!(run("false"), (0, 1));
}

/// Dynamic rendering: the layer ends and begins the rendering around each
/// ordered draw (no barrier may be recorded inside it), so ordered draws
/// there are ordered, not a logged fallback as before; the colour the
/// application cleared (and resolved at 4x) survives the parts, and the
/// validation layer below sees every part (`ordered` fails on any error or
/// fallback). Control: with the key order reversed the waits inside the
/// split rendering gate and expire, as in render passes.
#[test]
fn dynamic_rendering_is_split_around_ordered_draws() {
    let o = ordered("dynamic");
    let names: Vec<&str> = o.stdout.lines().filter_map(|l| l.strip_prefix("case=")).collect();
    assert_eq!(names.len(), interlock::dynamic_matrix(&[(37, 23)]).len());
    assert!(names.iter().all(|l| l.contains(".dynamic ") && l.contains(" wrong_colour=0 ")), "{}", o.stdout);
    let (reversed, expired) = reversed("dynamic");
    assert!(expired > 100, "{}", reversed.stderr);
    assert!(!reversed.overlap_messages().contains(&"OVERLAP-Interlock-Order-Fallback"), "{}", reversed.stderr);
}

/// Ordered sections in a fragment shader with early fragment tests (as OIT
/// shaders ask for: nvpro's through `post_depth_coverage`) are ordered where
/// the pipeline writes neither depth nor stencil — here it has no depth or
/// stencil attachment — instead of falling back (`ordered` fails on any
/// fallback; the rule's control, a pipeline that writes depth, is the
/// layer's unit test `early_tests_order_only_without_depth_or_stencil_writes`).
#[test]
fn early_fragment_tests_without_depth_writes_are_ordered() {
    let o = ordered("early");
    let names: Vec<&str> = o.stdout.lines().filter_map(|l| l.strip_prefix("case=")).collect();
    assert_eq!(names.len(), interlock::early_matrix(&[(37, 23)]).len());
    assert!(names.iter().all(|l| l.contains(".early ")), "{}", o.stdout);
}

/// Graphics pipeline libraries (a fast link of four, as vkd3d-proton and
/// DXVK build their pipelines where the driver has them): the link of an
/// ordered fragment-shader library and a pre-rasterization library whose
/// vertex shader carries the instance index is ordered, not a logged
/// fallback as before (`ordered` fails on any fallback). Control: with the key order reversed the
/// waits gate and expire, so the link's draws do run the ordered protocol.
#[test]
fn pipeline_library_links_are_ordered() {
    let o = ordered("libraries");
    let names: Vec<&str> = o.stdout.lines().filter_map(|l| l.strip_prefix("case=")).collect();
    assert_eq!(names.len(), interlock::library_matrix(&[(37, 23)]).len());
    assert!(names.iter().all(|l| l.contains(".libraries ")), "{}", o.stdout);
    let (reversed, expired) = reversed("libraries");
    assert!(expired > 100, "{}", reversed.stderr);
    assert!(!reversed.overlap_messages().contains(&"OVERLAP-Interlock-Order-Fallback"), "{}", reversed.stderr);
}

/// Cells too few for a pixel's primitives: 4x MSAA counts the quad's
/// shared diagonal twice (62 primitives at 31 instances), more than 32
/// slots: order is lost there and said, never silently (words are kept).
#[test]
fn overflowing_cells_are_logged() {
    // The same run with 32 slots (the later setting wins).
    let o = run_with_timeout(
        ordered_app("quick").env("VK_OVERLAP_EMULATION_INTERLOCK_ORDERED_SLOTS", "32"),
        Duration::from_secs(600),
    );
    o.assert_ok();
    assert_eq!(o.value("lost_words"), Some("0"));
    assert!(o.stderr.contains("held more primitives of one draw than interlock_ordered_slots"), "{}", o.stderr);
}

/// The `quad-derivatives` line's field `key`.
fn derivative_field(o: &harness::Outcome, key: &str) -> u64 {
    let line = o.stdout.lines().find(|l| l.starts_with("quad_derivatives ")).unwrap_or_else(|| panic!("{}", o.stdout));
    let v = line.split(' ').find_map(|f| f.strip_prefix(key).and_then(|r| r.strip_prefix('='))).unwrap();
    v.trim_start_matches("0x").parse().unwrap()
}

/// Derivatives inside a spinlock section: a quad enters as a unit (its lanes
/// take their pixels' locks and run the section in one iteration of the
/// retry loop), so
/// they hold in every quad (gl_FragCoord's, and those of a value read inside
/// the section); 4 overlapping full-screen triangles, the validation layer
/// below; no word lost. The unordered strategy's spinlock sections and the
/// ordered strategy's run the same shader. Control: the per-lane lowering
/// on the same 2x2 lock blocks (`debug_spinlock_per_lane`) puts a quad's
/// lanes into different iterations and gets the read value's derivatives
/// wrong (lavapipe computes gl_FragCoord for every lane, but a lane outside
/// the iteration reads nothing). lavapipe has no shading rate and shades a
/// pixel on one thread at a time, so main's per-lane lowering on 1x1 blocks
/// never contends here: the H100's `vrs` rows show that defect.
#[test]
fn derivatives_inside_a_spinlock_section_are_per_quad() {
    let run_args = |args: &[&str], extra: &[(&str, &str)]| {
        let mut cmd = app(Layers::OverlapOverValidation, args);
        cmd.env("VK_OVERLAP_EMULATION_INTERLOCK_STRATEGY", "spinlock").env("VK_OVERLAP_EMULATION_LOG_LEVEL", "debug");
        for (k, v) in extra {
            cmd.env(k, v);
        }
        run_with_timeout(&mut cmd, Duration::from_secs(120))
    };
    let run_with = |extra: &[(&str, &str)]| run_args(&["quad-derivatives", "64", "4"], extra);
    let o = run_with(&[]);
    o.assert_ok();
    // Locks stay per pixel; the section (derivatives inside) enters per quad.
    assert!(o.stderr.contains("1 section(s) locked per pixel (1 entered per quad"), "{}", o.stderr);
    assert!(!o.overlap_messages().contains(&"OVERLAP-Spinlock-Per-Lane"));
    assert_eq!(derivative_field(&o, "invocations"), 4 * 64 * 64);
    assert_eq!(derivative_field(&o, "errors"), 0, "{}", o.stdout);
    assert_eq!(derivative_field(&o, "lost"), 0, "{}", o.stdout);
    // A third of the fragments, leaders among them, discard inside the
    // section: the rest of each quad runs on and the lock is freed (what a
    // lowering without the leave before the kill would lose has no kept
    // control: no switch removes it; a gap in docs/TESTING.md).
    let k = run_args(&["quad-derivatives", "64", "4", "kill"], &[]);
    k.assert_ok();
    assert!(k.stdout.contains("kill=true"), "{}", k.stdout);
    assert_eq!(derivative_field(&k, "errors"), 0, "{}", k.stdout);
    assert_eq!(derivative_field(&k, "lost"), 0, "{}", k.stdout);

    let c = run_with(&[("VK_OVERLAP_EMULATION_DEBUG_SPINLOCK_PER_LANE", "true")]);
    assert_ne!(c.code, Some(0), "the per-lane control passed:\n{}", c.stdout);
    assert!(!c.stderr.contains("VALIDATION ERROR"), "{}", c.stderr);
    assert!(c.stderr.contains("locked per pixel in 2x2 blocks"), "{}", c.stderr);
    assert!(c.overlap_messages().contains(&"OVERLAP-Spinlock-Per-Lane"));
    assert!(derivative_field(&c, "errors") > 0, "{}", c.stdout);
    assert_eq!(derivative_field(&c, "error_kinds"), 2, "only the read value's derivatives: {}", c.stdout);
    assert_eq!(derivative_field(&c, "lost"), 0, "{}", c.stdout);
}

/// Buffer locks (`interlock_spinlock_lock=buffer`): the locked matrix, the
/// OIT scene under the spinlock and the ordered strategy (whose sets hold
/// the lock descriptor too), and the quad-derivatives case whose sections
/// enter per quad, all exact with the validation layer silent; the log
/// names the buffer.
#[test]
fn buffer_locks_are_exact_too() {
    let lock = ("VK_OVERLAP_EMULATION_INTERLOCK_SPINLOCK_LOCK", "buffer");
    for strategy in ["spinlock", "ordered"] {
        let o = run(app(Layers::OverlapOverValidation, &["oit", "256", "192"])
            .env("VK_OVERLAP_EMULATION_INTERLOCK_STRATEGY", strategy)
            .env(lock.0, lock.1)
            .env("VK_OVERLAP_EMULATION_INTERLOCK_ORDERED_GRID", "256"));
        o.assert_ok();
        let line = o.stdout.lines().find(|l| l.starts_with("oit=")).unwrap();
        assert!(line.contains("max_diff=0 wrong_pixels=0"), "{strategy}: {line}");
    }
    let q = run_with_timeout(
        app(Layers::OverlapOverValidation, &["quad-derivatives", "64", "4", "kill"])
            .env("VK_OVERLAP_EMULATION_INTERLOCK_STRATEGY", "spinlock")
            .env("VK_OVERLAP_EMULATION_LOG_LEVEL", "debug")
            .env(lock.0, lock.1),
        Duration::from_secs(120),
    );
    q.assert_ok();
    assert!(q.stderr.contains("1 section(s) locked per pixel (1 entered per quad"), "{}", q.stderr);
    assert!(q.stderr.contains("lock buffer"), "{}", q.stderr);
    assert_eq!(derivative_field(&q, "errors"), 0, "{}", q.stdout);
    assert_eq!(derivative_field(&q, "lost"), 0, "{}", q.stdout);
    let m = run_with_timeout(
        app(Layers::OverlapOverValidation, &["interlock"])
            .env("VK_OVERLAP_EMULATION_INTERLOCK_STRATEGY", "spinlock")
            .env(lock.0, lock.1),
        Duration::from_secs(300),
    );
    m.assert_ok();
    assert_eq!(m.value("failures"), Some("0"), "{}", m.stdout);
    assert_eq!(m.stdout.lines().filter(|l| l.starts_with("case=") && l.ends_with("result=pass")).count(), 128);
}

/// The measurement switch `debug_ordered_without` (docs/BENCHMARKS.md, the
/// ordered strategy's cost by part): every part it leaves out runs with the
/// validation layer silent, and leaving out the count draw or the search is
/// seen — the run draw's keys go unfound, counted and logged
/// (`OVERLAP-Interlock-Order-Lost`), which the default never logs; without
/// the cells' own reset the layer's zeroing keeps every key found; the
/// exact parts (`guess`, `order_wait`, `early_lookup`) keep the picture.
#[test]
fn ordered_parts_left_out_for_measuring_run_and_show() {
    let scene = |without: &str| {
        run(app(Layers::OverlapOverValidation, &["oit-ordered", "64", "64", "layers=8", "reps=1"])
            .env("VK_OVERLAP_EMULATION_INTERLOCK_STRATEGY", "ordered")
            .env("VK_OVERLAP_EMULATION_INTERLOCK_ORDERED_GRID", "256")
            .env("VK_OVERLAP_EMULATION_DEBUG_ORDERED_WITHOUT", without))
    };
    for without in ["", "waits", "lock", "lock,reset", "protocol", "protocol,append", "protocol,count"] {
        let o = scene(without);
        o.assert_ok();
        assert_eq!(o.value("VALIDATION_ERRORS"), Some("0"), "{without}");
        assert!(!o.overlap_messages().contains(&"OVERLAP-Interlock-Order-Lost"), "{without}: {}", o.stderr);
    }
    // A part the layer does not know is said and ignored.
    let o = scene("lock,nonsense");
    o.assert_ok();
    assert!(o.overlap_messages().contains(&"OVERLAP-Setting-Invalid"), "{}", o.stderr);
    assert!(!o.overlap_messages().contains(&"OVERLAP-Interlock-Order-Lost"), "{}", o.stderr);
    // The exact ones (no slot guess; no wait in the order check; the lookup
    // at the first section) draw the reference picture (the reference
    // check's control is `reverse`, oit_ordered::a_wrong_order_fails_the_reference_check).
    for without in ["guess", "order_wait", "guess,order_wait", "early_lookup"] {
        let o = scene(without);
        o.assert_ok();
        assert_eq!(o.value("VALIDATION_ERRORS"), Some("0"), "{without}");
        assert!(o.stdout.contains(" wrong_pixels=0 "), "{without}: {}", o.stdout);
        assert!(!o.overlap_messages().contains(&"OVERLAP-Interlock-Order-Lost"), "{without}: {}", o.stderr);
    }
    // `early_lookup` links a build of its own: of the other parts only
    // `count` applies with it (said), and does (its keys go unfound).
    let o = scene("early_lookup,waits");
    o.assert_ok();
    assert!(o.overlap_messages().contains(&"OVERLAP-Setting-Invalid"), "{}", o.stderr);
    assert!(o.stdout.contains(" wrong_pixels=0 "), "{}", o.stdout);
    // No count draw, or no search: the keys go unfound.
    for without in ["count", "search", "early_lookup,count"] {
        let o = scene(without);
        o.assert_ok();
        assert!(o.overlap_messages().contains(&"OVERLAP-Interlock-Order-Lost"), "{without}: {}", o.stderr);
    }
}

/// The interlock bench with `reuse` draws its repetitions as frames of one
/// pipeline and set of objects (each frame clears what it checks): every
/// frame's GPU time is listed, the words are exact under the ordered
/// strategy, validation silent. Without the layer the driver has no
/// interlock and the bench cannot run.
#[test]
fn the_bench_draws_its_frames_with_one_pipeline() {
    let bench = ["interlock-bench", "64", "64", "3", "pixel_interlock_ordered", "reuse"];
    let o = run_with_timeout(
        app(Layers::OverlapOverValidation, &bench).env("VK_OVERLAP_EMULATION_INTERLOCK_STRATEGY", "ordered"),
        Duration::from_secs(300),
    );
    o.assert_ok();
    assert_eq!(o.value("VALIDATION_ERRORS"), Some("0"));
    let line = o.stdout.lines().find(|l| l.starts_with("case=")).unwrap_or_else(|| panic!("{o:?}"));
    assert!(line.contains(" wrong_words=0"), "{line}");
    let each = line.split(' ').find_map(|f| f.strip_prefix("gpu_us_each="));
    assert_eq!(each.map(|e| e.split(',').count()), Some(3), "{line}");
    let o = run_with_timeout(&mut app(Layers::None, &bench), Duration::from_secs(60));
    assert!(o.code != Some(0), "{o:?}");
}

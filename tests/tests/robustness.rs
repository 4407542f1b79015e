//! Panics never reach the application: the `debug_panic` setting makes one
//! hook panic, and the application must carry on (pass-through) or get an
//! error code, never a crash.

use overlap_tests::harness::{app, run, Layers};

fn with_panic(command: &str, args: &[&str]) -> overlap_tests::harness::Outcome {
    run(app(Layers::OverlapOverValidation, args)
        .env("VK_OVERLAP_EMULATION_FORCE_ENABLE", "1")
        .env("VK_OVERLAP_EMULATION_DEBUG_PANIC", command))
}

#[test]
fn panicking_command_hooks_fall_back_to_pass_through() {
    let reference = run(&mut app(Layers::None, &["render", "renderpass", "64", "64"]));
    reference.assert_ok();
    for command in
        ["vkCmdDraw", "vkCreateShaderModule", "vkCreateGraphicsPipelines", "vkCmdBeginRenderPass", "vkQueueSubmit"]
    {
        let o = with_panic(command, &["render", "renderpass", "64", "64"]);
        // The frame is still right: the hook's panic became a pass-through.
        o.assert_ok();
        assert_eq!(o.value("checksum"), reference.value("checksum"), "{command}");
        assert!(o.stderr.contains("OVERLAP-Internal-Panic"), "{command}: {}", o.stderr);
        assert!(o.stderr.contains(command), "{command}: {}", o.stderr);
    }
}

#[test]
fn panicking_dynamic_rendering_hook_falls_back() {
    let o = with_panic("vkCmdBeginRendering", &["render", "dynamic", "64", "64"]);
    o.assert_ok();
    assert!(o.stderr.contains("OVERLAP-Internal-Panic"), "{}", o.stderr);
}

#[test]
fn panicking_create_hooks_return_an_error_code() {
    for command in ["vkCreateInstance", "vkCreateDevice"] {
        let o = with_panic(command, &["probe"]);
        // The testapp exits 4 after a Vulkan error: it was not killed by a signal.
        assert_eq!(o.code, Some(4), "{command}:\n{}\n{}", o.stdout, o.stderr);
        assert!(o.value("VK_ERROR").unwrap().contains("ERROR_INITIALIZATION_FAILED"), "{}", o.stdout);
        assert!(o.stderr.contains("OVERLAP-Internal-Panic"), "{}", o.stderr);
    }
}

#[test]
fn panicking_destroy_hooks_do_not_crash() {
    for command in ["vkDestroyDevice", "vkDestroyInstance"] {
        let o = with_panic(command, &["cycle", "2"]);
        assert_eq!(o.code, Some(0), "{command}:\n{}", o.stderr);
        assert!(o.stderr.contains("OVERLAP-Internal-Panic"), "{}", o.stderr);
    }
}

/// The CLI's reader closes the pipe after the first line
/// (`overlap link-varyings VS FS | head -1`): the CLI ends quietly, without a
/// panic message, and is not killed by the signal.
#[test]
fn cli_ends_quietly_when_its_output_pipe_closes() {
    use overlap_tests::harness::{self, overlap_cli, vk_command};
    use std::io::Read;
    use std::process::{Command, Stdio};
    let dir = harness::scratch("cli-pipe");
    let compile = |name: &str, src: &str| {
        let path = dir.join(name);
        std::fs::write(&path, src).unwrap();
        let spv = dir.join(format!("{name}.spv"));
        let ok = Command::new("glslangValidator").arg("-V").arg(&path).arg("-o").arg(&spv).output().unwrap();
        assert!(ok.status.success(), "{name}");
        spv
    };
    let p = compile(
        "p.vert",
        "#version 450\nlayout(location=0) out vec4 a;\nlayout(location=3) out vec4 dead;\nvoid main(){ gl_Position=vec4(0); a=vec4(1); dead=a; }\n",
    );
    let c = compile(
        "c.frag",
        "#version 450\nlayout(location=0) out vec4 o;\nlayout(location=0) in vec4 a;\nvoid main(){ o=a; }\n",
    );
    for _ in 0..5 {
        let mut child = vk_command(overlap_cli(), Layers::None)
            .arg("link-varyings")
            .arg(&p)
            .arg(&c)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // Closed before the CLI writes its report (several lines).
        drop(child.stdout.take());
        let mut err = String::new();
        child.stderr.take().unwrap().read_to_string(&mut err).unwrap();
        let status = child.wait().unwrap();
        assert_eq!(status.code(), Some(0), "{status:?}\n{err}");
        assert!(!err.contains("panicked"), "{err}");
    }
}

/// The layer's own allocations fail (`debug_fail`, as if out of memory): a
/// density-map pass falls back to 1x1 — logged, rendered fully (the matrix's
/// per-pixel checks pass; only its "something was coarse" check fails, as
/// under `fdm=baseline`), validation silent, nothing half recorded — for the
/// scratch targets (image, memory, view, framebuffer) and for the map read
/// (command pool, command buffer, fence, buffer, its submission and wait).
#[test]
fn failed_density_map_allocations_fall_back_to_one_by_one() {
    for command in [
        "vkCreateImage",
        // A scratch image or view failing after earlier ones were made.
        "vkCreateImage@2",
        "vkCreateImageView@3",
        "vkAllocateMemory",
        "vkCreateImageView",
        "vkCreateFramebuffer",
        "vkCreateBuffer",
        "vkCreateCommandPool",
        "vkAllocateCommandBuffers",
        "vkCreateFence",
        "vkQueueSubmit",
        "vkWaitForFences",
    ] {
        let o =
            run(app(Layers::OverlapOverValidation, &["fdm", "quick"]).env("VK_OVERLAP_EMULATION_DEBUG_FAIL", command));
        assert_eq!(o.code, Some(1), "{command}: {}\n{}", o.stdout, o.stderr);
        assert!(o.stdout.contains("nothing was shaded coarsely (0 pixels, largest area 1)"), "{command}: {}", o.stdout);
        // The per-pixel checks pass (the matrix runs to the end).
        assert!(!o.stdout.contains("fdm FAILED family=references"), "{command}: {}", o.stdout);
        assert!(o.stdout.contains("fdm query_fallback=1x1"), "{command}: {}", o.stdout);
        assert_eq!(o.value("VALIDATION_ERRORS"), Some("0"), "{command}");
        assert!(o.overlap_messages().contains(&"OVERLAP-FDM-Fallback"), "{command}: {}", o.stdout);
    }
}

/// The map read fails after its command buffer was begun (`debug_fail` of
/// the reader's `vkEndCommandBuffer`): the pass falls back to 1x1, and the
/// command buffer is reset, so the next pass's read can begin it again
/// (VUID-vkBeginCommandBuffer-commandBuffer-00049 stays silent).
#[test]
fn a_map_read_failing_while_recording_leaves_its_command_buffer_reusable() {
    // Several passes, each reading its map.
    let o = run(app(Layers::OverlapOverValidation, &["fdm-bench", "2", "64", "2"])
        .env("VK_OVERLAP_EMULATION_DEBUG_FAIL", "vkEndCommandBuffer"));
    assert_eq!(o.code, Some(0), "{}\n{}", o.stdout, o.stderr);
    assert!(!o.stderr.contains("VUID-vkBeginCommandBuffer-commandBuffer-00049"), "{}", o.stderr);
    assert_eq!(o.value("VALIDATION_ERRORS"), Some("0"), "{}", o.stderr);
    assert!(o.overlap_messages().contains(&"OVERLAP-FDM-Fallback"), "{}", o.stdout);
}

/// The spinlock's initialization fails at each of its objects (`debug_fail`:
/// the lock image, its memory and view, the set layouts, pool and set, the
/// command pool and buffer of the clear, its submission): vkCreateDevice
/// fails with the out-of-memory error the application would have got, and
/// everything the lock made is destroyed before the device (the validation
/// layer's leak check at vkDestroyDevice, VUID-vkDestroyDevice-device-00378,
/// stays silent).
#[test]
fn a_failed_spinlock_init_leaves_nothing_behind() {
    for command in [
        "vkCreateImage",
        "vkAllocateMemory",
        "vkCreateImageView",
        "vkCreateDescriptorSetLayout",
        "vkCreateDescriptorPool",
        "vkAllocateDescriptorSets",
        "vkCreateCommandPool",
        "vkAllocateCommandBuffers",
        "vkQueueSubmit",
    ] {
        let o = run(app(Layers::OverlapOverValidation, &["interlock-features"])
            .env("VK_OVERLAP_EMULATION_INTERLOCK_STRATEGY", "spinlock")
            .env("VK_OVERLAP_EMULATION_DEBUG_FAIL", command));
        assert_eq!(o.code, Some(4), "{command}: {}\n{}", o.stdout, o.stderr);
        assert!(o.value("VK_ERROR").unwrap().contains("ERROR_OUT_OF_DEVICE_MEMORY"), "{command}: {}", o.stdout);
        assert!(o.overlap_messages().contains(&"OVERLAP-Spinlock-Init"), "{command}: {}", o.stdout);
        assert_eq!(o.value("VALIDATION_ERRORS"), Some("0"), "{command}: {}", o.stderr);
    }
    // The control: without the injection the same program creates its device.
    let o = run(app(Layers::OverlapOverValidation, &["interlock-features"])
        .env("VK_OVERLAP_EMULATION_INTERLOCK_STRATEGY", "spinlock"));
    o.assert_ok();
}

/// The application destroys its descriptor set layouts once its sets are
/// written (the spec allows it while the sets are in use): a binned pass
/// whose second subpass reads an input attachment cannot shadow the set (a
/// set whose layout is destroyed cannot be copied from), so it renders live
/// at 1x1, logged, with a silent validation layer — no shadow allocated
/// from the destroyed layout.
#[test]
fn input_sets_are_not_shadowed_after_their_layout_is_destroyed() {
    let o = run(&mut app(Layers::OverlapOverValidation, &["fdm-destroyed-layout"]));
    o.assert_ok();
    assert!(o.stdout.contains("fdm_destroyed_layout path=RenderPass2 coarse_inputs=0"), "{}", o.stdout);
    assert!(o.overlap_messages().contains(&"OVERLAP-FDM-Fallback"), "{}", o.stdout);
}

/// The density map's view and image are recreated while the colour target
/// stays (and every render has a render pass of its own): the layer's cached
/// scratch framebuffer, which names the density map's view and was made for
/// the render pass, is not reused for the new view or render pass, so the
/// validation layer below sees no use of a destroyed view and every render is
/// binned alike.
#[test]
fn scratch_targets_follow_a_recreated_density_map_view_and_render_pass() {
    let o = run(&mut app(Layers::OverlapOverValidation, &["fdm-recreated-map"]));
    o.assert_ok();
    assert!(o.stdout.contains("fdm_recreated_map coarse_pixels="), "{}", o.stdout);
    assert_eq!(o.value("VALIDATION_ERRORS"), Some("0"), "{}\n{}", o.stdout, o.stderr);
}

/// The linker's temporary modules cannot be created: pipelines are created
/// unlinked (logged) and render exactly as with the linker off.
#[test]
fn failed_linked_modules_leave_pipelines_unlinked() {
    let sums = |o: &overlap_tests::harness::Outcome| -> Vec<String> {
        o.stdout
            .lines()
            .filter(|l| l.starts_with("pair="))
            .map(|l| l.split(' ').take(2).collect::<Vec<_>>().join(" "))
            .collect()
    };
    let off = run(app(Layers::OverlapOverValidation, &["varyings"]).env("VK_OVERLAP_EMULATION_VARYINGS", "off"));
    off.assert_ok();
    assert!(!sums(&off).is_empty());
    // Every temporary module fails, or only from the second on: the first
    // pipeline's producer module was made and its consumer's was not, so the
    // producer's is destroyed at once (the validation layer's leak report at
    // vkDestroyDevice stays silent).
    for fail in ["vkCreateShaderModule", "vkCreateShaderModule@2"] {
        let failed =
            run(app(Layers::OverlapOverValidation, &["varyings"]).env("VK_OVERLAP_EMULATION_DEBUG_FAIL", fail));
        failed.assert_ok();
        assert_eq!(failed.value("VALIDATION_ERRORS"), Some("0"), "{fail}");
        assert!(failed.overlap_messages().contains(&"OVERLAP-Varyings-Skipped"), "{fail}: {}", failed.stdout);
        assert_eq!(sums(&failed), sums(&off), "{fail}");
    }
}

/// The per-area pipeline variants cannot be made (`debug_fail` of the
/// variants' modules, or of the variant pipelines, not the application's
/// own): the pipelines are created, and every pass binding one renders at
/// 1x1 — logged, the per-pixel checks passing, validation silent. (What the
/// check at the replay prevents, the 1x1 pipeline bound in coarse replays,
/// has no kept control: no switch removes the check; a gap in
/// docs/TESTING.md.)
#[test]
fn missing_pipeline_variants_render_their_passes_at_one_by_one() {
    for command in ["vkCreateShaderModule", "vkCreateGraphicsPipelines"] {
        let o =
            run(app(Layers::OverlapOverValidation, &["fdm", "quick"]).env("VK_OVERLAP_EMULATION_DEBUG_FAIL", command));
        assert_eq!(o.code, Some(1), "{command}: {}\n{}", o.stdout, o.stderr);
        assert!(o.stdout.contains("nothing was shaded coarsely (0 pixels, largest area 1)"), "{command}: {}", o.stdout);
        assert!(!o.stdout.contains("fdm FAILED family=references"), "{command}: {}", o.stdout);
        assert!(!o.stdout.contains("fdm FAILED family=density_one"), "{command}: {}", o.stdout);
        assert_eq!(o.value("VALIDATION_ERRORS"), Some("0"), "{command}");
        let ids = o.overlap_messages();
        assert!(ids.contains(&"OVERLAP-FDM-Variants") && ids.contains(&"OVERLAP-FDM-Fallback"), "{command}: {ids:?}");
    }
}

/// The input attachment's set layout is destroyed inside the pass after its
/// set was bound (the spec allows it): the set cannot be copied for the
/// replays, so the pass renders at 1x1, exactly the render without a density
/// map, validation silent. Before the fix the set went down unshadowed: the
/// replays read the real attachment (VUID-vkCmdDraw-None-02699 and a render
/// unlike the 1x1 one).
#[test]
fn an_input_set_layout_destroyed_in_the_pass_renders_it_at_one_by_one() {
    let o = run(&mut app(Layers::OverlapOverValidation, &["fdm-destroyed-layout", "in-pass"]));
    o.assert_ok();
    for path in ["RenderPass", "RenderPass2"] {
        let line = format!("fdm_destroyed_layout path={path} coarse_inputs=0 identical_to_no_map=true");
        assert!(o.stdout.contains(&line), "{}", o.stdout);
    }
    assert!(o.overlap_messages().contains(&"OVERLAP-FDM-Fallback"), "{}", o.stdout);
}

/// The shadow copies of input-attachment sets are made before anything of
/// the replays is recorded; when their pool or set cannot be made
/// (`debug_fail`) the pass renders at 1x1 (the render without a density
/// map), validation silent. The control: without the failure the same pass
/// is binned (its second subpass shades coarsely).
#[test]
fn shadow_sets_that_cannot_be_made_render_the_pass_at_one_by_one() {
    let kept = run(&mut app(Layers::OverlapOverValidation, &["fdm-destroyed-layout", "kept"]));
    kept.assert_ok();
    assert!(kept.stdout.contains("path=RenderPass coarse_inputs=") && !kept.stdout.contains("coarse_inputs=0"));
    for command in ["vkCreateDescriptorPool", "vkAllocateDescriptorSets"] {
        let o = run(app(Layers::OverlapOverValidation, &["fdm-destroyed-layout", "kept"])
            .env("VK_OVERLAP_EMULATION_DEBUG_FAIL", command));
        o.assert_ok();
        for path in ["RenderPass", "RenderPass2"] {
            let line = format!("fdm_destroyed_layout path={path} coarse_inputs=0 identical_to_no_map=true");
            assert!(o.stdout.contains(&line), "{command}: {}", o.stdout);
        }
        assert_eq!(o.value("VALIDATION_ERRORS"), Some("0"), "{command}");
        assert!(o.overlap_messages().contains(&"OVERLAP-FDM-Fallback"), "{command}: {}", o.stdout);
    }
}

/// The map read's fence wait fails (`debug_fail` of its vkWaitForFences, out
/// of memory) with its command buffer still pending: the next read waits
/// for it before it begins the command buffer or submits with the fence
/// again, validation silent (which is what a missing wait would break: no
/// switch removes the wait, so no kept control shows it; a gap in
/// docs/TESTING.md).
#[test]
fn a_failed_map_read_wait_leaves_nothing_pending() {
    let o = run(app(Layers::OverlapOverValidation, &["fdm-bench", "2", "64", "2"])
        .env("VK_OVERLAP_EMULATION_DEBUG_FAIL", "vkWaitForFences"));
    assert_eq!(o.code, Some(0), "{}\n{}", o.stdout, o.stderr);
    assert_eq!(o.value("VALIDATION_ERRORS"), Some("0"), "{}", o.stderr);
    assert!(o.overlap_messages().contains(&"OVERLAP-FDM-Fallback"), "{}", o.stdout);
}

/// `VK_ERROR_DEVICE_LOST` in the layer's own map read (its submission or its
/// fence wait, `debug_fail=...:device_lost`), inside vkCmdBeginRenderPass,
/// which returns nothing: the pass is recorded at 1x1, and the device's next
/// vkQueueSubmit, vkWaitForFences, vkGetFenceStatus and vkDeviceWaitIdle
/// return it — no hang (the program's wait has a 10 s limit, the test two
/// minutes), no panic, validation silent through the teardown. The control:
/// without the loss every call succeeds.
#[test]
fn a_device_loss_in_the_map_read_reaches_the_application() {
    let ok = run(&mut app(Layers::OverlapOverValidation, &["fdm-device-lost"]));
    ok.assert_ok();
    for key in ["queue_submit", "wait_for_fences", "device_wait_idle"] {
        assert_eq!(ok.value(key), Some("SUCCESS"), "{key}: {}", ok.stdout);
    }
    for command in ["vkWaitForFences:device_lost", "vkQueueSubmit:device_lost"] {
        let o =
            run(app(Layers::OverlapOverValidation, &["fdm-device-lost"])
                .env("VK_OVERLAP_EMULATION_DEBUG_FAIL", command));
        o.assert_ok();
        assert_eq!(o.value("end_command_buffer"), Some("SUCCESS"), "{command}: {}", o.stdout);
        for key in ["queue_submit", "wait_for_fences", "get_fence_status", "device_wait_idle"] {
            assert_eq!(o.value(key), Some("ERROR_DEVICE_LOST"), "{command} {key}: {}", o.stdout);
        }
        assert!(o.overlap_messages().contains(&"OVERLAP-FDM-Device-Lost"), "{command}: {}", o.stdout);
        assert!(!o.stderr.contains("panicked"), "{command}: {}", o.stderr);
    }
}

/// A device create info chaining a structure no one knows (a newer
/// extension's; the CTS chains such) after the density-map features: the
/// layer strips what it must from the part it can copy and links the rest as
/// it is — the device is created and renders coarsely. Before the features
/// (the control) they cannot be removed: the create info goes down unchanged,
/// logged, and lavapipe refuses the feature it lacks.
#[test]
fn an_unknown_structure_after_the_density_map_features_is_linked_as_it_is() {
    let o = run(&mut app(Layers::Overlap, &["fdm-unknown-structure", "after"]));
    o.assert_ok();
    assert!(o.stdout.contains("fdm_unknown_structure position=after device=created coarse_pixels="), "{}", o.stdout);
    assert!(!o.stderr.contains("the density map cannot be stripped"), "{}", o.stderr);
    let o = run(&mut app(Layers::Overlap, &["fdm-unknown-structure", "before"]));
    assert_ne!(o.code, Some(0), "{}\n{}", o.stdout, o.stderr);
    assert!(o.stderr.contains("the density map cannot be stripped"), "{}", o.stderr);
    assert!(o.stdout.contains("device=failed"), "{}", o.stdout);
}

//! `overlap-testapp`: the headless Vulkan program the suites run in child
//! processes, with or without the layer. Each subcommand prints `key=value`
//! lines; every run ends with `VALIDATION_ERRORS=<n>` and
//! `OVERLAP_MESSAGES=<ids>` (what the debug messengers heard).
//!
//! Exit codes: 0 success, 1 a check failed, 2 usage, 3 validation errors,
//! 4 a Vulkan call failed.

use ash::vk;
use overlap_tests::render::{self, Gpu, GpuOptions, RenderPath, SettingValue, Target};
use overlap_tests::varyings::ChainRoute;
use std::time::Instant;

fn usage() -> ! {
    eprintln!(
        "usage: overlap-testapp [--setting KEY=VALUE]... COMMAND\n\
         commands:\n  \
         probe                      device, layers, extensions, hook owners\n  \
         render PATH W H [OUT.png]  draw the scene (PATH: renderpass|dynamic), check it\n  \
         cycle N                    create and destroy instance+device N times\n  \
         threads T N                T threads each create/destroy instance+device N times\n  \
         record THREADS DRAWS       record command buffers on THREADS threads, submit, check\n  \
         bench K N REPS             record and submit K command buffers of N draws, REPS times\n  \
         interlock [all|quick|none|inline|shader-object] [WxH] [DELAY]  the CTS-style interlock matrix (none: without the critical section)\n  \
         interlock-bench W H REPS [MODE] [reuse]   median submit time of one interlock case (reuse: the reps as frames of one pipeline)\n  \
         interlock-features         the interlock features, and a device asking for shading-rate interlock\n  \
         oit W H [none] [reps=N] [out=PNG] [ref=PNG]  the OIT scene, checked against the CPU reference\n  \
         oit-ordered W H [layers=N] [section=ordered|unordered|none] [reverse] [full] [reps=N] [reuse [renew=buffers,target,pipelines,keep,spare,distinct] [pause=MS]] [work=W] [out=PNG] [ref=PNG] [nocheck] [draw=KIND]  the ordered OIT scene (tail blending), checked against the CPU reference (KIND: how every draw goes down, overlap_tests::draw_kind)\n  \
         vrs                        invocations of a 2x2-rate draw without, with unordered and with ordered interlock (fragcoord and derivatives checked)\n  \
         quad-derivatives [SIZE] [INSTANCES] [kill]  derivatives inside an ordered critical section of INSTANCES full-screen triangles (SIZE <= 64), and its lost words (kill: a third discard inside it)\n  \
         fdm-client FRAMES [WxH] [DRAWS]  a full-HD foveated client: off vs baseline vs binned per frame\n  \
         viewport-mask-bench SIZE DRAWS FRAMES  no layer: 3x3 atlas cells drawn as nine render passes vs one pass whose draws go to nine viewports (VK_NV_viewport_array2)\n  \
         fdm-extended-usage         density-map usage with EXTENDED_USAGE, every core format (CTS mirror)\n  \
         fdm2                       VK_EXT_fragment_density_map2 listed, filled, enabled with FDM\n  \
         fdm-dynamic [app-conditional]  a dynamic density map the GPU writes in the same command buffer: the areas follow it (app-conditional: the application enables conditional rendering itself)\n  \
         multiview-ladder [plain|fdm-device|fdm-map] [quad|clipped|mirrored|mirrored-multi] [KIND]  a plain two-view draw, one layer feature at a time (mirrored: the CTS's mesh; -multi: in two draws of vkCmdDrawMultiEXT; KIND: the draw command, overlap_tests::draw_kind)
  local-read-multiview       no density map: a multiview local-read copy inside one dynamic rendering, 2/4/6 views
  fdm-layered [dynamic]      VK_VALVE_fragment_density_map_layered: each layer of a layered framebuffer gets its own map layer's areas
  fdm-unknown-structure after|before  the density-map device with an unknown structure chained after or before its features\n  \
         fdm-multiview [quick] [dynamic] [draw=KIND]  per-view areas: 2, 4 and 6 views, each with its own map layer, every pass type\n  \
         fdm-draws [KIND]...        the matrix's representative cases with every draw as each KIND (direct, indexed, indirect, indexed-indirect, indirect-count, indexed-indirect-count, multi, multi-indexed; default all)\n  \
         fdm-offset [dynamic]       VK_EXT_fragment_density_map_offset: the coarse regions move with the offsets\n  \
         fdm-msaa [dynamic]         multisampled attachments loading and storing in a density-map pass: every sample judged\n  \
         fdm-library                FragSizeEXT in a fragment-shader pipeline library, linked fast and with link-time optimization\n  \
         fdm-shader-objects         FragSizeEXT in a fragment shader object, alone or linked, bound in or before the pass\n  \
         fdm-queues [W H ROUNDS REPEATS] two command buffers' density-map passes on one target, on two queues at once\n  \
         fdm-dynamic-state [plain]  dynamic state beyond Vulkan 1.3 changed between draws of a binned pass (plain: no map)\n  \
         leak                       a planted leak (a buffer never destroyed): the leak detector's control\n  \
         host-leak                  a planted host leak (heap blocks whose pointers are dropped): valgrind's control\n  \
         fdm-khr                    a Vulkan 1.1 application: density-map passes through the KHR command names\n  \
         fdm-destroyed-layout [before|in-pass|kept]  an input-attachment set whose layout is destroyed\n  \
         fdm-device-lost            one density-map pass, then what submit and the waits return\n  \
         stress THREADS ITERATIONS  density-map, interlock and linked pipelines recorded on THREADS threads, checked\n  \
         varyings [DIR] [instances=N] [inline]  render every pair of the varying corpus (raw images to DIR; inline: the stages' code in the pipeline, not in modules)\n  \
         varyings pairs|libraries|libraries-fast|libraries-own [instances=N]  the corpus pairs only, each twice: from modules, or from four pipeline libraries linked with link-time optimization or fast (own: two shader libraries, the final link holding the interface state)\n  \
         varyings shader-objects|shader-objects-unlinked [instances=N]  the corpus pairs, each twice, as two shader objects made together, linked (LINK_STAGE) or not\n  \
         varyings stages [inline|libraries|libraries-fast|shader-objects|shader-objects-unlinked]  the stage-chain corpus: from modules, inline code, pipeline libraries (link-time optimized or fast) or shader objects (linked or not)"
    );
    std::process::exit(2)
}

fn arg<T: std::str::FromStr>(args: &[String], i: usize) -> T {
    args.get(i).and_then(|a| a.parse().ok()).unwrap_or_else(|| usage())
}

fn main() {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let mut opts = GpuOptions::default();
    while args.first().map(|a| a == "--setting").unwrap_or(false) {
        let kv = args.get(1).cloned().unwrap_or_else(|| usage());
        let (k, v) = kv.split_once('=').unwrap_or_else(|| usage());
        let value = match v {
            "true" => SettingValue::Bool(true),
            "false" => SettingValue::Bool(false),
            _ => SettingValue::Str(v.to_string()),
        };
        opts.layer_settings.push((k.to_string(), value));
        args.drain(..2);
    }
    let cmd = args.first().cloned().unwrap_or_else(|| usage());
    let ok = match cmd.as_str() {
        "probe" => probe(&opts),
        "render" => {
            let path: RenderPath = arg(&args, 1);
            render_cmd(&opts, path, arg(&args, 2), arg(&args, 3), args.get(4).map(std::path::PathBuf::from))
        }
        "cycle" => cycle(&opts, arg(&args, 1)),
        "threads" => threads(&opts, arg(&args, 1), arg(&args, 2)),
        "record" => record(&opts, arg(&args, 1), arg(&args, 2)),
        "bench" => bench(&opts, arg(&args, 1), arg(&args, 2), arg(&args, 3)),
        "interlock" => interlock_matrix(
            &mut opts,
            args.get(1).map(String::as_str),
            args.get(2).map(String::as_str),
            args.get(3).and_then(|d| d.parse().ok()).unwrap_or(0),
        ),
        "interlock-bench" => interlock_bench(
            &mut opts,
            arg(&args, 1),
            arg(&args, 2),
            arg(&args, 3),
            args.get(4).map(String::as_str),
            &args[5.min(args.len())..],
        ),
        "interlock-features" => interlock_features(&mut opts),
        "oit" => oit(&mut opts, arg(&args, 1), arg(&args, 2), &args[3..]),
        "oit-ordered" => oit_ordered(&mut opts, arg(&args, 1), arg(&args, 2), &args[3..]),
        // `devices=N`: the probe on N devices made one after another (a
        // speed that belongs to the device shows as different lines).
        "ordered-probe" => (0..overlap_tests::ordered_probe::devices(&args[1..]))
            .try_for_each(|_| gpu(&opts).and_then(|g| overlap_tests::ordered_probe::main(&g, &args[1..]))),
        "stale-view" => stale_view(
            &mut opts,
            args.get(1).and_then(|d| d.parse().ok()).unwrap_or(64),
            args.iter().any(|a| a == "template"),
        ),
        "vrs" => vrs(&mut opts),
        "quad-derivatives" => quad_derivatives(
            &mut opts,
            args.get(1).map(|_| arg(&args, 1)).unwrap_or(64),
            args.get(2).map(|_| arg(&args, 2)).unwrap_or(16),
            args.get(3).is_some_and(|a| a == "kill"),
        ),
        "fdm-demo" => fdm_demo(&mut opts, args.get(1).map(|s| s.as_str()).unwrap_or("fdm.png")),
        "fdm-bench" => fdm_bench(&mut opts, arg(&args, 1), arg(&args, 2), arg(&args, 3)),
        "viewport-mask-bench" => viewport_mask_bench(&mut opts, arg(&args, 1), arg(&args, 2), arg(&args, 3)),
        "copy-rows-bench" => copy_rows_bench(&mut opts, arg(&args, 1), arg(&args, 2), arg(&args, 3)),
        "composite-bench" => composite_bench(&mut opts, arg(&args, 1), arg(&args, 2), arg(&args, 3), arg(&args, 4)),
        "fdm" => fdm_matrix(&mut opts, args.get(1).map(|s| s.as_str())),
        "fdm-draws" => fdm_draws(&mut opts, &args[1..]),
        "fdm-destroyed-layout" => fdm_destroyed_layout(&mut opts, args.get(1).map(String::as_str).unwrap_or("before")),
        "fdm-device-lost" => fdm_device_lost(&mut opts),
        "stress" => stress(&mut opts, arg(&args, 1), arg(&args, 2)),
        "fdm-recreated-map" => fdm_recreated_map(&mut opts),
        "fdm-khr" => fdm_khr(&mut opts),
        "leak" => leak(&opts),
        "host-leak" => host_leak(),
        "local-read-multiview" => local_read_multiview(&mut opts),
        "fdm-layered" => fdm_layered(&mut opts, dynamic_map(&args)),
        "fdm-unknown-structure" => fdm_unknown_structure(&mut opts, args.get(1).map(String::as_str) == Some("after")),
        "multiview-ladder" => multiview_ladder(
            &mut opts,
            args.get(1).map(String::as_str).unwrap_or("plain"),
            args.get(2).map(String::as_str).unwrap_or("quad"),
            args.get(3).map(String::as_str).unwrap_or("direct"),
        ),
        "fdm-multiview" => {
            args[1..].iter().find_map(|a| a.strip_prefix("draw=")).unwrap_or("direct").parse().and_then(|kind| {
                fdm_multiview(&mut opts, args[1..].iter().any(|a| a == "quick"), dynamic_map(&args), kind)
            })
        }
        "fdm-offset" => fdm_offset(&mut opts, dynamic_map(&args)),
        "fdm-msaa" => fdm_msaa(&mut opts, dynamic_map(&args)),
        "fdm-library" => fdm_library(&mut opts),
        "fdm-shader-objects" => fdm_shader_objects(&mut opts),
        "fdm-queues" => fdm_queues(&mut opts, &args[1..]),
        "fdm-dynamic-state" => fdm_dynamic_state(&mut opts, args.get(1).map(String::as_str) == Some("plain")),
        "fdm2" => fdm2(&mut opts),
        "fdm-dynamic" => fdm_dynamic(
            &mut opts,
            args[1..].iter().any(|a| a == "app-conditional"),
            args[1..].iter().any(|a| a == "square"),
        ),
        "fdm-asked" => fdm_asked(&mut opts),
        "fdm-extended-usage" => fdm_extended_usage(&mut opts),
        "pipeline-route" => pipeline_route(&mut opts, arg(&args, 1)),
        "fdm-subsampled" => {
            let size =
                args.get(1).and_then(|s| s.split_once('x')).and_then(|(w, h)| Some((w.parse().ok()?, h.parse().ok()?)));
            fdm_subsampled(&mut opts, size.unwrap_or((256, 192)), args.get(2..).unwrap_or(&[]))
        }
        "fdm-client" => {
            let size =
                args.get(2).and_then(|s| s.split_once('x')).and_then(|(w, h)| Some((w.parse().ok()?, h.parse().ok()?)));
            fdm_client(
                &mut opts,
                arg(&args, 1),
                size.unwrap_or((1920, 1080)),
                args.get(3).and_then(|d| d.parse().ok()).unwrap_or(3),
                args.get(2..).unwrap_or(&[]),
            )
        }
        "varyings" => {
            let flag = |f: &str| args.iter().any(|a| a == f);
            let inline = flag("inline");
            let libraries = if flag("libraries") || flag("libraries-own") {
                Some(true)
            } else if flag("libraries-fast") {
                Some(false)
            } else {
                None
            };
            opts.pipeline_library |= inline || libraries.is_some();
            let objects = ["shader-objects", "shader-objects-unlinked"].into_iter().find(|w| flag(w));
            opts.shader_object |= objects.is_some();
            let words = ["inline", "libraries", "libraries-fast", "libraries-own", "pairs", "stages", "readback"];
            let dir = args.get(1).filter(|a| !a.starts_with("instances=") && !words.contains(&a.as_str()));
            let instances =
                args.iter().find_map(|a| a.strip_prefix("instances=")).and_then(|v| v.parse().ok()).unwrap_or(1);
            match libraries {
                _ if objects.is_some() && flag("stages") => {
                    varyings_stages(&opts, ChainRoute::ShaderObjects(objects == Some("shader-objects")))
                }
                _ if objects.is_some() => varyings_shader_objects(&opts, objects == Some("shader-objects"), instances),
                Some(lto) if flag("stages") => varyings_stages(&opts, ChainRoute::Libraries(lto)),
                Some(lto) => varyings_libraries(&opts, lto, flag("libraries-own"), instances),
                None if flag("pairs") => varyings_pairs(&opts, instances),
                None if flag("readback") => varyings_readback(&opts),
                None if flag("stages") => {
                    varyings_stages(&opts, if inline { ChainRoute::Inline } else { ChainRoute::Modules })
                }
                None => varyings(&opts, dir.map(std::path::PathBuf::from), inline, instances),
            }
        }
        _ => usage(),
    };
    finish(ok)
}

fn finish(result: Result<(), String>) -> ! {
    let errors = render::print_messages();
    match result {
        Err(e) if e.starts_with("vk:") => {
            println!("VK_ERROR={}", &e[3..]);
            std::process::exit(4)
        }
        Err(e) => {
            eprintln!("CHECK FAILED: {e}");
            std::process::exit(1)
        }
        Ok(()) if !errors.is_empty() => std::process::exit(3),
        Ok(()) => std::process::exit(0),
    }
}

/// The device's fragment density texel size limits (min, max).
fn texel_limits(g: &Gpu) -> (vk::Extent2D, vk::Extent2D) {
    let mut props = vk::PhysicalDeviceFragmentDensityMapPropertiesEXT::default();
    let mut p2 = vk::PhysicalDeviceProperties2::default().push_next(&mut props);
    unsafe { g.instance.get_physical_device_properties2(g.pd, &mut p2) };
    (props.min_fragment_density_texel_size, props.max_fragment_density_texel_size)
}

fn gpu(opts: &GpuOptions) -> Result<Gpu, String> {
    Gpu::new(opts).map_err(|e| format!("vk:{e}"))
}

fn probe(opts: &GpuOptions) -> Result<(), String> {
    let g = gpu(opts)?;
    println!("device={}", g.device_name);
    println!("vendor_id=0x{:x}", g.properties.vendor_id);
    let layers = unsafe { g.entry.enumerate_instance_layer_properties() }.map_err(|e| format!("vk:{e:?}"))?;
    let names: Vec<String> =
        layers.iter().map(|l| l.layer_name_as_c_str().unwrap().to_string_lossy().into_owned()).collect();
    println!("instance_layers={}", names.join(","));
    let exts = unsafe { g.instance.enumerate_device_extension_properties(g.pd) }.map_err(|e| format!("vk:{e:?}"))?;
    let mut ext_names: Vec<String> =
        exts.iter().map(|e| e.extension_name_as_c_str().unwrap().to_string_lossy().into_owned()).collect();
    let count = ext_names.len();
    ext_names.sort();
    ext_names.dedup();
    println!("device_extensions={}", ext_names.join(","));
    println!("device_extension_duplicates={}", count - ext_names.len());
    // What decides whether 16-bit varyings can reach the driver at all.
    let mut f11 = vk::PhysicalDeviceVulkan11Features::default();
    let mut f2 = vk::PhysicalDeviceFeatures2::default().push_next(&mut f11);
    unsafe { g.instance.get_physical_device_features2(g.pd, &mut f2) };
    println!("storage_input_output16={}", f11.storage_input_output16 == vk::TRUE);
    // The layer's own list, asked by name.
    let mut n = 0u32;
    let r = unsafe {
        (g.instance.fp_v1_0().enumerate_device_extension_properties)(
            g.pd,
            c"VK_LAYER_OVERLAP_emulation".as_ptr(),
            &mut n,
            std::ptr::null_mut(),
        )
    };
    println!("overlap_device_extensions={}", if r == vk::Result::SUCCESS { n.to_string() } else { format!("{r:?}") });
    for name in [c"vkCmdDraw", c"vkCreateShaderModule", c"vkQueueSubmit", c"vkCmdBeginRendering", c"vkDestroyDevice"] {
        println!("hook_owner.{}={}", name.to_str().unwrap(), g.device_proc_owner(name));
    }
    Ok(())
}

fn render_cmd(
    opts: &GpuOptions,
    path: RenderPath,
    w: u32,
    h: u32,
    out: Option<std::path::PathBuf>,
) -> Result<(), String> {
    let g = gpu(opts)?;
    let t = Target::new(&g, path, w, h);
    let img = t.render(&g);
    t.destroy(&g);
    if let Some(out) = &out {
        img.write_png(out).map_err(|e| format!("writing {}: {e}", out.display()))?;
        println!("png={}", out.display());
    }
    let checksum = img.checksum();
    println!("checksum={checksum:016x}");
    check_scene(&img)
}

/// Every pixel whose colour is certain matches; the triangle covers pixels.
fn check_scene(img: &render::Image) -> Result<(), String> {
    let mut checked = 0;
    for y in 0..img.height {
        for x in 0..img.width {
            if let Some(want) = render::expected_scene_pixel(x, y, img.width, img.height) {
                let got = img.pixel(x, y);
                if got != want {
                    return Err(format!("pixel ({x},{y}) is {got:?}, expected {want:?}"));
                }
                checked += 1;
            }
        }
    }
    let centre = img.pixel(img.width * 3 / 4, img.height / 2);
    if centre == render::CLEAR_RGBA || centre[1] == 0 {
        return Err(format!("triangle missing at the centre of the right half: {centre:?}"));
    }
    println!("checked_pixels={checked}");
    Ok(())
}

fn cycle(opts: &GpuOptions, n: u32) -> Result<(), String> {
    for _ in 0..n {
        drop(gpu(opts)?);
    }
    println!("cycles={n}");
    Ok(())
}

fn threads(opts: &GpuOptions, threads: u32, n: u32) -> Result<(), String> {
    let handles: Vec<_> = (0..threads)
        .map(|_| {
            let opts = opts.clone();
            std::thread::spawn(move || -> Result<(), String> {
                for _ in 0..n {
                    let g = gpu(&opts)?;
                    let t = Target::new(&g, RenderPath::RenderPass, 16, 16);
                    t.destroy(&g);
                }
                Ok(())
            })
        })
        .collect();
    for h in handles {
        h.join().map_err(|_| "thread panicked".to_string())??;
    }
    println!("threads={threads} cycles={n}");
    Ok(())
}

/// Records `draws` scene draws per command buffer on each of `threads`
/// threads (one pool each), submits them all, and checks the image.
fn record(opts: &GpuOptions, threads: u32, draws: u32) -> Result<(), String> {
    let g = gpu(opts)?;
    let t = Target::new(&g, RenderPath::RenderPass, 64, 64);
    let cbs: Vec<(vk::CommandPool, vk::CommandBuffer)> = std::thread::scope(|s| {
        let hs: Vec<_> = (0..threads)
            .map(|_| {
                s.spawn(|| unsafe {
                    let pool = g
                        .device
                        .create_command_pool(
                            &vk::CommandPoolCreateInfo::default().queue_family_index(g.queue_family),
                            None,
                        )
                        .unwrap();
                    let cb = g
                        .device
                        .allocate_command_buffers(
                            &vk::CommandBufferAllocateInfo::default().command_pool(pool).command_buffer_count(1),
                        )
                        .unwrap()[0];
                    g.device.begin_command_buffer(cb, &vk::CommandBufferBeginInfo::default()).unwrap();
                    t.begin(&g, cb);
                    for _ in 0..draws {
                        t.draw_scene(&g, cb);
                    }
                    t.end(&g, cb);
                    g.device.end_command_buffer(cb).unwrap();
                    (pool, cb)
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let list: Vec<vk::CommandBuffer> = cbs.iter().map(|c| c.1).collect();
    g.submit_wait(&list);
    g.one_time_submit(|cb| t.record_copy_out(&g, cb));
    let img = t.read(&g);
    for (pool, _) in cbs {
        unsafe { g.device.destroy_command_pool(pool, None) };
    }
    t.destroy(&g);
    println!("recorded={threads}x{draws}");
    println!("hook_owner.vkCmdDraw={}", g.device_proc_owner(c"vkCmdDraw"));
    check_scene(&img)
}

/// Records and submits `k` command buffers of `n` draws, `reps` times, and
/// prints the median recording and submit+wait times.
fn bench(opts: &GpuOptions, k: u32, n: u32, reps: u32) -> Result<(), String> {
    let g = gpu(opts)?;
    // A tiny target keeps the rasterizer's share small: the bench measures
    // the API path the layer sits on.
    let t = Target::new(&g, RenderPath::RenderPass, 8, 8);
    let pool = unsafe {
        g.device
            .create_command_pool(
                &vk::CommandPoolCreateInfo::default()
                    .queue_family_index(g.queue_family)
                    .flags(vk::CommandPoolCreateFlags::RESET_COMMAND_BUFFER),
                None,
            )
            .unwrap()
    };
    let cbs = unsafe {
        g.device
            .allocate_command_buffers(
                &vk::CommandBufferAllocateInfo::default().command_pool(pool).command_buffer_count(k),
            )
            .unwrap()
    };
    let mut record_ns = Vec::new();
    let mut submit_ns = Vec::new();
    for _ in 0..reps {
        let t0 = Instant::now();
        for &cb in &cbs {
            unsafe {
                g.device.begin_command_buffer(cb, &vk::CommandBufferBeginInfo::default()).unwrap();
                t.begin(&g, cb);
                for _ in 0..n {
                    t.draw_scene(&g, cb);
                }
                t.end(&g, cb);
                g.device.end_command_buffer(cb).unwrap();
            }
        }
        let t1 = Instant::now();
        g.submit_wait(&cbs);
        let t2 = Instant::now();
        record_ns.push((t1 - t0).as_nanos() as u64);
        submit_ns.push((t2 - t1).as_nanos() as u64);
    }
    unsafe { g.device.destroy_command_pool(pool, None) };
    t.destroy(&g);
    record_ns.sort();
    submit_ns.sort();
    println!("record_ns={}", record_ns[record_ns.len() / 2]);
    println!("submit_ns={}", submit_ns[submit_ns.len() / 2]);
    println!("hook_owner.vkCmdDraw={}", g.device_proc_owner(c"vkCmdDraw"));
    Ok(())
}

/// Runs the interlock matrix; every case must leave exactly the expected bits
/// and no ordering error. `none` runs the negative control (no critical
/// section) and only reports what it found.
fn interlock_matrix(
    opts: &mut GpuOptions,
    variant: Option<&str>,
    size: Option<&str>,
    delay: u32,
) -> Result<(), String> {
    use overlap_tests::interlock;
    opts.interlock = true;
    opts.shader_object = variant == Some("shader-object");
    opts.pipeline_library = matches!(variant, Some("inline" | "libraries"));
    let coverage = matches!(variant, Some("coverage" | "coverage-none"));
    opts.shading_rate = coverage;
    let g = gpu(opts)?;
    let negative = matches!(variant, Some("none" | "coverage-none" | "rov-none" | "rov-none-discard"));
    let inline = variant == Some("inline");
    if !g.interlock && !negative {
        println!("interlock=unsupported");
        return Err("VK_EXT_fragment_shader_interlock is not available".into());
    }
    let mut failures = 0;
    let mut lost = 0;
    let sized = size.and_then(|s| s.split_once('x')).and_then(|(w, h)| Some((w.parse().ok()?, h.parse().ok()?)));
    let sizes: Vec<(u32, u32)> = match sized {
        Some(wh) => vec![wh],
        None if variant == Some("all") || variant.is_none() => vec![(64, 64), (37, 23)],
        // Whole 64x64 tiles inside one triangle of the quad (rov: llvmpipe's opaque-tile rule).
        None if variant.is_some_and(|v| v.starts_with("rov")) => vec![(256, 192)],
        None => vec![(37, 23)],
    };
    // The 2x2 rate at each sample count, and shading-rate interlock.
    let rate_ok = |samples: u32| g.shading_rate && g.shading_rate_interlock && g.supports_rate(2, 2, samples);
    let cases = match variant {
        Some("coverage") => interlock::coverage_matrix(&sizes, &interlock::COVERAGE_MODES),
        Some("coverage-none") => interlock::coverage_matrix(&sizes, &["none", "none_rate"]),
        Some("draws") => interlock::draws_matrix(&sizes),
        Some("dynamic") => interlock::dynamic_matrix(&sizes),
        Some("early") => interlock::early_matrix(&sizes),
        Some("libraries") => interlock::library_matrix(&sizes),
        Some("rov") => interlock::rov_matrix(&sizes, &["pixel_interlock_ordered", "sample_interlock_ordered"], false),
        Some("rov-none") => interlock::rov_matrix(&sizes, &["none"], false),
        Some("rov-none-discard") => interlock::rov_matrix(&sizes, &["none"], true),
        _ => interlock::matrix_sized(&sizes),
    };
    if variant == Some("dynamic") && !g.dynamic_rendering {
        println!("dynamic_rendering=unsupported");
        return Err("dynamic rendering is not available".into());
    }
    if variant == Some("shader-object") && !g.shader_object {
        println!("shader_object=unsupported");
        return Err("VK_EXT_shader_object is not available".into());
    }
    for mut case in cases {
        case.delay = delay;
        case.inline_module = inline;
        case.render_pass2 = variant == Some("rp2");
        case.shader_object = variant == Some("shader-object");
        if case.shader_object && case.samples != 1 {
            continue;
        }
        if negative && !coverage && case.mode != "none" {
            if !case.mode.starts_with("pixel_interlock_unordered") {
                continue;
            }
            case.mode = "none";
        }
        if coverage && case.shading_rate() && !rate_ok(case.samples) {
            // Reported, never passed silently.
            println!("case={} result=unsupported", case.name());
            continue;
        }
        let o = interlock::run(&g, &case);
        let ok = o.wrong_words == 0 && o.order_errors == 0 && o.wrong_colour == 0;
        lost += o.wrong_words;
        if !ok {
            failures += 1;
        }
        println!(
            "case={} words={} wrong={} order_errors={} wrong_colour={} module_ns={} pipeline_ns={} result={}",
            case.name(),
            o.words,
            o.wrong_words,
            o.order_errors,
            o.wrong_colour,
            o.module_ns,
            o.pipeline_ns,
            if ok { "pass" } else { "fail" }
        );
    }
    println!("failures={failures}");
    println!("lost_words={lost}");
    if negative || failures == 0 {
        Ok(())
    } else {
        Err(format!("{failures} interlock cases failed"))
    }
}

/// Prints the interlock features (and, where the device has fragment
/// shading rates, whether rates apply with interlock) as queried, then asks
/// for shading-rate interlock: refused (VK_ERROR_FEATURE_NOT_PRESENT) unless
/// the device has fragment shading rates.
fn interlock_features(opts: &mut GpuOptions) -> Result<(), String> {
    opts.interlock = true;
    let g = gpu(opts)?;
    let mut f = vk::PhysicalDeviceFragmentShaderInterlockFeaturesEXT::default();
    let mut f2 = vk::PhysicalDeviceFeatures2::default().push_next(&mut f);
    unsafe { g.instance.get_physical_device_features2(g.pd, &mut f2) };
    println!(
        "pixel={} sample={} shading_rate={}",
        f.fragment_shader_pixel_interlock, f.fragment_shader_sample_interlock, f.fragment_shader_shading_rate_interlock
    );
    println!("enabled={}", g.interlock);
    println!("max_bound_descriptor_sets={}", g.properties.limits.max_bound_descriptor_sets);
    println!(
        "max_vertex_output_components={} max_fragment_input_components={}",
        g.properties.limits.max_vertex_output_components, g.properties.limits.max_fragment_input_components
    );
    let has_fsr = unsafe { g.instance.enumerate_device_extension_properties(g.pd) }
        .unwrap_or_default()
        .iter()
        .any(|e| e.extension_name_as_c_str() == Ok(ash::khr::fragment_shading_rate::NAME));
    if has_fsr {
        let mut fsr = vk::PhysicalDeviceFragmentShadingRatePropertiesKHR::default();
        let mut p2 = vk::PhysicalDeviceProperties2::default().push_next(&mut fsr);
        unsafe { g.instance.get_physical_device_properties2(g.pd, &mut p2) };
        println!(
            "rate_with_interlock={} max_fragment_size={}x{}",
            fsr.fragment_shading_rate_with_fragment_shader_interlock,
            fsr.max_fragment_size.width,
            fsr.max_fragment_size.height
        );
    }
    let prio = [1.0f32];
    let queues = [vk::DeviceQueueCreateInfo::default().queue_family_index(g.queue_family).queue_priorities(&prio)];
    let exts = [ash::ext::fragment_shader_interlock::NAME.as_ptr()];
    let mut ask =
        vk::PhysicalDeviceFragmentShaderInterlockFeaturesEXT::default().fragment_shader_shading_rate_interlock(true);
    let info =
        vk::DeviceCreateInfo::default().queue_create_infos(&queues).enabled_extension_names(&exts).push_next(&mut ask);
    match unsafe { g.instance.create_device(g.pd, &info, None) } {
        Ok(d) => {
            unsafe { d.destroy_device(None) };
            println!("shading_rate_device=created");
        }
        Err(e) => println!("shading_rate_device={e:?}"),
    }
    Ok(())
}

/// The median wall time of REPS submissions of one interlock case: 31
/// full-screen instances doing the read-modify-write in the critical section.
/// `interlock-bench W H REPS [MODE] [dynamic] [draws=N] [reuse]`: the median submit
/// time of one case (31 full-screen instances), drawn in a render pass or in
/// dynamic rendering, in one draw or `N`, and the median GPU time of its
/// pass (timestamps) where the queue writes them; with `reuse`, of REPS
/// frames drawn with one set of objects.
fn interlock_bench(
    opts: &mut GpuOptions,
    w: u32,
    h: u32,
    reps: usize,
    mode: Option<&str>,
    rest: &[String],
) -> Result<(), String> {
    use overlap_tests::interlock::{self, Case, Resource};
    opts.interlock = true;
    let g = gpu(opts)?;
    let mode: &'static str = match mode.unwrap_or("pixel_interlock_unordered") {
        "none" => "none",
        m => interlock::MODES.iter().copied().find(|x| *x == m).ok_or("unknown mode")?,
    };
    if mode != "none" && !g.interlock {
        return Err("VK_EXT_fragment_shader_interlock is not available".into());
    }
    let dynamic_rendering = rest.iter().any(|a| a == "dynamic");
    if dynamic_rendering && !g.dynamic_rendering {
        return Err("dynamic rendering is not available".into());
    }
    let draws = rest.iter().find_map(|a| a.strip_prefix("draws=")?.parse().ok()).unwrap_or(1);
    // `reuse`: the reps as frames of one set of objects (one pipeline), as
    // a renderer draws, rather than each rep making its own.
    let reuse = rest.iter().any(|a| a == "reuse");
    let frames = if reuse { reps as u32 } else { 1 };
    let case = Case { dynamic_rendering, draws, frames, ..Case::plain(mode, Resource::Image, false, 1, false, w, h) };
    let mut times = Vec::new();
    let mut gpu_times = Vec::new();
    let mut wrong = 0;
    for _ in 0..if reuse { 1 } else { reps } {
        let o = interlock::run(&g, &case);
        wrong += o.wrong_words;
        times.extend(o.frame_submit_ns);
        gpu_times.extend(o.frame_gpu_ns);
    }
    let each = gpu_each(&gpu_times);
    times.sort();
    gpu_times.sort();
    // The pass's GPU time (timestamps), where the queue writes them.
    let gpu_field = gpu_times.get(gpu_times.len() / 2).map(|t| format!(" median_gpu_ns={t}")).unwrap_or_default();
    println!("case={} median_submit_ns={}{gpu_field} wrong_words={wrong}{each}", case.name(), times[times.len() / 2]);
    Ok(())
}

/// ` gpu_us_each=A,B,…`: every repetition's GPU time in µs, in the order
/// they ran (empty where the queue writes no timestamps): whether a run's
/// speed changes within the process (the ordered strategy's slow devices,
/// docs/design/ordered-interlock.md §15).
fn gpu_each(gpu_ns: &[u64]) -> String {
    if gpu_ns.is_empty() {
        return String::new();
    }
    let us: Vec<String> = gpu_ns.iter().map(|t| (t / 1000).to_string()).collect();
    format!(" gpu_us_each={}", us.join(","))
}

/// Renders the OIT scene (with interlock, or `none`: the same shader without
/// the critical section), compares it with the CPU reference and prints the
/// largest channel difference and the median time of `reps` renders.
fn oit(opts: &mut GpuOptions, w: u32, h: u32, rest: &[String]) -> Result<(), String> {
    use overlap_tests::oit;
    opts.interlock = true;
    let g = gpu(opts)?;
    let with_interlock = !rest.iter().any(|a| a == "none");
    if with_interlock && !g.interlock {
        return Err("VK_EXT_fragment_shader_interlock is not available".into());
    }
    let get = |k: &str| rest.iter().find_map(|a| a.strip_prefix(k).and_then(|v| v.strip_prefix('=')));
    let reps: usize = get("reps").and_then(|v| v.parse().ok()).unwrap_or(1);
    let reference = oit::reference(w, h);
    let mut times = Vec::new();
    let mut worst = 0;
    let mut image = None;
    for _ in 0..reps {
        let (img, ns) = oit::render(&g, w, h, with_interlock);
        worst = worst.max(oit::max_difference(&img, &reference));
        times.push(ns);
        image = Some(img);
    }
    times.sort();
    let image = image.unwrap();
    if let Some(p) = get("out") {
        image.write_png(std::path::Path::new(p)).map_err(|e| e.to_string())?;
    }
    if let Some(p) = get("ref") {
        reference.write_png(std::path::Path::new(p)).map_err(|e| e.to_string())?;
    }
    let wrong = image
        .rgba
        .chunks(4)
        .zip(reference.rgba.chunks(4))
        .filter(|(a, b)| a.iter().zip(*b).any(|(x, y)| x.abs_diff(*y) > 2))
        .count();
    println!(
        "oit={} size={w}x{h} max_diff={worst} wrong_pixels={wrong} median_ns={}",
        if with_interlock { "interlock" } else { "none" },
        times[times.len() / 2]
    );
    if with_interlock && worst > 2 {
        return Err(format!("OIT differs from the reference by up to {worst}"));
    }
    Ok(())
}

/// Renders the ordered OIT scene (issue 12: tail blending, where the order
/// of a pixel's fragments changes the picture) and compares it with the CPU
/// reference, which processes each pixel's fragments in primitive order:
/// prints the most differing pixels and largest channel difference of
/// `reps` renders and their median time. Fails
/// on any difference (tolerance 0: the scene computes in integers) unless
/// `nocheck` (the negative controls: `reverse` draws the layers last to
/// first, `section=none` has no critical section). `full`: every layer
/// covers the target (exactly `layers` fragments a pixel, for the benchmark).
fn oit_ordered(opts: &mut GpuOptions, w: u32, h: u32, rest: &[String]) -> Result<(), String> {
    use overlap_tests::oit_ordered::{self as scene, Section};
    let get = |k: &str| rest.iter().find_map(|a| a.strip_prefix(k).and_then(|v| v.strip_prefix('=')));
    let flag = |k: &str| rest.iter().any(|a| a == k);
    let layers: u32 = get("layers").map(|v| v.parse().map_err(|_| "layers=N")).transpose()?.unwrap_or(8);
    if !(1..=scene::MAX_LAYERS).contains(&layers) || !w.is_multiple_of(64) || !h.is_multiple_of(64) || w == 0 || h == 0
    {
        return Err(format!("1 to {} layers, sizes multiples of 64", scene::MAX_LAYERS));
    }
    let section: Section = get("section").unwrap_or("ordered").parse()?;
    let reverse = flag("reverse");
    let full = flag("full");
    let reps: usize = get("reps").and_then(|v| v.parse().ok()).unwrap_or(1).max(1);
    // `work=W`: W rounds of extra work per fragment, live across the section.
    let work: u32 = match get("work") {
        Some(v) => v.parse().ok().filter(|w| *w < 1 << 23).ok_or("work=W, below 2^23")?,
        None => 0,
    };
    let kind: overlap_tests::draw_kind::DrawKind = get("draw").unwrap_or("direct").parse()?;
    let renew: Option<scene::Renew> = get("renew").map(str::parse).transpose()?;
    if renew.is_some() && !flag("reuse") {
        return Err("renew=… goes with reuse (without it every render makes every object anew)".into());
    }
    opts.interlock = true;
    opts.multi_draw |= kind.multi();
    // `devices=N`: the whole scene on N devices made one after another in
    // this process (each with the layer's objects made anew), one line each:
    // tells a speed set per process from one set per device's allocations.
    let devices: usize = get("devices").and_then(|v| v.parse().ok()).unwrap_or(1).max(1);
    // `grow=WxH`: then the scene once more at that size on the same device
    // (its targets made after the first ordered draws), judged against its
    // own reference.
    let grow: Option<(u32, u32)> =
        get("grow").and_then(|v| v.split_once('x')).and_then(|(a, b)| Some((a.parse().ok()?, b.parse().ok()?)));
    let reference = scene::reference(w, h, layers, false, full);
    let mut wrong = 0;
    for device in 0..devices {
        let g = gpu(opts)?;
        if section != Section::None && !g.interlock {
            return Err("VK_EXT_fragment_shader_interlock is not available".into());
        }
        if kind.multi() && !g.multi_draw {
            return Err("VK_EXT_multi_draw is not listed".into());
        }
        let mut times = Vec::new();
        let mut gpu_times = Vec::new();
        let mut worst = 0;
        let mut image = None;
        // `reuse`: the reps as frames of one set of buffers, pipelines and
        // target (as a renderer draws), rather than each rep making its own.
        // `renew=…` with `reuse`: the objects listed made anew every frame
        // all the same (which of them a speed that changes follows).
        let renders = if flag("reuse") { 1 } else { reps };
        let count = if flag("reuse") { reps } else { 1 };
        let pause = std::time::Duration::from_millis(get("pause").and_then(|v| v.parse().ok()).unwrap_or(0));
        let frames = scene::Frames { count, work, renew: renew.unwrap_or_default(), pause };
        for _ in 0..renders {
            let (img, each) = scene::render_frames(&g, (w, h), layers, section, reverse, full, kind, frames);
            wrong = wrong.max(scene::differing_pixels(&img, &reference));
            worst = worst.max(overlap_tests::oit::max_difference(&img, &reference));
            for (ns, gpu_ns) in each {
                times.push(ns);
                gpu_times.extend(gpu_ns);
            }
            image = Some(img);
        }
        let each = gpu_each(&gpu_times);
        times.sort();
        gpu_times.sort();
        // The insert pass's GPU time (timestamps), where the queue writes them.
        let gpu_field = gpu_times.get(gpu_times.len() / 2).map(|t| format!(" median_gpu_ns={t}")).unwrap_or_default();
        let image = image.unwrap();
        if let Some(p) = get("out") {
            image.write_png(std::path::Path::new(p)).map_err(|e| e.to_string())?;
        }
        if let Some(p) = get("ref") {
            reference.write_png(std::path::Path::new(p)).map_err(|e| e.to_string())?;
        }
        if let Some((w2, h2)) = grow {
            let reference2 = scene::reference(w2, h2, layers, false, full);
            let (img, _, _) = scene::render(&g, w2, h2, layers, section, reverse, full, kind);
            let wrong2 = scene::differing_pixels(&img, &reference2);
            println!("oit_ordered_grown size={w2}x{h2} wrong_pixels={wrong2}");
            wrong = wrong.max(wrong2);
        }
        let device_field = if devices > 1 { format!(" device={device}") } else { String::new() };
        println!(
            "oit_ordered={section:?} size={w}x{h} layers={layers} full={full} reverse={reverse} max_diff={} wrong_pixels={wrong} median_ns={}{gpu_field} draw={kind}{device_field}{each}",
            worst,
            times[times.len() / 2]
        );
    }
    if wrong > 0 && !flag("nocheck") {
        return Err(format!("ordered OIT: {wrong} pixels differ from the reference"));
    }
    Ok(())
}

/// A full-screen draw at a requested 2x2 shading rate (static and dynamic),
/// with and without interlock: invocations and the rates the shader saw.
fn vrs(opts: &mut GpuOptions) -> Result<(), String> {
    opts.interlock = true;
    opts.shading_rate = true;
    let g = gpu(opts)?;
    println!("shading_rate={} interlock={}", g.shading_rate, g.interlock);
    if !g.shading_rate {
        return Ok(());
    }
    let fsr = ash::khr::fragment_shading_rate::Instance::new(&g.entry, &g.instance);
    let mut n = 0u32;
    let _ = unsafe { (fsr.fp().get_physical_device_fragment_shading_rates_khr)(g.pd, &mut n, std::ptr::null_mut()) };
    let mut rates = vec![vk::PhysicalDeviceFragmentShadingRateKHR::default(); n as usize];
    let _ = unsafe { (fsr.fp().get_physical_device_fragment_shading_rates_khr)(g.pd, &mut n, rates.as_mut_ptr()) };
    let list: Vec<String> = rates
        .iter()
        .take(n as usize)
        .map(|r| format!("{}x{}", r.fragment_size.width, r.fragment_size.height))
        .collect();
    println!("rates={}", list.join(","));
    use overlap_tests::vrs::{Request, Section};
    let mut errors = 0;
    for section in [Section::None, Section::Unordered, Section::Ordered] {
        let interlock = section != Section::None;
        if interlock && !g.interlock {
            continue;
        }
        for request in [Request::Static, Request::Dynamic, Request::Primitive] {
            if request == Request::Primitive && !g.primitive_shading_rate {
                continue;
            }
            let o = overlap_tests::vrs::run(&g, section, request, 64);
            errors += o.errors;
            println!(
                "vrs interlock={interlock} section={section:?} request={request:?} invocations={} pixels={} rates=0x{:x} errors={} error_kinds=0x{:x}",
                o.invocations, o.pixels, o.rates, o.errors, o.kinds
            );
        }
    }
    // gl_FragCoord off the fragment's centre, or derivatives not its size.
    if errors > 0 {
        return Err(format!("vrs: {errors} invocations saw a wrong gl_FragCoord or derivative"));
    }
    Ok(())
}

/// Derivatives inside a critical section at 1x1 (`overlap_tests::vrs::derivatives`).
fn quad_derivatives(opts: &mut GpuOptions, size: u32, instances: u32, kill: bool) -> Result<(), String> {
    if size == 0 || size > 64 || instances == 0 {
        usage();
    }
    opts.interlock = true;
    let g = gpu(opts)?;
    if !g.interlock {
        println!("quad_derivatives=unsupported");
        return Ok(());
    }
    let o = overlap_tests::vrs::derivatives(&g, size, instances, kill);
    println!(
        "quad_derivatives size={size}x{size} instances={instances} kill={kill} invocations={} pixels={} errors={} error_kinds=0x{:x} lost={}",
        o.invocations, o.pixels, o.errors, o.kinds, o.lost
    );
    if o.errors > 0 || o.lost > 0 {
        return Err(format!("quad-derivatives: {} invocations saw wrong derivatives, {} words lost", o.errors, o.lost));
    }
    Ok(())
}

/// Renders every pair of the varying corpus; prints a checksum each and
/// writes the raw RGBA8 images to `dir`.
fn varyings(opts: &GpuOptions, dir: Option<std::path::PathBuf>, inline: bool, instances: u32) -> Result<(), String> {
    let g = gpu(opts)?;
    for n in 0..overlap_tests::varyings::CORPUS.len() {
        let (img, pipeline_ns, submit_ns) = overlap_tests::varyings::render_via(&g, n, instances, inline);
        let sum = img.checksum();
        println!("pair={n} checksum={sum:016x} pipeline_ns={pipeline_ns} submit_ns={submit_ns}");
        if let Some(d) = &dir {
            std::fs::create_dir_all(d).map_err(|e| e.to_string())?;
            std::fs::write(d.join(format!("{n}.rgba")), &img.rgba).map_err(|e| e.to_string())?;
        }
    }
    // Again, from new modules with the same code: the layer's link cache
    // must hand back the same linked pairs.
    for n in 0..overlap_tests::varyings::CORPUS.len() {
        let (img, pipeline_ns, _) = overlap_tests::varyings::render_via(&g, n, instances, inline);
        let sum = img.checksum();
        println!("repeat={n} checksum={sum:016x} repeat_pipeline_ns={pipeline_ns}");
    }
    let img = overlap_tests::varyings::render_geometry(&g);
    let sum = img.checksum();
    println!("geometry={sum:016x}");
    let img = overlap_tests::varyings::render_tessellation(&g);
    let sum = img.checksum();
    println!("tessellation={sum:016x}");
    Ok(())
}

/// The stage-chain corpus (those that render), each by `route` (modules,
/// inline code, pipeline libraries): `chain=<n> checksum=<sum>`.
fn varyings_stages(opts: &GpuOptions, route: ChainRoute) -> Result<(), String> {
    let g = gpu(opts)?;
    for (n, (_, renders, _)) in overlap_tests::varyings::STAGE_CORPUS.iter().enumerate() {
        if *renders {
            println!("chain={n} checksum={:016x}", overlap_tests::varyings::render_chain(&g, n, route).checksum());
        }
    }
    Ok(())
}

/// The corpus pairs (no geometry or tessellation pair), each twice, from
/// shader modules: checksums and pipeline creation times.
fn varyings_pairs(opts: &GpuOptions, instances: u32) -> Result<(), String> {
    let g = gpu(opts)?;
    for pass in ["pair", "repeat"] {
        for n in 0..overlap_tests::varyings::CORPUS.len() {
            let (img, pipeline_ns, _) = overlap_tests::varyings::render_via(&g, n, instances, false);
            println!("{pass}={n} checksum={:016x} pipeline_ns={pipeline_ns}", img.checksum());
        }
    }
    Ok(())
}

/// The read-back corpus (issue 35, `tests/corpus/readback`): each pair
/// drawn once, its checksum printed (`readback=N name=... checksum=...`), to
/// compare across `varyings` levels.
fn varyings_readback(opts: &GpuOptions) -> Result<(), String> {
    let g = gpu(opts)?;
    for (n, (name, vert, frag)) in overlap_tests::varyings::READBACK_BYTES.iter().enumerate() {
        let sum = overlap_tests::varyings::render_pair(&g, vert, frag);
        println!("readback={n} name={} checksum={sum:016x}", name.replace(' ', "_"));
    }
    Ok(())
}

/// [`varyings_pairs`] through graphics pipeline libraries, linked with
/// link-time optimization (`lto`) or fast (`own_interfaces`: two shader
/// libraries, the final link holding the vertex input and fragment output
/// state).
fn varyings_libraries(opts: &GpuOptions, lto: bool, own_interfaces: bool, instances: u32) -> Result<(), String> {
    let g = gpu(opts)?;
    let exts = unsafe { g.instance.enumerate_device_extension_properties(g.pd) }.map_err(|e| e.to_string())?;
    if !exts.iter().any(|e| e.extension_name_as_c_str() == Ok(ash::ext::graphics_pipeline_library::NAME)) {
        return Err("VK_EXT_graphics_pipeline_library is not available".into());
    }
    for pass in ["pair", "repeat"] {
        for n in 0..overlap_tests::varyings::CORPUS.len() {
            let (img, pipeline_ns, _) =
                overlap_tests::varyings::render_libraries(&g, n, instances, lto, own_interfaces);
            println!("{pass}={n} checksum={:016x} pipeline_ns={pipeline_ns}", img.checksum());
        }
    }
    Ok(())
}

/// [`varyings_pairs`] through shader objects made together in one
/// `vkCreateShadersEXT` call, as a linked set (`linked`) or unlinked.
fn varyings_shader_objects(opts: &GpuOptions, linked: bool, instances: u32) -> Result<(), String> {
    let g = gpu(opts)?;
    if !g.shader_object {
        println!("shader_objects=unsupported: the driver has no VK_EXT_shader_object");
        return Ok(());
    }
    for pass in ["pair", "repeat"] {
        for n in 0..overlap_tests::varyings::CORPUS.len() {
            let (img, pipeline_ns, _) = overlap_tests::varyings::render_shader_objects(&g, n, instances, linked);
            println!("{pass}={n} checksum={:016x} pipeline_ns={pipeline_ns}", img.checksum());
        }
    }
    Ok(())
}

/// `fdm [quick]`: the density-map suite (CTS-style, checks from the spec):
/// render pass 1 / 2 / dynamic rendering × 1 / 4 samples × divisible /
/// non-divisible sizes, each with the area checks, the reference comparison
/// and a depth-tested variant; density 1 against no density map (colour- and
/// FragCoord-dependent shading); load and clear ops; a draw from a secondary
/// command buffer; two subpasses with an input attachment; and the passes
/// that must render at 1x1 (a storage write, a query).
/// Bits per texel of an uncompressed colour format, from its name
/// (`B4G4R4A4_UNORM_PACK16` → 16, `R16_SFLOAT` → 16); `None` for depth,
/// stencil, compressed and multi-planar formats. Independent of the layer's
/// own table of R8G8_UNORM's compatibility class.
fn colour_bits(format: vk::Format) -> Option<u32> {
    let name = format!("{format:?}");
    let first = name.split('_').next()?;
    if name.contains("BLOCK") || name.contains("PLANE") || name.contains("422") || first.starts_with(['D', 'S']) {
        return None;
    }
    let mut bits = 0;
    let mut digits = String::new();
    for c in first.chars().chain(std::iter::once('.')) {
        if c.is_ascii_digit() {
            digits.push(c);
        } else {
            if !digits.is_empty() {
                bits += digits.parse::<u32>().ok()?;
                digits.clear();
            }
            if !"RGBAXE.".contains(c) {
                return None;
            }
        }
    }
    (bits > 0).then_some(bits)
}

/// `dEQP-VK.image.extended_usage_bit_compatibility.{image_format_properties,
/// image_format_properties2,image_format_list}.*_fragment_density_map_bit_ext`,
/// mirrored: for every core format and tiling the format supports, if a
/// compatible view format (same format, or an uncompressed colour format of
/// the same size) supports density-map usage on its own, the image format
/// with `EXTENDED_USAGE | MUTABLE_FORMAT` must too (the query through each
/// of the three entry points).
fn fdm_extended_usage(opts: &mut GpuOptions) -> Result<(), String> {
    opts.fdm = true;
    let g = gpu(opts)?;
    let usage = vk::ImageUsageFlags::FRAGMENT_DENSITY_MAP_EXT;
    let query = |variant: u32, format: vk::Format, tiling, flags| -> vk::Result {
        let mut props = vk::ImageFormatProperties::default();
        let mut props2 = vk::ImageFormatProperties2::default();
        let list = [format];
        let mut fl = vk::ImageFormatListCreateInfo::default().view_formats(&list);
        let mut info = vk::PhysicalDeviceImageFormatInfo2::default()
            .format(format)
            .ty(vk::ImageType::TYPE_2D)
            .tiling(tiling)
            .usage(usage)
            .flags(flags);
        unsafe {
            match variant {
                0 => (g.instance.fp_v1_0().get_physical_device_image_format_properties)(
                    g.pd,
                    format,
                    vk::ImageType::TYPE_2D,
                    tiling,
                    usage,
                    flags,
                    &mut props,
                ),
                1 => (g.instance.fp_v1_1().get_physical_device_image_format_properties2)(g.pd, &info, &mut props2),
                _ => {
                    info = info.push_next(&mut fl);
                    (g.instance.fp_v1_1().get_physical_device_image_format_properties2)(g.pd, &info, &mut props2)
                }
            }
        }
    };
    let formats: Vec<vk::Format> = (1..185).map(vk::Format::from_raw).collect();
    let (mut passed, mut unsupported, mut failed) = (0, 0, Vec::new());
    for variant in 0..3 {
        for &format in &formats {
            for tiling in [vk::ImageTiling::LINEAR, vk::ImageTiling::OPTIMAL] {
                let fp = unsafe { g.instance.get_physical_device_format_properties(g.pd, format) };
                let features = if tiling == vk::ImageTiling::OPTIMAL {
                    fp.optimal_tiling_features
                } else {
                    fp.linear_tiling_features
                };
                if features.is_empty() {
                    continue;
                }
                let compatible =
                    |v: vk::Format| v == format || colour_bits(v).is_some_and(|b| Some(b) == colour_bits(format));
                let supported = formats.iter().any(|&v| {
                    compatible(v) && query(variant, v, tiling, vk::ImageCreateFlags::empty()) == vk::Result::SUCCESS
                });
                if !supported {
                    unsupported += 1;
                    continue;
                }
                let flags = vk::ImageCreateFlags::EXTENDED_USAGE | vk::ImageCreateFlags::MUTABLE_FORMAT;
                match query(variant, format, tiling, flags) {
                    vk::Result::SUCCESS => passed += 1,
                    r => failed.push(format!("{variant}:{format:?}/{tiling:?}={r:?}")),
                }
            }
        }
    }
    println!("fdm_extended_usage passed={passed} failed={} unsupported={unsupported}", failed.len());
    if !failed.is_empty() {
        return Err(format!("extended-usage queries refused: {}", failed.join(", ")));
    }
    Ok(())
}

/// `VK_EXT_fragment_density_map2` next to the emulated FDM (google/bigwheels
/// enables both): listed, its features and properties filled with values the
/// emulation honours, a device enabling both renders binned; asking for
/// `fragmentDensityMapDeferred` (not offered) fails device creation.
fn fdm2(opts: &mut GpuOptions) -> Result<(), String> {
    use overlap_tests::fdm::{self, Map, Path, Scene};
    opts.fdm = true;
    opts.fdm2 = Some(false);
    let g = gpu(opts)?;
    let listed = unsafe { g.instance.enumerate_device_extension_properties(g.pd) }.unwrap_or_default();
    if !listed.iter().any(|e| e.extension_name_as_c_str() == Ok(ash::ext::fragment_density_map2::NAME)) {
        return Err("VK_EXT_fragment_density_map2 is not listed".into());
    }
    let mut f2 = vk::PhysicalDeviceFragmentDensityMap2FeaturesEXT::default();
    let mut q = vk::PhysicalDeviceFeatures2::default().push_next(&mut f2);
    unsafe { g.instance.get_physical_device_features2(g.pd, &mut q) };
    let mut p2 = vk::PhysicalDeviceFragmentDensityMap2PropertiesEXT::default();
    let mut p1 = vk::PhysicalDeviceFragmentDensityMapPropertiesEXT::default();
    let mut pq = vk::PhysicalDeviceProperties2::default().push_next(&mut p2).push_next(&mut p1);
    unsafe { g.instance.get_physical_device_properties2(g.pd, &mut pq) };
    println!(
        "fdm2 deferred={} subsampled_loads={} max_subsampled_array_layers={} max_descriptor_set_subsampled_samplers={}",
        f2.fragment_density_map_deferred,
        p2.subsampled_loads,
        p2.max_subsampled_array_layers,
        p2.max_descriptor_set_subsampled_samplers
    );
    // The spec's required minimums.
    if p2.max_subsampled_array_layers < 2 || p2.max_descriptor_set_subsampled_samplers < 1 {
        return Err("FDM2 limits below the spec's minimums".into());
    }
    let (min, max) = (p1.min_fragment_density_texel_size, p1.max_fragment_density_texel_size);
    let full_vs = &include_bytes!(concat!(env!("OUT_DIR"), "/fullscreen.vert.spv"))[..];
    let size_fs = &include_bytes!(concat!(env!("OUT_DIR"), "/fdm_size.frag.spv"))[..];
    let size: (u32, u32) = (256, 256);
    let (mw, mh) = (size.0.div_ceil(32), size.1.div_ceil(32));
    let map = Map { width: mw, height: mh, texels: fdm::regions(mw, mh) };
    let texel =
        (fdm::texel_size(size.0, mw, min.width, max.width), fdm::texel_size(size.1, mh, min.height, max.height));
    let s = Scene { map: Some(&map), ..Scene::new(Path::RenderPass2, size, full_vs, size_fs, 3) };
    let (coarse, _) = fdm::check_sizes(&fdm::render(&g, &s), size, &map, texel)?;
    if coarse == 0 {
        return Err("nothing was shaded coarsely with FDM2 enabled".into());
    }
    println!("fdm2 rendered coarse_pixels={coarse}");
    drop(g);
    // Deferred and dynamic maps: planned on the GPU when the pass executes;
    // the map (written before recording here) is followed.
    let mut deferred = opts.clone();
    deferred.fdm2 = Some(true);
    deferred.fdm_dynamic = true;
    let g = Gpu::new(&deferred).map_err(|e| format!("a device with deferred and dynamic maps: {e}"))?;
    println!("fdm2 deferred_device=created");
    let img = fdm::map_image(&g, &map);
    for (name, flag) in [
        ("deferred", vk::ImageViewCreateFlags::FRAGMENT_DENSITY_MAP_DEFERRED_EXT),
        ("dynamic", vk::ImageViewCreateFlags::FRAGMENT_DENSITY_MAP_DYNAMIC_EXT),
    ] {
        let view = fdm::map_view(&g, img.0, flag)?;
        let px = fdm::render(&g, &Scene { map_view: Some(view), ..s });
        unsafe { g.device.destroy_image_view(view, None) };
        let (coarse, _) = fdm::check_sizes(&px, size, &map, texel).map_err(|e| format!("a {name} map: {e}"))?;
        println!("fdm2 {name}_map={} coarse_pixels={coarse}", if coarse > 0 { "coarse" } else { "density_one" });
    }
    g.destroy_image(img);
    Ok(())
}

/// `fdm-asked`: one dynamic map image, written by the GPU before each of
/// three frames (each submitted and waited for before the next is
/// recorded), under the layer's default `fdm_dynamic_areas=asked`. Frame 1
/// asks for 1x1 (left half) and 4x4 (right half): no plan with the map has
/// executed, so every area is a candidate and each pixel's FragSizeEXT is
/// exactly what it asks. Frame 2 asks for 2x4 everywhere: the candidates are
/// the areas frame 1 asked for and 1x1, so it renders at 1x1 (the largest
/// candidate no larger than 2x4). Frame 3 asks for 2x4 again: frame 2's plan
/// asked for it, so it renders at 2x4. Prints each frame's areas.
fn fdm_asked(opts: &mut GpuOptions) -> Result<(), String> {
    use overlap_tests::fdm::{self, Map, Path, Scene};
    opts.fdm = true;
    opts.fdm2 = Some(true);
    opts.fdm_dynamic = true;
    let g = gpu(opts)?;
    let (min, max) = texel_limits(&g);
    let full_vs = &include_bytes!(concat!(env!("OUT_DIR"), "/fullscreen.vert.spv"))[..];
    let size_fs = &include_bytes!(concat!(env!("OUT_DIR"), "/fdm_size.frag.spv"))[..];
    let size: (u32, u32) = (256, 256);
    let (mw, mh) = (8u32, 8u32);
    let texel =
        (fdm::texel_size(size.0, mw, min.width, max.width), fdm::texel_size(size.1, mh, min.height, max.height));
    let halves: Vec<[u8; 2]> = (0..mw * mh).map(|k| if k % mw < mw / 2 { [255, 255] } else { [60, 60] }).collect();
    let first = Map { width: mw, height: mh, texels: halves };
    let tall = Map { width: mw, height: mh, texels: vec![[127, 60]; (mw * mh) as usize] };
    let img = fdm::map_image(&g, &first);
    let view = fdm::map_view(&g, img.0, vk::ImageViewCreateFlags::FRAGMENT_DENSITY_MAP_DYNAMIC_EXT)?;
    let mut result = Ok(());
    // Per frame: the map written, and the area each pixel takes (from the pixel's texel's request).
    let frames: [(&Map, fn((u32, u32)) -> (u32, u32)); 3] = [(&first, |a| a), (&tall, |_| (1, 1)), (&tall, |a| a)];
    for (n, (map, want_of)) in frames.into_iter().enumerate() {
        let s = Scene {
            map_view: Some(view),
            map_write: Some((img.0, map)),
            ..Scene::new(Path::RenderPass, size, full_vs, size_fs, 3)
        };
        let px = fdm::render(&g, &s);
        let mut areas = std::collections::BTreeSet::new();
        let mut wrong = None;
        for y in 0..size.1 {
            for x in 0..size.0 {
                let t = map.texels[((y / texel.1) * mw + x / texel.0) as usize];
                let want = want_of((fdm::requested(t[0]), fdm::requested(t[1])));
                let p = px[(y * size.0 + x) as usize][0];
                let got = ((p / 16) as u32, (p % 16) as u32);
                areas.insert(format!("{}x{}", got.0, got.1));
                if got != want && wrong.is_none() {
                    wrong = Some(format!("frame {}, pixel ({x},{y}): FragSizeEXT {got:?}, expected {want:?}", n + 1));
                }
            }
        }
        let areas: Vec<String> = areas.into_iter().collect();
        println!("fdm_asked frame={} areas={} as_expected={}", n + 1, areas.join(","), wrong.is_none() as u32);
        if let Some(w) = wrong {
            result = result.and(Err(w));
        }
    }
    unsafe { g.device.destroy_image_view(view, None) };
    g.destroy_image(img);
    result
}

/// `fdm-dynamic`: a density map whose view has the dynamic flag, written by
/// the GPU in the same command buffer just before the pass (a copy from a
/// buffer, then the barrier to the density-map stage) over contents that
/// ask for 4x4 everywhere when the pass is recorded. Every pass type; every
/// pixel's FragSizeEXT must be exactly the area the written map asks for
/// (the 256x256 framebuffer has 8x8 texels of 32 pixels: one GPU-plan region
/// per texel), which a plan made from the map at recording cannot give.
/// `square`: the expected area is the square of the finer axis of what the
/// map asks (the layer's `fdm_dynamic_areas=square`).
fn fdm_dynamic(opts: &mut GpuOptions, app_conditional: bool, square: bool) -> Result<(), String> {
    use overlap_tests::fdm::{self, Map, Path, Scene};
    opts.fdm = true;
    opts.fdm2 = Some(true);
    opts.fdm_dynamic = true;
    opts.conditional_rendering = app_conditional;
    let g = gpu(opts)?;
    if app_conditional && g.conditional_rendering.is_none() {
        return Err("the device lists no VK_EXT_conditional_rendering".into());
    }
    let (min, max) = texel_limits(&g);
    let full_vs = &include_bytes!(concat!(env!("OUT_DIR"), "/fullscreen.vert.spv"))[..];
    let size_fs = &include_bytes!(concat!(env!("OUT_DIR"), "/fdm_size.frag.spv"))[..];
    let size: (u32, u32) = (256, 256);
    let (mw, mh) = (8, 8);
    let written = Map { width: mw, height: mh, texels: fdm::regions(mw, mh) };
    let stale = Map { width: mw, height: mh, texels: vec![[60, 60]; (mw * mh) as usize] };
    let texel =
        (fdm::texel_size(size.0, mw, min.width, max.width), fdm::texel_size(size.1, mh, min.height, max.height));
    let img = fdm::map_image(&g, &stale);
    let view = fdm::map_view(&g, img.0, vk::ImageViewCreateFlags::FRAGMENT_DENSITY_MAP_DYNAMIC_EXT)?;
    let mut result = Ok(());
    for path in [Path::RenderPass, Path::RenderPass2, Path::Dynamic] {
        // The map asks for 4x4 everywhere when the pass is recorded.
        fdm::write_map(&g, img.0, &stale);
        let s = Scene {
            map_view: Some(view),
            map_write: Some((img.0, &written)),
            ..Scene::new(path, size, full_vs, size_fs, 3)
        };
        let px = fdm::render(&g, &s);
        let checked = fdm::check_sizes(&px, size, &written, texel).and_then(|(coarse, largest)| {
            // Exactly what the written map asks for, pixel by pixel.
            for y in 0..size.1 {
                for x in 0..size.0 {
                    let t = written.texels[((y / texel.1) * mw + x / texel.0) as usize];
                    let mut want = (fdm::requested(t[0]), fdm::requested(t[1]));
                    if square {
                        want = (want.0.min(want.1), want.0.min(want.1));
                    }
                    let p = px[(y * size.0 + x) as usize][0];
                    let got = ((p / 16) as u32, (p % 16) as u32);
                    if got != want {
                        return Err(format!("pixel ({x},{y}): FragSizeEXT {got:?}, the written map asks for {want:?}"));
                    }
                }
            }
            Ok((coarse, largest))
        });
        match checked {
            Ok((coarse, largest)) => {
                println!(
                    "fdm_dynamic path={path:?} coarse_pixels={coarse} largest_area={largest} follows_written_map=1"
                )
            }
            Err(e) => {
                println!("fdm_dynamic path={path:?} follows_written_map=0");
                result = Err(format!("{path:?}: {e}"));
            }
        }
    }
    // The clear: a pass that clears and draws nothing holds the clear colour
    // everywhere (each region is cleared at the area it chose, under its
    // predicate: the instances clear nothing themselves).
    if !app_conditional {
        for path in [Path::RenderPass, Path::RenderPass2, Path::Dynamic] {
            fdm::write_map(&g, img.0, &stale);
            let s = Scene {
                map_view: Some(view),
                map_write: Some((img.0, &written)),
                ..Scene::new(path, size, full_vs, size_fs, 0)
            };
            let px = fdm::render(&g, &s);
            match px.iter().position(|p| *p != [0, 0, 0, 255]) {
                None => println!("fdm_dynamic clear path={path:?} ok"),
                Some(k) => {
                    let (x, y) = (k as u32 % size.0, k as u32 / size.0);
                    result = Err(format!("{path:?} clear: pixel ({x},{y}) is {:?}, not the clear colour", px[k]));
                }
            }
        }
    }
    // The load: a pass that loads a uniform colour and draws nothing holds it
    // everywhere (what loads reaches every area: downscaled into the scratch
    // targets, loaded in place where a region renders into the attachment
    // itself).
    if !app_conditional {
        let colour = [40u8, 80, 120, 255];
        let loaded = vec![colour; (size.0 * size.1) as usize];
        for path in [Path::RenderPass, Path::RenderPass2, Path::Dynamic] {
            fdm::write_map(&g, img.0, &stale);
            let s = Scene {
                map_view: Some(view),
                map_write: Some((img.0, &written)),
                load: Some(&loaded),
                ..Scene::new(path, size, full_vs, size_fs, 0)
            };
            let px = fdm::render(&g, &s);
            match px.iter().position(|p| *p != colour) {
                None => println!("fdm_dynamic load path={path:?} ok"),
                Some(k) => {
                    let (x, y) = (k as u32 % size.0, k as u32 / size.0);
                    println!("fdm_dynamic load path={path:?} failed");
                    result = Err(format!("{path:?} load: pixel ({x},{y}) is {:?}, not the loaded colour", px[k]));
                }
            }
        }
    }
    // A depth attachment cleared to 1 under a depth test LESS (the region
    // clears' depth): every pixel is shaded, at the area the written map asks
    // for; a region whose depth was not cleared at its area draws nothing.
    // And a stencil cleared to fdm::STENCIL_CLEAR under a stencil test EQUAL to it.
    for (stencil, name) in [(false, "depth"), (true, "stencil")].into_iter().filter(|_| !app_conditional) {
        for path in [Path::RenderPass, Path::RenderPass2, Path::Dynamic] {
            fdm::write_map(&g, img.0, &stale);
            let s = Scene {
                map_view: Some(view),
                map_write: Some((img.0, &written)),
                depth: true,
                stencil,
                ..Scene::new(path, size, full_vs, size_fs, 3)
            };
            match fdm::check_sizes(&fdm::render(&g, &s), size, &written, texel) {
                Ok((coarse, _)) => println!("fdm_dynamic {name} path={path:?} coarse_pixels={coarse} ok"),
                Err(e) => {
                    println!("fdm_dynamic {name} path={path:?} failed");
                    result = result.and(Err(format!("{path:?} with a {name} attachment cleared: {e}")));
                }
            }
        }
    }
    // A size the areas do not divide, under a quad ending at the viewport's
    // edge: the regions that end the render area end on whole fragments
    // (every pixel covered; the matrix's `edges` family, planned on the GPU).
    {
        let quad_vs = &include_bytes!(concat!(env!("OUT_DIR"), "/quad.vert.spv"))[..];
        let size = (250, 190);
        let fours = Map { width: 8, height: 6, texels: vec![[60, 60]; 48] };
        let texel =
            (fdm::texel_size(size.0, 8, min.width, max.width), fdm::texel_size(size.1, 6, min.height, max.height));
        let img = fdm::map_image(&g, &fours);
        let view = fdm::map_view(&g, img.0, vk::ImageViewCreateFlags::FRAGMENT_DENSITY_MAP_DYNAMIC_EXT)?;
        for path in [Path::RenderPass, Path::RenderPass2, Path::Dynamic] {
            let s = Scene { map_view: Some(view), ..Scene::new(path, size, quad_vs, size_fs, 6) };
            match fdm::check_sizes(&fdm::render(&g, &s), size, &fours, texel) {
                Ok((coarse, _)) => println!("fdm_dynamic edges path={path:?} coarse_pixels={coarse}"),
                Err(e) => result = Err(format!("{path:?}, a quad ending at the viewport's edge: {e}")),
            }
        }
        unsafe { g.device.destroy_image_view(view, None) };
        g.destroy_image(img);
    }
    // The application's compute pipeline and set, bound before the pass and
    // dispatched after it without binding again, are still bound after the
    // GPU plan's own dispatch.
    fdm::write_map(&g, img.0, &stale);
    let s = Scene {
        map_view: Some(view),
        map_write: Some((img.0, &written)),
        compute_marker: true,
        ..Scene::new(Path::RenderPass, size, full_vs, size_fs, 3)
    };
    let marker = fdm::render_full(&g, &s).marker;
    println!("fdm_dynamic compute_marker={}", marker.unwrap_or(0));
    if marker != Some(42) {
        result = Err(format!(
            "the dispatch after the pass wrote {marker:?}, not 42: its compute pipeline or set was not left bound"
        ));
    }
    // The same with the written map as a static one, read on the host: where
    // the composite is a compute shader (`fdm_storage_composite`) it binds
    // the layer's pipeline too.
    let s =
        Scene { map: Some(&written), compute_marker: true, ..Scene::new(Path::RenderPass, size, full_vs, size_fs, 3) };
    let marker = fdm::render_full(&g, &s).marker;
    println!("fdm_dynamic static_compute_marker={}", marker.unwrap_or(0));
    if marker != Some(42) {
        result = Err(format!(
            "the dispatch after a static map's pass wrote {marker:?}, not 42: its compute pipeline or set was not left bound"
        ));
    }
    // The application's own conditional rendering around a pass: the layer
    // may not nest its scopes in it (the validation layer would report it),
    // so that pass renders at 1x1, and it obeys the application's predicate:
    // every pixel shaded 1x1 under a predicate of 1, none under 0 (only the
    // clear).
    if app_conditional {
        for value in [1u32, 0] {
            fdm::write_map(&g, img.0, &stale);
            let s = Scene {
                map_view: Some(view),
                map_write: Some((img.0, &written)),
                app_conditional: Some(value),
                ..Scene::new(Path::RenderPass, size, full_vs, size_fs, 3)
            };
            let px = fdm::render(&g, &s);
            let want = if value == 1 { 17 } else { 0 };
            let wrong = px.iter().filter(|p| p[0] != want).count();
            println!("fdm_dynamic app_predicate={value} wrong_pixels={wrong}");
            if wrong > 0 {
                result = Err(format!(
                    "inside the application's conditional rendering (predicate {value}) {wrong} pixels are not {want}"
                ));
            }
        }
    }
    unsafe { g.device.destroy_image_view(view, None) };
    g.destroy_image(img);
    result
}

/// `multiview-ladder RUNG [GEOMETRY]`: a plain two-view draw (no density
/// built-ins; each view its own colour) through render pass 2 with
/// `viewMask` 0b11, on a device with multiview: the rungs add one thing at a
/// time — the harness runs `plain` under the validation layer alone and
/// through Overlap with `fdm=off`; `fdm-device` enables the emulated FDM on
/// the device (no map in the pass); `fdm-map` adds a density map of 1s
/// (density 1: every fragment 1x1, so the views must look exactly as without
/// it). The first rung that fails locates the fault: driver, layer,
/// density-map device, binned pass. GEOMETRY `quad` (default) covers the
/// viewport with two triangles inside it; `clipped` with one triangle twice
/// the viewport's size, which the clipper splits: lavapipe 22.3 draws the
/// primitives it clips into view 0 only, with no layer loaded (its draw
/// module sets the view index when a clipped primitive run starts, and the
/// view loop never restarts the run); `mirrored` the CTS's mesh (a quad and
/// eight copies outside the viewport); `mirrored-multi` the same mesh as two
/// draws of one `vkCmdDrawMultiEXT` (27 vertices each: both hold clipped
/// primitives, the first the quad too). KIND: the command the draw goes
/// down as (`overlap_tests::draw_kind`; `mirrored-multi` is `mirrored multi`).
fn multiview_ladder(opts: &mut GpuOptions, rung: &str, geometry: &str, kind: &str) -> Result<(), String> {
    use overlap_tests::fdm::{self, DrawKind, Map, Multiview, Path};
    opts.fdm = rung != "plain";
    let kind: DrawKind = kind.parse()?;
    let multi_draw = geometry == "mirrored-multi";
    opts.multi_draw = multi_draw || kind.multi();
    let g = gpu(opts)?;
    if opts.fdm && !g.fdm {
        return Err("VK_EXT_fragment_density_map is not listed".into());
    }
    if opts.multi_draw && !g.multi_draw {
        return Err("VK_EXT_multi_draw is not listed".into());
    }
    let (vs, vertices) = match geometry {
        "clipped" => (&include_bytes!(concat!(env!("OUT_DIR"), "/fullscreen.vert.spv"))[..], 3),
        "mirrored" | "mirrored-multi" => (&include_bytes!(concat!(env!("OUT_DIR"), "/mirrored.vert.spv"))[..], 54),
        _ => (&include_bytes!(concat!(env!("OUT_DIR"), "/quad.vert.spv"))[..], 6),
    };
    let fs = &include_bytes!(concat!(env!("OUT_DIR"), "/multiview.frag.spv"))[..];
    let size: (u32, u32) = (64, 48);
    let ones = Map { width: 2, height: 2, texels: vec![[255, 255]; 4] };
    let mv = Multiview {
        with_map: rung == "fdm-map",
        multi_draw,
        draw_kind: kind,
        ..Multiview::new(Path::RenderPass2, size, vec![&ones, &ones], vs, fs, vertices)
    };
    let views = fdm::render_multiview(&g, &mv);
    // 0.25 and 0.75 of 255, rounded.
    for (view, (pixels, red)) in views.iter().zip([64u8, 191]).enumerate() {
        // Within 1 of the exact values (unorm rounding may differ by driver).
        let wrong = pixels.iter().filter(|p| p[0].abs_diff(red) > 1 || p[1].abs_diff(128) > 1).count();
        println!(
            "multiview_ladder rung={rung} geometry={geometry} view={view} wrong_pixels={wrong} first={:?} draw={kind}",
            pixels[0]
        );
        if wrong > 0 {
            return Err(format!("rung {rung} ({geometry}): view {view} has {wrong} pixels that are not its colour"));
        }
    }
    Ok(())
}

/// `local-read-multiview`: no density map. A multiview dynamic rendering
/// with 2, 4 and 6 views (as the device allows) writes colour attachment 0,
/// then copies it into attachment 1 through `VK_KHR_dynamic_rendering_local_read`
/// after a by-region barrier, without and with `VIEW_LOCAL`
/// (`overlap_tests::local_read`): the shape of the CTS's dynamic-rendering
/// `render_copy` density-map cases, for the driver alone.
fn local_read_multiview(opts: &mut GpuOptions) -> Result<(), String> {
    opts.local_read = true;
    let g = gpu(opts)?;
    let mut props = vk::PhysicalDeviceMultiviewProperties::default();
    let mut p2 = vk::PhysicalDeviceProperties2::default().push_next(&mut props);
    unsafe { g.instance.get_physical_device_properties2(g.pd, &mut p2) };
    let listed = unsafe { g.instance.enumerate_device_extension_properties(g.pd) }.unwrap_or_default();
    if !listed.iter().any(|e| e.extension_name_as_c_str() == Ok(ash::khr::dynamic_rendering_local_read::NAME)) {
        println!("local_read_multiview=unsupported: no VK_KHR_dynamic_rendering_local_read");
        return Ok(());
    }
    let mut failed = Vec::new();
    use overlap_tests::local_read::Shape;
    let shapes = [
        Shape::default(),
        Shape { view_local: true, ..Shape::default() },
        Shape { remap: true, ..Shape::default() },
        Shape { remap: true, cts_layers: true, ..Shape::default() },
        Shape { remap: true, cts_layers: true, view_local: true },
    ];
    for views in [2u32, 4, 5, 6].into_iter().filter(|v| *v <= props.max_multiview_view_count) {
        for shape in shapes {
            let wrong = overlap_tests::local_read::render(&g, views, shape);
            let Shape { view_local, remap, cts_layers } = shape;
            println!(
                "local_read_multiview views={views} view_local={view_local} remap={remap} cts_layers={cts_layers} wrong_pixels_per_view={wrong:?}"
            );
            if wrong.iter().any(|w| *w > 0) {
                failed.push(format!("{views} views ({shape:?})"));
            }
        }
    }
    if failed.is_empty() {
        Ok(())
    } else {
        Err(format!("views lost in: {}", failed.join(", ")))
    }
}

/// `fdm-unknown-structure after|before`: the density-map device with a
/// structure nobody knows chained into its create info (a newer extension's,
/// as the CTS chains). After the density-map features, the layer strips what
/// it must from the known part and links the rest as it is: the device is
/// created and a pass renders coarsely. Before them, the features cannot be
/// removed (the unknown structure cannot be copied): the create info goes
/// down unchanged, logged, and the driver refuses the extension it lacks.
fn fdm_unknown_structure(opts: &mut GpuOptions, after: bool) -> Result<(), String> {
    use overlap_tests::fdm::{self, Map, Path, Scene};
    opts.fdm = true;
    opts.unknown_structure = Some(after);
    let position = if after { "after" } else { "before" };
    let g = match gpu(opts) {
        Ok(g) => g,
        Err(e) => {
            println!("fdm_unknown_structure position={position} device=failed");
            return Err(e);
        }
    };
    if !g.fdm {
        return Err("VK_EXT_fragment_density_map is not listed".into());
    }
    let (min, max) = texel_limits(&g);
    let vs = &include_bytes!(concat!(env!("OUT_DIR"), "/fullscreen.vert.spv"))[..];
    let fs = &include_bytes!(concat!(env!("OUT_DIR"), "/fdm_size.frag.spv"))[..];
    let size = (256u32, 256u32);
    let map = Map { width: 8, height: 8, texels: fdm::regions(8, 8) };
    let texel = (fdm::texel_size(size.0, 8, min.width, max.width), fdm::texel_size(size.1, 8, min.height, max.height));
    let px = fdm::render(&g, &Scene { map: Some(&map), ..Scene::new(Path::RenderPass, size, vs, fs, 3) });
    let (coarse, _) = fdm::check_sizes(&px, size, &map, texel)?;
    println!("fdm_unknown_structure position={position} device=created coarse_pixels={coarse}");
    if coarse == 0 {
        return Err("nothing was shaded coarsely".into());
    }
    Ok(())
}

/// `leak`: a planted leak — a buffer and its memory never destroyed before
/// the device is. The control for the leak detector the suites rely on: the
/// validation layer sits below Overlap, so it sees the layer's own objects
/// as it sees these, and reports any left at vkDestroyDevice.
fn host_leak() -> Result<(), String> {
    for i in 0..16u8 {
        // The only pointer to each block is forgotten: definitely lost.
        std::mem::forget(std::hint::black_box(vec![i; 4096]));
    }
    println!("host_leak=16x4096");
    Ok(())
}

/// The stale-view scene (`overlap_tests::stale_view`, issue 36): `draws`
/// draws with a set whose unused binding names a destroyed view (written by
/// a descriptor update template with `template`). The device
/// enables interlock where listed, so that Overlap (on llvmpipe) runs on it.
fn stale_view(opts: &mut GpuOptions, draws: u32, template: bool) -> Result<(), String> {
    use overlap_tests::stale_view::{run, Update};
    opts.interlock = true;
    let g = gpu(opts)?;
    let update = if template { Update::Template } else { Update::Writes };
    let pixel = run(&g, draws, update)?;
    println!("stale_view draws={draws} update={update:?} interlock={} pixel={pixel:?}", g.interlock);
    // The fragment shader's colour, exact in R8G8B8A8_UNORM.
    if pixel != [51, 102, 153, 255] {
        return Err(format!("stale view: pixel {pixel:?}, not the shader's colour"));
    }
    Ok(())
}

fn leak(opts: &GpuOptions) -> Result<(), String> {
    let g = gpu(opts)?;
    unsafe {
        let b = g
            .device
            .create_buffer(&vk::BufferCreateInfo::default().size(256).usage(vk::BufferUsageFlags::TRANSFER_DST), None)
            .map_err(|e| format!("vkCreateBuffer: {e:?}"))?;
        println!("leaked_buffer=0x{:x}", vk::Handle::as_raw(b));
    }
    drop(g);
    Ok(())
}

/// A Vulkan 1.1 application (render pass 2, dynamic rendering and
/// synchronization 2 from their KHR extensions) renders density-map passes
/// through `vkCreateRenderPass2KHR`, `vkCmdBeginRenderPass2KHR`,
/// `vkCmdNextSubpass2KHR`, `vkCmdEndRenderPass2KHR`, `vkCmdBeginRenderingKHR`,
/// `vkCmdPipelineBarrier2KHR` and `vkQueueSubmit2KHR`: the layer must call the
/// driver by a name valid for a 1.1 device (the core names are NULL there).
fn fdm_khr(opts: &mut GpuOptions) -> Result<(), String> {
    use overlap_tests::fdm::{self, Map, Path, Scene};
    opts.fdm = true;
    opts.khr_1_1 = true;
    let g = gpu(opts)?;
    if !g.fdm || !g.dynamic_rendering {
        return Err(format!("needs VK_EXT_fragment_density_map and the KHR extensions (fdm={})", g.fdm));
    }
    // The control: the core names do not exist for this application.
    let core = [c"vkCreateRenderPass2", c"vkCmdBeginRendering", c"vkCmdPipelineBarrier2", c"vkQueueSubmit2"];
    for name in core {
        let f = unsafe { (g.instance.fp_v1_0().get_device_proc_addr)(g.device.handle(), name.as_ptr()) };
        if f.is_some() {
            return Err(format!("{name:?} resolves on a Vulkan 1.1 device: the test cannot tell the names apart"));
        }
    }
    println!("core_names_null=true");
    let (min, max) = texel_limits(&g);
    let full_vs = &include_bytes!(concat!(env!("OUT_DIR"), "/fullscreen.vert.spv"))[..];
    let size_fs = &include_bytes!(concat!(env!("OUT_DIR"), "/fdm_size.frag.spv"))[..];
    let input_fs = &include_bytes!(concat!(env!("OUT_DIR"), "/fdm_input.frag.spv"))[..];
    let size: (u32, u32) = (256, 256);
    let (mw, mh) = (size.0.div_ceil(32), size.1.div_ceil(32));
    let map = Map { width: mw, height: mh, texels: fdm::regions(mw, mh) };
    let texel =
        (fdm::texel_size(size.0, mw, min.width, max.width), fdm::texel_size(size.1, mh, min.height, max.height));
    for path in [Path::RenderPass2, Path::Dynamic] {
        for second_fs in [None, Some(input_fs)] {
            if second_fs.is_some() && path == Path::Dynamic {
                continue;
            }
            let s = Scene { map: Some(&map), second_fs, ..Scene::new(path, size, full_vs, size_fs, 3) };
            let px = fdm::render(&g, &s);
            if second_fs.is_some() {
                // The second subpass (reached by vkCmdNextSubpass2KHR) writes
                // its own fragment area in alpha: every pixel's area is one
                // the map allows there, and some are coarse.
                let mut coarse = 0;
                for (i, p) in px.iter().enumerate() {
                    let (x, y) = (i as u32 % size.0, i as u32 / size.0);
                    let t = map.texels[((y / texel.1).min(mh - 1) * mw + (x / texel.0).min(mw - 1)) as usize];
                    let (sx, sy) = ((p[3] / 16) as u32, (p[3] % 16) as u32);
                    if ![1, 2, 4].contains(&sx)
                        || ![1, 2, 4].contains(&sy)
                        || sx > fdm::requested(t[0])
                        || sy > fdm::requested(t[1])
                    {
                        return Err(format!("{path:?} second subpass: pixel ({x},{y}) has area ({sx},{sy})"));
                    }
                    coarse += (sx * sy > 1) as u32;
                }
                if coarse == 0 {
                    return Err(format!("{path:?} second subpass: nothing was shaded coarsely"));
                }
                println!("fdm_khr case={path:?} subpasses=2 coarse_pixels={coarse}");
                continue;
            }
            let (coarse, largest) = fdm::check_sizes(&px, size, &map, texel).map_err(|e| format!("{path:?}: {e}"))?;
            if coarse == 0 || largest < 4 {
                return Err(format!("{path:?}: nothing was shaded coarsely ({coarse} pixels, largest area {largest})"));
            }
            println!("fdm_khr case={path:?} coarse_pixels={coarse} largest_area={largest}");
        }
    }
    Ok(())
}

/// `fdm-destroyed-layout [before|in-pass|kept]`: two subpasses, the second
/// reading the first as an input attachment, with the descriptor set
/// layouts destroyed before recording, or the input set's inside the pass
/// after it was bound (the sets stay valid, but can no longer be copied from,
/// so the layer cannot shadow the input set: the pass renders at 1x1), or
/// kept (the layer shadows the set). Prints whether the render is the one
/// without a density map (what a 1x1 pass must give).
fn fdm_destroyed_layout(opts: &mut GpuOptions, when: &str) -> Result<(), String> {
    use overlap_tests::fdm::{self, Map, Path, Scene};
    opts.fdm = true;
    let g = gpu(opts)?;
    let scene_vs = &include_bytes!(concat!(env!("OUT_DIR"), "/scene.vert.spv"))[..];
    let scene_fs = &include_bytes!(concat!(env!("OUT_DIR"), "/fdm_scene.frag.spv"))[..];
    let input_fs = &include_bytes!(concat!(env!("OUT_DIR"), "/fdm_input.frag.spv"))[..];
    let size: (u32, u32) = (256, 256);
    let (mw, mh) = (size.0.div_ceil(32u32), size.1.div_ceil(32u32));
    let map = Map { width: mw, height: mh, texels: fdm::regions(mw, mh) };
    for path in [Path::RenderPass, Path::RenderPass2] {
        let s = Scene {
            map: Some(&map),
            second_fs: Some(input_fs),
            destroy_set_layouts: when == "before",
            destroy_set_layouts_in_pass: when == "in-pass",
            ..Scene::new(path, size, scene_vs, scene_fs, 9)
        };
        let px = fdm::render(&g, &s);
        let coarse_inputs = px.iter().filter(|p| p[3] != 17 && p[3] != 255).count();
        let without_map = fdm::render(&g, &Scene { map: None, ..s });
        println!(
            "fdm_destroyed_layout path={path:?} coarse_inputs={coarse_inputs} identical_to_no_map={}",
            px == without_map
        );
    }
    Ok(())
}

/// `fdm-device-lost`: one density-map render pass (no draws: the layer reads
/// the map at its begin), then the results of vkEndCommandBuffer,
/// vkQueueSubmit, vkWaitForFences, vkGetFenceStatus and vkDeviceWaitIdle, as
/// `NAME=RESULT` lines; every object is destroyed afterwards (a loss the
/// layer reports must leave nothing pending it did not wait for).
fn fdm_device_lost(opts: &mut GpuOptions) -> Result<(), String> {
    use overlap_tests::fdm::{self, Map};
    opts.fdm = true;
    let g = gpu(opts)?;
    let d = &g.device;
    let size = (64u32, 64u32);
    let map = Map { width: 8, height: 8, texels: vec![[60, 60]; 64] };
    let map_img = fdm::map_image(&g, &map);
    let target = g.image_2d(
        vk::Format::R8G8B8A8_UNORM,
        size,
        vk::SampleCountFlags::TYPE_1,
        vk::ImageUsageFlags::COLOR_ATTACHMENT,
    );
    let name = |r: vk::Result| format!("{r:?}");
    let result = |r: Result<(), vk::Result>| r.err().map_or("SUCCESS".to_string(), name);
    unsafe {
        let render_pass = fdm_render_pass(&g, vk::ImageLayout::COLOR_ATTACHMENT_OPTIMAL)?;
        let framebuffer = g.framebuffer(render_pass, &[target.2, map_img.2], size);
        let pool = d
            .create_command_pool(&vk::CommandPoolCreateInfo::default().queue_family_index(g.queue_family), None)
            .map_err(|e| format!("vkCreateCommandPool: {e:?}"))?;
        let cb = d
            .allocate_command_buffers(
                &vk::CommandBufferAllocateInfo::default().command_pool(pool).command_buffer_count(1),
            )
            .map_err(|e| format!("vkAllocateCommandBuffers: {e:?}"))?[0];
        d.begin_command_buffer(cb, &vk::CommandBufferBeginInfo::default()).map_err(|e| format!("{e:?}"))?;
        let clears = [vk::ClearValue { color: vk::ClearColorValue { float32: [0.0; 4] } }, vk::ClearValue::default()];
        d.cmd_begin_render_pass(
            cb,
            &vk::RenderPassBeginInfo::default()
                .render_pass(render_pass)
                .framebuffer(framebuffer)
                .render_area(vk::Rect2D {
                    offset: vk::Offset2D::default(),
                    extent: vk::Extent2D { width: size.0, height: size.1 },
                })
                .clear_values(&clears),
            vk::SubpassContents::INLINE,
        );
        d.cmd_end_render_pass(cb);
        println!("end_command_buffer={}", result(d.end_command_buffer(cb)));
        let fence = d.create_fence(&vk::FenceCreateInfo::default(), None).map_err(|e| format!("{e:?}"))?;
        let cbs = [cb];
        println!(
            "queue_submit={}",
            result(d.queue_submit(g.queue, &[vk::SubmitInfo::default().command_buffers(&cbs)], fence))
        );
        // A finite timeout: a layer that hid the loss would leave this fence unsignaled only if it did not submit.
        println!("wait_for_fences={}", result(d.wait_for_fences(&[fence], true, 10_000_000_000)));
        println!(
            "get_fence_status={}",
            d.get_fence_status(fence).map_or_else(name, |s| format!("SUCCESS signaled={s}"))
        );
        println!("device_wait_idle={}", result(d.device_wait_idle()));
        d.destroy_fence(fence, None);
        d.destroy_command_pool(pool, None);
        d.destroy_framebuffer(framebuffer, None);
        d.destroy_render_pass(render_pass, None);
    }
    g.destroy_image(target);
    g.destroy_image(map_img);
    Ok(())
}

/// A render pass of one RGBA8 colour attachment (cleared, stored, ending in
/// `final_layout`) and a density map (attachment 1).
fn fdm_render_pass(g: &Gpu, final_layout: vk::ImageLayout) -> Result<vk::RenderPass, String> {
    let fdm_layout = vk::ImageLayout::FRAGMENT_DENSITY_MAP_OPTIMAL_EXT;
    let attachments = [
        vk::AttachmentDescription::default()
            .format(vk::Format::R8G8B8A8_UNORM)
            .samples(vk::SampleCountFlags::TYPE_1)
            .load_op(vk::AttachmentLoadOp::CLEAR)
            .store_op(vk::AttachmentStoreOp::STORE)
            .initial_layout(vk::ImageLayout::UNDEFINED)
            .final_layout(final_layout),
        overlap_tests::fdm::map_attachment(fdm_layout),
    ];
    let colour = [vk::AttachmentReference { attachment: 0, layout: vk::ImageLayout::COLOR_ATTACHMENT_OPTIMAL }];
    let subpass = [vk::SubpassDescription::default().color_attachments(&colour)];
    let mut density = vk::RenderPassFragmentDensityMapCreateInfoEXT::default()
        .fragment_density_map_attachment(vk::AttachmentReference { attachment: 1, layout: fdm_layout });
    let info =
        vk::RenderPassCreateInfo::default().attachments(&attachments).subpasses(&subpass).push_next(&mut density);
    unsafe { g.device.create_render_pass(&info, None) }.map_err(|e| format!("vkCreateRenderPass: {e:?}"))
}

/// `stress THREADS ITERATIONS`: every capability at once. Each thread makes
/// its own pipelines — one whose fragment shader reads the fragment area
/// through varyings the linker removes, propagates and merges
/// (`fdm_linked`), one that counts draws per pixel in an interlock critical
/// section (`fdm_interlock`) — then, ITERATIONS times, records one command
/// buffer with a binned density-map pass of the first and a density-map
/// pass of the second (which stores, so it renders at 1x1), submits it (the
/// queue shared under a lock: lavapipe offers one queue) and checks both:
/// the areas and fragment ids of the first (fdm::check_sizes, some coarse),
/// and every pixel's count of the second.
fn stress(opts: &mut GpuOptions, threads: u32, iterations: u32) -> Result<(), String> {
    use overlap_tests::fdm::{self, Map};
    opts.fdm = true;
    opts.interlock = true;
    let g = gpu(opts)?;
    if !g.fdm || !g.interlock {
        return Err(format!("needs fragment density maps and interlock (fdm={} interlock={})", g.fdm, g.interlock));
    }
    let families = unsafe { g.instance.get_physical_device_queue_family_properties(g.pd) };
    println!(
        "stress queue_families={} queues_in_family={} queues_used=1",
        families.len(),
        families[g.queue_family as usize].queue_count
    );
    let (min, max) = texel_limits(&g);
    let size = (256u32, 256u32);
    let (mw, mh) = (size.0.div_ceil(32), size.1.div_ceil(32));
    let map = Map { width: mw, height: mh, texels: fdm::regions(mw, mh) };
    let texel =
        (fdm::texel_size(size.0, mw, min.width, max.width), fdm::texel_size(size.1, mh, min.height, max.height));
    let map_img = fdm::map_image(&g, &map);
    let render_pass = fdm_render_pass(&g, vk::ImageLayout::TRANSFER_SRC_OPTIMAL)?;
    let queue = std::sync::Mutex::new(());
    let draws = 4u32;
    let linked_vs = &include_bytes!(concat!(env!("OUT_DIR"), "/fdm_linked.vert.spv"))[..];
    let linked_fs = &include_bytes!(concat!(env!("OUT_DIR"), "/fdm_linked.frag.spv"))[..];
    let full_vs = &include_bytes!(concat!(env!("OUT_DIR"), "/fullscreen.vert.spv"))[..];
    let interlock_fs = &include_bytes!(concat!(env!("OUT_DIR"), "/fdm_interlock.frag.spv"))[..];
    let d = &g.device;
    let thread = |t: u32| -> Result<u64, String> {
        let usage = vk::ImageUsageFlags::COLOR_ATTACHMENT | vk::ImageUsageFlags::TRANSFER_SRC;
        let target = g.image_2d(vk::Format::R8G8B8A8_UNORM, size, vk::SampleCountFlags::TYPE_1, usage);
        let counts_usage =
            vk::ImageUsageFlags::STORAGE | vk::ImageUsageFlags::TRANSFER_SRC | vk::ImageUsageFlags::TRANSFER_DST;
        let counts = g.image_2d(vk::Format::R32_UINT, size, vk::SampleCountFlags::TYPE_1, counts_usage);
        let framebuffer = g.framebuffer(render_pass, &[target.2, map_img.2], size);
        let binding = [vk::DescriptorSetLayoutBinding::default()
            .binding(0)
            .descriptor_type(vk::DescriptorType::STORAGE_IMAGE)
            .descriptor_count(1)
            .stage_flags(vk::ShaderStageFlags::FRAGMENT)];
        let (set_layout, set_pool, set) = g.descriptor_set(&binding);
        let image_info = [vk::DescriptorImageInfo {
            sampler: vk::Sampler::null(),
            image_view: counts.2,
            image_layout: vk::ImageLayout::GENERAL,
        }];
        let linked = fdm::density_map_pipeline(&g, render_pass, linked_vs, linked_fs, None, size);
        let locked = fdm::density_map_pipeline(&g, render_pass, full_vs, interlock_fs, Some(set_layout), size);
        let colour_out = g.buffer((size.0 * size.1 * 4) as u64, vk::BufferUsageFlags::TRANSFER_DST, true);
        let counts_out = g.buffer((size.0 * size.1 * 4) as u64, vk::BufferUsageFlags::TRANSFER_DST, true);
        let mut coarse_total = 0;
        let result = unsafe {
            d.update_descriptor_sets(
                &[vk::WriteDescriptorSet::default()
                    .dst_set(set)
                    .dst_binding(0)
                    .descriptor_type(vk::DescriptorType::STORAGE_IMAGE)
                    .image_info(&image_info)],
                &[],
            );
            let pool = d
                .create_command_pool(&vk::CommandPoolCreateInfo::default().queue_family_index(g.queue_family), None)
                .map_err(|e| format!("{e:?}"))?;
            let cb = d
                .allocate_command_buffers(
                    &vk::CommandBufferAllocateInfo::default().command_pool(pool).command_buffer_count(1),
                )
                .map_err(|e| format!("{e:?}"))?[0];
            let area =
                vk::Rect2D { offset: vk::Offset2D::default(), extent: vk::Extent2D { width: size.0, height: size.1 } };
            let clears = [
                vk::ClearValue { color: vk::ClearColorValue { float32: [0.0, 0.0, 0.0, 1.0] } },
                vk::ClearValue::default(),
            ];
            let begin = vk::RenderPassBeginInfo::default()
                .render_pass(render_pass)
                .framebuffer(framebuffer)
                .render_area(area)
                .clear_values(&clears);
            let transfer =
                (vk::PipelineStageFlags::TRANSFER, vk::AccessFlags::TRANSFER_WRITE | vk::AccessFlags::TRANSFER_READ);
            let shader =
                (vk::PipelineStageFlags::FRAGMENT_SHADER, vk::AccessFlags::SHADER_READ | vk::AccessFlags::SHADER_WRITE);
            let attachment = (vk::PipelineStageFlags::COLOR_ATTACHMENT_OUTPUT, vk::AccessFlags::COLOR_ATTACHMENT_WRITE);
            let mut result = Ok(());
            for i in 0..iterations {
                d.reset_command_pool(pool, vk::CommandPoolResetFlags::empty()).map_err(|e| format!("{e:?}"))?;
                d.begin_command_buffer(cb, &vk::CommandBufferBeginInfo::default()).map_err(|e| format!("{e:?}"))?;
                let range = render::color_range();
                g.image_barrier(
                    cb,
                    counts.0,
                    range,
                    (vk::ImageLayout::UNDEFINED, vk::ImageLayout::GENERAL),
                    shader,
                    transfer,
                );
                d.cmd_clear_color_image(
                    cb,
                    counts.0,
                    vk::ImageLayout::GENERAL,
                    &vk::ClearColorValue { uint32: [0; 4] },
                    &[range],
                );
                g.memory_barrier(cb, transfer, shader);
                // The linked pipeline, binned.
                d.cmd_begin_render_pass(cb, &begin, vk::SubpassContents::INLINE);
                d.cmd_bind_pipeline(cb, vk::PipelineBindPoint::GRAPHICS, linked.0);
                d.cmd_draw(cb, 3, 1, 0, 0);
                d.cmd_end_render_pass(cb);
                g.memory_barrier(cb, attachment, transfer);
                g.copy_image_to_buffer(cb, target.0, vk::ImageLayout::TRANSFER_SRC_OPTIMAL, size, 1, colour_out.buffer);
                g.memory_barrier(cb, transfer, attachment);
                // The interlock pipeline: DRAWS full-screen triangles, each adding its fragment area per pixel.
                d.cmd_begin_render_pass(cb, &begin, vk::SubpassContents::INLINE);
                d.cmd_bind_pipeline(cb, vk::PipelineBindPoint::GRAPHICS, locked.0);
                d.cmd_bind_descriptor_sets(cb, vk::PipelineBindPoint::GRAPHICS, locked.1, 0, &[set], &[]);
                for _ in 0..draws {
                    d.cmd_draw(cb, 3, 1, 0, 0);
                }
                d.cmd_end_render_pass(cb);
                g.memory_barrier(cb, shader, transfer);
                g.copy_image_to_buffer(cb, counts.0, vk::ImageLayout::GENERAL, size, 1, counts_out.buffer);
                g.memory_barrier(cb, transfer, (vk::PipelineStageFlags::HOST, vk::AccessFlags::HOST_READ));
                d.end_command_buffer(cb).map_err(|e| format!("{e:?}"))?;
                let fence = d.create_fence(&vk::FenceCreateInfo::default(), None).map_err(|e| format!("{e:?}"))?;
                {
                    let _q = queue.lock().unwrap();
                    let cbs = [cb];
                    d.queue_submit(g.queue, &[vk::SubmitInfo::default().command_buffers(&cbs)], fence)
                        .map_err(|e| format!("vkQueueSubmit: {e:?}"))?;
                }
                d.wait_for_fences(&[fence], true, u64::MAX).map_err(|e| format!("vkWaitForFences: {e:?}"))?;
                d.destroy_fence(fence, None);
                let px = std::slice::from_raw_parts(colour_out.map as *const [u8; 4], (size.0 * size.1) as usize);
                let n = std::slice::from_raw_parts(counts_out.map as *const u32, (size.0 * size.1) as usize);
                let checked = fdm::check_sizes(px, size, &map, texel).and_then(|(coarse, largest)| {
                    if coarse == 0 || largest < 4 {
                        return Err(format!("nothing was shaded coarsely ({coarse} pixels, largest area {largest})"));
                    }
                    match n.iter().position(|&c| c != draws) {
                        Some(p) => Err(format!("interlock: pixel {p} counted {} of {draws} draws", n[p])),
                        None => Ok(coarse),
                    }
                });
                match checked {
                    Ok(c) => coarse_total += c,
                    Err(e) => {
                        result = Err(format!("thread {t} iteration {i}: {e}"));
                        break;
                    }
                }
            }
            d.destroy_command_pool(pool, None);
            for (p, l) in [linked, locked] {
                d.destroy_pipeline(p, None);
                d.destroy_pipeline_layout(l, None);
            }
            d.destroy_descriptor_pool(set_pool, None);
            d.destroy_descriptor_set_layout(set_layout, None);
            d.destroy_framebuffer(framebuffer, None);
            result
        };
        g.destroy_buffer(colour_out);
        g.destroy_buffer(counts_out);
        g.destroy_image(counts);
        g.destroy_image(target);
        result.map(|()| coarse_total)
    };
    let results: Vec<Result<u64, String>> = std::thread::scope(|s| {
        let hs: Vec<_> = (0..threads).map(|t| s.spawn(move || thread(t))).collect();
        hs.into_iter().map(|h| h.join().unwrap_or_else(|_| Err("a thread panicked".into()))).collect()
    });
    unsafe { d.destroy_render_pass(render_pass, None) };
    g.destroy_image(map_img);
    let mut coarse = Vec::new();
    for r in results {
        coarse.push(r?);
    }
    // The same passes everywhere: the same coarse pixels on every thread.
    if coarse.windows(2).any(|w| w[0] != w[1]) {
        return Err(format!("threads shaded different coarse pixel counts: {coarse:?}"));
    }
    println!(
        "stress threads={threads} iterations={iterations} coarse_pixels_per_thread={} interlock_draws={draws}",
        coarse[0]
    );
    Ok(())
}

/// One colour target kept across renders, its density map's view and image
/// recreated (and each render's render pass its own): a binned pass, then the
/// same pass with a new map, then through render pass 2. Every render is
/// binned and right; nothing of the layer's may name the destroyed map view
/// or render pass (the validation layer below says so).
fn fdm_recreated_map(opts: &mut GpuOptions) -> Result<(), String> {
    use overlap_tests::fdm::{self, Map, Path, Scene};
    opts.fdm = true;
    let g = gpu(opts)?;
    let (min, max) = texel_limits(&g);
    let full_vs = &include_bytes!(concat!(env!("OUT_DIR"), "/fullscreen.vert.spv"))[..];
    let size_fs = &include_bytes!(concat!(env!("OUT_DIR"), "/fdm_size.frag.spv"))[..];
    let size: (u32, u32) = (256, 256);
    let (mw, mh) = (size.0.div_ceil(32), size.1.div_ceil(32));
    let map = Map { width: mw, height: mh, texels: fdm::regions(mw, mh) };
    let texel = (
        fdm::texel_size(size.0, map.width, min.width, max.width),
        fdm::texel_size(size.1, map.height, min.height, max.height),
    );
    let usage =
        vk::ImageUsageFlags::COLOR_ATTACHMENT | vk::ImageUsageFlags::TRANSFER_SRC | vk::ImageUsageFlags::TRANSFER_DST;
    let target = g.image_2d(vk::Format::R8G8B8A8_UNORM, size, vk::SampleCountFlags::TYPE_1, usage);
    let render = |path, view| -> Result<u64, String> {
        let s = Scene {
            map: Some(&map),
            map_view: Some(view),
            target: Some(target),
            ..Scene::new(path, size, full_vs, size_fs, 3)
        };
        let (coarse, _) = fdm::check_sizes(&fdm::render(&g, &s), size, &map, texel)?;
        if coarse == 0 {
            return Err(format!("{path:?}: nothing was shaded coarsely"));
        }
        Ok(coarse)
    };
    let first_map = fdm::map_image(&g, &map);
    let first = render(Path::RenderPass, first_map.2)?;
    // The new map is made before the old one goes, so that its view cannot
    // reuse the old handle.
    let second_map = fdm::map_image(&g, &map);
    g.destroy_image(first_map);
    let second = render(Path::RenderPass, second_map.2)?;
    let third = render(Path::RenderPass2, second_map.2)?;
    g.destroy_image(second_map);
    g.destroy_image(target);
    println!("fdm_recreated_map coarse_pixels={first}/{second}/{third}");
    if first != second || second != third {
        return Err(format!("the renders differ: {first}/{second}/{third} coarse pixels"));
    }
    Ok(())
}

fn fdm_matrix(opts: &mut GpuOptions, variant: Option<&str>) -> Result<(), String> {
    use overlap_tests::fdm::{self, Map, Path, Scene};
    let g = fdm_gpu(opts)?;
    let (min, max) = texel_limits(&g);
    println!("texel_size_min={}x{} max={}x{}", min.width, min.height, max.width, max.height);
    let fmt = unsafe { g.instance.get_physical_device_format_properties(g.pd, vk::Format::R8G8_UNORM) };
    if !fmt.optimal_tiling_features.contains(vk::FormatFeatureFlags::FRAGMENT_DENSITY_MAP_EXT) {
        return Err("R8G8_UNORM lacks FRAGMENT_DENSITY_MAP".into());
    }
    let texel_of = |size: (u32, u32), map: &Map| {
        (
            fdm::texel_size(size.0, map.width, min.width, max.width),
            fdm::texel_size(size.1, map.height, min.height, max.height),
        )
    };
    let full_vs = &include_bytes!(concat!(env!("OUT_DIR"), "/fullscreen.vert.spv"))[..];
    let quad_vs = &include_bytes!(concat!(env!("OUT_DIR"), "/quad.vert.spv"))[..];
    let scene_vs = &include_bytes!(concat!(env!("OUT_DIR"), "/scene.vert.spv"))[..];
    let depth_vs = &include_bytes!(concat!(env!("OUT_DIR"), "/fdm_depth.vert.spv"))[..];
    let size_fs = &include_bytes!(concat!(env!("OUT_DIR"), "/fdm_size.frag.spv"))[..];
    let scene_fs = &include_bytes!(concat!(env!("OUT_DIR"), "/fdm_scene.frag.spv"))[..];
    let storage_fs = &include_bytes!(concat!(env!("OUT_DIR"), "/fdm_storage.frag.spv"))[..];
    let input_fs = &include_bytes!(concat!(env!("OUT_DIR"), "/fdm_input.frag.spv"))[..];
    let regions = |size: (u32, u32)| {
        let (mw, mh) = (size.0.div_ceil(32), size.1.div_ceil(32));
        Map { width: mw, height: mh, texels: fdm::regions(mw, mh) }
    };
    // Compares `scene` (with `map`) against itself rendered without a map at
    // each area's resolution.
    let against_references = |scene: &Scene, map: &Map| -> Result<u64, String> {
        let size = scene.size;
        let px = fdm::render(&g, &Scene { map: Some(map), ..*scene });
        fdm::check_against_references(&px, size, |area| {
            let low = (size.0.div_ceil(area.0), size.1.div_ceil(area.1));
            let viewport = (size.0 as f32 / area.0 as f32, size.1 as f32 / area.1 as f32);
            (fdm::render(&g, &Scene { size: low, viewport, map: None, ..*scene }), low.0)
        })
    };
    let sizes: &[(u32, u32)] = if variant == Some("quick") { &[(256, 256)] } else { &[(256, 256), (250, 190)] };
    if variant == Some("multiview") {
        drop(g);
        return fdm_multiview(opts, false, false, Default::default());
    }
    // Every check family runs to the end: a failure is printed as
    // `fdm FAILED family=F: …` and the matrix goes on, so a deliberately wrong
    // replay (`debug_fdm_misreplay`) shows which families catch it.
    let failures = std::cell::RefCell::new(Vec::<String>::new());
    let fail = |family: &str, e: String| {
        println!("fdm FAILED family={family}: {e}");
        failures.borrow_mut().push(family.to_string());
    };
    let family = |name: &str, r: Result<(), String>| {
        if let Err(e) = r {
            fail(name, e);
        }
    };
    // Planted faults (`OVERLAP_TEST_PLANT=family,…`): the scene a family
    // records made wrong in the way the check exists to catch, so that each
    // check is seen firing in a real run (docs/TESTING.md):
    // - density_one: the map of 1s asks for 2x2 everywhere (one texel is not
    //   enough: the planner may render a small 2x2 region at 1x1, which the
    //   spec allows, rather than pay for a second replay);
    // - state_after_pass: a replay's pipeline (viewport at half size) is
    //   bound between the passes, as a layer leaving it bound would;
    // - load_clear: the clear half's pass loads instead (the contents survive);
    // - map_rewrite: the rewrite writes the old map again, not the map of 1s;
    // - storage_fallback: the pass's shader lacks its storage write (the set
    //   still bound), so nothing forces the 1x1 fallback;
    // - query_fallback: the pass records no query, likewise.
    let plants = std::env::var("OVERLAP_TEST_PLANT").unwrap_or_default();
    let planted = |name: &str| plants.split(',').any(|p| p.trim() == name);
    for p in plants.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        println!("fdm plant={p}");
    }
    for &path in &fdm::PATHS {
        for samples in [1u32, 4] {
            for &size in sizes {
                let map = regions(size);
                let case = format!("{path:?} {samples}x {size:?}");
                let s = Scene { samples, map: Some(&map), ..Scene::new(path, size, full_vs, size_fs, 3) };
                let px = fdm::render(&g, &s);
                let (coarse, largest) = fdm::check_sizes(&px, size, &map, texel_of(size, &map)).unwrap_or_else(|e| {
                    fail("sizes", format!("{case}: {e}"));
                    (0, 0)
                });
                if coarse == 0 || largest < 4 {
                    fail(
                        "sizes",
                        format!("{case}: nothing was shaded coarsely ({coarse} pixels, largest area {largest})"),
                    );
                }
                // A quad that ends exactly at the viewport's edge (the CTS's mesh): at a size the areas do not
                // divide, the fragments at the far edges must still cover every pixel up to it.
                // (With the regions map and with one asking 4x4 everywhere.)
                if size.0 % 4 != 0 || size.1 % 4 != 0 {
                    let fours = Map { width: map.width, height: map.height, texels: vec![[60, 60]; map.texels.len()] };
                    for m in [&map, &fours] {
                        let s = Scene { samples, map: Some(m), ..Scene::new(path, size, quad_vs, size_fs, 6) };
                        if let Err(e) = fdm::check_sizes(&fdm::render(&g, &s), size, m, texel_of(size, m)) {
                            fail("edges", format!("{case}, a quad ending at the viewport's edge: {e}"));
                        }
                    }
                }
                let reference = |s: &Scene, what: &str| {
                    against_references(s, &map).unwrap_or_else(|e| {
                        fail("references", format!("{case} ({what}): {e}"));
                        0
                    })
                };
                let compared = reference(&Scene { samples, ..Scene::new(path, size, scene_vs, scene_fs, 9) }, "scene");
                let s = Scene { samples, depth: true, ..Scene::new(path, size, depth_vs, scene_fs, 6) };
                let mut depth = reference(&s, "depth");
                // The compare op changes between the two draws, inside the pass.
                depth += reference(&Scene { compare_ops: true, ..s }, "compare ops");
                println!(
                    "fdm case={path:?} samples={samples} size={}x{} coarse_pixels={coarse} largest_area={largest} reference_pixels={compared} depth_pixels={depth}",
                    size.0, size.1
                );
            }
        }
    }
    // Fragment-shader invocations as the driver counts them (a pipeline
    // statistics query around the pass, which the layer lets stay active
    // across a binned pass) — a count the layer does not make. Under a map
    // asking 2x2 everywhere and one asking 4x4, the counts differ by the
    // fragments a quarter and a sixteenth of the pixels make (lavapipe also
    // counts the fragments of its blits, the same in both: the difference
    // cancels them).
    for &path in &fdm::PATHS {
        let size = (256, 256);
        let uniform = |d: u8| Map { width: 8, height: 8, texels: vec![[d, d]; 64] };
        let (two, four) = (uniform(127), uniform(60));
        let s = Scene { stats: true, ..Scene::new(path, size, full_vs, size_fs, 3) };
        let at2 = fdm::render_full(&g, &Scene { map: Some(&two), ..s }).fs_invocations;
        let at4 = fdm::render_full(&g, &Scene { map: Some(&four), ..s }).fs_invocations;
        let pixels = (size.0 * size.1) as u64;
        let want = pixels / 4 - pixels / 16;
        match (at2, at4) {
            (Some(at2), Some(at4)) if at2 > at4 && (at2 - at4).abs_diff(want) * 10 <= want => {
                println!("fdm fs_invocations={path:?} at_2x2={at2} at_4x4={at4}")
            }
            (at2, at4) => fail(
                "fs_invocations",
                format!("{path:?}: {at2:?} fragment-shader invocations at 2x2, {at4:?} at 4x4 (want {want} fewer at 4x4, within 10%)"),
            ),
        }
    }
    // Density 1 everywhere is the scene without a density map, bit for bit,
    // for colour- and FragCoord-dependent shading.
    family(
        "density_one",
        (|| -> Result<(), String> {
            let size = (128, 96);
            let mut ones = Map { width: 4, height: 3, texels: vec![[255, 255]; 12] };
            if planted("density_one") {
                ones.texels = vec![[127, 127]; 12];
            }
            for &path in &fdm::PATHS {
                for (vs, fs, n) in [(scene_vs, scene_fs, 9), (full_vs, size_fs, 3)] {
                    let s = Scene::new(path, size, vs, fs, n);
                    if fdm::render(&g, &Scene { map: Some(&ones), ..s }) != fdm::render(&g, &s) {
                        return Err(format!("{path:?}: density 1 everywhere differs from no density map"));
                    }
                }
                println!("fdm density_one={path:?} identical");
            }
            Ok(())
        })(),
    );
    // State after a binned pass: the application's pipeline (not a replay's
    // per-area variant) and its viewport stay bound, so a second pass that
    // draws without binding again renders what the first did.
    family(
        "state_after_pass",
        (|| -> Result<(), String> {
            let size = (256, 256);
            let map = regions(size);
            for &path in &fdm::PATHS {
                let s = Scene { map: Some(&map), ..Scene::new(path, size, full_vs, size_fs, 3) };
                let once = fdm::render(&g, &s);
                let plant_replay_state = planted("state_after_pass");
                let unbound = fdm::render(&g, &Scene { repeat: 2, bind_once: true, plant_replay_state, ..s });
                let differ = once.iter().zip(&unbound).filter(|(a, b)| a != b).count();
                if differ != 0 {
                    return Err(format!(
                        "{path:?}: a second pass drawing with the pipeline bound before it differs in {differ} pixels"
                    ));
                }
                println!("fdm state_after_pass={path:?} identical");
            }
            Ok(())
        })(),
    );
    // Imageless framebuffers: the attachments' usage as the application
    // declared it matches the images (the layer adds transfer usage to both).
    family(
        "imageless",
        (|| -> Result<(), String> {
            for path in [Path::RenderPass, Path::RenderPass2] {
                let size = (256, 256);
                let map = regions(size);
                let s = Scene { map: Some(&map), imageless: true, ..Scene::new(path, size, full_vs, size_fs, 3) };
                let (coarse, _) = fdm::check_sizes(&fdm::render(&g, &s), size, &map, texel_of(size, &map))
                    .map_err(|e| format!("{path:?} imageless: {e}"))?;
                if coarse == 0 {
                    return Err(format!("{path:?} imageless: nothing was shaded coarsely"));
                }
                println!("fdm imageless={path:?} coarse_pixels={coarse}");
            }
            Ok(())
        })(),
    );
    // Load: contents survive at the fragment's resolution (each area-sized
    // block takes the pixel the downscale samples); clear: the clear colour.
    family(
        "load_clear",
        (|| -> Result<(), String> {
            for &path in &fdm::PATHS {
                let size = (250, 190);
                let coarse = Map { width: 8, height: 6, texels: vec![[60, 60]; 48] };
                let original: Vec<[u8; 4]> = (0..size.1)
                    .flat_map(|y| (0..size.0).map(move |x| [x as u8, y as u8, ((x >> 8) | (y >> 8) << 4) as u8, 255]))
                    .collect();
                let s =
                    Scene { map: Some(&coarse), load: Some(&original), ..Scene::new(path, size, full_vs, size_fs, 0) };
                let px = fdm::render(&g, &s);
                for by in (0..size.1).step_by(4) {
                    for bx in (0..size.0).step_by(4) {
                        let (bw, bh) = ((size.0 - bx).min(4), (size.1 - by).min(4));
                        let block: Vec<(u32, u32)> =
                            (by..by + bh).flat_map(|y| (bx..bx + bw).map(move |x| (x, y))).collect();
                        let v = px[(by * size.0 + bx) as usize];
                        let loaded_here =
                            |v: [u8; 4]| block.iter().any(|(x, y)| original[(y * size.0 + x) as usize] == v);
                        // One fragment: one value, loaded from one of its pixels. A block the framebuffer cuts may
                        // be shaded at smaller areas (whole fragments at the edge): each pixel's value then comes
                        // from its block.
                        let wrong = if bw == 4 && bh == 4 {
                            block.iter().any(|(x, y)| px[(y * size.0 + x) as usize] != v) || !loaded_here(v)
                        } else {
                            block.iter().any(|(x, y)| !loaded_here(px[(y * size.0 + x) as usize]))
                        };
                        if wrong {
                            let found: Vec<[u8; 4]> =
                                block.iter().map(|(x, y)| px[(y * size.0 + x) as usize]).collect();
                            return Err(format!(
                                "{path:?} load: the 4x4 fragment at ({bx},{by}) is not one of its loaded pixels: {found:?}"
                            ));
                        }
                    }
                }
                let load = planted("load_clear").then_some(&original[..]);
                let px =
                    fdm::render(&g, &Scene { map: Some(&coarse), load, ..Scene::new(path, size, full_vs, size_fs, 0) });
                if px.iter().any(|p| *p != [0, 0, 0, 255]) {
                    return Err(format!("{path:?} clear: not every pixel holds the clear colour"));
                }
                println!("fdm load_clear={path:?} ok");
            }
            Ok(())
        })(),
    );
    family(
        "secondary_subpasses",
        (|| -> Result<(), String> {
            for path in [Path::RenderPass, Path::RenderPass2] {
                let size = (256, 256);
                let map = regions(size);
                // A draw recorded in a secondary command buffer.
                let s = Scene { map: Some(&map), secondary: true, ..Scene::new(path, size, full_vs, size_fs, 3) };
                let (coarse, _) = fdm::check_sizes(&fdm::render(&g, &s), size, &map, texel_of(size, &map))?;
                if coarse == 0 {
                    return Err(format!("{path:?} secondary: nothing was shaded coarsely"));
                }
                // Two subpasses, the second reading the first as an input attachment.
                let s = Scene { second_fs: Some(input_fs), ..Scene::new(path, size, scene_vs, scene_fs, 9) };
                let compared = against_references(&s, &map).map_err(|e| format!("{path:?} subpasses: {e}"))?;
                // Binned, not fallen back: the second subpass shades coarsely too.
                let px = fdm::render(&g, &Scene { map: Some(&map), ..s });
                let coarse_inputs = px.iter().filter(|p| p[3] != 17 && p[3] != 255).count();
                if coarse_inputs == 0 {
                    return Err(format!("{path:?} subpasses: nothing was shaded coarsely"));
                }
                println!(
                    "fdm secondary={path:?} coarse_pixels={coarse} subpasses_reference_pixels={compared} subpasses_coarse_pixels={coarse_inputs}"
                );
            }
            Ok(())
        })(),
    );
    // Rings (a foveated map): each coarse area's bins are four rectangles, the replays an area's viewport masks
    // record at once where the device has them (the debug log's plan says so), each against the references.
    family(
        "rings",
        (|| -> Result<(), String> {
            for &path in &fdm::PATHS {
                let size = (1024, 1024);
                let map = Map { width: 32, height: 32, texels: fdm::rings(32, 32) };
                let compared = against_references(&Scene::new(path, size, scene_vs, scene_fs, 9), &map)
                    .map_err(|e| format!("{path:?} rings: {e}"))?;
                let s = Scene { map: Some(&map), ..Scene::new(path, size, full_vs, size_fs, 3) };
                let (coarse, largest) = fdm::check_sizes(&fdm::render(&g, &s), size, &map, texel_of(size, &map))?;
                if largest < 4 {
                    return Err(format!("{path:?} rings: the largest area shaded is {largest}, not 4x4"));
                }
                println!("fdm rings path={path:?} reference_pixels={compared} coarse_pixels={coarse}");
            }
            Ok(())
        })(),
    );
    // One map image, read at two passes with a rewrite in between: the
    // second pass follows the new contents (the layer re-reads a map after a
    // submitted write to it), while an unchanged map may come from its cache.
    let size = (256, 256);
    let map = regions(size);
    let img = fdm::map_image(&g, &map);
    let s = Scene { map: Some(&map), map_view: Some(img.2), ..Scene::new(Path::RenderPass, size, full_vs, size_fs, 3) };
    family(
        "map_rewrite",
        (|| -> Result<(), String> {
            let (first, _) = fdm::check_sizes(&fdm::render(&g, &s), size, &map, texel_of(size, &map))?;
            let (again, _) = fdm::check_sizes(&fdm::render(&g, &s), size, &map, texel_of(size, &map))?;
            let ones = Map { width: map.width, height: map.height, texels: vec![[255, 255]; map.texels.len()] };
            fdm::write_map(&g, img.0, if planted("map_rewrite") { &map } else { &ones });
            let (after, _) = fdm::check_sizes(&fdm::render(&g, &s), size, &ones, texel_of(size, &ones))?;
            if first == 0 || again != first || after != 0 {
                return Err(format!(
                    "map rewrite: {first} then {again} coarse pixels, {after} after the map became all 1"
                ));
            }
            println!("fdm map_rewrite=followed coarse_pixels={first}/{again}/{after}");
            Ok(())
        })(),
    );
    unsafe {
        g.device.destroy_image_view(img.2, None);
        g.device.destroy_image(img.0, None);
        g.device.free_memory(img.1, None);
    }
    // A storage write cannot be replayed: 1x1, each pixel shaded once.
    let size = (256, 256);
    let map = regions(size);
    family(
        "storage_fallback",
        (|| -> Result<(), String> {
            let fs = if planted("storage_fallback") { size_fs } else { storage_fs };
            let r = fdm::render_full(
                &g,
                &Scene { map: Some(&map), storage: true, ..Scene::new(Path::RenderPass, size, full_vs, fs, 3) },
            );
            let (coarse, _) = fdm::check_sizes(&r.pixels, size, &map, texel_of(size, &map))?;
            if coarse != 0 || r.invocations != size.0 * size.1 {
                return Err(format!(
                    "a pass with a storage write shaded {coarse} pixels coarsely and {} invocations",
                    r.invocations
                ));
            }
            println!("fdm storage_fallback=1x1 invocations={}", r.invocations);
            Ok(())
        })(),
    );
    // A query inside the pass cannot be replayed either.
    family(
        "query_fallback",
        (|| -> Result<(), String> {
            let query = !planted("query_fallback");
            let px = fdm::render(
                &g,
                &Scene { map: Some(&map), query, ..Scene::new(Path::RenderPass, size, full_vs, size_fs, 3) },
            );
            let (coarse, _) = fdm::check_sizes(&px, size, &map, texel_of(size, &map))?;
            if coarse != 0 {
                return Err(format!("a pass with a query shaded {coarse} pixels coarsely"));
            }
            println!("fdm query_fallback=1x1");
            Ok(())
        })(),
    );
    let failures = failures.into_inner();
    if failures.is_empty() {
        Ok(())
    } else {
        let mut families: Vec<String> = failures.clone();
        families.dedup();
        Err(format!("{} check(s) failed, in families: {}", failures.len(), families.join(", ")))
    }
}

/// `fdm-draws [KIND]...`: the matrix's representative cases at 256x256, one
/// sample, every pass type, with every draw going down as each KIND
/// (`overlap_tests::draw_kind`; all eight by default: direct, indexed,
/// indirect, indexed indirect, the two indirect-count forms, multi and
/// multi-indexed). Per kind and path the binned render must pass the
/// matrix's checks against the same references (rendered without a map by
/// direct draws): the scene and the depth scene whose compare op changes
/// between its two draws (`references`), the areas (`sizes`), a draw in a
/// secondary and the two-subpass pass whose second subpass reads the first
/// (render passes); and it must be the direct draw's binned picture, bit for
/// bit (`same_as`). Indirect kinds are held to `vkCmdDrawIndirect`'s picture
/// instead: the planner cannot read their vertex counts when it records and
/// guesses 3000 a draw (`layer/src/fdm/commands.rs`, `Cmd::vertices`), so
/// it may merge regions into fewer replays at smaller areas than the map
/// asks (the spec allows it; the checks above still hold), where a direct
/// draw of 9 vertices gets one replay per area. Runs to the end; failures
/// print `fdm_draws FAILED kind=K family=F: …`.
fn fdm_draws(opts: &mut GpuOptions, args: &[String]) -> Result<(), String> {
    use overlap_tests::draw_kind::{self, DrawKind};
    use overlap_tests::fdm::{self, Map, Path, Scene};
    let kinds: Vec<DrawKind> = if args.is_empty() {
        draw_kind::ALL.to_vec()
    } else {
        args.iter().map(|a| a.parse()).collect::<Result<_, _>>()?
    };
    opts.multi_draw = kinds.iter().any(|k| k.multi());
    let g = fdm_gpu(opts)?;
    if opts.multi_draw && !g.multi_draw {
        return Err("VK_EXT_multi_draw is not listed".into());
    }
    let (min, max) = texel_limits(&g);
    let full_vs = &include_bytes!(concat!(env!("OUT_DIR"), "/fullscreen.vert.spv"))[..];
    let scene_vs = &include_bytes!(concat!(env!("OUT_DIR"), "/scene.vert.spv"))[..];
    let depth_vs = &include_bytes!(concat!(env!("OUT_DIR"), "/fdm_depth.vert.spv"))[..];
    let size_fs = &include_bytes!(concat!(env!("OUT_DIR"), "/fdm_size.frag.spv"))[..];
    let scene_fs = &include_bytes!(concat!(env!("OUT_DIR"), "/fdm_scene.frag.spv"))[..];
    let input_fs = &include_bytes!(concat!(env!("OUT_DIR"), "/fdm_input.frag.spv"))[..];
    let size = (256u32, 256u32);
    let map = Map { width: 8, height: 8, texels: fdm::regions(8, 8) };
    let texel = (fdm::texel_size(size.0, 8, min.width, max.width), fdm::texel_size(size.1, 8, min.height, max.height));
    // Rings (a foveated map): each coarse area's bins four rectangles, recorded at once where viewport masks run.
    let rings = Map { width: 8, height: 8, texels: fdm::rings(8, 8) };
    // `scene` with `map`, drawn as its kind, against references drawn directly without it.
    let against = |scene: &Scene, map: &Map| -> Result<(Vec<[u8; 4]>, u64), String> {
        let px = fdm::render(&g, &Scene { map: Some(map), ..*scene });
        let size = scene.size;
        let compared = fdm::check_against_references(&px, size, |area| {
            let low = (size.0.div_ceil(area.0), size.1.div_ceil(area.1));
            let viewport = (size.0 as f32 / area.0 as f32, size.1 as f32 / area.1 as f32);
            let direct = Scene { size: low, viewport, map: None, draw_kind: DrawKind::Direct, ..*scene };
            (fdm::render(&g, &direct), low.0)
        })?;
        Ok((px, compared))
    };
    let against_references = |scene: &Scene| against(scene, &map);
    let mut failures = Vec::new();
    for &path in &fdm::PATHS {
        let passes = path != Path::Dynamic;
        // The scenes, each a closure of the kind: (name, checked pixels).
        let scenes = |kind: DrawKind| -> Vec<(&str, Result<(Vec<[u8; 4]>, u64), String>)> {
            let mut v = Vec::new();
            let s = Scene { draw_kind: kind, ..Scene::new(path, size, scene_vs, scene_fs, 9) };
            v.push(("references", against_references(&s)));
            // At 1024² the plan splits each ring into its four rectangles (at 256² it merges them).
            let big = Scene { draw_kind: kind, ..Scene::new(path, (1024, 1024), scene_vs, scene_fs, 9) };
            v.push(("rings", against(&big, &rings)));
            let s = Scene {
                depth: true,
                compare_ops: true,
                draw_kind: kind,
                ..Scene::new(path, size, depth_vs, scene_fs, 6)
            };
            v.push(("references", against_references(&s)));
            let sizes = |s: Scene| {
                let px = fdm::render(&g, &Scene { map: Some(&map), ..s });
                match fdm::check_sizes(&px, size, &map, texel) {
                    Ok((0, _)) => Err("nothing was shaded coarsely".to_string()),
                    Ok((coarse, _)) => Ok((px, coarse)),
                    Err(e) => Err(e),
                }
            };
            v.push(("sizes", sizes(Scene { draw_kind: kind, ..Scene::new(path, size, full_vs, size_fs, 3) })));
            if passes {
                let s = Scene { secondary: true, draw_kind: kind, ..Scene::new(path, size, full_vs, size_fs, 3) };
                v.push(("secondary", sizes(s)));
                let s = Scene {
                    second_fs: Some(input_fs),
                    draw_kind: kind,
                    ..Scene::new(path, size, scene_vs, scene_fs, 9)
                };
                v.push(("subpasses", against_references(&s)));
            }
            v
        };
        let pictures = |kind| -> Vec<Option<Vec<[u8; 4]>>> {
            scenes(kind).into_iter().map(|(_, r)| r.ok().map(|(px, _)| px)).collect()
        };
        let (direct, indirect) = (pictures(DrawKind::Direct), pictures(DrawKind::Indirect));
        for &kind in &kinds {
            let mut checked = Vec::new();
            let mut differ = 0;
            let same_as = if kind.indirect() { DrawKind::Indirect } else { DrawKind::Direct };
            let baseline = if kind.indirect() { &indirect } else { &direct };
            for ((family, r), direct) in scenes(kind).into_iter().zip(baseline) {
                match r {
                    Ok((px, n)) => {
                        checked.push(format!("{family}={n}"));
                        let d = direct.as_ref().map_or(px.len(), |d| d.iter().zip(&px).filter(|(a, b)| a != b).count());
                        if d > 0 {
                            println!(
                                "fdm_draws FAILED kind={kind} family=same_as: {path:?} {family}: {d} pixels differ from the {same_as} draw's"
                            );
                            failures.push(format!("{kind} {path:?} same_as"));
                        }
                        differ += d;
                    }
                    Err(e) => {
                        println!("fdm_draws FAILED kind={kind} family={family}: {path:?}: {e}");
                        failures.push(format!("{kind} {path:?} {family}"));
                    }
                }
            }
            println!("fdm_draws kind={kind} path={path:?} {} same_as={same_as} differ={differ}", checked.join(" "));
        }
    }
    if failures.is_empty() {
        Ok(())
    } else {
        Err(format!("{} check(s) failed: {}", failures.len(), failures.join(", ")))
    }
}

/// A 16x16 foveated map: the centre at 1x1, a ring at 2x2, the rest 4x4.
fn foveated() -> overlap_tests::fdm::Map {
    let (mw, mh) = (16u32, 16u32);
    let texels: Vec<[u8; 2]> = (0..mh)
        .flat_map(|y| (0..mw).map(move |x| (x, y)))
        .map(|(x, y)| {
            let d = (x as i32 * 2 - 15).abs().max((y as i32 * 2 - 15).abs());
            let v = if d <= 5 {
                255
            } else if d <= 9 {
                127
            } else {
                60
            };
            [v, v]
        })
        .collect();
    overlap_tests::fdm::Map { width: mw, height: mh, texels }
}

/// Seconds per pass of `scene`: (time of `frames`+1 passes − time of 1) /
/// `frames`, best of 3, after a warm-up (shader compilation).
fn seconds_per_pass(g: &Gpu, scene: &overlap_tests::fdm::Scene, frames: u32) -> f64 {
    use overlap_tests::fdm::{self, Scene};
    let time = |repeat| {
        let t = Instant::now();
        fdm::render(g, &Scene { repeat, ..*scene });
        t.elapsed().as_secs_f64()
    };
    time(1);
    let (mut best1, mut best_n) = (f64::MAX, f64::MAX);
    for _ in 0..3 {
        best1 = best1.min(time(1));
        best_n = best_n.min(time(frames + 1));
    }
    (best_n - best1) / frames as f64
}

/// [`seconds_per_pass`] of a multiview pass.
fn seconds_per_multiview(g: &Gpu, mv: &overlap_tests::fdm::Multiview, frames: u32) -> f64 {
    use overlap_tests::fdm::{self, Multiview};
    let time = |repeat| {
        let t = Instant::now();
        fdm::render_multiview(g, &Multiview { repeat, maps: mv.maps.clone(), offsets: None, ..*mv });
        t.elapsed().as_secs_f64()
    };
    time(1);
    let (mut best1, mut best_n) = (f64::MAX, f64::MAX);
    for _ in 0..3 {
        best1 = best1.min(time(1));
        best_n = best_n.min(time(frames + 1));
    }
    (best_n - best1) / frames as f64
}

/// What a full-resolution write by copies would cost (issue 33: the composite's bound on lavapipe), without the
/// layer: a `width`x`height` RGBA8 image written from a buffer in one region, and row by row from a buffer a
/// quarter as tall (each of its rows copied to four image rows, as a 4x4 area's rows widened to full resolution
/// would be), each submitted alone and waited for, wall time, the best of `rounds`; an empty submission beside
/// them.
fn copy_rows_bench(opts: &mut GpuOptions, width: u32, height: u32, rounds: u32) -> Result<(), String> {
    let g = gpu(opts)?;
    let usage = vk::ImageUsageFlags::TRANSFER_DST | vk::ImageUsageFlags::TRANSFER_SRC;
    let img = g.image_2d(vk::Format::R8G8B8A8_UNORM, (width, height), vk::SampleCountFlags::TYPE_1, usage);
    let row = width as u64 * 4;
    let full = g.buffer(row * height as u64, vk::BufferUsageFlags::TRANSFER_SRC, false);
    let quarter = g.buffer(row * height.div_ceil(4) as u64, vk::BufferUsageFlags::TRANSFER_SRC, false);
    let dst = (vk::PipelineStageFlags::TRANSFER, vk::AccessFlags::TRANSFER_WRITE);
    g.one_time_submit(|cb| {
        g.image_from_undefined(cb, img.0, render::color_range(), vk::ImageLayout::TRANSFER_DST_OPTIMAL, dst)
    });
    let layers = vk::ImageSubresourceLayers {
        aspect_mask: vk::ImageAspectFlags::COLOR,
        mip_level: 0,
        base_array_layer: 0,
        layer_count: 1,
    };
    let rows: Vec<vk::BufferImageCopy> = (0..height)
        .map(|y| vk::BufferImageCopy {
            buffer_offset: (y / 4) as u64 * row,
            buffer_row_length: 0,
            buffer_image_height: 0,
            image_subresource: layers,
            image_offset: vk::Offset3D { x: 0, y: y as i32, z: 0 },
            image_extent: vk::Extent3D { width, height: 1, depth: 1 },
        })
        .collect();
    let best = |record: &dyn Fn(vk::CommandBuffer)| {
        (0..rounds.max(1))
            .map(|_| {
                let t = std::time::Instant::now();
                g.one_time_submit(|cb| record(cb));
                t.elapsed().as_secs_f64() * 1e3
            })
            .fold(f64::MAX, f64::min)
    };
    let l = vk::ImageLayout::TRANSFER_DST_OPTIMAL;
    let empty = best(&|_| {});
    let whole_ms = best(&|cb| g.copy_buffer_to_image(cb, full.buffer, img.0, (width, height), 1));
    let rows_ms = best(&|cb| unsafe { g.device.cmd_copy_buffer_to_image(cb, quarter.buffer, img.0, l, &rows) });
    println!(
        "copy_rows_bench size={width}x{height} rounds={rounds} empty_ms={empty:.3} whole_ms={whole_ms:.3} rows_ms={rows_ms:.3} row_regions={height}"
    );
    g.destroy_buffer(full);
    g.destroy_buffer(quarter);
    g.destroy_image(img);
    Ok(())
}

/// `composite-bench W H AREA ROUNDS` (`overlap_tests::composite_bench`):
/// the density map's composite on the driver alone.
fn composite_bench(opts: &mut GpuOptions, width: u32, height: u32, area: u32, rounds: u32) -> Result<(), String> {
    let g = gpu(opts)?;
    for line in overlap_tests::composite_bench::run(&g, (width, height), area, rounds)? {
        println!("{line}");
    }
    Ok(())
}

/// `viewport-mask-bench SIZE DRAWS FRAMES` (`overlap_tests::viewport_mask_bench`):
/// the density map's design D measured on the driver alone.
fn viewport_mask_bench(opts: &mut GpuOptions, size: u32, draws: u32, frames: u32) -> Result<(), String> {
    opts.viewport_mask = true;
    let g = gpu(opts)?;
    let out = overlap_tests::viewport_mask_bench::run(&g, size, draws, frames)?;
    for o in &out {
        println!(
            "viewport_mask_bench way={} size={size} draws={draws} record_us_per_draw={:.3} gpu_ms={:.3} checksum={:016x}",
            o.way, o.record_us_per_draw, o.gpu_ms, o.checksum
        );
    }
    println!(
        "viewport_mask_bench size={size} draws={draws} record_ratio={:.3} gpu_ratio={:.3} (mask / passes)",
        out[1].record_us_per_draw / out[0].record_us_per_draw,
        out[1].gpu_ms / out[0].gpu_ms
    );
    Ok(())
}

/// `fdm-bench FRAMES SIZE DRAWS`: a fragment-bound full-screen pass under
/// the foveated map, `binned` against `baseline` (two instances side by
/// side), with the ideal speedup from the fragment counts. Per-frame time =
/// (time of FRAMES+1 passes − time of 1) / FRAMES, best of 3. Then the CPU
/// cost of recording a pass of DRAWS draws (capture, map read, planning and
/// replay recording) per draw, binned against baseline.
fn fdm_bench(opts: &mut GpuOptions, frames: u32, size: u32, draws: u32) -> Result<(), String> {
    use overlap_tests::fdm::{self, Path, Scene};
    use overlap_tests::fdm_bench;
    let vs = &include_bytes!(concat!(env!("OUT_DIR"), "/fullscreen.vert.spv"))[..];
    let fs = &include_bytes!(concat!(env!("OUT_DIR"), "/fdm_heavy.frag.spv"))[..];
    let tiny = &include_bytes!(concat!(env!("OUT_DIR"), "/scene.vert.spv"))[..];
    let scene_fs = &include_bytes!(concat!(env!("OUT_DIR"), "/fdm_scene.frag.spv"))[..];
    let map = foveated();
    let bin = size / map.width;
    let ideal_fragments: u64 =
        map.texels.iter().map(|t| (bin * bin) as u64 / (fdm::requested(t[0]) * fdm::requested(t[1])) as u64).sum();
    let ideal = (size as f64 * size as f64) / ideal_fragments as f64;
    let mut per_frame = Vec::new();
    let mut per_draw = Vec::new();
    let mut gpu_frame = Vec::new();
    for mode in ["baseline", "binned"] {
        let mut o = opts.clone();
        o.fdm = true;
        o.layer_settings.push(("fdm".into(), SettingValue::Str(mode.into())));
        let g = gpu(&o)?;
        let base = Scene { map: Some(&map), ..Scene::new(Path::RenderPass, (size, size), vs, fs, 3) };
        let t = seconds_per_pass(&g, &base, frames);
        // GPU time alone: timestamps around each pass (issue 33, item 1).
        let gpu_t = fdm_bench::gpu_ms(&g, &fdm_bench::Pass::new((size, size), vec![&map], vs, fs, 3), frames);
        // Recording: a pass of `draws` small draws.
        let rec = Scene { map: Some(&map), draws, ..Scene::new(Path::RenderPass, (size, size), tiny, scene_fs, 9) };
        let mut best_rec = f64::MAX;
        for _ in 0..3 {
            best_rec = best_rec.min(fdm::render_full(&g, &rec).record_s);
        }
        // The same draws as frames of one object set (an application recording its pass every frame).
        let frames_rec = fdm_bench::record_us_per_draw(
            &g,
            &fdm_bench::Pass::new((size, size), vec![&map], tiny, scene_fs, 9),
            draws,
        );
        println!(
            "fdm_bench mode={mode} frame_ms={:.3} record_us_per_draw={:.3} frames_record_us_per_draw={frames_rec:.3} gpu_ms={}",
            t * 1e3,
            best_rec * 1e6 / draws as f64,
            fdm_bench::fmt(gpu_t, 3)
        );
        per_frame.push(t);
        gpu_frame.push(gpu_t);
        per_draw.push(best_rec / draws as f64);
    }
    let speedup = per_frame[0] / per_frame[1];
    let gpu_speedup = gpu_frame[0].zip(gpu_frame[1]).map(|(b, n)| b / n);
    println!(
        "fdm_bench size={size} frames={frames} speedup={speedup:.3} ideal={ideal:.3} fraction_of_ideal={:.3} capture_replay_us_per_draw={:.3} gpu_speedup={} gpu_fraction_of_ideal={}",
        speedup / ideal,
        (per_draw[1] - per_draw[0]) * 1e6,
        fdm_bench::fmt(gpu_speedup, 3),
        fdm_bench::fmt(gpu_speedup.map(|s| s / ideal), 3)
    );
    // The same map as a dynamic one, rewritten by the GPU (a copy) in the
    // same command buffer before every pass, planned on the GPU: at most
    // 8x8 regions of whole texels, each at the smallest area its texels ask
    // for (`dynamic_ideal` counts those fragments).
    let mut o = opts.clone();
    o.fdm = true;
    o.fdm2 = Some(true);
    o.fdm_dynamic = true;
    o.layer_settings.push(("fdm".into(), SettingValue::Str("binned".into())));
    let g = gpu(&o)?;
    let img = fdm::map_image(&g, &map);
    let view = fdm::map_view(&g, img.0, vk::ImageViewCreateFlags::FRAGMENT_DENSITY_MAP_DYNAMIC_EXT)?;
    let dynamic = |s: Scene<'static>| -> Scene<'_> {
        Scene { map: None, map_view: Some(view), map_write: Some((img.0, &map)), ..s }
    };
    let t = seconds_per_pass(&g, &dynamic(Scene::new(Path::RenderPass, (size, size), vs, fs, 3)), frames);
    let dynamic_pass = fdm_bench::Pass {
        write: fdm_bench::MapWrite::Copy,
        ..fdm_bench::Pass::new((size, size), vec![&map], vs, fs, 3)
    };
    let dynamic_gpu = fdm_bench::gpu_ms(&g, &dynamic_pass, frames);
    let rec = Scene { draws, ..dynamic(Scene::new(Path::RenderPass, (size, size), tiny, scene_fs, 9)) };
    let mut best_rec = f64::MAX;
    for _ in 0..3 {
        best_rec = best_rec.min(fdm::render_full(&g, &rec).record_s);
    }
    let frames_rec = fdm_bench::record_us_per_draw(
        &g,
        &fdm_bench::Pass {
            write: fdm_bench::MapWrite::Copy,
            ..fdm_bench::Pass::new((size, size), vec![&map], tiny, scene_fs, 9)
        },
        draws,
    );
    unsafe { g.device.destroy_image_view(view, None) };
    g.destroy_image(img);
    let groups = map.width.min(8);
    let group = |g: u32| (g * map.width / groups, (g + 1) * map.width / groups);
    let mut dynamic_fragments = 0u64;
    for gy in 0..groups {
        for gx in 0..groups {
            let ((x0, x1), (y0, y1)) = (group(gx), group(gy));
            let texels = (y0..y1).flat_map(|y| (x0..x1).map(move |x| (x, y)));
            let (ax, ay) = texels.fold((4, 4), |(ax, ay), (x, y)| {
                let t = map.texels[(y * map.width + x) as usize];
                (fdm::requested(t[0]).min(ax), fdm::requested(t[1]).min(ay))
            });
            dynamic_fragments += ((x1 - x0) * bin * (y1 - y0) * bin) as u64 / (ax * ay) as u64;
        }
    }
    let dynamic_ideal = (size as f64 * size as f64) / dynamic_fragments as f64;
    let dynamic_speedup = per_frame[0] / t;
    let dynamic_gpu_speedup = gpu_frame[0].zip(dynamic_gpu).map(|(b, n)| b / n);
    println!(
        "fdm_bench map=dynamic frame_ms={:.3} record_us_per_draw={:.3} frames_record_us_per_draw={frames_rec:.3} speedup={dynamic_speedup:.3} fraction_of_ideal={:.3} dynamic_ideal={dynamic_ideal:.3} fraction_of_dynamic_ideal={:.3} gpu_ms={} gpu_fraction_of_ideal={} gpu_fraction_of_dynamic_ideal={}",
        t * 1e3,
        best_rec * 1e6 / draws as f64,
        dynamic_speedup / ideal,
        dynamic_speedup / dynamic_ideal,
        fdm_bench::fmt(dynamic_gpu, 3),
        fdm_bench::fmt(dynamic_gpu_speedup.map(|s| s / ideal), 3),
        fdm_bench::fmt(dynamic_gpu_speedup.map(|s| s / dynamic_ideal), 3)
    );
    // Multiview, two views (render pass 1 with a view mask): view 0 under
    // the foveated map, view 1 under it shifted by two texels (an eye's
    // offset), each view planned on its own layer; `baseline` against
    // `binned`, the ideal from both views' fragments.
    let mut shifted = fdm::Map { width: map.width, height: map.height, texels: map.texels.clone() };
    for y in 0..map.height {
        for x in 0..map.width {
            let from = x.saturating_sub(2);
            shifted.texels[(y * map.width + x) as usize] = map.texels[(y * map.width + from) as usize];
        }
    }
    let view_fragments = |m: &fdm::Map| -> u64 {
        m.texels.iter().map(|t| (bin * bin) as u64 / (fdm::requested(t[0]) * fdm::requested(t[1])) as u64).sum()
    };
    let multiview_ideal = 2.0 * (size as f64 * size as f64) / (view_fragments(&map) + view_fragments(&shifted)) as f64;
    let mut mv_frame = Vec::new();
    let mut mv_gpu = Vec::new();
    for mode in ["baseline", "binned"] {
        let mut o = opts.clone();
        o.fdm = true;
        o.layer_settings.push(("fdm".into(), SettingValue::Str(mode.into())));
        let g = gpu(&o)?;
        let mv = fdm::Multiview::new(Path::RenderPass, (size, size), vec![&map, &shifted], vs, fs, 3);
        mv_frame.push(seconds_per_multiview(&g, &mv, frames));
        mv_gpu.push(fdm_bench::gpu_ms(
            &g,
            &fdm_bench::Pass::new((size, size), vec![&map, &shifted], vs, fs, 3),
            frames,
        ));
    }
    let mv_speedup = mv_frame[0] / mv_frame[1];
    let mv_gpu_speedup = mv_gpu[0].zip(mv_gpu[1]).map(|(b, n)| b / n);
    println!(
        "fdm_bench multiview=2 baseline_ms={:.3} binned_ms={:.3} speedup={mv_speedup:.3} ideal={multiview_ideal:.3} fraction_of_ideal={:.3} baseline_gpu_ms={} binned_gpu_ms={} gpu_fraction_of_ideal={}",
        mv_frame[0] * 1e3,
        mv_frame[1] * 1e3,
        mv_speedup / multiview_ideal,
        fdm_bench::fmt(mv_gpu[0], 3),
        fdm_bench::fmt(mv_gpu[1], 3),
        fdm_bench::fmt(mv_gpu_speedup.map(|s| s / multiview_ideal), 3)
    );
    Ok(())
}

/// `fdm-client FRAMES [WxH] [DRAWS] [cheap|medium|heavy] [dynamic]`: the
/// client-shaped benchmark, [`overlap_tests::fdm_bench::client`].
fn fdm_client(opts: &mut GpuOptions, frames: u32, size: (u32, u32), draws: u32, rest: &[String]) -> Result<(), String> {
    use overlap_tests::fdm_bench::{self, Shader};
    let shader = rest.iter().find_map(|a| Shader::parse(a)).unwrap_or(Shader::Heavy);
    fdm_bench::client(opts, frames, size, draws, shader, rest.iter().any(|a| a == "dynamic"))
}

/// `fdm-subsampled [WxH] [linear] [FRAMES] [cheap|medium|heavy] [write|template|copy] [flags] [plain]`
/// (`overlap_tests::fdm_subsampled`): a density-map pass and a post pass
/// sampling its colour, with a plain colour image (`plain`: stored at full
/// resolution) and a subsampled one (`subsampled`: the layer may store it
/// packed), and without a map (`off`); the two post images compared
/// (`differing` pixels, `max_diff`), and each way's median GPU time of both
/// passes over FRAMES frames (1: only the comparison). Nearest sampling at
/// the pass's own size; `linear` samples a post image 3/4 of it. The post
/// pass's set gets the image by a descriptor write, an update template or
/// a copy from another set (`flags`: its layout chains empty binding flags;
/// `plain`: a render pass without a map clears the image after each frame).
fn fdm_subsampled(opts: &mut GpuOptions, size: (u32, u32), rest: &[String]) -> Result<(), String> {
    use overlap_tests::fdm_bench::{fmt, median, Shader};
    use overlap_tests::fdm_subsampled::{compare, run, Shape, Update};
    let linear = rest.iter().any(|a| a == "linear");
    let frames = rest.iter().find_map(|a| a.parse::<u32>().ok()).unwrap_or(1);
    let shader = rest.iter().find_map(|a| Shader::parse(a)).unwrap_or(Shader::Cheap);
    opts.fdm = true;
    let g = gpu(opts)?;
    let post = if linear { (size.0 * 3 / 4, size.1 * 3 / 4) } else { size };
    let update = rest.iter().find_map(|a| Update::parse(a)).unwrap_or(Update::Write);
    let binding_flags = rest.iter().any(|a| a == "flags");
    let plain_after = rest.iter().any(|a| a == "plain");
    let shape = Shape { size, post, map: true, subsampled: false, linear, frames, update, binding_flags, plain_after };
    let fs = shader.spirv();
    // Warm-up (pipelines, the plan), then the measured runs, alternated.
    let mut outs = Vec::new();
    let ways = [("off", false, false), ("plain", true, false), ("subsampled", true, true)];
    for round in 0..if frames > 1 { 3 } else { 1 } {
        for (k, (_, map, subsampled)) in ways.iter().enumerate() {
            let s = Shape { map: *map, subsampled: *subsampled, ..shape };
            if frames > 1 {
                run(&g, Shape { frames: 1, ..s }, fs)?;
            }
            let o = run(&g, s, fs)?;
            if round == 0 {
                outs.push((o.pixels, o.gpu_ms, o.first_ms, o.post_ms));
            } else {
                outs[k].1.extend(o.gpu_ms);
                outs[k].2.extend(o.first_ms);
                outs[k].3.extend(o.post_ms);
            }
        }
    }
    let (differing, max_diff) = compare(&outs[1].0, &outs[2].0);
    let med = |v: &Vec<f64>| (!v.is_empty()).then(|| median(v));
    let ms: Vec<Option<f64>> = outs.iter().map(|o| med(&o.1)).collect();
    for ((way, _, _), o) in ways.iter().zip(&outs) {
        println!(
            "fdm_subsampled way={way} gpu_ms={} first_pass_ms={} post_pass_ms={}",
            fmt(med(&o.1), 3),
            fmt(med(&o.2), 3),
            fmt(med(&o.3), 3)
        );
    }
    println!(
        "fdm_subsampled size={}x{} post={}x{} filter={} shader={} frames={frames} pixels={} differing={differing} max_diff={max_diff} gpu_ms_off={} gpu_ms_plain={} gpu_ms_subsampled={} gpu_plain_vs_subsampled={} gpu_off_vs_subsampled={}",
        size.0,
        size.1,
        post.0,
        post.1,
        if linear { "linear" } else { "nearest" },
        shader.name(),
        post.0 * post.1,
        fmt(ms[0], 3),
        fmt(ms[1], 3),
        fmt(ms[2], 3),
        fmt(ms[1].zip(ms[2]).map(|(a, b)| a / b), 3),
        fmt(ms[0].zip(ms[2]).map(|(a, b)| a / b), 3),
    );
    Ok(())
}

/// `pipeline-route N`: the cost of the layer's pipeline route. N times, a
/// fresh fragment module that uses both emulations (the density map's
/// fragment size and ordered interlock) and a pipeline for dynamic rendering
/// with a density map (so the layer makes its per-area variants, each
/// lowered, rewritten for interlock and checked). Prints the median time of
/// vkCreateShaderModule + vkCreateGraphicsPipelines as the application sees
/// it; the layer's debug log (`OVERLAP-Shader-Checked`) says how many
/// modules it checked and how long validation took.
fn pipeline_route(opts: &mut GpuOptions, n: u32) -> Result<(), String> {
    let vs = &include_bytes!(concat!(env!("OUT_DIR"), "/fullscreen.vert.spv"))[..];
    let fs = &include_bytes!(concat!(env!("OUT_DIR"), "/fdm_interlock.frag.spv"))[..];
    opts.fdm = true;
    opts.interlock = true;
    let g = gpu(opts)?;
    let d = &g.device;
    let binding = [vk::DescriptorSetLayoutBinding::default()
        .binding(0)
        .descriptor_type(vk::DescriptorType::STORAGE_IMAGE)
        .descriptor_count(1)
        .stage_flags(vk::ShaderStageFlags::FRAGMENT)];
    let set_layout = unsafe {
        d.create_descriptor_set_layout(&vk::DescriptorSetLayoutCreateInfo::default().bindings(&binding), None)
    }
    .map_err(|e| format!("vk:{e:?}"))?;
    let layouts = [set_layout];
    let layout =
        unsafe { d.create_pipeline_layout(&vk::PipelineLayoutCreateInfo::default().set_layouts(&layouts), None) }
            .map_err(|e| format!("vk:{e:?}"))?;
    let formats = [vk::Format::R8G8B8A8_UNORM];
    let mut times = Vec::new();
    let vsm = g.shader(vs);
    for _ in 0..n {
        let started = std::time::Instant::now();
        let fsm = g.shader(fs);
        let stages =
            [render::stage(vk::ShaderStageFlags::VERTEX, vsm), render::stage(vk::ShaderStageFlags::FRAGMENT, fsm)];
        let mut rendering = vk::PipelineRenderingCreateInfo::default().color_attachment_formats(&formats);
        let topology = vk::PrimitiveTopology::TRIANGLE_LIST;
        let p = g.pipeline(&stages, layout, topology, true, &[], |info| {
            let info = info
                .flags(vk::PipelineCreateFlags::RENDERING_FRAGMENT_DENSITY_MAP_ATTACHMENT_EXT)
                .push_next(&mut rendering);
            unsafe { d.create_graphics_pipelines(vk::PipelineCache::null(), &[info], None) }
                .map_err(|(_, e)| format!("vkCreateGraphicsPipelines: {e:?}"))
        })?[0];
        times.push(started.elapsed().as_secs_f64());
        unsafe {
            d.destroy_pipeline(p, None);
            d.destroy_shader_module(fsm, None);
        }
    }
    unsafe {
        d.destroy_shader_module(vsm, None);
        d.destroy_pipeline_layout(layout, None);
        d.destroy_descriptor_set_layout(set_layout, None);
    }
    times.sort_by(f64::total_cmp);
    println!("pipeline_route pipelines={n} median_us={:.0}", times[times.len() / 2] * 1e6);
    Ok(())
}

/// `fdm-demo OUT.png`: the fragment-bound scene under the foveated map at
/// 512x512 (binned, as the layer's settings say), written as a PNG.
fn fdm_demo(opts: &mut GpuOptions, out: &str) -> Result<(), String> {
    use overlap_tests::fdm::{self, Path, Scene};
    opts.fdm = true;
    let g = gpu(opts)?;
    let map = foveated();
    let vs = &include_bytes!(concat!(env!("OUT_DIR"), "/fullscreen.vert.spv"))[..];
    let fs = &include_bytes!(concat!(env!("OUT_DIR"), "/fdm_heavy.frag.spv"))[..];
    let px = fdm::render(&g, &Scene { map: Some(&map), ..Scene::new(Path::RenderPass, (512, 512), vs, fs, 3) });
    let img = render::Image { width: 512, height: 512, rgba: px.iter().flatten().copied().collect() };
    img.write_png(std::path::Path::new(out)).map_err(|e| e.to_string())?;
    println!("wrote {out}");
    Ok(())
}

/// `fdm-multiview` (also `fdm multiview`): per-view areas. View 0's map
/// asks for 1x1 on the left half and 4x4 on the right; every other view's
/// for 2x2 everywhere. Every view is checked against its own map layer
/// (areas never above the requested ones, one fragment per area-sized block
/// with its centre as FragCoord); views 1.. are shaded at exactly 2x2
/// everywhere and view 0's left half at 1x1. Part 1's rule — one area for
/// all views, the smallest — would shade every view's left half at 1x1
/// (`debug_fdm_without=per_view_areas` shows the check firing). Over render
/// pass 1 (`VkRenderPassMultiviewCreateInfo`), render pass 2 and dynamic
/// rendering (`viewMask`), with 2, 4 and 6 views (as the device allows).
/// A device with the density map enabled (`opts.fdm`), which must be listed.
fn fdm_gpu(opts: &mut GpuOptions) -> Result<Gpu, String> {
    opts.fdm = true;
    let g = gpu(opts)?;
    if !g.fdm {
        return Err("VK_EXT_fragment_density_map is not listed".into());
    }
    Ok(g)
}

/// `dynamic`: the density map's view of `fdm-multiview` and `fdm-offset` is
/// dynamic (the layer plans such passes on the GPU when they execute).
fn dynamic_map(args: &[String]) -> bool {
    args[1..].iter().any(|a| a == "dynamic")
}

/// The map-view flags and the device option for a dynamic map.
fn dynamic_flags(opts: &mut GpuOptions, dynamic: bool) -> vk::ImageViewCreateFlags {
    opts.fdm_dynamic = dynamic;
    if dynamic {
        vk::ImageViewCreateFlags::FRAGMENT_DENSITY_MAP_DYNAMIC_EXT
    } else {
        vk::ImageViewCreateFlags::empty()
    }
}

/// The maps of `fdm-multiview` and `fdm-layered` over a 256x256
/// framebuffer: `(size, texel size, first, others)` — the first asks 1x1 on
/// the left half and 4x4 on the right, the others 2x2 everywhere.
fn own_area_maps(g: &Gpu) -> ((u32, u32), (u32, u32), overlap_tests::fdm::Map, overlap_tests::fdm::Map) {
    use overlap_tests::fdm::{self, Map};
    let (min, max) = texel_limits(g);
    let size: (u32, u32) = (256, 256);
    let (mw, mh) = (size.0.div_ceil(32), size.1.div_ceil(32));
    let texel =
        (fdm::texel_size(size.0, mw, min.width, max.width), fdm::texel_size(size.1, mh, min.height, max.height));
    let split = |left: u8, right: u8| Map {
        width: mw,
        height: mh,
        texels: (0..mw * mh).map(|i| if i % mw < mw / 2 { [left, left] } else { [right, right] }).collect(),
    };
    (size, texel, split(255, 50), split(127, 127))
}

/// The per-view (or per-layer) judgement of `fdm-multiview` and
/// `fdm-layered`: every image passes the area checks against its own map;
/// image 0 (its map asks 1x1 on the left half) is 1x1 there, every other
/// (2x2 everywhere) 2x2 everywhere. Per image, its pixels shaded coarsely.
fn own_areas(
    case: &str,
    what: &str,
    images: &[Vec<[u8; 4]>],
    maps: &[&overlap_tests::fdm::Map],
    size: (u32, u32),
    texel: (u32, u32),
) -> Result<Vec<u64>, String> {
    use overlap_tests::fdm;
    let mut coarse = Vec::new();
    for (k, (px, map)) in images.iter().zip(maps).enumerate() {
        let (c, _) = fdm::check_sizes(px, size, map, texel).map_err(|e| format!("{case}, {what} {k}: {e}"))?;
        coarse.push(c);
        let areas = fdm::areas(px);
        let left = |i: usize| (i as u32 % size.0) < size.0 / 2;
        if k == 0 {
            if let Some(i) = (0..areas.len()).find(|&i| left(i) && areas[i] != (1, 1)) {
                return Err(format!("{case}: {what} 0 asks for 1x1 at pixel {i} but got {:?}", areas[i]));
            }
        } else if let Some(i) = (0..areas.len()).find(|&i| areas[i] != (2, 2)) {
            return Err(format!(
                "{case}: {what} {k} asks for 2x2 everywhere but pixel ({},{}) got {:?} (one area for all {what}s?)",
                i as u32 % size.0,
                i as u32 / size.0,
                areas[i]
            ));
        }
    }
    Ok(coarse)
}

fn fdm_multiview(
    opts: &mut GpuOptions,
    quick: bool,
    dynamic: bool,
    kind: overlap_tests::draw_kind::DrawKind,
) -> Result<(), String> {
    use overlap_tests::fdm::{self, Multiview, Path};
    let map_flags = dynamic_flags(opts, dynamic);
    opts.multi_draw |= kind.multi();
    let g = fdm_gpu(opts)?;
    if kind.multi() && !g.multi_draw {
        return Err("VK_EXT_multi_draw is not listed".into());
    }
    let quad = &include_bytes!(concat!(env!("OUT_DIR"), "/quad.vert.spv"))[..];
    let size_fs = &include_bytes!(concat!(env!("OUT_DIR"), "/fdm_size.frag.spv"))[..];
    let (size, texel, view0, others) = own_area_maps(&g);
    let mut props = vk::PhysicalDeviceMultiviewProperties::default();
    let mut p2 = vk::PhysicalDeviceProperties2::default().push_next(&mut props);
    unsafe { g.instance.get_physical_device_properties2(g.pd, &mut p2) };
    let counts: Vec<u32> = [2u32, 4, 6]
        .into_iter()
        .filter(|n| *n <= props.max_multiview_view_count)
        .take(if quick { 1 } else { 3 })
        .collect();
    let paths: Vec<Path> = fdm::PATHS.into_iter().filter(|p| *p != Path::Dynamic || g.dynamic_rendering).collect();
    for &path in &paths {
        for &n in &counts {
            let mut maps = vec![&view0];
            maps.extend(std::iter::repeat_n(&others, n as usize - 1));
            let mv =
                Multiview { map_flags, draw_kind: kind, ..Multiview::new(path, size, maps.clone(), quad, size_fs, 6) };
            let views = fdm::render_multiview(&g, &mv);
            let case = format!("{path:?} {n} views");
            let coarse = own_areas(&case, "view", &views, &maps, size, texel)?;
            println!(
                "fdm multiview path={path:?} views={n} dynamic={dynamic} per_view=ok coarse_pixels={coarse:?} draw={kind}"
            );
        }
    }
    Ok(())
}

/// `fdm-layered [dynamic]`: `VK_VALVE_fragment_density_map_layered` — a
/// layered framebuffer of 2 and 4 layers (no multiview; the vertex shader
/// writes `gl_Layer` from the instance index, one instance per layer) with
/// the per-layer bit on the pass and the pipeline: layer 0's map asks 1x1
/// left and 4x4 right, the other layers' 2x2 everywhere; each layer must get
/// its own map layer's areas (render pass 1, 2, dynamic rendering). Where the
/// extension is not listed (the driver lacks `VK_KHR_maintenance5` and
/// Vulkan 1.4, which it depends on) it says so and checks nothing.
fn fdm_layered(opts: &mut GpuOptions, dynamic: bool) -> Result<(), String> {
    use overlap_tests::fdm::{self, Multiview, Path};
    let map_flags = dynamic_flags(opts, dynamic);
    opts.fdm_layered = true;
    let g = fdm_gpu(opts)?;
    if !g.fdm_layered {
        println!("fdm_layered listed=0");
        return Ok(());
    }
    let mut props = overlap_tests::fdm::layered::Properties::default();
    let mut p2 = vk::PhysicalDeviceProperties2::default().push_next(&mut props);
    unsafe { g.instance.get_physical_device_properties2(g.pd, &mut p2) };
    println!("fdm_layered listed=1 max_layers={}", props.max_fragment_density_map_layers);
    let vs = &include_bytes!(concat!(env!("OUT_DIR"), "/fullscreen_layered.vert.spv"))[..];
    let size_fs = &include_bytes!(concat!(env!("OUT_DIR"), "/fdm_size.frag.spv"))[..];
    let (size, texel, layer0, others) = own_area_maps(&g);
    let paths: Vec<Path> = fdm::PATHS.into_iter().filter(|p| *p != Path::Dynamic || g.dynamic_rendering).collect();
    for &path in &paths {
        for n in [2u32, 4].into_iter().filter(|n| *n <= props.max_fragment_density_map_layers) {
            let mut maps = vec![&layer0];
            maps.extend(std::iter::repeat_n(&others, n as usize - 1));
            let mv = Multiview { map_flags, layered: true, ..Multiview::new(path, size, maps.clone(), vs, size_fs, 3) };
            let layers = fdm::render_multiview(&g, &mv);
            let case = format!("{path:?} {n} layers");
            let coarse = own_areas(&case, "layer", &layers, &maps, size, texel)?;
            println!("fdm layered path={path:?} layers={n} dynamic={dynamic} per_layer=ok coarse_pixels={coarse:?}");
        }
    }
    Ok(())
}

/// `fdm-dynamic-state`: dynamic state beyond Vulkan 1.3 (colour write
/// enable, logic op, extended dynamic state 3's colour write mask, line
/// stipple), each where the driver has it, changed between two draws of a
/// binned pass: the first draw (red) writes, the second (green) is stopped
/// by the state set before it. Each replay must see each draw's state: the
/// result is red where the first draw covers and never green. Without the
/// capture (`debug_fdm_without=dynamic_state`) the state reaches the driver
/// before the replays, both draws see the last value, and nothing is red.
/// The logic op (`LogicOp`, and `LogicOpRebound` with the pipeline bound
/// again before the second op) draws XOR, then AND, over a known clear
/// colour: every pixel must equal the CPU's result (`fdm::LOGIC_OP`); the
/// line counts the pixels of each model (`reference`, `first_op_kept`:
/// lavapipe 22.3's own behaviour without the rebind, `last_op_only`: the
/// control's). `plain`: the same pass without a density map (no FDM
/// device), for the driver alone.
fn fdm_dynamic_state(opts: &mut GpuOptions, plain: bool) -> Result<(), String> {
    use overlap_tests::fdm::{self, DynState};
    opts.fdm = !plain;
    opts.dynamic_state = true;
    let g = gpu(opts)?;
    if !plain && !g.fdm {
        return Err("VK_EXT_fragment_density_map is not listed".into());
    }
    let ds = g.dynamic_state;
    let cases = [
        (DynState::ColorWriteEnable, ds.color_write_enable),
        (DynState::LogicOp, ds.logic_op),
        (DynState::LogicOpRebound, ds.logic_op),
        (DynState::ColorWriteMask, ds.color_write_mask),
        (DynState::LineStipple, ds.line_stipple.is_some()),
    ];
    let mut failed = Vec::new();
    for (state, supported) in cases {
        if !supported {
            println!("fdm dynamic_state={state:?} unsupported");
            continue;
        }
        let px = fdm::render_dynamic_state(&g, state, !plain);
        if matches!(state, DynState::LogicOp | DynState::LogicOpRebound) {
            // Against the CPU's logic ops on the known values: every pixel
            // the reference; the other models counted to name what a wrong
            // result is (`LogicOpValues::models`).
            let models = fdm::LOGIC_OP.models();
            let counts: Vec<String> = models
                .iter()
                .map(|(name, want)| format!("{name}={}", px.iter().filter(|p| *p == want).count()))
                .collect();
            let ok = px.iter().all(|p| *p == models[0].1);
            println!(
                "fdm dynamic_state={state:?} {} of={} {}",
                counts.join(" "),
                px.len(),
                if ok { "ok" } else { "WRONG" }
            );
            if !ok {
                failed.push(format!("{state:?} ({} of {} pixels)", counts.join(", "), px.len()));
            }
            continue;
        }
        let red = px.iter().filter(|p| p[0] > 200 && p[1] < 50).count();
        let green = px.iter().filter(|p| p[1] > 200).count();
        let ok = match state {
            DynState::LineStipple => red > 0 && green == 0,
            _ => red == px.len(),
        };
        println!("fdm dynamic_state={state:?} red={red} green={green} {}", if ok { "ok" } else { "WRONG" });
        if !ok {
            failed.push(format!("{state:?} (red {red}, green {green} of {})", px.len()));
        }
    }
    if failed.is_empty() {
        Ok(())
    } else {
        Err(format!("a draw did not see the state set before it: {}", failed.join(", ")))
    }
}

/// `fdm-offset`: `VK_EXT_fragment_density_map_offset`. A map of 4x4 with a
/// block of 2x2 texels asking for 1x1, given offsets at the end of the pass
/// (render pass 2: `VkSubpassEndInfo`; dynamic rendering:
/// `vkCmdEndRendering2EXT`), one view and two views with different offsets:
/// each view's areas never exceed those of its map seen through its offset
/// (the spec's fetch: region centre `c` reads texel `(c - offset) / texel`,
/// clamped to the map), the fine block is shaded at 1x1 where the offset
/// moved it, and the rest coarsely. Ignoring the offsets
/// (`debug_fdm_without=offsets`) leaves the fine block where it was: pixels
/// it moved onto are shaded at 4x4 and the check fires.
fn fdm_offset(opts: &mut GpuOptions, dynamic: bool) -> Result<(), String> {
    use overlap_tests::fdm::{self, Map, Multiview, Path};
    opts.fdm = true;
    opts.fdm_offset = true;
    let map_flags = dynamic_flags(opts, dynamic);
    let g = gpu(opts)?;
    if !g.fdm_offset {
        return Err("VK_EXT_fragment_density_map_offset is not listed".into());
    }
    let mut features = vk::PhysicalDeviceFragmentDensityMapOffsetFeaturesQCOM::default();
    let mut f2 = vk::PhysicalDeviceFeatures2::default().push_next(&mut features);
    unsafe { g.instance.get_physical_device_features2(g.pd, &mut f2) };
    let mut props = vk::PhysicalDeviceFragmentDensityMapOffsetPropertiesQCOM::default();
    let mut p2 = vk::PhysicalDeviceProperties2::default().push_next(&mut props);
    unsafe { g.instance.get_physical_device_properties2(g.pd, &mut p2) };
    let gran = props.fragment_density_offset_granularity;
    println!("fdm_offset feature={} granularity={}x{}", features.fragment_density_map_offset, gran.width, gran.height);
    if features.fragment_density_map_offset != vk::TRUE || gran.width == 0 || gran.height == 0 {
        return Err("fragmentDensityMapOffset is not offered, or its granularity is zero".into());
    }
    let (min, max) = texel_limits(&g);
    let quad = &include_bytes!(concat!(env!("OUT_DIR"), "/quad.vert.spv"))[..];
    let size_fs = &include_bytes!(concat!(env!("OUT_DIR"), "/fdm_size.frag.spv"))[..];
    let size: (u32, u32) = (256, 256);
    let (mw, mh) = (8u32, 8u32);
    let texel =
        (fdm::texel_size(size.0, mw, min.width, max.width), fdm::texel_size(size.1, mh, min.height, max.height));
    let fine = |i: u32, j: u32| (3..5).contains(&i) && (3..5).contains(&j);
    let map = Map {
        width: mw,
        height: mh,
        texels: (0..mw * mh).map(|k| if fine(k % mw, k / mw) { [255, 255] } else { [50, 50] }).collect(),
    };
    // Offsets in multiples of the granularity, not of the texel.
    let o = |x: i32, y: i32| vk::Offset2D { x: x * gran.width as i32, y: y * gran.height as i32 };
    let cases: Vec<Vec<vk::Offset2D>> = vec![vec![o(10, -6)], vec![o(10, -6), o(-8, 4)]];
    let paths: Vec<Path> =
        [Path::RenderPass2, Path::Dynamic].into_iter().filter(|p| *p != Path::Dynamic || g.dynamic_rendering).collect();
    for &path in &paths {
        for offsets in &cases {
            let n = offsets.len();
            let mut mv = Multiview { map_flags, ..Multiview::new(path, size, vec![&map; n], quad, size_fs, 6) };
            mv.offsets = Some(offsets.clone());
            let views = fdm::render_multiview(&g, &mv);
            for (v, (px, off)) in views.iter().zip(offsets).enumerate() {
                let case = format!("{path:?} {n} view(s), view {v} offset ({},{})", off.x, off.y);
                // The texel a pixel's region fetches, through the offset.
                let texel_at = |x: u32, y: u32| {
                    let i = (x as i64 - off.x as i64).div_euclid(texel.0 as i64).clamp(0, mw as i64 - 1) as u32;
                    let j = (y as i64 - off.y as i64).div_euclid(texel.1 as i64).clamp(0, mh as i64 - 1) as u32;
                    (i, j)
                };
                let requested = |x, y| {
                    let (i, j) = texel_at(x, y);
                    let t = map.texels[(j * mw + i) as usize];
                    (fdm::requested(t[0]), fdm::requested(t[1]))
                };
                let (coarse, largest) =
                    fdm::check_sizes_with(px, size, requested).map_err(|e| format!("{case}: {e}"))?;
                let areas = fdm::areas(px);
                let moved = (0..areas.len() as u32).filter(|k| {
                    let (i, j) = texel_at(k % size.0, k / size.0);
                    fine(i, j)
                });
                let fine_px = moved.clone().count();
                if fine_px == 0 || moved.clone().any(|k| areas[k as usize] != (1, 1)) {
                    return Err(format!("{case}: the fine block is not shaded at 1x1 where the offset moved it"));
                }
                if largest < 16 || coarse < (size.0 * size.1 / 2) as u64 {
                    return Err(format!("{case}: too little is coarse ({coarse} pixels, largest area {largest})"));
                }
                println!("fdm offset path={path:?} views={n} view={v} dynamic={dynamic} offset=({},{}) fine_pixels={fine_px} coarse_pixels={coarse}", off.x, off.y);
            }
        }
    }
    Ok(())
}

/// `fdm-msaa`: multisampled colour and depth/stencil attachments that load
/// and store in a density-map pass, at every sample count of 2, 4 and 8 the
/// driver offers for them, through every path, with and without resolves
/// (`overlap_tests::fdm_msaa`).
fn fdm_msaa(opts: &mut GpuOptions, gpu_plan: bool) -> Result<(), String> {
    use overlap_tests::fdm::{self, Map, Path, PATHS};
    use overlap_tests::fdm_msaa::{self, Case};
    dynamic_flags(opts, gpu_plan);
    let g = fdm_gpu(opts)?;
    let l = &g.properties.limits;
    let counts = l.framebuffer_color_sample_counts
        & l.framebuffer_depth_sample_counts
        & l.framebuffer_stencil_sample_counts
        & l.sampled_image_color_sample_counts
        & l.sampled_image_depth_sample_counts
        & l.sampled_image_stencil_sample_counts;
    let samples: Vec<u32> =
        [2, 4, 8].into_iter().filter(|n| counts.contains(vk::SampleCountFlags::from_raw(*n))).collect();
    if samples.is_empty() {
        return Err("the driver offers no multisampled colour, depth and stencil attachments".into());
    }
    let (min, max) = texel_limits(&g);
    let (mw, mh) = (8, 8);
    let map = Map { width: mw, height: mh, texels: fdm::regions(mw, mh) };
    // A framebuffer of whole map texels, and one whose last column and row of blocks are cut short.
    for size in [fdm_msaa::VIEWPORT, (250, 190)] {
        let texel =
            (fdm::texel_size(size.0, mw, min.width, max.width), fdm::texel_size(size.1, mh, min.height, max.height));
        // Pixels whose texel asks for more than 1x1.
        let asked_coarse = (0..size.0 * size.1)
            .filter(|k| {
                let t = map.texels[((k / size.0 / texel.1) * mw + (k % size.0) / texel.0) as usize];
                fdm::requested(t[0]) * fdm::requested(t[1]) > 1
            })
            .count() as u64;
        for &n in &samples {
            for path in PATHS.into_iter().filter(|p| *p != Path::Dynamic || g.dynamic_rendering) {
                for resolve in [false, true] {
                    let case = Case { path, samples: n, size, resolve, gpu_plan };
                    let out = fdm_msaa::render(&g, &case, &map);
                    let coarse = fdm_msaa::check(&out, &map, texel).map_err(|e| format!("fdm_msaa {case:?}: {e}"))?;
                    println!(
                        "fdm_msaa path={path:?} samples={n} size={}x{} resolve={resolve}{} coarse_pixels={coarse}/{asked_coarse}",
                        size.0, size.1, if gpu_plan { " map=dynamic" } else { "" }
                    );
                    if coarse * 2 < asked_coarse {
                        return Err(format!(
                            "fdm_msaa {case:?}: too little was shaded coarsely ({coarse} of {asked_coarse} pixels asking for it)"
                        ));
                    }
                }
            }
        }
    }
    Ok(())
}

/// `fdm-shader-objects`: `FragSizeEXT` and `FragCoord` in a fragment
/// shader object, unlinked and bound in the pass, and linked with its vertex
/// shader and bound before it (`overlap_tests::fdm_shader_objects`).
/// Unsupported (and said so) where the device lists no `VK_EXT_shader_object`.
fn fdm_shader_objects(opts: &mut GpuOptions) -> Result<(), String> {
    use overlap_tests::fdm::{self, Map};
    opts.shader_object = true;
    let plain = gpu(opts)?;
    if !plain.shader_object {
        println!("fdm_shader_objects=unsupported: the device lists no VK_EXT_shader_object");
        return Ok(());
    }
    drop(plain);
    let g = fdm_gpu(opts)?;
    if !g.dynamic_rendering {
        return Err("shader objects need dynamic rendering".into());
    }
    let (min, max) = texel_limits(&g);
    let size = (256u32, 256u32);
    let (mw, mh) = (8, 8);
    let map = Map { width: mw, height: mh, texels: fdm::regions(mw, mh) };
    let texel =
        (fdm::texel_size(size.0, mw, min.width, max.width), fdm::texel_size(size.1, mh, min.height, max.height));
    for (linked, bind_before) in [(false, false), (true, true)] {
        let px = overlap_tests::fdm_shader_objects::render(&g, &map, size, linked, bind_before);
        let case = format!("linked={linked} bound_before_pass={bind_before}");
        let (coarse, largest) =
            fdm::check_sizes(&px, size, &map, texel).map_err(|e| format!("fdm_shader_objects {case}: {e}"))?;
        println!("fdm_shader_objects {case} coarse_pixels={coarse} largest_area={largest}");
        if largest < 4 || coarse < (size.0 * size.1 / 2) as u64 {
            return Err(format!(
                "fdm_shader_objects {case}: too little was shaded coarsely ({coarse} pixels, largest area {largest})"
            ));
        }
    }
    Ok(())
}

/// `fdm-queues [W] [H] [ROUNDS] [REPEATS]`: two command buffers render alternating
/// stripes of one target in density-map passes (`overlap_tests::fdm_queues`,
/// recorded and submitted REPEATS times),
/// one after the other on one queue, then (ROUNDS times) on two queues at
/// once where the graphics family has two; every picture must be exact.
fn fdm_queues(opts: &mut GpuOptions, args: &[String]) -> Result<(), String> {
    use overlap_tests::fdm_queues::{render, wrong_pixels, Submit, STRIPE};
    opts.second_queue = true;
    let g = fdm_gpu(opts)?;
    if !g.dynamic_rendering {
        return Err("the passes need dynamic rendering".into());
    }
    let arg = |i: usize, d: u32| args.get(i).and_then(|a| a.parse().ok()).unwrap_or(d);
    let (w, h, rounds, repeats) = (arg(0, 320), arg(1, 64), arg(2, 1), arg(3, 1));
    let passes = w.div_ceil(STRIPE).div_ceil(2);
    let reference = render(&g, (w, h), passes, Submit::OneQueue, repeats);
    let wrong = wrong_pixels(&reference, w);
    println!("fdm_queues one_queue size={w}x{h} passes={passes} wrong_pixels={wrong}");
    if wrong > 0 {
        return Err(format!("fdm_queues one queue: {wrong} wrong pixels"));
    }
    if g.second_queue.is_none() {
        println!("fdm_queues two_queues=unsupported: the graphics queue family has one queue");
        return Ok(());
    }
    let mut total = 0;
    for round in 0..rounds {
        let px = render(&g, (w, h), passes, Submit::TwoQueues, repeats);
        let wrong = wrong_pixels(&px, w);
        let differ = px.iter().zip(&reference).filter(|(a, b)| a != b).count();
        println!("fdm_queues two_queues round={round} wrong_pixels={wrong} differ_from_one_queue={differ}");
        total += wrong + differ;
    }
    if total > 0 {
        return Err(format!("fdm_queues two queues: {total} wrong or differing pixels over {rounds} rounds"));
    }
    Ok(())
}

/// `fdm-library`: `FragSizeEXT` and `FragCoord` in a fragment-shader
/// pipeline library, linked fast and with link-time optimization, drawn in a
/// density-map render pass (`overlap_tests::fdm_library`).
fn fdm_library(opts: &mut GpuOptions) -> Result<(), String> {
    use overlap_tests::fdm::{self, Map};
    opts.pipeline_library = true;
    let g = fdm_gpu(opts)?;
    let mut gpl = vk::PhysicalDeviceGraphicsPipelineLibraryFeaturesEXT::default();
    let mut f2 = vk::PhysicalDeviceFeatures2::default().push_next(&mut gpl);
    unsafe { g.instance.get_physical_device_features2(g.pd, &mut f2) };
    if gpl.graphics_pipeline_library != vk::TRUE {
        return Err("graphicsPipelineLibrary is not offered".into());
    }
    let (min, max) = texel_limits(&g);
    let size = (256u32, 256u32);
    let (mw, mh) = (8, 8);
    let map = Map { width: mw, height: mh, texels: fdm::regions(mw, mh) };
    let texel =
        (fdm::texel_size(size.0, mw, min.width, max.width), fdm::texel_size(size.1, mh, min.height, max.height));
    for dynamic in [false, true].into_iter().filter(|d| !d || g.dynamic_rendering) {
        for lto in [false, true] {
            let px = overlap_tests::fdm_library::render(&g, &map, size, lto, dynamic);
            let case = format!("dynamic={dynamic} lto={lto}");
            let (coarse, largest) =
                fdm::check_sizes(&px, size, &map, texel).map_err(|e| format!("fdm_library {case}: {e}"))?;
            println!("fdm_library {case} coarse_pixels={coarse} largest_area={largest}");
            if largest < 4 || coarse < (size.0 * size.1 / 2) as u64 {
                return Err(format!(
                    "fdm_library {case}: too little was shaded coarsely ({coarse} pixels, largest area {largest})"
                ));
            }
        }
    }
    Ok(())
}

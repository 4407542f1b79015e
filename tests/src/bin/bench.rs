//! `overlap-bench`: the layer's dispatch overhead, side by side in one run.
//!
//! Runs `overlap-testapp bench K N REPS` (record and submit K command buffers
//! of N draws, REPS times, medians) in child processes on lavapipe, in three
//! configurations — no layer, Overlap pass-through, Overlap with forced hooks
//! — rotating their order every round, and prints the medians over the
//! rounds and the ratios to the no-layer baseline as a Markdown table.
//!
//! Then the interlock figures on lavapipe: the OIT scene (`overlap-testapp
//! oit`) with the serialized strategy, with the same shader without a
//! critical section, and with the spinlock strategy, rotated per round; and
//! the shader rewrite's cost next to vkCreateGraphicsPipelines over the
//! interlock matrix.
//!
//! usage: overlap-bench [ROUNDS] [K] [N] [REPS]   (defaults 9 64 1000 9)
//!        overlap-bench varyings [ROUNDS]        (the varying linker only; cold and warm link cache)
//!        overlap-bench rewrite                  (the interlock rewrite's cost only)
//!        overlap-bench oit [ROUNDS]             (the OIT frame times only)

use overlap_tests::harness::{app, run_with_timeout, scratch, Layers};
use std::time::Duration;

struct Config {
    name: &'static str,
    layers: Layers,
    force: bool,
    record: Vec<u64>,
    total: Vec<u64>,
}

fn median(v: &mut [u64]) -> f64 {
    v.sort();
    v[v.len() / 2] as f64
}

fn main() {
    let mut raw: Vec<String> = std::env::args().skip(1).collect();
    let only = raw.first().filter(|a| ["varyings", "rewrite", "oit"].contains(&a.as_str())).cloned();
    if only.is_some() {
        raw.remove(0);
    }
    let args: Vec<u64> = raw.iter().map(|a| a.parse().expect("numeric arguments")).collect();
    let get = |i: usize, d: u64| args.get(i).copied().unwrap_or(d);
    let (rounds, k, n, reps) = (get(0, 9), get(1, 64), get(2, 1000), get(3, 9));
    match only.as_deref() {
        Some("varyings") => return varyings_section(rounds),
        Some("rewrite") => return rewrite_section(),
        Some("oit") => return oit_section(rounds),
        _ => {}
    }
    let mut configs = [
        Config { name: "no layer", layers: Layers::None, force: false, record: vec![], total: vec![] },
        Config { name: "Overlap, pass-through", layers: Layers::Overlap, force: false, record: vec![], total: vec![] },
        Config { name: "Overlap, forced hooks", layers: Layers::Overlap, force: true, record: vec![], total: vec![] },
    ];
    for round in 0..rounds as usize {
        for i in 0..configs.len() {
            let c = &mut configs[(i + round) % 3];
            let mut cmd = app(c.layers, &["bench", &k.to_string(), &n.to_string(), &reps.to_string()]);
            if c.force {
                cmd.env("VK_OVERLAP_EMULATION_FORCE_ENABLE", "1");
            }
            let o = run_with_timeout(&mut cmd, Duration::from_secs(600));
            o.assert_ok();
            let owner = o.value("hook_owner.vkCmdDraw").unwrap();
            assert_eq!(owner == "libVkLayer_overlap.so", c.force, "{}: vkCmdDraw answered by {owner}", c.name);
            let record: u64 = o.value("record_ns").unwrap().parse().unwrap();
            let submit: u64 = o.value("submit_ns").unwrap().parse().unwrap();
            c.record.push(record);
            c.total.push(record + submit);
        }
        eprintln!("round {}/{rounds} done", round + 1);
    }
    let base_record = median(&mut configs[0].record.clone());
    let base_total = median(&mut configs[0].total.clone());
    let draws = (k * n) as f64;
    println!("K = {k} command buffers x N = {n} draws, {reps} repetitions per process, median of {rounds} rounds (lavapipe)\n");
    println!("| configuration | record (ms) | ns / draw | record ratio | record + submit (ms) | total ratio |");
    println!("|---|---:|---:|---:|---:|---:|");
    for c in &mut configs {
        let r = median(&mut c.record);
        let t = median(&mut c.total);
        println!(
            "| {} | {:.2} | {:.1} | {:.3} | {:.1} | {:.3} |",
            c.name,
            r / 1e6,
            r / draws,
            r / base_record,
            t / 1e6,
            t / base_total
        );
    }
    oit_section(rounds);
    rewrite_section();
    varyings_section(rounds);
}

/// The varying corpus drawn 2000 times per pair (a varying-heavy frame) with
/// the linker off, safe and full; and the linker's cost next to pipeline
/// creation, from the layer's debug log: on a cold link cache (a fresh
/// `XDG_CACHE_HOME`) and on a warm one (the same folder, a second process).
/// Mesa's own shader cache is one folder for every run, warm after the first.
fn varyings_section(rounds: u64) {
    let mesa_cache = scratch("bench-mesa-cache");
    let mut warm_read_us = Vec::new();
    let mut warm_pipeline_us = Vec::new();
    let mut warm_linked = 0;
    let levels = ["off", "safe", "full"];
    let mut frame: Vec<Vec<f64>> = vec![Vec::new(); 3];
    let mut link_us = Vec::new();
    let mut validate_us = Vec::new();
    let mut pipeline_us = Vec::new();
    let mut repeat_us = Vec::new();
    for round in 0..rounds as usize {
        for i in 0..3 {
            let k = (i + round) % 3;
            let mut cmd = app(Layers::Overlap, &["varyings", "instances=2000"]);
            cmd.env("VK_OVERLAP_EMULATION_VARYINGS", levels[k]).env("VK_OVERLAP_EMULATION_LOG_LEVEL", "debug");
            let link_cache = scratch("bench-link-cache");
            cmd.env("MESA_SHADER_CACHE_DIR", &mesa_cache).env("XDG_CACHE_HOME", &link_cache);
            let o = run_with_timeout(&mut cmd, Duration::from_secs(600));
            o.assert_ok();
            let total: f64 = o
                .stdout
                .lines()
                .filter_map(|l| l.split_whitespace().find_map(|w| w.strip_prefix("submit_ns=")))
                .map(|v| v.parse::<f64>().unwrap())
                .sum();
            frame[k].push(total);
            if levels[k] == "safe" {
                let field = |key: &str| -> Vec<f64> {
                    o.stderr
                        .split_whitespace()
                        .filter_map(|w| w.trim_end_matches(')').strip_prefix(key))
                        .filter_map(|v| v.parse().ok())
                        .collect()
                };
                link_us.extend(field("link_us="));
                validate_us.extend(field("validate_us="));
                pipeline_us.extend(
                    o.stdout
                        .lines()
                        .filter_map(|l| l.split_whitespace().find_map(|w| w.strip_prefix("pipeline_ns=")))
                        .map(|v| v.parse::<f64>().unwrap() / 1000.0),
                );
                repeat_us.extend(
                    o.stdout
                        .lines()
                        .filter_map(|l| l.split_whitespace().find_map(|w| w.strip_prefix("repeat_pipeline_ns=")))
                        .map(|v| v.parse::<f64>().unwrap() / 1000.0),
                );
                // The same program again: every pair from the link cache on disk.
                let mut cmd = app(Layers::Overlap, &["varyings", "instances=2000"]);
                cmd.env("VK_OVERLAP_EMULATION_VARYINGS", "safe").env("VK_OVERLAP_EMULATION_LOG_LEVEL", "debug");
                cmd.env("MESA_SHADER_CACHE_DIR", &mesa_cache).env("XDG_CACHE_HOME", &link_cache);
                let w = run_with_timeout(&mut cmd, Duration::from_secs(600));
                w.assert_ok();
                warm_linked += w.stderr.matches("link_us=").count();
                warm_read_us.extend(
                    w.stderr
                        .split_whitespace()
                        .filter_map(|x| x.trim_end_matches(')').strip_prefix("read_us="))
                        .filter_map(|v| v.parse::<f64>().ok()),
                );
                warm_pipeline_us.extend(
                    w.stdout
                        .lines()
                        .filter_map(|l| l.split_whitespace().find_map(|x| x.strip_prefix("pipeline_ns=")))
                        .map(|v| v.parse::<f64>().unwrap() / 1000.0),
                );
            }
        }
    }
    let m: Vec<f64> = frame.iter_mut().map(|t| median_f(t)).collect();
    println!(
        "\nVarying corpus, 32 pairs x 2000 instances of a triangle, 64x64 (lavapipe), median of {rounds} rounds\n"
    );
    println!("| varyings | frame time, all pairs (ms) | ratio to off |");
    println!("|---|---:|---:|");
    for (k, l) in levels.iter().enumerate() {
        println!("| {l} | {:.1} | {:.3} |", m[k] / 1e6, m[k] / m[0]);
    }
    let (l, v, p) = (median_f(&mut link_us), median_f(&mut validate_us), median_f(&mut pipeline_us));
    println!("\nLinker per pipeline (safe): link {l:.0} us, spirv-val {v:.0} us, vkCreateGraphicsPipelines as the app sees it {p:.0} us");
    println!("(link share of pipeline creation {:.1}%, with validation {:.1}%)", 100.0 * l / p, 100.0 * (l + v) / p);
    let (rd, wp) = (median_f(&mut warm_read_us), median_f(&mut warm_pipeline_us));
    println!(
        "Second process, link cache on disk warm: {} pairs from disk, {warm_linked} linked; read {rd:.0} us, vkCreateGraphicsPipelines {wp:.0} us (linker share {:.1}%)",
        warm_read_us.len(),
        100.0 * rd / wp
    );
    let r = median_f(&mut repeat_us);
    println!(
        "Same pair again, new modules (link cache hit): vkCreateGraphicsPipelines {r:.0} us ({:.3} of the first)",
        r / p
    );
}

fn median_f(v: &mut [f64]) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}

/// OIT frame time on lavapipe: serialized vs no interlock, spinlock vs
/// serialized, and serialized without the untaken discard that keeps
/// llvmpipe from taking interlock shaders as opaque (`interlock_never_opaque`).
fn oit_section(rounds: u64) {
    // (strategy, no critical section, interlock_never_opaque)
    let configs: [(&str, bool, &str); 4] = [
        ("serialized", false, "auto"),
        ("serialized", true, "auto"),
        ("spinlock", false, "auto"),
        ("serialized", false, "off"),
    ];
    let n = configs.len();
    let mut times: Vec<Vec<f64>> = vec![Vec::new(); n];
    for round in 0..rounds as usize {
        for i in 0..n {
            let k = (i + round) % n;
            let (strategy, none, never_opaque) = configs[k];
            let mut args = vec!["oit", "512", "512", "reps=5"];
            if none {
                args.push("none");
            }
            let mut cmd = app(Layers::Overlap, &args);
            cmd.env("VK_OVERLAP_EMULATION_INTERLOCK_STRATEGY", strategy)
                .env("VK_OVERLAP_EMULATION_INTERLOCK_NEVER_OPAQUE", never_opaque);
            let o = run_with_timeout(&mut cmd, Duration::from_secs(600));
            o.assert_ok();
            let line = o.stdout.lines().find(|l| l.starts_with("oit=")).unwrap();
            let ns: f64 = line.split_whitespace().find_map(|w| w.strip_prefix("median_ns=")).unwrap().parse().unwrap();
            times[k].push(ns);
        }
    }
    let m: Vec<f64> = times.iter_mut().map(|t| median_f(t)).collect();
    println!("\nOIT, 512x512, 8 translucent layers, median of {rounds} rounds x 5 frames (lavapipe)\n");
    println!("| configuration | frame (ms) | ratio |");
    println!("|---|---:|---:|");
    println!("| no interlock (same shader, no critical section) | {:.2} | 1.000 |", m[1] / 1e6);
    println!("| serialized | {:.2} | {:.3} vs no interlock |", m[0] / 1e6, m[0] / m[1]);
    println!("| serialized without the untaken discard | {:.2} | {:.3} vs no interlock |", m[3] / 1e6, m[3] / m[1]);
    println!("| spinlock (forced) | {:.2} | {:.3} vs serialized |", m[2] / 1e6, m[2] / m[0]);
}

/// The rewrite's cost (from the layer's debug log) next to pipeline creation.
fn rewrite_section() {
    println!("\nShader rewrite vs vkCreateGraphicsPipelines, interlock matrix (lavapipe), medians per module\n");
    println!("| strategy | rewrite (us) | spirv-val (us) | vkCreateGraphicsPipelines (us) | rewrite / pipeline | with validation / pipeline |");
    println!("|---|---:|---:|---:|---:|---:|");
    for strategy in ["serialized", "spinlock"] {
        let mut cmd = app(Layers::Overlap, &["interlock", "quick"]);
        cmd.env("VK_OVERLAP_EMULATION_INTERLOCK_STRATEGY", strategy).env("VK_OVERLAP_EMULATION_LOG_LEVEL", "debug");
        let o = run_with_timeout(&mut cmd, Duration::from_secs(600));
        o.assert_ok();
        let field = |text: &str, key: &str| -> Vec<f64> {
            text.split_whitespace()
                .filter_map(|w| w.trim_end_matches(')').strip_prefix(key))
                .filter_map(|v| v.parse().ok())
                .collect()
        };
        let mut rewrite = field(&o.stderr, "rewrite_us=");
        let mut validate = field(&o.stderr, "validate_us=");
        let mut pipeline: Vec<f64> = field(&o.stdout, "pipeline_ns=").iter().map(|v| v / 1000.0).collect();
        let (r, v, p) = (median_f(&mut rewrite), median_f(&mut validate), median_f(&mut pipeline));
        println!("| {strategy} | {r:.0} | {v:.0} | {p:.0} | {:.1}% | {:.1}% |", 100.0 * r / p, 100.0 * (r + v) / p);
    }
}

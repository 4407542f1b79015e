//! `overlap-bench`: the layer's dispatch overhead, side by side in one run.
//!
//! Runs `overlap-testapp bench K N REPS` (record and submit K command buffers
//! of N draws, REPS times, medians) in child processes on lavapipe, in three
//! configurations — no layer, Overlap pass-through, Overlap with forced hooks
//! — rotating their order every round, and prints the medians over the
//! rounds and the ratios to the no-layer baseline as a Markdown table.
//!
//! usage: overlap-bench [ROUNDS] [K] [N] [REPS]   (defaults 9 64 1000 9)

use overlap_tests::harness::{app, run_with_timeout, Layers};
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
    let args: Vec<u64> = std::env::args().skip(1).map(|a| a.parse().expect("numeric arguments")).collect();
    let get = |i: usize, d: u64| args.get(i).copied().unwrap_or(d);
    let (rounds, k, n, reps) = (get(0, 9), get(1, 64), get(2, 1000), get(3, 9));
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
}

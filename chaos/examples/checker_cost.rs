//! The linearizability checker's cost on synthetic register histories of growing length
//! (docs/chaos.md reports its output): `cargo run --release -p testkeeper-chaos --example
//! checker_cost [OPS...]`. Each size runs linearizable histories (1 key with no unknowns,
//! 1 key with 2% unknowns, 10 keys with 2% unknowns) and the same with one read corrupted;
//! `states/op` is the search's cost per op, which should stay about flat as the history
//! grows (WGL with memoization on a register is about linear when histories are legal).

use std::time::Instant;

use testkeeper_chaos::check::linear::{check, DEFAULT_BUDGET};
use testkeeper_chaos::synth::{corrupt_one_read, register_history, Shape};

fn main() {
    let sizes: Vec<usize> = std::env::args().skip(1).filter_map(|a| a.parse().ok()).collect();
    let sizes = if sizes.is_empty() { vec![10_000, 100_000] } else { sizes };
    println!(
        "{:>8} {:>5} {:>8} {:>10} {:>12} {:>9} {:>10}",
        "ops", "keys", "unknown", "verdict", "states", "states/op", "ms"
    );
    for &ops in &sizes {
        for (keys, unknown) in [(1, 0.0), (1, 0.02), (10, 0.02)] {
            let h = register_history(Shape { ops, processes: 10, keys, unknown, seed: 7 });
            let t = Instant::now();
            let r = check(&h, 0, DEFAULT_BUDGET);
            let ms = t.elapsed().as_secs_f64() * 1e3;
            let st = states(&r.summary);
            println!(
                "{ops:>8} {keys:>5} {unknown:>8} {:>10} {st:>12} {:>9.1} {ms:>10.1}",
                r.verdict.name(),
                per_op(&st, ops)
            );
            let mut bad = h.clone();
            if corrupt_one_read(&mut bad, 3).is_some() {
                let t = Instant::now();
                let r = check(&bad, 0, DEFAULT_BUDGET);
                let ms = t.elapsed().as_secs_f64() * 1e3;
                let window = r.violations.first().map_or(0, |v| v.ops.len());
                let st = states(&r.summary);
                println!(
                    "{ops:>8} {keys:>5} {unknown:>8} {:>10} {st:>12} {:>9.1} {ms:>10.1}  (one corrupted read; window of {window} ops)",
                    r.verdict.name(),
                    per_op(&st, ops)
                );
            }
        }
    }
}

/// The state count from the checker's summary line.
fn states(summary: &str) -> String {
    summary.split(", ").nth(1).and_then(|s| s.split(' ').next()).unwrap_or("?").to_string()
}

/// States per op, from the state count.
fn per_op(states: &str, ops: usize) -> f64 {
    states.parse::<f64>().map_or(f64::NAN, |s| s / ops as f64)
}

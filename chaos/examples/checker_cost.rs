//! The linearizability checker's cost on synthetic register histories of growing length
//! (docs/chaos.md reports its output): `cargo run --release -p testkeeper-chaos --example
//! checker_cost [OPS...]`.

use std::time::Instant;

use testkeeper_chaos::check::linear::{check, DEFAULT_BUDGET};
use testkeeper_chaos::synth::{corrupt_one_read, register_history, Shape};

fn main() {
    let sizes: Vec<usize> = std::env::args().skip(1).filter_map(|a| a.parse().ok()).collect();
    let sizes = if sizes.is_empty() { vec![10_000, 100_000] } else { sizes };
    println!("{:>8} {:>5} {:>8} {:>10} {:>12} {:>10}", "ops", "keys", "unknown", "verdict", "states", "ms");
    for &ops in &sizes {
        for (keys, unknown) in [(1, 0.0), (1, 0.02), (10, 0.02)] {
            let h = register_history(Shape { ops, processes: 10, keys, unknown, seed: 7 });
            let t = Instant::now();
            let r = check(&h, 0, DEFAULT_BUDGET);
            let ms = t.elapsed().as_secs_f64() * 1e3;
            println!("{ops:>8} {keys:>5} {unknown:>8} {:>10} {:>12} {ms:>10.1}", r.verdict.name(), states(&r.summary));
            let mut bad = h.clone();
            if corrupt_one_read(&mut bad, 3).is_some() {
                let t = Instant::now();
                let r = check(&bad, 0, DEFAULT_BUDGET);
                let ms = t.elapsed().as_secs_f64() * 1e3;
                let window = r.violations.first().map_or(0, |v| v.ops.len());
                println!(
                    "{ops:>8} {keys:>5} {unknown:>8} {:>10} {:>12} {ms:>10.1}  (one corrupted read; window of {window} ops)",
                    r.verdict.name(),
                    states(&r.summary)
                );
            }
        }
    }
}

/// The state count from the checker's summary line.
fn states(summary: &str) -> String {
    summary.split(", ").nth(1).and_then(|s| s.split(' ').next()).unwrap_or("?").to_string()
}

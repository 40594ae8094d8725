//! The flush cost the durable log is built around, on this machine's disk: one sled batch and
//! flush per cycle with each record under its own key (the old layout) or all of a cycle's
//! records in one value (the chunks `server/src/log/sled/` writes), against a plain file's
//! append and `fdatasync`. docs/persistence.md and docs/performance.md quote its output.
//!
//! ```text
//! cargo run --release -p testkeeper-server --example sled_flush -- [RECORDS_PER_CYCLE] [CYCLES]
//! ```
//! (defaults 32 and 2000; prints µs per cycle and per flush for each layout). The databases
//! go under the system temp directory and are removed afterwards.

use std::io::Write;
use std::time::{Duration, Instant};

/// Bytes of one record (about an encoded create of a 100-byte value).
const RECORD: usize = 180;

/// Runs `cycles` cycles of `write` then `flush`; returns (per cycle, per flush).
fn cycles(n: u64, mut write: impl FnMut(u64), mut flush: impl FnMut()) -> (Duration, Duration) {
    let (started, mut flushing) = (Instant::now(), Duration::ZERO);
    for c in 0..n {
        write(c);
        let f = Instant::now();
        flush();
        flushing += f.elapsed();
    }
    let per = |d: Duration| d / u32::try_from(n).expect("cycles fit in u32");
    (per(started.elapsed()), per(flushing))
}

fn sled_run(dir: &std::path::Path, per: u64, n: u64, chunked: bool) -> (Duration, Duration) {
    let db = sled::Config::new().path(dir).flush_every_ms(Some(500)).open().expect("open sled");
    let value = [7u8; RECORD];
    let key = |i: u64| [&b"e"[..], &i.to_be_bytes()].concat();
    let result = cycles(
        n,
        |c| {
            let mut batch = sled::Batch::default();
            let first = c * per + 1;
            if chunked {
                batch.insert(key(first), value.repeat(per as usize));
            } else {
                for i in first..first + per {
                    batch.insert(key(i), &value[..]);
                }
            }
            batch.insert(&b"m/hard"[..], &[1u8; 28][..]);
            db.apply_batch(batch).expect("apply_batch");
        },
        || {
            db.flush().expect("flush");
        },
    );
    drop(db);
    result
}

fn main() {
    let args: Vec<u64> = std::env::args().skip(1).map(|a| a.parse().expect("a number")).collect();
    let (per, n) = (args.first().copied().unwrap_or(32), args.get(1).copied().unwrap_or(2000));
    let root = std::env::temp_dir().join(format!("testkeeper-sled-flush-{}", std::process::id()));
    std::fs::create_dir_all(&root).expect("temp dir");
    let report = |what: &str, (cycle, flush): (Duration, Duration)| {
        println!("{what:<28} {:>8.1} us/cycle  {:>8.1} us/flush", cycle.as_secs_f64() * 1e6, flush.as_secs_f64() * 1e6);
    };
    println!("{per} records of {RECORD} B per cycle, {n} cycles");
    report("sled, one key per record", sled_run(&root.join("keys"), per, n, false));
    report("sled, one chunk per cycle", sled_run(&root.join("chunk"), per, n, true));
    let file = std::fs::File::create(root.join("plain")).expect("plain file");
    let bytes = vec![7u8; RECORD * per as usize];
    let plain = cycles(n, |_| (&file).write_all(&bytes).expect("write"), || file.sync_data().expect("fdatasync"));
    report("plain file, fdatasync", plain);
    let _ = std::fs::remove_dir_all(&root);
}

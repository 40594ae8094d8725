//! Synthetic register histories, linearizable by construction, for measuring the checker on
//! histories of any length (`examples/checker_cost.rs`, docs/chaos.md) and for its tests.
//!
//! Each of `processes` clients runs ops back to back on random keys; every op takes effect at
//! a random instant inside its interval, and the register's answers follow from those
//! instants, so the history is linearizable. A fraction of the ops end unknown, half of them
//! having happened and half not, as lost replies and lost requests do.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::history::{Call, History, Op, Outcome, Ret};

/// The shape of a synthetic history.
#[derive(Debug, Clone, Copy)]
pub struct Shape {
    pub ops: usize,
    pub processes: usize,
    pub keys: usize,
    /// Fraction of ops whose outcome is unknown.
    pub unknown: f64,
    pub seed: u64,
}

struct Planned {
    op: Op,
    at: u64,
    applies: bool,
}

/// A linearizable history of `shape.ops` register ops (initial value 0 at version 0).
pub fn register_history(shape: Shape) -> History {
    let mut rng = ChaCha8Rng::seed_from_u64(shape.seed);
    let mut clock = vec![0u64; shape.processes];
    let mut process: Vec<u64> = (0..shape.processes as u64).collect();
    let mut planned = Vec::with_capacity(shape.ops);
    for id in 0..shape.ops {
        let w = rng.gen_range(0..shape.processes);
        let invoke = clock[w] + rng.gen_range(1_000..50_000);
        let complete = invoke + rng.gen_range(10_000..400_000);
        clock[w] = complete;
        let key = format!("k{}", rng.gen_range(0..shape.keys));
        let value = id as i64 + 1;
        let call = match rng.gen_range(0..4) {
            0 | 1 => Call::Read,
            2 => Call::Write { value },
            // The expected version is filled in once the process's earlier ops are known.
            _ => Call::Cas { version: 0, expect: 0, value },
        };
        let unknown = call != Call::Read && rng.gen_bool(shape.unknown);
        let op = Op {
            id,
            process: process[w],
            worker: w,
            session: process[w] as i64 + 1,
            node: 0,
            key: Some(key),
            call,
            outcome: if unknown { Outcome::Unknown } else { Outcome::Ok },
            ret: Ret::None,
            error: None,
            zxid: None,
            zxids: Vec::new(),
            invoke_ns: invoke,
            complete_ns: complete,
            effects: Vec::new(),
            final_phase: false,
        };
        if unknown {
            process[w] += shape.processes as u64;
        }
        let at = rng.gen_range(invoke..=complete);
        planned.push(Planned { op, at, applies: !unknown || rng.gen_bool(0.5) });
    }
    planned.sort_by_key(|p| p.at);
    let mut regs: std::collections::HashMap<String, (i64, i32)> = std::collections::HashMap::new();
    // What each worker last saw of each key, for its cas.
    let mut seen: std::collections::HashMap<(usize, String), (i64, i32)> = std::collections::HashMap::new();
    for p in &mut planned {
        let key = p.op.key.clone().expect("set above");
        let reg = regs.entry(key.clone()).or_insert((0, 0));
        let last = *seen.get(&(p.op.worker, key.clone())).unwrap_or(&(0, 0));
        match &mut p.op.call {
            Call::Read => p.op.ret = Ret::Value { value: reg.0, version: reg.1, mzxid: 0 },
            Call::Write { value } if p.applies => {
                *reg = (*value, reg.1 + 1);
                p.op.ret = Ret::Version { version: reg.1 };
            }
            Call::Cas { version, expect, value } => {
                (*version, *expect) = (last.1, last.0);
                if reg.1 == *version {
                    if p.applies {
                        *reg = (*value, reg.1 + 1);
                        p.op.ret = Ret::Version { version: reg.1 };
                    }
                } else if p.op.outcome == Outcome::Ok {
                    p.op.outcome = Outcome::Fail;
                    p.op.error = Some("BADVERSION".into());
                }
            }
            _ => {}
        }
        if p.op.outcome == Outcome::Unknown {
            p.op.ret = Ret::None;
        } else {
            seen.insert((p.op.worker, key), *reg);
        }
    }
    let mut ops: Vec<Op> = planned.into_iter().map(|p| p.op).collect();
    ops.sort_by_key(|o| o.id);
    History { ops, nemesis: Vec::new(), healed_ns: clock.iter().copied().max().unwrap_or(0), cluster: None }
}

/// The same history with one read (in its second half) corrupted: it returns a value nobody
/// wrote, at the version it saw. Returns the read's id, if there is a read to corrupt.
pub fn corrupt_one_read(h: &mut History, seed: u64) -> Option<usize> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let reads: Vec<usize> = (h.ops.iter())
        .filter(|o| o.call == Call::Read && matches!(o.ret, Ret::Value { version, .. } if version >= 1))
        .map(|o| o.id)
        .collect();
    if reads.is_empty() {
        return None;
    }
    let r = reads[rng.gen_range(reads.len() / 2..reads.len())];
    if let Ret::Value { value, .. } = &mut h.ops[r].ret {
        // Written values are positive and unique: a negative one was never written.
        *value = -*value;
    }
    Some(r)
}

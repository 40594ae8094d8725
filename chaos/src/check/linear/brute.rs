//! A cross-check of the linearizability checker against brute force: small random register
//! histories (reads, writes, cas by version; ok, BADVERSION, other failures and unknown
//! outcomes) are decided by trying every order that respects real time, with every unknown
//! op either placed or left out, straight from the history's meaning and sharing no code with
//! the WGL search or the register model. Both must agree on every history, and the window a
//! violation names must, on its own, be impossible too.
//!
//! Seeds: 0..2000 by default, `TESTKEEPER_CHAOS_SEEDS=N` for N of them; a failure prints
//! its seed and history.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::{check, check_key, KeyVerdict, DEFAULT_BUDGET};
use crate::check::Verdict;
use crate::history::{Call, History, Op, Outcome, Ret};
use crate::testutil::Hist;

/// What an op means to brute force.
#[derive(Debug, Clone, Copy)]
enum Eff {
    Read {
        value: i64,
        version: i32,
    },
    /// A write or cas that happened; `after` is the version its reply named, if any.
    Write {
        value: i64,
        after: Option<i32>,
    },
    Cas {
        version: i32,
        value: i64,
        after: Option<i32>,
    },
    CasFailed {
        version: i32,
    },
}

#[derive(Debug, Clone, Copy)]
struct B {
    call: u64,
    /// `u64::MAX` for an unknown op: it may take effect at any time after its call.
    ret: u64,
    required: bool,
    eff: Eff,
}

fn meaning(op: &Op) -> Option<B> {
    let unknown = op.outcome == Outcome::Unknown;
    let eff = match (&op.call, op.outcome, &op.ret) {
        (Call::Read, Outcome::Ok, Ret::Value { value, version, .. }) => Eff::Read { value: *value, version: *version },
        (Call::Write { value }, Outcome::Ok | Outcome::Unknown, ret) => {
            Eff::Write { value: *value, after: after(ret, unknown) }
        }
        (Call::Cas { version, value, .. }, Outcome::Ok | Outcome::Unknown, ret) => {
            Eff::Cas { version: *version, value: *value, after: after(ret, unknown) }
        }
        (Call::Cas { version, .. }, Outcome::Fail, _) if op.error.as_deref() == Some("BADVERSION") => {
            Eff::CasFailed { version: *version }
        }
        _ => return None,
    };
    Some(B { call: op.invoke_ns, ret: if unknown { u64::MAX } else { op.complete_ns }, required: !unknown, eff })
}

fn after(ret: &Ret, unknown: bool) -> Option<i32> {
    match ret {
        Ret::Version { version } if !unknown => Some(*version),
        _ => None,
    }
}

fn apply(s: (i64, i32), e: Eff) -> Option<(i64, i32)> {
    match e {
        Eff::Read { value, version } => (s == (value, version)).then_some(s),
        Eff::Write { value, after } => after.is_none_or(|a| a == s.1 + 1).then_some((value, s.1 + 1)),
        Eff::Cas { version, value, after } => {
            (s.1 == version && after.is_none_or(|a| a == version + 1)).then_some((value, version + 1))
        }
        Eff::CasFailed { version } => (s.1 != version).then_some(s),
    }
}

/// Whether some order of `ops` that respects real time, from state `s`, explains them all.
fn legal(ops: &[B], placed: &mut Vec<bool>, s: (i64, i32)) -> bool {
    if ops.iter().zip(placed.iter()).all(|(o, p)| *p || !o.required) {
        return true;
    }
    for x in 0..ops.len() {
        if placed[x] {
            continue;
        }
        // x can go next only if no op still to place ended before x began.
        let blocked = (0..ops.len()).any(|y| !placed[y] && ops[y].required && ops[y].ret < ops[x].call);
        if blocked {
            continue;
        }
        if let Some(n) = apply(s, ops[x].eff) {
            placed[x] = true;
            let ok = legal(ops, placed, n);
            placed[x] = false;
            if ok {
                return true;
            }
        }
    }
    false
}

fn brute(h: &History, only: Option<&[usize]>, starts: &[(i64, i32)]) -> bool {
    brute_window(h, only, &[], starts)
}

/// Brute force on the ops `only` (all: `None`) as recorded and `maybe` as unknown.
fn brute_window(h: &History, only: Option<&[usize]>, maybe: &[usize], starts: &[(i64, i32)]) -> bool {
    let ops: Vec<B> = (h.ops.iter())
        .filter_map(|o| match () {
            _ if maybe.contains(&o.id) => {
                let mut u = o.clone();
                (u.outcome, u.ret) = (Outcome::Unknown, Ret::None);
                meaning(&u)
            }
            _ if only.is_none_or(|ids| ids.contains(&o.id)) => meaning(o),
            _ => None,
        })
        .collect();
    starts.iter().any(|s| legal(&ops, &mut vec![false; ops.len()], *s))
}

/// Every start state that matters: each value and version the history names, and one
/// nobody names.
fn all_starts(h: &History) -> Vec<(i64, i32)> {
    let (mut values, mut versions) = (vec![0, -77], vec![0, -77]);
    for o in &h.ops {
        match (&o.call, &o.ret) {
            (_, Ret::Value { value, version, .. }) => {
                values.push(*value);
                versions.push(*version);
            }
            (Call::Cas { version, .. }, _) => versions.push(*version),
            (_, Ret::Version { version }) => versions.push(*version - 1),
            _ => {}
        }
    }
    values.sort_unstable();
    values.dedup();
    versions.sort_unstable();
    versions.dedup();
    values.iter().flat_map(|v| versions.iter().map(move |x| (*v, *x))).collect()
}

/// A random history of `n` ops on one key: each op takes effect (or not) at a random instant
/// of its interval and records what a correct register would say; then, half the time, one
/// result is replaced by a random one, which may or may not make it impossible.
fn random_history(seed: u64) -> History {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let n = rng.gen_range(2..=9);
    let mut b = Hist::default();
    let mut points = Vec::new();
    for p in 0..n as u64 {
        let a = rng.gen_range(0..20);
        let z = a + rng.gen_range(0..8);
        let (call, outcome) = match rng.gen_range(0..10) {
            0..=3 => (Call::Read, Outcome::Ok),
            4..=6 => (Call::Write { value: rng.gen_range(1..4) }, Outcome::Ok),
            _ => (Call::Cas { version: rng.gen_range(0..3), expect: 0, value: rng.gen_range(1..4) }, Outcome::Ok),
        };
        let id = b.op(p, "k", call, outcome, Ret::None, a, z);
        points.push((rng.gen_range(a * 4..=z * 4), id));
    }
    points.sort_unstable();
    let mut s = (0i64, 0i32);
    for (_, id) in points {
        let happens = rng.gen_bool(0.8);
        let op = &mut b.h.ops[id];
        match op.call {
            Call::Read => op.ret = Ret::Value { value: s.0, version: s.1, mzxid: 0 },
            Call::Write { value } if happens => {
                s = (value, s.1 + 1);
                op.ret = Ret::Version { version: s.1 };
            }
            Call::Cas { version, value, .. } if happens && version == s.1 => {
                s = (value, s.1 + 1);
                op.ret = Ret::Version { version: s.1 };
            }
            Call::Cas { .. } if happens => {
                op.outcome = Outcome::Fail;
                op.error = Some("BADVERSION".into());
            }
            _ => {
                // It did not happen: lost on the way (unknown) or refused (another failure).
                op.outcome = if rng.gen_bool(0.7) { Outcome::Unknown } else { Outcome::Fail };
                op.error = Some(if op.outcome == Outcome::Fail { "NONODE" } else { "CONNECTIONLOSS" }.into());
            }
        }
        // Some that did happen lose their reply.
        if happens && op.call != Call::Read && op.outcome == Outcome::Ok && rng.gen_bool(0.15) {
            (op.outcome, op.ret) = (Outcome::Unknown, Ret::None);
        }
    }
    if rng.gen_bool(0.5) {
        let id = rng.gen_range(0..n);
        let op = &mut b.h.ops[id];
        match (&op.call, op.outcome) {
            (Call::Read, _) => {
                op.ret = Ret::Value { value: rng.gen_range(0..4), version: rng.gen_range(0..4), mzxid: 0 }
            }
            (_, Outcome::Ok) => op.ret = Ret::Version { version: rng.gen_range(1..5) },
            (Call::Cas { .. }, _) => {
                (op.outcome, op.ret, op.error) = (Outcome::Fail, Ret::None, Some("BADVERSION".into()));
            }
            _ => op.outcome = Outcome::Unknown,
        }
    }
    b.h
}

fn seeds() -> u64 {
    // TESTKEEPER_CHAOS_SEEDS also sets the seeds per workload of the embedded runs (a few):
    // here it can only raise the number of random histories, never cut it below 2000.
    std::env::var("TESTKEEPER_CHAOS_SEEDS").ok().and_then(|s| s.parse::<u64>().ok()).unwrap_or(0).max(2000)
}

#[test]
fn the_checker_agrees_with_brute_force_and_its_windows_are_proofs() {
    let (mut legal_n, mut illegal_n) = (0, 0);
    for seed in 0..seeds() {
        let h = random_history(seed);
        let dump = || h.ops.iter().map(|o| o.describe()).collect::<Vec<_>>().join("\n  ");
        let expect = brute(&h, None, &[(0, 0)]);
        let r = check(&h, 0, DEFAULT_BUDGET);
        let want = if expect { Verdict::Pass } else { Verdict::Fail };
        assert_eq!(r.verdict, want, "seed {seed}: brute force says {expect}; {}\n  {}", r.summary, dump());
        if expect {
            legal_n += 1;
            continue;
        }
        illegal_n += 1;
        let (KeyVerdict::Violation { violation: v, maybe, from_any }, _) =
            check_key(&h, "k", h.ops.iter().collect(), 0, DEFAULT_BUDGET)
        else {
            panic!("seed {seed}: the key's check disagrees with the history's")
        };
        assert_eq!(r.violations[0], v, "seed {seed}");
        let starts = if from_any { all_starts(&h) } else { vec![(0, 0)] };
        assert!(
            !brute_window(&h, Some(&v.ops), &maybe, &starts),
            "seed {seed}: the window {:?} (maybe {maybe:?}) is possible ({})\n  {}",
            v.ops,
            v.message,
            dump()
        );
    }
    // The generator must exercise both sides.
    let n = seeds();
    assert!(legal_n * 5 > n && illegal_n * 5 > n, "{legal_n} linearizable, {illegal_n} not, of {n}");
}

#[test]
fn brute_force_itself_tells_a_stale_read_from_a_concurrent_one() {
    let mut b = Hist::default();
    b.write(0, "k", 5, 1, 0, 2);
    b.read(1, "k", 0, 0, 1, 3);
    assert!(brute(&b.h, None, &[(0, 0)]), "concurrent: the read may go first");
    b.read(1, "k", 0, 0, 4, 5);
    assert!(!brute(&b.h, None, &[(0, 0)]), "after the write returned, 0 is stale");
    let mut b = Hist::default();
    b.op(0, "k", Call::Write { value: 5 }, Outcome::Unknown, Ret::None, 0, 1);
    b.read(1, "k", 5, 1, 10, 11);
    assert!(brute(&b.h, None, &[(0, 0)]), "an unknown write may land late");
}

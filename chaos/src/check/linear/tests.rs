//! The linearizability checker on synthetic and hand-made histories.

use super::*;
use crate::check::Verdict;
use crate::history::Outcome;
use crate::synth::{corrupt_one_read, register_history, Shape};
use crate::testutil::Hist;

#[test]
fn synthetic_linearizable_histories_pass() {
    for seed in 0..8 {
        let h = register_history(Shape { ops: 2_000, processes: 6, keys: 3, unknown: 0.05, seed });
        let r = check(&h, 0, DEFAULT_BUDGET);
        assert_eq!(r.verdict, Verdict::Pass, "seed {seed}: {}", r.summary);
    }
}

#[test]
fn a_corrupted_read_is_caught_in_a_small_window_that_holds_it() {
    for seed in 0..6 {
        let mut h = register_history(Shape { ops: 3_000, processes: 6, keys: 2, unknown: 0.03, seed });
        let bad = corrupt_one_read(&mut h, seed).expect("a read to corrupt");
        let r = check(&h, 0, DEFAULT_BUDGET);
        assert_eq!(r.verdict, Verdict::Fail, "seed {seed}");
        let v = &r.violations[0];
        assert!(v.ops.contains(&bad), "seed {seed}: window {:?} misses read #{bad}", v.ops);
        assert!(v.ops.len() <= 3, "seed {seed}: {} ops in the window: {}", v.ops.len(), v.message);
        assert_eq!(v.key, h.ops[bad].key);
        // The window is a proof: searched again on its own (the evidence as recorded, the
        // rest of it as maybe), it is impossible.
        let key = v.key.clone().expect("a key");
        let ops: Vec<&Op> = h.ops.iter().filter(|o| o.key.as_ref() == Some(&key) && is_register(o)).collect();
        let (KeyVerdict::Violation { violation, maybe, from_any }, _) = check_key(&h, &key, ops, 0, DEFAULT_BUDGET)
        else {
            panic!("seed {seed}: the key's check disagrees")
        };
        assert_eq!(&violation, v);
        let view: Vec<(&Op, register::Role)> = (violation.ops.iter().map(|i| (&h.ops[*i], register::Role::AsRecorded)))
            .chain(maybe.iter().map(|i| (&h.ops[*i], register::Role::Relaxed)))
            .collect();
        let start = if from_any { register::RegState::any() } else { register::RegState::initial(0) };
        let (found, _) = wgl::search(&register::Register, start, &register::lin_ops(&view), DEFAULT_BUDGET);
        assert!(matches!(found, wgl::Found::Illegal { .. }), "seed {seed}: the window is possible: {found:?}");
    }
}

#[test]
fn a_stale_read_names_the_write_it_missed_and_nothing_else() {
    let mut b = Hist::default();
    b.read(0, "k", 0, 0, 0, 1);
    let w = b.write(1, "k", 7, 1, 2, 3);
    let stale = b.read(0, "k", 0, 0, 6, 7);
    b.write(1, "k", 8, 2, 8, 9);
    let r = check(&b.h, 0, DEFAULT_BUDGET);
    assert_eq!(r.verdict, Verdict::Fail);
    let v = &r.violations[0];
    assert_eq!(v.ops, vec![w, stale], "{}", v.message);
    assert_eq!((v.start_ns, v.end_ns), (2_000_000, 7_000_000));
    // With a later read of the new value in between, that read and the stale one suffice.
    let mut b = Hist::default();
    b.write(1, "k", 7, 1, 2, 3);
    let seen = b.read(2, "k", 7, 1, 4, 5);
    let stale = b.read(0, "k", 0, 0, 6, 7);
    let r = check(&b.h, 0, DEFAULT_BUDGET);
    assert_eq!(r.violations[0].ops, vec![seen, stale], "{}", r.violations[0].message);
}

#[test]
fn an_unknown_write_explains_a_read_and_a_failed_cas_needs_another_version() {
    let mut b = Hist::default();
    b.op(0, "k", Call::Write { value: 5 }, Outcome::Unknown, crate::history::Ret::None, 0, 1);
    b.read(1, "k", 5, 1, 10, 11);
    b.op(1, "k", Call::Cas { version: 0, expect: 0, value: 6 }, Outcome::Fail, crate::history::Ret::None, 12, 13);
    b.last().error = Some("BADVERSION".into());
    assert_eq!(check(&b.h, 0, DEFAULT_BUDGET).verdict, Verdict::Pass);
    // The same cas succeeding at version 0 after version 1 was read: impossible.
    b.h.ops[2].outcome = Outcome::Ok;
    b.h.ops[2].ret = crate::history::Ret::Version { version: 1 };
    let r = check(&b.h, 0, DEFAULT_BUDGET);
    assert_eq!(r.verdict, Verdict::Fail);
    assert_eq!(r.violations[0].ops, vec![1, 2]);
}

#[test]
fn an_undecidable_history_is_unknown_not_a_pass() {
    let h = register_history(Shape { ops: 500, processes: 4, keys: 1, unknown: 0.0, seed: 1 });
    assert_eq!(check(&h, 0, 3).verdict, Verdict::Unknown);
}

#[test]
fn ten_thousand_ops_with_unknowns_cost_states_in_proportion() {
    // The cost is counted in search states, not time: deterministic, and what the
    // algorithm's promise (about linear in the history for a register) is about.
    for (ops, keys) in [(10_000, 10), (2_000, 2)] {
        let h = register_history(Shape { ops, processes: 10, keys, unknown: 0.02, seed: 7 });
        let r = check(&h, 0, DEFAULT_BUDGET);
        assert_eq!(r.verdict, Verdict::Pass, "{}", r.summary);
        let states: u64 = r.summary.split(", ").nth(1).and_then(|s| s.split(' ').next()?.parse().ok()).expect("states");
        assert!(states < 10 * ops as u64, "{ops} ops on {keys} keys: {states} states");
    }
}

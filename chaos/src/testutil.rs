//! Hand-made histories for the checkers' tests.

use crate::history::{Call, History, Op, Outcome, Ret};

/// Builds a history one op at a time; times are in ms.
#[derive(Default)]
pub struct Hist {
    pub h: History,
}

impl Hist {
    /// Adds an op of `process` on `key` from `a` to `b` ms; returns its id.
    #[allow(clippy::too_many_arguments)]
    pub fn op(&mut self, process: u64, key: &str, call: Call, outcome: Outcome, ret: Ret, a: u64, b: u64) -> usize {
        let id = self.h.ops.len();
        self.h.ops.push(Op {
            id,
            process,
            worker: process as usize,
            session: process as i64 + 1,
            node: 0,
            key: (!key.is_empty()).then(|| key.to_string()),
            call,
            outcome,
            ret,
            error: None,
            zxid: None,
            zxids: Vec::new(),
            invoke_ns: a * 1_000_000,
            complete_ns: b * 1_000_000,
            effects: Vec::new(),
            final_phase: false,
        });
        id
    }

    /// The last op added, to set more of its fields.
    pub fn last(&mut self) -> &mut Op {
        self.h.ops.last_mut().expect("an op was added")
    }

    /// A register read returning (value, version).
    pub fn read(&mut self, p: u64, key: &str, value: i64, version: i32, a: u64, b: u64) -> usize {
        self.op(p, key, Call::Read, Outcome::Ok, Ret::Value { value, version, mzxid: 0 }, a, b)
    }

    /// A register write that returned `version`.
    pub fn write(&mut self, p: u64, key: &str, value: i64, version: i32, a: u64, b: u64) -> usize {
        self.op(p, key, Call::Write { value }, Outcome::Ok, Ret::Version { version }, a, b)
    }
}

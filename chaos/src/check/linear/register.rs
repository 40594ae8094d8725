//! The register model: a znode's data and version, as ZooKeeper defines them. A write sets
//! the data and adds one to the version, a compare-and-set by version does so only when the
//! version matches (else it fails and changes nothing), a read returns both.
//!
//! The state may be partly unknown (`None`): a window of the history checked on its own
//! starts from "any state", which the first observation pins down. That is weaker than the
//! truth, so a window that cannot be linearized from any state proves a violation.
//!
//! Unknown writes whose value no read returned are given one placeholder value ([`HIDDEN`]):
//! nobody can tell them apart, so they become interchangeable (one class per kind and
//! expected version), which keeps histories with many lost writes cheap to search.

use std::collections::{HashMap, HashSet};

use super::wgl::{LinOp, Model};
use crate::history::{Call, Op, Ret};

/// The value of an unknown write nobody read.
pub const HIDDEN: i64 = i64::MIN;

/// A register's state; `None` fields are not known yet (a window's start).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RegState {
    pub value: Option<i64>,
    pub version: Option<i32>,
}

impl RegState {
    /// A register created with `value` at version 0.
    pub fn initial(value: i64) -> RegState {
        RegState { value: Some(value), version: Some(0) }
    }

    /// Any state at all.
    pub fn any() -> RegState {
        RegState { value: None, version: None }
    }
}

/// What an op did to the register.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RegIn {
    Read,
    Write(i64),
    Cas { version: i32, value: i64 },
}

/// What it said.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RegOut {
    Read {
        value: i64,
        version: i32,
    },
    /// The version after a write or cas.
    Version(i32),
    /// A cas that failed with BADVERSION.
    Failed,
}

/// The model.
pub struct Register;

fn matches<T: PartialEq>(known: Option<T>, seen: T) -> bool {
    known.is_none_or(|k| k == seen)
}

impl Model for Register {
    type State = RegState;
    type Input = RegIn;
    type Output = RegOut;

    fn step(&self, s: &RegState, input: &RegIn, output: Option<&RegOut>) -> Option<RegState> {
        let next = |value, version| Some(RegState { value: Some(value), version });
        match (*input, output.copied()) {
            (RegIn::Read, Some(RegOut::Read { value, version })) => (matches(s.value, value)
                && matches(s.version, version))
            .then_some(RegState { value: Some(value), version: Some(version) }),
            (RegIn::Write(v), Some(RegOut::Version(after))) => {
                matches(s.version, after - 1).then_some(())?;
                next(v, Some(after))
            }
            (RegIn::Write(v), None) => next(v, s.version.map(|x| x + 1)),
            (RegIn::Cas { version, value }, Some(RegOut::Version(after))) => {
                (after == version + 1 && matches(s.version, version)).then_some(())?;
                next(value, Some(after))
            }
            // A failed cas saw another version; from an unknown version that may be so.
            (RegIn::Cas { version, .. }, Some(RegOut::Failed)) => (s.version != Some(version)).then_some(*s),
            // An unknown cas matters only where it succeeds.
            (RegIn::Cas { version, value }, None) => {
                matches(s.version, version).then_some(())?;
                next(value, Some(version + 1))
            }
            _ => None,
        }
    }

    /// A state with fewer known fields allows more: `Any` dominates every state.
    fn dominates(&self, a: &RegState, b: &RegState) -> bool {
        a.value.is_none_or(|v| b.value == Some(v)) && a.version.is_none_or(|v| b.version == Some(v))
    }
}

/// How an op of the history enters a check.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// With its outcome, as recorded.
    AsRecorded,
    /// As if its outcome were unknown (a window's relaxation): a read drops out, a write may
    /// or may not have happened.
    Relaxed,
}

/// The register ops of one key, turned into the search's ops. Reads that did not succeed
/// change nothing and are left out, and so are failed writes other than a cas's BADVERSION;
/// unknown writes become optional, with [`HIDDEN`] values and classes when nobody read them.
pub fn lin_ops(ops: &[(&Op, Role)]) -> Vec<LinOp<RegIn, RegOut>> {
    let mut seen: HashSet<i64> = HashSet::new();
    for (op, role) in ops {
        if let (Role::AsRecorded, true, Ret::Value { value, .. }) = (role, op.ok(), &op.ret) {
            seen.insert(*value);
        }
    }
    let mut classes: HashMap<(u8, i32), u32> = HashMap::new();
    let mut out = Vec::with_capacity(ops.len());
    for (op, role) in ops {
        let relaxed = *role == Role::Relaxed || op.outcome == crate::history::Outcome::Unknown;
        let input = match op.call {
            Call::Read => RegIn::Read,
            Call::Write { value } => RegIn::Write(value),
            Call::Cas { version, value, .. } => RegIn::Cas { version, value },
            _ => continue,
        };
        if relaxed {
            if input == RegIn::Read {
                continue;
            }
            let (kind, version, value) = match input {
                RegIn::Write(v) => (0u8, 0, v),
                RegIn::Cas { version, value } => (1u8, version, value),
                RegIn::Read => unreachable!("reads are left out above"),
            };
            let (input, class) = if seen.contains(&value) {
                (input, None)
            } else {
                let n = classes.len() as u32;
                let class = *classes.entry((kind, version)).or_insert(n);
                let hidden = if kind == 0 { RegIn::Write(HIDDEN) } else { RegIn::Cas { version, value: HIDDEN } };
                (hidden, Some(class))
            };
            out.push(LinOp { call: op.invoke_ns, ret: None, input, output: None, class, tag: op.id });
            continue;
        }
        let output = match (&op.call, op.ok(), &op.ret) {
            (Call::Read, true, Ret::Value { value, version, .. }) => RegOut::Read { value: *value, version: *version },
            (Call::Write { .. } | Call::Cas { .. }, true, Ret::Version { version }) => RegOut::Version(*version),
            (Call::Cas { .. }, false, _) if op.error.as_deref() == Some("BADVERSION") => RegOut::Failed,
            // It happened, but its reply carried no version: it took effect, version unknown.
            (Call::Write { .. } | Call::Cas { .. }, true, _) => {
                out.push(LinOp {
                    call: op.invoke_ns,
                    ret: Some(op.complete_ns),
                    input,
                    output: None,
                    class: None,
                    tag: op.id,
                });
                continue;
            }
            // A failed read, or a write that failed for another definite reason: no effect.
            _ => continue,
        };
        out.push(LinOp {
            call: op.invoke_ns,
            ret: Some(op.complete_ns),
            input,
            output: Some(output),
            class: None,
            tag: op.id,
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(value: i64, version: i32) -> RegState {
        RegState { value: Some(value), version: Some(version) }
    }

    #[test]
    fn versions_count_writes_and_a_cas_needs_its_version() {
        let m = Register;
        assert_eq!(m.step(&s(0, 0), &RegIn::Write(5), Some(&RegOut::Version(1))), Some(s(5, 1)));
        assert_eq!(m.step(&s(0, 0), &RegIn::Write(5), Some(&RegOut::Version(2))), None);
        assert_eq!(m.step(&s(5, 1), &RegIn::Cas { version: 1, value: 6 }, Some(&RegOut::Version(2))), Some(s(6, 2)));
        assert_eq!(m.step(&s(5, 1), &RegIn::Cas { version: 0, value: 6 }, Some(&RegOut::Failed)), Some(s(5, 1)));
        assert_eq!(m.step(&s(5, 1), &RegIn::Cas { version: 1, value: 6 }, Some(&RegOut::Failed)), None);
        assert_eq!(m.step(&s(5, 1), &RegIn::Cas { version: 0, value: 6 }, None), None);
        assert_eq!(m.step(&s(5, 1), &RegIn::Read, Some(&RegOut::Read { value: 5, version: 1 })), Some(s(5, 1)));
        assert_eq!(m.step(&s(5, 1), &RegIn::Read, Some(&RegOut::Read { value: 5, version: 2 })), None);
    }

    #[test]
    fn any_state_is_pinned_by_the_first_observation() {
        let m = Register;
        let any = RegState::any();
        assert_eq!(m.step(&any, &RegIn::Read, Some(&RegOut::Read { value: 3, version: 7 })), Some(s(3, 7)));
        assert_eq!(m.step(&any, &RegIn::Write(4), None), Some(RegState { value: Some(4), version: None }));
        assert_eq!(m.step(&any, &RegIn::Cas { version: 2, value: 4 }, Some(&RegOut::Failed)), Some(any));
    }
}

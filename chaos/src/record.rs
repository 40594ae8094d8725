//! The embedded cluster's own record of the run, for the white-box checks: what the shared
//! tap (`testkeeper_server::cluster::tap`) saw every node apply, the roles they took and the
//! states they loaded, turned into the history's terms (ns since the run started, effects).

use std::time::Instant;

use testkeeper_server::cluster::tap::TapLog;
use testkeeper_server::core::txn::{Op as TxnOp, Txn};

use crate::history::{AppliedEntry, ClusterRecord, Effect, RoleChange, StateLoad};

/// What an entry changed, in the history's terms. A session's end (its ephemerals deleted)
/// is left out: no client acknowledged it as a write.
pub fn effects(txn: &Txn) -> Vec<Effect> {
    let Txn::Ops(ops) = txn else { return Vec::new() };
    let mut out = Vec::new();
    for op in ops {
        match op {
            TxnOp::Create(c) => out.push(Effect {
                kind: "create".into(),
                path: c.path.clone(),
                data: Some(c.data.clone().unwrap_or_default()),
            }),
            TxnOp::SetData { path, data, .. } => out.push(Effect {
                kind: "set".into(),
                path: path.clone(),
                data: Some(data.clone().unwrap_or_default()),
            }),
            TxnOp::Delete { path } => out.push(Effect { kind: "delete".into(), path: path.clone(), data: None }),
            TxnOp::DeleteMany { paths } => {
                out.extend(paths.iter().map(|p| Effect { kind: "delete".into(), path: p.clone(), data: None }))
            }
            TxnOp::SetAcl { .. } | TxnOp::Check { .. } | TxnOp::Nothing { .. } => {}
        }
    }
    out
}

/// The tap's log as the history's [`ClusterRecord`] (`final_digests` left for the caller).
pub fn from_tap(log: &TapLog, start: Instant) -> ClusterRecord {
    let ns = |t: Instant| t.saturating_duration_since(start).as_nanos() as u64;
    ClusterRecord {
        applied: (log.applied.iter())
            .map(|a| AppliedEntry {
                node: a.node,
                index: a.entry.index(),
                term: a.entry.term(),
                zxid: a.entry.zxid(),
                digest: a.digest,
                at_ns: ns(a.at),
                effects: effects(a.entry.txn()),
            })
            .collect(),
        roles: (log.roles.iter())
            .map(|r| RoleChange { node: r.node, term: r.term, role: r.role.name().into(), at_ns: ns(r.at) })
            .collect(),
        loads: (log.loads.iter())
            .map(|l| StateLoad { node: l.node, index: l.index, digest: l.digest, how: l.how.into(), at_ns: ns(l.at) })
            .collect(),
        final_digests: Vec::new(),
    }
}

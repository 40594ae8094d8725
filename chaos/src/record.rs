//! The embedded cluster's own record of the run, for the white-box checks: what the shared
//! tap (`testkeeper_server::cluster::tap`) saw every node apply, the roles they took and the
//! states they loaded, turned into the history's terms (ns since the run started, effects).

use std::collections::BTreeMap;

// tokio's clock, not std's: under `testkeeper sim` it is the simulation's paused clock.
use tokio::time::Instant;

use testkeeper_server::cluster::tap::TapLog;
use testkeeper_server::core::txn::{Op as TxnOp, Txn};

use crate::check::whitebox::{CommittedEntry, Crash, LeaderSeen, NodeApplied, WhiteBox};
use crate::history::{AppliedEntry, ClusterRecord, Effect, NemesisEvent, RoleChange, StateLoad};

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

/// What the white-box checks read, from the cluster's record and the nemesis windows that ran
/// (each kill, kill of the leader and lost tail is a crash of the node its detail names).
pub fn whitebox(rec: &ClusterRecord, nemesis: &[NemesisEvent]) -> WhiteBox {
    let mut applied: BTreeMap<u64, NodeApplied> = BTreeMap::new();
    // Only committed entries are applied, but a cluster that loses what it acknowledged (every
    // node's tail gone at once) applies another entry at the same index later: the latest
    // entry applied at an index, by any node, is the one the final log holds (the digest
    // check compares the nodes).
    let mut committed: BTreeMap<u64, CommittedEntry> = BTreeMap::new();
    for a in &rec.applied {
        let n = applied.entry(a.node).or_insert_with(|| NodeApplied { node: a.node as usize, digests: Vec::new() });
        n.digests.push((a.index, a.digest));
        committed.insert(a.index, CommittedEntry { index: a.index, term: a.term, effects: a.effects.clone() });
    }
    let leaders = (rec.roles.iter())
        .filter(|r| r.role == "leader")
        .map(|r| LeaderSeen { term: r.term, node: r.node as usize, at_ns: r.at_ns })
        .collect();
    let nodes: std::collections::BTreeSet<u64> = rec.applied.iter().map(|a| a.node).collect();
    let every = (nemesis.iter())
        .filter(|e| e.kind == "crash-all")
        .flat_map(|e| nodes.iter().map(move |n| Crash { node: *n as usize, at_ns: e.start_ns }));
    let crashes = (nemesis.iter())
        .filter(|e| matches!(e.kind.as_str(), "kill" | "kill-leader" | "lose-tail"))
        .filter_map(|e| {
            let node =
                e.detail.strip_prefix("killed node ")?.split(|c: char| !c.is_ascii_digit()).next()?.parse().ok()?;
            Some(Crash { node, at_ns: e.start_ns })
        })
        .chain(every)
        .collect();
    WhiteBox {
        applied: applied.into_values().collect(),
        leaders,
        committed: committed.into_values().collect(),
        crashes,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crashes_come_from_the_kill_windows_and_the_log_from_every_node() {
        let entry = |node, index, digest| AppliedEntry {
            node,
            index,
            term: 1,
            zxid: index as i64,
            digest,
            at_ns: 0,
            effects: vec![],
        };
        let rec = ClusterRecord {
            applied: vec![entry(1, 1, 10), entry(2, 1, 10), entry(2, 2, 20)],
            roles: vec![RoleChange { node: 2, term: 1, role: "leader".into(), at_ns: 5 }],
            ..Default::default()
        };
        let ev = |kind: &str, detail: &str| NemesisEvent {
            kind: kind.into(),
            detail: detail.into(),
            start_ns: 7,
            end_ns: None,
        };
        let wb = whitebox(&rec, &[ev("kill-leader", "killed node 3, the leader"), ev("pause", "paused node 1")]);
        assert_eq!(wb.crashes, vec![Crash { node: 3, at_ns: 7 }]);
        assert_eq!(wb.committed.iter().map(|e| e.index).collect::<Vec<_>>(), vec![1, 2]);
        assert_eq!(wb.applied.len(), 2);
        assert_eq!(wb.leaders, vec![LeaderSeen { term: 1, node: 2, at_ns: 5 }]);
    }
}

//! The ADR's invariants, checked after each chaos run against what the *server* saw (its fault
//! event log, where tap rules record every mutation of the row, the queue and the
//! generations) and what the tree holds, not only against the publisher's own bookkeeping.

use std::collections::BTreeMap;

use testkeeper_server::faults::FaultEvent;

use crate::authority::{Authority, Phase};
use crate::ddl::{queue_entries, DdlEntry, ExecutionStatus};
use crate::keepermap::decode_row_value;
use crate::link::Link;
use crate::report::{Outcome, Report};

/// The tree after a run, read on a fresh session.
#[derive(Debug, Default)]
pub struct Observed {
    pub row: Option<(Authority, i32)>,
    /// Queue entries whose `log_comment` is the run's token.
    pub token_entries: Vec<String>,
    /// host -> finished status code (None: absent or malformed), for the token's entry.
    pub finished: BTreeMap<String, Option<i32>>,
    /// host -> generation table its replica holds.
    pub replicas: BTreeMap<String, String>,
    /// Generation nodes present.
    pub generations: Vec<String>,
}

/// Reads what the checks need.
///
/// # Errors
/// Keeper unreadable.
pub async fn observe(
    link: &mut Link,
    report: &Report,
    queue: &str,
    sim_root: &str,
    hosts: &[String],
) -> Result<Observed, crate::link::LinkError> {
    let mut o = Observed::default();
    if let Some((d, st)) = link.get(&report.row_path).await? {
        let a = decode_row_value(&d).and_then(|s| Authority::from_text(&s)).ok_or_else(|| {
            crate::link::LinkError::Unexpected {
                op: "getData",
                path: report.row_path.clone(),
                answer: "a row that is not an authority".into(),
            }
        })?;
        o.row = Some((a, st.version));
    }
    let token = o.row.as_ref().and_then(|(a, _)| a.ddl_token.clone());
    for name in queue_entries(link.children(queue).await?.unwrap_or_default()) {
        let Some((d, _)) = link.get(&format!("{queue}/{name}")).await? else { continue };
        let e = DdlEntry::parse(&String::from_utf8_lossy(&d));
        if token.is_some() && e.and_then(|e| e.log_comment) == token {
            o.token_entries.push(name);
        }
    }
    if let Some(entry) = o.token_entries.first() {
        for h in hosts {
            let st = link.get(&format!("{queue}/{entry}/finished/{h}")).await?;
            o.finished.insert(
                h.clone(),
                st.and_then(|(d, _)| ExecutionStatus::parse(&String::from_utf8_lossy(&d))).map(|s| s.code),
            );
        }
    }
    for h in hosts {
        if let Some((d, _)) = link.get(&format!("{sim_root}/replicas/{h}")).await? {
            o.replicas.insert(h.clone(), String::from_utf8_lossy(&d).into_owned());
        }
    }
    o.generations = link.children(&format!("{sim_root}/generations")).await?.unwrap_or_default();
    Ok(o)
}

/// Events that mean "the server dispatched this write" (taps and dropped replies; reads of
/// the same paths are not mutations).
fn dispatched(e: &FaultEvent) -> bool {
    e.applied
        && matches!(e.kind, "delay" | "drop-response")
        && matches!(e.op, "create" | "setData" | "delete" | "multi")
}

/// Every violated invariant, as a sentence.
pub fn check(
    report: &Report,
    events: &[FaultEvent],
    o: &Observed,
    queue: &str,
    sim_root: &str,
    sessions: &[i64],
) -> Vec<String> {
    let mut v = Vec::new();
    let mut per_epoch: BTreeMap<(&str, u64), usize> = BTreeMap::new();
    for p in &report.permits {
        *per_epoch.entry((p.kind, p.epoch)).or_default() += 1;
        let src = report.journal.iter().find(|s| (s.session, s.xid) == p.from);
        if src.map(|s| s.outcome.as_str()) != Some("ok") {
            v.push(format!("{} permit for epoch {} rests on a request without an acknowledged reply", p.kind, p.epoch));
        }
    }
    v.extend(per_epoch.iter().filter(|(_, n)| **n > 1).map(|((k, e), n)| format!("{n} {k} permits for epoch {e}")));

    let row_mutations =
        events.iter().filter(|e| dispatched(e) && e.path.as_deref() == Some(report.row_path.as_str())).count();
    let applied = o.row.as_ref().map_or(0, |(_, ver)| *ver as usize + 1);
    if row_mutations != applied {
        v.push(format!("server saw {row_mutations} authority mutations for {applied} applied changes: a mutation was repeated or sent blind"));
    }
    let enqueues = events
        .iter()
        .filter(|e| dispatched(e) && e.path.as_deref() == Some(format!("{queue}/query-").as_str()))
        .count();
    if enqueues > 1 || o.token_entries.len() > 1 {
        v.push(format!("DDL enqueued {enqueues} times ({} entries carry the token)", o.token_entries.len()));
    }
    if report.ddl_entry.is_some() && o.token_entries.len() != 1 {
        v.push("publisher names a DDL entry the tree does not hold exactly once".into());
    }
    for e in events.iter().filter(|e| e.kind == "drop-response" && sessions.contains(&e.session)) {
        let Some(s) = report.journal.iter().find(|s| (s.session, s.xid) == (e.session, e.xid)) else { continue };
        if s.what != "read" && s.outcome != "unknown" {
            v.push(format!("{} at xid {} lost its reply but was recorded as {}", s.what, s.xid, s.outcome));
        }
        if report.permits.iter().any(|p| p.from == (e.session, e.xid)) {
            v.push(format!("a permit came from {} whose reply was lost", s.what));
        }
    }
    let phase = o.row.as_ref().map(|(a, _)| a.phase);
    let gen = o.row.as_ref().map(|(a, _)| a.generation.table.clone()).unwrap_or_default();
    let reached_published = matches!(phase, Some(Phase::Published | Phase::Cleanup))
        || (phase == Some(Phase::Idle) && o.row.as_ref().is_some_and(|(a, _)| a.epoch > 0));
    let done = report.outcome == Some(Outcome::Completed) || reached_published;
    if done
        && (o.finished.is_empty()
            || o.finished.values().any(|c| *c != Some(0))
            || o.replicas.len() != o.finished.len()
            || o.replicas.values().any(|g| *g != gen))
    {
        v.push(format!(
            "row reached {:?} without one success and the exact generation per host",
            phase.map(Phase::name)
        ));
    }
    let gens = format!("{sim_root}/generations/");
    let deletes: Vec<_> = events
        .iter()
        .filter(|e| dispatched(e) && e.op == "delete" && e.path.as_deref().is_some_and(|p| p.starts_with(&gens)))
        .collect();
    let target = &report.target;
    if deletes.len() > 1 || deletes.iter().any(|e| e.path.as_deref() != Some(&format!("{gens}{target}__genesis"))) {
        v.push(format!(
            "cleanup deleted {:?}, not exactly the predecessor",
            deletes.iter().map(|e| e.path.clone()).collect::<Vec<_>>()
        ));
    }
    if !o.generations.iter().any(|g| *g == format!("{target}__unrelated")) {
        v.push("an unrelated generation was removed".into());
    }
    if !deletes.is_empty() && !matches!(phase, Some(Phase::Cleanup | Phase::Idle)) {
        v.push("predecessor removed without the cleanup phase".into());
    }
    v
}

//! One publication, end to end: bootstrap the row if absent, admit (CAS + read-back = dispatch
//! permit), send the DDL once, wait for evidence, publish or fail closed, then a separately
//! fenced cleanup of the exact predecessor and back to idle.
//!
//! Every row change goes through [`cas`]; every side effect needs the permit the CAS before it
//! produced. A lost reply on any mutation stops the run with `Outcome::Unknown` and no permit.

use testkeeper_wire::records::create::create_mode;
use testkeeper_wire::records::data::{DeleteRequest, SetDataRequest};
use testkeeper_wire::{Request, Response};

use crate::authority::{digest, Authority, Generation, Phase, TableIdentity};
use crate::ddl::{queue_entries, DdlEntry, ENTRY_VERSION};
use crate::evidence::{self, Verdict};
use crate::hosts::host_id;
use crate::keepermap::{decode_row_value, encode_row_value, TableLayout};
use crate::link::{Link, Outcome as Sent};
use crate::report::{Outcome, Permit, Report, Unknown};
use crate::{create_request, Config};

/// Why a run stopped early.
struct Stop(Outcome, String);

/// Derived, deterministic names of one publication.
struct Plan<'a> {
    cfg: &'a Config,
    layout: TableLayout,
    row: String,
    gens: String,
    replicas: String,
    hosts: Vec<String>,
}

/// Runs one publication over `link` and reports everything it did.
pub async fn publish(link: &mut Link, cfg: &Config) -> Report {
    let layout = TableLayout::new(&cfg.keeper_map_prefix, &cfg.table);
    let plan = Plan {
        row: layout.row_path(&cfg.target),
        layout,
        gens: format!("{}/generations", cfg.sim_root),
        replicas: format!("{}/replicas", cfg.sim_root),
        hosts: (0..cfg.hosts).map(host_id).collect(),
        cfg,
    };
    let mut report = Report { target: cfg.target.clone(), row_path: plan.row.clone(), ..Report::default() };
    let (outcome, reason) = match steps(link, &plan, &mut report).await {
        Ok(()) => (Outcome::Completed, String::new()),
        Err(Stop(o, r)) => (o, r),
    };
    report.outcome = Some(outcome);
    report.reason = reason;
    if let Ok(Some((data, stat))) = link.get(&plan.row).await {
        report.final_row = decode_row_value(&data);
        report.final_row_version = Some(stat.version);
    }
    report.journal = link.journal.clone();
    report
}

fn err(e: impl std::fmt::Display) -> Stop {
    Stop(Outcome::Error, e.to_string())
}

async fn ensure_path(link: &mut Link, path: &str) -> Result<(), Stop> {
    let mut cur = String::new();
    for part in path.split('/').filter(|p| !p.is_empty()) {
        cur.push('/');
        cur.push_str(part);
        link.ensure_node(&cur, b"").await.map_err(err)?;
    }
    Ok(())
}

async fn read_row(link: &mut Link, plan: &Plan<'_>) -> Result<Option<(Authority, i32, Vec<u8>)>, Stop> {
    match link.get(&plan.row).await.map_err(err)? {
        None => Ok(None),
        Some((data, stat)) => {
            let auth = decode_row_value(&data).and_then(|s| Authority::from_text(&s));
            let auth = auth.ok_or_else(|| Stop(Outcome::Refused, "authority row is not well-formed".into()))?;
            Ok(Some((auth, stat.version, data)))
        }
    }
}

/// Records an unknown outcome after a re-read (which never yields a permit), and stops.
async fn unknown(
    link: &mut Link,
    report: &mut Report,
    from: (i64, i32),
    what: &str,
    path: &str,
    written: Option<&[u8]>,
) -> Stop {
    let reread = match (link.get(path).await, written) {
        (Ok(Some((d, _))), Some(w)) if d == w => "applied",
        (Ok(None), None) => "applied",
        (Ok(_), _) => "not-applied",
        (Err(_), _) => "unreadable",
    };
    report.unknowns.push(Unknown { what: what.into(), path: path.into(), from, reread: reread.into() });
    Stop(Outcome::Unknown, format!("{what}: reply lost, outcome unknown (re-read: {reread})"))
}

/// The CAS from `cur` (at `version`) to `next`, then the exact read-back. Returns the new
/// version and the (session, xid) of the CAS.
async fn cas(
    link: &mut Link,
    plan: &Plan<'_>,
    report: &mut Report,
    cur: &Authority,
    version: i32,
    next: &Authority,
) -> Result<(i32, (i64, i32)), Stop> {
    cur.check_transition(next).map_err(|e| Stop(Outcome::Refused, e.to_string()))?;
    let data = encode_row_value(&next.to_text());
    let what = format!("authority:{}", next.phase.name());
    let first = link.journal.len();
    let req = Request::SetData(SetDataRequest { path: plan.row.clone(), data: Some(data.clone()), version });
    let out = link.mutate(&what, &plan.row, req).await;
    let from = link.journal.get(first).map_or((0, 0), |s| (s.session, s.xid));
    match out {
        Sent::Acked(_) => {}
        Sent::Rejected(e) => return Err(Stop(Outcome::Refused, format!("{what}: CAS refused: {}", e.name()))),
        Sent::Unknown(_) => return Err(unknown(link, report, from, &what, &plan.row, Some(&data)).await),
    }
    match link.get(&plan.row).await.map_err(err)? {
        Some((d, stat)) if stat.version == version + 1 && d == data => {
            report.phases.push(next.phase.name().into());
            Ok((stat.version, from))
        }
        _ => Err(Stop(
            Outcome::Refused,
            format!("{what}: read-back is not exactly version {} with our content", version + 1),
        )),
    }
}

fn table_identity(target: &str) -> TableIdentity {
    let d = digest(&["uuid", target]);
    let uuid = format!("{}-{}-{}-{}-{}", &d[0..8], &d[8..12], &d[12..16], &d[16..20], &d[20..32]);
    let path = format!("/clickhouse/tables/01/{}", target.replace('.', "/"));
    TableIdentity {
        uuid,
        engine: format!("ReplicatedMergeTree('{path}', '{{replica}}')"),
        schema: "(id UInt64, value String) ORDER BY id".into(),
        keeper_paths: vec![path],
    }
}

async fn steps(link: &mut Link, plan: &Plan<'_>, report: &mut Report) -> Result<(), Stop> {
    let cfg = plan.cfg;
    for (path, data) in plan.layout.skeleton() {
        ensure_path(link, parent(&path)).await?;
        link.ensure_node(&path, &data).await.map_err(err)?;
    }
    for p in [&cfg.ddl_queue, &plan.gens, &plan.replicas] {
        ensure_path(link, p).await?;
    }
    // A generation no publication of this target owns: cleanup must never touch it.
    link.ensure_node(&format!("{}/{}__unrelated", plan.gens, cfg.target), b"keep").await.map_err(err)?;

    if read_row(link, plan).await?.is_none() {
        bootstrap(link, plan, report).await?;
    }
    let (cur, version, _) = read_row(link, plan).await?.ok_or_else(|| err("row vanished"))?;
    if cur.phase != Phase::Idle {
        return Err(Stop(Outcome::Refused, format!("row is {} at epoch {}, not idle", cur.phase.name(), cur.epoch)));
    }
    let epoch = cur.epoch + 1;
    let inventory = digest(&["inventory", &cfg.target, &cfg.seed.to_string()]);
    let gen_digest = digest(&[&inventory, &epoch.to_string()]);
    let staged = Generation { table: format!("{}__g{epoch}_{}", cfg.target, &gen_digest[..8]), digest: gen_digest };
    link.ensure_node(&format!("{}/{}", plan.gens, staged.table), staged.digest.as_bytes()).await.map_err(err)?;
    let token = format!("tkp-{}", &digest(&["token", &cfg.target, &cfg.seed.to_string(), &epoch.to_string()])[..24]);
    let admitted = Authority {
        phase: Phase::Admitted,
        epoch,
        operation_id: Some(digest(&["full_refresh", &cfg.target, &cfg.seed.to_string()])[..16].to_string()),
        inventory_digest: Some(inventory),
        generation: staged.clone(),
        predecessor: Some(cur.generation.clone()),
        ddl_token: Some(token.clone()),
        ..cur.clone()
    };
    let (version, from) = cas(link, plan, report, &cur, version, &admitted).await?;
    report.permits.push(Permit { kind: "dispatch", target: cfg.target.clone(), epoch, row_version: version, from });

    let entry_path = enqueue_once(link, plan, report, &staged, &token).await?;
    let (verdict, hosts) =
        evidence::wait(link, &entry_path, &plan.hosts, &plan.replicas, &staged.table, cfg.evidence_timeout)
            .await
            .map_err(err)?;
    report.evidence = hosts;
    match verdict {
        Verdict::Complete => {}
        Verdict::Pending => {
            return Err(Stop(Outcome::StillRunning, "hosts still active; the DDL goes on in the background".into()))
        }
        Verdict::FailClosed(why) => {
            let failed = Authority { phase: Phase::FailedClosed, ..admitted.clone() };
            cas(link, plan, report, &admitted, version, &failed).await?;
            return Err(Stop(Outcome::FailedClosed, why));
        }
    }
    let published = Authority { phase: Phase::Published, ..admitted.clone() };
    let (version, _) = cas(link, plan, report, &admitted, version, &published).await?;
    let cleanup = Authority { phase: Phase::Cleanup, ..published.clone() };
    let (version, from) = cas(link, plan, report, &published, version, &cleanup).await?;
    report.permits.push(Permit { kind: "cleanup", target: cfg.target.clone(), epoch, row_version: version, from });
    remove_predecessor(link, plan, report, &cur.generation).await?;
    let idle = Authority { phase: Phase::Idle, predecessor: None, ..cleanup.clone() };
    cas(link, plan, report, &cleanup, version, &idle).await?;
    Ok(())
}

fn parent(path: &str) -> &str {
    path.rsplit_once('/').map_or("/", |(p, _)| p)
}

/// The first row: idle at epoch 0 with a genesis generation (what an earlier, unbounded
/// publication left). A create, sent once like every authority mutation.
async fn bootstrap(link: &mut Link, plan: &Plan<'_>, report: &mut Report) -> Result<(), Stop> {
    let cfg = plan.cfg;
    let genesis = Generation { table: format!("{}__genesis", cfg.target), digest: digest(&["genesis", &cfg.target]) };
    link.ensure_node(&format!("{}/{}", plan.gens, genesis.table), genesis.digest.as_bytes()).await.map_err(err)?;
    let row = Authority {
        format: 1,
        target: cfg.target.clone(),
        phase: Phase::Idle,
        epoch: 0,
        operation_id: None,
        inventory_digest: None,
        generation: genesis,
        predecessor: None,
        table: table_identity(&cfg.target),
        ddl_token: None,
    };
    let data = encode_row_value(&row.to_text());
    let first = link.journal.len();
    let out = link.mutate("authority:bootstrap", &plan.row, create_request(&plan.row, &data, 0)).await;
    let from = link.journal.get(first).map_or((0, 0), |s| (s.session, s.xid));
    match out {
        Sent::Acked(_) => {
            report.phases.push("bootstrap".into());
            Ok(())
        }
        Sent::Rejected(e) => Err(Stop(Outcome::Refused, format!("bootstrap create refused: {}", e.name()))),
        Sent::Unknown(_) => Err(unknown(link, report, from, "authority:bootstrap", &plan.row, Some(&data)).await),
    }
}

/// Sends the DDL entry exactly once; after a lost reply it is looked for only by its token.
async fn enqueue_once(
    link: &mut Link,
    plan: &Plan<'_>,
    report: &mut Report,
    staged: &Generation,
    token: &str,
) -> Result<String, Stop> {
    let cfg = plan.cfg;
    let (db, table) = cfg.target.split_once('.').unwrap_or(("default", &cfg.target));
    let staged_name = staged.table.rsplit_once('.').map_or(staged.table.as_str(), |(_, t)| t);
    let entry = DdlEntry {
        version: ENTRY_VERSION,
        query: format!("EXCHANGE TABLES `{db}`.`{table}` AND `{db}`.`{staged_name}` ON CLUSTER publisher"),
        hosts: plan.hosts.clone(),
        initiator: "testkeeper-publisher".into(),
        log_comment: Some(token.into()),
    };
    let text = entry.to_text();
    report.ddl_text = Some(text.clone());
    let prefix = format!("{}/query-", cfg.ddl_queue);
    let first = link.journal.len();
    let out = link
        .mutate("ddl:enqueue", &prefix, create_request(&prefix, text.as_bytes(), create_mode::PERSISTENT_SEQUENTIAL))
        .await;
    let from = link.journal.get(first).map_or((0, 0), |s| (s.session, s.xid));
    let path = match out {
        Sent::Acked(Response::Create(p)) => p,
        Sent::Acked(other) => return Err(err(format!("enqueue: unexpected reply {other:?}"))),
        Sent::Rejected(e) => return Err(err(format!("enqueue refused: {}", e.name()))),
        Sent::Unknown(_) => {
            let found = find_by_token(link, &cfg.ddl_queue, token).await.map_err(err)?;
            let reread = if found.is_some() { "applied" } else { "not-applied" };
            report.unknowns.push(Unknown { what: "ddl:enqueue".into(), path: prefix, from, reread: reread.into() });
            found.ok_or_else(|| {
                Stop(Outcome::Unknown, "ddl:enqueue: reply lost and no entry carries the token; not re-sent".into())
            })?
        }
    };
    report.ddl_entry = path.rsplit_once('/').map(|(_, n)| n.to_string());
    Ok(path)
}

/// The queue entry whose `settings['log_comment']` is `token` (scan, parse settings).
///
/// # Errors
/// Keeper unreadable.
pub async fn find_by_token(
    link: &mut Link,
    queue: &str,
    token: &str,
) -> Result<Option<String>, crate::link::LinkError> {
    for name in queue_entries(link.children(queue).await?.unwrap_or_default()).into_iter().rev() {
        let path = format!("{queue}/{name}");
        if let Some((data, _)) = link.get(&path).await? {
            if DdlEntry::parse(&String::from_utf8_lossy(&data)).and_then(|e| e.log_comment).as_deref() == Some(token) {
                return Ok(Some(path));
            }
        }
    }
    Ok(None)
}

/// Deletes the predecessor generation, only if it is exactly the one the row names.
async fn remove_predecessor(
    link: &mut Link,
    plan: &Plan<'_>,
    report: &mut Report,
    pred: &Generation,
) -> Result<(), Stop> {
    let path = format!("{}/{}", plan.gens, pred.table);
    let Some((data, stat)) = link.get(&path).await.map_err(err)? else {
        return Err(Stop(Outcome::Refused, format!("predecessor {} is gone", pred.table)));
    };
    if data != pred.digest.as_bytes() {
        return Err(Stop(Outcome::Refused, format!("predecessor {} is not the exact generation", pred.table)));
    }
    let first = link.journal.len();
    let out = link
        .mutate("cleanup:delete", &path, Request::Delete(DeleteRequest { path: path.clone(), version: stat.version }))
        .await;
    let from = link.journal.get(first).map_or((0, 0), |s| (s.session, s.xid));
    match out {
        Sent::Acked(_) => {
            report.removed = Some(pred.table.clone());
            Ok(())
        }
        Sent::Rejected(e) => Err(Stop(Outcome::Refused, format!("cleanup refused: {}", e.name()))),
        Sent::Unknown(_) => Err(unknown(link, report, from, "cleanup:delete", &path, None).await),
    }
}

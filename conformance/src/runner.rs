//! Runs one scenario against one server (or one ensemble) and returns its normalized
//! transcript.
//!
//! Every request waits for its reply before the next goes out, and after each step every open
//! session pings: replies and events are FIFO per connection, so once the ping is answered
//! every event the step caused has arrived. That makes event lists exact ("exactly once")
//! without any sleep. What the scenario created (as its replies say) is deleted afterwards,
//! deepest first, and nothing else: a node someone else put under `~` stays, and is reported.

use std::cmp::Reverse;
use std::net::SocketAddr;
use std::time::Duration;

use serde_json::{json, Value};
use testkeeper_wire::client::Client;
use testkeeper_wire::records::data::PathRecord;
use testkeeper_wire::{Request, ZkError};

use crate::ops::resolve;
use crate::probes;
use crate::race;
use crate::reply::{code_name, created_paths, response_json};
use crate::scenario::{Scenario, Step};
use crate::sessions::{Sessions, CALL_TIMEOUT};
use crate::transcript::{mask_foreign, normalize, Line};

/// Where and how a scenario runs.
#[derive(Debug, Clone)]
pub struct RunCtx {
    /// The servers; node `k` of a scenario is `nodes[k % len]`.
    pub nodes: Vec<SocketAddr>,
    /// Bound on a `wait-gone` step (container and TTL collection).
    pub collect_wait: Duration,
}

/// A scenario's transcript plus what went wrong outside it.
#[derive(Debug, Clone)]
pub struct Run {
    pub lines: Vec<Line>,
    /// Setup or cleanup trouble (kept out of the transcript so transcripts still compare).
    pub problems: Vec<String>,
}

/// Runs `sc` with its subtree at `<root>/<name>`, using `admin` for setup and cleanup.
pub async fn run_scenario(ctx: &RunCtx, admin: &Client, root: &str, sc: &Scenario) -> Run {
    let base = format!("{root}/{}", sc.name);
    let mut problems = Vec::new();
    let read_only = sc.read_only();
    // The scenario's "before": everything at or below this zxid normalizes to `pre`.
    let setup = if read_only {
        admin.call(Request::Sync(PathRecord { path: "/".into() })).await
    } else {
        admin.call(crate::parse::op("create ~ \"\"").expect("static op").request(&base)).await
    };
    let base_zxid = match setup {
        Ok(r) if r.body.is_ok() => r.header.zxid,
        Ok(r) => {
            let code = r.body.err().map_or(0, |e| e.code());
            problems.push(format!("creating {base}: {} (left over from an earlier run?)", code_name(code)));
            return Run { lines: Vec::new(), problems };
        }
        Err(e) => {
            problems.push(format!("setup: {e}"));
            return Run { lines: Vec::new(), problems };
        }
    };
    let mut ss = Sessions::new(ctx.nodes.clone());
    for n in 0..sc.sessions() {
        let first = sc.steps.iter().find(|s| s.session() == Some(n));
        if !matches!(first, Some(Step::Connect { .. })) {
            if let Err(e) = ss.open(n, sc.node_of(n), 30_000).await {
                problems.push(e.to_string());
                return Run { lines: Vec::new(), problems };
            }
        }
    }
    let mut created = Vec::new();
    let mut lines = Vec::new();
    for (i, step) in sc.steps.iter().enumerate() {
        let result = run_step(ctx, admin, &mut ss, sc, &base, step, &mut created).await;
        let events = ss.drain_events(sc.nodes > 1).await;
        let (session, op) = (step.session_label(), step.to_string());
        lines.push(Line { scenario: sc.name.clone(), step: i, session, op, result, events });
    }
    ss.close_all().await;
    if !read_only {
        if let Err(e) = cleanup(admin, &base, &created).await {
            problems.push(format!("cleanup of {base}: {e}"));
        }
    }
    normalize(&mut lines, &base, base_zxid);
    Run { lines, problems }
}

async fn run_step(
    ctx: &RunCtx,
    admin: &Client,
    ss: &mut Sessions,
    sc: &Scenario,
    base: &str,
    step: &Step,
    created: &mut Vec<String>,
) -> Value {
    let node_addr = |k: usize| ctx.nodes[k % ctx.nodes.len()];
    match step {
        Step::Do(n, op) => {
            let Some(c) = ss.client(*n) else { return json!({"client_error": "session not open"}) };
            let reply = match tokio::time::timeout(CALL_TIMEOUT, c.call(op.request(base))).await {
                Err(_) => return json!({"client_error": "no reply within 10 s"}),
                Ok(Err(e)) => return json!({"client_error": e.to_string()}),
                Ok(Ok(r)) => r,
            };
            ss.saw_zxid(*n, reply.header.zxid);
            let mut v = match &reply.body {
                Err(code) => json!({"err": code_name(code.code())}),
                Ok(body) => {
                    created.extend(created_paths(body));
                    response_json(body, &|id| ss.owner(id))
                }
            };
            if op.writes() && reply.body.is_ok() {
                v["zxid"] = json!(reply.header.zxid);
            }
            mask_foreign(op, &mut v);
            v
        }
        Step::Connect { session, timeout_ms, node } => {
            match ss.open(*session, node.unwrap_or_else(|| sc.node_of(*session)), *timeout_ms).await {
                Ok(t) => json!({"negotiated_timeout_ms": t}),
                Err(e) => json!({"client_error": e.to_string()}),
            }
        }
        Step::Close(n) => {
            ss.close(*n).await;
            json!({"closed": true})
        }
        Step::Drop(n) => {
            ss.drop_connection(*n);
            json!({"dropped": true})
        }
        Step::Resume { session, node } => ss.resume(*session, *node).await,
        Step::Expire(n) => {
            let Some(c) = ss.client(*n) else { return json!({"client_error": "session not open"}) };
            let probe = format!("{base}.expiry-probe-s{n}");
            if let Err(e) = probes::plant_probe(c, &probe).await {
                return json!({"client_error": e.to_string()});
            }
            let (_, timeout_ms, _) = ss.identity(*n);
            ss.drop_connection(*n);
            probes::wait_expired(admin, &probe, timeout_ms).await
        }
        Step::WaitGone(n, path) => {
            probes::wait_gone(ss.client(*n).unwrap_or(admin), &resolve(path, base), ctx.collect_wait).await
        }
        Step::FourLetter { word, node } => probes::four_letter_word(node_addr(*node), word).await,
        Step::Raw { op, body } => probes::raw_request(node_addr(0), *op, body).await,
        Step::Race(r) => {
            let (v, made) = race::run(node_addr(0), base, r).await;
            created.extend(made);
            v
        }
    }
}

/// Deletes what the scenario created, deepest first, then its subtree `base`: a node under
/// `base` that the scenario did not create (someone else's) makes the cleanup fail and stays.
async fn cleanup(admin: &Client, base: &str, created: &[String]) -> Result<(), String> {
    // Through a follower, the admin's view may lag the sessions' writes on other servers.
    let _ = admin.sync(base).await;
    let inside = format!("{base}/");
    let mut mine: Vec<&String> = created.iter().filter(|p| p.starts_with(&inside)).collect();
    mine.sort_by_key(|p| (Reverse(p.matches('/').count()), p.as_str()));
    mine.dedup();
    let gone = |e: &testkeeper_wire::client::ClientError| e.code() == Some(ZkError::NoNode.code());
    for p in mine {
        let mut r = admin.delete(p, -1).await;
        if r.as_ref().is_err_and(|e| e.code() == Some(ZkError::NoAuth.code())) {
            // The scenario left the parent without DELETE for the world: open it (it is the
            // scenario's own node) and try again. A parent without ADMIN cannot be opened.
            if let Some((parent, _)) = p.rsplit_once('/') {
                let _ = admin.set_acl(parent, &testkeeper_wire::Acl::open(), -1).await;
            }
            r = admin.delete(p, -1).await;
        }
        match r {
            Ok(()) => {}
            Err(e) if gone(&e) => {}
            Err(e) => return Err(format!("{p}: {e}")),
        }
    }
    match admin.delete(base, -1).await {
        Ok(()) => Ok(()),
        Err(e) if gone(&e) => Ok(()),
        Err(e) if e.code() == Some(ZkError::NotEmpty.code()) => {
            let left = admin.get_children(base, false).await.unwrap_or_default();
            Err(format!("left in place: {left:?} were not created by this run"))
        }
        Err(e) => Err(e.to_string()),
    }
}

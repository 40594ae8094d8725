//! Runs one scenario against one server and returns its normalized transcript.
//!
//! Every request waits for its reply before the next goes out, and after each step every open
//! session pings: replies and events are FIFO per connection, so once the ping is answered
//! every event the step caused has arrived. That makes event lists exact ("exactly once")
//! without any sleep.

use std::net::SocketAddr;
use std::time::Duration;

use serde_json::{json, Map, Value};
use testkeeper_wire::client::{Client, ConnectOptions, Event};
use testkeeper_wire::{MultiResult, Response, Stat};
use tokio::sync::mpsc::UnboundedReceiver;

use crate::race;
use crate::scenario::{Scenario, Step};
use crate::transcript::{normalize, Line};

/// Bound on any one reply: a server that does not answer fails the step, not the run.
pub const CALL_TIMEOUT: Duration = Duration::from_secs(10);

/// A scenario's transcript plus what went wrong outside it.
#[derive(Debug, Clone)]
pub struct Run {
    pub lines: Vec<Line>,
    /// Setup or cleanup trouble (kept out of the transcript so transcripts still compare).
    pub problems: Vec<String>,
}

struct Sessions {
    clients: Vec<Option<Client>>,
    events: Vec<Option<UnboundedReceiver<Event>>>,
    ids: Vec<i64>,
}

impl Sessions {
    async fn open(&mut self, addr: SocketAddr, n: usize, timeout_ms: i32) -> Result<i32, String> {
        let opts = ConnectOptions { timeout_ms, ..Default::default() };
        let mut c = Client::connect(addr, opts).await.map_err(|e| format!("connect s{n}: {e}"))?;
        while self.clients.len() <= n {
            self.clients.push(None);
            self.events.push(None);
            self.ids.push(0);
        }
        self.events[n] = c.events();
        self.ids[n] = c.session_id();
        let negotiated = c.negotiated_timeout_ms();
        self.clients[n] = Some(c);
        Ok(negotiated)
    }

    fn owner(&self, id: i64) -> Value {
        match self.ids.iter().position(|s| *s == id) {
            _ if id == 0 => json!("0"),
            Some(i) => json!(format!("s{i}")),
            None => json!("other-session"),
        }
    }

    /// Pings every open session, then drains what each received.
    async fn drain_events(&mut self) -> Vec<String> {
        for c in self.clients.iter().flatten() {
            let _ = tokio::time::timeout(CALL_TIMEOUT, c.ping()).await;
        }
        let mut out = Vec::new();
        for (i, rx) in self.events.iter_mut().enumerate() {
            let Some(rx) = rx else { continue };
            while let Ok(ev) = rx.try_recv() {
                out.push(format!("s{i} {} {}", event_type(ev.event.event_type), ev.event.path));
            }
        }
        out
    }

    async fn close_all(&mut self) {
        for c in self.clients.iter_mut().filter_map(Option::take) {
            let _ = tokio::time::timeout(CALL_TIMEOUT, c.close()).await;
        }
    }
}

fn event_type(t: i32) -> String {
    match t {
        -1 => "None".into(),
        1 => "NodeCreated".into(),
        2 => "NodeDeleted".into(),
        3 => "NodeDataChanged".into(),
        4 => "NodeChildrenChanged".into(),
        5 => "DataWatchRemoved".into(),
        6 => "ChildWatchRemoved".into(),
        7 => "PersistentWatchRemoved".into(),
        other => format!("type{other}"),
    }
}

/// Runs `sc` with its subtree at `<root>/<name>`, using `admin` for setup and cleanup.
pub async fn run_scenario(addr: SocketAddr, admin: &Client, root: &str, sc: &Scenario) -> Run {
    let base = format!("{root}/{}", sc.name);
    let mut problems = Vec::new();
    let read_only = sc.read_only();
    // The scenario's "before": everything at or below this zxid normalizes to `pre`.
    let setup = if read_only {
        admin
            .call(testkeeper_wire::Request::Sync(testkeeper_wire::records::data::PathRecord { path: "/".into() }))
            .await
    } else {
        admin.call(crate::scenario::create(&base, "").request(&base)).await
    };
    let base_zxid = match setup {
        Ok(r) if r.body.is_ok() => r.header.zxid,
        Ok(r) => {
            problems.push(format!("creating {base}: error {:?} (left over from an earlier run?)", r.body.err()));
            return Run { lines: Vec::new(), problems };
        }
        Err(e) => {
            problems.push(format!("setup: {e}"));
            return Run { lines: Vec::new(), problems };
        }
    };
    let mut ss = Sessions { clients: Vec::new(), events: Vec::new(), ids: Vec::new() };
    for n in 0..sc.sessions() {
        let reconnects = sc.steps.iter().any(|s| matches!(s, Step::Connect(m, _) if *m == n));
        if !reconnects {
            if let Err(e) = ss.open(addr, n, 30_000).await {
                problems.push(e);
                return Run { lines: Vec::new(), problems };
            }
        }
    }
    let mut lines = Vec::new();
    for (i, step) in sc.steps.iter().enumerate() {
        let (session, op, result) = match step {
            Step::Do(n, op) => {
                let req = op.request(&base);
                let result = match ss.clients.get(*n).and_then(Option::as_ref) {
                    None => json!({"client_error": "session not open"}),
                    Some(c) => match tokio::time::timeout(CALL_TIMEOUT, c.call(req)).await {
                        Err(_) => json!({"client_error": "no reply within 10 s"}),
                        Ok(Err(e)) => json!({"client_error": e.to_string()}),
                        Ok(Ok(r)) => match r.body {
                            Err(code) => json!({"err": code_name(code.code())}),
                            Ok(body) => {
                                let mut v = response_json(&body, &ss);
                                if op.writes() {
                                    v["zxid"] = json!(r.header.zxid);
                                }
                                v
                            }
                        },
                    },
                };
                (format!("s{n}"), op.to_string(), result)
            }
            Step::Connect(n, timeout) => {
                let result = match ss.open(addr, *n, *timeout).await {
                    Ok(t) => json!({"negotiated_timeout_ms": t}),
                    Err(e) => json!({"client_error": e}),
                };
                (format!("s{n}"), format!("connect timeout_ms={timeout}"), result)
            }
            Step::Close(n) => {
                if let Some(c) = ss.clients.get_mut(*n).and_then(Option::take) {
                    let _ = tokio::time::timeout(CALL_TIMEOUT, c.close()).await;
                }
                if let Some(rx) = ss.events.get_mut(*n) {
                    *rx = None;
                }
                (format!("s{n}"), "close".to_string(), json!({"closed": true}))
            }
            Step::Race(r) => ("race".to_string(), r.describe(), race::run(addr, &base, r).await),
        };
        let events = ss.drain_events().await;
        lines.push(Line { scenario: sc.name.to_string(), step: i, session, op, result, events });
    }
    ss.close_all().await;
    if !read_only {
        if let Err(e) = delete_tree(admin, &base).await {
            problems.push(format!("cleanup of {base}: {e}"));
        }
    }
    normalize(&mut lines, &base, base_zxid);
    Run { lines, problems }
}

/// Deletes `path` and everything under it, children first.
///
/// # Errors
/// The first failure, as text.
pub async fn delete_tree(c: &Client, path: &str) -> Result<(), String> {
    let kids = match c.get_children(path, false).await {
        Ok(k) => k,
        Err(e) if e.code() == Some(-101) => return Ok(()),
        Err(e) => return Err(format!("{path}: {e}")),
    };
    for k in kids {
        Box::pin(delete_tree(c, &format!("{path}/{k}"))).await?;
    }
    match c.delete(path, -1).await {
        Err(e) if e.code() != Some(-101) => Err(format!("{path}: {e}")),
        _ => Ok(()),
    }
}

/// `NONODE`-style name of a result code.
pub fn code_name(code: i32) -> String {
    if code == 0 {
        return "OK".to_string();
    }
    match testkeeper_wire::ZkError::from_code(code) {
        Some(e) => e.name().to_string(),
        None => format!("code{code}"),
    }
}

fn stat_json(s: &Stat, ss: &Sessions) -> Value {
    json!({
        "czxid": s.czxid, "mzxid": s.mzxid, "pzxid": s.pzxid,
        // Millisecond times are compared only where the outcome cannot depend on timing: an
        // unmodified node has ctime == mtime, a modified one mtime >= ctime.
        "times": match (s.czxid == s.mzxid, s.ctime == s.mtime, s.mtime >= s.ctime) {
            (true, true, _) => "ctime==mtime",
            (false, _, true) => "mtime>=ctime",
            _ => "inconsistent",
        },
        "version": s.version, "cversion": s.cversion, "aversion": s.aversion,
        "ephemeralOwner": ss.owner(s.ephemeral_owner),
        "dataLength": s.data_length, "numChildren": s.num_children,
    })
}

fn sorted(v: &[String]) -> Vec<String> {
    let mut v = v.to_vec();
    v.sort();
    v
}

fn response_json(r: &Response, ss: &Sessions) -> Value {
    match r {
        Response::Empty => json!({"ok": true}),
        Response::Create(path) => json!({ "path": path }),
        Response::Create2 { path, stat } => json!({ "path": path, "stat": stat_json(stat, ss) }),
        Response::Stat(stat) => json!({ "stat": stat_json(stat, ss) }),
        Response::Data { data, stat } => {
            json!({ "data": data.as_deref().map(String::from_utf8_lossy), "stat": stat_json(stat, ss) })
        }
        Response::Acl { acl, stat } => {
            let acl: Vec<String> = acl.iter().map(|a| format!("{} {}:{}", a.perms, a.id.scheme, a.id.id)).collect();
            json!({ "acl": acl, "stat": stat_json(stat, ss) })
        }
        Response::Children(c) => json!({ "children": sorted(c) }),
        Response::Children2 { children, stat } => json!({ "children": sorted(children), "stat": stat_json(stat, ss) }),
        Response::Path(p) => json!({ "path": p }),
        Response::Paths(p) => json!({ "paths": sorted(p) }),
        Response::Number(n) => json!({ "number": n }),
        Response::Multi(results) => {
            let items: Vec<Value> = results
                .iter()
                .map(|m| match m {
                    MultiResult::Ok(op, body) => {
                        let mut v = response_json(body, ss);
                        v["op"] = json!(op.name());
                        v
                    }
                    MultiResult::Error(code) => json!({ "err": code_name(*code) }),
                    // Keeper's multiRead form keeps the op type: the extra key is the difference.
                    MultiResult::OpError(op, code) => json!({ "err": code_name(*code), "op": op.name() }),
                })
                .collect();
            json!({ "results": items })
        }
        other => {
            let mut m = Map::new();
            m.insert("other".into(), json!(format!("{other:?}")));
            Value::Object(m)
        }
    }
}

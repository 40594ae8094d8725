//! The one task that sees every proxied exchange in the order the upstream answered: it
//! names zxids and sessions ([`Labels`]), records, and, with an oracle, sends each request to
//! the oracle's session for the same client connection, waits for its reply and compares.
//!
//! Serial on purpose: the oracle then applies writes from different client connections in
//! the upstream's order, so a difference is the oracle's, not an interleaving's.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};
use testkeeper_wire::client::{Client, ConnectOptions, Event, Reply};
use testkeeper_wire::records::connect::{ConnectRequest, ConnectResponse};
use testkeeper_wire::Request;
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender};

use super::label::Labels;
use super::record::{hex, Entry, Handshake, Recorder};
use super::Divergence;
use crate::op_text::{describe, is_write};
use crate::reply::event_type;

/// Bound on one oracle reply.
const ORACLE_TIMEOUT: Duration = Duration::from_secs(10);

/// What a client connection tells the checker.
pub enum Msg {
    /// A handshake went through: what the client asked and what the upstream answered.
    Open { conn: u64, req: ConnectRequest, resp: ConnectResponse },
    /// The upstream answered a request (`request` is `None` when the body did not decode).
    Exchange(Box<Exchange>),
    /// A watch event from the upstream.
    Event { conn: u64, event: Event },
    /// The client connection ended (after the upstream's last frame).
    Closed { conn: u64 },
}

/// One answered request.
pub struct Exchange {
    pub conn: u64,
    pub xid: i32,
    pub opcode: i32,
    pub body: Vec<u8>,
    pub request: Option<Request>,
    pub reply: Reply,
}

/// How the checker is set up.
pub struct CheckerConfig {
    pub oracle: Option<SocketAddr>,
    /// Whether the oracle's flavor differs from the upstream's (the known differences apply).
    pub flavors_differ: bool,
    pub recorder: Option<Recorder>,
    pub divergences: Arc<Mutex<Vec<Divergence>>>,
    /// Called for each divergence as it is found (the CLI prints it).
    pub on_divergence: Box<dyn Fn(&Divergence) + Send>,
}

/// One client connection's oracle session and the two sides' events.
struct Pair {
    oracle: Option<Client>,
    oracle_events: Option<UnboundedReceiver<Event>>,
    upstream_events: Vec<String>,
}

/// Runs until every sender is gone.
pub async fn run(cfg: CheckerConfig, mut rx: UnboundedReceiver<Msg>) {
    let (mut up, mut or) = (Labels::default(), Labels::default());
    let mut pairs: HashMap<u64, Pair> = HashMap::new();
    // Upstream session id -> the connection that opened it, to map a resume onto the oracle;
    // that connection -> its oracle session (kept after the connection ends, for a resume).
    let mut owner_conn: HashMap<i64, u64> = HashMap::new();
    let mut oracle_sessions: HashMap<u64, (i64, Vec<u8>)> = HashMap::new();
    let mut seq = 0u64;
    while let Some(msg) = rx.recv().await {
        match msg {
            Msg::Open { conn, req, resp } => {
                let resumes = (req.session_id != 0).then(|| owner_conn.get(&req.session_id).copied()).flatten();
                let first = resumes.unwrap_or(conn);
                owner_conn.entry(resp.session_id).or_insert(first);
                up.session(resp.session_id, first);
                let up_reply = handshake_json(&resp);
                if let Some(r) = &cfg.recorder {
                    let handshake = Handshake {
                        timeout_ms: req.timeout_ms,
                        resumes: resumes.map(|c| format!("c{c}")),
                        read_only: req.read_only,
                    };
                    r.write(&Entry::Open { conn, handshake, reply: up_reply.clone() });
                }
                let mut pair = Pair { oracle: None, oracle_events: None, upstream_events: Vec::new() };
                if let Some(addr) = cfg.oracle {
                    let resume = resumes.and_then(|c| oracle_sessions.get(&c)).cloned();
                    let opts = ConnectOptions {
                        timeout_ms: req.timeout_ms,
                        read_only: req.read_only,
                        auto_ping: false,
                        ..resume.map_or_else(ConnectOptions::default, |(id, pw)| ConnectOptions::resume(id, pw))
                    };
                    let text = format!("connect timeout_ms={}", req.timeout_ms);
                    match Client::connect(addr, opts).await {
                        Ok(mut c) => {
                            or.session(c.session_id(), first);
                            oracle_sessions.entry(first).or_insert((c.session_id(), c.session_passwd().to_vec()));
                            pair.oracle_events = c.events();
                            let or_reply = json!({"negotiated_timeout_ms": c.negotiated_timeout_ms()});
                            compare(&cfg, conn, 0, (&text, None), &up_reply, &or_reply);
                            pair.oracle = Some(c);
                        }
                        Err(e) => {
                            compare(&cfg, conn, 0, (&text, None), &up_reply, &json!({"client_error": e.to_string()}))
                        }
                    }
                }
                pairs.insert(conn, pair);
            }
            Msg::Exchange(x) => {
                let Exchange { conn, xid, opcode, body, request, reply } = *x;
                seq += 1;
                let write = request.as_ref().is_some_and(is_write);
                let up_json = up.reply(seq, write, &reply);
                let text = request.as_ref().map_or_else(|| format!("opcode {opcode}"), describe);
                let path = request.as_ref().and_then(|r| r.path().map(str::to_string));
                if let Some(r) = &cfg.recorder {
                    r.write(&Entry::Request {
                        conn,
                        seq,
                        xid,
                        opcode,
                        op: text.clone(),
                        body: hex(&body),
                        reply: up_json.clone(),
                    });
                }
                let Some(pair) = pairs.get_mut(&conn) else { continue };
                let (Some(oracle), Some(request)) = (&pair.oracle, request) else { continue };
                let or_json = match tokio::time::timeout(ORACLE_TIMEOUT, oracle.call_with_xid(xid, request)).await {
                    Ok(Ok(r)) => or.reply(seq, write, &r),
                    Ok(Err(e)) => json!({"client_error": e.to_string()}),
                    Err(_) => json!({"client_error": "no reply from the oracle within 10 s"}),
                };
                compare(&cfg, conn, seq, (&text, path.as_deref()), &up_json, &or_json);
            }
            Msg::Event { conn, event } => {
                if let Some(p) = pairs.get_mut(&conn) {
                    p.upstream_events.push(event_text(&event));
                }
            }
            Msg::Closed { conn } => {
                let Some(mut pair) = pairs.remove(&conn) else { continue };
                if let Some(r) = &cfg.recorder {
                    r.write(&Entry::Closed { conn, closed: true, events: pair.upstream_events.clone() });
                }
                if let Some(oracle) = pair.oracle.take() {
                    // Every event the oracle sent before this ping's reply has arrived.
                    let _ = tokio::time::timeout(ORACLE_TIMEOUT, oracle.ping()).await;
                    let mut events = Vec::new();
                    if let Some(rx) = &mut pair.oracle_events {
                        while let Ok(ev) = rx.try_recv() {
                            events.push(event_text(&ev));
                        }
                    }
                    let (u, o) = (json!(pair.upstream_events), json!(events));
                    compare(
                        &cfg,
                        conn,
                        seq,
                        ("events of the connection", None),
                        &json!({ "events": u }),
                        &json!({ "events": o }),
                    );
                    // Dropped, not closed: the oracle's session lives on as the upstream's does.
                    drop(oracle);
                }
            }
        }
    }
}

/// Compares one normalized reply of each side and reports a divergence.
fn compare(cfg: &CheckerConfig, conn: u64, seq: u64, op: (&str, Option<&str>), upstream: &Value, oracle: &Value) {
    if let Some(div) = super::divergence(conn, seq, op, upstream, oracle, cfg.flavors_differ) {
        (cfg.on_divergence)(&div);
        cfg.divergences.lock().unwrap_or_else(std::sync::PoisonError::into_inner).push(div);
    }
}

fn handshake_json(resp: &ConnectResponse) -> Value {
    if resp.timeout_ms <= 0 {
        json!({"err": "SESSIONEXPIRED"})
    } else {
        json!({"negotiated_timeout_ms": resp.timeout_ms})
    }
}

/// `NodeDataChanged /a`.
pub fn event_text(e: &Event) -> String {
    format!("{} {}", event_type(e.event.event_type), e.event.path)
}

/// A sender the client connections share.
pub type Sender = UnboundedSender<Msg>;

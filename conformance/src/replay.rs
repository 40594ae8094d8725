//! `testkeeper replay FILE --target HOST:PORT`: plays a proxy recording against a server and
//! diffs every answer with the recorded one. Connections open and resume as recorded (a
//! resumed session is this run's session of the connection that first opened it); requests
//! go out byte for byte, one at a time in the order the recording's upstream answered them;
//! each reply is normalized as the recording's was ([`Labels`]) and each connection's watch
//! events are compared when it ends. Start from a server in the state the recording's
//! upstream was in (a fresh one, for a recording of a fresh server).

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

use serde_json::json;
use testkeeper_wire::client::{Client, ClientError, ConnectOptions, Event};
use testkeeper_wire::Request;
use tokio::sync::mpsc::UnboundedReceiver;

use crate::op_text::is_write;
use crate::proxy::label::Labels;
use crate::proxy::record::{self, Entry};
use crate::proxy::{divergence, event_text, Divergence};

/// Bound on one reply.
const CALL_TIMEOUT: Duration = Duration::from_secs(10);

/// What a replay did.
#[derive(Debug, Default)]
pub struct ReplayReport {
    pub connections: usize,
    pub requests: usize,
    /// Requests that could not be sent again (a body this codec does not decode).
    pub not_replayable: usize,
    pub differences: Vec<Divergence>,
}

/// A recorded connection, live again.
struct Live {
    client: Client,
    events: Option<UnboundedReceiver<Event>>,
}

/// Replays `path` against `target`; `flavors_differ` applies the known-differences table.
///
/// # Errors
/// The recording cannot be read, or a connection cannot be opened at all.
pub async fn replay(
    path: &Path,
    target: SocketAddr,
    flavors_differ: bool,
    on_difference: &mut dyn FnMut(&Divergence),
) -> Result<ReplayReport, crate::jsonl::JsonlError> {
    let (_meta, entries) = record::read(path)?;
    let mut report = ReplayReport::default();
    let mut labels = Labels::default();
    let mut live: HashMap<u64, Live> = HashMap::new();
    let mut sessions: HashMap<String, (i64, Vec<u8>)> = HashMap::new();
    let mut note = |d: Option<Divergence>, report: &mut ReplayReport| {
        if let Some(d) = d {
            on_difference(&d);
            report.differences.push(d);
        }
    };
    for e in entries {
        match e {
            Entry::Open { conn, handshake, reply } => {
                report.connections += 1;
                let owner = handshake.resumes.clone().unwrap_or_else(|| format!("c{conn}"));
                let base = match handshake.resumes.as_ref().and_then(|c| sessions.get(c)) {
                    Some((id, pw)) => ConnectOptions::resume(*id, pw.clone()),
                    None => ConnectOptions::default(),
                };
                let opts = ConnectOptions { timeout_ms: handshake.timeout_ms, read_only: handshake.read_only, ..base };
                let text = format!("connect timeout_ms={}", handshake.timeout_ms);
                let got = match Client::connect(target, opts).await {
                    Ok(mut c) => {
                        let n: u64 = owner.trim_start_matches('c').parse().unwrap_or(conn);
                        labels.session(c.session_id(), n);
                        sessions.entry(owner).or_insert((c.session_id(), c.session_passwd().to_vec()));
                        let got = json!({"negotiated_timeout_ms": c.negotiated_timeout_ms()});
                        live.insert(conn, Live { events: c.events(), client: c });
                        got
                    }
                    Err(ClientError::SessionExpired) => json!({"err": "SESSIONEXPIRED"}),
                    Err(e) => json!({"client_error": e.to_string()}),
                };
                note(divergence(conn, 0, (&text, None), &reply, &got, flavors_differ), &mut report);
            }
            Entry::Request { conn, seq, xid, opcode, op, body, reply } => {
                report.requests += 1;
                let request = record::unhex(&body).ok().and_then(|b| Request::decode_body(opcode, &b).ok());
                let (Some(request), Some(l)) = (request, live.get(&conn)) else {
                    report.not_replayable += 1;
                    continue;
                };
                let write = is_write(&request);
                let path = request.path().map(str::to_string);
                let got = match tokio::time::timeout(CALL_TIMEOUT, l.client.call_with_xid(xid, request)).await {
                    Ok(Ok(r)) => labels.reply(seq, write, &r),
                    Ok(Err(e)) => json!({"client_error": e.to_string()}),
                    Err(_) => json!({"client_error": "no reply within 10 s"}),
                };
                note(divergence(conn, seq, (&op, path.as_deref()), &reply, &got, flavors_differ), &mut report);
            }
            Entry::Closed { conn, events, .. } => {
                let Some(mut l) = live.remove(&conn) else { continue };
                let _ = tokio::time::timeout(CALL_TIMEOUT, l.client.ping()).await;
                let mut got = Vec::new();
                if let Some(rx) = &mut l.events {
                    while let Ok(ev) = rx.try_recv() {
                        got.push(event_text(&ev));
                    }
                }
                let (a, b) = (json!({ "events": events }), json!({ "events": got }));
                note(divergence(conn, 0, ("events of the connection", None), &a, &b, flavors_differ), &mut report);
            }
        }
    }
    Ok(report)
}

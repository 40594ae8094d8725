//! The sessions of one scenario run: which node each is on, its id and password (to resume
//! it), the last zxid it saw (sent on resume, as real clients do, so a lagging server refuses
//! it), its watch events, and what it created.

use std::net::SocketAddr;
use std::time::Duration;

use serde_json::{json, Value};
use testkeeper_wire::client::{Client, ClientError, ConnectOptions, Event};
use tokio::sync::mpsc::UnboundedReceiver;

use crate::reply::event_type;

/// A scenario session that could not be opened (the transcript shows the message).
#[derive(Debug, Clone, thiserror::Error)]
#[error("connect s{session}: {source}")]
pub struct OpenError {
    /// The scenario's session number.
    pub session: usize,
    pub source: ClientError,
}

/// Bound on any one reply: a server that does not answer fails the step, not the run.
pub const CALL_TIMEOUT: Duration = Duration::from_secs(10);

/// One session slot (`s0`, `s1`...).
#[derive(Default)]
struct Slot {
    client: Option<Client>,
    events: Option<UnboundedReceiver<Event>>,
    id: i64,
    passwd: Vec<u8>,
    timeout_ms: i32,
    node: usize,
    last_zxid: i64,
}

/// Every session of a scenario, indexed by number.
pub struct Sessions {
    nodes: Vec<SocketAddr>,
    slots: Vec<Slot>,
    /// Ids of sessions a scenario saw that are not (or no longer) in a slot, by slot: an
    /// expired session's ephemeral owner still reads as `sN`.
    past: Vec<(i64, usize)>,
}

impl Sessions {
    /// Sessions on `nodes` (node `k` is `nodes[k % len]`: a one-server reference plays every
    /// node of a cluster scenario).
    pub fn new(nodes: Vec<SocketAddr>) -> Sessions {
        Sessions { nodes, slots: Vec::new(), past: Vec::new() }
    }

    fn addr(&self, node: usize) -> SocketAddr {
        self.nodes[node % self.nodes.len()]
    }

    fn slot(&mut self, n: usize) -> &mut Slot {
        while self.slots.len() <= n {
            self.slots.push(Slot::default());
        }
        &mut self.slots[n]
    }

    /// The open client of session `n`.
    pub fn client(&self, n: usize) -> Option<&Client> {
        self.slots.get(n).and_then(|s| s.client.as_ref())
    }

    /// Notes the zxid of a reply session `n` got.
    pub fn saw_zxid(&mut self, n: usize, zxid: i64) {
        let s = self.slot(n);
        s.last_zxid = s.last_zxid.max(zxid);
    }

    /// Opens session `n` as a new session on `node` (closing the one it had).
    ///
    /// # Errors
    /// [`OpenError`]: the connect failed.
    pub async fn open(&mut self, n: usize, node: usize, timeout_ms: i32) -> Result<i32, OpenError> {
        self.close(n).await;
        let opts = ConnectOptions { timeout_ms, ..Default::default() };
        let addr = self.addr(node);
        let c = Client::connect(addr, opts).await.map_err(|source| OpenError { session: n, source })?;
        Ok(self.install(n, node, c))
    }

    fn install(&mut self, n: usize, node: usize, mut c: Client) -> i32 {
        let (id, passwd, timeout) = (c.session_id(), c.session_passwd().to_vec(), c.negotiated_timeout_ms());
        let events = c.events();
        let slot = self.slot(n);
        if slot.id != 0 && slot.id != id {
            let old = slot.id;
            self.past.push((old, n));
        }
        let slot = self.slot(n);
        *slot = Slot { client: Some(c), events, id, passwd, timeout_ms: timeout, node, last_zxid: slot.last_zxid };
        timeout
    }

    /// Closes session `n` (its ephemerals go) if it is open.
    pub async fn close(&mut self, n: usize) {
        let slot = self.slot(n);
        slot.events = None;
        if let Some(c) = slot.client.take() {
            let _ = tokio::time::timeout(CALL_TIMEOUT, c.close()).await;
        }
    }

    /// Drops session `n`'s connection without closing the session.
    pub fn drop_connection(&mut self, n: usize) {
        let slot = self.slot(n);
        slot.events = None;
        slot.client = None;
    }

    /// The session's id, timeout and node (0 when it never opened).
    pub fn identity(&self, n: usize) -> (i64, i32, usize) {
        self.slots.get(n).map_or((0, 0, 0), |s| (s.id, s.timeout_ms, s.node))
    }

    /// Reconnects session `n` with its id and password, on `node` or where it was.
    pub async fn resume(&mut self, n: usize, node: Option<usize>) -> Value {
        self.drop_connection(n);
        let slot = self.slot(n);
        let node = node.unwrap_or(slot.node);
        let opts = ConnectOptions {
            timeout_ms: slot.timeout_ms.max(1),
            last_zxid_seen: slot.last_zxid,
            ..ConnectOptions::resume(slot.id, slot.passwd.clone())
        };
        let old = slot.id;
        match Client::connect(self.addr(node), opts).await {
            Ok(c) => {
                let same = c.session_id() == old;
                let t = self.install(n, node, c);
                json!({"same_session": same, "negotiated_timeout_ms": t})
            }
            Err(ClientError::SessionExpired) => json!({"err": "SESSIONEXPIRED"}),
            Err(e) => json!({"client_error": e.to_string()}),
        }
    }

    /// How an ephemeral owner's id reads in transcripts.
    pub fn owner(&self, id: i64) -> Value {
        if let Some(i) = self.slots.iter().position(|s| s.id == id) {
            return json!(format!("s{i}"));
        }
        match self.past.iter().find(|(p, _)| *p == id) {
            Some((_, i)) => json!(format!("s{i} (earlier session)")),
            None => json!("other-session"),
        }
    }

    /// Pings every open session, then drains what each received: once a ping is answered,
    /// every event sent before it has arrived (one connection is FIFO). On an ensemble
    /// (`sync_first`) a follower answers a ping before it has applied the leader's latest
    /// commit, so each session syncs instead: its server then has applied every write
    /// acknowledged so far and queued the events they fired before the sync's reply.
    pub async fn drain_events(&mut self, sync_first: bool) -> Vec<String> {
        for c in self.slots.iter().filter_map(|s| s.client.as_ref()) {
            if sync_first {
                let _ = tokio::time::timeout(CALL_TIMEOUT, c.sync("/")).await;
            } else {
                let _ = tokio::time::timeout(CALL_TIMEOUT, c.ping()).await;
            }
        }
        let mut out = Vec::new();
        for (i, s) in self.slots.iter_mut().enumerate() {
            let Some(rx) = &mut s.events else { continue };
            while let Ok(ev) = rx.try_recv() {
                out.push(format!("s{i} {} {}", event_type(ev.event.event_type), ev.event.path));
            }
        }
        out
    }

    /// Closes every open session.
    pub async fn close_all(&mut self) {
        for n in 0..self.slots.len() {
            self.close(n).await;
        }
    }
}

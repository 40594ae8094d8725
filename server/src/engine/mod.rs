//! The engine: owns the state machine and the per-server tables around it (runtime sessions,
//! connections, watches, stats), and runs every request through one path:
//! decide (`prepare`) -> entry (zxid, time) -> `apply` -> watch events -> reply.
//!
//! The engine is shared behind one mutex; a connection holds it only while it processes the
//! frames it has already read, so requests of one session are handled in order (ZooKeeper's
//! FIFO-per-session promise) and a read sees every write before it.
//!
//! # Layout
//! - `dispatch`: one request to its reply.
//! - `session`: handshake, resumption, disconnect, expiry.
//! - `reply`: outcome -> wire response; watch registration after reads.
//! - `stats`: counters for the four-letter words and metrics.

mod dispatch;
mod reply;
pub mod session;
pub mod stats;

use std::collections::{HashMap, VecDeque};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use testkeeper_wire::frame::put_reply;
use testkeeper_wire::opcode::WATCH_XID;
use testkeeper_wire::records::header::{keeper_state, ReplyHeader, WatcherEvent};
use testkeeper_wire::Response;
use tokio::sync::mpsc::UnboundedSender;

use crate::clock::Clock;
use crate::config::ServerConfig;
use crate::core::acl::AuthId;
use crate::core::apply::Applied;
use crate::core::digest::DIGEST_VERSION;
use crate::core::flavor::{zookeeper_session_base, Rules};
use crate::core::state::{State, StateOptions};
use crate::core::txn::{Entry, Txn};
use crate::core::watches::Watches;
use crate::faults::Faults;
pub use dispatch::Flow;
pub use session::SessionRt;
use stats::Stats;

/// What a connection's writer is told to do.
#[derive(Debug)]
pub enum Out {
    /// Write these bytes (one or more whole frames).
    Frame(Bytes),
    /// Flush what was queued before, then close the socket.
    Close,
    /// Flush what was queued before, then wait this long before writing anything after it
    /// (a `delay` fault: later replies queue behind it, so FIFO order holds).
    Delay(Duration),
    /// Flush what was queued before, then abort the connection with a TCP reset (a `reset`
    /// fault).
    Reset,
}

/// A live connection, as the 4lw commands and the engine see it.
#[derive(Debug)]
pub struct ConnInfo {
    pub peer: SocketAddr,
    pub tx: UnboundedSender<Out>,
    /// The session bound to this connection (0 before the handshake).
    pub session: i64,
    pub established_ms: i64,
    pub received: u64,
    pub sent: u64,
    pub last_op: &'static str,
    pub last_xid: i32,
    pub last_zxid: i64,
    pub last_latency_ms: u64,
    /// Identities authenticated on this connection (ZooKeeper keeps auth per connection; a
    /// client re-sends its credentials after reconnecting).
    pub auth: Vec<AuthId>,
    /// Set by a `drop-response` fault: frames for this connection are discarded until it closes.
    pub muted: bool,
    /// Frames encoded since the last `flush`: a batch of pipelined requests becomes one
    /// buffer, one queue message and one writer wake-up instead of one of each per reply.
    out: BytesMut,
}

/// The state machine plus everything around it that is per server.
pub struct Engine {
    pub cfg: Arc<ServerConfig>,
    pub clock: Clock,
    pub state: State,
    pub watches: Watches,
    pub sessions: HashMap<i64, SessionRt>,
    pub conns: HashMap<u64, ConnInfo>,
    pub stats: Stats,
    /// Fault rules, their seeded generator and the log of fired faults.
    pub faults: Faults,
    /// The most recent entries, for replay checks (bounded by `cfg.retain_log`).
    pub log: VecDeque<Entry>,
    next_index: u64,
    next_conn: u64,
    /// Connections whose `out` may hold frames (duplicates are harmless).
    dirty: Vec<u64>,
    /// Secret mixed into session passwords (from the seed): passwords are not tree state.
    secret: u64,
    last_gc_ms: i64,
}

impl Engine {
    /// A fresh engine with the flavor's system nodes.
    pub fn new(cfg: Arc<ServerConfig>, clock: Clock) -> Engine {
        let now = clock.now_ms();
        let rules = Rules::new(cfg.flavor, zookeeper_session_base(now));
        let opts = StateOptions {
            rules,
            digest_enabled: cfg.digest_enabled,
            feature_flags: cfg.feature_flags.to_bytes(),
            api_version: cfg.feature_flags.api_version().to_string().into_bytes(),
            zookeeper_config: Vec::new(),
        };
        Engine {
            secret: cfg.seed ^ 0x7465_7374_6b65_6570,
            faults: Faults::new(cfg.seed),
            cfg,
            clock,
            state: State::new(&opts),
            watches: Watches::default(),
            sessions: HashMap::new(),
            conns: HashMap::new(),
            stats: Stats::default(),
            log: VecDeque::new(),
            next_index: 1,
            next_conn: 1,
            dirty: Vec::new(),
            last_gc_ms: now,
        }
    }

    /// Registers a new connection and returns its id.
    pub fn add_conn(&mut self, peer: SocketAddr, tx: UnboundedSender<Out>) -> u64 {
        let id = self.next_conn;
        self.next_conn += 1;
        let established_ms = self.clock.now_ms();
        self.conns.insert(
            id,
            ConnInfo {
                peer,
                tx,
                session: 0,
                established_ms,
                received: 0,
                sent: 0,
                last_op: "NA",
                last_xid: -1,
                last_zxid: -1,
                last_latency_ms: 0,
                auth: Vec::new(),
                muted: false,
                out: BytesMut::new(),
            },
        );
        id
    }

    /// Turns a decided txn into an entry, applies it, and sends the watch events it fires.
    /// This is the only way anything changes the state.
    pub fn commit(&mut self, session: i64, txn: Txn) -> (Entry, Applied) {
        let consumes = !matches!(txn, Txn::CreateSession { .. }) || self.state.rules.create_session_consumes_zxid;
        let zxid = if consumes { self.state.zxid + 1 } else { self.state.zxid };
        let mut entry =
            Entry { index: self.next_index, zxid, time_ms: self.clock.now_ms(), session, txn, digest: None };
        self.next_index += 1;
        let applied = self.state.apply(&entry);
        if self.cfg.digest_enabled {
            entry.digest = Some((DIGEST_VERSION, applied.digest));
        }
        if self.cfg.digest_check_on_commit {
            let full = self.state.tree.recompute_digest();
            assert_eq!(
                full, applied.digest,
                "digest check on commit failed at log index {} (zxid {:#x})",
                entry.index, entry.zxid
            );
        }
        if self.cfg.retain_log > 0 {
            if self.log.len() == self.cfg.retain_log {
                self.log.pop_front();
            }
            self.log.push_back(entry.clone());
        }
        for t in &applied.triggers {
            for ev in self.watches.fire(t, &self.state.rules) {
                self.send_event(ev.session, ev.event_type, &ev.path);
            }
        }
        (entry, applied)
    }

    /// Queues a watch notification for a session, if it is connected.
    pub fn send_event(&mut self, session: i64, event_type: i32, path: &str) {
        let Some(conn) = self.sessions.get(&session).and_then(|s| s.conn) else { return };
        let header = ReplyHeader { xid: WATCH_XID, zxid: -1, err: 0 };
        let event = WatcherEvent { event_type, state: keeper_state::SYNC_CONNECTED, path: path.to_string() };
        self.queue_frame(conn, |out| {
            use testkeeper_wire::jute::Encode;
            testkeeper_wire::frame::put_frame(out, |out| {
                header.encode(out);
                event.encode(out);
            });
        });
    }

    /// Queues bytes (one or more whole frames) on a connection.
    pub fn send(&mut self, conn: u64, frame: Bytes) {
        self.queue_frame(conn, |out| out.extend_from_slice(&frame));
    }

    /// Queues a reply frame on a connection.
    pub fn reply(&mut self, conn: u64, xid: i32, zxid: i64, err: i32, body: &Response) {
        if let Some(c) = self.conns.get_mut(&conn) {
            c.last_zxid = zxid;
        }
        self.queue_frame(conn, |out| put_reply(out, &ReplyHeader { xid, zxid, err }, body));
    }

    /// Encodes one frame into the connection's pending output (dropped if the connection is
    /// muted). It reaches the writer at the next `flush`, in the order it was queued.
    fn queue_frame(&mut self, conn: u64, encode: impl FnOnce(&mut BytesMut)) {
        if let Some(c) = self.conns.get_mut(&conn).filter(|c| !c.muted) {
            c.sent += 1;
            self.stats.packets_sent += 1;
            if c.out.is_empty() {
                self.dirty.push(conn);
            }
            encode(&mut c.out);
        }
    }

    /// Hands every connection's pending frames to its writer. The network shell calls this
    /// whenever it releases the engine lock (`net::EngineGuard`), so nothing waits longer
    /// than the batch that produced it.
    pub fn flush(&mut self) {
        for conn in std::mem::take(&mut self.dirty) {
            self.flush_conn(conn);
        }
    }

    /// Hands one connection's pending frames to its writer: before anything else is queued
    /// on its channel (close, fault markers), so they keep their order.
    pub fn flush_conn(&mut self, conn: u64) {
        if let Some(c) = self.conns.get_mut(&conn).filter(|c| !c.out.is_empty()) {
            // `split` leaves the spare capacity behind, and `reserve` reclaims the whole
            // buffer once the writer has dropped the frozen part: few allocations per batch.
            let _ = c.tx.send(Out::Frame(c.out.split().freeze()));
        }
    }

    /// Asks a connection's writer to close it after what is queued.
    pub fn close_conn(&mut self, conn: u64) {
        self.flush_conn(conn);
        if let Some(c) = self.conns.get(&conn) {
            let _ = c.tx.send(Out::Close);
        }
    }

    /// The auth identities of connection `conn`.
    pub fn auth_of(&self, conn: u64) -> Vec<AuthId> {
        self.conns.get(&conn).map(|c| c.auth.clone()).unwrap_or_default()
    }

    /// Periodic work: expire sessions whose deadline passed, collect empty containers and
    /// expired TTL nodes.
    pub fn tick(&mut self) {
        let now = self.clock.now_ms();
        self.expire_due(now);
        if now - self.last_gc_ms >= self.cfg.container_check_ms as i64 {
            self.last_gc_ms = now;
            self.collect_containers_and_ttls(now);
        }
    }
}

//! Connections as the engine sees them, and their output ([`Conns`]): every frame the engine
//! produces is encoded into its connection's buffer and handed to the connection's writer when
//! the lock is released (`flush_all`), so a batch of pipelined requests becomes one write.
//! The engine's own part (what needs its sessions, clock or counters) is the `impl Engine` at
//! the end.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::ops::Deref;
use std::sync::Arc;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use foldhash::fast::FixedState;
use testkeeper_core::acl::AuthId;
use testkeeper_wire::frame::put_reply_with;
use testkeeper_wire::opcode::WATCH_XID;
use testkeeper_wire::records::header::{keeper_state, ReplyHeader, WatcherEvent};
use testkeeper_wire::Response;
use tokio::sync::mpsc::UnboundedSender;

use super::backlog::Backlog;
use super::Engine;

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

/// One connection's request latencies, ms (all 0 before the first).
#[derive(Debug, Default, Clone, Copy)]
pub struct ConnLatency {
    pub min: u64,
    pub max: u64,
    pub total: u64,
    pub count: u64,
}

impl ConnLatency {
    pub fn record(&mut self, ms: u64) {
        self.min = if self.count == 0 { ms } else { self.min.min(ms) };
        self.max = self.max.max(ms);
        self.total += ms;
        self.count += 1;
    }

    pub fn avg(&self) -> u64 {
        self.total.checked_div(self.count).unwrap_or(0)
    }
}

impl ConnInfo {
    /// `crst`: the counts, the latencies and the last op, as ZooKeeper's `resetStats` and
    /// Keeper's (`EMPTY_LAST_OP`) reset them.
    pub fn reset_stats(&mut self) {
        (self.received, self.sent) = (0, 0);
        (self.last_op, self.last_xid, self.last_zxid) = ("NA", -1, -1);
        (self.last_response_ms, self.last_latency_ms, self.latency) = (0, 0, ConnLatency::default());
    }
}

/// A live connection, as the 4lw commands and the engine see it.
#[derive(Debug)]
pub struct ConnInfo {
    pub peer: SocketAddr,
    pub tx: UnboundedSender<Out>,
    /// What this connection has queued for its writer and not yet written; its reader stops
    /// reading while it is at the limit (`--reply-queue-bytes`).
    pub backlog: Arc<Backlog>,
    /// The session bound to this connection (0 before the handshake).
    pub session: i64,
    pub established_ms: i64,
    pub received: u64,
    pub sent: u64,
    pub last_op: &'static str,
    pub last_xid: i32,
    pub last_zxid: i64,
    /// The error code of the last reply (0: ok), for the request log.
    pub last_err: i32,
    pub last_latency_ms: u64,
    /// This connection's request latencies since it opened or `crst` (ms), for `cons`.
    pub latency: ConnLatency,
    /// When this connection's last reply left, ms since the epoch (0: none since `crst`).
    pub last_response_ms: i64,
    /// Identities authenticated on this connection (ZooKeeper keeps auth per connection; a
    /// client re-sends its credentials after reconnecting).
    pub auth: Vec<AuthId>,
    /// Set by a `drop-response` fault: frames for this connection are discarded until it closes.
    pub muted: bool,
    /// Set by a `blackhole` fault: requests from this connection are dropped unread.
    pub blackholed: bool,
    /// Frames encoded since the last `flush`: a batch of pipelined requests becomes one
    /// buffer, one queue message and one writer wake-up instead of one of each per reply.
    out: BytesMut,
}

/// The live connections, by id, with each one's output not yet handed to its writer. Reads go
/// through the map (`Deref`); what changes a connection or its output is a method here.
#[derive(Debug)]
pub struct Conns {
    map: HashMap<u64, ConnInfo, FixedState>,
    /// Connections whose `out` may hold frames (duplicates are harmless).
    dirty: Vec<u64>,
    /// The id the next connection gets (never reused, across a reset too).
    next: u64,
}

impl Deref for Conns {
    type Target = HashMap<u64, ConnInfo, FixedState>;

    fn deref(&self) -> &Self::Target {
        &self.map
    }
}

impl Conns {
    /// An empty table whose first connection gets id `next`.
    pub(crate) fn starting_at(next: u64) -> Conns {
        Conns { map: HashMap::default(), dirty: Vec::new(), next }
    }

    /// The id the next connection would get.
    pub(crate) fn next_id(&self) -> u64 {
        self.next
    }

    /// Registers a new connection, established at `now_ms`, and returns its id.
    fn add(&mut self, peer: SocketAddr, tx: UnboundedSender<Out>, backlog: Arc<Backlog>, now_ms: i64) -> u64 {
        let id = self.next;
        self.next += 1;
        let info = ConnInfo {
            peer,
            tx,
            backlog,
            session: 0,
            established_ms: now_ms,
            received: 0,
            sent: 0,
            last_op: "NA",
            last_xid: -1,
            last_zxid: -1,
            last_err: 0,
            last_latency_ms: 0,
            latency: ConnLatency::default(),
            last_response_ms: 0,
            auth: Vec::new(),
            muted: false,
            blackholed: false,
            out: BytesMut::new(),
        };
        self.map.insert(id, info);
        id
    }

    pub fn get_mut(&mut self, conn: &u64) -> Option<&mut ConnInfo> {
        self.map.get_mut(conn)
    }

    pub fn values_mut(&mut self) -> impl Iterator<Item = &mut ConnInfo> {
        self.map.values_mut()
    }

    /// Forgets a connection (its reader ended).
    pub fn remove(&mut self, conn: &u64) -> Option<ConnInfo> {
        self.map.remove(conn)
    }

    /// Encodes one frame into the connection's pending output (dropped if the connection is
    /// muted or gone); `counted` adds it to the connection's sent packets. It reaches the
    /// writer at the next flush, in the order it was queued. Returns whether it was queued.
    fn queue_frame(&mut self, conn: u64, counted: bool, encode: impl FnOnce(&mut BytesMut)) -> bool {
        let Some(c) = self.map.get_mut(&conn).filter(|c| !c.muted) else { return false };
        if counted {
            c.sent += 1;
        }
        if c.out.is_empty() {
            self.dirty.push(conn);
        }
        encode(&mut c.out);
        true
    }

    /// Queues a reply frame whose body `body` writes (when `err` is 0), noting its zxid and
    /// error for the request log; returns whether it was queued (see `queue_frame`).
    pub(crate) fn reply_with(&mut self, conn: u64, header: ReplyHeader, body: impl FnOnce(&mut BytesMut)) -> bool {
        let Some(c) = self.map.get_mut(&conn) else { return false };
        (c.last_zxid, c.last_err) = (header.zxid, header.err);
        if c.muted {
            return false;
        }
        c.sent += 1;
        if c.out.is_empty() {
            self.dirty.push(conn);
        }
        put_reply_with(&mut c.out, &header, body);
        true
    }

    /// Hands every connection's pending frames to its writer.
    pub(crate) fn flush_all(&mut self) {
        for conn in std::mem::take(&mut self.dirty) {
            self.flush(conn);
        }
    }

    /// Hands one connection's pending frames to its writer: before anything else is queued
    /// on its channel (close, fault markers), so they keep their order.
    pub fn flush(&mut self, conn: u64) {
        if let Some(c) = self.map.get_mut(&conn).filter(|c| !c.out.is_empty()) {
            // `split` leaves the spare capacity behind, and `reserve` reclaims the whole
            // buffer once the writer has dropped the frozen part: few allocations per batch.
            let frame = c.out.split().freeze();
            c.backlog.queued_more(frame.len());
            let _ = c.tx.send(Out::Frame(frame));
        }
    }

    /// Whether connection `conn` has queued as much as it may (flushed or not): its reader
    /// handles no more of its requests until the writer catches up.
    pub fn out_full(&self, conn: u64) -> bool {
        self.map.get(&conn).is_some_and(|c| c.backlog.is_full(c.out.len()))
    }

    /// Puts a marker (delay, reset) on a connection's queue behind what is already encoded.
    pub(crate) fn queue_out(&mut self, conn: u64, out: Out) {
        self.flush(conn);
        if let Some(c) = self.map.get(&conn) {
            let _ = c.tx.send(out);
        }
    }

    /// Asks a connection's writer to close it after what is queued.
    pub fn close(&mut self, conn: u64) {
        self.queue_out(conn, Out::Close);
    }

    /// The auth identities of connection `conn`.
    pub fn auth_of(&self, conn: u64) -> Vec<AuthId> {
        self.map.get(&conn).map(|c| c.auth.clone()).unwrap_or_default()
    }
}

impl Engine {
    /// Registers a new connection and returns its id.
    pub fn add_conn(&mut self, peer: SocketAddr, tx: UnboundedSender<Out>, backlog: Arc<Backlog>) -> u64 {
        let now = self.clock.now_ms();
        self.conns.add(peer, tx, backlog, now)
    }

    /// Queues a watch notification for a session, if it is connected; `zxid` goes in its
    /// header (-1 but for ZooKeeper 3.9's data and child events).
    pub fn send_event(&mut self, session: i64, event_type: i32, path: &str, zxid: i64) {
        let Some(conn) = self.sessions.get(session).and_then(|s| s.conn) else { return };
        let header = ReplyHeader { xid: WATCH_XID, zxid, err: 0 };
        let event = WatcherEvent { event_type, state: keeper_state::SYNC_CONNECTED, path: path.to_string() };
        self.queue_counted(conn, |out| {
            use testkeeper_wire::jute::Encode;
            testkeeper_wire::frame::put_frame(out, |out| {
                header.encode(out);
                event.encode(out);
            });
        });
    }

    /// Queues bytes (one or more whole frames) on a connection.
    pub fn send(&mut self, conn: u64, frame: &[u8]) {
        self.queue_counted(conn, |out| out.extend_from_slice(frame));
    }

    /// Queues bytes without counting them as a sent packet (Keeper's handshake answer).
    pub(crate) fn send_uncounted(&mut self, conn: u64, frame: &[u8]) {
        self.conns.queue_frame(conn, false, |out| out.extend_from_slice(frame));
    }

    /// Queues a reply frame on a connection.
    pub fn reply(&mut self, conn: u64, xid: i32, zxid: i64, err: i32, body: &Response) {
        if self.conns.reply_with(conn, ReplyHeader { xid, zxid, err }, |out| body.encode(out)) {
            self.stats.packets_sent += 1;
        }
    }

    /// Queues a frame that counts as a sent packet, here and in the server's counters.
    fn queue_counted(&mut self, conn: u64, encode: impl FnOnce(&mut BytesMut)) {
        if self.conns.queue_frame(conn, true, encode) {
            self.stats.packets_sent += 1;
        }
    }
}

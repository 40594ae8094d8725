//! One client connection: four-letter word or handshake on the first bytes, then the request
//! loop. Every way a client can send bad bytes (malformed frame, short body, oversized length,
//! unknown opcode in keeper flavor) ends here with a log line and a closed socket; the engine
//! and every other session are untouched. Before the handshake, reads are bounded in time
//! (`opening`); after it, the connection is read only while its reply queue has room
//! (`engine::backlog`), so a client that never reads its replies stops being read.

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::Arc;

use bytes::{Buf, BytesMut};
use testkeeper_wire::frame::{four_letter_word, split_frame};
use testkeeper_wire::jute::{Decode, Reader};
use testkeeper_wire::net::{ReadHalf, Stream};
use testkeeper_wire::rawstr::Invalid;
use testkeeper_wire::records::connect::ConnectRequest;
use testkeeper_wire::records::header::RequestHeader;
use testkeeper_wire::{DecodeError, Request};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::{mpsc, oneshot, watch};
use tracing::{debug, warn};

use super::admission::Permit;
use super::opening::{self, Opening};
use super::writer;
use crate::core::flavor::Flavor;
use crate::engine::backlog::Backlog;
use crate::engine::stats::NetCounters;
use crate::engine::{Flow, Handshake, Shared};
use crate::fourlw;

/// Why reading stopped.
enum Stop {
    Eof,
    /// The server closed it after a request (close, auth failure, unknown op in keeper flavor).
    Closed,
    Shutdown,
    Bad(String),
}

/// Ends a connection that stopped before its handshake completed, with a log line that says why.
fn opening_failed(shared: &Shared, peer: SocketAddr, why: opening::Stop) {
    let limits = &shared.cfg.limits;
    match why {
        opening::Stop::HandshakeTimeout => {
            NetCounters::bump(&shared.net.handshake_timeouts);
            debug!(%peer, ms = limits.handshake_timeout_ms, "no complete handshake within --handshake-timeout-ms: closing");
        }
        opening::Stop::Idle => {
            NetCounters::bump(&shared.net.idle_timeouts);
            debug!(%peer, ms = limits.sessionless_idle_ms, "nothing received without a session within --sessionless-idle-ms: closing");
        }
        opening::Stop::Bad(why) => warn!(%peer, %why, "bad handshake frame: closing"),
        opening::Stop::Eof | opening::Stop::Shutdown => {}
    }
}

/// Serves one connection until it closes; `_permit` holds its place under the connection
/// limits until then.
pub async fn run(
    mut stream: Stream,
    peer: SocketAddr,
    shared: Arc<Shared>,
    mut stop: watch::Receiver<bool>,
    _permit: Permit,
) {
    if let Stream::Tcp(s) = &stream {
        let _ = s.set_nodelay(true);
    }
    let max = shared.cfg.max_frame;
    let opening = Opening::new(&shared.cfg.limits);
    let mut buf = BytesMut::with_capacity(4096);
    while buf.len() < 4 {
        if let Err(why) = opening.read_some(&mut stream, &mut buf, &mut stop).await {
            // Fewer than four bytes and a close is nothing worth a warning.
            let why = if matches!(why, opening::Stop::Bad(_)) { opening::Stop::Eof } else { why };
            return opening_failed(&shared, peer, why);
        }
    }
    let first: [u8; 4] = buf[..4].try_into().expect("four bytes");
    if let Some(word) = four_letter_word(&first).filter(|w| fourlw::is_known(shared.cfg.flavor, w)) {
        let answer = fourlw::answer(&shared, word, Some(peer));
        if let Some(text) = answer {
            // A path that is not UTF-8 goes out as its bytes, as Keeper prints its std::string.
            let _ = stream.write_all(&testkeeper_wire::rawstr::raw_bytes(&text)).await;
        } else {
            debug!(%peer, word, "four-letter word not allowed: closing");
        }
        let _ = stream.shutdown().await;
        return;
    }
    let len = i32::from_be_bytes(first);
    // Keeper takes only its two handshake lengths (`KeeperTCPHandler::isHandShake`); a client
    // whose password is empty sends 29 bytes and is closed, unless --lenient-handshake.
    if shared.cfg.flavor == Flavor::Keeper && !shared.cfg.lenient_handshake && len != 44 && len != 45 {
        warn!(%peer, len, "first frame is neither a handshake (44/45 bytes, as Keeper takes) nor a known four-letter word: closing (--lenient-handshake takes any length)");
        return;
    }
    let n = match opening.read_frame(&mut stream, &mut buf, max, &mut stop).await {
        Ok(n) => n,
        Err(why) => return opening_failed(&shared, peer, why),
    };
    let (mut rd, wr) = stream.into_split();
    let req = match ConnectRequest::decode(&mut Reader::new(&buf[4..n])) {
        Ok(r) => r,
        Err(e) => {
            warn!(%peer, error = %e, "malformed connect request: closing");
            return;
        }
    };
    buf.advance(n);
    let (tx, rx) = mpsc::unbounded_channel();
    let backlog = Backlog::new(shared.cfg.limits.reply_queue_bytes);
    let (closed_tx, mut closed_rx) = oneshot::channel();
    tokio::spawn(writer::run(wr, rx, backlog.clone(), closed_tx));
    // The engine queues the handshake response itself (a new session's once its entry
    // commits), ahead of anything else for this connection.
    let (conn, handshake) = {
        let mut engine = shared.engine();
        let conn = engine.add_conn(peer, tx, backlog.clone());
        (conn, engine.connect(conn, &req))
    };
    if handshake != Handshake::Accept {
        if let Handshake::Refuse(why) = handshake {
            debug!(%peer, why, "handshake refused");
        }
        let mut engine = shared.engine();
        engine.conns.close(conn);
        engine.disconnect(conn);
        return;
    }
    let mut link = Link { rd: &mut rd, buf: &mut buf, shared: &shared, conn, backlog: &backlog };
    let reason = link.serve(&mut stop, &mut closed_rx).await;
    match reason {
        Stop::Bad(why) => warn!(%peer, %why, "closing connection"),
        Stop::Eof => debug!(%peer, "client closed the connection"),
        Stop::Closed => debug!(%peer, "connection closed by the server"),
        Stop::Shutdown => debug!(%peer, "server shutting down"),
    }
    let mut engine = shared.engine();
    engine.conns.close(conn);
    engine.disconnect(conn);
}

/// Decodes one request frame body (after the length prefix). Strings' bytes that are not
/// UTF-8 are kept (keeper flavor: Keeper keeps a path's bytes) or become U+FFFD (zookeeper
/// flavor, as ZooKeeper's Java decoding makes them); `testkeeper_wire::rawstr`.
fn decode(frame: &[u8], flavor: Flavor) -> Decoded {
    let mut r = Reader::new(frame);
    let h = match RequestHeader::decode(&mut r) {
        Ok(h) => h,
        Err(e) => return Decoded::BadFrame(e),
    };
    let invalid = match flavor {
        Flavor::Keeper => Invalid::Escape,
        Flavor::Zookeeper => Invalid::Replace,
    };
    match Request::decode_body_as(h.op, r.remaining(), invalid) {
        Ok(req) => Decoded::Req(h.xid, req),
        // Rare, and some of them ZooKeeper answers from the body: keep it.
        Err(DecodeError::UnknownOpCode(op)) => Decoded::Unknown(h.xid, op, r.remaining().to_vec()),
        Err(e) => Decoded::Malformed(h.xid, h.op, e),
    }
}

/// One frame, decoded.
enum Decoded {
    /// A request (xid, request).
    Req(i32, Request),
    /// An opcode the codec has no request for: xid, opcode, the body.
    Unknown(i32, i32, Vec<u8>),
    /// The header decoded but the body did not: xid, opcode, why.
    Malformed(i32, i32, DecodeError),
    /// Not even a header, or a bad length prefix.
    BadFrame(DecodeError),
}

/// The request loop of one connection that has a session.
struct Link<'a> {
    rd: &'a mut ReadHalf,
    buf: &'a mut BytesMut,
    shared: &'a Shared,
    conn: u64,
    backlog: &'a Backlog,
}

impl Link<'_> {
    /// Frames and decodes everything buffered, onto `pending`.
    fn decode_buffered(&mut self, pending: &mut VecDeque<Decoded>) {
        let max = self.shared.cfg.max_frame;
        loop {
            match split_frame(self.buf, max) {
                Ok(Some(n)) => {
                    pending.push_back(decode(&self.buf[4..n], self.shared.cfg.flavor));
                    self.buf.advance(n);
                }
                Ok(None) => break,
                Err(e) => {
                    pending.push_back(Decoded::BadFrame(DecodeError::Malformed(
                        if matches!(e, testkeeper_wire::frame::FrameError::Negative(_)) {
                            "negative frame length"
                        } else {
                            "frame larger than the maximum"
                        },
                    )));
                    break;
                }
            }
        }
    }

    /// Hands `pending` to the engine under one lock, until it is empty or the connection's
    /// reply queue is full (what is left waits for the writer).
    fn handle(&mut self, pending: &mut VecDeque<Decoded>) -> Option<Stop> {
        let mut engine = self.shared.engine();
        let conn = self.conn;
        while !engine.conns.out_full(conn) {
            let Some(item) = pending.pop_front() else { break };
            let flow = match item {
                Decoded::Req(xid, req) => engine.handle(conn, xid, req),
                Decoded::Unknown(xid, op, body) => engine.internal_op(conn, xid, op, &body),
                Decoded::Malformed(xid, op, e) => match engine.malformed(conn, xid, op, &e.to_string()) {
                    Flow::Close => return Some(Stop::Bad(format!("malformed request (xid {xid}, op {op}): {e}"))),
                    flow => flow,
                },
                Decoded::BadFrame(e) => return Some(Stop::Bad(format!("malformed frame: {e}"))),
            };
            if flow == Flow::Close {
                return Some(Stop::Closed);
            }
        }
        None
    }

    async fn serve(&mut self, stop: &mut watch::Receiver<bool>, closed: &mut oneshot::Receiver<()>) -> Stop {
        // Everything already buffered is handled under one lock: pipelined requests cost one
        // lock and, through the writer, one write.
        let mut pending = VecDeque::new();
        loop {
            if pending.is_empty() {
                self.decode_buffered(&mut pending);
            }
            if !pending.is_empty() {
                if let Some(stop) = self.handle(&mut pending) {
                    return stop;
                }
            }
            if !pending.is_empty() || self.backlog.is_full(0) {
                // Backpressure: read nothing more until the writer has written enough; the
                // client's unread replies then fill TCP's window, not our memory.
                if self.backlog.is_full(0) {
                    NetCounters::bump(&self.shared.net.reads_paused);
                }
                tokio::select! {
                    // In order, never at random: a seeded simulation must replay (docs/sim.md).
                    biased;
                    () = self.backlog.room() => continue,
                    _ = stop.changed() => return Stop::Shutdown,
                    _ = &mut *closed => return Stop::Eof,
                }
            }
            tokio::select! {
                // In order, never at random: a seeded simulation must replay (docs/sim.md).
                biased;
                r = self.rd.read_buf(self.buf) => match r {
                    Ok(0) => return if self.buf.is_empty() { Stop::Eof } else { Stop::Bad("connection closed inside a frame".into()) },
                    Ok(_) => {}
                    Err(e) => return Stop::Bad(format!("read error: {e}")),
                },
                _ = stop.changed() => return Stop::Shutdown,
                _ = &mut *closed => return Stop::Eof,
            }
        }
    }
}

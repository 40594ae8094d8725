//! One client connection: four-letter word or handshake on the first bytes, then the request
//! loop (`link`), then its last writes (`writer`). Every way a client can send bad bytes
//! (malformed frame, short body, oversized length, unknown opcode in keeper flavor) ends here
//! with a log line and a closed socket; the engine and every other session are untouched.
//! Before the handshake, reads are bounded in time (`opening`); after it, the connection is
//! read only while its reply queue has room (`engine::backlog`), so a client that never reads
//! its replies stops being read.

use std::net::SocketAddr;
use std::sync::Arc;

use bytes::{Buf, BytesMut};
use testkeeper_wire::frame::four_letter_word;
use testkeeper_wire::jute::{Decode, Reader};
use testkeeper_wire::net::Stream;
use testkeeper_wire::rawstr::Invalid;
use testkeeper_wire::records::connect::ConnectRequest;
use testkeeper_wire::records::header::RequestHeader;
use testkeeper_wire::{DecodeError, Request};
use tokio::io::AsyncWriteExt;
use tokio::sync::{mpsc, watch};
use tracing::{debug, warn};

use super::admission::Permit;
use super::link::{Link, Stop};
use super::opening::{self, Opening};
use super::outbox::Outbox;
use super::writer;
use crate::core::flavor::Flavor;
use crate::engine::backlog::Backlog;
use crate::engine::stats::NetCounters;
use crate::engine::{Handshake, Shared};
use crate::fourlw;

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
    let (tx, mut rx) = mpsc::unbounded_channel();
    let backlog = Backlog::new(shared.cfg.limits.reply_queue_bytes);
    // The engine queues the handshake response itself (a new session's once its entry
    // commits), ahead of anything else for this connection.
    let (conn, handshake) = {
        let mut engine = shared.engine();
        let conn = engine.add_conn(peer, tx, backlog.clone());
        (conn, engine.connect(conn, &req))
    };
    let mut outbox = Outbox::default();
    if handshake != Handshake::Accept {
        if let Handshake::Refuse(why) = handshake {
            debug!(%peer, why, "handshake refused");
        }
        let mut engine = shared.engine();
        engine.conns.close(conn);
        engine.disconnect(conn);
        drop(engine);
        tokio::spawn(writer::finish(wr, rx, backlog, outbox));
        return;
    }
    let mut wr = wr;
    let mut link = Link {
        rd: &mut rd,
        wr: &mut wr,
        rx: &mut rx,
        outbox: &mut outbox,
        buf: &mut buf,
        shared: &shared,
        conn,
        backlog: &backlog,
    };
    let reason = link.serve(&mut stop).await;
    let written = match reason {
        Stop::Bad(why) => {
            warn!(%peer, %why, "closing connection");
            None
        }
        Stop::Eof => {
            debug!(%peer, "client closed the connection");
            None
        }
        Stop::Closed => {
            debug!(%peer, "connection closed by the server");
            None
        }
        Stop::Shutdown => {
            debug!(%peer, "server shutting down");
            None
        }
        Stop::Written(end) => {
            debug!(%peer, "connection's writing ended (closed, reset or failed)");
            Some(end)
        }
    };
    {
        let mut engine = shared.engine();
        engine.conns.close(conn);
        engine.disconnect(conn);
    }
    match written {
        // Nothing more goes out; the read half goes with this task.
        Some(end) => writer::close(wr, end).await,
        // What the engine queued before the close still goes out, in order.
        None => {
            tokio::spawn(writer::finish(wr, rx, backlog, outbox));
        }
    }
}

/// Decodes one request frame body (after the length prefix). Strings' bytes that are not
/// UTF-8 are kept (keeper flavor: Keeper keeps a path's bytes) or become U+FFFD (zookeeper
/// flavor, as ZooKeeper's Java decoding makes them); `testkeeper_wire::rawstr`.
pub(super) fn decode(frame: &[u8], flavor: Flavor) -> Decoded {
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
pub(super) enum Decoded {
    /// A request (xid, request).
    Req(i32, Request),
    /// An opcode the codec has no request for: xid, opcode, the body.
    Unknown(i32, i32, Vec<u8>),
    /// The header decoded but the body did not: xid, opcode, why.
    Malformed(i32, i32, DecodeError),
    /// Not even a header, or a bad length prefix.
    BadFrame(DecodeError),
}

//! One client connection: four-letter word or handshake on the first bytes, then the request
//! loop. Every way a client can send bad bytes (malformed frame, short body, oversized length,
//! unknown opcode in keeper flavor) ends here with a log line and a closed socket; the engine
//! and every other session are untouched.

use std::net::SocketAddr;
use std::sync::Arc;

use bytes::{Buf, BytesMut};
use testkeeper_wire::frame::{four_letter_word, split_frame};
use testkeeper_wire::jute::{Decode, Reader};
use testkeeper_wire::records::connect::ConnectRequest;
use testkeeper_wire::records::header::RequestHeader;
use testkeeper_wire::{DecodeError, Request};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::OwnedReadHalf;
use tokio::net::TcpStream;
use tokio::sync::{mpsc, oneshot, watch};
use tracing::{debug, warn};

use super::writer;
use crate::core::flavor::Flavor;
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

/// Reads until `buf` holds one complete frame; returns its length (prefix included).
async fn read_frame(
    rd: &mut OwnedReadHalf,
    buf: &mut BytesMut,
    max: usize,
    stop: &mut watch::Receiver<bool>,
) -> Result<usize, Stop> {
    loop {
        match split_frame(buf, max) {
            Ok(Some(n)) => return Ok(n),
            Ok(None) => {}
            Err(e) => return Err(Stop::Bad(e.to_string())),
        }
        tokio::select! {
            r = rd.read_buf(buf) => match r {
                Ok(0) => return Err(if buf.is_empty() { Stop::Eof } else { Stop::Bad("connection closed inside a frame".into()) }),
                Ok(_) => {}
                Err(e) => return Err(Stop::Bad(format!("read error: {e}"))),
            },
            _ = stop.changed() => return Err(Stop::Shutdown),
        }
    }
}

/// Serves one connection until it closes.
pub async fn run(mut stream: TcpStream, peer: SocketAddr, shared: Arc<Shared>, mut stop: watch::Receiver<bool>) {
    let _ = stream.set_nodelay(true);
    let max = shared.cfg.max_frame;
    let mut buf = BytesMut::with_capacity(4096);
    while buf.len() < 4 {
        match stream.read_buf(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
    }
    let first: [u8; 4] = buf[..4].try_into().expect("four bytes");
    if let Some(word) = four_letter_word(&first).filter(|w| fourlw::is_known(shared.cfg.flavor, w)) {
        let answer = fourlw::answer(&shared, word, Some(peer));
        if let Some(text) = answer {
            let _ = stream.write_all(text.as_bytes()).await;
        } else {
            debug!(%peer, word, "four-letter word not allowed: closing");
        }
        let _ = stream.shutdown().await;
        return;
    }
    let len = i32::from_be_bytes(first);
    if shared.cfg.flavor == Flavor::Keeper && len != 44 && len != 45 {
        warn!(%peer, len, "first frame is neither a handshake (44/45 bytes) nor a known four-letter word: closing");
        return;
    }
    let (mut rd, wr) = stream.into_split();
    let n = match read_frame(&mut rd, &mut buf, max, &mut stop).await {
        Ok(n) => n,
        Err(Stop::Bad(why)) => {
            warn!(%peer, %why, "bad handshake frame: closing");
            return;
        }
        Err(_) => return,
    };
    let req = match ConnectRequest::decode(&mut Reader::new(&buf[4..n])) {
        Ok(r) => r,
        Err(e) => {
            warn!(%peer, error = %e, "malformed connect request: closing");
            return;
        }
    };
    buf.advance(n);
    let (tx, rx) = mpsc::unbounded_channel();
    let (closed_tx, mut closed_rx) = oneshot::channel();
    tokio::spawn(writer::run(wr, rx, closed_tx));
    // The engine queues the handshake response itself (a new session's once its entry
    // commits), ahead of anything else for this connection.
    let (conn, handshake) = {
        let mut engine = shared.engine();
        let conn = engine.add_conn(peer, tx);
        (conn, engine.connect(conn, &req))
    };
    if handshake != Handshake::Accept {
        if let Handshake::Refuse(why) = handshake {
            debug!(%peer, why, "handshake refused");
        }
        let mut engine = shared.engine();
        engine.close_conn(conn);
        engine.disconnect(conn);
        return;
    }
    let reason = serve_requests(&mut rd, &mut buf, &shared, conn, &mut stop, &mut closed_rx).await;
    match reason {
        Stop::Bad(why) => warn!(%peer, %why, "closing connection"),
        Stop::Eof => debug!(%peer, "client closed the connection"),
        Stop::Closed => debug!(%peer, "connection closed by the server"),
        Stop::Shutdown => debug!(%peer, "server shutting down"),
    }
    let mut engine = shared.engine();
    engine.close_conn(conn);
    engine.disconnect(conn);
}

/// Decodes one request frame body (after the length prefix).
fn decode(frame: &[u8]) -> Result<(i32, i32, Result<Request, DecodeError>), DecodeError> {
    let mut r = Reader::new(frame);
    let h = RequestHeader::decode(&mut r)?;
    Ok((h.xid, h.op, Request::decode_body(h.op, r.remaining())))
}

async fn serve_requests(
    rd: &mut OwnedReadHalf,
    buf: &mut BytesMut,
    shared: &Shared,
    conn: u64,
    stop: &mut watch::Receiver<bool>,
    closed: &mut oneshot::Receiver<()>,
) -> Stop {
    let max = shared.cfg.max_frame;
    loop {
        // Everything already buffered is handled under one lock: pipelined requests cost one
        // lock and, through the writer, one write.
        let mut pending = Vec::new();
        loop {
            match split_frame(buf, max) {
                Ok(Some(n)) => {
                    pending.push(decode(&buf[4..n]));
                    buf.advance(n);
                }
                Ok(None) => break,
                Err(e) => {
                    pending.push(Err(DecodeError::Malformed(
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
        if !pending.is_empty() {
            let mut engine = shared.engine();
            for item in pending {
                let flow = match item {
                    Ok((xid, _, Ok(req))) => engine.handle(conn, xid, req),
                    Ok((xid, _, Err(DecodeError::UnknownOpCode(op)))) => engine.unknown_op(conn, xid, op),
                    Ok((xid, op, Err(e))) => match engine.malformed(conn, xid, op, &e.to_string()) {
                        Flow::Close => return Stop::Bad(format!("malformed request (xid {xid}, op {op}): {e}")),
                        flow => flow,
                    },
                    Err(e) => return Stop::Bad(format!("malformed frame: {e}")),
                };
                if flow == Flow::Close {
                    return Stop::Closed;
                }
            }
        }
        tokio::select! {
            r = rd.read_buf(buf) => match r {
                Ok(0) => return if buf.is_empty() { Stop::Eof } else { Stop::Bad("connection closed inside a frame".into()) },
                Ok(_) => {}
                Err(e) => return Stop::Bad(format!("read error: {e}")),
            },
            _ = stop.changed() => return Stop::Shutdown,
            _ = &mut *closed => return Stop::Eof,
        }
    }
}

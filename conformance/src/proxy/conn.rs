//! One client connection through the proxy: the handshake and then every frame are forwarded
//! byte for byte, both ways, so the client gets exactly the upstream's answers; on the way,
//! requests and replies are decoded (requests matched to replies by xid, in order) and handed
//! to the checker. A connection whose first bytes are a four-letter word is a plain pipe.

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use bytes::{Buf, BytesMut};
use testkeeper_wire::client::{Event, Reply, ZkErrorOrCode};
use testkeeper_wire::frame::{four_letter_word, split_frame};
use testkeeper_wire::jute::{Decode, Reader};
use testkeeper_wire::records::connect::{ConnectRequest, ConnectResponse};
use testkeeper_wire::records::header::{ReplyHeader, RequestHeader, WatcherEvent};
use testkeeper_wire::{OpCode, Request, Response};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::TcpStream;

use super::checker::{Exchange, Msg, Sender};

/// Largest frame the proxy passes on (the servers' own limit applies behind it).
const MAX_FRAME: usize = 64 * 1024 * 1024;

/// A request on its way, waiting for the upstream's reply.
struct Pending {
    xid: i32,
    opcode: i32,
    body: Vec<u8>,
    request: Option<Request>,
}

/// Serves one client until either side closes.
pub async fn serve(client: TcpStream, upstream_addr: SocketAddr, conn: u64, checker: Sender) -> std::io::Result<()> {
    client.set_nodelay(true)?;
    let mut first = [0u8; 4];
    client.peek(&mut first).await?;
    let mut upstream = TcpStream::connect(upstream_addr).await?;
    upstream.set_nodelay(true)?;
    if four_letter_word(&first).is_some() {
        let mut client = client;
        tokio::io::copy_bidirectional(&mut client, &mut upstream).await?;
        return Ok(());
    }
    let (mut crd, mut cwr) = client.into_split();
    let (mut urd, mut uwr) = upstream.into_split();
    let (mut cbuf, mut ubuf) = (BytesMut::new(), BytesMut::new());
    // The handshake, both ways, as is.
    let Some(hs) = read_frame(&mut crd, &mut cbuf).await? else { return Ok(()) };
    uwr.write_all(&hs).await?;
    let Some(hs_reply) = read_frame(&mut urd, &mut ubuf).await? else { return Ok(()) };
    cwr.write_all(&hs_reply).await?;
    let req = ConnectRequest::decode(&mut Reader::new(&hs[4..]));
    let resp = ConnectResponse::decode(&mut Reader::new(&hs_reply[4..]));
    let (Ok(req), Ok(resp)) = (req, resp) else {
        // Not a ZooKeeper handshake: keep piping, without looking.
        let (c, u) = (pipe(crd, cbuf, uwr), pipe(urd, ubuf, cwr));
        let _ = tokio::join!(c, u);
        return Ok(());
    };
    let _ = checker.send(Msg::Open { conn, req, resp });
    let pending = Arc::new(Mutex::new(VecDeque::new()));
    let to_upstream = requests(crd, cbuf, uwr, pending.clone());
    let to_client = replies(urd, ubuf, cwr, pending, conn, checker.clone());
    // The client's end closes the upstream's writing side; the upstream then ends too, after
    // its last replies and events, which the reply side still passes on.
    let (a, b) = tokio::join!(to_upstream, to_client);
    let _ = checker.send(Msg::Closed { conn });
    a.and(b)
}

/// Client to upstream: forwards each frame, remembers what it asked.
async fn requests(
    mut rd: OwnedReadHalf,
    mut buf: BytesMut,
    mut wr: OwnedWriteHalf,
    pending: Arc<Mutex<VecDeque<Pending>>>,
) -> std::io::Result<()> {
    while let Some(frame) = read_frame(&mut rd, &mut buf).await? {
        let mut r = Reader::new(&frame[4..]);
        if let Ok(h) = RequestHeader::decode(&mut r) {
            let body = r.remaining().to_vec();
            let request = Request::decode_body(h.op, &body).ok();
            let p = Pending { xid: h.xid, opcode: h.op, body, request };
            pending.lock().unwrap_or_else(std::sync::PoisonError::into_inner).push_back(p);
        }
        wr.write_all(&frame).await?;
    }
    wr.shutdown().await
}

/// Upstream to client: forwards each frame; an event or a reply goes to the checker.
async fn replies(
    mut rd: OwnedReadHalf,
    mut buf: BytesMut,
    mut wr: OwnedWriteHalf,
    pending: Arc<Mutex<VecDeque<Pending>>>,
    conn: u64,
    checker: Sender,
) -> std::io::Result<()> {
    let mut n = 0u64;
    while let Some(frame) = read_frame(&mut rd, &mut buf).await? {
        // The client may be gone; the upstream's frames still count.
        let _ = wr.write_all(&frame).await;
        n += 1;
        let mut r = Reader::new(&frame[4..]);
        let Ok(h) = ReplyHeader::decode(&mut r) else { continue };
        let raw = r.remaining();
        if h.xid == testkeeper_wire::opcode::WATCH_XID {
            if let Ok(event) = WatcherEvent::decode(&mut Reader::new(raw)) {
                let _ = checker.send(Msg::Event { conn, event: Event { seq: n, header: h, event } });
            }
            continue;
        }
        let p = {
            let mut q = pending.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            let at = q.iter().position(|p| p.xid == h.xid);
            at.and_then(|i| q.remove(i))
        };
        let Some(p) = p else { continue };
        let body = match ZkErrorOrCode::from_code(h.err) {
            Some(e) => Err(e),
            None => match OpCode::try_from(p.opcode).ok().and_then(|op| Response::decode(op, raw).ok()) {
                Some(body) => Ok(body),
                None => continue,
            },
        };
        let reply = Reply { seq: n, header: h, body, raw_body: raw.to_vec() };
        let x = Exchange { conn, xid: p.xid, opcode: p.opcode, body: p.body, request: p.request, reply };
        let _ = checker.send(Msg::Exchange(Box::new(x)));
    }
    Ok(())
}

/// Copies whatever comes, after what was already read.
async fn pipe(mut rd: OwnedReadHalf, buf: BytesMut, mut wr: OwnedWriteHalf) -> std::io::Result<()> {
    wr.write_all(&buf).await?;
    tokio::io::copy(&mut rd, &mut wr).await?;
    wr.shutdown().await
}

/// The next whole frame, length prefix included; `None` at a clean end of stream.
async fn read_frame(rd: &mut OwnedReadHalf, buf: &mut BytesMut) -> std::io::Result<Option<Vec<u8>>> {
    loop {
        match split_frame(buf, MAX_FRAME) {
            Ok(Some(n)) => {
                let frame = buf[..n].to_vec();
                buf.advance(n);
                return Ok(Some(frame));
            }
            Ok(None) => {}
            Err(e) => return Err(std::io::Error::other(e.to_string())),
        }
        if rd.read_buf(buf).await? == 0 {
            return if buf.is_empty() { Ok(None) } else { Err(std::io::ErrorKind::UnexpectedEof.into()) };
        }
    }
}

//! A scripted fake server on 127.0.0.1:0 for the client's tests: each test writes out, step by
//! step, what the server reads and what it answers, including the misbehaviour under test.

use std::net::SocketAddr;
use std::time::Duration;

use bytes::BytesMut;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

use crate::frame::{put_frame, put_record, put_reply, split_frame};
use crate::jute::{Decode, Encode, Reader};
use crate::records::connect::{ConnectRequest, ConnectResponse};
use crate::records::header::{ReplyHeader, RequestHeader, WatcherEvent};
use crate::request::Request;
use crate::response::Response;

/// How long a test waits for anything before failing instead of hanging.
pub const WAIT: Duration = Duration::from_secs(5);

/// One accepted connection, seen from the server side.
pub struct FakeConn {
    stream: TcpStream,
    buf: BytesMut,
}

/// Starts a server that accepts one connection and runs `script` on it.
pub async fn serve<F, Fut>(script: F) -> (SocketAddr, JoinHandle<()>)
where
    F: FnOnce(FakeConn) -> Fut + Send + 'static,
    Fut: std::future::Future<Output = ()> + Send,
{
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    let task = tokio::spawn(async move {
        let (stream, _) = listener.accept().await.expect("accept");
        script(FakeConn { stream, buf: BytesMut::new() }).await;
    });
    (addr, task)
}

/// A handshake reply with the given timeout, session 0x42 and the 37-byte form.
pub fn session(timeout_ms: i32) -> ConnectResponse {
    ConnectResponse { protocol_version: 0, timeout_ms, session_id: 0x42, passwd: vec![7; 16], read_only: Some(false) }
}

impl FakeConn {
    /// The next frame's body, or `None` when the client closed the socket.
    pub async fn frame(&mut self) -> Option<Vec<u8>> {
        loop {
            if let Some(n) = split_frame(&self.buf, 1 << 20).expect("client frame") {
                return Some(self.buf.split_to(n)[4..].to_vec());
            }
            let read =
                tokio::time::timeout(WAIT, self.stream.read_buf(&mut self.buf)).await.expect("client went quiet");
            if read.unwrap_or(0) == 0 {
                return None;
            }
        }
    }

    /// Reads the handshake; returns it with its body length.
    pub async fn read_connect(&mut self) -> (ConnectRequest, usize) {
        let body = self.frame().await.expect("handshake");
        (ConnectRequest::decode_exact(&body).expect("handshake decodes"), body.len())
    }

    /// Reads the handshake and accepts it with `resp`.
    pub async fn accept(&mut self, resp: &ConnectResponse) {
        self.read_connect().await;
        self.send_record(resp).await;
    }

    /// The next request, or `None` when the client closed the socket.
    pub async fn request(&mut self) -> Option<(RequestHeader, Request)> {
        let body = self.frame().await?;
        let mut r = Reader::new(&body);
        let h = RequestHeader::decode(&mut r).expect("request header");
        let req = Request::decode_body(h.op, r.remaining()).expect("request body");
        Some((h, req))
    }

    pub async fn send_record<T: Encode>(&mut self, rec: &T) {
        let mut out = BytesMut::new();
        put_record(&mut out, rec);
        self.send_raw(&out).await;
    }

    pub async fn reply(&mut self, xid: i32, zxid: i64, err: i32, body: &Response) {
        let mut out = BytesMut::new();
        put_reply(&mut out, &ReplyHeader { xid, zxid, err }, body);
        self.send_raw(&out).await;
    }

    pub async fn event(&mut self, event_type: i32, path: &str) {
        let mut out = BytesMut::new();
        put_frame(&mut out, |o| {
            ReplyHeader { xid: -1, zxid: -1, err: 0 }.encode(o);
            WatcherEvent { event_type, state: 3, path: path.into() }.encode(o);
        });
        self.send_raw(&out).await;
    }

    pub async fn send_raw(&mut self, bytes: &[u8]) {
        // The client may already have hung up in tests of misbehaviour; that is fine.
        let _ = self.stream.write_all(bytes).await;
    }
}

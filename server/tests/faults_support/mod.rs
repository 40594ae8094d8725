//! Shared helpers of the fault tests: an embedded server on 127.0.0.1:0, wire clients, a tiny
//! HTTP/1.1 client (one request per connection), and a time bound on every await so a broken
//! fault hangs a test for seconds, not forever.

#![allow(dead_code)] // each test crate uses its own subset

use std::future::Future;
use std::net::SocketAddr;
use std::time::Duration;

use testkeeper_server::config::ServerConfig;
use testkeeper_server::core::flavor::Flavor;
use testkeeper_server::embed::TestKeeper;
use testkeeper_wire::client::{Client, ConnectOptions};
use testkeeper_wire::records::create::create_mode;
use testkeeper_wire::Acl;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Generous: only a hang should ever reach it.
const BOUND: Duration = Duration::from_secs(20);

/// Awaits `f`, failing the test if it takes longer than [`BOUND`].
pub async fn within<T>(f: impl Future<Output = T>) -> T {
    tokio::time::timeout(BOUND, f).await.expect("timed out: a fault left a request hanging")
}

/// A server of `flavor` on a free port, with `seed` for `prob=` rules.
pub async fn start(flavor: Flavor, seed: u64) -> TestKeeper {
    let mut cfg = ServerConfig::new(flavor);
    cfg.listen = "127.0.0.1:0".parse().unwrap();
    cfg.seed = seed;
    TestKeeper::start(cfg).await.expect("start server")
}

/// A fresh session.
pub async fn connect(tk: &TestKeeper) -> Client {
    within(Client::connect(tk.addr(), ConnectOptions::default())).await.expect("connect")
}

/// The same session on a new connection (zookeeper flavor).
pub async fn resume(tk: &TestKeeper, c: &Client) -> Result<Client, testkeeper_wire::client::ClientError> {
    within(Client::connect(tk.addr(), ConnectOptions::resume(c.session_id(), c.session_passwd().to_vec()))).await
}

/// Creates a persistent node with empty data.
pub async fn mk(c: &Client, path: &str) -> Result<String, testkeeper_wire::client::ClientError> {
    within(c.create(path, b"", &Acl::open(), create_mode::PERSISTENT)).await
}

/// Whether `path` exists, asked on a fresh session.
pub async fn exists_fresh(tk: &TestKeeper, path: &str) -> bool {
    let c = connect(tk).await;
    within(c.exists(path, false)).await.expect("exists").is_some()
}

/// One HTTP/1.1 request with `Connection: close`; returns (status, body).
pub async fn http(addr: SocketAddr, method: &str, path: &str, body: &str) -> (u16, String) {
    http_with(addr, method, path, &["Content-Type: text/plain", "X-Testkeeper: 1"], body).await
}

/// One HTTP/1.1 request with exactly `headers` (besides Host, Connection and Content-Length).
pub async fn http_with(addr: SocketAddr, method: &str, path: &str, headers: &[&str], body: &str) -> (u16, String) {
    within(async {
        let mut s = TcpStream::connect(addr).await.expect("connect http");
        let extra: String = headers.iter().map(|h| format!("{h}\r\n")).collect();
        let req = format!(
            "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n{extra}Content-Length: {}\r\n\r\n{body}",
            body.len()
        );
        s.write_all(req.as_bytes()).await.expect("write http");
        let mut raw = Vec::new();
        s.read_to_end(&mut raw).await.expect("read http");
        let text = String::from_utf8(raw).expect("utf-8 response");
        let (head, body) = text.split_once("\r\n\r\n").expect("header end");
        assert!(
            !head.to_ascii_lowercase().contains("transfer-encoding: chunked"),
            "chunked responses are not expected: {head}"
        );
        let status = head.split(' ').nth(1).and_then(|s| s.parse().ok()).expect("status code");
        (status, body.to_string())
    })
    .await
}

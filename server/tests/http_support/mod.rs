//! Plain HTTP/1.0 requests and four-letter words over real sockets, as curl and ClickHouse's
//! `keeper_utils` send them, for the tests of Keeper's HTTP API.

use std::net::SocketAddr;

use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::faults_support::within;

/// One response: status, lower-cased content type, body bytes.
#[derive(Debug)]
pub struct Answer {
    pub status: u16,
    pub content_type: String,
    pub body: Vec<u8>,
}

impl Answer {
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.text()))
    }
}

/// A four-letter word on the client port, as ClickHouse's `keeper_utils.send_4lw_cmd` sends it.
pub async fn four_letter_word(addr: SocketAddr, word: &str) -> String {
    within(async {
        let mut s = TcpStream::connect(addr).await.expect("connect client port");
        s.write_all(word.as_bytes()).await.unwrap();
        let mut out = Vec::new();
        s.read_to_end(&mut out).await.unwrap();
        String::from_utf8_lossy(&out).into_owned()
    })
    .await
}

/// One HTTP/1.0 request, exactly as curl would send it (no Origin, no custom header).
pub async fn req(addr: SocketAddr, method: &str, target: &str, headers: &[&str], body: &[u8]) -> Answer {
    within(async {
        let mut s = TcpStream::connect(addr).await.expect("connect http");
        let extra: String = headers.iter().map(|h| format!("{h}\r\n")).collect();
        let head =
            format!("{method} {target} HTTP/1.0\r\nHost: {addr}\r\n{extra}Content-Length: {}\r\n\r\n", body.len());
        s.write_all(head.as_bytes()).await.unwrap();
        s.write_all(body).await.unwrap();
        let mut raw = Vec::new();
        s.read_to_end(&mut raw).await.unwrap();
        let split = raw.windows(4).position(|w| w == b"\r\n\r\n").expect("header end");
        let head = String::from_utf8_lossy(&raw[..split]).to_ascii_lowercase();
        let status = head.split(' ').nth(1).and_then(|c| c.parse().ok()).expect("status");
        let content_type = head
            .lines()
            .find_map(|l| l.strip_prefix("content-type:"))
            .map(|v| v.trim().to_string())
            .unwrap_or_default();
        Answer { status, content_type, body: raw[split + 4..].to_vec() }
    })
    .await
}

pub async fn get(addr: SocketAddr, target: &str) -> Answer {
    req(addr, "GET", target, &[], b"").await
}

pub async fn post(addr: SocketAddr, target: &str, body: &[u8]) -> Answer {
    req(addr, "POST", target, &[], body).await
}

pub fn expect(a: &Answer, status: u16, body: &str) {
    assert_eq!((a.status, a.text().as_str()), (status, body), "{a:?}");
}

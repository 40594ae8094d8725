//! The ZooKeeper 3.8 behaviours docs/flavors.md calls "measured", checked against a live Apache
//! ZooKeeper and `testkeeper --flavor zookeeper` side by side, so every such claim has a command
//! that reproduces it: handshake lengths, unknown opcodes, auth failure, a successful standalone
//! check, multi sub-op types, createContainer flags, null data, system nodes, and what `cons`
//! and the watch dumps list.

use std::net::SocketAddr;
use std::time::Duration;

use testkeeper_tests::env::zookeeper_installed;
use testkeeper_tests::{four_letter_word, require_external, TestkeeperProcess, ZooKeeperProcess};
use testkeeper_wire::client::{Client, ConnectOptions};
use testkeeper_wire::records::children::GetChildrenRequest;
use testkeeper_wire::records::create::{create_mode, CreateRequest};
use testkeeper_wire::records::data::{CheckVersionRequest, ExistsRequest, GetDataRequest};
use testkeeper_wire::records::session::AuthPacket;
use testkeeper_wire::{Acl, CreateOp, OpCode, Request};

/// Every await of the probe is bounded, so a server that never answers fails the test with the
/// line that waited instead of hanging it.
trait Bounded: std::future::Future + Sized {
    async fn bounded(self, line: u32) -> Self::Output {
        match tokio::time::timeout(Duration::from_secs(10), self).await {
            Ok(v) => v,
            Err(_) => panic!("no answer within 10 s at zk_quirks.rs:{line}"),
        }
    }
}
impl<F: std::future::Future> Bounded for F {}

/// What one probe saw, in a form both servers must agree on.
async fn probe(addr: SocketAddr) -> Vec<String> {
    let mut out = Vec::new();
    // Four-letter words on an idle server: `cons` lists the asking connection itself, and the
    // watch dumps of an empty table are one newline.
    for word in ["cons", "wchc", "wchp"] {
        out.push(format!(
            "idle {word} -> {:?}",
            normalized(&four_letter_word(addr, word, Duration::from_secs(10)).unwrap())
        ));
    }
    let opts = |read_only| ConnectOptions { read_only, ..ConnectOptions::default() };
    let c44 = Client::connect(addr, opts(None)).bounded(line!()).await.unwrap();
    let c45 = Client::connect(addr, opts(Some(false))).bounded(line!()).await.unwrap();
    out.push(format!("handshake 44->{} 45->{}", c44.handshake_len(), c45.handshake_len()));
    // The watch dumps show the data-watch table only (a child watch is counted by mntr, not
    // listed).
    c44.get_data("/", true).bounded(line!()).await.unwrap();
    c44.exists("/none", true).bounded(line!()).await.unwrap();
    c44.get_children("/zookeeper", true).bounded(line!()).await.unwrap();
    for word in ["wchc", "wchp", "wchs"] {
        let text = normalized(&four_letter_word(addr, word, Duration::from_secs(10)).unwrap());
        out.push(format!("{word} -> {:?}", sorted_lines(&text)));
    }
    drop(c44);

    // Unknown opcode: reply UNIMPLEMENTED with zxid -1, then the connection closes.
    let unknown = raw_unknown_op(addr).bounded(line!()).await;
    out.push(format!("unknown op -> {unknown}"));

    // Auth failure: AUTHFAILED with zxid 0, then the connection closes.
    let c = Client::connect(addr, ConnectOptions::default()).bounded(line!()).await.unwrap();
    let r = c
        .call_with_xid(-4, Request::Auth(AuthPacket { auth_type: 0, scheme: "foo".into(), auth: b"bar".to_vec() }))
        .bounded(line!())
        .await
        .unwrap();
    out.push(format!("bad auth -> zxid {} err {:?}", r.header.zxid, r.body.err().map(|e| e.code())));
    tokio::time::sleep(Duration::from_millis(200)).await;
    out.push(format!("after bad auth closed {}", c.ping().bounded(line!()).await.is_err()));

    // A successful standalone check is never answered; a failing one is.
    let c = Client::connect(addr, ConnectOptions::default()).bounded(line!()).await.unwrap();
    let ok = tokio::time::timeout(
        Duration::from_millis(500),
        c.call(Request::Check(CheckVersionRequest { path: "/".into(), version: -1 })),
    )
    .await;
    out.push(format!("standalone check on / answered {}", ok.is_ok()));
    let c = Client::connect(addr, ConnectOptions::default()).bounded(line!()).await.unwrap();
    let missing = c
        .call(Request::Check(CheckVersionRequest { path: "/nope".into(), version: 0 }))
        .bounded(line!())
        .await
        .unwrap();
    out.push(format!("standalone check on /nope -> {:?}", missing.body.err().map(|e| e.code())));

    // multi/multiRead sub-op types outside ZooKeeper's lists: MARSHALLINGERROR, connection kept.
    let mr = c
        .call(Request::MultiRead(vec![Request::Exists(ExistsRequest { path: "/".into(), watch: false })]))
        .bounded(line!())
        .await
        .unwrap();
    out.push(format!("multiRead(exists) -> {:?}", mr.body.err().map(|e| e.code())));
    let mr = c
        .call(Request::MultiRead(vec![Request::GetChildren2(GetChildrenRequest { path: "/".into(), watch: false })]))
        .bounded(line!())
        .await
        .unwrap();
    out.push(format!("multiRead(getChildren2) -> {:?}", mr.body.err().map(|e| e.code())));
    let m = c
        .call(Request::Multi(vec![Request::GetData(GetDataRequest { path: "/".into(), watch: false })]))
        .bounded(line!())
        .await
        .unwrap();
    out.push(format!("multi(getData) -> {:?}", m.body.err().map(|e| e.code())));

    // createContainer with flags 0 makes a container; a plain create with flag 4 a persistent node.
    let tag = std::process::id();
    let mk = |op, path: String, flags| {
        Request::Create(CreateOp {
            op,
            req: CreateRequest { path, data: Some(vec![]), acl: Acl::open(), flags },
            ttl: 0,
        })
    };
    let r = c.call(mk(OpCode::CreateContainer, format!("/q{tag}c"), 0)).bounded(line!()).await.unwrap();
    out.push(format!("createContainer flags 0 -> {:?}", r.body.err().map(|e| e.code())));
    let r = c.call(mk(OpCode::Create, format!("/q{tag}p"), create_mode::CONTAINER)).bounded(line!()).await.unwrap();
    out.push(format!("create flag 4 -> {:?}", r.body.err().map(|e| e.code())));
    let r = c
        .call(mk(OpCode::Create, format!("/q{tag}t"), create_mode::PERSISTENT_WITH_TTL))
        .bounded(line!())
        .await
        .unwrap();
    out.push(format!("create (not createTTL) with a TTL mode -> {:?}", r.body.err().map(|e| e.code())));

    // Null data stays null; the config node's stat.
    let r = c
        .call(Request::Create(CreateOp {
            op: OpCode::Create,
            req: CreateRequest { path: format!("/q{tag}n"), data: None, acl: Acl::open(), flags: 0 },
            ttl: 0,
        }))
        .bounded(line!())
        .await
        .unwrap();
    assert!(r.body.is_ok());
    let got = c
        .call(Request::GetData(GetDataRequest { path: format!("/q{tag}n"), watch: false }))
        .bounded(line!())
        .await
        .unwrap();
    out.push(format!(
        "null data reads back {:?}",
        got.into_response().map(|r| format!("{r:?}").contains("data: None"))
    ));
    let (_, stat) = c.get_data("/zookeeper/config", false).bounded(line!()).await.unwrap();
    out.push(format!("/zookeeper/config aversion {} len {}", stat.aversion, stat.data_length));
    for p in ["c", "p", "t", "n"] {
        let _ = c.delete(&format!("/q{tag}{p}"), -1).bounded(line!()).await;
    }
    let _ = c.close().bounded(line!()).await;
    out
}

/// A four-letter answer with what differs between servers by nature (ports, session ids)
/// replaced by `N`.
fn normalized(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(i) = rest.find("127.0.0.1:").map(|i| i + 10).into_iter().chain(rest.find("0x").map(|i| i + 2)).min()
    {
        let (head, tail) = rest.split_at(i);
        out.push_str(head);
        let digits = tail.find(|c: char| !c.is_ascii_hexdigit()).unwrap_or(tail.len());
        out.push_str(if digits > 0 { "N" } else { "" });
        rest = &tail[digits..];
    }
    out.push_str(rest);
    out
}

/// The lines of a watch dump, sorted: ZooKeeper lists a `HashMap`'s order, testkeeper sorts
/// (docs/flavors.md).
fn sorted_lines(text: &str) -> String {
    let mut lines: Vec<&str> = text.lines().collect();
    lines.sort_unstable();
    lines.join("|")
}

/// Sends opcode 12345 on a raw connection (after a proper handshake) and reports the reply.
async fn raw_unknown_op(addr: SocketAddr) -> String {
    let c = Client::connect(addr, ConnectOptions::default()).await.unwrap();
    // The wire client refuses to encode unknown ops, so speak the frame by hand on a socket.
    drop(c);
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    let mut hs = vec![0, 0, 0, 45, 0, 0, 0, 0];
    hs.extend_from_slice(&[0; 8]);
    hs.extend_from_slice(&30000i32.to_be_bytes());
    hs.extend_from_slice(&[0; 8]);
    hs.extend_from_slice(&16i32.to_be_bytes());
    hs.extend_from_slice(&[0; 16]);
    hs.push(0);
    s.write_all(&hs).await.unwrap();
    let mut resp = [0u8; 41];
    s.read_exact(&mut resp).await.unwrap();
    s.write_all(&[0, 0, 0, 8, 0, 0, 0, 9, 0, 0, 0x30, 0x39]).await.unwrap();
    let mut rest = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(5), s.read_to_end(&mut rest)).await;
    if rest.len() < 20 {
        return format!("{} bytes then EOF", rest.len());
    }
    let xid = i32::from_be_bytes(rest[4..8].try_into().unwrap());
    let zxid = i64::from_be_bytes(rest[8..16].try_into().unwrap());
    let err = i32::from_be_bytes(rest[16..20].try_into().unwrap());
    format!("xid {xid} zxid {zxid} err {err}, then EOF after {} bytes", rest.len())
}

#[test]
fn measured_zookeeper_behaviours_hold_on_both_servers() {
    require_external!("Debian ZooKeeper", zookeeper_installed());
    let zk = ZooKeeperProcess::start();
    let tk = TestkeeperProcess::start(&["--flavor", "zookeeper"]);
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let want = rt.block_on(probe(zk.addr()));
    let got = rt.block_on(probe(tk.addr()));
    eprintln!("ZooKeeper 3.8:\n  {}", want.join("\n  "));
    assert_eq!(got, want, "testkeeper --flavor zookeeper (left) vs Apache ZooKeeper 3.8 (right)");
    // And the facts themselves, as docs/flavors.md states them.
    let expect = [
        "handshake 44->36 45->37",
        "unknown op -> xid 9 zxid -1 err -6, then EOF after 20 bytes",
        "after bad auth closed true",
        "standalone check on / answered false",
        "standalone check on /nope -> Some(-101)",
        "multiRead(exists) -> Some(-5)",
        "multiRead(getChildren2) -> Some(-5)",
        "multi(getData) -> Some(-5)",
        "createContainer flags 0 -> None",
        "create flag 4 -> None",
        "create (not createTTL) with a TTL mode -> Some(-8)",
        "null data reads back Ok(true)",
        "/zookeeper/config aversion -1 len 0",
        r#"idle cons -> " /127.0.0.1:N[0](queued=0,recved=1,sent=0)\n\n""#,
        r#"idle wchc -> "\n""#,
        r#"wchc -> "|\t/|\t/none|0xN""#,
        r#"wchs -> "1 connections watching 2 paths|Total watches:2""#,
    ];
    for line in expect {
        assert!(want.iter().any(|l| l == line), "ZooKeeper no longer shows {line:?}: {want:?}");
    }
}

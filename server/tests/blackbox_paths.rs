//! Black-box over a real socket: which written paths each flavor refuses, and what a read of
//! the empty path answers. ZooKeeper's side is checked against a live ZooKeeper 3.8 by
//! tests/tests/zk_paths.rs; Keeper's follows its source (`KeeperStorage` create preprocess
//! refuses only an empty node name; its storage has no "" entry).

#[allow(dead_code)] // each test binary uses part of it
mod blackbox_support;
mod faults_support;
#[allow(dead_code)]
mod http_support;

use blackbox_support::server;
use testkeeper_server::clock::Clock;
use testkeeper_server::core::flavor::Flavor;
use testkeeper_wire::client::{Client, ClientError, ConnectOptions};
use testkeeper_wire::{Acl, ZkError};

const BAD: Result<String, ClientError> = Err(ClientError::Zk(ZkError::BadArguments));

#[tokio::test]
async fn zookeeper_refuses_relative_segments_by_code_unit_and_reads_the_root_at_empty() {
    let tk = server(Flavor::Zookeeper, Clock::System).await;
    let c = Client::connect(tk.addr(), ConnectOptions::default()).await.unwrap();
    for p in ["/é", "/€", "/éé"] {
        c.create(p, b"", &Acl::open(), 0).await.unwrap();
    }
    for bad in ["/é/.", "/é/..", "/€/.", "/x\u{1}", "/\u{1f600}"] {
        assert_eq!(c.create(bad, b"", &Acl::open(), 0).await, BAD, "{bad:?}");
    }
    for ok in ["/€/.x", "/éé/.a", "/€/..x", "/é/..."] {
        assert_eq!(c.create(ok, b"", &Acl::open(), 0).await.as_deref(), Ok(ok), "{ok:?}");
    }
    let (_, root) = c.get_data("/", false).await.unwrap();
    let (_, empty) = c.get_data("", false).await.unwrap();
    assert_eq!(empty, root, "getData(\"\") answers the root");
    assert_eq!(c.get_children("", false).await.unwrap().len(), c.get_children("/", false).await.unwrap().len());
}

#[tokio::test]
async fn keeper_refuses_only_an_empty_name_and_has_no_empty_path() {
    let tk = server(Flavor::Keeper, Clock::System).await;
    let c = Client::connect(tk.addr(), ConnectOptions::default()).await.unwrap();
    c.create("/é", b"", &Acl::open(), 0).await.unwrap();
    for ok in ["/é/.", "/é/..", "/x\u{1}", "/\u{1f600}", "/€"] {
        assert_eq!(c.create(ok, b"", &Acl::open(), 0).await.as_deref(), Ok(ok), "{ok:?}");
    }
    assert_eq!(c.get_children("/é", false).await.unwrap().len(), 2, "'.' and '..' are plain names");
    // An empty name (Keeper's one check), and an empty segment (refused here, see
    // docs/flavors.md: Keeper would file it where its tree cannot reach it).
    for bad in ["/é/", "//x"] {
        assert_eq!(c.create(bad, b"", &Acl::open(), 0).await, BAD, "{bad:?}");
    }
    assert_eq!(c.get_data("", false).await, Err(ClientError::Zk(ZkError::NoNode)));
}

/// Keeper keeps a path's bytes as they came (`std::string`): a name that is not UTF-8 is
/// created, listed and read back byte for byte. The zookeeper flavor decodes it as ZooKeeper's
/// Java reader does (U+FFFD), so its create is BADARGUMENTS (tests/tests/zk_request_edges.rs
/// compares that with a live ZooKeeper). The client keeps raw bytes as `rawstr` escapes, and a
/// server that sent an escape's own UTF-8 instead of the byte would read back as four escapes,
/// so string equality here is byte equality on the wire.
#[tokio::test]
async fn keeper_keeps_a_paths_raw_bytes_and_zookeeper_replaces_them() {
    let raw = testkeeper_wire::rawstr::from_raw(b"/\xc3\xff-x");
    assert_eq!(testkeeper_wire::rawstr::raw_bytes(&raw).as_ref(), b"/\xc3\xff-x");
    let tk = server(Flavor::Keeper, Clock::System).await;
    let c = Client::connect(tk.addr(), ConnectOptions::default()).await.unwrap();
    assert_eq!(c.create(&raw, b"v", &Acl::open(), 0).await.as_deref(), Ok(raw.as_str()));
    assert!(c.get_children("/", false).await.unwrap().contains(&raw[1..].to_string()));
    assert_eq!(c.get_data(&raw, false).await.unwrap().0, b"v");
    let child = format!("{raw}/\u{e9}");
    assert_eq!(c.create(&child, b"", &Acl::open(), 0).await.as_deref(), Ok(child.as_str()));
    assert!(c.exists("/\u{fffd}-x", false).await.unwrap().is_none(), "stored as U+FFFD");
    assert!(c.exists("/\u{fffd}\u{fffd}-x", false).await.unwrap().is_none(), "stored as U+FFFD");

    let zk = server(Flavor::Zookeeper, Clock::System).await;
    let c = Client::connect(zk.addr(), ConnectOptions::default()).await.unwrap();
    assert_eq!(c.create(&raw, b"v", &Acl::open(), 0).await, BAD);
    assert!(c.get_children("/", false).await.unwrap().iter().all(|n| n == "zookeeper"));
}

/// The four-letter words that list paths (`dump`, `wchp`) print a name that is not UTF-8 as
/// its bytes, as Keeper prints its `std::string`s, on the client port and on the HTTP route's
/// text form; before, they printed the escape characters (U+10FFxx) the server keeps such
/// bytes as.
#[tokio::test]
async fn four_letter_words_print_a_paths_raw_bytes() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut cfg = testkeeper_server::config::ServerConfig::new(Flavor::Keeper);
    cfg.listen = "127.0.0.1:0".parse().unwrap();
    cfg.four_letter_words = Some(vec!["*".into()]);
    let mut tk = testkeeper_server::embed::TestKeeper::start(cfg).await.unwrap();
    let http = tk.start_http("127.0.0.1:0".parse().unwrap()).await.unwrap();
    let raw = testkeeper_wire::rawstr::from_raw(b"/\xc3\xff-e");
    let c = Client::connect(tk.addr(), ConnectOptions::default()).await.unwrap();
    c.create(&raw, b"", &Acl::open(), testkeeper_wire::records::create::create_mode::EPHEMERAL).await.unwrap();
    c.exists(&raw, true).await.unwrap();
    for word in ["dump", "wchp"] {
        let mut s = tokio::net::TcpStream::connect(tk.addr()).await.unwrap();
        s.write_all(word.as_bytes()).await.unwrap();
        let mut out = Vec::new();
        s.read_to_end(&mut out).await.unwrap();
        let text = String::from_utf8_lossy(&out);
        assert!(out.windows(5).any(|w| w == b"/\xc3\xff-e"), "{word}: {text}");
        assert!(!text.contains('\u{10ffc3}') && !text.contains('\u{10ffff}'), "{word}: {text}");
        let page = http_support::get(http, &format!("/api/v1/commands/{word}?format=text")).await;
        assert!(page.body.windows(5).any(|w| w == b"/\xc3\xff-e"), "{word} over HTTP: {}", page.text());
    }
}

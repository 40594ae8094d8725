//! Black-box over a real socket: which written paths each flavor refuses, and what a read of
//! the empty path answers. ZooKeeper's side is checked against a live ZooKeeper 3.8 by
//! tests/tests/zk_paths.rs; Keeper's follows its source (`KeeperStorage` create preprocess
//! refuses only an empty node name; its storage has no "" entry).

#[allow(dead_code)] // each test binary uses part of it
mod blackbox_support;

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

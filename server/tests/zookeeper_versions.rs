//! `--zookeeper-version`: the zookeeper flavor as 3.8.0 (Debian's, the golden transcript's)
//! and as 3.9, over a real socket. The 3.9 differences, each from ZooKeeper's own change:
//! a create2 inside a multi answers with a create2 result and the node's stat (ZOOKEEPER-4026,
//! apache/zookeeper#1978; 3.8.0 answers a plain create), and a data or child notification
//! carries the zxid of the change in its header (ZOOKEEPER-4655, apache/zookeeper#1950; 3.8.0
//! sends -1). Both versions are checked, so 3.8.0 is shown unchanged.

use std::time::Duration;

use testkeeper_server::core::flavor::{Flavor, ZookeeperVersion};
use testkeeper_server::embed::TestKeeper;
use testkeeper_wire::client::{Client, ConnectOptions};
use testkeeper_wire::records::create::CreateRequest;
use testkeeper_wire::{Acl, CreateOp, MultiResult, OpCode, Request, Response};

async fn server(version: ZookeeperVersion) -> (TestKeeper, Client) {
    let tk = TestKeeper::builder().flavor(Flavor::Zookeeper).zookeeper_version(version).start().await.unwrap();
    let zk = Client::connect(tk.addr(), ConnectOptions::default()).await.unwrap();
    (tk, zk)
}

fn create2(path: &str) -> Request {
    Request::Create(CreateOp {
        op: OpCode::Create2,
        req: CreateRequest { path: path.into(), data: Some(b"d".to_vec()), acl: Acl::open(), flags: 0 },
        ttl: 0,
    })
}

#[tokio::test]
async fn a_create2_in_a_multi_returns_its_stat_from_3_9_on() {
    for (version, with_stat) in [(ZookeeperVersion::V3_8_0, false), (ZookeeperVersion::V3_9, true)] {
        let (_tk, zk) = server(version).await;
        let results = zk.multi(vec![create2("/m")]).await.unwrap();
        let (_, st) = zk.get_data("/m", false).await.unwrap();
        match (&results[..], with_stat) {
            ([MultiResult::Ok(OpCode::Create2, Response::Create2 { path, stat })], true) => {
                assert_eq!((path.as_str(), stat.czxid, stat.data_length), ("/m", st.czxid, 1), "{version}");
            }
            ([MultiResult::Ok(OpCode::Create, Response::Create(path))], false) => assert_eq!(path, "/m", "{version}"),
            (other, _) => panic!("{version}: {other:?}"),
        }
    }
}

#[tokio::test]
async fn watch_events_carry_the_changes_zxid_from_3_9_on() {
    for (version, carries) in [(ZookeeperVersion::V3_8_0, false), (ZookeeperVersion::V3_9, true)] {
        let (_tk, mut zk) = server(version).await;
        let mut events = zk.events().unwrap();
        zk.create("/w", b"", &Acl::open(), 0).await.unwrap();
        zk.exists("/w", true).await.unwrap();
        zk.get_children("/", true).await.unwrap();
        let st = zk.set_data("/w", b"x", -1).await.unwrap();
        let changed = tokio::time::timeout(Duration::from_secs(5), events.recv()).await.unwrap().unwrap();
        assert_eq!(changed.event.path, "/w");
        let want = if carries { st.mzxid } else { -1 };
        assert_eq!(changed.header.zxid, want, "{version}: NodeDataChanged");
        zk.create("/w2", b"", &Acl::open(), 0).await.unwrap();
        let (_, root) = zk.get_data("/", false).await.unwrap();
        let kids = tokio::time::timeout(Duration::from_secs(5), events.recv()).await.unwrap().unwrap();
        assert_eq!(kids.event.path, "/");
        let want = if carries { root.pzxid } else { -1 };
        assert_eq!(kids.header.zxid, want, "{version}: NodeChildrenChanged");
    }
}

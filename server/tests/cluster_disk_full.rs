//! A cluster node whose disk fills stays up (cluster/driver/disk.rs): a follower drops the
//! leader's entries and serves no read until there is room and it has caught up; a leader
//! refuses client writes with NOTREADONLY and hands its leadership to a follower with room;
//! with every disk full the cluster refuses writes and goes on serving reads; once there is
//! room everything resumes on its own, and every node holds every acknowledged write. Before,
//! each of those nodes stopped on ENOSPC. Run as a simulation over the simulated disks, which
//! keep the server's margin (`SIM_MARGIN`) once full.

use std::time::Duration;

use testkeeper_server::cluster::embed::TestKeeperCluster;
use testkeeper_server::cluster::NodeId;
use testkeeper_server::config::ServerConfig;
use testkeeper_server::core::flavor::Flavor;
use testkeeper_wire::client::{Client, ClientError, ConnectOptions};
use testkeeper_wire::records::create::create_mode;
use testkeeper_wire::{Acl, ZkError};
use tokio::time::{sleep, Instant};

#[path = "sim_support/mod.rs"]
mod sim_support;

const WAIT: Duration = Duration::from_secs(10);

async fn create(c: &Client, path: &str) -> Result<String, ClientError> {
    c.create(path, b"v", &Acl::open(), create_mode::PERSISTENT).await
}

/// Waits for `what` to hold, polling on the simulated clock.
async fn until(what: &str, mut f: impl FnMut() -> bool) {
    let end = Instant::now() + WAIT;
    while !f() {
        assert!(Instant::now() < end, "{what}: not within {WAIT:?}");
        sleep(Duration::from_millis(10)).await;
    }
}

fn assert_up(c: &TestKeeperCluster) {
    for id in c.ids() {
        assert!(!c.stopped(id), "node {id} stopped: {:?}", c.node(id).unwrap().status());
    }
}

#[test]
fn a_full_disk_refuses_writes_and_nothing_stops() {
    sim_support::simulated(|| async {
        let c = TestKeeperCluster::start(3, ServerConfig::new(Flavor::Keeper), 21).await.expect("cluster starts");
        let leader = c.await_leader(WAIT).await.expect("a leader");
        let followers: Vec<NodeId> = c.ids().into_iter().filter(|i| *i != leader).collect();
        let (f, other) = (followers[0], followers[1]);
        let on_other = Client::connect(c.addr(other), ConnectOptions::default()).await.unwrap();
        let on_f = Client::connect(c.addr(f), ConnectOptions::default()).await.unwrap();

        // A follower's disk fills: the others go on, it serves no read, and it stays up.
        assert!(c.fill_disk(f, true));
        until("the full follower closes its read gate", || c.node(f).unwrap().status().catching_up).await;
        for i in 0..50 {
            create(&on_other, &format!("/a{i}")).await.expect("a write while a follower's disk is full");
        }
        assert!(on_f.get_data("/a0", false).await.is_err(), "a full follower served a read");
        assert!(c.node(f).unwrap().status().applied < c.node(leader).unwrap().status().applied);
        assert_up(&c);
        assert!(c.fill_disk(f, false));
        let top = c.node(leader).unwrap().status().applied;
        c.await_applied(top, WAIT).await.expect("the follower catches up once there is room");
        assert_eq!(on_f.get_data("/a49", false).await.expect("it serves reads again").0, b"v");

        // The leader's disk fills: it refuses writes and hands its leadership on.
        assert!(c.fill_disk(leader, true));
        until("the leadership moves off the full leader", || c.leader().is_some_and(|l| l != leader)).await;
        let mut refused = 0;
        let end = Instant::now() + WAIT;
        loop {
            match create(&on_other, "/after-handoff").await {
                Ok(_) => break,
                Err(e) => {
                    assert!(Instant::now() < end, "no write under the new leader: {e}");
                    refused += 1;
                    sleep(Duration::from_millis(50)).await;
                }
            }
        }
        println!("writes refused while the leadership moved: {refused}");
        assert_up(&c);

        // Every disk full: writes are refused with NOTREADONLY, reads on the leader go on (on
        // a session made before: a new session is an entry, and no follower takes entries).
        let l = c.leader().expect("a leader");
        let on_l = Client::connect(c.addr(l), ConnectOptions::default()).await.unwrap();
        for id in c.ids() {
            c.fill_disk(id, true);
        }
        let end = Instant::now() + WAIT;
        loop {
            match create(&on_l, "/never").await {
                Err(ClientError::Zk(ZkError::NotReadOnly)) => break,
                other => assert!(Instant::now() < end, "a write on a full cluster: {other:?}"),
            }
            sleep(Duration::from_millis(50)).await;
        }
        assert_eq!(c.leader(), Some(l), "the leadership moved to a follower without room");
        assert_eq!(on_l.get_data("/a49", false).await.expect("a read on a full cluster's leader").0, b"v");
        assert_up(&c);

        // Room again: writes resume, and every node holds every acknowledged write.
        for id in c.ids() {
            c.fill_disk(id, false);
        }
        let end = Instant::now() + WAIT;
        while create(&on_l, "/room-again").await.is_err() {
            assert!(Instant::now() < end, "no write once the disks have room");
            sleep(Duration::from_millis(50)).await;
        }
        let top = c.statuses().iter().map(|s| s.applied).max().unwrap();
        c.await_applied(top, WAIT).await.expect("every node catches up");
        for id in c.ids() {
            let n = Client::connect(c.addr(id), ConnectOptions::default()).await.unwrap();
            for p in ["/a0", "/a49", "/after-handoff", "/room-again"] {
                assert!(n.exists(p, false).await.unwrap().is_some(), "node {id} lacks {p}");
            }
            assert!(n.exists("/never", false).await.unwrap().is_none(), "node {id} has a refused write");
        }
        assert_up(&c);
        drop((on_other, on_f, on_l));
        c.shutdown().await;
    });
}

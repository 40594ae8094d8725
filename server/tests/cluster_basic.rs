//! A 3-node in-process cluster over real sockets: a leader is elected, writes through any node
//! reach every replica with the same digest at the same index, the leader can die and come
//! back, sessions and their ephemerals live in the log, and a corrupted replica stops alone.

use std::time::Duration;

use testkeeper_server::cluster::embed::TestKeeperCluster;
use testkeeper_server::cluster::Role;
use testkeeper_server::config::ServerConfig;
use testkeeper_server::core::flavor::Flavor;
use testkeeper_wire::client::{Client, ConnectOptions};
use testkeeper_wire::records::create::create_mode;
use testkeeper_wire::Acl;

#[path = "sim_support/mod.rs"]
mod sim_support;

const WAIT: Duration = Duration::from_secs(10);

fn seed() -> u64 {
    let s = std::env::var("TESTKEEPER_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(7);
    println!("seed {s} (TESTKEEPER_SEED={s} replays it)");
    s
}

async fn cluster(flavor: Flavor) -> TestKeeperCluster {
    let c = TestKeeperCluster::start(3, ServerConfig::new(flavor), seed()).await.expect("cluster starts");
    c.await_leader(WAIT).await.expect("a leader");
    c
}

fn follower(c: &TestKeeperCluster) -> u64 {
    let leader = c.leader().expect("a leader");
    c.ids().into_iter().find(|i| *i != leader).expect("a follower")
}

/// Every running replica at the same applied index, with the same digest, equal to a recompute.
async fn converged(c: &TestKeeperCluster) {
    let top = c.statuses().iter().map(|s| s.applied).max().unwrap_or(0);
    c.await_applied(top, WAIT).await.expect("replicas catch up");
    let digests: Vec<(u64, u64, u64)> =
        (c.ids().into_iter()).filter_map(|id| c.node(id).map(|n| (id, n.digest(), n.recompute_digest()))).collect();
    for (id, d, full) in &digests {
        assert_eq!(d, full, "node {id}: incremental digest vs recompute");
        assert_eq!(*d, digests[0].1, "node {id} differs from node {}: {digests:?}", digests[0].0);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_through_any_node_reach_every_replica() {
    for flavor in [Flavor::Keeper, Flavor::Zookeeper] {
        let c = cluster(flavor).await;
        let f = follower(&c);
        let client = Client::connect(c.addr(f), ConnectOptions::default()).await.expect("connect to a follower");
        client.create("/a", b"x", &Acl::open(), create_mode::PERSISTENT).await.expect("create through a follower");
        let seq = client.create("/a/s-", b"", &Acl::open(), create_mode::PERSISTENT_SEQUENTIAL).await.unwrap();
        assert_eq!(seq, "/a/s-0000000000");
        client.create("/a/e", b"", &Acl::open(), create_mode::EPHEMERAL).await.unwrap();
        // A read after one's own write, on the node that answered it, sees it.
        assert_eq!(client.get_data("/a", false).await.unwrap().0, b"x");
        converged(&c).await;
        for id in c.ids() {
            let other = Client::connect(c.addr(id), ConnectOptions::default()).await.unwrap();
            other.sync("/a").await.unwrap();
            assert!(other.exists("/a/e", false).await.unwrap().is_some(), "{flavor:?} node {id} has the ephemeral");
        }
        drop(client);
        c.shutdown().await;
    }
}

/// With the other follower cut off, the leader can commit a write only once the follower that
/// forwarded it has acknowledged it: so that follower, which then holds it with the leader (a
/// majority of three), must have applied and answered it before the leader's commit index
/// could reach it (driver/ahead.rs). Every such write counts, and the replicas agree after.
/// Run as a simulation: over threads, a loaded machine sometimes let the leader's commit index
/// reach the follower first, and the count came up short.
#[test]
fn a_follower_applies_what_it_and_the_leader_hold_before_the_leader_says_committed() {
    sim_support::simulated(|| async {
        a_follower_applies_ahead().await;
    });
}

async fn a_follower_applies_ahead() {
    let c = cluster(Flavor::Zookeeper).await;
    let leader = c.leader().unwrap();
    let f = follower(&c);
    let other = c.ids().into_iter().find(|i| *i != leader && *i != f).unwrap();
    c.partition(&[&[leader, f], &[other]]);
    let before = c.node(f).unwrap().applied_on_stored();
    let client = Client::connect(c.addr(f), ConnectOptions::default()).await.expect("connect to a follower");
    for i in 0..5 {
        client.create(&format!("/ahead-{i}"), b"", &Acl::open(), create_mode::PERSISTENT).await.unwrap();
    }
    // The session's own entry went the same way: six entries at least.
    let ahead = c.node(f).unwrap().applied_on_stored() - before;
    assert!(ahead >= 6, "follower {f} applied {ahead} entries on the leader's stored copy");
    c.heal();
    converged(&c).await;
    drop(client);
    c.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_leader_dies_and_comes_back() {
    let mut c = cluster(Flavor::Keeper).await;
    let client = Client::connect(c.addr(follower(&c)), ConnectOptions::default()).await.unwrap();
    for i in 0..20 {
        client.create(&format!("/k{i}"), b"v", &Acl::open(), create_mode::PERSISTENT).await.unwrap();
    }
    let old = c.leader().unwrap();
    c.kill(old).await;
    let new = c.await_leader(WAIT).await.expect("a new leader");
    assert_ne!(new, old);
    let survivor = c.ids().into_iter().find(|i| *i != old).unwrap();
    let client = Client::connect(c.addr(survivor), ConnectOptions::default()).await.unwrap();
    client.create("/after", b"", &Acl::open(), create_mode::PERSISTENT).await.expect("a write under the new leader");
    c.restart(old).await.expect("restart the old leader");
    converged(&c).await;
    let back = Client::connect(c.addr(old), ConnectOptions::default()).await.unwrap();
    back.sync("/").await.unwrap();
    assert!(back.exists("/after", false).await.unwrap().is_some(), "the restarted node caught up");
    assert_eq!(
        back.get_children("/", false)
            .await
            .unwrap()
            .iter()
            .filter(|n| n.strip_prefix('k').is_some_and(|d| d.parse::<u32>().is_ok()))
            .count(),
        20
    );
    c.shutdown().await;
}

/// Survivors must not stand for election in lock-step: with equal election timeouts two of
/// them split the vote on every timeout, and the cluster never elects (seen once as a 3-process
/// cluster that acknowledged no write for 60 s after its leader was killed).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_killed_leader_is_replaced_whichever_node_it_was() {
    let mut c = cluster(Flavor::Keeper).await;
    let mut killed = std::collections::BTreeSet::new();
    for round in 0..6 {
        let old = c.leader().expect("a leader");
        killed.insert(old);
        c.kill(old).await;
        let new =
            c.await_leader(WAIT).await.unwrap_or_else(|e| panic!("round {round}: no leader after killing {old}: {e}"));
        assert_ne!(new, old);
        c.restart(old).await.expect("restart the old leader");
        c.await_leader(WAIT).await.expect("a leader with every node back");
    }
    println!("leaders killed: {killed:?}");
    c.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_corrupted_replica_stops_alone_and_the_others_serve() {
    let c = cluster(Flavor::Keeper).await;
    let bad = follower(&c);
    let client = Client::connect(c.addr(c.leader().unwrap()), ConnectOptions::default()).await.unwrap();
    client.create("/before", b"", &Acl::open(), create_mode::PERSISTENT).await.unwrap();
    c.corrupt_next_apply(bad);
    client.create("/poison", b"p", &Acl::open(), create_mode::PERSISTENT).await.unwrap();
    let until = std::time::Instant::now() + WAIT;
    let stopped = loop {
        let s = c.node(bad).unwrap().status();
        if let Some(why) = s.stopped {
            break why;
        }
        assert!(std::time::Instant::now() < until, "the corrupted replica did not stop");
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    assert!(stopped.contains("Digest for nodes is not matching"), "{stopped}");
    assert!(stopped.contains("Keeper will terminate to avoid inconsistencies"), "{stopped}");
    client.create("/after", b"", &Acl::open(), create_mode::PERSISTENT).await.expect("the others keep serving");
    for s in c.statuses() {
        assert_eq!(s.stopped.is_some(), s.id == bad, "{s:?}");
    }
    c.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_leader_writing_a_wrong_digest_stops_every_replica_that_applies_it() {
    let c = cluster(Flavor::Keeper).await;
    let leader = c.leader().unwrap();
    let client = Client::connect(c.addr(leader), ConnectOptions::default()).await.unwrap();
    client.create("/ok", b"", &Acl::open(), create_mode::PERSISTENT).await.unwrap();
    c.invalid_digest_next(leader);
    let _ =
        tokio::time::timeout(Duration::from_secs(3), client.create("/bad", b"", &Acl::open(), create_mode::PERSISTENT))
            .await;
    let until = std::time::Instant::now() + WAIT;
    while c.statuses().iter().any(|s| s.stopped.is_none()) {
        assert!(std::time::Instant::now() < until, "not every replica stopped: {:?}", c.statuses());
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(c.statuses().iter().all(|s| s.role != Role::Candidate || s.stopped.is_some()));
    c.shutdown().await;
}

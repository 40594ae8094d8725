//! A 3-node in-process cluster under faults: an isolated leader, lossy and slow links, a
//! follower so far behind that only a snapshot can catch it up, and a durable cluster that
//! is killed whole and comes back with everything it acknowledged.

use std::time::Duration;

use testkeeper_server::cluster::embed::TestKeeperCluster;
use testkeeper_server::cluster::net::mem::LinkFaults;
use testkeeper_server::config::ServerConfig;
use testkeeper_server::core::flavor::Flavor;
use testkeeper_wire::client::{Client, ConnectOptions};
use testkeeper_wire::records::create::create_mode;
use testkeeper_wire::Acl;

const WAIT: Duration = Duration::from_secs(15);

fn seed() -> u64 {
    let s = std::env::var("TESTKEEPER_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(11);
    println!("seed {s} (TESTKEEPER_SEED={s} replays it)");
    s
}

async fn converged(c: &TestKeeperCluster) {
    let top = c.statuses().iter().map(|s| s.applied).max().unwrap_or(0);
    c.await_applied(top, WAIT).await.expect("replicas catch up");
    let d: Vec<(u64, u64)> = c.ids().into_iter().filter_map(|id| c.node(id).map(|n| (id, n.digest()))).collect();
    assert!(d.iter().all(|(_, x)| *x == d[0].1), "digests differ at index {top}: {d:?}");
    for id in c.ids() {
        if let Some(n) = c.node(id) {
            assert_eq!(n.digest(), n.recompute_digest(), "node {id}");
        }
    }
}

/// Retries a create until a leader takes it (a client would, on CONNECTIONLOSS).
async fn create(c: &TestKeeperCluster, path: &str) {
    create_with(c, path, b"").await;
}

/// [`create`] with data. On a loaded machine a fresh cluster may elect again, and a zookeeper-
/// flavor node without a leader drops its clients, so a test client retries as a real one does.
async fn create_with(c: &TestKeeperCluster, path: &str, data: &[u8]) {
    let until = std::time::Instant::now() + WAIT;
    loop {
        for id in c.ids() {
            if c.node(id).is_none() {
                continue;
            }
            if let Ok(Ok(client)) =
                tokio::time::timeout(Duration::from_secs(2), Client::connect(c.addr(id), ConnectOptions::default()))
                    .await
            {
                match tokio::time::timeout(
                    Duration::from_secs(3),
                    client.create(path, data, &Acl::open(), create_mode::PERSISTENT),
                )
                .await
                {
                    Ok(Ok(_)) => return,
                    Ok(Err(e)) if e.to_string().contains("NODEEXISTS") || e.to_string().contains("NodeExists") => {
                        return
                    }
                    _ => {}
                }
            }
        }
        assert!(std::time::Instant::now() < until, "no node took the create of {path}: {:?}", c.statuses());
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_isolated_leader_is_replaced_and_rejoins() {
    let c = TestKeeperCluster::start(3, ServerConfig::new(Flavor::Keeper), seed()).await.unwrap();
    let old = c.await_leader(WAIT).await.unwrap();
    create(&c, "/before").await;
    c.isolate(old);
    let until = std::time::Instant::now() + WAIT;
    let new = loop {
        let l = c
            .statuses()
            .into_iter()
            .filter(|s| s.id != old && s.role == testkeeper_server::cluster::Role::Leader)
            .map(|s| s.id)
            .next();
        if let Some(l) = l {
            break l;
        }
        assert!(std::time::Instant::now() < until, "the majority elected nobody: {:?}", c.statuses());
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    assert_ne!(new, old);
    let client = Client::connect(c.addr(new), ConnectOptions::default()).await.unwrap();
    client.create("/during", b"", &Acl::open(), create_mode::PERSISTENT).await.expect("the majority serves writes");
    c.heal();
    c.await_leader(WAIT).await.unwrap();
    converged(&c).await;
    let back = Client::connect(c.addr(old), ConnectOptions::default()).await.unwrap();
    back.sync("/").await.unwrap();
    assert!(back.exists("/during", false).await.unwrap().is_some(), "the old leader caught up");
    c.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lossy_slow_duplicating_links_still_commit_every_write() {
    let c = TestKeeperCluster::start(3, ServerConfig::new(Flavor::Zookeeper), seed()).await.unwrap();
    c.await_leader(WAIT).await.unwrap();
    let faults = LinkFaults { drop: 0.15, delay_ms: 2, jitter_ms: 8, duplicate: 0.1 };
    for a in c.ids() {
        for b in c.ids() {
            if a != b {
                c.set_link(a, b, faults);
            }
        }
    }
    for i in 0..30 {
        create(&c, &format!("/n{i}")).await;
    }
    c.heal();
    c.await_leader(WAIT).await.unwrap();
    converged(&c).await;
    let any = Client::connect(c.addr(1), ConnectOptions::default()).await.unwrap();
    any.sync("/").await.unwrap();
    let names = any.get_children("/", false).await.unwrap();
    assert_eq!(names.iter().filter(|n| n.starts_with('n')).count(), 30, "{names:?}");
    c.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_follower_behind_the_compacted_log_catches_up_from_a_snapshot() {
    let mut cfg = ServerConfig::new(Flavor::Keeper);
    (cfg.snapshot_distance, cfg.reserved_log_items) = (20, 5);
    let mut c = TestKeeperCluster::start(3, cfg, seed()).await.unwrap();
    let leader = c.await_leader(WAIT).await.unwrap();
    let behind = c.ids().into_iter().find(|i| *i != leader).unwrap();
    c.kill(behind).await;
    for i in 0..120 {
        create_with(&c, &format!("/s{i}"), b"x").await;
    }
    // Let the leader's snapshot finish and its log compact past what the follower has.
    tokio::time::sleep(Duration::from_millis(300)).await;
    c.restart(behind).await.unwrap();
    converged(&c).await;
    let f = Client::connect(c.addr(behind), ConnectOptions::default()).await.unwrap();
    assert!(f.exists("/s119", false).await.unwrap().is_some());
    c.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_durable_cluster_killed_whole_keeps_what_it_acknowledged() {
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = ServerConfig::new(Flavor::Zookeeper);
    cfg.data_dir = Some(dir.path().to_path_buf());
    (cfg.snapshot_distance, cfg.reserved_log_items) = (25, 10);
    let mut c = TestKeeperCluster::start(3, cfg, seed()).await.unwrap();
    c.await_leader(WAIT).await.unwrap();
    for i in 0..60 {
        create_with(&c, &format!("/d{i}"), &[i as u8]).await;
    }
    for id in c.ids() {
        c.kill(id).await;
    }
    for id in c.ids() {
        c.restart(id).await.unwrap();
    }
    c.await_leader(WAIT).await.unwrap();
    // A new leader commits the entries of earlier terms only with one of its own, and a
    // restarted node replays only to the commit index it had flushed: a write now commits
    // everything acknowledged before the kill, and then every node holds every create.
    create_with(&c, "/after-restart", b"").await;
    converged(&c).await;
    for id in c.ids() {
        let n = c.node(id).unwrap();
        for i in 0..60 {
            let data = n.data(&format!("/d{i}")).unwrap_or_else(|| panic!("node {id}: /d{i}, acknowledged, is lost"));
            assert_eq!(data, vec![i as u8]);
        }
    }
    c.shutdown().await;
}

/// A cluster dropped while a node is paused (a test that panicked between `pause` and
/// `resume`, say) lets go of it: the paused driver's thread used to wait forever for a turn
/// that never came, and the drop joined it, so the failing test hung instead of failing.
#[test]
fn dropping_a_cluster_with_a_paused_node_returns() {
    let (done, finished) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
        rt.block_on(async {
            let c = TestKeeperCluster::start(3, ServerConfig::new(Flavor::Keeper), seed()).await.unwrap();
            let leader = c.await_leader(WAIT).await.expect("a leader");
            c.pause(leader);
            // Past its next tick, the driver sits in its paused loop (a drop right after
            // `pause` found it still waiting for input, where the Stop reached it).
            tokio::time::sleep(Duration::from_millis(300)).await;
            drop(c);
        });
        done.send(()).unwrap();
    });
    finished.recv_timeout(Duration::from_secs(60)).expect("dropping the cluster returned");
}

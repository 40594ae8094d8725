//! The read gate (cluster/read_gate.rs): a follower that rejoins its leader after a partition
//! serves no read until it has caught up to where the leader's log was when it came back, and
//! it serves again within about one election timeout plus a round trip of the heal. Run as a
//! simulation with 20 ms links, so the window a stale read would fall in is long and the same
//! on every machine.

use std::time::Duration;

use testkeeper_server::cluster::embed::TestKeeperCluster;
use testkeeper_server::cluster::net::mem::LinkFaults;
use testkeeper_server::config::ServerConfig;
use testkeeper_server::core::flavor::Flavor;
use testkeeper_wire::client::{Client, ConnectOptions};
use testkeeper_wire::records::create::create_mode;
use testkeeper_wire::Acl;
use tokio::time::Instant;

#[path = "sim_support/mod.rs"]
mod sim_support;

const WAIT: Duration = Duration::from_secs(10);
const WRITES: u32 = 40;

#[test]
fn a_rejoined_follower_serves_no_read_before_it_caught_up() {
    sim_support::simulated(|| async {
        let c = TestKeeperCluster::start(3, ServerConfig::new(Flavor::Keeper), 11).await.expect("cluster starts");
        c.set_default_link(LinkFaults { delay_ms: 20, ..LinkFaults::default() });
        let leader = c.await_leader(WAIT).await.expect("a leader");
        let f = c.ids().into_iter().find(|i| *i != leader).unwrap();
        let on_f = Client::connect(c.addr(f), ConnectOptions::default()).await.expect("connect to a follower");
        on_f.create("/x", b"0", &Acl::open(), create_mode::PERSISTENT).await.unwrap();
        assert_eq!(on_f.get_data("/x", false).await.unwrap().0, b"0");

        c.isolate(f);
        let lost = Instant::now() + WAIT;
        while c.node(f).unwrap().status().leader != 0 {
            assert!(Instant::now() < lost, "the isolated follower never lost its leader");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let on_leader = Client::connect(c.addr(leader), ConnectOptions::default()).await.unwrap();
        for i in 1..=WRITES {
            on_leader.set_data("/x", i.to_string().as_bytes(), -1).await.unwrap();
        }
        let last = WRITES.to_string().into_bytes();

        c.heal();
        let healed = Instant::now();
        let mut refused = 0;
        let served_at = loop {
            assert!(healed.elapsed() < WAIT, "the follower served no read within {WAIT:?} of the heal");
            match on_f.get_data("/x", false).await {
                Ok((data, _)) => {
                    assert_eq!(
                        data,
                        last,
                        "a read on the rejoined follower {:?} after the heal saw a stale value",
                        healed.elapsed()
                    );
                    break healed.elapsed();
                }
                Err(_) => refused += 1,
            }
            tokio::time::sleep(Duration::from_millis(2)).await;
        };
        println!("follower {f} served again {served_at:?} after the heal ({refused} reads refused before)");
        assert!(refused > 0, "the follower never refused a read while it caught up");
        assert!(served_at < Duration::from_secs(2), "serving again took {served_at:?}");
        drop((on_f, on_leader));
        c.shutdown().await;
    });
}

/// A follower whose driver stood still for longer than an election timeout (a paused process,
/// a starved machine) closes its gate on its first tick after, and opens it once caught up.
#[test]
fn a_follower_back_from_a_pause_closes_its_gate_until_caught_up() {
    sim_support::simulated(|| async {
        let c = TestKeeperCluster::start(3, ServerConfig::new(Flavor::Keeper), 12).await.expect("cluster starts");
        c.set_default_link(LinkFaults { delay_ms: 20, ..LinkFaults::default() });
        let leader = c.await_leader(WAIT).await.expect("a leader");
        let f = c.ids().into_iter().find(|i| *i != leader).unwrap();
        let on_leader = Client::connect(c.addr(leader), ConnectOptions::default()).await.unwrap();
        on_leader.create("/x", b"0", &Acl::open(), create_mode::PERSISTENT).await.unwrap();
        c.pause(f);
        for i in 1..=WRITES {
            on_leader.set_data("/x", i.to_string().as_bytes(), -1).await.unwrap();
        }
        tokio::time::sleep(Duration::from_secs(5)).await;
        assert!(!c.node(f).unwrap().status().catching_up, "the gate closed while the driver stood still");
        c.resume(f);
        let resumed = Instant::now();
        let mut closed = false;
        while resumed.elapsed() < WAIT {
            let s = c.node(f).unwrap().status();
            closed |= s.catching_up;
            if closed && !s.catching_up {
                break;
            }
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        assert!(closed, "the gate never closed after the pause");
        assert!(!c.node(f).unwrap().status().catching_up, "the gate did not open again within {WAIT:?}");
        let on_f = Client::connect(c.addr(f), ConnectOptions::default()).await.unwrap();
        assert_eq!(on_f.get_data("/x", false).await.unwrap().0, WRITES.to_string().into_bytes());
        drop((on_f, on_leader));
        c.shutdown().await;
    });
}

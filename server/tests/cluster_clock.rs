//! A node's wall clock stepped (NTP, a resumed VM) while the cluster runs, inside a simulation
//! (one thread, the runtime's paused clock, the simulated network): sessions are timed on the
//! monotonic clock, so a leader whose wall clock jumps an hour ahead expires no live session,
//! while a session whose client went silent still expires after its timeout, and the entries
//! the leader writes carry its stepped wall time.

use std::time::Duration;

use testkeeper_server::cluster::embed::TestKeeperCluster;
use testkeeper_server::config::ServerConfig;
use testkeeper_server::core::flavor::Flavor;
use testkeeper_wire::client::{Client, ConnectOptions};
use testkeeper_wire::records::create::create_mode;
use testkeeper_wire::Acl;

#[path = "sim_support/mod.rs"]
mod sim_support;

use sim_support::simulated;

const HOUR_MS: i64 = 3_600_000;

#[test]
fn a_wall_clock_jump_on_the_leader_expires_no_live_session() {
    simulated(|| async {
        let c = TestKeeperCluster::start(3, ServerConfig::new(Flavor::Keeper), 5).await.unwrap();
        let leader = c.await_leader(Duration::from_secs(10)).await.unwrap();
        let opts = ConnectOptions { timeout_ms: 10_000, ..Default::default() };
        let live = Client::connect(c.addr(leader), opts.clone()).await.unwrap();
        live.create("/live", b"", &Acl::open(), create_mode::EPHEMERAL).await.unwrap();
        let quiet = ConnectOptions { auto_ping: false, ..opts.clone() };
        let silent = Client::connect(c.addr(leader), quiet).await.unwrap();
        silent.create("/silent", b"", &Acl::open(), create_mode::EPHEMERAL).await.unwrap();
        let (silent_id, timeout) = (silent.session_id(), silent.negotiated_timeout_ms() as u64);
        // The silent client's connection stays open but sends nothing, not even pings: its
        // session must expire on its own timeout.
        std::mem::forget(silent);

        for id in c.ids() {
            assert!(c.jump_clock(id, HOUR_MS));
        }
        // A few ticks on the stepped clocks: on the wall clock, every session was an hour
        // past its deadline at the first one.
        tokio::time::sleep(Duration::from_secs(2)).await;
        assert!(live.exists("/live", false).await.unwrap().is_some(), "the live session's ephemeral is gone");
        let (_, stat) = live.get_data("/live", false).await.unwrap();
        let created = live.create("/after", b"", &Acl::open(), 0).await.unwrap();
        assert_eq!(created, "/after");
        let (_, after) = live.get_data("/after", false).await.unwrap();
        assert!(after.ctime - stat.ctime >= HOUR_MS, "entries carry the stepped wall time: {stat:?} {after:?}");

        // The silent session still expires, on its timeout (plus a tick), not in an hour.
        tokio::time::sleep(Duration::from_millis(timeout + 1000)).await;
        assert!(live.exists("/silent", false).await.unwrap().is_none(), "the silent session {silent_id:#x} lives on");
        assert!(live.exists("/live", false).await.unwrap().is_some());
    });
}

//! Debian's clickhouse-server 18.16 fails over between the nodes of a 3-node cluster of
//! `testkeeper serve --id N --peers ...` processes (with data directories), in both flavors.
//!
//! ClickHouse's `<zookeeper>` lists every node. A ReplicatedMergeTree table takes an INSERT;
//! then the leader is killed, and, if ClickHouse's own connection was on another node, that
//! node too in a second round (after the first comes back), so that ClickHouse both loses its
//! server and sees a leader change. After each kill, INSERTs are retried until one is
//! accepted: ClickHouse 18.16 has no session resumption, so it opens a new session on a node
//! that serves and its replica leaves read-only mode (the restarting thread checks every
//! second here: `zookeeper_session_expiration_check_period`). A retried INSERT whose first
//! try had an unknown outcome is deduplicated by its block hash, so at the end the table holds
//! exactly the rows of the distinct INSERTs, an identical INSERT again adds nothing (its block
//! hash survived the failovers), and every node holds the same block hashes.
//!
//! Prerequisites as in `clickhouse_server.rs` (Debian's clickhouse-server and
//! clickhouse-client, the kazoo venv); missing ones skip, or fail under
//! TESTKEEPER_REQUIRE_EXTERNAL=1.

#[path = "../clickhouse/common.rs"]
mod common;
#[path = "../clickhouse/server18.rs"]
mod server18;
#[path = "../clickhouse/server18_workload.rs"]
mod server18_workload;

use std::time::{Duration, Instant};

use common::{children, dump_tree};
use server18::ClickHouseServer;
use server18_workload::{prereqs, QUERY_TIMEOUT};
use testkeeper_tests::net::four_letter_word;
use testkeeper_tests::{ClusterOptions, TestkeeperCluster};

const WAIT: Duration = Duration::from_secs(20);
/// How long ClickHouse may take to serve INSERTs again after a kill (a new session, the
/// replica re-initialised; 18.16 retries a failed re-initialisation after 10 s).
const FAILOVER: Duration = Duration::from_secs(90);
/// Check the ZooKeeper session every second instead of every 60 s, so that a lost session is
/// noticed at once (a MergeTree setting of 18.16, from the config's `<merge_tree>`).
const EXTRA_CONFIG: &str =
    "<merge_tree><zookeeper_session_expiration_check_period>1</zookeeper_session_expiration_check_period></merge_tree>\n";
const BLOCKS: &str = "/clickhouse/tables/01/rmt/blocks";

/// Runs `sql` until ClickHouse accepts it, within [`FAILOVER`]; returns the errors seen.
fn until_accepted(ch: &ClickHouseServer, label: &str, sql: &str) -> Vec<String> {
    let until = Instant::now() + FAILOVER;
    let mut errors = Vec::new();
    loop {
        match ch.query(sql, QUERY_TIMEOUT) {
            Ok(_) => return errors,
            Err(e) => {
                // The client's first line is "Received exception from server"; the code is next.
                let first = e.lines().find(|l| l.contains("Code:")).or(e.lines().next()).unwrap_or_default();
                let first = first.to_string();
                assert!(
                    Instant::now() < until,
                    "[{label}] `{sql}` not accepted within {FAILOVER:?}; errors:\n  {}\nlast: {e}\n{}",
                    errors.join("\n  "),
                    ch.err_log(15)
                );
                errors.push(first);
                std::thread::sleep(Duration::from_millis(250));
            }
        }
    }
}

/// The node holding ClickHouse's connection: the only client of the cluster while it runs,
/// so the only node whose `cons` lists a connection with a session (the asking connection is
/// not listed in keeper flavor, and listed as `[0]`, without a session, in zookeeper flavor).
fn clickhouse_node(c: &mut TestkeeperCluster) -> Option<u64> {
    let running: Vec<u64> = c.ids().into_iter().filter(|i| c.is_running(*i)).collect();
    running.into_iter().find(|i| {
        four_letter_word(c.addr(*i), "cons", Duration::from_secs(2))
            .is_ok_and(|t| t.lines().any(|l| l.contains("127.0.0.1:") && !l.contains("[0](")))
    })
}

/// Block hashes under [`BLOCKS`] on node `id` alone, once they number `want`.
fn blocks_on(c: &TestkeeperCluster, id: u64, want: usize, label: &str) -> Vec<String> {
    let until = Instant::now() + WAIT;
    loop {
        let tree = dump_tree(&c.addr(id).to_string(), &[]).unwrap_or_else(|e| panic!("[{label}] node {id}: {e}"));
        let mut b: Vec<String> = children(&tree, BLOCKS).into_iter().map(str::to_string).collect();
        b.sort();
        if b.len() == want || Instant::now() >= until {
            return b;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

fn run(flavor: &str) {
    let label = format!("clickhouse-server 18.16 on a {flavor}-flavor cluster");
    let mut o = ClusterOptions::new(flavor);
    o.data_dirs = true;
    let mut c = TestkeeperCluster::start(&o).unwrap_or_else(|e| panic!("{e}"));
    c.await_leader(WAIT).unwrap_or_else(|e| panic!("{e}"));
    let ports: Vec<u16> = c.ids().into_iter().map(|i| c.addr(i).port()).collect();
    let mut ch = ClickHouseServer::start_with(&ports, EXTRA_CONFIG);
    let create = "CREATE TABLE rmt (d Date, k UInt64) \
                  ENGINE = ReplicatedMergeTree('/clickhouse/tables/{shard}/rmt', '{replica}', d, k, 8192)";
    // Retried like the INSERTs: once under heavy load the first CREATE failed.
    until_accepted(&ch, &label, create);
    let mut inserts = 0;
    let mut insert = |ch: &ClickHouseServer, label: &str| {
        inserts += 1;
        until_accepted(ch, label, &format!("INSERT INTO rmt VALUES ('2024-01-01', {inserts})"))
    };
    insert(&ch, &label);

    let leader = c.await_leader(WAIT).unwrap_or_else(|e| panic!("{e}"));
    let on = clickhouse_node(&mut c);
    eprintln!("[{label}] leader {leader}, ClickHouse connected to node {on:?}");
    let mut kills = vec![leader];
    if on.is_some_and(|n| n != leader) {
        kills.extend(on);
    }
    for (round, victim) in kills.into_iter().enumerate() {
        c.kill(victim);
        let new_leader = c.await_leader(WAIT).unwrap_or_else(|e| panic!("[{label}] after killing {victim}: {e}"));
        let started = Instant::now();
        let errors = insert(&ch, &label);
        let now_on = clickhouse_node(&mut c);
        eprintln!(
            "[{label}] round {round}: killed node {victim}, new leader {new_leader}; INSERT accepted after {:.1} s \
             and {} refusal(s) {:?}; ClickHouse now on node {now_on:?}",
            started.elapsed().as_secs_f64(),
            errors.len(),
            errors.iter().take(3).collect::<Vec<_>>()
        );
        assert_ne!(now_on, Some(victim), "[{label}] ClickHouse still on the killed node");
        c.restart(victim).unwrap_or_else(|e| panic!("[{label}] restarting {victim}: {e}"));
        c.await_leader(WAIT).unwrap_or_else(|e| panic!("{e}"));
    }
    // An identical INSERT again: deduplicated, so its block hash outlived the failovers.
    until_accepted(&ch, &label, &format!("INSERT INTO rmt VALUES ('2024-01-01', {inserts})"));
    let count = ch.query("SELECT count(), sum(k) FROM rmt", QUERY_TIMEOUT);
    let want = format!("{inserts}\t{}", inserts * (inserts + 1) / 2);
    assert_eq!(count.as_deref(), Ok(want.as_str()), "[{label}] rows after {inserts} distinct INSERTs");
    let status = ch.query("SELECT is_readonly, is_session_expired FROM system.replicas WHERE table = 'rmt'", WAIT);
    assert_eq!(status.as_deref(), Ok("0\t0"), "[{label}] replica status");
    ch.shutdown();

    let per_node: Vec<(u64, Vec<String>)> =
        c.ids().into_iter().map(|i| (i, blocks_on(&c, i, inserts, &label))).collect();
    for (id, blocks) in &per_node {
        assert_eq!(blocks.len(), inserts, "[{label}] node {id}: block hashes {blocks:?}");
        assert_eq!(blocks, &per_node[0].1, "[{label}] node {id} differs from node {}", per_node[0].0);
    }
}

#[test]
fn clickhouse_server_fails_over_between_the_nodes_of_a_cluster() {
    if !prereqs() {
        return;
    }
    common::assert_testkeeper_built();
    for flavor in ["keeper", "zookeeper"] {
        run(flavor);
    }
}

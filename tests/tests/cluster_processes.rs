//! A 3-node cluster of `testkeeper serve --id N --peers ...` processes (over their Unix
//! sockets, and over TCP with `--raft-tcp-only`): a leader is elected, writes through any node reach every replica, kazoo and Apache ZooKeeper's Java
//! client fail over when the leader is killed (in both flavors), the killed node comes back and
//! catches up, a Keeper XML file starts the same cluster, a durable follower of an in-memory
//! leader applies on the leader's stored copy, and a node whose tree diverges exits
//! non-zero with Keeper's message while the others keep serving.

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use testkeeper_tests::env::{kazoo_venv_ready, repo_root, zookeeper_installed};
use testkeeper_tests::java;
use testkeeper_tests::net::{four_letter_word, http};
use testkeeper_tests::process::run_bounded;
use testkeeper_tests::{require_external, venv_python, ClusterOptions, TestkeeperCluster};

const WAIT: Duration = Duration::from_secs(20);
/// Creates per phase of a failover run.
const WRITES: usize = 30;

fn cluster(o: &ClusterOptions) -> (TestkeeperCluster, u64) {
    let mut c = TestkeeperCluster::start(o).unwrap_or_else(|e| panic!("{e}"));
    let leader = c.await_leader(WAIT).unwrap_or_else(|e| panic!("{e}"));
    (c, leader)
}

/// Waits until every running node reports the same digest and node count (nothing is being
/// written), and returns them.
fn converged(c: &mut TestkeeperCluster) -> (String, String) {
    let until = Instant::now() + WAIT;
    loop {
        let running: Vec<u64> = c.ids().into_iter().filter(|i| c.is_running(*i)).collect();
        let seen: Vec<Option<(String, String)>> = running
            .iter()
            .map(|i| {
                c.mntr(*i).and_then(|m| Some((m.get("zk_nodes_digest")?.clone(), m.get("zk_znode_count")?.clone())))
            })
            .collect();
        if seen.iter().all(|s| s.is_some() && *s == seen[0]) {
            return seen[0].clone().expect("checked");
        }
        assert!(Instant::now() < until, "replicas did not converge: {seen:?}\n{}", c.describe(10));
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Runs a failover client (`cmd CONNECT N`, trying servers in order, the leader first, so
/// its own server is the one that dies): waits for its first phase, kills the leader, lets it
/// go on, and returns its whole output once it exits.
fn failover(c: &mut TestkeeperCluster, leader: u64, label: &str, cmd: &mut Command) -> String {
    let connect: Vec<String> = [leader]
        .into_iter()
        .chain(c.ids().into_iter().filter(|i| *i != leader))
        .map(|i| c.addr(i).to_string())
        .collect();
    let mut child = cmd
        .arg(connect.join(","))
        .arg(WRITES.to_string())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{label}: spawn: {e}"));
    let (tx, rx) = mpsc::channel();
    let stdout = child.stdout.take().expect("piped");
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let mut out = String::new();
    let until = Instant::now() + Duration::from_secs(120);
    let mut went = false;
    loop {
        match rx.recv_timeout(Duration::from_millis(100)) {
            Ok(line) => {
                out.push_str(&line);
                out.push('\n');
                if line.starts_with("phase1 ") && !went {
                    c.kill(leader);
                    writeln!(child.stdin.as_mut().expect("piped"), "go").expect("write go");
                    went = true;
                }
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
            Err(mpsc::RecvTimeoutError::Timeout) => {}
        }
        if Instant::now() > until {
            let _ = child.kill();
            panic!("{label}: did not finish in time:\n{out}\n{}", c.describe(20));
        }
    }
    let res = child.wait_with_output().expect("wait");
    let err = String::from_utf8_lossy(&res.stderr);
    assert!(res.status.success(), "{label}: {}\n{out}\nstderr:\n{err}\n{}", res.status, c.describe(20));
    assert!(went && out.contains(&format!("children={}", 2 * WRITES)) && out.ends_with("ok\n"), "{label}: {out}");
    eprintln!("{label}:\n{out}");
    out
}

/// The session ids a failover run printed for its two phases.
fn sessions(out: &str) -> (String, String) {
    let of = |phase: &str| {
        out.lines()
            .find_map(|l| l.strip_prefix(phase)?.split_whitespace().find_map(|w| w.strip_prefix("session=")))
            .unwrap_or_else(|| panic!("no {phase} line in {out}"))
            .to_string()
    };
    (of("phase1 "), of("phase2 "))
}

/// The client's server died under it: in zookeeper flavor its session moves to another server
/// and lives on; keeper flavor ignores session resumption (docs/flavors.md), so the client
/// carries on in a new session.
fn same_session_iff_zookeeper(flavor: &str, out: &str) {
    let (before, after) = sessions(out);
    assert_eq!(before == after, flavor == "zookeeper", "{flavor}: sessions {before} then {after}: {out}");
}

/// After a failover run: the killed node comes back, catches up, and every node agrees.
fn rejoin(c: &mut TestkeeperCluster, old: u64) {
    c.restart(old).unwrap_or_else(|e| panic!("{e}"));
    c.await_leader(WAIT).unwrap_or_else(|e| panic!("{e}"));
    let (digest, count) = converged(c);
    eprintln!("every node: digest {digest}, {count} znodes");
}

#[test]
fn three_processes_elect_one_leader_and_replicate_through_any_node() {
    // The peers reach each other over their Unix sockets by default (on Linux), over TCP with
    // --raft-tcp-only: one flavor runs each way.
    for (flavor, tcp_only) in [("keeper", false), ("zookeeper", true)] {
        let mut o = ClusterOptions::new(flavor);
        if tcp_only {
            o.extra.push("--raft-tcp-only".into());
        }
        let (mut c, leader) = cluster(&o);
        let roles: Vec<String> = c.ids().iter().map(|i| c.role(*i).unwrap_or_default()).collect();
        assert_eq!(roles.iter().filter(|r| *r == "leader").count(), 1, "{flavor}: {roles:?}");
        let srvr = four_letter_word(c.addr(leader), "srvr", WAIT).unwrap();
        assert!(srvr.contains("Mode: leader"), "{flavor}: {srvr}");
        // The HTTP status agrees with mntr.
        let (code, body) = http(c.http(leader), "GET", "/api/v1/cluster", "").unwrap();
        assert_eq!(code, 200, "{body}");
        let status: serde_json::Value = serde_json::from_str(&body).unwrap();
        assert_eq!((status["id"].as_u64(), status["role"].as_str()), (Some(leader), Some("leader")), "{body}");
        // Writes through a follower land on every node.
        let follower = c.ids().into_iter().find(|i| *i != leader).unwrap();
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(async {
            use testkeeper_wire::client::{Client, ConnectOptions};
            use testkeeper_wire::records::create::create_mode;
            use testkeeper_wire::Acl;
            let zk = Client::connect(c.addr(follower), ConnectOptions::default()).await.expect("connect");
            for i in 0..10 {
                zk.create(&format!("/p{i}"), b"v", &Acl::open(), create_mode::PERSISTENT).await.expect("create");
            }
        });
        let (_, count) = converged(&mut c);
        assert!(count.parse::<usize>().unwrap() > 10, "{flavor}: {count} znodes");
        let socket = if tcp_only || !cfg!(target_os = "linux") { "\"tcp\"" } else { "\"unix\"" };
        for id in c.ids() {
            let log = c.log_tail(id, 500);
            let dialed: Vec<&str> = log.lines().filter(|l| l.contains("raft peer connected")).collect();
            // The leader has dialed both followers; a follower at least the leader.
            let least = if id == leader { 2 } else { 1 };
            assert!(
                dialed.len() >= least && dialed.iter().all(|l| l.contains(&format!("socket={socket}"))),
                "{flavor}: node {id} should reach its peers over {socket}: {dialed:?}"
            );
        }
    }
}

/// A killed leader's followers see its process gone (their connection from it ends and its
/// address refuses connections) and leave its lease at once; the first survivor in id order
/// stands for election within two ticks instead of an election timeout (docs/cluster.md,
/// "When the leader's process dies"). Over Unix sockets and over TCP. Which survivor wins is
/// not asserted: on a loaded machine the other may hear of the death late and win by timeout.
#[test]
fn followers_of_a_killed_leader_see_it_gone_and_the_first_survivor_stands_at_once() {
    for tcp_only in [false, true] {
        let mut o = ClusterOptions::new("keeper");
        if tcp_only {
            o.extra.push("--raft-tcp-only".into());
        }
        let (mut c, leader) = cluster(&o);
        c.kill(leader);
        let next = c.await_leader(WAIT).unwrap_or_else(|e| panic!("{e}"));
        let survivors: Vec<u64> = c.ids().into_iter().filter(|i| *i != leader).collect();
        assert!(survivors.contains(&next), "tcp_only={tcp_only}: node {next} leads after {leader} was killed");
        // Every survivor's transport finds the process gone.
        let seen = format!("raft peer gone: its connection ended and its address refuses connections peer={leader}");
        let until = Instant::now() + WAIT;
        while !survivors.iter().all(|id| c.log_tail(*id, 300).contains(&seen)) {
            assert!(Instant::now() < until, "tcp_only={tcp_only}: {leader} never seen gone:\n{}", c.describe(60));
            std::thread::sleep(Duration::from_millis(20));
        }
        let mut left = 0;
        for id in &survivors {
            let log = c.log_tail(*id, 300);
            // A driver that already follows the new leader when it hears has no lease to leave.
            let Some(line) = log.lines().find(|l| l.contains("the leader's process is gone: leaving its lease")) else {
                continue;
            };
            left += 1;
            if *id == survivors[0] {
                let ticks = line.split("campaign_in_ticks=").nth(1).and_then(|t| t.split_whitespace().next());
                assert!(matches!(ticks, Some("0" | "1" | "2")), "the first survivor stands within two ticks: {line}");
            }
        }
        assert!(left > 0, "tcp_only={tcp_only}: no survivor left the dead leader's lease:\n{}", c.describe(60));
    }
}

#[test]
fn kazoo_fails_over_when_the_leader_is_killed() {
    require_external!("kazoo venv", kazoo_venv_ready());
    let script = repo_root().join("tests/kazoo/cluster_failover.py");
    for flavor in ["zookeeper", "keeper"] {
        let (mut c, leader) = cluster(&ClusterOptions::new(flavor));
        let out = failover(&mut c, leader, &format!("kazoo, {flavor}"), Command::new(venv_python()).arg(&script));
        same_session_iff_zookeeper(flavor, &out);
        rejoin(&mut c, leader);
    }
}

#[test]
fn the_java_client_fails_over_when_the_leader_is_killed() {
    let have = zookeeper_installed() && testkeeper_tests::env::find_in_path("javac").is_some();
    require_external!("javac and Debian's ZooKeeper client", have);
    let classes = tempfile::tempdir().unwrap();
    java::compile(&["ClusterFailover.java", "InOrderHosts.java"], java::ZOOKEEPER_CP, classes.path());
    for flavor in ["zookeeper", "keeper"] {
        let (mut c, leader) = cluster(&ClusterOptions::new(flavor));
        let mut cmd = java::command(classes.path(), java::ZOOKEEPER_CP, "ClusterFailover");
        let out = failover(&mut c, leader, &format!("java, {flavor}"), &mut cmd);
        same_session_iff_zookeeper(flavor, &out);
        rejoin(&mut c, leader);
    }
}

#[test]
fn a_keeper_xml_file_starts_the_same_cluster_with_data_directories() {
    let mut o = ClusterOptions::new("keeper");
    (o.config_file, o.data_dirs) = (true, true);
    let (mut c, leader) = cluster(&o);
    assert!(c.config_file().is_some());
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let write = |addr, name: &'static str| {
        rt.block_on(async move {
            use testkeeper_wire::client::{Client, ConnectOptions};
            use testkeeper_wire::records::create::create_mode;
            use testkeeper_wire::Acl;
            let zk = Client::connect(addr, ConnectOptions::default()).await.expect("connect");
            zk.create(name, b"d", &Acl::open(), create_mode::PERSISTENT).await.expect("create");
        })
    };
    write(c.addr(leader), "/before");
    let (digest, _) = converged(&mut c);
    // Every node restarts from its own data directory, the leader last.
    for id in c.ids().into_iter().filter(|i| *i != leader).chain([leader]) {
        c.kill(id);
        c.restart(id).unwrap_or_else(|e| panic!("{e}"));
        c.await_leader(WAIT).unwrap_or_else(|e| panic!("{e}"));
    }
    assert_eq!(converged(&mut c).0, digest, "the state came back from the data directories");
    let leader = c.await_leader(WAIT).unwrap();
    write(c.addr(leader), "/after");
    assert_ne!(converged(&mut c).0, digest);
}

/// A durable follower of an in-memory leader applies on the leader's stored copy as the
/// in-memory followers do (after its own flush): that leader sends no append only to move the
/// commit index, so a follower that waited for the commit would answer only at a heartbeat.
#[test]
fn a_durable_follower_of_an_in_memory_leader_applies_on_its_stored_copy() {
    let mut o = ClusterOptions::new("keeper");
    o.durable = vec![3];
    let (mut c, leader) = cluster(&o);
    if leader == 3 {
        let said = four_letter_word(c.addr(1), "rqld", WAIT).unwrap();
        assert!(said.contains("Sent leadership request"), "{said}");
        let until = Instant::now() + WAIT;
        while c.role(1).as_deref() != Some("leader") {
            assert!(Instant::now() < until, "node 1 did not take the leadership\n{}", c.describe(10));
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    let applied_on_stored = |c: &TestkeeperCluster| {
        let (code, body) = http(c.http(3), "GET", "/api/v1/cluster", "").unwrap();
        assert_eq!(code, 200, "{body}");
        let status: serde_json::Value = serde_json::from_str(&body).unwrap();
        assert_eq!(status["role"].as_str(), Some("follower"), "{body}");
        status["applied_on_stored"].as_u64().expect("applied_on_stored")
    };
    let before = applied_on_stored(&c);
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    rt.block_on(async {
        use testkeeper_wire::client::{Client, ConnectOptions};
        use testkeeper_wire::records::create::create_mode;
        use testkeeper_wire::Acl;
        let zk = Client::connect(c.addr(3), ConnectOptions::default()).await.expect("connect");
        for i in 0..20 {
            zk.create(&format!("/d{i}"), b"v", &Acl::open(), create_mode::PERSISTENT).await.expect("create");
        }
    });
    let after = applied_on_stored(&c);
    assert!(
        after >= before + 20,
        "node 3 applied {} of its 20 writes on the leader's stored copy",
        after.saturating_sub(before)
    );
    let (_, count) = converged(&mut c);
    assert!(count.parse::<usize>().unwrap() > 20, "{count} znodes");
}

#[test]
fn a_diverged_node_exits_non_zero_with_keepers_message_and_the_others_serve() {
    let (mut c, leader) = cluster(&ClusterOptions::new("keeper"));
    let bad = c.ids().into_iter().find(|i| *i != leader).unwrap();
    let (code, body) = http(c.http(bad), "POST", "/api/v1/cluster/faults/corrupt-next-apply", "").unwrap();
    assert_eq!(code, 200, "{body}");
    let (code, body) = http(c.http(bad), "POST", "/api/v1/cluster/faults/no-such-fault", "").unwrap();
    assert!(code == 400 && body.contains("invalid-digest-next"), "{code} {body}");
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    rt.block_on(async {
        use testkeeper_wire::client::{Client, ConnectOptions};
        use testkeeper_wire::records::create::create_mode;
        use testkeeper_wire::Acl;
        let zk = Client::connect(c.addr(leader), ConnectOptions::default()).await.expect("connect");
        zk.create("/poison", b"p", &Acl::open(), create_mode::PERSISTENT).await.expect("create");
        let status = loop {
            if let Some(st) = c.wait_exit(bad, Duration::from_millis(10)) {
                break st;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        };
        assert!(!status.success(), "the diverged node exits non-zero: {status}");
        let log = c.log_tail(bad, 30);
        assert!(log.contains("Digest for nodes is not matching after committing request"), "{log}");
        assert!(log.contains("Keeper will terminate to avoid inconsistencies"), "{log}");
        assert!(log.contains("testkeeper: node ") && log.contains("stopped serving"), "{log}");
        zk.create("/after", b"", &Acl::open(), create_mode::PERSISTENT).await.expect("the others keep serving");
    });
    let (_, count) = converged(&mut c);
    assert!(count.parse::<u32>().unwrap() > 0);
}

#[test]
fn bad_cluster_flags_exit_non_zero_naming_the_problem() {
    let bin = testkeeper_tests::testkeeper_bin();
    for (args, says) in [
        (vec!["--id", "4", "--peers", "1=127.0.0.1:1,2=127.0.0.1:2"], "--id 4 is not among the peers"),
        (vec!["--peers", "1=127.0.0.1:1"], "needs --id"),
        (vec!["--id", "1", "--cluster-config", "/nonexistent.xml"], "cannot read /nonexistent.xml"),
    ] {
        let out = run_bounded(Command::new(&bin).arg("serve").args(&args), b"", WAIT).expect("run serve");
        assert!(!out.success() && out.stderr.contains(says), "{args:?}: {}", out.combined());
    }
}

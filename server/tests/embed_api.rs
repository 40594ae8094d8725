//! The embedding API as a new user meets it: one line to a server, an outage held with
//! `stop`/`resume` on the same address, `reset` between tests, and the wait helpers; in
//! memory and with a data directory.

use std::time::Duration;

use testkeeper_server::prelude::*;

async fn connect(server: &TestKeeper) -> Client {
    Client::connect(server.addr(), ConnectOptions::default()).await.expect("connect")
}

#[tokio::test]
async fn one_line_start_on_a_free_loopback_port() {
    let a = TestKeeper::start_default().await.unwrap();
    let b = TestKeeper::start_default().await.unwrap();
    assert!(a.addr().ip().is_loopback() && a.addr().port() != 0);
    assert_ne!(a.addr(), b.addr(), "two servers in one test binary never collide");
    let c = connect(&a).await;
    c.create("/x", b"1", &Acl::open(), create_mode::PERSISTENT).await.unwrap();
    a.await_node("/x").await.unwrap();
    assert_eq!(a.data("/x").as_deref(), Some(&b"1"[..]));
    assert!(!b.exists("/x"));
    a.await_sessions(1).await.unwrap();
}

#[tokio::test]
async fn an_outage_refuses_connections_and_keeps_the_sessions_in_memory() {
    let mut server = TestKeeper::builder().flavor(Flavor::Zookeeper).start().await.unwrap();
    let addr = server.addr();
    let c = connect(&server).await;
    c.create("/e", b"", &Acl::open(), create_mode::EPHEMERAL).await.unwrap();
    let (id, passwd) = (c.session_id(), c.session_passwd().to_vec());
    server.stop().await;
    assert!(!server.is_running());
    assert!(tokio::net::TcpStream::connect(addr).await.is_err(), "nothing listens during the outage");
    assert!(c.exists("/e", false).await.is_err(), "the client's connection dropped");
    server.resume().await.unwrap();
    assert_eq!(server.addr(), addr, "same address after the outage");
    // The session waited out the outage: the client resumes it and its ephemeral is there.
    let again = Client::connect(addr, ConnectOptions::resume(id, passwd)).await.unwrap();
    assert_eq!(again.session_id(), id);
    assert!(again.exists("/e", false).await.unwrap().is_some());
    // A second stop/resume in one call.
    server.outage(Duration::from_millis(20)).await.unwrap();
    assert!(server.is_running() && server.exists("/e"));
}

#[tokio::test]
async fn reset_empties_tree_sessions_and_faults_but_keeps_the_address() {
    let mut server = TestKeeper::builder().fault("delay:ms=1,op=getData").start().await.unwrap();
    let fresh_nodes = server.node_count();
    let addr = server.addr();
    let c = connect(&server).await;
    c.create("/a", b"", &Acl::open(), create_mode::PERSISTENT).await.unwrap();
    assert_eq!(server.fault_rules().len(), 1);
    server.reset().await.unwrap();
    assert_eq!((server.node_count(), server.exists("/a")), (fresh_nodes, false));
    server.await_sessions(0).await.unwrap();
    assert!(server.fault_rules().is_empty() && server.fault_events().is_empty());
    assert!(c.exists("/a", false).await.is_err(), "the old connection was closed");
    assert_eq!(server.addr(), addr);
    let c2 = connect(&server).await;
    assert!(c2.exists("/a", false).await.unwrap().is_none());
    server.await_sessions(1).await.unwrap();
}

#[tokio::test]
async fn reset_and_outage_with_a_data_directory() {
    let dir = tempfile::tempdir().unwrap();
    let mut server = TestKeeper::builder().data_dir(dir.path()).start().await.unwrap();
    let c = connect(&server).await;
    c.create("/kept", b"v", &Acl::open(), create_mode::PERSISTENT).await.unwrap();
    server.add_fault("delay:ms=1,op=sync").unwrap();
    server.stop().await;
    server.resume().await.unwrap();
    assert!(server.exists("/kept"), "recovered from disk after the outage");
    assert_eq!(server.fault_rules().len(), 1, "fault rules carry over an outage");
    server.reset().await.unwrap();
    assert!(!server.exists("/kept"));
    let c = connect(&server).await;
    c.create("/new", b"", &Acl::open(), create_mode::PERSISTENT).await.unwrap();
    server.settled().await;
    // The reset emptied the directory: a restart recovers only what came after it.
    server.restart().await.unwrap();
    assert!(server.exists("/new") && !server.exists("/kept"));
    server.shutdown().await;
}

#[tokio::test]
async fn waits_fail_with_what_they_saw() {
    let server = TestKeeper::builder().wait_timeout(Duration::from_millis(50)).start().await.unwrap();
    let err = server.await_sessions(2).await.unwrap_err();
    assert_eq!((err.waited_for.as_str(), err.last_seen.as_str()), ("2 live session(s)", "0"));
    assert!(server.await_node("/nope").await.unwrap_err().to_string().contains("/nope to exist"));
    let c = connect(&server).await;
    c.create("/eph", b"", &Acl::open(), create_mode::EPHEMERAL).await.unwrap();
    server.expire_session(c.session_id());
    server.await_no_node("/eph").await.unwrap();
    server.await_sessions(0).await.unwrap();
}

#[tokio::test]
async fn a_bad_fault_rule_stops_the_builder() {
    let err = TestKeeper::builder().fault("drop-everything").start().await.err().expect("refused");
    assert_eq!(err.kind(), std::io::ErrorKind::InvalidInput);
    assert!(err.to_string().contains("unknown fault kind"), "{err}");
}

#[tokio::test]
async fn a_test_starts_from_a_keeper_snapshot_or_a_zookeeper_data_dir() {
    let fixtures = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures");
    let keeper = TestKeeper::builder().import(fixtures.join("keeper")).start().await.unwrap();
    assert_eq!(keeper.data("/clickhouse/task_queue/query-0000000000").as_deref(), Some(&b"CREATE TABLE t"[..]));
    let zk = TestKeeper::builder().flavor(Flavor::Zookeeper).import(fixtures.join("zookeeper")).start().await.unwrap();
    assert!(zk.exists("/bulk/n01") && zk.exists("/app/lock"));
    let bad = TestKeeper::builder().import(fixtures.join("zookeeper/live-digests.json")).start().await;
    let err = bad.err().expect("a JSON file is no snapshot");
    assert_eq!(err.kind(), std::io::ErrorKind::InvalidData);
    assert!(err.to_string().contains("live-digests.json"), "{err}");
}

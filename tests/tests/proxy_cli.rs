//! `testkeeper proxy` and `testkeeper replay` as a user runs them, in front of Apache
//! ZooKeeper 3.8: a client workload through the proxy gets ZooKeeper's answers, the embedded
//! zookeeper-flavor oracle agrees on every one, and the recording replays against fresh
//! servers of both kinds; a keeper-flavor oracle is flagged where Keeper differs; bad flags
//! are refused by name.

use std::net::SocketAddr;
use std::process::Command;

use testkeeper_tests::env::zookeeper_installed;
use testkeeper_tests::proxy::{replay, ProxyProcess};
use testkeeper_tests::{require_external, testkeeper_bin, TestkeeperProcess, ZooKeeperProcess};
use testkeeper_wire::client::{Client, ConnectOptions};
use testkeeper_wire::Acl;

/// Creates, a watch, a delete and a multi; returns after closing.
fn workload(addr: SocketAddr) {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    rt.block_on(async {
        let open = Acl::open();
        let c = Client::connect(addr, ConnectOptions::default()).await.unwrap();
        c.create("/p", b"1", &open, 0).await.unwrap();
        c.create("/p/a", b"", &open, 0).await.unwrap();
        c.get_children("/p", true).await.unwrap();
        c.delete("/p/a", -1).await.unwrap();
        c.create("/p/s-", b"", &open, 2).await.unwrap();
        assert!(c.create("/p", b"", &open, 0).await.is_err());
        c.get_children2("/p", false).await.unwrap();
        let _ = c.close().await;
    });
}

#[test]
fn proxy_and_replay_in_front_of_zookeeper() {
    require_external!("Debian ZooKeeper", zookeeper_installed());
    let zk = ZooKeeperProcess::start();
    let p = ProxyProcess::start(&zk.connect_string(), &[]);
    workload(p.addr());
    let r = p.stop();
    assert!(r.clean_exit && r.divergences.is_empty(), "{:#?}\n{}", r.divergences, r.log);
    assert!(r.log.contains("oracle embedded testkeeper (zookeeper)"), "{}", r.log);
    for target in [
        TestkeeperProcess::start(&["--flavor", "zookeeper"]).connect_string(),
        ZooKeeperProcess::start().connect_string(),
    ] {
        let (ok, text) = replay(&r.recording, &target);
        assert!(ok && text.contains("1 connection(s), 8 request(s), 0 not replayable, 0 difference(s)"), "{text}");
    }
    // Replayed against the server it was recorded from, now holding /p: every write differs.
    let (ok, text) = replay(&r.recording, &zk.connect_string());
    assert!(!ok && text.contains("difference: connection 1 request 1 `create /p \"1\" flags=0`"), "{text}");
}

#[test]
fn a_keeper_oracle_behind_zookeeper_is_flagged_only_where_not_table_listed() {
    require_external!("Debian ZooKeeper", zookeeper_installed());
    let zk = ZooKeeperProcess::start();
    let p = ProxyProcess::start(&zk.connect_string(), &["--oracle-flavor", "keeper"]);
    workload(p.addr());
    let r = p.stop();
    // The delete moves /p's pzxid in ZooKeeper, not in Keeper, and Keeper does not answer
    // closeSession: table-listed, not flagged. The sequential name and everything else agree.
    assert!(r.divergences.is_empty(), "{:#?}\n{}", r.divergences, r.log);
    assert!(r.log.contains("oracle embedded testkeeper (keeper)"), "{}", r.log);
}

#[test]
fn bad_proxy_flags_are_refused_by_name() {
    for (args, needle) in [
        (vec!["proxy", "--upstream", "nowhere.invalid:1"], "cannot resolve 'nowhere.invalid'"),
        (vec!["proxy", "--upstream", "127.0.0.1:1", "--oracle-flavor", "etcd"], "--oracle-flavor"),
        (vec!["replay", "/no/such/recording", "--target", "127.0.0.1:1"], "reading /no/such/recording"),
    ] {
        let out = Command::new(testkeeper_bin()).args(&args).output().unwrap();
        let text = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{args:?} should fail");
        assert!(text.contains(needle), "{args:?}: {text}");
    }
}

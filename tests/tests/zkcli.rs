//! Debian's ZooKeeper CLIs against a server: Java `zkCli.sh` and C `cli_mt`.
//!
//! The same scripted sessions run against real ZooKeeper (which pins down
//! the expected output, and passes today) and against testkeeper in both
//! flavors. Each session takes only a server address, so adding another
//! server under test is one more three-line test function.

use std::net::SocketAddr;

use testkeeper_tests::clis::{cli_mt, cli_mt_rc, zkcli, zkcli_ls_children, zkcli_stat_field};
use testkeeper_tests::env::{cli_mt_installed, zkcli_installed, zookeeper_installed};
use testkeeper_tests::{require_external, TestkeeperProcess, ZooKeeperProcess};

/// create/get/set/stat/ls/sequential/delete/deleteall through `zkCli.sh`,
/// including the error paths (exit code 1 plus a message on stderr).
fn zkcli_session(addr: SocketAddr) {
    let ok = |cmd: &[&str]| {
        let out = zkcli(addr, cmd);
        assert!(out.success(), "zkCli {cmd:?} failed against {addr}:\n{}", out.combined());
        out
    };
    let fails_with = |cmd: &[&str], msg: &str| {
        let out = zkcli(addr, cmd);
        assert_eq!(out.status.and_then(|s| s.code()), Some(1), "zkCli {cmd:?} should fail:\n{}", out.combined());
        assert!(out.combined().contains(msg), "zkCli {cmd:?}: expected {msg:?} in:\n{}", out.combined());
    };

    let out = ok(&["create", "/zkcli", "hello"]);
    assert!(out.combined().contains("Created /zkcli"), "{}", out.combined());
    let out = ok(&["get", "/zkcli"]);
    assert_eq!(out.stdout.lines().last(), Some("hello"), "{}", out.combined());

    ok(&["set", "/zkcli", "world"]);
    let out = ok(&["get", "-s", "/zkcli"]);
    assert!(out.stdout.lines().any(|l| l == "world"), "{}", out.combined());
    assert_eq!(zkcli_stat_field(&out.stdout, "dataVersion"), Some("1"), "{}", out.stdout);
    assert_eq!(zkcli_stat_field(&out.stdout, "dataLength"), Some("5"), "{}", out.stdout);

    let out = ok(&["stat", "/zkcli"]);
    assert_eq!(zkcli_stat_field(&out.stdout, "numChildren"), Some("0"), "{}", out.stdout);
    assert_eq!(zkcli_stat_field(&out.stdout, "ephemeralOwner"), Some("0x0"), "{}", out.stdout);
    assert_eq!(zkcli_stat_field(&out.stdout, "cversion"), Some("0"), "{}", out.stdout);

    ok(&["create", "/zkcli/child", "c"]);
    let out = ok(&["create", "-s", "/zkcli/seq-", "x"]);
    // Sequence numbers come from the parent's cversion: one child so far.
    assert!(out.combined().contains("Created /zkcli/seq-0000000001"), "{}", out.combined());
    let out = ok(&["ls", "/zkcli"]);
    let mut children = zkcli_ls_children(&out.stdout).unwrap_or_else(|| panic!("no listing in {}", out.stdout));
    children.sort();
    assert_eq!(children, ["child", "seq-0000000001"]);
    let out = ok(&["ls", "/"]);
    let root = zkcli_ls_children(&out.stdout).unwrap_or_else(|| panic!("no listing in {}", out.stdout));
    assert!(root.iter().any(|c| c == "zkcli"), "ls / = {root:?}");
    let out = ok(&["ls", "-s", "/zkcli"]);
    assert_eq!(zkcli_stat_field(&out.stdout, "numChildren"), Some("2"), "{}", out.stdout);

    let out = ok(&["getAcl", "/zkcli"]);
    assert!(out.stdout.contains("'world,'anyone") && out.stdout.contains(": cdrwa"), "{}", out.stdout);

    fails_with(&["create", "/zkcli", "again"], "Node already exists: /zkcli");
    fails_with(&["set", "-v", "7", "/zkcli", "stale"], "version No is not valid : /zkcli");
    fails_with(&["delete", "/zkcli"], "Node not empty: /zkcli");
    fails_with(&["get", "/zkcli/absent"], "Node does not exist: /zkcli/absent");

    ok(&["delete", "/zkcli/child"]);
    ok(&["deleteall", "/zkcli"]);
    fails_with(&["stat", "/zkcli"], "Node does not exist: /zkcli");
}

/// The same ground through the C client's `cli_mt` (batch mode, one
/// request per process); results are `rc = N` lines.
fn cli_mt_session(addr: SocketAddr) {
    let run = |cmd: &str, want_rc: i32| {
        let out = cli_mt(addr, cmd);
        let all = out.combined();
        assert_eq!(cli_mt_rc(&all), Some(want_rc), "cli_mt {cmd:?} against {addr}: want rc {want_rc}:\n{all}");
        all
    };

    let out = run("create /cmt", 0);
    assert!(out.contains("name = /cmt"), "{out}");
    let out = run("set /cmt hello", 0);
    assert!(out.contains("version=1"), "{out}");
    let out = run("get /cmt", 0);
    assert!(out.contains("value_len = 5") && out.lines().any(|l| l == "hello"), "{out}");

    run("create /cmt/a", 0);
    let out = run("create +s /cmt/s-", 0);
    assert!(out.contains("name = /cmt/s-0000000001"), "{out}");
    let out = run("ls /cmt", 0);
    let mut children: Vec<&str> = out.lines().filter_map(|l| l.strip_prefix('\t')).collect();
    children.sort();
    assert_eq!(children, ["a", "s-0000000001"], "{out}");
    let out = run("ls2 /cmt", 0);
    assert!(out.contains("\ta\n") && out.contains("version=1"), "{out}");
    run("sync /cmt", 0);

    run("create /cmt", -110); // ZNODEEXISTS
    run("delete /cmt", -111); // ZNOTEMPTY
    run("get /cmt/absent", -101); // ZNONODE
    run("delete /cmt/a", 0);
    run("delete /cmt/s-0000000001", 0);
    run("delete /cmt", 0);
    run("get /cmt", -101);
}

fn zookeeper() -> Option<ZooKeeperProcess> {
    external_zookeeper().then(ZooKeeperProcess::start)
}

fn external_zookeeper() -> bool {
    testkeeper_tests::external_prereq("Debian ZooKeeper (zookeeper package + java)", zookeeper_installed())
}

#[test]
fn zkcli_against_zookeeper() {
    require_external!("zkCli.sh (zookeeper package)", zkcli_installed());
    let Some(zk) = zookeeper() else { return };
    zkcli_session(zk.addr());
}

#[test]
fn cli_mt_against_zookeeper() {
    require_external!("cli_mt (zookeeper-bin package)", cli_mt_installed());
    let Some(zk) = zookeeper() else { return };
    cli_mt_session(zk.addr());
}

/// Not a testkeeper check: proves ZooKeeperProcess enables extended types,
/// so TTL comparisons against it are meaningful.
#[test]
fn zookeeper_accepts_ttl_nodes() {
    require_external!("zkCli.sh (zookeeper package)", zkcli_installed());
    let Some(zk) = zookeeper() else { return };
    let out = zkcli(zk.addr(), &["create", "-t", "60000", "/ttl", "x"]);
    assert!(out.success() && out.combined().contains("Created /ttl"), "{}", out.combined());
}

#[test]
fn zkcli_against_testkeeper_zookeeper_flavor() {
    require_external!("zkCli.sh (zookeeper package)", zkcli_installed());
    let tk = TestkeeperProcess::start(&["--flavor", "zookeeper"]);
    zkcli_session(tk.addr());
}

#[test]
fn zkcli_against_testkeeper_keeper_flavor() {
    require_external!("zkCli.sh (zookeeper package)", zkcli_installed());
    let tk = TestkeeperProcess::start(&["--flavor", "keeper"]);
    zkcli_session(tk.addr());
}

#[test]
fn cli_mt_against_testkeeper_zookeeper_flavor() {
    require_external!("cli_mt (zookeeper-bin package)", cli_mt_installed());
    let tk = TestkeeperProcess::start(&["--flavor", "zookeeper"]);
    cli_mt_session(tk.addr());
}

#[test]
fn cli_mt_against_testkeeper_keeper_flavor() {
    require_external!("cli_mt (zookeeper-bin package)", cli_mt_installed());
    let tk = TestkeeperProcess::start(&["--flavor", "keeper"]);
    cli_mt_session(tk.addr());
}

//! `testkeeper client`, ClickHouse keeper-client's shell, run as a user runs it: the same
//! script against testkeeper in both flavors and against a live Apache ZooKeeper 3.8 (the
//! shell connects to any server), each command's output in keeper-client's format
//! (`programs/keeper-client/Commands.cpp`), the interactive prompt fed on stdin with its
//! history file and the `rmr` confirmation, and a failing statement's message and status.

use std::io::Write;
use std::net::SocketAddr;
use std::process::{Command, Output, Stdio};

use testkeeper_tests::env::{testkeeper_bin, zookeeper_installed};
use testkeeper_tests::{require_external, TestkeeperProcess, ZooKeeperProcess};

/// A script of every command, and what keeper-client prints for it, in order. `get_stat` is
/// checked apart (its zxids and times differ between servers).
const SCRIPT: &str = "create /kc 'v 1'; create /kc/a x; create /kc/b y; create /kc/a/deep z; \
    ls /kc; get /kc; exists /kc; exists /kc/none; get_direct_children_number /kc; \
    get_all_children_number /kc; find_super_nodes 2 /kc; find_big_family /kc 2; \
    cp /kc/b /kc/c; mv /kc/c /kc/d; ls /kc; set /kc/a new; get /kc/a; set /kc/a newer 1; \
    touch /kc/t; touch /kc/t; rm /kc/t; create /kc/s- q persistent sequential; rmr /kc/a; ls /kc; \
    sync /kc; cd /kc; ls; ruok; flwc ruok";

const EXPECTED: &str =
    "a b\nv 1\n1\n0\n2\n3\n/kc\t2\n/kc\t4\n/kc/a\t2\na b d\nnew\nb d s-0000000005\n/kc\nb d s-0000000005\nimok\nimok\n";

fn client(addr: SocketAddr, args: &[&str], stdin: &str, home: &std::path::Path) -> Output {
    let mut child = Command::new(testkeeper_bin())
        .args(["client", "-h", &addr.ip().to_string(), "-p", &addr.port().to_string()])
        .args(args)
        .env("HOME", home)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run testkeeper client");
    child.stdin.take().unwrap().write_all(stdin.as_bytes()).unwrap();
    child.wait_with_output().unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Runs the script and the checks on one server; what `get_stat` printed, keys only.
fn check(label: &str, addr: SocketAddr) {
    let home = tempfile::tempdir().unwrap();
    let out = client(addr, &["-q", SCRIPT], "", home.path());
    assert!(out.status.success(), "{label}: {}", text(&out.stderr));
    assert_eq!(text(&out.stdout), EXPECTED, "{label}");

    let stat = client(addr, &["-q", "get_stat /kc/b"], "", home.path());
    let lines: Vec<String> = text(&stat.stdout).lines().map(str::to_string).collect();
    let keys: Vec<&str> = lines.iter().filter_map(|l| l.split(" = ").next()).collect();
    assert_eq!(
        keys,
        [
            "cZxid",
            "mZxid",
            "pZxid",
            "ctime",
            "mtime",
            "version",
            "cversion",
            "aversion",
            "ephemeralOwner",
            "dataLength",
            "numChildren"
        ],
        "{label}: {lines:?}"
    );
    for fixed in ["version = 0", "aversion = 0", "ephemeralOwner = 0", "dataLength = 1", "numChildren = 0"] {
        assert!(lines.iter().any(|l| l == fixed), "{label}: no {fixed:?} in {lines:?}");
    }

    // A failing statement: keeper-client's message, the rest of the line not run, exit 1.
    let bad = client(addr, &["-q", "get /kc/b; get /kc/missing; create /kc/after x"], "", home.path());
    assert_eq!(bad.status.code(), Some(1), "{label}");
    assert_eq!(text(&bad.stdout), "y\n", "{label}");
    assert!(
        text(&bad.stderr).contains("Coordination error: No node, path /kc/missing"),
        "{label}: {}",
        text(&bad.stderr)
    );
    let after = client(addr, &["-q", "exists /kc/after; create /kc/b again"], "", home.path());
    assert_eq!(text(&after.stdout), "0\n", "{label}: the statement after the failure never ran");
    assert!(text(&after.stderr).contains("Coordination error: Node exists, path /kc/b"), "{label}");

    // The prompt, on stdin: cd and relative paths, the rmr question (answered n, then y),
    // history written where --history-file says.
    let history = home.path().join("hist");
    let session = "cd /kc\nget b\nrmr d\nn\nls\nrmr d\ny\nls\nexit\n";
    let out = client(addr, &["--history-file", history.to_str().unwrap()], session, home.path());
    assert!(out.status.success(), "{label}: {}", text(&out.stderr));
    let shown = text(&out.stdout);
    assert!(shown.contains("y\n"), "{label}: {shown}");
    assert_eq!(
        shown.matches("You are going to recursively delete path /kc/d Continue?").count(),
        2,
        "{label}: {shown}"
    );
    assert!(shown.contains("b d s-0000000005\n") && shown.contains("b s-0000000005\n"), "{label}: {shown}");
    let hist = std::fs::read_to_string(&history).unwrap();
    assert!(hist.contains("cd /kc") && hist.contains("rmr d"), "{label}: {hist}");
    // Clean up for the next flavor's run on a fresh server (each server is its own).
    let _ = client(addr, &["-q", "rmr /kc"], "", home.path());
}

#[test]
fn the_shell_speaks_keeper_clients_language_to_both_flavors() {
    for flavor in ["keeper", "zookeeper"] {
        let tk = TestkeeperProcess::start(&["--flavor", flavor]);
        check(&format!("testkeeper --flavor {flavor}"), tk.addr());
    }
}

#[test]
fn the_shell_gives_the_same_output_against_zookeeper() {
    require_external!("Debian ZooKeeper", zookeeper_installed());
    let zk = ZooKeeperProcess::start();
    check("ZooKeeper 3.8", zk.addr());
}

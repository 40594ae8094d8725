//! The exit-status convention of docs/cli.md ("Exit status"), subcommand by subcommand: bad
//! usage exits 2, a server that accepts no connection exits 3, a problem found exits 1. Each
//! case also names its problem on stderr.

use std::process::Command;

/// A loopback address nobody listens on (a port bound, then released).
fn dead_addr() -> String {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().to_string()
}

/// Runs the binary; its exit status and stderr.
fn run(args: &[&str]) -> (i32, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_testkeeper")).args(args).output().expect("run testkeeper");
    (out.status.code().expect("exited, not killed"), String::from_utf8_lossy(&out.stderr).into_owned())
}

fn expect(args: &[&str], code: i32, says: &str) {
    let (got, err) = run(args);
    assert_eq!(got, code, "testkeeper {args:?}: exit {got}, stderr:\n{err}");
    assert!(err.contains(says), "testkeeper {args:?}: stderr lacks {says:?}:\n{err}");
    assert!(!err.contains("Os {") && !err.contains("kind:"), "a Rust debug struct in {args:?}:\n{err}");
}

#[test]
fn bad_usage_exits_2_in_every_subcommand() {
    let dead = dead_addr();
    expect(&["serve", "--listen", "99999"], 2, "port 99999 is out of range (0 to 65535)");
    expect(&["serve", "--fault", "bogus"], 2, "unknown fault kind 'bogus'");
    expect(&["serve", "--flavor", "bogus"], 2, "unknown flavor");
    expect(&["proxy", "--upstream", &dead, "--listen", "70000"], 2, "out of range");
    expect(&["bench", "--target", &dead, "--sessions", "0"], 2, "must be positive");
    expect(&["chaos", "--nemesis", "bogus"], 2, "or a group: all, faults");
    expect(&["digest", "--target", "127.0.0.1"], 2, "missing :PORT");
    expect(&["publish", "--target", &dead, "--break", "bogus"], 2, "unknown --break mode");
    expect(&["faults", "list"], 2, "--admin");
    expect(&["no-such-subcommand"], 2, "unrecognized subcommand");
}

#[test]
fn a_target_that_accepts_no_connection_exits_3() {
    let dead = dead_addr();
    for args in [
        vec!["digest", "--target", &dead],
        vec!["conform", "--target", &dead],
        vec!["publish", "--target", &dead],
        vec!["faults", "list", "--admin", &dead],
    ] {
        expect(&args, 3, &dead);
    }
}

#[test]
fn a_problem_found_or_a_failed_run_exits_1() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("a-file");
    std::fs::write(&file, b"not a directory").unwrap();
    expect(&["serve", "--data-dir", file.to_str().unwrap()], 2, "is not a directory (it is a file)");
    // A second server on a directory the first one holds is told who holds it.
    let data = dir.path().join("data");
    let mut first = Command::new(env!("CARGO_BIN_EXE_testkeeper"))
        .args(["serve", "--listen", "0", "--data-dir", data.to_str().unwrap()])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufRead::read_line(&mut std::io::BufReader::new(first.stdout.as_mut().unwrap()), &mut line).unwrap();
    assert!(line.starts_with("testkeeper listening on "), "{line}");
    let holder = format!("in use by another testkeeper process (PID {})", first.id());
    expect(&["serve", "--listen", "0", "--data-dir", data.to_str().unwrap()], 1, &holder);
    let _ = first.kill();
    let _ = first.wait();
    let missing = dir.path().join("missing.zst");
    expect(&["snapshot", "inspect", missing.to_str().unwrap()], 1, "missing.zst");
}

//! `testkeeper serve` as a user runs it: exactly one stdout line once it accepts connections,
//! a clean exit on SIGTERM and SIGINT, and bad flags that exit non-zero naming the problem.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_testkeeper"))
}

fn serve_then_signal(signal: &str) {
    let mut child = bin()
        .args(["serve", "--listen", "127.0.0.1:0", "--flavor", "zookeeper", "--seed", "7"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn testkeeper");
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    stdout.read_line(&mut line).unwrap();
    let addr =
        line.trim().strip_prefix("testkeeper listening on ").unwrap_or_else(|| panic!("unexpected line {line:?}"));
    assert!(!addr.ends_with(":0"), "the real port is printed: {addr}");
    // It already accepts connections.
    let mut s = TcpStream::connect(addr).unwrap();
    s.write_all(b"ruok").unwrap();
    let mut answer = String::new();
    s.read_to_string(&mut answer).unwrap();
    assert_eq!(answer, "imok");
    let status = Command::new("kill").args([signal, &child.id().to_string()]).status().unwrap();
    assert!(status.success());
    let deadline = Instant::now() + Duration::from_secs(10);
    let code = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st;
        }
        assert!(Instant::now() < deadline, "testkeeper did not exit on {signal}");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(code.success(), "exit on {signal}: {code:?}");
    let mut rest = String::new();
    stdout.read_to_string(&mut rest).unwrap();
    assert_eq!(rest, "", "exactly one line on stdout");
}

#[test]
fn prints_one_line_and_exits_cleanly_on_sigterm() {
    serve_then_signal("-TERM");
}

#[test]
fn exits_cleanly_on_sigint() {
    serve_then_signal("-INT");
}

#[test]
fn bad_flags_exit_non_zero_naming_the_problem() {
    let cases: [(&[&str], &str); 5] = [
        (&["serve", "--flavor", "etcd"], "unknown flavor 'etcd'"),
        (&["serve", "--listen", "not-an-address"], "--listen"),
        (&["serve", "--min-session-timeout", "50000", "--max-session-timeout", "1000"], "--min-session-timeout"),
        (&["serve", "--feature-flags", "bogus"], "unknown feature flag 'bogus'"),
        (&["serve", "--fault", "explode:op=create"], "explode"),
    ];
    for (args, needle) in cases {
        let out = bin().args(args).output().unwrap();
        assert!(!out.status.success(), "{args:?} should fail");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(needle), "{args:?}: expected {needle:?} in {err}");
    }
}

#[test]
fn a_taken_port_is_a_clear_error() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let out = bin().args(["serve", "--listen", &addr]).output().unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains(&format!("cannot listen on {addr}")));
}

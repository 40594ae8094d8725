//! Connection limits of a real `testkeeper serve` process: ZooKeeper 3.8 as the oracle for
//! `maxClientCnxns` and the session-less idle close (`zookeeper.nio.sessionlessCnxnTimeout`),
//! the log line a refused connection leaves, and the accept loop under a low descriptor limit
//! (`prlimit`): a bounded number of logged accept failures, and new clients get in once
//! sockets close.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::time::{Duration, Instant};

use testkeeper_tests::env::{find_in_path, testkeeper_bin, zookeeper_installed};
use testkeeper_tests::testkeeper::{spawn_announcing, LISTENING_PREFIX};
use testkeeper_tests::{require_external, TestkeeperProcess, ZooKeeperConfig, ZooKeeperProcess};
use testkeeper_wire::client::{Client, ConnectOptions};

/// Whether the server closed `s` (EOF or reset) within `bound`.
fn closed_within(s: &mut TcpStream, bound: Duration) -> bool {
    let deadline = Instant::now() + bound;
    let mut sink = [0u8; 256];
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return false;
        }
        s.set_read_timeout(Some(left)).unwrap();
        match s.read(&mut sink) {
            Ok(0) => return true,
            Ok(_) => {}
            Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {
                return false
            }
            Err(_) => return true,
        }
    }
}

/// A client session works on a fresh connection.
fn session_works(addr: SocketAddr) -> Result<(), String> {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    rt.block_on(async {
        let c = tokio::time::timeout(Duration::from_secs(5), Client::connect(addr, ConnectOptions::default()))
            .await
            .map_err(|_| "connect timed out".to_string())?
            .map_err(|e| e.to_string())?;
        c.exists("/", false).await.map_err(|e| e.to_string())?;
        Ok(())
    })
}

/// What one server does with `maxClientCnxns` = 2 and a 1 s session-less idle bound.
fn probe(addr: SocketAddr) -> Vec<String> {
    let mut out = Vec::new();
    let mut a = TcpStream::connect(addr).unwrap();
    let mut b = TcpStream::connect(addr).unwrap();
    std::thread::sleep(Duration::from_millis(100));
    let mut third = TcpStream::connect(addr).unwrap();
    out.push(format!("third connection closed at once: {}", closed_within(&mut third, Duration::from_millis(700))));
    let started = Instant::now();
    let (ca, cb) = (closed_within(&mut a, Duration::from_secs(6)), closed_within(&mut b, Duration::from_secs(6)));
    let after = started.elapsed();
    out.push(format!("silent sockets closed: {ca} {cb}, not before 0.5 s: {}", after >= Duration::from_millis(500)));
    out.push(format!("a session gets in once they are gone: {:?}", session_works(addr)));
    out
}

#[test]
fn connection_limit_and_sessionless_idle_close_as_zookeeper_does() {
    require_external!("Debian ZooKeeper", zookeeper_installed());
    let zk = ZooKeeperProcess::start_with(
        ZooKeeperConfig::default().cfg("maxClientCnxns", "2").sys_prop("zookeeper.nio.sessionlessCnxnTimeout", "1000"),
    );
    let tk = TestkeeperProcess::start(&[
        "--flavor",
        "zookeeper",
        "--max-connections-per-ip",
        "2",
        "--sessionless-idle-ms",
        "1000",
    ]);
    let want = probe(zk.addr());
    let got = probe(tk.addr());
    eprintln!("ZooKeeper 3.8:\n  {}", want.join("\n  "));
    assert_eq!(got, want, "testkeeper (left) vs ZooKeeper 3.8 (right)");
    assert_eq!(
        want,
        [
            "third connection closed at once: true",
            "silent sockets closed: true true, not before 0.5 s: true",
            "a session gets in once they are gone: Ok(())",
        ]
    );
    let log = tk.log_tail(200);
    assert!(
        log.contains("refusing connection") && log.contains("--max-connections-per-ip"),
        "no log line for the refused connection:\n{log}"
    );
}

/// Lines of the log that report a failed accept.
fn accept_failures(log: &Path) -> usize {
    std::fs::read_to_string(log).unwrap_or_default().lines().filter(|l| l.contains("accept failed")).count()
}

#[test]
fn out_of_descriptors_the_accept_loop_backs_off_and_recovers() {
    let Some(prlimit) = find_in_path("prlimit") else {
        require_external!("prlimit (util-linux)", false);
        return;
    };
    let bin = testkeeper_bin();
    let bin = bin.to_str().unwrap();
    // 40 descriptors: the runtime, the listener and a few connections; the rest wait in the
    // kernel's accept queue while accept fails with EMFILE.
    let args = [
        "--nofile=40:40",
        bin,
        "serve",
        "--listen",
        "127.0.0.1:0",
        "--handshake-timeout-ms",
        "0",
        "--sessionless-idle-ms",
        "0",
        "--max-connections-per-ip",
        "0",
    ];
    let (mut server, addr, _dir) = spawn_announcing(&prlimit, &args, LISTENING_PREFIX).expect("serve under prlimit");
    let log = server.log_path().to_path_buf();
    let idle: Vec<TcpStream> = (0..80).map(|_| TcpStream::connect(addr).unwrap()).collect();
    std::thread::sleep(Duration::from_secs(3));
    let failures = accept_failures(&log);
    eprintln!("{failures} accept failures logged in 3 s");
    assert!(server.exited().is_none(), "the server died: {}", server.describe(30));
    // Without a backoff this is thousands of lines a second; with one doubling from 10 ms to a
    // 1 s cap, about ten in three seconds.
    assert!((1..=20).contains(&failures), "{failures} accept failures logged in 3 s:\n{}", server.log_tail(30));
    drop(idle);
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        match session_works(addr) {
            Ok(()) => break,
            Err(e) => assert!(Instant::now() < deadline, "no client got in after the sockets closed: {e}"),
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let mut s = TcpStream::connect(addr).unwrap();
    s.write_all(b"ruok").unwrap();
    let mut answer = String::new();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    s.read_to_string(&mut answer).unwrap();
    assert_eq!(answer, "imok");
}

/// The per-IP cap by flavor, with no flag: the keeper flavor takes more than 60 connections
/// from 127.0.0.1 (ClickHouse Keeper has no per-address cap, and a test process opens them all
/// from loopback); the zookeeper flavor closes the 61st at once, as ZooKeeper's default
/// `maxClientCnxns` does; the flag changes it for either.
#[test]
fn the_per_ip_cap_is_zookeepers_60_in_the_zookeeper_flavor_and_none_in_the_keeper_flavor() {
    let open = |addr: SocketAddr, n: usize| -> Vec<TcpStream> {
        (0..n).map(|_| TcpStream::connect(addr).expect("connect")).collect()
    };
    let keeper = TestkeeperProcess::start(&["--flavor", "keeper"]);
    let mut held = open(keeper.addr(), 80);
    assert!(!closed_within(held.last_mut().unwrap(), Duration::from_millis(300)), "keeper flavor closed the 80th");
    assert_eq!(session_works(keeper.addr()), Ok(()), "keeper flavor: an 81st connection gets a session");

    let zookeeper = TestkeeperProcess::start(&["--flavor", "zookeeper"]);
    let mut sixty = open(zookeeper.addr(), 60);
    assert!(!closed_within(sixty.last_mut().unwrap(), Duration::from_millis(300)), "the 60th is within the cap");
    let mut extra = TcpStream::connect(zookeeper.addr()).unwrap();
    assert!(closed_within(&mut extra, Duration::from_secs(5)), "zookeeper flavor kept the 61st");
    assert!(zookeeper.log_tail(50).contains("--max-connections-per-ip"), "the refusal names the flag");

    let raised = TestkeeperProcess::start(&["--flavor", "zookeeper", "--max-connections-per-ip", "0"]);
    let mut many = open(raised.addr(), 80);
    assert!(!closed_within(many.last_mut().unwrap(), Duration::from_millis(300)), "--max-connections-per-ip 0");
    drop((held, sixty, many));
}

//! Abuse of connections, over real sockets: a client that pipelines requests and never reads
//! its replies (the server stops reading it and its queue stays bounded), sockets that never
//! finish their handshake (closed on the deadline or the idle bound), and connections past the
//! total and per-IP limits (closed on accept). Every other session keeps working throughout.

mod faults_support;

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use faults_support::{connect, http, within};
use serde_json::Value;
use testkeeper_server::config::{ConnLimits, ServerConfig};
use testkeeper_server::core::flavor::Flavor;
use testkeeper_server::embed::TestKeeper;
use testkeeper_wire::Acl;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

async fn start(flavor: Flavor, limits: ConnLimits) -> (TestKeeper, SocketAddr) {
    let mut cfg = ServerConfig::new(flavor);
    cfg.limits = limits;
    let mut tk = TestKeeper::start(cfg).await.expect("start server");
    let http = tk.start_http("127.0.0.1:0".parse().unwrap()).await.unwrap();
    (tk, http)
}

/// A valid 45-byte handshake (a new session, 30 s).
fn handshake() -> Vec<u8> {
    let mut v = vec![0, 0, 0, 45, 0, 0, 0, 0];
    v.extend_from_slice(&[0; 8]);
    v.extend_from_slice(&30000i32.to_be_bytes());
    v.extend_from_slice(&[0; 8]);
    v.extend_from_slice(&16i32.to_be_bytes());
    v.extend_from_slice(&[0; 16]);
    v.push(0);
    v
}

/// One getData request frame for `path` (no watch).
fn get_data(xid: i32, path: &str) -> Vec<u8> {
    let mut body = xid.to_be_bytes().to_vec();
    body.extend_from_slice(&4i32.to_be_bytes());
    body.extend_from_slice(&(path.len() as i32).to_be_bytes());
    body.extend_from_slice(path.as_bytes());
    body.push(0);
    let mut v = (body.len() as i32).to_be_bytes().to_vec();
    v.extend_from_slice(&body);
    v
}

async fn json(http_addr: SocketAddr, path: &str) -> Value {
    let (status, body) = http(http_addr, "GET", path, "").await;
    assert_eq!(status, 200, "{body}");
    serde_json::from_str(&body).unwrap()
}

/// A Prometheus counter's value from `/metrics`.
async fn metric(http_addr: SocketAddr, name: &str) -> f64 {
    let (_, text) = http(http_addr, "GET", "/metrics", "").await;
    text.lines()
        .find_map(|l| l.strip_prefix(name).and_then(|v| v.strip_prefix(' ')).map(|v| v.trim().parse().unwrap()))
        .unwrap_or_else(|| panic!("{name} not in /metrics:\n{text}"))
}

/// Whether the server closed `s` (EOF or reset) within `bound`.
async fn closed_within(s: &mut TcpStream, bound: Duration) -> bool {
    let mut sink = [0u8; 256];
    loop {
        match tokio::time::timeout(bound, s.read(&mut sink)).await {
            Err(_) => return false,
            Ok(Ok(0) | Err(_)) => return true,
            Ok(Ok(_)) => {}
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_never_reads_is_no_longer_read_and_its_queue_stays_bounded() {
    const LIMIT: usize = 256 * 1024;
    const NODE: usize = 50_000;
    const REQUESTS: i32 = 2_000; // 100 MB of replies, 400 times the limit
    for flavor in [Flavor::Keeper, Flavor::Zookeeper] {
        let (tk, h) = start(flavor, ConnLimits { reply_queue_bytes: LIMIT, ..ConnLimits::default() }).await;
        let good = connect(&tk).await;
        within(good.create("/big", &vec![7u8; NODE], &Acl::open(), 0)).await.unwrap();

        let mut s = TcpStream::connect(tk.addr()).await.unwrap();
        s.write_all(&handshake()).await.unwrap();
        let mut len = [0u8; 4];
        within(s.read_exact(&mut len)).await.unwrap();
        let mut hs = vec![0u8; i32::from_be_bytes(len) as usize]; // 36 or 37 bytes by flavor
        within(s.read_exact(&mut hs)).await.unwrap();
        let (mut rd, mut wr) = s.into_split();
        let requests: Vec<u8> = (1..=REQUESTS).flat_map(|xid| get_data(xid, "/big")).collect();
        // 40 kB of requests: they fit in the socket buffers, so only the server's reading
        // decides how many get answered.
        let writer = tokio::spawn(async move { wr.write_all(&requests).await.map(|()| wr) });

        // Wait until the server has paused this reader, then give it time to misbehave.
        let deadline = Instant::now() + Duration::from_secs(20);
        while metric(h, "testkeeper_reads_paused_total").await < 1.0 {
            assert!(Instant::now() < deadline, "{flavor}: the reader never paused");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
        let conns = json(h, "/api/v1/connections").await;
        let hog =
            conns["connections"].as_array().unwrap().iter().max_by_key(|c| c["received"].as_u64()).unwrap().clone();
        let peak = hog["queued_peak_bytes"].as_u64().unwrap() as usize;
        let answered = hog["sent"].as_u64().unwrap();
        // At most the limit plus one batch's last reply (a reply is never split).
        assert!(peak <= LIMIT + NODE + 200, "{flavor}: {peak} bytes queued for a client that reads nothing: {hog}");
        assert!(answered < u64::from(REQUESTS as u32) / 2, "{flavor}: {answered} replies made for an unread socket");
        assert!(hog["reads_paused"].as_u64().unwrap() >= 1, "{hog}");

        // Everyone else is served meanwhile.
        for i in 0..20 {
            within(good.create(&format!("/other{i}"), b"", &Acl::open(), 0)).await.unwrap();
        }
        assert_eq!(within(good.get_data("/big", false)).await.unwrap().0.len(), NODE);

        // Once it reads, it gets every reply, in order, and nothing was lost.
        let mut next_xid = 1;
        let mut frame = Vec::new();
        while next_xid <= REQUESTS {
            let mut len = [0u8; 4];
            within(rd.read_exact(&mut len)).await.unwrap();
            frame.resize(i32::from_be_bytes(len) as usize, 0);
            within(rd.read_exact(&mut frame)).await.unwrap();
            let xid = i32::from_be_bytes(frame[..4].try_into().unwrap());
            let err = i32::from_be_bytes(frame[12..16].try_into().unwrap());
            assert_eq!((xid, err), (next_xid, 0), "{flavor}: replies out of order or failed");
            next_xid += 1;
        }
        let _wr = within(writer).await.unwrap().expect("every request was written in the end");
        drop(tk);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sockets_without_a_handshake_are_closed_on_the_idle_bound_or_the_deadline() {
    // The idle bound is ten trickle intervals: with 300 ms, a stall of 200 ms on a shared
    // machine between two trickled bytes could end that socket on the idle bound instead (the
    // test failed once so, in 1.9 s, among the server suite's runs).
    let limits = ConnLimits { handshake_timeout_ms: 3_000, sessionless_idle_ms: 1_000, ..ConnLimits::default() };
    let (tk, h) = start(Flavor::Zookeeper, limits).await;
    let good = connect(&tk).await;

    // Silent: closed on the idle bound.
    let mut silent = TcpStream::connect(tk.addr()).await.unwrap();
    let started = Instant::now();
    assert!(closed_within(&mut silent, Duration::from_secs(10)).await, "a silent socket stays open");
    let silent_for = started.elapsed();
    assert!(silent_for >= Duration::from_millis(1_000), "closed after {silent_for:?}, before the idle bound");

    // Trickling a byte every 100 ms: never idle, but closed on the deadline.
    let mut trickle = TcpStream::connect(tk.addr()).await.unwrap();
    let started = Instant::now();
    let hs = handshake();
    let mut closed = false;
    for b in &hs[..40] {
        if trickle.write_all(&[*b]).await.is_err() {
            closed = true;
            break;
        }
        if closed_within(&mut trickle, Duration::from_millis(100)).await {
            closed = true;
            break;
        }
    }
    let trickled_for = started.elapsed();
    assert!(closed, "a trickling handshake was never cut off");
    assert!(trickled_for >= Duration::from_millis(3_000), "cut off after {trickled_for:?}, before the deadline");

    // A connection with a session is bound by its session timeout instead: silence is fine.
    tokio::time::sleep(Duration::from_millis(800)).await;
    within(good.exists("/", false)).await.expect("a session's connection outlives the session-less bounds");
    assert_eq!(metric(h, "testkeeper_sessionless_idle_timeouts_total").await, 1.0);
    assert_eq!(metric(h, "testkeeper_handshake_timeouts_total").await, 1.0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_past_the_limits_are_closed_on_accept_and_places_free_up() {
    for (max_connections, max_connections_per_ip) in [(0, 3), (3, 0)] {
        let limits = ConnLimits { max_connections, max_connections_per_ip, ..ConnLimits::default() };
        let (tk, h) = start(Flavor::Keeper, limits).await;
        let a = connect(&tk).await;
        let b = connect(&tk).await;
        // A socket counts from accept, handshake or not.
        let idle = TcpStream::connect(tk.addr()).await.unwrap();
        let mut extra = TcpStream::connect(tk.addr()).await.unwrap();
        assert!(closed_within(&mut extra, Duration::from_secs(10)).await, "a fourth connection was kept");
        assert!(
            testkeeper_wire::client::Client::connect(tk.addr(), Default::default()).await.is_err(),
            "a fourth session was let in"
        );
        within(a.exists("/", false)).await.unwrap();
        drop(idle);
        // Its place frees when its task ends, a moment after the close.
        let deadline = Instant::now() + Duration::from_secs(10);
        let c = loop {
            match testkeeper_wire::client::Client::connect(tk.addr(), Default::default()).await {
                Ok(c) => break c,
                Err(e) => assert!(Instant::now() < deadline, "no place freed: {e}"),
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        };
        within(c.exists("/", false)).await.unwrap();
        within(b.exists("/", false)).await.unwrap();
        assert!(metric(h, "testkeeper_connections_refused_total").await >= 2.0);
    }
}

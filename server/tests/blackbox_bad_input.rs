//! Bad input closes only the connection that sent it: garbage, half frames, oversized and
//! negative lengths, short bodies and unknown opcodes from many sockets at once, while a normal
//! client keeps working and nothing committed is lost.

use std::time::Duration;

use testkeeper_server::config::ServerConfig;
use testkeeper_server::core::flavor::Flavor;
use testkeeper_server::embed::TestKeeper;
use testkeeper_wire::client::{Client, ConnectOptions};
use testkeeper_wire::Acl;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// A valid 45-byte handshake, so later garbage reaches the request loop.
fn handshake() -> Vec<u8> {
    let mut v = vec![0, 0, 0, 45, 0, 0, 0, 0];
    v.extend_from_slice(&[0; 8]); // last zxid
    v.extend_from_slice(&30000i32.to_be_bytes());
    v.extend_from_slice(&[0; 8]); // session id
    v.extend_from_slice(&16i32.to_be_bytes());
    v.extend_from_slice(&[0; 16]);
    v.push(0);
    v
}

fn garbage(kind: usize) -> Vec<u8> {
    let mut v = handshake();
    match kind % 6 {
        0 => v.extend_from_slice(&[0x7f, 0xff, 0xff, 0xff]), // oversized length
        1 => v.extend_from_slice(&[0xff, 0xff, 0xff, 0xf0]), // negative length
        2 => v.extend_from_slice(&[0, 0, 0, 12, 0, 0, 0, 1, 0, 0, 0, 4, 0, 0, 0, 9]), // getData body cut short
        3 => v.extend_from_slice(&[0, 0, 0, 8, 0, 0, 0, 1, 0, 0, 0x30, 0x39]), // unknown opcode 12345
        4 => v.extend_from_slice(&[0, 0, 0, 100, 1, 2, 3]),  // half a frame, then EOF
        _ => return b"\x00\x00\x00\x07junk!!!".to_vec(),     // not a handshake at all
    }
    v
}

async fn hammer(addr: std::net::SocketAddr, kind: usize) {
    if let Ok(mut s) = TcpStream::connect(addr).await {
        let _ = s.write_all(&garbage(kind)).await;
        let _ = s.shutdown().await;
        let mut sink = Vec::new();
        let _ = tokio::time::timeout(Duration::from_secs(5), s.read_to_end(&mut sink)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn garbage_from_many_sockets_harms_no_other_session() {
    for flavor in [Flavor::Keeper, Flavor::Zookeeper] {
        let mut cfg = ServerConfig::new(flavor);
        cfg.listen = "127.0.0.1:0".parse().unwrap();
        let tk = TestKeeper::start(cfg).await.unwrap();
        let good = Client::connect(tk.addr(), ConnectOptions::default()).await.unwrap();
        good.create("/before", b"x", &Acl::open(), 0).await.unwrap();
        let addr = tk.addr();
        let attackers: Vec<_> = (0..60).map(|i| tokio::spawn(hammer(addr, i))).collect();
        for i in 0..50 {
            good.create(&format!("/during{i}"), b"", &Acl::open(), 0).await.unwrap();
        }
        for a in attackers {
            a.await.unwrap();
        }
        assert!(!good.is_closed(), "{flavor}: the good session survived");
        assert_eq!(good.get_data("/before", false).await.unwrap().0, b"x");
        assert_eq!(good.get_children("/", false).await.unwrap().iter().filter(|c| c.starts_with("during")).count(), 50);
        let fresh = Client::connect(tk.addr(), ConnectOptions::default()).await.unwrap();
        assert!(fresh.exists("/during49", false).await.unwrap().is_some());
    }
}

#[tokio::test]
async fn an_oversized_frame_is_refused_from_its_length_alone() {
    let mut cfg = ServerConfig::new(Flavor::Zookeeper);
    cfg.listen = "127.0.0.1:0".parse().unwrap();
    let tk = TestKeeper::start(cfg).await.unwrap();
    let mut s = TcpStream::connect(tk.addr()).await.unwrap();
    s.write_all(&handshake()).await.unwrap();
    let mut resp = [0u8; 41];
    s.read_exact(&mut resp).await.unwrap();
    // Announce 2 MiB but send nothing more: the server must close without waiting for the body.
    s.write_all(&(2 * 1024 * 1024i32).to_be_bytes()).await.unwrap();
    let mut rest = Vec::new();
    let n = tokio::time::timeout(Duration::from_secs(5), s.read_to_end(&mut rest)).await.expect("closed promptly");
    assert_eq!(n.unwrap_or(0), 0);
}

/// Sends one request frame (xid 7) after a handshake and returns the reply's error code, or
/// `None` when the server closed the connection without one.
async fn raw_request(addr: std::net::SocketAddr, op: i32, body: &[u8]) -> Option<i32> {
    let mut s = TcpStream::connect(addr).await.unwrap();
    s.write_all(&handshake()).await.unwrap();
    let mut len = [0u8; 4];
    s.read_exact(&mut len).await.unwrap();
    let mut resp = vec![0u8; i32::from_be_bytes(len) as usize];
    s.read_exact(&mut resp).await.unwrap();
    let mut frame = ((8 + body.len()) as i32).to_be_bytes().to_vec();
    frame.extend_from_slice(&7i32.to_be_bytes());
    frame.extend_from_slice(&op.to_be_bytes());
    frame.extend_from_slice(body);
    s.write_all(&frame).await.unwrap();
    let mut reply = [0u8; 20]; // length, xid, zxid, err
    match tokio::time::timeout(Duration::from_secs(5), s.read_exact(&mut reply)).await.expect("answered or closed") {
        Ok(_) => Some(i32::from_be_bytes(reply[16..20].try_into().unwrap())),
        Err(_) => None,
    }
}

#[tokio::test]
async fn zookeepers_own_opcodes_and_odd_credentials_answer_per_flavor() {
    let token = [0u8, 0, 0, 0]; // an empty sasl token buffer
    for flavor in [Flavor::Keeper, Flavor::Zookeeper] {
        let mut cfg = ServerConfig::new(flavor);
        cfg.listen = "127.0.0.1:0".parse().unwrap();
        let tk = TestKeeper::start(cfg).await.unwrap();
        let got: Vec<Option<i32>> = vec![
            raw_request(tk.addr(), 102, &token).await,
            raw_request(tk.addr(), 20, b"").await,
            raw_request(tk.addr(), -10, b"").await,
        ];
        let want = match flavor {
            // Keeper knows none of them: the connection closes unanswered.
            Flavor::Keeper => vec![None, None, None],
            Flavor::Zookeeper => vec![Some(0), Some(-8), Some(-5)],
        };
        assert_eq!(got, want, "{flavor}: sasl, deleteContainer, createSession");

        let c = Client::connect(tk.addr(), ConnectOptions::default()).await.unwrap();
        let auth = c.add_auth("digest", b"nocolon").await;
        match flavor {
            Flavor::Keeper => assert_eq!(auth.unwrap_err().code(), Some(-115), "Keeper wants exactly one colon"),
            Flavor::Zookeeper => auth.expect("ZooKeeper takes the whole credential as the user"),
        }
        assert!(c.exists("/", false).await.unwrap().is_some(), "{flavor}: the connection stays");
        if flavor == Flavor::Keeper {
            assert_eq!(c.add_auth("digest", b"a:b:c").await.unwrap_err().code(), Some(-115));
            c.add_auth("digest", b"a:b").await.expect("one colon is a credential");
        }
    }
}

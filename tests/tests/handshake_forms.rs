//! The handshake lengths each flavor takes, over a real socket: ClickHouse Keeper takes only a
//! 44- or 45-byte ConnectRequest (`KeeperTCPHandler::isHandShake`) and closes anything else,
//! so a client that sends an empty password (29 bytes, as kezhuw/zookeeper-client-rust does)
//! cannot connect to it; ZooKeeper reads any length. `--lenient-handshake` makes the keeper
//! flavor take it too.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use testkeeper_tests::TestkeeperProcess;

/// A ConnectRequest with an empty password: protocol 0, lastZxidSeen 0, timeout 10000,
/// session 0, a zero-length password, readOnly false: 29 bytes.
fn short_handshake() -> Vec<u8> {
    let mut body = Vec::new();
    body.extend_from_slice(&0i32.to_be_bytes());
    body.extend_from_slice(&0i64.to_be_bytes());
    body.extend_from_slice(&10_000i32.to_be_bytes());
    body.extend_from_slice(&0i64.to_be_bytes());
    body.extend_from_slice(&0i32.to_be_bytes());
    body.push(0);
    assert_eq!(body.len(), 29);
    let mut frame = (body.len() as i32).to_be_bytes().to_vec();
    frame.extend(body);
    frame
}

/// The server's answer to the 29-byte handshake: the reply frame, or `None` when it closed.
fn answer(addr: SocketAddr) -> Option<Vec<u8>> {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(&short_handshake()).unwrap();
    let mut len = [0u8; 4];
    s.read_exact(&mut len).ok()?;
    let mut body = vec![0u8; i32::from_be_bytes(len) as usize];
    s.read_exact(&mut body).ok()?;
    Some(body)
}

#[test]
fn the_keeper_flavor_takes_only_keepers_lengths_unless_lenient() {
    let keeper = TestkeeperProcess::start(&["--flavor", "keeper"]);
    assert_eq!(answer(keeper.addr()), None, "Keeper closes a 29-byte handshake");
    assert!(keeper.log_tail(20).contains("--lenient-handshake"), "the log names the way out");

    let lenient = TestkeeperProcess::start(&["--flavor", "keeper", "--lenient-handshake"]);
    let reply = answer(lenient.addr()).expect("a session with --lenient-handshake");
    let session = i64::from_be_bytes(reply[8..16].try_into().unwrap());
    assert!(session != 0, "a real session: {reply:?}");

    let zookeeper = TestkeeperProcess::start(&["--flavor", "zookeeper"]);
    assert!(answer(zookeeper.addr()).is_some(), "the zookeeper flavor reads any length, as ZooKeeper");
}

/// The oracle: Apache ZooKeeper 3.8 answers the 29-byte handshake with a session.
#[test]
fn zookeeper_takes_the_short_handshake() {
    use testkeeper_tests::env::zookeeper_installed;
    use testkeeper_tests::{require_external, ZooKeeperProcess};
    require_external!("Debian ZooKeeper", zookeeper_installed());
    let zk = ZooKeeperProcess::start();
    let reply = answer(zk.addr()).expect("ZooKeeper answers");
    assert!(i64::from_be_bytes(reply[8..16].try_into().unwrap()) != 0, "{reply:?}");
}

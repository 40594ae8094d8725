//! The TCP transport's tests: both kinds of peer socket, late listeners, and frames bigger
//! than a socket buffer.

use super::*;

const BOTH: [PeerSockets; 2] = [PeerSockets::SameHostUnix, PeerSockets::TcpOnly];

/// The socket a sender with `sockets` uses to a receiver with the same setting.
fn expected(sockets: PeerSockets) -> &'static str {
    match sockets {
        PeerSockets::SameHostUnix if cfg!(target_os = "linux") => "unix",
        _ => "tcp",
    }
}

async fn recv(rx: &flume::Receiver<Input>) -> Input {
    let rx = rx.clone();
    tokio::task::spawn_blocking(move || rx.recv_timeout(Duration::from_secs(10)).expect("a message")).await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn messages_cross_between_two_nodes_and_survive_a_late_listener() {
    for sockets in BOTH {
        let any: SocketAddr = "127.0.0.1:0".parse().unwrap();
        let (tx1, rx1) = flume::unbounded();
        let (tx2, rx2) = flume::unbounded();
        // Node 2 binds first and attaches late: node 1's frames wait in the kernel meanwhile.
        let (n2, a2) = TcpNet::bind(any, BTreeMap::new(), sockets).await.unwrap();
        let (n1, a1) = TcpNet::start(any, BTreeMap::from([(2, a2.to_string())]), sockets, tx1).await.unwrap();
        n1.send(1, 2, Msg::SyncAsk { id: 7 });
        n1.flush();
        tokio::time::sleep(Duration::from_millis(50)).await;
        n2.attach(tx2);
        let got = recv(&rx2).await;
        assert!(matches!(got, Input::Net { from: 1, msg: Msg::SyncAsk { id: 7 } }), "{sockets:?}: {got:?}");
        assert_eq!(n1.socket_to(2), Some(expected(sockets)), "{sockets:?}");
        // And back, once node 2 knows node 1's address.
        let back = TcpNet { peers: BTreeMap::from([(1, a1.to_string())]), ..Arc::into_inner(n2).unwrap() };
        back.send(2, 1, Msg::SyncAnswer { id: 7, index: 9 });
        back.flush();
        let got = recv(&rx1).await;
        assert!(matches!(got, Input::Net { from: 2, msg: Msg::SyncAnswer { id: 7, index: 9 } }), "{got:?}");
        // A message to a node nobody knows is dropped, not an error.
        n1.send(1, 9, Msg::SyncAsk { id: 1 });
        n1.flush();
    }
}

/// A node that dials loopback peers' Unix sockets reaches one without any (started with
/// `TcpOnly`, or a build off Linux) over TCP, and one node of each kind talk both ways.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_peer_without_a_unix_socket_is_reached_over_tcp() {
    let any: SocketAddr = "127.0.0.1:0".parse().unwrap();
    let (tx1, rx1) = flume::unbounded();
    let (tx2, rx2) = flume::unbounded();
    let (n2, a2) = TcpNet::bind(any, BTreeMap::new(), PeerSockets::TcpOnly).await.unwrap();
    let (n1, a1) =
        TcpNet::start(any, BTreeMap::from([(2, a2.to_string())]), PeerSockets::SameHostUnix, tx1).await.unwrap();
    let n2 = TcpNet { peers: BTreeMap::from([(1, a1.to_string())]), ..Arc::into_inner(n2).unwrap() };
    n2.attach(tx2);
    n1.send(1, 2, Msg::SyncAsk { id: 3 });
    n1.flush();
    assert!(matches!(recv(&rx2).await, Input::Net { from: 1, msg: Msg::SyncAsk { id: 3 } }));
    assert_eq!(n1.socket_to(2), Some("tcp"));
    n2.send(2, 1, Msg::SyncAnswer { id: 3, index: 4 });
    n2.flush();
    assert!(matches!(recv(&rx1).await, Input::Net { from: 2, msg: Msg::SyncAnswer { id: 3, index: 4 } }));
    assert_eq!(n2.socket_to(1), Some("tcp"));
}

/// Frames too big for the socket buffer (a short direct write, its tail queued) and
/// small ones behind them (queued while the tail waits) arrive whole and in order.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn big_and_small_frames_arrive_whole_and_in_order() {
    for sockets in BOTH {
        let any: SocketAddr = "127.0.0.1:0".parse().unwrap();
        let (tx2, rx2) = flume::unbounded();
        let (_n2, a2) = TcpNet::start(any, BTreeMap::new(), sockets, tx2).await.unwrap();
        let (n1, _) = TcpNet::bind(any, BTreeMap::from([(2, a2.to_string())]), sockets).await.unwrap();
        // The first message connects; wait for it so the rest take the direct path.
        n1.send(1, 2, Msg::SyncAsk { id: 0 });
        n1.flush();
        assert!(matches!(recv(&rx2).await, Input::Net { msg: Msg::SyncAsk { id: 0 }, .. }));
        assert_eq!(n1.socket_to(2), Some(expected(sockets)), "{sockets:?}");
        let big = |i: i64| Msg::Touch { sessions: vec![i; 300_000] };
        for i in 1..=20u64 {
            n1.send(1, 2, if i % 4 == 0 { big(i as i64) } else { Msg::SyncAsk { id: i } });
            // Some turns of one message, some of several.
            if i % 3 == 0 {
                n1.flush();
            }
        }
        n1.flush();
        for i in 1..=20u64 {
            let Input::Net { msg, .. } = recv(&rx2).await else { panic!("not a message") };
            match msg {
                Msg::SyncAsk { id } => assert_eq!(id, i, "{sockets:?}"),
                Msg::Touch { sessions } => assert!(i % 4 == 0 && sessions == vec![i as i64; 300_000], "{i}"),
                other => panic!("{other:?}"),
            }
        }
    }
}

/// A peer that died and came back while nothing was sent to it: the first frame after that
/// finds the old connection broken, and must still arrive over the new one. (A follower's
/// answer to a candidate it never talked to was lost so, and the election waited a timeout.)
#[cfg(target_os = "linux")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_first_frame_after_a_peers_restart_arrives() {
    use tokio::io::AsyncReadExt;
    // Node 2 is a bare Unix listener at the name its address gives, so it can die and return.
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let a2 = port.local_addr().unwrap();
    let first = super::super::local::listen(a2).expect("an abstract unix name");
    let any: SocketAddr = "127.0.0.1:0".parse().unwrap();
    let (tx1, _rx1) = flume::unbounded();
    let peers = BTreeMap::from([(2, a2.to_string())]);
    let (n1, _) = TcpNet::start(any, peers, PeerSockets::SameHostUnix, tx1).await.unwrap();
    n1.send(1, 2, Msg::SyncAsk { id: 1 });
    n1.flush();
    let (mut conn, _) = first.accept().await.unwrap();
    let mut head = [0u8; 4];
    conn.read_exact(&mut head).await.unwrap();
    // Node 2 dies: its connection and listener close. Then it is back, under the same name.
    drop((conn, first));
    let again = super::super::local::listen(a2).expect("the name again");
    let (tx2, rx2) = flume::unbounded();
    let dial = Arc::new(gone::Dial { peers: BTreeMap::new(), unix: true });
    tokio::spawn(accept_frames(again, tx2, dial));
    n1.send(1, 2, Msg::SyncAsk { id: 2 });
    n1.flush();
    let got = recv(&rx2).await;
    assert!(matches!(got, Input::Net { from: 1, msg: Msg::SyncAsk { id: 2 } }), "{got:?}");
}

//! The same-host shortcut of the TCP transport. A node whose Raft address is on loopback also
//! listens on a Linux abstract Unix socket named after that address, and a node that dials a
//! loopback peer tries that socket first, falling back to TCP when nobody listens there.
//!
//! Why: three `serve` processes on one host are what a test or a CI job runs, and a frame over
//! loopback TCP goes through the whole TCP stack twice (measured on the 2-core VM of
//! docs/performance.md with a C ping-pong of 120-byte messages: 24.7 µs per round trip and
//! 21.7 µs of CPU over TCP with `TCP_NODELAY`, 15.2 µs and 14.8 µs over a Unix socket). A
//! replicated write through a follower is five Raft messages.
//!
//! The name is the listener's own address (`testkeeper-raft/127.0.0.1:PORT`), so only the
//! process that holds that TCP address can hold it: abstract names, like loopback addresses,
//! belong to one network namespace, and a name vanishes with its socket (no file is left
//! behind). Anything between the nodes at the TCP level (a proxy, `tc netem` on `lo`) needs
//! `--raft-tcp-only`, which turns this off; the frames are the same either way.
//!
//! An outgoing Unix socket is registered with the runtime only while a write waits for room
//! ([`Conn::writable`]). A Unix socket's sender is woken for writability every time its peer
//! reads (the kernel frees the bytes it charged to the sender), where TCP wakes a writer only
//! after a write found its buffer full; registered for writability all the time, every frame
//! a node sent woke it once more when the peer read it: the follower that does not hold the
//! client went through 2 `epoll_wait`s per write instead of TCP's 1 (`SYSCALLS=1` of
//! scripts/cluster-processes-bench.sh; docs/cluster.md "Same-host peers" has the figures).

use std::future::Future;
use std::io;
#[cfg(target_os = "linux")]
use std::io::Write;
use std::net::SocketAddr;

use tokio::io::AsyncRead;
use tokio::net::{TcpListener, TcpStream};
#[cfg(target_os = "linux")]
use tokio::net::{UnixListener, UnixStream};

/// How long dialing a peer may take before the attempt counts as failed (the writer then
/// backs off and dials again). Without it a dial into a partition waits for the kernel's SYN
/// retries, about two minutes.
pub(super) const CONNECT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(2);

/// How long a peer may leave sent data unacknowledged, or stay silent under keepalive probes,
/// before the kernel drops the connection (`TCP_USER_TIMEOUT`, and keepalive after 1 s idle,
/// every 1 s, 3 probes). Peer connections were never dropped when a peer went silent: after a
/// 60 s partition, nothing flowed until the kernel's next retransmission (its timeout had
/// backed off to 52 s), and a healed leader took about 46 s to rejoin. With the bound, the
/// connection fails within seconds of the cut and the writer keeps dialing until the network
/// is back.
pub(super) const PEER_SILENCE: std::time::Duration = std::time::Duration::from_secs(5);

/// Puts [`PEER_SILENCE`] on a peer's TCP socket.
pub(super) fn bound_silence(s: &TcpStream) -> io::Result<()> {
    let sock = socket2::SockRef::from(s);
    let keepalive = socket2::TcpKeepalive::new()
        .with_time(std::time::Duration::from_secs(1))
        .with_interval(std::time::Duration::from_secs(1))
        .with_retries(3);
    sock.set_tcp_keepalive(&keepalive)?;
    #[cfg(target_os = "linux")]
    sock.set_tcp_user_timeout(Some(PEER_SILENCE))?;
    Ok(())
}

/// One outgoing connection to a peer, over whichever socket reached it. Only written to: each
/// direction between two nodes has its own connection.
pub(super) enum Conn {
    Tcp(TcpStream),
    /// Non-blocking, and not registered with the runtime (see the module's header).
    #[cfg(target_os = "linux")]
    Unix(std::os::unix::net::UnixStream),
}

impl Conn {
    /// Dials `addr`: its abstract Unix socket first when `unix` is on and `addr` is a loopback
    /// address, then TCP.
    pub(super) async fn connect(addr: &str, unix: bool) -> io::Result<Conn> {
        #[cfg(target_os = "linux")]
        if unix {
            if let Some(name) = addr.parse::<SocketAddr>().ok().and_then(name) {
                if let Ok(s) = UnixStream::connect(&name).await {
                    // `into_std` deregisters it and leaves it non-blocking.
                    return Ok(Conn::Unix(s.into_std()?));
                }
            }
        }
        #[cfg(not(target_os = "linux"))]
        let _ = unix;
        let s = tokio::time::timeout(CONNECT_TIMEOUT, TcpStream::connect(addr)).await.map_err(|_| {
            io::Error::new(io::ErrorKind::TimedOut, format!("connect to {addr}: no answer within {CONNECT_TIMEOUT:?}"))
        })??;
        let _ = s.set_nodelay(true);
        let _ = bound_silence(&s);
        Ok(Conn::Tcp(s))
    }

    /// A non-blocking write: `WouldBlock` when the socket has no room.
    pub(super) fn try_write(&self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Conn::Tcp(s) => s.try_write(buf),
            #[cfg(target_os = "linux")]
            Conn::Unix(s) => (&*s).write(buf),
        }
    }

    /// Waits, after a write would have blocked, until the socket may take more.
    pub(super) async fn writable(&self) -> io::Result<()> {
        match self {
            Conn::Tcp(s) => s.writable().await,
            #[cfg(target_os = "linux")]
            Conn::Unix(s) => {
                // A duplicate of the socket, registered for this wait alone (dropping it
                // deregisters and closes it). Registering reports the socket's state at once,
                // so room that appeared since the write that blocked is not missed.
                let waiting = UnixStream::from_std(s.try_clone()?)?;
                waiting.writable().await
            }
        }
    }

    /// Which socket this is, for the logs.
    pub(super) fn kind(&self) -> &'static str {
        match self {
            Conn::Tcp(_) => "tcp",
            #[cfg(target_os = "linux")]
            Conn::Unix(_) => "unix",
        }
    }
}

/// A listener for peers' connections: the TCP one, and the Unix one beside it.
pub(super) trait Accept: Send + Sync + 'static {
    type Stream: AsyncRead + Unpin + Send + 'static;
    /// The next connection, with the peer's address for the logs.
    fn accept_peer(&self) -> impl Future<Output = io::Result<(Self::Stream, String)>> + Send;
}

impl Accept for TcpListener {
    type Stream = TcpStream;
    async fn accept_peer(&self) -> io::Result<(TcpStream, String)> {
        let (s, peer) = self.accept().await?;
        let _ = s.set_nodelay(true);
        let _ = bound_silence(&s);
        Ok((s, peer.to_string()))
    }
}

#[cfg(target_os = "linux")]
impl Accept for UnixListener {
    type Stream = UnixStream;
    async fn accept_peer(&self) -> io::Result<(UnixStream, String)> {
        // A client's abstract address is unnamed: the listener's own name says which it was.
        let (s, _) = self.accept().await?;
        let name =
            self.local_addr().ok().and_then(|a| a.as_abstract_name().map(|n| String::from_utf8_lossy(n).into_owned()));
        Ok((s, format!("unix:@{}", name.unwrap_or_default())))
    }
}

/// The abstract socket name (leading NUL, as tokio spells one) of a node listening on `addr`;
/// none off loopback.
fn name(addr: SocketAddr) -> Option<String> {
    addr.ip().is_loopback().then(|| format!("\0testkeeper-raft/{addr}"))
}

/// The Unix listener beside a loopback TCP listener bound at `bound`. None off loopback or
/// when the name cannot be bound. A name is only taken while another process holds it, and
/// peers that dial it reach that process instead of this node: that is logged as a warning
/// (`--raft-tcp-only` on every node avoids it).
#[cfg(target_os = "linux")]
pub(super) fn listen(bound: SocketAddr) -> Option<UnixListener> {
    let name = name(bound)?;
    match UnixListener::bind(&name) {
        Ok(l) => Some(l),
        Err(e) => {
            tracing::warn!(
                %bound,
                error = %e,
                "cannot listen on the same-host raft socket @{}: peers on this host that dial it reach \
                 whoever holds it (run every node with --raft-tcp-only to use TCP only)",
                &name[1..]
            );
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_loopback_addresses_have_a_name() {
        assert_eq!(name("127.0.0.1:9000".parse().unwrap()).as_deref(), Some("\0testkeeper-raft/127.0.0.1:9000"));
        assert_eq!(name("[::1]:9000".parse().unwrap()).as_deref(), Some("\0testkeeper-raft/[::1]:9000"));
        assert_eq!(name("10.0.0.1:9000".parse().unwrap()), None);
        assert_eq!(name("0.0.0.0:9000".parse().unwrap()), None);
    }

    /// A name another socket holds is not bound twice: the node goes without (and warns).
    #[cfg(target_os = "linux")]
    #[tokio::test]
    async fn a_taken_name_leaves_the_node_without_a_unix_listener() {
        let tcp = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = tcp.local_addr().unwrap();
        let first = listen(addr).expect("a free name binds");
        assert!(listen(addr).is_none(), "the name is held by the first listener");
        drop(first);
        assert!(listen(addr).is_some(), "a name is free again once its socket closes");
    }
}

#[cfg(test)]
mod silence_tests {
    use super::*;

    #[tokio::test]
    async fn peer_sockets_carry_the_silence_bound_both_ways() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        let (out, accepted) = tokio::join!(Conn::connect(&addr, false), listener.accept_peer());
        let Conn::Tcp(out) = out.unwrap() else { panic!("a TCP connection") };
        let (inc, _) = accepted.unwrap();
        for s in [&out, &inc] {
            let sock = socket2::SockRef::from(s);
            assert!(sock.keepalive().unwrap());
            assert_eq!(sock.tcp_user_timeout().unwrap(), Some(PEER_SILENCE));
        }
    }
}

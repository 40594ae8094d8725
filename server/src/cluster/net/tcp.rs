//! The cluster's TCP transport between `serve` processes: each node listens on its Raft
//! address and keeps one outgoing connection per peer (reconnecting with backoff). A frame is
//! a big-endian u32 length, the sender's id (u64), and the message. A peer that is down costs
//! nothing but dropped messages (its queue is bounded): Raft retries on its own. A peer on
//! loopback is reached over a Unix socket when it has one (`local`, [`PeerSockets`]).
//!
//! `send` only encodes: the frames of one driver turn go out together at its `flush`, with a
//! non-blocking write from the driver itself when nothing is queued for the peer and the
//! socket takes them whole; only what does not fit (or finds frames queued before it) goes
//! through the peer's writer task. Waking that task for every turn was a task switch, and on
//! a leader (two peers, two tasks woken at once) a wake-up of the other worker thread, on the
//! path of every replicated write; one write per peer per turn keeps the batching the writer
//! task gave (a write per message costs a syscall and a wake-up of the peer's reader each).
//!
//! A peer whose connection to this node ends and whose address then refuses connections has
//! no process any more: the driver hears it at once (`gone`), as a ZooKeeper follower sees its
//! leader's socket close, instead of only after an election timeout of silence.

use std::collections::{BTreeMap, HashMap};
use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::net::TcpListener;
use tokio::sync::mpsc;
use tracing::{debug, info, warn};

use super::local::{Accept, Conn};
use super::Transport;
use crate::cluster::message::Msg;
use crate::cluster::{Input, NodeId};

/// Largest frame accepted from a peer (a snapshot of a large tree travels in one message).
const MAX_FRAME: usize = 1 << 30;
/// Messages queued for a peer that is not connected before new ones are dropped.
const QUEUE: usize = 4096;

/// One peer's outgoing side.
#[derive(Clone)]
struct Out {
    /// Frames for the writer task.
    tx: mpsc::Sender<Vec<u8>>,
    link: Arc<Link>,
}

/// What `send` and a peer's writer task share.
#[derive(Default)]
struct Link {
    /// Frames of this turn, until the driver's `flush`.
    pending: Mutex<Vec<u8>>,
    /// The connection, while the writer has one.
    stream: Mutex<Option<Arc<Conn>>>,
    /// Frames handed to the writer task and not written yet: while there are any, a new
    /// frame queues behind them, so frames leave in the order they were sent.
    queued: AtomicUsize,
}

impl Link {
    /// Writes `frame` now if nothing is queued and the socket takes it; returns what is left
    /// for the writer task (all of it, or the tail a short write left).
    fn write_now(&self, frame: Vec<u8>) -> Option<Vec<u8>> {
        if self.queued.load(Ordering::Acquire) != 0 {
            return Some(frame);
        }
        let Some(s) = self.stream.lock().expect("tcp link").clone() else { return Some(frame) };
        match s.try_write(&frame) {
            Ok(n) if n == frame.len() => None,
            Ok(n) => Some(frame[n..].to_vec()),
            // Would block, or the connection broke: the writer task takes it (and reconnects).
            Err(_) => Some(frame),
        }
    }
}

/// Which sockets carry the frames between nodes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum PeerSockets {
    /// A Unix socket to a peer on loopback that listens on one (every node does, on Linux,
    /// when its Raft address is on loopback), TCP to the rest.
    #[default]
    SameHostUnix,
    /// TCP only: for whatever sits between the nodes at the TCP level (`--raft-tcp-only`).
    TcpOnly,
}

/// The TCP transport of one node.
pub struct TcpNet {
    peers: BTreeMap<NodeId, String>,
    outs: Mutex<HashMap<NodeId, Out>>,
    /// The bound Raft listeners, until [`attach`](Self::attach) starts accepting on them.
    listener: Mutex<Option<Listeners>>,
    sockets: PeerSockets,
    rt: tokio::runtime::Handle,
}

struct Listeners {
    tcp: TcpListener,
    #[cfg(target_os = "linux")]
    unix: Option<tokio::net::UnixListener>,
}

impl TcpNet {
    /// Binds `listen` for peers' frames and returns the transport that reaches `peers`, with
    /// the bound address. Nothing is accepted until [`attach`](Self::attach) names where
    /// incoming messages go (the node's input channel exists only once the node starts).
    ///
    /// # Errors
    /// The address cannot be bound.
    pub async fn bind(
        listen: SocketAddr,
        peers: BTreeMap<NodeId, String>,
        sockets: PeerSockets,
    ) -> io::Result<(Arc<TcpNet>, SocketAddr)> {
        let tcp = TcpListener::bind(listen).await?;
        let bound = tcp.local_addr()?;
        let listeners = Listeners {
            tcp,
            #[cfg(target_os = "linux")]
            unix: match sockets {
                PeerSockets::SameHostUnix => super::local::listen(bound),
                PeerSockets::TcpOnly => None,
            },
        };
        let net = TcpNet {
            peers,
            outs: Mutex::new(HashMap::new()),
            listener: Mutex::new(Some(listeners)),
            sockets,
            rt: tokio::runtime::Handle::current(),
        };
        Ok((Arc::new(net), bound))
    }

    /// [`bind`](Self::bind) and [`attach`](Self::attach) in one step.
    ///
    /// # Errors
    /// The address cannot be bound.
    pub async fn start(
        listen: SocketAddr,
        peers: BTreeMap<NodeId, String>,
        sockets: PeerSockets,
        input: flume::Sender<Input>,
    ) -> io::Result<(Arc<TcpNet>, SocketAddr)> {
        let (net, bound) = Self::bind(listen, peers, sockets).await?;
        net.attach(input);
        Ok((net, bound))
    }

    /// Starts accepting peers' connections, handing every message to `input`. A second call
    /// does nothing (the listeners are taken by the first).
    pub fn attach(&self, input: flume::Sender<Input>) {
        let Some(listeners) = self.listener.lock().expect("tcp listener").take() else { return };
        let unix = self.sockets == PeerSockets::SameHostUnix;
        let dial = Arc::new(gone::Dial { peers: self.peers.clone(), unix });
        #[cfg(target_os = "linux")]
        if let Some(l) = listeners.unix {
            self.rt.spawn(accept_frames(l, input.clone(), dial.clone()));
        }
        self.rt.spawn(accept_frames(listeners.tcp, input, dial));
    }

    fn out(&self, to: NodeId) -> Option<Out> {
        let mut outs = self.outs.lock().expect("tcp outs");
        if let Some(out) = outs.get(&to) {
            return Some(out.clone());
        }
        let addr = self.peers.get(&to)?.clone();
        let (tx, rx) = mpsc::channel(QUEUE);
        let out = Out { tx, link: Arc::new(Link::default()) };
        let unix = self.sockets == PeerSockets::SameHostUnix;
        self.rt.spawn(write_frames(addr, unix, rx, out.link.clone()));
        outs.insert(to, out.clone());
        Some(out)
    }
}

/// Bytes of frames written in one `write` (what queued while the last one was written).
const WRITE_BATCH: usize = 256 * 1024;

/// Accepts peers' connections on `listener` for ever, reading each one's frames into `input`.
/// When one ends, the peer that sent on it is asked whether it is still there (`gone`).
async fn accept_frames(listener: impl Accept, input: flume::Sender<Input>, dial: Arc<gone::Dial>) {
    loop {
        match listener.accept_peer().await {
            Ok((s, peer)) => {
                let (input, dial) = (input.clone(), dial.clone());
                tokio::spawn(async move {
                    let mut from = None;
                    match read_frames(s, &input, &mut from).await {
                        Ok(()) => return,
                        Err(e) => debug!(%peer, error = %e, "raft peer connection ended"),
                    }
                    if let Some(id) = from {
                        dial.check(id, &input).await;
                    }
                });
            }
            Err(e) => {
                warn!(error = %e, "raft accept failed");
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    }
}

/// Reads frames into `input` until the connection ends (an error, EOF among them) or the node
/// is gone (`Ok`); `from` is the sender of the last frame.
async fn read_frames(
    s: impl AsyncRead + Unpin,
    input: &flume::Sender<Input>,
    from: &mut Option<NodeId>,
) -> io::Result<()> {
    // Buffered: a frame's length and body, and the frames behind it, in one read.
    let mut s = tokio::io::BufReader::with_capacity(64 * 1024, s);
    loop {
        let len = s.read_u32().await? as usize;
        if !(8..=MAX_FRAME).contains(&len) {
            return Err(io::Error::new(io::ErrorKind::InvalidData, format!("raft frame of {len} bytes")));
        }
        let mut buf = vec![0; len];
        s.read_exact(&mut buf).await?;
        let sender = u64::from_be_bytes(buf[..8].try_into().expect("8 bytes"));
        *from = Some(sender);
        let msg = Msg::decode(&buf[8..]).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e.0))?;
        if input.send(Input::Net { from: sender, msg }).is_err() {
            return Ok(());
        }
    }
}

async fn write_frames(addr: String, unix: bool, mut rx: mpsc::Receiver<Vec<u8>>, link: Arc<Link>) {
    let mut backoff = Duration::from_millis(10);
    // Frames whose write failed on a connection that had broken unseen (a peer restarted while
    // nothing was sent to it): they go first on the next connection, if that one is made at
    // once. A follower's first message to a peer it never talks to (its answer to a candidate's
    // vote request) was lost so, and the election waited a whole timeout for it.
    let mut carried: Option<Vec<u8>> = None;
    'connect: loop {
        let s = match Conn::connect(&addr, unix).await {
            Ok(s) => {
                info!(%addr, socket = s.kind(), "raft peer connected");
                Arc::new(s)
            }
            Err(e) => {
                debug!(%addr, error = %e, "raft peer unreachable");
                // Drain what queued meanwhile: stale Raft messages only confuse a peer.
                carried = None;
                while rx.try_recv().is_ok() {
                    link.queued.fetch_sub(1, Ordering::AcqRel);
                }
                if rx.is_closed() {
                    return;
                }
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(Duration::from_millis(500));
                continue;
            }
        };
        backoff = Duration::from_millis(10);
        if let Some(frames) = carried.take() {
            // Sent again whole: a peer drops the partial frame a broken connection left it,
            // and Raft's messages (and our forwarded writes, `driver/dedup.rs`) bear a copy.
            if write_all(&s, &frames).await.is_err() {
                continue 'connect;
            }
        }
        *link.stream.lock().expect("tcp link") = Some(s.clone());
        let mut batch = Vec::with_capacity(WRITE_BATCH);
        while let Some(frame) = rx.recv().await {
            // Everything queued meanwhile goes in the same write: under load the driver
            // sends many messages per Ready, and one syscall (and one wakeup of the peer's
            // reader) per message was most of a write's cost in a cluster.
            batch.clear();
            batch.extend_from_slice(&frame);
            let mut frames = 1;
            while batch.len() < WRITE_BATCH {
                match rx.try_recv() {
                    Ok(more) => {
                        batch.extend_from_slice(&more);
                        frames += 1;
                    }
                    Err(_) => break,
                }
            }
            let written = write_all(&s, &batch).await;
            // Only now: until these are on the wire, `send` must queue behind them.
            link.queued.fetch_sub(frames, Ordering::AcqRel);
            if written.is_err() {
                *link.stream.lock().expect("tcp link") = None;
                carried = Some(std::mem::take(&mut batch));
                continue 'connect;
            }
        }
        return;
    }
}

/// Writes all of `buf` to a connection `send` may also write to (never at the same time: it
/// writes only while nothing is queued, and this writes only what was queued). It waits for
/// room only after a write would have blocked: waiting registers a Unix socket (`local`).
async fn write_all(s: &Conn, mut buf: &[u8]) -> io::Result<()> {
    while !buf.is_empty() {
        match s.try_write(buf) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => buf = &buf[n..],
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => s.writable().await?,
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

impl Transport for TcpNet {
    fn send(&self, from: NodeId, to: NodeId, msg: Msg) {
        let Some(out) = self.out(to) else { return };
        let mut pending = out.link.pending.lock().expect("tcp pending");
        // The length goes in front once the message is written behind it.
        let at = pending.len();
        pending.extend_from_slice(&[0; 4]);
        pending.extend_from_slice(&from.to_be_bytes());
        msg.encode_into(&mut pending);
        let len = (pending.len() - at - 4) as u32;
        pending[at..at + 4].copy_from_slice(&len.to_be_bytes());
    }

    fn flush(&self) {
        // Held throughout: only the driver sends and flushes, and the writer tasks never take it.
        let outs = self.outs.lock().expect("tcp outs");
        for out in outs.values() {
            let frames = std::mem::take(&mut *out.link.pending.lock().expect("tcp pending"));
            if frames.is_empty() {
                continue;
            }
            // Room in the queue first: the tail of a short write must follow it, or the peer
            // would read the next frame's bytes as this one's. A full queue (a peer that does
            // not read) drops the frames, as a lossy network would.
            let Ok(permit) = out.tx.try_reserve() else { continue };
            let Some(rest) = out.link.write_now(frames) else { continue };
            out.link.queued.fetch_add(1, Ordering::AcqRel);
            permit.send(rest);
        }
    }
}

#[cfg(test)]
impl TcpNet {
    /// Which socket carries frames to `to` now ("tcp" or "unix"), once connected.
    fn socket_to(&self, to: NodeId) -> Option<&'static str> {
        let out = self.outs.lock().expect("tcp outs").get(&to)?.clone();
        let s = out.link.stream.lock().expect("tcp link").clone()?;
        Some(s.kind())
    }
}

mod gone;
#[cfg(test)]
mod tests;

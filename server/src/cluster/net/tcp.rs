//! The cluster's TCP transport between `serve` processes: each node listens on its Raft
//! address and keeps one outgoing connection per peer (reconnecting with backoff). A frame is
//! a big-endian u32 length, the sender's id (u64), and the message. A peer that is down costs
//! nothing but dropped messages (its queue is bounded): Raft retries on its own.

use std::collections::{BTreeMap, HashMap};
use std::io;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tracing::{debug, warn};

use super::Transport;
use crate::cluster::message::Msg;
use crate::cluster::{Input, NodeId};

/// Largest frame accepted from a peer (a snapshot of a large tree travels in one message).
const MAX_FRAME: usize = 1 << 30;
/// Messages queued for a peer that is not connected before new ones are dropped.
const QUEUE: usize = 4096;

/// The TCP transport of one node.
pub struct TcpNet {
    peers: BTreeMap<NodeId, String>,
    outs: Mutex<HashMap<NodeId, mpsc::Sender<Vec<u8>>>>,
    /// The bound Raft listener, until [`attach`](Self::attach) starts accepting on it.
    listener: Mutex<Option<TcpListener>>,
    rt: tokio::runtime::Handle,
}

impl TcpNet {
    /// Binds `listen` for peers' frames and returns the transport that reaches `peers`, with
    /// the bound address. Nothing is accepted until [`attach`](Self::attach) names where
    /// incoming messages go (the node's input channel exists only once the node starts).
    ///
    /// # Errors
    /// The address cannot be bound.
    pub async fn bind(listen: SocketAddr, peers: BTreeMap<NodeId, String>) -> io::Result<(Arc<TcpNet>, SocketAddr)> {
        let listener = TcpListener::bind(listen).await?;
        let bound = listener.local_addr()?;
        let net = TcpNet {
            peers,
            outs: Mutex::new(HashMap::new()),
            listener: Mutex::new(Some(listener)),
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
        input: flume::Sender<Input>,
    ) -> io::Result<(Arc<TcpNet>, SocketAddr)> {
        let (net, bound) = Self::bind(listen, peers).await?;
        net.attach(input);
        Ok((net, bound))
    }

    /// Starts accepting peers' connections, handing every message to `input`. A second call
    /// does nothing (the listener is taken by the first).
    pub fn attach(&self, input: flume::Sender<Input>) {
        let Some(listener) = self.listener.lock().expect("tcp listener").take() else { return };
        self.rt.spawn(async move {
            loop {
                match listener.accept().await {
                    Ok((s, peer)) => {
                        let input = input.clone();
                        tokio::spawn(async move {
                            if let Err(e) = read_frames(s, &input).await {
                                debug!(%peer, error = %e, "raft peer connection ended");
                            }
                        });
                    }
                    Err(e) => {
                        warn!(error = %e, "raft accept failed");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                    }
                }
            }
        });
    }

    fn sender(&self, to: NodeId) -> Option<mpsc::Sender<Vec<u8>>> {
        let mut outs = self.outs.lock().expect("tcp outs");
        if let Some(tx) = outs.get(&to) {
            return Some(tx.clone());
        }
        let addr = self.peers.get(&to)?.clone();
        let (tx, rx) = mpsc::channel(QUEUE);
        self.rt.spawn(write_frames(addr, rx));
        outs.insert(to, tx.clone());
        Some(tx)
    }
}

/// Bytes of frames written in one `write` (what queued while the last one was written).
const WRITE_BATCH: usize = 256 * 1024;

async fn read_frames(s: TcpStream, input: &flume::Sender<Input>) -> io::Result<()> {
    let _ = s.set_nodelay(true);
    // Buffered: a frame's length and body, and the frames behind it, in one read.
    let mut s = tokio::io::BufReader::with_capacity(64 * 1024, s);
    loop {
        let len = s.read_u32().await? as usize;
        if !(8..=MAX_FRAME).contains(&len) {
            return Err(io::Error::new(io::ErrorKind::InvalidData, format!("raft frame of {len} bytes")));
        }
        let mut buf = vec![0; len];
        s.read_exact(&mut buf).await?;
        let from = u64::from_be_bytes(buf[..8].try_into().expect("8 bytes"));
        let msg = Msg::decode(&buf[8..]).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e.0))?;
        if input.send(Input::Net { from, msg }).is_err() {
            return Ok(());
        }
    }
}

async fn write_frames(addr: String, mut rx: mpsc::Receiver<Vec<u8>>) {
    let mut backoff = Duration::from_millis(10);
    'connect: loop {
        let mut s = match TcpStream::connect(&addr).await {
            Ok(s) => s,
            Err(e) => {
                debug!(%addr, error = %e, "raft peer unreachable");
                // Drain what queued meanwhile: stale Raft messages only confuse a peer.
                while rx.try_recv().is_ok() {}
                if rx.is_closed() {
                    return;
                }
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(Duration::from_millis(500));
                continue;
            }
        };
        let _ = s.set_nodelay(true);
        backoff = Duration::from_millis(10);
        let mut batch = Vec::with_capacity(WRITE_BATCH);
        while let Some(frame) = rx.recv().await {
            // Everything queued meanwhile goes in the same write: under load the driver
            // sends many messages per Ready, and one syscall (and one wakeup of the peer's
            // reader) per message was most of a write's cost in a cluster.
            batch.clear();
            batch.extend_from_slice(&frame);
            while batch.len() < WRITE_BATCH {
                match rx.try_recv() {
                    Ok(more) => batch.extend_from_slice(&more),
                    Err(_) => break,
                }
            }
            if s.write_all(&batch).await.is_err() {
                continue 'connect;
            }
        }
        return;
    }
}

impl Transport for TcpNet {
    fn send(&self, from: NodeId, to: NodeId, msg: Msg) {
        let Some(tx) = self.sender(to) else { return };
        let body = msg.encode();
        let mut frame = Vec::with_capacity(12 + body.len());
        frame.extend_from_slice(&((body.len() + 8) as u32).to_be_bytes());
        frame.extend_from_slice(&from.to_be_bytes());
        frame.extend_from_slice(&body);
        let _ = tx.try_send(frame);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn messages_cross_between_two_nodes_and_survive_a_late_listener() {
        let any: SocketAddr = "127.0.0.1:0".parse().unwrap();
        let (tx1, rx1) = flume::unbounded();
        let (tx2, rx2) = flume::unbounded();
        // Node 2 binds first and attaches late: node 1's frames wait in the kernel meanwhile.
        let (n2, a2) = TcpNet::bind(any, BTreeMap::new()).await.unwrap();
        let (n1, a1) = TcpNet::start(any, BTreeMap::from([(2, a2.to_string())]), tx1).await.unwrap();
        n1.send(1, 2, Msg::SyncAsk { id: 7 });
        tokio::time::sleep(Duration::from_millis(50)).await;
        n2.attach(tx2);
        let got = tokio::task::spawn_blocking(move || rx2.recv_timeout(Duration::from_secs(5))).await.unwrap();
        assert!(matches!(got, Ok(Input::Net { from: 1, msg: Msg::SyncAsk { id: 7 } })), "{got:?}");
        // And back, once node 2 knows node 1's address.
        let back = TcpNet { peers: BTreeMap::from([(1, a1.to_string())]), ..Arc::into_inner(n2).unwrap() };
        back.send(2, 1, Msg::SyncAnswer { id: 7, index: 9 });
        let got = tokio::task::spawn_blocking(move || rx1.recv_timeout(Duration::from_secs(5))).await.unwrap();
        assert!(matches!(got, Ok(Input::Net { from: 2, msg: Msg::SyncAnswer { id: 7, index: 9 } })), "{got:?}");
        // A message to a node nobody knows is dropped, not an error.
        n1.send(1, 9, Msg::SyncAsk { id: 1 });
    }
}

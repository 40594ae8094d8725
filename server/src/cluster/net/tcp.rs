//! The cluster's TCP transport between `serve` processes: each node listens on its Raft
//! address and keeps one outgoing connection per peer (reconnecting with backoff). A frame is
//! a big-endian u32 length, the sender's id (u64), and the message. A peer that is down costs
//! nothing but dropped messages (its queue is bounded): Raft retries on its own.

use std::collections::{BTreeMap, HashMap};
use std::io;
use std::net::SocketAddr;
use std::sync::mpsc::Sender;
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
    rt: tokio::runtime::Handle,
}

impl TcpNet {
    /// Listens on `listen` for peers' frames (handing them to `input`) and returns the
    /// transport that reaches `peers`.
    ///
    /// # Errors
    /// The address cannot be bound.
    pub async fn start(
        listen: SocketAddr,
        peers: BTreeMap<NodeId, String>,
        input: Sender<Input>,
    ) -> io::Result<(Arc<TcpNet>, SocketAddr)> {
        let listener = TcpListener::bind(listen).await?;
        let bound = listener.local_addr()?;
        tokio::spawn(async move {
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
        let net = TcpNet { peers, outs: Mutex::new(HashMap::new()), rt: tokio::runtime::Handle::current() };
        Ok((Arc::new(net), bound))
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

async fn read_frames(mut s: TcpStream, input: &Sender<Input>) -> io::Result<()> {
    let _ = s.set_nodelay(true);
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
        while let Some(frame) = rx.recv().await {
            if s.write_all(&frame).await.is_err() {
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

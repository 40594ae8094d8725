//! Telling a peer that is gone from one that is quiet. A peer's connection to this node can
//! end for many reasons (its writer reconnecting, a network fault); only when its Raft address
//! then refuses a connection is its process gone (a killed process's sockets close with it, and
//! nothing listens on its port). That is worth telling the driver: a follower whose leader is
//! gone stands for election now rather than after an election timeout of silence
//! (`cluster/driver/gone.rs`). A timeout or any other error says nothing, so nothing is told.
//!
//! A dying process's connections close a moment before its listener does, so a dial right
//! after the end can still connect: the peer is dialled a few times, a few milliseconds apart,
//! and is gone if any dial is refused (a process restarted meanwhile is a new one: the old is
//! gone all the same).

use std::collections::BTreeMap;
use std::io;
use std::time::Duration;

use tracing::info;

use super::super::local::Conn;
use crate::cluster::{Input, NodeId};

/// Dials before a peer that keeps answering counts as up.
const DIALS: usize = 5;
/// Between two dials.
const DIAL_GAP: Duration = Duration::from_millis(10);

/// What it takes to dial a peer back.
pub(super) struct Dial {
    pub peers: BTreeMap<NodeId, String>,
    pub unix: bool,
}

impl Dial {
    /// Dials `peer` up to [`DIALS`] times; if its address refuses, tells the driver through
    /// `input`.
    pub(super) async fn check(&self, peer: NodeId, input: &flume::Sender<Input>) {
        let Some(addr) = self.peers.get(&peer) else { return };
        for _ in 0..DIALS {
            match Conn::connect(addr, self.unix).await {
                Err(e) if e.kind() == io::ErrorKind::ConnectionRefused => {
                    info!(peer, %addr, "raft peer gone: its connection ended and its address refuses connections");
                    let _ = input.send(Input::PeerGone { peer });
                    return;
                }
                // It answered (up, or not quite gone yet): dial again in a moment.
                Ok(_) => tokio::time::sleep(DIAL_GAP).await,
                // No answer: nothing is known.
                Err(_) => return,
            }
        }
    }
}

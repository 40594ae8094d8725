//! How nodes reach each other. The driver hands every outgoing message to a [`Transport`];
//! whatever arrives is put on the receiving driver's input channel.
//!
//! # Layout
//! - `mem`: an in-process network for `TestKeeperCluster`, with seeded per-link faults
//!   (drop, delay, jitter, duplicate, reorder) and partitions.
//! - `tcp`: length-prefixed frames over TCP between `serve` processes.
//! - `local`: the same frames over a Unix socket to a peer on loopback.

mod local;
pub mod mem;
pub mod tcp;

use super::message::Msg;
use super::NodeId;

/// Delivers messages between nodes. Sending never blocks the driver: a message to a node that
/// cannot be reached is dropped, as a network would, and Raft retries.
pub trait Transport: Send + Sync {
    fn send(&self, from: NodeId, to: NodeId, msg: Msg);

    /// The driver sent everything of one turn: what a transport held back to send together
    /// goes now.
    fn flush(&self) {}
}

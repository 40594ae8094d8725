//! Who waits for each proposed entry, by the origin the entry carries. An origin names the
//! node that proposed it (top 16 bits), which life of that node (the next 16) and a counter
//! (the low 32): a committed entry finds its waiter here only on the node that proposed it,
//! and only in the life that did.

use std::collections::HashMap;
use std::time::Instant;

// Integer keys the server itself chose: foldhash with a fixed seed instead of SipHash.
use foldhash::fast::FixedState;

use super::reply::Shape;

/// What a proposed entry's waiter does with its outcome.
#[derive(Debug)]
pub(crate) enum Reply {
    /// A client's write: answer it.
    Client { conn: u64, xid: i32, shape: Shape, started: Instant },
    /// A new session: send the handshake response.
    Handshake { conn: u64, read_only: Option<bool> },
    /// A client's closeSession: answer it (if the flavor does); the session's end closes the
    /// connection.
    Close { conn: u64, xid: i32 },
    /// A client's createSession with a body (zookeeper flavor): the connect response for its
    /// own session again (`internal_ops`).
    SessionAgain { conn: u64 },
    /// The server's own write (expiry, container and TTL collection): nobody waits.
    Internal,
}

/// A proposed entry's waiter.
#[derive(Debug)]
pub(crate) struct Waiter {
    /// The session whose order the entry holds up (0: none yet, a session being created in a
    /// cluster, whose id the leader decides).
    pub(crate) session: i64,
    pub(crate) reply: Reply,
}

/// The waiters of this node's proposed entries, and the origins it hands out.
#[derive(Debug, Default)]
pub(crate) struct Waiters {
    map: HashMap<u64, Waiter, FixedState>,
    /// This node's id in a cluster (0 standalone).
    node: u64,
    /// Which life of this node this is (the clock's ms when it joined the cluster), so that
    /// entries a previous life proposed never meet this life's waiters.
    incarnation: u64,
    next: u64,
}

impl Waiters {
    /// From now on, origins name node `node` in its life `incarnation`.
    pub(crate) fn join(&mut self, node: u64, incarnation: u64) {
        (self.node, self.incarnation) = (node, incarnation);
    }

    /// This node's id in a cluster (0 standalone).
    pub(crate) fn node(&self) -> u64 {
        self.node
    }

    /// Registers a waiter and returns the origin its entry will carry. Without the
    /// incarnation in it, a restarted node counted from 1 again, and an entry its previous life
    /// proposed, committed after the restart, found a waiter of the new life with the same
    /// origin: the wrong client got the reply, or a handshake got a create's outcome and the
    /// node stopped (found by `testkeeper sim --workload lock --seed 6`).
    pub(crate) fn add(&mut self, session: i64, reply: Reply) -> u64 {
        self.next = self.next.wrapping_add(1);
        let origin = (self.node << 48) | ((self.incarnation & 0xffff) << 32) | (self.next & 0xffff_ffff);
        self.map.insert(origin, Waiter { session, reply });
        origin
    }

    /// The waiter of a committed entry with `origin`, if this node proposed it.
    pub(crate) fn take_committed(&mut self, origin: u64) -> Option<Waiter> {
        let mine = origin != 0 && origin >> 48 == self.node;
        if mine {
            self.map.remove(&origin)
        } else {
            None
        }
    }

    /// Removes the waiter of `origin` (its entry will not be applied for it, or was answered
    /// early).
    pub(crate) fn take(&mut self, origin: u64) -> Option<Waiter> {
        self.map.remove(&origin)
    }

    pub(crate) fn get_mut(&mut self, origin: u64) -> Option<&mut Waiter> {
        self.map.get_mut(&origin)
    }

    /// Origins of every waiter.
    pub(crate) fn origins(&self) -> Vec<u64> {
        self.map.keys().copied().collect()
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.map.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An origin names the node (top 16 bits) and its life (the next 16); a committed entry
    /// finds its waiter only on the node, and in the life, that proposed it.
    #[test]
    fn a_committed_entry_finds_its_waiter_only_where_and_when_it_was_proposed() {
        let mut w = Waiters::default();
        w.join(3, 0x1_0005);
        let a = w.add(7, Reply::Internal);
        let b = w.add(8, Reply::Internal);
        assert_eq!((a >> 48, (a >> 32) & 0xffff, a & 0xffff_ffff), (3, 5, 1));
        assert_eq!(b & 0xffff_ffff, 2);
        // Another node's entry, or the same counter in another life of this node: nobody here.
        assert!(w.take_committed((2 << 48) | (5 << 32) | 1).is_none());
        assert!(w.take_committed((3 << 48) | (6 << 32) | 1).is_none());
        assert!(w.take_committed(0).is_none(), "origin 0: nobody waits");
        assert_eq!(w.take_committed(a).map(|x| x.session), Some(7));
        assert!(w.take_committed(a).is_none(), "answered once");
        assert_eq!(w.origins(), vec![b]);
        assert_eq!(w.take(b).map(|x| x.session), Some(8));
        assert!(w.is_empty());
    }
}

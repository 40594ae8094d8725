//! The slot arena the tree keeps its nodes in: fixed-size chunks, addressed by a `u32` slot.
//!
//! Chunks instead of one `Vec`: a million-node `Vec` doubles by copying ~100 MB inside one
//! request (a latency spike) and, with allocators that do not `mremap`, leaves the old block
//! resident for a while. Chunks never move, so growth costs one chunk at a time.
//!
//! Chunks are shared copy-on-write (`Arc`): cloning the arena, which a snapshot does under the
//! engine's lock, copies one pointer per chunk instead of every node and its blob (at a million
//! znodes, a full copy held the lock for a large part of the serialization time it was meant
//! to avoid). While a clone is alive, the first write to a chunk copies that chunk alone.

use std::sync::Arc;

use super::node::Node;

/// Slots per chunk: as many as fit in 256 KiB with the `Arc`'s two counters (4095 of 64
/// bytes). A power-of-two byte size is a size class of its own in allocators that bin large
/// blocks (mimalloc), so no rounded-up tail is paid per chunk; slot arithmetic divides by a
/// constant, which compiles to a multiply.
const CHUNK: usize = ((256 << 10) - 2 * std::mem::size_of::<usize>()) / std::mem::size_of::<Option<Node>>();

/// Nodes by slot, with freed slots reused first.
#[derive(Debug, Clone, Default)]
pub struct Arena {
    chunks: Vec<Arc<[Option<Node>]>>,
    /// Slots handed out so far (free or not).
    used: u32,
    free: Vec<u32>,
}

impl Arena {
    fn at(&self, id: u32) -> &Option<Node> {
        &self.chunks[id as usize / CHUNK][id as usize % CHUNK]
    }

    /// The slot, writable: a chunk still shared with a clone is copied first.
    fn at_mut(&mut self, id: u32) -> &mut Option<Node> {
        &mut Arc::make_mut(&mut self.chunks[id as usize / CHUNK])[id as usize % CHUNK]
    }

    /// The node in a live slot.
    ///
    /// # Panics
    /// When the slot is free: the tree only follows links to live slots.
    pub fn node(&self, id: u32) -> &Node {
        self.at(id).as_ref().expect("invariant: linked slot is live")
    }

    /// The node in a live slot, mutably.
    ///
    /// # Panics
    /// When the slot is free.
    pub fn node_mut(&mut self, id: u32) -> &mut Node {
        self.at_mut(id).as_mut().expect("invariant: linked slot is live")
    }

    /// Stores `node` in a free slot and returns the slot.
    pub fn insert(&mut self, node: Node) -> u32 {
        if let Some(id) = self.free.pop() {
            *self.at_mut(id) = Some(node);
            return id;
        }
        let id = self.used;
        self.used = id.checked_add(1).expect("more than u32::MAX znodes");
        if id as usize / CHUNK == self.chunks.len() {
            self.chunks.push((0..CHUNK).map(|_| None).collect());
        }
        *self.at_mut(id) = Some(node);
        id
    }

    /// Frees a live slot and returns its node.
    ///
    /// # Panics
    /// When the slot is already free.
    pub fn remove(&mut self, id: u32) -> Node {
        let node = self.at_mut(id).take().expect("invariant: removed slot is live");
        self.free.push(id);
        node
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::node::{AclId, NodeKind, NodeStat};

    fn node(name: &str) -> Node {
        Node::new(name, Some(b""), AclId(0), NodeStat::default(), NodeKind::Persistent)
    }

    #[test]
    fn slots_cross_chunks_and_freed_ones_are_reused() {
        let mut a = Arena::default();
        let ids: Vec<u32> = (0..CHUNK + 3).map(|i| a.insert(node(&i.to_string()))).collect();
        assert_eq!(ids[CHUNK + 2], (CHUNK + 2) as u32);
        assert_eq!(a.node(CHUNK as u32 + 1).name(), (CHUNK + 1).to_string());
        assert_eq!(a.remove(5).name(), "5");
        assert_eq!(a.insert(node("again")), 5);
        assert_eq!(a.node(5).name(), "again");
        assert_eq!(a.chunks.len(), 2);
    }

    #[test]
    fn a_clone_shares_chunks_until_one_side_writes() {
        let mut a = Arena::default();
        let ids: Vec<u32> = (0..CHUNK + 1).map(|i| a.insert(node(&i.to_string()))).collect();
        let snapshot = a.clone();
        assert!(a.chunks.iter().zip(&snapshot.chunks).all(|(x, y)| Arc::ptr_eq(x, y)));
        a.remove(ids[1]);
        a.node_mut(ids[CHUNK]).stat.version = 7;
        // The writes copied the chunks they touched; the clone still sees the old nodes.
        assert!(!Arc::ptr_eq(&a.chunks[0], &snapshot.chunks[0]));
        assert_eq!(snapshot.node(ids[1]).name(), "1");
        assert_eq!(snapshot.node(ids[CHUNK]).stat.version, 0);
        assert_eq!(a.node(ids[CHUNK]).stat.version, 7);
        assert_eq!(a.insert(node("new")), ids[1]);
        assert_eq!(snapshot.node(ids[1]).name(), "1");
        // Once the clone is gone, writes no longer copy.
        drop(snapshot);
        let before = Arc::as_ptr(&a.chunks[0]);
        a.node_mut(ids[0]).stat.version = 1;
        assert_eq!(Arc::as_ptr(&a.chunks[0]), before);
    }

    #[test]
    fn a_chunk_with_its_counters_fits_256_kib() {
        assert!(CHUNK * std::mem::size_of::<Option<Node>>() + 2 * std::mem::size_of::<usize>() <= 256 << 10);
        assert_eq!(CHUNK, 4095);
    }

    #[test]
    #[should_panic(expected = "invariant")]
    fn a_free_slot_is_not_a_node() {
        let mut a = Arena::default();
        let id = a.insert(node("x"));
        a.remove(id);
        a.node(id);
    }
}

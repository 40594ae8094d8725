//! A connection's reply backlog: the bytes the engine has queued for the connection and the
//! connection has not yet written. The engine cannot wait (it answers under one lock, and a
//! write of one session fires events on others), so the queue itself stays an unbounded
//! channel; what is bounded is what a connection may add to it. The reader stops reading from
//! its socket while the backlog is at its limit, as ZooKeeper stops reading from a connection
//! whose outstanding requests pass its limit (`NIOServerCnxn.disableRecv`), so a client that
//! pipelines requests and never reads its replies holds at most about one limit of server
//! memory (plus one reply: a reply is never split), and TCP's own window stops it.
//!
//! The connection's own task writes what it reads the replies to (`net::link`), so it sees
//! room come back itself; nothing needs to wake it. The cost on the fast path is one atomic
//! add per flushed batch, one atomic subtract per write and one atomic load per request.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

/// The shared count between a connection's engine side and its task.
#[derive(Debug)]
pub struct Backlog {
    /// Bytes queued for the writer and not yet written.
    queued: AtomicUsize,
    /// The most `queued` ever held: what a test (or `/api/v1/connections`) checks the bound by.
    peak: AtomicUsize,
    /// Times the connection stopped reading because the backlog was full.
    pauses: AtomicU64,
    /// The connection stops reading at this many queued bytes; 0: never.
    limit: usize,
}

impl Backlog {
    /// A backlog whose reader pauses at `limit` queued bytes (0: unbounded).
    pub fn new(limit: usize) -> Arc<Backlog> {
        Arc::new(Backlog { queued: AtomicUsize::new(0), peak: AtomicUsize::new(0), pauses: AtomicU64::new(0), limit })
    }

    /// The engine queued `n` more bytes.
    pub fn queued_more(&self, n: usize) {
        let now = self.queued.fetch_add(n, Ordering::Relaxed) + n;
        self.peak.fetch_max(now, Ordering::Relaxed);
    }

    /// The connection wrote (or dropped, on a closed socket) `n` queued bytes.
    pub fn written(&self, n: usize) {
        let before = self.queued.fetch_sub(n, Ordering::Relaxed);
        debug_assert!(before >= n, "backlog underflow: {before} - {n}");
    }

    /// Bytes queued and not yet written.
    pub fn queued(&self) -> usize {
        self.queued.load(Ordering::Relaxed)
    }

    /// The most bytes ever queued at once.
    pub fn peak(&self) -> usize {
        self.peak.load(Ordering::Relaxed)
    }

    /// Times the connection stopped reading until it had written enough.
    pub fn pauses(&self) -> u64 {
        self.pauses.load(Ordering::Relaxed)
    }

    /// The connection stopped reading: its backlog is full.
    pub fn paused(&self) {
        self.pauses.fetch_add(1, Ordering::Relaxed);
    }

    /// Whether `extra` more bytes (encoded but not yet queued) put the connection at its limit.
    pub fn is_full(&self, extra: usize) -> bool {
        self.limit != 0 && self.queued() + extra >= self.limit
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_bytes_and_keeps_the_peak() {
        let b = Backlog::new(100);
        b.queued_more(60);
        b.queued_more(30);
        assert!(!b.is_full(0) && b.is_full(10));
        b.written(60);
        b.queued_more(20);
        assert_eq!((b.queued(), b.peak()), (50, 90));
        assert!(!Backlog::new(0).is_full(usize::MAX / 2), "0 means unbounded");
    }

    #[test]
    fn full_until_written_below_the_limit() {
        let b = Backlog::new(100);
        b.queued_more(150);
        b.paused();
        b.written(40);
        assert!(b.is_full(0), "still 110 queued");
        b.written(20);
        assert!(!b.is_full(0), "90 queued");
        assert_eq!(b.pauses(), 1);
    }
}

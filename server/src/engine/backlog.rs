//! A connection's reply backlog: the bytes the engine has handed to the connection's writer
//! and the writer has not yet written. The engine cannot wait (it answers under one lock, and a
//! write of one session fires events on others), so the queue itself stays an unbounded
//! channel; what is bounded is what a connection may add to it. The reader stops reading from
//! its socket while the backlog is at its limit, as ZooKeeper stops reading from a connection
//! whose outstanding requests pass its limit (`NIOServerCnxn.disableRecv`), so a client that
//! pipelines requests and never reads its replies holds at most about one limit of server
//! memory (plus one reply: a reply is never split), and TCP's own window stops it.
//!
//! The cost on the fast path is one atomic add per flushed batch, one atomic subtract per
//! write and one atomic load per request.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

use tokio::sync::Notify;

/// The shared count between a connection's engine side, writer and reader.
#[derive(Debug)]
pub struct Backlog {
    /// Bytes queued for the writer and not yet written.
    queued: AtomicUsize,
    /// The most `queued` ever held: what a test (or `/api/v1/connections`) checks the bound by.
    peak: AtomicUsize,
    /// Times the reader had to wait for the writer.
    pauses: AtomicU64,
    /// The reader stops reading at this many queued bytes; 0: never.
    limit: usize,
    /// Signalled by the writer when the backlog drops below the limit.
    drained: Notify,
}

impl Backlog {
    /// A backlog whose reader pauses at `limit` queued bytes (0: unbounded).
    pub fn new(limit: usize) -> Arc<Backlog> {
        Arc::new(Backlog {
            queued: AtomicUsize::new(0),
            peak: AtomicUsize::new(0),
            pauses: AtomicU64::new(0),
            limit,
            drained: Notify::new(),
        })
    }

    /// The engine queued `n` more bytes.
    pub fn queued_more(&self, n: usize) {
        let now = self.queued.fetch_add(n, Ordering::Relaxed) + n;
        self.peak.fetch_max(now, Ordering::Relaxed);
    }

    /// The writer wrote (or dropped, on a closed socket) `n` queued bytes.
    pub fn written(&self, n: usize) {
        let before = self.queued.fetch_sub(n, Ordering::Relaxed);
        debug_assert!(before >= n, "backlog underflow: {before} - {n}");
        // Only a crossing can release a waiting reader; a stale permit costs one recheck.
        if self.limit != 0 && before >= self.limit && before - n < self.limit {
            self.drained.notify_one();
        }
    }

    /// Bytes queued and not yet written.
    pub fn queued(&self) -> usize {
        self.queued.load(Ordering::Relaxed)
    }

    /// The most bytes ever queued at once.
    pub fn peak(&self) -> usize {
        self.peak.load(Ordering::Relaxed)
    }

    /// Times the reader waited for the writer to drain.
    pub fn pauses(&self) -> u64 {
        self.pauses.load(Ordering::Relaxed)
    }

    /// Whether `extra` more bytes (encoded but not yet queued) put the connection at its limit.
    pub fn is_full(&self, extra: usize) -> bool {
        self.limit != 0 && self.queued() + extra >= self.limit
    }

    /// Returns once the backlog is below its limit (at once if it is).
    pub async fn room(&self) {
        if !self.is_full(0) {
            return;
        }
        self.pauses.fetch_add(1, Ordering::Relaxed);
        while self.is_full(0) {
            self.drained.notified().await;
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

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

    #[tokio::test]
    async fn room_waits_for_the_writer_to_drain_below_the_limit() {
        let b = Backlog::new(100);
        b.queued_more(150);
        let waiter = tokio::spawn({
            let b = b.clone();
            async move { b.room().await }
        });
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(!waiter.is_finished(), "still 150 queued");
        b.written(40); // 110: still full, no wake-up that lets it through
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(!waiter.is_finished(), "still 110 queued");
        b.written(20); // 90: below the limit
        tokio::time::timeout(Duration::from_secs(5), waiter).await.expect("released").unwrap();
        assert_eq!(b.pauses(), 1);
    }

    #[tokio::test]
    async fn a_drain_before_the_wait_is_not_lost() {
        let b = Backlog::new(10);
        b.queued_more(10);
        b.written(10); // a permit is stored even though nobody waits yet
        b.queued_more(10);
        let b2 = b.clone();
        let waiter = tokio::spawn(async move { b2.room().await });
        tokio::time::sleep(Duration::from_millis(20)).await;
        b.written(5);
        tokio::time::timeout(Duration::from_secs(5), waiter).await.expect("released").unwrap();
    }
}

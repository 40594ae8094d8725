//! What a connection has taken off its engine queue and not yet written: the frames' bytes,
//! and the marker (close, reset, delay) that came after them. Nothing behind a marker is taken
//! until the bytes before it are written and the marker is carried out, so a delay holds every
//! later reply and a close or reset comes after every earlier one, in queue order.

use bytes::{Buf, BytesMut};
use tokio::sync::mpsc::error::TryRecvError;
use tokio::sync::mpsc::UnboundedReceiver;

use crate::engine::Out;

/// Bytes to write, then at most one marker.
#[derive(Debug, Default)]
pub struct Outbox {
    bytes: BytesMut,
    marker: Option<Out>,
}

/// What [`Outbox::take_queued`] found at the end of the queue.
#[derive(Debug, PartialEq, Eq)]
pub enum Queue {
    /// Empty for now (or a marker stopped the taking).
    Open,
    /// The engine dropped its end: nothing more will come.
    Closed,
}

impl Outbox {
    /// Takes one item off the queue: a frame joins the bytes, a marker waits behind them.
    pub fn push(&mut self, out: Out) {
        match out {
            Out::Frame(b) => self.bytes.extend_from_slice(&b),
            marker => {
                debug_assert!(self.marker.is_none(), "a second marker taken before the first was carried out");
                self.marker = Some(marker);
            }
        }
    }

    /// Takes what is already queued, without waiting, until the queue is empty or a marker
    /// has been taken.
    pub fn take_queued(&mut self, rx: &mut UnboundedReceiver<Out>) -> Queue {
        while self.marker.is_none() {
            match rx.try_recv() {
                Ok(out) => self.push(out),
                Err(TryRecvError::Empty) => return Queue::Open,
                Err(TryRecvError::Disconnected) => return Queue::Closed,
            }
        }
        Queue::Open
    }

    /// Whether a marker stops the taking of more.
    pub fn has_marker(&self) -> bool {
        self.marker.is_some()
    }

    /// The bytes still to write.
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// `n` bytes were written.
    pub fn advance(&mut self, n: usize) {
        self.bytes.advance(n);
    }

    /// The marker, once every byte before it is written.
    pub fn due_marker(&mut self) -> Option<Out> {
        if self.bytes.is_empty() {
            self.marker.take()
        } else {
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use bytes::Bytes;
    use tokio::sync::mpsc;

    use super::*;

    #[test]
    fn frames_join_and_a_marker_waits_for_the_bytes_before_it() {
        let (tx, mut rx) = mpsc::unbounded_channel();
        for out in [
            Out::Frame(Bytes::from_static(b"ab")),
            Out::Frame(Bytes::from_static(b"cd")),
            Out::Delay(Duration::from_millis(5)),
            Out::Frame(Bytes::from_static(b"ef")),
        ] {
            tx.send(out).unwrap();
        }
        let mut ob = Outbox::default();
        assert_eq!(ob.take_queued(&mut rx), Queue::Open);
        assert_eq!(ob.bytes(), b"abcd", "nothing behind the delay is taken");
        assert!(ob.due_marker().is_none(), "the delay waits for the bytes before it");
        ob.advance(3);
        assert!(ob.due_marker().is_none());
        ob.advance(1);
        assert!(matches!(ob.due_marker(), Some(Out::Delay(_))));
        drop(tx);
        assert_eq!(ob.take_queued(&mut rx), Queue::Closed);
        assert_eq!(ob.bytes(), b"ef", "what was queued before the end is still taken");
    }
}

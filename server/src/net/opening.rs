//! A connection before it has a session: every read is bounded by the handshake deadline
//! (`--handshake-timeout-ms`, counted from accept, so trickling one byte at a time does not
//! hold a socket open) and by the session-less idle bound (`--sessionless-idle-ms`, counted
//! from the last byte, as ZooKeeper's `sessionlessCnxnTimeout` is). ZooKeeper closes such a
//! connection after 10 s of silence; so do both bounds by default.

use std::time::Duration;

use bytes::BytesMut;
use testkeeper_wire::frame::split_frame;
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::sync::watch;
use tokio::time::Instant;

use crate::config::ConnLimits;

/// Why a read before the handshake stopped.
#[derive(Debug, PartialEq, Eq)]
pub enum Stop {
    /// The client closed before sending anything (or between frames).
    Eof,
    /// The server is shutting down.
    Shutdown,
    /// The handshake deadline passed.
    HandshakeTimeout,
    /// Nothing arrived within the session-less idle bound.
    Idle,
    /// Bad bytes, a read error, or a close inside a frame.
    Bad(String),
}

/// The bounds of one connection's opening.
#[derive(Debug, Clone, Copy)]
pub struct Opening {
    deadline: Option<Instant>,
    idle: Option<Duration>,
}

impl Opening {
    /// Bounds starting now, from `limits` (a 0 leaves that bound out).
    pub fn new(limits: &ConnLimits) -> Opening {
        let ms = |v: u64| (v != 0).then(|| Duration::from_millis(v));
        Opening {
            deadline: ms(limits.handshake_timeout_ms).map(|d| Instant::now() + d),
            idle: ms(limits.sessionless_idle_ms),
        }
    }

    /// How long the next read may wait, and which bound ends it; `None`: unbounded.
    fn next_wait(&self, now: Instant) -> Option<(Duration, Stop)> {
        let to_deadline = self.deadline.map(|d| (d.saturating_duration_since(now), Stop::HandshakeTimeout));
        let idle = self.idle.map(|d| (d, Stop::Idle));
        match (to_deadline, idle) {
            (Some(a), Some(b)) => Some(if a.0 <= b.0 { a } else { b }),
            (a, b) => a.or(b),
        }
    }

    /// Reads once more into `buf`, within the bounds.
    ///
    /// # Errors
    /// Why reading stopped.
    pub async fn read_some<R: AsyncRead + Unpin>(
        &self,
        rd: &mut R,
        buf: &mut BytesMut,
        stop: &mut watch::Receiver<bool>,
    ) -> Result<usize, Stop> {
        let bound = self.next_wait(Instant::now());
        let (wait, why) = match bound {
            Some((d, why)) => (Some(d), why),
            None => (None, Stop::Idle),
        };
        let timer = async {
            match wait {
                Some(d) => tokio::time::sleep(d).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            // In order, never at random: a seeded simulation must replay (docs/sim.md).
            biased;
            r = rd.read_buf(buf) => match r {
                Ok(0) if buf.is_empty() => Err(Stop::Eof),
                Ok(0) => Err(Stop::Bad("connection closed inside a frame".into())),
                Ok(n) => Ok(n),
                Err(e) => Err(Stop::Bad(format!("read error: {e}"))),
            },
            () = timer => Err(why),
            _ = stop.changed() => Err(Stop::Shutdown),
        }
    }

    /// Reads until `buf` holds one complete frame of at most `max` bytes; returns its length
    /// (prefix included).
    ///
    /// # Errors
    /// Why reading stopped; a bad length prefix is `Stop::Bad`.
    pub async fn read_frame<R: AsyncRead + Unpin>(
        &self,
        rd: &mut R,
        buf: &mut BytesMut,
        max: usize,
        stop: &mut watch::Receiver<bool>,
    ) -> Result<usize, Stop> {
        loop {
            match split_frame(buf, max) {
                Ok(Some(n)) => return Ok(n),
                Ok(None) => {}
                Err(e) => return Err(Stop::Bad(e.to_string())),
            }
            self.read_some(rd, buf, stop).await?;
        }
    }
}

#[cfg(test)]
mod tests {
    use tokio::io::AsyncWriteExt;

    use super::*;

    fn limits(handshake_timeout_ms: u64, sessionless_idle_ms: u64) -> ConnLimits {
        ConnLimits { handshake_timeout_ms, sessionless_idle_ms, ..ConnLimits::default() }
    }

    #[test]
    fn the_nearer_bound_wins_and_zero_leaves_a_bound_out() {
        let now = Instant::now();
        let o = Opening::new(&limits(1_000, 300));
        assert_eq!(o.next_wait(now).map(|w| w.1), Some(Stop::Idle));
        assert_eq!(o.next_wait(now + Duration::from_millis(800)).map(|w| w.1), Some(Stop::HandshakeTimeout));
        assert_eq!(o.next_wait(now + Duration::from_secs(5)).map(|w| w.0), Some(Duration::ZERO));
        assert_eq!(Opening::new(&limits(0, 300)).next_wait(now).map(|w| w.1), Some(Stop::Idle));
        assert!(Opening::new(&limits(0, 0)).next_wait(now).is_none());
    }

    #[tokio::test(start_paused = true)]
    async fn silence_ends_on_the_idle_bound_and_trickling_on_the_deadline() {
        let (_tx, mut stop) = watch::channel(false);
        let (mut client, mut server) = tokio::io::duplex(64);
        let o = Opening::new(&limits(1_000, 300));
        let mut buf = BytesMut::new();
        assert_eq!(o.read_frame(&mut server, &mut buf, 1 << 20, &mut stop).await, Err(Stop::Idle));

        // One byte every 200 ms never trips the 300 ms idle bound, but the 1 s deadline holds.
        let o = Opening::new(&limits(1_000, 300));
        let trickle = tokio::spawn(async move {
            client.write_all(&[0, 0, 0, 45]).await.unwrap();
            for _ in 0..20 {
                tokio::time::sleep(Duration::from_millis(200)).await;
                if client.write_all(&[0]).await.is_err() {
                    return;
                }
            }
        });
        let started = Instant::now();
        let mut buf = BytesMut::new();
        assert_eq!(o.read_frame(&mut server, &mut buf, 1 << 20, &mut stop).await, Err(Stop::HandshakeTimeout));
        assert!(started.elapsed() <= Duration::from_millis(1_001) && buf.len() >= 4, "{:?} {buf:?}", started.elapsed());
        drop(server);
        let _ = trickle.await;
    }

    #[tokio::test]
    async fn a_complete_frame_is_returned_and_shutdown_interrupts() {
        let (tx, mut stop) = watch::channel(false);
        let (mut client, mut server) = tokio::io::duplex(64);
        client.write_all(&[0, 0, 0, 2, 7, 7, 0, 0]).await.unwrap();
        let o = Opening::new(&limits(5_000, 5_000));
        let mut buf = BytesMut::new();
        assert_eq!(o.read_frame(&mut server, &mut buf, 1 << 20, &mut stop).await, Ok(6));
        let _ = buf.split_to(6);
        let waiting = tokio::spawn(async move { o.read_frame(&mut server, &mut buf, 1 << 20, &mut stop).await });
        tx.send(true).unwrap();
        assert_eq!(waiting.await.unwrap(), Err(Stop::Shutdown));
    }
}

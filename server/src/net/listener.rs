//! The accept loop: connection limits on accept, and a growing pause when accept itself fails
//! for want of descriptors or memory (EMFILE, ENFILE, ENOBUFS, ENOMEM). Such a failure leaves
//! the pending connection in the kernel's queue, so the listener stays readable and an
//! immediate retry would spin and log as fast as it can.

use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use testkeeper_wire::net::{sim, Stream};
use tokio::net::TcpListener;
use tokio::sync::watch;
use tracing::{debug, info, warn};

use super::admission::Admission;
use super::conn;
use crate::engine::stats::NetCounters;
use crate::engine::Shared;

/// The first pause after a failed accept, and the most any pause grows to.
const BACKOFF_FIRST: Duration = Duration::from_millis(10);
const BACKOFF_CAP: Duration = Duration::from_secs(1);

/// How long to pause after each failed accept: doubling from `BACKOFF_FIRST` to `BACKOFF_CAP`
/// while failures for want of resources go on, back to the start after an accept succeeds.
#[derive(Debug, Default)]
struct Backoff {
    next: Option<Duration>,
}

impl Backoff {
    /// The pause after `e`; `None` for an error of that one connection (it reset before we
    /// took it, say), where the next accept may well succeed at once.
    fn failed(&mut self, e: &io::Error) -> Option<Duration> {
        let scarce = matches!(e.raw_os_error(), Some(libc::EMFILE | libc::ENFILE | libc::ENOBUFS | libc::ENOMEM))
            || e.kind() == io::ErrorKind::OutOfMemory;
        if !scarce {
            return None;
        }
        let pause = self.next.unwrap_or(BACKOFF_FIRST);
        self.next = Some((pause * 2).min(BACKOFF_CAP));
        Some(pause)
    }

    fn succeeded(&mut self) {
        self.next = None;
    }
}

/// Where clients connect: a TCP listener, or one on the thread's simulated network.
#[derive(Debug)]
pub enum Listener {
    Tcp(TcpListener),
    Sim(sim::Listener),
}

impl Listener {
    /// Binds `addr`: on the simulated network when this thread runs a simulation
    /// (`testkeeper sim`), else over TCP.
    ///
    /// # Errors
    /// The address cannot be bound.
    pub async fn bind(addr: SocketAddr) -> io::Result<Listener> {
        if sim::active() {
            sim::bind(addr).map(Listener::Sim)
        } else {
            TcpListener::bind(addr).await.map(Listener::Tcp)
        }
    }

    /// The address it listens on.
    ///
    /// # Errors
    /// The socket's address cannot be read.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        match self {
            Listener::Tcp(l) => l.local_addr(),
            Listener::Sim(l) => Ok(l.local_addr()),
        }
    }

    async fn accept(&mut self) -> io::Result<(Stream, SocketAddr)> {
        match self {
            Listener::Tcp(l) => l.accept().await.map(|(s, a)| (Stream::Tcp(s), a)),
            Listener::Sim(l) => l.accept().await.map(|(s, a)| (Stream::Mem(s), a)),
        }
    }
}

impl From<TcpListener> for Listener {
    fn from(l: TcpListener) -> Listener {
        Listener::Tcp(l)
    }
}

/// Accepts connections until `shutdown` turns true; each runs in its own task and is told to
/// stop through the same signal.
pub async fn serve(mut listener: Listener, shared: Arc<Shared>, mut shutdown: watch::Receiver<bool>) {
    let limits = shared.cfg.limits;
    let admission = Admission::new(limits.max_connections, limits.max_connections_per_ip);
    let mut backoff = Backoff::default();
    loop {
        tokio::select! {
            // In order, never at random: a seeded simulation must replay (docs/sim.md).
            biased;
            accepted = listener.accept() => match accepted {
                Ok((stream, peer)) => {
                    backoff.succeeded();
                    match admission.admit(peer.ip()) {
                        Ok(permit) => {
                            let shared = shared.clone();
                            let stop = shutdown.clone();
                            tokio::spawn(async move { conn::run(stream, peer, shared, stop, permit).await });
                        }
                        Err(refusal) => {
                            // As ZooKeeper does: accept, say why in the log, close.
                            NetCounters::bump(&shared.net.refused);
                            warn!(%peer, "refusing connection: {refusal}");
                            drop(stream);
                        }
                    }
                }
                Err(e) => {
                    NetCounters::bump(&shared.net.accept_errors);
                    match backoff.failed(&e) {
                        Some(pause) => {
                            warn!(error = %e, open = admission.open(), retry_in_ms = pause.as_millis() as u64, "accept failed; pausing before the next");
                            tokio::select! {
                                // In order, never at random: a seeded simulation must replay (docs/sim.md).
                                biased;
                                () = tokio::time::sleep(pause) => {}
                                _ = shutdown.changed() => return,
                            }
                        }
                        None => debug!(error = %e, "accept failed"),
                    }
                }
            },
            _ = shutdown.changed() => {
                info!("listener stopping");
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pauses_double_to_the_cap_and_start_over_after_a_success() {
        let mut b = Backoff::default();
        let emfile = io::Error::from_raw_os_error(libc::EMFILE);
        let pauses: Vec<u64> = (0..10).map(|_| b.failed(&emfile).unwrap().as_millis() as u64).collect();
        assert_eq!(pauses, [10, 20, 40, 80, 160, 320, 640, 1000, 1000, 1000]);
        b.succeeded();
        assert_eq!(b.failed(&io::Error::from_raw_os_error(libc::ENFILE)), Some(BACKOFF_FIRST));
        let aborted = io::Error::from(io::ErrorKind::ConnectionAborted);
        assert_eq!(b.failed(&aborted), None, "a connection's own error retries at once");
    }
}

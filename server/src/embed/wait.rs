//! Waiting for what a client does to show on the server: a number of sessions, a node, a
//! node's absence. Each polls the committed state (every millisecond, never holding the lock
//! across a sleep) until the condition holds or the wait timeout passes, so a test never
//! needs a sleep of its own.

use std::fmt;
use std::time::{Duration, Instant};

use super::TestKeeper;

/// How long the `await_*` helpers wait unless told otherwise (`Builder::wait_timeout`,
/// `TestKeeper::set_wait_timeout`).
pub const DEFAULT_WAIT: Duration = Duration::from_secs(10);

/// A wait that ran out: what it waited for and what it last saw.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WaitTimeout {
    pub waited_for: String,
    pub last_seen: String,
    pub after: Duration,
}

impl fmt::Display for WaitTimeout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "waited {:?} for {}; last saw {}", self.after, self.waited_for, self.last_seen)
    }
}

impl std::error::Error for WaitTimeout {}

impl TestKeeper {
    /// Changes how long the `await_*` helpers wait.
    pub fn set_wait_timeout(&mut self, wait: Duration) {
        self.wait = wait;
    }

    /// Waits until exactly `n` sessions are live (0: every session has ended, closed or
    /// expired).
    ///
    /// # Errors
    /// [`WaitTimeout`] naming the number last seen.
    pub async fn await_sessions(&self, n: usize) -> Result<(), WaitTimeout> {
        self.poll(&format!("{n} live session(s)"), || {
            let live = self.shared.engine().sessions.live();
            (live == n, format!("{live}"))
        })
        .await
    }

    /// Waits until `path` exists in the committed tree.
    ///
    /// # Errors
    /// [`WaitTimeout`].
    pub async fn await_node(&self, path: &str) -> Result<(), WaitTimeout> {
        self.poll(&format!("{path} to exist"), || (self.exists(path), "no such node".into())).await
    }

    /// Waits until `path` is gone from the committed tree (an ephemeral after its session
    /// ended, a collected container).
    ///
    /// # Errors
    /// [`WaitTimeout`].
    pub async fn await_no_node(&self, path: &str) -> Result<(), WaitTimeout> {
        self.poll(&format!("{path} to be gone"), || (!self.exists(path), "it still exists".into())).await
    }

    async fn poll(&self, what: &str, mut check: impl FnMut() -> (bool, String)) -> Result<(), WaitTimeout> {
        let started = Instant::now();
        loop {
            let (ok, seen) = check();
            if ok {
                return Ok(());
            }
            if started.elapsed() >= self.wait {
                return Err(WaitTimeout { waited_for: what.to_string(), last_seen: seen, after: started.elapsed() });
            }
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    }
}

//! [`Builder`]: the common case in one line (`TestKeeper::builder().flavor(Flavor::Zookeeper)
//! .start().await?`), every other `ServerConfig` field one call away.

use std::io;
use std::net::{Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::time::Duration;

use super::TestKeeper;
use crate::clock::Clock;
use crate::config::ServerConfig;
use crate::core::flavor::Flavor;

type Tweak = Box<dyn FnOnce(&mut ServerConfig) + Send>;

/// Options for [`TestKeeper::builder`]; nothing binds until [`start`](Builder::start).
pub struct Builder {
    flavor: Flavor,
    /// Applied in order to `ServerConfig::new(flavor)`, so `flavor` can come last and still
    /// give its defaults to every field the other calls leave alone.
    tweaks: Vec<Tweak>,
    clock: Clock,
    http: Option<SocketAddr>,
    faults: Vec<String>,
    wait: Option<Duration>,
}

impl Builder {
    pub(crate) fn new(flavor: Flavor) -> Builder {
        Builder { flavor, tweaks: Vec::new(), clock: Clock::System, http: None, faults: Vec::new(), wait: None }
    }

    fn tweak(mut self, f: impl FnOnce(&mut ServerConfig) + Send + 'static) -> Builder {
        self.tweaks.push(Box::new(f));
        self
    }

    /// Which server to imitate (default: keeper). Its defaults (session timeout bounds,
    /// four-letter words) apply to whatever the other calls do not set.
    pub fn flavor(mut self, flavor: Flavor) -> Builder {
        self.flavor = flavor;
        self
    }

    /// Where to listen (default 127.0.0.1:0, a free loopback port).
    pub fn listen(self, addr: SocketAddr) -> Builder {
        self.tweak(move |c| c.listen = addr)
    }

    /// Listen on this loopback port (0: a free one).
    pub fn port(self, port: u16) -> Builder {
        self.listen(SocketAddr::from((Ipv4Addr::LOCALHOST, port)))
    }

    /// The seed of every random choice (`prob=` faults, delay jitter).
    pub fn seed(self, seed: u64) -> Builder {
        self.tweak(move |c| c.seed = seed)
    }

    /// Keep the log and snapshots here and recover from it at start (default: in memory).
    pub fn data_dir(self, dir: impl Into<PathBuf>) -> Builder {
        let dir = dir.into();
        self.tweak(move |c| c.data_dir = Some(dir))
    }

    /// Start, in memory, from another server's state: a Keeper snapshot file or directory, or a
    /// ZooKeeper data directory (`serve --import`; docs/import.md). `start` fails with
    /// `InvalidData` naming the file when it does not read.
    pub fn import(self, path: impl Into<PathBuf>) -> Builder {
        let path = path.into();
        self.tweak(move |c| c.import = Some(path))
    }

    /// Bounds of negotiated session timeouts, ms (the default timeout is clamped into them).
    pub fn session_timeouts(self, min_ms: i32, max_ms: i32) -> Builder {
        self.tweak(move |c| {
            c.min_session_timeout_ms = min_ms;
            c.max_session_timeout_ms = max_ms;
            c.default_session_timeout_ms = c.default_session_timeout_ms.clamp(min_ms, max_ms.max(min_ms));
        })
    }

    /// Keeper flavor: take a handshake of any length, as ZooKeeper does, not only Keeper's 44
    /// or 45 bytes (`serve --lenient-handshake`; docs/flavors.md).
    pub fn lenient_handshake(self) -> Builder {
        self.tweak(|c| c.lenient_handshake = true)
    }

    /// The zookeeper flavor answers as this ZooKeeper release (default 3.8.0; docs/flavors.md,
    /// "ZooKeeper 3.9").
    pub fn zookeeper_version(self, version: crate::core::flavor::ZookeeperVersion) -> Builder {
        self.tweak(move |c| c.zookeeper_version = version)
    }

    /// Any other field of the configuration.
    pub fn config(self, f: impl FnOnce(&mut ServerConfig) + Send + 'static) -> Builder {
        self.tweak(f)
    }

    /// A clock of the test's own (`Clock::manual(t)`), for deterministic expiry and times.
    pub fn clock(mut self, clock: Clock) -> Builder {
        self.clock = clock;
        self
    }

    /// Also serve the admin HTTP endpoint, on a free loopback port ([`TestKeeper::http_url`]).
    pub fn http(self) -> Builder {
        self.http_on(SocketAddr::from((Ipv4Addr::LOCALHOST, 0)))
    }

    /// Also serve the admin HTTP endpoint on `addr`.
    pub fn http_on(mut self, addr: SocketAddr) -> Builder {
        self.http = Some(addr);
        self
    }

    /// A fault rule to install before the first client connects (grammar of docs/faults.md).
    pub fn fault(mut self, rule: &str) -> Builder {
        self.faults.push(rule.to_string());
        self
    }

    /// How long the `await_*` helpers wait before they fail (default [`super::DEFAULT_WAIT`]).
    pub fn wait_timeout(mut self, wait: Duration) -> Builder {
        self.wait = Some(wait);
        self
    }

    /// The configuration these calls describe.
    pub fn build_config(self) -> ServerConfig {
        self.split().0
    }

    fn split(self) -> (ServerConfig, Clock, Option<SocketAddr>, Vec<String>, Option<Duration>) {
        let mut cfg = ServerConfig::new(self.flavor);
        for t in self.tweaks {
            t(&mut cfg);
        }
        (cfg, self.clock, self.http, self.faults, self.wait)
    }

    /// Binds and serves.
    ///
    /// # Errors
    /// An address that cannot be bound, a data directory that does not recover, or a fault
    /// rule that does not parse (`InvalidInput`, with the parse error).
    pub async fn start(self) -> io::Result<TestKeeper> {
        let (cfg, clock, http, faults, wait) = self.split();
        let mut tk = TestKeeper::start_with_clock(cfg, clock).await?;
        for rule in &faults {
            tk.add_fault(rule).map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
        }
        if let Some(addr) = http {
            tk.start_http(addr).await?;
        }
        if let Some(w) = wait {
            tk.wait = w;
        }
        Ok(tk)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flavor_defaults_apply_whatever_the_order() {
        let c = TestKeeper::builder().seed(7).flavor(Flavor::Zookeeper).build_config();
        assert_eq!((c.flavor, c.seed, c.min_session_timeout_ms, c.listen.port()), (Flavor::Zookeeper, 7, 4_000, 0));
        let c = TestKeeper::builder().session_timeouts(1_000, 2_000).build_config();
        assert_eq!(
            (c.min_session_timeout_ms, c.max_session_timeout_ms, c.default_session_timeout_ms),
            (1_000, 2_000, 2_000)
        );
    }
}

//! The in-process API, in the spirit of Curator's `TestingServer` but instant: bind first
//! (port 0 by default, no probe-then-bind race), then serve; hold an outage with `stop` and
//! `resume` on the same address (`start` is the constructor), empty everything between tests with `reset`, wait for
//! sessions and nodes, expire sessions, restart (in memory keeping the tree, with a data
//! directory recovering from disk), crash, and read the digest, all without touching the
//! network. The engine itself is never handed out.
//!
//! ```no_run
//! # async fn demo() -> std::io::Result<()> {
//! use testkeeper_server::prelude::*;
//! let server = TestKeeper::start_default().await?;          // keeper flavor, 127.0.0.1:<free>
//! let client = Client::connect(server.addr(), ConnectOptions::default()).await.unwrap();
//! # Ok(()) }
//! ```
//!
//! Faults (see `docs/faults.md`) use the same rule grammar as `testkeeper serve --fault`:
//!
//! ```no_run
//! # async fn demo(server: testkeeper_server::embed::TestKeeper) {
//! // The next create under /locks commits but its reply is lost, and the connection drops.
//! server.drop_next_response("op=create,path=/locks/*").unwrap();
//! let id = server.add_fault("delay:ms=200,jitter=50,op=getData,prob=0.5").unwrap();
//! // ... run the client under test, then look at what fired:
//! for ev in server.fault_events() {
//!     println!("{} on {} {:?} (applied: {})", ev.kind, ev.op, ev.path, ev.applied);
//! }
//! server.remove_fault(id);
//! # }
//! ```
//!
//! # Layout
//! - this file: [`TestKeeper`]: start, stop/resume/outage, restart, crash, reset, shutdown, reads.
//! - `builder`: [`Builder`], the one-line start with options.
//! - `wait`: `await_sessions`, `await_node`, `await_no_node`, and [`WaitTimeout`].
//! - `faults`: fault rules and the one-shot helpers.
//! - `reads`: what a test reads and drives without the network (tree, digest, sessions,
//!   clock, ticks, snapshots, session expiry).

mod builder;
mod faults;
mod reads;
mod wait;

use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinHandle;

pub use builder::Builder;
pub use wait::{WaitTimeout, DEFAULT_WAIT};

use crate::clock::Clock;
use crate::config::{LogBackend, ServerConfig};
use crate::core::flavor::Flavor;
use crate::engine::{Engine, Shared};
use crate::http::HttpServer;
use crate::storage::Recovery;

/// Whether the server serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Up {
    Running,
    /// `stop`: shut down cleanly; `resume` serves again.
    Stopped,
    /// `crash`: stopped without a clean shutdown; `resume` (or `restart`) recovers.
    Crashed,
}

/// A running server.
pub struct TestKeeper {
    shared: Arc<Shared>,
    clock: Clock,
    addr: SocketAddr,
    stop: watch::Sender<bool>,
    tasks: Vec<JoinHandle<()>>,
    /// The admin HTTP endpoint, once started; it outlives `stop`, `restart` and `reset`.
    http: Option<HttpServer>,
    /// What the last start from a data directory recovered.
    recovery: Option<Recovery>,
    up: Up,
    /// How long the `await_*` helpers wait.
    wait: Duration,
}

fn storage_error(e: crate::storage::StorageError) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, e.to_string())
}

impl TestKeeper {
    /// A keeper-flavor server in memory on a free loopback port: the one-line start.
    ///
    /// # Errors
    /// When no loopback port can be bound.
    pub async fn start_default() -> io::Result<TestKeeper> {
        Self::builder().start().await
    }

    /// A [`Builder`] with the defaults of [`start_default`](Self::start_default): keeper
    /// flavor, in memory, 127.0.0.1 port 0.
    pub fn builder() -> Builder {
        Builder::new(Flavor::Keeper)
    }

    /// Binds `cfg.listen` and starts serving with the system clock; with `cfg.data_dir`, the
    /// state is first recovered from it.
    ///
    /// # Errors
    /// When the address cannot be bound, or the data directory cannot be recovered (the
    /// message names the file, the index and what differed).
    pub async fn start(cfg: ServerConfig) -> io::Result<TestKeeper> {
        Self::start_with_clock(cfg, Clock::System).await
    }

    /// Like [`start`](Self::start) with a chosen clock (a manual clock makes session expiry and
    /// node times fully test-controlled).
    ///
    /// # Errors
    /// As [`start`](Self::start).
    pub async fn start_with_clock(cfg: ServerConfig, clock: Clock) -> io::Result<TestKeeper> {
        let listener = TcpListener::bind(cfg.listen).await?;
        let addr = listener.local_addr()?;
        let mut cfg = cfg;
        cfg.listen = addr;
        let cfg = Arc::new(cfg);
        let (engine, recovery) = Engine::open(cfg.clone(), clock.clone()).map_err(storage_error)?;
        let shared = Shared::new(cfg, engine);
        let (stop, _) = watch::channel(false);
        let mut tk = TestKeeper {
            shared,
            clock,
            addr,
            stop,
            tasks: Vec::new(),
            http: None,
            recovery,
            up: Up::Running,
            wait: DEFAULT_WAIT,
        };
        tk.spawn(listener);
        Ok(tk)
    }

    fn spawn(&mut self, listener: TcpListener) {
        self.tasks = crate::net::serve(listener, &self.shared, &self.stop);
    }

    /// The bound address (the real port when started on port 0); it stays the same across
    /// `stop`/`resume` and `restart`.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `host:port`, as ZooKeeper clients take it.
    pub fn connect_string(&self) -> String {
        self.addr.to_string()
    }

    /// The configuration it runs with (`listen` holds the bound address).
    pub fn config(&self) -> &ServerConfig {
        &self.shared.cfg
    }

    /// Whether it serves (false between [`stop`](Self::stop) or [`crash`](Self::crash) and
    /// [`resume`](Self::resume)).
    pub fn is_running(&self) -> bool {
        self.up == Up::Running
    }

    /// Empties the tree and ends every session and connection, as a fresh server would be,
    /// without giving up the address: clients see their connection drop, and a resuming
    /// client (zookeeper flavor) learns its session expired. Fault rules, the fault log and
    /// the counters start over too (the seed stays, so `prob=` draws replay per test). With a
    /// data directory, the log and snapshots in it are deleted. Call it between tests.
    ///
    /// # Errors
    /// After a [`crash`](Self::crash) (restart first), or when a data directory cannot be
    /// emptied.
    pub async fn reset(&mut self) -> io::Result<()> {
        if self.up == Up::Crashed {
            return Err(io::Error::other("the server crashed: restart() it before reset()"));
        }
        // Replies to what was already proposed go out first, to the old connections.
        self.settled().await;
        self.recovery = self.shared.reset().map_err(storage_error)?;
        Ok(())
    }

    async fn stop_tasks(&mut self) {
        let _ = self.stop.send(true);
        for t in self.tasks.drain(..) {
            let _ = t.await;
        }
        // Connections notice the stop on their next poll; make sure none is left bound to a session.
        let mut e = self.shared.engine();
        let conns: Vec<u64> = e.conns.keys().copied().collect();
        for c in conns {
            e.conns.close(c);
            e.disconnect(c);
        }
    }

    /// Begins an outage: the listener closes (new connections are refused), every connection
    /// drops, and nothing expires while it lasts. [`resume`](Self::resume) ends it on the same
    /// address. In memory the tree and sessions wait as they are; with a data directory the
    /// server shuts down cleanly, as a stopped process would. The admin HTTP endpoint stays up
    /// (it is the test's control, not the server's). Stopping a stopped server does nothing.
    pub async fn stop(&mut self) {
        if self.up != Up::Running {
            return;
        }
        self.stop_tasks().await;
        if self.shared.cfg.data_dir.is_some() {
            self.shared.close();
        }
        self.up = Up::Stopped;
    }

    /// Ends an outage (after [`stop`](Self::stop) or [`crash`](Self::crash)): serves again on
    /// the same address. In memory after `stop`, sessions get their full timeouts again (as
    /// after a ZooKeeper restart), so clients that reconnect in time keep them; with a data
    /// directory, or after a crash, the state is recovered from disk. Fault rules carry over.
    /// Starting a running server does nothing.
    ///
    /// # Errors
    /// When the address cannot be bound again, or the data directory does not recover.
    pub async fn resume(&mut self) -> io::Result<()> {
        if self.up == Up::Running {
            return Ok(());
        }
        let (stop, _) = watch::channel(false);
        self.stop = stop;
        let listener = TcpListener::bind(self.addr).await?;
        let cfg = self.shared.cfg.clone();
        if cfg.data_dir.is_some() || self.up == Up::Crashed {
            let faults = self.shared.engine().faults.clone();
            let (mut engine, recovery) = Engine::open(cfg.clone(), self.clock.clone()).map_err(storage_error)?;
            engine.faults = faults;
            self.shared = Shared::new(cfg, engine);
            self.recovery = recovery;
            if let Some(http) = self.http.take() {
                let addr = http.addr();
                http.stop().await;
                self.http = Some(HttpServer::start(addr, self.shared.clone()).await?);
            }
        } else {
            self.shared.engine().restart_session_clocks();
        }
        self.up = Up::Running;
        self.spawn(listener);
        Ok(())
    }

    /// [`stop`](Self::stop) then [`resume`](Self::resume): stops serving and starts again on
    /// the same address. In memory the tree and sessions are kept (their timeouts restart);
    /// with a data directory the server shuts down cleanly and recovers from disk, as a
    /// restarted process would. After [`crash`](Self::crash), this is the recovery.
    ///
    /// # Errors
    /// As [`resume`](Self::resume).
    pub async fn restart(&mut self) -> io::Result<()> {
        self.stop().await;
        self.resume().await
    }

    /// An outage of `down`: [`stop`](Self::stop), wait, [`resume`](Self::resume).
    ///
    /// # Errors
    /// As [`resume`](Self::resume).
    pub async fn outage(&mut self, down: Duration) -> io::Result<()> {
        self.stop().await;
        tokio::time::sleep(down).await;
        self.resume().await
    }

    /// Stops serving at once, without a clean shutdown: what was not committed is never
    /// answered and the engine flushes nothing more (a snapshot being written still finishes:
    /// a crash just after it). With the simulated log backend, what was not synced is lost, as
    /// in a power cut; sled keeps what it had been given, since it writes its buffers when the
    /// database closes. In memory, everything is lost. Call [`restart`](Self::restart) to
    /// recover.
    pub async fn crash(&mut self) {
        if self.up == Up::Running {
            self.stop_tasks().await;
        }
        self.shared.abandon();
        if let LogBackend::Sim(disk) = &self.shared.cfg.log_backend {
            disk.crash(false);
        }
        self.up = Up::Crashed;
    }

    /// Stops serving and waits for the listener and timer (and the HTTP endpoint) to end; with
    /// a data directory, what was proposed is flushed and a snapshot being written finishes.
    pub async fn shutdown(mut self) {
        if let Some(http) = self.http.take() {
            http.stop().await;
        }
        if self.up == Up::Running {
            self.stop_tasks().await;
            self.shared.close();
        }
    }

    /// Starts the admin HTTP endpoint (`/ready`, `/metrics`, `/api/v1/commands/{4lw}`,
    /// `/api/v1/faults`, `/api/v1/sessions`, ...) on `addr`; port 0 picks a free port.
    /// Returns the bound address.
    ///
    /// # Errors
    /// When the address cannot be bound, or the endpoint is already running.
    pub async fn start_http(&mut self, addr: SocketAddr) -> io::Result<SocketAddr> {
        if let Some(h) = &self.http {
            return Err(io::Error::new(
                io::ErrorKind::AlreadyExists,
                format!("the HTTP endpoint already runs on {}", h.addr()),
            ));
        }
        let http = HttpServer::start(addr, self.shared.clone()).await?;
        let bound = http.addr();
        self.http = Some(http);
        Ok(bound)
    }

    /// The HTTP endpoint's address, if it runs.
    pub fn http_addr(&self) -> Option<SocketAddr> {
        self.http.as_ref().map(HttpServer::addr)
    }

    /// `http://IP:PORT` of the HTTP endpoint, if it runs.
    pub fn http_url(&self) -> Option<String> {
        self.http_addr().map(|a| format!("http://{a}"))
    }
}

impl Drop for TestKeeper {
    fn drop(&mut self) {
        let _ = self.stop.send(true);
    }
}

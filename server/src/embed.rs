//! The in-process API, in the spirit of Curator's `TestingServer` but instant: bind first
//! (port 0 is fine, no probe-then-bind race), then serve; expire sessions, restart (in memory
//! keeping the tree, with a data directory recovering from disk), crash, and read the digest,
//! all without touching the network. The engine itself is never handed out.
//!
//! ```no_run
//! # async fn demo() -> std::io::Result<()> {
//! use testkeeper_server::{config::ServerConfig, core::flavor::Flavor, embed::TestKeeper};
//! let mut cfg = ServerConfig::new(Flavor::Keeper);
//! cfg.listen = "127.0.0.1:0".parse().unwrap();
//! let server = TestKeeper::start(cfg).await?;
//! println!("connect to {}", server.connect_string());
//! server.shutdown().await;
//! # Ok(()) }
//! ```
//!
//! Faults (see `docs/faults.md`) use the same rule grammar as `testkeeper serve --fault`:
//!
//! ```no_run
//! # async fn demo(server: testkeeper_server::embed::TestKeeper) {
//! // The next create under /locks commits but its reply is lost, and the connection drops.
//! server.drop_next_response("op=create,path=/locks/*").unwrap();
//! let id = server.add_fault("delay:ms=200,op=getData,prob=0.5").unwrap();
//! // ... run the client under test, then look at what fired:
//! for ev in server.fault_events() {
//!     println!("{} on {} {:?} (applied: {})", ev.kind, ev.op, ev.path, ev.applied);
//! }
//! server.remove_fault(id);
//! # }
//! ```

use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::clock::Clock;
use crate::config::{LogBackend, ServerConfig};
use crate::engine::{Engine, Shared};
use crate::faults::{FaultEvent, RuleStatus};
use crate::http::HttpServer;
use crate::net::listener;
use crate::storage::Recovery;

/// A running server.
pub struct TestKeeper {
    shared: Arc<Shared>,
    clock: Clock,
    addr: SocketAddr,
    stop: watch::Sender<bool>,
    tasks: Vec<JoinHandle<()>>,
    /// The admin HTTP endpoint, once started; it outlives `restart`.
    http: Option<HttpServer>,
    /// What the last start from a data directory recovered.
    recovery: Option<Recovery>,
    /// Stopped by `crash`, waiting for `restart`.
    down: bool,
}

fn storage_error(e: crate::storage::StorageError) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, e.to_string())
}

impl TestKeeper {
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
        let mut tk = TestKeeper { shared, clock, addr, stop, tasks: Vec::new(), http: None, recovery, down: false };
        tk.spawn(listener);
        Ok(tk)
    }

    fn spawn(&mut self, listener: TcpListener) {
        let rx = self.stop.subscribe();
        self.tasks.push(tokio::spawn(listener::serve(listener, self.shared.clone(), rx)));
        let shared = self.shared.clone();
        let mut rx = self.stop.subscribe();
        let tick = Duration::from_millis(self.shared.cfg.tick_ms.max(1));
        self.tasks.push(tokio::spawn(async move {
            let mut interval = tokio::time::interval(tick);
            loop {
                tokio::select! {
                    _ = interval.tick() => shared.engine().tick(),
                    _ = rx.changed() => return,
                }
            }
        }));
    }

    /// The bound address (the real port when started on port 0).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `host:port`, as ZooKeeper clients take it.
    pub fn connect_string(&self) -> String {
        self.addr.to_string()
    }

    /// What the last start recovered from the data directory (`None` in memory).
    pub fn recovery(&self) -> Option<&Recovery> {
        self.recovery.as_ref()
    }

    /// Expires a session now, as if its timeout had passed: its end goes through the log.
    /// Returns whether it was live. In memory it has happened when this returns; with a data
    /// directory, once the log has flushed it (see [`settled`](Self::settled)).
    pub fn expire_session(&self, id: i64) -> bool {
        self.shared.engine().end_session(id)
    }

    /// Waits until every entry proposed so far has committed (at once in memory; after the
    /// flush that covers it with a data directory).
    pub async fn settled(&self) {
        while self.shared.engine().has_uncommitted() {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    }

    /// Ids of the live sessions, ordered.
    pub fn sessions(&self) -> Vec<i64> {
        let mut v: Vec<i64> = self.shared.engine().sessions.keys().copied().collect();
        v.sort_unstable();
        v
    }

    /// The tree digest (Keeper V5 formula), as `mntr` reports it.
    pub fn digest(&self) -> u64 {
        self.shared.engine().state().digest()
    }

    /// The digest recomputed from every node (to check the incremental one).
    pub fn recompute_digest(&self) -> u64 {
        self.shared.engine().state().tree().recompute_digest()
    }

    /// Number of znodes, system nodes included.
    pub fn node_count(&self) -> usize {
        self.shared.engine().state().tree().len()
    }

    /// Index of the last committed log entry.
    pub fn last_index(&self) -> u64 {
        self.shared.engine().state().last_index()
    }

    /// Registered watches.
    pub fn watch_count(&self) -> usize {
        self.shared.engine().watches.count()
    }

    /// The server's clock (advance a manual clock to drive session expiry).
    pub fn clock(&self) -> Clock {
        self.clock.clone()
    }

    /// Runs the periodic work (expiry, container/TTL collection) now.
    pub fn tick(&self) {
        self.shared.engine().tick();
    }

    /// Starts a snapshot now (as `csnp` does); returns its log index, or `None` in memory or
    /// while one is being written.
    pub fn snapshot(&self) -> Option<u64> {
        self.shared.engine().request_snapshot()
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
            e.close_conn(c);
            e.disconnect(c);
        }
    }

    /// Stops serving and starts again on the same address. In memory the tree and sessions are
    /// kept (their timeouts restart, as after a ZooKeeper restart); with a data directory the
    /// server shuts down cleanly and recovers from disk, as a restarted process would. After
    /// [`crash`](Self::crash), this is the recovery.
    ///
    /// # Errors
    /// When the address cannot be bound again, or the data directory does not recover.
    pub async fn restart(&mut self) -> io::Result<()> {
        if !self.down {
            self.stop_tasks().await;
        }
        let (stop, _) = watch::channel(false);
        self.stop = stop;
        let listener = TcpListener::bind(self.addr).await?;
        let cfg = self.shared.cfg.clone();
        if cfg.data_dir.is_some() || self.down {
            if !self.down {
                self.shared.close();
            }
            let (engine, recovery) = Engine::open(cfg.clone(), self.clock.clone()).map_err(storage_error)?;
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
        self.down = false;
        self.spawn(listener);
        Ok(())
    }

    /// Stops serving at once, without a clean shutdown: nothing more is flushed, no snapshot
    /// is finished. With the simulated log backend, what was not synced is lost, as in a
    /// power cut; sled keeps what it had written. In memory, everything is lost. Call
    /// [`restart`](Self::restart) to recover.
    pub async fn crash(&mut self) {
        self.stop_tasks().await;
        self.shared.abandon();
        if let LogBackend::Sim(disk) = &self.shared.cfg.log_backend {
            disk.crash(false);
        }
        self.down = true;
    }

    /// Stops serving and waits for the listener and timer (and the HTTP endpoint) to end; with
    /// a data directory, what was proposed is flushed and a snapshot being written finishes.
    pub async fn shutdown(mut self) {
        if let Some(http) = self.http.take() {
            http.stop().await;
        }
        if !self.down {
            self.stop_tasks().await;
            self.shared.close();
        }
    }

    /// Starts the admin HTTP endpoint (`/ready`, `/metrics`, `/api/v1/commands/{4lw}`,
    /// `/api/v1/faults`) on `addr`; port 0 picks a free port. Returns the bound address.
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

    /// Adds a fault rule (`KIND[:key=value,...]`, see `docs/faults.md`); returns its id.
    ///
    /// # Errors
    /// The parse error, naming the bad kind, key or value.
    pub fn add_fault(&self, rule: &str) -> Result<u64, String> {
        self.shared.engine().faults.add(rule).map_err(|e| e.to_string())
    }

    /// Removes a fault rule; false when no rule has that id.
    pub fn remove_fault(&self, id: u64) -> bool {
        self.shared.engine().faults.remove(id)
    }

    /// Removes every fault rule (the event log stays).
    pub fn clear_faults(&self) {
        self.shared.engine().faults.clear();
    }

    /// The fault rules with their match and firing counts, by id.
    pub fn fault_rules(&self) -> Vec<RuleStatus> {
        self.shared.engine().faults.rules()
    }

    /// The fired faults still in the (bounded) log, oldest first.
    pub fn fault_events(&self) -> Vec<FaultEvent> {
        self.shared.engine().faults.events()
    }

    /// The next request matching `matcher` (filters such as `op=create,path=/locks/*`, or "" for
    /// any) is applied, its reply dropped, and its connection closed. Returns the rule id.
    ///
    /// # Errors
    /// A bad matcher.
    pub fn drop_next_response(&self, matcher: &str) -> Result<u64, String> {
        self.add_fault(&one_shot("drop-response", matcher))
    }

    /// The next request matching `matcher` is not applied, and its connection is closed.
    ///
    /// # Errors
    /// A bad matcher.
    pub fn drop_next_request(&self, matcher: &str) -> Result<u64, String> {
        self.add_fault(&one_shot("drop-request", matcher))
    }

    /// The next request matching `matcher` is not applied and fails with error `code`
    /// (`ZkError::code()`, e.g. -4 or -112).
    ///
    /// # Errors
    /// A bad matcher, or code 0.
    pub fn fail_next(&self, matcher: &str, code: i32) -> Result<u64, String> {
        self.add_fault(&one_shot(&format!("error:code={code}"), matcher))
    }

    /// The reply to the next request matching `matcher` (and every later reply on its
    /// connection) is held back for `delay`.
    ///
    /// # Errors
    /// A bad matcher.
    pub fn delay_next(&self, matcher: &str, delay: Duration) -> Result<u64, String> {
        self.add_fault(&one_shot(&format!("delay:ms={}", delay.as_millis()), matcher))
    }

    /// The session of the next request matching `matcher` expires instead of the request.
    ///
    /// # Errors
    /// A bad matcher.
    pub fn expire_next(&self, matcher: &str) -> Result<u64, String> {
        self.add_fault(&one_shot("expire-session", matcher))
    }
}

/// `KIND[:params]` plus the caller's filters plus `count=1`.
fn one_shot(kind: &str, matcher: &str) -> String {
    let sep = if kind.contains(':') { "," } else { ":" };
    match matcher.trim() {
        "" => format!("{kind}{sep}count=1"),
        m => format!("{kind}{sep}{m},count=1"),
    }
}

impl Drop for TestKeeper {
    fn drop(&mut self) {
        let _ = self.stop.send(true);
    }
}

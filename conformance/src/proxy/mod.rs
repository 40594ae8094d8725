//! A ZooKeeper-wire proxy (`testkeeper proxy`): an application (a ClickHouse server) talks to
//! it instead of its Keeper; every frame goes to the upstream and the upstream's answers come
//! back unchanged. With an oracle, each request is also sent to the oracle's session for that
//! client connection, and every difference in codes, data, normalized stats, children, multi
//! results, handshakes and watch events is flagged as a [`Divergence`] (zetcd's `xchk`, but
//! flavor-aware through the conformance suite's known-differences table, and multi-aware).
//! With a recorder, the traffic is written as a recording `replay` plays back.
//!
//! # Layout
//! - this file: [`Proxy`] (listen, accept, shut down) and [`Divergence`].
//! - `conn`: one client connection: byte-exact forwarding, decoding on the way.
//! - `checker`: the serial task that labels, records and cross-checks with the oracle.
//! - `label`: zxids and session ids named so two servers' replies compare.
//! - `record`: the recording format.

mod checker;
mod conn;
pub mod label;
pub mod record;

use std::fmt;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use serde::Serialize;
use tokio::net::TcpListener;
use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;

use crate::diff::KeyDiff;
pub use checker::event_text;
use checker::CheckerConfig;
pub use record::{Meta, Recorder};

/// One reply (or handshake, or a connection's events) where the oracle answered otherwise.
#[derive(Debug, Clone, Serialize)]
pub struct Divergence {
    /// The client connection, numbered from 1 in accept order.
    pub conn: u64,
    /// The request's position among every answered request (0 for a handshake).
    pub seq: u64,
    /// The request in the catalogue's text form.
    pub op: String,
    pub keys: Vec<KeyDiff>,
}

impl Divergence {
    /// One line naming the connection, the request and each differing key, the two sides
    /// called `a` and `b` (`upstream`/`oracle`, `recorded`/`replayed`).
    pub fn render(&self, what: &str, a: &str, b: &str) -> String {
        let mut out = format!("{what}: connection {} request {} `{}`:", self.conn, self.seq, self.op);
        for k in &self.keys {
            out.push_str(&format!(
                " {}: {a} {} / {b} {};",
                k.key,
                KeyDiff::show(&k.target),
                KeyDiff::show(&k.reference)
            ));
        }
        out
    }
}

impl fmt::Display for Divergence {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.render("divergence", "upstream", "oracle"))
    }
}

/// The divergence between two sides' normalized replies to one request, unless they agree
/// or every difference is table-listed (when the flavors differ).
pub fn divergence(
    conn: u64,
    seq: u64,
    (op, path): (&str, Option<&str>),
    a: &serde_json::Value,
    b: &serde_json::Value,
    flavors_differ: bool,
) -> Option<Divergence> {
    // What conform masks (the root's counters, quotas, the ensemble config: they depend on
    // who used the server before, not on the requests) is masked here too, so a proxy in
    // front of a server that has been used reports no false divergence.
    let (mut a, mut b) = (a.clone(), b.clone());
    if let Some(p) = path {
        crate::transcript::mask_foreign_at(p, &mut a);
        crate::transcript::mask_foreign_at(p, &mut b);
    }
    let (a, b) = (&a, &b);
    let line = |result: &serde_json::Value| crate::transcript::Line {
        scenario: "proxy".into(),
        step: 0,
        session: format!("c{conn}"),
        op: op.to_string(),
        result: result.clone(),
        events: Vec::new(),
    };
    let d = crate::diff::diff(None, &[line(a)], &[line(b)], flavors_differ).into_iter().next()?;
    (!d.is_expected()).then(|| Divergence { conn, seq, op: op.to_string(), keys: d.keys })
}

/// What to proxy to and what to check against.
pub struct ProxyConfig {
    pub listen: SocketAddr,
    pub upstream: SocketAddr,
    pub oracle: Option<SocketAddr>,
    /// The oracle's flavor differs from the upstream's: table-listed differences are not flagged.
    pub flavors_differ: bool,
    pub recorder: Option<Recorder>,
    /// Called for each divergence as it is found.
    pub on_divergence: Box<dyn Fn(&Divergence) + Send>,
}

/// A running proxy.
pub struct Proxy {
    addr: SocketAddr,
    stop: watch::Sender<bool>,
    accept: JoinHandle<()>,
    checker: JoinHandle<()>,
    divergences: Arc<Mutex<Vec<Divergence>>>,
    connections: Arc<AtomicU64>,
}

impl Proxy {
    /// Binds `cfg.listen` and starts proxying.
    ///
    /// # Errors
    /// The address cannot be bound.
    pub async fn start(cfg: ProxyConfig) -> std::io::Result<Proxy> {
        let listener = TcpListener::bind(cfg.listen).await?;
        let addr = listener.local_addr()?;
        let divergences = Arc::new(Mutex::new(Vec::new()));
        let (tx, rx) = mpsc::unbounded_channel();
        let checker_cfg = CheckerConfig {
            oracle: cfg.oracle,
            flavors_differ: cfg.flavors_differ,
            recorder: cfg.recorder,
            divergences: divergences.clone(),
            on_divergence: cfg.on_divergence,
        };
        let checker = tokio::spawn(checker::run(checker_cfg, rx));
        let (stop, mut stopped) = watch::channel(false);
        let connections = Arc::new(AtomicU64::new(0));
        let count = connections.clone();
        let upstream = cfg.upstream;
        let accept = tokio::spawn(async move {
            loop {
                let (sock, peer) = tokio::select! {
                    r = listener.accept() => match r {
                        Ok(v) => v,
                        Err(e) => {
                            tracing::warn!(%e, "proxy accept failed");
                            continue;
                        }
                    },
                    _ = stopped.changed() => return,
                };
                let conn = count.fetch_add(1, Ordering::Relaxed) + 1;
                let tx = tx.clone();
                tokio::spawn(async move {
                    if let Err(e) = conn::serve(sock, upstream, conn, tx).await {
                        tracing::debug!(%peer, conn, %e, "proxied connection ended");
                    }
                });
            }
        });
        Ok(Proxy { addr, stop, accept, checker, divergences, connections })
    }

    /// The bound address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Divergences found so far.
    pub fn divergences(&self) -> Vec<Divergence> {
        self.divergences.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clone()
    }

    /// Client connections accepted so far.
    pub fn connections(&self) -> u64 {
        self.connections.load(Ordering::Relaxed)
    }

    /// Stops accepting; connections still open keep being served until they end, and the
    /// checker finishes what it was given. Returns every divergence.
    pub async fn shutdown(self) -> Vec<Divergence> {
        let _ = self.stop.send(true);
        let _ = self.accept.await;
        // The accept loop held a sender; the checker ends once every connection's does.
        let _ = tokio::time::timeout(std::time::Duration::from_secs(5), self.checker).await;
        let out = self.divergences.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clone();
        out
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::divergence;

    /// A server that has been used has a root with another cversion than a fresh oracle (the
    /// vendor's report: `exists /: cversion upstream 1 / oracle -1`); conform masks that, and so
    /// does the proxy, but only at the root: the same difference elsewhere is a divergence.
    #[test]
    fn the_roots_deployment_counters_are_masked_as_conform_masks_them() {
        let stat = |cversion: i64| json!({"stat": {"cversion": cversion, "numChildren": 3, "version": 0}});
        assert!(divergence(1, 1, ("exists /", Some("/")), &stat(1), &stat(-1), false).is_none());
        let d =
            divergence(1, 1, ("exists /a", Some("/a")), &stat(1), &stat(-1), false).expect("not masked off the root");
        assert!(d.keys.iter().any(|k| k.key.contains("cversion")), "{:?}", d.keys);
        let v = |version: i64| json!({"stat": {"cversion": 0, "version": version}});
        assert!(
            divergence(1, 1, ("exists /", Some("/")), &v(1), &v(2), false).is_some(),
            "only the counters are masked"
        );
    }
}

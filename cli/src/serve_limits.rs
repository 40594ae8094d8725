//! `testkeeper serve`'s connection flags: how many connections may be open (in total and per
//! client IP), how long one may take over its handshake or sit silent without a session, and
//! how many reply bytes it may leave unread before the server stops reading it. Defaults follow
//! ZooKeeper (`maxClientCnxns` 60, `sessionlessCnxnTimeout` 10 s), but the keeper flavor has
//! no per-IP cap, as Keeper; 0 turns a bound off.

use clap::Args;
use testkeeper_server::config::{ConnLimits, ServerConfig};

/// Connection-limit flags of `serve`.
#[derive(Args, Debug, Clone)]
pub struct LimitArgs {
    /// Open client connections at most, from all addresses (0: no limit); an extra one is
    /// closed on accept, with a log line.
    #[arg(long, value_name = "N", default_value_t = ConnLimits::default().max_connections)]
    pub max_connections: usize,
    /// Open client connections from one IP address at most (0: no limit); an extra one is
    /// closed on accept, with a log line naming this flag. Default: 60 for the zookeeper flavor
    /// (ZooKeeper's maxClientCnxns), none for the keeper flavor (Keeper has no such cap).
    #[arg(long, value_name = "N")]
    pub max_connections_per_ip: Option<usize>,
    /// A connection that has not sent a complete handshake (or a four-letter word) this long
    /// after accept is closed, however it trickles its bytes, ms (0: never).
    #[arg(long, value_name = "MS", default_value_t = ConnLimits::default().handshake_timeout_ms)]
    pub handshake_timeout_ms: u64,
    /// A connection without a session that sends nothing for this long is closed, ms
    /// (ZooKeeper's zookeeper.nio.sessionlessCnxnTimeout; 0: never).
    #[arg(long, value_name = "MS", default_value_t = ConnLimits::default().sessionless_idle_ms)]
    pub sessionless_idle_ms: u64,
    /// Reply bytes one connection may have queued and unwritten before the server stops
    /// reading its requests, until the client reads (0: no limit).
    #[arg(long, value_name = "BYTES", default_value_t = ConnLimits::default().reply_queue_bytes)]
    pub reply_queue_bytes: usize,
}

impl LimitArgs {
    /// Writes these flags into `cfg`.
    pub fn apply(&self, cfg: &mut ServerConfig) {
        cfg.limits = ConnLimits {
            max_connections: self.max_connections,
            max_connections_per_ip: self.max_connections_per_ip.unwrap_or(cfg.limits.max_connections_per_ip),
            handshake_timeout_ms: self.handshake_timeout_ms,
            sessionless_idle_ms: self.sessionless_idle_ms,
            reply_queue_bytes: self.reply_queue_bytes,
        };
    }
}

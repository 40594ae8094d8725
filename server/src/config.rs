//! Server configuration: everything `testkeeper serve` flags and the embedding API can set.

use std::net::SocketAddr;

use crate::core::flavor::Flavor;
use crate::features::FeatureFlags;

/// How the server behaves; `ServerConfig::new(flavor)` gives each flavor's defaults.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// Address to listen on; port 0 picks a free port.
    pub listen: SocketAddr,
    pub flavor: Flavor,
    /// Largest accepted frame (ZooKeeper `jute.maxbuffer`: 0xfffff).
    pub max_frame: usize,
    /// Session timeout bounds and the default for a client that asks for 0.
    pub min_session_timeout_ms: i32,
    pub max_session_timeout_ms: i32,
    pub default_session_timeout_ms: i32,
    /// Four-letter words that are answered; `None` = all.
    pub four_letter_words: Option<Vec<String>>,
    /// `super:<base64 sha1>`: a digest that authenticates as the superuser.
    pub super_digest: Option<String>,
    /// Flags advertised in `/keeper/feature_flags` (keeper flavor).
    pub feature_flags: FeatureFlags,
    /// Keep the tree digest (on by default).
    pub digest_enabled: bool,
    /// Recompute the whole digest after every entry and crash on a mismatch (debug).
    pub digest_check_on_commit: bool,
    /// How often session expiry and container/TTL collection run.
    pub tick_ms: u64,
    /// How often empty containers and expired TTL nodes are collected.
    pub container_check_ms: u64,
    /// Log entries kept in memory for replay checks (0 = none).
    pub retain_log: usize,
    /// Seed for everything random (session passwords; faults later).
    pub seed: u64,
}

impl ServerConfig {
    /// Defaults of `flavor`, listening on 127.0.0.1:9181.
    pub fn new(flavor: Flavor) -> ServerConfig {
        let keeper = flavor == Flavor::Keeper;
        ServerConfig {
            listen: "127.0.0.1:9181".parse().expect("static address"),
            flavor,
            max_frame: testkeeper_wire::frame::DEFAULT_MAX_FRAME,
            min_session_timeout_ms: if keeper { 10_000 } else { 4_000 },
            max_session_timeout_ms: if keeper { 100_000 } else { 40_000 },
            default_session_timeout_ms: if keeper { 30_000 } else { 4_000 },
            four_letter_words: if keeper {
                Some(KEEPER_DEFAULT_4LW.split(',').map(String::from).collect())
            } else {
                None
            },
            super_digest: None,
            feature_flags: FeatureFlags::keeper_default(),
            digest_enabled: true,
            digest_check_on_commit: false,
            tick_ms: 50,
            container_check_ms: 1_000,
            retain_log: 0,
            seed: 0,
        }
    }

    /// Negotiates a client's requested session timeout.
    pub fn negotiate_timeout(&self, requested: i32) -> i32 {
        let t = if requested == 0 { self.default_session_timeout_ms } else { requested };
        t.clamp(self.min_session_timeout_ms, self.max_session_timeout_ms)
    }

    /// Whether a four-letter word is allowed.
    pub fn allows_4lw(&self, word: &str) -> bool {
        self.four_letter_words.as_ref().is_none_or(|l| l.iter().any(|w| w == word || w == "*"))
    }
}

/// ClickHouse Keeper's default `four_letter_word_allow_list` (CoordinationSettings.cpp).
pub const KEEPER_DEFAULT_4LW: &str =
    "conf,cons,crst,envi,ruok,srst,srvr,stat,wchs,dirs,mntr,isro,rcvr,apiv,csnp,lgif,rqld,rclc,clrs,ftfl,ydld,pfev";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timeouts_clamp_per_flavor() {
        let k = ServerConfig::new(Flavor::Keeper);
        assert_eq!(
            (k.negotiate_timeout(5000), k.negotiate_timeout(60000), k.negotiate_timeout(0)),
            (10000, 60000, 30000)
        );
        let z = ServerConfig::new(Flavor::Zookeeper);
        assert_eq!(
            (z.negotiate_timeout(5000), z.negotiate_timeout(60000), z.negotiate_timeout(0)),
            (5000, 40000, 4000)
        );
        assert!(k.allows_4lw("ruok") && !k.allows_4lw("dump") && z.allows_4lw("dump"));
    }
}

//! How many runtime threads `serve` takes when `--threads` does not say: tokio's default (one
//! per core) for a standalone server or a node whose peers run elsewhere, and the cores
//! divided among the members for a cluster whose members all run on this host (loopback
//! addresses), as tests and `bench --cluster` run one.
//!
//! Three processes that each run a thread per core on one host keep more threads runnable
//! than there are cores: a replicated write then crosses threads (and on a virtual machine,
//! idle virtual CPUs) that only wait for one another. docs/cluster.md, "Threads", has the
//! figures.

use std::collections::BTreeMap;
use std::net::IpAddr;

use crate::keeper_xml;
use crate::serve_cluster::ClusterArgs;
use testkeeper_server::cluster::NodeId;

/// The default worker count for these cluster flags, or `None` for tokio's own (also when
/// `TOKIO_WORKER_THREADS` is set: tokio reads it, and the user's word wins).
pub fn default_threads(c: &ClusterArgs) -> Option<usize> {
    if std::env::var_os("TOKIO_WORKER_THREADS").is_some() {
        return None;
    }
    // A file that does not load is reported by `serve` itself, with its reason; here it
    // only means no opinion.
    let peers = match (&c.peers, &c.cluster_config) {
        (Some(p), _) => p.clone(),
        (None, Some(path)) => keeper_xml::load(path).ok()?.peers,
        (None, None) => return None,
    };
    let cores = std::thread::available_parallelism().ok()?.get();
    shared_cores(cores, &peers)
}

/// `cores / members` (at least 1) when every member of a cluster of two or more is on this
/// host; `None` otherwise.
fn shared_cores(cores: usize, peers: &BTreeMap<NodeId, String>) -> Option<usize> {
    let members = peers.len();
    if members < 2 || !peers.values().all(|a| on_this_host(a)) {
        return None;
    }
    Some((cores / members).max(1))
}

/// Whether `HOST:PORT` names a loopback address (`localhost`, 127.0.0.0/8, `[::1]`). Other
/// names are not resolved here: they may be this host, but need not be.
fn on_this_host(addr: &str) -> bool {
    let Some((host, _)) = addr.rsplit_once(':') else { return false };
    let host = host.trim_start_matches('[').trim_end_matches(']');
    host.eq_ignore_ascii_case("localhost") || host.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn peers(addrs: &[&str]) -> BTreeMap<NodeId, String> {
        addrs.iter().enumerate().map(|(i, a)| (i as NodeId + 1, a.to_string())).collect()
    }

    #[test]
    fn members_on_loopback_share_the_cores() {
        let three = peers(&["127.0.0.1:1", "127.0.0.2:2", "localhost:3"]);
        assert_eq!(shared_cores(2, &three), Some(1));
        assert_eq!(shared_cores(16, &three), Some(5));
        assert_eq!(shared_cores(8, &peers(&["[::1]:1", "127.0.0.1:2"])), Some(4));
    }

    #[test]
    fn a_member_elsewhere_or_a_lone_node_keeps_tokios_default() {
        assert_eq!(shared_cores(2, &peers(&["127.0.0.1:1", "10.0.0.2:2", "127.0.0.1:3"])), None);
        assert_eq!(shared_cores(2, &peers(&["127.0.0.1:1", "keeper2:2", "127.0.0.1:3"])), None);
        assert_eq!(shared_cores(2, &peers(&["127.0.0.1:1"])), None);
    }
}

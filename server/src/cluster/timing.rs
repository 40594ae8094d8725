//! The raft-rs configuration of one node, and above all its election timeout.
//!
//! raft-rs draws each election timeout from an unseeded generator, so a run could not replay.
//! Each node gets a one-tick range instead (a fixed timeout), at an offset that is distinct per
//! node and ordered by the run's seed. Distinct is the point: two nodes with the same timeout
//! whose ticks line up stand for election on the same tick, each votes for itself, and they do
//! it again on the next timeout, for ever (a 3-process cluster once acknowledged no write for
//! 60 s after its leader was killed: the offsets were drawn from each node's seed modulo 3,
//! and nodes 1 and 2 always drew the same one, the seed step being a multiple of 3). One tick
//! apart, the first to stand is refused by the others, which still count the old leader's last
//! heartbeat within their own timeout (check-quorum's lease), and the next one wins.

use raft::Config;

use super::{ClusterConfig, NODE_SEED_STEP};

/// Ticks node `cfg.id` adds to `election_ticks`: distinct for the ids of a cluster of up to
/// `election_ticks / 2` members (at least 3), in an order drawn from the run's seed.
pub fn election_offset(cfg: &ClusterConfig) -> usize {
    let span = (cfg.election_ticks / 2).max(3) as u64;
    let run = cfg.seed.wrapping_sub(cfg.id.wrapping_mul(NODE_SEED_STEP));
    ((run % span + cfg.id) % span) as usize
}

/// Ticks after start at which a node of a fresh cluster (no term, no entries) stands for
/// election without waiting for its timeout: the first node in the election order does, at
/// start and twice more (a peer started later missed the first call); the others wait. Only
/// one node stands early, so the early election is not split, and pre-vote keeps a fresh node
/// joining a cluster that has a leader (an in-memory restart) from disturbing it.
pub fn early_campaigns(cfg: &ClusterConfig) -> Vec<u64> {
    let run = cfg.seed.wrapping_sub(cfg.id.wrapping_mul(NODE_SEED_STEP));
    let offset_of = |id: u64| {
        let mut c = cfg.clone();
        (c.id, c.seed) = (id, ClusterConfig::node_seed(run, id));
        election_offset(&c)
    };
    let mine = election_offset(cfg);
    let first = cfg.peers.keys().all(|p| *p == cfg.id || offset_of(*p) > mine);
    if first {
        vec![0, 2, 4]
    } else {
        Vec::new()
    }
}

/// Bytes of entries in one append (raft-rs's `max_size_per_msg`; one entry larger than this
/// still goes alone).
pub const MAX_APPEND_BYTES: u64 = 64 * 1024;
/// Appends sent to a follower and not acknowledged yet (raft-rs's `max_inflight_msgs`). With
/// [`MAX_APPEND_BYTES`] this bounds what a leader has in flight to one follower to about 4 MiB.
/// It was 256 appends of 1 MiB: a follower back from a pause made the leader build and queue
/// 256 MiB on one acknowledgement, its driver stood still for longer than an election timeout,
/// and the healthy follower elected itself (docs/cluster.md, "A follower far behind").
pub const MAX_APPENDS_IN_FLIGHT: usize = 64;

/// raft-rs's configuration for node `cfg.id`, whose state machine is at `applied`.
pub fn raft_config(cfg: &ClusterConfig, applied: u64) -> Config {
    let e = cfg.election_ticks + election_offset(cfg);
    Config {
        id: cfg.id,
        election_tick: e,
        heartbeat_tick: cfg.heartbeat_ticks,
        min_election_tick: e,
        max_election_tick: e + 1,
        applied,
        check_quorum: true,
        pre_vote: true,
        max_size_per_msg: MAX_APPEND_BYTES,
        max_inflight_msgs: MAX_APPENDS_IN_FLIGHT,
        ..Config::default()
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use raft::eraftpb::ConfState;
    use raft::storage::MemStorage;
    use raft::{RawNode, StateRole};

    use super::*;

    fn node_cfg(run: u64, id: u64) -> ClusterConfig {
        let mut c = ClusterConfig::new(id, BTreeMap::new());
        c.seed = ClusterConfig::node_seed(run, id);
        c
    }

    #[test]
    fn election_offsets_differ_between_the_nodes_of_a_run_whatever_its_seed() {
        for run in (0..2000).chain([u64::MAX, u64::MAX / 3]) {
            let o: Vec<usize> = (1..=3).map(|id| election_offset(&node_cfg(run, id))).collect();
            assert!(o.iter().all(|x| *x < 5), "{o:?}");
            assert!(o[0] != o[1] && o[1] != o[2] && o[0] != o[2], "seed {run}: {o:?}");
        }
    }

    #[test]
    fn exactly_one_node_of_a_fresh_cluster_stands_early() {
        for run in 0..500 {
            let peers: BTreeMap<u64, String> = (1..=3).map(|id| (id, String::new())).collect();
            let early: Vec<u64> = (1..=3)
                .filter(|id| {
                    let mut c = node_cfg(run, *id);
                    c.peers = peers.clone();
                    !early_campaigns(&c).is_empty()
                })
                .collect();
            assert_eq!(early.len(), 1, "seed {run}: {early:?}");
        }
    }

    /// Three fresh nodes ticked in lock-step, every message delivered before the next tick:
    /// how many ticks until one leads, if one does within `ticks`.
    fn lock_step_election(configs: &[Config], ticks: usize) -> Option<usize> {
        let logger = crate::cluster::logger::logger(0);
        let mut nodes: Vec<RawNode<MemStorage>> = configs
            .iter()
            .map(|c| {
                let store = MemStorage::new_with_conf_state(ConfState::from((vec![1, 2, 3], vec![])));
                RawNode::new(c, store, &logger).expect("a valid configuration")
            })
            .collect();
        for tick in 1..=ticks {
            for n in &mut nodes {
                n.tick();
            }
            loop {
                let mut msgs = Vec::new();
                for n in &mut nodes {
                    if !n.has_ready() {
                        continue;
                    }
                    let mut rd = n.ready();
                    msgs.extend(rd.take_messages());
                    let mut store = n.mut_store().wl();
                    store.append(rd.entries()).expect("append");
                    if let Some(hs) = rd.hs() {
                        store.set_hardstate(hs.clone());
                    }
                    drop(store);
                    msgs.extend(rd.take_persisted_messages());
                    let mut light = n.advance(rd);
                    msgs.extend(light.take_messages());
                    n.advance_apply();
                }
                if msgs.is_empty() {
                    break;
                }
                for m in msgs {
                    let to = m.to as usize - 1;
                    let _ = nodes[to].step(m);
                }
            }
            if nodes.iter().any(|n| n.raft.state == StateRole::Leader) {
                return Some(tick);
            }
        }
        None
    }

    #[test]
    fn nodes_whose_ticks_line_up_elect_with_distinct_timeouts_and_never_with_equal_ones() {
        let run = 7;
        let distinct: Vec<Config> = (1..=3).map(|id| raft_config(&node_cfg(run, id), 0)).collect();
        let first = distinct.iter().map(|c| c.election_tick).min().expect("three nodes");
        let elected = lock_step_election(&distinct, 200).expect("distinct timeouts elect a leader");
        assert!(elected <= first + 1, "elected at tick {elected}, the first timeout is {first}");
        // The hazard itself: equal timeouts split the vote on every timeout, for ever.
        let equal: Vec<Config> = distinct
            .iter()
            .map(|c| Config { election_tick: 10, min_election_tick: 10, max_election_tick: 11, ..c.clone() })
            .collect();
        assert_eq!(lock_step_election(&equal, 200), None, "equal timeouts in lock-step never elect");
    }
}

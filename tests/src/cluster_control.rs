//! What a test does to any 3-node cluster, whatever runs it (an embedded testkeeper cluster,
//! `testkeeper serve` processes, or an Apache ZooKeeper ensemble): find the leader, kill and
//! restart a node, read each node's `mntr`; and the check that every node's digest is the same
//! at the same applied index, sampled as often as the test likes.

use std::collections::{BTreeMap, HashMap};
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use crate::net::four_letter_word;

/// A cluster a test can kill nodes of.
pub trait ClusterControl {
    /// Node ids.
    fn ids(&self) -> Vec<u64>;
    /// Node `id`'s client address (kept across restarts).
    fn addr(&self, id: u64) -> SocketAddr;
    /// Whether node `id` runs (the test has not killed it).
    fn is_running(&mut self, id: u64) -> bool;
    /// Waits until every running node knows one leader, and names it.
    ///
    /// # Errors
    /// None within `within`; the message says what each node reported.
    fn await_leader(&mut self, within: Duration) -> Result<u64, String>;
    /// Kills node `id` at once.
    fn kill(&mut self, id: u64);
    /// Starts node `id` again on its address.
    ///
    /// # Errors
    /// It does not come up.
    fn restart(&mut self, id: u64) -> Result<(), String>;
    /// Every node's state and log tail, for failure messages.
    fn describe(&mut self) -> String;

    /// The connect string, nodes in `order`.
    fn connect_string_in(&self, order: &[u64]) -> String {
        order.iter().map(|i| self.addr(*i).to_string()).collect::<Vec<_>>().join(",")
    }
}

/// Node `addr`'s `mntr` as `key -> value`, or `None` if it does not answer with one.
pub fn mntr(addr: SocketAddr) -> Option<BTreeMap<String, String>> {
    let text = four_letter_word(addr, "mntr", Duration::from_secs(2)).ok()?;
    let map: BTreeMap<String, String> = text
        .lines()
        .filter_map(|l| l.split_once('\t'))
        .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
        .collect();
    (!map.is_empty()).then_some(map)
}

/// One node's digest at an applied index, from one `mntr` answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DigestAt {
    pub node: u64,
    pub index: u64,
    pub digest: u64,
}

/// `zk_last_applied_index` and `zk_nodes_digest` of one node (testkeeper only: ZooKeeper's
/// `mntr` has neither).
pub fn digest_at(node: u64, addr: SocketAddr) -> Option<DigestAt> {
    let m = mntr(addr)?;
    Some(DigestAt {
        node,
        index: m.get("zk_last_applied_index")?.parse().ok()?,
        digest: m.get("zk_nodes_digest")?.parse().ok()?,
    })
}

/// Every digest sample of a run, by index: two nodes that report the same applied index with
/// different digests have diverged, whenever it is seen.
#[derive(Debug, Default)]
pub struct DigestLedger {
    seen: HashMap<u64, DigestAt>,
    pub samples: usize,
    /// Indexes at which more than one node was sampled (the comparisons that happened).
    pub compared: usize,
}

impl DigestLedger {
    /// Samples every running node once.
    ///
    /// # Errors
    /// Two nodes at one index with different digests.
    pub fn sample(&mut self, c: &mut dyn ClusterControl) -> Result<(), String> {
        for id in c.ids() {
            if !c.is_running(id) {
                continue;
            }
            if let Some(d) = digest_at(id, c.addr(id)) {
                self.add(d)?;
            }
        }
        Ok(())
    }

    fn add(&mut self, d: DigestAt) -> Result<(), String> {
        self.samples += 1;
        match self.seen.get(&d.index) {
            None => {
                self.seen.insert(d.index, d);
            }
            Some(first) if first.digest != d.digest => {
                return Err(format!("replicas diverged at applied index {}: {first:?} vs {d:?}", d.index))
            }
            Some(first) if first.node != d.node => self.compared += 1,
            Some(_) => {}
        }
        Ok(())
    }

    /// Waits until every running node reports the same applied index (nothing more is being
    /// written), checking each sample, and returns that index and digest; (0, 0) at once for
    /// servers whose `mntr` has no applied index (ZooKeeper).
    ///
    /// # Errors
    /// A divergence, or no common index within `within`.
    pub fn converge(&mut self, c: &mut dyn ClusterControl, within: Duration) -> Result<(u64, u64), String> {
        let until = Instant::now() + within;
        loop {
            let running: Vec<u64> = c.ids().into_iter().filter(|i| c.is_running(*i)).collect();
            let now: Vec<Option<DigestAt>> = running.iter().map(|i| digest_at(*i, c.addr(*i))).collect();
            for d in now.iter().flatten() {
                self.add(*d)?;
            }
            if now.iter().all(Option::is_none) && running.iter().all(|i| mntr(c.addr(*i)).is_some()) {
                // Every node answers mntr without an applied index: not testkeeper (ZooKeeper).
                return Ok((0, 0));
            }
            if let Some(Some(first)) = now.first() {
                if now.iter().all(|d| d.is_some_and(|d| d.index == first.index)) {
                    return Ok((first.index, first.digest));
                }
            }
            if Instant::now() > until {
                return Err(format!("no common applied index within {within:?}: {now:?}\n{}", c.describe()));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl ClusterControl for crate::cluster::TestkeeperCluster {
    fn ids(&self) -> Vec<u64> {
        crate::cluster::TestkeeperCluster::ids(self)
    }

    fn addr(&self, id: u64) -> SocketAddr {
        crate::cluster::TestkeeperCluster::addr(self, id)
    }

    fn is_running(&mut self, id: u64) -> bool {
        crate::cluster::TestkeeperCluster::is_running(self, id)
    }

    fn await_leader(&mut self, within: Duration) -> Result<u64, String> {
        crate::cluster::TestkeeperCluster::await_leader(self, within)
    }

    fn kill(&mut self, id: u64) {
        crate::cluster::TestkeeperCluster::kill(self, id);
    }

    fn restart(&mut self, id: u64) -> Result<(), String> {
        crate::cluster::TestkeeperCluster::restart(self, id)
    }

    fn describe(&mut self) -> String {
        crate::cluster::TestkeeperCluster::describe(self, 20)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_index_with_another_digest_is_a_divergence() {
        let mut l = DigestLedger::default();
        l.add(DigestAt { node: 1, index: 5, digest: 9 }).unwrap();
        l.add(DigestAt { node: 2, index: 5, digest: 9 }).unwrap();
        l.add(DigestAt { node: 2, index: 6, digest: 1 }).unwrap();
        assert_eq!(l.compared, 1);
        let e = l.add(DigestAt { node: 3, index: 5, digest: 8 }).unwrap_err();
        assert!(e.contains("diverged at applied index 5"), "{e}");
    }
}

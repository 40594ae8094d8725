//! The in-process network of a `TestKeeperCluster`: every node's input channel, and faults on
//! the links between them, all random choices drawn from one seeded generator so a run
//! replays. A partition cuts links both ways; per-link faults apply to one direction.

use std::cmp::Reverse;
use std::collections::{BTreeSet, BinaryHeap, HashMap};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;
// tokio's clock, not std's: under `testkeeper sim` it is the simulation's paused clock.
use tokio::time::Instant;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::Transport;
use crate::cluster::message::Msg;
use crate::cluster::{Input, NodeId};

/// Faults on one direction of one link.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct LinkFaults {
    /// Probability that a message is lost.
    pub drop: f64,
    /// Fixed delay added to every message, ms.
    pub delay_ms: u64,
    /// Extra delay drawn uniformly from `0..=jitter_ms` (reorders messages when larger than
    /// their spacing).
    pub jitter_ms: u64,
    /// Probability that a message is delivered twice.
    pub duplicate: f64,
}

struct Pending {
    due: Instant,
    seq: u64,
    from: NodeId,
    to: NodeId,
    msg: Msg,
}

impl PartialEq for Pending {
    fn eq(&self, o: &Self) -> bool {
        (self.due, self.seq) == (o.due, o.seq)
    }
}
impl Eq for Pending {}
impl PartialOrd for Pending {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Pending {
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        (self.due, self.seq).cmp(&(o.due, o.seq))
    }
}

struct Net {
    nodes: HashMap<NodeId, flume::Sender<Input>>,
    /// Links cut both ways, as (smaller id, larger id).
    cut: BTreeSet<(NodeId, NodeId)>,
    faults: HashMap<(NodeId, NodeId), LinkFaults>,
    /// The faults of every link without faults of its own (a simulation's latency); `heal`
    /// keeps it.
    default: LinkFaults,
    rng: ChaCha8Rng,
    delayed: BinaryHeap<Reverse<Pending>>,
    seq: u64,
    stop: bool,
    /// Messages delivered, dropped, duplicated (for the harness's summary).
    pub delivered: u64,
    pub dropped: u64,
}

/// The network; clones share it.
#[derive(Clone)]
pub struct MemNet {
    inner: Arc<(Mutex<Net>, Condvar)>,
    /// Wakes the delivery task of a simulated network (the thread waits on the condvar).
    wake: Arc<tokio::sync::Notify>,
}

fn link(a: NodeId, b: NodeId) -> (NodeId, NodeId) {
    (a.min(b), a.max(b))
}

impl MemNet {
    /// An empty network whose random choices come from `seed`; a thread delivers delayed
    /// messages when they are due, or, inside a simulation (`testkeeper sim`), a task on the
    /// simulation's runtime, on its clock.
    pub fn new(seed: u64) -> MemNet {
        let net = Net {
            nodes: HashMap::new(),
            cut: BTreeSet::new(),
            faults: HashMap::new(),
            default: LinkFaults::default(),
            rng: ChaCha8Rng::seed_from_u64(seed),
            delayed: BinaryHeap::new(),
            seq: 0,
            stop: false,
            delivered: 0,
            dropped: 0,
        };
        let m =
            MemNet { inner: Arc::new((Mutex::new(net), Condvar::new())), wake: Arc::new(tokio::sync::Notify::new()) };
        let clock = m.clone();
        if testkeeper_wire::net::sim::active() {
            tokio::spawn(clock.deliver_due_task());
        } else {
            std::thread::Builder::new()
                .name("testkeeper-memnet".into())
                .spawn(move || clock.deliver_due())
                .expect("spawning the network thread");
        }
        m
    }

    fn net(&self) -> std::sync::MutexGuard<'_, Net> {
        self.inner.0.lock().expect("memnet lock")
    }

    /// Connects (or reconnects, after a restart) node `id`'s input channel.
    pub fn attach(&self, id: NodeId, tx: flume::Sender<Input>) {
        self.net().nodes.insert(id, tx);
    }

    /// Disconnects node `id` (killed): messages to it are lost.
    pub fn detach(&self, id: NodeId) {
        self.net().nodes.remove(&id);
    }

    /// Cuts every link between nodes in different groups.
    pub fn partition(&self, groups: &[&[NodeId]]) {
        let mut n = self.net();
        for (i, a) in groups.iter().enumerate() {
            for b in &groups[i + 1..] {
                for &x in *a {
                    for &y in *b {
                        n.cut.insert(link(x, y));
                    }
                }
            }
        }
    }

    /// Restores every link and removes every per-link fault.
    pub fn heal(&self) {
        let mut n = self.net();
        n.cut.clear();
        n.faults.clear();
    }

    /// Sets the faults of every link that has none of its own, from now on (kept by `heal`).
    pub fn set_default_link(&self, f: LinkFaults) {
        self.net().default = f;
    }

    /// Sets the faults of the link `from -> to`.
    pub fn set_link(&self, from: NodeId, to: NodeId, f: LinkFaults) {
        self.net().faults.insert((from, to), f);
    }

    /// Removes the faults of the link `from -> to`: it has the default link's again.
    pub fn clear_link(&self, from: NodeId, to: NodeId) {
        self.net().faults.remove(&(from, to));
    }

    /// (delivered, dropped) so far.
    pub fn counts(&self) -> (u64, u64) {
        let n = self.net();
        (n.delivered, n.dropped)
    }

    /// Stops the delivery thread or task.
    pub fn shutdown(&self) {
        self.net().stop = true;
        self.inner.1.notify_all();
        self.wake.notify_one();
    }

    /// Takes every message due by `now` off the queue, in (due, seq) order, and delivers it;
    /// returns when the next one is due. Whether to stop comes back as `None`.
    fn deliver_until(n: &mut Net, now: Instant) -> Option<Option<Instant>> {
        if n.stop {
            return None;
        }
        while n.delayed.peek().is_some_and(|p| p.0.due <= now) {
            let Reverse(p) = n.delayed.pop().expect("peeked");
            deliver(n, p.from, p.to, p.msg);
        }
        Some(n.delayed.peek().map(|p| p.0.due))
    }

    /// The delivery loop of a simulated network: a task on the simulation's runtime, asleep
    /// until the next message is due or a nearer one is sent.
    async fn deliver_due_task(self) {
        loop {
            let next = match Self::deliver_until(&mut self.net(), Instant::now()) {
                None => return,
                Some(next) => next,
            };
            match next {
                Some(due) => {
                    tokio::select! {
                        // In order, never at random: a seeded simulation must replay (docs/sim.md).
                        biased;
                        () = tokio::time::sleep_until(due) => {}
                        () = self.wake.notified() => {}
                    }
                }
                None => self.wake.notified().await,
            }
        }
    }

    fn deliver_due(&self) {
        let (lock, cond) = &*self.inner;
        let mut n = lock.lock().expect("memnet lock");
        loop {
            let now = Instant::now();
            let Some(next) = Self::deliver_until(&mut n, now) else { return };
            let wait = next.map_or(Duration::from_millis(100), |due| due.saturating_duration_since(now));
            n = cond.wait_timeout(n, wait).expect("memnet lock").0;
        }
    }
}

fn deliver(n: &mut Net, from: NodeId, to: NodeId, msg: Msg) {
    // A partition made while the message was delayed still cuts it.
    if n.cut.contains(&link(from, to)) {
        n.dropped += 1;
        return;
    }
    match n.nodes.get(&to) {
        Some(tx) if tx.send(Input::Net { from, msg }).is_ok() => n.delivered += 1,
        _ => n.dropped += 1,
    }
}

impl Transport for MemNet {
    fn send(&self, from: NodeId, to: NodeId, msg: Msg) {
        let mut n = self.net();
        if n.cut.contains(&link(from, to)) {
            n.dropped += 1;
            return;
        }
        let f = n.faults.get(&(from, to)).copied().unwrap_or(n.default);
        if f.drop > 0.0 && n.rng.gen_bool(f.drop.min(1.0)) {
            n.dropped += 1;
            return;
        }
        let copies = if f.duplicate > 0.0 && n.rng.gen_bool(f.duplicate.min(1.0)) { 2 } else { 1 };
        for _ in 0..copies {
            let extra = if f.jitter_ms > 0 { n.rng.gen_range(0..=f.jitter_ms) } else { 0 };
            let delay = f.delay_ms + extra;
            if delay == 0 {
                deliver(&mut n, from, to, msg.clone());
            } else {
                n.seq += 1;
                let p = Pending {
                    due: Instant::now() + Duration::from_millis(delay),
                    seq: n.seq,
                    from,
                    to,
                    msg: msg.clone(),
                };
                n.delayed.push(Reverse(p));
                self.inner.1.notify_all();
                self.wake.notify_one();
            }
        }
    }
}

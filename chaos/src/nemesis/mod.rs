//! The nemesis: a schedule of fault windows drawn from the run's seed before the run starts
//! (and printed), then carried out against the target while the clients work. One window at
//! a time: a fault starts, lasts its length, and is undone before the next one begins.
//!
//! # Layout
//! - this file: [`Window`], [`plan`], [`describe`].
//! - `actor`: carrying a window out (embedded cluster, admin endpoints, client-side kicks).

pub mod actor;

use std::time::Duration;

use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::config::Nemesis;

/// One planned fault.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Window {
    /// When it starts, ms after the main phase began.
    pub at_ms: u64,
    pub len_ms: u64,
    pub nemesis: Nemesis,
    /// The seeded choice of victim (a node, a split, a session, the clients to cut).
    pub pick: u64,
}

/// The windows of a run whose main phase lasts at most `horizon`: gaps of 100-400 ms, faults
/// of 200-800 ms, kinds drawn uniformly from `nemeses`. Only `seed` and the arguments decide it.
pub fn plan(seed: u64, nemeses: &[Nemesis], horizon: Duration) -> Vec<Window> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0x6e65_6d65_7369_7300);
    let mut out = Vec::new();
    if nemeses.is_empty() {
        return out;
    }
    let mut t = rng.gen_range(100..300);
    while t < horizon.as_millis() as u64 {
        let nemesis = nemeses[rng.gen_range(0..nemeses.len())];
        let len_ms = rng.gen_range(200..800);
        out.push(Window { at_ms: t, len_ms, nemesis, pick: rng.gen() });
        t += len_ms + rng.gen_range(100..400);
    }
    out
}

/// The node ids of a cluster of `n` in the order `pick` shuffles them.
pub fn shuffled(n: usize, pick: u64) -> Vec<u64> {
    let mut ids: Vec<u64> = (1..=n as u64).collect();
    ids.shuffle(&mut ChaCha8Rng::seed_from_u64(pick));
    ids
}

/// Node `pick` picks of `n`.
pub fn victim(n: usize, pick: u64) -> u64 {
    1 + pick % n.max(1) as u64
}

/// The fault rule a server-side nemesis installs (docs/faults.md).
pub fn rule(n: Nemesis) -> Option<&'static str> {
    Some(match n {
        Nemesis::DropRequest => "drop-request:prob=0.1",
        Nemesis::DropResponse => "drop-response:prob=0.1",
        Nemesis::Delay => "delay:ms=40,jitter=40,prob=0.5",
        // OPERATIONTIMEOUT: what Keeper answers when a write could not be placed in time.
        Nemesis::Error => "error:code=-7,prob=0.1",
        Nemesis::Reset => "reset:prob=0.05",
        _ => return None,
    })
}

/// What a window does to a cluster of `nodes`, as the schedule prints it.
pub fn describe(w: &Window, nodes: usize) -> String {
    let what = match w.nemesis {
        Nemesis::Kill => format!("kill node {}", victim(nodes, w.pick)),
        Nemesis::LoseTail => format!("kill node {}, losing its unsynced tail", victim(nodes, w.pick)),
        Nemesis::Pause => format!("pause node {}", victim(nodes, w.pick)),
        Nemesis::PartitionIsolate => format!("isolate node {}", victim(nodes, w.pick)),
        Nemesis::KillLeader => "kill the leader".to_string(),
        Nemesis::CrashAll => "kill every node, each losing its unsynced tail".to_string(),
        Nemesis::PartitionHalves => {
            let ids = shuffled(nodes, w.pick);
            let (a, b) = ids.split_at(nodes / 2);
            format!("partition {a:?} | {b:?}")
        }
        Nemesis::PartitionBridge => {
            let (bridge, a, b) = bridge(nodes, w.pick);
            format!("partition {a:?} | {b:?}, node {bridge} hears both")
        }
        Nemesis::SlowLinks => "every link +20 ms, jitter 40 ms".to_string(),
        Nemesis::LossyLinks => "every link drops 20%, duplicates 20%, jitter 10 ms".to_string(),
        Nemesis::CorruptDisk => format!("flip a bit in the middle of node {}'s log, start it", victim(nodes, w.pick)),
        Nemesis::DiskFull => format!("fill node {}'s disk", victim(nodes, w.pick)),
        Nemesis::ClockJump => {
            format!("step node {}'s wall clock {:+.1} s", victim(nodes, w.pick), actor::jump_ms(w.pick) as f64 / 1e3)
        }
        Nemesis::ExpireSession => "expire a live session".to_string(),
        Nemesis::Disconnect => "clients drop their connections mid-request".to_string(),
        other => format!("every server: {}", rule(other).unwrap_or("?")),
    };
    format!("+{:.2}s for {:.2}s: {} ({what})", w.at_ms as f64 / 1e3, w.len_ms as f64 / 1e3, w.nemesis)
}

/// A bridge partition of `n` nodes: (the bridge, one side, the other).
pub fn bridge(n: usize, pick: u64) -> (u64, Vec<u64>, Vec<u64>) {
    let ids = shuffled(n, pick);
    let rest = &ids[1..];
    let (a, b) = rest.split_at(rest.len() / 2);
    (ids[0], a.to_vec(), b.to_vec())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_schedule_is_a_function_of_the_seed() {
        let all = Nemesis::ALL;
        let a = plan(7, &all, Duration::from_secs(10));
        assert_eq!(a, plan(7, &all, Duration::from_secs(10)));
        assert_ne!(a, plan(8, &all, Duration::from_secs(10)));
        assert!(a.len() >= 8, "{} windows in 10 s", a.len());
        assert!(a.windows(2).all(|w| w[0].at_ms + w[0].len_ms < w[1].at_ms), "one window at a time");
        assert!(plan(7, &[], Duration::from_secs(10)).is_empty());
    }

    #[test]
    fn descriptions_name_the_victims() {
        let w = Window { at_ms: 250, len_ms: 400, nemesis: Nemesis::PartitionBridge, pick: 3 };
        let (b, x, y) = bridge(3, 3);
        assert_eq!((x.len(), y.len()), (1, 1));
        assert!(![x[0], y[0]].contains(&b));
        let d = describe(&w, 3);
        assert!(d.starts_with("+0.25s for 0.40s: partition-bridge") && d.contains(&format!("node {b} hears")), "{d}");
    }
}

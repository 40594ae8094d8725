//! `bench --watch-load N`: three timed watch workloads of N watches each, the costs issue 16
//! asks to keep within a small multiple of ZooKeeper's:
//!
//! - `fire`: one session watches N existing nodes (registered by one setWatches, unmeasured);
//!   another sets all N in multis of 1,000. Timed from the first multi to the N-th event.
//! - `expire`: a session owns N ephemerals that another session watches; it closes (the same
//!   delete-every-ephemeral transaction an expiry runs). Timed from the close to the N-th
//!   NodeDeleted.
//! - `set_watches`: one setWatches of N exist watches on absent nodes, what a client sends on
//!   reconnect. Timed from send to reply.
//!
//! Node names are three base-62 characters under a one-letter parent, so one setWatches of
//! 100,000 paths fits a 1 MiB frame (ZooKeeper's `jute.maxbuffer`); each round and workload gets
//! its own parent. Every wait is bounded.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use testkeeper_wire::client::{Client, ConnectOptions, Event};
use testkeeper_wire::records::create::{create_mode, CreateRequest};
use testkeeper_wire::records::data::SetDataRequest;
use testkeeper_wire::records::header::event_type;
use testkeeper_wire::records::watches::SetWatches;
use testkeeper_wire::{Acl, CreateOp, OpCode, Request};
use tokio::sync::mpsc::UnboundedReceiver;

use super::report::Target;
use super::stats::median;

/// Sub-ops per multi in setup and in `fire`.
const BATCH: usize = 1_000;
/// Longest any one step may take.
const BOUND: Duration = Duration::from_secs(600);
/// Largest N: three base-62 characters name 238,328 nodes, and a setWatches of more than about
/// 100,000 such paths outgrows a 1 MiB frame.
pub const MAX_WATCHES: usize = 100_000;
/// Workloads per round: `fire`, `expire`, `set_watches`.
pub const WORKLOADS: usize = 3;

/// The three times of one round on one server.
#[derive(Debug, Clone, Copy)]
pub struct Times {
    pub fire: Duration,
    pub expire: Duration,
    pub set_watches: Duration,
}

fn name(i: usize) -> String {
    const DIGITS: &[u8] = b"0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
    [i / (62 * 62), (i / 62) % 62, i % 62].iter().map(|d| DIGITS[*d] as char).collect()
}

fn paths(parent: char, n: usize) -> Vec<String> {
    (0..n).map(|i| format!("/{parent}/{}", name(i))).collect()
}

/// The parent of workload `w` in round `round` (a one-letter node, fresh for each).
///
/// # Errors
/// More rounds than the letters allow.
fn parent(round: usize, w: usize) -> Result<char, String> {
    let i = round * WORKLOADS + w;
    (i < 26)
        .then(|| (b'a' + i as u8) as char)
        .ok_or_else(|| format!("--watch-load runs at most {} rounds", 26 / WORKLOADS))
}

async fn bounded<T>(what: &str, f: impl std::future::Future<Output = T>) -> Result<T, String> {
    tokio::time::timeout(BOUND, f).await.map_err(|_| format!("{what}: no end within {BOUND:?}"))
}

async fn connect(addr: SocketAddr) -> Result<Client, String> {
    bounded("connect", Client::connect(addr, ConnectOptions::default()))
        .await?
        .map_err(|e| format!("connect {addr}: {e}"))
}

fn create(path: String, flags: i32) -> Request {
    Request::Create(CreateOp {
        op: OpCode::Create,
        req: CreateRequest { path, data: Some(Vec::new()), acl: Acl::open(), flags },
        ttl: 0,
    })
}

/// Sends `reqs` as multis of [`BATCH`], one after another.
async fn multis(c: &Client, reqs: Vec<Request>, what: &str) -> Result<(), String> {
    let mut reqs = reqs.into_iter().peekable();
    while reqs.peek().is_some() {
        let batch: Vec<Request> = reqs.by_ref().take(BATCH).collect();
        bounded(what, c.multi(batch)).await?.map_err(|e| format!("{what}: {e}"))?;
    }
    Ok(())
}

/// Waits for `n` events of `ty`.
async fn events(rx: &mut UnboundedReceiver<Event>, n: usize, ty: i32, what: &str) -> Result<(), String> {
    bounded(what, async {
        let mut seen = 0;
        while seen < n {
            match rx.recv().await {
                Some(e) if e.event.event_type == ty => seen += 1,
                Some(_) => {}
                None => return Err(format!("{what}: the connection ended after {seen} of {n} events")),
            }
        }
        Ok(())
    })
    .await?
}

/// Registers data watches on `paths` with one setWatches that fires none of them.
async fn watch_all(c: &Client, paths: &[String]) -> Result<(), String> {
    let sw = SetWatches { relative_zxid: i64::MAX, data_watches: paths.to_vec(), ..SetWatches::default() };
    bounded("setWatches", c.set_watches(sw)).await?.map_err(|e| format!("setWatches: {e}"))
}

async fn fire(addr: SocketAddr, parent: char, n: usize) -> Result<Duration, String> {
    let writer = connect(addr).await?;
    let mut watcher = connect(addr).await?;
    let mut rx = watcher.events().expect("events not taken yet");
    let nodes = paths(parent, n);
    multis(&writer, std::iter::once(create(format!("/{parent}"), 0)).collect(), "create parent").await?;
    multis(&writer, nodes.iter().map(|p| create(p.clone(), 0)).collect(), "create nodes").await?;
    watch_all(&watcher, &nodes).await?;
    let sets = nodes
        .iter()
        .map(|p| Request::SetData(SetDataRequest { path: p.clone(), data: Some(b"x".to_vec()), version: -1 }));
    let start = Instant::now();
    multis(&writer, sets.collect(), "setData").await?;
    events(&mut rx, n, event_type::NODE_DATA_CHANGED, "fire: NodeDataChanged").await?;
    let took = start.elapsed();
    let _ = writer.close().await;
    let _ = watcher.close().await;
    Ok(took)
}

async fn expire(addr: SocketAddr, parent: char, n: usize) -> Result<Duration, String> {
    let owner = connect(addr).await?;
    let mut watcher = connect(addr).await?;
    let mut rx = watcher.events().expect("events not taken yet");
    let nodes = paths(parent, n);
    multis(&owner, std::iter::once(create(format!("/{parent}"), 0)).collect(), "create parent").await?;
    multis(&owner, nodes.iter().map(|p| create(p.clone(), create_mode::EPHEMERAL)).collect(), "create ephemerals")
        .await?;
    watch_all(&watcher, &nodes).await?;
    let start = Instant::now();
    bounded("closeSession", owner.close()).await?.map_err(|e| format!("closeSession: {e}"))?;
    events(&mut rx, n, event_type::NODE_DELETED, "expire: NodeDeleted").await?;
    let took = start.elapsed();
    let _ = watcher.close().await;
    Ok(took)
}

async fn set_watches(addr: SocketAddr, parent: char, n: usize) -> Result<Duration, String> {
    let c = connect(addr).await?;
    let sw = SetWatches { relative_zxid: i64::MAX, exist_watches: paths(parent, n), ..SetWatches::default() };
    let start = Instant::now();
    bounded("setWatches", c.set_watches(sw)).await?.map_err(|e| format!("setWatches of {n} paths: {e}"))?;
    let took = start.elapsed();
    let _ = c.close().await;
    Ok(took)
}

/// Runs the three workloads of `n` watches against `addr` as round `round`.
///
/// # Errors
/// `n` too large, a lost connection, a refused request, or a step past its bound.
pub async fn run(addr: SocketAddr, n: usize, round: usize) -> Result<Times, String> {
    if n > MAX_WATCHES {
        return Err(format!("--watch-load is at most {MAX_WATCHES}"));
    }
    Ok(Times {
        fire: fire(addr, parent(round, 0)?, n).await?,
        expire: expire(addr, parent(round, 1)?, n).await?,
        set_watches: set_watches(addr, parent(round, 2)?, n).await?,
    })
}

/// Every round on every target, alternating the order as the op rounds do, then medians per
/// target and the median per-round ratios A / B. Prints each round.
///
/// # Errors
/// As [`run`].
pub async fn rounds(targets: &[Target], n: usize, rounds: usize) -> Result<Value, String> {
    let mut times: Vec<Vec<Times>> = vec![Vec::new(); targets.len()];
    for r in 0..rounds {
        let order: Vec<usize> =
            if r % 2 == 0 { (0..targets.len()).collect() } else { (0..targets.len()).rev().collect() };
        for i in order {
            let t = run(targets[i].addr, n, r).await.map_err(|e| format!("{}: {e}", targets[i].label))?;
            println!(
                "  watch round {r} {:<11} fire {:>8.1} ms  expire {:>8.1} ms  setWatches {:>8.1} ms",
                targets[i].label,
                ms(t.fire),
                ms(t.expire),
                ms(t.set_watches)
            );
            times[i].push(t);
        }
    }
    let pick: [(&str, Pick); WORKLOADS] =
        [("fire", |t| t.fire), ("expire", |t| t.expire), ("set_watches", |t| t.set_watches)];
    let per_target: Vec<Value> = targets
        .iter()
        .zip(&times)
        .map(|(t, ts)| {
            let mut v = json!({ "label": t.label });
            for (key, f) in pick {
                v[format!("{key}_ms")] = json!(ts.iter().map(|x| ms(f(x))).collect::<Vec<_>>());
                v[format!("{key}_ms_median")] = json!(median(&ts.iter().map(|x| ms(f(x))).collect::<Vec<_>>()));
            }
            v
        })
        .collect();
    let mut out = json!({ "watches": n, "rounds": rounds, "targets": per_target });
    if let [a, b] = &times[..] {
        let mut vs = json!({});
        let mut line = format!("  watch load {} / {}:", targets[0].label, targets[1].label);
        for (key, f) in pick {
            let ratios: Vec<f64> = a.iter().zip(b).map(|(x, y)| ms(f(x)) / ms(f(y)).max(1e-6)).collect();
            let r = median(&ratios);
            vs[format!("{key}_ratio")] = json!(r);
            line.push_str(&format!("  {key} {r:.2}x"));
        }
        println!("{line}");
        out["vs"] = vs;
    }
    Ok(out)
}

/// Reads one workload's time out of a round's [`Times`].
type Pick = fn(&Times) -> Duration;

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_three_characters_and_distinct() {
        let all: std::collections::HashSet<String> = (0..MAX_WATCHES).map(name).collect();
        assert_eq!(all.len(), MAX_WATCHES);
        assert!(all.iter().all(|n| n.len() == 3));
        assert_eq!(parent(0, 0), Ok('a'));
        assert!(parent(9, 0).is_err());
    }

    /// The setWatches of `set_watches` fits the default 1 MiB frame at the largest N.
    #[test]
    fn the_largest_set_watches_fits_one_frame() {
        use testkeeper_wire::jute::Encode;
        let sw =
            SetWatches { relative_zxid: i64::MAX, exist_watches: paths('z', MAX_WATCHES), ..SetWatches::default() };
        let body = sw.to_bytes();
        assert!(body.len() + 8 < testkeeper_wire::frame::DEFAULT_MAX_FRAME, "{} bytes", body.len());
    }
}

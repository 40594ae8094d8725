//! The load generator: N sessions, W requests in flight per session, a weighted mix over a
//! bounded key space under a random prefix, in the spirit of ClickHouse's keeper-bench.
//!
//! Each in-flight slot is one task that sends a request, waits for its reply and sends the
//! next, so a session has at most W requests outstanding and the server sees them pipelined
//! on one connection. Slots claim ops from one shared counter, so `ops` is the total however
//! the sessions share it.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use testkeeper_wire::client::{Client, ConnectOptions};
use testkeeper_wire::records::data::DeleteRequest;
use testkeeper_wire::Request;
use tokio::task::JoinSet;

use super::mix::{Mix, Workload};
use super::stats::{Recorder, Samples};

/// Requests kept in flight by setup and cleanup, which are not measured.
const SETUP_WINDOW: usize = 256;

/// One workload's shape.
#[derive(Debug, Clone)]
pub struct LoadConfig {
    pub sessions: usize,
    pub ops: u64,
    pub pipeline: usize,
    pub keys: u32,
    pub value_size: usize,
    pub mix: Mix,
    /// Decode every measured reply's body (`--decode-replies`) rather than read its header
    /// alone. The client shares the machine's cores with the server it measures, and decoding
    /// costs it more the more a reply carries: a listing of 256 names is 256 allocations here,
    /// an empty one from a server that keeps no tree none.
    pub decode_replies: bool,
}

/// Opens `n` sessions, the i-th to `addrs[i % addrs.len()]` (the members of a cluster in turn).
///
/// # Errors
/// The first connection that fails.
pub async fn connect_all(addrs: &[SocketAddr], n: usize) -> Result<Vec<Arc<Client>>, String> {
    let mut clients = Vec::with_capacity(n);
    for i in 0..n {
        let addr = addrs[i % addrs.len()];
        let c = Client::connect(addr, ConnectOptions::default()).await.map_err(|e| format!("connect {addr}: {e}"))?;
        clients.push(Arc::new(c));
    }
    Ok(clients)
}

/// Sends `reqs` with up to [`SETUP_WINDOW`] in flight, spread over `clients`; returns how
/// many got a non-zero error code.
///
/// # Errors
/// A lost connection.
pub async fn send_all(clients: &[Arc<Client>], reqs: impl IntoIterator<Item = Request>) -> Result<u64, String> {
    let mut set = JoinSet::new();
    let mut failed = 0;
    let mut join_one = |r: Option<Result<Result<i32, String>, tokio::task::JoinError>>| -> Result<(), String> {
        match r {
            Some(Ok(Ok(0))) | None => Ok(()),
            Some(Ok(Ok(_))) => {
                failed += 1;
                Ok(())
            }
            Some(Ok(Err(e))) => Err(e),
            Some(Err(e)) => Err(e.to_string()),
        }
    };
    for (i, req) in reqs.into_iter().enumerate() {
        if set.len() >= SETUP_WINDOW {
            join_one(set.join_next().await)?;
        }
        let c = clients[i % clients.len()].clone();
        set.spawn(async move { c.call(req).await.map(|r| r.header.err).map_err(|e| e.to_string()) });
    }
    while let Some(r) = set.join_next().await {
        join_one(Some(r))?;
    }
    Ok(failed)
}

/// A random prefix, so runs against a shared server never collide.
pub fn random_prefix(rng: &mut impl Rng, tag: &str) -> String {
    format!("/bench-{tag}-{:016x}", rng.gen::<u64>())
}

/// Runs one measured workload, its sessions spread over `addrs` in turn (the members of a
/// cluster; one address for a single server), and returns its merged measurements and wall
/// time.
///
/// # Errors
/// A session that cannot connect, or setup that fails.
pub async fn run_on(addrs: &[SocketAddr], cfg: &LoadConfig, seed: u64) -> Result<(Recorder, Duration), String> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let clients = connect_all(addrs, cfg.sessions).await?;
    let mut value = vec![0u8; cfg.value_size];
    rng.fill(&mut value[..]);
    let workload = Arc::new(Workload { prefix: random_prefix(&mut rng, "load"), keys: cfg.keys, value });
    send_all(&clients[..1], [workload.create(workload.prefix.clone())]).await?;
    send_all(&clients, (0..cfg.keys).map(|i| workload.create(workload.key(i)))).await?;

    let claimed = Arc::new(AtomicU64::new(0));
    // Slots share the ops unevenly; a bit over the even share avoids most regrowth.
    let per_slot = (cfg.ops as usize / (cfg.sessions * cfg.pipeline).max(1)) * 5 / 4 + 16;
    let mut set = JoinSet::new();
    let start = Instant::now();
    for (s, client) in clients.iter().enumerate() {
        for w in 0..cfg.pipeline {
            let slot = s * cfg.pipeline + w;
            let (client, workload, claimed, mix) = (client.clone(), workload.clone(), claimed.clone(), cfg.mix.clone());
            let (ops, mut rng) = (cfg.ops, ChaCha8Rng::seed_from_u64(seed ^ (slot as u64 + 1).wrapping_mul(0x9E37)));
            let decode = cfg.decode_replies;
            set.spawn(async move {
                let mut rec = Samples::with_capacity(per_slot);
                loop {
                    let n = claimed.fetch_add(1, Ordering::Relaxed);
                    if n >= ops {
                        break;
                    }
                    let kind = mix.pick(&mut rng);
                    let req = workload.request(kind, &mut rng, slot, n);
                    let t0 = Instant::now();
                    let header = if decode {
                        client.call(req).await.map(|reply| reply.header)
                    } else {
                        client.call_header(req).await
                    };
                    match header {
                        Ok(header) => rec.record(kind, t0.elapsed(), header.err),
                        Err(_) => {
                            rec.lost();
                            break;
                        }
                    }
                }
                rec
            });
        }
    }
    let mut total = Recorder::default();
    while let Some(r) = set.join_next().await {
        total.record_all(&r.map_err(|e| e.to_string())?);
    }
    let elapsed = start.elapsed();

    // Leave a shared server as we found it; not measured, and errors here do not matter.
    let deletes = (0..cfg.keys).map(|i| Request::Delete(DeleteRequest { path: workload.key(i), version: -1 }));
    let _ = send_all(&clients, deletes).await;
    let _ =
        send_all(&clients[..1], [Request::Delete(DeleteRequest { path: workload.prefix.clone(), version: -1 })]).await;
    for c in &clients {
        let _ = c.close().await;
    }
    Ok((total, elapsed))
}

/// Creates `n` znodes of `value_size` bytes under a fresh prefix (1000 per parent, so no
/// parent gets a huge child list), for memory measurements; returns the prefix.
///
/// # Errors
/// A lost connection.
pub async fn populate(addr: SocketAddr, n: u64, value_size: usize, seed: u64) -> Result<String, String> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let clients = connect_all(&[addr], 4).await?;
    let mut value = vec![0u8; value_size];
    rng.fill(&mut value[..]);
    let w = Workload { prefix: random_prefix(&mut rng, "mem"), keys: 0, value };
    let parents = n.div_ceil(1000);
    // The prefix first, on its own: send_all's tasks may reach the connection in any order,
    // and a parent created before the prefix fails with NoNode (and then its 1000 children).
    send_all(&clients[..1], [w.create(w.prefix.clone())]).await?;
    send_all(&clients[..1], (0..parents).map(|p| w.create(format!("{}/b{p}", w.prefix)))).await?;
    let nodes = (0..n).map(|i| w.create(format!("{}/b{}/n{}", w.prefix, i / 1000, i % 1000)));
    let failed = send_all(&clients, nodes).await?;
    if failed > 0 {
        return Err(format!("{failed} of {n} creates failed while populating"));
    }
    Ok(w.prefix)
}

//! `bench --cluster`'s leader kills: the leader of a cluster is SIGKILLed while one client
//! already connected to each surviving member creates until one create is acknowledged
//! (reconnecting when its server drops it), and the time from the kill to that
//! acknowledgement is the round's write gap; the killed member is then restarted and the
//! cluster made whole before the next round. `--rounds` kills each, the clusters
//! alternating, give the ratio; `--failover-rounds` more of the testkeeper cluster alone give
//! the quantiles of its gap.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use testkeeper_wire::client::{Client, ClientError, ConnectOptions};
use testkeeper_wire::records::create::create_mode;
use testkeeper_wire::{Acl, ZkError};
use tokio::sync::{mpsc, watch};

use super::cluster::ClusterPlan;
use super::ensemble::{Ensemble, SIZE};
use super::stats::{median, quantile};

/// Longest a failover may take before the round counts as failed.
const FAILOVER_LIMIT: Duration = Duration::from_secs(60);
/// Longest a client's connect to a member may take.
const CONNECT_LIMIT: Duration = Duration::from_secs(2);

/// Why leader kills could not be timed. A cluster that does not recover after a kill is not
/// one of these: that is the round's result (no write within [`FAILOVER_LIMIT`]).
#[derive(Debug, thiserror::Error)]
pub enum FailoverError {
    /// The cluster was not whole before a kill, or its killed member did not start again.
    #[error("{cluster}: {why}")]
    Ensemble { cluster: &'static str, why: String },
    /// A member that survives the kill did not take a connection in time.
    #[error("connect {addr}: timed out after {within:?}")]
    ConnectTimedOut { addr: SocketAddr, within: Duration },
    /// A member that survives the kill refused the connection.
    #[error("connect {addr}: {source}")]
    Connect { addr: SocketAddr, source: ClientError },
    /// The round's parent node was not written before the kill.
    #[error("{path}: not acknowledged within {within:?} before the kill")]
    NotAcknowledged { path: String, within: Duration },
}

/// `--rounds` leader kills per cluster, alternating; milliseconds from the kill to the first
/// acknowledged write. Then `--failover-rounds` more kills of the testkeeper cluster alone,
/// for the quantiles of its write gap (a p99 of five rounds would be their maximum).
pub async fn failovers(clusters: &mut [Ensemble; 2], plan: &ClusterPlan) -> Result<Value, FailoverError> {
    let mut ms = [Vec::new(), Vec::new()];
    for r in 0..plan.rounds {
        let order = if r % 2 == 0 { [0, 1] } else { [1, 0] };
        for i in order {
            let took = failover(&mut clusters[i], plan.seed, r).await?;
            ms[i].push(reported(clusters[i].label, plan.seed, r, took));
        }
    }
    let ratio = median(&ms[0].iter().zip(&ms[1]).map(|(a, b)| a / b).collect::<Vec<_>>());
    println!(
        "  failover: testkeeper median {:.1} ms, zookeeper median {:.1} ms, ratio x{ratio:.3}",
        median(&ms[0]),
        median(&ms[1])
    );
    let mut alone = Vec::new();
    for r in plan.rounds..plan.rounds + plan.failover_rounds {
        let took = failover(&mut clusters[0], plan.seed, r).await?;
        alone.push(reported(clusters[0].label, plan.seed, r, took));
    }
    let (failed, gaps) = quantiles(&alone);
    if !alone.is_empty() {
        println!(
            "  failover: testkeeper alone over {} kills: p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms, {failed} without a write \
             within {FAILOVER_LIMIT:?}",
            alone.len(),
            gaps["p50_ms"].as_f64().unwrap_or(f64::NAN),
            gaps["p99_ms"].as_f64().unwrap_or(f64::NAN),
            gaps["max_ms"].as_f64().unwrap_or(f64::NAN),
        );
    }
    Ok(json!({
        "testkeeper_ms": ms[0], "zookeeper_ms": ms[1],
        "testkeeper_median_ms": median(&ms[0]), "zookeeper_median_ms": median(&ms[1]), "ratio": ratio,
        "testkeeper_alone": { "kills": alone.len(), "failed": failed, "ms": alone, "quantiles": gaps },
    }))
}

/// How many of `ms` failed (NaN: no write within the limit), and the quantiles of the rest.
fn quantiles(ms: &[f64]) -> (usize, Value) {
    let done: Vec<f64> = ms.iter().copied().filter(|m| m.is_finite()).collect();
    let q = |p| if done.is_empty() { Value::Null } else { json!(quantile(&done, p)) };
    (ms.len() - done.len(), json!({ "p50_ms": q(0.5), "p99_ms": q(0.99), "max_ms": q(1.0) }))
}

/// One round's write gap in ms, printed; NaN for a cluster that did not recover in time (a
/// result to report, a `null` in the JSON left out of the medians, not a reason to lose the
/// rest of the run).
fn reported(label: &str, seed: u64, round: usize, took: Option<Duration>) -> f64 {
    let Some(took) = took else {
        println!(
            "  failover round {round} {label:<10} NO write acknowledged within {FAILOVER_LIMIT:?} of the kill \
             (the cluster did not recover: report it with --seed {seed})"
        );
        return f64::NAN;
    };
    let ms = took.as_secs_f64() * 1e3;
    println!("  failover round {round} {label:<10} kill to first acknowledged write {ms:>7.1} ms");
    ms
}

/// Kills the leader of `e` and times the first acknowledged create through a survivor; then
/// restarts the killed member and waits until the cluster is whole again. `None`: no write was
/// acknowledged within [`FAILOVER_LIMIT`].
async fn failover(e: &mut Ensemble, seed: u64, round: usize) -> Result<Option<Duration>, FailoverError> {
    let cluster = e.label;
    let leader =
        tokio::task::block_in_place(|| e.await_whole()).map_err(|why| FailoverError::Ensemble { cluster, why })?;
    let survivors = e.followers(leader);
    let prefix = format!("/bench-failover-{seed:016x}-{round}");
    let first = connect(survivors[0]).await?;
    // A member restarted by the round before may still be catching up (an in-memory one
    // installs the leader's snapshot, which can cut a connection made meanwhile): the parent
    // is written the way a client would, retried on connection loss.
    let parent = write_until_acknowledged(survivors[0], Some(first.clone()), &prefix);
    if tokio::time::timeout(FAILOVER_LIMIT, parent).await.is_err() {
        return Err(FailoverError::NotAcknowledged { path: prefix, within: FAILOVER_LIMIT });
    }
    let first = if first.is_closed() { connect(survivors[0]).await? } else { first };
    let (go_tx, go_rx) = watch::channel(false);
    let (done_tx, mut done_rx) = mpsc::channel(SIZE);
    let mut tasks = Vec::new();
    for (n, addr) in survivors.into_iter().enumerate() {
        // A connection that fails now is made again by the writer after the kill.
        let client = if n == 0 { Some(first.clone()) } else { connect(addr).await.ok() };
        let (mut go, done, prefix) = (go_rx.clone(), done_tx.clone(), prefix.clone());
        tasks.push(tokio::spawn(async move {
            let _ = go.wait_for(|g| *g).await;
            write_until_acknowledged(addr, client, &format!("{prefix}/c{n}")).await;
            let _ = done.send(Instant::now()).await;
        }));
    }
    let killed_at = Instant::now();
    tokio::task::block_in_place(|| e.kill(leader));
    let _ = go_tx.send(true);
    let acknowledged = tokio::time::timeout(FAILOVER_LIMIT, done_rx.recv()).await;
    for t in &tasks {
        t.abort();
    }
    let at = acknowledged.ok().flatten();
    tokio::task::block_in_place(|| e.restart(leader)).map_err(|why| FailoverError::Ensemble { cluster, why })?;
    Ok(at.map(|at| at - killed_at))
}

async fn connect(addr: SocketAddr) -> Result<std::sync::Arc<Client>, FailoverError> {
    let c = tokio::time::timeout(CONNECT_LIMIT, Client::connect(addr, ConnectOptions::default()))
        .await
        .map_err(|_| FailoverError::ConnectTimedOut { addr, within: CONNECT_LIMIT })?
        .map_err(|source| FailoverError::Connect { addr, source })?;
    Ok(std::sync::Arc::new(c))
}

/// Creates `path` through `addr` until a create is acknowledged (NODEEXISTS too: an earlier
/// try went through), reconnecting whenever the connection is gone.
async fn write_until_acknowledged(addr: SocketAddr, mut client: Option<std::sync::Arc<Client>>, path: &str) {
    loop {
        let c = match client.take() {
            Some(c) if !c.is_closed() => c,
            _ => match connect(addr).await {
                Ok(c) => c,
                Err(_) => {
                    tokio::time::sleep(Duration::from_millis(2)).await;
                    continue;
                }
            },
        };
        let acl = Acl::open();
        let call = c.create(path, b"", &acl, create_mode::PERSISTENT);
        if let Ok(Ok(_) | Err(ClientError::Zk(ZkError::NodeExists))) =
            tokio::time::timeout(Duration::from_secs(5), call).await
        {
            return;
        }
        client = Some(c);
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}

#[cfg(test)]
mod tests {
    use super::quantiles;

    /// A kill that saw no write is counted apart and left out of the quantiles, which are
    /// nearest-rank over the rest.
    #[test]
    fn failed_kills_are_counted_apart_from_the_quantiles() {
        let mut ms: Vec<f64> = (1..=100).map(f64::from).collect();
        ms.insert(7, f64::NAN);
        let (failed, q) = quantiles(&ms);
        assert_eq!(failed, 1);
        assert_eq!(
            (q["p50_ms"].as_f64(), q["p99_ms"].as_f64(), q["max_ms"].as_f64()),
            (Some(51.0), Some(100.0), Some(100.0))
        );
        let (failed, q) = quantiles(&[f64::NAN]);
        assert_eq!((failed, q["p99_ms"].is_null()), (1, true));
    }
}

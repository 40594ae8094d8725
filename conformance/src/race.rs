//! Concurrent steps: fresh sessions compete, and the transcript records the invariant the
//! outcome must satisfy (one lock winner; distinct, increasing sequential names; no lost
//! counter update), never the interleaving, which differs from run to run.

use std::net::SocketAddr;

use serde_json::{json, Value};
use testkeeper_wire::client::{Client, ConnectOptions};
use testkeeper_wire::Acl;
use tokio::task::JoinSet;

use crate::ops::resolve;
use crate::reply::code_name;
use crate::scenario::{flags, Race};

/// BADVERSION.
const BAD_VERSION: i32 = -103;

async fn connect_all(addr: SocketAddr, n: usize) -> Result<Vec<Client>, String> {
    let mut out = Vec::with_capacity(n);
    for i in 0..n {
        out.push(Client::connect(addr, ConnectOptions::default()).await.map_err(|e| format!("race session {i}: {e}"))?);
    }
    Ok(out)
}

/// Runs the race; returns its facts and the persistent nodes it created (for cleanup).
pub async fn run(addr: SocketAddr, base: &str, race: &Race) -> (Value, Vec<String>) {
    let r = match race {
        Race::Lock { sessions, path } => lock(addr, &resolve(path, base), *sessions).await.map(|v| (v, Vec::new())),
        Race::Sequential { sessions, per_session, prefix } => {
            sequential(addr, &resolve(prefix, base), *sessions, *per_session).await
        }
        Race::Counter { sessions, per_session, path } => {
            counter(addr, &resolve(path, base), *sessions, *per_session).await.map(|v| (v, Vec::new()))
        }
    };
    r.unwrap_or_else(|e| (json!({ "client_error": e }), Vec::new()))
}

async fn lock(addr: SocketAddr, path: &str, n: usize) -> Result<Value, String> {
    let clients = connect_all(addr, n).await?;
    let ids: Vec<i64> = clients.iter().map(Client::session_id).collect();
    let mut set = JoinSet::new();
    for c in clients {
        let path = path.to_string();
        set.spawn(async move {
            let r = c.create(&path, b"", &Acl::open(), flags::EPHEMERAL).await;
            (c, r.map(|_| ()).map_err(|e| e.code().map_or_else(|| e.to_string(), code_name)))
        });
    }
    let mut clients = Vec::new();
    let (mut winners, mut losers_nodeexists, mut other) = (0, 0, Vec::new());
    while let Some(done) = set.join_next().await {
        let (c, r) = done.map_err(|e| e.to_string())?;
        match r {
            Ok(()) => winners += 1,
            Err(code) if code == "NODEEXISTS" => losers_nodeexists += 1,
            Err(code) => other.push(code),
        }
        clients.push(c);
    }
    let owner_is_racer = match clients[0].exists(path, false).await {
        Ok(Some(stat)) => ids.contains(&stat.ephemeral_owner),
        _ => false,
    };
    for c in &clients {
        let _ = c.close().await;
    }
    let observer = connect_all(addr, 1).await?.remove(0);
    let gone = matches!(observer.exists(path, false).await, Ok(None));
    let _ = observer.close().await;
    Ok(json!({
        "exactly_one_winner": winners == 1,
        "others_got_nodeexists": losers_nodeexists == n - 1,
        "unexpected_errors": other,
        "owner_is_the_winner_session": owner_is_racer,
        "gone_after_sessions_close": gone,
    }))
}

async fn sequential(addr: SocketAddr, prefix: &str, n: usize, each: usize) -> Result<(Value, Vec<String>), String> {
    let clients = connect_all(addr, n).await?;
    let mut set = JoinSet::new();
    for c in clients {
        let prefix = prefix.to_string();
        set.spawn(async move {
            let mut names = Vec::new();
            for _ in 0..each {
                match c.create(&prefix, b"", &Acl::open(), flags::SEQUENTIAL).await {
                    Ok(p) => names.push(p),
                    Err(e) => return (c, Err(e.to_string()), names),
                }
            }
            (c, Ok(()), names)
        });
    }
    let mut per_session = Vec::new();
    let mut errors = Vec::new();
    while let Some(done) = set.join_next().await {
        let (c, r, names) = done.map_err(|e| e.to_string())?;
        if let Err(e) = r {
            errors.push(e);
        }
        per_session.push(names);
        let _ = c.close().await;
    }
    let increasing = per_session.iter().all(|names| names.windows(2).all(|w| w[0] < w[1]));
    let mut suffixes: Vec<i64> =
        per_session.iter().flatten().filter_map(|p| p.strip_prefix(prefix).and_then(|s| s.parse().ok())).collect();
    suffixes.sort();
    let expected: Vec<i64> = (0..(n * each) as i64).collect();
    let facts = json!({
        "errors": errors,
        "each_session_strictly_increasing": increasing,
        "suffixes_are_0_to_n_minus_1": suffixes == expected,
        "ten_digit_suffixes": per_session.iter().flatten().all(|p| p.len() == prefix.len() + 10),
    });
    Ok((facts, per_session.into_iter().flatten().collect()))
}

/// Each session adds 1 `each` times by read + versioned set, retrying on BADVERSION.
async fn counter(addr: SocketAddr, path: &str, n: usize, each: usize) -> Result<Value, String> {
    let clients = connect_all(addr, n).await?;
    let mut set = JoinSet::new();
    for c in clients {
        let path = path.to_string();
        set.spawn(async move {
            let (mut conflicts, mut errors) = (0usize, Vec::new());
            let mut done = 0;
            while done < each && errors.is_empty() {
                let (data, stat) = match c.get_data(&path, false).await {
                    Ok(v) => v,
                    Err(e) => {
                        errors.push(e.to_string());
                        break;
                    }
                };
                let value: u64 = String::from_utf8_lossy(&data).trim().parse().unwrap_or(0);
                match c.set_data(&path, (value + 1).to_string().as_bytes(), stat.version).await {
                    Ok(_) => done += 1,
                    Err(e) if e.code() == Some(BAD_VERSION) => conflicts += 1,
                    Err(e) => errors.push(e.to_string()),
                }
            }
            let _ = c.close().await;
            (conflicts, errors)
        });
    }
    let mut errors = Vec::new();
    while let Some(r) = set.join_next().await {
        errors.extend(r.map_err(|e| e.to_string())?.1);
    }
    let observer = connect_all(addr, 1).await?.remove(0);
    let read = observer.get_data(path, false).await.map_err(|e| e.to_string());
    let _ = observer.close().await;
    let (data, stat) = read?;
    let total = (n * each) as u64;
    Ok(json!({
        "errors": errors,
        "final_value_is_the_number_of_increments": String::from_utf8_lossy(&data).trim() == total.to_string(),
        "version_counts_every_successful_set": stat.version as u64 == total,
    }))
}

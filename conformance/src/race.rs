//! Concurrent steps: fresh sessions compete, and the transcript records the invariant the
//! outcome must satisfy (one lock winner; distinct, increasing sequential names), never the
//! interleaving, which differs from run to run.

use std::net::SocketAddr;

use serde_json::{json, Value};
use testkeeper_wire::client::{Client, ConnectOptions};
use testkeeper_wire::Acl;
use tokio::task::JoinSet;

use crate::ops::resolve;
use crate::runner::code_name;
use crate::scenario::{flags, Race};

impl Race {
    /// The step's text form in transcripts.
    pub fn describe(&self) -> String {
        match self {
            Race::Lock { sessions, path } => format!("race lock {path} sessions={sessions}"),
            Race::Sequential { sessions, per_session, prefix } => {
                format!("race sequential {prefix} sessions={sessions} each={per_session}")
            }
        }
    }
}

async fn connect_all(addr: SocketAddr, n: usize) -> Result<Vec<Client>, String> {
    let mut out = Vec::with_capacity(n);
    for i in 0..n {
        out.push(Client::connect(addr, ConnectOptions::default()).await.map_err(|e| format!("race session {i}: {e}"))?);
    }
    Ok(out)
}

/// Runs the race and returns its facts.
pub async fn run(addr: SocketAddr, base: &str, race: &Race) -> Value {
    match race {
        Race::Lock { sessions, path } => lock(addr, &resolve(path, base), *sessions).await,
        Race::Sequential { sessions, per_session, prefix } => {
            sequential(addr, &resolve(prefix, base), *sessions, *per_session).await
        }
    }
    .unwrap_or_else(|e| json!({ "client_error": e }))
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
    let gone = clients.is_empty() || matches!(connect_all(addr, 1).await?[0].exists(path, false).await, Ok(None));
    Ok(json!({
        "exactly_one_winner": winners == 1,
        "others_got_nodeexists": losers_nodeexists == n - 1,
        "unexpected_errors": other,
        "owner_is_the_winner_session": owner_is_racer,
        "gone_after_sessions_close": gone,
    }))
}

async fn sequential(addr: SocketAddr, prefix: &str, n: usize, each: usize) -> Result<Value, String> {
    let clients = connect_all(addr, n).await?;
    let mut set = JoinSet::new();
    for c in clients {
        let prefix = prefix.to_string();
        set.spawn(async move {
            let mut names = Vec::new();
            for _ in 0..each {
                match c.create(&prefix, b"", &Acl::open(), flags::SEQUENTIAL).await {
                    Ok(p) => names.push(p),
                    Err(e) => return (c, Err(e.to_string())),
                }
            }
            (c, Ok(names))
        });
    }
    let mut per_session = Vec::new();
    let mut errors = Vec::new();
    while let Some(done) = set.join_next().await {
        let (c, r) = done.map_err(|e| e.to_string())?;
        match r {
            Ok(names) => per_session.push(names),
            Err(e) => errors.push(e),
        }
        let _ = c.close().await;
    }
    let increasing = per_session.iter().all(|names| names.windows(2).all(|w| w[0] < w[1]));
    let mut suffixes: Vec<i64> =
        per_session.iter().flatten().filter_map(|p| p.strip_prefix(prefix).and_then(|s| s.parse().ok())).collect();
    suffixes.sort();
    let expected: Vec<i64> = (0..(n * each) as i64).collect();
    Ok(json!({
        "errors": errors,
        "each_session_strictly_increasing": increasing,
        "suffixes_are_0_to_n_minus_1": suffixes == expected,
        "ten_digit_suffixes": per_session.iter().flatten().all(|p| p.len() == prefix.len() + 10),
    }))
}

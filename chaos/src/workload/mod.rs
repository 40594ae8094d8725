//! The workloads: what each client does next, how it does it over the wire, and what the
//! final phase reads once every fault is healed. Every choice comes from the worker's own
//! generator (seeded from the run's seed and the worker's index), so the sequence of ops a
//! worker invokes replays; which op wins a race does not.
//!
//! # Layout
//! - this file: [`Step`], [`Done`], [`WorkerState`], dispatch by [`Workload`], request helpers.
//! - `register`, `set`, `ids` (ids and counter), `queue`, `lock`: one workload each.

mod ids;
mod lock;
mod queue;
mod register;
mod set;

use std::collections::HashMap;

use rand_chacha::ChaCha8Rng;
use testkeeper_wire::opcode::OpCode;
use testkeeper_wire::records::acl::Acl;
use testkeeper_wire::records::children::GetChildrenRequest;
use testkeeper_wire::records::create::CreateRequest;
use testkeeper_wire::records::data::PathRecord;
use testkeeper_wire::request::{CreateOp, Request};
use testkeeper_wire::response::Response;

use crate::client::{CallError, Conn};
use crate::config::{RunConfig, Workload};
use crate::history::{Call, Effect, Outcome, Ret};

/// The root every workload works under.
pub const ROOT: &str = "/chaos";

/// An op to invoke: what, and on which key.
#[derive(Debug, Clone, PartialEq)]
pub struct Step {
    pub call: Call,
    pub key: Option<String>,
}

/// How an op ended.
#[derive(Debug, Clone, PartialEq)]
pub struct Done {
    pub outcome: Outcome,
    pub ret: Ret,
    pub error: Option<String>,
    /// What it changed, when it is known to have happened (the white-box check reads these).
    pub effects: Vec<Effect>,
    /// Whether the session must be dropped (the op's outcome is open, or the session is gone).
    pub end_session: bool,
}

impl Done {
    /// Succeeded with `ret`, changing `effects`.
    pub fn ok(ret: Ret, effects: Vec<Effect>) -> Done {
        Done { outcome: Outcome::Ok, ret, error: None, effects, end_session: false }
    }

    /// Failed with `e`; a write's outcome may then be unknown (see [`CallError::outcome`]).
    pub fn failed(e: &CallError, write: bool) -> Done {
        Done {
            outcome: e.outcome(write),
            ret: Ret::None,
            error: Some(e.describe()),
            effects: Vec::new(),
            end_session: e.ends_session(),
        }
    }
}

/// What one worker remembers between ops.
#[derive(Debug, Default)]
pub struct WorkerState {
    pub worker: usize,
    /// Ops this worker invoked (makes values unique: `(worker + 1) * 10^9 + n`).
    pub n: i64,
    /// register: the (value, version) this worker last saw per key.
    pub seen: HashMap<String, (i64, i32)>,
    /// lock: the lock node this session holds, its token, and fenced writes left.
    pub lock: Option<(String, i64, u32)>,
}

impl WorkerState {
    /// A value nobody else writes.
    pub fn unique(&mut self) -> i64 {
        self.n += 1;
        (self.worker as i64 + 1) * 1_000_000_000 + self.n
    }

    /// The session ended: whatever it held is gone with it.
    pub fn session_lost(&mut self) {
        self.lock = None;
    }
}

/// A workload node that could not be created: its path, and what the call gave instead.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SetupError {
    pub path: String,
    pub error: CallError,
}

impl std::fmt::Display for SetupError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "creating {}: {}", self.path, self.error.describe())
    }
}

impl std::error::Error for SetupError {}

/// Creates the workload's nodes.
///
/// # Errors
/// A request failed (the target is unusable).
pub async fn setup(cfg: &RunConfig, conn: &Conn) -> Result<(), SetupError> {
    let mut paths = vec![ROOT.to_string(), format!("{ROOT}/{}", cfg.workload.name())];
    if cfg.workload == Workload::Register {
        paths.extend((0..cfg.keys).map(|k| register::path(&format!("k{k}"))));
    }
    if cfg.workload == Workload::Lock {
        paths.push(lock::RESOURCE.to_string());
    }
    for p in paths {
        let data = if cfg.workload == Workload::Register { b"0".to_vec() } else { Vec::new() };
        match conn.call(create(&p, &data, 0), &mut Vec::new()).await {
            Ok(_) | Err(CallError::Server(-110)) => {}
            Err(error) => return Err(SetupError { path: p, error }),
        }
    }
    Ok(())
}

/// The next op of a worker.
pub fn next(cfg: &RunConfig, rng: &mut ChaCha8Rng, st: &mut WorkerState) -> Step {
    match cfg.workload {
        Workload::Register => register::next(cfg.keys, rng, st),
        Workload::Set => set::next(rng, st),
        Workload::Ids | Workload::Counter => ids::next(cfg.workload, rng),
        Workload::Queue => queue::next(rng, st),
        Workload::Lock => lock::next(rng, st),
    }
}

/// Runs `step` on `conn`; reply zxids go to `zxids`.
pub async fn exec(w: Workload, conn: &Conn, step: &Step, st: &mut WorkerState, zxids: &mut Vec<i64>) -> Done {
    match w {
        Workload::Register => register::exec(conn, step, st, zxids).await,
        Workload::Set => set::exec(conn, step, st, zxids).await,
        Workload::Ids | Workload::Counter => ids::exec(conn, step, st, zxids).await,
        Workload::Queue => queue::exec(conn, step, zxids).await,
        Workload::Lock => lock::exec(conn, step, st, zxids).await,
    }
}

/// The final phase's reads, one list per server (each runs on a fresh session to it).
pub fn finals(cfg: &RunConfig) -> Vec<Step> {
    match cfg.workload {
        Workload::Register => (0..cfg.keys).map(|k| Step { call: Call::Read, key: Some(format!("k{k}")) }).collect(),
        Workload::Set => vec![Step { call: Call::ReadSet, key: None }],
        Workload::Counter => vec![Step { call: Call::CounterRead, key: None }],
        Workload::Queue => vec![Step { call: Call::Drain, key: None }],
        Workload::Ids | Workload::Lock => Vec::new(),
    }
}

/// A create request.
pub fn create(path: &str, data: &[u8], flags: i32) -> Request {
    let req = CreateRequest { path: path.into(), data: Some(data.to_vec()), acl: Acl::open(), flags };
    Request::Create(CreateOp { op: OpCode::Create, req, ttl: 0 })
}

/// `sync(path)` then `getChildren(path)`: the children as a linearizable read sees them.
///
/// # Errors
/// Either request failed.
pub async fn synced_children(conn: &Conn, path: &str, zxids: &mut Vec<i64>) -> Result<Vec<String>, CallError> {
    conn.call(Request::Sync(PathRecord { path: path.into() }), zxids).await?;
    children(conn, path, zxids).await
}

/// `getChildren(path)`.
///
/// # Errors
/// The request failed.
pub async fn children(conn: &Conn, path: &str, zxids: &mut Vec<i64>) -> Result<Vec<String>, CallError> {
    match conn.call(Request::GetChildren(GetChildrenRequest { path: path.into(), watch: false }), zxids).await? {
        Response::Children(c) => Ok(c),
        other => Err(CallError::Lost(format!("unexpected reply to getChildren: {other:?}"))),
    }
}

/// The sequence number ZooKeeper appends to a sequential node's name (10 digits).
pub fn seq_of(name: &str) -> Option<i64> {
    let digits = name.len().checked_sub(10).map(|at| &name[at..])?;
    digits.parse().ok()
}

/// The effect of a create at `path` with `data`.
pub fn created(path: &str, data: &[u8]) -> Effect {
    Effect { kind: "create".into(), path: path.into(), data: Some(data.to_vec()) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sequence_numbers_come_from_the_last_ten_digits() {
        assert_eq!(seq_of("/chaos/ids/id-0000000042"), Some(42));
        assert_eq!(seq_of("lock-0000000007"), Some(7));
        assert_eq!(seq_of("short"), None);
        let mut st = WorkerState { worker: 2, ..Default::default() };
        assert_eq!((st.unique(), st.unique()), (3_000_000_001, 3_000_000_002));
    }
}

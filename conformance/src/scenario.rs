//! What a scenario is: a name, the source of the behaviour it pins, and steps; plus the small
//! builders the catalogue tables are written with.
//!
//! A scenario writes only under its own subtree `~` (= `<root>/<name>`); the runner creates
//! `~` before the first step and removes it after the last, so scenarios never see each other.

use crate::ops::{AclKind, Op};
pub use testkeeper_wire::OpCode;

/// One step: a request by one session, a session event, or a concurrent race.
#[derive(Debug, Clone)]
pub enum Step {
    /// Session `n` sends an op.
    Do(usize, Op),
    /// Opens session `n` (again) asking for `timeout_ms`; records the negotiated timeout.
    Connect(usize, i32),
    /// Session `n` closes (its ephemerals go; other sessions' watches fire).
    Close(usize),
    /// Several fresh sessions compete; the transcript holds the invariant, not the timing.
    Race(Race),
}

/// Concurrent patterns whose outcome is stated as an invariant.
#[derive(Debug, Clone)]
pub enum Race {
    /// `sessions` sessions create the same ephemeral `path` at once: exactly one wins, the
    /// others get NODEEXISTS, and the node goes when the sessions close.
    Lock { sessions: usize, path: String },
    /// `sessions` sessions each create `per_session` persistent-sequential `prefix` nodes at
    /// once: all names distinct, each session's strictly increasing, suffixes 0..n-1.
    Sequential { sessions: usize, per_session: usize, prefix: String },
}

/// One catalogue entry.
#[derive(Debug, Clone)]
pub struct Scenario {
    pub name: &'static str,
    /// What it pins, in a sentence.
    pub about: &'static str,
    /// Where the behaviour comes from (ZooKeeper source, a ticket, a seed file).
    pub source: &'static str,
    pub steps: Vec<Step>,
}

impl Scenario {
    /// Whether every step only reads (such scenarios run in `--read-only` mode; they still get
    /// no `~` subtree).
    pub fn read_only(&self) -> bool {
        self.steps.iter().all(|s| match s {
            Step::Do(_, op) => !op.writes(),
            Step::Connect(..) | Step::Close(_) => true,
            Step::Race(_) => false,
        })
    }

    /// Whether a step uses a Keeper-only op: such a scenario runs only Keeper against Keeper.
    pub fn keeper_only(&self) -> bool {
        self.steps.iter().any(|s| matches!(s, Step::Do(_, op) if op.keeper_only()))
    }

    /// Session indices that the steps use (opened before the first step).
    pub fn sessions(&self) -> usize {
        self.steps
            .iter()
            .map(|s| match s {
                Step::Do(n, _) | Step::Connect(n, _) | Step::Close(n) => n + 1,
                Step::Race(_) => 0,
            })
            .max()
            .unwrap_or(0)
    }
}

/// `ZooDefs.CreateMode` flags.
pub mod flags {
    pub const PERSISTENT: i32 = 0;
    pub const EPHEMERAL: i32 = 1;
    pub const SEQUENTIAL: i32 = 2;
    pub const EPHEMERAL_SEQUENTIAL: i32 = 3;
    pub const CONTAINER: i32 = 4;
    pub const PERSISTENT_WITH_TTL: i32 = 5;
}

// Builders: the catalogue reads as a table of "session, op" rows.

pub fn create(path: &str, data: &str) -> Op {
    create_f(path, data, flags::PERSISTENT)
}
pub fn create_f(path: &str, data: &str, flags: i32) -> Op {
    Op::Create { path: path.into(), data: data.into(), flags, acl: AclKind::Open }
}
pub fn create_acl(path: &str, data: &str, acl: AclKind) -> Op {
    Op::Create { path: path.into(), data: data.into(), flags: 0, acl }
}
pub fn delete(path: &str, version: i32) -> Op {
    Op::Delete { path: path.into(), version }
}
pub fn exists(path: &str, watch: bool) -> Op {
    Op::Exists { path: path.into(), watch }
}
pub fn get(path: &str, watch: bool) -> Op {
    Op::Get { path: path.into(), watch }
}
pub fn set(path: &str, data: &str, version: i32) -> Op {
    Op::Set { path: path.into(), data: data.into(), version }
}
pub fn children(path: &str, watch: bool) -> Op {
    Op::Children { path: path.into(), watch }
}
pub fn children2(path: &str, watch: bool) -> Op {
    Op::Children2 { path: path.into(), watch }
}
pub fn get_acl(path: &str) -> Op {
    Op::GetAcl { path: path.into() }
}
pub fn set_acl(path: &str, acl: AclKind, version: i32) -> Op {
    Op::SetAcl { path: path.into(), acl, version }
}
pub fn sync(path: &str) -> Op {
    Op::Sync { path: path.into() }
}
pub fn check(path: &str, version: i32) -> Op {
    Op::Check { path: path.into(), version }
}
pub fn multi(ops: Vec<Op>) -> Op {
    Op::Multi(ops)
}
pub fn multi_read(ops: Vec<Op>) -> Op {
    Op::MultiRead(ops)
}
pub fn digest_auth(user_password: &str) -> Op {
    Op::Auth { scheme: "digest".into(), auth: user_password.into() }
}
pub fn add_watch(path: &str, mode: i32) -> Op {
    Op::AddWatch { path: path.into(), mode }
}
pub fn create_as(op: OpCode, path: &str, flags: i32, ttl: i64) -> Op {
    Op::CreateAs { op, path: path.into(), data: String::new(), flags, ttl }
}
fn paths(v: &[&str]) -> Vec<String> {
    v.iter().map(|p| p.to_string()).collect()
}
pub fn set_watches(since_start: bool, data: &[&str], exist: &[&str], child: &[&str]) -> Op {
    Op::SetWatches { since_start, data: paths(data), exist: paths(exist), child: paths(child) }
}
pub fn check_watches(path: &str, kind: i32) -> Op {
    Op::CheckWatches { path: path.into(), kind }
}
pub fn remove_watches(path: &str, kind: i32) -> Op {
    Op::RemoveWatches { path: path.into(), kind }
}
/// Session `n` sends `op`.
pub fn s(n: usize, op: Op) -> Step {
    Step::Do(n, op)
}

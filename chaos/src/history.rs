//! The history of a run: every operation a client invoked, with how it completed (ok, fail,
//! or unknown when the outcome cannot be known, as a lost reply), and every nemesis action,
//! all on one clock (nanoseconds since the run started). Checkers read nothing else.

use serde::{Deserialize, Serialize};

/// Position of an op in [`History::ops`].
pub type OpId = usize;

/// How an operation ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Outcome {
    /// The server said it happened.
    Ok,
    /// The server said it did not happen (a definite error such as BADVERSION), or it was a
    /// read, which changes nothing whatever its fate.
    Fail,
    /// Nobody knows: the reply was lost, the connection dropped, the request timed out. The
    /// op may have happened at any time after its invocation.
    Unknown,
}

impl Outcome {
    /// `ok`, `fail`, `unknown`.
    pub fn name(self) -> &'static str {
        match self {
            Outcome::Ok => "ok",
            Outcome::Fail => "fail",
            Outcome::Unknown => "unknown",
        }
    }
}

/// What an op asked for, per workload.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "f", rename_all = "kebab-case")]
pub enum Call {
    /// register: `sync` then `getData` (a linearizable read).
    Read,
    /// register: `getData` without `sync` (sequentially consistent only; the session checker
    /// reads it).
    ReadLocal,
    /// register: `setData(value, -1)`.
    Write { value: i64 },
    /// register: `setData(value, version)`; `expect` is the value this client last saw at
    /// that version.
    Cas { version: i32, expect: i64, value: i64 },
    /// set: create the child `e<element>`.
    Add { element: i64 },
    /// set: `sync` then `getChildren`.
    ReadSet,
    /// ids: one sequential create, or a multi of `count` of them.
    NewIds { count: usize },
    /// counter: a multi of `n` sequential creates and a check of the counter node's version;
    /// `guarded` checks a stale version on purpose, so the whole multi must fail.
    CounterAdd { n: i64, guarded: bool },
    /// counter: `sync`, then the counter node's child count.
    CounterRead,
    /// queue: a sequential child holding `value`.
    Enqueue { value: i64 },
    /// queue: list, then a multi (check and bump the parent's version, delete the first child).
    Dequeue,
    /// queue: `sync` and list what is left.
    Drain,
    /// lock: create an ephemeral-sequential node and wait until it is the lowest.
    Acquire,
    /// lock: a multi (check that our lock node exists, set the resource) carrying our token.
    Fenced { token: i64, value: i64 },
    /// lock: delete our lock node.
    Release { token: i64 },
}

impl Call {
    /// The op's name, as Jepsen's `:f`.
    pub fn name(&self) -> &'static str {
        match self {
            Call::Read => "read",
            Call::ReadLocal => "read-local",
            Call::Write { .. } => "write",
            Call::Cas { .. } => "cas",
            Call::Add { .. } => "add",
            Call::ReadSet => "read",
            Call::NewIds { .. } => "new-ids",
            Call::CounterAdd { .. } => "add",
            Call::CounterRead => "read",
            Call::Enqueue { .. } => "enqueue",
            Call::Dequeue => "dequeue",
            Call::Drain => "drain",
            Call::Acquire => "acquire",
            Call::Fenced { .. } => "fenced-write",
            Call::Release { .. } => "release",
        }
    }

    /// Whether the op can change the tree (reads never do).
    pub fn is_write(&self) -> bool {
        !matches!(self, Call::Read | Call::ReadLocal | Call::ReadSet | Call::CounterRead | Call::Drain)
    }
}

/// What an op returned.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Ret {
    /// Nothing (a failure, an unknown outcome, a release).
    #[default]
    None,
    /// register read: the value, its version and the node's mzxid.
    Value { value: i64, version: i32, mzxid: i64 },
    /// register write or cas: the version after it.
    Version { version: i32 },
    /// set read, or queue drain: the elements.
    Elements { elements: Vec<i64> },
    /// ids: the sequence numbers created.
    Ids { ids: Vec<i64> },
    /// counter read.
    Count { count: i64 },
    /// queue dequeue: the value taken (`None`: the queue was empty).
    Dequeued { value: Option<i64> },
    /// lock acquire: the fencing token (the lock node's sequence number).
    Token { token: i64 },
}

/// A change the op makes if it happens, for the white-box check that every acknowledged
/// write is in the committed log exactly once.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Effect {
    /// `create`, `set` or `delete`.
    pub kind: String,
    pub path: String,
    /// The data written, when it identifies the write.
    pub data: Option<Vec<u8>>,
}

/// One operation of one client.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Op {
    pub id: OpId,
    /// Jepsen's process: a worker gets a new one whenever its session is lost, since an
    /// unknown op leaves the old one's outcome open forever.
    pub process: u64,
    pub worker: usize,
    /// The session id the server gave this process.
    pub session: i64,
    /// Index of the server (in the target list) the session is connected to.
    pub node: usize,
    /// The key (register) or object the op is on.
    pub key: Option<String>,
    #[serde(flatten)]
    pub call: Call,
    pub outcome: Outcome,
    #[serde(rename = "ret")]
    pub ret: Ret,
    /// The error behind a fail or an unknown outcome.
    pub error: Option<String>,
    /// The zxid in the reply header of the op's last request, when a reply came.
    pub zxid: Option<i64>,
    /// The zxids of every reply the op got, in order (a multi-step op has several).
    pub zxids: Vec<i64>,
    pub invoke_ns: u64,
    /// When the client stopped waiting; for an unknown op its effect may come later still.
    pub complete_ns: u64,
    /// What it changes if it happens.
    pub effects: Vec<Effect>,
    /// Part of the final phase (after every fault was healed).
    pub final_phase: bool,
}

impl Op {
    /// Whether the op definitely happened.
    pub fn ok(&self) -> bool {
        self.outcome == Outcome::Ok
    }

    /// Invocation to completion, in ms since the run started (for messages).
    pub fn span_ms(&self) -> (f64, f64) {
        (self.invoke_ns as f64 / 1e6, self.complete_ns as f64 / 1e6)
    }

    /// One line for a report: `#12 p3 write(7) on k1 -> ok version=4 [12.3..14.0 ms]`.
    pub fn describe(&self) -> String {
        let args = match &self.call {
            Call::Write { value } => format!("({value})"),
            Call::Cas { version, expect, value } => format!("(v{version}:{expect} -> {value})"),
            Call::Add { element } => format!("({element})"),
            Call::NewIds { count } => format!("({count})"),
            Call::CounterAdd { n, guarded } => format!("({n}{})", if *guarded { ", stale guard" } else { "" }),
            Call::Enqueue { value } => format!("({value})"),
            Call::Fenced { token, value } => format!("(token {token}, {value})"),
            Call::Release { token } => format!("(token {token})"),
            _ => String::new(),
        };
        let ret = match &self.ret {
            Ret::None => String::new(),
            Ret::Value { value, version, mzxid } => format!(" value={value} version={version} mzxid={mzxid:#x}"),
            Ret::Version { version } => format!(" version={version}"),
            Ret::Elements { elements } => format!(" {} elements", elements.len()),
            Ret::Ids { ids } => format!(" ids={ids:?}"),
            Ret::Count { count } => format!(" count={count}"),
            Ret::Dequeued { value } => format!(" value={value:?}"),
            Ret::Token { token } => format!(" token={token}"),
        };
        let err = self.error.as_ref().map(|e| format!(" ({e})")).unwrap_or_default();
        let key = self.key.as_ref().map(|k| format!(" on {k}")).unwrap_or_default();
        let (a, b) = self.span_ms();
        format!(
            "#{} p{} {}{args}{key} -> {}{ret}{err} [{a:.1}..{b:.1} ms]",
            self.id,
            self.process,
            self.call.name(),
            self.outcome.name()
        )
    }
}

/// One nemesis action, from when it started to when it was undone.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct NemesisEvent {
    /// The nemesis kind, e.g. `partition-halves`.
    pub kind: String,
    /// What it did, e.g. `cut {1} | {2,3}`.
    pub detail: String,
    pub start_ns: u64,
    /// When it was undone (`None`: it lasted to the end of the main phase).
    pub end_ns: Option<u64>,
}

/// Everything a run recorded.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct History {
    pub ops: Vec<Op>,
    pub nemesis: Vec<NemesisEvent>,
    /// When the main phase ended and the faults were healed.
    pub healed_ns: u64,
    /// The embedded cluster's own record, for the white-box checks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster: Option<ClusterRecord>,
}

impl History {
    /// The ops `ids` point at.
    pub fn ops_of<'a>(&'a self, ids: &'a [OpId]) -> impl Iterator<Item = &'a Op> + 'a {
        ids.iter().filter_map(|i| self.ops.get(*i))
    }

    /// Counts by outcome: (ok, fail, unknown).
    pub fn counts(&self) -> (usize, usize, usize) {
        let n = |o| self.ops.iter().filter(|op| op.outcome == o).count();
        (n(Outcome::Ok), n(Outcome::Fail), n(Outcome::Unknown))
    }
}

/// An entry one node of the embedded cluster applied, as the white-box checks read it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AppliedEntry {
    /// The node (1-based id) that applied it.
    pub node: u64,
    pub index: u64,
    /// The Raft term the entry was proposed in.
    pub term: u64,
    pub zxid: i64,
    /// The node's tree digest after applying it.
    pub digest: u64,
    /// ns since the run started.
    pub at_ns: u64,
    /// The changes it made (empty for a session entry, a no-op or a failed write), in the
    /// same terms as [`Op::effects`]: a create at its final path, a set with its data, a delete.
    pub effects: Vec<Effect>,
}

/// A role a node took in a term.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RoleChange {
    pub node: u64,
    pub term: u64,
    /// `leader`, `follower`, `candidate`, `pre-candidate`.
    pub role: String,
    pub at_ns: u64,
}

/// A node's state replaced whole: at (re)start from its disk, or by a leader's snapshot.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StateLoad {
    pub node: u64,
    /// The log index the loaded state holds.
    pub index: u64,
    pub digest: u64,
    /// `start` or `snapshot`.
    pub how: String,
    pub at_ns: u64,
}

/// What the embedded cluster recorded (absent for an external target). `final_digests` are
/// (node, applied index, digest) once every node caught up.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClusterRecord {
    /// Every entry every node applied, in the order each node applied them.
    pub applied: Vec<AppliedEntry>,
    pub roles: Vec<RoleChange>,
    pub loads: Vec<StateLoad>,
    /// Each node's final applied index and digest, after the final phase.
    pub final_digests: Vec<(u64, u64, u64)>,
}

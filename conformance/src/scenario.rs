//! What a scenario is: a name, the source of the behaviour it pins, where its sessions connect,
//! and steps. Scenarios are data: `conformance/scenarios/*.txt`, read by `parse`.
//!
//! A scenario writes only under its own subtree `~` (= `<root>/<name>`); the runner creates
//! `~` before the first step and removes what the scenario created after the last, so
//! scenarios never see each other.

use std::collections::BTreeMap;
use std::fmt;

use crate::ops::Op;

/// One step: a request by one session, a session event, a four-letter word, a raw frame, or
/// a concurrent race.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// Session `n` sends an op.
    Do(usize, Op),
    /// Opens session `n` (again, as a new session) asking for `timeout_ms`, on `node` (else
    /// the session's node); records the negotiated timeout.
    Connect { session: usize, timeout_ms: i32, node: Option<usize> },
    /// Session `n` closes (its ephemerals go; other sessions' watches fire).
    Close(usize),
    /// Session `n`'s connection drops without closing the session.
    Drop(usize),
    /// Session `n` reconnects, on `node` if given, with its id and password (and the last
    /// zxid it saw), as a client does after a connection loss; watches are not re-sent.
    Resume { session: usize, node: Option<usize> },
    /// Session `n`'s connection drops and the step waits until the server has expired the
    /// session (its ephemerals are gone).
    Expire(usize),
    /// Session `n` polls `path` until it does not exist (container and TTL collection),
    /// bounded by the run's collection wait.
    WaitGone(usize, String),
    /// A four-letter word on a connection of its own, to `node`.
    FourLetter { word: String, node: usize },
    /// A request frame with any opcode and body, on a fresh session.
    Raw { op: i32, body: Vec<u8> },
    /// Several fresh sessions compete; the transcript holds the invariant, not the timing.
    Race(Race),
}

/// Concurrent patterns whose outcome is stated as an invariant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Race {
    /// `sessions` sessions create the same ephemeral `path` at once: exactly one wins, the
    /// others get NODEEXISTS, and the node goes when the sessions close.
    Lock { sessions: usize, path: String },
    /// `sessions` sessions each create `per_session` persistent-sequential `prefix` nodes at
    /// once: all names distinct, each session's strictly increasing, suffixes 0..n-1.
    Sequential { sessions: usize, per_session: usize, prefix: String },
    /// `sessions` sessions each add `per_session` to the counter at `path` by versioned
    /// setData, retrying on BADVERSION: the final value is the sum, the version the count.
    Counter { sessions: usize, per_session: usize, path: String },
}

impl Step {
    /// The session a step belongs to, if any (`s0`...).
    pub fn session(&self) -> Option<usize> {
        match self {
            Step::Do(n, _) | Step::Close(n) | Step::Drop(n) | Step::Expire(n) | Step::WaitGone(n, _) => Some(*n),
            Step::Connect { session, .. } | Step::Resume { session, .. } => Some(*session),
            Step::FourLetter { .. } | Step::Raw { .. } | Step::Race(_) => None,
        }
    }

    /// The step as a scenario file line (`parse::step` reads it back).
    pub fn line(&self) -> String {
        match self {
            Step::Race(r) => r.describe(),
            other => format!("{} {other}", other.session_label()),
        }
    }

    /// The transcript's `session` field.
    pub fn session_label(&self) -> String {
        match self {
            Step::FourLetter { .. } => "4lw".into(),
            Step::Raw { .. } => "raw".into(),
            Step::Race(_) => "race".into(),
            other => format!("s{}", other.session().unwrap_or(0)),
        }
    }
}

/// The step's text form without its session (the transcript's `op`); `parse` reads it back
/// after the session token.
impl fmt::Display for Step {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let node = |n: &Option<usize>| n.map_or(String::new(), |n| format!(" node={n}"));
        match self {
            Step::Do(_, op) => write!(f, "{op}"),
            Step::Connect { timeout_ms, node: n, .. } => write!(f, "connect timeout_ms={timeout_ms}{}", node(n)),
            Step::Close(_) => write!(f, "close"),
            Step::Drop(_) => write!(f, "drop"),
            Step::Resume { node: n, .. } => write!(f, "resume{}", node(n)),
            Step::Expire(_) => write!(f, "expire"),
            Step::WaitGone(_, path) => write!(f, "wait-gone {path}"),
            Step::FourLetter { word, node: 0 } => write!(f, "{word}"),
            Step::FourLetter { word, node: n } => write!(f, "{word} node={n}"),
            Step::Raw { op, body } => {
                write!(f, "op={op} body=")?;
                body.iter().try_for_each(|b| write!(f, "{b:02x}"))
            }
            Step::Race(r) => write!(f, "{}", r.describe()),
        }
    }
}

impl Race {
    /// The step's text form in transcripts.
    pub fn describe(&self) -> String {
        match self {
            Race::Lock { sessions, path } => format!("race lock {path} sessions={sessions}"),
            Race::Sequential { sessions, per_session, prefix } => {
                format!("race sequential {prefix} sessions={sessions} each={per_session}")
            }
            Race::Counter { sessions, per_session, path } => {
                format!("race counter {path} sessions={sessions} each={per_session}")
            }
        }
    }
}

/// One catalogue entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scenario {
    pub name: String,
    /// What it pins, in a sentence.
    pub about: String,
    /// Where the behaviour comes from (ZooKeeper source or test, a ticket, a Keeper source file
    /// or issue, a seed file).
    pub source: String,
    /// The scenario file it was read from (`ops.txt`), for the generated catalogue.
    pub file: String,
    /// Distinct servers of one ensemble the scenario needs (1 for most; a cluster scenario
    /// runs only against a target with at least this many addresses).
    pub nodes: usize,
    /// Which node each session connects to (session index to node index; 0 when unset).
    pub placement: BTreeMap<usize, usize>,
    pub steps: Vec<Step>,
}

impl Scenario {
    /// Whether every step only reads (such scenarios run in `--read-only` mode; they still get
    /// no `~` subtree).
    pub fn read_only(&self) -> bool {
        self.steps.iter().all(|s| match s {
            Step::Do(_, op) => !op.writes() && op.paths().iter().all(|p| !p.starts_with('~')),
            Step::Connect { .. } | Step::Close(_) | Step::FourLetter { .. } => true,
            _ => false,
        })
    }

    /// Whether a step uses a Keeper-only op: such a scenario runs only Keeper against Keeper.
    pub fn keeper_only(&self) -> bool {
        self.steps.iter().any(|s| matches!(s, Step::Do(_, op) if op.keeper_only()))
    }

    /// Session indices that the steps use (opened before the first step).
    pub fn sessions(&self) -> usize {
        self.steps.iter().filter_map(Step::session).map(|n| n + 1).max().unwrap_or(0)
    }

    /// The node session `n` starts on.
    pub fn node_of(&self, n: usize) -> usize {
        self.placement.get(&n).copied().unwrap_or(0)
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
    pub const PERSISTENT_SEQUENTIAL_WITH_TTL: i32 = 6;
}

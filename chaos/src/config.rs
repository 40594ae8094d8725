//! What one run is: the workload, the nemeses, the seed, how long, how many clients, and
//! against what. The command line (`testkeeper chaos`) fills it in; tests build it directly.

use std::fmt;
use std::net::SocketAddr;
use std::str::FromStr;
use std::time::Duration;

use testkeeper_server::broken::Broken;
use testkeeper_server::core::flavor::Flavor;
use testkeeper_server::core::unknown_name::UnknownName;

/// A workload, as ClickHouse's Jepsen suite for Keeper names them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Workload {
    /// read (after sync), write and compare-and-set by version, on several keys.
    Register,
    /// unique children added, read after sync; a final read on every server.
    Set,
    /// sequential creates, one at a time or several in one multi.
    Ids,
    /// a multi of sequential creates (some deliberately failing), read by counting children.
    Counter,
    /// enqueue with sequential nodes, dequeue with a multi deleting the first child.
    Queue,
    /// the ephemeral-sequential lock recipe, writes fenced by the lock node's token.
    Lock,
}

impl Workload {
    pub const ALL: [Workload; 6] =
        [Workload::Register, Workload::Set, Workload::Ids, Workload::Counter, Workload::Queue, Workload::Lock];

    /// The name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Workload::Register => "register",
            Workload::Set => "set",
            Workload::Ids => "ids",
            Workload::Counter => "counter",
            Workload::Queue => "queue",
            Workload::Lock => "lock",
        }
    }
}

/// A fault the nemesis can inject.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Nemesis {
    /// Server-side fault rules (docs/faults.md), each at a seeded probability for one window.
    DropRequest,
    DropResponse,
    Delay,
    Error,
    Reset,
    /// A random live session is expired (as its timeout would).
    ExpireSession,
    /// The client drops connections from its side, mid-request (works against any server).
    Disconnect,
    /// Embedded cluster only: kill a node (restarted when the window ends).
    Kill,
    /// Kill whichever node leads.
    KillLeader,
    /// Kill a node and lose what its disk had not synced, the first unsynced record torn.
    LoseTail,
    /// Kill every node at once, each losing what its disk had not synced (a power cut).
    CrashAll,
    /// Freeze a node's Raft driver.
    Pause,
    /// Cut the cluster into two random halves.
    PartitionHalves,
    /// One node hears both sides, the two sides do not hear each other.
    PartitionBridge,
    /// One node cut off from all others.
    PartitionIsolate,
    /// Every link delayed and reordered.
    SlowLinks,
    /// Every link loses and duplicates messages, and reorders them.
    LossyLinks,
    /// Kill a node, flip a bit in the middle of its log, start it: the start must be refused.
    CorruptDisk,
    /// Step a node's wall clock minutes ahead or behind (in a simulation; elsewhere nothing).
    ClockJump,
    /// Fill a node's disk: its next write fails and it stops; emptied and restarted after.
    DiskFull,
}

impl Nemesis {
    pub const ALL: [Nemesis; 20] = [
        Nemesis::DropRequest,
        Nemesis::DropResponse,
        Nemesis::Delay,
        Nemesis::Error,
        Nemesis::Reset,
        Nemesis::ExpireSession,
        Nemesis::Disconnect,
        Nemesis::Kill,
        Nemesis::KillLeader,
        Nemesis::LoseTail,
        Nemesis::CrashAll,
        Nemesis::Pause,
        Nemesis::PartitionHalves,
        Nemesis::PartitionBridge,
        Nemesis::PartitionIsolate,
        Nemesis::SlowLinks,
        Nemesis::LossyLinks,
        Nemesis::CorruptDisk,
        Nemesis::ClockJump,
        Nemesis::DiskFull,
    ];

    /// The name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Nemesis::DropRequest => "drop-request",
            Nemesis::DropResponse => "drop-response",
            Nemesis::Delay => "delay",
            Nemesis::Error => "error",
            Nemesis::Reset => "reset",
            Nemesis::ExpireSession => "expire-session",
            Nemesis::Disconnect => "disconnect",
            Nemesis::Kill => "kill",
            Nemesis::KillLeader => "kill-leader",
            Nemesis::LoseTail => "lose-tail",
            Nemesis::CrashAll => "crash-all",
            Nemesis::Pause => "pause",
            Nemesis::PartitionHalves => "partition-halves",
            Nemesis::PartitionBridge => "partition-bridge",
            Nemesis::PartitionIsolate => "partition-isolate",
            Nemesis::SlowLinks => "slow-links",
            Nemesis::LossyLinks => "lossy-links",
            Nemesis::CorruptDisk => "corrupt-disk",
            Nemesis::ClockJump => "clock-jump",
            Nemesis::DiskFull => "disk-full",
        }
    }

    /// Whether it needs testkeeper's fault rules (embedded, or an external target with `--admin`).
    pub fn needs_fault_rules(self) -> bool {
        matches!(
            self,
            Nemesis::DropRequest
                | Nemesis::DropResponse
                | Nemesis::Delay
                | Nemesis::Error
                | Nemesis::Reset
                | Nemesis::ExpireSession
        )
    }

    /// Whether it needs the embedded cluster (a process, a disk or a network we control).
    pub fn needs_cluster(self) -> bool {
        !self.needs_fault_rules() && self != Nemesis::Disconnect
    }
}

/// A `--nemesis` list with an unknown name (the groups it could also have named follow).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NemesisListError(pub UnknownName);

impl fmt::Display for NemesisListError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}; or a group: all, faults (server-side fault rules), cluster (kills, pauses, partitions), none",
            self.0
        )
    }
}

impl std::error::Error for NemesisListError {}

fn parse_named<T: Copy>(s: &str, all: &[T], name: fn(T) -> &'static str, what: &'static str) -> Result<T, UnknownName> {
    all.iter()
        .copied()
        .find(|x| name(*x) == s.trim())
        .ok_or_else(|| UnknownName::one_of(what, s, all.iter().map(|x| name(*x))))
}

impl FromStr for Workload {
    type Err = UnknownName;
    fn from_str(s: &str) -> Result<Workload, UnknownName> {
        parse_named(s, &Workload::ALL, Workload::name, "workload")
    }
}

impl FromStr for Nemesis {
    type Err = UnknownName;
    fn from_str(s: &str) -> Result<Nemesis, UnknownName> {
        parse_named(s, &Nemesis::ALL, Nemesis::name, "nemesis")
    }
}

impl fmt::Display for Workload {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl fmt::Display for Nemesis {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// `--nemesis`: a comma list of names, `none`, `all` (every one the target supports), `faults`
/// (the server-side fault rules), `cluster` (every embedded-cluster fault).
///
/// # Errors
/// An unknown name (the message lists the known ones).
pub fn parse_nemeses(s: &str) -> Result<Vec<Nemesis>, NemesisListError> {
    let mut out = Vec::new();
    for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        match part {
            "none" => {}
            "all" => out.extend(Nemesis::ALL),
            "faults" => out.extend(Nemesis::ALL.into_iter().filter(|n| n.needs_fault_rules())),
            "cluster" => out.extend(Nemesis::ALL.into_iter().filter(|n| n.needs_cluster())),
            name => out.push(name.parse().map_err(NemesisListError)?),
        }
    }
    out.sort();
    out.dedup();
    Ok(out)
}

/// What the run talks to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TargetSpec {
    /// A testkeeper cluster of `nodes` nodes started in this process (every nemesis).
    Embedded { nodes: usize },
    /// Servers somebody else runs; with `admin`, testkeeper's admin endpoint of each (or one
    /// for all) for the server-side fault rules.
    External { addrs: Vec<SocketAddr>, admin: Vec<String> },
}

/// One run.
#[derive(Debug, Clone)]
pub struct RunConfig {
    pub workload: Workload,
    pub nemeses: Vec<Nemesis>,
    pub seed: u64,
    /// Operations in the main phase, over all clients.
    pub ops: usize,
    /// The main phase ends after this long even if `ops` are not done.
    pub duration: Duration,
    /// Concurrent client sessions.
    pub clients: usize,
    pub target: TargetSpec,
    /// The embedded cluster's flavor.
    pub flavor: Flavor,
    /// The embedded cluster deliberately broken (the checkers' self-test).
    pub broken: Option<Broken>,
    /// Keys of the register workload.
    pub keys: usize,
    /// How long a client waits for one reply before the outcome is unknown.
    pub op_timeout: Duration,
    /// Session timeout the clients ask for.
    pub session_timeout_ms: i32,
    /// Counts the main phase's completed ops as they happen, for a live progress line.
    pub progress: Option<std::sync::Arc<std::sync::atomic::AtomicUsize>>,
}

impl RunConfig {
    /// A run of `workload` on an embedded 3-node keeper cluster under every nemesis, with the
    /// defaults of the command line.
    pub fn new(workload: Workload, seed: u64) -> RunConfig {
        RunConfig {
            workload,
            nemeses: Nemesis::ALL.to_vec(),
            seed,
            ops: 600,
            duration: Duration::from_secs(10),
            clients: 5,
            target: TargetSpec::Embedded { nodes: 3 },
            flavor: Flavor::Keeper,
            broken: None,
            keys: 3,
            op_timeout: Duration::from_millis(1500),
            // A lock node of a lost session blocks every other contender until the session
            // expires: a short timeout keeps the lock workload moving.
            session_timeout_ms: if workload == Workload::Lock { 1500 } else { 4000 },
            progress: None,
        }
    }

    /// The `testkeeper chaos` command line that replays this run (same seed, same schedule).
    pub fn replay_command(&self) -> String {
        let nemeses: Vec<&str> = self.nemeses.iter().map(|n| n.name()).collect();
        let nemeses = match nemeses.len() {
            0 => "none".to_string(),
            n if n == Nemesis::ALL.len() => "all".to_string(),
            _ => nemeses.join(","),
        };
        let mut s = format!(
            "testkeeper chaos --workload {} --nemesis {nemeses} --seed {} --ops {} --duration {}ms --clients {}",
            self.workload,
            self.seed,
            self.ops,
            self.duration.as_millis(),
            self.clients
        );
        match &self.target {
            TargetSpec::Embedded { nodes } => {
                s += &format!(" --nodes {nodes} --flavor {}", self.flavor);
                if let Some(b) = self.broken {
                    s += &format!(" --broken {b}");
                }
            }
            TargetSpec::External { addrs, admin } => {
                let addrs: Vec<String> = addrs.iter().map(|a| a.to_string()).collect();
                s += &format!(" --target {}", addrs.join(","));
                if !admin.is_empty() {
                    s += &format!(" --admin {}", admin.join(","));
                }
            }
        }
        if self.keys != 3 {
            s += &format!(" --keys {}", self.keys);
        }
        s
    }

    /// The nemeses that cannot run against the target, with why.
    pub fn unsupported(&self) -> Vec<(Nemesis, &'static str)> {
        let TargetSpec::External { admin, .. } = &self.target else { return Vec::new() };
        (self.nemeses.iter().copied())
            .filter_map(|n| {
                if n.needs_cluster() {
                    Some((n, "needs the embedded cluster"))
                } else if n.needs_fault_rules() && admin.is_empty() {
                    Some((n, "needs --admin (testkeeper's fault endpoint)"))
                } else {
                    None
                }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_and_typos_are_named() {
        for w in Workload::ALL {
            assert_eq!(w.name().parse::<Workload>(), Ok(w));
        }
        for n in Nemesis::ALL {
            assert_eq!(parse_nemeses(n.name()), Ok(vec![n]));
        }
        assert_eq!(parse_nemeses("all").unwrap().len(), Nemesis::ALL.len());
        assert_eq!(parse_nemeses("none"), Ok(vec![]));
        assert!(parse_nemeses("faults").unwrap().iter().all(|n| n.needs_fault_rules()));
        let err = parse_nemeses("bogus").unwrap_err();
        assert_eq!(err.0.name, "bogus");
        let err = err.to_string();
        assert!(
            err.contains("'bogus'") && ["all", "faults", "cluster", "none"].iter().all(|g| err.contains(g)),
            "{err}"
        );
        let e = parse_nemeses("kill,partition").unwrap_err().to_string();
        assert!(e.contains("'partition'") && e.contains("partition-halves"), "{e}");
    }

    #[test]
    fn an_external_target_says_what_it_cannot_do() {
        let mut c = RunConfig::new(Workload::Register, 1);
        assert!(c.unsupported().is_empty());
        c.target = TargetSpec::External { addrs: vec!["127.0.0.1:1".parse().unwrap()], admin: vec![] };
        let un: Vec<Nemesis> = c.unsupported().into_iter().map(|(n, _)| n).collect();
        assert!(!un.contains(&Nemesis::Disconnect) && un.contains(&Nemesis::Kill) && un.contains(&Nemesis::Delay));
    }
}

//! An embedded cluster (`TestKeeperCluster`, n nodes in one process over the seeded
//! in-memory network) reached from outside: `testkeeper cluster-embedded` runs it, and this
//! handle drives it with the commands of cli/src/cluster_embedded.rs on its stdin. Dropping
//! the handle kills the process by PID.

use std::collections::BTreeSet;
use std::net::SocketAddr;
use std::process::Command;
use std::time::Duration;

use tempfile::TempDir;

use crate::cluster_control::ClusterControl;
use crate::env::testkeeper_bin;
use crate::piped::PipedChild;

const ANNOUNCE: &str = "testkeeper cluster listening on ";
/// A command's answer (a `leader` may wait up to 10 s in the process).
const ANSWER_WAIT: Duration = Duration::from_secs(30);

/// A running `testkeeper cluster-embedded`.
#[derive(Debug)]
pub struct EmbeddedCluster {
    child: PipedChild,
    addrs: Vec<SocketAddr>,
    down: BTreeSet<u64>,
    _dir: TempDir,
}

impl EmbeddedCluster {
    /// Starts `nodes` nodes of `flavor` (keeper or zookeeper) seeded with `seed`.
    ///
    /// # Errors
    /// The process does not announce its connect string; the message carries its log.
    pub fn start(nodes: usize, flavor: &str, seed: u64) -> Result<EmbeddedCluster, String> {
        eprintln!("embedded cluster seed {seed} (TESTKEEPER_SEED={seed} replays it)");
        let dir = tempfile::Builder::new().prefix("testkeeper-embedded-").tempdir().map_err(|e| e.to_string())?;
        let log = dir.path().join("cluster.log");
        let mut cmd = Command::new(testkeeper_bin());
        cmd.args(["cluster-embedded", "--nodes", &nodes.to_string(), "--flavor", flavor, "--seed", &seed.to_string()]);
        let mut child = PipedChild::spawn("testkeeper cluster-embedded", &mut cmd, &log)?;
        let first = child.read_until(Duration::from_secs(60), |l| l.starts_with(ANNOUNCE))?;
        let list = first.last().and_then(|l| l.strip_prefix(ANNOUNCE)).expect("matched above");
        let addrs = list
            .split(',')
            .map(|a| a.parse::<SocketAddr>().map_err(|e| format!("bad address {a:?} in {list:?}: {e}")))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(EmbeddedCluster { child, addrs, down: BTreeSet::new(), _dir: dir })
    }

    /// `a,b,c`: every node, node 1 first.
    pub fn connect_string(&self) -> String {
        self.addrs.iter().map(SocketAddr::to_string).collect::<Vec<_>>().join(",")
    }

    /// Sends one command and returns its answer line.
    ///
    /// # Errors
    /// No answer in time, or an `error ...` answer.
    pub fn command(&mut self, line: &str) -> Result<String, String> {
        self.child.send(line)?;
        let got = self.child.read_until(ANSWER_WAIT, |_| true)?.pop().expect("one line");
        if got.starts_with("error ") {
            return Err(format!("{line}: {got}"));
        }
        Ok(got)
    }
}

impl ClusterControl for EmbeddedCluster {
    fn ids(&self) -> Vec<u64> {
        (1..=self.addrs.len() as u64).collect()
    }

    fn addr(&self, id: u64) -> SocketAddr {
        self.addrs[id as usize - 1]
    }

    fn is_running(&mut self, id: u64) -> bool {
        !self.down.contains(&id)
    }

    fn await_leader(&mut self, _within: Duration) -> Result<u64, String> {
        let answer = self.command("leader")?;
        answer.strip_prefix("leader ").and_then(|n| n.parse().ok()).ok_or_else(|| format!("bad answer {answer:?}"))
    }

    fn kill(&mut self, id: u64) {
        self.command(&format!("kill {id}")).unwrap_or_else(|e| panic!("{e}"));
        self.down.insert(id);
    }

    fn restart(&mut self, id: u64) -> Result<(), String> {
        self.command(&format!("restart {id}"))?;
        self.down.remove(&id);
        Ok(())
    }

    fn describe(&mut self) -> String {
        let status = self.command("status").unwrap_or_else(|e| e);
        format!("{status}\nlast lines of {}:\n{}", self.child.log_path().display(), self.child.log_tail(40))
    }
}

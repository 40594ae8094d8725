//! A throwaway 3-server Apache ZooKeeper 3.8 ensemble (Debian's package) on loopback: three
//! JVMs, each with its own conf and data dir (`myid`), `server.N=127.0.0.1:P1:P2` lines and a
//! client port, all on free ports. The cluster scenarios of the conformance suite run against
//! it (`conform --target a,b,c`). Dropping it kills the three JVMs by PID.

use std::net::{Ipv4Addr, SocketAddr};
use std::time::{Duration, Instant};

use tempfile::TempDir;

use crate::env::{self, ZOOKEEPER_JAR};
use crate::net::{self, free_port};
use crate::process::ServerChild;
use crate::zookeeper::{cfg_lines, is_serving, spawn_jvm, startup_timeout, ZooKeeperConfig};

/// Servers in the ensemble.
pub const SIZE: usize = 3;

/// Three servers of one ensemble; killed (SIGKILL by PID) and reaped on drop.
#[derive(Debug)]
pub struct ZooKeeperEnsemble {
    // Killed before the directory goes.
    servers: Vec<ServerChild>,
    addrs: Vec<SocketAddr>,
    dir: TempDir,
}

impl ZooKeeperEnsemble {
    /// Starts the ensemble and waits until every server serves (one leader, two followers).
    ///
    /// # Errors
    /// ZooKeeper not installed, a server that dies, or no quorum within the startup timeout;
    /// the message carries the log tails.
    pub fn start() -> Result<ZooKeeperEnsemble, String> {
        if !env::zookeeper_installed() {
            return Err(format!("Debian ZooKeeper not installed ({ZOOKEEPER_JAR} or java missing)"));
        }
        let config = ZooKeeperConfig::default();
        let dir = tempfile::Builder::new().prefix("testkeeper-zk3-").tempdir().map_err(|e| e.to_string())?;
        // Client, quorum and election port per server. A port can be taken between free_port
        // and the JVM's bind; the startup check then reports it.
        let ports: Vec<(u16, u16, u16)> = (0..SIZE).map(|_| (free_port(), free_port(), free_port())).collect();
        let peers: String =
            ports.iter().enumerate().map(|(i, (_, q, e))| format!("server.{}=127.0.0.1:{q}:{e}\n", i + 1)).collect();
        let mut servers = Vec::new();
        let mut addrs = Vec::new();
        for (i, (client, _, _)) in ports.iter().enumerate() {
            let id = i + 1;
            let conf = dir.path().join(format!("conf{id}"));
            let data = dir.path().join(format!("data{id}"));
            let io = |what: &str, e: std::io::Error| format!("ZooKeeper {id}: {what}: {e}");
            std::fs::create_dir_all(&conf).map_err(|e| io("conf dir", e))?;
            std::fs::create_dir_all(&data).map_err(|e| io("data dir", e))?;
            std::fs::write(data.join("myid"), format!("{id}\n")).map_err(|e| io("myid", e))?;
            let cfg = format!(
                "dataDir={}\nclientPort={client}\ninitLimit=10\nsyncLimit=5\n{}{peers}",
                data.display(),
                cfg_lines(&config)
            );
            let zoo_cfg = conf.join("zoo.cfg");
            std::fs::write(&zoo_cfg, cfg).map_err(|e| io("zoo.cfg", e))?;
            let log = dir.path().join(format!("zookeeper-{id}.log"));
            servers.push(spawn_jvm(&config, &conf, &zoo_cfg, &log)?);
            addrs.push(SocketAddr::from((Ipv4Addr::LOCALHOST, *client)));
        }
        let mut ensemble = ZooKeeperEnsemble { servers, addrs, dir };
        ensemble.wait_for_quorum(startup_timeout(&config) * 2)?;
        Ok(ensemble)
    }

    fn wait_for_quorum(&mut self, bound: Duration) -> Result<(), String> {
        let deadline = Instant::now() + bound;
        loop {
            if let Some(i) = self.servers.iter_mut().position(|s| s.exited().is_some()) {
                return Err(format!("ZooKeeper {} of the ensemble died: {}", i + 1, self.servers[i].describe(40)));
            }
            if self.addrs.iter().all(|a| is_serving(*a)) {
                return Ok(());
            }
            if Instant::now() >= deadline {
                let tails: Vec<String> = self.servers.iter_mut().map(|s| s.describe(20)).collect();
                return Err(format!("the ensemble did not form within {bound:?}:\n{}", tails.join("\n")));
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// The client addresses, server 1 first.
    pub fn addrs(&self) -> &[SocketAddr] {
        &self.addrs
    }

    /// `a,b,c`, as `conform --target` and ZooKeeper clients take it.
    pub fn connect_string(&self) -> String {
        self.addrs.iter().map(SocketAddr::to_string).collect::<Vec<_>>().join(",")
    }

    /// Each server's `Mode:` from `srvr` (leader or follower).
    pub fn modes(&self) -> Vec<String> {
        self.addrs
            .iter()
            .map(|a| {
                let srvr = net::four_letter_word(*a, "srvr", Duration::from_secs(2)).unwrap_or_default();
                srvr.lines().find_map(|l| l.strip_prefix("Mode: ")).unwrap_or("?").trim().to_string()
            })
            .collect()
    }

    /// The ensemble's directory (one conf, data dir and log per server).
    pub fn dir(&self) -> &std::path::Path {
        self.dir.path()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::require_external;

    #[test]
    fn three_servers_form_one_ensemble() {
        require_external!("Debian ZooKeeper", env::zookeeper_installed());
        let zk = ZooKeeperEnsemble::start().unwrap_or_else(|e| panic!("{e}"));
        let mut modes = zk.modes();
        modes.sort();
        assert_eq!(modes, ["follower", "follower", "leader"], "{}", zk.connect_string());
        let pids: Vec<u32> = zk.servers.iter().map(ServerChild::pid).collect();
        drop(zk);
        for pid in pids {
            let cmdline = std::fs::read_to_string(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            assert!(!cmdline.contains("QuorumPeerMain"), "ZooKeeper pid {pid} survived drop");
        }
    }
}

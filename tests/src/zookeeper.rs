//! A throwaway standalone Apache ZooKeeper 3.8 (Debian's package) per test.
//!
//! Real ZooKeeper is the reference that testkeeper's `zookeeper` flavor is
//! compared against. We start the JVM directly instead of via zkServer.sh
//! (which backgrounds java under nohup and tracks it with a PID file) so the
//! PID we hold *is* the server, and dropping [`ZooKeeperProcess`] kills it.
//!
//! Layout mirrors Debian's: /etc/zookeeper/conf is replaced by a private
//! conf dir (zoo.cfg + log4j.properties, first on the classpath, as Debian's
//! zkEnv.sh does), and /usr/share/java/zookeeper.jar's manifest Class-Path
//! brings in netty, jetty, etc. We add slf4j-log4j12 + log4j 1.2 (both are
//! dependencies of libzookeeper-java) because the jar's own Class-Path has
//! only slf4j-api, which would silently drop every log line.

use std::net::{Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use tempfile::TempDir;

use crate::env::{self, ZOOKEEPER_JAR};
use crate::net::{self, free_port};
use crate::process::ServerChild;

/// Logging bindings shipped by libslf4j-java / liblog4j1.2-java.
const LOG_JARS: [&str; 2] = ["/usr/share/java/slf4j-log4j12.jar", "/usr/share/java/log4j-1.2.jar"];

/// Attempts at binding a fresh port: [`free_port`] can race with another
/// process grabbing the same port before the JVM binds it.
pub(crate) const BIND_ATTEMPTS: usize = 3;

const LOG4J_PROPERTIES: &str = "\
log4j.rootLogger=INFO, CONSOLE
log4j.appender.CONSOLE=org.apache.log4j.ConsoleAppender
log4j.appender.CONSOLE.layout=org.apache.log4j.PatternLayout
log4j.appender.CONSOLE.layout.ConversionPattern=%d{ISO8601} %-5p [%t:%C{1}@%L] - %m%n
";

/// Tweaks for [`ZooKeeperProcess::start_with`]: extra/overriding zoo.cfg
/// entries and JVM system properties.
#[derive(Debug, Clone)]
pub struct ZooKeeperConfig {
    cfg: Vec<(String, String)>,
    sys_props: Vec<(String, String)>,
    startup_timeout: Duration,
}

impl Default for ZooKeeperConfig {
    fn default() -> Self {
        Self {
            cfg: vec![
                ("tickTime".into(), "2000".into()),
                ("clientPortAddress".into(), "127.0.0.1".into()),
                // The kazoo suite opens far more than the default 60
                // connections per IP; its own harness sets 0 too.
                ("maxClientCnxns".into(), "0".into()),
                // Throwaway data: fsync only slows tests down.
                ("forceSync".into(), "no".into()),
                ("4lw.commands.whitelist".into(), "*".into()),
                // The admin server (Jetty) wants a fixed port 8080.
                ("admin.enableServer".into(), "false".into()),
            ],
            sys_props: vec![
                // TTL nodes (and create2 with TTL) need extended types.
                ("zookeeper.extendedTypesEnabled".into(), "true".into()),
                // Empty containers and expired TTL nodes are collected every second, as
                // testkeeper does, instead of every minute (the conformance suite waits for it).
                ("znode.container.checkIntervalMs".into(), "1000".into()),
                // Digest auth hashes bytes in the JVM default charset; kazoo's
                // harness pins UTF-8 for the same reason.
                ("file.encoding".into(), "UTF-8".into()),
                ("java.awt.headless".into(), "true".into()),
            ],
            // JVM start on a loaded 2-core CI box can take several seconds.
            startup_timeout: Duration::from_secs(60),
        }
    }
}

impl ZooKeeperConfig {
    /// Sets a zoo.cfg entry, replacing a default of the same key.
    pub fn cfg(mut self, key: &str, value: &str) -> Self {
        set(&mut self.cfg, key, value);
        self
    }

    /// Sets a `-Dkey=value` JVM system property, replacing a default.
    pub fn sys_prop(mut self, key: &str, value: &str) -> Self {
        set(&mut self.sys_props, key, value);
        self
    }

    /// How long to wait for `ruok` to answer `imok` (and the server to serve).
    pub fn startup_timeout(mut self, timeout: Duration) -> Self {
        self.startup_timeout = timeout;
        self
    }
}

fn set(list: &mut Vec<(String, String)>, key: &str, value: &str) {
    match list.iter_mut().find(|(k, _)| k == key) {
        Some(entry) => entry.1 = value.to_string(),
        None => list.push((key.to_string(), value.to_string())),
    }
}

/// A running standalone ZooKeeper server on a free loopback port, with its
/// own temporary data dir. Killed (SIGKILL by PID) and reaped on drop.
#[derive(Debug)]
pub struct ZooKeeperProcess {
    // Field order matters: the server is dropped (killed) before its
    // directory is removed.
    server: ServerChild,
    addr: SocketAddr,
    dir: TempDir,
    config: ZooKeeperConfig,
    /// The launch attempt that bound the port: its data directory is `data-<attempt>`.
    attempt: usize,
    restarts: usize,
}

impl ZooKeeperProcess {
    /// Starts a server with the default configuration; panics with the log
    /// tail if it does not come up. Check [`env::zookeeper_installed`]
    /// (via [`env::external_prereq`]) first.
    pub fn start() -> Self {
        Self::start_with(ZooKeeperConfig::default())
    }

    /// Like [`start`](Self::start) with configuration tweaks.
    pub fn start_with(config: ZooKeeperConfig) -> Self {
        Self::try_start_with(config).unwrap_or_else(|e| panic!("{e}"))
    }

    /// Starts a server, returning a descriptive error instead of panicking.
    pub fn try_start_with(config: ZooKeeperConfig) -> Result<Self, String> {
        if !env::zookeeper_installed() {
            return Err(format!(
                "Debian ZooKeeper not installed ({ZOOKEEPER_JAR} or java missing); \
                 run scripts/install-test-deps.sh"
            ));
        }
        let dir = tempfile::Builder::new()
            .prefix("testkeeper-zk-")
            .tempdir()
            .map_err(|e| format!("creating ZooKeeper temp dir: {e}"))?;
        let mut last_err = String::new();
        for attempt in 1..=BIND_ATTEMPTS {
            match launch(&config, dir.path(), attempt) {
                Ok((server, addr)) => {
                    return Ok(Self { server, addr, dir, config, attempt, restarts: 0 });
                }
                Err(Launch::PortTaken(msg)) => last_err = msg,
                Err(Launch::Failed(msg)) => return Err(msg),
            }
        }
        Err(last_err)
    }

    /// The data directory (`dataDir`; ZooKeeper writes `version-2/` in it).
    pub fn data_dir(&self) -> PathBuf {
        self.dir.path().join(format!("data-{}", self.attempt))
    }

    /// Kills the server (SIGKILL); its data directory stays, for [`restart`](Self::restart).
    pub fn stop(&mut self) {
        self.server.stop();
    }

    /// Starts the server again on the same port and data directory (after [`stop`](Self::stop),
    /// or killing the running one first), and waits until it serves.
    pub fn restart(&mut self) -> Result<(), String> {
        self.server.stop();
        self.restarts += 1;
        let conf_dir = self.dir.path().join("conf");
        let log = self.dir.path().join(format!("zookeeper-restart-{}.log", self.restarts));
        self.server = spawn_jvm(&self.config, &conf_dir, &conf_dir.join("zoo.cfg"), &log)?;
        let deadline = Instant::now() + self.config.startup_timeout;
        while !is_serving(self.addr) {
            if self.server.exited().is_some() || Instant::now() >= deadline {
                return Err(format!("ZooKeeper did not come back on {}: {}", self.addr, self.server.describe(40)));
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        Ok(())
    }

    /// The client address, 127.0.0.1:<port>.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Connect string for clients, e.g. `127.0.0.1:40123`.
    pub fn connect_string(&self) -> String {
        self.addr.to_string()
    }

    pub fn pid(&self) -> u32 {
        self.server.pid()
    }

    /// The server's private directory (conf/, data/, zookeeper.log).
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// Last `n` lines of the server log.
    pub fn log_tail(&self, n: usize) -> String {
        self.server.log_tail(n)
    }

    /// Sends a four-letter word (`srvr`, `mntr`, `conf`, ...).
    pub fn four_letter_word(&self, word: &str) -> std::io::Result<String> {
        net::four_letter_word(self.addr, word, Duration::from_secs(5))
    }
}

enum Launch {
    /// The JVM died because the port was taken in the meantime: retry.
    PortTaken(String),
    Failed(String),
}

fn launch(config: &ZooKeeperConfig, dir: &Path, attempt: usize) -> Result<(ServerChild, SocketAddr), Launch> {
    let fail = |what: &str, e: std::io::Error| Launch::Failed(format!("ZooKeeper: {what}: {e}"));
    let conf_dir = dir.join("conf");
    let data_dir = dir.join(format!("data-{attempt}"));
    std::fs::create_dir_all(&conf_dir).map_err(|e| fail("creating conf dir", e))?;
    std::fs::create_dir_all(&data_dir).map_err(|e| fail("creating data dir", e))?;

    let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, free_port()));
    let zoo_cfg = conf_dir.join("zoo.cfg");
    let cfg = format!("dataDir={}\nclientPort={}\n{}", data_dir.display(), addr.port(), cfg_lines(config));
    std::fs::write(&zoo_cfg, cfg).map_err(|e| fail("writing zoo.cfg", e))?;
    let log = dir.join(format!("zookeeper-{attempt}.log"));
    let mut server = spawn_jvm(config, &conf_dir, &zoo_cfg, &log).map_err(Launch::Failed)?;

    let deadline = Instant::now() + config.startup_timeout;
    loop {
        if server.exited().is_some() {
            let msg = format!("ZooKeeper failed to start on {addr}: {}", server.describe(40));
            return Err(if server.log_tail(200).contains("Address already in use") {
                Launch::PortTaken(msg)
            } else {
                Launch::Failed(msg)
            });
        }
        if is_serving(addr) {
            return Ok((server, addr));
        }
        if Instant::now() >= deadline {
            return Err(Launch::Failed(format!(
                "ZooKeeper on {addr} did not answer ruok with imok within {:?}: {}",
                config.startup_timeout,
                server.describe(40)
            )));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Starts one ZooKeeper JVM on `zoo_cfg`, with `conf_dir` (which gets the log4j config) first
/// on the classpath; shared by the standalone server and the ensemble.
pub(crate) fn spawn_jvm(
    config: &ZooKeeperConfig,
    conf_dir: &Path,
    zoo_cfg: &Path,
    log: &Path,
) -> Result<ServerChild, String> {
    let log4j = conf_dir.join("log4j.properties");
    std::fs::write(&log4j, LOG4J_PROPERTIES).map_err(|e| format!("ZooKeeper: writing log4j.properties: {e}"))?;
    let mut classpath: Vec<PathBuf> = vec![conf_dir.to_path_buf(), ZOOKEEPER_JAR.into()];
    classpath.extend(LOG_JARS.iter().map(PathBuf::from).filter(|p| p.is_file()));
    let classpath = std::env::join_paths(classpath).expect("classpath has no ':'");

    let java = env::java().ok_or("java not found on PATH")?;
    let mut cmd = Command::new(java);
    cmd.arg("-cp").arg(classpath);
    // A small heap and the serial GC keep several test JVMs light on a
    // 2-core machine; ZooKeeper's working set in tests is a few MB.
    cmd.args(["-Xmx512m", "-XX:+UseSerialGC"]);
    cmd.arg(format!("-Dlog4j.configuration=file:{}", log4j.display()));
    for (k, v) in &config.sys_props {
        cmd.arg(format!("-D{k}={v}"));
    }
    // QuorumPeerMain, as Debian/upstream scripts use: with no server.N
    // lines it runs standalone (logging a WARN saying so).
    cmd.arg("org.apache.zookeeper.server.quorum.QuorumPeerMain").arg(zoo_cfg);
    ServerChild::spawn("ZooKeeper", &mut cmd, log).map_err(|e| format!("ZooKeeper: spawning java: {e}"))
}

/// The zoo.cfg entries of `config` (tests' defaults plus tweaks).
pub(crate) fn cfg_lines(config: &ZooKeeperConfig) -> String {
    config.cfg.iter().map(|(k, v)| format!("{k}={v}\n")).collect()
}

/// How long a server may take to come up.
pub(crate) fn startup_timeout(config: &ZooKeeperConfig) -> Duration {
    config.startup_timeout
}

/// `ruok` alone is not readiness: ZooKeeper answers `imok` as soon as its
/// listener is up, while for a moment after that every other request gets
/// "This ZooKeeper instance is not currently serving requests". `srvr` only
/// reports a `Mode:` once the server is really serving.
pub(crate) fn is_serving(addr: SocketAddr) -> bool {
    let ask = |word| net::four_letter_word(addr, word, Duration::from_secs(2)).unwrap_or_default();
    ask("ruok") == "imok" && ask("srvr").contains("Mode: ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::require_external;

    #[test]
    fn starts_and_answers_ruok() {
        require_external!("Debian ZooKeeper", env::zookeeper_installed());
        let zk = ZooKeeperProcess::start();
        assert_eq!(zk.four_letter_word("ruok").unwrap(), "imok");
        let srvr = zk.four_letter_word("srvr").unwrap();
        assert!(srvr.contains("Zookeeper version: 3.8"), "srvr: {srvr}");
        assert!(srvr.contains("Mode: standalone"), "srvr: {srvr}");
        assert!(zk.connect_string().starts_with("127.0.0.1:"));

        let pid = zk.pid();
        drop(zk);
        // Killed and reaped: /proc/<pid> is gone (or reused by a non-java).
        let cmdline = std::fs::read_to_string(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        assert!(!cmdline.contains("QuorumPeerMain"), "ZooKeeper pid {pid} survived drop");
    }

    #[test]
    fn start_with_applies_config_tweaks() {
        require_external!("Debian ZooKeeper", env::zookeeper_installed());
        let zk = ZooKeeperProcess::start_with(ZooKeeperConfig::default().cfg("maxSessionTimeout", "12345"));
        let conf = zk.four_letter_word("conf").unwrap();
        assert!(conf.contains("maxSessionTimeout=12345"), "conf: {conf}");
        assert!(conf.contains(&format!("clientPort={}", zk.addr().port())), "conf: {conf}");
        // Logging reaches the log file (the log4j binding is on the classpath).
        assert!(zk.log_tail(500).contains("binding to port"), "log: {}", zk.log_tail(20));
    }

    #[test]
    fn failed_start_reports_log_tail() {
        require_external!("Debian ZooKeeper", env::zookeeper_installed());
        let err = ZooKeeperProcess::try_start_with(ZooKeeperConfig::default().cfg("tickTime", "not-a-number"))
            .expect_err("bad tickTime must fail");
        assert!(err.contains("failed to start"), "{err}");
        assert!(err.contains("tickTime") || err.contains("NumberFormat"), "{err}");
    }
}

//! Servers the bench starts itself: this binary's `serve` (or another build's, for a side by
//! side with an earlier release), or Debian's Apache ZooKeeper 3.8, each on a free loopback
//! port, timed from spawn to the first `imok`.
//!
//! ZooKeeper is started the way `tests/src/zookeeper.rs` starts it (the JVM directly, a
//! private conf dir first on the classpath, `forceSync=no` unless durable), so the PID we hold
//! is the server and its RSS is the server's. Both children are killed by PID when dropped;
//! their data directories, under the system temp directory (one disk for both), are removed
//! then unless kept for a restart.

use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Debian's ZooKeeper jar; its manifest Class-Path brings in netty and the rest.
pub const ZOOKEEPER_JAR: &str = "/usr/share/java/zookeeper.jar";
/// Logging bindings from libslf4j-java / liblog4j1.2-java (quiet: WARN to the log file).
const LOG_JARS: [&str; 2] = ["/usr/share/java/slf4j-log4j12.jar", "/usr/share/java/log4j-1.2.jar"];
/// The JVM options the bench runs ZooKeeper with: Debian's zkEnv.sh default heap (1M small
/// znodes fit comfortably), the default collector.
pub const ZK_JVM: [&str; 1] = ["-Xmx1000m"];
pub const STARTUP_TIMEOUT: Duration = Duration::from_secs(90);

/// A server process the bench owns.
#[derive(Debug)]
pub struct Spawned {
    pub label: &'static str,
    pub addr: SocketAddr,
    /// Spawn to the first `imok` answer to `ruok`.
    pub launch_to_imok: Duration,
    /// Spawn until it serves requests: `imok` for testkeeper (it listens once recovered),
    /// `srvr` reporting a Mode for ZooKeeper (whose `imok` can come before its data is loaded).
    pub launch_to_serving: Duration,
    /// A testkeeper's own phases from `main` to its announce (`TkOptions::phases`): the
    /// fields of its `launch` log line.
    pub phases: Option<serde_json::Value>,
    child: Child,
    /// Its data directory, removed on drop unless `keep`.
    dir: Option<PathBuf>,
    keep: bool,
}

impl Spawned {
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// SIGKILLs the server and returns its data directory, left in place for a restart.
    pub fn kill_keeping_dir(mut self) -> Option<PathBuf> {
        self.keep = true;
        self.dir.clone()
    }
}

impl Drop for Spawned {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if let (Some(d), false) = (&self.dir, self.keep) {
            let _ = std::fs::remove_dir_all(d);
        }
    }
}

/// How to start a testkeeper.
#[derive(Debug, Clone, Default)]
pub struct TkOptions {
    /// Another build's binary (default: this one).
    pub bin: Option<PathBuf>,
    pub label: Option<&'static str>,
    pub no_digest: bool,
    /// Serve this data directory (created if missing) instead of memory.
    pub data_dir: Option<PathBuf>,
    /// `--fsync` with a data directory.
    pub fsync: Option<&'static str>,
    /// Read the server's `launch` log line (`cli/src/launch.rs`) into [`Spawned::phases`].
    pub phases: bool,
}

/// Why a server under test was not started or read.
#[derive(Debug, thiserror::Error)]
pub enum SpawnError {
    /// A file, directory, port, process or socket step failed; `what` says which.
    #[error("{what}: {source}")]
    Io { what: String, source: std::io::Error },
    #[error("{label} exited before answering ruok: {status}")]
    Exited { label: &'static str, status: std::process::ExitStatus },
    #[error("{label} did not answer ruok on {addr} within {within:?}")]
    NoAnswer { label: &'static str, addr: SocketAddr, within: Duration },
    #[error("ZooKeeper on {0} answered imok but never served")]
    NotServing(SocketAddr),
    #[error("{0} not found; run scripts/install-test-deps.sh")]
    Missing(&'static str),
    #[error("no {0} in mntr")]
    NoMntrKey(String),
    #[error("class path: {0}")]
    ClassPath(#[from] std::env::JoinPathsError),
}

impl SpawnError {
    fn io(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> SpawnError {
        let what = what.into();
        move |source| SpawnError::Io { what, source }
    }
}

/// The bench reports a failed start as one line: its callers' errors are that line.
impl From<SpawnError> for String {
    fn from(e: SpawnError) -> String {
        e.to_string()
    }
}

/// A fresh data directory under the system temp directory, named for `what`.
pub fn temp_data_dir(what: &str) -> PathBuf {
    std::env::temp_dir().join(format!("testkeeper-bench-{what}-{}-{}", std::process::id(), free_port().unwrap_or(0)))
}

/// A port nobody listens on right now (another process may still take it before we bind).
pub fn free_port() -> Result<u16, SpawnError> {
    Ok(free_ports(1)?[0])
}

/// `n` ports nobody listens on right now, all different: each is held until all are chosen, since
/// ports picked one by one can repeat (one cluster member's two listeners on one port fails it).
pub fn free_ports(n: usize) -> Result<Vec<u16>, SpawnError> {
    let held = (0..n)
        .map(|_| TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).map_err(SpawnError::io("no free port")))
        .collect::<Result<Vec<_>, SpawnError>>()?;
    held.iter().map(|l| l.local_addr().map(|a| a.port()).map_err(SpawnError::io("a free port's address"))).collect()
}

/// Sends a four-letter word and reads the answer until the server closes.
pub fn four_letter_word(addr: SocketAddr, word: &str) -> std::io::Result<String> {
    four_letter_word_within(addr, word, Duration::from_secs(2))
}

/// [`four_letter_word`] waiting up to `timeout` for the answer (`csnp` on a big tree answers
/// only once it has the engine's lock: how long that takes is what the bench measures).
pub fn four_letter_word_within(addr: SocketAddr, word: &str, timeout: Duration) -> std::io::Result<String> {
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(2))?;
    s.set_read_timeout(Some(timeout))?;
    s.write_all(word.as_bytes())?;
    let mut out = String::new();
    s.read_to_string(&mut out)?;
    Ok(out)
}

/// `zk_<key>` from `mntr`, waiting up to `timeout` for the answer.
pub fn mntr_value(addr: SocketAddr, key: &str, timeout: Duration) -> Result<String, SpawnError> {
    let text = four_letter_word_within(addr, "mntr", timeout).map_err(SpawnError::io("mntr"))?;
    let prefix = format!("zk_{key}\t");
    text.lines()
        .find_map(|l| l.strip_prefix(&prefix))
        .map(str::to_string)
        .ok_or_else(|| SpawnError::NoMntrKey(key.into()))
}

/// VmRSS of a process in bytes, from /proc/PID/status.
pub fn rss_bytes(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// How long [`wait_imok`] sleeps between tries: short enough that a start of a millisecond or
/// two is timed to a few percent (it was 1 ms, and then the poll was most of the error), long
/// enough that the poller leaves the 2 cores to the server it waits for.
pub const IMOK_POLL: Duration = Duration::from_micros(50);

/// Polls `ruok` every [`IMOK_POLL`] from `start` until `imok`, the child dies, or time runs out.
fn wait_imok(label: &'static str, child: &mut Child, addr: SocketAddr, start: Instant) -> Result<Duration, SpawnError> {
    loop {
        if four_letter_word(addr, "ruok").is_ok_and(|a| a == "imok") {
            return Ok(start.elapsed());
        }
        if let Ok(Some(status)) = child.try_wait() {
            return Err(SpawnError::Exited { label, status });
        }
        if start.elapsed() > STARTUP_TIMEOUT {
            let _ = child.kill();
            let _ = child.wait();
            return Err(SpawnError::NoAnswer { label, addr, within: STARTUP_TIMEOUT });
        }
        std::thread::sleep(IMOK_POLL);
    }
}

/// Starts `testkeeper serve` (this very binary, or `opts.bin`) on a free port.
///
/// # Errors
/// The binary cannot be found or spawned, or never answers `imok`.
pub fn testkeeper(opts: &TkOptions) -> Result<Spawned, SpawnError> {
    let exe = match &opts.bin {
        Some(b) => b.clone(),
        None => std::env::current_exe().map_err(SpawnError::io("cannot find this binary"))?,
    };
    let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, free_port()?));
    let mut cmd = Command::new(&exe);
    cmd.arg("serve").arg("--listen").arg(addr.to_string());
    if opts.no_digest {
        cmd.arg("--no-digest");
    }
    if let Some(d) = &opts.data_dir {
        cmd.arg("--data-dir").arg(d);
        if let Some(f) = opts.fsync {
            cmd.args(["--fsync", f]);
        }
    }
    cmd.env("RUST_LOG", "warn").stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::null());
    if opts.phases {
        cmd.args(["--log-format", "json"]).env("RUST_LOG", "warn,launch=debug").stderr(Stdio::piped());
    }
    let label = opts.label.unwrap_or("testkeeper");
    let start = Instant::now();
    let mut child = cmd.spawn().map_err(SpawnError::io(format!("spawning {} serve", exe.display())))?;
    let launch_to_imok = wait_imok(label, &mut child, addr, start)?;
    // Written before the address was announced, so before `imok`: in the pipe by now.
    let phases = child.stderr.take().and_then(launch_line);
    let dir = opts.data_dir.clone();
    Ok(Spawned { label, addr, launch_to_imok, launch_to_serving: launch_to_imok, phases, child, dir, keep: false })
}

/// The fields of the first `launch` line on a server's JSON log (or none, from a build that
/// does not write it: its log ends, or stays silent for a second).
fn launch_line(stderr: std::process::ChildStderr) -> Option<serde_json::Value> {
    let (tx, rx) = std::sync::mpsc::channel();
    // A reader of its own: a line that never comes must not hold the bench.
    std::thread::spawn(move || {
        use std::io::BufRead;
        let found = std::io::BufReader::new(stderr).lines().map_while(Result::ok).find_map(|l| {
            let v: serde_json::Value = serde_json::from_str(&l).ok()?;
            (v["target"] == "launch").then(|| v["fields"].clone())
        });
        let _ = tx.send(found);
    });
    rx.recv_timeout(Duration::from_secs(1)).ok().flatten()
}

/// The JVM command, with the options `jvm` (the bench's are [`ZK_JVM`]), that runs the
/// ZooKeeper whose `zoo.cfg` is in `conf`, in `dir` (its log there, at WARN), as
/// `tests/src/zookeeper.rs` runs it.
///
/// # Errors
/// The log configuration cannot be written.
pub fn zookeeper_jvm(dir: &Path, conf: &Path, jvm: &[&str]) -> Result<Command, SpawnError> {
    let log4j = "log4j.rootLogger=WARN, FILE\nlog4j.appender.FILE=org.apache.log4j.FileAppender\n\
                 log4j.appender.FILE.File=zookeeper.log\nlog4j.appender.FILE.layout=org.apache.log4j.PatternLayout\n\
                 log4j.appender.FILE.layout.ConversionPattern=%d %-5p %m%n\n";
    let props = conf.join("log4j.properties");
    std::fs::write(&props, log4j).map_err(SpawnError::io(format!("writing {}", props.display())))?;
    let mut cp: Vec<PathBuf> = vec![conf.to_path_buf(), ZOOKEEPER_JAR.into()];
    cp.extend(LOG_JARS.iter().map(PathBuf::from).filter(|p| p.is_file()));
    let cp = std::env::join_paths(cp)?;
    let mut cmd = Command::new(std::env::var_os("JAVA").unwrap_or_else(|| "java".into()));
    cmd.current_dir(dir).arg("-cp").arg(cp).args(jvm);
    cmd.arg(format!("-Dlog4j.configuration=file:{}", props.display()));
    cmd.args(["-Dzookeeper.extendedTypesEnabled=true", "-Djava.awt.headless=true"]);
    cmd.arg("org.apache.zookeeper.server.quorum.QuorumPeerMain").arg(conf.join("zoo.cfg"));
    cmd.stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::null());
    Ok(cmd)
}

/// Starts Debian's ZooKeeper 3.8 standalone on a free port in a fresh directory, with
/// `forceSync=yes` when `force_sync` (an fsync before every acknowledged write), else `no`.
///
/// # Errors
/// ZooKeeper or java is missing, or the server never answers `imok`.
pub fn zookeeper(force_sync: bool) -> Result<Spawned, SpawnError> {
    zookeeper_in(&temp_data_dir("zk"), force_sync, &ZK_JVM)
}

/// [`zookeeper`] on `dir` (its conf and data; a restart finds the data where it left it),
/// with the JVM options `jvm` (`bench --launches` also starts it tuned for a fast start).
///
/// # Errors
/// As [`zookeeper`].
pub fn zookeeper_in(dir: &std::path::Path, force_sync: bool, jvm: &[&str]) -> Result<Spawned, SpawnError> {
    if !std::path::Path::new(ZOOKEEPER_JAR).is_file() {
        return Err(SpawnError::Missing(ZOOKEEPER_JAR));
    }
    let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, free_port()?));
    let dir = dir.to_path_buf();
    let conf = dir.join("conf");
    let data = dir.join("data");
    let io = || SpawnError::io(format!("preparing {}", dir.display()));
    std::fs::create_dir_all(&conf).map_err(io())?;
    std::fs::create_dir_all(&data).map_err(io())?;
    let cfg = format!(
        "tickTime=2000\ndataDir={}\nclientPort={}\nclientPortAddress=127.0.0.1\nmaxClientCnxns=0\n\
         forceSync={}\n4lw.commands.whitelist=*\nadmin.enableServer=false\n",
        data.display(),
        addr.port(),
        if force_sync { "yes" } else { "no" }
    );
    std::fs::write(conf.join("zoo.cfg"), cfg).map_err(io())?;
    let mut cmd = zookeeper_jvm(&dir, &conf, jvm)?;
    let start = Instant::now();
    let mut child = cmd.spawn().map_err(SpawnError::io("spawning java"))?;
    let launch_to_imok = wait_imok("ZooKeeper", &mut child, addr, start)?;
    // Owned from here on, so an error below still kills the JVM.
    let mut spawned = Spawned {
        label: "zookeeper",
        addr,
        launch_to_imok,
        launch_to_serving: launch_to_imok,
        phases: None,
        child,
        dir: Some(dir),
        keep: false,
    };
    // imok comes as soon as the listener is up; wait until it really serves requests.
    while !four_letter_word(addr, "srvr").unwrap_or_default().contains("Mode: ") {
        if start.elapsed() > STARTUP_TIMEOUT {
            return Err(SpawnError::NotServing(addr));
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    spawned.launch_to_serving = start.elapsed();
    Ok(spawned)
}

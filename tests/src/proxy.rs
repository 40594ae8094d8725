//! A throwaway `testkeeper proxy` process: in front of an upstream, with an oracle (embedded
//! by default, or a server of the test's), recording the traffic and writing divergences as
//! JSON lines. Stopped with SIGTERM, after which its summary and exit status tell whether
//! anything diverged.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::Value;
use tempfile::TempDir;

use crate::env::testkeeper_bin;
use crate::process::ServerChild;
use crate::testkeeper::spawn_announcing;

/// The proxy's readiness line's prefix.
pub const PROXY_PREFIX: &str = "testkeeper proxy listening on ";

/// How long the proxy gets to finish after SIGTERM.
const STOP_TIMEOUT: Duration = Duration::from_secs(20);

/// A running `testkeeper proxy`.
pub struct ProxyProcess {
    // Killed (if still running) before its directory goes.
    proxy: Option<ServerChild>,
    addr: SocketAddr,
    dir: TempDir,
    log_dir: TempDir,
}

/// What a stopped proxy reported.
#[derive(Debug)]
pub struct ProxyResult {
    /// Exit 0: no divergence.
    pub clean_exit: bool,
    /// The divergences it wrote, in the order found.
    pub divergences: Vec<Value>,
    /// Its stdout and stderr.
    pub log: String,
    /// The recording (valid while this result lives).
    pub recording: PathBuf,
    _dirs: (TempDir, TempDir),
}

impl ProxyProcess {
    /// `testkeeper proxy --upstream <upstream> --record .. --divergences .. <args>`.
    ///
    /// # Panics
    /// When the proxy does not come up (the message has its log).
    pub fn start(upstream: &str, args: &[&str]) -> ProxyProcess {
        let rec_dir = tempfile::Builder::new().prefix("testkeeper-proxy-").tempdir().expect("temp dir");
        let rec = rec_dir.path().join("recording.jsonl");
        let div = rec_dir.path().join("divergences.jsonl");
        let (rec_s, div_s) = (rec.display().to_string(), div.display().to_string());
        let mut all = vec![
            "proxy",
            "--listen",
            "127.0.0.1:0",
            "--upstream",
            upstream,
            "--record",
            &rec_s,
            "--divergences",
            &div_s,
        ];
        all.extend_from_slice(args);
        let (proxy, addr, log_dir) =
            spawn_announcing(&testkeeper_bin(), &all, PROXY_PREFIX).unwrap_or_else(|e| panic!("{e}"));
        ProxyProcess { proxy: Some(proxy), addr, dir: rec_dir, log_dir }
    }

    /// Where clients connect.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    /// SIGTERM, wait for the exit, and read what it reported.
    pub fn stop(mut self) -> ProxyResult {
        let mut p = self.proxy.take().expect("running");
        let _ = Command::new("kill").args(["-TERM", &p.pid().to_string()]).status();
        let deadline = Instant::now() + STOP_TIMEOUT;
        let status = loop {
            if let Some(s) = p.exited() {
                break Some(s);
            }
            if Instant::now() >= deadline {
                break None;
            }
            std::thread::sleep(Duration::from_millis(50));
        };
        let log = std::fs::read_to_string(p.log_path()).unwrap_or_default();
        drop(p);
        let text = std::fs::read_to_string(self.dir.path().join("divergences.jsonl")).unwrap_or_default();
        let divergences = text.lines().filter_map(|l| serde_json::from_str(l).ok()).collect();
        let recording = self.dir.path().join("recording.jsonl");
        ProxyResult {
            clean_exit: status.is_some_and(|s| s.success()),
            divergences,
            log,
            recording,
            _dirs: (self.dir, self.log_dir),
        }
    }
}

/// `testkeeper replay FILE --target ADDR`: (success, output).
pub fn replay(recording: &std::path::Path, target: &str) -> (bool, String) {
    let out = Command::new(testkeeper_bin())
        .arg("replay")
        .arg(recording)
        .args(["--target", target])
        .output()
        .expect("run testkeeper replay");
    (out.status.success(), format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr)))
}

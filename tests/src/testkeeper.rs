//! A throwaway `testkeeper serve` process per test.
//!
//! Contract with the binary (cli crate): `testkeeper serve --listen
//! 127.0.0.1:0 [args...]` binds an ephemeral port and prints exactly one
//! stdout line `testkeeper listening on <addr>` once it accepts connections.
//! Reading the address back avoids the bind race a pre-chosen port has.

use std::fs::File;
use std::io::{BufRead, BufReader, Write};
use std::net::SocketAddr;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use tempfile::TempDir;

use crate::env::testkeeper_bin;
use crate::net;
use crate::process::ServerChild;

/// The readiness line's prefix; the rest of the line is the socket address.
pub const LISTENING_PREFIX: &str = "testkeeper listening on ";

/// How long the binary gets to print its readiness line.
const STARTUP_TIMEOUT: Duration = Duration::from_secs(30);

/// A running `testkeeper serve`, SIGKILLed by PID and reaped on drop.
#[derive(Debug)]
pub struct TestkeeperProcess {
    // Dropped (killed) before the directory holding its log goes away.
    server: ServerChild,
    addr: SocketAddr,
    dir: TempDir,
}

impl TestkeeperProcess {
    /// Runs `testkeeper serve --listen 127.0.0.1:0 <args>` and waits for its
    /// readiness line. Panics with a clear message (binary missing, early
    /// exit with log tail, or timeout) if it does not come up.
    pub fn start(args: &[&str]) -> Self {
        Self::try_start(args).unwrap_or_else(|e| panic!("{e}"))
    }

    /// Like [`start`](Self::start), returning the error instead.
    pub fn try_start(args: &[&str]) -> Result<Self, String> {
        Self::try_start_bin(&testkeeper_bin(), args)
    }

    /// Like [`try_start`](Self::try_start) with an explicit binary path
    /// (a release build, or a stand-in in this module's own tests).
    pub fn try_start_bin(bin: &Path, args: &[&str]) -> Result<Self, String> {
        Self::try_start_listening(bin, "127.0.0.1:0", args)
    }

    /// Like [`try_start_bin`](Self::try_start_bin) on a chosen address (a restart that clients
    /// must find where they left it).
    pub fn try_start_listening(bin: &Path, listen: &str, args: &[&str]) -> Result<Self, String> {
        let mut all = vec!["serve", "--listen", listen];
        all.extend_from_slice(args);
        let (server, addr, dir) = spawn_announcing(bin, &all, LISTENING_PREFIX)?;
        Ok(Self { server, addr, dir })
    }
}

/// Runs `bin args...`, with stdout and stderr going to a log in a temp dir, and waits for
/// the stdout line `<prefix><addr>`; shared by `serve` and `proxy`.
///
/// # Errors
/// The binary is missing, exits early, or does not announce within the startup timeout; the
/// message carries the log tail.
pub fn spawn_announcing(
    bin: &Path,
    args: &[&str],
    prefix: &'static str,
) -> Result<(ServerChild, SocketAddr, TempDir), String> {
    {
        if !bin.is_file() {
            return Err(format!(
                "testkeeper binary not found at {}: build it first with \
                 `cargo build -p testkeeper` (`make test` does), or point \
                 TESTKEEPER_BIN at it",
                bin.display()
            ));
        }
        let dir = tempfile::Builder::new()
            .prefix("testkeeper-srv-")
            .tempdir()
            .map_err(|e| format!("creating temp dir: {e}"))?;
        let log = dir.path().join("testkeeper.log");
        // Append mode on both writers (stderr here, stdout's forwarder
        // below) so neither overwrites the other's lines.
        let stderr = File::options()
            .create(true)
            .append(true)
            .open(&log)
            .map_err(|e| format!("creating {}: {e}", log.display()))?;

        let mut cmd = Command::new(bin);
        cmd.args(args);
        cmd.env("RUST_BACKTRACE", "1");
        let mut child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(stderr)
            .spawn()
            .map_err(|e| format!("spawning {}: {e}", bin.display()))?;
        let stdout = child.stdout.take().expect("stdout is piped");
        let mut server = ServerChild::from_child("testkeeper", child, &log);

        let ready = forward_stdout(stdout, &log, prefix);
        let command_line = format!("{} {}", bin.display(), args.join(" "));
        let deadline = Instant::now() + STARTUP_TIMEOUT;
        loop {
            match ready.recv_timeout(Duration::from_millis(100)) {
                Ok(line) => {
                    let addr = line
                        .trim()
                        .parse::<SocketAddr>()
                        .map_err(|e| format!("`{command_line}` printed an unparsable address {line:?}: {e}"))?;
                    return Ok((server, addr, dir));
                }
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    // stdout closed without the line: it exited or is exiting.
                    std::thread::sleep(Duration::from_millis(200));
                    return Err(format!(
                        "`{command_line}` closed stdout without printing \
                         `{prefix}<addr>`: {}",
                        server.describe(40)
                    ));
                }
                Err(mpsc::RecvTimeoutError::Timeout) => {}
            }
            if server.exited().is_some() || Instant::now() >= deadline {
                return Err(format!(
                    "`{command_line}` did not print `{prefix}<addr>` within \
                     {STARTUP_TIMEOUT:?}: {}",
                    server.describe(40)
                ));
            }
        }
    }
}

impl TestkeeperProcess {
    /// The address it listens on (from its readiness line).
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

    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// Last `n` lines of its stdout+stderr.
    pub fn log_tail(&self, n: usize) -> String {
        self.server.log_tail(n)
    }

    /// Sends a four-letter word (`ruok`, `srvr`, `mntr`, ...).
    pub fn four_letter_word(&self, word: &str) -> std::io::Result<String> {
        net::four_letter_word(self.addr, word, Duration::from_secs(5))
    }
}

/// Copies the child's stdout into `log` (so logging after startup can never
/// fill the pipe and block the server) and sends the address from the first
/// readiness line over the returned channel.
fn forward_stdout(stdout: std::process::ChildStdout, log: &Path, prefix: &'static str) -> mpsc::Receiver<String> {
    let (tx, rx) = mpsc::channel();
    let mut sink = File::options().append(true).open(log).ok();
    std::thread::spawn(move || {
        let mut tx = Some(tx);
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if let Some(sink) = sink.as_mut() {
                let _ = writeln!(sink, "{line}");
            }
            if let Some(addr) = line.strip_prefix(prefix) {
                if let Some(tx) = tx.take() {
                    let _ = tx.send(addr.to_string());
                }
            }
        }
    });
    rx
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A stand-in binary that honours the contract, so the plumbing is
    /// tested before (and independently of) the real server.
    fn fake_bin(dir: &Path, script: &str) -> std::path::PathBuf {
        use std::os::unix::fs::PermissionsExt;
        let path = dir.join("fake-testkeeper");
        std::fs::write(&path, format!("#!/bin/sh\n{script}\n")).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        path
    }

    #[test]
    fn fake_binary_contract_round_trip() {
        let dir = tempfile::tempdir().unwrap();
        let bin = fake_bin(
            dir.path(),
            "echo booting >&2; echo \"args: $*\"; echo 'testkeeper listening on 127.0.0.1:4242'; exec sleep 300",
        );
        let tk = TestkeeperProcess::try_start_bin(&bin, &["--flavor", "keeper"]).unwrap();
        assert_eq!(tk.addr(), "127.0.0.1:4242".parse().unwrap());
        let log = tk.log_tail(10);
        assert!(log.contains("args: serve --listen 127.0.0.1:0 --flavor keeper"), "{log}");
        assert!(log.contains("booting"), "{log}");
    }

    #[test]
    fn early_exit_is_reported_with_log() {
        let dir = tempfile::tempdir().unwrap();
        let bin = fake_bin(dir.path(), "echo 'error: unknown flag' >&2; exit 2");
        let err = TestkeeperProcess::try_start_bin(&bin, &[]).unwrap_err();
        assert!(err.contains("unknown flag"), "{err}");
    }

    #[test]
    fn missing_binary_says_how_to_build_it() {
        let err = TestkeeperProcess::try_start_bin(Path::new("/nonexistent/testkeeper"), &[]).unwrap_err();
        assert!(err.contains("cargo build -p testkeeper"), "{err}");
    }
}

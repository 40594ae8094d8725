//! Child processes for tests: servers that die with their handle, and
//! commands that cannot hang a test.
//!
//! Rule of this workplace and of good test hygiene alike: a test only ever
//! kills processes it started itself, by their PID. [`ServerChild`] does that
//! on drop, so a panicking test does not leak a JVM; [`run_bounded`] gives
//! every one-shot command a deadline.

use std::fs::File;
use std::io::{self, Read, Write};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// A long-running child (a server) that is SIGKILLed by PID and reaped when
/// dropped. Its output goes to `log` so failures can show the tail.
#[derive(Debug)]
pub struct ServerChild {
    child: Child,
    name: String,
    log: PathBuf,
}

impl ServerChild {
    /// Spawns `cmd` with stdin closed and stdout+stderr appended to `log`.
    pub fn spawn(name: &str, cmd: &mut Command, log: &Path) -> io::Result<Self> {
        let out = File::create(log)?;
        let err = out.try_clone()?;
        let child = cmd.stdin(Stdio::null()).stdout(out).stderr(err).spawn()?;
        Ok(Self::from_child(name, child, log))
    }

    /// Adopts an already spawned child (e.g. one whose stdout the caller
    /// reads itself); `log` is where its diagnostics end up.
    pub fn from_child(name: &str, child: Child, log: &Path) -> Self {
        Self { child, name: name.to_string(), log: log.to_path_buf() }
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    pub fn log_path(&self) -> &Path {
        &self.log
    }

    /// Kills the process (SIGKILL) and reaps it; a later drop does nothing more.
    pub fn stop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// The exit status if the process has already died, else `None`.
    pub fn exited(&mut self) -> Option<ExitStatus> {
        self.child.try_wait().ok().flatten()
    }

    /// The last `n` lines of the log, for error messages.
    pub fn log_tail(&self, n: usize) -> String {
        tail_lines(&self.log, n)
    }

    /// A diagnostic block: name, PID, exit status if dead, and the log tail.
    pub fn describe(&mut self, n: usize) -> String {
        let state = match self.exited() {
            Some(status) => format!("exited with {status}"),
            None => "still running".to_string(),
        };
        format!(
            "{} (pid {}) {state}; last {n} lines of {}:\n{}",
            self.name,
            self.pid(),
            self.log.display(),
            self.log_tail(n)
        )
    }
}

impl Drop for ServerChild {
    fn drop(&mut self) {
        // Child::kill sends SIGKILL to exactly this PID; wait() reaps it so
        // no zombie outlives the test. Errors mean it already exited.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The last `n` lines of a text file (empty string if unreadable).
pub fn tail_lines(path: &Path, n: usize) -> String {
    tail_lines_where(path, n, |_| true)
}

/// The last `n` lines of a text file that `keep` accepts (empty string if unreadable): a
/// server log's story without the noise of a test's own polling.
pub fn tail_lines_where(path: &Path, n: usize, keep: impl Fn(&str) -> bool) -> String {
    let text = std::fs::read(path).map(|b| String::from_utf8_lossy(&b).into_owned()).unwrap_or_default();
    let lines: Vec<&str> = text.lines().filter(|l| keep(l)).collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

/// Result of [`run_bounded`].
#[derive(Debug, Clone)]
pub struct BoundedOutput {
    /// `None` when the command was killed for exceeding its time limit.
    pub status: Option<ExitStatus>,
    pub stdout: String,
    pub stderr: String,
    pub elapsed: Duration,
}

impl BoundedOutput {
    pub fn timed_out(&self) -> bool {
        self.status.is_none()
    }

    pub fn success(&self) -> bool {
        self.status.is_some_and(|s| s.success())
    }

    /// stdout followed by stderr: CLIs are inconsistent about which stream
    /// gets what (zkCli prints "Created /x" on stderr, data on stdout).
    pub fn combined(&self) -> String {
        format!("{}{}", self.stdout, self.stderr)
    }
}

/// Runs `cmd` to completion, feeding it `stdin`, killing it after `timeout`.
///
/// The child gets its own process group so that a timeout can kill wrapper
/// scripts together with what they started (zkCli.sh runs java as a child,
/// not via exec). Output is drained on threads so a chatty child cannot
/// block on a full pipe.
pub fn run_bounded(cmd: &mut Command, stdin: &[u8], timeout: Duration) -> io::Result<BoundedOutput> {
    let started = Instant::now();
    let mut child = cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).process_group(0).spawn()?;
    let stdout = drain(child.stdout.take());
    let stderr = drain(child.stderr.take());
    if let Some(mut input) = child.stdin.take() {
        // Written on a thread so a child that never reads cannot block us
        // past the deadline; EPIPE from a child that exits early is fine.
        // Dropping `input` at the end closes the child's stdin (EOF).
        let data = stdin.to_vec();
        std::thread::spawn(move || {
            let _ = input.write_all(&data);
        });
    }
    let deadline = started + timeout;
    let status = loop {
        if let Some(status) = child.try_wait()? {
            break Some(status);
        }
        if Instant::now() >= deadline {
            kill_group(&mut child);
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    Ok(BoundedOutput { status, stdout: join_drain(stdout), stderr: join_drain(stderr), elapsed: started.elapsed() })
}

/// Kills the process group led by `child` (created with `process_group(0)`,
/// so its PGID is its PID), then the child itself, and reaps it.
pub fn kill_group(child: &mut Child) {
    let pgid = child.id();
    let _ = Command::new("kill")
        .args(["-KILL", "--", &format!("-{pgid}")])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
    let _ = child.kill();
    let _ = child.wait();
}

fn drain<R: Read + Send + 'static>(src: Option<R>) -> Option<JoinHandle<String>> {
    src.map(|mut r| {
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            let _ = r.read_to_end(&mut buf);
            String::from_utf8_lossy(&buf).into_owned()
        })
    })
}

fn join_drain(handle: Option<JoinHandle<String>>) -> String {
    handle.and_then(|h| h.join().ok()).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_bounded_captures_output_and_status() {
        let out = run_bounded(
            Command::new("sh").args(["-c", "read x; echo out:$x; echo err >&2; exit 3"]),
            b"hi\n",
            Duration::from_secs(10),
        )
        .unwrap();
        assert_eq!(out.stdout, "out:hi\n");
        assert_eq!(out.stderr, "err\n");
        assert_eq!(out.status.unwrap().code(), Some(3));
    }

    #[test]
    fn run_bounded_kills_the_whole_group_on_timeout() {
        // The grandchild `sleep` holds the stdout pipe open: if only `sh`
        // were killed, draining stdout would wait the full 30 s.
        let out = run_bounded(Command::new("sh").args(["-c", "sleep 30; echo never"]), b"", Duration::from_millis(300))
            .unwrap();
        assert!(out.timed_out());
        assert!(out.elapsed < Duration::from_secs(10), "took {:?}", out.elapsed);
        assert_eq!(out.stdout, "");
    }

    #[test]
    fn server_child_is_killed_on_drop() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("sleep.log");
        let server = ServerChild::spawn("sleep", Command::new("sleep").arg("300"), &log).unwrap();
        let pid = server.pid();
        drop(server);
        // Reaped, so the PID no longer names a process of ours.
        assert!(!Path::new(&format!("/proc/{pid}")).exists() || is_zombie_free(pid));
    }

    fn is_zombie_free(pid: u32) -> bool {
        // The PID may have been reused by an unrelated process; it must at
        // least not be our sleep anymore.
        std::fs::read_to_string(format!("/proc/{pid}/cmdline")).map_or(true, |c| !c.starts_with("sleep"))
    }

    #[test]
    fn tail_lines_takes_the_end() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f");
        std::fs::write(&p, "a\nb\nc\n").unwrap();
        assert_eq!(tail_lines(&p, 2), "b\nc");
        assert_eq!(tail_lines(&p, 10), "a\nb\nc");
        assert_eq!(tail_lines(&dir.path().join("missing"), 3), "");
    }
}

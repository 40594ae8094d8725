//! A child process spoken to line by line: commands on its stdin, answers read from its
//! stdout as lines (every line also goes to a log with its stderr, for failure messages).
//! Killed by PID and reaped on drop, as every child of a test is.

use std::fs::File;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use crate::process::{tail_lines, ServerChild};

/// A running child with piped stdin and stdout.
#[derive(Debug)]
pub struct PipedChild {
    stdin: Option<ChildStdin>,
    lines: mpsc::Receiver<String>,
    child: ServerChild,
    label: String,
}

impl PipedChild {
    /// Spawns `cmd`; stdout and stderr are appended to `log`.
    ///
    /// # Errors
    /// The program cannot be started.
    pub fn spawn(label: &str, cmd: &mut Command, log: &Path) -> Result<PipedChild, String> {
        let err = File::options()
            .create(true)
            .append(true)
            .open(log)
            .map_err(|e| format!("creating {}: {e}", log.display()))?;
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(err)
            .spawn()
            .map_err(|e| format!("{label}: spawning {cmd:?}: {e}"))?;
        let stdin = child.stdin.take();
        let stdout = child.stdout.take().expect("stdout is piped");
        let (tx, lines) = mpsc::channel();
        let mut sink = File::options().append(true).open(log).ok();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if let Some(s) = sink.as_mut() {
                    let _ = writeln!(s, "{line}");
                }
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Ok(PipedChild { stdin, lines, child: ServerChild::from_child(label, child, log), label: label.into() })
    }

    /// Writes one line to the child's stdin.
    ///
    /// # Errors
    /// The child closed its stdin (it exited).
    pub fn send(&mut self, line: &str) -> Result<(), String> {
        let stdin = self.stdin.as_mut().ok_or_else(|| format!("{}: stdin already closed", self.label))?;
        writeln!(stdin, "{line}")
            .and_then(|()| stdin.flush())
            .map_err(|e| format!("{}: writing {line:?}: {e}", self.label))
    }

    /// Closes the child's stdin (it reads end of input).
    pub fn close_stdin(&mut self) {
        self.stdin = None;
    }

    /// The next stdout line, waiting up to `within`: `Ok(None)` on a timeout.
    ///
    /// # Errors
    /// stdout closed (the child exited).
    pub fn next_line(&mut self, within: Duration) -> Result<Option<String>, String> {
        match self.lines.recv_timeout(within) {
            Ok(l) => Ok(Some(l)),
            Err(mpsc::RecvTimeoutError::Timeout) => Ok(None),
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                std::thread::sleep(Duration::from_millis(100));
                Err(format!("{}: its output ended: {}", self.label, self.child.describe(30)))
            }
        }
    }

    /// Reads lines until one satisfies `done`, for up to `within`; returns every line read,
    /// that one last.
    ///
    /// # Errors
    /// The child exited first, or `within` passed.
    pub fn read_until(&mut self, within: Duration, done: impl Fn(&str) -> bool) -> Result<Vec<String>, String> {
        let until = Instant::now() + within;
        let mut seen = Vec::new();
        loop {
            let left = until.saturating_duration_since(Instant::now());
            match self.next_line(left.min(Duration::from_millis(200)))? {
                Some(l) => {
                    let stop = done(&l);
                    seen.push(l);
                    if stop {
                        return Ok(seen);
                    }
                }
                None if left.is_zero() => {
                    return Err(format!("{}: no expected line within {within:?}; read {seen:?}", self.label))
                }
                None => {}
            }
        }
    }

    /// Waits up to `within` for the child to exit by itself.
    pub fn wait_exit(&mut self, within: Duration) -> Option<std::process::ExitStatus> {
        let until = Instant::now() + within;
        loop {
            if let Some(st) = self.child.exited() {
                return Some(st);
            }
            if Instant::now() >= until {
                return None;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The last `n` lines of its log.
    pub fn log_tail(&self, n: usize) -> String {
        tail_lines(self.child.log_path(), n)
    }

    /// Where its output goes.
    pub fn log_path(&self) -> PathBuf {
        self.child.log_path().to_path_buf()
    }
}

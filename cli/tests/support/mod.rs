//! `testkeeper serve --listen 0 --http 0` as a child process for the CLI's black-box tests:
//! its address from the one stdout line, its admin endpoint from the stderr line, and every
//! stderr line kept so a test can read what the log says. Killed by PID on drop.

#![allow(dead_code)] // each test crate uses its own subset

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Output, Stdio};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

pub fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_testkeeper"))
}

/// A running `serve` with its admin endpoint.
pub struct Served {
    child: Child,
    pub addr: String,
    pub admin: String,
    log: Arc<Mutex<Vec<String>>>,
}

impl Served {
    /// `serve --listen 127.0.0.1:0 --http 127.0.0.1:0 <extra>`, with `env` set.
    pub fn start(extra: &[&str], env: &[(&str, &str)]) -> Served {
        let mut cmd = bin();
        cmd.args(["serve", "--listen", "127.0.0.1:0", "--http", "127.0.0.1:0"]).args(extra);
        for (k, v) in env {
            cmd.env(k, v);
        }
        let mut child = cmd.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().expect("spawn testkeeper");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
        let addr =
            line.trim().strip_prefix("testkeeper listening on ").unwrap_or_else(|| panic!("{line:?}")).to_string();
        let log = Arc::new(Mutex::new(Vec::new()));
        let (tx, rx) = mpsc::channel();
        let (stderr, kept) = (child.stderr.take().unwrap(), log.clone());
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if let Some(a) = line.strip_prefix("testkeeper http listening on ") {
                    let _ = tx.send(a.to_string());
                }
                kept.lock().unwrap().push(line);
            }
        });
        let admin = rx.recv_timeout(Duration::from_secs(20)).expect("the http line on stderr");
        Served { child, addr, admin, log }
    }

    /// The stderr lines so far.
    pub fn log(&self) -> Vec<String> {
        self.log.lock().unwrap().clone()
    }

    /// Waits until a stderr line contains every one of `parts`; returns it.
    pub fn await_log(&self, parts: &[&str]) -> String {
        let started = Instant::now();
        loop {
            if let Some(l) = self.log().into_iter().find(|l| parts.iter().all(|p| l.contains(p))) {
                return l;
            }
            assert!(
                started.elapsed() < Duration::from_secs(20),
                "no log line with {parts:?} in:\n{}",
                self.log().join("\n")
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Runs `testkeeper <args>` to completion.
pub fn run(args: &[&str]) -> Output {
    bin().args(args).stdin(Stdio::null()).output().expect("run testkeeper")
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

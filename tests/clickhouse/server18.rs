//! A Debian clickhouse-server 18.16 run in the foreground for the tests: its own config and data
//! dir, free loopback ports, queries through clickhouse-client, SIGTERM then SIGKILL by PID.
//! Included by tests/tests/clickhouse_server.rs with `#[path]`.

use std::net::{Ipv4Addr, SocketAddr, TcpStream};
use std::process::Command;
use std::time::{Duration, Instant};

use tempfile::TempDir;
use testkeeper_tests::free_ports;
use testkeeper_tests::process::{run_bounded, ServerChild};

use super::common;
use super::server18_workload::{
    CLICKHOUSE_CLIENT, CLICKHOUSE_SERVER, DDL_TIMEOUT_SECS, SHUTDOWN_TIMEOUT, STARTUP_TIMEOUT,
};

/// A clickhouse-server in the foreground, SIGTERMed (then SIGKILLed) by PID.
pub struct ClickHouseServer {
    // Dropped first: ServerChild SIGKILLs exactly its PID and reaps it
    // before the directory goes away.
    server: Option<ServerChild>,
    pub tcp_port: u16,
    dir: TempDir,
}

impl ClickHouseServer {
    /// Starts it against a ZooKeeper-protocol server on `zk_port`.
    pub fn start(zk_port: u16) -> Self {
        Self::start_with(&[zk_port], "")
    }

    /// Starts it against the servers on `zk_ports` (one `<zookeeper><node>` each, in this
    /// order), with `extra` XML added to the config's root element.
    pub fn start_with(zk_ports: &[u16], extra: &str) -> Self {
        let nodes: String = zk_ports
            .iter()
            .map(|p| format!("<node><host>127.0.0.1</host><port>{p}</port></node>"))
            .collect::<Vec<_>>()
            .join("\n        ");
        let dir = tempfile::Builder::new().prefix("testkeeper-ch18-").tempdir().expect("temp dir");
        let template = std::fs::read_to_string(common::script("server18.xml")).expect("server18.xml");
        let mut last_err = String::new();
        // A port from free_port can be taken before the server binds it.
        for _attempt in 0..3 {
            let [tcp_port, http_port, interserver_port] = free_ports(3)[..] else { unreachable!("three ports") };
            let config = template
                .replace("@DIR@", &dir.path().display().to_string())
                .replace("@TCP_PORT@", &tcp_port.to_string())
                .replace("@HTTP_PORT@", &http_port.to_string())
                .replace("@INTERSERVER_PORT@", &interserver_port.to_string())
                .replace("@ZK_NODES@", &nodes)
                .replace("</yandex>", &format!("{extra}</yandex>"));
            let config_path = dir.path().join("config.xml");
            std::fs::write(&config_path, config).expect("writing config.xml");
            let log = dir.path().join("stdout.log");
            let mut cmd = Command::new(CLICKHOUSE_SERVER);
            cmd.arg(format!("--config-file={}", config_path.display())).current_dir(dir.path());
            let mut server =
                ServerChild::spawn("clickhouse-server", &mut cmd, &log).expect("spawning clickhouse-server");
            let deadline = Instant::now() + STARTUP_TIMEOUT;
            let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, tcp_port));
            loop {
                if server.exited().is_some() {
                    last_err = format!(
                        "clickhouse-server did not start: {}\nserver.err.log:\n{}",
                        server.describe(20),
                        testkeeper_tests::process::tail_lines(&dir.path().join("log/server.err.log"), 20)
                    );
                    break;
                }
                if TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_ok() {
                    return Self { server: Some(server), tcp_port, dir };
                }
                if Instant::now() >= deadline {
                    panic!(
                        "clickhouse-server did not listen on {addr} within {STARTUP_TIMEOUT:?}: {}",
                        server.describe(20)
                    );
                }
                std::thread::sleep(Duration::from_millis(100));
            }
            if !last_err.contains("Address already in use") {
                break;
            }
        }
        panic!("{last_err}");
    }

    /// Runs one query through clickhouse-client, killed after `timeout`;
    /// `Err` holds its message.
    pub fn query(&self, sql: &str, timeout: Duration) -> Result<String, String> {
        let mut cmd = Command::new(CLICKHOUSE_CLIENT);
        cmd.args(["--host", "127.0.0.1", "--port"])
            .arg(self.tcp_port.to_string())
            .arg(format!("--distributed_ddl_task_timeout={DDL_TIMEOUT_SECS}"))
            .arg("--query")
            .arg(sql);
        let out = run_bounded(&mut cmd, b"", timeout).map_err(|e| e.to_string())?;
        if out.success() {
            Ok(out.stdout.trim_end().to_string())
        } else if out.timed_out() {
            Err(format!("timed out after {timeout:?}"))
        } else {
            Err(out.combined().trim().to_string())
        }
    }

    /// The last `n` lines of ClickHouse's error log, stack frames left out.
    pub fn err_log(&self, n: usize) -> String {
        let text = std::fs::read_to_string(self.dir.path().join("log/server.err.log")).unwrap_or_default();
        let lines: Vec<&str> = text
            .lines()
            .filter(|l| {
                let frame = l
                    .split_once(". ")
                    .is_some_and(|(num, _)| !num.is_empty() && num.bytes().all(|b| b.is_ascii_digit()));
                !frame && !l.trim().is_empty()
            })
            .collect();
        lines[lines.len().saturating_sub(n)..].join("\n")
    }

    /// The exit status if clickhouse-server has died (it crashes, for one,
    /// on ON CLUSTER without a working ZooKeeper).
    pub fn exited(&mut self) -> Option<std::process::ExitStatus> {
        self.server.as_mut().and_then(|s| s.exited())
    }

    /// SIGTERM and wait for a clean exit (tables shut down, their ephemeral
    /// znodes deleted); SIGKILL if it does not come. Returns the time taken.
    pub fn shutdown(&mut self) -> Duration {
        let started = Instant::now();
        let Some(mut server) = self.server.take() else {
            return Duration::ZERO;
        };
        let _ = Command::new("kill").args(["-TERM", &server.pid().to_string()]).status();
        while server.exited().is_none() && started.elapsed() < SHUTDOWN_TIMEOUT {
            std::thread::sleep(Duration::from_millis(50));
        }
        drop(server); // SIGKILL if still running, and reap
        started.elapsed()
    }
}

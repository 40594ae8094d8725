//! Sessions across a restart of the process (`kill -9`, then `serve` on the same data
//! directory): they are part of the state, restored with their timeouts counted again from
//! the restart.
//!
//! - zookeeper flavor: kazoo, connected before the kill, reconnects to the restarted server on
//!   the same address and resumes its session (same id, its ephemeral kept, never LOST).
//! - keeper flavor: a session whose client does not come back keeps its ephemeral until its
//!   timeout passes after the restart, then loses it.

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::Value;
use testkeeper_tests::env::kazoo_venv_ready;
use testkeeper_tests::{free_port, require_external, testkeeper_bin, venv_python, TestkeeperProcess};
use testkeeper_wire::client::{Client, ConnectOptions};
use testkeeper_wire::records::create::create_mode;
use testkeeper_wire::Acl;

/// Holds an ephemeral, prints its session id, waits for a line on stdin (the server was
/// killed and restarted), waits to be reconnected, then prints what it sees.
const KAZOO: &str = r#"
import json, sys, time
from kazoo.client import KazooClient
zk = KazooClient(hosts=sys.argv[1], timeout=20.0)
states = []
zk.add_listener(lambda s: states.append(str(s)))
zk.start(timeout=15)
zk.create("/held", b"x", ephemeral=True)
print(json.dumps({"session": zk.client_id[0]}), flush=True)
sys.stdin.readline()
deadline = time.time() + 30
while not ("SUSPENDED" in states and states[-1] == "CONNECTED") and time.time() < deadline:
    time.sleep(0.05)
stat = zk.exists("/held")
print(json.dumps({"session": zk.client_id[0], "owner": stat.ephemeralOwner if stat else None,
                  "states": states}), flush=True)
zk.stop(); zk.close()
"#;

fn start_on(listen: &str, args: &[&str]) -> TestkeeperProcess {
    TestkeeperProcess::try_start_listening(&testkeeper_bin(), listen, args).unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn zookeeper_flavor_kazoo_resumes_its_session_after_a_restart() {
    require_external!("kazoo venv", kazoo_venv_ready());
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().display().to_string();
    let listen = format!("127.0.0.1:{}", free_port());
    let args = ["--flavor", "zookeeper", "--data-dir", &d];
    let tk = start_on(&listen, &args);
    let mut py = Command::new(venv_python())
        .args(["-c", KAZOO, &listen])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("python");
    let (tx, rx) = mpsc::channel();
    let stdout = py.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let line = |what: &str| -> Value {
        let l = rx.recv_timeout(Duration::from_secs(60)).unwrap_or_else(|_| panic!("kazoo never printed {what}"));
        serde_json::from_str(&l).unwrap_or_else(|e| panic!("{what}: {l:?}: {e}"))
    };
    let before = line("its session");
    drop(tk); // SIGKILL
              // Let kazoo see the connection drop before the server is back.
    std::thread::sleep(Duration::from_millis(300));
    let tk = start_on(&listen, &args);
    py.stdin.as_mut().unwrap().write_all(b"restarted\n").unwrap();
    let after = line("what it saw after the restart");
    let _ = py.wait();
    assert_eq!(after["session"], before["session"], "the same session: {after}");
    assert_eq!(after["owner"], before["session"], "its ephemeral is kept: {after}");
    let states: Vec<&str> = after["states"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
    assert!(!states.contains(&"LOST"), "never lost: {states:?}");
    assert!(states.contains(&"SUSPENDED"), "kazoo saw the kill: {states:?}\n{}", tk.log_tail(20));
}

#[test]
fn keeper_flavor_a_session_not_resumed_expires_after_its_timeout() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().display().to_string();
    let args = ["--flavor", "keeper", "--data-dir", &d, "--min-session-timeout", "2000"];
    const TIMEOUT_MS: i32 = 5000;
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let tk = start_on("127.0.0.1:0", &args);
    let session = rt.block_on(async {
        let opts = ConnectOptions { timeout_ms: TIMEOUT_MS, ..ConnectOptions::default() };
        let c = Client::connect(tk.addr(), opts).await.unwrap();
        assert_eq!(c.negotiated_timeout_ms(), TIMEOUT_MS);
        c.create("/gone", b"", &Acl::open(), create_mode::EPHEMERAL).await.unwrap();
        c.session_id()
    });
    drop(tk); // SIGKILL; the client never comes back.
    let tk = start_on("127.0.0.1:0", &args);
    let restarted = Instant::now();
    rt.block_on(async {
        let c = Client::connect(tk.addr(), ConnectOptions::default()).await.unwrap();
        let stat = c.exists("/gone", false).await.unwrap();
        assert_eq!(
            stat.map(|s| s.ephemeral_owner),
            Some(session),
            "right after the restart ({:?}) the restored session still holds its ephemeral",
            restarted.elapsed()
        );
        let deadline = restarted + Duration::from_millis(TIMEOUT_MS as u64) + Duration::from_secs(20);
        while c.exists("/gone", false).await.unwrap().is_some() {
            assert!(Instant::now() < deadline, "the ephemeral outlived its session:\n{}", tk.log_tail(20));
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        eprintln!("the restored session's ephemeral went {:?} after the restart", restarted.elapsed());
    });
}

//! Issue 4's check with an ordinary third-party client: kazoo against
//! `testkeeper serve --fault 'drop-response:op=create,path=/f/*,count=1'`. The create of /f/a
//! fails with a connection loss although the server applied it; after kazoo reconnects, /f/a
//! exists, and the next create succeeds normally. Both flavors (zookeeper resumes the session,
//! keeper hands out a new one).

use std::process::Command;

use testkeeper_tests::env::kazoo_venv_ready;
use testkeeper_tests::{require_external, venv_python, TestkeeperProcess};

const SCRIPT: &str = r#"
import sys, time
from kazoo.client import KazooClient
from kazoo.exceptions import ConnectionLoss
from kazoo.retry import KazooRetry
zk = KazooClient(hosts=sys.argv[1], timeout=15, connection_retry=KazooRetry(max_tries=-1, delay=0.05, max_delay=0.2))
zk.start(timeout=10)
zk.create("/f")
try:
    zk.create("/f/a", b"1")
    print("create returned: the response was not dropped")
    sys.exit(1)
except ConnectionLoss:
    print("create /f/a: ConnectionLoss (unknown outcome)")
deadline = time.time() + 10
while not zk.connected and time.time() < deadline:
    time.sleep(0.05)
assert zk.connected, "kazoo reconnected"
assert zk.exists("/f/a") is not None, "the dropped create was applied"
print("/f/a exists after reconnecting")
zk.create("/f/b", b"2")
print("create /f/b: ok")
zk.stop()
"#;

#[test]
fn kazoo_sees_a_dropped_response_as_connection_loss_and_the_write_as_applied() {
    require_external!("kazoo venv", kazoo_venv_ready());
    for flavor in ["zookeeper", "keeper"] {
        let tk = TestkeeperProcess::start(&[
            "--flavor",
            flavor,
            "--fault",
            "drop-response:op=create,path=/f/*,count=1",
            "--seed",
            "7",
        ]);
        let out = Command::new(venv_python()).args(["-c", SCRIPT, &tk.addr().to_string()]).output().expect("python");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{flavor}: {stdout}\n{}\nserver log:\n{}",
            String::from_utf8_lossy(&out.stderr),
            tk.log_tail(20)
        );
        assert!(stdout.contains("ConnectionLoss") && stdout.contains("create /f/b: ok"), "{flavor}: {stdout}");
    }
}

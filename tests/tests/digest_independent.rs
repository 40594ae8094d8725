//! Issue 3's check: an independent implementation of Keeper's digest formula (Python, its own
//! SipHash, reading every node through kazoo) must equal `zk_nodes_digest` from `mntr` on a live
//! server after a random workload (no TTL or container nodes: clients cannot see TTLs).

use std::process::Command;

use testkeeper_tests::env::kazoo_venv_ready;
use testkeeper_tests::{four_letter_word, repo_root, require_external, venv_python, TestkeeperProcess};

const WORKLOAD: &str = r#"
import random, sys
from kazoo.client import KazooClient
seed = int(sys.argv[2]); rnd = random.Random(seed)
zk = KazooClient(hosts=sys.argv[1]); zk.start(timeout=10)
other = KazooClient(hosts=sys.argv[1]); other.start(timeout=10)
paths = ["/w", "/w/a", "/w/b", "/w/a/x", "/v", "/v/s"]
for i in range(300):
    p = rnd.choice(paths); c = rnd.choice([zk, other]); op = rnd.random()
    try:
        if op < 0.4: c.create(p, bytes(rnd.randrange(256) for _ in range(rnd.randrange(5))), ephemeral=rnd.random() < 0.2, sequence=rnd.random() < 0.2)
        elif op < 0.7: c.set(p, bytes([i % 256]) * rnd.randrange(4))
        elif op < 0.9: c.delete(p)
        else:
            t = c.transaction(); t.create(p + "/m"); t.set_data(p, b"t"); t.commit()
    except Exception:
        pass
other.stop(); other.close()
zk.stop(); zk.close()
print("workload done, seed", seed)
"#;

#[test]
fn independent_digest_equals_mntr() {
    require_external!("kazoo venv", kazoo_venv_ready());
    for flavor in ["keeper", "zookeeper"] {
        let tk = TestkeeperProcess::start(&["--flavor", flavor]);
        let hosts = tk.addr().to_string();
        let seed = std::env::var("TESTKEEPER_SEED").ok().and_then(|s| s.parse::<u64>().ok()).unwrap_or(7);
        let out =
            Command::new(venv_python()).args(["-c", WORKLOAD, &hosts, &seed.to_string()]).output().expect("python");
        assert!(out.status.success(), "workload failed: {}", String::from_utf8_lossy(&out.stderr));
        let script = repo_root().join("tests/digest/independent_digest.py");
        let out = Command::new(venv_python()).arg(&script).arg(&hosts).output().expect("python");
        assert!(out.status.success(), "independent digest failed: {}", String::from_utf8_lossy(&out.stderr));
        let independent: u64 = String::from_utf8_lossy(&out.stdout).trim().parse().expect("a number");
        let mntr = four_letter_word(tk.addr(), "mntr", std::time::Duration::from_secs(5)).expect("mntr");
        let served: u64 = mntr
            .lines()
            .find_map(|l| l.strip_prefix("zk_nodes_digest\t"))
            .expect("zk_nodes_digest in mntr")
            .trim()
            .parse()
            .expect("a number");
        assert_eq!(independent, served, "{flavor}: independent digest vs mntr (seed {seed})");
        let ours = Command::new(testkeeper_tests::testkeeper_bin())
            .args(["digest", "--target", &hosts, "--json"])
            .output()
            .expect("digest");
        assert!(
            String::from_utf8_lossy(&ours.stdout).contains(&format!("\"keeper_digest\":\"{served}\"")),
            "testkeeper digest agrees (its u64 as a JSON string)"
        );
    }
}

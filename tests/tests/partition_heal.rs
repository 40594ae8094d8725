//! A healed partition between three `serve` processes over real TCP, each in a network
//! namespace of this test's own, joined by a bridge in a fourth (issue 27, item 5; root only:
//! CI runs it as root, elsewhere it says why it skips). The leader's link is cut for 20 s while
//! the other two elect a leader and take writes; then the link comes back.
//!
//! Before: peer connections never timed out (no keepalive, no TCP_USER_TIMEOUT, no connect
//! timeout), so a node cut off for 15 s rejoined 11.9 s after the heal, for 60 s about 46 s:
//! nothing flowed until the kernel's next retransmission. Now (cluster/net/local.rs: keepalive,
//! TCP_USER_TIMEOUT 5 s, a 2 s dial timeout) the old leader must be a follower holding every
//! znode the new leader has within a few seconds of the heal; docs/cluster.md promises about
//! 2 s, the test allows 8 so that a loaded CI machine does not fail it for nothing, which still
//! tells the fixed behaviour from the old.

use std::collections::BTreeMap;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use testkeeper_tests::env;

const CUT: Duration = Duration::from_secs(20);
const HEALED_WITHIN: Duration = Duration::from_secs(8);

/// Runs `ip ARGS`, naming the command on failure.
fn ip(args: &[&str]) -> Result<(), String> {
    let out = Command::new("ip").args(args).output().map_err(|e| format!("ip: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!("ip {}: {}", args.join(" "), String::from_utf8_lossy(&out.stderr).trim()))
    }
}

/// Three namespaces `TAG-1..3` with 10.77.0.N on a veth each, bridged in `TAG-hub`; the
/// processes started in them. Dropped: the processes killed (by PID) and the namespaces gone.
struct Topology {
    tag: String,
    procs: Vec<Child>,
}

impl Topology {
    fn create() -> Result<Topology, String> {
        let tag = format!("tk{}", std::process::id());
        let t = Topology { tag: tag.clone(), procs: Vec::new() };
        let hub = t.ns("hub");
        ip(&["netns", "add", &hub])?;
        ip(&["-n", &hub, "link", "set", "lo", "up"])?;
        ip(&["-n", &hub, "link", "add", "br0", "type", "bridge"])?;
        ip(&["-n", &hub, "link", "set", "br0", "up"])?;
        for i in 1..=3 {
            let (ns, a, b) = (t.ns(&i.to_string()), format!("{tag}v{i}a"), t.hub_end(i));
            ip(&["netns", "add", &ns])?;
            ip(&["-n", &ns, "link", "set", "lo", "up"])?;
            ip(&["link", "add", &a, "type", "veth", "peer", "name", &b])?;
            ip(&["link", "set", &a, "netns", &ns])?;
            ip(&["link", "set", &b, "netns", &hub])?;
            ip(&["-n", &ns, "addr", "add", &format!("10.77.0.{i}/24"), "dev", &a])?;
            ip(&["-n", &ns, "link", "set", &a, "up"])?;
            ip(&["-n", &hub, "link", "set", &b, "master", "br0"])?;
            ip(&["-n", &hub, "link", "set", &b, "up"])?;
        }
        Ok(t)
    }

    fn ns(&self, name: &str) -> String {
        format!("{}-{name}", self.tag)
    }

    fn hub_end(&self, i: u64) -> String {
        format!("{}v{i}b", self.tag)
    }

    /// Takes node `i`'s link down (`up` false) or back up, at the bridge.
    fn link(&self, i: u64, up: bool) -> Result<(), String> {
        ip(&["-n", &self.ns("hub"), "link", "set", &self.hub_end(i), if up { "up" } else { "down" }])
    }

    /// `ip netns exec` node `i`'s namespace.
    fn exec(&self, i: u64) -> Command {
        let mut c = Command::new("ip");
        c.args(["netns", "exec", &self.ns(&i.to_string())]);
        c
    }

    fn start_node(&mut self, i: u64) -> Result<(), String> {
        let peers = "1=10.77.0.1:9234,2=10.77.0.2:9234,3=10.77.0.3:9234";
        let child = self
            .exec(i)
            .arg(env::testkeeper_bin())
            .args(["serve", "--listen", &format!("10.77.0.{i}:2181"), "--id", &i.to_string(), "--peers", peers])
            .args(["--raft-tcp-only", "--seed", "3"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("starting node {i}: {e}"))?;
        self.procs.push(child);
        Ok(())
    }

    /// Node `i`'s `mntr`, through a socket opened inside its namespace (`None`: no answer).
    fn mntr(&self, i: u64) -> Option<BTreeMap<String, String>> {
        let script = "import socket,sys\n\
            s=socket.create_connection((sys.argv[1],2181),1)\ns.settimeout(1)\ns.sendall(b'mntr')\nb=b''\n\
            while True:\n  d=s.recv(65536)\n  if not d: break\n  b+=d\nsys.stdout.write(b.decode())";
        let out = self.exec(i).args(["python3", "-c", script, &format!("10.77.0.{i}")]).output().ok()?;
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        let map: BTreeMap<String, String> =
            (text.lines()).filter_map(|l| l.split_once('\t')).map(|(k, v)| (k.to_string(), v.to_string())).collect();
        (!map.is_empty()).then_some(map)
    }

    fn state(&self, i: u64) -> Option<(String, u64)> {
        let m = self.mntr(i)?;
        Some((m.get("zk_server_state")?.clone(), m.get("zk_znode_count")?.parse().ok()?))
    }

    /// Waits until one of `among` leads (the others following); returns it.
    fn leader(&self, among: &[u64], within: Duration) -> Result<u64, String> {
        let until = Instant::now() + within;
        loop {
            let states: Vec<(u64, Option<(String, u64)>)> = among.iter().map(|i| (*i, self.state(*i))).collect();
            let leaders: Vec<u64> =
                (states.iter()).filter(|(_, s)| s.as_ref().is_some_and(|s| s.0 == "leader")).map(|(i, _)| *i).collect();
            if leaders.len() == 1 && states.iter().all(|(_, s)| s.is_some()) {
                return Ok(leaders[0]);
            }
            if Instant::now() > until {
                return Err(format!("no single leader among {among:?} within {within:?}: {states:?}"));
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for Topology {
    fn drop(&mut self) {
        for p in &mut self.procs {
            let _ = p.kill();
            let _ = p.wait();
        }
        for name in ["1", "2", "3", "hub"] {
            let _ = Command::new("ip").args(["netns", "del", &self.ns(name)]).status();
        }
    }
}

fn is_root() -> bool {
    Command::new("id").arg("-u").output().is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
}

#[test]
fn a_leader_cut_off_for_20_s_rejoins_and_catches_up_within_seconds_of_the_heal() {
    if !is_root() {
        eprintln!("skipping: network namespaces need root; CI runs this test as root");
        return;
    }
    if !env::external_prereq("python3", env::find_in_path("python3").is_some())
        || !env::external_prereq("iproute2's ip", env::find_in_path("ip").is_some())
    {
        return;
    }
    let mut t = Topology::create().expect("network namespaces (root, iproute2)");
    for i in 1..=3 {
        t.start_node(i).unwrap();
    }
    let old = t.leader(&[1, 2, 3], Duration::from_secs(30)).unwrap();
    let rest: Vec<u64> = [1, 2, 3].into_iter().filter(|i| *i != old).collect();
    t.link(old, false).unwrap();
    let cut_at = Instant::now();
    let new = t.leader(&rest, Duration::from_secs(15)).unwrap();
    // Writes the old leader misses, through the new one.
    let creates: Vec<String> = (0..20).map(|n| format!("create /healed-{n} x")).collect();
    let out = t
        .exec(new)
        .arg(env::testkeeper_bin())
        .args(["client", "-h", &format!("10.77.0.{new}"), "-p", "2181", "-q", &creates.join("; ")])
        .output()
        .unwrap();
    assert!(out.status.success(), "writes through node {new}: {}", String::from_utf8_lossy(&out.stderr));
    let want = t.state(new).expect("the new leader answers").1;
    std::thread::sleep(CUT.saturating_sub(cut_at.elapsed()));

    t.link(old, true).unwrap();
    let healed = Instant::now();
    let mut last = None;
    let took = loop {
        last = t.state(old).or(last);
        if last.as_ref().is_some_and(|(role, count)| role == "follower" && *count >= want) {
            break healed.elapsed();
        }
        assert!(
            healed.elapsed() < HEALED_WITHIN,
            "node {old} (the old leader) is {last:?} {HEALED_WITHIN:?} after the heal; node {new} leads with {want} znodes"
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    eprintln!("node {old}, cut off for {CUT:?}, followed node {new} with all {want} znodes {took:?} after the heal");
}

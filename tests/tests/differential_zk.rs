//! Differential run: the same seeded random op sequence against Apache ZooKeeper 3.8 and
//! against `testkeeper serve --flavor zookeeper`, compared reply by reply: error codes, paths,
//! data, stats (times reduced to "ctime == mtime"; session ids to their index), sorted
//! children, multi vectors and the watch events every session received.
//!
//! The seed is printed; `TESTKEEPER_SEED=N` replays a failure exactly.

use std::net::SocketAddr;
use std::time::Duration;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use testkeeper_tests::env::zookeeper_installed;
use testkeeper_tests::{require_external, TestkeeperProcess, ZooKeeperProcess};
use testkeeper_wire::client::{Client, ConnectOptions, Event};
use testkeeper_wire::records::acl::{GetAclRequest, SetAclRequest};
use testkeeper_wire::records::children::GetChildrenRequest;
use testkeeper_wire::records::create::CreateRequest;
use testkeeper_wire::records::data::{
    CheckVersionRequest, DeleteRequest, ExistsRequest, GetDataRequest, PathRecord, SetDataRequest,
};
use testkeeper_wire::records::watches::AddWatchRequest;
use testkeeper_wire::{Acl, CreateOp, MultiResult, OpCode, Request, Response, Stat};
use tokio::sync::mpsc::UnboundedReceiver;

const PATHS: [&str; 9] = ["/a", "/b", "/a/x", "/a/y", "/b/z", "/a/x/q", "/c", "/c/d", "/a/x/q/r"];
const SESSIONS: usize = 3;

fn random_request(rng: &mut ChaCha8Rng, in_multi: bool) -> Request {
    let path = PATHS[rng.gen_range(0..PATHS.len())].to_string();
    let version = if rng.gen_bool(0.6) { -1 } else { rng.gen_range(0..3) };
    // Null data (a -1 buffer) is kept apart from empty data by ZooKeeper: cover both.
    let data: Option<Vec<u8>> = if rng.gen_bool(0.1) {
        None
    } else {
        Some((0..rng.gen_range(0..4)).map(|_| rng.gen_range(b'a'..=b'z')).collect())
    };
    let watch = rng.gen_bool(0.5);
    // A standalone check is left out: ZooKeeper 3.8 never answers a successful one (see
    // docs/flavors.md), so it only appears inside multis.
    let choice = loop {
        let c = rng.gen_range(0..if in_multi { 4 } else { 14 });
        if in_multi || c != 3 {
            break c;
        }
    };
    match choice {
        0 => {
            let flags = rng.gen_range(0..4);
            let op = if rng.gen_bool(0.3) { OpCode::Create2 } else { OpCode::Create };
            Request::Create(CreateOp { op, req: CreateRequest { path, data, acl: Acl::open(), flags }, ttl: 0 })
        }
        1 => Request::Delete(DeleteRequest { path, version }),
        2 => Request::SetData(SetDataRequest { path, data, version }),
        3 => Request::Check(CheckVersionRequest { path, version }),
        4 => Request::Exists(ExistsRequest { path, watch }),
        5 => Request::GetData(GetDataRequest { path, watch }),
        6 => Request::GetChildren(GetChildrenRequest { path, watch }),
        7 => Request::GetChildren2(GetChildrenRequest { path, watch }),
        8 => Request::SetAcl(SetAclRequest {
            path,
            acl: if rng.gen_bool(0.5) { Acl::open() } else { Acl::read_only() },
            version,
        }),
        9 => Request::Multi((0..rng.gen_range(0..4)).map(|_| random_request(rng, true)).collect()),
        10 => Request::GetAcl(GetAclRequest { path }),
        11 => Request::AddWatch(AddWatchRequest { path, mode: rng.gen_range(0..2) }),
        12 => Request::Sync(PathRecord { path }),
        _ => Request::MultiRead(
            (0..rng.gen_range(1..4))
                .map(|_| {
                    let path = PATHS[rng.gen_range(0..PATHS.len())].to_string();
                    if rng.gen_bool(0.5) {
                        Request::GetData(GetDataRequest { path, watch: false })
                    } else {
                        Request::GetChildren(GetChildrenRequest { path, watch: false })
                    }
                })
                .collect(),
        ),
    }
}

struct Side {
    clients: Vec<Client>,
    events: Vec<UnboundedReceiver<Event>>,
    session_ids: Vec<i64>,
}

impl Side {
    async fn connect(addr: SocketAddr) -> Side {
        let mut side = Side { clients: Vec::new(), events: Vec::new(), session_ids: Vec::new() };
        for _ in 0..SESSIONS {
            let mut c = Client::connect(addr, ConnectOptions::default()).await.expect("connect");
            side.events.push(c.events().expect("events"));
            side.session_ids.push(c.session_id());
            side.clients.push(c);
        }
        side
    }

    fn norm_stat(&self, s: &Stat) -> String {
        let owner = match self.session_ids.iter().position(|id| *id == s.ephemeral_owner) {
            Some(i) => format!("s{i}"),
            None if s.ephemeral_owner == 0 => "0".to_string(),
            None => "other-session".to_string(),
        };
        format!(
            "czxid={} mzxid={} pzxid={} v={} cv={} av={} owner={} len={} kids={}",
            s.czxid, s.mzxid, s.pzxid, s.version, s.cversion, s.aversion, owner, s.data_length, s.num_children
        )
    }

    fn norm_response(&self, r: &Response) -> String {
        match r {
            Response::Stat(s) => format!("stat[{}]", self.norm_stat(s)),
            Response::Data { data, stat } => {
                format!("data={:?} [{}]", data.as_deref().map(String::from_utf8_lossy), self.norm_stat(stat))
            }
            Response::Children(c) => format!("children={:?}", sorted(c)),
            Response::Acl { acl, stat } => format!("acl={acl:?} [{}]", self.norm_stat(stat)),
            Response::Children2 { children, stat } => {
                format!("children={:?} [{}]", sorted(children), self.norm_stat(stat))
            }
            Response::Create2 { path, stat } => {
                format!("created {path} [{}]", self.norm_stat(stat))
            }
            Response::Multi(results) => {
                let parts: Vec<String> = results
                    .iter()
                    .map(|m| match m {
                        MultiResult::Ok(op, body) => {
                            format!("{}:{}", op.name(), self.norm_response(body))
                        }
                        MultiResult::Error(code) => format!("err{code}"),
                        MultiResult::OpError(op, code) => format!("{}:err{code}", op.name()),
                    })
                    .collect();
                format!("multi[{}]", parts.join(", "))
            }
            other => format!("{other:?}"),
        }
    }

    /// Sends `req` as session `who`, then pings every session so that every event the request
    /// caused has arrived (replies and events are FIFO per connection).
    async fn step(&mut self, who: usize, req: &Request) -> String {
        let reply = self.clients[who].call(req.clone()).await;
        let mut line = match reply {
            Ok(r) => match r.body {
                Ok(body) => format!("zxid={} ok {}", r.header.zxid, self.norm_response(&body)),
                Err(code) => format!("zxid={} err {}", r.header.zxid, code.code()),
            },
            Err(e) => format!("client error {e}"),
        };
        for c in &self.clients {
            let _ = c.ping().await;
        }
        for (i, rx) in self.events.iter_mut().enumerate() {
            while let Ok(ev) = rx.try_recv() {
                line.push_str(&format!(" | s{i} event type={} path={}", ev.event.event_type, ev.event.path));
            }
        }
        line
    }
}

fn sorted(v: &[String]) -> Vec<String> {
    let mut v = v.to_vec();
    v.sort();
    v
}

async fn transcript(addr: SocketAddr, seed: u64, steps: usize) -> Vec<String> {
    let mut side = Side::connect(addr).await;
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut out = Vec::with_capacity(steps);
    for i in 0..steps {
        let who = rng.gen_range(0..SESSIONS);
        let req = random_request(&mut rng, false);
        let line = match tokio::time::timeout(Duration::from_secs(10), side.step(who, &req)).await {
            Ok(line) => line,
            Err(_) => panic!("step #{i} (s{who} {req:?}) got no answer from {addr} within 10 s; seed {seed}"),
        };
        out.push(format!("#{i} s{who} {req:?} => {line}"));
    }
    if std::env::var("TESTKEEPER_DIFF_DUMP").is_ok() {
        let ids: Vec<String> = side.session_ids.iter().map(|i| format!("{i:#x}")).collect();
        eprintln!(
            "== {addr} sessions {ids:?}\n{}",
            testkeeper_tests::four_letter_word(addr, "wchc", Duration::from_secs(5)).unwrap_or_default()
        );
    }
    // Closing a session deletes its ephemerals and fires the others' watches; close them all
    // so the next round starts from the same persistent tree on both servers.
    while side.clients.len() > 1 {
        let c = side.clients.remove(0);
        side.events.remove(0);
        side.session_ids.remove(0);
        c.close().await.ok();
        out.push(side.step(0, &Request::Exists(ExistsRequest { path: "/".into(), watch: false })).await);
    }
    side.clients.remove(0).close().await.ok();
    out
}

fn seed() -> u64 {
    std::env::var("TESTKEEPER_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or_else(|| {
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(1, |d| d.as_nanos() as u64)
    })
}

#[test]
fn random_ops_match_zookeeper_3_8() {
    require_external!("Debian ZooKeeper", zookeeper_installed());
    let zk = ZooKeeperProcess::start();
    let tk = TestkeeperProcess::start(&["--flavor", "zookeeper"]);
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
    // One base seed for the whole run: later rounds start from the tree earlier rounds left, so
    // only the base seed replays a failure exactly.
    let base = seed();
    eprintln!("differential base seed {base} (replay with TESTKEEPER_SEED={base})");
    let seeds: Vec<u64> = match std::env::var("TESTKEEPER_DIFF_SEEDS") {
        Ok(list) => list.split(',').map(|s| s.trim().parse().expect("TESTKEEPER_DIFF_SEEDS: numbers")).collect(),
        Err(_) => (0..3).map(|r| base.wrapping_add(r)).collect(),
    };
    for (round, seed) in seeds.into_iter().enumerate() {
        eprintln!("round {round}: seed {seed}");
        // Both servers start each round from the tree the last round left; zxids stay aligned
        // because every round runs the same sequence on both.
        let want = rt.block_on(transcript(zk.addr(), seed, 300));
        let got = rt.block_on(transcript(tk.addr(), seed, 300));
        if want != got {
            // Keep both transcripts for the post-mortem.
            let dir = testkeeper_tests::repo_root().join("target/tmp");
            let _ = std::fs::create_dir_all(&dir);
            let _ = std::fs::write(dir.join(format!("differential-{seed}-zookeeper.txt")), want.join("\n"));
            let _ = std::fs::write(dir.join(format!("differential-{seed}-testkeeper.txt")), got.join("\n"));
        }
        for (w, g) in want.iter().zip(&got) {
            assert_eq!(g, w, "testkeeper (left) differs from ZooKeeper 3.8 (right); base seed {base}, round {round}");
        }
        assert_eq!(want.len(), got.len());
    }
}

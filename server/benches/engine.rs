//! Criterion benchmark of the engine as a connection drives it: a batch of pipelined requests
//! handled under one lock, and the lock released (entries appended and committed, replies
//! encoded and handed to the connection's queue). No socket and no runtime, so it measures
//! what the server does per request besides the kernel's work, and it is steady enough to
//! compare two builds where `testkeeper bench` on a shared 2-core machine is not.
//!
//! The mix is `testkeeper bench`'s default (create 10, get 50, set 20, delete 10, multi 5,
//! list 5) over its 256 keys of 100 B (list returns them all), 16 requests a batch, as one of
//! its 8 x 16 sessions sends them; an iteration is 64 batches. Run with
//! `cargo bench -p testkeeper-server --bench engine` (about 20 s).

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion};
use testkeeper_server::clock::Clock;
use testkeeper_server::config::ServerConfig;
use testkeeper_server::core::flavor::Flavor;
use testkeeper_server::engine::backlog::Backlog;
use testkeeper_server::engine::{Engine, Handshake, Out, Shared};
use testkeeper_wire::records::children::GetChildrenRequest;
use testkeeper_wire::records::connect::ConnectRequest;
use testkeeper_wire::records::data::GetDataRequest;
use testkeeper_wire::Request;
use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver};

mod requests;
use requests::{create, delete, set};

const KEYS: u64 = 256;
const BATCH: usize = 16;
/// Batches per measured iteration: long enough that the timer's own cost is noise.
const BATCHES: usize = 64;

fn key(k: u64) -> String {
    format!("/bench/k{k}")
}

/// The `n`-th request of the mix: a fixed sequence (a linear congruential draw), so two builds
/// see the same requests.
fn request(n: u64) -> Request {
    let r = n.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407) >> 33;
    let (pick, k) = (r % 100, (r / 100) % KEYS);
    match pick {
        0..10 => create(&key(k)),
        10..60 => Request::GetData(GetDataRequest { path: key(k), watch: false }),
        60..80 => set(&key(k)),
        80..90 => delete(&key(k)),
        90..95 => {
            let path = format!("/bench/m{n}");
            Request::Multi(vec![create(&path), delete(&path)])
        }
        _ => Request::GetChildren(GetChildrenRequest { path: "/bench".into(), watch: false }),
    }
}

/// One in-memory server and one connected session on it.
struct Rig {
    shared: Arc<Shared>,
    conn: u64,
    rx: UnboundedReceiver<Out>,
    next: u64,
}

impl Rig {
    fn new() -> Rig {
        let cfg = Arc::new(ServerConfig::new(Flavor::Keeper));
        let shared = Shared::new(cfg.clone(), Engine::new(cfg, Clock::System));
        let (tx, rx) = unbounded_channel();
        let peer: SocketAddr = "127.0.0.1:1".parse().expect("address");
        let conn = {
            let mut e = shared.engine();
            let conn = e.add_conn(peer, tx, Backlog::new(0));
            let req = ConnectRequest {
                protocol_version: 0,
                last_zxid_seen: 0,
                timeout_ms: 30_000,
                session_id: 0,
                passwd: vec![0; 16],
                read_only: None,
            };
            assert_eq!(e.connect(conn, &req), Handshake::Accept);
            conn
        };
        let mut rig = Rig { shared, conn, rx, next: 0 };
        rig.batch(vec![create("/bench")]);
        // Half the keys exist, as in a bench run that has been going for a while.
        rig.batch((0..KEYS).step_by(2).map(|k| create(&key(k))).collect());
        rig
    }

    /// Handles `reqs` under one lock and releases it, then takes what was written.
    fn batch(&mut self, reqs: Vec<Request>) -> usize {
        {
            let mut e = self.shared.engine();
            for req in reqs {
                self.next += 1;
                e.handle(self.conn, self.next as i32, req);
            }
        }
        let mut bytes = 0;
        while let Ok(out) = self.rx.try_recv() {
            if let Out::Frame(b) = out {
                bytes += b.len();
            }
        }
        bytes
    }
}

fn engine(c: &mut Criterion) {
    let mut rig = Rig::new();
    let mut n = 0u64;
    let mut g = c.benchmark_group("engine");
    g.bench_function("64_batches_of_16_default_mix", |b| {
        b.iter_batched(
            || {
                let batches: Vec<Vec<Request>> = (0..BATCHES)
                    .map(|_| {
                        let reqs = (n..n + BATCH as u64).map(request).collect();
                        n += BATCH as u64;
                        reqs
                    })
                    .collect();
                batches
            },
            |batches| batches.into_iter().map(|reqs| rig.batch(reqs)).sum::<usize>(),
            criterion::BatchSize::SmallInput,
        );
    });
    g.finish();
}

fn quick() -> Criterion {
    Criterion::default().warm_up_time(Duration::from_secs(2)).measurement_time(Duration::from_secs(8)).sample_size(50)
}

criterion_group! { name = benches; config = quick(); targets = engine }
criterion_main!(benches);

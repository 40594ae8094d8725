//! Criterion micro-benchmarks of the hot paths under `testkeeper bench`: frame encode/decode,
//! propose + `apply` of create/set/delete/multi (digest on and off), and watch fan-out.
//!
//! Run with `cargo bench -p testkeeper-server --bench core`; measurement times are short so
//! the whole set finishes in about a minute on a 2-core machine. Numbers here are for
//! comparing two builds of testkeeper on one machine, never thresholds.

use std::time::Duration;

use bytes::BytesMut;
use criterion::{black_box, criterion_group, criterion_main, BatchSize, Criterion};
use testkeeper_server::core::apply::Trigger;
use testkeeper_server::core::flavor::{Flavor, Rules};
use testkeeper_server::core::propose::{Decide, Proposer};
use testkeeper_server::core::state::{State, StateOptions};
use testkeeper_server::core::watches::{WatchKind, Watches};
use testkeeper_wire::frame::{put_request, split_frame, DEFAULT_MAX_FRAME};
use testkeeper_wire::jute::{Decode, Reader};
use testkeeper_wire::records::data::GetDataRequest;
use testkeeper_wire::records::header::RequestHeader;
use testkeeper_wire::Request;

mod requests;
use requests::{create, delete, set};

/// The state machine driven as the engine drives it in memory: propose, then apply one entry.
struct Machine {
    state: State,
    proposer: Proposer,
    session: i64,
}

impl Machine {
    fn new(digest_enabled: bool, nodes: usize) -> Machine {
        let opts = StateOptions {
            rules: Rules::new(Flavor::Keeper, 0x0100_0000_0000_0000),
            digest_enabled,
            feature_flags: vec![0xC0, 0],
            api_version: b"2".to_vec(),
            zookeeper_config: Vec::new(),
        };
        let state = State::new(&opts);
        let mut m = Machine { proposer: Proposer::new(&state, 1), state, session: 0 };
        m.run(0, Decide::CreateSession { timeout_ms: 30_000, passwd: [0; 16] });
        m.session = *m.state.sessions().keys().next().expect("session created");
        m.write(&create("/b"));
        for i in 0..nodes {
            m.write(&create(&format!("/b/n{i}")));
        }
        m
    }

    fn run(&mut self, session: i64, what: Decide<'_>) {
        let entry = self.proposer.propose(&self.state, session, 1_700_000_000_000, 0, what);
        let applied = self.state.apply(&entry).expect("the digest the proposer decided");
        self.proposer.committed(entry.index());
        black_box(applied);
    }

    fn write(&mut self, req: &Request) {
        self.run(self.session, Decide::Write { req, auth: &[] });
    }
}

fn codec(c: &mut Criterion) {
    let req = Request::GetData(GetDataRequest { path: "/bench/k123".into(), watch: false });
    let mut g = c.benchmark_group("frame");
    g.bench_function("encode_get_data", |b| {
        let mut out = BytesMut::with_capacity(256);
        b.iter(|| {
            out.clear();
            put_request(&mut out, 7, black_box(&req));
        })
    });
    for (name, req) in [("get_data", req.clone()), ("create_100b", create("/bench/k123"))] {
        let mut buf = BytesMut::new();
        put_request(&mut buf, 7, &req);
        let buf = buf.freeze();
        g.bench_function(format!("decode_{name}"), |b| {
            b.iter(|| {
                let n = split_frame(black_box(&buf), DEFAULT_MAX_FRAME).unwrap().unwrap();
                let mut r = Reader::new(&buf[4..n]);
                let h = RequestHeader::decode(&mut r).unwrap();
                black_box(Request::decode_body(h.op, r.remaining()).unwrap())
            })
        });
    }
    g.finish();
}

fn apply(c: &mut Criterion) {
    for digest in [true, false] {
        let mut g = c.benchmark_group(if digest { "apply_digest_on" } else { "apply_digest_off" });
        // Create then delete, so the tree stays at 10k nodes however long criterion runs.
        g.bench_function("create_delete", |b| {
            let mut m = Machine::new(digest, 10_000);
            b.iter(|| {
                m.write(&create("/b/x"));
                m.write(&delete("/b/x"));
            })
        });
        g.bench_function("set", |b| {
            let mut m = Machine::new(digest, 10_000);
            let mut i = 0;
            b.iter(|| {
                i = (i + 1) % 10_000;
                m.write(&set(&format!("/b/n{i}")));
            })
        });
        g.bench_function("multi_create_delete", |b| {
            let mut m = Machine::new(digest, 10_000);
            let req = Request::Multi(vec![create("/b/m"), delete("/b/m")]);
            b.iter(|| m.write(&req))
        });
        g.finish();
    }
}

fn watches(c: &mut Criterion) {
    let rules = Rules::new(Flavor::Keeper, 0x0100_0000_0000_0000);
    let mut g = c.benchmark_group("watch_fanout");
    for sessions in [1i64, 100, 1000] {
        g.bench_function(format!("data_changed_{sessions}_sessions"), |b| {
            b.iter_batched(
                || {
                    let mut w = Watches::default();
                    for s in 0..sessions {
                        w.add(WatchKind::Data, "/b/n1", s, &rules);
                        w.add(WatchKind::Data, &format!("/b/other{s}"), s, &rules);
                    }
                    w
                },
                |mut w| black_box(w.fire(&Trigger::DataChanged("/b/n1".into()), &rules)),
                BatchSize::SmallInput,
            )
        });
    }
    g.finish();
}

fn quick() -> Criterion {
    Criterion::default()
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(1))
        .sample_size(20)
}

criterion_group! { name = benches; config = quick(); targets = codec, apply, watches }
criterion_main!(benches);

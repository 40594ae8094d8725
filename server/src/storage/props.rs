//! Properties of the durable engine, driven directly (no sockets) on the simulated disk so
//! every sync point and crash is chosen by the test:
//!
//! - random operations, snapshots and clean restarts reach exactly the state (byte for byte,
//!   as a snapshot serializes it) of an in-memory server that never restarted;
//! - a crash, with the unsynced tail lost or torn, recovers to the last durable entry.
//!
//! Each case prints nothing unless it fails; proptest reports the failing input and seed.

use std::net::SocketAddr;
use std::sync::Arc;

use proptest::prelude::*;
use testkeeper_core::flavor::Flavor;
use testkeeper_core::snapshot;
use testkeeper_wire::records::connect::ConnectRequest;
use testkeeper_wire::records::create::CreateRequest;
use testkeeper_wire::records::data::{DeleteRequest, SetDataRequest};
use testkeeper_wire::records::keeper_ext::RemoveRecursiveRequest;
use testkeeper_wire::{Acl, CreateOp, OpCode, Request};
use tokio::sync::mpsc;

use crate::clock::Clock;
use crate::config::{Fsync, LogBackend, ServerConfig};
use crate::engine::{Engine, Handshake, Out};
use crate::log::sim::SimDisk;

/// One engine and one client connection to it.
struct Rig {
    cfg: Arc<ServerConfig>,
    clock: Clock,
    engine: Engine,
    conn: u64,
    /// The client's session, to resume after a restart (zookeeper flavor).
    session: i64,
    rx: mpsc::UnboundedReceiver<Out>,
    next_xid: i32,
}

fn peer() -> SocketAddr {
    "127.0.0.1:1".parse().expect("address")
}

impl Rig {
    fn open(cfg: Arc<ServerConfig>, clock: Clock) -> Rig {
        let (engine, _) = Engine::open(cfg.clone(), clock.clone()).expect("the data directory recovers");
        let (_, rx) = mpsc::unbounded_channel();
        let mut r = Rig { cfg, clock, engine, conn: 0, session: 0, rx, next_xid: 1 };
        r.connect(false);
        r
    }

    /// Connects the client: a new session, or (`resume`, zookeeper flavor) the old one.
    fn connect(&mut self, resume: bool) {
        let (tx, rx) = mpsc::unbounded_channel();
        self.rx = rx;
        self.conn = self.engine.add_conn(peer(), tx, crate::engine::backlog::Backlog::new(0));
        let (session_id, passwd) =
            if resume { (self.session, self.engine.password(self.session)) } else { (0, vec![0; 16]) };
        let req = ConnectRequest {
            protocol_version: 0,
            last_zxid_seen: 0,
            timeout_ms: 30_000,
            session_id,
            passwd,
            read_only: None,
        };
        assert_eq!(self.engine.connect(self.conn, &req), Handshake::Accept);
        self.sync();
        if !resume {
            self.session = self.engine.conns[&self.conn].session;
        }
    }

    /// What lock releases and the syncer do, until nothing waits: commits can propose more
    /// (a session's writes that waited behind its read).
    fn sync(&mut self) {
        loop {
            self.engine.settle();
            match self.engine.syncer().filter(|_| self.engine.needs_sync()) {
                Some(s) => {
                    let durable = s.sync().expect("the simulated disk syncs");
                    self.engine.durable(durable, 0);
                }
                None => break,
            }
        }
        self.engine.conns.flush_all();
        while self.rx.try_recv().is_ok() {}
    }

    fn send(&mut self, req: Request) {
        // The clock stands still: on disk a write can be decided later than in memory (it
        // waits behind the session's read, which waits for the flush), so a moving clock
        // would give the two servers different times for the same entries.
        self.next_xid += 1;
        self.engine.handle(self.conn, self.next_xid, req);
    }

    /// The committed state as a snapshot serializes it: equal bytes, equal state.
    fn image(&self) -> Vec<u8> {
        snapshot::write(self.engine.state())
    }

    /// The state to compare with another server's: everything but the session passwords,
    /// which each server draws from the operating system.
    fn comparable(&self) -> (snapshot::Header, Vec<String>, Vec<(i64, i32)>) {
        let mut nodes = Vec::new();
        let image = self.image();
        snapshot::read(&image, self.engine.state().rules(), |n| nodes.push(format!("{n:?}"))).expect("a valid image");
        let sessions = self.engine.state().sessions().iter().map(|(id, s)| (*id, s.timeout_ms)).collect();
        (snapshot::header(&image).expect("a header"), nodes, sessions)
    }

    /// A clean shutdown and a start from the data directory, the client resuming (zookeeper
    /// flavor) or opening a new session (keeper flavor, which has no resumption).
    fn restart(&mut self) {
        self.sync();
        self.engine.finish();
        self.engine.release_storage();
        let (engine, _) = Engine::open(self.cfg.clone(), self.clock.clone()).expect("the data directory recovers");
        self.engine = engine;
        self.connect(self.cfg.flavor == Flavor::Zookeeper);
    }
}

fn create(path: &str, data: &[u8], flags: i32) -> Request {
    let req = CreateRequest { path: path.into(), data: Some(data.to_vec()), acl: Acl::open(), flags };
    Request::Create(CreateOp { op: OpCode::Create, req, ttl: 0 })
}

/// One random request over a small key space, so ops collide.
fn request(kind: u8, key: usize, data: u8) -> Request {
    const PATHS: [&str; 6] = ["/a", "/a/b", "/c", "/a/b/d", "/s", "/s/x"];
    let p = PATHS[key % PATHS.len()];
    let delete = |p: &str| Request::Delete(DeleteRequest { path: p.into(), version: -1 });
    let set =
        |p: &str, d: &[u8]| Request::SetData(SetDataRequest { path: p.into(), data: Some(d.to_vec()), version: -1 });
    match kind % 7 {
        0 => create(p, &[data], i32::from(data % 4)),
        1 => delete(p),
        2 => set(p, &[data, data]),
        3 => Request::Multi(vec![create(p, b"m", 0), set(p, b"n")]),
        4 => Request::Multi(vec![delete(p), create(p, b"again", 2)]),
        5 => Request::RemoveRecursive(RemoveRecursiveRequest { path: p.into(), limit: 3 }),
        _ => create(p, b"eph", 1),
    }
}

/// What a step of a run does besides its request.
#[derive(Debug, Clone, Copy)]
enum Event {
    None,
    Sync,
    Snapshot,
    Restart,
}

fn event(e: u8) -> Event {
    match e % 10 {
        0..=4 => Event::None,
        5..=7 => Event::Sync,
        8 => Event::Snapshot,
        _ => Event::Restart,
    }
}

fn config(flavor: Flavor, dir: &std::path::Path, disk: &SimDisk, fsync: Fsync) -> ServerConfig {
    let mut cfg = ServerConfig::new(flavor);
    cfg.data_dir = Some(dir.to_path_buf());
    cfg.log_backend = LogBackend::Sim(disk.clone());
    cfg.fsync = fsync;
    // Small, so runs cross several snapshots and compactions.
    cfg.snapshot_distance = 7;
    cfg.reserved_log_items = 3;
    cfg.snapshots_to_keep = 2;
    cfg
}

fn restarts_equal_never_restarting(flavor: Flavor, fsync: Fsync, steps: &[(u8, usize, u8, u8)]) {
    let dir = tempfile::tempdir().expect("temp dir");
    let disk = SimDisk::new();
    let clock_a = Clock::manual(1_700_000_000_000);
    let clock_b = Clock::manual(1_700_000_000_000);
    let mut a = Rig::open(Arc::new(config(flavor, dir.path(), &disk, fsync)), clock_a);
    let mut b = Rig::open(Arc::new(ServerConfig::new(flavor)), clock_b);
    for &(kind, key, data, ev) in steps {
        let req = request(kind, key, data);
        a.send(req.clone());
        b.send(req);
        match event(ev) {
            Event::None => {}
            Event::Sync => a.sync(),
            Event::Snapshot => {
                a.sync();
                a.engine.request_snapshot();
                a.engine.poll_snapshot(true);
            }
            Event::Restart => {
                a.restart();
                // The same client reconnects to the server that never went down.
                b.sync();
                b.engine.disconnect(b.conn);
                b.connect(flavor == Flavor::Zookeeper);
            }
        }
        b.sync();
    }
    a.sync();
    assert_eq!(a.engine.state().tree().digest(), a.engine.state().tree().recompute_digest());
    if a.comparable() != b.comparable() {
        let dump = |r: &Rig| {
            let mut out = Vec::new();
            let _ = snapshot::read(&r.image(), r.engine.state().rules(), |n| out.push(format!("{n:?}")));
            (snapshot::header(&r.image()), out, r.engine.state().sessions().clone())
        };
        panic!(
            "the restarted server's state differs from the one that never restarted:\n{:#?}\n{:#?}",
            dump(&a),
            dump(&b)
        );
    }
    a.restart();
    b.engine.disconnect(b.conn);
    b.connect(flavor == Flavor::Zookeeper);
    assert!(a.comparable() == b.comparable(), "a last restart changed the state");
}

fn crash_recovers_the_durable_prefix(flavor: Flavor, steps: &[(u8, usize, u8, u8)], tear: bool) {
    let dir = tempfile::tempdir().expect("temp dir");
    let disk = SimDisk::new();
    let cfg = Arc::new(config(flavor, dir.path(), &disk, Fsync::Always));
    let clock = Clock::manual(1_700_000_000_000);
    let mut a = Rig::open(cfg.clone(), clock.clone());
    // With --fsync always the committed state is the durable one: entries commit only once
    // a sync covers them.
    let mut durable = a.image();
    for (n, &(kind, key, data, ev)) in steps.iter().enumerate() {
        a.send(request(kind, key, data));
        // Appended, not synced: a crash now loses it (or tears it).
        a.engine.settle();
        match event(ev) {
            Event::Sync => a.sync(),
            Event::Snapshot => {
                a.sync();
                a.engine.request_snapshot();
                a.engine.poll_snapshot(true);
            }
            Event::None | Event::Restart => {}
        }
        durable = if matches!(event(ev), Event::Sync | Event::Snapshot) { a.image() } else { durable };
        if matches!(event(ev), Event::Restart) || n + 1 == steps.len() {
            a.engine.release_storage();
            disk.crash(tear);
            let (engine, _) = Engine::open(cfg.clone(), clock.clone()).expect("a crashed data directory recovers");
            assert!(
                snapshot::write(engine.state()) == durable,
                "after a crash (torn: {tear}) the state is not the last durable one"
            );
            a.engine = engine;
            a.connect(false);
            durable = a.image();
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 40, ..ProptestConfig::default() })]

    #[test]
    fn restarts_and_snapshots_reach_the_never_restarted_state(
        steps in proptest::collection::vec((0u8..7, 0usize..6, any::<u8>(), any::<u8>()), 1..60),
        zk in any::<bool>(),
        never in any::<bool>(),
    ) {
        let flavor = if zk { Flavor::Zookeeper } else { Flavor::Keeper };
        restarts_equal_never_restarting(flavor, if never { Fsync::Never } else { Fsync::Always }, &steps);
    }

    #[test]
    fn a_crash_recovers_to_the_last_durable_entry(
        steps in proptest::collection::vec((0u8..7, 0usize..6, any::<u8>(), any::<u8>()), 1..60),
        zk in any::<bool>(),
        tear in any::<bool>(),
    ) {
        let flavor = if zk { Flavor::Zookeeper } else { Flavor::Keeper };
        crash_recovers_the_durable_prefix(flavor, &steps, tear);
    }
}

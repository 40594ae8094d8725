//! Black-box over a real socket, issue 16: big watch workloads leave other clients served. A
//! 40k-path setWatches (what every client sends on reconnect) and a session holding 20k
//! watched ephemerals going away must not stall another client's `ruok` and requests, and
//! every watch still does what it should. The bounds are generous liveness limits (a stalled
//! server used to take tens of seconds to minutes here), never a claim about speed.

mod blackbox_support;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use blackbox_support::{four_letter, server};
use testkeeper_server::clock::Clock;
use testkeeper_server::core::flavor::Flavor;
use testkeeper_wire::client::{Client, ConnectOptions, Event};
use testkeeper_wire::records::create::{create_mode, CreateRequest};
use testkeeper_wire::records::header::event_type;
use testkeeper_wire::records::watches::SetWatches;
use testkeeper_wire::{Acl, CreateOp, OpCode, Request};
use tokio::sync::mpsc::UnboundedReceiver;
use tokio::task::JoinHandle;

/// Longest any one probe may wait for its answer.
const PROBE_BOUND: Duration = Duration::from_secs(20);
/// Longest a whole workload step may take.
const STEP_BOUND: Duration = Duration::from_secs(120);

/// Another client asking `ruok` and `exists("/")` in a loop until stopped; each must be
/// answered within [`PROBE_BOUND`]. Returns how many rounds it completed.
struct Probe {
    stop: Arc<AtomicBool>,
    rounds: Arc<AtomicUsize>,
    task: JoinHandle<usize>,
}

impl Probe {
    async fn start(addr: std::net::SocketAddr) -> Probe {
        let stop = Arc::new(AtomicBool::new(false));
        let rounds = Arc::new(AtomicUsize::new(0));
        let c = Client::connect(addr, ConnectOptions::default()).await.unwrap();
        let (st, rd) = (stop.clone(), rounds.clone());
        let task = tokio::spawn(async move {
            while !st.load(Ordering::Relaxed) {
                let ok = tokio::time::timeout(PROBE_BOUND, four_letter(addr, "ruok")).await;
                assert_eq!(ok.as_deref().ok(), Some("imok"), "ruok not answered within {PROBE_BOUND:?}");
                let ex = tokio::time::timeout(PROBE_BOUND, c.exists("/", false)).await;
                assert!(matches!(ex, Ok(Ok(Some(_)))), "exists(/) not answered within {PROBE_BOUND:?}: {ex:?}");
                rd.fetch_add(1, Ordering::Relaxed);
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            rd.load(Ordering::Relaxed)
        });
        Probe { stop, rounds, task }
    }

    /// Waits until the probe has completed `n` more rounds, proving the server answers now.
    async fn advance(&self, n: usize) {
        let target = self.rounds.load(Ordering::Relaxed) + n;
        tokio::time::timeout(STEP_BOUND, async {
            while self.rounds.load(Ordering::Relaxed) < target {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        })
        .await
        .expect("probe stopped making progress");
    }

    async fn finish(self) -> usize {
        self.stop.store(true, Ordering::Relaxed);
        self.task.await.expect("probe failed")
    }
}

fn create(path: String, flags: i32) -> Request {
    Request::Create(CreateOp {
        op: OpCode::Create,
        req: CreateRequest { path, data: Some(Vec::new()), acl: Acl::open(), flags },
        ttl: 0,
    })
}

/// Creates `paths` in multis of 500 (one round trip per batch).
async fn create_all(c: &Client, paths: &[String], flags: i32) {
    for chunk in paths.chunks(500) {
        let results = c.multi(chunk.iter().map(|p| create(p.clone(), flags)).collect()).await.unwrap();
        assert_eq!(results.len(), chunk.len());
    }
}

/// Receives `n` events, within [`STEP_BOUND`] altogether.
async fn take_events(rx: &mut UnboundedReceiver<Event>, n: usize) -> Vec<Event> {
    tokio::time::timeout(STEP_BOUND, async {
        let mut out = Vec::with_capacity(n);
        while out.len() < n {
            out.push(rx.recv().await.expect("event channel ended"));
        }
        out
    })
    .await
    .unwrap_or_else(|_| panic!("fewer than {n} events within {STEP_BOUND:?}"))
}

/// Every registered watch, as `mntr` counts them (both tables, in both flavors).
async fn total_watches(addr: std::net::SocketAddr) -> usize {
    let mntr = four_letter(addr, "mntr").await;
    mntr.lines().find_map(|l| l.strip_prefix("zk_watch_count\t")).and_then(|n| n.trim().parse().ok()).expect(&mntr)
}

async fn set_watches_of_40k_paths(flavor: Flavor) {
    let tk = server(flavor, Clock::System).await;
    let addr = tk.addr();
    let mut a = Client::connect(addr, ConnectOptions::default()).await.unwrap();
    let mut events = a.events().unwrap();
    a.create("/w", b"", &Acl::open(), 0).await.unwrap();
    let existing: Vec<String> = (0..100).map(|i| format!("/w/e{i:03}")).collect();
    create_all(&a, &existing, 0).await;
    let probe = Probe::start(addr).await;

    // 40k exist watches on absent nodes, 100 data watches, one child watch: none has missed
    // anything (relative zxid beyond every change), so all are registered and none fires.
    let absent: Vec<String> = (0..40_000).map(|i| format!("/w/n{i:05}")).collect();
    let sw = SetWatches {
        relative_zxid: i64::MAX,
        data_watches: existing.clone(),
        exist_watches: absent.clone(),
        child_watches: vec!["/w".into()],
    };
    tokio::time::timeout(STEP_BOUND, a.set_watches(sw)).await.expect("setWatches answered").unwrap();
    probe.advance(3).await;
    assert_eq!(total_watches(addr).await, 40_101);

    // Each kind fires as it should.
    a.create("/w/n12345", b"", &Acl::open(), 0).await.unwrap();
    a.set_data("/w/e042", b"x", -1).await.unwrap();
    let got: Vec<(i32, String)> =
        take_events(&mut events, 3).await.into_iter().map(|e| (e.event.event_type, e.event.path)).collect();
    assert!(got.contains(&(event_type::NODE_CREATED, "/w/n12345".into())), "{got:?}");
    assert!(got.contains(&(event_type::NODE_CHILDREN_CHANGED, "/w".into())), "{got:?}");
    assert!(got.contains(&(event_type::NODE_DATA_CHANGED, "/w/e042".into())), "{got:?}");
    assert_eq!(total_watches(addr).await, 40_098);

    // A second client whose 40k data watches all missed a change (39,999 deletes and one
    // create-then-change, relative to zxid 0): every one fires at once, none registers.
    let mut b = Client::connect(addr, ConnectOptions::default()).await.unwrap();
    let mut b_events = b.events().unwrap();
    let sw = SetWatches { relative_zxid: 0, data_watches: absent, ..SetWatches::default() };
    tokio::time::timeout(STEP_BOUND, b.set_watches(sw)).await.expect("setWatches answered").unwrap();
    let fired = take_events(&mut b_events, 40_000).await;
    let deleted = fired.iter().filter(|e| e.event.event_type == event_type::NODE_DELETED).count();
    let changed: Vec<&str> = fired
        .iter()
        .filter(|e| e.event.event_type == event_type::NODE_DATA_CHANGED)
        .map(|e| e.event.path.as_str())
        .collect();
    assert_eq!((deleted, changed), (39_999, vec!["/w/n12345"]));
    probe.advance(3).await;
    assert_eq!(total_watches(addr).await, 40_098, "catch-up events register nothing");

    // The session's end takes its 40k watches with it.
    a.close().await.ok();
    probe.advance(3).await;
    assert_eq!(total_watches(addr).await, 0);
    assert!(probe.finish().await > 0);
    tk.shutdown().await;
}

async fn session_with_20k_watched_ephemerals_goes_away(flavor: Flavor) {
    const N: usize = 20_000;
    let tk = server(flavor, Clock::System).await;
    let addr = tk.addr();
    let owner = Client::connect(addr, ConnectOptions::default()).await.unwrap();
    let mut watcher = Client::connect(addr, ConnectOptions::default()).await.unwrap();
    let mut events = watcher.events().unwrap();
    owner.create("/e", b"", &Acl::open(), 0).await.unwrap();
    let paths: Vec<String> = (0..N).map(|i| format!("/e/x{i:05}")).collect();
    create_all(&owner, &paths, create_mode::EPHEMERAL).await;
    // Both sessions watch every ephemeral, and the watcher the parent's children.
    for c in [&owner, &watcher] {
        let sw = SetWatches {
            relative_zxid: i64::MAX,
            data_watches: paths.clone(),
            child_watches: vec!["/e".into()],
            ..SetWatches::default()
        };
        c.set_watches(sw).await.unwrap();
    }
    assert_eq!(total_watches(addr).await, 2 * (N + 1));
    let probe = Probe::start(addr).await;

    owner.close().await.ok();
    let got = take_events(&mut events, N + 1).await;
    probe.advance(3).await;
    let deleted = got.iter().filter(|e| e.event.event_type == event_type::NODE_DELETED).count();
    let child = got.iter().filter(|e| e.event.event_type == event_type::NODE_CHILDREN_CHANGED).count();
    assert_eq!((deleted, child), (N, 1), "each ephemeral's delete once, the parent's one-shot child watch once");
    assert_eq!(watcher.get_children("/e", false).await.unwrap(), Vec::<String>::new());
    assert_eq!(total_watches(addr).await, 0);
    assert!(probe.finish().await > 0);
    tk.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn set_watches_of_40k_paths_does_not_stall_others_zookeeper() {
    set_watches_of_40k_paths(Flavor::Zookeeper).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn set_watches_of_40k_paths_does_not_stall_others_keeper() {
    set_watches_of_40k_paths(Flavor::Keeper).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watched_ephemerals_going_away_do_not_stall_others_zookeeper() {
    session_with_20k_watched_ephemerals_goes_away(Flavor::Zookeeper).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watched_ephemerals_going_away_do_not_stall_others_keeper() {
    session_with_20k_watched_ephemerals_goes_away(Flavor::Keeper).await;
}

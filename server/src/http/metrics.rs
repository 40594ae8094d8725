//! `GET /metrics`: the engine's counters and gauges in the Prometheus text exposition format
//! (0.0.4), encoded by `prometheus-client`.
//!
//! The values live in the engine, behind its mutex, so each scrape copies them into a fresh
//! registry instead of keeping a second set of counters in step with the engine's.

use std::fmt;
use std::sync::Arc;

use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use prometheus_client::encoding::prometheus_text;
use prometheus_client::encoding::{EncodeMetric, MetricEncoder, NoLabelSet};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::metrics::info::Info;
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::{Registry, Unit};

use crate::engine::stats::{LatencyHistogram, NetCounters, LATENCY_BOUNDS_US};
use crate::engine::Engine;
use crate::engine::Shared;
use crate::faults::Kind;

type Labels = Vec<(String, String)>;

/// `GET /metrics`.
pub async fn metrics(State(shared): State<Arc<Shared>>) -> Response {
    let mut registry = registry(&shared.engine());
    register_net(&mut registry, &shared.net);
    let mut text = String::new();
    match prometheus_text::encode(&mut text, &registry) {
        Ok(()) => ([(header::CONTENT_TYPE, prometheus_text::CONTENT_TYPE)], text).into_response(),
        Err(e) => (StatusCode::INTERNAL_SERVER_ERROR, format!("encoding metrics failed: {e}\n")).into_response(),
    }
}

/// A registry holding a snapshot of the engine's numbers.
pub fn registry(e: &Engine) -> Registry {
    let mut r = Registry::with_prefix("testkeeper");
    let requests = Family::<Labels, Counter>::default();
    for (op, n) in &e.stats.requests_by_op {
        requests.get_or_create(&vec![("op".into(), (*op).into())]).inc_by(*n);
    }
    r.register("requests", "Requests answered, by op (pings excluded)", requests);
    r.register_with_unit(
        "request_latency",
        "Time the engine spent on a request, reply queued",
        Unit::Seconds,
        Latency(e.stats.latency.clone()),
    );
    let gauge = |v: usize| ConstGauge::new(i64::try_from(v).unwrap_or(i64::MAX));
    r.register("sessions", "Live sessions", gauge(e.sessions.len()));
    r.register("connections", "Open client connections", gauge(e.conns.len()));
    let queued: usize = e.conns.values().map(|c| c.backlog.queued()).sum();
    r.register_with_unit(
        "reply_queue",
        "Reply bytes queued for clients and not yet written, all connections",
        Unit::Bytes,
        gauge(queued),
    );
    r.register("znodes", "Znodes, system nodes included", gauge(e.state.tree().len()));
    r.register("watches", "Registered watches", gauge(e.watches.count()));
    r.register("ephemerals", "Ephemeral znodes", gauge(e.state.tree().ephemeral_count()));
    r.register("zxid", "Last committed zxid", ConstGauge::new(e.state.zxid()));
    let l = &e.log_info;
    let g64 = |v: u64| ConstGauge::new(i64::try_from(v).unwrap_or(i64::MAX));
    r.register("log_last_index", "Index of the last log entry", g64(l.last_index));
    r.register("log_durable_index", "Index of the last log entry known durable", g64(l.durable_index));
    r.register("log_committed_index", "Index of the last committed (applied) entry", g64(e.state.last_index()));
    r.register("snapshot_last_index", "Log index of the newest snapshot (0: none)", g64(l.last_snapshot_index));
    r.register("snapshot_failures", "Snapshot writes that failed since start", g64(l.snapshot_failures));
    r.register_with_unit(
        "snapshot_last_size",
        "Size of the newest snapshot file",
        Unit::Bytes,
        g64(l.last_snapshot_bytes),
    );
    let seconds = |us: u64| ConstGauge::new(us as f64 / 1e6);
    let snapshot_times = [
        (
            "snapshot_last_copy",
            "How long the last snapshot held the engine's lock, copying the state",
            l.last_snapshot_copy_us,
        ),
        (
            "snapshot_last_write",
            "How long the last snapshot took off the lock: serialize, compress, write, fsync",
            l.last_snapshot_write_us,
        ),
        (
            "log_last_compact",
            "How long compacting the log below the last snapshot held the engine's lock",
            l.last_compact_us,
        ),
    ];
    for (name, help, us) in snapshot_times {
        r.register_with_unit(name, help, Unit::Seconds, seconds(us));
    }
    let fsyncs = Counter::<u64>::default();
    fsyncs.inc_by(l.syncs);
    r.register("log_fsyncs", "Flushes of the log", fsyncs);
    let fsync_seconds = Counter::<f64>::default();
    fsync_seconds.inc_by(l.sync_us_total as f64 / 1e6);
    r.register_with_unit("log_fsync_time", "Time spent flushing the log", Unit::Seconds, fsync_seconds);
    r.register_with_unit(
        "log_fsync_max_time",
        "Longest flush of the log",
        Unit::Seconds,
        ConstGauge::new(l.sync_us_max as f64 / 1e6),
    );
    // A sample is a float64, exact only up to 2^53: the u64 digest is split into two 32-bit
    // halves, each exact, so replicas compare equal exactly when both halves do (and a label
    // holding the value would start a new series on every write).
    let d = e.state.tree().digest();
    r.register("tree_digest_high", "High 32 bits of the tree digest (Keeper V5 formula)", g64(d >> 32));
    r.register("tree_digest_low", "Low 32 bits of the tree digest (Keeper V5 formula)", g64(d & 0xffff_ffff));
    r.register(
        "tree_digest_enabled",
        "Whether the tree digest is kept (1) or off (0)",
        gauge(usize::from(e.cfg.digest_enabled)),
    );
    let build = Info::new(vec![
        ("version".to_string(), env!("CARGO_PKG_VERSION").to_string()),
        ("flavor".to_string(), e.cfg.flavor.to_string()),
        ("digest_version".to_string(), testkeeper_core::digest::DIGEST_VERSION.to_string()),
    ]);
    r.register("build", "The build and the server it imitates", build);
    let fired = Family::<Labels, Counter>::default();
    for kind in Kind::ALL {
        let n = e.faults.fired_by_kind().get(kind.name()).copied().unwrap_or(0);
        fired.get_or_create(&vec![("kind".into(), kind.name().into())]).inc_by(n);
    }
    r.register("faults_fired", "Injected faults that fired, by kind (taps excluded)", fired);
    let taps = Counter::<u64>::default();
    taps.inc_by(e.faults.taps());
    r.register("fault_taps", "Firings of rules that change nothing (delay:ms=0), which only log", taps);
    r.register("fault_rules", "Fault rules installed", gauge(e.faults.rules().len()));
    super::cluster::register_metrics(e, &mut r);
    r
}

/// The network shell's counters (kept outside the engine lock).
fn register_net(r: &mut Registry, net: &NetCounters) {
    let counter = |v: &std::sync::atomic::AtomicU64| {
        let c = Counter::<u64>::default();
        c.inc_by(v.load(std::sync::atomic::Ordering::Relaxed));
        c
    };
    r.register(
        "connections_refused",
        "Connections closed on accept: past --max-connections or --max-connections-per-ip",
        counter(&net.refused),
    );
    r.register("accept_errors", "Failed accepts (out of file descriptors and the like)", counter(&net.accept_errors));
    r.register(
        "handshake_timeouts",
        "Connections closed without a complete handshake within --handshake-timeout-ms",
        counter(&net.handshake_timeouts),
    );
    r.register(
        "sessionless_idle_timeouts",
        "Connections without a session closed after --sessionless-idle-ms of silence",
        counter(&net.idle_timeouts),
    );
    r.register(
        "reads_paused",
        "Times a connection stopped being read because its reply queue was full (--reply-queue-bytes)",
        counter(&net.reads_paused),
    );
}

/// The engine's latency histogram as a Prometheus histogram in seconds.
#[derive(Debug)]
struct Latency(LatencyHistogram);

impl EncodeMetric for Latency {
    fn encode(&self, mut encoder: MetricEncoder) -> Result<(), fmt::Error> {
        let h = &self.0;
        let bounds = LATENCY_BOUNDS_US.iter().map(|us| *us as f64 / 1e6).chain([f64::INFINITY]);
        let buckets: Vec<(f64, u64)> = bounds.zip(h.buckets.iter().copied()).collect();
        encoder.encode_histogram::<NoLabelSet>(h.sum_us as f64 / 1e6, h.count, &buckets, None)
    }

    fn metric_type(&self) -> MetricType {
        MetricType::Histogram
    }
}

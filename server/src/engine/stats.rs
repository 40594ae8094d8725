//! Counters behind `mntr`, `srvr`, `stat`, `cons` and `/metrics`.

use std::collections::BTreeMap;

/// Server-wide request statistics.
#[derive(Debug, Clone, Default)]
pub struct Stats {
    pub packets_received: u64,
    pub packets_sent: u64,
    pub min_latency_us: u64,
    pub max_latency_us: u64,
    pub total_latency_us: u64,
    pub latency_count: u64,
    /// Requests by op name.
    pub requests_by_op: BTreeMap<&'static str, u64>,
    /// Latency distribution for `/metrics`; like `requests_by_op`, `srst` leaves it alone so
    /// Prometheus counters never go backwards.
    pub latency: LatencyHistogram,
}

/// Upper bounds of the latency buckets, in µs (the last bucket, +Inf, is implicit).
pub const LATENCY_BOUNDS_US: [u64; 12] =
    [50, 100, 250, 500, 1_000, 2_500, 5_000, 10_000, 25_000, 50_000, 100_000, 1_000_000];

/// Request latencies by bucket (not cumulative), with their sum.
#[derive(Debug, Clone, Default)]
pub struct LatencyHistogram {
    /// `buckets[i]` counts latencies at or below `LATENCY_BOUNDS_US[i]` and above the bound
    /// before it; the last entry counts those above every bound.
    pub buckets: [u64; LATENCY_BOUNDS_US.len() + 1],
    pub sum_us: u64,
    pub count: u64,
}

impl LatencyHistogram {
    fn observe(&mut self, us: u64) {
        let i = LATENCY_BOUNDS_US.iter().position(|b| us <= *b).unwrap_or(LATENCY_BOUNDS_US.len());
        self.buckets[i] += 1;
        self.sum_us += us;
        self.count += 1;
    }
}

impl Stats {
    /// Records one answered request.
    pub fn record(&mut self, op: &'static str, latency_us: u64) {
        *self.requests_by_op.entry(op).or_default() += 1;
        self.latency.observe(latency_us);
        if self.latency_count == 0 || latency_us < self.min_latency_us {
            self.min_latency_us = latency_us;
        }
        self.max_latency_us = self.max_latency_us.max(latency_us);
        self.total_latency_us += latency_us;
        self.latency_count += 1;
    }

    /// (min, avg, max) latency in ms, as the 4lw commands print them.
    pub fn latency_ms(&self) -> (u64, u64, u64) {
        let avg = self.total_latency_us.checked_div(self.latency_count).unwrap_or(0);
        (self.min_latency_us / 1000, avg / 1000, self.max_latency_us / 1000)
    }

    /// `srst`: resets the latency and packet counters.
    pub fn reset(&mut self) {
        *self = Stats {
            requests_by_op: std::mem::take(&mut self.requests_by_op),
            latency: std::mem::take(&mut self.latency),
            ..Stats::default()
        };
    }
}

/// What the network shell counts outside the engine lock: connections refused, accept
/// failures, connections closed for saying nothing, and reads paused by backpressure. Atomics,
/// so the accept loop and the readers never take the engine lock for them.
#[derive(Debug, Default)]
pub struct NetCounters {
    /// Connections closed at once for passing `--max-connections` or `--max-connections-per-ip`.
    pub refused: std::sync::atomic::AtomicU64,
    /// accept() calls that failed (out of descriptors and the like).
    pub accept_errors: std::sync::atomic::AtomicU64,
    /// Connections closed for not finishing their handshake in `--handshake-timeout-ms`.
    pub handshake_timeouts: std::sync::atomic::AtomicU64,
    /// Session-less connections closed for sending nothing in `--sessionless-idle-ms`.
    pub idle_timeouts: std::sync::atomic::AtomicU64,
    /// Times a reader stopped reading because its connection's reply queue was full.
    pub reads_paused: std::sync::atomic::AtomicU64,
}

impl NetCounters {
    /// Adds one to `counter`.
    pub fn bump(counter: &std::sync::atomic::AtomicU64) {
        counter.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }
}

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
}

impl Stats {
    /// Records one answered request.
    pub fn record(&mut self, op: &'static str, latency_us: u64) {
        *self.requests_by_op.entry(op).or_default() += 1;
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
        *self = Stats { requests_by_op: std::mem::take(&mut self.requests_by_op), ..Stats::default() };
    }
}

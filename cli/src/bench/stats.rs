//! What one workload run measured: a latency histogram per op kind, error counts by code, and
//! the wall time, turned into the JSON the report reads.
//!
//! Each in-flight slot keeps its own [`Samples`], a plain log of (kind, latency, code), so the
//! hot path takes no lock and allocates no histogram; the logs are recorded into one
//! [`Recorder`] once the run ends. (A histogram per slot was ~1 MB: 512 of them at 32 x 16
//! cost the client more CPU and page faults than the requests.)

use std::collections::BTreeMap;
use std::time::Duration;

use hdrhistogram::Histogram;
use serde_json::{json, Value};

use super::mix::OpKind;

/// Latencies are recorded in microseconds, from 1 µs to 60 s, at 3 significant figures.
const MAX_US: u64 = 60_000_000;

fn histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, MAX_US, 3).expect("static histogram bounds are valid")
}

/// Measurements of one slot, or of a whole run once merged.
#[derive(Debug, Clone)]
pub struct Recorder {
    per_op: Vec<Histogram<u64>>,
    all: Histogram<u64>,
    /// Error code (as on the wire) or `connection_loss`, with its count.
    pub errors: BTreeMap<String, u64>,
}

impl Default for Recorder {
    fn default() -> Self {
        Recorder {
            per_op: OpKind::ALL.iter().map(|_| histogram()).collect(),
            all: histogram(),
            errors: BTreeMap::new(),
        }
    }
}

/// One slot's raw measurements, recorded into a [`Recorder`] after the run.
#[derive(Debug, Default)]
pub struct Samples {
    /// (kind, latency, error code) of each reply.
    replies: Vec<(OpKind, Duration, i32)>,
    lost: u64,
}

impl Samples {
    /// An empty log with room for `n` replies.
    pub fn with_capacity(n: usize) -> Samples {
        Samples { replies: Vec::with_capacity(n), lost: 0 }
    }

    /// Logs one reply; see [`Recorder::record`].
    pub fn record(&mut self, kind: OpKind, latency: Duration, err: i32) {
        self.replies.push((kind, latency, err));
    }

    /// Logs a request that never got a reply.
    pub fn lost(&mut self) {
        self.lost += 1;
    }
}

impl Recorder {
    /// Records every sample of one slot's log.
    pub fn record_all(&mut self, samples: &Samples) {
        for &(kind, latency, err) in &samples.replies {
            self.record(kind, latency, err);
        }
        for _ in 0..samples.lost {
            self.lost();
        }
    }

    /// Records one reply's latency; `err` is the reply's error code (0 for success).
    pub fn record(&mut self, kind: OpKind, latency: Duration, err: i32) {
        let us = (latency.as_micros() as u64).clamp(1, MAX_US);
        self.per_op[kind.index()].saturating_record(us);
        self.all.saturating_record(us);
        if err != 0 {
            *self.errors.entry(error_name(err)).or_default() += 1;
        }
    }

    /// Records a request that never got a reply.
    pub fn lost(&mut self) {
        *self.errors.entry(LOST.into()).or_default() += 1;
    }

    /// Errors that are no answer the mix expects (anything but NONODE and NODEEXISTS).
    pub fn unexpected_errors(&self) -> u64 {
        self.errors.iter().filter(|(name, _)| !EXPECTED.contains(&name.as_str())).map(|(_, n)| n).sum()
    }

    /// The errors in words: `NONODE 28, NODEEXISTS 47 (answers the mix expects)`, and what else
    /// came, marked unexpected.
    pub fn describe_errors(&self) -> String {
        let part = |expected: bool| {
            (self.errors.iter())
                .filter(|(name, _)| EXPECTED.contains(&name.as_str()) == expected)
                .map(|(name, n)| format!("{name} {n}"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let (ok, bad) = (part(true), part(false));
        let ok = if ok.is_empty() { "none".to_string() } else { format!("{ok} (answers the mix expects)") };
        if bad.is_empty() {
            format!("errors {ok}")
        } else {
            format!("errors {ok}; UNEXPECTED {bad}")
        }
    }

    /// Replies recorded, errors included.
    pub fn count(&self) -> u64 {
        self.all.len()
    }

    /// 99th percentile over every op, in µs.
    pub fn p99_us(&self) -> u64 {
        self.all.value_at_quantile(0.99)
    }

    /// The run as JSON: totals, throughput, and latency quantiles per op kind.
    pub fn to_json(&self, elapsed: Duration) -> Value {
        let secs = elapsed.as_secs_f64().max(1e-9);
        let mut per_op = serde_json::Map::new();
        for kind in OpKind::ALL {
            let h = &self.per_op[kind.index()];
            if !h.is_empty() {
                per_op.insert(kind.name().into(), quantiles(h));
            }
        }
        json!({
            "ops": self.count(),
            "elapsed_s": secs,
            "ops_per_sec": self.count() as f64 / secs,
            "latency_us": quantiles(&self.all),
            "per_op": per_op,
            "errors": self.errors,
            "unexpected_errors": self.unexpected_errors(),
        })
    }
}

/// Error answers the mix provokes by design: a get, set or delete of a key another session
/// just deleted (NONODE), a create of a key that exists (NODEEXISTS).
pub const EXPECTED: [&str; 2] = ["NONODE", "NODEEXISTS"];

/// A request that never got a reply (its connection was lost).
const LOST: &str = "no reply (connection lost)";

/// An error code by its ZooKeeper name (`-101` is `NONODE`), or the number when unknown.
fn error_name(code: i32) -> String {
    testkeeper_wire::ZkError::from_code(code).map_or_else(|| code.to_string(), |e| e.name().to_string())
}

fn quantiles(h: &Histogram<u64>) -> Value {
    json!({
        "count": h.len(),
        "mean": h.mean(),
        "p50": h.value_at_quantile(0.50),
        "p99": h.value_at_quantile(0.99),
        "p999": h.value_at_quantile(0.999),
        "max": h.max(),
    })
}

/// The `q` quantile of `xs` (nearest rank; 0 for none).
pub fn quantile(xs: &[f64], q: f64) -> f64 {
    let mut v = xs.to_vec();
    v.sort_by(f64::total_cmp);
    v.get(((v.len() as f64 * q) as usize).min(v.len().saturating_sub(1))).copied().unwrap_or(0.0)
}

/// The median of `xs` (the mean of the middle two for an even count); 0 when empty.
pub fn median(xs: &[f64]) -> f64 {
    let mut v: Vec<f64> = xs.iter().copied().filter(|x| x.is_finite()).collect();
    if v.is_empty() {
        return 0.0;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merges_counts_errors_and_quantiles() {
        let mut a = Recorder::default();
        a.record(OpKind::Get, Duration::from_micros(100), 0);
        a.record(OpKind::Create, Duration::from_micros(300), -110);
        let mut b = Samples::default();
        b.record(OpKind::Get, Duration::from_micros(200), 0);
        b.lost();
        a.record_all(&b);
        assert_eq!(a.count(), 3);
        let j = a.to_json(Duration::from_secs(1));
        assert_eq!(j["ops"], 3);
        assert_eq!(j["errors"]["NODEEXISTS"], 1);
        assert_eq!(j["errors"][LOST], 1);
        assert_eq!(j["unexpected_errors"], 1);
        assert_eq!(a.describe_errors(), format!("errors NODEEXISTS 1 (answers the mix expects); UNEXPECTED {LOST} 1"));
        let mut c = Recorder::default();
        c.record(OpKind::Get, Duration::from_micros(1), -101);
        c.record(OpKind::Get, Duration::from_micros(1), -7);
        assert_eq!(c.describe_errors(), "errors NONODE 1 (answers the mix expects); UNEXPECTED OPERATIONTIMEOUT 1");
        assert_eq!(Recorder::default().describe_errors(), "errors none");
        assert_eq!(j["per_op"]["get"]["count"], 2);
        assert!(j["per_op"].get("set").is_none());
    }

    #[test]
    fn samples_record_like_direct_recording() {
        let mut s = Samples::default();
        s.record(OpKind::Get, Duration::from_micros(100), 0);
        s.record(OpKind::Set, Duration::from_micros(250), -101);
        s.lost();
        let mut via = Recorder::default();
        via.record_all(&s);
        let mut direct = Recorder::default();
        direct.record(OpKind::Get, Duration::from_micros(100), 0);
        direct.record(OpKind::Set, Duration::from_micros(250), -101);
        direct.lost();
        assert_eq!(via.to_json(Duration::from_secs(1)), direct.to_json(Duration::from_secs(1)));
    }

    #[test]
    fn median_of_odd_and_even() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), 2.5);
        assert_eq!(median(&[]), 0.0);
        assert_eq!(quantile(&[5.0, 1.0, 3.0, 2.0, 4.0], 0.99), 5.0);
        assert_eq!(quantile(&[5.0, 1.0, 3.0, 2.0, 4.0], 0.0), 1.0);
        assert_eq!(quantile(&[], 0.5), 0.0);
    }
}

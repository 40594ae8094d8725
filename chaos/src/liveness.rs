//! Liveness after the heal: once every fault is undone, a write must commit within a bound.
//! Safety checkers pass on a cluster that never answers again; this one does not. A probe
//! session tries a create on each server in turn until one is acknowledged (or answers that
//! the node exists: an earlier try committed and only its reply was lost).

use std::time::Duration;

use testkeeper_wire::ZkError;
// tokio's clock, not std's: under `testkeeper sim` it is the simulation's paused clock.
use tokio::time::Instant;

use crate::check::{CheckResult, Verdict};
use crate::client::{CallError, Conn};
use crate::worker::Shared;
use crate::workload::{self, ROOT};

/// How long after the heal a write may take to commit: an election timeout and a few round
/// trips, with room for a node still restarting from its disk and a session to open.
pub const BOUND: Duration = Duration::from_secs(10);

/// Tries writes from `healed` on until one commits or [`BOUND`] passes.
pub async fn probe(sh: &Shared, healed: Instant) -> CheckResult {
    let until = healed + BOUND;
    let mut attempt = 0u32;
    let mut last = String::from("no attempt");
    while Instant::now() < until {
        for (node, addr) in sh.addrs.iter().enumerate() {
            attempt += 1;
            let left = until.saturating_duration_since(Instant::now()).max(Duration::from_millis(1));
            let conn = match Conn::connect(*addr, node, sh.cfg.op_timeout.min(left), sh.cfg.session_timeout_ms).await {
                Ok(c) => c,
                Err(e) => {
                    last = format!("node {node}: {e}");
                    continue;
                }
            };
            // One path per run: a retry after a lost reply finds the node created.
            let req = workload::create(&format!("{ROOT}/liveness"), b"", 0);
            let done = match conn.call(req, &mut Vec::new()).await {
                Ok(_) => Ok(()),
                Err(CallError::Server(c)) if c == ZkError::NodeExists.code() => Ok(()),
                Err(e) => Err(e),
            };
            match done {
                Ok(()) => {
                    let after = healed.elapsed().as_millis();
                    return CheckResult {
                        checker: "liveness".into(),
                        verdict: Verdict::Pass,
                        summary: format!(
                            "a write committed {after} ms after the heal (bound {} s), on node {node}, attempt {attempt}",
                            BOUND.as_secs()
                        ),
                        violations: Vec::new(),
                        violation_count: 0,
                    };
                }
                Err(e) => last = format!("node {node}: {}", e.describe()),
            }
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    CheckResult {
        checker: "liveness".into(),
        verdict: Verdict::Fail,
        summary: format!(
            "no write committed within {} s of the heal ({attempt} attempts; last: {last})",
            BOUND.as_secs()
        ),
        violations: Vec::new(),
        violation_count: 1,
    }
}

//! Evidence for one DDL entry: `finished/` and `active/` (two getChildren, as ClickHouse's
//! status source does), each expected host's status text, and the generation every replica
//! holds. The verdict is pure so it is tested without Keeper.

use std::time::{Duration, Instant};

use serde::Serialize;

use crate::ddl::ExecutionStatus;
use crate::link::{Link, LinkError};

/// One expected host, as seen.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HostEvidence {
    pub host: String,
    /// `finished`, `active`, or `missing`.
    pub state: &'static str,
    /// The status code, when a finished node was well-formed.
    pub code: Option<i32>,
    /// A finished node that did not parse.
    pub malformed: bool,
    /// Whether the replica holds exactly the expected generation.
    pub generation_exact: bool,
}

/// What the evidence allows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// One well-formed success per host and the exact generation on every replica.
    Complete,
    /// Not all hosts are done; keep waiting.
    Pending,
    /// Terminal mixed or unknown evidence (reason).
    FailClosed(String),
}

/// Judges one snapshot. `final_look` turns "missing and not active" into unknown evidence.
pub fn judge(hosts: &[HostEvidence], final_look: bool) -> Verdict {
    let all_finished = hosts.iter().all(|h| h.state == "finished");
    if all_finished {
        if let Some(h) = hosts.iter().find(|h| h.malformed) {
            return Verdict::FailClosed(format!("malformed status from {}", h.host));
        }
        if hosts.iter().all(|h| h.code == Some(0) && h.generation_exact) {
            return Verdict::Complete;
        }
        return Verdict::FailClosed("terminal mixed evidence".into());
    }
    if final_look && !hosts.iter().any(|h| h.state == "active") {
        return Verdict::FailClosed("unknown evidence: hosts neither finished nor active".into());
    }
    Verdict::Pending
}

/// One look at the entry.
///
/// # Errors
/// Keeper unreadable.
pub async fn look(
    link: &mut Link,
    entry_path: &str,
    expected: &[String],
    replicas: &str,
    generation: &str,
) -> Result<Vec<HostEvidence>, LinkError> {
    let finished = link.children(&format!("{entry_path}/finished")).await?.unwrap_or_default();
    let active = link.children(&format!("{entry_path}/active")).await?.unwrap_or_default();
    let mut out = Vec::new();
    for host in expected {
        let mut ev = HostEvidence {
            host: host.clone(),
            state: "missing",
            code: None,
            malformed: false,
            generation_exact: false,
        };
        if finished.contains(host) {
            ev.state = "finished";
            match link.get(&format!("{entry_path}/finished/{host}")).await? {
                Some((data, _)) => match ExecutionStatus::parse(&String::from_utf8_lossy(&data)) {
                    Some(st) => ev.code = Some(st.code),
                    None => ev.malformed = true,
                },
                None => ev.malformed = true,
            }
            let held = link.get(&format!("{replicas}/{host}")).await?.map(|(d, _)| d);
            ev.generation_exact = held.as_deref() == Some(generation.as_bytes());
        } else if active.contains(host) {
            ev.state = "active";
        }
        out.push(ev);
    }
    Ok(out)
}

/// Polls with ClickHouse's backoff (50 ms more per try, capped at 1 s) until the verdict is
/// not `Pending` or `timeout` passes; the last look is then final.
///
/// # Errors
/// Keeper unreadable.
pub async fn wait(
    link: &mut Link,
    entry_path: &str,
    expected: &[String],
    replicas: &str,
    generation: &str,
    timeout: Duration,
) -> Result<(Verdict, Vec<HostEvidence>), LinkError> {
    let deadline = Instant::now() + timeout;
    let mut tries: u64 = 0;
    loop {
        let final_look = Instant::now() >= deadline;
        let hosts = look(link, entry_path, expected, replicas, generation).await?;
        match judge(&hosts, final_look) {
            Verdict::Pending if !final_look => {}
            v => return Ok((v, hosts)),
        }
        tries += 1;
        let nap = Duration::from_millis((50 * tries).min(1000)).min(deadline.saturating_duration_since(Instant::now()));
        tokio::time::sleep(nap).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h(state: &'static str, code: Option<i32>, exact: bool) -> HostEvidence {
        HostEvidence { host: "h".into(), state, code, malformed: false, generation_exact: exact }
    }

    #[test]
    fn verdicts() {
        assert_eq!(judge(&[h("finished", Some(0), true), h("finished", Some(0), true)], false), Verdict::Complete);
        assert!(matches!(
            judge(&[h("finished", Some(0), true), h("finished", Some(60), false)], false),
            Verdict::FailClosed(_)
        ));
        assert!(
            matches!(judge(&[h("finished", Some(0), false)], false), Verdict::FailClosed(_)),
            "generation must be exact"
        );
        assert_eq!(judge(&[h("finished", Some(0), true), h("active", None, false)], true), Verdict::Pending);
        assert!(matches!(
            judge(&[h("finished", Some(0), true), h("missing", None, false)], true),
            Verdict::FailClosed(_)
        ));
        assert_eq!(judge(&[h("missing", None, false)], false), Verdict::Pending);
        let mut bad = h("finished", None, false);
        bad.malformed = true;
        assert!(matches!(judge(&[bad], false), Verdict::FailClosed(_)));
    }
}

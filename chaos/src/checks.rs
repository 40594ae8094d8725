//! Which checkers judge a run: every checker whose ops the history holds (the checkers'
//! [`check_history`]), the session guarantees, and on the embedded cluster the white-box
//! checks over what its nodes applied.

use crate::check::{check_history, CheckOptions, CheckResult, Verdict};
use crate::history::History;
use crate::record;

/// Every checker that applies to `h`, in the order the report lists them.
pub fn run(h: &History) -> Vec<CheckResult> {
    let wb = h.cluster.as_ref().map(|c| record::whitebox(c, &h.nemesis));
    let mut results = check_history(h, wb.as_ref(), &CheckOptions::default()).results;
    results.extend(corruption_detected(h));
    results
}

/// With `corrupt-disk` windows: every start on a corrupted disk was refused. A node that
/// starts on one may serve what it should not, or drop entries it had acknowledged; the other
/// checkers may not see it in a short run, so the start itself is the violation.
fn corruption_detected(h: &History) -> Option<CheckResult> {
    let windows: Vec<_> = h.nemesis.iter().filter(|e| e.kind == "corrupt-disk").collect();
    if windows.is_empty() {
        return None;
    }
    let missed: Vec<_> = windows.iter().filter(|e| e.detail.contains("NOT DETECTED")).collect();
    let summary = format!("{} corrupted starts, {} refused", windows.len(), windows.len() - missed.len());
    Some(CheckResult {
        checker: "corruption-detected".into(),
        verdict: if missed.is_empty() { Verdict::Pass } else { Verdict::Fail },
        summary: if missed.is_empty() {
            summary
        } else {
            format!(
                "{summary}; started anyway: {}",
                missed.iter().map(|e| e.detail.as_str()).collect::<Vec<_>>().join("; ")
            )
        },
        violations: Vec::new(),
        violation_count: missed.len(),
    })
}

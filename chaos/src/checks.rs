//! Which checkers judge a run: every checker whose ops the history holds (the checkers'
//! [`check_history`]), the session guarantees, and on the embedded cluster the white-box
//! checks over what its nodes applied.

use crate::check::{check_history, CheckOptions, CheckResult};
use crate::history::History;
use crate::record;

/// Every checker that applies to `h`, in the order the report lists them.
pub fn run(h: &History) -> Vec<CheckResult> {
    let wb = h.cluster.as_ref().map(|c| record::whitebox(c, &h.nemesis));
    check_history(h, wb.as_ref(), &CheckOptions::default()).results
}

//! Which checkers judge which workload. The checkers themselves live in `check/`; each is a
//! function of the history (`check::<name>::check(&History) -> CheckResult`), the white-box
//! ones reading `History::cluster` when the embedded cluster ran.

use crate::check::linear::{self, DEFAULT_BUDGET};
use crate::check::{queue, set, CheckResult};
use crate::config::Workload;
use crate::history::History;

/// Every checker that applies to a run of `w`, in the order the report lists them.
pub fn run(w: Workload, h: &History) -> Vec<CheckResult> {
    match w {
        Workload::Register => vec![linear::check(h, 0, DEFAULT_BUDGET)],
        Workload::Set => vec![set::check(h)],
        Workload::Queue => vec![queue::check(h)],
        Workload::Ids | Workload::Counter | Workload::Lock => {
            vec![CheckResult::unknown(w.name(), format!("the {w} checker is not built yet: this run proves nothing"))]
        }
    }
}

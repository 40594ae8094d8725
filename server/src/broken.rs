//! Deliberately broken server modes, for the self-test of `testkeeper chaos`: each one breaks
//! exactly one promise a coordination service makes, so that the chaos checkers can show they
//! catch it (`testkeeper chaos --broken MODE`). Never set outside such a test: a server in any
//! of these modes loses or invents data on purpose.
//!
//! Where each mode bites (one small switch each, so the correct path stays the obvious one):
//! - `stale-read-after-sync`: `engine/dispatch.rs` answers `sync` at once instead of after a
//!   round trip through the log (keeper flavor) or catching up with the leader (zookeeper
//!   flavor), so a lagging follower serves old data after a sync.
//! - `ack-before-durable`: `log/sim` reports a flush as done while the durable boundary
//!   stays one flush behind, so a node that crashes loses entries it had acknowledged.
//! - `forget-acked-on-leader-change`: `cluster/driver.rs` answers a client of the leader as
//!   soon as its entry is appended to the leader's own log, before a quorum has it
//!   (`engine/broken.rs`); a leader change then forgets writes the clients saw succeed.
//! - `partial-multi`: the proposer (`core/src/propose.rs`) keeps the ops of a failed multi
//!   that came before the failing one, while the client is told the multi failed.

use std::fmt;
use std::str::FromStr;

use testkeeper_core::unknown_name::UnknownName;

/// One deliberately broken behaviour.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Broken {
    StaleReadAfterSync,
    AckBeforeDurable,
    ForgetAckedOnLeaderChange,
    PartialMulti,
}

impl Broken {
    /// Every mode, in the order the docs list them.
    pub const ALL: [Broken; 4] =
        [Broken::StaleReadAfterSync, Broken::AckBeforeDurable, Broken::ForgetAckedOnLeaderChange, Broken::PartialMulti];

    /// The mode's name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Broken::StaleReadAfterSync => "stale-read-after-sync",
            Broken::AckBeforeDurable => "ack-before-durable",
            Broken::ForgetAckedOnLeaderChange => "forget-acked-on-leader-change",
            Broken::PartialMulti => "partial-multi",
        }
    }

    /// What the mode breaks, in one line.
    pub fn describe(self) -> &'static str {
        match self {
            Broken::StaleReadAfterSync => "sync returns at once, so a lagging node serves stale reads after it",
            Broken::AckBeforeDurable => "the log reports a flush done while the durable point stays one flush behind",
            Broken::ForgetAckedOnLeaderChange => {
                "the leader answers writes once in its own log, before a quorum has them; a new leader forgets them"
            }
            Broken::PartialMulti => {
                "a failed multi keeps the ops before the failing one, while the client sees it fail"
            }
        }
    }
}

impl fmt::Display for Broken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Broken {
    type Err = UnknownName;
    fn from_str(s: &str) -> Result<Broken, UnknownName> {
        Broken::ALL
            .into_iter()
            .find(|b| b.name() == s.trim())
            .ok_or_else(|| UnknownName::one_of("broken mode", s, Broken::ALL.iter().map(|b| b.name())))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_a_typo_is_named() {
        for b in Broken::ALL {
            assert_eq!(b.name().parse::<Broken>(), Ok(b));
            assert!(!b.describe().is_empty());
        }
        let e = "stale-read".parse::<Broken>().unwrap_err();
        let e = e.to_string();
        assert!(e.contains("'stale-read'") && e.contains("partial-multi"), "{e}");
    }
}

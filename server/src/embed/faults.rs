//! Fault rules on an embedded server (the grammar of `docs/faults.md`), and one-shot helpers
//! for the next request that matches.

use std::time::Duration;

use super::TestKeeper;
use crate::faults::{FaultEvent, RuleError, RuleStatus};

impl TestKeeper {
    /// Adds a fault rule (`KIND[:key=value,...]`, see `docs/faults.md`); returns its id.
    ///
    /// # Errors
    /// The parse error, naming the bad kind, key or value.
    pub fn add_fault(&self, rule: &str) -> Result<u64, RuleError> {
        self.shared.engine().faults.add(rule)
    }

    /// Removes a fault rule; false when no rule has that id.
    pub fn remove_fault(&self, id: u64) -> bool {
        self.shared.engine().faults.remove(id)
    }

    /// Removes every fault rule (the event log stays).
    pub fn clear_faults(&self) {
        self.shared.engine().faults.clear();
    }

    /// The fault rules with their match and firing counts, by id.
    pub fn fault_rules(&self) -> Vec<RuleStatus> {
        self.shared.engine().faults.rules()
    }

    /// The fired faults still in the (bounded) log, oldest first.
    pub fn fault_events(&self) -> Vec<FaultEvent> {
        self.shared.engine().faults.events()
    }

    /// The next request matching `matcher` (filters such as `op=create,path=/locks/*`, or "" for
    /// any) is applied, its reply dropped, and its connection closed. Returns the rule id.
    ///
    /// # Errors
    /// A bad matcher.
    pub fn drop_next_response(&self, matcher: &str) -> Result<u64, RuleError> {
        self.add_fault(&one_shot("drop-response", matcher))
    }

    /// The next request matching `matcher` is not applied, and its connection is closed.
    ///
    /// # Errors
    /// A bad matcher.
    pub fn drop_next_request(&self, matcher: &str) -> Result<u64, RuleError> {
        self.add_fault(&one_shot("drop-request", matcher))
    }

    /// The next request matching `matcher` is not applied and fails with error `code`
    /// (`ZkError::code()`, e.g. -4 or -112).
    ///
    /// # Errors
    /// A bad matcher, or code 0.
    pub fn fail_next(&self, matcher: &str, code: i32) -> Result<u64, RuleError> {
        self.add_fault(&one_shot(&format!("error:code={code}"), matcher))
    }

    /// The reply to the next request matching `matcher` (and every later reply on its
    /// connection) is held back for `delay`.
    ///
    /// # Errors
    /// A bad matcher.
    pub fn delay_next(&self, matcher: &str, delay: Duration) -> Result<u64, RuleError> {
        self.add_fault(&one_shot(&format!("delay:ms={}", delay.as_millis()), matcher))
    }

    /// The session of the next request matching `matcher` expires instead of the request.
    ///
    /// # Errors
    /// A bad matcher.
    pub fn expire_next(&self, matcher: &str) -> Result<u64, RuleError> {
        self.add_fault(&one_shot("expire-session", matcher))
    }
}

/// `KIND[:params]` plus the caller's filters plus `count=1`.
fn one_shot(kind: &str, matcher: &str) -> String {
    let sep = if kind.contains(':') { "," } else { ":" };
    match matcher.trim() {
        "" => format!("{kind}{sep}count=1"),
        m => format!("{kind}{sep}{m},count=1"),
    }
}

#[cfg(test)]
mod tests {
    use super::one_shot;

    #[test]
    fn one_shot_rules() {
        assert_eq!(one_shot("reset", ""), "reset:count=1");
        assert_eq!(one_shot("error:code=-4", "op=create"), "error:code=-4,op=create,count=1");
    }
}

//! The log of fired faults: what fired, on which request, and whether the server still carried
//! the request out. A test reads it to tell "my client saw a loss because of the fault" from
//! "my client saw a loss for some other reason".
//!
//! The log is bounded: a long chaos run keeps its newest events, and the sequence numbers show
//! how many fell off the front.

use std::collections::VecDeque;

use serde::Serialize;

/// Events kept; older ones are dropped first.
pub const EVENT_LOG_CAPACITY: usize = 1024;

/// One fired fault.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FaultEvent {
    /// 1, 2, 3... over the server's life, never reused.
    pub seq: u64,
    /// The rule that fired.
    pub rule: u64,
    /// The rule's kind (`drop-response`...).
    pub kind: &'static str,
    /// The request's op (`multi` for a multi, whatever sub-op matched).
    pub op: &'static str,
    /// The path that matched, or the request's own path.
    pub path: Option<String>,
    /// The request's session, as `0x...` (ZooKeeper ids do not fit a JSON double).
    #[serde(serialize_with = "hex")]
    pub session: i64,
    /// The request's xid.
    pub xid: i32,
    /// Whether the server carried the request out (drop-response and delay do).
    pub applied: bool,
    /// When it fired: the server clock, ms since the Unix epoch (wall time unless the embedder
    /// gave the server a manual clock).
    pub time_ms: i64,
    /// The server's last committed zxid when it fired, as `0x...` (a write that a
    /// drop-response or delay let through commits after it).
    #[serde(serialize_with = "hex")]
    pub zxid: i64,
    /// For a delay: how long this reply was held, jitter included.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub delay_ms: Option<u64>,
    /// A rule that changes nothing (`delay:ms=0`) and only logs what it matches: not counted
    /// as a fault in `/metrics`.
    pub tap: bool,
}

fn hex<S: serde::Serializer>(v: &i64, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&format!("{v:#x}"))
}

/// The bounded log.
#[derive(Debug, Clone, Default)]
pub struct EventLog {
    events: VecDeque<FaultEvent>,
    next_seq: u64,
}

impl EventLog {
    /// Appends an event, giving it the next sequence number; returns that number.
    pub fn push(&mut self, mut event: FaultEvent) -> u64 {
        self.next_seq += 1;
        event.seq = self.next_seq;
        if self.events.len() == EVENT_LOG_CAPACITY {
            self.events.pop_front();
        }
        self.events.push_back(event);
        self.next_seq
    }

    /// The kept events, oldest first.
    pub fn snapshot(&self) -> Vec<FaultEvent> {
        self.events.iter().cloned().collect()
    }

    /// How many events were ever logged (kept or not).
    pub fn total(&self) -> u64 {
        self.next_seq
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev() -> FaultEvent {
        FaultEvent {
            seq: 0,
            rule: 1,
            kind: "reset",
            op: "create",
            path: Some("/a".into()),
            session: -1,
            xid: 3,
            applied: false,
            time_ms: 1_700_000_000_000,
            zxid: 0x1_0000_0002,
            delay_ms: None,
            tap: false,
        }
    }

    #[test]
    fn bounded_and_numbered() {
        let mut log = EventLog::default();
        for _ in 0..EVENT_LOG_CAPACITY + 5 {
            log.push(ev());
        }
        let kept = log.snapshot();
        assert_eq!(kept.len(), EVENT_LOG_CAPACITY);
        assert_eq!(
            (kept[0].seq, kept.last().unwrap().seq, log.total()),
            (6, EVENT_LOG_CAPACITY as u64 + 5, EVENT_LOG_CAPACITY as u64 + 5)
        );
        let json = serde_json::to_string(&kept[0]).unwrap();
        assert!(json.contains(r#""session":"0xffffffffffffffff""#), "{json}");
        assert!(json.contains(r#""zxid":"0x100000002""#) && json.contains(r#""time_ms":1700000000000"#), "{json}");
        assert!(!json.contains("delay_ms"), "{json}");
    }
}

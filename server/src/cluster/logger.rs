//! raft-rs logs through slog; this drain hands its records to tracing, so Raft's elections and
//! rejections show up in the server's log with its level filters and format.

use std::fmt;

use slog::{Drain, Level, OwnedKVList, Record, KV};

/// A slog drain that writes every record as a tracing event (target `raft`).
pub struct ToTracing;

/// Collects a record's key-values as `k=v` text, each pair once: raft-rs tags its own logger
/// with `raft_id` on top of ours (which has it for the log lines raft-rs writes outside a
/// `Raft`), and a line read `raft_id=1 raft_id=1`.
struct Pairs(String);

impl slog::Serializer for Pairs {
    fn emit_arguments(&mut self, key: slog::Key, val: &fmt::Arguments<'_>) -> slog::Result {
        let pair = format!(" {key}={val}");
        if !contains_pair(&self.0, &pair) {
            self.0.push_str(&pair);
        }
        Ok(())
    }
}

/// Whether `text` (a run of ` k=v` pairs) already holds `pair` as a whole pair.
fn contains_pair(text: &str, pair: &str) -> bool {
    text.match_indices(pair)
        .any(|(at, _)| text[at + pair.len()..].is_empty() || text[at + pair.len()..].starts_with(' '))
}

impl Drain for ToTracing {
    type Ok = ();
    type Err = slog::Never;

    fn log(&self, record: &Record<'_>, values: &OwnedKVList) -> Result<(), slog::Never> {
        let mut kv = Pairs(String::new());
        let _ = record.kv().serialize(record, &mut kv);
        let _ = values.serialize(record, &mut kv);
        let msg = record.msg();
        match record.level() {
            Level::Critical | Level::Error => tracing::error!(target: "raft", "{msg}{}", kv.0),
            Level::Warning => tracing::warn!(target: "raft", "{msg}{}", kv.0),
            Level::Info => tracing::info!(target: "raft", "{msg}{}", kv.0),
            Level::Debug => tracing::debug!(target: "raft", "{msg}{}", kv.0),
            Level::Trace => tracing::trace!(target: "raft", "{msg}{}", kv.0),
        }
        Ok(())
    }
}

/// The logger raft-rs is given, tagged with the node's id.
pub fn logger(node: u64) -> slog::Logger {
    slog::Logger::root(ToTracing.fuse(), slog::o!("raft_id" => node))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pair_is_written_once_but_a_longer_value_is_not_taken_for_it() {
        let mut p = Pairs(String::new());
        for (k, v) in [("raft_id", "1"), ("term", "3"), ("raft_id", "1"), ("raft_id", "12")] {
            slog::Serializer::emit_arguments(&mut p, k, &format_args!("{v}")).unwrap();
        }
        assert_eq!(p.0, " raft_id=1 term=3 raft_id=12");
    }
}

//! raft-rs logs through slog; this drain hands its records to tracing, so Raft's elections and
//! rejections show up in the server's log with its level filters and format.

use std::fmt;

use slog::{Drain, Level, OwnedKVList, Record, KV};

/// A slog drain that writes every record as a tracing event (target `raft`).
pub struct ToTracing;

/// Collects a record's key-values as `k=v` text.
struct Pairs(String);

impl slog::Serializer for Pairs {
    fn emit_arguments(&mut self, key: slog::Key, val: &fmt::Arguments<'_>) -> slog::Result {
        use fmt::Write;
        let _ = write!(self.0, " {key}={val}");
        Ok(())
    }
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

//! What can be wrong with one `key=value` of a fault rule. [`Rule::parse`](super::Rule::parse)
//! wraps it, with the rule's text, in a `RuleError`; each message names the key and the value
//! as given, because the reader is usually looking at a CI log.

use testkeeper_wire::OpCode;
use thiserror::Error;

use super::rule::{MAX_DELAY_MS, MAX_GLOB_LEN, MAX_GLOB_PARTS};

/// A value a rule's key does not take.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum BadValue {
    #[error("unknown op '{0}' (expected a protocol op name like create, setData, getData, multi, or *)")]
    UnknownOp(String),
    #[error(
        "op '{}' never arrives as a client request, so no rule can match it (the handshake cannot be faulted)",
        .0.name()
    )]
    NeverRequested(OpCode),
    #[error("bad value for path: '{0}' must start with '/' (ZooKeeper paths are absolute)")]
    RelativePath(String),
    #[error("bad value for path: a glob of {0} bytes (at most {MAX_GLOB_LEN})")]
    LongGlob(usize),
    #[error("bad value for path: '{glob}' has {parts} wildcards and alternatives (at most {MAX_GLOB_PARTS})")]
    WideGlob { glob: String, parts: usize },
    /// The glob library refused it (its message, which names the position).
    #[error("bad value for path: '{glob}': {why}")]
    Glob { glob: String, why: String },
    #[error("bad value for {key}: '{value}' (expected a whole number >= 1)")]
    NotPositive { key: &'static str, value: String },
    #[error("bad value for {key}: '{value}' (at most {MAX_DELAY_MS} ms, one hour)")]
    LongDelay { key: &'static str, value: String },
    #[error("bad value for {key}: '{value}' (expected whole milliseconds, at most {MAX_DELAY_MS})")]
    NotMillis { key: &'static str, value: String },
    #[error("bad value for prob: '{0}' (expected a number from 0 to 1)")]
    Prob(String),
    #[error("bad value for code: '{0}' (expected a ZooKeeper error code like -4 or a name like CONNECTIONLOSS)")]
    Code(String),
    #[error("bad value for code: 0 is OK, not an error")]
    CodeZero,
}

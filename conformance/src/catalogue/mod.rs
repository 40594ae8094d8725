//! The scenario catalogue: plain data tables, one file per family.
//!
//! # Layout
//! - `basics`: every op's success and main errors, stats, sequential suffixes, ephemerals,
//!   multi and multiRead, ACL/auth, system nodes, session timeout negotiation.
//! - `watches`: one-shot, persistent and recursive watches: type, path, order, exactly once.
//! - `nodes`: read errors, container and TTL nodes, writes under `/keeper`, multiRead with
//!   exists.
//! - `keeper_ext`: ClickHouse Keeper's extension ops (Keeper-only).
//! - `clickhouse`: the ZooKeeper patterns ClickHouse relies on (DDL queue, backup
//!   coordination, ReplicatedMergeTree insert and log copy, KeeperMap) and the races.

mod basics;
mod clickhouse;
mod keeper_ext;
mod nodes;
mod watches;

use crate::scenario::Scenario;

/// Every scenario, in run order.
pub fn all() -> Vec<Scenario> {
    let mut out = basics::scenarios();
    out.extend(nodes::scenarios());
    out.extend(watches::scenarios());
    out.extend(clickhouse::scenarios());
    out.extend(keeper_ext::scenarios());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_path_safe() {
        let all = all();
        let mut names: Vec<&str> = all.iter().map(|s| s.name).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), all.len());
        assert!(names.iter().all(|n| n.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')));
    }
}

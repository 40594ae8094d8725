//! The publisher of ADR 0067: Keeper (through one KeeperMap row per target) is the authority
//! for a replicated ClickHouse publication, distributed DDL is sent once and found again only
//! by its token, and completion needs one well-formed status per expected host.
//!
//! The protocol, the row format and the state machine are in `docs/publisher.md`.
//!
//! # Layout
//! - this file: [`Config`] and small request helpers.
//! - `keepermap`: KeeperMap's node layout and ClickHouse's binary `String`.
//! - `authority`: the row's JSON, [`Phase`] and the allowed transitions.
//! - `ddl`: `DDLLogEntry` and `ExecutionStatus` text; finding an entry by token.
//! - `link`: the connection: retried reads, mutations sent exactly once, the request journal.
//! - `run`: one publication end to end, producing a [`Report`].
//! - `evidence`: the two getChildren and the per-host verdict.
//! - `report`: [`Report`], permits, and the normalized JSON the CLI writes.
//! - `summary`: the report in words (what the CLI prints).
//! - `hosts`: simulated ClickHouse hosts (DDLWorker on the wire).
//! - `chaos`, `check`: the fault sweep against embedded testkeepers (or a running one through
//!   `admin`, its HTTP fault API) and its invariants.

pub mod admin;
pub mod authority;
pub mod chaos;
pub mod check;
pub mod ddl;
pub mod evidence;
pub mod hosts;
pub mod keepermap;
pub mod link;
pub mod report;
pub mod run;
pub mod summary;

use std::time::Duration;

use testkeeper_wire::records::create::CreateRequest;
use testkeeper_wire::{Acl, CreateOp, OpCode, Request};

pub use authority::{Authority, Phase};
pub use link::{Breakage, Link};
pub use report::{Outcome, Permit, Report};

/// What to publish and where things live in Keeper.
#[derive(Debug, Clone)]
pub struct Config {
    /// The qualified target table, `db.table`: the row's key.
    pub target: String,
    /// Expected hosts (one shard, this many replicas).
    pub hosts: usize,
    /// Drives the operation identity, the inventory and the token, so a run replays.
    pub seed: u64,
    /// The server's `keeper_map_path_prefix`.
    pub keeper_map_prefix: String,
    /// The authority table's KeeperMap path (under the prefix).
    pub table: String,
    /// `distributed_ddl.path` without the trailing slash.
    pub ddl_queue: String,
    /// Where the simulation keeps generations and replica state.
    pub sim_root: String,
    /// How long to wait for evidence before judging it.
    pub evidence_timeout: Duration,
}

impl Config {
    /// Defaults matching ClickHouse's paths and `tests/clickhouse/chdb.xml`.
    pub fn new(target: &str, hosts: usize, seed: u64) -> Config {
        Config {
            target: target.into(),
            hosts,
            seed,
            keeper_map_prefix: "/keeper_map_tables".into(),
            table: "publisher_authority".into(),
            ddl_queue: "/clickhouse/task_queue/ddl".into(),
            sim_root: "/testkeeper_publisher".into(),
            evidence_timeout: Duration::from_secs(10),
        }
    }
}

/// world:anyone with every permission.
pub fn open_acl() -> Vec<Acl> {
    Acl::open()
}

/// A plain `create` request with `flags` (0 persistent, see `create_mode`).
pub fn create_request(path: &str, data: &[u8], flags: i32) -> Request {
    let req = CreateRequest { path: path.into(), data: Some(data.to_vec()), acl: open_acl(), flags };
    Request::Create(CreateOp { op: OpCode::Create, req, ttl: 0 })
}

//! testkeeper's server: a ClickHouse-Keeper-compatible ZooKeeper-protocol server for tests.
//!
//! # Layout
//! - [`core`]: the deterministic state machine, re-exported from the `testkeeper-core` crate.
//! - [`faults`]: seeded, protocol-aware fault injection hooked into the engine's request path.
//! - [`http`]: the admin HTTP endpoint (`/ready`, `/metrics`, 4lw commands, fault control).
//! - [`log`]: the entry log and its backends (memory, sled, a simulated disk).
//! - [`storage`]: data directories: snapshots, recovery.
//! - [`broken`]: deliberately broken modes, for the chaos checkers' self-test.
//! - [`embed`]: [`embed::TestKeeper`], the in-process server; [`prelude`] for a test's imports.
/// The deterministic state machine (its own crate, so that it cannot reach tokio, a clock or
/// randomness), re-exported under its old path.
pub use testkeeper_core as core;
pub mod broken;
pub mod clock;
pub mod cluster;
pub mod config;
pub mod embed;
pub mod engine;
pub mod faults;
pub mod features;
pub mod fourlw;
pub mod http;
pub mod interop;
pub mod keeper_client;
pub mod log;
pub mod net;
pub mod prelude;
pub mod storage;

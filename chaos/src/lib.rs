//! `testkeeper chaos`: Jepsen-style tests of a coordination service in seconds. Concurrent
//! client sessions run a workload against an embedded testkeeper cluster (or any Keeper or
//! ZooKeeper), a nemesis injects faults on a seeded schedule, and checkers decide from the
//! recorded history (and, on the embedded cluster, from what every node applied) whether the
//! service kept its promises.
//!
//! # Layout
//! - `history`: ops (ok, fail, unknown), nemesis events.
//! - `check/`: the checkers; `check/linear/` the linearizability search.
//! - `synth`: synthetic linearizable histories, to measure the checker.
//! - `config`: what a run is ([`config::RunConfig`]); `run`: one run start to finish.
//! - `client`: one session over our own client; `worker`: a client worker of the main phase.
//! - `workload/`: what the clients do; `nemesis/`: the seeded fault schedule and its actor.
//! - `liveness`: after the heal, a write commits within a bound.
//! - `checks`: which checkers judge which workload; `record`: the embedded cluster's record.
//! - `sim/`: `testkeeper sim`, the same run as a deterministic simulation, and its sweeps.
//! - `report`: the terminal summary, the JSON and JUnit reports; `html/`: the HTML report.

pub mod check;
pub mod checks;
pub mod client;
pub mod config;
pub mod history;
pub mod html;
pub mod liveness;
pub mod nemesis;
pub mod record;
pub mod report;
pub mod run;
pub mod sim;
pub mod synth;
pub mod worker;
pub mod workload;

#[cfg(test)]
mod testutil;

//! Test support for testkeeper's external-peer integration tests.
//!
//! The integration tests in `tests/tests/*.rs` check testkeeper against real
//! third-party software: Debian's Apache ZooKeeper 3.8 as the reference
//! server, kazoo's own test suite, and the Java (`zkCli.sh`) and C (`cli_mt`)
//! command-line clients. This library holds what they share:
//!
//! * [`data_dir`]: a `serve --data-dir` directory: its sled log read and damaged
//!   through sled's API, and a picture of its contents to compare;
//! * [`chromium`]: a headless Debian `chromium` driven over CDP (the dashboard's browser test);
//! * [`env`]: where things live (repo, venv, `testkeeper` binary) and the
//!   skip-or-fail policy for missing external prerequisites;
//! * [`net`]: free loopback ports and four-letter-word queries;
//! * [`process`]: child processes that are killed by PID and reaped on drop,
//!   and commands run with a bounded wait;
//! * [`zookeeper`]: a throwaway standalone ZooKeeper server;
//! * [`zookeeper_ensemble`]: a throwaway 3-server ZooKeeper ensemble;
//! * [`testkeeper`]: a throwaway `testkeeper serve` process;
//! * [`cluster`]: a throwaway cluster of `testkeeper serve` processes;
//! * [`proxy`]: a throwaway `testkeeper proxy` in front of a server, and `replay`;
//! * [`foreign`]: someone else's data on a server, and a snapshot to show it is untouched;
//! * [`kazoo`]: running kazoo's shipped test suite against a server;
//! * [`clis`]: running `zkCli.sh` and `cli_mt` commands against a server;
//! * [`piped`]: a child spoken to line by line on stdin and stdout;
//! * [`java`]: compiling and running the Java programs under `tests/java/`;
//! * [`cluster_control`]: what a test does to any cluster (kill, restart, leader, mntr), and
//!   the digest-at-the-same-index check;
//! * [`cluster_embedded`]: an embedded testkeeper cluster (`testkeeper cluster-embedded`);
//! * [`cluster_probes`]: cluster behaviour (a session moving, the leader gone) in words, for
//!   a ZooKeeper ensemble to be the oracle of;
//! * [`ledger`]: a client writing a ledger while the leader is killed in a loop, checked on
//!   every node.
//!
//! It never links the other workspace crates: the point is to exercise the
//! binary over the wire, the way real clients do.

pub mod chromium;
pub mod clis;
pub mod cluster;
pub mod cluster_control;
pub mod cluster_embedded;
pub mod cluster_probes;
pub mod data_dir;
pub mod env;
pub mod foreign;
pub mod java;
pub mod kazoo;
pub mod ledger;
pub mod net;
pub mod piped;
pub mod process;
pub mod proxy;
pub mod testkeeper;
pub mod zookeeper;
pub mod zookeeper_ensemble;

pub use cluster::{ClusterOptions, TestkeeperCluster};
pub use env::{external_prereq, repo_root, testkeeper_bin, venv_python};
pub use net::{four_letter_word, free_port, free_ports};
pub use testkeeper::TestkeeperProcess;
pub use zookeeper::{ZooKeeperConfig, ZooKeeperProcess};
pub use zookeeper_ensemble::ZooKeeperEnsemble;

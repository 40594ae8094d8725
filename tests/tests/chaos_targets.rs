//! `testkeeper chaos --target` against servers it does not run: a real Apache ZooKeeper 3.8
//! (standalone, and a 3-node ensemble) with client-side faults, and a `testkeeper serve`
//! process with its fault rules driven through `--admin`. Every run must pass (exit 0);
//! bad flags exit 2 naming the problem.

use std::process::{Command, Output};

use testkeeper_tests::env::zookeeper_installed;
use testkeeper_tests::zookeeper::ZooKeeperProcess;
use testkeeper_tests::zookeeper_ensemble::ZooKeeperEnsemble;
use testkeeper_tests::{free_ports, require_external, testkeeper_bin, TestkeeperProcess};

fn chaos(args: &[&str]) -> Output {
    let out = Command::new(testkeeper_bin()).arg("chaos").args(args).output().expect("run testkeeper chaos");
    eprintln!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    out
}

fn passes(target: &str, extra: &[&str]) {
    let mut args = vec!["--target", target, "--ops", "250", "--duration", "3s", "--seed", "5"];
    args.extend_from_slice(extra);
    let out = chaos(&args);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert!(stdout.contains("schedule (") && stdout.contains("PASS (seed 5)"), "{stdout}");
}

#[test]
fn zookeeper_standalone_passes_register_and_queue_with_client_side_faults() {
    require_external!("Debian ZooKeeper", zookeeper_installed());
    let zk = ZooKeeperProcess::start();
    let target = zk.addr().to_string();
    passes(&target, &["--workload", "register", "--nemesis", "disconnect"]);
    passes(&target, &["--workload", "queue"]);
}

#[test]
fn a_zookeeper_ensemble_passes_set_with_client_side_faults() {
    require_external!("Debian ZooKeeper", zookeeper_installed());
    let zk = ZooKeeperEnsemble::start().expect("the ensemble starts");
    passes(&zk.connect_string(), &["--workload", "set"]);
}

#[test]
fn a_testkeeper_process_passes_with_its_fault_rules_over_admin() {
    // Both ports chosen here: a client port the server picked itself could be this HTTP port.
    let [listen, http] = free_ports(2)[..] else { unreachable!("two ports") };
    let args = ["--http", &format!("127.0.0.1:{http}"), "--min-session-timeout", "1000"];
    let tk = TestkeeperProcess::try_start_listening(&testkeeper_bin(), &format!("127.0.0.1:{listen}"), &args)
        .unwrap_or_else(|e| panic!("{e}"));
    let admin = format!("127.0.0.1:{http}");
    passes(&tk.addr().to_string(), &["--workload", "register", "--admin", &admin, "--nemesis", "all"]);
}

#[test]
fn bad_flags_exit_2_naming_the_problem() {
    let out = chaos(&["--workload", "registr"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("registr"));
    let out = chaos(&["--target", "127.0.0.1:1", "--nemesis", "kill"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("nemesis kill needs the embedded cluster"));
    let out = chaos(&["--target", "127.0.0.1:1", "--nemesis", "delay"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("needs --admin"));
}

//! The publication against an embedded testkeeper: the happy path, failing and stalled hosts,
//! and the chaos sweep, which must pass for the real publisher and catch the broken one.

use testkeeper_publisher::chaos::{one_run, sweep, SweepConfig};
use testkeeper_publisher::hosts::{Behavior, Hosts};
use testkeeper_publisher::{run, Breakage, Config, Link, Outcome};
use testkeeper_server::{config::ServerConfig, core::flavor::Flavor, embed::TestKeeper};

async fn server() -> TestKeeper {
    let mut cfg = ServerConfig::new(Flavor::Keeper);
    cfg.listen = "127.0.0.1:0".parse().unwrap();
    TestKeeper::start(cfg).await.unwrap()
}

async fn publish_with(behaviors: Vec<Behavior>) -> testkeeper_publisher::Report {
    let srv = server().await;
    let mut cfg = Config::new("db.events", behaviors.len(), 3);
    cfg.evidence_timeout = std::time::Duration::from_millis(800);
    let _hosts = Hosts::start(srv.addr(), &cfg.ddl_queue, &cfg.sim_root, behaviors).await.unwrap();
    let mut link = Link::connect(srv.addr()).await.unwrap();
    run::publish(&mut link, &cfg).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn completes_with_full_evidence() {
    let r = publish_with(vec![Behavior::Succeed; 3]).await;
    assert_eq!(r.outcome, Some(Outcome::Completed), "{}", r.reason);
    assert_eq!(r.phases, ["bootstrap", "admitted", "published", "cleanup", "idle"]);
    assert_eq!(r.permits.len(), 2);
    assert_eq!(r.removed.as_deref(), Some("db.events__genesis"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn terminal_mixed_evidence_fails_closed_and_keeps_both() {
    let r = publish_with(vec![Behavior::Succeed, Behavior::Fail(60)]).await;
    assert_eq!(r.outcome, Some(Outcome::FailedClosed), "{}", r.reason);
    assert_eq!(r.phases.last().map(String::as_str), Some("failed_closed"));
    assert_eq!(r.removed, None);
    let r = publish_with(vec![Behavior::Succeed, Behavior::Die]).await;
    assert_eq!(r.outcome, Some(Outcome::FailedClosed), "a dead host is unknown evidence: {}", r.reason);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn active_partial_work_waits() {
    let r = publish_with(vec![Behavior::Succeed, Behavior::Stall]).await;
    assert_eq!(r.outcome, Some(Outcome::StillRunning), "{}", r.reason);
    assert_eq!(r.phases.last().map(String::as_str), Some("admitted"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sweep_passes_and_catches_the_broken_publisher() {
    let good = sweep(&SweepConfig { hosts: 2, seed: 11, breakage: None, max_runs: None, remote: None, only: None })
        .await
        .unwrap();
    assert!(good.runs.len() > 20, "every request index is swept");
    assert!(good.failures().is_empty(), "{:#?}", good.failures());
    assert!(good.outcomes().get("unknown").copied().unwrap_or(0) > 0, "lost replies on mutations were exercised");
    let broken = SweepConfig {
        hosts: 2,
        seed: 11,
        breakage: Some(Breakage::RetryAuthorityMutation),
        max_runs: None,
        remote: None,
        only: None,
    };
    let caught = sweep(&broken).await.unwrap();
    assert!(!caught.failures().is_empty(), "the sweep must catch a retried authority mutation");
    let bad = caught.failures()[0].index;
    let (first, _) = one_run(&broken, bad).await.unwrap();
    assert!(!first.violations.is_empty(), "a failing index replays");
    assert!(first.hit.is_some(), "the run names the request its drop hit");
    let alone = sweep(&SweepConfig { only: Some(bad), ..broken.clone() }).await.unwrap();
    assert_eq!(alone.runs.iter().map(|r| r.index).collect::<Vec<_>>(), vec![bad], "--index runs that index alone");
    assert!(!alone.runs[0].violations.is_empty());
    assert!(
        good.runs[1..]
            .iter()
            .any(|r| r.fired_faults.iter().any(|f| f.starts_with("drop-response on ") && f.ends_with("(publisher)"))),
        "{:#?}",
        good.runs
    );
    assert!(good.runs.iter().all(|r| r.fired_faults.iter().all(|f| !f.starts_with("delay"))), "taps are not faults");
}

//! `testkeeper sim` as a user runs it: a seed prints the same `trace` line in two processes,
//! the output ends with the verdict and a replay command that replays it, a sweep of a broken
//! cluster exits 1 with its JUnit, JSON and trace files, shards split a range, and bad flags
//! are refused (exit 2) naming the problem.

use std::process::{Command, Output};

fn sim(args: &[&str]) -> Output {
    let out =
        Command::new(env!("CARGO_BIN_EXE_testkeeper")).arg("sim").args(args).output().expect("run testkeeper sim");
    eprintln!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    out
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// The `trace <hex>` line.
fn trace(o: &Output) -> String {
    let text = stdout(o);
    let line = text.lines().find(|l| l.starts_with("trace ")).expect("a trace line");
    let hex = line.trim_start_matches("trace ");
    assert_eq!(hex.len(), 64, "{line}");
    hex.to_string()
}

#[test]
fn a_seed_prints_the_same_trace_in_every_process_and_ends_with_its_replay() {
    let args = ["--workload", "queue", "--seed", "11", "--ops", "300"];
    let (a, b) = (sim(&args), sim(&args));
    assert_eq!(a.status.code(), Some(0));
    assert_eq!(trace(&a), trace(&b));
    let text = stdout(&a);
    let last = text.lines().last().unwrap();
    let replay = last.strip_prefix("PASS: replay with ").unwrap_or_else(|| panic!("last line: {last}"));
    assert!(replay.starts_with("testkeeper sim ") && replay.contains("--seed 11"), "{replay}");
    // The printed command, run as printed, replays the run.
    let words: Vec<&str> = replay.split_whitespace().skip(2).collect();
    assert_eq!(trace(&sim(&words)), trace(&a));
    let other = sim(&["--workload", "queue", "--seed", "12", "--ops", "300"]);
    assert_ne!(trace(&other), trace(&a));
}

#[test]
fn a_sweep_of_a_broken_cluster_exits_1_with_its_reports() {
    let dir = tempfile::tempdir().unwrap();
    let (junit, json, tr) = (dir.path().join("j.xml"), dir.path().join("s.json"), dir.path().join("t.json"));
    let out = sim(&[
        "--workload",
        "counter",
        "--broken",
        "partial-multi",
        "--nemesis",
        "none",
        "--ops",
        "200",
        "--seeds",
        "0..3",
        "--jobs",
        "2",
        "--junit",
        junit.to_str().unwrap(),
        "--json",
        json.to_str().unwrap(),
        "--trace",
        tr.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(1));
    let text = stdout(&out);
    assert!(text.contains("sweep 0..3: 3 seeds, 0 passed, 3 violations"), "{text}");
    assert!(text.contains("replay: testkeeper sim --workload counter --nemesis none --seed 0"), "{text}");
    let xml = std::fs::read_to_string(&junit).unwrap();
    assert!(xml.contains("tests=\"3\" failures=\"3\"") && xml.matches("<failure").count() == 3, "{xml}");
    let report: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert_eq!(report["violations"], 3);
    assert_eq!(report["results"].as_array().unwrap().len(), 3);
    assert!(report["results"][0]["trace"].as_str().is_some_and(|t| t.len() == 64));
    // The trace of the first failing seed: its whole history, as the HTML timeline reads it.
    let t: serde_json::Value = serde_json::from_slice(&std::fs::read(&tr).unwrap()).unwrap();
    assert_eq!(t["seed"], 0);
    assert!(t["history"]["ops"].as_array().is_some_and(|o| o.len() >= 200));
}

#[test]
fn html_draws_the_timeline_of_the_run_with_its_sim_replay() {
    let dir = tempfile::tempdir().unwrap();
    let html = dir.path().join("sim.html");
    let out = sim(&["--workload", "set", "--seed", "4", "--ops", "200", "--html", html.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0));
    let page = std::fs::read_to_string(&html).expect("the page was written");
    assert!(page.starts_with("<!DOCTYPE html>") && page.contains("<svg class=\"timeline\""), "{page:.300}");
    assert!(page.contains("testkeeper sim --workload set") && page.contains("--seed 4"), "{page:.600}");
}

#[test]
fn shards_take_every_nth_seed_and_bad_flags_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("s.json");
    let out = sim(&["--ops", "100", "--seeds", "0..6", "--shard", "2/3", "--json", json.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0));
    let report: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let seeds: Vec<u64> = report["results"].as_array().unwrap().iter().map(|r| r["seed"].as_u64().unwrap()).collect();
    assert_eq!(seeds, [1, 4]);
    for (bad, says) in [
        (vec!["--seeds", "0..6", "--shard", "0/3"], "shard '0/3'"),
        (vec!["--seeds", "5..5"], "seeds '5..5'"),
        (vec!["--seed", "1", "--seeds", "0..2"], "cannot be used with"),
        (vec!["--shard", "1/2"], "--seeds"),
        (vec!["--nemesis", "earthquake"], "earthquake"),
    ] {
        let out = sim(&bad);
        assert_eq!(out.status.code(), Some(2), "{bad:?}");
        assert!(String::from_utf8_lossy(&out.stderr).contains(says), "{bad:?}");
    }
}

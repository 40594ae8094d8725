//! `testkeeper bench` runs end to end against a server it spawns and writes well-formed JSON,
//! and `--plot` turns that JSON into a PNG. Only shape is checked: a speed is never asserted.

use std::process::Command;

use serde_json::Value;

fn bench(args: &[&str]) -> std::process::Output {
    let out = Command::new(env!("CARGO_BIN_EXE_testkeeper")).arg("bench").args(args).output().expect("run bench");
    assert!(out.status.success(), "bench {args:?} failed: {}", String::from_utf8_lossy(&out.stderr));
    out
}

#[test]
fn bench_against_spawned_testkeeper_writes_json_and_plots() {
    let dir = std::env::temp_dir().join(format!("testkeeper-bench-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let json = dir.join("run.json");
    let j = json.to_str().unwrap();
    let out = bench(&["--spawn-testkeeper", "--sessions", "2", "--pipeline", "4", "--ops", "300", "--rounds", "2"]);
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    // Errors by name, the mix's expected answers said to be expected; no log lines in the output.
    assert!(stdout.contains("  round 0 testkeeper") && stdout.contains(" errors "), "{stdout}");
    assert!(!stdout.contains("\"-10") && !stdout.contains("UNEXPECTED"), "{stdout}");
    assert!(stdout.contains("(answers the mix expects)") || stdout.contains("errors none"), "{stdout}");
    assert!(!stdout.contains("INFO") && !stderr.contains("INFO"), "stdout:\n{stdout}\nstderr:\n{stderr}");
    bench(&["--spawn-testkeeper", "--ops", "200", "--rounds", "1", "--keys", "16", "--znodes", "500", "--json", j]);

    let v: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).expect("well-formed JSON");
    assert_eq!(v["config"]["ops"], 200);
    assert_eq!(v["rounds"].as_array().unwrap().len(), 1);
    let round = &v["rounds"][0];
    assert_eq!(round["ops"], 200);
    assert!(round["ops_per_sec"].as_f64().unwrap() > 0.0);
    for q in ["p50", "p99", "p999"] {
        assert!(round["latency_us"][q].as_u64().is_some(), "{q} in {round}");
    }
    assert!(round["errors"].is_object());
    assert_eq!(v["summary"]["targets"][0]["label"], "testkeeper");
    assert!(v["targets"][0]["launch_to_imok_ms"].as_f64().is_some());
    assert!(v["memory"]["testkeeper"]["rss_after"].as_u64().is_some());
    assert!(v["embedded_start"]["start_to_imok_ms_median"].as_f64().is_some());

    if std::path::Path::new("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf").is_file() {
        let png = dir.join("plot.png");
        bench(&["--plot", png.to_str().unwrap(), j]);
        assert_eq!(&std::fs::read(&png).unwrap()[1..4], b"PNG");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn bad_mix_is_refused() {
    let out = Command::new(env!("CARGO_BIN_EXE_testkeeper"))
        .args(["bench", "--spawn-testkeeper", "--mix", "read=1"])
        .output()
        .expect("run bench");
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown op"));
}

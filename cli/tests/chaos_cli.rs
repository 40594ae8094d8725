//! `testkeeper chaos --html FILE` on a short run of the embedded cluster: the file is written,
//! self-contained, with the header, the checkers' table and the timeline; a file that cannot be
//! written is an error naming it (exit 3), after the terminal report.

use std::process::{Command, Output};

fn chaos(args: &[&str]) -> Output {
    let out = Command::new(env!("CARGO_BIN_EXE_testkeeper"))
        .args(["chaos", "--workload", "register", "--ops", "80", "--duration", "2s", "--clients", "3"])
        .args(["--nemesis", "none", "--seed", "3"])
        .args(args)
        .output()
        .expect("run testkeeper chaos");
    eprintln!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    out
}

#[test]
fn chaos_html_writes_a_self_contained_report_with_the_timeline() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("report.html");
    let out = chaos(&["--html", file.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0));
    let html = std::fs::read_to_string(&file).expect("the report was written");
    assert!(html.starts_with("<!DOCTYPE html>") && !html.contains("<script"), "{html:.200}");
    assert!(html.contains("seed 3") && html.contains("testkeeper chaos --workload register"), "{html:.400}");
    assert!(html.contains("<td>linearizable</td><td class=\"verdict-pass\">pass</td>"), "{html}");
    assert!(html.contains("<svg class=\"timeline\"") && html.matches("<rect class=\"op ").count() >= 80);

    let bad = dir.path().join("no-such-dir").join("report.html");
    let out = chaos(&["--html", bad.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(3));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("writing") && stderr.contains("no-such-dir"), "{stderr}");
}

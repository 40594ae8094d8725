//! The HTML report on synthetic histories: a violating register history (the timeline, the
//! nemesis band, the anomaly's ops marked and its rows first), unknown ops' tails, the final
//! phase's row, and the cap.

use super::*;
use crate::check::linear::{self, DEFAULT_BUDGET};
use crate::check::CheckResult;
use crate::history::{Call, History, NemesisEvent, Outcome, Ret};
use crate::synth::{corrupt_one_read, register_history, Shape};
use crate::testutil::Hist;

fn report(history: History, results: Vec<CheckResult>) -> Report {
    Report {
        seed: 11,
        workload: "register".into(),
        nemeses: vec!["pause".into()],
        target: "embedded 3-node keeper cluster".into(),
        schedule: vec!["+0.10s for 0.50s: pause (pause node 2)".into()],
        replay: "testkeeper chaos --workload register --seed 11 --broken stale-read-after-sync".into(),
        elapsed_ms: 900,
        results,
        history,
    }
}

/// The `<rect>` of op `id` in `html` (its first one: the zoomed view comes first).
fn bar_of(html: &str, id: usize) -> &str {
    let at = html.find(&format!("data-op=\"{id}\"")).unwrap_or_else(|| panic!("op #{id} has no bar"));
    let start = html[..at].rfind("<rect").expect("a rect");
    &html[start..at]
}

#[test]
fn a_violating_history_shows_its_timeline_nemesis_band_and_marked_window() {
    let mut h = register_history(Shape { ops: 1_500, processes: 5, keys: 3, unknown: 0.03, seed: 4 });
    let bad = corrupt_one_read(&mut h, 4).expect("a read to corrupt");
    let lin = linear::check(&h, 0, DEFAULT_BUDGET);
    assert_eq!(lin.verdict, crate::check::Verdict::Fail, "{}", lin.summary);
    let v = lin.violations[0].clone();
    assert!(v.ops.contains(&bad));
    h.nemesis.push(NemesisEvent {
        kind: "pause".into(),
        detail: "paused node 2".into(),
        start_ns: v.start_ns.saturating_sub(5_000_000),
        end_ns: Some(v.end_ns + 5_000_000),
    });
    h.healed_ns = h.ops.iter().map(|o| o.complete_ns).max().unwrap();
    let r = report(h, vec![lin, CheckResult::from_violations("session", "fine".into(), vec![])]);
    let html = r.html();

    assert!(html.starts_with("<!DOCTYPE html>") && html.ends_with("</html>\n"));
    // Self-contained: no scripts, nothing fetched.
    for outside in ["<script", "src=\"http", "href=\"http", "<link"] {
        assert!(!html.contains(outside), "the page refers to {outside}");
    }
    // Header and table.
    assert!(
        html.contains("seed 11") && html.contains(&xml(&r.replay)) && html.contains("embedded 3-node keeper cluster")
    );
    assert!(html.contains("<td>linearizable</td><td class=\"verdict-FAIL\">FAIL</td><td>1</td>"), "{html}");
    assert!(html.contains("<td>session</td><td class=\"verdict-pass\">pass</td>"));
    // The anomaly: its message, a zoomed timeline and the whole one, both with the band.
    assert!(html.contains(&xml(&v.message)));
    assert_eq!(html.matches("<svg class=\"timeline\"").count(), 2);
    assert_eq!(html.matches("<rect class=\"nemesis\"").count(), 2, "the pause window in both timelines");
    assert!(html.contains("nemesis pause: paused node 2"));
    assert_eq!(html.matches("<rect class=\"anomaly\"").count(), 2);
    for id in &v.ops {
        assert!(bar_of(&html, *id).contains(" marked\""), "op #{id} is not marked");
        assert!(html.contains(&format!(">#{id}</text>")), "op #{id} is not numbered in the zoom");
        assert!(html.contains(&xml(&r.history.ops[*id].describe())), "op #{id}'s line is missing");
    }
    let marked = html.matches(" marked\"").count();
    assert_eq!(marked, 2 * v.ops.len(), "only the window's ops are marked, once per timeline");
    // An op outside the window is drawn but not marked.
    let other = r.history.ops.iter().find(|o| !v.ops.contains(&o.id)).unwrap().id;
    assert!(!bar_of(&html, other).contains("marked"));
    // In the whole timeline the first row is the row of the window's first op.
    let whole = &html[html.find("<h2>Timeline</h2>").unwrap()..];
    let first_row = whole.split("<text class=\"row\"").nth(1).unwrap();
    let op = &r.history.ops[v.ops[0]];
    let label = format!(">{} · p{}</text>", op.key.as_deref().unwrap(), op.process);
    assert!(first_row.split_once('\n').unwrap().0.ends_with(&label), "first row {first_row:.80}, want {label}");
}

#[test]
fn an_unknown_op_runs_on_to_the_end_final_reads_share_a_row_and_a_pass_has_no_anomaly() {
    let mut b = Hist::default();
    b.write(0, "k", 1, 1, 0, 10);
    b.op(1, "k", Call::Write { value: 2 }, Outcome::Unknown, Ret::None, 20, 30);
    b.read(0, "k", 1, 1, 40, 100);
    for p in [5, 6] {
        b.read(p, "k", 1, 1, 95, 99);
        b.last().final_phase = true;
    }
    b.h.healed_ns = 100_000_000;
    let html = report(b.h, vec![CheckResult::from_violations("linearizable", "ok".into(), vec![])]).html();
    assert!(html.contains("class=\"verdict-pass\">PASS</span>"));
    assert!(!html.contains("<h2>Anomalies</h2>") && !html.contains("<rect class=\"anomaly\""));
    // The tail starts where the unknown op completed (30 ms of 100) and ends at the plot's end.
    let tail = html.split("<rect class=\"tail\" ").nth(1).expect("a tail");
    let x: f64 = tail.split('"').nth(1).unwrap().parse().unwrap();
    let w: f64 = tail.split("width=\"").nth(1).unwrap().split('"').next().unwrap().parse().unwrap();
    assert!((x - (150.0 + 0.3 * 1150.0)).abs() < 0.2 && (x + w - 1300.0).abs() < 0.2, "tail at {x} width {w}");
    assert_eq!(html.matches("<rect class=\"tail\"").count(), 1);
    // The final phase's reads share one row, after the processes'.
    let rows: Vec<&str> =
        html.split("<text class=\"row\"").skip(1).map(|r| r.split_once("</text>").unwrap().0).collect();
    let labels: Vec<&str> = rows.iter().map(|r| r.rsplit_once('>').unwrap().1).collect();
    assert_eq!(labels, ["k · p0", "k · p1", "k · final"]);
}

#[test]
fn many_processes_are_capped_and_the_page_says_so() {
    let mut b = Hist::default();
    for p in 0..(MAX_ROWS as u64 + 30) {
        b.read(p, "", 0, 0, p, p + 1);
    }
    let html = report(b.h, vec![]).html();
    assert_eq!(html.matches("<text class=\"row\"").count(), MAX_ROWS);
    assert!(html.contains("30 more rows (30 ops) not drawn"), "{html}");
}

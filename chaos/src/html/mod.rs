//! The HTML report (`--html FILE`): one self-contained file (inline CSS and SVG, no scripts,
//! nothing fetched) that shows a run the way people would rather look at it than read it: the
//! header with the replay command, the per-checker table, each violation with its message, its
//! ops and a timeline zoomed onto its window, and the whole history as a timeline per key and
//! process with the nemesis windows shaded and the anomalies marked.
//!
//! # Layout
//! - this file: the page ([`Report::html`]).
//! - `timeline`: the SVG timelines (rows, bars, bands, caps).

pub mod timeline;

use std::collections::HashSet;
use std::fmt::Write as _;

use crate::check::Violation;
use crate::history::OpId;
use crate::report::{xml, Report};
use timeline::{rows, Timeline, MAX_OPS, MAX_ROWS};

/// Violations drawn with a zoomed timeline of their own (the rest are listed).
pub const MAX_ZOOMED: usize = 8;
/// More keys than this and the rows are per process only.
const MAX_KEYS: usize = 16;

const STYLE: &str = r#"
body { font: 14px/1.4 system-ui, sans-serif; margin: 12px 20px; color: #222; }
.head { display: flex; gap: 24px; align-items: flex-start; } .head > div:first-child { flex: 1; min-width: 0; }
p { margin: 4px 0; }
h1 { font-size: 20px; margin: 0 0 6px; } h2 { font-size: 16px; margin: 14px 0 4px; }
pre, code { font: 12px ui-monospace, monospace; } pre { background: #f4f4f4; padding: 4px 8px; margin: 4px 0; white-space: pre-wrap; }
table { border-collapse: collapse; font-size: 13px; } td, th { border: 1px solid #ccc; padding: 2px 6px; text-align: left; vertical-align: top; }
.verdict-pass { color: #1a7f37; font-weight: bold; } .verdict-FAIL { color: #c0162f; font-weight: bold; }
.verdict-unknown { color: #9a6700; font-weight: bold; }
.violation { border-left: 4px solid #d0108a; padding: 2px 10px; margin: 6px 0; }
.violation .msg { font-weight: bold; } .violation summary { cursor: pointer; }
.legend i { font-style: normal; white-space: nowrap; } .legend small { font-size: 13px; }
.legend span { display: inline-block; width: 22px; height: 10px; margin: 0 4px 0 12px; vertical-align: middle; }
.note { color: #666; }
svg.timeline { display: block; margin: 4px 0; }
svg text { font: 11px ui-monospace, monospace; }
svg text.row { text-anchor: end; fill: #333; } svg text.tick { fill: #777; text-anchor: middle; }
svg text.nemesis { fill: #2b5c9e; } svg text.anomaly { fill: #d0108a; font-weight: bold; }
svg text.oplabel { fill: #d0108a; font-weight: bold; }
rect.stripe { fill: #f6f6f6; } line.grid { stroke: #e4e4e4; }
rect.nemesis { fill: #3b78c4; fill-opacity: 0.13; stroke: #3b78c4; stroke-opacity: 0.4; }
rect.anomaly { fill: #d0108a; fill-opacity: 0.10; stroke: #d0108a; stroke-width: 1.5; stroke-dasharray: 4 2; }
rect.op.ok { fill: #3f9b4a; } rect.op.fail { fill: #e07b7b; } rect.op.unknown { fill: #f0a030; }
rect.tail { fill: #f0a030; fill-opacity: 0.3; }
rect.op.marked { stroke: #d0108a; stroke-width: 3; }
rect.op:hover { stroke: #000; stroke-width: 2; }
"#;

impl Report {
    /// The run as one self-contained HTML page (`--html FILE`).
    pub fn html(&self) -> String {
        let h = &self.history;
        let mut s = String::from("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n");
        let _ = writeln!(s, "<title>testkeeper chaos {} seed {}</title>", xml(&self.workload), self.seed);
        let _ = writeln!(s, "<style>{STYLE}</style></head><body>");
        let verdict = if self.passed() {
            ("pass", "PASS")
        } else if self.violated() {
            ("FAIL", "VIOLATION")
        } else {
            ("unknown", "UNDECIDED")
        };
        let _ = writeln!(
            s,
            "<h1>testkeeper chaos: {} · seed {} · <span class=\"verdict-{}\">{}</span></h1>",
            xml(&self.workload),
            self.seed,
            verdict.0,
            verdict.1
        );
        // The header: what ran on the left, the checkers' table on the right, so the anomalies
        // and the timeline start within the first screen.
        s.push_str("<div class=\"head\"><div>\n");
        let (ok, fail, unknown) = h.counts();
        let _ = writeln!(
            s,
            "<p>target: {}<br>nemeses: {}<br>history: {} ops ({ok} ok, {fail} fail, {unknown} unknown), {} nemesis windows, {:.1} s</p>",
            xml(&self.target),
            xml(&self.nemeses.join(", ")),
            h.ops.len(),
            h.nemesis.len(),
            self.elapsed_ms as f64 / 1e3
        );
        let _ = writeln!(s, "<p>replay:</p><pre>{}</pre></div><div>", xml(&self.replay));
        self.checker_table(&mut s);
        s.push_str("</div></div>\n");
        let violations: Vec<(&str, &Violation)> =
            self.results.iter().flat_map(|r| r.violations.iter().map(|v| (r.checker.as_str(), v))).collect();
        if !violations.is_empty() {
            let _ = writeln!(s, "<h2>Anomalies</h2>");
        }
        for (i, (checker, v)) in violations.iter().enumerate() {
            self.violation(&mut s, i, checker, v);
        }
        self.whole(&mut s, &violations);
        let _ = writeln!(s, "<h2>Schedule (from seed {})</h2><pre>{}</pre>", self.seed, xml(&self.schedule.join("\n")));
        s.push_str("</body></html>\n");
        s
    }

    fn checker_table(&self, s: &mut String) {
        let _ = writeln!(s, "<table><tr><th>checker</th><th>verdict</th><th>violations</th><th>summary</th></tr>");
        for r in &self.results {
            let _ = writeln!(
                s,
                "<tr><td>{}</td><td class=\"verdict-{}\">{}</td><td>{}</td><td>{}</td></tr>",
                xml(&r.checker),
                r.verdict.name(),
                r.verdict.name(),
                r.violation_count,
                xml(&r.summary)
            );
        }
        s.push_str("</table>\n");
        let listed: usize = self.results.iter().map(|r| r.violations.len()).sum();
        let all: usize = self.results.iter().map(|r| r.violation_count).sum();
        if all > listed {
            let _ = writeln!(
                s,
                "<p class=\"note\">{listed} of {all} violations are listed (each checker keeps its first {}).</p>",
                crate::check::MAX_LISTED
            );
        }
    }

    /// One violation: message, window, ops, the nemesis windows over it, and (for the first
    /// [`MAX_ZOOMED`]) a timeline of its rows zoomed onto the window.
    fn violation(&self, s: &mut String, i: usize, checker: &str, v: &Violation) {
        let h = &self.history;
        // The first is open; the others fold to their one-line summary (a native <details>,
        // no script), so the whole timeline still starts on the first screen.
        let open = if i == 0 { " open" } else { "" };
        let _ = writeln!(s, "<details class=\"violation\" id=\"v{}\"{open}>", i + 1);
        let key = v.key.as_ref().map(|k| format!(" [{}]", xml(k))).unwrap_or_default();
        let _ = writeln!(
            s,
            "<summary><b>V{} {}</b>{key}: <span class=\"msg\">{}</span></summary><p>window {:.1}..{:.1} ms, {} ops; below, zoomed onto it: the rows of its ops, its ops outlined and numbered</p>",
            i + 1,
            xml(checker),
            xml(&v.message),
            v.start_ns as f64 / 1e6,
            v.end_ns as f64 / 1e6,
            v.ops.len()
        );
        let lines: Vec<String> = h.ops_of(&v.ops).map(|o| o.describe()).collect();
        let nemeses: Vec<String> = h
            .nemesis
            .iter()
            .filter(|e| e.start_ns <= v.end_ns && e.end_ns.is_none_or(|end| end >= v.start_ns))
            .map(|e| format!("during nemesis {}: {}", e.kind, e.detail))
            .collect();
        let _ =
            writeln!(s, "<pre>{}</pre>", xml(&lines.iter().chain(&nemeses).cloned().collect::<Vec<_>>().join("\n")));
        if i < MAX_ZOOMED && !v.ops.is_empty() {
            let marked: HashSet<OpId> = v.ops.iter().copied().collect();
            let all = rows(h, &v.ops, MAX_KEYS);
            let mine: Vec<_> = all.into_iter().filter(|r| r.ops.iter().any(|o| marked.contains(o))).collect();
            let pad = ((v.end_ns - v.start_ns) / 5).max(1_000_000);
            let anomalies = [(v.start_ns, v.end_ns, format!("V{}", i + 1))];
            let t = Timeline {
                history: h,
                rows: &mine,
                from_ns: v.start_ns.saturating_sub(pad),
                to_ns: v.end_ns + pad,
                end_ns: self.end_ns(),
                marked: &marked,
                anomalies: &anomalies,
                label_marked: true,
            };
            s.push_str(&t.svg().0);
        }
        s.push_str("</details>\n");
    }

    /// The whole history: every row (the anomalies' rows first), every nemesis window, every
    /// anomaly's window shaded and its ops outlined.
    fn whole(&self, s: &mut String, violations: &[(&str, &Violation)]) {
        let h = &self.history;
        let first: Vec<OpId> = violations.iter().flat_map(|(_, v)| v.ops.iter().copied()).collect();
        let marked: HashSet<OpId> = first.iter().copied().collect();
        let all = rows(h, &first, MAX_KEYS);
        let anomalies: Vec<(u64, u64, String)> =
            violations.iter().enumerate().map(|(i, (_, v))| (v.start_ns, v.end_ns, format!("V{}", i + 1))).collect();
        let t = Timeline {
            history: h,
            rows: &all,
            from_ns: 0,
            to_ns: self.end_ns(),
            end_ns: self.end_ns(),
            marked: &marked,
            anomalies: &anomalies,
            label_marked: false,
        };
        let (svg, note) = t.svg();
        let _ = writeln!(s, "<h2>Timeline</h2>");
        let _ = writeln!(
            s,
            "<p class=\"legend\">one row per {} (the rows of the anomalies first); each op a bar from invocation to completion: <i><span style=\"background:#3f9b4a\"></span>ok</i> <i><span style=\"background:#e07b7b\"></span>fail</i> <i><span style=\"background:#f0a030\"></span>unknown (faded on to the end)</i> <i><span style=\"background:rgba(59,120,196,.25)\"></span>nemesis window</i> <i><span style=\"border:2px dashed #d0108a\"></span>anomaly window, its ops outlined</i>. Hover a bar for the op. <small class=\"note\">To scale over the whole run; at most {MAX_ROWS} rows and {MAX_OPS} ops, a bar at least 1.5 px wide. {}</small></p>",
            if rows_by_key(&all) { "key and process" } else { "process" },
            xml(&note)
        );
        s.push_str(&svg);
    }

    /// Where the timelines end: the last completion, nemesis end or heal.
    fn end_ns(&self) -> u64 {
        let h = &self.history;
        let ops = h.ops.iter().map(|o| o.complete_ns).max().unwrap_or(0);
        let nem = h.nemesis.iter().map(|e| e.end_ns.unwrap_or(e.start_ns)).max().unwrap_or(0);
        ops.max(nem).max(h.healed_ns).max(1)
    }
}

/// Whether the rows are per key (their labels name one).
fn rows_by_key(rows: &[timeline::Row]) -> bool {
    rows.first().is_some_and(|r| r.label.contains('·'))
}

#[cfg(test)]
mod tests;

//! The report's timelines as inline SVG: one row per process (grouped per key when the ops
//! have keys, as the register's), each op a bar from invocation to completion coloured by its
//! outcome (an unknown op's bar runs on, faded, to the end: it may take effect any time), the
//! nemesis windows as shaded bands with their names, and the ops of a violation outlined.
//! Every bar carries a `<title>` (the op's one-line description), so hovering shows it.

use std::collections::{BTreeMap, HashSet};
use std::fmt::Write as _;

use crate::history::{History, OpId, Outcome};
use crate::report::xml;

/// Rows drawn at most in one timeline; the rest are counted in a note.
pub const MAX_ROWS: usize = 120;
/// Ops drawn at most in one timeline (rows are taken whole until this many are drawn).
pub const MAX_OPS: usize = 20_000;

const LABEL_W: f64 = 150.0;
const PLOT_W: f64 = 1150.0;
const ROW_H: f64 = 13.0;
const BAR_H: f64 = 9.0;
/// Room above the rows for the nemesis names and the time axis.
const HEAD_H: f64 = 44.0;

/// The process of the final phase's row.
const FINAL: u64 = u64::MAX;

/// One row of a timeline: a process's ops on one key (or all its ops).
#[derive(Debug, Clone)]
pub struct Row {
    pub label: String,
    pub ops: Vec<OpId>,
}

/// The rows of `history`: per key then process when the ops have at most `max_keys` keys,
/// else per process, the final phase's ops in a row of their own (`final`); the rows holding any of `first` come first, in `first`'s order.
pub fn rows(history: &History, first: &[OpId], max_keys: usize) -> Vec<Row> {
    let keys: HashSet<&str> = history.ops.iter().filter_map(|o| o.key.as_deref()).collect();
    let by_key = !keys.is_empty() && keys.len() <= max_keys;
    let mut groups: BTreeMap<(String, u64), Vec<OpId>> = BTreeMap::new();
    for o in &history.ops {
        let key = if by_key { o.key.clone().unwrap_or_default() } else { String::new() };
        // The final phase runs each read on a fresh session: one row for all of them (per
        // key), after the processes, rather than a row per session holding one short bar.
        let process = if o.final_phase { FINAL } else { o.process };
        groups.entry((key, process)).or_default().push(o.id);
    }
    let label = |(key, p): &(String, u64)| {
        let p = if *p == FINAL { "final".to_string() } else { format!("p{p}") };
        if key.is_empty() {
            p
        } else {
            format!("{key} · {p}")
        }
    };
    let mut rows: Vec<(usize, Row)> = groups
        .iter()
        .map(|(g, ops)| {
            let rank = ops.iter().filter_map(|id| first.iter().position(|f| f == id)).min().unwrap_or(usize::MAX);
            (rank, Row { label: label(g), ops: ops.clone() })
        })
        .collect();
    // Stable: rows of the same rank keep key-then-process order.
    rows.sort_by_key(|(rank, _)| *rank);
    rows.into_iter().map(|(_, r)| r).collect()
}

/// A timeline to draw: which rows, over which span of time, with what marked.
pub struct Timeline<'a> {
    pub history: &'a History,
    pub rows: &'a [Row],
    /// The span drawn, ns since the run started.
    pub from_ns: u64,
    pub to_ns: u64,
    /// Where an unknown op's bar ends (the end of the run).
    pub end_ns: u64,
    /// Ops to outline (a violation's window).
    pub marked: &'a HashSet<OpId>,
    /// Windows to shade as anomalies: (start, end, label).
    pub anomalies: &'a [(u64, u64, String)],
    /// Write each marked op's id beside its bar (the zoomed views).
    pub label_marked: bool,
}

impl Timeline<'_> {
    /// The SVG, and a note saying what was left out (empty when nothing was).
    pub fn svg(&self) -> (String, String) {
        let (mut drawn_rows, mut drawn_ops) = (0, 0);
        for r in self.rows.iter().take(MAX_ROWS) {
            if drawn_ops + r.ops.len() > MAX_OPS && drawn_rows > 0 {
                break;
            }
            drawn_rows += 1;
            drawn_ops += r.ops.len();
        }
        let rows = &self.rows[..drawn_rows];
        let height = HEAD_H + rows.len() as f64 * ROW_H + 8.0;
        let width = LABEL_W + PLOT_W + 10.0;
        let mut s = String::new();
        let _ = writeln!(
            s,
            r#"<svg class="timeline" xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}">"#
        );
        for (i, _) in rows.iter().enumerate().filter(|(i, _)| i % 2 == 1) {
            let y = HEAD_H + i as f64 * ROW_H;
            let _ = writeln!(s, r#"<rect class="stripe" x="0" y="{y}" width="{width}" height="{ROW_H}"/>"#);
        }
        self.axis(&mut s, height);
        self.bands(&mut s, height);
        for (i, row) in rows.iter().enumerate() {
            let y = HEAD_H + i as f64 * ROW_H;
            let _ = writeln!(
                s,
                r#"<text class="row" x="{}" y="{}">{}</text>"#,
                LABEL_W - 6.0,
                y + ROW_H - 3.0,
                xml(&row.label)
            );
            for op in self.history.ops_of(&row.ops) {
                self.bar(&mut s, op, y);
            }
        }
        s.push_str("</svg>\n");
        let (left_rows, left_ops) = (self.rows.len() - drawn_rows, self.rows[drawn_rows..].iter().map(|r| r.ops.len()));
        let note = if left_rows == 0 {
            String::new()
        } else {
            format!(
                "{left_rows} more rows ({} ops) not drawn: a timeline shows at most {MAX_ROWS} rows and {MAX_OPS} ops (the --json report has the whole history).",
                left_ops.sum::<usize>()
            )
        };
        (s, note)
    }

    /// The x of time `t` (clamped to the plot).
    fn x(&self, t: u64) -> f64 {
        let span = self.to_ns.saturating_sub(self.from_ns).max(1) as f64;
        let t = t.clamp(self.from_ns, self.to_ns);
        LABEL_W + (t - self.from_ns) as f64 / span * PLOT_W
    }

    /// Ticks at a round step in ms, about ten of them, with grid lines.
    fn axis(&self, s: &mut String, height: f64) {
        let span_ms = (self.to_ns.saturating_sub(self.from_ns)) as f64 / 1e6;
        let raw = (span_ms / 10.0).max(1e-3);
        let mag = 10f64.powf(raw.log10().floor());
        let step = [1.0, 2.0, 5.0, 10.0].iter().map(|m| m * mag).find(|st| *st >= raw).unwrap_or(10.0 * mag);
        let mut t = (self.from_ns as f64 / 1e6 / step).ceil() * step;
        while t * 1e6 <= self.to_ns as f64 {
            let x = self.x((t * 1e6) as u64);
            let label = if step >= 1.0 { format!("{t:.0} ms") } else { format!("{t:.2} ms") };
            let _ = writeln!(s, r#"<line class="grid" x1="{x:.1}" y1="{}" x2="{x:.1}" y2="{height}"/>"#, HEAD_H - 4.0);
            let _ = writeln!(s, r#"<text class="tick" x="{x:.1}" y="{}">{label}</text>"#, HEAD_H - 6.0);
            t += step;
        }
    }

    /// Nemesis windows (blue, their names on top, alternating lines so neighbours do not
    /// overlap) and anomaly windows (red).
    fn bands(&self, s: &mut String, height: f64) {
        for (i, e) in self.history.nemesis.iter().enumerate() {
            let end = e.end_ns.unwrap_or(self.history.healed_ns.max(e.start_ns));
            if end < self.from_ns || e.start_ns > self.to_ns {
                continue;
            }
            let (a, b) = (self.x(e.start_ns), self.x(end));
            let _ = writeln!(
                s,
                r#"<rect class="nemesis" x="{a:.1}" y="0" width="{:.1}" height="{height}"><title>nemesis {}: {} ({:.1}..{:.1} ms)</title></rect>"#,
                (b - a).max(1.0),
                xml(&e.kind),
                xml(&e.detail),
                e.start_ns as f64 / 1e6,
                end as f64 / 1e6
            );
            let _ = writeln!(
                s,
                r#"<text class="nemesis" x="{:.1}" y="{}">{}</text>"#,
                a + 2.0,
                11 + 11 * (i % 2),
                xml(&e.kind)
            );
        }
        for (a, b, label) in self.anomalies {
            let (xa, xb) = (self.x(*a), self.x(*b));
            let _ = writeln!(
                s,
                r#"<rect class="anomaly" x="{:.1}" y="{}" width="{:.1}" height="{}"/><text class="anomaly" x="{:.1}" y="{}">{}</text>"#,
                xa - 1.0,
                HEAD_H - 16.0,
                (xb - xa).max(1.0) + 2.0,
                height - HEAD_H + 16.0,
                xb + 3.0,
                HEAD_H - 18.0,
                xml(label)
            );
        }
    }

    /// One op's bar; an unknown op's faded tail runs from its completion to the end.
    fn bar(&self, s: &mut String, op: &crate::history::Op, y: f64) {
        let end = if op.outcome == Outcome::Unknown { self.end_ns.max(op.complete_ns) } else { op.complete_ns };
        if end < self.from_ns || op.invoke_ns > self.to_ns {
            return;
        }
        let marked = self.marked.contains(&op.id);
        let class = format!("op {}{}", op.outcome.name(), if marked { " marked" } else { "" });
        let (a, b) = (self.x(op.invoke_ns), self.x(op.complete_ns));
        let by = y + (ROW_H - BAR_H) / 2.0;
        let title = xml(&op.describe());
        if op.outcome == Outcome::Unknown && end > op.complete_ns {
            let t = self.x(end);
            let _ = writeln!(
                s,
                r#"<rect class="tail" x="{b:.1}" y="{:.1}" width="{:.1}" height="{}"/>"#,
                by + 2.0,
                (t - b).max(0.0),
                BAR_H - 4.0
            );
        }
        let _ = writeln!(
            s,
            r#"<rect class="{class}" data-op="{}" x="{a:.1}" y="{by:.1}" width="{:.1}" height="{BAR_H}"><title>{title}</title></rect>"#,
            op.id,
            (b - a).max(1.5)
        );
        if marked && self.label_marked {
            let _ = writeln!(
                s,
                r##"<text class="oplabel" x="{:.1}" y="{:.1}">#{}</text>"##,
                b.max(a + 1.5) + 3.0,
                y + ROW_H - 3.0,
                op.id
            );
        }
    }
}

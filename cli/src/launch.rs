//! Where a start spends its time before its first answer. `main` marks when it began, when
//! its arguments were parsed, when logging was set up and when the runtime was built; once a
//! server has printed its address, `announce` logs those phases and the server's own start
//! as one line (target `launch`, level debug, so `RUST_LOG=launch=debug` shows it).
//! `bench --launches` reads that line for docs/performance.md's breakdown; what comes before
//! `main` (exec, the dynamic loader) is the rest of the spawn-to-`imok` time it measures.

use std::sync::OnceLock;
use std::time::Instant;

/// The instants `main` marks, in order.
#[derive(Debug, Clone, Copy)]
pub struct Marks {
    pub began: Instant,
    pub parsed: Instant,
    pub logging: Instant,
    pub runtime: Instant,
}

static MARKS: OnceLock<Marks> = OnceLock::new();

/// Keeps `main`'s marks for [`log_phases`].
pub fn set(marks: Marks) {
    let _ = MARKS.set(marks);
}

/// Logs the phases from `main` to now (the server just announced its address).
pub fn log_phases() {
    let Some(m) = MARKS.get() else { return };
    let now = Instant::now();
    let us = |from: Instant, to: Instant| to.saturating_duration_since(from).as_micros() as u64;
    tracing::debug!(
        target: "launch",
        args_us = us(m.began, m.parsed),
        logging_us = us(m.parsed, m.logging),
        runtime_us = us(m.logging, m.runtime),
        server_us = us(m.runtime, now),
        total_us = us(m.began, now),
        "phases since main"
    );
}

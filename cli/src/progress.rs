//! Progress of long runs (bench rounds, conformance scenarios, chaos runs) on stderr: a bar on
//! a terminal, nothing in CI (`$CI` set) or when stderr is a file or pipe, so logs stay clean.
//! Lines a run prints go through [`indicatif::ProgressBar::suspend`], so they show either way.

use std::io::IsTerminal;

use indicatif::{ProgressBar, ProgressStyle};

/// Whether to draw: stderr is a terminal and `$CI` is unset.
pub fn wanted(stderr_is_terminal: bool, ci: Option<&std::ffi::OsStr>) -> bool {
    stderr_is_terminal && ci.is_none()
}

/// A bar of `len` steps named `what`, or a hidden one (see the module docs).
pub fn bar(len: u64, what: &str) -> ProgressBar {
    if !wanted(std::io::stderr().is_terminal(), std::env::var_os("CI").as_deref()) {
        return ProgressBar::hidden();
    }
    let style = ProgressStyle::with_template("{prefix} [{bar:30}] {pos}/{len} {msg} ({elapsed})")
        .unwrap_or_else(|_| ProgressStyle::default_bar())
        .progress_chars("=> ");
    ProgressBar::new(len).with_style(style).with_prefix(what.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quiet_in_ci_and_off_a_terminal() {
        assert!(wanted(true, None));
        assert!(!wanted(true, Some("true".as_ref())));
        assert!(!wanted(false, None));
        let hidden = bar(3, "x");
        // Tests run with stderr captured: hidden, and suspend still runs what it is given.
        assert!(hidden.is_hidden());
        assert_eq!(hidden.suspend(|| 7), 7);
    }
}

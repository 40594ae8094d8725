//! The log subscriber: level from RUST_LOG (a server logs at `info` by default, a client
//! command at `warn`, so its own output is not buried in the servers' lines), text or JSON,
//! and colours only where a person reads them.

use std::io::IsTerminal;

use tracing_subscriber::EnvFilter;

/// Whether to write ANSI colours: stderr is a terminal and NO_COLOR (https://no-color.org)
/// is unset or empty.
pub fn colours(stderr_is_terminal: bool, no_color: Option<&std::ffi::OsStr>) -> bool {
    stderr_is_terminal && no_color.is_none_or(|v| v.is_empty())
}

/// The default level of a command: `info` for a server, `warn` for a client command, nothing
/// for the simulation (its nodes log every fault it injects into them; what matters reaches
/// the report, and RUST_LOG still turns the lines on).
#[derive(Debug, Clone, Copy)]
pub enum Quiet {
    Server,
    Client,
    Simulation,
}

/// Installs the global subscriber at the default level of `quiet` (unless RUST_LOG says).
pub fn init(format: &str, quiet: Quiet) {
    let default = match quiet {
        Quiet::Server => "info",
        Quiet::Client => "warn",
        Quiet::Simulation => "off",
    };
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| default.into());
    let builder = tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr);
    if format == "json" {
        builder.json().with_ansi(false).init();
    } else {
        let ansi = colours(std::io::stderr().is_terminal(), std::env::var_os("NO_COLOR").as_deref());
        builder.with_ansi(ansi).init();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn colours_only_on_a_terminal_without_no_color() {
        assert!(colours(true, None));
        assert!(colours(true, Some("".as_ref())));
        assert!(!colours(true, Some("1".as_ref())));
        assert!(!colours(false, None));
    }
}

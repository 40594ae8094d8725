//! One exit-status convention for every subcommand (docs/cli.md, "Exit status"), so a script
//! or a CI step can tell "you called it wrong" from "it ran and found a problem" from "it could
//! not get an answer":
//!
//! | status | meaning |
//! |---|---|
//! | 0 | done; for a check (`conform`, `chaos`, `replay`, `publish --reference`, ...), it passed |
//! | 1 | it ran and failed or found a problem: a difference, a violation, a refused start, a request the server refused |
//! | 2 | bad usage: a flag, value, file or combination refused before anything ran (clap's own status for bad flags) |
//! | 3 | no verdict: the target or admin endpoint did not answer, or a check could not decide |

use std::fmt;
use std::process::ExitCode;

/// Why a subcommand failed, which decides its exit status.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CliError {
    /// Exit 1: it ran and failed, or found a problem.
    Failed(String),
    /// Exit 2: refused before anything ran.
    Usage(String),
    /// Exit 3: the other side did not answer, so there is no verdict.
    Unreachable(String),
}

impl CliError {
    /// The exit status of this failure.
    pub fn code(&self) -> u8 {
        match self {
            CliError::Failed(_) => 1,
            CliError::Usage(_) => 2,
            CliError::Unreachable(_) => 3,
        }
    }

    /// Prints the message under `who` (`testkeeper`, `testkeeper chaos`) and gives the status.
    pub fn report(&self, who: &str) -> ExitCode {
        eprintln!("{who}: {self}");
        ExitCode::from(self.code())
    }
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CliError::Failed(m) | CliError::Usage(m) | CliError::Unreachable(m) => f.write_str(m),
        }
    }
}

/// Most errors are plain messages from code that ran: exit 1 unless said otherwise.
impl From<String> for CliError {
    fn from(m: String) -> Self {
        CliError::Failed(m)
    }
}

/// A fault rule that does not parse (`--fault`) is refused before anything runs: exit 2.
impl From<testkeeper_server::faults::RuleError> for CliError {
    fn from(e: testkeeper_server::faults::RuleError) -> Self {
        CliError::Usage(e.to_string())
    }
}

/// A name that is not one of a fixed set (a flavor, a mode) is a usage error: exit 2.
impl From<testkeeper_server::core::unknown_name::UnknownName> for CliError {
    fn from(e: testkeeper_server::core::unknown_name::UnknownName) -> Self {
        CliError::Usage(e.to_string())
    }
}

/// A server that accepts no session is unreachable (exit 3); the rest is a failed run.
impl From<testkeeper_conformance::SuiteError> for CliError {
    fn from(e: testkeeper_conformance::SuiteError) -> Self {
        match e {
            testkeeper_conformance::SuiteError::Connect { .. } => CliError::Unreachable(e.to_string()),
            e => CliError::Failed(e.to_string()),
        }
    }
}

/// A recording or transcript that cannot be read: a failed run (exit 1), naming the file.
impl From<testkeeper_conformance::jsonl::JsonlError> for CliError {
    fn from(e: testkeeper_conformance::jsonl::JsonlError) -> Self {
        CliError::Failed(e.to_string())
    }
}

impl From<&str> for CliError {
    fn from(m: &str) -> Self {
        CliError::Failed(m.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_kind_has_its_status_and_plain_messages_fail_with_1() {
        assert_eq!(CliError::from("x".to_string()).code(), 1);
        assert_eq!(CliError::Usage("x".into()).code(), 2);
        assert_eq!(CliError::Unreachable("x".into()).code(), 3);
        assert_eq!(CliError::Usage("bad --x".into()).to_string(), "bad --x");
    }
}

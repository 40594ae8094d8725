//! One-shot commands through Debian's ZooKeeper CLIs, against any address.
//!
//! Two independent client implementations: the Java `zkCli.sh`
//! (`org.apache.zookeeper.ZooKeeperMain`, the same client library as Java
//! applications) and the C client's `cli_mt` (libzookeeper-mt, which the
//! Python, Go-cgo and C++ worlds often wrap). A server that satisfies both
//! is compatible at a level unit tests of our own codec cannot show.
//!
//! Both take one command per process in batch mode. `cli_mt` also reads
//! commands from stdin, but there they run asynchronously and a trailing
//! `quit` races the last reply (it gets ZCLOSING), so batch mode it is.

use std::net::SocketAddr;
use std::process::Command;
use std::time::Duration;

use crate::env::{CLI_MT, ZKCLI_SH};
use crate::process::{run_bounded, BoundedOutput};

/// Generous: a JVM start is ~0.5 s, but CI machines can be loaded.
const CLI_TIMEOUT: Duration = Duration::from_secs(60);

/// Runs `zkCli.sh -server <addr> <command...>` and returns its output.
///
/// zkCli exits 0 on success and 1 on a failed request ("Node does not
/// exist: /x" on stderr). It prints "Created /x" on stderr and data on
/// stdout, so assert on [`BoundedOutput::combined`]. Panics on timeout.
pub fn zkcli(addr: SocketAddr, command: &[&str]) -> BoundedOutput {
    let mut cmd = Command::new(ZKCLI_SH);
    cmd.arg("-server").arg(addr.to_string()).args(command);
    let out = run_bounded(&mut cmd, b"", CLI_TIMEOUT).expect("spawn zkCli.sh");
    assert!(!out.timed_out(), "zkCli.sh {command:?} against {addr} timed out after {CLI_TIMEOUT:?}: {out:?}");
    out
}

/// Runs `cli_mt -h <addr> -c <command>` (batch mode) and returns its output.
///
/// cli_mt always exits 0; the result is in lines like `/x: rc = -101`
/// (see [`cli_mt_rc`]). Commands: `create [+e|+s|+c] <path>` (data is always
/// "new"), `set <path> <data>`, `get`, `ls`, `ls2`, `delete`, `sync`.
/// Avoid `exists`/`myid` here: in batch mode they never terminate.
pub fn cli_mt(addr: SocketAddr, command: &str) -> BoundedOutput {
    let mut cmd = Command::new(CLI_MT);
    cmd.arg("-h").arg(addr.to_string()).arg("-c").arg(command);
    let out = run_bounded(&mut cmd, b"", CLI_TIMEOUT).expect("spawn cli_mt");
    assert!(!out.timed_out(), "cli_mt -c {command:?} against {addr} timed out after {CLI_TIMEOUT:?}: {out:?}");
    out
}

/// The first `rc = N` result code cli_mt printed for a request, if any
/// (0 = ZOK, -101 = ZNONODE, -110 = ZNODEEXISTS, -111 = ZNOTEMPTY, ...).
pub fn cli_mt_rc(output: &str) -> Option<i32> {
    output.lines().find_map(|line| {
        let (_, rest) = line.split_once("rc = ")?;
        let num: String = rest.chars().take_while(|c| *c == '-' || c.is_ascii_digit()).collect();
        num.parse().ok()
    })
}

/// The children `zkCli.sh ls` printed, from its `[a, b, c]` listing. zkCli's event thread
/// prints its connection event (`WATCHER::`, `WatchedEvent ...`) while the listing is being
/// written, and the listing goes out in pieces, so the event can land inside it (seen once in
/// CI: `[keeper, zkcli, zookeeper` / `WATCHER::` / `]`): those lines are left out first.
pub fn zkcli_ls_children(stdout: &str) -> Option<Vec<String>> {
    let lines: Vec<&str> = (stdout.lines().map(str::trim))
        .filter(|l| !l.is_empty() && *l != "WATCHER::" && !l.starts_with("WatchedEvent "))
        .collect();
    let joined: String = lines[lines.iter().position(|l| l.starts_with('['))?..].concat();
    let end = joined.find(']')?;
    let inner = &joined[1..end];
    Some(if inner.is_empty() { Vec::new() } else { inner.split(", ").map(str::to_string).collect() })
}

/// The value of a `key = value` line in zkCli's stat output.
pub fn zkcli_stat_field<'a>(stdout: &'a str, key: &str) -> Option<&'a str> {
    stdout.lines().find_map(|line| {
        let (k, v) = line.split_once(" = ")?;
        (k.trim() == key).then(|| v.trim())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_a_zkcli_listing_even_with_the_connection_event_inside_it() {
        let interleaved = "Connecting to 127.0.0.1:1\n[keeper, zkcli, zookeeper\nWATCHER::\n]\n\nWatchedEvent state:SyncConnected type:None path:null\n";
        assert_eq!(zkcli_ls_children(interleaved).unwrap(), ["keeper", "zkcli", "zookeeper"]);
        let plain =
            "Connecting to 127.0.0.1:1\n\nWATCHER::\n\nWatchedEvent state:SyncConnected type:None path:null\n[a, b]\n";
        assert_eq!(zkcli_ls_children(plain).unwrap(), ["a", "b"]);
        assert_eq!(zkcli_ls_children("[]\n").unwrap(), Vec::<String>::new());
        assert_eq!(zkcli_ls_children("Connecting\n"), None);
    }

    #[test]
    fn parses_cli_mt_result_codes() {
        assert_eq!(cli_mt_rc("Batch mode: get /x\n/x: rc = -101\n\nStat:\nnull\n"), Some(-101));
        assert_eq!(cli_mt_rc("[/cmt]: rc = 0\n\tname = /cmt\n"), Some(0));
        assert_eq!(cli_mt_rc("/cmt: rc = 0 Stat:\n"), Some(0));
        assert_eq!(cli_mt_rc("nothing here"), None);
    }

    #[test]
    fn parses_zkcli_listings_and_stats() {
        assert_eq!(
            zkcli_ls_children("Connecting\n[child, seq-0000000001]\n"),
            Some(vec!["child".to_string(), "seq-0000000001".to_string()])
        );
        assert_eq!(zkcli_ls_children("[]\n"), Some(vec![]));
        let stat = "cZxid = 0x2f\ndataVersion = 1\nephemeralOwner = 0x0\n";
        assert_eq!(zkcli_stat_field(stat, "dataVersion"), Some("1"));
        assert_eq!(zkcli_stat_field(stat, "ephemeralOwner"), Some("0x0"));
        assert_eq!(zkcli_stat_field(stat, "numChildren"), None);
    }
}

//! The four-letter words that list connections and watches: `cons`, the clients of `stat`,
//! `wchs`, `wchc`, `wchp`, each in its flavor's layout.
//!
//! ZooKeeper lists the asking connection too (`cons` and `stat` show it as
//! ` /IP:PORT[0](queued=0,recved=1,sent=0)`: it has sent its word and no session), dumps only
//! its data-watch table in `wch*` and ends `wchc`/`wchp` with a newline even when empty
//! (`FourLetterCommands`, `DataTree.dumpWatches`; measured on 3.8.0). Keeper skips a
//! connection that has not finished its handshake (`KeeperTCPHandler::dumpStats`) and dumps
//! every watch table with no trailing newline (`KeeperStorage::dumpWatches`).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::net::SocketAddr;

use crate::core::flavor::Flavor;
use crate::engine::Engine;

fn zookeeper(e: &Engine) -> bool {
    e.cfg.flavor == Flavor::Zookeeper
}

/// The asking connection's line, when the flavor lists it.
fn asker_line(e: &Engine, asker: Option<SocketAddr>) -> Option<String> {
    asker.filter(|_| zookeeper(e)).map(|a| format!(" /{a}[0](queued=0,recved=1,sent=0)"))
}

/// `stat`'s `Clients:` block.
pub fn clients(e: &Engine, asker: Option<SocketAddr>) -> String {
    let mut s = String::from("Clients:\n");
    for c in e.conns.values() {
        if zookeeper(e) {
            let _ = writeln!(s, " /{}[1](queued=0,recved={},sent={})", c.peer, c.received, c.sent);
        } else {
            let _ = writeln!(s, " {}(recved={},sent={})", c.peer, c.received, c.sent);
        }
    }
    if let Some(line) = asker_line(e, asker) {
        s.push_str(&line);
        s.push('\n');
    }
    s.push('\n');
    s
}

/// `cons`: one line per connection, then an empty line.
pub fn cons(e: &Engine, asker: Option<SocketAddr>) -> String {
    if !zookeeper(e) {
        return keeper_cons(e);
    }
    let now = e.clock.now_ms();
    let zk = zookeeper(e);
    let mut out = String::new();
    for c in e.conns.values() {
        let head = if zk { format!(" /{}[1](queued=0,", c.peer) } else { format!(" {}(", c.peer) };
        let _ = writeln!(
            out,
            "{head}recved={},sent={},sid=0x{:x},lop={},est={},to={},lcxid=0x{:x},lzxid=0x{:x},lresp={},llat={})",
            c.received,
            c.sent,
            c.session,
            c.last_op,
            c.established_ms,
            e.sessions.timeout_ms(c.session),
            c.last_xid,
            c.last_zxid,
            now,
            c.last_latency_ms
        );
    }
    if let Some(line) = asker_line(e, asker) {
        out.push_str(&line);
        out.push('\n');
    }
    out.push('\n');
    out
}

/// Keeper's `cons` (`KeeperTCPHandler::dumpStats`): a connection without a session shows only
/// its counts; one with a session its id, last op (Keeper's op names), establishment, timeout,
/// last cxid (while there is one), last zxid and response time as 16-digit hex and ms, and its
/// latencies. `crst` empties the last op as Keeper's `EMPTY_LAST_OP` does.
fn keeper_cons(e: &Engine) -> String {
    let mut out = String::new();
    for c in e.conns.values() {
        let _ = write!(out, " {}(recved={},sent={}", c.peer, c.received, c.sent);
        if c.session != 0 {
            let to = e.sessions.timeout_ms(c.session);
            let lop =
                testkeeper_wire::OpCode::from_name(c.last_op).map_or(c.last_op, testkeeper_wire::OpCode::keeper_name);
            let _ = write!(out, ",sid=0x{:016x},lop={lop},est={},to={to}", c.session, c.established_ms);
            if c.last_xid >= 0 {
                let _ = write!(out, ",lcxid=0x{:016x}", c.last_xid);
            }
            let l = &c.latency;
            let _ = write!(
                out,
                ",lzxid=0x{:016x},lresp={},llat={},minlat={},avglat={},maxlat={}",
                c.last_zxid,
                c.last_response_ms,
                c.last_latency_ms,
                l.min,
                l.avg(),
                l.max
            );
        }
        out.push_str(")\n");
    }
    out.push('\n');
    out
}

/// The (path, session) pairs the flavor's `wch*` words show.
fn entries(e: &Engine) -> Vec<(String, i64)> {
    if zookeeper(e) {
        e.watches.data_entries()
    } else {
        e.watches.entries()
    }
}

/// `wchs`: sessions, paths and watches counted.
pub fn wchs(e: &Engine) -> String {
    let entries = entries(e);
    let mut paths: Vec<&String> = entries.iter().map(|(p, _)| p).collect();
    paths.dedup();
    let mut sessions: Vec<i64> = entries.iter().map(|(_, s)| *s).collect();
    sessions.sort_unstable();
    sessions.dedup();
    format!("{} connections watching {} paths\nTotal watches:{}\n", sessions.len(), paths.len(), entries.len())
}

/// `wchc` (by session) or `wchp` (by path).
pub fn wch(e: &Engine, by_path: bool) -> String {
    let mut out = String::new();
    if by_path {
        let mut by: BTreeMap<String, Vec<i64>> = BTreeMap::new();
        for (p, s) in entries(e) {
            by.entry(p).or_default().push(s);
        }
        for (p, ss) in by {
            let _ = writeln!(out, "{p}");
            for s in ss {
                let _ = writeln!(out, "\t0x{s:x}");
            }
        }
    } else {
        let mut by: BTreeMap<i64, Vec<String>> = BTreeMap::new();
        for (p, s) in entries(e) {
            by.entry(s).or_default().push(p);
        }
        for (s, ps) in by {
            let _ = writeln!(out, "0x{s:x}");
            for p in ps {
                let _ = writeln!(out, "\t{p}");
            }
        }
    }
    if zookeeper(e) {
        out.push('\n');
    }
    out
}

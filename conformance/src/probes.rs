//! Steps that are not one request of a session: four-letter words, raw request frames, and the
//! waits (session expiry, container and TTL collection), each turned into a result that does
//! not depend on the deployment (counts, versions and addresses are left out).

use std::collections::BTreeSet;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use bytes::BytesMut;
use serde_json::{json, Value};
use testkeeper_wire::client::{Client, ClientError, ConnectOptions};
use testkeeper_wire::frame::{put_frame, put_record, split_frame, DEFAULT_MAX_FRAME};
use testkeeper_wire::jute::{Decode, Encode, Reader};
use testkeeper_wire::records::header::{ReplyHeader, RequestHeader};
use testkeeper_wire::Acl;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::reply::code_name;

/// Bound on one four-letter word or raw exchange.
const PROBE_TIMEOUT: Duration = Duration::from_secs(5);

/// How long a raw step waits for the server to close the connection after its reply.
const CLOSE_GRACE: Duration = Duration::from_millis(500);

/// How often the waits look.
const POLL: Duration = Duration::from_millis(100);

/// `mntr` keys every ZooKeeper-protocol server reports (Keeper's 19 are a subset of
/// ZooKeeper's ~100): which of them are present is compared, never their values.
const MNTR_KEYS: &[&str] = &[
    "zk_version",
    "zk_avg_latency",
    "zk_max_latency",
    "zk_min_latency",
    "zk_packets_received",
    "zk_packets_sent",
    "zk_num_alive_connections",
    "zk_outstanding_requests",
    "zk_server_state",
    "zk_znode_count",
    "zk_watch_count",
    "zk_ephemerals_count",
    "zk_approximate_data_size",
    "zk_open_file_descriptor_count",
    "zk_max_file_descriptor_count",
];

/// `conf` and `envi` keys compared: the ones both ZooKeeper-protocol servers of a flavor report,
/// not the implementation's own (a JVM's `java.*`, Keeper's storage paths).
const CONF_KEYS: &[&str] = &["clientPort", "maxClientCnxns", "maxSessionTimeout", "minSessionTimeout"];
const ENVI_KEYS: &[&str] = &["host.name", "os.arch", "os.name", "user.dir", "zookeeper.version"];

/// Sends `word` and normalizes the answer: short fixed answers verbatim, key/value reports as
/// their sorted keys, counting reports with every number replaced by `N`.
pub async fn four_letter_word(addr: SocketAddr, word: &str) -> Value {
    let text = match raw_4lw(addr, word).await {
        Ok(t) => t,
        Err(e) => return json!({"client_error": e.to_string()}),
    };
    if text.is_empty() {
        return json!({"reply": "none (connection closed)"});
    }
    if text.contains("is not executed because it is not in the whitelist") {
        return json!({"reply": "not in the whitelist"});
    }
    match word {
        "mntr" => {
            let present: BTreeSet<&str> = text.lines().filter_map(|l| l.split('\t').next()).collect();
            let keys: Vec<&str> = MNTR_KEYS.iter().copied().filter(|k| present.contains(k)).collect();
            json!({"standard_keys": keys})
        }
        "srvr" | "stat" => json!({"keys": keys(&text)}),
        "conf" | "envi" => {
            let standard = if word == "conf" { CONF_KEYS } else { ENVI_KEYS };
            let present = keys(&text);
            let found: Vec<&str> = standard.iter().copied().filter(|k| present.iter().any(|p| p == k)).collect();
            json!({"standard_keys": found})
        }
        "wchs" | "cons" | "dirs" => json!({"shape": shape(&text)}),
        _ => json!({"reply": text}),
    }
}

/// The raw answer to a four-letter word (empty when the server closes without one).
pub(crate) async fn raw_4lw(addr: SocketAddr, word: &str) -> std::io::Result<String> {
    let io = async {
        let mut s = TcpStream::connect(addr).await?;
        s.write_all(word.as_bytes()).await?;
        let mut out = Vec::new();
        s.read_to_end(&mut out).await?;
        Ok(String::from_utf8_lossy(&out).into_owned())
    };
    tokio::time::timeout(PROBE_TIMEOUT, io).await.unwrap_or_else(|_| Err(std::io::ErrorKind::TimedOut.into()))
}

/// The keys of `key: value` / `key=value` lines, sorted; indented lines (per-client lists) and
/// lines with no separator are left out.
fn keys(text: &str) -> Vec<String> {
    let mut out: BTreeSet<String> = BTreeSet::new();
    for l in text.lines().filter(|l| !l.starts_with([' ', '\t']) && !l.trim().is_empty()) {
        let cut = l.find([':', '=']).unwrap_or(l.len());
        if cut < l.len() {
            out.insert(l[..cut].trim().to_string());
        }
    }
    out.into_iter().collect()
}

/// The text with runs of digits (and hex after `0x`) replaced by `N`, and per-client lines
/// (which depend on who else is connected) dropped.
fn shape(text: &str) -> String {
    let mut out = String::new();
    for l in text.lines().filter(|l| !l.starts_with([' ', '\t', '/'])) {
        let mut prev_digit = false;
        for c in l.chars() {
            let d = c.is_ascii_digit();
            if !d {
                out.push(c);
            } else if !prev_digit {
                out.push('N');
            }
            prev_digit = d;
        }
        out.push('\n');
    }
    out
}

/// Sends one request frame with `op` and `body` on a fresh session, and reports the reply's
/// code (or none) and whether the connection stays open after it (a ping is answered).
pub async fn raw_request(addr: SocketAddr, op: i32, body: &[u8]) -> Value {
    match tokio::time::timeout(PROBE_TIMEOUT * 2, raw_exchange(addr, op, body)).await {
        Ok(Ok(v)) => v,
        Ok(Err(e)) => json!({"client_error": e.to_string()}),
        Err(_) => json!({"client_error": "no answer within 10 s"}),
    }
}

async fn raw_exchange(addr: SocketAddr, op: i32, body: &[u8]) -> std::io::Result<Value> {
    let mut s = TcpStream::connect(addr).await?;
    let mut out = BytesMut::new();
    put_record(&mut out, &ConnectOptions { read_only: None, ..Default::default() }.connect_request());
    s.write_all(&out).await?;
    let mut buf = BytesMut::new();
    if read_frame(&mut s, &mut buf).await?.is_none() {
        return Ok(json!({"handshake": "refused"}));
    }
    let send = |xid: i32, op: i32, body: &[u8]| {
        let mut out = BytesMut::new();
        put_frame(&mut out, |o| {
            RequestHeader { xid, op }.encode(o);
            o.extend_from_slice(body);
        });
        out
    };
    s.write_all(&send(1, op, body)).await?;
    let reply = match tokio::time::timeout(PROBE_TIMEOUT, read_frame(&mut s, &mut buf)).await {
        Ok(Ok(Some(frame))) => match ReplyHeader::decode(&mut Reader::new(&frame)) {
            Ok(h) => json!({"err": code_name(h.err)}),
            Err(e) => json!({"undecodable": e.to_string()}),
        },
        Ok(Ok(None)) | Ok(Err(_)) => return Ok(json!({"reply": "none", "after": "closed"})),
        Err(_) => json!("none within 5 s"),
    };
    // A server that closes after the reply does so at once: wait briefly for the end of the
    // stream before asking, so a close that is still on its way is not raced by the ping.
    if let Ok(Ok(None)) = tokio::time::timeout(CLOSE_GRACE, read_frame(&mut s, &mut buf)).await {
        return Ok(json!({"reply": reply, "after": "closed"}));
    }
    // Still open? A ping (xid -2, op 11) is answered only on a live connection.
    let _ = s.write_all(&send(-2, 11, &[])).await;
    let after = match tokio::time::timeout(PROBE_TIMEOUT, read_frame(&mut s, &mut buf)).await {
        Ok(Ok(Some(_))) => "open",
        _ => "closed",
    };
    Ok(json!({"reply": reply, "after": after}))
}

/// One frame's body, or `None` at end of stream.
async fn read_frame(s: &mut TcpStream, buf: &mut BytesMut) -> std::io::Result<Option<Vec<u8>>> {
    loop {
        match split_frame(buf, DEFAULT_MAX_FRAME + 4096) {
            Ok(Some(n)) => return Ok(Some(buf.split_to(n)[4..].to_vec())),
            Ok(None) => {}
            Err(e) => return Err(std::io::Error::other(e.to_string())),
        }
        if s.read_buf(buf).await? == 0 {
            return Ok(None);
        }
    }
}

/// Polls `path` through `c` until it is gone, for at most `bound`.
pub async fn wait_gone(c: &Client, path: &str, bound: Duration) -> Value {
    let deadline = Instant::now() + bound;
    loop {
        match c.exists(path, false).await {
            Ok(None) => return json!({"gone": true}),
            Ok(Some(_)) if Instant::now() < deadline => tokio::time::sleep(POLL * 2).await,
            Ok(Some(_)) => return json!({"gone": false, "waited_ms": bound.as_millis() as u64}),
            Err(e) => return json!({"client_error": e.to_string()}),
        }
    }
}

/// Creates an ephemeral probe node through `session`, for [`wait_expired`].
///
/// # Errors
/// [`ProbeError`]: the create failed.
pub async fn plant_probe(session: &Client, probe: &str) -> Result<(), ProbeError> {
    session
        .create(probe, b"", &Acl::open(), 1)
        .await
        .map(drop)
        .map_err(|source| ProbeError { probe: probe.to_string(), source })
}

/// The expiry probe of a scenario's `expire` step could not be created.
#[derive(Debug, Clone, thiserror::Error)]
#[error("expiry probe {probe}: {source}")]
pub struct ProbeError {
    pub probe: String,
    pub source: ClientError,
}

/// Waits until `probe` (an ephemeral of the dropped session) is gone, as seen by `observer`:
/// then the server has expired the session. Bounded by twice the timeout plus 10 s.
pub async fn wait_expired(observer: &Client, probe: &str, timeout_ms: i32) -> Value {
    let bound = Duration::from_millis(timeout_ms.max(0) as u64 * 2) + Duration::from_secs(10);
    match wait_gone(observer, probe, bound).await {
        v if v["gone"] == true => json!({"expired": true}),
        v if v.get("gone").is_some() => json!({"expired": false}),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_and_shapes_leave_values_out() {
        let srvr = "Zookeeper version: 3.8.0\nLatency min/avg/max: 0/0.1/3\nMode: standalone\nNode count: 5\n";
        assert_eq!(keys(srvr), vec!["Latency min/avg/max", "Mode", "Node count", "Zookeeper version"]);
        assert_eq!(
            shape("1 connections watching 23 paths\nTotal watches:45\n"),
            "N connections watching N paths\nTotal watches:N\n"
        );
        assert_eq!(keys("Clients:\n /127.0.0.1:5(queued=0)\n\nZxid: 0x5\n"), vec!["Clients", "Zxid"]);
    }
}

//! `serve --cluster-config FILE`: the part of ClickHouse Keeper's XML configuration that a
//! testkeeper node understands, so the `keeper_config.xml` of a Keeper cluster (the one in
//! `compose/`, say) starts the same cluster of testkeeper processes.
//!
//! Read (paths under `<clickhouse>`, or the older `<yandex>`; see docs/cluster.md):
//! `keeper_server/{server_id, tcp_port, digest_enabled, four_letter_word_allow_list}`,
//! `keeper_server/http_control/port`, `listen_host`,
//! `keeper_server/raft_configuration/server/{id, hostname, port}`, and of
//! `keeper_server/coordination_settings`: `heart_beat_interval_ms`,
//! `election_timeout_lower_bound_ms`, `election_timeout_upper_bound_ms`, `session_timeout_ms`,
//! `min_session_timeout_ms`, `snapshot_distance`, `snapshots_to_keep`, `reserved_log_items`,
//! `force_sync`, `stale_log_gap`. Anything else under `keeper_server` is listed in
//! [`KeeperFile::ignored`] (the caller warns about it); a value that does not parse is an
//! error naming its element.

use std::collections::BTreeMap;
use std::path::Path;

use roxmltree::{Document, Node};
use testkeeper_server::cluster::NodeId;

/// What a Keeper configuration file says, as far as testkeeper uses it.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct KeeperFile {
    pub server_id: Option<NodeId>,
    /// Why `server_id` could not be read (an unset `from_env`, say): an error only when no
    /// `--id` stands in for it, so one file with `from_env` serves every node.
    pub server_id_error: Option<String>,
    pub tcp_port: Option<u16>,
    pub listen_host: Option<String>,
    pub http_port: Option<u16>,
    /// `raft_configuration`: id -> `hostname:port`.
    pub peers: BTreeMap<NodeId, String>,
    pub heartbeat_ms: Option<u64>,
    pub election_lower_ms: Option<u64>,
    pub election_upper_ms: Option<u64>,
    pub session_timeout_ms: Option<i32>,
    pub min_session_timeout_ms: Option<i32>,
    pub snapshot_distance: Option<u64>,
    pub snapshots_to_keep: Option<u64>,
    pub reserved_log_items: Option<u64>,
    pub force_sync: Option<bool>,
    pub stale_log_gap: Option<u64>,
    pub digest_enabled: Option<bool>,
    pub four_letter_words: Option<String>,
    /// Elements under `keeper_server` that testkeeper does not use, by path.
    pub ignored: Vec<String>,
}

/// Reads and parses `path`.
///
/// # Errors
/// The file cannot be read, is not XML, or a value does not parse; the message names the file
/// and the element.
pub fn load(path: &Path) -> Result<KeeperFile, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    parse(&text).map_err(|e| format!("{}: {e}", path.display()))
}

/// Parses a Keeper configuration document.
///
/// # Errors
/// Not XML, no `<keeper_server>`, a value that does not parse, or a `raft_configuration`
/// server without an id, hostname or port (or with an id twice).
pub fn parse(text: &str) -> Result<KeeperFile, String> {
    let doc = Document::parse(text).map_err(|e| format!("not valid XML: {e}"))?;
    let root = doc.root_element();
    if !matches!(root.tag_name().name(), "clickhouse" | "yandex") {
        return Err(format!("the root element is <{}>, not <clickhouse>", root.tag_name().name()));
    }
    let ks = child(root, "keeper_server").ok_or("no <keeper_server> element")?;
    let mut f = KeeperFile { listen_host: text_of(root, "listen_host")?, ..KeeperFile::default() };
    for el in ks.children().filter(Node::is_element) {
        let name = el.tag_name().name();
        match name {
            "server_id" => match number(el, "keeper_server/server_id") {
                Ok(id) => f.server_id = Some(id),
                Err(e) => f.server_id_error = Some(e),
            },
            "tcp_port" => f.tcp_port = Some(number(el, "keeper_server/tcp_port")?),
            "digest_enabled" => f.digest_enabled = Some(boolean(el, "keeper_server/digest_enabled")?),
            "four_letter_word_allow_list" => f.four_letter_words = Some(value(el)?),
            "http_control" => {
                if let Some(p) = child(el, "port") {
                    f.http_port = Some(number(p, "keeper_server/http_control/port")?);
                }
            }
            "raft_configuration" => f.peers = servers(el)?,
            "coordination_settings" => settings(el, &mut f)?,
            other => f.ignored.push(format!("keeper_server/{other}")),
        }
    }
    Ok(f)
}

fn settings(cs: Node, f: &mut KeeperFile) -> Result<(), String> {
    for el in cs.children().filter(Node::is_element) {
        let name = el.tag_name().name();
        let path = format!("coordination_settings/{name}");
        match name {
            "heart_beat_interval_ms" => f.heartbeat_ms = Some(number(el, &path)?),
            "election_timeout_lower_bound_ms" => f.election_lower_ms = Some(number(el, &path)?),
            "election_timeout_upper_bound_ms" => f.election_upper_ms = Some(number(el, &path)?),
            "session_timeout_ms" => f.session_timeout_ms = Some(number(el, &path)?),
            "min_session_timeout_ms" => f.min_session_timeout_ms = Some(number(el, &path)?),
            "snapshot_distance" => f.snapshot_distance = Some(number(el, &path)?),
            "snapshots_to_keep" => f.snapshots_to_keep = Some(number(el, &path)?),
            "reserved_log_items" => f.reserved_log_items = Some(number(el, &path)?),
            "force_sync" => f.force_sync = Some(boolean(el, &path)?),
            "stale_log_gap" => f.stale_log_gap = Some(number(el, &path)?),
            _ => f.ignored.push(format!("keeper_server/{path}")),
        }
    }
    Ok(())
}

fn servers(rc: Node) -> Result<BTreeMap<NodeId, String>, String> {
    let mut peers = BTreeMap::new();
    for s in rc.children().filter(|n| n.is_element() && n.tag_name().name() == "server") {
        let what = |field: &str| format!("raft_configuration/server/{field}");
        let id: NodeId = match child(s, "id") {
            Some(el) => number(el, &what("id"))?,
            None => return Err(format!("a raft_configuration <server> has no <id> (line {})", line(s))),
        };
        if id == 0 {
            return Err(format!("raft_configuration server id 0: ids are positive (line {})", line(s)));
        }
        let host =
            text_of(s, "hostname")?.ok_or_else(|| format!("raft_configuration server {id} has no <hostname>"))?;
        let port: u16 = match child(s, "port") {
            Some(el) => number(el, &what("port"))?,
            None => return Err(format!("raft_configuration server {id} has no <port>")),
        };
        // An IPv6 literal as hostname needs brackets in HOST:PORT.
        let host = if host.contains(':') && !host.starts_with('[') { format!("[{host}]") } else { host };
        if peers.insert(id, format!("{host}:{port}")).is_some() {
            return Err(format!("raft_configuration lists server {id} twice"));
        }
    }
    Ok(peers)
}

fn child<'a, 'i>(n: Node<'a, 'i>, name: &str) -> Option<Node<'a, 'i>> {
    n.children().find(|c| c.is_element() && c.tag_name().name() == name)
}

/// An element's text, or the environment variable its `from_env` names (as ClickHouse's
/// configuration reads it); `from_zk` and `incl` need a ClickHouse server and are refused.
fn value(n: Node) -> Result<String, String> {
    let path = n.tag_name().name();
    if let Some(var) = n.attribute("from_env") {
        return std::env::var(var)
            .map(|v| v.trim().to_string())
            .map_err(|_| format!("<{path}> takes its value from_env=\"{var}\", which is not set (line {})", line(n)));
    }
    if let Some(a) = n.attributes().find(|a| matches!(a.name(), "from_zk" | "incl")) {
        return Err(format!(
            "<{path}> takes its value from {}='{}', which testkeeper does not read",
            a.name(),
            a.value()
        ));
    }
    Ok(n.text().unwrap_or("").trim().to_string())
}

fn text_of(n: Node, name: &str) -> Result<Option<String>, String> {
    Ok(child(n, name).map(value).transpose()?.filter(|v| !v.is_empty()))
}

fn line(n: Node) -> u32 {
    n.document().text_pos_at(n.range().start).row
}

fn number<T: std::str::FromStr>(n: Node, path: &str) -> Result<T, String> {
    let v = value(n)?;
    v.parse().map_err(|_| format!("<{path}> is '{v}', not a number in range (line {})", line(n)))
}

fn boolean(n: Node, path: &str) -> Result<bool, String> {
    match value(n)?.to_ascii_lowercase().as_str() {
        "true" | "1" => Ok(true),
        "false" | "0" => Ok(false),
        v => Err(format!("<{path}> is '{v}', not true or false (line {})", line(n))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const THREE: &str = r#"<clickhouse>
        <listen_host>127.0.0.1</listen_host>
        <logger><level>trace</level></logger>
        <keeper_server>
            <tcp_port>9181</tcp_port>
            <server_id>2</server_id>
            <log_storage_path>/var/lib/log</log_storage_path>
            <digest_enabled>true</digest_enabled>
            <http_control><port>9182</port></http_control>
            <coordination_settings>
                <heart_beat_interval_ms>100</heart_beat_interval_ms>
                <election_timeout_lower_bound_ms>400</election_timeout_lower_bound_ms>
                <election_timeout_upper_bound_ms>800</election_timeout_upper_bound_ms>
                <force_sync>false</force_sync>
                <raft_logs_level>warning</raft_logs_level>
            </coordination_settings>
            <raft_configuration>
                <server><id>1</id><hostname>keeper1</hostname><port>9234</port></server>
                <server><id>2</id><hostname>keeper2</hostname><port>9234</port></server>
                <server><id>3</id><hostname>::1</hostname><port>9236</port></server>
            </raft_configuration>
        </keeper_server>
    </clickhouse>"#;

    #[test]
    fn a_three_node_keeper_config_reads_as_keeper_means_it() {
        let f = parse(THREE).unwrap();
        assert_eq!(f.server_id, Some(2));
        assert_eq!(f.tcp_port, Some(9181));
        assert_eq!(f.http_port, Some(9182));
        assert_eq!(f.listen_host.as_deref(), Some("127.0.0.1"));
        assert_eq!(f.peers.len(), 3);
        assert_eq!(f.peers[&1], "keeper1:9234");
        assert_eq!(f.peers[&3], "[::1]:9236");
        assert_eq!((f.heartbeat_ms, f.election_lower_ms, f.election_upper_ms), (Some(100), Some(400), Some(800)));
        assert_eq!(f.force_sync, Some(false));
        assert_eq!(f.digest_enabled, Some(true));
        assert_eq!(
            f.ignored,
            ["keeper_server/log_storage_path", "keeper_server/coordination_settings/raft_logs_level"]
        );
    }

    #[test]
    fn a_value_can_come_from_the_environment() {
        // PATH is set wherever tests run; the test changes no environment (threads share it).
        let xml =
            r#"<clickhouse><keeper_server><four_letter_word_allow_list from_env="PATH"/></keeper_server></clickhouse>"#;
        let f = parse(xml).unwrap();
        assert_eq!(f.four_letter_words, Some(std::env::var("PATH").unwrap().trim().to_string()));
    }

    #[test]
    fn the_compose_keeper_configs_parse() {
        let compose = Path::new(env!("CARGO_MANIFEST_DIR")).join("../compose");
        let f = load(&compose.join("keeper_config.xml")).unwrap();
        assert_eq!(f.server_id, Some(1));
        assert_eq!(f.peers.len(), 1);
        // The cluster's file takes server_id from KEEPER_SERVER_ID, which tests do not set.
        let f = load(&compose.join("keeper_cluster.xml")).unwrap();
        assert_eq!(f.server_id, None);
        assert!(f.server_id_error.as_deref().is_some_and(|e| e.contains("KEEPER_SERVER_ID")), "{f:?}");
        assert_eq!(f.peers[&3], "keeper3:9234");
        assert_eq!((f.digest_enabled, f.http_port), (Some(true), Some(9182)));
    }

    #[test]
    fn bad_values_name_their_element() {
        for (xml, says) in [
            ("<x/>", "root element is <x>"),
            ("<clickhouse/>", "no <keeper_server>"),
            ("<clickhouse><keeper_server><tcp_port>nine</tcp_port></keeper_server></clickhouse>", "tcp_port> is 'nine'"),
            ("<clickhouse><keeper_server><tcp_port>70000</tcp_port></keeper_server></clickhouse>", "not a number"),
            (
                "<clickhouse><keeper_server><digest_enabled>yes</digest_enabled></keeper_server></clickhouse>",
                "not true or false",
            ),
            (
                "<clickhouse><keeper_server><raft_configuration><server><hostname>a</hostname><port>1</port></server></raft_configuration></keeper_server></clickhouse>",
                "has no <id>",
            ),
            (
                "<clickhouse><keeper_server><raft_configuration><server><id>1</id><port>1</port></server></raft_configuration></keeper_server></clickhouse>",
                "server 1 has no <hostname>",
            ),
            (
                "<clickhouse><keeper_server><raft_configuration><server><id>1</id><hostname>a</hostname><port>1</port></server><server><id>1</id><hostname>b</hostname><port>2</port></server></raft_configuration></keeper_server></clickhouse>",
                "server 1 twice",
            ),
            (
                "<clickhouse><keeper_server><tcp_port from_env=\"TESTKEEPER_UNSET_VAR\"/></keeper_server></clickhouse>",
                "from_env=\"TESTKEEPER_UNSET_VAR\", which is not set",
            ),
            ("<clickhouse><keeper_server><tcp_port incl=\"x\"/></keeper_server></clickhouse>", "incl='x'"),
            ("<clickhouse><keeper_server>", "not valid XML"),
        ] {
            let err = parse(xml).unwrap_err();
            assert!(err.contains(says), "{xml}: {err}");
        }
    }
}

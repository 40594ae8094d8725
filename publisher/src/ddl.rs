//! Distributed DDL on the wire: ClickHouse's `DDLLogEntry` text (version 2, the first with
//! settings), `ExecutionStatus` text, and finding an entry again by its `log_comment` token.
//!
//! The formats follow `DDLLogEntry::toString` and `ExecutionStatus::serializeText`
//! (`<code>\n<escaped message>`); see the DDL-queue notes in docs/publisher.md.

/// Entry version written: 2 is the oldest that carries `settings:`, which the token needs.
pub const ENTRY_VERSION: u64 = 2;

/// One queue entry, as far as the publisher and the simulated hosts need it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DdlEntry {
    pub version: u64,
    pub query: String,
    /// Host ids, `host:port`.
    pub hosts: Vec<String>,
    pub initiator: String,
    /// `settings['log_comment']`.
    pub log_comment: Option<String>,
}

/// ClickHouse's `escape` for one-line text: backslash escapes for `\`, newline, tab, quote.
fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\'' => out.push_str("\\'"),
            c => out.push(c),
        }
    }
    out
}

fn unescape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut it = s.chars();
    while let Some(c) = it.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match it.next() {
            Some('n') => out.push('\n'),
            Some('t') => out.push('\t'),
            Some(o) => out.push(o),
            None => out.push('\\'),
        }
    }
    out
}

impl DdlEntry {
    /// The node data, as `DDLLogEntry::toString` writes it for version 2.
    pub fn to_text(&self) -> String {
        let hosts: Vec<String> = self.hosts.iter().map(|h| format!("'{}'", escape(h))).collect();
        let mut s = format!(
            "version: {}\nquery: {}\nhosts: [{}]\ninitiator: {}\n",
            self.version,
            escape(&self.query),
            hosts.join(","),
            self.initiator
        );
        if let Some(t) = &self.log_comment {
            s.push_str(&format!("settings: log_comment = '{}'\n", escape(t)));
        }
        s
    }

    /// Parses an entry; `None` when a required line is missing or the version is unknown.
    pub fn parse(text: &str) -> Option<DdlEntry> {
        let mut e = DdlEntry {
            version: 0,
            query: String::new(),
            hosts: Vec::new(),
            initiator: String::new(),
            log_comment: None,
        };
        for line in text.lines() {
            let (key, value) = line.split_once(": ").unwrap_or((line.trim_end_matches(':'), ""));
            match key {
                "version" => e.version = value.parse().ok()?,
                "query" => e.query = unescape(value),
                "hosts" => e.hosts = parse_quoted_list(value)?,
                "initiator" => e.initiator = value.to_string(),
                "settings" => e.log_comment = setting(value, "log_comment"),
                _ => {}
            }
        }
        (1..=8).contains(&e.version).then_some(e)
    }
}

/// `['a','b']` into its strings.
fn parse_quoted_list(v: &str) -> Option<Vec<String>> {
    let inner = v.strip_prefix('[')?.strip_suffix(']')?;
    if inner.is_empty() {
        return Some(Vec::new());
    }
    inner.split(',').map(|q| q.trim().strip_prefix('\'')?.strip_suffix('\'').map(unescape)).collect()
}

/// The value of one `name = 'value'` pair in a settings line (`a = 1, log_comment = 'x'`).
fn setting(line: &str, name: &str) -> Option<String> {
    line.split(", ").find_map(|kv| {
        let (k, v) = kv.split_once(" = ")?;
        (k.trim() == name).then(|| unescape(v.trim().trim_start_matches('\'').trim_end_matches('\'')))
    })
}

/// A host's result, as `ExecutionStatus::serializeText` writes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExecutionStatus {
    pub code: i32,
    pub message: String,
}

impl ExecutionStatus {
    /// `<code>\n<escaped message>`.
    pub fn to_text(&self) -> String {
        format!("{}\n{}", self.code, escape(&self.message))
    }

    /// `None` for a malformed status (which the publisher treats as unknown evidence).
    pub fn parse(text: &str) -> Option<ExecutionStatus> {
        let (code, message) = text.split_once('\n')?;
        Some(ExecutionStatus { code: code.parse().ok()?, message: unescape(message) })
    }
}

/// Queue children that are entries, sorted: `query-` names only, as DDLWorker filters them.
pub fn queue_entries(mut names: Vec<String>) -> Vec<String> {
    names.retain(|n| n.starts_with("query-"));
    names.sort();
    names
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entry_round_trips_and_keeps_the_token() {
        let e = DdlEntry {
            version: ENTRY_VERSION,
            query: "EXCHANGE TABLES `db`.`t` AND `db`.`t__g1` -- it's".into(),
            hosts: vec!["h1:9000".into(), "h2:9000".into()],
            initiator: "publisher".into(),
            log_comment: Some("tok-1".into()),
        };
        let text = e.to_text();
        assert!(text.contains("settings: log_comment = 'tok-1'\n"), "{text}");
        assert!(text.starts_with("version: 2\nquery: EXCHANGE"), "{text}");
        assert_eq!(DdlEntry::parse(&text), Some(e));
        let st = ExecutionStatus { code: 0, message: String::new() };
        assert_eq!(st.to_text(), "0\n");
        assert_eq!(
            ExecutionStatus::parse("60\nTable x doesn't exist"),
            Some(ExecutionStatus { code: 60, message: "Table x doesn't exist".into() })
        );
        assert_eq!(ExecutionStatus::parse("garbage"), None);
        assert_eq!(queue_entries(vec!["query-2".into(), "x".into(), "query-1".into()]), vec!["query-1", "query-2"]);
    }
}

//! The fault rule grammar, `KIND[:key=value,...]`, parsed into a [`Rule`].
//!
//! One grammar serves the CLI (`--fault`), the HTTP API (`POST /api/v1/faults`) and the
//! embedding API, so a rule that works in one place works in the others. A parse error names
//! the offending key or value, because the person reading it is usually looking at a CI log.

use std::fmt;
use std::time::Duration;

use testkeeper_wire::ZkError;
use thiserror::Error;

use super::bad_value::BadValue;
use super::matcher::{parse_glob, parse_ops, parse_session, Matcher};

/// The kinds of fault, by their names in the grammar.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Kind {
    DropResponse,
    DropRequest,
    Error,
    Delay,
    Reset,
    ExpireSession,
    Blackhole,
    Refuse,
}

impl Kind {
    /// Every kind, in the order the docs list them.
    pub const ALL: [Kind; 8] = [
        Kind::DropResponse,
        Kind::DropRequest,
        Kind::Error,
        Kind::Delay,
        Kind::Reset,
        Kind::ExpireSession,
        Kind::Blackhole,
        Kind::Refuse,
    ];

    /// The kind's name in the grammar.
    pub fn name(self) -> &'static str {
        match self {
            Kind::DropResponse => "drop-response",
            Kind::DropRequest => "drop-request",
            Kind::Error => "error",
            Kind::Delay => "delay",
            Kind::Reset => "reset",
            Kind::ExpireSession => "expire-session",
            Kind::Blackhole => "blackhole",
            Kind::Refuse => "refuse",
        }
    }

    /// Whether the kind acts on new connections (their handshake) rather than on requests.
    pub fn on_connect(self) -> bool {
        self == Kind::Refuse
    }

    fn from_name(name: &str) -> Option<Kind> {
        Kind::ALL.into_iter().find(|k| k.name() == name)
    }

    /// Whether the server still carries the request out when this kind fires.
    pub fn applies_request(self) -> bool {
        matches!(self, Kind::DropResponse | Kind::Delay)
    }
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// What a fired rule does: its kind with the kind's parameters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// Apply and commit, send no reply, close the connection.
    DropResponse,
    /// Do not apply, send no reply, close the connection.
    DropRequest,
    /// Do not apply; reply with this error code.
    Error(i32),
    /// Apply, and hold the reply (and everything after it on the connection) `base`, plus or
    /// minus up to `jitter` drawn from the seeded generator when the rule fires.
    Delay { base: Duration, jitter: Duration },
    /// Abort the connection (TCP RST) before processing the request.
    Reset,
    /// Expire the request's session instead of processing the request.
    ExpireSession,
    /// Drop the request and everything after it on its connection, unanswered, and keep the
    /// connection open: a network black hole (the session then times out, as in a partition).
    Blackhole,
    /// Close a new connection before its handshake is answered.
    Refuse,
}

impl Action {
    /// The action's kind.
    pub fn kind(self) -> Kind {
        match self {
            Action::DropResponse => Kind::DropResponse,
            Action::DropRequest => Kind::DropRequest,
            Action::Error(_) => Kind::Error,
            Action::Delay { .. } => Kind::Delay,
            Action::Reset => Kind::Reset,
            Action::ExpireSession => Kind::ExpireSession,
            Action::Blackhole => Kind::Blackhole,
            Action::Refuse => Kind::Refuse,
        }
    }

    /// A delay of nothing: it changes no answer, it only logs the requests it matches (the
    /// publisher's chaos sweep uses `delay:ms=0` rules so). Such firings are not counted as
    /// faults in `/metrics`.
    pub fn is_tap(self) -> bool {
        self == Action::Delay { base: Duration::ZERO, jitter: Duration::ZERO }
    }
}

/// A rule that did not parse: the rule text and what is wrong with it.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("bad fault rule '{rule}': {reason}")]
pub struct RuleError {
    pub rule: String,
    pub reason: String,
}

/// One parsed fault rule.
#[derive(Debug, Clone)]
pub struct Rule {
    /// The rule as written (trimmed), shown back by the listing APIs.
    pub text: String,
    pub action: Action,
    /// Which requests the rule considers (op, path, session).
    pub matcher: Matcher,
    /// Fire only on the n-th matching request (1-based).
    pub nth: Option<u64>,
    /// Fire with this probability, drawn from the server's seeded generator.
    pub prob: Option<f64>,
    /// Fire at most this many times.
    pub count: Option<u64>,
}

const KEYS: &str = "op, path, session, nth, prob, count, code (error), ms and jitter (delay)";

/// The longest `ms=` and `jitter=` (one hour): a test that holds a reply longer is waiting
/// for nothing, and the bound keeps `ms + jitter` far inside every integer it is drawn in.
pub const MAX_DELAY_MS: u64 = 3_600_000;

/// The longest `path=` glob, in bytes (ZooKeeper paths in tests are far shorter; the bound
/// keeps the compiled matcher small).
pub const MAX_GLOB_LEN: usize = 1024;

/// The most wildcards and alternatives (`*`, `?`, `[`, `{`, `,` inside braces) in one glob.
pub const MAX_GLOB_PARTS: usize = 64;

impl Rule {
    /// Parses `KIND[:key=value,...]`.
    ///
    /// # Errors
    /// A [`RuleError`] naming the unknown kind, the unknown or repeated key, or the bad value.
    pub fn parse(text: &str) -> Result<Rule, RuleError> {
        let text = text.trim();
        let fail = |reason: String| RuleError { rule: text.to_string(), reason };
        let bad = |e: BadValue| fail(e.to_string());
        let (kind_name, rest) = text.split_once(':').unwrap_or((text, ""));
        let kind_name = kind_name.trim();
        let Some(kind) = Kind::from_name(kind_name) else {
            let names: Vec<&str> = Kind::ALL.iter().map(|k| k.name()).collect();
            return Err(fail(format!("unknown fault kind '{kind_name}' (expected one of: {})", names.join(", "))));
        };
        let mut seen: Vec<&str> = Vec::new();
        let (mut matcher, mut nth, mut prob, mut count, mut code, mut ms, mut jitter) =
            (Matcher::default(), None, None, None, None, None, None);
        for item in split_items(rest) {
            let item = item.trim();
            if item.is_empty() {
                continue;
            }
            let Some((key, value)) = item.split_once('=') else {
                return Err(fail(format!("'{item}' is not key=value (keys: {KEYS})")));
            };
            let (key, value) = (key.trim(), value.trim());
            if seen.contains(&key) {
                return Err(fail(format!("{key}= is given twice")));
            }
            seen.push(key);
            if kind.on_connect() && matches!(key, "op" | "path" | "session") {
                return Err(fail(format!(
                    "{key}= does not apply to {kind} faults: they act on new connections, before any request (keys: nth, prob, count)"
                )));
            }
            match key {
                "op" => matcher.ops = parse_ops(value).map_err(bad)?,
                "path" => matcher.path = parse_glob(value).map_err(bad)?,
                "session" => matcher.session = Some(parse_session(value).map_err(|e| fail(e.to_string()))?),
                "nth" => nth = Some(parse_positive("nth", value).map_err(bad)?),
                "count" => count = Some(parse_positive("count", value).map_err(bad)?),
                "prob" => prob = Some(parse_prob(value).map_err(bad)?),
                "code" if kind == Kind::Error => code = Some(parse_code(value).map_err(bad)?),
                "ms" if kind == Kind::Delay => ms = Some(parse_ms("ms", value).map_err(bad)?),
                "jitter" if kind == Kind::Delay => jitter = Some(parse_ms("jitter", value).map_err(bad)?),
                "code" | "ms" | "jitter" => return Err(fail(format!("{key}= does not apply to {kind} faults"))),
                other => return Err(fail(format!("unknown key '{other}' (keys: {KEYS})"))),
            }
        }
        let action = match kind {
            Kind::DropResponse => Action::DropResponse,
            Kind::DropRequest => Action::DropRequest,
            Kind::Reset => Action::Reset,
            Kind::ExpireSession => Action::ExpireSession,
            Kind::Blackhole => Action::Blackhole,
            Kind::Refuse => Action::Refuse,
            Kind::Error => Action::Error(
                code.ok_or_else(|| fail("error faults need code=<ZooKeeper error code>, e.g. error:code=-4".into()))?,
            ),
            Kind::Delay => Action::Delay {
                base: Duration::from_millis(
                    ms.ok_or_else(|| fail("delay faults need ms=<milliseconds>, e.g. delay:ms=200".into()))?,
                ),
                jitter: Duration::from_millis(jitter.unwrap_or(0)),
            },
        };
        Ok(Rule { text: text.to_string(), action, matcher, nth, prob, count })
    }
}

/// Splits on commas outside `{...}` and `[...]`, so a glob such as `/a/{b,c}` stays whole.
fn split_items(s: &str) -> Vec<&str> {
    let mut items = Vec::new();
    let (mut depth, mut start) = (0i32, 0);
    for (i, c) in s.char_indices() {
        match c {
            '{' | '[' => depth += 1,
            '}' | ']' => depth -= 1,
            ',' if depth <= 0 => {
                items.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    items.push(&s[start..]);
    items
}

fn parse_positive(key: &'static str, value: &str) -> Result<u64, BadValue> {
    match value.parse::<u64>() {
        Ok(n) if n >= 1 => Ok(n),
        _ => Err(BadValue::NotPositive { key, value: value.to_string() }),
    }
}

fn parse_ms(key: &'static str, value: &str) -> Result<u64, BadValue> {
    match value.parse::<u64>() {
        Ok(ms) if ms <= MAX_DELAY_MS => Ok(ms),
        Ok(_) => Err(BadValue::LongDelay { key, value: value.to_string() }),
        Err(_) => Err(BadValue::NotMillis { key, value: value.to_string() }),
    }
}

fn parse_prob(value: &str) -> Result<f64, BadValue> {
    match value.parse::<f64>() {
        Ok(p) if (0.0..=1.0).contains(&p) => Ok(p),
        _ => Err(BadValue::Prob(value.to_string())),
    }
}

/// An error code as a number (`-4`) or a ZooKeeper name (`CONNECTIONLOSS`, any case). Zero is
/// refused: an OK header with an empty body is not a reply any client can decode.
fn parse_code(value: &str) -> Result<i32, BadValue> {
    let code = match value.parse::<i32>() {
        Ok(c) => c,
        Err(_) => ZkError::ALL
            .iter()
            .find(|e| e.name().eq_ignore_ascii_case(value))
            .map(|e| e.code())
            .ok_or_else(|| BadValue::Code(value.to_string()))?,
    };
    if code == 0 {
        return Err(BadValue::CodeZero);
    }
    Ok(code)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(text: &str) -> String {
        Rule::parse(text).expect_err(text).reason
    }

    #[test]
    fn parses_every_kind() {
        assert_eq!(Rule::parse("drop-response").unwrap().action, Action::DropResponse);
        assert_eq!(Rule::parse(" drop-request:op=create ").unwrap().action, Action::DropRequest);
        assert_eq!(Rule::parse("error:code=-112").unwrap().action, Action::Error(-112));
        assert_eq!(Rule::parse("error:code=connectionloss").unwrap().action, Action::Error(-4));
        let ms = Duration::from_millis;
        assert_eq!(Rule::parse("delay:ms=250").unwrap().action, Action::Delay { base: ms(250), jitter: ms(0) });
        assert_eq!(
            Rule::parse("delay:ms=250,jitter=40").unwrap().action,
            Action::Delay { base: ms(250), jitter: ms(40) }
        );
        assert!(Rule::parse("delay:ms=0").unwrap().action.is_tap());
        assert!(!Rule::parse("delay:ms=0,jitter=1").unwrap().action.is_tap());
        assert_eq!(Rule::parse("blackhole:op=getData").unwrap().action, Action::Blackhole);
        assert_eq!(Rule::parse("refuse:count=2").unwrap().action, Action::Refuse);
        assert_eq!(Rule::parse("reset:").unwrap().action, Action::Reset);
        assert_eq!(Rule::parse("expire-session:session=0x10").unwrap().action, Action::ExpireSession);
    }

    #[test]
    fn parses_filters() {
        let r = Rule::parse("drop-response:op=create,path=/locks/*,count=1,nth=2,prob=0.5").unwrap();
        assert_eq!((r.nth, r.count, r.prob), (Some(2), Some(1), Some(0.5)));
        assert_eq!(r.text, "drop-response:op=create,path=/locks/*,count=1,nth=2,prob=0.5");
        // Commas inside a glob's braces belong to the glob.
        let r = Rule::parse("reset:path=/a/{b,c},count=3").unwrap();
        assert_eq!(r.count, Some(3));
    }

    #[test]
    fn errors_name_the_problem() {
        assert!(err("drop-everything").contains("unknown fault kind 'drop-everything'"));
        assert!(err("reset:opp=create").contains("unknown key 'opp'"));
        assert!(err("reset:op").contains("'op' is not key=value"));
        assert!(err("reset:op=creat").contains("unknown op 'creat'"));
        assert!(err("reset:prob=1.5").contains("bad value for prob: '1.5'"));
        assert!(err("reset:nth=0").contains("bad value for nth: '0'"));
        assert!(err("reset:count=x").contains("bad value for count: 'x'"));
        assert!(err("reset:session=0xzz").contains("bad value for session: '0xzz'"));
        assert!(err("reset:count=1,count=2").contains("count= is given twice"));
        assert!(err("reset:code=-4").contains("code= does not apply to reset faults"));
        assert!(err("error").contains("need code="));
        assert!(err("error:code=0").contains("0 is OK"));
        assert!(err("error:code=NOPE").contains("bad value for code: 'NOPE'"));
        assert!(err("delay").contains("need ms="));
        assert!(err("delay:ms=-1").contains("bad value for ms: '-1'"));
        assert!(err("delay:ms=1,jitter=x").contains("bad value for jitter: 'x'"));
        assert!(err("reset:jitter=1").contains("jitter= does not apply to reset faults"));
        assert!(err("refuse:op=create").contains("op= does not apply to refuse faults"));
        assert!(err("reset:path=locks/*").contains("must start with '/'"));
        assert!(err("reset:path=/a/[b").contains("bad value for path"));
        let full = Rule::parse("reset:x=1").unwrap_err().to_string();
        assert!(full.starts_with("bad fault rule 'reset:x=1': unknown key 'x'"), "{full}");
    }
}

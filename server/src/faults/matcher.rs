//! Which requests a rule considers: op names, a path glob, a session, and how a request (a
//! multi in particular) is seen by those filters.
//!
//! Pings and auth packets keep a client's connection alive and authenticated rather than doing
//! work; a rule that faulted them by accident (`op=*`) would test the client's heartbeat, not
//! its handling of a lost write. So they match only a rule whose `op=` names them.

use globset::{Glob, GlobBuilder, GlobMatcher};
use testkeeper_wire::{OpCode, Request};

use super::bad_value::BadValue;

/// The filters of one rule; an absent filter matches everything.
#[derive(Debug, Clone, Default)]
pub struct Matcher {
    /// Op codes to match; `None` = any op (except pings and auth).
    pub ops: Option<Vec<OpCode>>,
    /// The path glob, with `*` limited to one path level and `**` spanning levels.
    pub path: Option<GlobMatcher>,
    /// Only requests of this session.
    pub session: Option<i64>,
}

/// Ops that `op=*` leaves alone (see the module docs).
const EXEMPT: [OpCode; 2] = [OpCode::Ping, OpCode::Auth];

/// Op codes that never reach the request path: a rule naming one could never fire, so it is
/// refused rather than left to sit silently. The handshake (`createSession`) is handled
/// before the request loop and is not faultable.
const NEVER_REQUESTS: [OpCode; 4] =
    [OpCode::Notification, OpCode::CreateSession, OpCode::Error, OpCode::DeleteContainer];

impl Matcher {
    /// If the request matches, the path that matched (or the request's own path, when the rule
    /// has no path filter), for the event log: `Some(path)`; `None` when it does not match.
    pub fn matches(&self, req: &Request, session: i64) -> Option<Option<String>> {
        if self.session.is_some_and(|s| s != session) {
            return None;
        }
        let top = req.op();
        let named = self.ops.as_ref().is_some_and(|ops| ops.contains(&top));
        if EXEMPT.contains(&top) && !named {
            return None;
        }
        candidates(req)
            .into_iter()
            .find(|(op, path)| self.op_matches(*op) && self.path_matches(*path))
            .map(|(_, path)| path.map(str::to_string))
    }

    fn op_matches(&self, op: OpCode) -> bool {
        self.ops.as_ref().is_none_or(|ops| ops.contains(&op))
    }

    fn path_matches(&self, path: Option<&str>) -> bool {
        match (&self.path, path) {
            (None, _) => true,
            (Some(glob), Some(p)) => glob.is_match(p),
            (Some(_), None) => false,
        }
    }
}

/// The (op, path) pairs a request can match as. A multi matches as itself with each sub-op's
/// path, and as each of its sub-ops: `op=create` catches a multi that creates, and
/// `op=multi,path=/a/*` a multi that touches anything under `/a`.
fn candidates(req: &Request) -> Vec<(OpCode, Option<&str>)> {
    match req {
        Request::Multi(subs) | Request::MultiRead(subs) if !subs.is_empty() => {
            let top = req.op();
            subs.iter().map(|s| (top, s.path())).chain(subs.iter().map(|s| (s.op(), s.path()))).collect()
        }
        _ => vec![(req.op(), req.path())],
    }
}

/// `op=`: `*`, one protocol op name (`create`, `setData`, any case), or several joined by `|`.
///
/// # Errors
/// [`BadValue`] naming the unknown op, or one no client sends.
pub fn parse_ops(value: &str) -> Result<Option<Vec<OpCode>>, BadValue> {
    if value == "*" {
        return Ok(None);
    }
    let mut ops = Vec::new();
    for name in value.split('|').map(str::trim) {
        let op = OpCode::ALL
            .iter()
            .copied()
            .find(|op| op.name().eq_ignore_ascii_case(name))
            .ok_or_else(|| BadValue::UnknownOp(name.to_string()))?;
        if NEVER_REQUESTS.contains(&op) {
            return Err(BadValue::NeverRequested(op));
        }
        ops.push(op);
    }
    Ok(Some(ops))
}

/// `path=`: a glob over absolute paths, `*` for one level, `**` for any depth.
///
/// # Errors
/// [`BadValue`] when the glob is not absolute, too long or wide, or does not compile.
pub fn parse_glob(value: &str) -> Result<Option<GlobMatcher>, BadValue> {
    if value == "*" || value == "**" {
        return Ok(None);
    }
    if !value.starts_with('/') {
        return Err(BadValue::RelativePath(value.to_string()));
    }
    if value.len() > super::rule::MAX_GLOB_LEN {
        return Err(BadValue::LongGlob(value.len()));
    }
    let parts = value.chars().filter(|c| matches!(c, '*' | '?' | '[' | '{' | ',')).count();
    if parts > super::rule::MAX_GLOB_PARTS {
        return Err(BadValue::WideGlob { glob: value.to_string(), parts });
    }
    // Literal separators make `*` stop at '/', so `/locks/*` means the children of /locks only.
    let refused = |e: globset::Error| BadValue::Glob { glob: value.to_string(), why: e.to_string() };
    let glob: Glob = GlobBuilder::new(value).literal_separator(true).build().map_err(refused)?;
    // `compile_matcher` panics when the regex it builds is refused (too big); a set of one
    // glob builds the same regex and says so as an error instead.
    globset::GlobSetBuilder::new().add(glob.clone()).build().map_err(refused)?;
    Ok(Some(glob.compile_matcher()))
}

/// A session id that is neither `0x`-prefixed hex nor decimal (the value as given).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("bad value for session: '{0}' (expected 0x-prefixed hex or decimal)")]
pub struct BadSessionId(pub String);

/// `session=`: `0x`-prefixed hex (as the 4lw commands print ids) or decimal.
///
/// # Errors
/// [`BadSessionId`], naming the value.
pub fn parse_session(value: &str) -> Result<i64, BadSessionId> {
    let parsed = match value.strip_prefix("0x").or_else(|| value.strip_prefix("0X")) {
        // Hex ids are printed unsigned; ZooKeeper's ids often have the top bit set.
        Some(hex) => u64::from_str_radix(hex, 16).ok().map(|v| v as i64),
        None => value.parse::<i64>().ok(),
    };
    parsed.ok_or_else(|| BadSessionId(value.to_string()))
}

#[cfg(test)]
mod tests {
    use testkeeper_wire::records::create::CreateRequest;
    use testkeeper_wire::records::data::{DeleteRequest, GetDataRequest};
    use testkeeper_wire::CreateOp;

    use super::*;

    fn m(ops: &str, path: &str) -> Matcher {
        Matcher { ops: parse_ops(ops).unwrap(), path: parse_glob(path).unwrap(), session: None }
    }

    fn create(path: &str) -> Request {
        Request::Create(CreateOp {
            op: OpCode::Create,
            req: CreateRequest { path: path.into(), data: None, acl: vec![], flags: 0 },
            ttl: 0,
        })
    }

    fn delete(path: &str) -> Request {
        Request::Delete(DeleteRequest { path: path.into(), version: -1 })
    }

    #[test]
    fn single_level_and_any_depth_globs() {
        let one = m("*", "/locks/*");
        assert_eq!(one.matches(&create("/locks/a"), 1), Some(Some("/locks/a".into())));
        assert_eq!(one.matches(&create("/locks/a/b"), 1), None);
        assert_eq!(one.matches(&create("/locks"), 1), None);
        let deep = m("*", "/locks/**");
        assert!(deep.matches(&create("/locks/a/b/c"), 1).is_some());
        assert!(deep.matches(&create("/other/a"), 1).is_none());
        let exact = m("*", "/locks");
        assert!(exact.matches(&create("/locks"), 1).is_some() && exact.matches(&create("/locks/a"), 1).is_none());
        assert!(m("*", "/a/{b,c}").matches(&create("/a/c"), 1).is_some());
    }

    #[test]
    fn ops_sessions_and_exempt_ops() {
        let get = Request::GetData(GetDataRequest { path: "/x".into(), watch: false });
        assert!(m("create", "*").matches(&get, 1).is_none());
        assert!(m("getdata|create", "*").matches(&get, 1).is_some());
        assert!(m("*", "*").matches(&Request::Ping, 1).is_none());
        assert!(m("ping", "*").matches(&Request::Ping, 1).is_some());
        // A path rule never matches a request without a path.
        assert!(m("*", "/**").matches(&Request::WhoAmI, 1).is_none());
        let s = Matcher { session: Some(parse_session("0x2").unwrap()), ..Matcher::default() };
        assert!(s.matches(&get, 2).is_some() && s.matches(&get, 3).is_none());
        assert_eq!(parse_session("0xffffffffffffffff"), Ok(-1));
        assert_eq!(parse_session("42"), Ok(42));
    }

    #[test]
    fn multi_matches_by_itself_and_by_sub_ops() {
        let multi = Request::Multi(vec![create("/other/x"), delete("/locks/a")]);
        assert!(m("multi", "*").matches(&multi, 1).is_some());
        assert!(m("create", "*").matches(&multi, 1).is_some());
        assert!(m("setData", "*").matches(&multi, 1).is_none());
        assert_eq!(m("multi", "/locks/*").matches(&multi, 1), Some(Some("/locks/a".into())));
        assert_eq!(m("delete", "/locks/*").matches(&multi, 1), Some(Some("/locks/a".into())));
        // The op and the path must hold for the same sub-op.
        assert!(m("create", "/locks/*").matches(&multi, 1).is_none());
        assert!(m("multi", "*").matches(&Request::Multi(vec![]), 1).is_some());
    }

    #[test]
    fn bad_values_are_named() {
        assert_eq!(parse_ops("create|bogus").unwrap_err(), BadValue::UnknownOp("bogus".into()));
        assert!(parse_ops("create|bogus").unwrap_err().to_string().contains("unknown op 'bogus'"));
        assert_eq!(parse_ops("createSession").unwrap_err(), BadValue::NeverRequested(OpCode::CreateSession));
        assert!(parse_ops("createSession").unwrap_err().to_string().contains("never arrives"));
        assert_eq!(parse_glob("x").unwrap_err(), BadValue::RelativePath("x".into()));
        assert!(parse_glob("x").unwrap_err().to_string().contains("must start with '/'"));
        assert_eq!(parse_session("abc"), Err(BadSessionId("abc".into())));
        assert!(parse_session("abc").unwrap_err().to_string().contains("'abc'"));
    }
}

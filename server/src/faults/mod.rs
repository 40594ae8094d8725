//! Protocol-aware fault injection: rules that drop a request or its reply, fail it with an
//! error code, delay its reply (with seeded jitter), reset or black-hole the connection,
//! expire the session, or refuse new connections, chosen by op, path, session, position and
//! a seeded probability.
//!
//! Faults hook into the engine's one request path at two points (`engine/faults.rs`): before
//! dispatch (reset, drop-request, error, expire-session, blackhole: the request is not carried
//! out) and around the reply (drop-response, delay: it is); `refuse` hooks into the handshake.
//! Nothing else in the engine knows faults exist.
//!
//! Every probability is drawn from one ChaCha generator seeded with `ServerConfig.seed`, and
//! only when a rule with `prob=` is consulted for a request it matches: the same seed, rules
//! and request sequence give the same faults, which is what makes a failing run replayable.
//!
//! # Layout
//! - this file: [`Faults`], the rule table, the generator and the counters.
//! - `rule`: the grammar `KIND[:key=value,...]`, [`Rule`], [`Kind`], [`Action`].
//! - `matcher`: op, path-glob and session filters; how a multi matches.
//! - `bad_value`: [`BadValue`], what is wrong with one `key=value`.
//! - `events`: the bounded [`FaultEvent`] log.

mod bad_value;
mod events;
pub mod fuzzing;
mod matcher;
mod rule;

use std::collections::BTreeMap;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::Serialize;
use testkeeper_wire::Request;

pub use bad_value::BadValue;
pub use events::{EventLog, FaultEvent, EVENT_LOG_CAPACITY};
pub use matcher::{parse_session, BadSessionId, Matcher};
pub use rule::{Action, Kind, Rule, RuleError, MAX_DELAY_MS, MAX_GLOB_LEN};

/// The most rules one server holds at once: each is matched against every request, and ten
/// thousand rules once cost 123 MB and slowed every request; no test needs this many.
pub const MAX_RULES: usize = 1000;

/// A rule in the table with its counters.
#[derive(Debug, Clone)]
struct Entry {
    id: u64,
    rule: Rule,
    /// Requests that passed the op/path/session filters.
    matched: u64,
    fired: u64,
}

/// A rule as the listing APIs show it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RuleStatus {
    pub id: u64,
    /// The rule as it was written.
    pub rule: String,
    pub kind: &'static str,
    /// Requests that passed the rule's op/path/session filters.
    pub matched: u64,
    /// Times the rule fired.
    pub fired: u64,
    /// Whether `count=` is used up, so the rule will not fire again.
    pub exhausted: bool,
}

/// A rule that fired on a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fired {
    pub rule: u64,
    pub action: Action,
    /// For a delay: how long to hold the reply, jitter drawn.
    pub delay: Option<std::time::Duration>,
}

/// When a rule is consulted: the server's clock and last committed zxid, for the event log.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct At {
    pub time_ms: i64,
    pub zxid: i64,
}

/// The fault table of one server.
#[derive(Debug, Clone)]
pub struct Faults {
    /// Ordered by id: earlier rules are consulted first.
    rules: Vec<Entry>,
    next_id: u64,
    rng: ChaCha8Rng,
    events: EventLog,
    /// Firings by kind over the server's life (removing a rule keeps them), for `/metrics`;
    /// taps (rules that change nothing) are counted apart.
    fired_by_kind: BTreeMap<&'static str, u64>,
    taps: u64,
}

impl Faults {
    /// An empty table whose probabilities draw from `seed`.
    pub fn new(seed: u64) -> Faults {
        Faults {
            rules: Vec::new(),
            next_id: 1,
            rng: ChaCha8Rng::seed_from_u64(seed),
            events: EventLog::default(),
            fired_by_kind: BTreeMap::new(),
            taps: 0,
        }
    }

    /// Parses and adds a rule; returns its id.
    ///
    /// # Errors
    /// The rule's parse error.
    pub fn add(&mut self, text: &str) -> Result<u64, RuleError> {
        let rule = Rule::parse(text)?;
        if self.rules.len() >= MAX_RULES {
            return Err(RuleError {
                rule: text.to_string(),
                reason: format!("too many fault rules: at most {MAX_RULES} at once (remove some first)"),
            });
        }
        Ok(self.add_rule(rule))
    }

    /// Adds a parsed rule; returns its id (1, 2, 3..., never reused).
    pub fn add_rule(&mut self, rule: Rule) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        self.rules.push(Entry { id, rule, matched: 0, fired: 0 });
        id
    }

    /// Removes one rule; false when there is none with that id.
    pub fn remove(&mut self, id: u64) -> bool {
        let before = self.rules.len();
        self.rules.retain(|e| e.id != id);
        self.rules.len() != before
    }

    /// Removes every rule. The event log, the counters and the generator carry on, so a replay
    /// that clears and re-adds rules at the same points still draws the same numbers.
    pub fn clear(&mut self) {
        self.rules.clear();
    }

    /// The rules with their counters, by id.
    pub fn rules(&self) -> Vec<RuleStatus> {
        self.rules
            .iter()
            .map(|e| RuleStatus {
                id: e.id,
                rule: e.rule.text.clone(),
                kind: e.rule.action.kind().name(),
                matched: e.matched,
                fired: e.fired,
                exhausted: e.rule.count.is_some_and(|c| e.fired >= c),
            })
            .collect()
    }

    /// The fired faults still in the log, oldest first.
    pub fn events(&self) -> Vec<FaultEvent> {
        self.events.snapshot()
    }

    /// How many faults ever fired (the log keeps only the newest).
    pub fn total_events(&self) -> u64 {
        self.events.total()
    }

    /// Firings by kind name over the server's life.
    pub fn fired_by_kind(&self) -> &BTreeMap<&'static str, u64> {
        &self.fired_by_kind
    }

    /// Decides whether a request triggers a fault, and logs the firing.
    ///
    /// Rules are consulted in id order. Every rule whose filters match counts the request (so
    /// `nth=` counts matching requests, whoever fires); the first that fires wins, and the
    /// rules after it neither draw nor fire for this request. Connection rules (`refuse`) are
    /// not consulted.
    pub fn check(&mut self, req: &Request, session: i64, xid: i32, at: At) -> Option<Fired> {
        let op = req.op().name();
        let (fired, path) =
            self.consult(|r| if r.action.kind().on_connect() { None } else { r.matcher.matches(req, session) })?;
        Some(self.log(fired, op, path, session, xid, at))
    }

    /// Decides whether a new connection's handshake triggers a connection rule (`refuse`);
    /// `session` is the one it asks to resume (0: a new one).
    pub fn check_connect(&mut self, session: i64, at: At) -> Option<Fired> {
        let (fired, _) = self.consult(|r| r.action.kind().on_connect().then_some(None))?;
        Some(self.log(fired, "connect", None, session, 0, at))
    }

    /// The first rule that fires among those `matches` accepts (returning the matched path),
    /// with the delay it draws.
    fn consult(&mut self, matches: impl Fn(&Rule) -> Option<Option<String>>) -> Option<(Fired, Option<String>)> {
        if self.rules.is_empty() {
            return None;
        }
        let mut fired: Option<(Fired, Option<String>)> = None;
        for e in &mut self.rules {
            let Some(path) = matches(&e.rule) else {
                continue;
            };
            e.matched += 1;
            if fired.is_some() {
                continue;
            }
            let r = &e.rule;
            let eligible = r.nth.is_none_or(|k| e.matched == k) && r.count.is_none_or(|c| e.fired < c);
            // Draw only for an eligible rule with a probability, so the sequence of draws
            // depends on nothing but the rules and the requests.
            if eligible && r.prob.is_none_or(|p| self.rng.gen::<f64>() < p) {
                e.fired += 1;
                fired = Some((Fired { rule: e.id, action: r.action, delay: None }, path));
            }
        }
        let (mut fired, path) = fired?;
        if let Action::Delay { base, jitter } = fired.action {
            // Drawn only for a rule with jitter, so rules without it draw what they always did.
            let ms = if jitter.is_zero() {
                base
            } else {
                // Both are at most rule::MAX_DELAY_MS, so neither conversion can wrap.
                let j = i64::try_from(jitter.as_millis()).unwrap_or(i64::MAX / 4);
                let b = i64::try_from(base.as_millis()).unwrap_or(i64::MAX / 4);
                let d = b.saturating_add(self.rng.gen_range(-j..=j));
                std::time::Duration::from_millis(u64::try_from(d.max(0)).unwrap_or(0))
            };
            fired.delay = Some(ms);
        }
        Some((fired, path))
    }

    fn log(&mut self, fired: Fired, op: &'static str, path: Option<String>, session: i64, xid: i32, at: At) -> Fired {
        let kind = fired.action.kind();
        let tap = fired.action.is_tap();
        if tap {
            self.taps += 1;
        } else {
            *self.fired_by_kind.entry(kind.name()).or_default() += 1;
        }
        self.events.push(FaultEvent {
            seq: 0,
            rule: fired.rule,
            kind: kind.name(),
            op,
            path,
            session,
            xid,
            applied: kind.applies_request(),
            time_ms: at.time_ms,
            zxid: at.zxid,
            delay_ms: fired.delay.map(|d| d.as_millis() as u64),
            tap,
        });
        fired
    }

    /// Firings of rules that change nothing (`delay:ms=0`), over the server's life.
    pub fn taps(&self) -> u64 {
        self.taps
    }
}

#[cfg(test)]
mod tests {
    use testkeeper_wire::records::data::GetDataRequest;

    use super::*;

    fn get(path: &str) -> Request {
        Request::GetData(GetDataRequest { path: path.into(), watch: false })
    }

    fn fired_on(faults: &mut Faults, n: usize) -> Vec<usize> {
        (0..n).filter(|i| faults.check(&get(&format!("/p/{i}")), 1, *i as i32, At::default()).is_some()).collect()
    }

    #[test]
    fn nth_and_count() {
        let mut f = Faults::new(0);
        let id = f.add("error:code=-4,nth=3").unwrap();
        assert_eq!(fired_on(&mut f, 6), vec![2]);
        f.remove(id);
        f.add("error:code=-4,count=2").unwrap();
        assert_eq!(fired_on(&mut f, 6), vec![0, 1]);
        let st = &f.rules()[0];
        assert_eq!((st.matched, st.fired, st.exhausted), (6, 2, true));
        assert_eq!(f.fired_by_kind()["error"], 3);
        assert_eq!(f.events().iter().map(|e| e.seq).collect::<Vec<_>>(), vec![1, 2, 3]);
    }

    #[test]
    fn seeded_probability_replays() {
        let run = |seed| {
            let mut f = Faults::new(seed);
            f.add("drop-request:prob=0.3").unwrap();
            fired_on(&mut f, 200)
        };
        let a = run(7);
        assert_eq!(a, run(7));
        assert_ne!(a, run(8));
        // Roughly 30% fire: a broken draw (never, always) would be far off.
        assert!((30..=90).contains(&a.len()), "{}", a.len());
    }

    #[test]
    fn first_firing_rule_wins_and_later_rules_still_count() {
        let mut f = Faults::new(0);
        f.add("error:code=-4,count=1").unwrap();
        f.add("reset:nth=1").unwrap();
        assert_eq!(f.check(&get("/a"), 1, 1, At::default()).map(|x| x.action), Some(Action::Error(-4)));
        // The reset rule counted request 1, so its nth=1 has passed.
        assert_eq!(f.check(&get("/a"), 1, 2, At::default()), None);
        assert_eq!(f.rules()[1].matched, 2);
        assert!(f.remove(1) && !f.remove(1));
        f.clear();
        assert!(f.rules().is_empty());
    }

    #[test]
    fn hostile_rules_are_refused_by_name_and_never_panic() {
        let mut f = Faults::new(1);
        for (rule, says) in [
            ("delay:ms=1,jitter=9223372036854775809,op=exists", "bad value for jitter"),
            ("delay:ms=18446744073709551615", "bad value for ms"),
            ("delay:ms=3600001", "at most 3600000 ms"),
        ] {
            let e = f.add(rule).unwrap_err();
            assert!(e.reason.contains(says), "{rule}: {}", e.reason);
        }
        let long = format!("drop-response:path=/{}", "a".repeat(400_000));
        assert!(f.add(&long).unwrap_err().reason.contains("bytes (at most 1024)"));
        let stars = format!("drop-response:path=/{}", "*a".repeat(100));
        assert!(f.add(&stars).unwrap_err().reason.contains("wildcards and alternatives"));
        // The largest accepted delay fires without overflow.
        f.add("delay:ms=3600000,jitter=3600000").unwrap();
        for i in 0..20 {
            let d = f.check(&get("/j"), 1, i, At::default()).unwrap().delay.unwrap();
            assert!(d.as_millis() <= 7_200_000, "{d:?}");
        }
        for _ in 0..MAX_RULES - 1 {
            f.add("drop-response:op=exists,count=1").unwrap();
        }
        let e = f.add("drop-response").unwrap_err();
        assert!(e.reason.contains("too many fault rules: at most 1000"), "{}", e.reason);
    }

    #[test]
    fn jitter_draws_from_the_seed_within_its_bounds() {
        let run = |seed| {
            let mut f = Faults::new(seed);
            f.add("delay:ms=100,jitter=30").unwrap();
            (0..50)
                .map(|i| f.check(&get("/j"), 1, i, At::default()).unwrap().delay.unwrap().as_millis())
                .collect::<Vec<_>>()
        };
        let a = run(3);
        assert_eq!(a, run(3));
        assert!(a.iter().all(|d| (70..=130).contains(d)), "{a:?}");
        assert!(a.iter().min() != a.iter().max(), "jitter varies the delay: {a:?}");
        let mut f = Faults::new(0);
        f.add("delay:ms=5").unwrap();
        assert_eq!(f.check(&get("/j"), 1, 1, At::default()).unwrap().delay, Some(std::time::Duration::from_millis(5)));
    }

    #[test]
    fn taps_are_logged_but_not_counted_and_refuse_only_sees_connections() {
        let mut f = Faults::new(0);
        f.add("delay:ms=0").unwrap();
        f.add("refuse:count=1").unwrap();
        let at = At { time_ms: 42, zxid: 7 };
        assert!(f.check(&get("/t"), 1, 1, at).is_some());
        assert_eq!((f.taps(), f.fired_by_kind().get("delay")), (1, None));
        let ev = &f.events()[0];
        assert!(ev.tap && ev.time_ms == 42 && ev.zxid == 7 && ev.delay_ms == Some(0));
        assert_eq!(f.rules()[1].matched, 0, "a request never reaches a connection rule");
        assert_eq!(f.check_connect(0, at).map(|x| x.action), Some(Action::Refuse));
        assert_eq!(f.check_connect(0, at), None, "count=1 used up");
        assert_eq!((f.fired_by_kind()["refuse"], f.events()[1].op), (1, "connect"));
    }
}

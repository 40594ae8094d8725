//! The body of the `fault_input` fuzz target (`fuzz/fuzz_targets/fault_input.rs`), here so a
//! proptest runs the same checks on stable in every test run: arbitrary bytes as a fault rule
//! (the `--fault` and HTTP text form) and as the admin API's JSON rule, through everything a
//! rule does once added (matching requests, drawing probabilities and jitter, listing). Nothing
//! may panic: the process aborts on any panic, so a panic here would be an admin input that
//! kills the server.

use testkeeper_wire::records::create::CreateRequest;
use testkeeper_wire::records::data::GetDataRequest;
use testkeeper_wire::{Acl, CreateOp, OpCode, Request};

use super::{At, Faults};

/// Feeds `data` as a rule text and, when it is JSON, as the admin API's JSON rule.
pub fn check_fault_input(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    exercise(&text);
    if let Ok(v) = serde_json::from_slice::<serde_json::Value>(data) {
        if let Ok(rule) = crate::http::faults::rule_from_json(&v) {
            exercise(&rule);
        }
    }
}

/// Adds `text` as a rule (if it parses) and sends it requests it may match.
fn exercise(text: &str) {
    let mut f = Faults::new(7);
    let Ok(id) = f.add(text) else { return };
    let requests = [
        Request::GetData(GetDataRequest { path: "/locks/a".into(), watch: false }),
        Request::Create(CreateOp {
            op: OpCode::Create,
            req: CreateRequest { path: "/a/b/c".into(), data: Some(vec![1]), acl: Acl::open(), flags: 0 },
            ttl: 0,
        }),
        Request::Ping,
    ];
    for (i, r) in requests.iter().cycle().take(12).enumerate() {
        let _ = f.check(r, 0x1234, i as i32, At::default());
    }
    let _ = f.check_connect(0x1234, At::default());
    let _ = f.rules();
    assert!(f.remove(id), "an added rule can be removed");
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::check_fault_input;

    /// Pieces of the grammar, so random rules are mostly well-formed and reach the checks.
    fn rule_text() -> impl Strategy<Value = String> {
        // Every kind the grammar has, and one it does not.
        let mut kinds: Vec<&str> = crate::faults::Kind::ALL.iter().map(|k| k.name()).collect();
        kinds.push("x");
        let kind = prop::sample::select(kinds);
        let key = prop::sample::select(vec!["ms", "jitter", "count", "nth", "prob", "code", "op", "path", "session"]);
        let value = prop_oneof![
            any::<u64>().prop_map(|n| n.to_string()),
            any::<i64>().prop_map(|n| n.to_string()),
            any::<f64>().prop_map(|n| n.to_string()),
            "[/*{},a-z?\\[\\]]{0,40}",
            Just("9223372036854775809".to_string()),
            Just("18446744073709551615".to_string()),
        ];
        (kind, prop::collection::vec((key, value), 0..5)).prop_map(|(k, kv)| {
            let params: Vec<String> = kv.into_iter().map(|(k, v)| format!("{k}={v}")).collect();
            format!("{k}:{}", params.join(","))
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        #[test]
        fn grammar_shaped_rules_never_panic(rule in rule_text()) {
            check_fault_input(rule.as_bytes());
        }

        #[test]
        fn arbitrary_bytes_never_panic(data in prop::collection::vec(any::<u8>(), 0..200)) {
            check_fault_input(&data);
        }

        #[test]
        fn json_rules_never_panic(ms in any::<u64>(), jitter in any::<u64>(), count in any::<i64>(), path in "[/*a{},]{0,20}") {
            let v = serde_json::json!({"kind": "delay", "ms": ms, "jitter": jitter, "count": count, "path": path});
            check_fault_input(v.to_string().as_bytes());
        }
    }
}

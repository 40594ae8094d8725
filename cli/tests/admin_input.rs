//! Hostile admin input against a running `serve --http`: the inputs that once killed the
//! process (a jitter that wrapped through `as i64`, the same as a JSON number, a 400 KB path
//! glob that globset could not compile) and ten thousand rules. Each is refused with a 400
//! naming the field, the process keeps serving, and `--fault` and `testkeeper faults add`
//! give the same message.

mod support;

use std::io::{Read, Write};

use support::{run, stderr, Served};

/// One HTTP/1.0 request; (status, body).
fn http(admin: &str, method: &str, path: &str, content_type: &str, body: &str) -> (u16, String) {
    let mut s = std::net::TcpStream::connect(admin).expect("connect admin");
    let head = format!(
        "{method} {path} HTTP/1.0\r\nHost: {admin}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    s.write_all(head.as_bytes()).unwrap();
    s.write_all(body.as_bytes()).unwrap();
    let mut raw = String::new();
    s.read_to_string(&mut raw).unwrap();
    let status = raw.split(' ').nth(1).and_then(|c| c.parse().ok()).unwrap_or(0);
    (status, raw.split_once("\r\n\r\n").map(|(_, b)| b.to_string()).unwrap_or_default())
}

fn alive(served: &Served) {
    let (status, body) = http(&served.admin, "GET", "/api/v1/commands/ruok", "text/plain", "");
    assert_eq!((status, body.contains("imok")), (200, true), "the server stopped answering: {body}");
}

#[test]
fn inputs_that_crashed_the_server_are_refused_and_it_keeps_serving() {
    let served = Served::start(&[], &[]);
    let long_glob = format!("drop-response:path=/{}", "a".repeat(400_000));
    for (content_type, body, says) in [
        ("text/plain", "delay:ms=1,jitter=9223372036854775809,op=exists".to_string(), "bad value for jitter"),
        ("application/json", r#"{"kind":"delay","ms":1,"jitter":18446744073709551615}"#.to_string(), "jitter"),
        ("text/plain", long_glob, "bad value for path"),
        ("text/plain", "delay:ms=99999999999".to_string(), "bad value for ms"),
    ] {
        let (status, answer) = http(&served.admin, "POST", "/api/v1/faults", content_type, &body);
        assert_eq!(status, 400, "{}: {answer}", &body[..body.len().min(80)]);
        assert!(answer.contains(says), "{answer}");
        alive(&served);
    }
    // Requests still flow through the fault path (the first matching request is where the
    // jitter once blew up).
    let out = run(&["digest", "--target", &served.addr]);
    assert!(out.status.success(), "{}", stderr(&out));
}

#[test]
fn the_rule_table_is_bounded() {
    let served = Served::start(&[], &[]);
    for i in 0..1000 {
        let (status, answer) =
            http(&served.admin, "POST", "/api/v1/faults", "text/plain", "drop-response:count=1,op=exists");
        assert!(matches!(status, 200 | 201), "rule {i}: {status} {answer}");
    }
    let (status, answer) = http(&served.admin, "POST", "/api/v1/faults", "text/plain", "drop-response");
    assert_eq!(status, 400, "{answer}");
    assert!(answer.contains("too many fault rules: at most 1000"), "{answer}");
    alive(&served);
}

#[test]
fn the_cli_and_fault_flag_give_the_same_message() {
    let rule = "delay:ms=1,jitter=9223372036854775809";
    let out = run(&["serve", "--listen", "0", "--fault", rule]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("bad value for jitter"), "{}", stderr(&out));
    let served = Served::start(&[], &[]);
    let out = run(&["faults", "add", rule, "--admin", &served.admin]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stderr(&out).contains("bad value for jitter"), "{}", stderr(&out));
}

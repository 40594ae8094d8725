//! `testkeeper faults` against a running `serve --http`: each subcommand, what it prints, and
//! the exit codes a script relies on (0 done, 1 refused by the server, 2 bad flags, 3 nobody
//! answered).

mod support;

use support::{run, stderr, stdout, Served};
use testkeeper_wire::client::{Client, ConnectOptions};

#[test]
fn add_list_events_clear_and_exit_codes() {
    let s = Served::start(&["--flavor", "zookeeper"], &[]);
    let admin = s.admin.as_str();
    let o = run(&[
        "faults",
        "add",
        "error:code=CONNECTIONLOSS,op=getData,count=1",
        "delay:ms=5,jitter=2",
        "--admin",
        admin,
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        stdout(&o),
        "rule 1 installed: error:code=CONNECTIONLOSS,op=getData,count=1\nrule 2 installed: delay:ms=5,jitter=2\n"
    );
    let rt = tokio::runtime::Runtime::new().unwrap();
    let addr = s.addr.parse().unwrap();
    rt.block_on(async {
        let c = Client::connect(addr, ConnectOptions::default()).await.unwrap();
        assert!(c.get_data("/", false).await.is_err(), "the error rule fired");
    });
    let list = stdout(&run(&["faults", "list", "--admin", admin]));
    assert!(
        list.contains("  1  error:code=CONNECTIONLOSS,op=getData,count=1  (matched 1, fired 1, used up)"),
        "{list}"
    );
    let events = stdout(&run(&["faults", "events", "--admin", admin]));
    assert!(events.starts_with("#1 ") && events.contains("rule 1 error: getData / session 0x"), "{events}");
    assert!(events.contains(" at zxid 0x") && events.contains("not applied"), "{events}");
    let json = stdout(&run(&["faults", "events", "--json", "--admin", admin]));
    let ev: serde_json::Value = serde_json::from_str(json.lines().next().unwrap()).unwrap();
    assert_eq!(ev["kind"], "error");

    // 1: the server refused (bad rule, no such rule or session); the message says why.
    let o = run(&["faults", "add", "drop-everything", "--admin", admin]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("unknown fault kind 'drop-everything'"), "{}", stderr(&o));
    assert_eq!(run(&["faults", "remove", "99", "--admin", admin]).status.code(), Some(1));
    let o = run(&["faults", "expire-session", "0x77", "--admin", admin]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("no live session 0x77"), "{}", stderr(&o));
    // 2: bad flags; 3: nothing answers.
    assert_eq!(run(&["faults", "list"]).status.code(), Some(2));
    assert_eq!(run(&["faults", "bogus", "--admin", admin]).status.code(), Some(2));
    let dead = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().to_string();
    let o = run(&["faults", "list", "--admin", &dead]);
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));

    assert!(run(&["faults", "clear", "--admin", admin]).status.success());
    assert!(stdout(&run(&["faults", "list", "--admin", admin])).contains("0 rule(s)"));
}

#[test]
fn sessions_expire_connections_and_reset_from_a_shell() {
    let s = Served::start(&["--flavor", "zookeeper"], &[("RUST_LOG", "info")]);
    let admin = s.admin.as_str();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let addr = s.addr.parse().unwrap();
    let c = rt.block_on(Client::connect(addr, ConnectOptions::default())).unwrap();
    let id = format!("{:#x}", c.session_id());
    let sessions = stdout(&run(&["faults", "sessions", "--admin", admin]));
    assert!(sessions.starts_with(&id) && sessions.contains("connection 1 from 127.0.0.1:"), "{sessions}");
    let conns = stdout(&run(&["faults", "connections", "--admin", admin]));
    assert!(conns.contains(&format!("session {id}")), "{conns}");
    let o = run(&["faults", "expire-session", &id, "--admin", admin]);
    assert_eq!(stdout(&o), format!("session {id} expired\n"), "{}", stderr(&o));
    // The log says what happened, at info.
    s.await_log(&["session expired", &id]);
    let o = run(&["faults", "reset", "--admin", admin, "--json"]);
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["reset"], true);
    assert_eq!(stdout(&run(&["faults", "sessions", "--admin", admin])), "");
}

#[test]
fn digest_json_writes_u64_values_as_strings() {
    let s = Served::start(&[], &[]);
    let o = run(&["digest", "--target", &s.addr, "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    for key in ["nodes", "keeper_digest", "content_digest", "unreadable"] {
        let text = v[key].as_str().unwrap_or_else(|| panic!("{key} is not a string: {v}"));
        text.parse::<u64>().unwrap_or_else(|e| panic!("{key}: {e}"));
    }
    assert!(stderr(&o).is_empty(), "a client command prints no INFO lines: {}", stderr(&o));
}

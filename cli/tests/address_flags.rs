//! Every address flag takes `HOST:PORT` in the forms a user writes (an IP, `localhost`, a name,
//! `[::1]`), resolved by the system resolver; `serve --listen` also takes a bare port, on
//! loopback. Each form is used for real: a server started with it, and clients pointed at it.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_testkeeper"))
}

/// `testkeeper serve --listen <listen>`, killed on drop.
struct Server {
    child: Child,
    addr: String,
}

impl Server {
    fn start(listen: &str) -> Server {
        let mut child = bin()
            .args(["serve", "--listen", listen, "--flavor", "zookeeper"])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn testkeeper");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
        let addr =
            line.trim().strip_prefix("testkeeper listening on ").unwrap_or_else(|| panic!("{line:?}")).to_string();
        Server { child, addr }
    }

    fn port(&self) -> &str {
        self.addr.rsplit(':').next().unwrap()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn run(args: &[&str]) -> (bool, String) {
    let out = bin().args(args).output().unwrap();
    (out.status.success(), format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr)))
}

#[test]
fn a_bare_port_listens_on_loopback_and_clients_reach_it_by_name() {
    let s = Server::start("0");
    assert!(s.addr.starts_with("127.0.0.1:"), "{}", s.addr);
    for target in [s.addr.clone(), format!("localhost:{}", s.port())] {
        let (ok, text) = run(&["digest", "--target", &target]);
        assert!(ok && text.contains("nodes"), "digest --target {target}: {text}");
        let (ok, text) = run(&["conform", "--target", &target, "--filter", "create_get_set_delete"]);
        assert!(ok && text.contains(&format!("target:    {target}")), "conform --target {target}: {text}");
    }
    let (ok, text) = run(&["bench", "--target", &format!("localhost:{}", s.port()), "--ops", "50", "--rounds", "1"]);
    assert!(ok, "bench --target localhost: {text}");
}

#[test]
fn ipv6_loopback_in_brackets() {
    if std::net::TcpListener::bind("[::1]:0").is_err() {
        eprintln!("skipping: no IPv6 loopback on this machine");
        return;
    }
    let s = Server::start("[::1]:0");
    assert!(s.addr.starts_with("[::1]:"), "{}", s.addr);
    let (ok, text) = run(&["conform", "--target", &s.addr, "--filter", "main_errors"]);
    assert!(ok, "conform --target {}: {text}", s.addr);
}

#[test]
fn bad_addresses_exit_non_zero_naming_the_flag_and_the_problem() {
    let cases: [(&[&str], &str); 6] = [
        (&["conform", "--target", "no-such-host.invalid:9181"], "cannot resolve 'no-such-host.invalid'"),
        (&["conform", "--target", "9181"], "missing :PORT"),
        (&["conform", "--target", "127.0.0.1:1", "--reference", "::1:2181"], "needs brackets"),
        (&["digest", "--target", "localhost:http"], "is not a number"),
        (&["bench", "--vs", ":2181"], "missing host"),
        (&["publish", "--chaos", "--admin", "https://127.0.0.1:1"], "expected http://HOST:PORT"),
    ];
    for (args, needle) in cases {
        let (ok, text) = run(args);
        assert!(!ok, "{args:?} should fail");
        let flag = args.iter().rev().nth(1).unwrap();
        assert!(text.contains(needle) && text.contains(flag), "{args:?}: expected {needle:?} and {flag} in {text}");
    }
}

//! Requests at the edge of the protocol, as raw frames, against a live Apache ZooKeeper 3.8 and
//! `testkeeper --flavor zookeeper` side by side (issue 16, point 6): an addWatch with an
//! invalid mode, digest auth without a colon, bodies cut short, paths that are not UTF-8, the
//! opcodes of sasl (102), deleteContainer (20) and createSession (-10) (with and without the
//! timeout a CreateSessionTxn holds), and getData(""). For
//! each, the reply's error code and whether the connection still answers a ping afterwards.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use testkeeper_tests::env::zookeeper_installed;
use testkeeper_tests::{require_external, TestkeeperProcess, ZooKeeperProcess};

/// A jute string (or buffer): length, then bytes.
fn jstr(out: &mut Vec<u8>, b: &[u8]) {
    out.extend_from_slice(&(b.len() as i32).to_be_bytes());
    out.extend_from_slice(b);
}

fn i32s(out: &mut Vec<u8>, v: i32) {
    out.extend_from_slice(&v.to_be_bytes());
}

/// The cases: a name, the opcode and the body after the request header.
fn cases() -> Vec<(&'static str, i32, Vec<u8>)> {
    let mut v = Vec::new();
    let mut b = Vec::new();
    jstr(&mut b, b"/");
    i32s(&mut b, 5); // modes are 0 (persistent) and 1 (recursive)
    v.push(("addWatch mode 5", 106, b));
    let mut b = Vec::new();
    i32s(&mut b, 0);
    jstr(&mut b, b"digest");
    jstr(&mut b, b"nocolon");
    v.push(("addauth digest nocolon", 100, b));
    let mut b = Vec::new();
    i32s(&mut b, 0);
    jstr(&mut b, b"digest");
    jstr(&mut b, b"a:b:c");
    v.push(("addauth digest a:b:c", 100, b));
    v.push(("getData body cut short", 4, vec![0, 0, 0, 9, b'/']));
    v.push(("exists with no body", 3, vec![]));
    let mut b = Vec::new();
    jstr(&mut b, &[b'/', 0xff, 0xfe]);
    b.push(0);
    v.push(("getData invalid UTF-8 path", 4, b));
    let mut b = Vec::new();
    jstr(&mut b, &[b'/', 0xc3]);
    jstr(&mut b, b"");
    i32s(&mut b, 1);
    i32s(&mut b, 31);
    jstr(&mut b, b"world");
    jstr(&mut b, b"anyone");
    i32s(&mut b, 0);
    v.push(("create invalid UTF-8 path", 1, b));
    let mut b = Vec::new();
    jstr(&mut b, b"");
    v.push(("sasl (102) empty token", 102, b));
    v.push(("sasl (102) no body", 102, vec![]));
    let mut b = Vec::new();
    jstr(&mut b, b"/zookeeper");
    v.push(("deleteContainer (20) /zookeeper", 20, b));
    v.push(("deleteContainer (20) no body", 20, vec![]));
    v.push(("createSession (-10) empty", -10, vec![]));
    let mut b = Vec::new();
    i32s(&mut b, 30000); // a CreateSessionTxn: the timeout
    v.push(("createSession (-10) with a timeout", -10, b));
    let mut b = Vec::new();
    jstr(&mut b, b"");
    b.push(0);
    v.push(("getData empty path", 4, b));
    v
}

/// Opens a session on a raw socket (a 45-byte handshake); returns the socket and the body of
/// the connect response.
fn session(addr: SocketAddr) -> (TcpStream, Vec<u8>) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(3))).unwrap();
    let mut hs = Vec::new();
    i32s(&mut hs, 0);
    hs.extend_from_slice(&[0; 8]);
    i32s(&mut hs, 30000);
    hs.extend_from_slice(&[0; 8]);
    jstr(&mut hs, &[0; 16]);
    hs.push(0);
    let mut frame = (hs.len() as i32).to_be_bytes().to_vec();
    frame.extend_from_slice(&hs);
    s.write_all(&frame).unwrap();
    let hello = read_frame(&mut s).expect("handshake answered");
    (s, hello)
}

/// A reply that is a connect response for the session `hello` opened, said without the
/// session's own id and password (they differ from server to server).
fn connect_response(r: &[u8], hello: &[u8]) -> Option<String> {
    if r.len() != 37 || r[0..4] != [0; 4] || r[8..16] != hello[8..16] {
        return None;
    }
    let timeout = i32::from_be_bytes(r[4..8].try_into().unwrap());
    let same_passwd = r[16..36] == hello[16..36];
    Some(format!(
        "a connect response for this session: timeout {timeout}, {} password, read-only {}",
        if same_passwd { "its" } else { "another" },
        r[36]
    ))
}

/// One reply frame, or `None` at EOF, reset or timeout.
fn read_frame(s: &mut TcpStream) -> Option<Vec<u8>> {
    let mut len = [0u8; 4];
    s.read_exact(&mut len).ok()?;
    let mut body = vec![0u8; i32::from_be_bytes(len) as usize];
    s.read_exact(&mut body).ok()?;
    Some(body)
}

fn send(s: &mut TcpStream, xid: i32, op: i32, body: &[u8]) -> bool {
    let mut f = Vec::new();
    i32s(&mut f, (8 + body.len()) as i32);
    i32s(&mut f, xid);
    i32s(&mut f, op);
    f.extend_from_slice(body);
    s.write_all(&f).is_ok()
}

/// The zxid of a reply frame.
fn zxid(r: &[u8]) -> i64 {
    i64::from_be_bytes(r[4..12].try_into().unwrap())
}

/// What a server answers to each case: the reply's xid and error, its zxid against the last
/// one (a getData of `/` just before tells it: `new` is an error txn), its body, and whether a
/// ping after it is answered.
fn probe(addr: SocketAddr) -> Vec<String> {
    cases()
        .into_iter()
        .map(|(name, op, body)| {
            let (mut s, hello) = session(addr);
            let mut get_root = Vec::new();
            jstr(&mut get_root, b"/");
            get_root.push(0);
            assert!(send(&mut s, 6, 4, &get_root));
            let last = zxid(&read_frame(&mut s).expect("getData / answered"));
            let reply = if send(&mut s, 7, op, &body) { read_frame(&mut s) } else { None };
            let answer = match &reply {
                Some(r) if connect_response(r, &hello).is_some() => connect_response(r, &hello).unwrap_or_default(),
                Some(r) if r.len() >= 16 => {
                    let xid = i32::from_be_bytes(r[0..4].try_into().unwrap());
                    let z = match zxid(r) {
                        z if z == last => "last".to_string(),
                        z if z == last + 1 => "new".to_string(),
                        z => z.to_string(),
                    };
                    let err = i32::from_be_bytes(r[12..16].try_into().unwrap());
                    let body: String = r[16..].iter().map(|b| format!("{b:02x}")).collect();
                    format!("xid {xid} zxid {z} err {err} body [{body}]")
                }
                Some(r) => format!("a {}-byte reply", r.len()),
                None => "no reply".to_string(),
            };
            let alive =
                send(&mut s, -2, 11, &[]) && read_frame(&mut s).is_some_and(|r| r[0..4] == (-2i32).to_be_bytes());
            format!("{name}: {answer}, then {}", if alive { "a ping is answered" } else { "closed" })
        })
        .collect()
}

#[test]
fn edge_requests_answer_as_zookeeper_does() {
    require_external!("Debian ZooKeeper", zookeeper_installed());
    let zk = ZooKeeperProcess::start();
    let tk = TestkeeperProcess::start(&["--flavor", "zookeeper"]);
    let want = probe(zk.addr());
    let got = probe(tk.addr());
    eprintln!("ZooKeeper 3.8:\n  {}", want.join("\n  "));
    eprintln!("testkeeper --flavor zookeeper:\n  {}", got.join("\n  "));
    assert_eq!(got, want, "testkeeper --flavor zookeeper (left) vs Apache ZooKeeper 3.8 (right)");
    // And the facts docs/flavors.md states.
    for line in [
        "addWatch mode 5: xid 7 zxid last err -5 body [], then a ping is answered",
        "addauth digest nocolon: xid 7 zxid 0 err 0 body [], then a ping is answered",
        "getData invalid UTF-8 path: xid 7 zxid last err -101 body [], then a ping is answered",
        "create invalid UTF-8 path: xid 7 zxid new err -8 body [], then a ping is answered",
        "sasl (102) empty token: xid 7 zxid 0 err 0 body [ffffffff], then a ping is answered",
        "deleteContainer (20) /zookeeper: xid 7 zxid new err -8 body [], then a ping is answered",
        "createSession (-10) empty: xid 7 zxid new err -5 body [], then a ping is answered",
        "createSession (-10) with a timeout: a connect response for this session: timeout 30000, its password, \
         read-only 0, then a ping is answered",
    ] {
        assert!(want.iter().any(|l| l == line), "ZooKeeper no longer answers {line:?}: {want:#?}");
    }
}

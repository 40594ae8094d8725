//! Loopback networking helpers: free ports and four-letter-word queries.
//!
//! Every server a test starts binds 127.0.0.1 on a port chosen here, never a
//! fixed one, so tests can run in parallel and beside anything else.

use std::io::{self, Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::time::{Duration, Instant};

/// A currently free TCP port on 127.0.0.1.
///
/// The port is released before returning, so another process could take it
/// before the caller binds it; servers started with it (ZooKeeper) retry on
/// "address in use" for that reason.
pub fn free_port() -> u16 {
    free_ports(1)[0]
}

/// `n` currently free TCP ports on 127.0.0.1, all different.
///
/// Each is held until all are chosen: ports picked one after another with
/// [`free_port`] can repeat (the kernel may hand a just-released port out
/// again), and a cluster given one port twice fails to start (a fresh-clone
/// CI run once gave node 1's raft port to node 2's HTTP listener).
pub fn free_ports(n: usize) -> Vec<u16> {
    let held: Vec<TcpListener> = (0..n)
        .map(|_| TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).expect("bind 127.0.0.1:0 to find a free port"))
        .collect();
    held.iter().map(|l| l.local_addr().expect("a bound listener's address").port()).collect()
}

/// Sends a ZooKeeper four-letter word (`ruok`, `srvr`, `mntr`, ...) and
/// returns the whole reply; the server closes the connection after replying.
pub fn four_letter_word(addr: SocketAddr, word: &str, timeout: Duration) -> io::Result<String> {
    let mut stream = TcpStream::connect_timeout(&addr, timeout)?;
    stream.set_read_timeout(Some(timeout))?;
    stream.set_write_timeout(Some(timeout))?;
    stream.write_all(word.as_bytes())?;
    let mut reply = Vec::new();
    stream.read_to_end(&mut reply)?;
    Ok(String::from_utf8_lossy(&reply).into_owned())
}

/// One HTTP/1.0 request to a loopback admin endpoint (never chunked, closed after the reply),
/// with the `X-Testkeeper` header its guard wants on writes; returns the status and the body.
///
/// # Errors
/// The endpoint cannot be reached, or its answer is not HTTP.
pub fn http(addr: SocketAddr, method: &str, path: &str, body: &str) -> io::Result<(u16, String)> {
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(5))?;
    s.set_read_timeout(Some(Duration::from_secs(10)))?;
    write!(
        s,
        "{method} {path} HTTP/1.0\r\nHost: {addr}\r\nX-Testkeeper: 1\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )?;
    let mut reply = String::new();
    s.read_to_string(&mut reply)?;
    let (head, body) = reply.split_once("\r\n\r\n").unwrap_or((&reply, ""));
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, format!("not an HTTP answer: {head:?}")))?;
    Ok((status, body.to_string()))
}

/// Polls `probe` every `every` until it returns `Some`, or `deadline` passes.
pub fn poll_until<T>(deadline: Instant, every: Duration, mut probe: impl FnMut() -> Option<T>) -> Option<T> {
    loop {
        if let Some(v) = probe() {
            return Some(v);
        }
        if Instant::now() >= deadline {
            return None;
        }
        std::thread::sleep(every);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn free_ports_are_distinct_and_bindable() {
        let ports = free_ports(16);
        let distinct: std::collections::BTreeSet<u16> = ports.iter().copied().collect();
        assert_eq!(distinct.len(), 16, "{ports:?}");
        let port = free_port();
        assert_ne!(port, 0);
        TcpListener::bind((Ipv4Addr::LOCALHOST, port)).expect("port from free_port binds");
    }

    #[test]
    fn four_letter_word_reads_until_close() {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
        let addr = listener.local_addr().unwrap();
        let server = std::thread::spawn(move || {
            let (mut s, _) = listener.accept().unwrap();
            let mut word = [0u8; 4];
            s.read_exact(&mut word).unwrap();
            assert_eq!(&word, b"ruok");
            s.write_all(b"imok").unwrap();
        });
        let reply = four_letter_word(addr, "ruok", Duration::from_secs(5)).unwrap();
        server.join().unwrap();
        assert_eq!(reply, "imok");
    }

    #[test]
    fn poll_until_gives_up_at_deadline() {
        let deadline = Instant::now() + Duration::from_millis(50);
        let got: Option<()> = poll_until(deadline, Duration::from_millis(10), || None);
        assert!(got.is_none());
        let mut n = 0;
        let deadline = Instant::now() + Duration::from_secs(5);
        let got = poll_until(deadline, Duration::from_millis(1), || {
            n += 1;
            (n == 3).then_some(n)
        });
        assert_eq!(got, Some(3));
    }
}

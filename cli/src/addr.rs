//! Every address flag of the binary is parsed here, and only here: `--target`, `--reference`,
//! `--vs`, `--upstream`, `--oracle`, `--admin` take `HOST:PORT` (`127.0.0.1:9181`,
//! `localhost:9181`, `my-keeper:9181`, `[::1]:9181`), resolved with the standard resolver;
//! `--listen` and `--http` also take a bare port, bound on loopback.
//!
//! A name can resolve to several addresses (`localhost` to `::1` and `127.0.0.1`) while the
//! server listens on only one of them, so a [`HostPort`] keeps them all and
//! [`HostPort::reachable`] picks the first that accepts a connection, as ZooKeeper clients try
//! each address of a connect string in turn.

use std::fmt;
use std::net::{Ipv4Addr, SocketAddr, ToSocketAddrs};
use std::time::Duration;

use crate::exit::CliError;

/// How long [`HostPort::reachable`] tries one address.
const PROBE_TIMEOUT: Duration = Duration::from_secs(3);

/// What the flags' error messages show as valid forms.
const FORMS: &str = "HOST:PORT, e.g. 127.0.0.1:9181, localhost:9181, my-keeper:9181 or [::1]:9181";

/// An address as given on the command line and what it resolved to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostPort {
    /// The text of the flag (shown in reports, so a vendor sees the name they gave).
    pub text: String,
    /// Every address the name resolved to, in the resolver's order; never empty.
    pub addrs: Vec<SocketAddr>,
}

impl fmt::Display for HostPort {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl HostPort {
    /// The first resolved address that accepts a TCP connection; the first address when none
    /// does (connecting to it then reports the error).
    pub async fn reachable(&self) -> SocketAddr {
        if self.addrs.len() > 1 {
            for a in &self.addrs {
                if let Ok(Ok(_)) = tokio::time::timeout(PROBE_TIMEOUT, tokio::net::TcpStream::connect(a)).await {
                    return *a;
                }
            }
        }
        self.addrs[0]
    }

    /// The first resolved address that accepts a TCP connection, or a "no verdict" error
    /// (exit 3) naming the address and why: for the subcommands that need a live target.
    ///
    /// # Errors
    /// No address accepted a connection within the probe timeout.
    pub async fn reach(&self) -> Result<SocketAddr, CliError> {
        let mut why = String::new();
        for a in &self.addrs {
            match tokio::time::timeout(PROBE_TIMEOUT, tokio::net::TcpStream::connect(a)).await {
                Ok(Ok(_)) => return Ok(*a),
                Ok(Err(e)) => why = e.to_string(),
                Err(_) => why = format!("no answer within {PROBE_TIMEOUT:?}"),
            }
        }
        Err(CliError::Unreachable(format!("cannot reach {}: {why} (is a server listening there?)", self.text)))
    }
}

/// Parses and resolves `HOST:PORT` (clap value parser of every client-side address flag).
///
/// # Errors
/// A message naming what is wrong: no port, a bad port, an empty host, or a name the resolver
/// does not know.
pub fn host_port(s: &str) -> Result<HostPort, String> {
    let s = s.trim();
    if s.is_empty() {
        return Err(format!("empty address; expected {FORMS}"));
    }
    // An IPv6 literal needs brackets: `::1:9181` is ambiguous.
    let (host, port) = match s.strip_prefix('[') {
        Some(rest) => {
            let (h, p) = rest.split_once(']').ok_or_else(|| format!("'{s}': unclosed '['; expected {FORMS}"))?;
            (h, p.strip_prefix(':').ok_or_else(|| format!("'{s}': missing :PORT after ']'; expected {FORMS}"))?)
        }
        None => match s.rsplit_once(':') {
            Some((h, _)) if h.contains(':') => {
                return Err(format!("'{s}': an IPv6 address needs brackets, e.g. [::1]:9181"))
            }
            Some((h, p)) => (h, p),
            None => return Err(format!("'{s}': missing :PORT; expected {FORMS}")),
        },
    };
    if host.is_empty() {
        return Err(format!("'{s}': missing host; expected {FORMS}"));
    }
    let port = parse_port(port).map_err(|e| format!("'{s}': {e}"))?;
    let addrs: Vec<SocketAddr> =
        (host, port).to_socket_addrs().map_err(|e| format!("cannot resolve '{host}' (from '{s}'): {e}"))?.collect();
    if addrs.is_empty() {
        return Err(format!("'{host}' (from '{s}') resolved to no address"));
    }
    Ok(HostPort { text: s.to_string(), addrs })
}

/// A port number, with the problem named: not a number, or a number out of range.
fn parse_port(p: &str) -> Result<u16, String> {
    match p.parse::<u64>() {
        Ok(n) => u16::try_from(n).map_err(|_| format!("port {n} is out of range (0 to 65535)")),
        Err(_) => Err(format!("port '{p}' is not a number from 0 to 65535")),
    }
}

/// The servers of one ensemble, `a:2181,b:2181,c:2181` (a newtype, so clap takes the list as
/// one value).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostList(pub Vec<HostPort>);

/// [`host_ports`] as a [`HostList`] (clap value parser).
///
/// # Errors
/// As [`host_ports`].
pub fn host_list(s: &str) -> Result<HostList, String> {
    host_ports(s).map(HostList)
}

/// A comma-separated list of `HOST:PORT` (a multi-node target: `a:2181,b:2181,c:2181`).
///
/// # Errors
/// The first bad element's message, or an empty list.
pub fn host_ports(s: &str) -> Result<Vec<HostPort>, String> {
    let list: Vec<HostPort> = s.split(',').filter(|p| !p.trim().is_empty()).map(host_port).collect::<Result<_, _>>()?;
    if list.is_empty() {
        return Err(format!("empty address list; expected {FORMS}[,HOST:PORT...]"));
    }
    Ok(list)
}

/// A listening address: `HOST:PORT` as above, or a bare `PORT`, which binds loopback
/// (127.0.0.1) so a test server is never exposed by accident.
///
/// # Errors
/// As [`host_port`].
pub fn listen(s: &str) -> Result<SocketAddr, String> {
    let s = s.trim();
    if !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) {
        return Ok(SocketAddr::from((Ipv4Addr::LOCALHOST, parse_port(s)?)));
    }
    Ok(host_port(s)?.addrs[0])
}

/// `--admin`: an HTTP endpoint, `HOST:PORT` with an optional `http://` and trailing `/`;
/// returned as `http://IP:PORT`.
///
/// # Errors
/// Another scheme, a path, or a bad `HOST:PORT`.
pub fn http_endpoint(s: &str) -> Result<String, String> {
    let rest = s.trim().strip_prefix("http://").unwrap_or(s.trim()).trim_end_matches('/');
    if rest.contains("://") || rest.contains('/') {
        return Err(format!("'{s}': expected http://HOST:PORT (no other scheme, no path)"));
    }
    Ok(format!("http://{}", host_port(rest)?.addrs[0]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_ip_name_and_bracketed_ipv6() {
        assert_eq!(host_port("127.0.0.1:9181").unwrap().addrs, vec!["127.0.0.1:9181".parse().unwrap()]);
        let local = host_port("localhost:2181").unwrap();
        assert_eq!(local.text, "localhost:2181");
        assert!(local.addrs.iter().all(|a| a.ip().is_loopback() && a.port() == 2181), "{local:?}");
        assert_eq!(host_port("[::1]:7").unwrap().addrs, vec!["[::1]:7".parse().unwrap()]);
        assert_eq!(host_ports("127.0.0.1:1, localhost:2").unwrap().len(), 2);
    }

    #[test]
    fn rejects_with_a_message_naming_the_problem() {
        for (bad, says) in [
            ("", "empty address"),
            ("9181", "missing :PORT"),
            (":9181", "missing host"),
            ("host:99999", "port 99999 is out of range (0 to 65535)"),
            ("host:http", "port 'http' is not a number"),
            ("::1:9181", "needs brackets"),
            ("[::1", "unclosed"),
            ("no-such-host.invalid:1", "cannot resolve"),
            (",", "empty address list"),
        ] {
            let err = if bad == "," { host_ports(bad).unwrap_err() } else { host_port(bad).unwrap_err() };
            assert!(err.contains(says), "{bad:?}: {err}");
        }
    }

    #[test]
    fn listen_takes_a_bare_port_on_loopback() {
        assert_eq!(listen("0").unwrap(), "127.0.0.1:0".parse().unwrap());
        assert_eq!(listen("9181").unwrap(), "127.0.0.1:9181".parse().unwrap());
        assert_eq!(listen("[::1]:5").unwrap(), "[::1]:5".parse().unwrap());
        assert!(listen("localhost:5").unwrap().ip().is_loopback());
        assert!(listen("nope").is_err());
        assert_eq!(listen("99999").unwrap_err(), "port 99999 is out of range (0 to 65535)");
    }

    #[test]
    fn admin_endpoint_forms() {
        assert_eq!(http_endpoint("127.0.0.1:80").unwrap(), "http://127.0.0.1:80");
        assert_eq!(http_endpoint("http://127.0.0.1:80/").unwrap(), "http://127.0.0.1:80");
        assert!(http_endpoint("https://x:1").is_err() && http_endpoint("http://127.0.0.1:80/api").is_err());
    }

    #[tokio::test]
    async fn reachable_skips_an_address_nobody_listens_on() {
        let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let live = l.local_addr().unwrap();
        let dead = {
            let d = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            d.local_addr().unwrap()
        };
        let hp = HostPort { text: "x".into(), addrs: vec![dead, live] };
        assert_eq!(hp.reachable().await, live);
    }
}

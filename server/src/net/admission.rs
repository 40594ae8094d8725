//! Who may connect: open connections in total and per client IP address (ZooKeeper's
//! `maxClientCnxns`, which `NIOServerCnxnFactory` checks on accept). A connection is counted
//! from accept until its task ends, handshake or not, since an idle socket costs a descriptor
//! all the same.

use std::collections::HashMap;
use std::fmt;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};

/// The open-connection counts of one listener.
#[derive(Debug)]
pub struct Admission {
    max_total: usize,
    max_per_ip: usize,
    open: Mutex<Open>,
}

#[derive(Debug, Default)]
struct Open {
    total: usize,
    by_ip: HashMap<IpAddr, usize>,
}

/// Why a connection was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// `--max-connections` are open already.
    Total(usize),
    /// `--max-connections-per-ip` are open from this address already.
    PerIp(IpAddr, usize),
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Refusal::Total(max) => write!(f, "too many connections: {max} open, the maximum (--max-connections)"),
            Refusal::PerIp(ip, max) => {
                write!(f, "too many connections from {ip}: {max} open, the maximum (--max-connections-per-ip)")
            }
        }
    }
}

/// One admitted connection; dropping it frees its place.
#[derive(Debug)]
pub struct Permit {
    admission: Arc<Admission>,
    ip: IpAddr,
}

impl Admission {
    /// Limits of `max_total` and `max_per_ip` open connections (0: no limit).
    pub fn new(max_total: usize, max_per_ip: usize) -> Arc<Admission> {
        Arc::new(Admission { max_total, max_per_ip, open: Mutex::new(Open::default()) })
    }

    /// Counts a new connection from `ip`, or says why it may not open.
    ///
    /// # Errors
    /// The limit it would pass.
    pub fn admit(self: &Arc<Self>, ip: IpAddr) -> Result<Permit, Refusal> {
        let mut open = self.open.lock().expect("admission lock");
        if self.max_total != 0 && open.total >= self.max_total {
            return Err(Refusal::Total(self.max_total));
        }
        let from_ip = open.by_ip.get(&ip).copied().unwrap_or(0);
        if self.max_per_ip != 0 && from_ip >= self.max_per_ip {
            return Err(Refusal::PerIp(ip, self.max_per_ip));
        }
        open.total += 1;
        open.by_ip.insert(ip, from_ip + 1);
        Ok(Permit { admission: self.clone(), ip })
    }

    /// Connections open now.
    pub fn open(&self) -> usize {
        self.open.lock().expect("admission lock").total
    }
}

impl Drop for Permit {
    fn drop(&mut self) {
        let mut open = self.admission.open.lock().expect("admission lock");
        open.total -= 1;
        if let Some(n) = open.by_ip.get_mut(&self.ip) {
            *n -= 1;
            if *n == 0 {
                open.by_ip.remove(&self.ip);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn per_ip_limit_counts_each_address_apart_and_frees_on_drop() {
        let a = Admission::new(0, 2);
        let p1 = a.admit(ip("127.0.0.1")).unwrap();
        let _p2 = a.admit(ip("127.0.0.1")).unwrap();
        assert_eq!(a.admit(ip("127.0.0.1")).unwrap_err(), Refusal::PerIp(ip("127.0.0.1"), 2));
        let _other = a.admit(ip("127.0.0.2")).expect("another address has its own count");
        drop(p1);
        let _p3 = a.admit(ip("127.0.0.1")).expect("a closed connection frees its place");
        assert_eq!(a.open(), 3);
    }

    #[test]
    fn total_limit_spans_addresses_and_zero_means_none() {
        let a = Admission::new(2, 0);
        let _x = a.admit(ip("10.0.0.1")).unwrap();
        let _y = a.admit(ip("10.0.0.2")).unwrap();
        let refused = a.admit(ip("10.0.0.3")).unwrap_err();
        assert_eq!(refused, Refusal::Total(2));
        assert!(refused.to_string().contains("--max-connections"), "{refused}");
        let none = Admission::new(0, 0);
        let permits: Vec<_> = (0..500).map(|_| none.admit(ip("127.0.0.1")).unwrap()).collect();
        assert_eq!(none.open(), permits.len());
        drop(permits);
        assert_eq!((none.open(), none.open.lock().unwrap().by_ip.len()), (0, 0));
    }
}

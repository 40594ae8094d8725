//! A thread's simulated network: while a simulation runs on a thread (`enter`), servers on it
//! bind in-memory listeners and clients on it connect to them through in-memory pipes, so no
//! socket, no kernel scheduling and no wall clock decides what happens when. Everything lives
//! in a thread-local: a simulation is one thread (a current-thread runtime with paused time),
//! and simulations on other threads never see each other's addresses.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::io;
use std::net::{Ipv4Addr, SocketAddr};

use tokio::io::DuplexStream;
use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver, UnboundedSender};

/// Bytes a pipe buffers each way before the writer waits (a socket's buffer, roughly).
const PIPE_BYTES: usize = 256 * 1024;

/// The first port handed out: listeners and clients count up from here.
const FIRST_PORT: u16 = 20_000;

/// A connection offered to a listener: the server's end and the client's address.
type Offer = (DuplexStream, SocketAddr);

struct Net {
    listeners: BTreeMap<SocketAddr, UnboundedSender<Offer>>,
    next_port: u16,
}

thread_local! {
    static NET: RefCell<Option<Net>> = const { RefCell::new(None) };
}

/// While alive, this thread's network is simulated; dropping it ends that (and forgets every
/// listener).
#[derive(Debug)]
pub struct Guard(());

impl Drop for Guard {
    fn drop(&mut self) {
        let _ = NET.try_with(|n| n.borrow_mut().take());
    }
}

/// Makes this thread's network a simulated one.
///
/// # Panics
/// When one is already active on this thread (simulations do not nest).
pub fn enter() -> Guard {
    NET.with(|n| {
        let mut n = n.borrow_mut();
        assert!(n.is_none(), "invariant: one simulated network per thread");
        *n = Some(Net { listeners: BTreeMap::new(), next_port: FIRST_PORT });
    });
    Guard(())
}

/// Whether this thread's network is simulated.
pub fn active() -> bool {
    NET.try_with(|n| n.borrow().is_some()).unwrap_or(false)
}

fn with<T>(f: impl FnOnce(&mut Net) -> io::Result<T>) -> io::Result<T> {
    NET.with(|n| match n.borrow_mut().as_mut() {
        Some(net) => f(net),
        None => Err(io::Error::other("no simulated network on this thread")),
    })
}

fn next_addr(net: &mut Net) -> io::Result<SocketAddr> {
    let port = net.next_port;
    net.next_port = port.checked_add(1).ok_or_else(|| io::Error::other("simulated network: out of ports"))?;
    Ok(SocketAddr::from((Ipv4Addr::LOCALHOST, port)))
}

/// A listener on the simulated network.
#[derive(Debug)]
pub struct Listener {
    addr: SocketAddr,
    rx: UnboundedReceiver<Offer>,
}

/// Listens on `addr`; port 0 takes the next free port.
///
/// # Errors
/// No simulated network on this thread, or the address is taken.
pub fn bind(addr: SocketAddr) -> io::Result<Listener> {
    with(|net| {
        let addr = if addr.port() == 0 { next_addr(net)? } else { addr };
        if net.listeners.contains_key(&addr) {
            return Err(io::Error::new(io::ErrorKind::AddrInUse, format!("{addr} is in use")));
        }
        let (tx, rx) = unbounded_channel();
        net.listeners.insert(addr, tx);
        Ok(Listener { addr, rx })
    })
}

impl Listener {
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// The next connection and its client's address.
    ///
    /// # Errors
    /// Never while the listener is registered; `NotConnected` if the network went away.
    pub async fn accept(&mut self) -> io::Result<(DuplexStream, SocketAddr)> {
        self.rx.recv().await.ok_or_else(|| io::Error::from(io::ErrorKind::NotConnected))
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        let addr = self.addr;
        let _ = NET.try_with(|n| {
            if let Some(net) = n.borrow_mut().as_mut() {
                net.listeners.remove(&addr);
            }
        });
    }
}

/// Connects to the listener on `addr`, as a client with the next free port.
///
/// # Errors
/// `ConnectionRefused` when nothing listens there (a stopped node).
pub fn connect(addr: SocketAddr) -> io::Result<DuplexStream> {
    with(|net| {
        let refused = || io::Error::new(io::ErrorKind::ConnectionRefused, format!("nothing listens on {addr}"));
        let tx = net.listeners.get(&addr).cloned().ok_or_else(refused)?;
        let me = next_addr(net)?;
        let (client, server) = tokio::io::duplex(PIPE_BYTES);
        tx.send((server, me)).map_err(|_| refused())?;
        Ok(client)
    })
}

#[cfg(test)]
mod tests {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    use super::*;

    #[tokio::test]
    async fn a_connect_reaches_the_listener_and_only_on_this_thread() {
        assert!(!active());
        let _g = enter();
        let mut l = bind("127.0.0.1:0".parse().unwrap()).unwrap();
        let addr = l.local_addr();
        let mut c = connect(addr).unwrap();
        let (mut s, peer) = l.accept().await.unwrap();
        assert_ne!(peer, addr);
        c.write_all(b"ping").await.unwrap();
        let mut b = [0u8; 4];
        s.read_exact(&mut b).await.unwrap();
        assert_eq!(&b, b"ping");
        assert!(std::thread::spawn(|| !active() && connect("127.0.0.1:1".parse().unwrap()).is_err()).join().unwrap());
        drop(l);
        assert_eq!(connect(addr).unwrap_err().kind(), io::ErrorKind::ConnectionRefused);
    }
}

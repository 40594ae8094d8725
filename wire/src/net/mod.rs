//! The byte streams clients and servers talk over: a TCP socket, or, inside a simulation, an
//! in-memory pipe to a listener registered on the same thread (`sim`). Both ends of the
//! protocol (this crate's client, the server's connections) take a [`Stream`], so the one code
//! path runs over either; a TCP stream costs one branch per poll.
//!
//! # Layout
//! - this file: [`Stream`] and its two halves.
//! - `sim`: the thread's simulated network: listeners by address, connects that reach them.

pub mod sim;

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, DuplexStream, ReadBuf};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::TcpStream;

/// A connection: TCP, or an in-memory pipe of a simulation.
#[derive(Debug)]
pub enum Stream {
    Tcp(TcpStream),
    Mem(DuplexStream),
}

/// The reading half of a [`Stream`].
#[derive(Debug)]
pub enum ReadHalf {
    Tcp(OwnedReadHalf),
    Mem(tokio::io::ReadHalf<DuplexStream>),
}

/// The writing half of a [`Stream`].
#[derive(Debug)]
pub enum WriteHalf {
    Tcp(OwnedWriteHalf),
    Mem(tokio::io::WriteHalf<DuplexStream>),
}

impl Stream {
    /// Connects to `addr`: through the thread's simulated network when one is active
    /// (`sim::active`), else over TCP with Nagle off (requests are small and pipelined; Nagle
    /// would hold each one back for an ACK).
    ///
    /// # Errors
    /// The connection is refused or fails.
    pub async fn connect(addr: std::net::SocketAddr) -> io::Result<Stream> {
        if sim::active() {
            return sim::connect(addr).map(Stream::Mem);
        }
        let s = TcpStream::connect(addr).await?;
        s.set_nodelay(true)?;
        Ok(Stream::Tcp(s))
    }

    /// Splits into halves that can be used from different tasks.
    pub fn into_split(self) -> (ReadHalf, WriteHalf) {
        match self {
            Stream::Tcp(s) => {
                let (r, w) = s.into_split();
                (ReadHalf::Tcp(r), WriteHalf::Tcp(w))
            }
            Stream::Mem(s) => {
                let (r, w) = tokio::io::split(s);
                (ReadHalf::Mem(r), WriteHalf::Mem(w))
            }
        }
    }
}

impl WriteHalf {
    /// Ends the connection with a TCP reset instead of a FIN, as a crashed peer or a
    /// middlebox would (SO_LINGER 0, then the FIN a dropped half sends is skipped). A pipe has
    /// no reset: it just closes.
    pub fn reset(self) {
        match self {
            WriteHalf::Tcp(w) => {
                let _ = w.as_ref().set_zero_linger();
                w.forget();
            }
            WriteHalf::Mem(w) => drop(w),
        }
    }
}

macro_rules! delegate_read {
    ($t:ty) => {
        impl AsyncRead for $t {
            fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
                match self.get_mut() {
                    Self::Tcp(s) => Pin::new(s).poll_read(cx, buf),
                    Self::Mem(s) => Pin::new(s).poll_read(cx, buf),
                }
            }
        }
    };
}

macro_rules! delegate_write {
    ($t:ty) => {
        impl AsyncWrite for $t {
            fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
                match self.get_mut() {
                    Self::Tcp(s) => Pin::new(s).poll_write(cx, buf),
                    Self::Mem(s) => Pin::new(s).poll_write(cx, buf),
                }
            }

            fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
                match self.get_mut() {
                    Self::Tcp(s) => Pin::new(s).poll_flush(cx),
                    Self::Mem(s) => Pin::new(s).poll_flush(cx),
                }
            }

            fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
                match self.get_mut() {
                    Self::Tcp(s) => Pin::new(s).poll_shutdown(cx),
                    Self::Mem(s) => Pin::new(s).poll_shutdown(cx),
                }
            }
        }
    };
}

delegate_read!(Stream);
delegate_read!(ReadHalf);
delegate_write!(Stream);
delegate_write!(WriteHalf);

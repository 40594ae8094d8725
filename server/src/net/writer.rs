//! The writing half of a connection: drains the queue the engine fills, coalescing everything
//! already queued into one write, and closes the socket when told. Fault markers in the queue
//! are honoured in order: a delay holds everything queued after it, a reset aborts the socket.
//! What it has written it takes off the connection's backlog, which lets a paused reader on.

use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use testkeeper_wire::net::WriteHalf;
use tokio::io::AsyncWriteExt;
use tokio::sync::mpsc::UnboundedReceiver;
use tokio::sync::oneshot;

use crate::engine::backlog::Backlog;
use crate::engine::Out;

/// Runs until the queue closes or an `Out::Close` (or `Out::Reset`) arrives; then signals `closed`.
pub async fn run(
    mut wr: WriteHalf,
    mut rx: UnboundedReceiver<Out>,
    backlog: Arc<Backlog>,
    closed: oneshot::Sender<()>,
) {
    let mut buf = BytesMut::with_capacity(16 * 1024);
    let mut reset = false;
    'outer: while let Some(first) = rx.recv().await {
        let (mut close, mut delay) = (false, None);
        // The engine hands over a whole batch as one `Frame`; when it is alone in the queue it
        // is written as is, without the copy into `buf` that coalescing several needs.
        let mut single: Option<Bytes> = None;
        let mut next = Some(first);
        let mut bytes = 0;
        while let Some(out) = next {
            if let Out::Frame(b) = &out {
                bytes += b.len();
            }
            match out {
                Out::Frame(b) if buf.is_empty() && single.is_none() => single = Some(b),
                Out::Frame(b) => {
                    if let Some(s) = single.take() {
                        buf.extend_from_slice(&s);
                    }
                    buf.extend_from_slice(&b);
                }
                Out::Close => {
                    close = true;
                    break;
                }
                Out::Reset => {
                    (close, reset) = (true, true);
                    break;
                }
                Out::Delay(d) => {
                    delay = Some(d);
                    break;
                }
            }
            next = rx.try_recv().ok();
        }
        let written = match single.take() {
            Some(s) => wr.write_all(&s).await,
            None if !buf.is_empty() => wr.write_all(&buf).await,
            None => Ok(()),
        };
        backlog.written(bytes);
        if written.is_err() {
            break 'outer;
        }
        buf.clear();
        if close {
            break;
        }
        if let Some(d) = delay {
            tokio::time::sleep(d).await;
        }
    }
    if reset {
        // The socket closes with RST (when the read half goes too), not FIN.
        wr.reset();
    } else {
        let _ = wr.shutdown().await;
    }
    let _ = closed.send(());
}

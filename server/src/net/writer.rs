//! A connection's last writes, after its request loop (`link`) has ended: what the engine
//! still queues for it (the replies to requests already handed over, then the close the
//! connection's end queues) is written in order, fault markers honoured, and the socket is
//! closed. It runs as a task of its own so that a client which never reads its last replies
//! holds no connection slot and no reader.

use std::sync::Arc;

use testkeeper_wire::net::WriteHalf;
use tokio::io::AsyncWriteExt;
use tokio::sync::mpsc::UnboundedReceiver;

use super::outbox::Outbox;
use crate::engine::backlog::Backlog;
use crate::engine::Out;

/// How a connection's writing ends.
pub enum End {
    /// With a FIN, once the queue is written.
    Shutdown,
    /// With a TCP reset (a `reset` fault).
    Reset,
}

/// Writes `outbox`, then everything queued after it, until a close or reset marker or the
/// engine's end of the queue; then ends the socket.
pub async fn finish(mut wr: WriteHalf, mut rx: UnboundedReceiver<Out>, backlog: Arc<Backlog>, mut outbox: Outbox) {
    let end = loop {
        let bytes = outbox.bytes();
        if !bytes.is_empty() {
            let n = bytes.len();
            let written = wr.write_all(bytes).await;
            // Written or lost with the socket: either way no longer queued.
            backlog.written(n);
            outbox.advance(n);
            if written.is_err() {
                break End::Shutdown;
            }
        }
        match outbox.due_marker() {
            Some(Out::Close) => break End::Shutdown,
            Some(Out::Reset) => break End::Reset,
            Some(Out::Delay(d)) => tokio::time::sleep(d).await,
            Some(Out::Frame(_)) => unreachable!("frames join the outbox's bytes"),
            None => match rx.recv().await {
                Some(out) => {
                    outbox.push(out);
                    outbox.take_queued(&mut rx);
                }
                None => break End::Shutdown,
            },
        }
    };
    close(wr, end).await;
}

/// Ends the socket's writing half.
pub async fn close(mut wr: WriteHalf, end: End) {
    match end {
        // The socket closes with RST (when the read half goes too), not FIN.
        End::Reset => wr.reset(),
        End::Shutdown => {
            let _ = wr.shutdown().await;
        }
    }
}

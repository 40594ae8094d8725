//! The writing half of a connection: drains the queue the engine fills, coalescing everything
//! already queued into one write, and closes the socket when told.

use bytes::BytesMut;
use tokio::io::AsyncWriteExt;
use tokio::net::tcp::OwnedWriteHalf;
use tokio::sync::mpsc::UnboundedReceiver;
use tokio::sync::oneshot;

use crate::engine::Out;

/// Runs until the queue closes or an `Out::Close` arrives; then signals `closed`.
pub async fn run(mut wr: OwnedWriteHalf, mut rx: UnboundedReceiver<Out>, closed: oneshot::Sender<()>) {
    let mut buf = BytesMut::with_capacity(16 * 1024);
    'outer: while let Some(first) = rx.recv().await {
        let mut close = false;
        let mut next = Some(first);
        while let Some(out) = next {
            match out {
                Out::Frame(b) => buf.extend_from_slice(&b),
                Out::Close => {
                    close = true;
                    break;
                }
            }
            next = rx.try_recv().ok();
        }
        if !buf.is_empty() && wr.write_all(&buf).await.is_err() {
            break 'outer;
        }
        buf.clear();
        if close {
            break;
        }
    }
    let _ = wr.shutdown().await;
    let _ = closed.send(());
}

//! A running driver's handle: its input channel, its pause switch, and its thread or task,
//! stopped and waited for on `stop` (or on drop).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

use super::super::Input;

/// A running driver: its input channel, and its thread or task.
pub struct DriverHandle {
    pub tx: flume::Sender<Input>,
    /// While true the driver neither ticks nor reads its input (a paused process).
    pub paused: Arc<AtomicBool>,
    pub(super) runs: Runs,
}

pub(super) enum Runs {
    Thread(JoinHandle<()>),
    Task(tokio::task::JoinHandle<()>),
    Stopped,
}

impl DriverHandle {
    /// Stops the driver and waits until it has.
    pub async fn stop(&mut self) {
        // A paused driver reads no input: it would never see the Stop.
        self.paused.store(false, Ordering::Release);
        let _ = self.tx.send(Input::Stop);
        match std::mem::replace(&mut self.runs, Runs::Stopped) {
            Runs::Thread(t) => {
                let _ = tokio::task::spawn_blocking(move || t.join()).await;
            }
            Runs::Task(t) => {
                let _ = t.await;
            }
            Runs::Stopped => {}
        }
    }
}

impl Drop for DriverHandle {
    fn drop(&mut self) {
        // A handle dropped without `stop`: a thread is waited for (it ends at its next turn),
        // a task is cancelled (a drop cannot wait for it). A paused thread would never take
        // that turn: a test that panicked while it held a node paused hung in this join.
        self.paused.store(false, Ordering::Release);
        let _ = self.tx.send(Input::Stop);
        match std::mem::replace(&mut self.runs, Runs::Stopped) {
            Runs::Thread(t) => {
                let _ = t.join();
            }
            Runs::Task(t) => t.abort(),
            Runs::Stopped => {}
        }
    }
}

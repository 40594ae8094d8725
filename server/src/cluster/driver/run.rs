//! The driver's loop, on a thread or as a task: it waits for input or the next tick, takes
//! everything queued, ticks when due, and handles the `Ready`. As a task it runs beside its
//! engine's apply loop in one task (`cluster/events.rs`), and gives it a turn when proposals
//! went to the engine to decide, so the same `Ready` carries their entries.

use std::sync::atomic::Ordering;
use std::time::Duration;
// tokio's clock, not std's: under `testkeeper sim` it is the simulation's paused clock.
use tokio::time::Instant;

use tracing::warn;

use super::super::{Input, Role};
use super::Driver;

/// What woke the driver.
// Lives for one turn on the stack; boxing the input would cost an allocation per message.
#[allow(clippy::large_enum_variant)]
enum Woke {
    Input(Input),
    Timeout,
    Closed,
}

impl Driver {
    /// The driver on its own thread.
    pub(super) fn run(mut self) {
        let mut next_tick = Instant::now() + self.tick;
        if !self.start() {
            return;
        }
        loop {
            if self.paused.load(Ordering::Acquire) {
                std::thread::sleep(Duration::from_millis(5));
                next_tick = Instant::now() + self.tick;
                continue;
            }
            let wait = next_tick.saturating_duration_since(Instant::now());
            let woke = match self.rx.recv_timeout(wait) {
                Ok(input) => Woke::Input(input),
                Err(flume::RecvTimeoutError::Timeout) => Woke::Timeout,
                Err(flume::RecvTimeoutError::Disconnected) => Woke::Closed,
            };
            if !self.turn(woke, &mut next_tick) {
                return;
            }
        }
    }

    /// The driver as a task: the same turns, but a message from a peer (read by a task on the
    /// same runtime) reaches it without waking another thread, and its own messages go out the
    /// same way (on a machine with few cores, those hand-offs were most of a replicated
    /// write's cost).
    pub(super) async fn run_as_task(mut self) {
        let mut next_tick = Instant::now() + self.tick;
        if !self.start() {
            return;
        }
        loop {
            if self.paused.load(Ordering::Acquire) {
                tokio::time::sleep(Duration::from_millis(5)).await;
                next_tick = Instant::now() + self.tick;
                continue;
            }
            let woke = match tokio::time::timeout_at(next_tick, self.rx.recv_async()).await {
                Ok(Ok(input)) => {
                    if self.batching() {
                        tokio::task::yield_now().await;
                    }
                    Woke::Input(input)
                }
                Err(_) => Woke::Timeout,
                Ok(Err(_)) => Woke::Closed,
            };
            if !self.take(woke) {
                return;
            }
            if std::mem::take(&mut self.handed_back) {
                // Proposals went to the engine to decide (`Event::Decide`): the apply loop,
                // polled in this same task right after this yield, decides them, and this
                // turn's one append and one frame per peer carry them too.
                tokio::task::yield_now().await;
                if !self.take(Woke::Timeout) {
                    return;
                }
            }
            if !self.finish_turn(&mut next_tick) {
                return;
            }
            // A driver whose input never runs dry would otherwise keep its worker from the
            // clients' tasks queued behind it: yield once its share of the scheduler is spent.
            tokio::task::coop::consume_budget().await;
        }
    }

    /// Whether requests besides the one that woke the driver are waiting on this node (its
    /// sessions' forwarded proposals, or entries this leader has not applied yet). Then the
    /// driver lets the tasks already runnable (clients' connections, peers' readers) queue
    /// their inputs before its turn, so one append, one frame per peer and one ack carry them
    /// all: with 32 sessions on three processes of a 2-core machine, a leader's frame to a peer
    /// carried about 6 writes instead of about 3, and the nodes' CPU per write fell by about
    /// a tenth. With one request in flight there is nothing to wait for, and the yield (an
    /// extra poll of the reactor) would only add latency.
    fn batching(&self) -> bool {
        let log = &self.node.raft.raft_log;
        self.in_flight.len() > 1 || (self.role == Role::Leader && log.last_index() > log.applied + 1)
    }

    fn start(&mut self) -> bool {
        self.campaign_early();
        let on = self.ready();
        self.net.flush();
        on
    }

    /// One turn of the loop: the input that woke the driver and whatever queued behind it,
    /// the tick if it is due, then the `Ready`. Returns false once the driver must stop.
    fn turn(&mut self, woke: Woke, next_tick: &mut Instant) -> bool {
        self.take(woke) && self.finish_turn(next_tick)
    }

    /// The input that woke the driver and whatever else already queued: one append and one
    /// flush for many proposals. Returns false once the driver must stop.
    fn take(&mut self, woke: Woke) -> bool {
        match woke {
            Woke::Input(Input::Stop) | Woke::Closed => return false,
            Woke::Input(input) => self.input(input),
            Woke::Timeout => {}
        }
        while let Ok(more) = self.rx.try_recv() {
            if matches!(more, Input::Stop) {
                return false;
            }
            self.input(more);
        }
        true
    }

    /// The rest of a turn: the tick if it is due, then the `Ready`.
    fn finish_turn(&mut self, next_tick: &mut Instant) -> bool {
        let now = Instant::now();
        if now >= *next_tick {
            // Ticks missed while the driver was starved are not made up: ten catch-up ticks in
            // a row would start an election before the leader's heartbeat, already queued, is
            // read (on a loaded machine every node of an embedded cluster stalls at once, and
            // re-elected for nothing).
            *next_tick = (*next_tick + self.tick).max(now);
            let slept = now.duration_since(self.last_tick);
            self.last_tick = now;
            self.node.tick();
            self.ticks += 1;
            self.gate_on_tick(slept);
            self.campaign_early();
            self.on_tick();
        }
        let on = self.ready();
        // Everything this turn sent leaves together.
        self.net.flush();
        on
    }

    /// Stands for election now if this is one of the fresh node's early ticks and no leader
    /// is known yet (the peers may not have been listening for the tick before).
    fn campaign_early(&mut self) {
        if self.early_campaigns.first() == Some(&self.ticks) {
            self.early_campaigns.remove(0);
            if self.node.raft.leader_id == 0 {
                if let Err(e) = self.node.campaign() {
                    warn!(node = self.id, error = %e, "standing for election at start failed");
                }
            }
        }
    }
}

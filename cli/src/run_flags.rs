//! The flags `chaos` and `sim` share: the clients and the embedded cluster they run against.

use std::time::Duration;

use clap::Args;
use testkeeper_chaos::config::RunConfig;
use testkeeper_server::broken::Broken;
use testkeeper_server::core::flavor::Flavor;

/// Clients, and the embedded cluster (`chaos` without `--target`, and every `sim`).
#[derive(Args, Debug)]
pub struct RunFlags {
    /// Concurrent client sessions.
    #[arg(long, value_name = "N", default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..=256))]
    pub clients: u32,
    /// Nodes of the embedded cluster.
    #[arg(long, value_name = "N", default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=9))]
    pub nodes: u32,
    /// Flavor of the embedded cluster.
    #[arg(long, value_name = "FLAVOR", default_value = "keeper")]
    pub flavor: Flavor,
    /// Run the embedded cluster deliberately broken, to see the checkers catch it.
    #[arg(long, value_name = "MODE")]
    pub broken: Option<Broken>,
    /// Keys of the register workload.
    #[arg(long, value_name = "N", default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub keys: u32,
    /// How long a client waits for a reply before the op's outcome is unknown (simulated time
    /// in `sim`).
    #[arg(long, value_name = "MS", default_value_t = 1500)]
    pub op_timeout_ms: u64,
}

impl RunFlags {
    /// Sets these on `cfg` (its target aside).
    pub fn apply(&self, cfg: &mut RunConfig) {
        cfg.clients = self.clients as usize;
        cfg.flavor = self.flavor;
        cfg.broken = self.broken;
        cfg.keys = self.keys as usize;
        cfg.op_timeout = Duration::from_millis(self.op_timeout_ms.max(1));
    }
}

//! `testkeeper proxy`: the cross-checking ZooKeeper-wire proxy (crate
//! `testkeeper-conformance`, module `proxy`), with an embedded testkeeper as the default
//! oracle. Prints `testkeeper proxy listening on ADDR` once it accepts connections, each
//! divergence as it is found, and a summary when stopped (SIGINT/SIGTERM); exits non-zero
//! when anything diverged.

use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;

use clap::Args;
use testkeeper_conformance::proxy::{Divergence, Meta, Proxy, ProxyConfig, Recorder};
use testkeeper_server::config::ServerConfig;
use testkeeper_server::core::flavor::Flavor;
use testkeeper_server::embed::TestKeeper;

use crate::addr::{self, HostPort};

/// Flags of `proxy`.
#[derive(Args, Debug)]
pub struct ProxyArgs {
    /// Where clients connect: HOST:PORT, or a bare PORT on 127.0.0.1; port 0 picks one.
    #[arg(long, default_value = "127.0.0.1:0", value_parser = addr::listen)]
    listen: SocketAddr,
    /// The server whose answers clients get.
    #[arg(long, value_name = "HOST:PORT", value_parser = addr::host_port)]
    upstream: HostPort,
    /// The server each request is also sent to and compared with: HOST:PORT, `embedded` (a
    /// testkeeper in this process, of --oracle-flavor), or `none`.
    #[arg(long, default_value = "embedded")]
    oracle: String,
    /// The embedded oracle's flavor (default: the upstream's, from its system nodes); with
    /// --oracle HOST:PORT, what that server is (detected when unset).
    #[arg(long, value_parser = ["keeper", "zookeeper"])]
    oracle_flavor: Option<String>,
    /// Write the traffic as a recording `testkeeper replay` plays back.
    #[arg(long, value_name = "FILE")]
    record: Option<PathBuf>,
    /// Also write each divergence as a JSON line to this file.
    #[arg(long, value_name = "FILE")]
    divergences: Option<PathBuf>,
}

/// Runs the proxy until a signal.
///
/// # Errors
/// A bad flag, an unreachable upstream or oracle, an address that cannot be bound, and
/// "divergences" when any was found.
pub async fn run(args: ProxyArgs) -> Result<(), crate::exit::CliError> {
    let upstream = args.upstream.reachable().await;
    let upstream_flavor = testkeeper_conformance::detect_flavor(upstream).await?;
    let mut embedded = None;
    let (oracle, oracle_flavor) = match args.oracle.as_str() {
        "none" => (None, upstream_flavor.clone()),
        "embedded" => {
            let flavor = args.oracle_flavor.clone().unwrap_or_else(|| upstream_flavor.clone());
            let mut cfg = ServerConfig::new(flavor.parse::<Flavor>()?);
            cfg.listen = "127.0.0.1:0".parse().map_err(|e| format!("{e}"))?;
            let tk = TestKeeper::start(cfg).await.map_err(|e| format!("cannot start the embedded oracle: {e}"))?;
            let a = tk.addr();
            embedded = Some(tk);
            (Some(a), flavor)
        }
        other => {
            let a = addr::host_port(other).map_err(|e| format!("--oracle: {e}"))?.reachable().await;
            let flavor = match &args.oracle_flavor {
                Some(f) => f.clone(),
                None => testkeeper_conformance::detect_flavor(a).await?,
            };
            (Some(a), flavor)
        }
    };
    let recorder = match &args.record {
        Some(p) => {
            let meta = Meta {
                upstream: args.upstream.text.clone(),
                flavor: upstream_flavor.clone(),
                recorded_with: format!("testkeeper proxy {}", env!("CARGO_PKG_VERSION")),
            };
            Some(Recorder::create(p, &meta).map_err(|e| format!("--record {}: {e}", p.display()))?)
        }
        None => None,
    };
    let sink = match &args.divergences {
        Some(p) => Some(std::fs::File::create(p).map_err(|e| format!("--divergences {}: {e}", p.display()))?),
        None => None,
    };
    let sink = std::sync::Mutex::new(sink);
    let on_divergence = move |d: &Divergence| {
        println!("{d}");
        if let Some(f) = sink.lock().unwrap_or_else(std::sync::PoisonError::into_inner).as_mut() {
            let _ = writeln!(f, "{}", serde_json::to_string(d).unwrap_or_default());
        }
    };
    let cfg = ProxyConfig {
        listen: args.listen,
        upstream,
        oracle,
        flavors_differ: oracle.is_some() && oracle_flavor != upstream_flavor,
        recorder,
        on_divergence: Box::new(on_divergence),
    };
    let mut signals = crate::serve::Signals::install().map_err(|e| format!("cannot install signal handlers: {e}"))?;
    let proxy = Proxy::start(cfg).await.map_err(|e| format!("cannot listen on {}: {e}", args.listen))?;
    let oracle_text = match (oracle, &embedded) {
        (None, _) => "no oracle".to_string(),
        (Some(a), Some(_)) => format!("oracle embedded testkeeper ({oracle_flavor}) on {a}"),
        (Some(a), None) => format!("oracle {a} ({oracle_flavor})"),
    };
    eprintln!("proxy: upstream {} ({upstream_flavor}), {oracle_text}", args.upstream);
    {
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "testkeeper proxy listening on {}", proxy.addr());
        let _ = out.flush();
    }
    signals.wait().await;
    let connections = proxy.connections();
    let found = proxy.shutdown().await;
    if let Some(tk) = embedded {
        tk.shutdown().await;
    }
    println!("proxy: {connections} connection(s), {} divergence(s)", found.len());
    if found.is_empty() {
        Ok(())
    } else {
        Err(format!("{} divergence(s) from the oracle", found.len()).into())
    }
}

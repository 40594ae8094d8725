//! `testkeeper`: one binary with subcommands. `serve` runs the server.

mod addr;
mod bench;
mod chaos;
mod client;
mod cluster_embedded;
mod conform;
mod data_dir;
mod digest;
mod exit;
mod faults;
mod keeper_xml;
mod launch;
mod logging;
mod park;
mod progress;
mod proxy;
mod publish;
mod replay;
mod run_flags;
mod serve;
mod serve_cluster;
mod serve_limits;
mod serve_storage;
mod serve_threads;
mod sim;
mod snapshot;
mod snapshot_convert;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// mimalloc instead of glibc malloc: it has no per-allocation header and finer size classes
/// (a 106-byte znode blob takes 112 bytes, not glibc's 128-byte chunk), and allocation was
/// 12-15% of the server's profile. Measured in docs/performance.md. Built without transparent
/// huge pages (`no_thp` in Cargo.toml): with them a start zero-filled five 2 MiB pages before
/// its first answer, and took 1.2-1.7x as long.
#[global_allocator]
static ALLOC: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// A ClickHouse-Keeper-compatible ZooKeeper-protocol server for tests, with a conformance
/// suite and a publisher.
#[derive(Parser)]
#[command(name = "testkeeper", version, about)]
struct Cli {
    #[arg(long, global = true, help = LOG_FORMAT_HELP, value_name = "FORMAT", default_value = "text", value_parser = ["text", "json"])]
    log_format: String,
    #[command(subcommand)]
    command: Command,
}

const LOG_FORMAT_HELP: &str = "Log lines on stderr as `text` (colours only on a terminal, never with NO_COLOR \
    set) or `json` (one object per line, for CI). The level comes from RUST_LOG (default: info for serve and \
    proxy, warn for the client commands)";

const SERVE_ABOUT: &str = "Run the server (in memory, or on a data directory) until SIGINT/SIGTERM";

/// `testkeeper serve ...`, parsed on its own: the same flags, help and errors as through
/// [`Cli`], without building every other subcommand's flag table first. A start is mostly
/// first touches of pages, and those tables were 63 of its page faults (docs/performance.md,
/// "Start time").
#[derive(Parser)]
#[command(name = "testkeeper serve", about = SERVE_ABOUT)]
struct ServeCli {
    // Listed second, as `Cli`'s global flag is in `serve --help`.
    #[arg(long, display_order = 1, help = LOG_FORMAT_HELP, value_name = "FORMAT", default_value = "text", value_parser = ["text", "json"])]
    log_format: String,
    #[command(flatten)]
    args: serve::ServeArgs,
}

impl Cli {
    /// The command line: `serve` alone when it is the first argument (everything after it is
    /// `serve`'s), else the whole tree.
    fn from_args() -> Cli {
        let mut args = std::env::args_os();
        let program = args.next();
        if args.next().is_some_and(|a| a == "serve") {
            // Usage lines name the program as it was called, then `serve`, as through `Cli`.
            let called = program.as_deref().map(std::path::Path::new).and_then(std::path::Path::file_name);
            let name = format!("{} serve", called.map_or("testkeeper".into(), |n| n.to_string_lossy()));
            let s = ServeCli::parse_from(std::iter::once(name.into()).chain(args));
            return Cli { log_format: s.log_format, command: Command::Serve(Box::new(s.args)) };
        }
        Cli::parse()
    }
}

#[derive(Subcommand)]
enum Command {
    // Boxed: its flags outweigh every other subcommand's (clippy::large_enum_variant).
    #[command(about = SERVE_ABOUT)]
    Serve(Box<serve::ServeArgs>),
    /// Walk a server's tree and print its Keeper digest and a server-independent content digest.
    Digest(digest::DigestArgs),
    /// Run an ADR 0067 publication (or, with --chaos, the fault sweep) and report it.
    Publish(publish::PublishArgs),
    /// Load a server (or two, side by side) and report ops/s, latency quantiles and ratios.
    Bench(bench::BenchArgs),
    /// Run the conformance suite against a server; diff with a reference or a golden transcript.
    Conform(conform::ConformArgs),
    /// A ZooKeeper-wire proxy that cross-checks every request against an oracle and can record.
    Proxy(proxy::ProxyArgs),
    /// Play a proxy recording against a server and diff the answers.
    Replay(replay::ReplayArgs),
    /// A running server's faults, sessions and connections, through its admin endpoint.
    Faults(faults::FaultsArgs),
    /// Snapshot files: inspect testkeeper's, convert Keeper and ZooKeeper state to Keeper's,
    /// export testkeeper's as Keeper's.
    Snapshot(snapshot::SnapshotArgs),
    /// For tests in other languages: an embedded cluster driven on stdin (docs/cluster.md).
    #[command(hide = true)]
    ClusterEmbedded(cluster_embedded::ClusterEmbeddedArgs),
    /// Jepsen-style workloads under a seeded nemesis, judged by checkers (docs/chaos.md).
    Chaos(chaos::ChaosArgs),
    /// The chaos run of the embedded cluster as a deterministic simulation: a seed replays
    /// exactly (same trace hash), and `--seeds A..B` sweeps on every core (docs/sim.md).
    Sim(sim::SimArgs),
    /// A shell for any ZooKeeper or Keeper, with clickhouse keeper-client's flags, commands
    /// and output (`-h HOST -p PORT`, `-q "ls /; get /a"`).
    #[command(disable_help_flag = true)]
    Client(client::ClientArgs),
}

fn main() -> ExitCode {
    let began = std::time::Instant::now();
    let cli = Cli::from_args();
    let parsed = std::time::Instant::now();
    // The docs check (tests/tests/docs_commands.rs) parses every documented command line
    // without running it: flags and values checked exactly as a real run checks them.
    if std::env::var_os("TESTKEEPER_PARSE_ONLY").is_some_and(|v| !v.is_empty()) {
        return ExitCode::SUCCESS;
    }
    // A panic anywhere (a broken invariant in apply, a digest mismatch on replay) must stop the
    // whole process: a server task that died while the others keep serving could hand out a
    // tree that has diverged. Print the usual message, then abort.
    // Not in a simulation: there a panic is a finding about one seed (its run reports it, and
    // a sweep goes on with the next seed), and no real server shares the process.
    let default_hook = std::panic::take_hook();
    let simulation = matches!(cli.command, Command::Sim(_));
    std::panic::set_hook(Box::new(move |info| {
        if simulation {
            return default_hook(info);
        }
        default_hook(info);
        eprintln!("testkeeper: fatal: stopping the process after a panic");
        std::process::abort();
    }));
    let quiet = match cli.command {
        Command::Serve(_) | Command::Proxy(_) | Command::ClusterEmbedded(_) => logging::Quiet::Server,
        Command::Sim(_) => logging::Quiet::Simulation,
        _ => logging::Quiet::Client,
    };
    logging::init(&cli.log_format, quiet);
    let logged = std::time::Instant::now();
    // Without --threads, tokio's default (one per core, or TOKIO_WORKER_THREADS), except for a
    // cluster whose members all run on this host: they share its cores (serve_threads.rs).
    let threads = match &cli.command {
        Command::Serve(args) => args.threads.map(usize::from).or_else(|| serve_threads::default_threads(&args.cluster)),
        _ => None,
    };
    // Workers that spin a moment before parking on a loaded server (park.rs); only `serve`.
    let spin = match &cli.command {
        Command::Serve(args) => std::time::Duration::from_micros(args.park_spin_us.into()),
        _ => std::time::Duration::ZERO,
    };
    // One thread is a current-thread runtime: every task runs on the thread that serves,
    // without the hand-off between the main thread and a lone worker (docs/cluster.md,
    // "Threads"); it has no other worker to wake, so no spin either.
    let mut builder = match threads {
        Some(1) => tokio::runtime::Builder::new_current_thread(),
        n => {
            let mut b = tokio::runtime::Builder::new_multi_thread();
            if let Some(n) = n {
                b.worker_threads(n);
            }
            park::install(&mut b, spin);
            b
        }
    };
    let rt = match builder.enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("testkeeper: cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    launch::set(launch::Marks { began, parsed, logging: logged, runtime: std::time::Instant::now() });
    // The simulation builds a runtime of its own per seed, on threads of its own.
    let command = match cli.command {
        Command::Sim(args) => return sim::run(args),
        other => other,
    };
    let command = match command {
        Command::Faults(args) => return rt.block_on(faults::run(args)),
        Command::Chaos(args) => return rt.block_on(chaos::run(args)),
        other => other,
    };
    let result = rt.block_on(async {
        match command {
            Command::Serve(args) => serve::run(*args).await,
            Command::Digest(args) => digest::run(args).await,
            Command::Publish(args) => publish::run(args).await,
            Command::Bench(args) => bench::run(args).await,
            Command::Conform(args) => conform::run(args).await,
            Command::Proxy(args) => proxy::run(args).await,
            Command::Replay(args) => replay::run(args).await,
            Command::ClusterEmbedded(args) => cluster_embedded::run(args).await,
            Command::Faults(_) | Command::Chaos(_) | Command::Sim(_) => {
                unreachable!("handled above, for their own exit codes")
            }
            Command::Snapshot(args) => snapshot::run(args),
            Command::Client(args) => client::run(args).await,
        }
    });
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => e.report("testkeeper"),
    }
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    /// `serve` parsed alone has the flags and help it has through the whole tree: a global
    /// flag added to `Cli` must be added to `ServeCli` as well.
    #[test]
    fn serve_alone_has_the_trees_flags_and_help() {
        let mut tree = super::Cli::command().bin_name("testkeeper");
        tree.build();
        let mut through = tree.find_subcommand("serve").expect("serve is a subcommand").clone();
        let mut alone = super::ServeCli::command().bin_name("testkeeper serve");
        alone.build();
        assert_eq!(alone.render_long_help().to_string(), through.render_long_help().to_string());
        assert_eq!(alone.render_help().to_string(), through.render_help().to_string());
    }
}

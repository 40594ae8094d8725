//! `testkeeper client`: a shell for any ZooKeeper or Keeper with ClickHouse's `clickhouse
//! keeper-client` flags, commands and output (the interpreter is
//! `testkeeper_server::keeper_client`, which Keeper's `/api/v1/commands?command=` route runs
//! too). `-q "cmd; cmd"` runs a script and exits; otherwise an interactive prompt
//! (`/path :) `) with history and completion of commands and paths.
//!
//! As keeper-client, `-h` is the host, so help is `--help` only. Unlike keeper-client, which
//! always exits 0, a `-q` script whose statement failed exits 1 (docs/cli.md, "Exit status").

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use clap::Args;
use rustyline::completion::{Completer, Pair};
use rustyline::error::ReadlineError;
use rustyline::history::DefaultHistory;
use rustyline::{Editor, Helper, Highlighter, Hinter, Validator};
use testkeeper_server::keeper_client::parse::{self, Command};
use testkeeper_server::keeper_client::path::absolute;
use testkeeper_server::keeper_client::text::COMMANDS;
use testkeeper_server::keeper_client::{Output, Session};
use tokio::runtime::Handle;
use tokio::sync::Mutex;

use crate::exit::CliError;

/// Flags of `client` (keeper-client's names).
#[derive(Args, Debug)]
#[command(disable_help_flag = true)]
pub struct ClientArgs {
    /// Server host name.
    #[arg(long, short = 'h', default_value = "localhost")]
    host: String,
    /// Server port.
    #[arg(long, short = 'p', default_value_t = 9181)]
    port: u16,
    /// Run these statements (separated by `;`) and exit.
    #[arg(long, short = 'q', value_name = "QUERY")]
    query: Option<String>,
    /// Connection timeout, in seconds.
    #[arg(long, value_name = "SECONDS", default_value_t = 10)]
    connection_timeout: u64,
    /// Session timeout, in seconds.
    #[arg(long, value_name = "SECONDS", default_value_t = 10)]
    session_timeout: u64,
    /// Operation timeout (four-letter words), in seconds.
    #[arg(long, value_name = "SECONDS", default_value_t = 10)]
    operation_timeout: u64,
    /// History of the interactive prompt (default ~/.keeper-client-history, keeper-client's).
    #[arg(long, value_name = "FILE")]
    history_file: Option<PathBuf>,
    /// Do not ask before `rmr` and `delete_stale_backups` in the interactive prompt (a `-q`
    /// script never asks).
    #[arg(long)]
    no_confirmation: bool,
    /// Print help.
    #[arg(long, action = clap::ArgAction::Help)]
    help: Option<bool>,
}

/// What keeper-client takes as the end of an interactive session.
const EXIT_WORDS: [&str; 6] = ["exit", "quit", "logout", "q", "\\q", ":q"];

/// Runs `client`.
///
/// # Errors
/// The server cannot be reached (exit 3), or a statement of `-q` failed (exit 1).
pub async fn run(args: ClientArgs) -> Result<(), CliError> {
    let target = crate::addr::host_port(&format!("{}:{}", args.host, args.port)).map_err(CliError::Usage)?;
    let addr = target.reach().await?;
    let secs = Duration::from_secs;
    let session =
        Session::connect(addr, secs(args.connection_timeout), secs(args.session_timeout), secs(args.operation_timeout))
            .await
            .map_err(|e| CliError::Unreachable(format!("cannot open a session on {target}: {e}")))?;
    match &args.query {
        Some(q) => {
            let mut session = session;
            let o = session.run(q).await;
            session.close().await;
            print_output(&o);
            match o.err {
                Some(_) => Err(CliError::Failed("a statement failed (above)".into())),
                None => Ok(()),
            }
        }
        None => {
            let session = Arc::new(Mutex::new(session));
            let handle = Handle::current();
            let history = args.history_file.clone().or_else(default_history);
            let confirm = !args.no_confirmation;
            let shared = session.clone();
            tokio::task::spawn_blocking(move || interactive(&handle, &shared, history, confirm))
                .await
                .map_err(|e| format!("the prompt stopped: {e}"))??;
            if let Ok(s) = Arc::try_unwrap(session) {
                s.into_inner().close().await;
            }
            Ok(())
        }
    }
}

fn print_output(o: &Output) {
    print!("{}", o.out);
    if let Some(e) = &o.err {
        eprintln!("{e}");
    }
}

fn default_history() -> Option<PathBuf> {
    std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".keeper-client-history"))
}

/// The prompt loop, on a blocking thread (rustyline reads the terminal synchronously);
/// statements run on the runtime through `handle`.
fn interactive(
    handle: &Handle,
    session: &Arc<Mutex<Session>>,
    history: Option<PathBuf>,
    confirm: bool,
) -> Result<(), CliError> {
    let mut ed: Editor<Paths, DefaultHistory> =
        Editor::new().map_err(|e| CliError::Failed(format!("cannot open the terminal: {e}")))?;
    ed.set_helper(Some(Paths { handle: handle.clone(), session: session.clone() }));
    if let Some(h) = &history {
        let _ = ed.load_history(h);
    }
    loop {
        let cwd = handle.block_on(async { session.lock().await.cwd.clone() });
        let line = match ed.readline(&format!("{cwd} :) ")) {
            Ok(l) => l,
            Err(ReadlineError::Interrupted) => continue,
            Err(ReadlineError::Eof) => break,
            Err(e) => return Err(CliError::Failed(format!("reading the prompt: {e}"))),
        };
        let text = line.trim();
        if text.is_empty() {
            continue;
        }
        let _ = ed.add_history_entry(text);
        if EXIT_WORDS.contains(&text.trim_end_matches(';')) {
            break;
        }
        if let Some(question) = confirm.then(|| confirmation(text, &cwd)).flatten() {
            // keeper-client's question, then `[y/n]`: only `y` or `Y` goes on.
            println!("{question} Continue?");
            if !matches!(ed.readline("[y/n] ").as_deref().map(str::trim), Ok("y" | "Y")) {
                continue;
            }
        }
        let o = handle.block_on(async { session.lock().await.run(text).await });
        print_output(&o);
    }
    if let Some(h) = &history {
        let _ = ed.save_history(h);
    }
    println!();
    Ok(())
}

/// What keeper-client asks before a line that deletes subtrees (`rmr`,
/// `delete_stale_backups`), in its words.
fn confirmation(text: &str, cwd: &str) -> Option<String> {
    parse::parse(text).ok()?.iter().find_map(|c| match c {
        Command::Rmr { path, .. } => Some(format!("You are going to recursively delete path {}", absolute(cwd, path))),
        Command::DeleteStaleBackups => {
            Some("You are going to delete all inactive backups in /clickhouse/backups.".to_string())
        }
        _ => None,
    })
}

/// Completion: command names first, then the children of the typed path's parent.
#[derive(Helper, Hinter, Highlighter, Validator)]
struct Paths {
    handle: Handle,
    session: Arc<Mutex<Session>>,
}

impl Completer for Paths {
    type Candidate = Pair;

    fn complete(&self, line: &str, pos: usize, _: &rustyline::Context<'_>) -> rustyline::Result<(usize, Vec<Pair>)> {
        let before = &line[..pos];
        let start = before.rfind(char::is_whitespace).map_or(0, |i| i + 1);
        let word = &before[start..];
        let pair = |s: String| Pair { display: s.clone(), replacement: s };
        if start == 0 {
            let names = COMMANDS.iter().filter(|c| c.starts_with(word)).map(|c| pair((*c).to_string()));
            return Ok((0, names.collect()));
        }
        // The parent of what is typed, and the prefix of the child's name.
        let (dir, prefix) = word.rsplit_once('/').map_or(("", word), |(d, p)| (d, p));
        let children = self.handle.block_on(async {
            let s = self.session.lock().await;
            let parent = if word.starts_with('/') && dir.is_empty() { "/".into() } else { absolute(&s.cwd, dir) };
            s.client().get_children(&parent, false).await.unwrap_or_default()
        });
        let mut names: Vec<String> = children.into_iter().filter(|c| c.starts_with(prefix)).collect();
        names.sort();
        let at = start + word.len() - prefix.len();
        Ok((at, names.into_iter().map(pair).collect()))
    }
}

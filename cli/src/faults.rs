//! `testkeeper faults`: a running server's faults, sessions and connections from a shell,
//! through its admin endpoint (`serve --http`), as toxiproxy-cli does for Toxiproxy.
//!
//! Exit status, so a script can tell the cases apart: 0 done; 1 the server said no (a rule
//! that does not parse, no rule, session or connection with that id); 2 bad flags; 3 the admin
//! endpoint did not answer.

use std::process::ExitCode;
use std::time::{Duration, UNIX_EPOCH};

use clap::{Args, Subcommand};
use serde_json::Value;
use testkeeper_server::http::client::{AdminClient, AdminError};

/// Flags of `faults`.
#[derive(Args, Debug)]
pub struct FaultsArgs {
    /// The server's admin endpoint (`serve --http`): HOST:PORT, a bare PORT on 127.0.0.1, or
    /// http://HOST:PORT. Also read from $TESTKEEPER_ADMIN.
    #[arg(long, global = true, value_name = "ADDR", env = "TESTKEEPER_ADMIN", value_parser = admin_endpoint)]
    admin: Option<String>,
    /// Print the endpoint's JSON answer as it is.
    #[arg(long, global = true)]
    json: bool,
    #[command(subcommand)]
    command: FaultsCommand,
}

#[derive(Subcommand, Debug)]
enum FaultsCommand {
    /// Install rules (KIND[:key=value,...], docs/faults.md); prints each one's id.
    Add {
        #[arg(required = true, value_name = "RULE")]
        rules: Vec<String>,
    },
    /// The installed rules with their match and firing counts.
    List,
    /// Remove one rule by id.
    Remove { id: u64 },
    /// Remove every rule (the event log stays).
    Clear,
    /// The faults that fired, oldest first.
    Events {
        /// Only events after this sequence number.
        #[arg(long, value_name = "SEQ")]
        since: Option<u64>,
        /// Keep printing new events as they fire (until interrupted).
        #[arg(long)]
        follow: bool,
    },
    /// Expire a session now (id as 0x... or decimal), as its timeout would.
    ExpireSession { id: String },
    /// The live sessions.
    Sessions,
    /// The open client connections.
    Connections,
    /// Close a connection as a dropped link would (its session lives on).
    DropConnection { id: u64 },
    /// An empty tree, no sessions, no rules: a fresh server on the same address.
    Reset,
}

/// `--admin`: as `serve --http` takes it (a bare port is loopback), with an optional http://.
fn admin_endpoint(s: &str) -> Result<String, String> {
    let rest = s.trim().strip_prefix("http://").unwrap_or(s.trim()).trim_end_matches('/');
    if rest.parse::<u16>().is_ok() {
        return Ok(format!("http://127.0.0.1:{rest}"));
    }
    crate::addr::http_endpoint(s)
}

/// A failure and the exit status it maps to.
struct Failure {
    code: u8,
    message: String,
}

impl From<AdminError> for Failure {
    fn from(e: AdminError) -> Failure {
        let code = if matches!(e, AdminError::Unreachable(_)) { 3 } else { 1 };
        let message = match &e {
            AdminError::Status { what, status, body } => {
                let why = serde_json::from_str::<Value>(body)
                    .ok()
                    .and_then(|v| v["error"].as_str().map(str::to_string))
                    .unwrap_or_else(|| body.trim().to_string());
                format!("{what}: HTTP {status}: {why}")
            }
            AdminError::Unreachable(_) => format!("{e} (is `testkeeper serve --http` running there?)"),
        };
        Failure { code, message }
    }
}

/// Runs the subcommand; the exit status follows the module docs.
pub async fn run(args: FaultsArgs) -> ExitCode {
    match execute(args).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(f) => {
            eprintln!("testkeeper faults: {}", f.message);
            ExitCode::from(f.code)
        }
    }
}

fn parse(body: &str) -> Value {
    serde_json::from_str(body).unwrap_or(Value::Null)
}

async fn execute(args: FaultsArgs) -> Result<(), Failure> {
    let Some(url) = args.admin.as_deref() else {
        return Err(Failure { code: 2, message: "--admin ADDR (or $TESTKEEPER_ADMIN) is required".into() });
    };
    let admin = AdminClient::new(url).map_err(|e| Failure { code: 2, message: e.to_string() })?;
    let json = args.json;
    let show = |body: &str| {
        if json {
            println!("{}", body.trim_end());
        }
        json
    };
    match args.command {
        FaultsCommand::Add { rules } => {
            for rule in rules {
                let body = admin.request("POST", "/api/v1/faults", "text/plain", &rule).await?;
                if !show(&body) {
                    let v = parse(&body);
                    println!("rule {} installed: {}", v["id"], v["rule"].as_str().unwrap_or(&rule));
                }
            }
        }
        FaultsCommand::List => {
            let body = admin.request("GET", "/api/v1/faults", "", "").await?;
            if !show(&body) {
                let v = parse(&body);
                let rules = v["rules"].as_array().cloned().unwrap_or_default();
                println!("seed {}, {} rule(s)", v["seed"], rules.len());
                for r in rules {
                    let done = if r["exhausted"].as_bool() == Some(true) { ", used up" } else { "" };
                    println!(
                        "  {:>3}  {}  (matched {}, fired {}{done})",
                        r["id"],
                        r["rule"].as_str().unwrap_or("?"),
                        r["matched"],
                        r["fired"]
                    );
                }
            }
        }
        FaultsCommand::Remove { id } => {
            admin.request("DELETE", &format!("/api/v1/faults/{id}"), "", "").await?;
            println!("rule {id} removed");
        }
        FaultsCommand::Clear => {
            admin.request("DELETE", "/api/v1/faults", "", "").await?;
            println!("every rule removed");
        }
        FaultsCommand::Events { since, follow } => events(&admin, since, follow, json).await?,
        FaultsCommand::ExpireSession { id } => {
            let body = admin.request("POST", &format!("/api/v1/sessions/{id}/expire"), "application/json", "").await?;
            if !show(&body) {
                println!("session {} expired", parse(&body)["expired"].as_str().unwrap_or(&id));
            }
        }
        FaultsCommand::Sessions => {
            let body = admin.request("GET", "/api/v1/sessions", "", "").await?;
            if !show(&body) {
                for s in parse(&body)["sessions"].as_array().cloned().unwrap_or_default() {
                    let conn = s["connection"].as_u64().map_or("disconnected".to_string(), |c| {
                        format!("connection {c} from {}", s["peer"].as_str().unwrap_or("?"))
                    });
                    println!(
                        "{}  timeout {} ms, expires in {} ms, {} ephemeral(s), {conn}{}",
                        s["id"].as_str().unwrap_or("?"),
                        s["timeout_ms"],
                        s["expires_in_ms"],
                        s["ephemerals"],
                        if s["closing"].as_bool() == Some(true) { ", closing" } else { "" }
                    );
                }
            }
        }
        FaultsCommand::Connections => {
            let body = admin.request("GET", "/api/v1/connections", "", "").await?;
            if !show(&body) {
                for c in parse(&body)["connections"].as_array().cloned().unwrap_or_default() {
                    println!(
                        "{:>4}  {}  session {}, {} received, {} sent, last {}{}",
                        c["id"],
                        c["peer"].as_str().unwrap_or("?"),
                        c["session"].as_str().unwrap_or("?"),
                        c["received"],
                        c["sent"],
                        c["last_op"].as_str().unwrap_or("?"),
                        if c["blackholed"].as_bool() == Some(true) { ", black-holed" } else { "" }
                    );
                }
            }
        }
        FaultsCommand::DropConnection { id } => {
            admin.request("DELETE", &format!("/api/v1/connections/{id}"), "", "").await?;
            println!("connection {id} closed");
        }
        FaultsCommand::Reset => {
            let body = admin.request("POST", "/api/v1/reset", "application/json", "").await?;
            if !show(&body) {
                println!("reset: {} znode(s), no sessions, no rules", parse(&body)["znodes"]);
            }
        }
    }
    Ok(())
}

/// One event as a line: when, what fired, on which request, and what became of it.
pub fn describe_event(e: &Value) -> String {
    let when = e["time_ms"]
        .as_u64()
        .map(|ms| humantime::format_rfc3339_millis(UNIX_EPOCH + Duration::from_millis(ms)).to_string())
        .unwrap_or_else(|| "?".into());
    let path = e["path"].as_str().map(|p| format!(" {p}")).unwrap_or_default();
    let delay = e["delay_ms"].as_u64().map(|d| format!(" held {d} ms,")).unwrap_or_default();
    let applied = if e["applied"].as_bool() == Some(true) { "applied" } else { "not applied" };
    let tap = if e["tap"].as_bool() == Some(true) { " (tap: changes nothing)" } else { "" };
    format!(
        "#{} {when} rule {} {}: {}{path} session {} xid {} at zxid {},{delay} {applied}{tap}",
        e["seq"],
        e["rule"],
        e["kind"].as_str().unwrap_or("?"),
        e["op"].as_str().unwrap_or("?"),
        e["session"].as_str().unwrap_or("?"),
        e["xid"],
        e["zxid"].as_str().unwrap_or("?"),
    )
}

async fn events(admin: &AdminClient, since: Option<u64>, follow: bool, json: bool) -> Result<(), Failure> {
    let mut after = since;
    loop {
        let path = after.map_or("/api/v1/faults/events".to_string(), |s| format!("/api/v1/faults/events?since={s}"));
        let body = admin.request("GET", &path, "", "").await?;
        let v = parse(&body);
        let list = v["events"].as_array().cloned().unwrap_or_default();
        for e in &list {
            if json {
                println!("{e}");
            } else {
                println!("{}", describe_event(e));
            }
            after = e["seq"].as_u64().or(after);
        }
        if !follow {
            if !json && list.is_empty() {
                println!("no fault fired (total {})", v["total"]);
            }
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn admin_forms_and_event_lines() {
        assert_eq!(admin_endpoint("9182").unwrap(), "http://127.0.0.1:9182");
        assert_eq!(admin_endpoint("http://127.0.0.1:9182/").unwrap(), "http://127.0.0.1:9182");
        assert!(admin_endpoint("localhost:1").unwrap().starts_with("http://"));
        let e = serde_json::json!({"seq": 3, "rule": 1, "kind": "delay", "op": "getData", "path": "/a",
            "session": "0x1", "xid": 4, "zxid": "0x9", "applied": true, "time_ms": 0, "delay_ms": 120, "tap": false});
        assert_eq!(
            describe_event(&e),
            "#3 1970-01-01T00:00:00.000Z rule 1 delay: getData /a session 0x1 xid 4 at zxid 0x9, held 120 ms, applied"
        );
    }
}

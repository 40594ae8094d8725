//! Runs one parsed statement the way keeper-client's `execute` does (ClickHouse
//! `programs/keeper-client/Commands.cpp`) and appends what it prints. A failed request stops
//! the line with keeper-client's message (`text::coordination_error`).

use std::collections::VecDeque;
use std::fmt::Write as _;

use testkeeper_wire::client::{Client, ClientError};
use testkeeper_wire::records::create::CreateRequest;
use testkeeper_wire::records::data::{CheckVersionRequest, DeleteRequest};
use testkeeper_wire::response::MultiResult;
use testkeeper_wire::{Acl, CreateOp, OpCode, Request, ZkError};

use super::parse::Command;
use super::path::{absolute, join};
use super::text::{coordination_error, error_message, HELP};
use super::Session;

/// Why a statement stopped its line; each prints as keeper-client words it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StatementError {
    /// The server refused a request on `path`: `Coordination error: <message>, path <path>`.
    Request { error: ZkError, path: String },
    /// The client failed otherwise (a timeout, a bad reply) on `path`.
    Client { message: String, path: String },
    /// `cd` to a node that does not exist.
    NoSuchPath(String),
    /// A `cp`/`mv` multi failed at op `op` on `path` for a reason other than a version race.
    Transaction { reason: String, op: usize, path: String },
    /// A four-letter word got no answer from `addr`.
    FourLetterWord { word: String, addr: std::net::SocketAddr, why: String },
}

impl std::fmt::Display for StatementError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StatementError::Request { error, path } => f.write_str(&coordination_error(*error, path)),
            StatementError::Client { message, path } => write!(f, "Coordination error: {message}, path {path}"),
            StatementError::NoSuchPath(path) => write!(f, "Path {path} does not exist"),
            StatementError::Transaction { reason, op, path } => {
                write!(f, "Transaction failed ({reason}): Op #{op}, path: {path}")
            }
            StatementError::FourLetterWord { word, addr, why } => {
                write!(f, "four-letter word '{word}' to {addr}: {why}")
            }
        }
    }
}

impl std::error::Error for StatementError {}

/// keeper-client's `cp`/`mv` gives up after this many version races (`CPMVOperation::kTryLimit`).
const CP_MV_TRIES: u32 = 1000;

/// A request's failure as keeper-client words it for `path`.
fn failed(path: &str) -> impl Fn(ClientError) -> StatementError + '_ {
    move |e| match e {
        ClientError::Zk(error) => StatementError::Request { error, path: path.into() },
        ClientError::ConnectionLoss(_) => StatementError::Request { error: ZkError::ConnectionLoss, path: path.into() },
        other => StatementError::Client { message: other.to_string(), path: path.into() },
    }
}

/// A server error on `path`, as a request would have had it.
fn refused(error: ZkError, path: &str) -> StatementError {
    StatementError::Request { error, path: path.into() }
}

/// Runs `cmd` on `s`, appending its output to `out`.
///
/// # Errors
/// keeper-client's message for the request that failed.
pub async fn execute(s: &mut Session, cmd: &Command, out: &mut String) -> Result<(), StatementError> {
    let abs = |p: &str| absolute(&s.cwd, p);
    let c = &s.client;
    match cmd {
        Command::Ls(p) => {
            let path = p.as_deref().map_or_else(|| s.cwd.clone(), abs);
            let mut kids = c.get_children(&path, false).await.map_err(failed(&path))?;
            kids.sort();
            let _ = writeln!(out, "{}", kids.join(" "));
        }
        Command::Cd(None) => {}
        Command::Cd(Some(p)) => {
            let path = abs(p);
            if c.exists(&path, false).await.map_err(failed(&path))?.is_some() {
                s.cwd = path;
            } else {
                return Err(StatementError::NoSuchPath(path));
            }
        }
        Command::Set { path, value, version } => {
            let path = abs(path);
            c.set_data(&path, value.as_bytes(), version.unwrap_or(-1)).await.map_err(failed(&path))?;
        }
        Command::Create { path, value, mode } => {
            let path = abs(path);
            c.create(&path, value.as_bytes(), &Acl::open(), mode.flags()).await.map_err(failed(&path))?;
        }
        Command::Touch(p) => {
            let path = abs(p);
            match c.create(&path, b"", &Acl::open(), 0).await {
                Ok(_) | Err(ClientError::Zk(ZkError::NodeExists)) => {}
                Err(e) => return Err(failed(&path)(e)),
            }
        }
        Command::Get(p) => {
            let path = abs(p);
            let (data, _) = c.get_data(&path, false).await.map_err(failed(&path))?;
            let _ = writeln!(out, "{}", String::from_utf8_lossy(&data));
        }
        Command::Exists(p) => {
            let path = abs(p);
            let there = c.exists(&path, false).await.map_err(failed(&path))?.is_some();
            let _ = writeln!(out, "{}", u8::from(there));
        }
        Command::GetStat(p) => {
            let path = p.as_deref().map_or_else(|| s.cwd.clone(), abs);
            let (_, st) = c.get_data(&path, false).await.map_err(failed(&path))?;
            let (czxid, mzxid, pzxid, ctime, mtime) = (st.czxid, st.mzxid, st.pzxid, st.ctime, st.mtime);
            let (version, cversion, aversion, owner) = (st.version, st.cversion, st.aversion, st.ephemeral_owner);
            let (len, kids) = (st.data_length, st.num_children);
            let _ = write!(
                out,
                "cZxid = {czxid}\nmZxid = {mzxid}\npZxid = {pzxid}\nctime = {ctime}\nmtime = {mtime}\n\
                 version = {version}\ncversion = {cversion}\naversion = {aversion}\nephemeralOwner = {owner}\n\
                 dataLength = {len}\nnumChildren = {kids}\n"
            );
        }
        Command::FindSuperNodes { threshold, path } => {
            let root = abs(path);
            walk(c, &root, |p, kids| {
                if kids as u64 >= *threshold {
                    let _ = writeln!(out, "{p}\t{kids}");
                }
            })
            .await?;
        }
        Command::FindBigFamily { path, n } => {
            let root = abs(path);
            let mut sizes = subtree_sizes(c, &root).await?;
            sizes.sort_by(|a, b| b.cmp(a));
            for (size, p) in sizes.iter().take(usize::try_from(*n).unwrap_or(usize::MAX)) {
                let _ = writeln!(out, "{p}\t{size}");
            }
        }
        Command::Rm { path, version } => {
            let path = abs(path);
            c.delete(&path, version.unwrap_or(-1)).await.map_err(failed(&path))?;
        }
        Command::Rmr { path, limit } => remove_recursive(c, &abs(path), *limit).await?,
        Command::Sync(p) => {
            let path = abs(p);
            let synced = c.sync(&path).await.map_err(failed(&path))?;
            let _ = writeln!(out, "{synced}");
        }
        Command::Help => {
            for line in HELP {
                let _ = writeln!(out, "{line}");
            }
        }
        Command::Flwc(word) => {
            let answer = four_letter_word(s, word).await?;
            let _ = writeln!(out, "{answer}");
        }
        Command::GetDirectChildrenNumber(p) => {
            let path = abs(p);
            let (_, st) = c.get_data(&path, false).await.map_err(failed(&path))?;
            let _ = writeln!(out, "{}", st.num_children);
        }
        Command::GetAllChildrenNumber(p) => {
            let path = abs(p);
            let mut total = 0u64;
            walk(c, &path, |_, kids| total += kids as u64).await?;
            let _ = writeln!(out, "{total}");
        }
        Command::Cp { src, dest } => copy(c, &abs(src), &abs(dest), false).await?,
        Command::Mv { src, dest } => copy(c, &abs(src), &abs(dest), true).await?,
        Command::DeleteStaleBackups => delete_stale_backups(c, out).await?,
    }
    Ok(())
}

/// Visits `root` and every node under it breadth-first, children in name order, with each
/// node's number of children. A node deleted meanwhile is skipped, as keeper-client's
/// `tryGetChildren` does.
async fn walk(c: &Client, root: &str, mut visit: impl FnMut(&str, usize)) -> Result<(), StatementError> {
    let mut queue = VecDeque::from([root.to_string()]);
    let mut first = true;
    while let Some(p) = queue.pop_front() {
        let mut kids = match c.get_children(&p, false).await {
            Ok(k) => k,
            Err(ClientError::Zk(ZkError::NoNode)) if !first => continue,
            Err(e) => return Err(failed(&p)(e)),
        };
        first = false;
        kids.sort();
        visit(&p, kids.len());
        queue.extend(kids.iter().map(|k| join(&p, k)));
    }
    Ok(())
}

/// (nodes in the subtree, path) for `root` and every node under it.
async fn subtree_sizes(c: &Client, root: &str) -> Result<Vec<(u64, String)>, StatementError> {
    let mut order: Vec<(String, Vec<String>)> = Vec::new();
    let mut queue = VecDeque::from([root.to_string()]);
    while let Some(p) = queue.pop_front() {
        let kids = match c.get_children(&p, false).await {
            Ok(k) => k,
            Err(ClientError::Zk(ZkError::NoNode)) if p != root => continue,
            Err(e) => return Err(failed(&p)(e)),
        };
        let kids: Vec<String> = kids.iter().map(|k| join(&p, k)).collect();
        queue.extend(kids.iter().cloned());
        order.push((p, kids));
    }
    // Children come after their parent in breadth-first order: sum from the end.
    let mut size: std::collections::HashMap<String, u64> = std::collections::HashMap::new();
    for (p, kids) in order.iter().rev() {
        let total = 1 + kids.iter().map(|k| size.get(k).copied().unwrap_or(0)).sum::<u64>();
        size.insert(p.clone(), total);
    }
    Ok(order.into_iter().map(|(p, _)| (size[&p], p)).collect())
}

/// `rmr`: the subtree, children before parents, if it has at most `limit` nodes; a bigger one
/// is refused with NOTEMPTY and nothing deleted, as Keeper's removeRecursive with a limit.
async fn remove_recursive(c: &Client, root: &str, limit: u64) -> Result<(), StatementError> {
    let mut all = subtree_sizes(c, root).await?;
    if all.len() as u64 > limit {
        return Err(refused(ZkError::NotEmpty, root));
    }
    // Deepest first.
    all.sort_by_key(|(_, p)| std::cmp::Reverse(p.matches('/').count()));
    for (_, p) in all {
        match c.delete(&p, -1).await {
            Ok(()) | Err(ClientError::Zk(ZkError::NoNode)) => {}
            Err(e) => return Err(failed(&p)(e)),
        }
    }
    Ok(())
}

/// `cp`/`mv`: a multi of check(src, version), create(dest, data) and, for `mv`, delete(src,
/// version), retried while the source's version moves under it.
async fn copy(c: &Client, src: &str, dest: &str, remove_src: bool) -> Result<(), StatementError> {
    for _ in 0..CP_MV_TRIES {
        let (data, st) = c.get_data(src, false).await.map_err(failed(src))?;
        let mut ops = vec![
            Request::Check(CheckVersionRequest { path: src.into(), version: st.version }),
            Request::Create(CreateOp {
                op: OpCode::Create,
                req: CreateRequest { path: dest.into(), data: Some(data), acl: Acl::open(), flags: 0 },
                ttl: 0,
            }),
        ];
        if remove_src {
            ops.push(Request::Delete(DeleteRequest { path: src.into(), version: st.version }));
        }
        let paths = [src, dest, src];
        let results = c.multi(ops).await.map_err(failed(src))?;
        let failure = results.iter().enumerate().find_map(|(i, r)| match r {
            MultiResult::Error(code) | MultiResult::OpError(_, code) if *code != 0 => Some((i, *code)),
            _ => None,
        });
        match failure.map(|(i, code)| (i, ZkError::from_code(code))) {
            None => return Ok(()),
            Some((_, Some(ZkError::BadVersion))) => continue,
            Some((i, e)) => {
                let reason = e.map_or_else(|| "unknown error".to_string(), |e| error_message(e).to_string());
                return Err(StatementError::Transaction { reason, op: i, path: paths[i].into() });
            }
        }
    }
    Err(refused(ZkError::BadVersion, src))
}

/// A four-letter word on a connection of its own (the server closes it after answering).
async fn four_letter_word(s: &Session, word: &str) -> Result<String, StatementError> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let talk = async {
        let mut conn = tokio::net::TcpStream::connect(s.addr).await?;
        conn.write_all(word.as_bytes()).await?;
        let mut answer = Vec::new();
        conn.read_to_end(&mut answer).await?;
        Ok::<_, std::io::Error>(String::from_utf8_lossy(&answer).into_owned())
    };
    match tokio::time::timeout(s.op_timeout, talk).await {
        Ok(Ok(a)) => Ok(a),
        Ok(Err(e)) => Err(StatementError::FourLetterWord { word: word.into(), addr: s.addr, why: e.to_string() }),
        Err(_) => Err(StatementError::FourLetterWord {
            word: word.into(),
            addr: s.addr,
            why: format!("no answer within {:?}", s.op_timeout),
        }),
    }
}

/// `delete_stale_backups`: every backup under /clickhouse/backups without an `alive*` stage
/// node is removed; the lines are keeper-client's (a `std::filesystem::path` prints quoted).
async fn delete_stale_backups(c: &Client, out: &mut String) -> Result<(), StatementError> {
    let root = "/clickhouse/backups";
    let mut backups = c.get_children(root, false).await.map_err(failed(root))?;
    backups.sort();
    for b in backups {
        let path = join(root, &b);
        let _ = writeln!(out, "Found backup \"{path}\", checking if it's active");
        let stage = join(&path, "stage");
        let stages = c.get_children(&stage, false).await.map_err(failed(&stage))?;
        if stages.iter().any(|s| s.starts_with("alive")) {
            let _ = writeln!(out, "Backup \"{path}\" is active, not going to delete");
            continue;
        }
        let _ = writeln!(out, "Backup \"{path}\" is not active, deleting it");
        remove_recursive(c, &path, u64::MAX).await?;
    }
    Ok(())
}

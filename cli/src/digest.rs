//! `testkeeper digest --target HOST:PORT`: walks any server's tree over the client protocol and
//! prints Keeper's V5 tree digest computed from what a client reads (equal to `mntr`'s
//! `zk_nodes_digest` on testkeeper when no container or TTL node exists), and a content digest
//! that leaves out zxids and times so two different servers holding the same logical tree
//! compare equal.

use std::collections::VecDeque;
use std::hash::Hasher;

use clap::Args;
use siphasher::sip::SipHasher24;
use testkeeper_server::core::digest::{node_digest, DigestInput, DIGEST_VERSION};
use testkeeper_wire::client::{Client, ClientError, ConnectOptions};
use testkeeper_wire::{Stat, ZkError};

use crate::addr::HostPort;

/// Flags of `digest`.
#[derive(Args, Debug)]
pub struct DigestArgs {
    /// Server to read, HOST:PORT.
    #[arg(long, value_parser = crate::addr::host_port)]
    pub target: HostPort,
    /// Authenticate first, as `scheme:credential` (e.g. `digest:user:password`).
    #[arg(long)]
    pub auth: Option<String>,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

/// The digests of a tree as read by a client.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct TreeDigests {
    pub nodes: u64,
    pub keeper_digest: u64,
    pub content_digest: u64,
    /// Nodes whose data could not be read (NOAUTH); the digests then do not cover them.
    pub unreadable: u64,
}

/// The content digest of one node: path, data, versions, child count and ephemerality.
pub fn content_digest(path: &str, data: &[u8], stat: &Stat) -> u64 {
    let mut h = SipHasher24::new_with_keys(0, 0);
    h.write(&(path.len() as u64).to_le_bytes());
    h.write(path.as_bytes());
    h.write(&(data.len() as u64).to_le_bytes());
    h.write(data);
    h.write(&stat.version.to_le_bytes());
    h.write(&stat.cversion.to_le_bytes());
    h.write(&stat.aversion.to_le_bytes());
    h.write(&stat.num_children.to_le_bytes());
    h.write(&[u8::from(stat.ephemeral_owner != 0)]);
    h.finish()
}

/// Walks the tree breadth-first from "/" and sums both digests.
///
/// # Errors
/// Connection failures, or a server error other than NONODE (a node deleted mid-walk) or NOAUTH.
pub async fn walk(client: &Client) -> Result<TreeDigests, ClientError> {
    let mut out = TreeDigests::default();
    let mut queue = VecDeque::from(["/".to_string()]);
    while let Some(path) = queue.pop_front() {
        let (data, stat) = match client.get_data(&path, false).await {
            Ok(v) => v,
            Err(e) if e.code() == Some(ZkError::NoNode.code()) => continue,
            Err(e) if e.code() == Some(ZkError::NoAuth.code()) => {
                out.unreadable += 1;
                continue;
            }
            Err(e) => return Err(e),
        };
        let input = DigestInput::from_stat(&path, &data, &stat);
        out.nodes += 1;
        out.keeper_digest = out.keeper_digest.wrapping_add(node_digest(&input));
        out.content_digest = out.content_digest.wrapping_add(content_digest(&path, &data, &stat));
        if stat.num_children > 0 || path == "/" {
            let mut children = match client.get_children(&path, false).await {
                Ok(c) => c,
                Err(e) if matches!(e.code(), Some(c) if c == ZkError::NoNode.code() || c == ZkError::NoAuth.code()) => {
                    continue
                }
                Err(e) => return Err(e),
            };
            children.sort();
            for c in children {
                queue.push_back(if path == "/" { format!("/{c}") } else { format!("{path}/{c}") });
            }
        }
    }
    Ok(out)
}

/// Runs the subcommand.
///
/// # Errors
/// A message naming what failed.
pub async fn run(args: DigestArgs) -> Result<(), crate::exit::CliError> {
    let client = Client::connect(args.target.reach().await?, ConnectOptions::default())
        .await
        .map_err(|e| format!("cannot connect to {}: {e}", args.target))?;
    if let Some(auth) = &args.auth {
        let (scheme, cred) =
            auth.split_once(':').ok_or_else(|| format!("--auth must be scheme:credential, got '{auth}'"))?;
        client.add_auth(scheme, cred.as_bytes()).await.map_err(|e| format!("auth failed: {e}"))?;
    }
    let d = walk(&client).await.map_err(|e| format!("walking {}: {e}", args.target))?;
    let _ = client.close().await;
    if args.json {
        // u64 values as strings: a JSON number past 2^53 is rounded by jq and JavaScript.
        let out = serde_json::json!({
            "target": args.target.text,
            "nodes": d.nodes.to_string(),
            "digest_version": DIGEST_VERSION,
            "keeper_digest": d.keeper_digest.to_string(),
            "content_digest": d.content_digest.to_string(),
            "unreadable": d.unreadable.to_string(),
        });
        println!("{out}");
    } else {
        println!("target          {}", args.target);
        println!("nodes           {}", d.nodes);
        println!("keeper_digest   {} (Keeper digest V{DIGEST_VERSION}, from client-visible stats)", d.keeper_digest);
        println!("content_digest  {} (paths, data, versions, child counts, ephemerality)", d.content_digest);
        if d.unreadable > 0 {
            println!("unreadable      {} (NOAUTH: not covered by the digests)", d.unreadable);
        }
    }
    Ok(())
}

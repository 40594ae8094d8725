//! The operation mix: which request kinds a bench sends, with what weights, and how one
//! request of each kind is built over the bounded key space.
//!
//! The key space is `keys` nodes `PREFIX/k0..k{keys-1}`, created before the clock starts.
//! create and delete pick a random key too, so once the run is going some creates find the
//! node there (`NodeExists`) and some deletes find it gone (`NoNode`): both servers do the
//! same work for those, and the report counts them by code, as keeper-bench does.

use rand::Rng;
use testkeeper_wire::records::children::GetChildrenRequest;
use testkeeper_wire::records::create::CreateRequest;
use testkeeper_wire::records::data::{DeleteRequest, GetDataRequest, SetDataRequest};
use testkeeper_wire::{Acl, CreateOp, OpCode, Request};

/// The request kinds a mix can hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum OpKind {
    Create,
    Get,
    Set,
    Delete,
    /// A multi of create + delete of a fresh key: always succeeds, leaves the tree unchanged.
    Multi,
    /// getChildren of the prefix (all `keys` children).
    List,
}

impl OpKind {
    pub const ALL: [OpKind; 6] =
        [OpKind::Create, OpKind::Get, OpKind::Set, OpKind::Delete, OpKind::Multi, OpKind::List];

    pub fn name(self) -> &'static str {
        match self {
            OpKind::Create => "create",
            OpKind::Get => "get",
            OpKind::Set => "set",
            OpKind::Delete => "delete",
            OpKind::Multi => "multi",
            OpKind::List => "list",
        }
    }

    pub fn index(self) -> usize {
        OpKind::ALL.iter().position(|k| *k == self).unwrap_or(0)
    }
}

/// Weights per kind; a kind with weight 0 is never sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mix {
    weights: [u32; 6],
    total: u32,
}

impl Mix {
    /// Parses `create=10,get=70,set=10,delete=10,multi=0,list=0`; missing kinds weigh 0.
    ///
    /// # Errors
    /// An unknown kind, a weight that is not a number, or all weights 0.
    pub fn parse(s: &str) -> Result<Mix, String> {
        let mut weights = [0u32; 6];
        for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (name, w) = part.split_once('=').ok_or_else(|| format!("mix entry '{part}' is not kind=weight"))?;
            let kind = OpKind::ALL
                .iter()
                .find(|k| k.name() == name.trim())
                .ok_or_else(|| format!("unknown op '{name}' in mix (create, get, set, delete, multi, list)"))?;
            weights[kind.index()] = w.trim().parse().map_err(|_| format!("weight '{w}' of {name} is not a number"))?;
        }
        let total = weights.iter().sum();
        if total == 0 {
            return Err("the mix has no op with a positive weight".into());
        }
        Ok(Mix { weights, total })
    }

    /// Draws one kind with probability weight / total.
    pub fn pick(&self, rng: &mut impl Rng) -> OpKind {
        let mut x = rng.gen_range(0..self.total);
        for (kind, w) in OpKind::ALL.iter().zip(self.weights) {
            if x < w {
                return *kind;
            }
            x -= w;
        }
        unreachable!("x < total")
    }

    /// `create=..,get=..` with every kind, for the JSON report.
    pub fn describe(&self) -> String {
        OpKind::ALL.iter().zip(self.weights).map(|(k, w)| format!("{}={w}", k.name())).collect::<Vec<_>>().join(",")
    }
}

/// Builds requests for one workload.
#[derive(Debug, Clone)]
pub struct Workload {
    pub prefix: String,
    pub keys: u32,
    pub value: Vec<u8>,
}

impl Workload {
    /// Path of key `i`.
    pub fn key(&self, i: u32) -> String {
        format!("{}/k{i}", self.prefix)
    }

    /// A create of `path` holding the workload's value.
    pub fn create(&self, path: String) -> Request {
        let req = CreateRequest { path, data: Some(self.value.clone()), acl: Acl::open(), flags: 0 };
        Request::Create(CreateOp { op: OpCode::Create, req, ttl: 0 })
    }

    /// One request of `kind`; a multi's fresh key is `m{slot}-{n}`, named only when used.
    pub fn request(&self, kind: OpKind, rng: &mut impl Rng, slot: usize, n: u64) -> Request {
        let mut key = || self.key(rng.gen_range(0..self.keys));
        match kind {
            OpKind::Create => self.create(key()),
            OpKind::Get => Request::GetData(GetDataRequest { path: key(), watch: false }),
            OpKind::Set => {
                Request::SetData(SetDataRequest { path: key(), data: Some(self.value.clone()), version: -1 })
            }
            OpKind::Delete => Request::Delete(DeleteRequest { path: key(), version: -1 }),
            OpKind::Multi => {
                let path = format!("{}/m{slot}-{n}", self.prefix);
                Request::Multi(vec![self.create(path.clone()), Request::Delete(DeleteRequest { path, version: -1 })])
            }
            OpKind::List => Request::GetChildren(GetChildrenRequest { path: self.prefix.clone(), watch: false }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn parses_and_picks_only_weighted_kinds() {
        let mix = Mix::parse("get=3, set=1").unwrap();
        assert_eq!(mix.describe(), "create=0,get=3,set=1,delete=0,multi=0,list=0");
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(1);
        let picks: Vec<_> = (0..400).map(|_| mix.pick(&mut rng)).collect();
        assert!(picks.iter().all(|k| matches!(k, OpKind::Get | OpKind::Set)));
        let gets = picks.iter().filter(|k| **k == OpKind::Get).count();
        assert!((240..360).contains(&gets), "{gets}");
    }

    #[test]
    fn rejects_bad_mixes() {
        assert!(Mix::parse("get=0").is_err());
        assert!(Mix::parse("read=1").is_err());
        assert!(Mix::parse("get=x").is_err());
        assert!(Mix::parse("get").is_err());
    }
}

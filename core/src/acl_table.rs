//! The tree's interned ACL lists: each node names its list by a 4-byte `AclId`.
//!
//! Every create decodes its own ACL list, and a private `Arc` of `world:anyone` costs about
//! 140 B per znode (the `Arc`, two `String`s); trees use a handful of distinct lists, so nodes
//! share one copy each and store only its index. A list leaves the table when the last node
//! using it does. Sharing changes no semantics: equal lists are equal by value.

use std::collections::HashMap;
use std::hash::{Hash, Hasher};

use testkeeper_wire::Acl;

use super::node::{AclId, AclList};

/// Distinct ACL lists in use, with how many nodes use each.
#[derive(Debug, Clone, Default)]
pub struct AclTable {
    /// Indexed by `AclId`; `None` is a free entry (listed in `free`).
    lists: Vec<Option<(AclList, u32)>>,
    free: Vec<u32>,
    /// Ids by a hash of the content (`Acl` has no `Hash`); collisions share a bucket.
    by_content: HashMap<u64, Vec<u32>>,
}

impl AclTable {
    fn key(acl: &[Acl]) -> u64 {
        let mut h = std::hash::DefaultHasher::new();
        for a in acl {
            (a.perms, &a.id.scheme, &a.id.id).hash(&mut h);
        }
        h.finish()
    }

    /// The id of `acl`'s content, added if new, counting one more user.
    pub fn intern(&mut self, acl: &AclList) -> AclId {
        let bucket = self.by_content.entry(Self::key(acl)).or_default();
        let lists = &mut self.lists;
        let found = bucket.iter().copied().find(|&id| lists[id as usize].as_ref().is_some_and(|(l, _)| **l == **acl));
        let id = match found {
            Some(id) => id,
            None => {
                let entry = Some((acl.clone(), 0));
                let id = match self.free.pop() {
                    Some(id) => {
                        lists[id as usize] = entry;
                        id
                    }
                    None => {
                        lists.push(entry);
                        u32::try_from(lists.len() - 1).expect("more than u32::MAX distinct ACL lists")
                    }
                };
                bucket.push(id);
                id
            }
        };
        let (_, users) = lists[id as usize].as_mut().expect("invariant: interned ACL entry is live");
        *users += 1;
        AclId(id)
    }

    /// Counts one user fewer of `id`; the list goes when nobody uses it.
    ///
    /// # Panics
    /// When `id` has no users: every node holds exactly one.
    pub fn release(&mut self, id: AclId) {
        let entry = &mut self.lists[id.0 as usize];
        let (list, users) = entry.as_mut().expect("invariant: released ACL entry is live");
        *users -= 1;
        if *users > 0 {
            return;
        }
        let key = Self::key(list);
        *entry = None;
        self.free.push(id.0);
        if let Some(bucket) = self.by_content.get_mut(&key) {
            bucket.retain(|&i| i != id.0);
            if bucket.is_empty() {
                self.by_content.remove(&key);
            }
        }
    }

    /// The list `id` names.
    ///
    /// # Panics
    /// When no node uses `id`.
    pub fn get(&self, id: AclId) -> &AclList {
        &self.lists[id.0 as usize].as_ref().expect("invariant: node's ACL entry is live").0
    }

    /// Distinct lists in use.
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.lists.len() - self.free.len()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    #[test]
    fn equal_lists_share_an_id_until_the_last_user_releases_it() {
        let mut t = AclTable::default();
        let a = t.intern(&Arc::new(Acl::open()));
        let b = t.intern(&Arc::new(Acl::open()));
        let r = t.intern(&Arc::new(Acl::read_only()));
        assert_eq!(a, b);
        assert_ne!(a, r);
        assert_eq!(t.len(), 2);
        t.release(r);
        assert_eq!(t.len(), 1);
        t.release(a);
        assert_eq!(**t.get(b), Acl::open(), "one user is left");
        t.release(b);
        assert_eq!(t.len(), 0);
        let again = t.intern(&Arc::new(Acl::read_only()));
        assert_eq!(**t.get(again), Acl::read_only());
        assert_eq!(t.len(), 1, "freed entries are reused");
    }
}

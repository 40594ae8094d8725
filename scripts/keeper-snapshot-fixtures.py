#!/usr/bin/env python3
"""Writes the ClickHouse Keeper snapshot fixtures in tests/fixtures/keeper/ from the format
description alone (ClickHouse src/Coordination/KeeperSnapshotManager.cpp, NuRaft's
snapshot/cluster_config serialization), independently of testkeeper's own writer, so the
reader is checked against something it did not produce.

  snapshot_42.bin.zstd   format V6 (what Keeper has written since 22.x)
  snapshot_41.bin.zstd   format V5 (the same tree; V5's extra fields)

The stored digest is Keeper's digest V5 (SipHash-2-4, docs/digest.md) over every node the tree
holds after a load: the nodes in the file plus Keeper's system nodes with data, which Keeper
leaves out of its files but counts: /keeper/api_version and /keeper/feature_flags, with the
data testkeeper's keeper flavor gives them by default (b"2" and b"\\xc0\\x00").

usage: scripts/keeper-snapshot-fixtures.py [OUT_DIR]     (needs the zstd command)
"""
import os
import struct
import subprocess
import sys

MASK = (1 << 64) - 1

# SipHash-2-4 written out from the paper, with its reference vectors checked there
# (`independent_digest.py --selftest`): the digest is not testkeeper's Rust code either.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "digest"))
from independent_digest import siphash24  # noqa: E402


OPEN = [(31, "world", "anyone")]
SECRET = [(31, "digest", "alice:m1aRH7dZ4gXUmhVBS5FBF0NjU5M="), (1, "world", "anyone")]
SESSION = 0x100000001


def node(path, data=b"", acl=None, czxid=0, mzxid=0, ctime=0, mtime=0, version=0, cversion=0,
         aversion=0, owner=0, pzxid=0, seq=0):
    return dict(path=path, data=data, acl=acl, czxid=czxid, mzxid=mzxid, ctime=ctime, mtime=mtime,
                version=version, cversion=cversion, aversion=aversion, owner=owner, pzxid=pzxid, seq=seq)


T = 1_764_800_000_000  # ms since the epoch
NODES = [
    node("/", cversion=3, pzxid=5),
    node("/keeper"),
    node("/zookeeper"),
    node("/zookeeper/quota"),
    node("/clickhouse", b"", OPEN, 1, 1, T, T, 0, 4, 0, 0, 12, 4),
    node("/clickhouse/task_queue", b"", OPEN, 2, 2, T + 1, T + 1, 0, 3, 0, 0, 9, 3),
    node("/clickhouse/task_queue/query-0000000000", b"CREATE TABLE t", OPEN, 7, 8, T + 7, T + 8, 1, 0, 0, 0, 7),
    node("/clickhouse/task_queue/query-0000000002", b"DROP TABLE t", OPEN, 9, 9, T + 9, T + 9, 0, 0, 0, 0, 9),
    node("/clickhouse/replicas", b"\x00\x01binary\xff", OPEN, 3, 10, T + 2, T + 10, 3, 0, 0, 0, 3),
    node("/clickhouse/secret", b"s3cr3t", SECRET, 4, 4, T + 3, T + 3, 0, 0, 1, 0, 4),
    node("/clickhouse/leader", b"replica-1", OPEN, 11, 11, T + 11, T + 11, 0, 0, 0, SESSION, 11),
    node("/clickhouse/empty_pzxid", b"", OPEN, 12, 12, T + 12, T + 12, 0, 0, 0, 0, 12),
]
SYSTEM = [node("/keeper/api_version", b"2"), node("/keeper/feature_flags", b"\xc0\x00")]
SESSIONS = [(SESSION, 30000, [("digest", "alice:m1aRH7dZ4gXUmhVBS5FBF0NjU5M=")])]


def children(path, nodes):
    prefix = "/" if path == "/" else path + "/"
    return sum(1 for n in nodes if n["path"] != path and n["path"].startswith(prefix)
               and "/" not in n["path"][len(prefix):])


def node_digest(n, nodes):
    b = n["path"].encode() + n["data"]
    b += struct.pack("<qqqqiiiqiq", n["czxid"], n["mzxid"], n["ctime"], n["mtime"], n["version"],
                     n["cversion"], n["aversion"], n["owner"], children(n["path"], nodes), n["pzxid"])
    b += b"\x00"  # not a TTL node
    return siphash24(0, 0, b) or 1


def le_str(b):
    out, n = b"", len(b)
    while True:
        if n < 0x80:
            return out + bytes([n]) + b
        out += bytes([(n & 0x7F) | 0x80])
        n >>= 7


def body(version, index, term, zxid):
    everything = NODES + SYSTEM
    digest = sum(node_digest(n, everything) for n in everything) & MASK
    server = struct.pack("<ii", 1, 0) + struct.pack("<i", 14) + b"localhost:9234" + struct.pack("<i", 0) + b"\x00" \
        + struct.pack("<i", 1)
    config = struct.pack("<QQB", index, 0, 0) + struct.pack("<i", 0) + struct.pack("<i", 1) + server
    meta = struct.pack("<BQQQ", 0, index, term, 0) + config
    out = bytes([version]) + le_str(meta)
    out += struct.pack("<qBQ", zxid, 5, digest) + struct.pack("<q", SESSION + 1)
    acls = [OPEN, SECRET]
    out += struct.pack("<Q", len(acls))
    for i, acl in enumerate(acls, start=1):
        out += struct.pack("<QQ", i, len(acl))
        for perms, scheme, ident in acl:
            out += struct.pack("<i", perms) + le_str(scheme.encode()) + le_str(ident.encode())
    out += struct.pack("<Q", len(NODES))
    for n in NODES:
        acl_id = 0 if n["acl"] is None else acls.index(n["acl"]) + 1
        out += le_str(n["path"].encode()) + le_str(n["data"]) + struct.pack("<Q", acl_id)
        if version < 6:
            out += b"\x00"  # is_sequential
        out += struct.pack("<qqqqiiiq", n["czxid"], n["mzxid"], n["ctime"], n["mtime"], n["version"],
                           n["cversion"], n["aversion"], n["owner"])
        if version < 6:
            out += struct.pack("<i", len(n["data"]))
        out += struct.pack("<iqi", children(n["path"], NODES), n["pzxid"], n["seq"])
        if version == 5:
            out += struct.pack("<Q", 200 + len(n["data"]))  # size in memory, not read
    out += struct.pack("<Q", len(SESSIONS))
    for sid, timeout, auths in SESSIONS:
        out += struct.pack("<qqQ", sid, timeout, len(auths))
        for scheme, ident in auths:
            out += le_str(scheme.encode()) + le_str(ident.encode())
    return out, digest


def main():
    out_dir = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "tests", "fixtures", "keeper")
    os.makedirs(out_dir, exist_ok=True)
    for version, index in ((6, 42), (5, 41)):
        raw, digest = body(version, index, 3, 12)
        path = os.path.join(out_dir, f"snapshot_{index}.bin.zstd")
        with open(path, "wb") as f:
            f.write(subprocess.run(["zstd", "-q", "-c", "-19"], input=raw, capture_output=True, check=True).stdout)
        print(f"{path}: V{version}, {len(NODES)} nodes in the file, digest {digest}")


if __name__ == "__main__":
    main()

"""An independent implementation of ClickHouse Keeper's tree digest (V5), for cross-checking.

It walks a live server with kazoo (an ordinary ZooKeeper client, not our code), computes for
every node SipHash-2-4 with key (0, 0) over: path, data (only if non-empty), czxid, mzxid,
ctime, mtime (i64 LE), version, cversion, aversion (i32 LE), ephemeralOwner (i64 LE),
numChildren (i32 LE), pzxid (i64 LE), isTTL (1 byte, 0 here), maps 0 to 1, sums with wrapping
at 2**64, and prints the sum. SipHash is written out here from the paper, not imported.

Usage: independent_digest.py HOST:PORT            -> prints the digest
       independent_digest.py --selftest          -> checks the SipHash reference vectors
"""
import struct
import sys

MASK = (1 << 64) - 1


def _rotl(x, b):
    return ((x << b) | (x >> (64 - b))) & MASK


def siphash24(k0, k1, msg):
    v0 = 0x736F6D6570736575 ^ k0
    v1 = 0x646F72616E646F6D ^ k1
    v2 = 0x6C7967656E657261 ^ k0
    v3 = 0x7465646279746573 ^ k1

    def rounds(n):
        nonlocal v0, v1, v2, v3
        for _ in range(n):
            v0 = (v0 + v1) & MASK; v1 = _rotl(v1, 13); v1 ^= v0; v0 = _rotl(v0, 32)
            v2 = (v2 + v3) & MASK; v3 = _rotl(v3, 16); v3 ^= v2
            v0 = (v0 + v3) & MASK; v3 = _rotl(v3, 21); v3 ^= v0
            v2 = (v2 + v1) & MASK; v1 = _rotl(v1, 17); v1 ^= v2; v2 = _rotl(v2, 32)

    full = len(msg) // 8 * 8
    for i in range(0, full, 8):
        m = struct.unpack("<Q", msg[i:i + 8])[0]
        v3 ^= m
        rounds(2)
        v0 ^= m
    tail = msg[full:] + b"\0" * (7 - (len(msg) - full)) + bytes([len(msg) & 0xFF])
    m = struct.unpack("<Q", tail)[0]
    v3 ^= m
    rounds(2)
    v0 ^= m
    v2 ^= 0xFF
    rounds(4)
    return v0 ^ v1 ^ v2 ^ v3


def node_digest(path, data, st):
    b = path.encode()
    if data:
        b += data
    b += struct.pack("<qqqqiiiqiq", st.czxid, st.mzxid, st.ctime, st.mtime, st.version, st.cversion,
                     st.aversion, st.ephemeralOwner, st.numChildren, st.pzxid)
    b += b"\0"  # isTTL = false: clients cannot see TTLs, so the workload has none
    d = siphash24(0, 0, b)
    return d or 1


def tree_digest(zk):
    total, queue = 0, ["/"]
    while queue:
        path = queue.pop()
        data, st = zk.get(path)
        total = (total + node_digest(path, data, st)) & MASK
        for c in zk.get_children(path):
            queue.append(("/" if path == "/" else path + "/") + c)
    return total


def selftest():
    key = bytes(range(16))
    k0, k1 = struct.unpack("<QQ", key)
    expect = {0: 0x726FDB47DD0E0E31, 1: 0x74F839C593DC67FD, 8: 0x93F5F5799A932462, 15: 0xA129CA6149BE45E5}
    for n, want in expect.items():
        got = siphash24(k0, k1, bytes(range(n)))
        assert got == want, (n, hex(got), hex(want))
    print("siphash reference vectors ok")


if __name__ == "__main__":
    if sys.argv[1] == "--selftest":
        selftest()
        sys.exit(0)
    from kazoo.client import KazooClient
    zk = KazooClient(hosts=sys.argv[1])
    zk.start(timeout=10)
    try:
        print(tree_digest(zk))
    finally:
        zk.stop()

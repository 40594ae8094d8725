"""Dumps a ZooKeeper-protocol server's whole znode tree as JSON, through
kazoo (from the test venv), for the ClickHouse tests to inspect and compare.

Usage: zktree.py HOSTS [--mask TEXT=NAME ...]

Prints one JSON array on stdout, sorted by path, one object per znode:
  path       the real path
  norm       the path normalized for comparing runs against different
             servers: UUIDs become <uuid>, and each --mask TEXT becomes
             <NAME> (the tests mask their per-run ports with it)
  ephemeral  whether the znode is ephemeral
  data_len   data length in bytes
  data       data as UTF-8, or "b64:<base64>" when it is not valid UTF-8

Also importable (chdb_workload.py uses dump_tree).
"""

import base64
import json
import re
import sys

UUID_RE = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def encode_data(data):
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return "b64:" + base64.b64encode(data).decode("ascii")


def normalize(path, masks):
    path = UUID_RE.sub("<uuid>", path)
    for text, name in masks:
        path = path.replace(text, "<" + name + ">")
    return path


def dump_tree(hosts, masks=()):
    from kazoo.client import KazooClient

    zk = KazooClient(hosts=hosts, timeout=10)
    zk.start(timeout=15)
    nodes = []
    try:
        stack = ["/"]
        while stack:
            path = stack.pop()
            data, stat = zk.get(path)
            nodes.append({
                "path": path,
                "norm": normalize(path, masks),
                "ephemeral": stat.ephemeralOwner != 0,
                "data_len": len(data),
                "data": encode_data(data or b""),
            })
            prefix = "" if path == "/" else path
            stack.extend(prefix + "/" + c for c in zk.get_children(path))
    finally:
        zk.stop()
        zk.close()
    nodes.sort(key=lambda n: n["path"])
    return nodes


def main():
    args = sys.argv[1:]
    hosts = args.pop(0)
    masks = []
    while args:
        flag = args.pop(0)
        if flag != "--mask" or not args:
            sys.exit("usage: zktree.py HOSTS [--mask TEXT=NAME ...]")
        text, _, name = args.pop(0).partition("=")
        masks.append((text, name))
    json.dump(dump_tree(hosts, masks), sys.stdout)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()

"""A logging TCP proxy for the ZooKeeper client protocol.

Sits between ClickHouse and a ZooKeeper-protocol server and records, per
connection, every request's opcode (and for multi / multiRead, each
sub-op's) together with the error code of the matching response. This is how
the ClickHouse tests tell which operations ClickHouse really used (e.g. the
Keeper-only ones it switches to when the server advertises feature flags),
and it is the first tool to reach for when ClickHouse and a server disagree.

Usage: zk_wire_log.py UPSTREAM_HOST:PORT LOG_JSONL

Binds 127.0.0.1 on a free port and prints exactly one stdout line
`zk_wire_log listening on 127.0.0.1:PORT`, then serves until killed. Each
completed request/response pair becomes one JSON line in LOG_JSONL:
{"conn": n, "xid": x, "op": op, "sub": [op, ...] or null, "err": e,
 "sub_err": [e, ...] or null}. Four-letter words pass through unlogged.

Only plain framing is understood (protocol version 0, 32-bit xids), which is
what ClickHouse sends unless told to compress or to use 64-bit xids.
"""

import json
import socket
import struct
import sys
import threading

MULTI = 14
MULTI_READ = 22
WATCH_XID = -1


def read_exact(sock, n):
    buf = b""
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            return None
        buf += chunk
    return buf


def read_frame(sock):
    """One length-prefixed frame: (4-byte head, body), or (None, None) at EOF."""
    head = read_exact(sock, 4)
    if head is None:
        return None, None
    (length,) = struct.unpack(">i", head)
    if length < 0 or length > (1 << 28):
        return None, None
    body = read_exact(sock, length)
    if body is None:
        return None, None
    return head, body


def pipe(src, dst, first=b""):
    """Copies bytes from src to dst until EOF (used for four-letter words)."""
    try:
        if first:
            dst.sendall(first)
        while True:
            chunk = src.recv(65536)
            if not chunk:
                break
            dst.sendall(chunk)
    except OSError:
        pass
    finally:
        try:
            dst.shutdown(socket.SHUT_WR)
        except OSError:
            pass


def multi_sub_ops(body):
    """Sub-op types of a multi request body (after xid and op)."""
    ops = []
    pos = 0
    try:
        while pos + 9 <= len(body):
            op, done, _err = struct.unpack_from(">i?i", body, pos)
            pos += 9
            if done:
                break
            ops.append(op)
            pos = skip_sub_request(op, body, pos)
    except (struct.error, ValueError):
        pass
    return ops


def skip_string(body, pos):
    (n,) = struct.unpack_from(">i", body, pos)
    return pos + 4 + max(n, 0)


def skip_sub_request(op, body, pos):
    pos = skip_string(body, pos)  # every sub-request starts with a path
    if op in (1, 15, 19, 21, 502):  # create family: data, acls, flags
        pos = skip_string(body, pos)
        (nacl,) = struct.unpack_from(">i", body, pos)
        pos += 4
        for _ in range(nacl):
            pos += 4
            pos = skip_string(body, pos)
            pos = skip_string(body, pos)
        pos += 4
        if op == 21:
            pos += 8
    elif op in (2, 13, 501, 505):  # delete, check, ...: version
        pos += 4
    elif op == 5:  # set: data, version
        pos = skip_string(body, pos)
        pos += 4
    elif op in (3, 4, 8, 12):  # reads: watch flag
        pos += 1
    elif op == 500:  # filtered list: watch flag, list type
        pos += 2
    elif op == 503:  # remove recursive: remove_nodes_limit
        pos += 4
    elif op == 504:  # check stat: a whole Stat plus a mask is not parsed
        raise ValueError("unparsed sub-op")
    else:
        raise ValueError("unknown sub-op")
    return pos


def multi_sub_errs(body):
    """Per-op error codes of a multi / multiRead response body (after the
    reply header). ZooKeeper sends a failed op as type -1 with an error body;
    Keeper's multiRead keeps the op's type, sets the header's err and sends
    no body. Returns what it could parse, "?" marking where it gave up."""
    errs = []
    pos = 0
    stat = 68
    try:
        while pos + 9 <= len(body):
            op, done, err = struct.unpack_from(">i?i", body, pos)
            pos += 9
            if done:
                return errs
            if op == -1:
                (err,) = struct.unpack_from(">i", body, pos)
                pos += 4
            elif err != 0:
                pass
            elif op in (1, 19, 502):
                pos = skip_string(body, pos)
            elif op in (15, 21):
                pos = skip_string(body, pos) + stat
            elif op in (2, 13, 501, 503, 505):
                pass
            elif op in (3, 5):
                pos += stat
            elif op == 4:
                pos = skip_string(body, pos) + stat
            elif op in (8, 12):
                (n,) = struct.unpack_from(">i", body, pos)
                pos += 4
                for _ in range(max(n, 0)):
                    pos = skip_string(body, pos)
                if op == 12:
                    pos += stat
            else:
                errs.append(err)
                return errs + ["?"]
            errs.append(err)
    except struct.error:
        pass
    return errs + ["?"]


class Proxy:
    def __init__(self, upstream, log_path):
        self.upstream = upstream
        self.log = open(log_path, "a", buffering=1)
        self.lock = threading.Lock()
        self.next_conn = 0

    def write(self, record):
        with self.lock:
            self.log.write(json.dumps(record) + "\n")

    def serve(self, listener):
        while True:
            client, _ = listener.accept()
            with self.lock:
                self.next_conn += 1
                conn = self.next_conn
            threading.Thread(target=self.handle, args=(conn, client), daemon=True).start()

    def handle(self, conn, client):
        try:
            server = socket.create_connection(self.upstream)
        except OSError:
            client.close()
            return
        try:
            self.relay(conn, client, server)
        finally:
            client.close()
            server.close()

    def relay(self, conn, client, server):
        first = read_exact(client, 4)
        if first is None:
            return
        (length,) = struct.unpack(">i", first)
        if not 0 < length < (1 << 16):
            # A four-letter word ("ruok" is 0x72756f6b): pass it through raw.
            t = threading.Thread(target=pipe, args=(client, server, first), daemon=True)
            t.start()
            pipe(server, client)
            t.join(timeout=5)
            return
        handshake = read_exact(client, length)
        if handshake is None:
            return
        server.sendall(first + handshake)
        pending = {}

        def up():
            try:
                while True:
                    head, body = read_frame(client)
                    if head is None or len(body) < 8:
                        break
                    xid, op = struct.unpack_from(">ii", body, 0)
                    sub = multi_sub_ops(body[8:]) if op in (MULTI, MULTI_READ) else None
                    pending[xid] = (op, sub)
                    server.sendall(head + body)
            except OSError:
                pass
            finally:
                try:
                    server.shutdown(socket.SHUT_WR)
                except OSError:
                    pass

        t = threading.Thread(target=up, daemon=True)
        t.start()
        first_reply = True
        try:
            while True:
                head, body = read_frame(server)
                if head is None:
                    break
                if not first_reply and len(body) >= 16:
                    xid, _zxid, err = struct.unpack_from(">iqi", body, 0)
                    if xid in pending:
                        op, sub = pending.pop(xid)
                        rec = {"conn": conn, "xid": xid, "op": op, "sub": sub, "err": err,
                               "sub_err": None}
                        if op in (MULTI, MULTI_READ) and err == 0:
                            rec["sub_err"] = multi_sub_errs(body[16:])
                        self.write(rec)
                    elif xid == WATCH_XID:
                        self.write({"conn": conn, "xid": xid, "op": "watch", "err": err})
                first_reply = False
                client.sendall(head + body)
        except OSError:
            pass
        finally:
            # EOF to the client first: a client waiting for a reply that will
            # never come (Keeper does not answer closeSession) then hangs up,
            # which also ends `up`.
            try:
                client.shutdown(socket.SHUT_WR)
            except OSError:
                pass
            t.join(timeout=5)
            for xid, (op, sub) in list(pending.items()):
                # Asked, never answered before the connection ended.
                self.write({"conn": conn, "xid": xid, "op": op, "sub": sub, "err": None,
                            "sub_err": None})


def main():
    host, port = sys.argv[1].rsplit(":", 1)
    proxy = Proxy((host, int(port)), sys.argv[2])
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", 0))
    listener.listen(64)
    print("zk_wire_log listening on 127.0.0.1:%d" % listener.getsockname()[1], flush=True)
    proxy.serve(listener)


if __name__ == "__main__":
    main()

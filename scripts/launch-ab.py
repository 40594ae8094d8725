#!/usr/bin/env python3
"""Spawn to the first `imok`, two testkeeper builds side by side (docs/performance.md, "Start time").

Usage:
    scripts/launch-ab.py BIN_A BIN_B [--starts N] [--churn MIB]

Starts `BIN serve` on a free loopback port, polls `ruok` every 50 µs until `imok`, kills it by
its PID; A and B alternate (A B, then B A, ...) so a machine that slows down slows both. Prints
each build's median and B/A. `--churn MIB` first runs a process that touches that many MiB and
exits before every start: on a virtual machine that hands freed memory back to its host, the
next process's first page faults are slow, which is what a start right after a JVM meets.
"""
import argparse
import socket
import statistics
import subprocess
import time


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def launch(binary):
    """Milliseconds from spawn to the first imok."""
    port = free_port()
    t0 = time.perf_counter()
    p = subprocess.Popen([binary, "serve", "--listen", f"127.0.0.1:{port}"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        while True:
            try:
                with socket.create_connection(("127.0.0.1", port)) as c:
                    c.sendall(b"ruok")
                    if c.recv(16) == b"imok":
                        return (time.perf_counter() - t0) * 1e3
            except OSError:
                time.sleep(0.00005)
            if p.poll() is not None:
                raise SystemExit(f"{binary} exited before answering ruok")
    finally:
        p.kill()
        p.wait()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("a")
    ap.add_argument("b")
    ap.add_argument("--starts", type=int, default=30)
    ap.add_argument("--churn", type=int, default=0, metavar="MIB")
    args = ap.parse_args()
    bins, times = (args.a, args.b), ([], [])
    for i in range(args.starts):
        for k in (0, 1) if i % 2 == 0 else (1, 0):
            if args.churn:
                subprocess.run(["python3", "-c", f"x = bytearray({args.churn} << 20)"], check=True)
            times[k].append(launch(bins[k]))
    a, b = statistics.median(times[0]), statistics.median(times[1])
    print(f"A {args.a}: median {a:.3f} ms over {args.starts} starts")
    print(f"B {args.b}: median {b:.3f} ms over {args.starts} starts")
    print(f"B / A: {b / a:.3f}")


if __name__ == "__main__":
    main()

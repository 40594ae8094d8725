#!/usr/bin/env bash
# What a pipelined request costs a server and the client, 8 sessions x 16 in flight with
# bench's default mix (docs/performance.md, "Pipelined, against a server that does no work"):
#   scripts/pipelined-costs.sh BIN                # starts `BIN serve` in memory and measures it
#   scripts/pipelined-costs.sh BIN PID HOST:PORT  # measures a server already up (another server)
#   SERVE_ARGS="--park-spin-us 0" scripts/pipelined-costs.sh BIN   # `serve` with these flags
# Prints, per round:
# - the server's CPU per request, user and system apart: its utime and stime (/proc/PID/stat)
#   over a 400k-request round, after one unmeasured round of 100k;
# - the client's CPU per request in that round (`/usr/bin/time` on `BIN bench`), split alike;
# - with `perf` (and permission to trace syscalls), the server's recvfrom, sendto, epoll_wait,
#   futex and sched_yield calls over a further 300k requests, no warm-up, and the requests per
#   recvfrom: how big its batches were, which sets its CPU per request more than anything else
#   (docs/performance.md, "Pipelined": the two regimes).
# CPU on a shared 2-core machine moves from run to run: compare servers in one sitting.
set -euo pipefail
BIN=${1:?usage: pipelined-costs.sh BIN [PID HOST:PORT]}
ROUNDS=${ROUNDS:-3}
work=$(mktemp -d)
cleanup() {
    if [ -n "${OURS:-}" ]; then kill "$OURS" 2>/dev/null || true; fi
    rm -rf "$work"
}
trap cleanup EXIT
if [ $# -ge 3 ]; then
    PID=$2 ADDR=$3
else
    # shellcheck disable=SC2086 # the flags are words
    "$BIN" serve --listen 0 ${SERVE_ARGS:-} >"$work/serve.log" 2>&1 &
    OURS=$! PID=$!
    for _ in $(seq 100); do
        ADDR=$(grep -o "127.0.0.1:[0-9]*" "$work/serve.log" | head -1 || true)
        [ -n "$ADDR" ] && break
        sleep 0.05
    done
fi
tck=$(getconf CLK_TCK)
ticks() { awk '{print $14, $15}' "/proc/$PID/stat"; }
load() { "$BIN" bench --target "$ADDR" --sessions 8 --pipeline 16 "$@"; }
load --ops 100000 --rounds 1 --seed 9 >/dev/null
for i in $(seq "$ROUNDS"); do
    read -r u0 s0 < <(ticks)
    /usr/bin/time -f "%U %S" -o "$work/client" "$BIN" bench --target "$ADDR" --sessions 8 --pipeline 16 \
        --ops 400000 --rounds 1 --seed "$i" >"$work/bench"
    read -r u1 s1 < <(ticks)
    read -r cu cs <"$work/client"
    ops=$(grep median "$work/bench" | awk '{print $3}')
    python3 -c "n, t = 400000, $tck
su, ss = ($u1 - $u0) / t * 1e6 / n, ($s1 - $s0) / t * 1e6 / n
cu, cs = $cu * 1e6 / n, $cs * 1e6 / n
print(f'round $i: server {su + ss:.2f} us CPU a request (user {su:.2f}, system {ss:.2f}), client {cu + cs:.2f} us (user {cu:.2f}, system {cs:.2f}), {$ops} ops/s')"
done
if command -v perf >/dev/null; then
    events=syscalls:sys_enter_recvfrom,syscalls:sys_enter_sendto,syscalls:sys_enter_epoll_wait,syscalls:sys_enter_futex
    events=$events,syscalls:sys_enter_sched_yield
    if perf stat -x, -e "$events" -p "$PID" -o "$work/perf" -- "$BIN" bench --target "$ADDR" --sessions 8 \
        --pipeline 16 --ops 300000 --rounds 1 --warmup 0 --seed 5 >/dev/null 2>&1; then
        echo "server system calls over 300k requests: $(grep -v '^#' "$work/perf" | grep . |
            awk -F, '{sub("syscalls:sys_enter_", "", $3); printf "%s %s  ", $3, $1}')"
        awk -F, '$3 ~ /recvfrom/ && $1 + 0 > 0 {printf "requests per recvfrom: %.1f\n", 300000 / $1}' "$work/perf"
    else
        echo "perf could not trace the server's system calls here (permissions?): skipped"
    fi
fi

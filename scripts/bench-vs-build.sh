#!/usr/bin/env bash
# This build against an earlier one, in one run (docs/sim.md, "What it costs the server"):
#   scripts/bench-vs-build.sh NEW_BIN BASE_BIN
# 1. in memory, standalone: `bench --spawn-testkeeper --spawn-baseline`, 1 synchronous
#    session and 8 sessions x 16 pipelined;
# 2. two in-memory 3-node clusters on loopback (NEW and BASE), `set` writes at 1 and 32
#    sessions, `bench --target NEW --vs BASE`.
# Run it twice with the arguments swapped: the bench's two slots differ by a few percent by
# themselves, and the two orders bound that.
set -euo pipefail
NEW=${1:?usage: bench-vs-build.sh NEW_BIN BASE_BIN}
BASE=${2:?usage: bench-vs-build.sh NEW_BIN BASE_BIN}
work=$(mktemp -d)
# The servers' PIDs go to a file: `cluster` runs in a command substitution's subshell.
cleanup() {
    if [ -f "$work/pids" ]; then while read -r p; do kill "$p" 2>/dev/null || true; done <"$work/pids"; fi
    rm -rf "$work"
}
trap cleanup EXIT

"$NEW" bench --spawn-testkeeper --spawn-baseline "$BASE" --sessions 1 --pipeline 1 --ops 30000 --rounds 15 --seed 3 |
    grep -E "median|/ baseline"
"$NEW" bench --spawn-testkeeper --spawn-baseline "$BASE" --sessions 8 --pipeline 16 --ops 200000 --rounds 7 --seed 1 |
    grep -E "median|/ baseline"

free_port() { python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])'; }
# Starts a 3-node in-memory cluster of BIN; prints its client addresses.
cluster() {
    local bin=$1 label=$2 c=() r=()
    for i in 1 2 3; do c[i]=$(free_port); r[i]=$(free_port); done
    local peers="1=127.0.0.1:${r[1]},2=127.0.0.1:${r[2]},3=127.0.0.1:${r[3]}"
    for i in 1 2 3; do
        "$bin" serve --listen "127.0.0.1:${c[i]}" --id "$i" --peers "$peers" --seed 7 >"$work/$label-$i.log" 2>&1 &
        echo $! >>"$work/pids"
    done
    echo "127.0.0.1:${c[1]},127.0.0.1:${c[2]},127.0.0.1:${c[3]}"
}
new=$(cluster "$NEW" new)
base=$(cluster "$BASE" base)
sleep 3
"$NEW" bench --target "$new" --vs "$base" --sessions 1 --pipeline 1 --ops 5000 --rounds 7 --mix set=100 --seed 5 |
    grep -E "median|/ vs"
"$NEW" bench --target "$new" --vs "$base" --sessions 32 --pipeline 1 --ops 60000 --rounds 7 --mix set=100 --seed 5 |
    grep -E "median|/ vs"

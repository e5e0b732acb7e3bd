#!/usr/bin/env bash
# One test from N agents on this machine against a private nginx (docs/many-hosts.md): does the
# merged test send what one host would, how far apart do the agents start, and what does the
# coordination cost an agent? The Must reach of issue 23: 4 agents, 20,000 req/s in all for
# 10 s: achieved within 0.5% of offered, start skew under 1 ms, coordination under 1% of an
# agent's CPU.
#
# Printed per round: offered and achieved req/s of the merged test and their ratio; the merged
# p99 beside each agent's own p99 (the merged one comes from the added histograms, so it need
# not equal any agent's); the start skew bound (start_skew_us); per agent its CPU seconds as
# /usr/bin/time measured the process, the engine's own worker CPU from its JSON, and the
# difference (the rendezvous, heartbeats, the merge and the process's start) as a share of
# the process's CPU.
#
# Env: AGENTS (default 4), RATE (req/s in all, default 20000), DURATION (s, default 10),
#      ROUNDS (default 3), LOADLAB (binary; default target/release/loadlab, rebuilt).
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh

AGENTS=${AGENTS:-4}
RATE=${RATE:-20000}
DURATION=${DURATION:-10}
ROUNDS=${ROUNDS:-3}
LOADLAB=${LOADLAB:-target/release/loadlab}
positive_ints AGENTS RATE DURATION ROUNDS
# Every agent is bounded: one that has not ended this long after its nominal end is a hang.
GRACE=$((DURATION * 3 + 60))

ensure_loadlab
private_nginx_dir agents
port=$(free_port)
start_nginx "$work" "$port"
head -c 32 /dev/urandom | base64 >"$work/token"
machine_context
echo "# $AGENTS agents, $RATE req/s in all, ${DURATION}s, $ROUNDS rounds"

for round in $(seq "$ROUNDS"); do
  rv="127.0.0.1:$(free_port)"
  pids=()
  for i in $(seq 0 $((AGENTS - 1))); do
    timeout "$GRACE" /usr/bin/time -f '%U %S' -o "$work/time.$i" \
      "$LOADLAB" bench "http://127.0.0.1:$port/hello.txt" -R "$RATE" -d "${DURATION}s" \
      --agents "$AGENTS" --agent "$i" --rendezvous "$rv" --token-file "$work/token" \
      --format json -q >"$work/out.$i.json" 2>"$work/err.$i" &
    pids+=($!)
  done
  failed=0
  for p in "${pids[@]}"; do wait "$p" || failed=1; done
  if [ "$failed" = 1 ]; then
    cat "$work"/err.* >&2
    die "round $round: an agent failed"
  fi
  python3 - "$work" "$AGENTS" "$round" <<'PY'
import json, sys
work, n, rnd = sys.argv[1], int(sys.argv[2]), sys.argv[3]
merged = json.load(open(f"{work}/out.0.json"))
rate = merged["rate"]
own = [json.load(open(f"{work}/out.{i}.json")) for i in range(1, n)]
print(f"round {rnd}: offered {rate['offered_rps']:.0f} achieved {rate['achieved_rps']:.1f} "
      f"({100 * rate['achieved_rps'] / rate['offered_rps']:.2f}%), merged p99 "
      f"{merged['latency_us']['p99']} us, agents' own p99 "
      f"{[r['p99_us'] for r in merged['agents']]}, start skew <= {merged['start_skew_us']:.0f} us")
for i in range(n):
    user, sys_ = (float(x) for x in open(f"{work}/time.{i}").read().split()[-2:])
    report = merged if i == 0 else own[i - 1]
    engine = report["client"]["cpu_user_s"] + report["client"]["cpu_sys_s"]
    process = user + sys_
    other = max(process - engine, 0.0)
    print(f"  agent {i}: process CPU {process:.2f} s, engine workers {engine:.2f} s, "
          f"the rest {other:.2f} s ({100 * other / process if process else 0:.1f}%)")
PY
done

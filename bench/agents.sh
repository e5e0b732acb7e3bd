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
# Then the closed loop, AGENTS x CONNECTIONS connections: the merged req/s against the sum of
# the agents' own (each agent's completed over its own measured time).
#
# Env: AGENTS (default 4), RATE (req/s in all, default 20000), DURATION (s, default 10),
#      CONNECTIONS (per agent in the closed loop, default 50), ROUNDS (default 3 of each),
#      LOADLAB (binary; default target/release/loadlab, rebuilt).
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh

AGENTS=${AGENTS:-4}
RATE=${RATE:-20000}
DURATION=${DURATION:-10}
ROUNDS=${ROUNDS:-3}
CONNECTIONS=${CONNECTIONS:-50}
LOADLAB=${LOADLAB:-target/release/loadlab}
positive_ints AGENTS RATE DURATION ROUNDS CONNECTIONS
# Every agent is bounded: one that has not ended this long after its nominal end is a hang.
GRACE=$((DURATION * 3 + 60))

# The merged p99 is checked against HdrHistogram's reference reader (PyPI `hdrhistogram`,
# imported as hdrh): each agent's own --hdr-log, added by it, must give agent 0's p99.
python3 -c 'import hdrh.log' 2>/dev/null || die "needs PyPI hdrhistogram: pip install hdrhistogram"
ensure_loadlab
private_nginx_dir agents
port=$(free_port)
start_nginx "$work" "$port"
head -c 32 /dev/urandom | base64 >"$work/token"
machine_context
echo "# $AGENTS agents, $RATE req/s in all, ${DURATION}s, $ROUNDS rounds"


# run_agents KIND LOAD...: one round of AGENTS agents, each with its own --hdr-log, /usr/bin/time
# around each; fails the script when an agent fails.
run_agents() {
  local kind=$1 rv i p failed=0
  shift
  rv="127.0.0.1:$(free_port)"
  pids=()
  for i in $(seq 0 $((AGENTS - 1))); do
    timeout "$GRACE" /usr/bin/time -f '%U %S' -o "$work/time.$i" \
      "$LOADLAB" bench "http://127.0.0.1:$port/hello.txt" "$@" -d "${DURATION}s" \
      --agents "$AGENTS" --agent "$i" --rendezvous "$rv" --token-file "$work/token" \
      --hdr-log "$work/own.$i.hlog" --format json -q >"$work/out.$i.json" 2>"$work/err.$i" &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p" || failed=1; done
  if [ "$failed" = 1 ]; then
    cat "$work"/err.* >&2
    die "$kind round: an agent failed"
  fi
}

for round in $(seq "$ROUNDS"); do
  run_agents open -R "$RATE"
  python3 bench/agents-report.py open "$work" "$AGENTS" "$round"
done
for round in $(seq "$ROUNDS"); do
  run_agents closed -c $((AGENTS * CONNECTIONS))
  python3 bench/agents-report.py closed "$work" "$AGENTS" "$round"
done

#!/usr/bin/env bash
# One test from N agents on this machine against a private nginx (docs/many-hosts.md): does the
# merged test send what one host would, how far apart do the agents start, and what does the
# coordination cost an agent? The bounds: 4 agents, 20,000 req/s in all for 10 s: achieved
# within 0.5% of offered, start skew under 1 ms, coordination under 1% of an agent's CPU.
#
# Printed per round: offered and achieved req/s of the merged test and their ratio; the merged
# p99 beside each agent's own p99 (the merged one comes from the added histograms, so it need
# not equal any agent's); the start skew bound (start_skew_us); per agent its CPU split by
# bench/agents-run.py from /proc's per-thread times: the engine's workers, the one-off start
# (process start-up, pre-flight, rendezvous), the coordination during the run (the
# rendezvous's threads: stream, heartbeats, loss monitor) as a share of the process's CPU,
# and the one-off end (merge, report). Each round also runs one host with one agent's load
# (RATE/AGENTS), measured the same way, for what any run's start and end cost.
#
# Then the closed loop, AGENTS x CONNECTIONS connections: the merged req/s against the sum of
# the agents' own (each agent's completed over its own measured time).
#
# Env: AGENTS (default 4), RATE (req/s in all, default 20000), DURATION (s, default 10),
#      CONNECTIONS (per agent in the closed loop, default 50), ROUNDS (default 3 of each),
#      LOADLAB (binary; default target/release/loadlab, rebuilt),
#      BASELINE (another binary: each round is run with it too, right after, interleaved),
#      CLOSED (1, the default: the closed-loop rounds too; 0: the open loop only),
#      SINGLE (1, the default: the one-host reference each round; 0: none).
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh

AGENTS=${AGENTS:-4}
RATE=${RATE:-20000}
DURATION=${DURATION:-10}
ROUNDS=${ROUNDS:-3}
CONNECTIONS=${CONNECTIONS:-50}
LOADLAB=${LOADLAB:-target/release/loadlab}
BASELINE=${BASELINE:-}
SINGLE=${SINGLE:-1}
CLOSED=${CLOSED:-1}
positive_ints AGENTS RATE DURATION ROUNDS CONNECTIONS
[ -z "$BASELINE" ] || [ -x "$BASELINE" ] || die "no loadlab binary at BASELINE=$BASELINE"
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


# run_agents BIN KIND LOAD...: one round of AGENTS agents of BIN, each with its own --hdr-log,
# their CPU read thread by thread (bench/agents-run.py); fails the script when an agent fails.
run_agents() {
  local bin=$1 kind=$2
  shift 2
  if ! python3 bench/agents-run.py "$work" "$AGENTS" "$GRACE" -- \
    "$bin" bench "http://127.0.0.1:$port/hello.txt" "$@" -d "${DURATION}s" \
    --agents "$AGENTS" --agent '{i}' --rendezvous "127.0.0.1:$(free_port)" \
    --token-file "$work/token" --hdr-log "$work/own.{i}.hlog" --format json -q; then
    cat "$work"/err.* >&2
    die "$kind round: an agent failed"
  fi
}

# single BIN LABEL ROUND: one host with one agent's open-loop load, measured the same way.
single() {
  mkdir -p "$work/single"
  python3 bench/agents-run.py "$work/single" 1 "$GRACE" -- \
    "$1" bench "http://127.0.0.1:$port/hello.txt" -R $((RATE / AGENTS)) -d "${DURATION}s" \
    --hdr-log "$work/single/own.0.hlog" --format json -q || die "the single-host run failed"
  python3 bench/agents-report.py single "$work/single" 1 "$3" "$2"
}

# round KIND ROUND LOAD...: the round with LOADLAB, then with BASELINE when given.
round() {
  local kind=$1 rnd=$2 bin label
  shift 2
  for bin in "$LOADLAB" $BASELINE; do
    label=$([ "$bin" = "$LOADLAB" ] && echo "this build" || echo "baseline")
    run_agents "$bin" "$kind" "$@"
    python3 bench/agents-report.py "$kind" "$work" "$AGENTS" "$rnd" "$label"
    if [ "$kind" = open ] && [ "$SINGLE" = 1 ]; then single "$bin" "$label" "$rnd"; fi
  done
}

for rnd in $(seq "$ROUNDS"); do
  round open "$rnd" -R "$RATE"
done
[ "$CLOSED" = 1 ] || exit 0
for rnd in $(seq "$ROUNDS"); do
  round closed "$rnd" -c $((AGENTS * CONNECTIONS))
done

#!/usr/bin/env bash
# What the live view costs beside the hot path, read from each thread's own CPU: loadlab's bench
# runs on a pseudo-terminal (script(1), 120x40) with its view on, and near the end of each round
# every thread's run time (/proc/PID/task/TID/schedstat, in nanoseconds) is read, with script's.
# The view's cost is its drawing thread ("view"), the thread that feeds it ("show") and script's
# copying of the frames (as a terminal would have to), over the workers' ("loadlab-w*") in the
# same seconds: a share the machine's drift cannot move, where CPU per request from round to
# round drifts by more than the view costs (bench/vs-peers.sh's loadlab-tty gives that figure).
#
# Env: DURATION (s, default 6), ROUNDS (default 5), LOADLAB (default target/release/loadlab,
#      rebuilt if it is the default).
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh

DURATION=${DURATION:-6}
ROUNDS=${ROUNDS:-5}
LOADLAB=${LOADLAB:-target/release/loadlab}
positive_ints DURATION ROUNDS
[ "$DURATION" -ge 3 ] || die "DURATION must be at least 3 s: the threads are read a second before the end"
command -v script >/dev/null || die "needs script (bsdutils)"
split_cpus
ensure_loadlab

work=$(mktemp -d -t loadlab-view-cost.XXXXXX)
trap 'stop_nginx "$work"; rm -rf "$work"' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
port=$(free_port)
start_nginx "$work" "$port" "$SERVER_CPU"
url=http://127.0.0.1:$port/hello.txt

# ns PID: the run time of every thread of PID, one "name nanoseconds" line each.
ns() {
  local t
  for t in /proc/"$1"/task/*; do
    echo "$(cat "$t/comm" 2>/dev/null) $(cut -d' ' -f1 "$t/schedstat" 2>/dev/null)"
  done
}

machine_context
echo "# DURATION=$DURATION ROUNDS=$ROUNDS, 50 connections, nginx on CPU $SERVER_CPU, client on CPU $CLIENT_CPU"
for ((round = 1; round <= ROUNDS; round++)); do
  taskset -c "$CLIENT_CPU" script -qec "stty cols 120 rows 40; exec $(printf '%q ' "$LOADLAB" bench \
    -c 50 -t 1 -d "${DURATION}s" --format json "$url")" /dev/null >"$work/out.$round" &
  scripted=$!
  sleep $((DURATION - 1))
  loadlab=$(pgrep -P "$scripted" -x loadlab || true)
  [ -n "$loadlab" ] || die "round $round: loadlab did not start under script"
  { echo "script $(cut -d' ' -f1 "/proc/$scripted/schedstat")"; ns "$loadlab"; } >"$work/ns.$round"
  wait "$scripted" || die "round $round: loadlab failed (output in $work/out.$round)"
done

python3 - "$work" "$ROUNDS" <<'EOF'
import statistics, sys

work, rounds = sys.argv[1], int(sys.argv[2])
print(f"{'round':>5} {'workers_ms':>10} {'view_ms':>8} {'show_ms':>8} {'script_ms':>9} {'other_ms':>8} {'view+show+script/workers':>25}")
shares = []
for r in range(1, rounds + 1):
    ms = {"workers": 0.0, "view": 0.0, "show": 0.0, "script": 0.0, "other": 0.0}
    for line in open(f"{work}/ns.{r}"):
        name, _, value = line.rpartition(" ")
        if not value.strip().isdigit():
            continue  # a thread that ended between the listing and the read
        key = "workers" if name.startswith("loadlab-w") else name if name in ms else "other"
        ms[key] += int(value) / 1e6
    if ms["workers"] == 0:
        sys.exit(f"view-cost.sh: round {r}: no worker thread was read")
    share = (ms["view"] + ms["show"] + ms["script"]) / ms["workers"]
    shares.append(share)
    print(f"{r:>5} {ms['workers']:>10.1f} {ms['view']:>8.1f} {ms['show']:>8.1f} {ms['script']:>9.1f}"
          f" {ms['other']:>8.1f} {share:>25.2%}")
print(f"\nthe view's cost over the workers': median {statistics.median(shares):.2%}"
      f" (rounds {min(shares):.2%} to {max(shares):.2%})")
EOF

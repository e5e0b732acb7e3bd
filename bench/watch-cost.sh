#!/usr/bin/env bash
# What watching a run costs beside the hot path, read from each thread's own CPU: near the end of
# each round of loadlab's bench every thread's run time (/proc/PID/task/TID/schedstat, in
# nanoseconds) is read. WATCH=view: the bench runs on a pseudo-terminal (script(1), 120x40) with
# its live view on; its cost is the drawing thread ("view"), the thread that feeds it ("show")
# and script's copying of the frames (as a terminal would have to). WATCH=scraped: the bench
# serves --metrics-listen and curl scrapes it every second, as Prometheus would; its cost is the
# endpoint's thread ("metrics") and the thread that feeds its board ("show"). Each over the
# workers' ("loadlab-w*") in the same seconds: a share the machine's drift cannot move, where CPU
# per request from round to round drifts by more than either costs (bench/vs-peers.sh's
# loadlab-tty and loadlab-scraped give those figures).
#
# Env: WATCH (view or scraped, default view), DURATION (s, default 6), ROUNDS (default 5),
#      LOADLAB (default target/release/loadlab, rebuilt if it is the default).
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh

DURATION=${DURATION:-6}
ROUNDS=${ROUNDS:-5}
WATCH=${WATCH:-view}
LOADLAB=${LOADLAB:-target/release/loadlab}
positive_ints DURATION ROUNDS
[ "$DURATION" -ge 3 ] || die "DURATION must be at least 3 s: the threads are read a second before the end"
case $WATCH in
  view) command -v script >/dev/null || die "WATCH=view needs script (bsdutils)" ;;
  scraped) command -v curl >/dev/null || die "WATCH=scraped needs curl" ;;
  *) die "WATCH is view or scraped, not '$WATCH'" ;;
esac
split_cpus
ensure_loadlab

work=$(mktemp -d -t loadlab-watch-cost.XXXXXX)
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
echo "# WATCH=$WATCH DURATION=$DURATION ROUNDS=$ROUNDS, 50 connections, nginx on CPU $SERVER_CPU, client on CPU $CLIENT_CPU"
for ((round = 1; round <= ROUNDS; round++)); do
  bench=(bench -c 50 -t 1 -d "${DURATION}s" --format json)
  if [ "$WATCH" = view ]; then
    taskset -c "$CLIENT_CPU" script -qec "stty cols 120 rows 40; exec $(printf '%q ' "$LOADLAB" \
      "${bench[@]}" "$url")" /dev/null >"$work/out.$round" &
    started=$!
    sleep $((DURATION - 1))
    loadlab=$(pgrep -P "$started" -x loadlab || true)
    copier="script $(cut -d' ' -f1 "/proc/$started/schedstat")"
  else
    metrics=$(free_port)
    taskset -c "$CLIENT_CPU" "$LOADLAB" "${bench[@]}" --metrics-listen "$metrics" \
      --metrics-linger 0 "$url" >"$work/out.$round" 2>/dev/null &
    started=$! loadlab=$!
    for ((s = 1; s < DURATION; s++)); do
      sleep 1
      curl -s -o /dev/null "http://127.0.0.1:$metrics/metrics" || true
    done
    copier=
  fi
  [ -n "$loadlab" ] || die "round $round: loadlab did not start"
  { [ -z "$copier" ] || echo "$copier"; ns "$loadlab"; } >"$work/ns.$round"
  wait "$started" || die "round $round: loadlab failed (output in $work/out.$round)"
done

python3 - "$work" "$ROUNDS" "$WATCH" <<'EOF'
import statistics, sys

work, rounds, watch = sys.argv[1], int(sys.argv[2]), sys.argv[3]
# The threads that watching adds, by name (and script's copying, on a pty).
added = ["view", "show", "script"] if watch == "view" else ["metrics", "show"]
print(f"{'round':>5} {'workers_ms':>10}" + "".join(f" {a + '_ms':>10}" for a in added)
      + f" {'other_ms':>8} {'+'.join(added) + '/workers':>25}")
shares = []
for r in range(1, rounds + 1):
    ms = {"workers": 0.0, "other": 0.0, **{a: 0.0 for a in added}}
    for line in open(f"{work}/ns.{r}"):
        name, _, value = line.rpartition(" ")
        if not value.strip().isdigit():
            continue  # a thread that ended between the listing and the read
        key = "workers" if name.startswith("loadlab-w") else name if name in ms else "other"
        ms[key] += int(value) / 1e6
    if ms["workers"] == 0:
        sys.exit(f"watch-cost.sh: round {r}: no worker thread was read")
    share = sum(ms[a] for a in added) / ms["workers"]
    shares.append(share)
    print(f"{r:>5} {ms['workers']:>10.1f}" + "".join(f" {ms[a]:>10.1f}" for a in added)
          + f" {ms['other']:>8.1f} {share:>25.2%}")
print(f"\nwatching's cost ({watch}) over the workers': median {statistics.median(shares):.2%}"
      f" (rounds {min(shares):.2%} to {max(shares):.2%})")
EOF

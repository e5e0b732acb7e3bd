#!/usr/bin/env bash
# What `--profile` costs the thing it measures: req/s of the same lab cell with and without
# profiling (perf on every CPU, and php-excimer inside PHP), in interleaved rounds whose order
# alternates, so that a machine getting busier or quieter weighs on both sides alike.
#
#   bench/profile-cost.sh                          # wordpress-nginx-fpm (OPcache on), 5 rounds
#   STACK=nginx-fpm WORKLOAD=phpinfo.php ROUNDS=9 bench/profile-cost.sh
#   CONCURRENCY=25 DURATION=10s bench/profile-cost.sh
#   PROFILED=excimer bench/profile-cost.sh          # what each half of the profiler costs alone
#
# Each side is one `loadlab run` of a one-cell suite (the stack brought up, warmed, measured,
# taken down), `--profile all` or `--profile none`: what a user's profiled run pays, perf's
# folding after the cell excluded (it runs once the cell is measured). Prints each round's
# req/s and the stack's CPU per request (every tier's, from the run's store), then the median
# ratio profiled / not of each and its spread, with the load average before and after. Needs root (perf system-wide), linux-perf and php-excimer.
#
# PROFILED says what the profiled side pays, to tell the profiler's two halves apart:
#   all      `--profile all`: perf and php-excimer (the default)
#   excimer  `--profile all` with a perf that records nothing (a stub first on PATH, which the
#            lab finds as it finds perf, and which "fails" as a refused perf does): php-excimer
#            alone, inside every PHP request of the cell
#   perf     `--profile none` beside a `perf record` with the profiler's own options
#            (crates/lab/src/profiler/mod.rs), on every CPU from before the cell to after it:
#            perf alone, at PERF_HZ (99, the profiler's) samples per second of each CPU
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh

STACK=${STACK:-wordpress-nginx-fpm}
WORKLOAD=${WORKLOAD:-wordpress}
CONCURRENCY=${CONCURRENCY:-10}
DURATION=${DURATION:-8s}
ROUNDS=${ROUNDS:-5}
PROFILED=${PROFILED:-all}
PERF_HZ=${PERF_HZ:-99}
LOADLAB=${LOADLAB:-target/release/loadlab}
ensure_loadlab
command -v python3 >/dev/null || die "needs python3"
case $PROFILED in all | excimer | perf) ;; *) die "PROFILED=$PROFILED: all, excimer or perf" ;; esac

# Short: MariaDB's socket path in the state directory must stay under 108 bytes.
work=$(mktemp -d /tmp/llpc-XXXXXX)
export LOADLAB_STATE_DIR=$work/s
mkdir -p "$LOADLAB_STATE_DIR" "$work/stub"
printf '#!/bin/sh\nexit 0\n' >"$work/stub/perf"
chmod +x "$work/stub/perf"
beside=
cleanup() {
  [ -z "$beside" ] || kill -TERM "$beside" 2>/dev/null || true
  "$LOADLAB" stack down --all >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

cat >"$work/cost.toml" <<EOF
name = "profile-cost"
description = "one cell of $STACK under $WORKLOAD, with and without --profile"
repetitions = 1
warmup = "2s"

[[stacks]]
name = "$STACK"

[[workloads]]
name = "$WORKLOAD"

[[loads]]
model = "closed"
concurrency = [$CONCURRENCY]
duration = "$DURATION"
EOF

# req/s of one run of the suite with `--profile MODE`, from its cell's line ("[ 1/1] ... req/s").
measure() {
  local mode=$1 profile=$1 path=$PATH
  rm -rf "$work/out"
  if [ "$mode" = all ] && [ "$PROFILED" = perf ]; then
    profile=none
    perf record -q -a -e cpu-clock -F "$PERF_HZ" -g -o "$work/perf.data" 2>"$work/perf.log" &
    beside=$!
  fi
  [ "$mode" = all ] && [ "$PROFILED" = excimer ] && path=$work/stub:$PATH
  PATH=$path "$LOADLAB" run --suite "$work/cost.toml" --profile "$profile" --out "$work/out" \
    >"$work/$mode.log" 2>&1 || { cat "$work/$mode.log" >&2; die "loadlab run --profile $profile failed"; }
  if [ -n "$beside" ]; then
    # SIGTERM, which perf record ends on as on SIGINT: a shell's background job ignores SIGINT.
    kill -TERM "$beside"
    wait "$beside" || true
    beside=
    [ -s "$work/perf.data" ] || die "perf record recorded nothing: $(head -3 "$work/perf.log")"
    rm -f "$work/perf.data"
  fi
  if [ "$mode" = all ] && [ "$PROFILED" = all ] && grep -q "perf could not record" "$work/$mode.log"; then
    die "perf could not record here (run as root): $(grep -m1 'perf could not' "$work/$mode.log")"
  fi
  # req/s, and the stack's CPU per request: every tier's CPU over the cell (the sampler's
  # series) over the requests completed, which a machine busy with other work disturbs less.
  python3 -c '
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
metric = lambda name: db.execute("SELECT value FROM metrics WHERE name = ?", (name,)).fetchone()[0]
cpu = db.execute("SELECT SUM(cpu_user_s + cpu_sys_s) FROM samples").fetchone()[0]
rps, done = metric("rps"), metric("completed")
print(f"{rps:.2f} {1000 * cpu / done:.3f}")' "$work/out/loadlab.db"
}

echo "# $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) CPUs; $STACK $WORKLOAD c=$CONCURRENCY $DURATION, $ROUNDS rounds; profiled: $PROFILED$([ "$PROFILED" != perf ] || echo " at $PERF_HZ Hz")"
echo "# load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
rounds=()
for round in $(seq 1 "$ROUNDS"); do
  if [ $((round % 2)) -eq 1 ]; then order=(none all); else order=(all none); fi
  declare -A got=()
  for mode in "${order[@]}"; do
    got[$mode]=$(measure "$mode")
  done
  read -r rps_none cpu_none <<<"${got[none]}"
  read -r rps_all cpu_all <<<"${got[all]}"
  rounds+=("$rps_none,$rps_all,$cpu_none,$cpu_all")
  printf 'round %d (%s first): req/s without %s, profiled %s; stack CPU per request %s ms, %s ms\n' \
    "$round" "${order[0]}" "$rps_none" "$rps_all" "$cpu_none" "$cpu_all"
  unset got
done
python3 - "${rounds[@]}" <<'EOF'
import statistics, sys
rows = [[float(v) for v in r.split(",")] for r in sys.argv[1:]]
for name, ratios in [("req/s", [a / n for n, a, _, _ in rows]),
                     ("stack CPU per request", [a / n for _, _, n, a in rows])]:
    r = sorted(ratios)
    print(f"{name}, profiled / not: median {statistics.median(r):.3f}, "
          f"spread {r[0]:.3f}-{r[-1]:.3f} over {len(r)} rounds")
EOF
echo "# load average after: $(cut -d' ' -f1-3 /proc/loadavg)"

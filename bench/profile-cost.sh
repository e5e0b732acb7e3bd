#!/usr/bin/env bash
# What `--profile` costs the thing it measures: req/s of the same lab cell with and without
# profiling (perf on every CPU, and php-excimer inside PHP), in interleaved rounds whose order
# alternates, so that a machine getting busier or quieter weighs on both sides alike.
#
#   bench/profile-cost.sh                          # wordpress-nginx-fpm (OPcache on), 5 rounds
#   STACK=nginx-fpm WORKLOAD=phpinfo.php ROUNDS=9 bench/profile-cost.sh
#   CONCURRENCY=25 DURATION=10s bench/profile-cost.sh
#
# Each side is one `loadlab run` of a one-cell suite (the stack brought up, warmed, measured,
# taken down), `--profile all` or `--profile none`: what a user's profiled run pays, perf's
# folding after the cell excluded (it runs once the cell is measured). Prints each round's
# req/s and ratio (profiled / not), then the median ratio and the spread, with the load
# average before and after. Needs root (perf system-wide), linux-perf and php-excimer.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh

STACK=${STACK:-wordpress-nginx-fpm}
WORKLOAD=${WORKLOAD:-wordpress}
CONCURRENCY=${CONCURRENCY:-10}
DURATION=${DURATION:-8s}
ROUNDS=${ROUNDS:-5}
LOADLAB=${LOADLAB:-target/release/loadlab}
ensure_loadlab
command -v python3 >/dev/null || die "needs python3"

# Short: MariaDB's socket path in the state directory must stay under 108 bytes.
work=$(mktemp -d /tmp/llpc-XXXXXX)
export LOADLAB_STATE_DIR=$work/s
mkdir -p "$LOADLAB_STATE_DIR"
cleanup() {
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
  local mode=$1
  rm -rf "$work/out"
  "$LOADLAB" run --suite "$work/cost.toml" --profile "$mode" --out "$work/out" >"$work/$mode.log" 2>&1 \
    || { cat "$work/$mode.log" >&2; die "loadlab run --profile $mode failed"; }
  if [ "$mode" = all ] && grep -q "perf could not record" "$work/$mode.log"; then
    die "perf could not record here (run as root): $(grep -m1 'perf could not' "$work/$mode.log")"
  fi
  python3 -c '
import re, sys
line = next(l for l in open(sys.argv[1]) if re.match(r"\[\s*1/1\]", l))
print(re.search(r"([0-9][0-9,.]*) req/s", line).group(1).replace(",", ""))' "$work/$mode.log"
}

echo "# $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) CPUs; $STACK $WORKLOAD c=$CONCURRENCY $DURATION, $ROUNDS rounds"
echo "# load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
ratios=()
for round in $(seq 1 "$ROUNDS"); do
  if [ $((round % 2)) -eq 1 ]; then order=(none all); else order=(all none); fi
  declare -A rps=()
  for mode in "${order[@]}"; do
    rps[$mode]=$(measure "$mode")
  done
  ratio=$(python3 -c "print(f'{${rps[all]} / ${rps[none]}:.4f}')")
  ratios+=("$ratio")
  printf 'round %d (%s first): without %.1f req/s, profiled %.1f req/s, ratio %s\n' \
    "$round" "${order[0]}" "${rps[none]}" "${rps[all]}" "$ratio"
  unset rps
done
python3 - "${ratios[@]}" <<'EOF'
import statistics, sys
r = sorted(float(x) for x in sys.argv[1:])
print(f"profiled / not: median {statistics.median(r):.3f} (cost {100 * (1 - statistics.median(r)):.1f}%), "
      f"spread {r[0]:.3f}-{r[-1]:.3f} over {len(r)} rounds")
EOF
echo "# load average after: $(cut -d' ' -f1-3 /proc/loadavg)"

#!/usr/bin/env bash
# Load that changes over time, against a private nginx (bench/lib.sh), reported in BENCHMARKS.md:
#
# 1. A ramp 0..RAMP_TO req/s over RAMP_SECONDS s (default 0..20000 over 20 s) with --hdr-log:
#    per second, offered, achieved and whether the client limited it; the total sent against
#    the shape's integral (RAMP_TO x RAMP_SECONDS / 2); and the rows against the interval
#    log's corrected intervals, by count (tests/it/ramp.rs compares them value for value).
# 2. No cost for a fixed rate: CPU per request of this build and of BASELINE (another build,
#    default /work/main/target/release/loadlab) at RATE req/s for DURATION s, ROUNDS rounds,
#    interleaved and alternating which goes first.
#
# Env: RAMP_TO, RAMP_SECONDS, RATE (default 10000), DURATION (default 5), ROUNDS (default 6),
#      LOADLAB (default target/release/loadlab), BASELINE.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh

RAMP_TO=${RAMP_TO:-20000}
RAMP_SECONDS=${RAMP_SECONDS:-20}
RATE=${RATE:-10000}
DURATION=${DURATION:-5}
ROUNDS=${ROUNDS:-6}
BASELINE=${BASELINE:-/work/main/target/release/loadlab}
ensure_loadlab

dir=$(mktemp -d /tmp/loadlab-ramp.XXXXXX)
chmod 755 "$dir"
trap 'stop_nginx "$dir" 2>/dev/null || true; rm -rf "$dir"' EXIT
port=$(free_port)
start_nginx "$dir" "$port"
url="http://127.0.0.1:$port/hello.txt"

echo "== ramp 0..$RAMP_TO over ${RAMP_SECONDS}s against nginx"
echo "$LOADLAB bench $url --rate 0..$RAMP_TO -d ${RAMP_SECONDS}s --hdr-log ramp.hlog --format json"
"$LOADLAB" bench "$url" --rate "0..$RAMP_TO" -d "${RAMP_SECONDS}s" --hdr-log "$dir/ramp.hlog" \
  --format json --quiet >"$dir/ramp.json"
python3 - "$dir/ramp.json" "$dir/ramp.hlog" "$RAMP_TO" "$RAMP_SECONDS" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
log = [l for l in open(sys.argv[2]) if l.startswith('Tag=corrected,')]
integral = float(sys.argv[3]) * float(sys.argv[4]) / 2
limited = {"client_saturated", "client_starved", "fd_exhausted"}
worst = 0.0
print("second offered achieved completed p50_us p99_us flags")
for s in r["seconds"]:
    off, ach = s["offered"], s["achieved"]
    lim = bool(limited & set(s["flags"]))
    if not lim and off:
        worst = max(worst, abs(ach - off) / off)
    print(s["second"], off, ach, s["completed"], s["p50_us"], s["p99_us"], ",".join(s["flags"]))
print(f"sent {r['requests']['sent']}, integral {integral:.0f}, difference {r['requests']['sent'] - integral:+.0f}")
print(f"worst |achieved - offered| / offered over seconds not client-limited: {worst:.4%}")
print(f"rows {len(r['seconds'])}, corrected intervals in the log {len(log)}")
PY

echo "== fixed rate $RATE req/s for ${DURATION}s: CPU per request, this build vs $BASELINE"
for round in $(seq 1 "$ROUNDS"); do
  order=("$LOADLAB" "$BASELINE")
  (( round % 2 )) || order=("$BASELINE" "$LOADLAB")
  for bin in "${order[@]}"; do
    name=this; [ "$bin" = "$BASELINE" ] && name=baseline
    "$bin" bench "$url" --rate "$RATE" -d "${DURATION}s" -t 1 --format json --quiet \
      | python3 -c "import json,sys; r=json.load(sys.stdin); print('$round', '$name', r['client']['cpu_us_per_request'], r['rate']['achieved_rps'], ','.join(r['warnings'] and ['warned'] or []))"
  done
done

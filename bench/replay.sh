#!/usr/bin/env bash
# Replaying a 100,000-line access log at its own timing (--replay) against nginx, beside the
# open loop at the same rate on one URL (--rate): lateness (p50, p99, max), requests never
# sent, whether the schedule was kept, and the client's peak memory. Three logs of LINES lines
# at RATE lines a second: JSON lines with $msec times and every line a distinct request (the
# request table's worst case), the same with 100 distinct requests, and the Combined Log
# Format (whole-second times, spread over their second). See BENCHMARKS.md.
#
# Env: LINES (default 100000), RATE (lines per second, default 10000), ROUNDS (default 3),
#      LOADLAB (binary; default target/release/loadlab, rebuilt if it is the default).
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh

LINES=${LINES:-100000}
RATE=${RATE:-10000}
ROUNDS=${ROUNDS:-3}
LOADLAB=${LOADLAB:-target/release/loadlab}
split_cpus

positive_ints LINES RATE ROUNDS
ensure_loadlab

private_nginx_dir replay

port=$(free_port)
start_nginx "$work" "$port" "$SERVER_CPU"
base=http://127.0.0.1:$port

python3 - "$work" "$LINES" "$RATE" <<'EOF'
import sys, time
work, lines, rate = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
start_us = 1_714_557_600 * 1_000_000
gap_us = 1_000_000 / rate
with open(f"{work}/distinct.log", "w") as a, open(f"{work}/hundred.log", "w") as b, \
        open(f"{work}/combined.log", "w") as c:
    for i in range(lines):
        at = start_us + int(i * gap_us)
        msec = f"{at // 1_000_000}.{at % 1_000_000:06d}"
        a.write(f'{{"msec":"{msec}","request":"GET /hello.txt?line={i} HTTP/1.1","status":"200"}}\n')
        b.write(f'{{"msec":"{msec}","request":"GET /hello.txt?page={i % 100} HTTP/1.1","status":"200"}}\n')
        clf = time.strftime("%d/%b/%Y:%H:%M:%S +0000", time.gmtime(at // 1_000_000))
        c.write(f'10.0.0.{i % 250} - - [{clf}] "GET /hello.txt?line={i} HTTP/1.1" 200 13 "-" "bench"\n')
EOF

# run VARIANT ROUND: one measured run, its JSON, CPU and peak memory in $work.
run() {
  local variant=$1 round=$2 cmd
  cmd=("$LOADLAB" bench -t 1 --format json -q --expect-status 200)
  case $variant in
    open-loop) cmd+=(--rate "$RATE" -n "$LINES" "$base/hello.txt") ;;
    *) cmd+=(--replay "$work/$variant.log" "$base/") ;;
  esac
  echo "round $round: $variant" >&2
  taskset -c "$CLIENT_CPU" /usr/bin/time -f '%M %U %S %e' -o "$work/$variant.$round.time" \
    timeout --foreground -k 5 $((LINES / RATE + 60)) "${cmd[@]}" >"$work/$variant.$round.out"
  echo "$variant $round" >>"$work/runs"
}

machine_context
echo "# LINES=$LINES RATE=$RATE ROUNDS=$ROUNDS, one worker thread, nginx on CPU $SERVER_CPU," \
  "loadlab on CPU $CLIENT_CPU"

variants=(distinct hundred combined open-loop)
for ((round = 1; round <= ROUNDS; round++)); do
  for ((i = 0; i < ${#variants[@]}; i++)); do
    run "${variants[(i + round - 1) % ${#variants[@]}]}" "$round"
    sleep 1
  done
done

python3 - "$work" <<'EOF'
import json, sys
work = sys.argv[1]
print(f"{'variant':10} {'round':>5} {'done':>7} {'failed':>6} {'not_sent':>8} {'late_p50':>8}"
      f" {'late_p99':>8} {'late_max':>8} {'kept':>5} {'rss_MB':>6} {'cpu_us/req':>10} {'distinct':>8}"
      " warnings")
for line in open(f"{work}/runs"):
    variant, rnd = line.split()
    j = json.load(open(f"{work}/{variant}.{rnd}.out"))
    rss_kb, user, sys_, _ = map(float, open(f"{work}/{variant}.{rnd}.time").read().splitlines()[-1].split())
    r, q = j["rate"], j["requests"]
    distinct = j["replay"]["distinct_requests"] if j["replay"] else 1
    warnings = "; ".join(w.split(":")[0] for w in j["warnings"]) or "-"
    print(f"{variant:10} {rnd:>5} {q['completed']:>7} {q['failed']:>6} {r['not_sent']:>8}"
          f" {r['late_p50_us']:>8} {r['late_p99_us']:>8} {r['late_max_us']:>8}"
          f" {str(r['schedule_kept']).lower():>5} {rss_kb / 1024:>6.1f}"
          f" {(user + sys_) * 1e6 / max(1, q['completed'] + q['failed']):>10.2f} {distinct:>8} {warnings}")
print("(late_* in µs; kept: 99% sent within 1 ms of due and none left unsent; rss: peak, whole process)")
EOF

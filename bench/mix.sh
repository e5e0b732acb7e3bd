#!/usr/bin/env bash
# What a URL mix (--urls) costs the client: loadlab on one URL against loadlab on a 10-line
# list of the same nginx (ten 13-byte files, weights 1 to 10, one line with a header), by
# weight and in order, interleaved over rounds: client CPU µs per request and req/s. The issue's
# bound: the mix costs at most 10% more CPU per request than one URL. See BENCHMARKS.md.
#
# CPU time on a shared machine moves by tens of percent from run to run, so the script also
# counts what the client executes itself, which the machine's load does not move: user-space
# instructions per request under valgrind's callgrind, as the difference between runs of N and
# 3N requests divided by 2N (start-up and the report cancel out). The kernel's part (the
# socket system calls) is the same for a mix and one URL.
#
# Env: DURATION (s, default 5), ROUNDS (default 5), CONNECTIONS (default 50),
#      IR_REQUESTS (N for the instruction counts, default 20000; 0 skips them),
#      LOADLAB (binary; default target/release/loadlab, rebuilt if it is the default),
#      BASELINE (another loadlab binary, e.g. main's: its single URL is counted too),
#      H2=1 (HTTP/2 by prior knowledge, 10 connections x STREAMS streams, default 10).
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh

DURATION=${DURATION:-5}
ROUNDS=${ROUNDS:-5}
CONNECTIONS=${CONNECTIONS:-50}
H2=${H2:-0}
STREAMS=${STREAMS:-10}
IR_REQUESTS=${IR_REQUESTS:-20000}
LOADLAB=${LOADLAB:-target/release/loadlab}
split_cpus

positive_ints DURATION ROUNDS CONNECTIONS STREAMS
ensure_loadlab

private_nginx_dir mix

http2=()
if [ "$H2" = 1 ]; then
  export NGINX_LISTEN_EXTRA=http2
  http2=(--http2 --streams "$STREAMS")
  CONNECTIONS=10
fi
port=$(free_port)
start_nginx "$work" "$port" "$SERVER_CPU"
# Ten files like hello.txt, so that the mix and the single URL ask nginx for the same work.
: >"$work/urls.txt"
for i in $(seq 0 9); do
  printf 'hello, world!' >"$work/www/f$i.txt"
  chmod 644 "$work/www/f$i.txt"
  header=''
  [ "$i" != 3 ] || header=' Accept: text/plain'
  echo "weight=$((i + 1)) GET /f$i.txt$header" >>"$work/urls.txt"
done
base=http://127.0.0.1:$port

# command VARIANT LOAD...: the loadlab command line of VARIANT with the load flags LOAD, in $cmd.
command_of() {
  local variant=$1
  shift
  cmd=("$LOADLAB" bench "$@" -t 1 "${http2[@]}" --format json -q --expect-status 200)
  case $variant in
    single) cmd+=("$base/hello.txt") ;;
    baseline) cmd=("$BASELINE" "${cmd[@]:1}" "$base/hello.txt") ;;
    weighted) cmd+=(--urls "$work/urls.txt" "$base/") ;;
    sequential) cmd+=(--urls "$work/urls.txt" --urls-order sequential "$base/") ;;
  esac
}

# run VARIANT ROUND: one measured run, its JSON and its whole-process CPU in $work.
run() {
  local variant=$1 round=$2 cmd
  command_of "$variant" -c "$CONNECTIONS" -d "${DURATION}s"
  echo "round $round: $variant" >&2
  taskset -c "$CLIENT_CPU" /usr/bin/time -f '%U %S %e' -o "$work/$variant.$round.cpu" \
    timeout --foreground -k 5 $((DURATION + 30)) "${cmd[@]}" >"$work/$variant.$round.out"
  echo "$variant $round" >>"$work/runs"
}

machine_context
echo "# DURATION=$DURATION ROUNDS=$ROUNDS connections=$CONNECTIONS H2=$H2${http2:+ x $STREAMS streams}," \
  "nginx on CPU $SERVER_CPU, loadlab on CPU $CLIENT_CPU"

variants=(single weighted sequential)
for ((round = 1; round <= ROUNDS; round++)); do
  for ((i = 0; i < ${#variants[@]}; i++)); do
    run "${variants[(i + round - 1) % ${#variants[@]}]}" "$round"
    sleep 1
  done
done

python3 - "$work" "${variants[@]}" <<'EOF'
import json, statistics, sys

work, variants = sys.argv[1], sys.argv[2:]
rows = {}
print(f"{'variant':10} {'round':>5} {'req/s':>9} {'requests':>9} {'failed':>6}"
      f" {'cpu_us/req':>10} {'engine_cpu_us/req':>17} {'warnings':>8}")
for line in open(f"{work}/runs"):
    variant, rnd = line.split()
    j = json.load(open(f"{work}/{variant}.{rnd}.out"))
    user, sys_, _ = map(float, open(f"{work}/{variant}.{rnd}.cpu").read().splitlines()[-1].split())
    n = j["requests"]["completed"] + j["requests"]["failed"]
    # The whole process (start, reading the list, the report) and the engine's own figure
    # (its workers over the measured window): the mix's cost shows in both.
    cpu = (user + sys_) * 1e6 / n
    engine = j["client"]["cpu_us_per_request"]
    if j["urls"] is not None:
        assert sum(u["completed"] for u in j["urls"]) == j["requests"]["completed"]
    rows[variant, int(rnd)] = (j["rps"], cpu, engine)
    print(f"{variant:10} {rnd:>5} {j['rps']:>9.0f} {n:>9} {j['requests']['failed']:>6}"
          f" {cpu:>10.2f} {engine:>17.2f} {len(j['warnings']):>8}")

print("\nmedians over rounds")
for v in variants:
    vals = [x for (w, _), x in rows.items() if w == v]
    print(f"{v:10} req/s {statistics.median(x[0] for x in vals):>8.0f}"
          f"  cpu_us/req {statistics.median(x[1] for x in vals):>6.2f}"
          f"  engine {statistics.median(x[2] for x in vals):>6.2f}")

rounds = sorted({r for _, r in rows})
print("\nper-round ratios to single, their median (the bound: cpu at most 1.10)")
for v in variants[1:]:
    cpu = statistics.median(rows[v, r][1] / rows["single", r][1] for r in rounds)
    engine = statistics.median(rows[v, r][2] / rows["single", r][2] for r in rounds)
    rps = statistics.median(rows[v, r][0] / rows["single", r][0] for r in rounds)
    verdict = "within" if engine <= 1.10 else "ABOVE"
    print(f"{v}/single: cpu_us/req {cpu:.3f}  engine cpu_us/req {engine:.3f}  req/s {rps:.3f}"
          f"  ({verdict} the 10% bound)")
EOF

# instructions VARIANT: user-space instructions per request, from two runs under callgrind.
instructions() {
  local variant=$1 n ir=()
  for n in "$IR_REQUESTS" $((3 * IR_REQUESTS)); do
    command_of "$variant" -c "$CONNECTIONS" -n "$n"
    ir+=("$(taskset -c "$CLIENT_CPU" valgrind --tool=callgrind --callgrind-out-file=/dev/null \
      "${cmd[@]}" 2>&1 >/dev/null | sed -n 's/.*Collected : //p')")
  done
  [ -n "${ir[0]}" ] && [ -n "${ir[1]}" ] || die "callgrind gave no count for $variant"
  echo "$variant $(((ir[1] - ir[0]) / (2 * IR_REQUESTS)))"
}

if [ "$IR_REQUESTS" != 0 ]; then
  command -v valgrind >/dev/null || die "valgrind not installed (make deps-bench), or IR_REQUESTS=0"
  echo
  echo "user-space instructions per request (callgrind, (I(3N) - I(N)) / 2N, N=$IR_REQUESTS)"
  counted=(single weighted sequential)
  [ -z "${BASELINE:-}" ] || counted=(baseline "${counted[@]}")
  for variant in "${counted[@]}"; do
    instructions "$variant"
  done | awk '{ if ($1 == "single") s = $2; n[NR] = $1; v[NR] = $2 }
    END { for (i = 1; i <= NR; i++) printf "%-10s %6d  %.3f of single\n", n[i], v[i], v[i] / s }'
fi

#!/usr/bin/env bash
# 10,000 concurrent connections on loopback: does loadlab really hold them open, without errors,
# and what does it cost in memory (peak RSS)? See BENCHMARKS.md for how to read the output.
#
# Two runs against one nginx, loadlab pinned to CPU 0 with one thread, nginx to CPU 1:
#   closed  loadlab bench -c CONNECTIONS -d DURATION /hello.txt: closed loop, CONNECTIONS
#           keep-alive connections open by construction
#   open    loadlab bench --rate RATE --max-connections CONNECTIONS -d DURATION /slow: open loop
#           against a location that nginx answers at only SLOW_RATE req/s (limit_req queues the
#           rest, answering each request late instead of refusing it), so requests pile up and
#           loadlab opens connections up to its limit
# While each run lasts, the client's established connections to nginx's port are counted with
# ss once a second.
#
# Env: CONNECTIONS (default 10000), DURATION (s, default 10), RATE (req/s offered in the open
#      run, default 20000), SLOW_RATE (req/s nginx answers on /slow, default 2000),
#      RUNS (default "closed open"), MAX_RSS_MB (the bound checked, default 100),
#      LOADLAB (binary; default target/release/loadlab, rebuilt if it is the default).
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh

CONNECTIONS=${CONNECTIONS:-10000}
DURATION=${DURATION:-10}
RATE=${RATE:-20000}
SLOW_RATE=${SLOW_RATE:-2000}
MAX_RSS_MB=${MAX_RSS_MB:-100}
read -r -a runs <<<"${RUNS:-closed open}"
LOADLAB=${LOADLAB:-target/release/loadlab}
split_cpus
# A run that has not ended this long after its nominal end is a hang: closing 10,000
# connections takes well under a second.
GRACE=$((DURATION * 2 + 30))

for v in CONNECTIONS DURATION RATE SLOW_RATE MAX_RSS_MB; do
  [[ ${!v} =~ ^[1-9][0-9]*$ ]] || die "$v must be a positive integer, not '${!v}'"
done
for r in "${runs[@]}"; do
  case $r in closed | open) ;; *) die "unknown run '$r' in RUNS (known: closed open)" ;; esac
done
ensure_loadlab
[ -x /usr/bin/time ] || die "GNU time not installed (make deps-bench)"
command -v ss >/dev/null || die "ss not installed (iproute2)"

# Open files: loadlab needs one per connection plus a few, and so does nginx's worker (both
# inherit this shell's limits). Raise the hard limit when allowed (root with
# CAP_SYS_RESOURCE; in a container root may lack it), then the soft limit up to the hard one.
need=$((CONNECTIONS + 100))
want=$((CONNECTIONS * 2 + 1000))
[ "$(ulimit -Hn)" = unlimited ] || [ "$(ulimit -Hn)" -ge "$want" ] ||
  ulimit -Hn "$want" 2>/dev/null || true
ulimit -Sn "$(ulimit -Hn)"
nofile=$(ulimit -n)
[ "$nofile" = unlimited ] || [ "$nofile" -ge "$need" ] ||
  die "the open-file limit is $nofile and cannot be raised (that takes root with" \
    "CAP_SYS_RESOURCE); $CONNECTIONS connections need $need"

work=$(mktemp -d -t loadlab-scale.XXXXXX)
trap 'stop_nginx "$work"; rm -rf "$work"' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

port=$(free_port)
port2=$(free_port)
[ "$port2" != "$port" ] || port2=$(free_port)
[ "$port2" != "$port" ] || die "free_port returned $port twice"
# worker_connections counts every client connection plus the listening sockets; the queue of
# pending connects (backlog) is as long as the kernel allows (net.core.somaxconn), so that
# 10,000 connects at once are not dropped and retried a second later.
# /slow: limit_req without nodelay delays every request beyond SLOW_RATE/s instead of refusing it
# (burst is the queue's length), so each holds its connection open while it waits.
wc=$((CONNECTIONS * 2))
[ "$wc" -ge 20000 ] || wc=20000
NGINX_WORKER_CONNECTIONS=$wc NGINX_RLIMIT_NOFILE=$nofile NGINX_BACKLOG=65535 \
  NGINX_EXTRA_PORTS=$port2 \
  NGINX_HTTP_EXTRA="limit_req_zone \$server_port zone=slow:1m rate=${SLOW_RATE}r/s;" \
  NGINX_SERVER_EXTRA="location = /slow { limit_req zone=slow burst=$((CONNECTIONS * 10)); alias $work/www/hello.txt; }" \
  start_nginx "$work" "$port" "$SERVER_CPU"

echo "# $(date -u '+%Y-%m-%d %H:%M UTC'), $(uname -sr), $(nproc) CPUs:" \
  "$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | sed -n 1p)"
echo "# $("$NGINX" -v 2>&1), load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# CONNECTIONS=$CONNECTIONS DURATION=$DURATION RATE=$RATE SLOW_RATE=$SLOW_RATE" \
  "RUNS=\"${runs[*]}\", open files $nofile (hard $(ulimit -Hn)), nginx worker_connections $wc," \
  "somaxconn $(cat /proc/sys/net/core/somaxconn), nginx on CPU $SERVER_CPU, loadlab on CPU $CLIENT_CPU"

# run NAME PORT: one measured run, with its ss samples; everything lands in $work.
run() {
  local name=$1 p=$2 cmd pid
  case $name in
    closed) cmd=("$LOADLAB" bench -q -t 1 -c "$CONNECTIONS" -d "${DURATION}s" --format json
      "http://127.0.0.1:$p/hello.txt") ;;
    open) cmd=("$LOADLAB" bench -q -t 1 --rate "$RATE" --max-connections "$CONNECTIONS"
      -d "${DURATION}s" --format json "http://127.0.0.1:$p/slow") ;;
  esac
  echo "$name: ${cmd[*]}" >&2
  printf '%s\n' "${cmd[*]}" >"$work/$name.cmd"
  taskset -c "$CLIENT_CPU" /usr/bin/time -f '%U %S %e %M' -o "$work/$name.time" \
    timeout -k 5 "$GRACE" "${cmd[@]}" >"$work/$name.out" 2>"$work/$name.err" &
  pid=$!
  # The client's side of each connection: established, toward nginx's port. One sample a
  # second while the run lasts (DURATION samples at most), on the second's half so that none
  # falls on the run's first instant or its end.
  sleep 0.5
  for ((s = 1; s <= DURATION; s++)); do
    kill -0 "$pid" 2>/dev/null || break
    echo "$s $(ss -Htn state established "( dport = :$p )" | wc -l)" >>"$work/$name.ss"
    sleep 1
  done
  wait "$pid" || { cat "$work/$name.err" >&2; die "$name run failed: ${cmd[*]}"; }
  [ -s "$work/$name.out" ] || die "$name run printed no result: ${cmd[*]}"
}

for name in "${runs[@]}"; do
  case $name in closed) run closed "$port" ;; open) run open "$port2" ;; esac
  sleep 2 # let the previous run's connections close
done
grep -E 'worker_connections|setrlimit|emerg|alert' "$work/error.log" 2>/dev/null | sort -u | head -n5 |
  sed 's/^/nginx error log: /' || true

python3 - "$work" "$CONNECTIONS" "$MAX_RSS_MB" "${runs[@]}" <<'EOF'
import json, statistics, sys

work, conns, max_rss, runs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4:]
ok = True
for name in runs:
    j = json.load(open(f"{work}/{name}.out"))
    user, sys_, elapsed, rss_kb = open(f"{work}/{name}.time").read().splitlines()[-1].split()
    rss = int(rss_kb) / 1024
    try:
        samples = [tuple(map(int, l.split())) for l in open(f"{work}/{name}.ss")]
    except FileNotFoundError:
        samples = []
    counts = [c for _, c in samples]
    mid = counts[len(counts) // 2] if counts else None
    errs = {k: v for k, v in j["errors"].items() if v}
    req = j["requests"]
    print(f"\n{name}: {open(f'{work}/{name}.cmd').read().strip()}")
    print(f"  connections.peak {j['connections']['peak']}  opened {j['connections']['opened']}"
          f"  completed {req['completed']}  failed {req['failed']}  unfinished {req['unfinished']}"
          f"  req/s {j['rps']:.0f}")
    if j.get("rate"):
        r = j["rate"]
        print(f"  offered {r['offered_rps']:.0f} req/s, achieved {r['achieved_rps']:.0f},"
              f" not sent {r['not_sent']}, late p99 {r['late_p99_us']} us")
    print(f"  errors {errs or 0}  status {j['status']}")
    print(f"  peak RSS {rss:.1f} MB (/usr/bin/time %M {rss_kb} kB), CPU user {user} s sys {sys_} s,"
          f" elapsed {elapsed} s, client.saturated {str(j['client']['saturated']).lower()}")
    print(f"  established connections (ss, once a second): {' '.join(map(str, counts)) or 'none'}")
    print(f"  mid-run {mid}, min {min(counts) if counts else '-'}, max {max(counts) if counts else '-'}")
    for w in j["warnings"]:
        print(f"  loadlab warns: {w}")
    good_rss = rss <= max_rss
    good_conns = mid is not None and mid >= 0.99 * conns and j["connections"]["peak"] >= conns
    good_errs = req["failed"] == 0
    print(f"  must reach: {conns} open connections: {'yes' if good_conns else 'NO'}"
          f"; peak RSS <= {max_rss} MB: {'yes' if good_rss else 'NO'}"
          f"; no failed request: {'yes' if good_errs else 'NO'}")
    ok = ok and good_rss and good_conns and good_errs
sys.exit(0 if ok else 1)
EOF

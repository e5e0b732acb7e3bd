#!/usr/bin/env bash
# Open loop against nginx: does loadlab send what it was asked to (achieved against offered, how
# late sends were), and what does that cost the client per request, next to httperf at the same
# rate in the same run. See BENCHMARKS.md for how to read the output.
#
# Three runs at each rate, interleaved and rotated:
#   loadlab      loadlab bench --rate R -d DURATION -t 1: open loop over keep-alive connections,
#                sends grouped within the wake-up cost it measures at start (the default)
#   loadlab-exact
#                loadlab bench --rate R --coalesce 0: each send at its own due time
#   loadlab-new  loadlab bench --conn-rate R --calls-per-conn 1 --conns R*DURATION -t 1:
#                httperf's session model, one new connection per request
#   httperf      httperf --rate R --num-conns R*DURATION --num-calls 1: one new connection per
#                request, as httperf is usually run
#   loadlab-coalesce
#                loadlab bench --rate R --coalesce COALESCE (default 1ms): sends on a grid, as
#                wrk2's 1 ms timer sends, with the lateness that costs measured
#   wrk2         (when WRK2 names its binary) wrk2 -t1 -c50 -R R -d DURATION: wrk2's open loop
#                over 50 keep-alive connections, the like-for-like peer of loadlab --rate.
#                Debian has no wrk2; build it from ../shared/peers: tar xzf
#                ../shared/peers/wrk2-src.tar.gz -C /tmp && make -C /tmp/wrk2, then
#                WRK2=/tmp/wrk2/wrk TOOLS="loadlab wrk2" bench/rate-accuracy.sh
# loadlab-new and httperf do the same work and are the like-for-like pair; loadlab against
# httperf also shows what keep-alive saves.
#
# Env: RATES (req/s, default "1000 5000 10000 20000"), DURATION (s, default 5), ROUNDS (default
#      3), TOOLS (default "loadlab loadlab-new httperf"), MAX_CONNECTIONS (passed to both
#      loadlab runs as --max-connections; unset: loadlab's default, 10,000; 1000 matches
#      httperf, which select() keeps below FD_SETSIZE = 1024 descriptors), SOURCE_IPS (passed
#      to both loadlab runs as --source-ips, e.g. 127.0.0.1-127.0.0.8: more local addresses,
#      more ephemeral ports; httperf has no such option, so the runs are no longer like for like),
#      LOADLAB (binary; default target/release/loadlab, rebuilt if it is the default), WRK2
#      (wrk2's binary: adds wrk2 to the default TOOLS), WRK2_CONNECTIONS (default 50).
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh

read -r -a rates <<<"${RATES:-1000 5000 10000 20000}"
DURATION=${DURATION:-5}
ROUNDS=${ROUNDS:-3}
WRK2=${WRK2:-}
WRK2_CONNECTIONS=${WRK2_CONNECTIONS:-50}
COALESCE=${COALESCE:-1ms}
default_tools="loadlab loadlab-new httperf${WRK2:+ wrk2}"
read -r -a tools <<<"${TOOLS:-$default_tools}"
MAX_CONNECTIONS=${MAX_CONNECTIONS:-}
SOURCE_IPS=${SOURCE_IPS:-}
LOADLAB=${LOADLAB:-target/release/loadlab}
split_cpus
# Every run is bounded: a run that has not ended this long after its nominal end is a hang.
GRACE=$((DURATION * 3 + 30))

for v in DURATION ROUNDS; do
  [[ ${!v} =~ ^[1-9][0-9]*$ ]] || die "$v must be a positive integer, not '${!v}'"
done
[ ${#rates[@]} -gt 0 ] || die "RATES is empty"
for r in "${rates[@]}"; do
  [[ $r =~ ^[1-9][0-9]*$ ]] || die "RATES must hold positive integers, not '$r'"
done
loadlab_opts=()
if [ -n "$MAX_CONNECTIONS" ]; then
  [[ $MAX_CONNECTIONS =~ ^[1-9][0-9]*$ ]] ||
    die "MAX_CONNECTIONS must be a positive integer, not '$MAX_CONNECTIONS'"
  loadlab_opts=(--max-connections "$MAX_CONNECTIONS")
fi
[ -z "$SOURCE_IPS" ] || loadlab_opts+=(--source-ips "$SOURCE_IPS")
for t in "${tools[@]}"; do
  case $t in
    loadlab | loadlab-new | loadlab-coalesce | loadlab-exact) ;;
    httperf) command -v httperf >/dev/null || die "httperf not installed (make deps-bench)" ;;
    wrk2) [ -x "$WRK2" ] || die "wrk2 needs WRK2=path/to/wrk2's wrk (see the top of this script)" ;;
    *) die "unknown tool '$t' in TOOLS (known: loadlab loadlab-exact loadlab-coalesce loadlab-new httperf wrk2)" ;;
  esac
done
if [[ " ${tools[*]} " == *" loadlab"* ]]; then
  ensure_loadlab
fi
[ -x /usr/bin/time ] || die "GNU time not installed (make deps-bench)"

# Open files: a new connection per request at 20,000/s can hold thousands of sockets at once when
# the server falls behind (loadlab allows 10,000 by default). Raise the hard limit if allowed
# (root with CAP_SYS_RESOURCE), then the soft limit to the hard one; nginx inherits both.
# httperf limits itself to FD_SETSIZE (1024) whatever the limit: it uses select().
[ "$(ulimit -Hn)" = unlimited ] || [ "$(ulimit -Hn)" -ge 65536 ] ||
  ulimit -Hn 65536 2>/dev/null || true
ulimit -Sn "$(ulimit -Hn)"
nofile=$(ulimit -n)

work=$(mktemp -d -t loadlab-rate.XXXXXX)
trap 'stop_nginx "$work"; rm -rf "$work"' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# The runs, in order: per round, per rate, the tools rotated by one at each step, so that no
# tool always runs right after the same other one.
runs=()
step=0
for ((round = 1; round <= ROUNDS; round++)); do
  for rate in "${rates[@]}"; do
    for ((i = 0; i < ${#tools[@]}; i++)); do
      runs+=("${tools[(i + step) % ${#tools[@]}]} $rate $round")
    done
    step=$((step + 1))
  done
done

# One port per run. A new connection per request leaves a TIME_WAIT socket on the client for
# each (60 s, or until the port is reused a second later: tcp_tw_reuse), up to one per ephemeral
# port and destination; a 5 s run at 20,000/s goes through the 28,232 ephemeral ports several
# times. Toward a port no earlier run used, every local port is free again, so no run pays for
# the TIME_WAIT sockets of the one before it.
ports=()
for _ in "${runs[@]}"; do
  for _ in $(seq 20); do
    p=$(free_port)
    [[ " ${ports[*]} " == *" $p "* ]] || break
  done
  ports+=("$p")
done

# worker_connections counts the client's connections; 20000 leaves room for every connection
# loadlab may open (--max-connections 10000) while the server falls behind.
NGINX_WORKER_CONNECTIONS=20000 NGINX_RLIMIT_NOFILE=$nofile NGINX_BACKLOG=4096 \
  NGINX_EXTRA_PORTS="${ports[*]:1}" start_nginx "$work" "${ports[0]}" "$SERVER_CPU"
worker=$(pgrep -P "$(cat "$work/master.pid")" | head -n1)
[ -n "$worker" ] || die "no nginx worker process found"
ticks=$(getconf CLK_TCK)

# CPU time of the nginx worker so far, in clock ticks (utime + stime).
server_ticks() { awk '{print $14 + $15}' "/proc/$worker/stat"; }
# The client's CPU, all processes: "busy idle" ticks so far (steal counts as busy: time the
# hypervisor gave to someone else). Busy well above the client's own share means other
# processes competed for its CPU, and its lateness says more about them than about it.
cpu_ticks() {
  awk -v c="cpu$CLIENT_CPU" '$1 == c {print $2+$3+$4+$7+$8+$9, $5+$6}' /proc/stat
}

# run TOOL RATE ROUND PORT: one measured run; its output, its CPU time and the server's land in
# $work.
run() {
  local tool=$1 rate=$2 round=$3 port=$4 cmd base s0 s1 tw b0 i0 b1 i1
  local n=$((rate * DURATION))
  base="$work/$tool.$rate.$round"
  case $tool in
    loadlab) cmd=("$LOADLAB" bench -q -t 1 --rate "$rate" -d "${DURATION}s" "${loadlab_opts[@]}"
      --format json "http://127.0.0.1:$port/hello.txt") ;;
    loadlab-coalesce) cmd=("$LOADLAB" bench -q -t 1 --rate "$rate" -d "${DURATION}s"
      --coalesce "$COALESCE" "${loadlab_opts[@]}" --format json "http://127.0.0.1:$port/hello.txt") ;;
    loadlab-exact) cmd=("$LOADLAB" bench -q -t 1 --rate "$rate" -d "${DURATION}s"
      --coalesce 0 "${loadlab_opts[@]}" --format json "http://127.0.0.1:$port/hello.txt") ;;
    loadlab-new) cmd=("$LOADLAB" bench -q -t 1 --conn-rate "$rate" --calls-per-conn 1
      --conns "$n" "${loadlab_opts[@]}" --format json "http://127.0.0.1:$port/hello.txt") ;;
    httperf) cmd=(httperf --server 127.0.0.1 --port "$port" --uri /hello.txt --rate "$rate"
      --num-conns "$n" --num-calls 1 --timeout 5) ;;
    wrk2) cmd=("$WRK2" -t1 -c"$WRK2_CONNECTIONS" -R"$rate" -d"${DURATION}s" --latency
      "http://127.0.0.1:$port/hello.txt") ;;
  esac
  # TIME_WAIT sockets on the machine before the run (toward earlier runs' ports): context only.
  tw=$(ss -Htan state time-wait | wc -l)
  echo "round $round, $rate req/s: $tool (port $port, $tw TIME_WAIT before)" >&2
  s0=$(server_ticks)
  read -r b0 i0 <<<"$(cpu_ticks)"
  # time's figure includes its child (timeout) and that one's child (the tool): wait4 adds the
  # usage of reaped descendants. --foreground lets Ctrl-C reach the tool. All on the client CPU.
  # httperf prints a warning about FD_SETSIZE on stderr: kept with its output, not shown.
  taskset -c "$CLIENT_CPU" /usr/bin/time -f '%U %S %e %M' -o "$base.cpu" \
    timeout --foreground -k 5 "$GRACE" "${cmd[@]}" >"$base.out" 2>"$base.err" ||
    { cat "$base.err" >&2; die "$tool failed: ${cmd[*]}"; }
  s1=$(server_ticks)
  read -r b1 i1 <<<"$(cpu_ticks)"
  [ -s "$base.out" ] || die "$tool printed no result: ${cmd[*]}"
  echo "$tool $rate $round $((s1 - s0)) $tw $((b1 - b0)) $((i1 - i0))" >>"$work/runs"
  printf '%s\n' "${cmd[*]}" >"$base.cmd"
}

echo "# $(date -u '+%Y-%m-%d %H:%M UTC'), $(uname -sr), $(nproc) CPUs:" \
  "$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | sed -n 1p)"
httperf_version=$(httperf --version 2>/dev/null | sed -n 's/.*\(httperf-[0-9.]*\).*/\1/p' | head -n1)
echo "# $("$NGINX" -v 2>&1), ${httperf_version:-httperf ?}," \
  "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# RATES=\"${rates[*]}\" DURATION=$DURATION ROUNDS=$ROUNDS TOOLS=\"${tools[*]}\"" \
  "WRK2=${WRK2:-none} WRK2_CONNECTIONS=$WRK2_CONNECTIONS COALESCE=$COALESCE" \
  "MAX_CONNECTIONS=${MAX_CONNECTIONS:-default} SOURCE_IPS=${SOURCE_IPS:-none}," \
  "nginx on CPU $SERVER_CPU, clients on CPU $CLIENT_CPU, open files $nofile," \
  "ephemeral ports $(tr '\t' - </proc/sys/net/ipv4/ip_local_port_range)," \
  "tcp_tw_reuse=$(cat /proc/sys/net/ipv4/tcp_tw_reuse)"

for ((i = 0; i < ${#runs[@]}; i++)); do
  read -r tool rate round <<<"${runs[i]}"
  run "$tool" "$rate" "$round" "${ports[i]}"
  sleep 1 # let the previous run's connections close before the next one connects
done
# Server-side limits hit during the runs (a worker out of connections or file descriptors).
grep -E 'worker_connections|setrlimit' "$work/error.log" 2>/dev/null | sort -u | head -n5 |
  sed 's/^/nginx error log: /' || true

python3 - "$work" "$DURATION" "$ticks" "$(cat /proc/sys/net/ipv4/tcp_max_tw_buckets)" \
  "$WRK2_CONNECTIONS" "${tools[@]}" <<'EOF'
import json, re, statistics, sys

work, duration, ticks, tw_cap = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
WRK2_CONNECTIONS = int(sys.argv[5])
tools = sys.argv[6:]

def find(pattern, text, path):
    m = re.search(pattern, text)
    if not m:
        sys.exit(f"rate-accuracy.sh: no match for {pattern!r} in the output of {path}")
    return m.groups() if len(m.groups()) > 1 else m.group(1)

rows = []
for line in open(f"{work}/runs"):
    tool, rate, rnd, sticks, tw, cbusy, cidle = line.split()
    base = f"{work}/{tool}.{rate}.{rnd}"
    text = open(f"{base}.out").read()
    # GNU time puts a "Command exited with non-zero status" line first when there is one.
    user, sys_, elapsed, rss_kb = open(f"{base}.cpu").read().splitlines()[-1].split()
    cpu_s = float(user) + float(sys_)
    r = {"tool": tool, "rate": int(rate), "round": int(rnd), "elapsed": float(elapsed),
         "cpu_s": cpu_s, "busy": cpu_s / float(elapsed), "rss_mb": int(rss_kb) / 1024,
         "server": int(sticks) / ticks / float(elapsed), "time_wait": int(tw),
         "cpu0": int(cbusy) / max(1, int(cbusy) + int(cidle))}
    if tool.startswith("loadlab"):
        try:
            j = json.loads(text)
        except ValueError as e:
            sys.exit(f"rate-accuracy.sh: {base}.out is not loadlab's JSON ({e})")
        rate_ = j["rate"]
        r.update(offered=rate_["offered_rps"], achieved=rate_["achieved_rps"],
                 sent=rate_.get("sent_rps"), late_p99=rate_["late_p99_us"],
                 late_max=rate_["late_max_us"], not_sent=rate_["not_sent"],
                 kept=rate_["schedule_kept"], completed=j["requests"]["completed"],
                 errors=j["requests"]["failed"], own_cpu=j["client"]["cpu_us_per_request"],
                 saturated=j["client"]["saturated"], peak=j["connections"]["peak"],
                 warnings=j["warnings"], p99=j["latency_us"]["p99"],
                 window=rate_.get("send_window_us"))
    elif tool == "wrk2":
        completed, tdur = find(r"(\d+) requests in ([\d.]+)s", text, base)
        completed, tdur = int(completed), float(tdur)
        socket = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)",
                           text)
        non2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", text)
        errors = (sum(int(g) for g in socket.groups()) if socket else 0) + \
            (int(non2xx.group(1)) if non2xx else 0)
        # wrk2 reports neither lateness nor what it did not send: its latency is measured from
        # the schedule, and its rate is what completed over its duration.
        r.update(offered=float(rate), sent=None,
                 achieved=float(find(r"Requests/sec:\s+([\d.]+)", text, base)), late_p99=None,
                 late_max=None, not_sent=0, kept=None, completed=completed, errors=errors,
                 own_cpu=None, saturated=False, peak=WRK2_CONNECTIONS, warnings=[])
    else:
        conns, reqs, replies, tdur = find(
            r"Total: connections (\d+) requests (\d+) replies (\d+) test-duration ([\d.]+) s",
            text, base)
        hu, hs, htot = find(r"CPU time \[s\]: user ([\d.]+) system ([\d.]+) "
                            r"\(user [\d.]+% system [\d.]+% total ([\d.]+)%\)", text, base)
        completed, tdur = int(replies), float(tdur)
        r.update(offered=float(rate), sent=float(find(r"Request rate: ([\d.]+) req/s", text, base)),
                 achieved=completed / tdur, late_p99=None, late_max=None,
                 # httperf counts a connection it could not open (fd-unavail, ...) as an error,
                 # not as a request: those requests were never sent.
                 not_sent=int(rate) * duration - int(reqs), kept=None, completed=completed,
                 errors=int(find(r"Errors: total (\d+)", text, base)),
                 own_cpu=(float(hu) + float(hs)) * 1e6 / completed if completed else None,
                 saturated=float(htot) > 90, peak=int(find(r"<=(\d+) concurrent", text, base)),
                 warnings=[], httperf_busy=float(htot),
                 reply_rate=find(r"Reply rate \[replies/s\]: min ([\d.]+) avg ([\d.]+) max ([\d.]+)"
                                 r" stddev ([\d.]+) \((\d+) samples\)", text, base))
    r["time_cpu"] = cpu_s * 1e6 / r["completed"] if r["completed"] else None
    rows.append(r)

def f(v, fmt):
    return "-" if v is None else format(v, fmt)

print(f"\n{'tool':11} {'rate':>6} {'rnd':>3} {'offered':>8} {'sent':>8} {'achieved':>9} {'ach/off':>8}"
      f" {'late_p99':>9} {'late_max':>9} {'not_sent':>8} {'errors':>6} {'peak_conn':>9}"
      f" {'cpu_us/req':>10} {'time_us/req':>11} {'client_cpu':>10} {'server_cpu':>10}"
      f" {'cpu0_busy':>9} {'saturated':>9} {'TIME_WAIT':>9}")
for r in rows:
    print(f"{r['tool']:11} {r['rate']:>6} {r['round']:>3} {r['offered']:>8.0f} {f(r['sent'], '.0f'):>8}"
          f" {r['achieved']:>9.1f} {r['achieved'] / r['offered'] * 100:>7.2f}%"
          f" {f(r['late_p99'], 'd'):>9} {f(r['late_max'], 'd'):>9} {r['not_sent']:>8}"
          f" {r['errors']:>6} {r['peak']:>9} {f(r['own_cpu'], '.2f'):>10} {f(r['time_cpu'], '.2f'):>11}"
          f" {r['busy'] * 100:>9.0f}% {r['server'] * 100:>9.0f}% {r['cpu0'] * 100:>8.0f}%"
          f" {str(r['saturated']).lower():>9}"
          f" {r['time_wait']:>9}")
print("""
cpu_us/req: the tool's own figure (loadlab: client.cpu_us_per_request in its JSON, over the
  measured window; httperf: its 'CPU time' user+system over its replies). time_us/req: user+sys
  from /usr/bin/time over the whole process, divided by the completed requests (replies).
  achieved: loadlab's rate.achieved_rps; httperf's replies / test-duration. late_*: microseconds
  behind schedule (loadlab only). server_cpu: the nginx worker's CPU over the run's wall time.
  cpu0_busy: the client's CPU busy with anything (all processes, interrupts, steal) during the
  run, from /proc/stat: far above client_cpu means other processes competed with the client.
  It is sampled at the timer tick, so it can read below client_cpu for a client that sleeps
  between short bursts.""")

def med(vals):
    vals = [v for v in vals if v is not None]
    return statistics.median(vals) if vals else None

rates = sorted({r["rate"] for r in rows})
rounds = sorted({r["round"] for r in rows})
by = {(r["tool"], r["rate"], r["round"]): r for r in rows}
def driven(r):
    return r["achieved"] >= 0.995 * r["offered"]

print("\nmedians over rounds, and loadlab/httperf CPU µs per request (time_us/req, median of"
      " per-round ratios; below 1: loadlab is cheaper; * : in some round one of the two did not"
      " drive the rate, so the two did not do the same work)")
print(f"{'rate':>6} " + " ".join(f"{t + ' ach/off':>20} {t + ' us/req':>19}" for t in tools)
      + ("  loadlab-new/httperf  loadlab/httperf" if "httperf" in tools else "")
      + ("  loadlab/wrk2" if "wrk2" in tools and "loadlab" in tools else "")
      + ("  loadlab-exact/wrk2" if "wrk2" in tools and "loadlab-exact" in tools else "")
      + ("  coalesce/wrk2" if "wrk2" in tools and "loadlab-coalesce" in tools else ""))
for rate in rates:
    line = f"{rate:>6} "
    for t in tools:
        rs = [by[t, rate, n] for n in rounds if (t, rate, n) in by]
        ach = med(r["achieved"] / r["offered"] * 100 for r in rs)
        cpu = med(r["time_cpu"] for r in rs)
        line += f" {f(ach, '.2f') + '%':>19} {f(cpu, '.2f'):>19}"
    # Each pair's CPU ratio: the median of per-round ratios, * when a run fell short.
    pairs_shown = []
    if "httperf" in tools:
        pairs_shown += [("loadlab-new", "httperf", 20), ("loadlab", "httperf", 16)]
    if "wrk2" in tools:
        pairs_shown += [(t, "wrk2", w) for t, w in
                        (("loadlab", 13), ("loadlab-exact", 19), ("loadlab-coalesce", 14))
                        if t in tools]
    for t, peer, width in pairs_shown:
        pairs = [(by[t, rate, n], by[peer, rate, n]) for n in rounds
                 if (t, rate, n) in by and (peer, rate, n) in by]
        ratios = [a["time_cpu"] / b["time_cpu"] for a, b in pairs
                  if a["time_cpu"] and b["time_cpu"]]
        mark = "*" if any(not (driven(a) and driven(b)) for a, b in pairs) else ""
        line += f" {(f(med(ratios), '.2f') + mark) if ratios else '-':>{width}}"
    print(line)
# Lateness, the price of each tool's sending: median over rounds of late p99 (loadlab only;
# wrk2 does not report it).
late_tools = [t for t in tools if t in ("loadlab", "loadlab-exact", "loadlab-coalesce")]
for key, what in (("late_p99", "late p99"), ("p99", "latency p99, from due time"),
                  ("window", "send window")):
    if late_tools:
        print(f"\n{what} (µs, median over rounds): " + ", ".join(
            f"{t} " + " ".join(f"{rate}: {f(med(by[t, rate, n][key] for n in rounds if (t, rate, n) in by), '.0f')}"
                               for rate in rates) for t in late_tools))

print("\nnotes")
# httperf and loadlab-new do the same work (a connection per request) at the same rate: CPU use
# several times loadlab-new's, at a rate low enough for either, is httperf polling, not working.
if "httperf" in tools and "loadlab-new" in tools:
    lo = min(rates)
    h = med(by["httperf", lo, n]["busy"] for n in rounds if ("httperf", lo, n) in by)
    l = med(by["loadlab-new", lo, n]["busy"] for n in rounds if ("loadlab-new", lo, n) in by)
    if h and l and h > 5 * l:
        print(f"- at {lo} req/s httperf used {h * 100:.0f}% of its CPU for the work loadlab-new did"
              f" with {l * 100:.0f}%: httperf busy-polls (it calls select() with a zero timeout in"
              " a loop between sends; strace counts about 150 pselect6 calls per request at 1000"
              " req/s), up to 100% of a CPU whatever the rate, so at low rates its CPU per request"
              " is about 10^6 / rate µs and measures the polling, not the work.")
full = [r for r in rows if r["tool"] != "loadlab" and r["time_wait"] >= 0.8 * tw_cap]
if full:
    print(f"- {len(full)} new-connection runs started with the TIME_WAIT table near its cap"
          f" (net.ipv4.tcp_max_tw_buckets = {tw_cap}; column TIME_WAIT). Once it is full the kernel"
          " closes sockets without TIME_WAIT, local ports are free again at once, and new"
          " connections get cheaper: above about 13,000 new connections/s from one address the"
          " search for a free ephemeral port is what limits both tools otherwise. Compare such"
          " runs with each other only.")
for r in rows:
    what = f"{r['tool']} at {r['rate']} req/s (round {r['round']})"
    if not driven(r):
        print(f"- {what}: achieved {r['achieved']:.0f} of {r['offered']:.0f} req/s"
              f" ({r['achieved'] / r['offered'] * 100:.1f}%), errors {r['errors']}, not sent"
              f" {r['not_sent']}, client CPU {r['busy'] * 100:.0f}%, nginx CPU {r['server'] * 100:.0f}%,"
              f" peak connections {r['peak']}: this rate was not driven.")
    for w in r["warnings"]:
        print(f"- {what}: loadlab warns: {w}")

if "loadlab" in tools:
    print("\nmust reach (loadlab --rate, keep-alive): achieved within 0.5% of offered")
for r in rows:
    if r["tool"] == "loadlab":
        ok = abs(r["achieved"] - r["offered"]) <= 0.005 * r["offered"]
        print(f"  {r['rate']:>6} req/s round {r['round']}: {r['achieved'] / r['offered'] * 100:.2f}%"
              f" {'yes' if ok else 'NO'}")
if "wrk2" in tools and "loadlab" in tools:
    print("must reach: loadlab --rate CPU per request at most wrk2's (time_us/req)")
    for r in rows:
        if r["tool"] == "loadlab" and ("wrk2", r["rate"], r["round"]) in by:
            w = by["wrk2", r["rate"], r["round"]]
            if r["time_cpu"] and w["time_cpu"]:
                print(f"  loadlab     {r['rate']:>6} req/s round {r['round']}: {r['time_cpu']:.2f}"
                      f" against {w['time_cpu']:.2f} µs {'yes' if r['time_cpu'] <= w['time_cpu'] else 'NO'}")
if "httperf" in tools and len(tools) > 1:
    print("must reach: client CPU per request at most httperf's (time_us/req; meaningful only"
          " where both drove the rate)")
    for r in rows:
        if r["tool"].startswith("loadlab") and ("httperf", r["rate"], r["round"]) in by:
            h = by["httperf", r["rate"], r["round"]]
            if r["time_cpu"] and h["time_cpu"]:
                print(f"  {r['tool']:11} {r['rate']:>6} req/s round {r['round']}: {r['time_cpu']:.2f}"
                      f" against {h['time_cpu']:.2f} µs {'yes' if r['time_cpu'] <= h['time_cpu'] else 'NO'}")
EOF

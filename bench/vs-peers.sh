#!/usr/bin/env bash
# loadlab against wrk and ab on the same nginx: requests per second and, above all, the client's
# own CPU time per request (the cost of the load generator, which decides how much server one
# client machine can saturate). See BENCHMARKS.md for how to read the output.
#
# Env: DURATION (s, default 5), ROUNDS (default 3), AB_REQUESTS (default 1000000),
#      TOOLS (default "loadlab wrk ab"; ratios are the first tool over each other one),
#      the tool `loadlab-tty` runs LOADLAB as `loadlab` but on a pseudo-terminal (script(1),
#      120x40), so with its live view on: TOOLS="loadlab loadlab-tty" is the view's cost (the
#      figure includes script's own CPU, copying the frames, as a terminal would have to),
#      LOADLAB (binary; default target/release/loadlab, rebuilt if it is the default),
#      BASELINE (another loadlab binary, e.g. an earlier commit's: the tool `baseline` in TOOLS
#      runs it exactly as `loadlab`, so TOOLS="loadlab baseline wrk" shows what a change cost),
#      the tool `floor`: bench/floor.c, the least a keep-alive client can cost here (plain
#      HTTP/1.1 only): loadlab/floor says how much of loadlab's cost is its own,
#      the tool `loadlab-scraped`: loadlab with --metrics-listen, scraped by curl every second
#      (TOOLS="loadlab loadlab-scraped": what serving Prometheus costs the client),
#      TLS=1 (nginx serves https:// with a self-signed certificate made for the run, TLS 1.3;
#      loadlab runs with --insecure, wrk and ab take any certificate: keep-alive HTTPS),
#      H2=1 (HTTP/2: nginx listens with http2, h2c by prior knowledge, or h2 by ALPN with TLS=1;
#      10 connections x STREAMS streams each, default 10; TOOLS defaults to "loadlab h2load",
#      h2load being nghttp2's: h2load -c10 -m10),
#      NEWCONN=resumed|full (with TLS=1: a new connection, so a TLS handshake, per request, 10
#      connections at a time; loadlab --no-keepalive, with its session resumed or, `full`,
#      with --no-tls-resume; h2load --h1 with Connection: close, which it answers by
#      reconnecting, resuming its TLS session (so compare it with NEWCONN=resumed: with the
#      server's tickets and cache turned off its handshakes cost nginx what loadlab's full
#      ones do, 327-352 against 335-390 us in one loaded run); wrk likewise. nginx offers TLS 1.3 with one cipher suite,
#      TLS_AES_128_GCM_SHA256, so every tool handshakes alike. Every tool makes
#      NEWCONN_REQUESTS requests (default 10000) instead of running DURATION: h2load's -D does
#      not end when its server closes connections).
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh

DURATION=${DURATION:-5}
ROUNDS=${ROUNDS:-3}
AB_REQUESTS=${AB_REQUESTS:-1000000}
H2=${H2:-0}
STREAMS=${STREAMS:-10}
NEWCONN=${NEWCONN:-}
NEWCONN_REQUESTS=${NEWCONN_REQUESTS:-10000}
if [ -n "$NEWCONN" ]; then
  read -r -a tools <<<"${TOOLS:-loadlab h2load}"
  CONNECTIONS=10
elif [ "$H2" = 1 ]; then
  read -r -a tools <<<"${TOOLS:-loadlab h2load}"
  CONNECTIONS=10
else
  read -r -a tools <<<"${TOOLS:-loadlab wrk ab}"
  CONNECTIONS=50
fi
LOADLAB=${LOADLAB:-target/release/loadlab}
split_cpus

for v in DURATION ROUNDS AB_REQUESTS STREAMS NEWCONN_REQUESTS; do
  [[ ${!v} =~ ^[1-9][0-9]*$ ]] || die "$v must be a positive integer, not '${!v}'"
done
for t in "${tools[@]}"; do
  case $t in
    loadlab) ensure_loadlab ;;
    loadlab-tty) ensure_loadlab
      command -v script >/dev/null || die "loadlab-tty needs script (bsdutils)" ;;
    loadlab-scraped) ensure_loadlab; command -v curl >/dev/null || die "loadlab-scraped needs curl" ;;
    baseline) [ -x "${BASELINE:-}" ] || die "TOOLS has baseline: set BASELINE to a loadlab binary" ;;
    wrk | ab | h2load) command -v "$t" >/dev/null || die "$t not installed (make deps-bench)" ;;
    floor) [ "${TLS:-0}$H2${NEWCONN:-}" = 00 ] || die "floor speaks plain HTTP/1.1 keep-alive only"
      command -v gcc >/dev/null || die "floor needs gcc" ;;
    *) die "unknown tool '$t' in TOOLS (known: loadlab loadlab-tty loadlab-scraped baseline wrk ab h2load floor)" ;;
  esac
done
[ -x /usr/bin/time ] || die "GNU time not installed (make deps-bench)"

work=$(mktemp -d -t loadlab-vs-peers.XXXXXX)
trap 'stop_nginx "$work"; rm -rf "$work"' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
if [[ " ${tools[*]} " == *" floor "* ]]; then
  gcc -O2 -Wall -o "$work/floor" bench/floor.c || die "bench/floor.c did not build"
fi

TLS=${TLS:-0}
scheme=http
insecure=()
if [ "$TLS" = 1 ]; then
  command -v openssl >/dev/null || die "TLS=1 needs the openssl program (make deps-bench)"
  openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=127.0.0.1 \
    -keyout "$work/key.pem" -out "$work/cert.pem" 2>/dev/null || die "openssl could not make a certificate"
  chmod 644 "$work/key.pem" "$work/cert.pem"
  export NGINX_LISTEN_EXTRA=ssl
  export NGINX_SERVER_EXTRA="ssl_certificate $work/cert.pem; ssl_certificate_key $work/key.pem;"
  scheme=https
  insecure=(--insecure)
fi
newconn=()
close=()
stop=(-d "${DURATION}s")
case $NEWCONN in
  "") ;;
  resumed | full)
    [ "$TLS" = 1 ] || die "NEWCONN=$NEWCONN measures TLS handshakes: set TLS=1"
    [ "$H2" = 1 ] && die "NEWCONN and H2 do not go together: HTTP/2 has no connection per request"
    # One suite for everyone: the handshakes compared are the same handshake.
    NGINX_SERVER_EXTRA="$NGINX_SERVER_EXTRA ssl_protocols TLSv1.3;"
    NGINX_SERVER_EXTRA="$NGINX_SERVER_EXTRA ssl_conf_command Ciphersuites TLS_AES_128_GCM_SHA256;"
    export NGINX_SERVER_EXTRA
    newconn=(--no-keepalive)
    [ "$NEWCONN" = full ] && newconn+=(--no-tls-resume)
    # A count, not a duration, for everyone: see NEWCONN above.
    stop=(-n "$NEWCONN_REQUESTS")
    close=(-H "Connection: close")
    ;;
  *) die "NEWCONN is resumed or full, not '$NEWCONN'" ;;
esac
http2=()
if [ "$H2" = 1 ]; then
  # One listener option turns HTTP/2 on in nginx 1.22: with ssl, h2 by ALPN; without, h2c.
  export NGINX_LISTEN_EXTRA="${NGINX_LISTEN_EXTRA:-} http2"
  http2=(--http2 --streams "$STREAMS")
fi
port=$(free_port)
# nginx lives in $work itself: as root its worker must traverse every parent of its files,
# and start_nginx opens up only the directory it is given.
start_nginx "$work" "$port" "$SERVER_CPU"
url=$scheme://127.0.0.1:$port/hello.txt

# server_ticks: the CPU time nginx's workers have used so far, in clock ticks. The server's cost
# per request is the other half of a client's cost on one machine: on loopback the sender's CPU
# delivers each segment and wakes the receiver, so a client that sleeps more makes nginx pay more.
server_ticks() {
  local pid total=0 f
  for pid in $(pgrep -P "$(cat "$work/master.pid")"); do
    # utime and stime are fields 14 and 15; the command in field 2 has no spaces ("(nginx)").
    read -r -a f <"/proc/$pid/stat" || continue
    total=$((total + f[13] + f[14]))
  done
  echo "$total"
}

# run TOOL ROUND: one measured run; its output and its CPU time land in $work.
run() {
  local tool=$1 round=$2 cmd
  case $tool in
    loadlab) cmd=("$LOADLAB" bench -c "$CONNECTIONS" -t 1 "${stop[@]}" "${insecure[@]}"
      "${http2[@]}" "${newconn[@]}" --format json "$url") ;;
    # The view draws on the pty; the JSON follows once it has left the alternate screen.
    loadlab-tty) cmd=(script -qec "stty cols 120 rows 40; exec $(printf '%q ' "$LOADLAB" bench \
      -c "$CONNECTIONS" -t 1 "${stop[@]}" "${insecure[@]}" "${http2[@]}" "${newconn[@]}" \
      --format json "$url")" /dev/null) ;;
    loadlab-scraped) metrics=$(free_port)
      cmd=("$LOADLAB" bench -c "$CONNECTIONS" -t 1 "${stop[@]}" "${insecure[@]}" "${http2[@]}"
        "${newconn[@]}" --format json --metrics-listen "$metrics" --metrics-linger 0 "$url")
      # Prometheus' way, once a second, bounded; curl's own CPU is not the client's.
      (for ((s = 0; s < DURATION + 30; s++)); do
        sleep 1
        curl -s -o /dev/null "http://127.0.0.1:$metrics/metrics" || true
      done) &
      scraper=$! ;;
    baseline) cmd=("$BASELINE" bench -c "$CONNECTIONS" -t 1 "${stop[@]}" "${insecure[@]}"
      "${http2[@]}" "${newconn[@]}" --format json "$url") ;;
    # h2load: -D is a duration in seconds; it takes any certificate. A new connection per
    # request is HTTP/1.1 with Connection: close, after which it connects again.
    h2load) if [ -n "$NEWCONN" ]; then
        cmd=(h2load --h1 "${close[@]}" -c "$CONNECTIONS" -t 1 -n "$NEWCONN_REQUESTS" "$url")
      else
        cmd=(h2load -c "$CONNECTIONS" -m "$STREAMS" -t 1 -D "$DURATION" "$url")
      fi ;;
    floor) cmd=("$work/floor" 127.0.0.1 "$port" /hello.txt "$CONNECTIONS" "$DURATION") ;;
    wrk) cmd=(wrk -t1 -c"$CONNECTIONS" -d"${DURATION}s" "${close[@]}" --latency "$url") ;;
    # ab has no duration: it stops at -n requests or after -t seconds, whichever comes first.
    # -t alone would also set -n to 50000, so -n must come after it to win.
    # ab without -k opens a connection per request (and resumes no TLS session).
    ab) if [ -n "$NEWCONN" ]; then keep=(); else keep=(-k); fi
      cmd=(ab -q "${keep[@]}" -c "$CONNECTIONS" -t "$DURATION" -n "$AB_REQUESTS" "$url") ;;
  esac
  echo "round $round: $tool" >&2
  local before
  before=$(server_ticks)
  # time's figure includes its child (timeout) and that one's child (the tool): wait4 adds the
  # usage of reaped descendants. --foreground lets Ctrl-C reach the tool. All on the client CPU.
  taskset -c "$CLIENT_CPU" /usr/bin/time -f '%U %S %e' -o "$work/$tool.$round.cpu" \
    timeout --foreground -k 5 $((DURATION + 30)) "${cmd[@]}" >"$work/$tool.$round.out"
  if [ -n "${scraper:-}" ]; then kill "$scraper" 2>/dev/null; wait "$scraper" 2>/dev/null || true; scraper=; fi
  [ -s "$work/$tool.$round.out" ] || die "$tool printed no result: ${cmd[*]}"
  echo $(($(server_ticks) - before)) >"$work/$tool.$round.server"
  echo "$tool $round" >>"$work/runs"
}

# The context a figure needs before it can be quoted: a busy machine gives noisy rounds.
echo "# $(date -u '+%Y-%m-%d %H:%M UTC'), $(uname -sr), $(nproc) CPUs:" \
  "$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | sed -n 1p)"
echo "# $("$NGINX" -v 2>&1), load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# DURATION=$DURATION ROUNDS=$ROUNDS AB_REQUESTS=$AB_REQUESTS TOOLS=\"${tools[*]}\" TLS=$TLS" \
  "NEWCONN=${NEWCONN:-no} H2=$H2 connections=$CONNECTIONS${http2:+ x $STREAMS streams}, nginx on CPU $SERVER_CPU," \
  "clients on CPU $CLIENT_CPU"

# Interleaved and rotated (round 2 starts with the second tool, ...), so drift in the machine's
# state over the minutes of the run spreads over all tools instead of favouring one.
for ((round = 1; round <= ROUNDS; round++)); do
  for ((i = 0; i < ${#tools[@]}; i++)); do
    run "${tools[(i + round - 1) % ${#tools[@]}]}" "$round"
    sleep 1 # let the previous tool's connections close before the next one connects
  done
done

python3 - "$work" "${tools[@]}" <<'EOF'
import json, os, re, statistics, sys

work, tools = sys.argv[1], sys.argv[2:]

def find(pattern, text, path):
    m = re.search(pattern, text)
    if not m:
        sys.exit(f"vs-peers.sh: no match for {pattern!r} in the output of {path}")
    return float(m.group(1))

def parse(tool, text, path):
    """(req/s, completed requests, errors or None) from one tool's own output."""
    if tool == "loadlab-tty":
        # The report is the JSON object after the view left the alternate screen.
        text = text.rsplit("\x1b[?1049l", 1)[-1]
        text = text[text.find("{\n"):]  # read with universal newlines: the pty's CRLF is LF
        text = text[:text.rfind("}") + 1]
        tool = "loadlab"
    if tool in ("loadlab", "loadlab-scraped", "baseline"):
        try:
            j = json.loads(text)
        except ValueError as e:
            sys.exit(f"vs-peers.sh: {path} is not loadlab's JSON ({e})")
        return float(j["rps"]), int(j["requests"]["completed"]), j["requests"].get("failed")
    if tool == "floor":
        return (find(r"Requests/sec:\s+([\d.]+)", text, path),
                int(find(r"(\d+) requests in", text, path)), 0)
    if tool == "wrk":
        m = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", text)
        errors = sum(map(int, m.groups())) if m else 0
        m = re.search(r"Non-2xx or 3xx responses: (\d+)", text)
        errors += int(m.group(1)) if m else 0
        return (find(r"Requests/sec:\s+([\d.]+)", text, path),
                int(find(r"(\d+) requests in", text, path)), errors)
    if tool == "h2load":
        m = re.search(r"requests: \d+ total, \d+ started, \d+ done, (\d+) succeeded, (\d+) failed, (\d+) errored, (\d+) timeout", text)
        if not m:
            sys.exit(f"vs-peers.sh: no request counts in the output of {path}")
        m2 = re.search(r"status codes: \d+ 2xx, (\d+) 3xx, (\d+) 4xx, (\d+) 5xx", text)
        non_2xx = sum(map(int, m2.groups())) if m2 else 0
        return (find(r"finished in [\d.]+s, ([\d.]+) req/s", text, path), int(m.group(1)),
                int(m.group(2)) + int(m.group(3)) + int(m.group(4)) + non_2xx)
    if tool == "ab":
        errors = int(find(r"Failed requests:\s+(\d+)", text, path))
        m = re.search(r"Non-2xx responses:\s+(\d+)", text)
        errors += int(m.group(1)) if m else 0
        return (find(r"Requests per second:\s+([\d.]+)", text, path),
                int(find(r"Complete requests:\s+(\d+)", text, path)), errors)

rows = {}  # (tool, round) -> (rps, cpu_us_per_req, nginx_us_per_req)
hz = os.sysconf("SC_CLK_TCK")
print(f"{'tool':11} {'round':>5} {'req/s':>10} {'requests':>10} {'seconds':>7}"
      f" {'cpu_us_per_req':>14} {'client_cpu':>10} {'nginx_us_per_req':>16} {'errors':>6}")
for line in open(f"{work}/runs"):
    tool, rnd = line.split()
    path = f"{work}/{tool}.{rnd}.out"
    rps, n, errors = parse(tool, open(path).read(), path)
    # GNU time puts a "Command exited with non-zero status" line first when there is one.
    user, sys_, elapsed = map(float, open(f"{work}/{tool}.{rnd}.cpu").read().splitlines()[-1].split())
    cpu_us = (user + sys_) * 1e6 / n
    # Near 100% the client, not nginx, set the pace: its req/s says little about the server.
    busy = (user + sys_) / elapsed * 100
    # nginx's CPU over the whole run (warm-up and connecting included, as for the client).
    server_us = int(open(f"{work}/{tool}.{rnd}.server").read()) / hz * 1e6 / n
    rows[tool, int(rnd)] = (rps, cpu_us, server_us)
    print(f"{tool:11} {rnd:>5} {rps:>10.0f} {n:>10} {elapsed:>7.2f} {cpu_us:>14.2f} {busy:>9.0f}%"
          f" {server_us:>16.2f} {'-' if errors is None else errors:>6}")

print("\nmedians over rounds")
print(f"{'tool':11} {'req/s':>10} {'cpu_us_per_req':>14} {'nginx_us_per_req':>16}")
for tool in tools:
    vals = [v for (t, _), v in rows.items() if t == tool]
    print(f"{tool:11} {statistics.median(v[0] for v in vals):>10.0f}"
          f" {statistics.median(v[1] for v in vals):>14.2f}"
          f" {statistics.median(v[2] for v in vals):>16.2f}")

# Ratios are taken per round (the two runs sat next to each other in time), then the median.
base = tools[0]
rounds = sorted({r for _, r in rows})
print(f"\nratios {base}/other, median of per-round ratios (cpu: below 1 means {base} is cheaper)")
for other in tools[1:]:
    pairs = [(rows[base, r], rows[other, r]) for r in rounds]
    cpu = statistics.median(a[1] / b[1] for a, b in pairs)
    rps = statistics.median(a[0] / b[0] for a, b in pairs)
    server = statistics.median(a[2] / b[2] for a, b in pairs)
    print(f"{base}/{other}: cpu_us_per_req {cpu:.2f}  req/s {rps:.2f}  nginx_us_per_req {server:.2f}")
EOF

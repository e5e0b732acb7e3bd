#!/usr/bin/env bash
# loadlab over HTTP/3 against loadlab over HTTP/2 on the same Caddy (the lab's `caddy` stack
# with TLS: h1, h2 and h3 on one port), interleaved over rounds: req/s, the client's CPU µs
# per request (its engine workers') and Caddy's, and the h3/h2 ratio of the client's per
# round. The load average is printed beside each round: others' work on this machine moves
# both protocols alike within a round, so the ratio is the figure to read.
#
# Reads DURATION (seconds, 5), ROUNDS (3), CONNECTIONS (4), STREAMS (10), LOADLAB (the binary,
# target/release/loadlab). The stack lives in a temporary state directory, downed on exit.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
LOADLAB=${LOADLAB:-$here/../target/release/loadlab}
DURATION=${DURATION:-5}
ROUNDS=${ROUNDS:-3}
CONNECTIONS=${CONNECTIONS:-4}
STREAMS=${STREAMS:-10}
state=$(mktemp -d)
export LOADLAB_STATE_DIR=$state
cleanup() {
    "$LOADLAB" stack down caddy-1 >/dev/null 2>&1 || true
    rm -rf "$state"
}
trap cleanup EXIT INT TERM
up=$("$LOADLAB" stack up caddy --tls on --http2 on --json)
url=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["url"])' "$up")hello.txt
ca=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["cacert"])' "$up")
run_dir=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["run_dir"])' "$up")
caddy_pid=$(pgrep -n -f "caddy run --config $run_dir/" || true)
caddy_cpu() { # Caddy's CPU so far, in clock ticks
    [ -n "$caddy_pid" ] && awk '{print $14 + $15}' "/proc/$caddy_pid/stat" || echo 0
}
tick=$(getconf CLK_TCK)
echo "caddy at $url; -c $CONNECTIONS x --streams $STREAMS, ${DURATION}s a run, $ROUNDS rounds"
printf '%-6s %-5s %10s %14s %14s %7s  %s\n' round proto req/s client-us/req caddy-us/req h3/h2 load
for round in $(seq 1 "$ROUNDS"); do
    declare -A cpu=()
    for proto in http2 http3; do
        before=$(caddy_cpu)
        json=$("$LOADLAB" bench "$url" "--$proto" -c "$CONNECTIONS" --streams "$STREAMS" \
            -d "${DURATION}s" --cacert "$ca" --format json --quiet)
        after=$(caddy_cpu)
        read -r rps us done < <(python3 -c '
import json,sys; j=json.loads(sys.argv[1]); r=j["requests"]
print(round(j["rps"]), round(j["client"]["cpu_us_per_request"], 1), r["completed"] + r["failed"])' "$json")
        server=$(python3 -c "print(round(($after - $before) * 1e6 / $tick / max($done, 1), 1))")
        cpu[$proto]=$us
        ratio=""
        [ "$proto" = http3 ] && ratio=$(python3 -c "print(round(${cpu[http3]} / ${cpu[http2]}, 2))")
        printf '%-6s %-5s %10s %14s %14s %7s  %s\n' "$round" "${proto#http}" "$rps" "$us" \
            "$server" "$ratio" "$(cut -d' ' -f1 /proc/loadavg)"
    done
done

#!/usr/bin/env bash
# httperf's own session workload run by httperf and by loadlab (`--wsesslog N,X,FILE`, issue
# 25): the same session log, sessions of 3 bursts (a page, then its 5 resources) with a think
# time of THINK s between bursts, at the same session rate against a private nginx serving
# those 18 files; rounds interleaved. Per round and tool: requests and replies (the same count
# is the point: every request of every session, none more), sessions completed, the client's
# CPU time (user + system, GNU time) and CPU per request; at the end the median of loadlab's
# CPU per request over httperf's. See BENCHMARKS.md.
#
# Env: RATE (sessions/s, default 100), SESSIONS (default 1000), THINK (s, default 0.5),
#      ROUNDS (default 3), PER_VISITOR (connections a session may hold, both tools: httperf's
#      --max-connections, loadlab's --visitor-connections; default 4),
#      LOADLAB (binary; default target/release/loadlab, rebuilt if it is the default).
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh

RATE=${RATE:-100}
SESSIONS=${SESSIONS:-1000}
THINK=${THINK:-0.5}
ROUNDS=${ROUNDS:-3}
PER_VISITOR=${PER_VISITOR:-4}
LOADLAB=${LOADLAB:-target/release/loadlab}
split_cpus
positive_ints RATE SESSIONS ROUNDS PER_VISITOR
[[ $THINK =~ ^[0-9]+(\.[0-9]+)?$ ]] || die "THINK must be a number of seconds, not '$THINK'"
command -v httperf >/dev/null || die "httperf not installed (make deps-bench)"
[ -x /usr/bin/time ] || die "GNU time not installed (make deps-bench)"
ensure_loadlab

private_nginx_dir wsesslog
port=$(free_port)
start_nginx "$work" "$port" "$SERVER_CPU"

# The site: three pages, each with five resources of a few sizes, as a small page has.
log=$work/sessions.log
{
  echo "# bench/wsesslog.sh: one session = 3 bursts of a page and its 5 resources"
  for page in home post about; do
    mkdir -p "$work/www/$page"
    head -c 12000 /dev/zero | tr '\0' p >"$work/www/$page.html"
    echo "/$page.html think=$THINK"
    for r in site.css:8000 app.js:20000 logo.png:4000 photo.jpg:30000 font.woff2:15000; do
      head -c "${r#*:}" /dev/zero | tr '\0' r >"$work/www/$page/${r%%:*}"
      echo "    /$page/${r%%:*}"
    done
  done
} >"$log"
chmod -R a+rX "$work/www"
per_session=18
expected=$((SESSIONS * per_session))

machine_context
echo "# $SESSIONS sessions x $per_session requests at $RATE sessions/s, think $THINK s," \
  "$PER_VISITOR connections per session, $ROUNDS rounds"
printf '%-8s %5s %9s %9s %9s %8s %12s\n' tool round requests replies sessions cpu_s cpu_us/req

run_httperf() {
  /usr/bin/time -f '%U %S' -o "$work/time" taskset -c "$CLIENT_CPU" \
    httperf --hog --server 127.0.0.1 --port "$port" --wsesslog "$SESSIONS,$THINK,$log" \
    --rate "$RATE" --max-connections "$PER_VISITOR" --max-piped-calls 1 --timeout 10 \
    >"$work/out" 2>&1
  local requests replies sessions
  requests=$(sed -n 's/^Total: .* requests \([0-9]*\) replies.*/\1/p' "$work/out")
  replies=$(sed -n 's/^Total: .* replies \([0-9]*\) test-duration.*/\1/p' "$work/out")
  sessions=$(sed -n 's/^Session rate .*(\([0-9]*\)\/[0-9]*)$/\1/p' "$work/out")
  echo "$requests $replies ${sessions:-?}"
}

run_loadlab() {
  /usr/bin/time -f '%U %S' -o "$work/time" taskset -c "$CLIENT_CPU" \
    "$LOADLAB" bench "http://127.0.0.1:$port/" --wsesslog "$SESSIONS,$THINK,$log" \
    --rate "$RATE" --visitor-connections "$PER_VISITOR" --timeout 10s --quiet --format json \
    >"$work/out" 2>"$work/err" || { cat "$work/err" >&2; die "loadlab failed"; }
  python3 - "$work/out" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
q = r["requests"]
print(q["sent"], q["completed"] + r["errors"]["validation"], r["sessions"]["completed"])
PY
}

declare -A ratio_rounds=()
for round in $(seq "$ROUNDS"); do
  declare -A per_req=()
  for tool in httperf loadlab; do
    read -r requests replies sessions < <("run_$tool")
    read -r user sys <"$work/time"
    cpu=$(python3 -c "print(f'{$user + $sys:.2f}')")
    us=$(python3 -c "print(f'{1e6 * ($user + $sys) / max($replies, 1):.1f}')")
    per_req[$tool]=$us
    printf '%-8s %5s %9s %9s %9s %8s %12s\n' "$tool" "$round" "$requests" "$replies" \
      "$sessions" "$cpu" "$us"
    [ "$replies" = "$expected" ] || echo "# $tool: $replies replies, not $expected" >&2
  done
  ratio_rounds[$round]=$(python3 -c "print(f'{${per_req[loadlab]} / ${per_req[httperf]}:.2f}')")
  unset per_req
done
ratios=$(printf '%s\n' "${ratio_rounds[@]}" | sort -n | tr '\n' ' ')
median=$(printf '%s\n' "${ratio_rounds[@]}" | sort -n | sed -n "$(((ROUNDS + 1) / 2))p")
echo "loadlab/httperf CPU per request, by round (sorted): $ratios; median $median"

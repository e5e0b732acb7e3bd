#!/usr/bin/env bash
# Up/down cycles of the lab's stacks: each stack is brought up and verified, then taken
# down, CYCLES times (default 50); every process it had must be gone after each down. Prints
# the up-and-verify time per stack (median and max over the cycles) and the leftovers, and
# exits non-zero if any process survived a down, or after a kill -9 of the loadlab that
# owned a stack and the next start (the last check).
#
#   bench/lab-cycles.sh                      # every stack whose packages are installed
#   STACKS="nginx nginx-fpm" CYCLES=10 bench/lab-cycles.sh
#   NET=lan-100mbit bench/lab-cycles.sh     # each stack behind a network profile (root)
#
# With NET, a cycle also fails if the instance's namespace, its host-side link device or its
# delay stage (loadlab's TUN forwarder) outlives its down: all three are the lab's to remove.
#
# State goes to a temporary LOADLAB_STATE_DIR (removed at the end, with a down --all first,
# also on error or Ctrl-C); MariaDB's datadir template is built there on the first cycle of
# the first database stack, so that cycle shows the first-time cost.
set -euo pipefail
cd "$(dirname "$0")/.."

CYCLES=${CYCLES:-50}
NET=${NET:-}
net=()
[ -z "$NET" ] || net=(--net "$NET")
LOADLAB=${LOADLAB:-target/release/loadlab}
[ -x "$LOADLAB" ] || { echo "${0##*/}: build first (make build) or set LOADLAB" >&2; exit 1; }
command -v python3 >/dev/null || { echo "${0##*/}: needs python3" >&2; exit 1; }

export LOADLAB_STATE_DIR
LOADLAB_STATE_DIR=$(mktemp -d /tmp/loadlab-cycles-XXXXXX)
cleanup() {
  "$LOADLAB" stack down --all >/dev/null 2>&1 || true
  rm -rf "$LOADLAB_STATE_DIR"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

if [ -z "${STACKS:-}" ]; then
  # Every stack that can run here: `stack list --json` says what is missing.
  STACKS=$("$LOADLAB" stack list --json | python3 -c '
import json, sys
print(" ".join(s["name"] for s in json.load(sys.stdin)["stacks"] if not s["missing"]))')
fi

# alive PID...: those of the pids that still run (a zombie has exited: it only waits for
# init to collect it).
alive() {
  local pid state
  for pid in "$@"; do
    state=$(awk '{ sub(/.*\) /, ""); print $1 }' "/proc/$pid/stat" 2>/dev/null || true)
    [ -n "$state" ] && [ "$state" != Z ] && [ "$state" != X ] && echo "$pid"
  done
  return 0
}

json_field() { python3 -c "import json,sys; v=json.load(sys.stdin)[sys.argv[1]]; print(' '.join(map(str,v)) if isinstance(v,list) else v)" "$1"; }

# net_left UP_JSON: what of a profile's link is still there (namespace, host device, stage
# process), one word each; nothing for a stack on loopback.
net_left() {
  python3 -c '
import json, os, subprocess, sys
net = json.load(sys.stdin).get("net")
if not net:
    sys.exit(0)
left = []
if net["namespace"] in subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout.split():
    left.append("namespace:" + net["namespace"])
if os.path.exists("/sys/class/net/" + net["host_if"]):
    left.append("device:" + net["host_if"])
stage = net.get("stage")
try:
    # A zombie has exited; it only waits for init to collect it.
    state = open("/proc/%d/stat" % stage).read().rsplit(") ", 1)[1][0] if stage else "X"
except OSError:
    state = "X"
if state not in "ZX":
    left.append("stage:%d" % stage)
print(" ".join(left))' <<<"$1"
}

leftovers=0
[ -z "$NET" ] || echo "every stack behind --net $NET"
printf '%-28s %6s %9s %9s %9s %9s\n' stack cycles first_ms median_ms max_ms leftover
for stack in $STACKS; do
  times=()
  left=0
  for ((i = 1; i <= CYCLES; i++)); do
    up=$("$LOADLAB" stack up "$stack" "${net[@]}" --json)
    id=$(json_field id <<<"$up")
    pids=$(json_field pids <<<"$up")
    times+=("$(json_field up_ms <<<"$up")")
    "$LOADLAB" stack down "$id" >/dev/null
    # shellcheck disable=SC2086 # one word per pid
    survivors=$(alive $pids)
    # The stage exits when its devices go; give it the moment that takes.
    link=$(net_left "$up")
    [ -z "$link" ] || { sleep 0.5; link=$(net_left "$up"); }
    survivors+=${link:+ $link}
    if [ -n "$survivors" ]; then
      left=$((left + $(wc -w <<<"$survivors")))
      echo "  $stack cycle $i: left running: $survivors" >&2
    fi
  done
  leftovers=$((leftovers + left))
  printf '%-28s %6d %s %9d\n' "$stack" "$CYCLES" \
    "$(printf '%s\n' "${times[@]}" | python3 -c '
import sys, statistics
t = [int(x) for x in sys.stdin.read().split()]
print("%9d %9d %9d" % (t[0], statistics.median(t), max(t)))')" "$left"
done

# kill -9 of the loadlab that owns a stack (in the foreground), then the next start.
first=${STACKS%% *}
fifo=$(mktemp -u "$LOADLAB_STATE_DIR/fifo-XXXX")
mkfifo "$fifo"
"$LOADLAB" stack up "$first" "${net[@]}" --foreground --json >"$fifo" &
owner=$!
# Not this shell's job any more: bash would report its death by SIGKILL as an error.
disown "$owner"
read -r up <"$fifo"
pids=$(json_field pids <<<"$up")
kill -9 "$owner"
while kill -0 "$owner" 2>/dev/null; do sleep 0.05; done
# shellcheck disable=SC2086
before=$(alive $pids | wc -w)
next=$("$LOADLAB" stack up "$first" "${net[@]}" --json)
# shellcheck disable=SC2086
after=$(alive $pids | wc -w)
"$LOADLAB" stack down "$(json_field id <<<"$next")" >/dev/null
# The next instance may reuse the id, hence the namespace and device names: the killed one's
# link is looked for once both are down.
after=$((after + $(net_left "$up" | wc -w)))
echo "kill -9 of the owner of $first: $before processes ran on after it, $after after the next start"
leftovers=$((leftovers + after))

if ((leftovers)); then
  echo "FAIL: $leftovers processes left behind" >&2
  exit 1
fi
echo "no process left behind"

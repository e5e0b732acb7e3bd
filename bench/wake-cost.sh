#!/usr/bin/env bash
# What a timer wake-up costs a sleeping thread in CPU on this machine (bench/wake-cost.c): the
# floor under an open-loop client that sends each request at its own due time.
# Prints the machine's idle setup first (cpuidle driver, halt polling), which decides it.
#
#   bench/wake-cost.sh                    # gaps 50, 200 and 1000 us, 20,000 due times each
#   GAPS="200" COUNT=50000 CPU=0 bench/wake-cost.sh
#
# Needs gcc; with liburing-dev (make deps-bench installs it) it also times the same due times
# with io_uring's kernel-side timeouts.
set -euo pipefail
cd "$(dirname "$0")/.."
GAPS=${GAPS:-50 200 1000}
COUNT=${COUNT:-20000}
CPU=${CPU:-0}
command -v gcc >/dev/null || { echo "${0##*/}: needs gcc" >&2; exit 1; }
bin=$(mktemp -t wake-cost.XXXXXX)
trap 'rm -f "$bin"' EXIT
uring=()
[ -f /usr/include/liburing.h ] && uring=(-DWITH_URING -luring)
gcc -O2 -Wall -o "$bin" bench/wake-cost.c "${uring[@]}"

read_or() { cat "$1" 2>/dev/null || echo "$2"; }
echo "# $(date -u '+%Y-%m-%d %H:%M UTC'), $(uname -r), $(nproc) CPUs: $(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -1)"
echo "# cpuidle driver $(read_or /sys/devices/system/cpu/cpuidle/current_driver none)," \
  "guest halt polling $(read_or /sys/module/haltpoll/parameters/guest_halt_poll_ns -) ns" \
  "(0: an idle virtual CPU halts without polling first)"
echo "# load average before: $(cut -d' ' -f1-3 /proc/loadavg); pinned to CPU $CPU"
for gap in $GAPS; do
  taskset -c "$CPU" "$bin" "$gap" "$COUNT"
done

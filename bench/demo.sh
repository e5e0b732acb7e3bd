#!/usr/bin/env bash
# make demo-bench: start a private nginx on a free loopback port, load it with loadlab for 5 s,
# show the text report, then save the same run as JSON in out/demo.json. nginx is always stopped.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh

LOADLAB=${LOADLAB:-target/release/loadlab}
[ -x "$LOADLAB" ] || die "$LOADLAB not found: run 'make build' first"

dir=$(mktemp -d -t loadlab-demo.XXXXXX)
trap 'stop_nginx "$dir"; rm -rf "$dir"' EXIT
# Turn Ctrl-C and kill into an ordinary exit so the EXIT trap above stops nginx.
trap 'exit 130' INT
trap 'exit 143' TERM

# A failed demo must not leave the previous run's JSON behind looking like this one's.
mkdir -p out
rm -f out/demo.json

port=$(free_port)
start_nginx "$dir" "$port"
url=http://127.0.0.1:$port/hello.txt
echo "nginx serving $url (config in $dir)"

# timeout: a 5 s run that has not ended after 60 s is a hang, not a result. --foreground keeps
# loadlab in the terminal's process group, so Ctrl-C reaches it too.
timeout --foreground -k 5 60 "$LOADLAB" bench -c 50 -d 5s "$url"

# Written into the run directory first, so a failed run cannot leave half a file in out/.
timeout --foreground -k 5 60 "$LOADLAB" bench -c 50 -d 5s --format json "$url" >"$dir/demo.json"
mv "$dir/demo.json" out/demo.json
echo "wrote out/demo.json"

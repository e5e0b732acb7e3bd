#!/usr/bin/env bash
# What a stack on another host costs while it is only watched: `loadlab stack up nginx --host
# ssh://root@B --foreground` from host A, idle, its remote end sampling the stack's tiers and
# the machine at 1 Hz and streaming each sample back as a JSON line while this side sends its
# heartbeat (the session a `loadlab run --host` cell runs under). The CPU time of every process
# of the session on each side (A: loadlab and ssh; B: sshd's session children and the remote
# loadlab) is read from /proc/PID/stat at the start and end of a window of SECONDS (default
# 60) and said as a share of one CPU.
#
# A and B are network namespaces this script makes (a veth pair on 10.216.0.0/30), with an
# sshd of its own in B (keys made for the run, listening only on B's address). Everything is
# removed on exit, Ctrl-C included. Needs root, iproute2, openssh-server/client and nginx.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh

LOADLAB=${LOADLAB:-target/debug/loadlab}
[ -x "$LOADLAB" ] || die "$LOADLAB not found: cargo build -p loadlab first"
LOADLAB=$(realpath "$LOADLAB")
SECONDS_WATCHED=${1:-60}
[ "$(id -u)" = 0 ] || die "needs root (network namespaces)"
command -v sshd >/dev/null || [ -x /usr/sbin/sshd ] || die "needs openssh-server"
SSHD=$(command -v sshd || echo /usr/sbin/sshd)

tag=$$
A=llbench-a-$tag B=llbench-b-$tag
VA=llba$tag VB=llbb$tag
ADDR_A=10.216.0.1 ADDR_B=10.216.0.2
dir=$(mktemp -d -t loadlab-remote-sampling.XXXXXX)
session=""
cleanup() {
    [ -n "$session" ] && kill "$session" 2>/dev/null && wait "$session" 2>/dev/null
    [ -f "$dir/sshd.pid" ] && kill "$(cat "$dir/sshd.pid")" 2>/dev/null
    # Whatever a failed run left in B: its lab's stacks, then every process in the namespaces.
    LOADLAB_STATE_DIR=$dir/state-b ip netns exec "$B" "$LOADLAB" stack down --all \
        >/dev/null 2>&1 || true
    for ns in "$A" "$B"; do
        for pid in $(ip netns pids "$ns" 2>/dev/null); do kill -9 "$pid" 2>/dev/null || true; done
        ip netns del "$ns" 2>/dev/null || true
    done
    rm -rf "$dir"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

ip netns add "$A"
ip netns add "$B"
ip link add "$VA" netns "$A" type veth peer name "$VB" netns "$B"
ip -n "$A" addr add $ADDR_A/30 dev "$VA"
ip -n "$B" addr add $ADDR_B/30 dev "$VB"
for ns in "$A" "$B"; do ip -n "$ns" link set lo up; done
ip -n "$A" link set "$VA" up
ip -n "$B" link set "$VB" up

for key in host_key client_key; do ssh-keygen -q -t ed25519 -N "" -f "$dir/$key"; done
cp "$dir/client_key.pub" "$dir/authorized_keys"
echo "$ADDR_B $(cut -d' ' -f1,2 "$dir/host_key.pub")" >"$dir/known_hosts"
cat >"$dir/sshd_config" <<EOF
ListenAddress $ADDR_B
Port 22
HostKey $dir/host_key
PidFile $dir/sshd.pid
AuthorizedKeysFile $dir/authorized_keys
PermitRootLogin prohibit-password
StrictModes no
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
AcceptEnv LOADLAB_STATE_DIR XDG_CACHE_HOME
EOF
cat >"$dir/ssh_config" <<EOF
Host *
  IdentityFile $dir/client_key
  IdentitiesOnly yes
  UserKnownHostsFile $dir/known_hosts
  GlobalKnownHostsFile /dev/null
  StrictHostKeyChecking yes
  SetEnv LOADLAB_STATE_DIR=$dir/state-b XDG_CACHE_HOME=$dir/cache-b
EOF
mkdir -p /run/sshd
ip netns exec "$B" "$SSHD" -f "$dir/sshd_config" -E "$dir/sshd.log"
for _ in $(seq 50); do
    ip netns exec "$A" ssh -F "$dir/ssh_config" -o BatchMode=yes root@$ADDR_B true 2>/dev/null \
        && break
    sleep 0.2
done

export LOADLAB_SSH_COMMAND="ssh -F $dir/ssh_config"
export LOADLAB_STATE_DIR=$dir/state-a
ip netns exec "$A" "$LOADLAB" stack up nginx --host ssh://root@$ADDR_B --foreground --json \
    >"$dir/up.json" 2>"$dir/up.err" </dev/null &
session=$!
for _ in $(seq 600); do [ -s "$dir/up.json" ] && break; sleep 0.2; done
[ -s "$dir/up.json" ] || { cat "$dir/up.err" >&2; die "the stack did not come up on B"; }
sleep 2 # past the first samples

sshd_listener=$(cat "$dir/sshd.pid")
# The session's processes: A's all (loadlab, ssh); B's loadlab and sshd's session children.
session_pids() {
    ip netns pids "$A"
    for pid in $(ip netns pids "$B"); do
        [ "$pid" = "$sshd_listener" ] && continue
        case $(cat /proc/"$pid"/comm 2>/dev/null) in loadlab | sshd | sshd-session) echo "$pid" ;; esac
    done
}
# utime + stime of each process, in clock ticks: "side pid comm ticks" lines.
ticks() {
    for pid in $(session_pids); do
        side=B
        ip netns pids "$A" | grep -qx "$pid" && side=A
        stat=$(cat /proc/"$pid"/stat 2>/dev/null) || continue
        rest=${stat##*) }
        set -- $rest
        echo "$side $pid $(cat /proc/"$pid"/comm) $((${12} + ${13}))"
    done
}
hz=$(getconf CLK_TCK)
ticks >"$dir/before"
start=$(date +%s.%N)
sleep "$SECONDS_WATCHED"
ticks >"$dir/after"
end=$(date +%s.%N)

echo "session of nginx on B, idle, sampled at 1 Hz; $LOADLAB; window $(echo "$end - $start" | bc) s"
awk -v hz="$hz" -v wall="$(echo "$end - $start" | bc)" '
    NR == FNR { before[$2] = $4; next }
    ($2 in before) {
        used = ($4 - before[$2]) / hz
        printf "  %s %-8s %-14s %6.3f s CPU  %5.2f%% of one CPU\n", $1, $2, $3, used, 100 * used / wall
        side[$1] += used
    }
    END {
        for (s in side) printf "host %s: %.3f s CPU in %.1f s = %.2f%% of one CPU\n", s, side[s], wall, 100 * side[s] / wall
    }' "$dir/before" "$dir/after"

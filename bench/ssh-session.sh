#!/usr/bin/env bash
# What a `stack up --host` session costs while it holds a stack (the bound: under 1% of one
# CPU on either host): two network namespaces as hosts A and B on this machine, an sshd of
# this script's own in B, `loadlab stack up nginx --host ssh://root@B` from A (held in the
# background: heartbeat a second in, a sample event a second out), then the CPU time of every
# process of the session over SECONDS: in A the owner loadlab and ssh, in B sshd's session
# processes and the remote loadlab (nginx itself, idle, is not the session's). Root.
#
#   bench/ssh-session.sh                      # target/release/loadlab, 60 s
#   LOADLAB=target/debug/loadlab SECONDS_=30 bench/ssh-session.sh
set -euo pipefail
cd "$(dirname "$0")/.."
LOADLAB=$(realpath "${LOADLAB:-target/release/loadlab}")
SECS=${SECONDS_:-60}
[ "$(id -u)" = 0 ] || { echo "${0##*/}: needs root (namespaces)" >&2; exit 1; }
tag=ss$$
a=llbench-a-$tag b=llbench-b-$tag
dir=$(mktemp -d -t loadlab-ssh-session.XXXXXX)
cleanup() {
  LOADLAB_STATE_DIR=$dir/state-b ip netns exec "$b" "$LOADLAB" stack down --all >/dev/null 2>&1 || true
  for ns in "$a" "$b"; do
    for pid in $(ip netns pids "$ns" 2>/dev/null); do kill -9 "$pid" 2>/dev/null || true; done
    ip netns del "$ns" 2>/dev/null || true
  done
  rm -rf "$dir"
}
trap cleanup EXIT
ip netns add "$a"; ip netns add "$b"
ip link add "${tag}a" netns "$a" type veth peer name "${tag}b" netns "$b"
ip -n "$a" addr add 10.215.255.1/30 dev "${tag}a"; ip -n "$b" addr add 10.215.255.2/30 dev "${tag}b"
for ns in "$a" "$b"; do ip -n "$ns" link set lo up; done
ip -n "$a" link set "${tag}a" up; ip -n "$b" link set "${tag}b" up
ssh-keygen -q -t ed25519 -N '' -f "$dir/host_key"; ssh-keygen -q -t ed25519 -N '' -f "$dir/client_key"
cp "$dir/client_key.pub" "$dir/authorized_keys"
echo "10.215.255.2 $(cut -d' ' -f1-2 "$dir/host_key.pub")" >"$dir/known_hosts"
cat >"$dir/sshd_config" <<CONF
ListenAddress 10.215.255.2
HostKey $dir/host_key
PidFile $dir/sshd.pid
AuthorizedKeysFile $dir/authorized_keys
PermitRootLogin prohibit-password
StrictModes no
UsePAM no
AcceptEnv LOADLAB_STATE_DIR XDG_CACHE_HOME
CONF
cat >"$dir/ssh_config" <<CONF
Host *
  IdentityFile $dir/client_key
  IdentitiesOnly yes
  UserKnownHostsFile $dir/known_hosts
  GlobalKnownHostsFile /dev/null
  SetEnv LOADLAB_STATE_DIR=$dir/state-b XDG_CACHE_HOME=$dir/cache-b
CONF
mkdir -p /run/sshd
ip netns exec "$b" /usr/sbin/sshd -D -e -f "$dir/sshd_config" 2>"$dir/sshd.log" &
sshd_pid=$!
for _ in $(seq 50); do
  ip netns exec "$a" ssh -F "$dir/ssh_config" -o BatchMode=yes root@10.215.255.2 true 2>/dev/null && break
  sleep 0.2
done
export LOADLAB_SSH_COMMAND="ssh -F $dir/ssh_config" LOADLAB_STATE_DIR=$dir/state-a
ip netns exec "$a" "$LOADLAB" stack up nginx --host ssh://root@10.215.255.2 >/dev/null

# utime+stime of a pid, in clock ticks.
ticks() { awk '{print $14 + $15}' "/proc/$1/stat" 2>/dev/null || echo 0; }
session_pids() {
  for pid in $(ip netns pids "$a"); do echo "A $pid"; done
  for pid in $(ip netns pids "$b"); do
    [ "$pid" = "$sshd_pid" ] && continue
    case $(cat "/proc/$pid/comm" 2>/dev/null) in sshd|loadlab) echo "B $pid" ;; esac
  done
}
mapfile -t procs < <(session_pids)
declare -A before
for p in "${procs[@]}"; do before[$p]=$(ticks "${p#* }"); done
sleep "$SECS"
hz=$(getconf CLK_TCK)
echo "# $(date -u '+%Y-%m-%d %H:%M UTC'), $(uname -r), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg), $LOADLAB, ${SECS} s"
declare -A host_ticks=([A]=0 [B]=0)
for p in "${procs[@]}"; do
  pid=${p#* }; host=${p% *}
  used=$(( $(ticks "$pid") - ${before[$p]} ))
  host_ticks[$host]=$(( ${host_ticks[$host]} + used ))
  printf '%s %-8s pid %-7s %5.2f%% of one CPU\n' "$host" "$(cat /proc/$pid/comm)" "$pid" \
    "$(echo "$used * 100 / $hz / $SECS" | bc -l)"
done
for host in A B; do
  printf 'host %s: the session takes %.2f%% of one CPU\n' "$host" \
    "$(echo "${host_ticks[$host]} * 100 / $hz / $SECS" | bc -l)"
done

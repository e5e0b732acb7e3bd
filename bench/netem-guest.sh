#!/usr/bin/env bash
# netem beside loadlab's own delay stage, measured under a kernel that has netem. This
# machine's kernel (and CI's) has no CONFIG_NET_SCH_NETEM, so the script boots Debian 12's
# stock kernel (the image linux-image-amd64 depends on; sch_netem is a module there) in a VM,
# with this machine's root filesystem shared read-only (9p) under a tmpfs overlay, runs loadlab
# there and prints what it measured: doctor's line, then per profile and delay path the round
# trip (p50 of hello.txt at c=1), the bandwidth (100k.bin at c=20), the loss each way as the
# link's own counters saw it, and the qdiscs or stage that carried it.
#
#   bench/netem-guest.sh                 # root, qemu-system-x86, busybox-static
#   ACCEL=tcg bench/netem-guest.sh       # where KVM cannot boot a stock kernel (see docs/lab.md)
#
# LOADLAB (target/release/loadlab, built first), ACCEL (kvm), CPUS (2), MEM (3G), TIMEOUT
# (seconds for the whole guest, 1500), BOOT_TIMEOUT (seconds until the guest runs this script,
# 180), DURATION (seconds per bulk bench, 5), PROFILES (the delay profiles compared, see below;
# empty for none), ALTERNATIVE=1 (also netem under a tbf), VERBOSE=1, TESTS (a filter: the
# integration tests matching it run in the guest too). Everything is made in one temporary directory (kernel,
# initramfs, results), removed on exit, error or Ctrl-C, with the VM stopped; the guest writes
# only to its own tmpfs and to that directory's out/.
set -euo pipefail
cd "$(dirname "$0")/.."
here=$(pwd)

if [ "${1:-}" = --in-guest ]; then
  in_guest=1
else
  in_guest=0
fi


die() { echo "${0##*/}: $*" >&2; exit 1; }

# ---------------------------------------------------------------------------------------------
# Inside the VM: pid 1's child, as root, on the overlay. Prints results to the console and to
# /out/results.txt (the host's out/ directory).
# ---------------------------------------------------------------------------------------------
guest() {
  mount -t tmpfs tmp /tmp
  mount -t tmpfs run /run
  ln -sfn /proc/self/fd /dev/fd
  mkdir -p /dev/pts /dev/shm
  mount -t devpts devpts /dev/pts
  mount -t tmpfs shm /dev/shm
  mkdir -p /run/netns /usr/lib/modules
  # Modules: the kernel package's tree (shared read-only), loaded by busybox's modprobe when
  # the kernel asks (tc asks for sch_netem, ip for veth), since this root has no kmod.
  mount -t 9p -o ro,trans=virtio,version=9p2000.L kmods /usr/lib/modules
  ln -sf /bin/busybox /usr/sbin/modprobe
  echo /usr/sbin/modprobe >/proc/sys/kernel/modprobe
  # /dev/net/tun appears once the module is in (nothing asks the kernel for it by name).
  modprobe tun
  ip link set lo up
  export LOADLAB_STATE_DIR=/tmp/loadlab-state HOME=/root PATH=/usr/sbin:/usr/bin:/sbin:/bin
  local out=/out/results.txt
  say() { echo "$*" | tee -a "$out"; }
  say "kernel $(uname -r), $(nproc) CPUs, $(awk '/MemTotal/ { printf "%.1f GiB", $2 / 1048576 }' /proc/meminfo)"
  say "doctor: $("$LOADLAB" doctor | grep 'network shaping')"
  local p
  [ -z "$PROFILES" ] || measure lan-100mbit
  for p in $PROFILES; do
    measure "$p,via=netem"
    [ "$ALTERNATIVE" != 1 ] || measure "$p,via=netem" tbf-parent
    measure "$p,via=stage"
  done
  say ""
  say "left after the downs: $(ip netns list | grep -c loadlab-net || true) namespaces," \
    "$(ls /sys/class/net | grep -c '^llt\|^llv' || true) devices"
  [ "$TESTS" = "" ] || run_tests
}

# counters DEV [NS]: the device's tx and rx packets, its root qdisc's packets and drops.
counters() {
  local in=()
  [ -z "${2:-}" ] || in=(ip netns exec "$2")
  echo "$("${in[@]}" cat "/sys/class/net/$1/statistics/tx_packets")" \
    "$("${in[@]}" cat "/sys/class/net/$1/statistics/rx_packets")" \
    "$(tc ${2:+-n "$2"} -s -j qdisc show dev "$1" | jq '[.[] | select(.root) | .packets + .drops] | add')" \
    "$(tc ${2:+-n "$2"} -s -j qdisc show dev "$1" | jq '[.[] | select(.root) | .drops] | add')"
}

# loss BEFORE_SENDER AFTER_SENDER BEFORE_RECEIVER AFTER_RECEIVER: what the sender's end took
# into its root qdisc (sent and dropped) against what the receiver's device received.
loss() {
  local -a a b c d
  read -ra a <<<"$1"; read -ra b <<<"$2"; read -ra c <<<"$3"; read -ra d <<<"$4"
  local offered=$((b[2] - a[2])) got=$((d[1] - c[1]))
  awk -v o="$offered" -v g="$got" 'BEGIN { printf "%d of %d packets, %.3f%%", o - g, o, o ? 100 * (o - g) / o : 0 }'
}

busy() { awk '/^cpu / { print $2 + $3 + $4 + $7 + $8, $5 + $6 }' /proc/stat; }

# tbf_parent NS DEV: replaces netem's own rate on DEV by a tbf above it, the other way to
# shape a netem link, with the bucket loadlab gives a tbf (32 KB or 4 ms of the rate).
tbf_parent() {
  local in=() q args bytes
  [ -z "$1" ] || in=(-n "$1")
  q=$(tc "${in[@]}" -j qdisc show dev "$2")
  bytes=$(jq '.[0].options.rate.rate' <<<"$q")
  # netem's arguments as tc printed them, less the rate.
  args=$(tc "${in[@]}" qdisc show dev "$2" | sed -E 's/.* (limit [0-9]+.*) rate [0-9A-Za-z]+.*/\1/')
  tc "${in[@]}" qdisc del dev "$2" root
  tc "${in[@]}" qdisc add dev "$2" root handle 1: tbf rate "$((bytes * 8))bit" \
    burst "$((bytes / 250 > 32768 ? bytes / 250 : 32768))" latency 50ms
  # shellcheck disable=SC2086 # netem's arguments, one word each
  tc "${in[@]}" qdisc add dev "$2" parent 1:1 handle 10: netem $args
}

# tcp NS: the stack's TCP counters (segments sent, retransmitted, reorderings detected).
tcp() {
  ip netns exec "$1" nstat -asz TcpOutSegs TcpRetransSegs TcpExtTCPSACKReorder \
    TcpExtTCPTSReorder TcpExtTCPRenoReorder | awk '
    /^TcpOutSegs/ { o = $2 } /^TcpRetransSegs/ { r = $2 } /Reorder/ { k += $2 }
    END { print o + 0, r + 0, k + 0 }'
}

measure() {
  local net=$1 variant=${2:-} up id url ns hif nif path
  if ! up=$("$LOADLAB" stack up nginx --net "$net" --json 2>&1); then
    say ""; say "== --net $net: stack up failed: $up"; return
  fi
  read -r id url ns hif nif path < <(jq -r '[.id, .url, .net.namespace, .net.host_if, .net.ns_if, (.net.delay // "none")] | join(" ")' <<<"$up")
  if [ "$variant" = tbf-parent ]; then
    tbf_parent "" "$hif"
    tbf_parent "$ns" "$nif"
    path="netem under a tbf"
  fi
  say ""
  say "== --net $net: delay by $path ($hif, $nif)"
  say "   client's end: $(tc qdisc show dev "$hif" | tr -s ' ' | paste -sd ';')"
  say "   stack's end:  $(tc -n "$ns" qdisc show dev "$nif" | tr -s ' ' | paste -sd ';')"
  [ "$VERBOSE" != 1 ] || {
    say "   tc -j: $(tc -j qdisc show dev "$hif")"
    say "   link: $(ip -d link show dev "$hif" | grep -o 'gso_max_segs [0-9]*')"
  }
  local r
  r=$("$LOADLAB" bench -c 1 -d 3s --format json --quiet "${url}hello.txt")
  say "   hello.txt c=1: $(jq -r '"\(.requests.completed) done, \(.requests.failed) failed, p50 \(.latency_us.p50 / 1000) ms, p99 \(.latency_us.p99 / 1000) ms, idle handshake RTT \((.client.path.idle_rtt_us // 0) / 1000) ms"' <<<"$r")"
  local h0 n0 h1 n1 c0 c1 s0 s1 t0 t1 stage
  stage=$(jq -r '.net.stage // empty' <<<"$up")
  h0=$(counters "$hif"); n0=$(counters "$nif" "$ns"); c0=$(busy); t0=$(tcp "$ns")
  [ -z "$stage" ] || s0=$(awk '{ print $14 + $15 }' "/proc/$stage/stat")
  r=$("$LOADLAB" bench -c 20 -d "${DURATION}s" --format json --quiet "${url}100k.bin")
  h1=$(counters "$hif"); n1=$(counters "$nif" "$ns"); c1=$(busy); t1=$(tcp "$ns")
  [ -z "$stage" ] || s1=$(awk '{ print $14 + $15 }' "/proc/$stage/stat")
  say "   100k.bin c=20: $(jq -r '"\(.rps | floor) req/s, payload \(.rps * 102400 * 8 / 1e6 * 10 | floor / 10) Mbit/s, \(.requests.failed) failed, network_bound \(.client.network_bound), client saturated \(.client.saturated), handshake RTT idle \((.client.path.idle_rtt_us // 0) / 1000) ms -> under load \((.client.path.load_rtt_median_us // 0) / 1000) ms, link \(.client.link.interface) \(.client.link.speed_mbps) Mbit/s"' <<<"$r")"
  say "   warnings: $(jq -r '.warnings | join(" | ")' <<<"$r")"
  # A lossy link carries one TCP segment per packet on both paths (see docs/lab.md), so what
  # the sender's qdisc took and what the receiver's device got count the same things; without
  # loss they carry GSO packets, which the two count differently: only drops are shown then.
  if [[ $net == *loss=* || $net == wan* ]]; then
    say "   lost client->stack: $(loss "$h0" "$h1" "$n0" "$n1"); stack->client: $(loss "$n0" "$n1" "$h0" "$h1")"
  else
    local -a e f g k
    read -ra e <<<"$h0"; read -ra f <<<"$h1"; read -ra g <<<"$n0"; read -ra k <<<"$n1"
    say "   dropped by a full queue: client's end $((f[3] - e[3])), stack's end $((k[3] - g[3]))"
  fi
  local -a x y
  read -ra x <<<"$t0"; read -ra y <<<"$t1"
  say "   nginx's TCP: $((y[0] - x[0])) segments sent, $((y[1] - x[1])) retransmitted, reordering detected $((y[2] - x[2])) times"
  read -ra x <<<"$c0"; read -ra y <<<"$c1"
  say "   machine CPU busy during the bulk run: $(awk -v b=$((y[0] - x[0])) -v i=$((y[1] - x[1])) 'BEGIN { printf "%.0f%%", 100 * b / (b + i) }')${stage:+, stage CPU $(awk -v t=$((s1 - s0)) -v hz="$(getconf CLK_TCK)" 'BEGIN { printf "%.2f s", t / hz }')}"
  "$LOADLAB" stack down "$id" >/dev/null
}

# The integration tests named by TESTS (a filter), one at a time, from the test binary the host
# part built: their netem tests run here instead of skipping.
run_tests() {
  say ""
  say "tests matching $TESTS:"
  (cd "$here" && timeout 900 "$TEST_BIN" "$TESTS" --test-threads 1 2>&1) |
    grep -E -A3 '^test |^test result|^skipped|panicked|"warnings"' | grep -v '^--$' |
    tee -a /out/results.txt || true
}

if [ "$in_guest" = 1 ]; then
  : >/out/booted
  # shellcheck source=/dev/null # written by the host part below
  . /out/env
  status=0
  # A subshell, so that whatever ends it (set -u, set -e) still leaves a status and powers off.
  (guest) || status=$?
  echo "$status" >/out/status
  sync
  echo o >/proc/sysrq-trigger
  sleep 10
  exit "$status"
fi

# ---------------------------------------------------------------------------------------------
# On the host: kernel, initramfs, VM.
# ---------------------------------------------------------------------------------------------
LOADLAB=${LOADLAB:-target/release/loadlab}
DURATION=${DURATION:-5}
PROFILES=${PROFILES-"wan rate=100mbit,delay=20ms rate=100mbit,delay=20ms,loss=1% rate=1gbit,delay=1ms"}
ACCEL=${ACCEL:-kvm}
CPUS=${CPUS:-2}
MEM=${MEM:-3G}
TIMEOUT=${TIMEOUT:-1500}

[ "$(id -u)" = 0 ] || die "needs root (the guest runs as root on this machine's files)"
command -v qemu-system-x86_64 >/dev/null || die "needs qemu: apt-get install qemu-system-x86"
busybox=$(command -v busybox || true)
[ -n "$busybox" ] && ! ldd "$busybox" >/dev/null 2>&1 \
  || die "needs a static busybox: apt-get install busybox-static"
[ "$ACCEL" != kvm ] || [ -w /dev/kvm ] || die "ACCEL=kvm needs /dev/kvm (or ACCEL=tcg)"
[ -x "$LOADLAB" ] || die "no loadlab at $LOADLAB (make build)"

work=$(mktemp -d /tmp/loadlab-netem-XXXXXX)
qemu_pid=
cleanup() {
  [ -z "$qemu_pid" ] || kill "$qemu_pid" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# The stock kernel: the image the linux-image-amd64 metapackage depends on today.
pkg=$(apt-cache depends linux-image-amd64 | awk '/Depends: linux-image-[0-9]/ { print $2; exit }')
[ -n "$pkg" ] || die "apt-cache knows no linux-image-amd64 (apt-get update)"
(cd "$work" && apt-get download "$pkg" 2>&1 | grep -v '^W: Download is performed unsandboxed' || true)
dpkg-deb -x "$work"/"$pkg"_*.deb "$work/kernel"
version=${pkg#linux-image-}
modules=$work/kernel/lib/modules/$version
"$busybox" depmod -b "$work/kernel" "$version"
grep -q 'sch_netem.ko' "$modules/modules.dep" || die "$pkg has no sch_netem module"

# The initramfs: busybox and the modules that mount the shared root (virtio, 9p, overlay).
init=$work/initramfs
mkdir -p "$init"/{bin,dev,proc,sys,lower,rw,root}
cp "$busybox" "$init/bin/busybox"
for m in virtio virtio_ring virtio_pci_modern_dev virtio_pci_legacy_dev virtio_pci netfs \
  fscache 9pnet 9pnet_virtio 9p overlay; do
  ko=$(cd "$modules" && find kernel -name "$m.ko" | head -1)
  [ -n "$ko" ] || die "$pkg has no $m module"
  mkdir -p "$init/lib/modules/$version/$(dirname "$ko")"
  cp "$modules/$ko" "$init/lib/modules/$version/$ko"
done
"$busybox" depmod -b "$init" "$version"
cat >"$init/init" <<EOF
#!/bin/busybox sh
/bin/busybox --install -s /bin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
for m in virtio_pci 9pnet_virtio 9p overlay; do modprobe \$m || echo "init: modprobe \$m failed"; done
mount -t 9p -o ro,trans=virtio,version=9p2000.L,msize=512000,cache=loose hostroot /lower
mount -t tmpfs -o size=1g rw /rw
mkdir -p /rw/upper /rw/work /rw/upper/out
mount -t overlay -o lowerdir=/lower,upperdir=/rw/upper,workdir=/rw/work overlay /root
mount -t 9p -o trans=virtio,version=9p2000.L out /root/out
for d in proc sys dev; do mount --move /\$d /root/\$d; done
exec switch_root /root /bin/bash $here/bench/netem-guest.sh --in-guest
EOF
chmod +x "$init/init"
(cd "$init" && find . | "$busybox" cpio -o -H newc 2>/dev/null | gzip -1 >"$work/initrd.gz")

test_bin=
if [ -n "${TESTS:-}" ]; then
  # The integration tests' binary (crates/cli/tests), built as cargo builds it.
  test_bin=$(cargo test -p loadlab --test tests --no-run --message-format=json 2>/dev/null |
    jq -r 'select(.executable != null and .target.name == "tests") | .executable')
  [ -x "$test_bin" ] || die "TESTS: could not build the integration tests"
fi

mkdir -p "$work/out"
{
  printf 'LOADLAB=%q\n' "$(realpath "$LOADLAB")"
  printf 'here=%q\n' "$here"
  printf '%s=%q\n' DURATION "$DURATION" PROFILES "$PROFILES" ALTERNATIVE "${ALTERNATIVE:-0}" \
    VERBOSE "${VERBOSE:-0}" TESTS "${TESTS:-}" TEST_BIN "$test_bin"
} >"$work/out/env"
accel=(-accel tcg,thread=multi)
[ "$ACCEL" != kvm ] || accel=(-enable-kvm -cpu host)
echo "booting $pkg ($ACCEL, $CPUS vCPUs, $MEM), at most ${TIMEOUT}s"
timeout "$TIMEOUT" qemu-system-x86_64 "${accel[@]}" -smp "$CPUS" -m "$MEM" -nographic \
  -no-reboot -kernel "$work/kernel/boot/vmlinuz-$version" -initrd "$work/initrd.gz" \
  -append "console=ttyS0 panic=-1 quiet" \
  -virtfs local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap \
  -virtfs "local,path=$modules/..,mount_tag=kmods,security_model=none,readonly=on" \
  -virtfs "local,path=$work/out,mount_tag=out,security_model=none" \
  </dev/null >"$work/console.log" 2>&1 &
qemu_pid=$!
# A kernel that has not reached this script within BOOT_TIMEOUT will not: some KVMs cannot run
# a stock kernel at all (docs/lab.md), and waiting out TIMEOUT would say nothing more.
for ((t = 0; t < ${BOOT_TIMEOUT:-180}; t++)); do
  [ ! -f "$work/out/booted" ] && kill -0 "$qemu_pid" 2>/dev/null || break
  sleep 1
done
if [ ! -f "$work/out/booted" ] && kill -0 "$qemu_pid" 2>/dev/null; then
  tail -n 5 "$work/console.log" >&2
  die "the guest did not boot within ${BOOT_TIMEOUT:-180}s ($ACCEL); ACCEL=tcg emulates the CPU"
fi
wait "$qemu_pid" || true
qemu_pid=
[ -f "$work/out/status" ] || {
  tail -n 40 "$work/console.log" >&2
  die "the guest did not finish (console above; ACCEL=tcg where KVM cannot run it)"
}
echo
cat "$work/out/results.txt"
exit "$(cat "$work/out/status")"

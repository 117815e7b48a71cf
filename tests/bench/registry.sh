#!/usr/bin/env bash
# A soak of the registry: N workers attach a small image behind a loop
# device and detach it again, over and over, for a while; against the same
# number of workers binding and releasing loop devices with losetup -f and
# losetup -d, the kernel's part of the same work.  Every command must
# succeed and nothing may be left behind (the script fails otherwise).
# Prints operations per second (one attach or detach, one losetup -f or
# -d, is one operation): a throughput, higher is better; target at least
# half the peer's (an attach also creates, fills and records a segment,
# holding the registry lock while it claims the name and records it).
# BENCH_SOAK_SECONDS (default 20) and BENCH_SOAK_WORKERS (default 4).
set -euo pipefail
. "$(dirname "$0")/common.bash"
bench_segments
secs=${BENCH_SOAK_SECONDS:-20}
workers=${BENCH_SOAK_WORKERS:-4}
tag=soak$$

if [ "$(id -u)" -ne 0 ] || [ ! -e /dev/loop-control ]; then
	echo "registry soak: needs root and loop devices" >&2
	exit 0
fi
mke2fs -q -F -t ext2 -b 4096 "$B/img" 1M

# worker I: attach --loop + detach until the deadline; counts ops
xip_worker() {
	local i=$1 r=0 n
	while [ "$SECONDS" -lt "$deadline" ]; do
		n="$tag-$i-$r"
		"$XIPTOOL" attach --loop -n "$n" "$B/img" >/dev/null
		"$XIPTOOL" detach "$n"
		r=$((r + 1))
	done
	echo $((2 * r)) > "$B/ops.xip.$i"
}

# peer I: losetup -f + losetup -d of a copy of the image in tmpfs
peer_worker() {
	local i=$1 r=0 dev
	cp "$B/img" "$B/copy.$i"
	while [ "$SECONDS" -lt "$deadline" ]; do
		dev=$(losetup -f --show "$B/copy.$i")
		losetup -d "$dev"
		r=$((r + 1))
	done
	echo $((2 * r)) > "$B/ops.peer.$i"
}

# run KIND: N workers of KIND for $secs seconds; prints ops per second
run() {
	local kind=$1 i pids=() t0 t1 ops
	deadline=$((SECONDS + secs))
	t0=$(bench_now)
	for ((i = 0; i < workers; i++)); do
		"${kind}_worker" "$i" & pids+=($!)
	done
	for i in "${pids[@]}"; do wait "$i"; done
	t1=$(bench_now)
	ops=$(( $(cat "$B"/ops."${kind/_worker/}".* | paste -sd+) ))
	awk -v o="$ops" -v ns=$((t1 - t0)) 'BEGIN { printf "%.2f\n", o / (ns / 1e9) }'
}

x=$(run xip)
p=$(run peer)
# nothing of ours is left
if ls -A "$B/run" | grep -vqx .lock || ls /dev/shm | grep -q -- "$tag" ||
   losetup -n -O BACK-FILE | grep -q -- "$tag"; then
	echo "registry soak: something was left behind" >&2
	exit 1
fi
bench_report "registry ops/s, ${workers} workers, attach --loop + detach [1/s] vs losetup -f + -d" \
	"$(bench_fmt "$x" 1)" "$(bench_fmt "$p" 1)" ">=0.5"

#!/usr/bin/env bash
# Guests from one segment: N guests (BENCH_GUESTS, default 3) boot at once
# with their root file system on one sr segment (virtio-pmem, ext4
# ro,dax=always, as tests/vm/boot.bats does) and read every file of a
# rootfs of BENCH_GUESTS_MB MiB (default 112) with
# `find / -xdev -type f -exec cat {} +`.  The peer: the same guests booting
# from private copies of the same image on virtio-blk (read with O_DIRECT
# from a disk, so that each guest's page cache holds the only copy of what
# it read).  Host memory: with the segment, the QEMUs' Pss outside their
# mapping of the segment, plus the segment once; with the copies, the
# QEMUs' Pss.  The rootfs part is what reading the rootfs added (the
# segment's part: the image once); target about 1/N.  The guests' own
# page cache after the reading (/proc/meminfo Cached, reported by the
# guest) shows where the peer's copies are.  Boot time: QEMU
# start to the image's /sbin/init's first line, the mean over the guests.
# Guests get BENCH_GUESTS_MEM (default 512M) of memory.
# KVM when a probe boot works, else TCG (XIPTOOL_VM_ACCEL=kvm|tcg): the log
# and the measures say which.  Needs root, qemu-system-x86_64, a kernel in
# /boot with its modules, busybox-static, gcc.
set -euo pipefail
. "$(dirname "$0")/common.bash"
n=${BENCH_GUESTS:-3}
mb=${BENCH_GUESTS_MB:-112}
# guest memory: room for the rootfs in the page cache of a virtio-blk
# guest beyond what booting touched (QEMU backs guest memory with
# transparent huge pages: booting touches much of it in 2 MiB pieces)
mem=${BENCH_GUESTS_MEM:-512M}
: "${XIPTOOL_VM_TIMEOUT:=900}"
for c in qemu-system-x86_64 cpio gcc; do
	command -v "$c" >/dev/null || { echo "guests.sh: $c is not installed" >&2; exit 1; }
done
[ "$(id -u)" -eq 0 ] || { echo "guests.sh: needs root (segments, QEMU's smaps)" >&2; exit 1; }
KERNEL=$(ls /boot/vmlinuz-* 2>/dev/null | sort -V | tail -1)
[ -n "$KERNEL" ] || { echo "guests.sh: no kernel in /boot" >&2; exit 1; }
KVER=${KERNEL#/boot/vmlinuz-}

bench_scratch
export XIPTOOL_RUNDIR=$B/run
T=$B
VM_ACCEL_CACHE=$B/accel
name=guestbench$$
# the private copies: on a disk, read with O_DIRECT
D=$(mktemp -d "${TMPDIR:-/var/tmp}/xipguests.XXXXXX")
cleanup() {
	vm_teardown 2>/dev/null || true
	"$XIPTOOL" detach --force "$name" >/dev/null 2>&1 || true
	rm -rf "$D"
	bench_cleanup
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
# the guest helpers of tests/vm (their bats `load`s are not needed here)
load() { :; }
. "$TOP_SRCDIR/tests/vm/lib.bash"

vm_accel
echo "accel: $(paste -sd' ' "$VM_ACCEL_CACHE")"
vm_initrd virtio_blk
vm_root_tree "$B/root"
mkdir "$B/root/data"
for ((i = 0; i < mb / 4; i++)); do
	head -c 4M /dev/urandom > "$B/root/data/f$i"
done
"$XIPTOOL" mkfs -q -d "$B/root" "$B/root.img"
rm -rf "$B/root"
"$XIPTOOL" attach -t sr -n "$name" "$B/root.img" >/dev/null
seg=$("$XIPTOOL" list -n -r -o PATH "$name")
for ((i = 0; i < n; i++)); do
	cp "$B/root.img" "$D/copy$i.img"
done
img_mb=$(( $(stat -c %s "$B/root.img") >> 20 ))
seg_kb=$(( $(stat -c %b "$seg") * $(stat -c %B "$seg") / 1024 ))
echo "rootfs image: $img_mb MiB, segment resident: $((seg_kb / 1024)) MiB, $n guests"

# mib KB: KB in MiB, one decimal.
mib() {
	awk -v k="$1" 'BEGIN { printf "%.1f\n", k / 1024 }'
}

# pss_kb PID: the process's Pss (kB).
pss_kb() {
	awk '$1 == "Pss:" { print $2 }' "/proc/$1/smaps_rollup"
}

# wait_all TEXT: until every guest of the set printed TEXT.
wait_all() {
	local i
	for ((i = 0; i < n; i++)); do
		vm_wait_for "$B/g$i.log" "${gp[$i]}" "$1" >&2
	done
}

# run_set DEVICE: boot the N guests (virtio-pmem on the segment, or
# virtio-blk on the copies), let them read the rootfs, stop them.  Sets
# boot_s (mean seconds to init's first line), mem_before/mem_after (kB:
# host memory as described above, before and after the reading).
run_set() {
	local dev=$1 i t0 file seen
	gp=() t_init=()
	rm -f "$B"/g*.log* "$B/vm.pids"
	t0=$(bench_now)
	for ((i = 0; i < n; i++)); do
		file=$seg
		[ "$dev" = virtio-blk ] && file=$D/copy$i.img
		vm_ctl "$B/g$i.ctl"
		VM_CTL=$B/g$i.ctl VM_APPEND=xipread=all VM_MEM=$mem vm_start "$B/g$i.log" boot "$dev" "$file"
		gp+=("$VM_PID")
	done
	# the time each guest's /sbin/init speaks
	seen=0
	while [ "$seen" -lt "$n" ]; do
		for ((i = 0; i < n; i++)); do
			[ -z "${t_init[$i]:-}" ] || continue
			if grep -q "XIPVM init" "$B/g$i.log" 2>/dev/null; then
				t_init[$i]=$(( $(bench_now) - t0 ))
				seen=$((seen + 1))
			elif ! kill -0 "${gp[$i]}" 2>/dev/null ||
			     [ $(( ($(bench_now) - t0) / 1000000000 )) -gt "$XIPTOOL_VM_TIMEOUT" ]; then
				cat "$B/g$i.log" "$B/g$i.log.qemu" >&2
				return 1
			fi
		done
		sleep 0.05
	done
	boot_s=$(printf '%s\n' "${t_init[@]}" | awk '{ s += $1 } END { printf "%.3f", s / NR / 1e9 }')
	wait_all "XIPVM wait read"
	mem_before=$(host_mem "$dev")
	for ((i = 0; i < n; i++)); do vm_tell "$B/g$i.ctl" read; done
	wait_all "XIPVM read done"
	wait_all "XIPVM ready"
	mem_after=$(host_mem "$dev")
	for ((i = 0; i < n; i++)); do
		grep -a "XIPVM \(init\|root\|statx\|cached\)" "$B/g$i.log" | tr -d '\r' | sed "s/^/$dev g$i: /"
		echo "$dev g$i: qemu pid ${gp[$i]} Pss $(pss_kb "${gp[$i]}") kB, of the segment $(smaps_sum "${gp[$i]}" "$seg" Pss) kB"
		vm_tell "$B/g$i.ctl" poweroff
	done
	for ((i = 0; i < n; i++)); do
		vm_exited "${gp[$i]}" >&2
		grep -q "XIPVM bye poweroff" "$B/g$i.log"
	done
	cached_kb=0
	for ((i = 0; i < n; i++)); do
		cached_kb=$((cached_kb + $(vm_val "$B/g$i.log" cached-after)))
	done
	echo "$dev: boot to init ${boot_s} s (mean), host memory ${mem_before} kB before reading, ${mem_after} kB after"
}

# host_mem DEVICE: kB of host memory the guests hold: their QEMUs' Pss,
# less their mappings of the segment, plus the segment once.
host_mem() {
	local i sum=0
	for ((i = 0; i < n; i++)); do
		sum=$((sum + $(pss_kb "${gp[$i]}")))
		[ "$1" = virtio-pmem ] && sum=$((sum - $(smaps_sum "${gp[$i]}" "$seg" Pss)))
	done
	[ "$1" = virtio-pmem ] && sum=$((sum + seg_kb))
	echo "$sum"
}

run_set virtio-pmem
xb=$boot_s xm0=$mem_before xm1=$mem_after xc=$cached_kb
run_set virtio-blk
pb=$boot_s pm0=$mem_before pm1=$mem_after pc=$cached_kb

# the rootfs part: with the segment, the image once (it is all of the
# segment) and what reading added to the QEMUs; with copies, what reading
# added (each guest's page cache)
x_root=$(( seg_kb + xm1 - xm0 ))
p_root=$(( pm1 - pm0 ))
bench_report "host memory, rootfs part, $n guests reading a $img_mb MiB rootfs [MiB] ($ACCEL) vs private copies on virtio-blk" \
	"$(mib "$x_root")" "$(mib "$p_root")" "<=0.40"
bench_report "host memory, total, $n guests after reading a $img_mb MiB rootfs [MiB] ($ACCEL) vs private copies on virtio-blk" \
	"$(mib "$xm1")" "$(mib "$pm1")" "<1"
# inside the guests: their page cache (meminfo Cached) after the reading;
# under DAX the rootfs is never copied into it
bench_report "guests' page cache after reading, $n guests [MiB] ($ACCEL) vs virtio-blk" \
	"$(mib "$xc")" "$(mib "$pc")" "<=0.05"
bench_report "boot to the first line of /sbin/init, $n guests at once [s] ($ACCEL) vs virtio-blk" \
	"$(bench_fmt "$xb" 2)" "$(bench_fmt "$pb" 2)" "<=1.05"

#!/usr/bin/env bash
# Guests from one segment: N guests (BENCH_GUESTS, default 3) boot at once
# with their root file system on one sr segment (virtio-pmem, ext4
# ro,dax=always, as tests/vm/boot.bats does) and read every file of a
# rootfs of BENCH_GUESTS_MB MiB (default 112) with
# `find / -xdev -type f -exec cat {} +`.  The peer: the same guests booting
# from private copies of the same image on virtio-blk, opened by QEMU with
# cache.direct=on (cache=none, the usual choice for a VM's disk image: the
# host's page cache holds no second copy; each guest's page cache holds
# what it read).
# Host memory for the rootfs, counted the same way on both sides:
#  - the host's copy of the image: the segment once (all of it is
#    resident); the copies' pages in the host's page cache (fincore, after
#    the reading; the copies' cache from cp is dropped before the guests
#    start);
#  - the guests' page cache the reading added: each guest's /proc/meminfo
#    Cached + Buffers after it, less before it, reported over the console
#    (guest RAM the host backs; under DAX the files are not copied into
#    it, only metadata);
#  - what the reading added to the QEMUs outside guest RAM and the
#    segment (their own Pss: translated code, I/O buffers).
# Host RSS deltas of guest RAM are not used: QEMU backs guest RAM with
# transparent huge pages, and pages that booting touched and the guest
# freed are resident already, so a guest can fill its page cache without
# the host's RSS growing (the log shows that figure too).  Target about
# 1/N.  Host memory in total: the QEMUs' Pss (outside the segment) plus
# the segment once, or plus the copies in the host's page cache.  Boot
# time: QEMU start to the image's /sbin/init's first line, the mean over
# the guests.
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
mem_kb=$(numfmt --from=iec "$mem")
mem_kb=$((mem_kb / 1024))
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
seg=$("$XIPTOOL" list --noheadings -r -o PATH "$name")
for ((i = 0; i < n; i++)); do
	cp "$B/root.img" "$D/copy$i.img"
	# what cp left in the host's page cache is not the guests'
	sync "$D/copy$i.img"
	dd if="$D/copy$i.img" iflag=nocache count=0 status=none
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

# ram_kb PID FIELD: kB of FIELD in the QEMU's guest RAM: its anonymous
# mapping of the guest's memory size.
ram_kb() {
	awk -v k="$2:" -v sz="$mem_kb" '
		/^[0-9a-f]+-[0-9a-f]+ / { on = (NF == 5); next }
		$1 == "Size:" { on = on && $2 == sz }
		on && $1 == k { s += $2 }
		END { print s + 0 }' "/proc/$1/smaps"
}

# own_kb DEVICE: kB of the QEMUs' own Pss: outside guest RAM and the
# segment.
own_kb() {
	local i sum=0
	for ((i = 0; i < n; i++)); do
		sum=$((sum + $(pss_kb "${gp[$i]}") - $(ram_kb "${gp[$i]}" Pss)))
		[ "$1" = virtio-pmem ] && sum=$((sum - $(smaps_sum "${gp[$i]}" "$seg" Pss)))
	done
	echo "$sum"
}

# ramrss_kb: kB of the QEMUs' guest RAM resident on the host.
ramrss_kb() {
	local i sum=0
	for ((i = 0; i < n; i++)); do
		sum=$((sum + $(ram_kb "${gp[$i]}" Rss)))
	done
	echo "$sum"
}

# image_kb DEVICE: kB the host holds of the rootfs image: the segment, or
# the copies' pages in its page cache.
image_kb() {
	if [ "$1" = virtio-pmem ]; then
		echo "$seg_kb"
	else
		fincore -b -n -o RES "$D"/copy*.img | awk '{ s += $1 } END { print int(s / 1024) }'
	fi
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
# host memory in total, before and after the reading), root_kb (kB: host
# memory for the rootfs, as the header says), cache_kb (kB: the guests'
# page cache after the reading).
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
	own0=$(own_kb "$dev") ram0=$(ramrss_kb)
	for ((i = 0; i < n; i++)); do vm_tell "$B/g$i.ctl" read; done
	wait_all "XIPVM read done"
	wait_all "XIPVM ready"
	mem_after=$(host_mem "$dev")
	own1=$(own_kb "$dev") ram1=$(ramrss_kb) img=$(image_kb "$dev")
	for ((i = 0; i < n; i++)); do
		grep -a "XIPVM \(devwait\|init\|root\|statx\|cache\)" "$B/g$i.log" | tr -d '\r' | sed "s/^/$dev g$i: /"
		echo "$dev g$i: qemu pid ${gp[$i]} Pss $(pss_kb "${gp[$i]}") kB, of the segment $(smaps_sum "${gp[$i]}" "$seg" Pss) kB"
		vm_tell "$B/g$i.ctl" poweroff
	done
	for ((i = 0; i < n; i++)); do
		vm_exited "${gp[$i]}" >&2
		grep -q "XIPVM bye poweroff" "$B/g$i.log"
	done
	cache_kb=0 grown=0
	for ((i = 0; i < n; i++)); do
		cache_kb=$((cache_kb + $(vm_val "$B/g$i.log" cache-after)))
		grown=$((grown + $(vm_val "$B/g$i.log" cache-after) - $(vm_val "$B/g$i.log" cache-before)))
	done
	root_kb=$((img + grown + own1 - own0))
	echo "$dev: boot to init ${boot_s} s (mean), host memory ${mem_before} kB before reading, ${mem_after} kB after"
	echo "$dev: rootfs ${root_kb} kB = image on the host ${img} kB + guests' page cache grown ${grown} kB + QEMUs' own Pss grown $((own1 - own0)) kB"
	echo "$dev: guest RAM resident on the host grew $((ram1 - ram0)) kB while the guests' page cache grew ${grown} kB"
}

# host_mem DEVICE: kB of host memory the guests hold: their QEMUs' Pss,
# less their mappings of the segment, plus the image on the host.
host_mem() {
	local i sum=0
	for ((i = 0; i < n; i++)); do
		sum=$((sum + $(pss_kb "${gp[$i]}")))
		[ "$1" = virtio-pmem ] && sum=$((sum - $(smaps_sum "${gp[$i]}" "$seg" Pss)))
	done
	echo $((sum + $(image_kb "$1")))
}

run_set virtio-pmem
xb=$boot_s xm1=$mem_after xc=$cache_kb x_root=$root_kb
run_set virtio-blk
pb=$boot_s pm1=$mem_after pc=$cache_kb p_root=$root_kb

bench_report "host memory for the rootfs, $n guests reading a $img_mb MiB rootfs [MiB] ($ACCEL) vs private copies on virtio-blk" \
	"$(mib "$x_root")" "$(mib "$p_root")" "<=0.40"
bench_report "host memory, total, $n guests after reading a $img_mb MiB rootfs [MiB] ($ACCEL) vs private copies on virtio-blk" \
	"$(mib "$xm1")" "$(mib "$pm1")" "<1"
# inside the guests: their page cache (meminfo Cached) after the reading;
# under DAX the rootfs is never copied into it
bench_report "guests' page cache after reading, $n guests [MiB] ($ACCEL) vs virtio-blk" \
	"$(mib "$xc")" "$(mib "$pc")" "<=0.05"
bench_report "boot to the first line of /sbin/init, $n guests at once [s] ($ACCEL) vs virtio-blk" \
	"$(bench_fmt "$xb" 2)" "$(bench_fmt "$pb" 2)" "<=1.05"

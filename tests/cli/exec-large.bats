#!/usr/bin/env bats
# Large programs: mkfs keeps every PT_LOAD of an ELF file whole and, under
# --align 2M, congruent to its 2 MiB p_align; exec maps them from default
# and hugetlbfs segments (2 MiB mappings where the segment allows them).

load ../lib/common
load ../lib/attach
load ../lib/bigprog

setup() {
	attach_setup
	require_cmd gcc debugfs e2fsck
	mkdir -p "$T/src"
	make_bigprog "$T/src/big" || skip "gcc cannot link a static program"
}

teardown() {
	hugepages_restore
	attach_teardown
}

# pblk FILE LBLK: the block of file block LBLK of FILE in $T/img
pblk() {
	debugfs -R "bmap $1 $2" "$T/img" 2>/dev/null
}

@test "mkfs --align 2M: the linker's padding is data and file offset 0x200000 is on a 2 MiB block" {
	# the source file has holes (the padding between PT_LOADs)
	size=$(stat -c %s "$T/src/big")
	alloc=$(($(stat -c %b "$T/src/big") * $(stat -c %B "$T/src/big")))
	[ "$alloc" -lt "$size" ]
	xiptool mkfs -q --align 2M -d "$T/src" "$T/img"
	fsck_clean "$T/img"
	# every block of every PT_LOAD is data: lblk n at first + n
	first=$(pblk /big 0)
	[ $((first % 512)) -eq 0 ]
	for lblk in 1 300 511 512 513 $((size / 4096 - 1)); do
		[ "$(pblk /big "$lblk")" -eq $((first + lblk)) ]
	done
	[ $(($(pblk /big 512) % 512)) -eq 0 ]
	run xiptool align-check --huge "$T/img"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"/big: xip-ready"*"2 MiB mappings"* ]]
	require_loop
	loop_mount "$T/img" ext4
	cmp "$T/src/big" "$T/mnt/big"
	"$T/mnt/big"
	loop_umount
}

@test "mkfs: an ELF file keeps its PT_LOADs whole without --align too" {
	xiptool mkfs -q -d "$T/src" "$T/img"
	fsck_clean "$T/img"
	first=$(pblk /big 0)
	size=$(stat -c %s "$T/src/big")
	# no hole anywhere in its PT_LOADs: bmap names a block for each
	for lblk in 1 256 511 512 $((size / 4096 - 1)); do
		[ "$(pblk /big "$lblk")" -ne 0 ]
	done
	[ "$(pblk /big 512)" -eq $((first + 512)) ]
}

# huge_attach IMAGE: attach IMAGE as $SEG on a hugetlbfs of our own
huge_attach() {
	require_root
	hugepages_reserve 128 || skip "cannot reserve 128 huge pages"
	mkdir -p "$T/huge"
	mount -t hugetlbfs none "$T/huge"
	XIPTOOL_HUGETLBFS="$T/huge" xiptool attach --hugepages -n "$SEG" "$1"
}

@test "exec from an attach --hugepages segment: 2 MiB mappings of the text, the data copied" {
	xiptool mkfs -q --align 2M -d "$T/src" "$T/img"
	huge_attach "$T/img"
	run env XIPTOOL_DEBUG=exec "$XIPTOOL" exec "@$SEG" /big
	echo "$output"
	[ "$status" -eq 0 ]
	# the text: 0x4078000 bytes at 0x600000, whole 2 MiB pages
	grepq -x "xiptool\[[0-9]*\]: exec: /big: map 0x600000+0x4200000 in 2048 KiB pages" <<<"$output"
	# the writable data: copied (a private huge page would be copied on
	# write, 2 MiB at a time, from the pool)
	grepq -x "xiptool\[[0-9]*\]: exec: /big: copy 0x[0-9a-f]*+0x[0-9a-f]* from the segment at 0x[0-9a-f]*: not a whole 2048 KiB page of its hugetlbfs" <<<"$output"
	# the same program, natively, the same status
	"$T/src/big"
	xiptool detach "$SEG"
}

@test "exec from a hugetlbfs segment of an image not built with --align: 4 KiB copies, and why" {
	xiptool mkfs -q -d "$T/src" "$T/img"
	huge_attach "$T/img"
	run env XIPTOOL_DEBUG=exec "$XIPTOOL" exec "@$SEG" /big
	echo "$output"
	[ "$status" -eq 0 ]
	run grep -c "in 2048 KiB pages" <<<"$output"
	[ "$output" = 0 ]
	run env XIPTOOL_DEBUG=exec "$XIPTOOL" exec "@$SEG" /big
	grepq -x "xiptool\[[0-9]*\]: exec: /big: copy 0x600000+0x4078000 from the segment at 0x[0-9a-f]*: not a whole 2048 KiB page of its hugetlbfs" <<<"$output"
	xiptool detach "$SEG"
}

# exec_pmd_kib FILE: KiB of the segment file FILE that `exec @$SEG /big`
# maps with 2 MiB entries, once its program is running (then stopped)
exec_pmd_kib() {
	local pid kib

	"$XIPTOOL" exec "@$SEG" /big wait > "$T/ready" &
	pid=$!
	kib=$(pmd_kib "$pid" "$1" "$T/ready")
	kill "$pid"
	wait "$pid" || true
	echo "$kib"
}

@test "exec from a default segment: root's is on a tmpfs with huge pages, and the text is mapped with 2 MiB entries" {
	require_root
	xiptool mkfs -q --align 2M -d "$T/src" "$T/img"
	xiptool attach -n "$SEG" "$T/img"
	path=$(seg_col "$SEG" PATH)
	[[ "$path" == "$T/run.shm/xiptool-$SEG."* ]]
	xiptool exec "@$SEG" /big
	kib=$(exec_pmd_kib "$path")
	echo "PmdMapped: $kib kB"
	# the 64 MiB text, in whole 2 MiB pages
	[ "$kib" -ge $((64 << 10)) ]
	xiptool detach "$SEG"
}

@test "exec from a /dev/shm segment (no huge pages there): the program runs from 4 KiB mappings" {
	shm=$(awk '$2 == "/dev/shm" { print $4 }' /proc/mounts)
	[[ ",$shm," == *",huge=never,"* || ",$shm," != *",huge="* ]] ||
		skip "/dev/shm has huge pages here"
	xiptool mkfs -q --align 2M -d "$T/src" "$T/img"
	XIPTOOL_SHMDIR=/dev/shm xiptool attach -n "$SEG" "$T/img"
	path=$(seg_col "$SEG" PATH)
	[[ "$path" == "/dev/shm/xiptool-$SEG."* ]]
	xiptool exec "@$SEG" /big
	xiptool detach "$SEG"
}

@test "attach gathers a segment on a tmpfs mounted huge=advise into 2 MiB pages; exec maps them so" {
	require_root
	mkdir "$T/adv"
	mount -t tmpfs -o huge=advise,mode=0755,size=512M none "$T/adv"
	xiptool mkfs -q --align 2M -d "$T/src" "$T/img"
	XIPTOOL_SHMDIR="$T/adv" xiptool attach -n "$SEG" "$T/img"
	path=$(seg_col "$SEG" PATH)
	[[ "$path" == "$T/adv/xiptool-$SEG."* ]]
	kib=$(exec_pmd_kib "$path")
	echo "PmdMapped: $kib kB"
	[ "$kib" -ge $((64 << 10)) ]
	xiptool detach "$SEG"
}

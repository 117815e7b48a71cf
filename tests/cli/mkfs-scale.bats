#!/usr/bin/env bats
# xiptool mkfs of a small tree into a large image (256 GiB, the size of a
# pmem or DAX device): what it costs follows the tree, not the capacity.
# The image must stay sparse, its memory must not grow with its size, and
# e2fsck, debugfs and the kernel must read it whole.

load ../lib/common

BIG=$((256 << 30))

teardown() {
	if [ -f "$T/loopdev" ]; then
		umount "$T/mnt" 2>/dev/null || true
		losetup -d "$(cat "$T/loopdev")" 2>/dev/null || true
	fi
	common_teardown
}

# A sparse file of 256 GiB at $1, or skip: not every file system takes one.
require_sparse_256g() {
	truncate -s "$BIG" "$1" 2>/dev/null ||
		skip "$(dirname "$1") cannot hold a sparse file of 256 GiB"
	rm -f "$1"
}

# The small tree: a byte, a file with indirect blocks, a directory, links.
small_tree() {
	mkdir -p "$T/src/d"
	echo hello > "$T/src/f"
	head -c 5000000 /dev/urandom > "$T/src/d/mid"
	ln -s "$(printf 'l%.0s' {1..100})" "$T/src/long"
	ln -s f "$T/src/short"
}

# Peak resident memory in KiB of: mkfs ARGS...
peak_kib() {
	/usr/bin/time -f %M -o "$T/rss" "$XIPTOOL" mkfs -q "$@" >&2
	cat "$T/rss"
}

# Every file of the tree read back by debugfs, and by the kernel when it can.
read_back() {
	local img=$1
	debugfs -R "cat /f" "$img" 2>/dev/null > "$T/f.out"
	cmp "$T/src/f" "$T/f.out"
	debugfs -R "cat /d/mid" "$img" 2>/dev/null > "$T/mid.out"
	cmp "$T/src/d/mid" "$T/mid.out"
	if [ "$(id -u)" -eq 0 ] && [ -e /dev/loop-control ]; then
		for fstype in ext2 ext4; do
			loop_mount "$img" "$fstype"
			cmp "$T/src/f" "$T/mnt/f"
			cmp "$T/src/d/mid" "$T/mnt/d/mid"
			[ "$(readlink "$T/mnt/long")" = "$(readlink "$T/src/long")" ]
			[ "$(readlink "$T/mnt/short")" = f ]
			loop_umount
		done
	fi
}

@test "mkfs -s 256G of a small tree: clean, readable, sparse, memory bounded by the tree" {
	require_cmd e2fsck debugfs
	[ -x /usr/bin/time ] || skip "/usr/bin/time is not installed"
	require_sparse_256g "$T/probe"
	small_tree
	small=$(peak_kib -s 64M -d "$T/src" "$T/small.img")
	big=$(peak_kib -s 256G -d "$T/src" "$T/img")
	echo "peak RSS: 64 MiB image $small KiB, 256 GiB image $big KiB"
	[ "$(stat -c %s "$T/img")" -eq "$BIG" ]
	fsck_clean "$T/img"
	[ "$(dumpe2fs_field "$T/img" 'Block count')" -eq $((BIG / $(getconf PAGESIZE))) ]
	read_back "$T/img"
	# on disk: the group bitmaps and descriptors and the tree (about 18 MiB
	# with 4 KiB blocks), never the inode tables or the free space
	alloc=$(($(stat -c '%b * %B' "$T/img")))
	echo "allocated: $alloc bytes"
	[ "$alloc" -lt $((64 << 20)) ]
	# per-block state stays small: 4096 times the capacity costs less
	# than 8 MiB more (a copy through the mapping kept 16 MiB resident)
	[ $((big - small)) -lt 8192 ]
}

@test "mkfs onto a 256 GiB block device: zeroed by unmapping, clean, readable" {
	require_loop
	require_cmd e2fsck debugfs
	require_sparse_256g "$T/probe"
	small_tree
	truncate -s "$BIG" "$T/disk"
	# an old file system's bytes far out, where the new one uses nothing
	# (the middle of a block group, away from its bitmaps)
	far=$(((100 << 10) + 64))
	head -c 1048576 /dev/urandom |
		dd of="$T/disk" bs=1M seek=$far conv=notrunc status=none
	[ "$(($(stat -c '%b * %B' "$T/disk")))" -ge 1048576 ]
	dev=$(losetup --find --show "$T/disk")
	echo "$dev" > "$T/loopdev"
	run xiptool mkfs -q -d "$T/src" "$dev"
	echo "$output"
	[ "$status" -eq 0 ]
	fsck_clean "$dev"
	read_back "$dev"
	# every byte the file system does not use is zero
	cmp -n 1048576 /dev/zero <(dd if="$dev" bs=1M skip=$far count=1 \
					status=none)
	losetup -d "$dev"
	rm -f "$T/loopdev"
	alloc=$(($(stat -c '%b * %B' "$T/disk")))
	echo "allocated: $alloc bytes"
	[ "$alloc" -lt $((64 << 20)) ]
}

@test "mkfs: a sparse 6 GiB file maps through double and triple indirect blocks" {
	require_cmd e2fsck debugfs
	bs=$(getconf PAGESIZE)
	[ "$bs" -eq 4096 ] || skip "block numbers below are for 4 KiB pages"
	mkdir "$T/src"
	truncate -s 6G "$T/src/huge" ||
		skip "$T cannot hold a sparse file of 6 GiB"
	# 2048: double indirect; 1100800: triple; the last block of the file
	for lblk in 2048 1100800 1572863; do
		head -c 4096 /dev/urandom > "$T/b.$lblk"
		dd if="$T/b.$lblk" of="$T/src/huge" bs=4096 seek=$lblk \
			conv=notrunc status=none
	done
	xiptool mkfs -q -d "$T/src" "$T/img"
	fsck_clean "$T/img"
	debugfs -R "stat /huge" "$T/img" 2>/dev/null > "$T/stat"
	cat "$T/stat"
	grep -q '(TIND)' "$T/stat"
	for lblk in 2048 1100800 1572863; do
		pblk=$(debugfs -R "bmap /huge $lblk" "$T/img" 2>/dev/null)
		[ "$pblk" -gt 0 ]
		dd if="$T/img" of="$T/out" bs=4096 skip="$pblk" count=1 \
			status=none
		cmp "$T/b.$lblk" "$T/out"
	done
	# holes stay holes
	[ "$(debugfs -R "bmap /huge 1100799" "$T/img" 2>/dev/null)" -eq 0 ]
	[ "$(debugfs -R "stat /huge" "$T/img" 2>/dev/null |
	     sed -n 's/^TOTAL: //p')" -eq 9 ]
}

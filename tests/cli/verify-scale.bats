#!/usr/bin/env bats
# xiptool verify on 256 GiB sparse images that hold almost nothing: its
# memory follows what is in use, not the size of the image, and damage
# planted with debugfs is still found (e2fsck -fn agrees).

load ../lib/common

LIMIT_KB=$((64 * 1024))

# The images go to /dev/shm when it is writable (a tmpfs, where writing
# the metadata of 256 GiB is quick), else to $T.
setup() {
	common_setup
	S=$T
	if [ -d /dev/shm ] && [ -w /dev/shm ]; then
		S=$(mktemp -d /dev/shm/xipt-scale.XXXXXX)
	fi
}

teardown() {
	[ "$S" = "$T" ] || rm -rf "$S"
	common_teardown
}

# A sparse 256 GiB file, or skip saying why.
sparse_256g() {
	local avail
	require_cmd debugfs /usr/bin/time
	avail=$(df -Pk "$(dirname "$1")" | awk 'NR == 2 { print $4 }')
	# mke2fs and debugfs write some MiB of metadata; leave room
	[ "${avail:-0}" -ge $((1024 * 1024)) ] ||
		skip "less than 1 GiB free on the file system of $(dirname "$1")"
	truncate -s 256G "$1" 2>/dev/null ||
		skip "the file system of $(dirname "$1") has no sparse 256 GiB files"
}

# verify IMAGE, its peak resident size (KiB) in $rss, its output in $output.
verify_rss() {
	local st=0
	output=$(/usr/bin/time -f '%M' -o "$T/rss" "$XIPTOOL" verify "$1") || st=$?
	rss=$(tail -1 "$T/rss")
	echo "$output"
	echo "peak RSS ${rss} KiB"
	return $st
}

@test "a 256 GiB mke2fs image: clean in under 64 MiB; a freed block and a far inode are found" {
	sparse_256g "$S/img"
	# inode tables of 76 KiB a group: holes, that verify skips
	mke2fs -F -q -t ext2 -b 4096 -N 600000 "$S/img"
	fsck_clean "$S/img"
	verify_rss "$S/img"
	[ "$rss" -lt "$LIMIT_KB" ]
	grep -q "^$S/img: clean: 0 problems" <<<"$output"

	# the root directory's block marked free
	blk=$(debugfs -R "bmap <2> 0" "$S/img" 2>/dev/null)
	[ "$blk" -gt 0 ]
	debugfs -w -R "freeb $blk" "$S/img" 2>/dev/null
	# an inode far out, in an inode table that was a hole: in use (one
	# link, a block in its group) while both bitmaps say free
	ipg=$(dumpe2fs_field "$S/img" "Inodes per group")
	bpg=$(dumpe2fs_field "$S/img" "Blocks per group")
	ino=$((1500 * ipg + 3))
	far=$((1500 * bpg + 30000))
	debugfs -w -f - "$S/img" >/dev/null 2>&1 <<-EOF
		sif <$ino> mode 0100644
		sif <$ino> links_count 1
		sif <$ino> size 4096
		sif <$ino> blocks 8
		sif <$ino> block[0] $far
	EOF
	run e2fsck -fn "$S/img"
	[ "$status" -ne 0 ]
	run verify_rss "$S/img"
	[ "$status" -eq 1 ]
	grep -q "group 0: block $blk in use but marked free in the bitmap" <<<"$output"
	grep -q "group 1500: inode $ino in use but marked free in the bitmap" <<<"$output"
	grep -q "group 1500: block $far in use but marked free in the bitmap" <<<"$output"
	grep -q "^inode $ino: in use (1 links) but in no directory" <<<"$output"
	[ "$(tail -1 "$T/rss")" -lt "$LIMIT_KB" ]
}

@test "a 256 GiB xiptool mkfs image of one file: clean in under 64 MiB; a block pointer out of range is found" {
	sparse_256g "$S/img"
	rm "$S/img"
	mkdir "$T/src"
	echo hello > "$T/src/f"
	xiptool mkfs -s 256G -d "$T/src" "$S/img" >/dev/null
	fsck_clean "$S/img"
	verify_rss "$S/img"
	[ "$rss" -lt "$LIMIT_KB" ]
	grep -q "^$S/img: clean: 0 problems" <<<"$output"

	debugfs -w -R "sif /f block[0] 4000000000" "$S/img" 2>/dev/null
	run e2fsck -fn "$S/img"
	[ "$status" -ne 0 ]
	run verify_rss "$S/img"
	[ "$status" -eq 1 ]
	grep -q "inode 12 (/f): block 4000000000 beyond end of image" <<<"$output"
	[ "$(tail -1 "$T/rss")" -lt "$LIMIT_KB" ]
}

#!/usr/bin/env bats
# Hostile and damaged images: every command that reads an image must fail
# cleanly (exit 3, one "xiptool CMD: OBJECT: REASON" line) or succeed, and
# stay within bounded memory and time, on a 4 GiB sparse image whose
# superblock lies.  No sanitizer report is allowed (run under
# --enable-sanitizers in CI).

load ../lib/common

# Bounds of one command: resident memory (the image's pages it touches
# included; verify keeps a few bytes per block and inode of the groups in
# use) and wall clock.  "Gigabytes" or "minutes" fail.
MAX_RSS_KB=$((512 * 1024))
MAX_SECONDS=20

setup() {
	common_setup
	require_cmd python3 mke2fs
}

# sb_set IMAGE FIELD=VALUE...: overwrite superblock fields (little-endian,
# offsets of struct ext2_super_block) of IMAGE
sb_set() {
	python3 - "$@" <<'PY'
import struct, sys
FIELDS = {
    "inodes_count": (0, "I"), "blocks_count": (4, "I"),
    "r_blocks_count": (8, "I"), "free_blocks_count": (12, "I"),
    "free_inodes_count": (16, "I"), "first_data_block": (20, "I"),
    "log_block_size": (24, "I"), "log_cluster_size": (28, "I"),
    "blocks_per_group": (32, "I"), "clusters_per_group": (36, "I"),
    "inodes_per_group": (40, "I"), "magic": (56, "H"), "state": (58, "H"),
    "rev_level": (76, "I"), "first_ino": (84, "I"), "inode_size": (88, "H"),
    "feature_compat": (92, "I"), "feature_incompat": (96, "I"),
    "feature_ro_compat": (100, "I"), "reserved_gdt_blocks": (206, "H"),
    "desc_size": (254, "H"), "first_meta_bg": (260, "I"),
    "blocks_count_hi": (336, "I"), "log_groups_per_flex": (372, "B"),
}
path = sys.argv[1]
with open(path, "r+b") as f:
    for arg in sys.argv[2:]:
        name, value = arg.split("=")
        off, fmt = FIELDS[name]
        f.seek(1024 + off)
        f.write(struct.pack("<" + fmt, int(value, 0)))
PY
}

# gd_set IMAGE GROUP FIELD=VALUE...: overwrite a 32-byte group descriptor
# (4 KiB blocks: the table starts at block 1)
gd_set() {
	python3 - "$@" <<'PY'
import struct, sys
FIELDS = {"block_bitmap": (0, "I"), "inode_bitmap": (4, "I"),
          "inode_table": (8, "I"), "free_blocks": (12, "H"),
          "free_inodes": (14, "H"), "used_dirs": (16, "H")}
path, group = sys.argv[1], int(sys.argv[2])
with open(path, "r+b") as f:
    for arg in sys.argv[3:]:
        name, value = arg.split("=")
        off, fmt = FIELDS[name]
        f.seek(4096 + 32 * group + off)
        f.write(struct.pack("<" + fmt, int(value, 0)))
PY
}

# A 4 GiB sparse ext2 image with 4 KiB blocks (32 groups) and a small tree.
big_image() {
	mkdir -p "$T/tree/dir"
	printf 'hello\n' > "$T/tree/hello"
	printf 'x\n' > "$T/tree/dir/x"
	truncate -s 4G "$T/big.img"
	mke2fs -q -F -t ext2 -b 4096 -N 1024 -m 0 -d "$T/tree" "$T/big.img"
}

# fill_ptrs IMAGE BLOCK VALUE: fill 4 KiB block BLOCK with the 32-bit
# block number VALUE (an indirect block whose every entry is VALUE)
fill_ptrs() {
	python3 - "$@" <<'PY'
import struct, sys
path, blk, val = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
with open(path, "r+b") as f:
    f.seek(blk * 4096)
    f.write(struct.pack("<I", val) * 1024)
PY
}

# loop_map IMAGE PATH DATA_BLOCK FREE_BLOCK: give PATH single, double and
# triple indirect blocks (at FREE_BLOCK..+2) whose every entry leads to
# DATA_BLOCK, so that each of its 2^30 file blocks maps to the same block
loop_map() {
	local img=$1 path=$2 data=$3 b=$4

	fill_ptrs "$img" "$b" "$data"
	fill_ptrs "$img" $((b + 1)) "$b"
	fill_ptrs "$img" $((b + 2)) $((b + 1))
	debugfs -w -R "sif $path block[IND] $b" "$img" 2>/dev/null
	debugfs -w -R "sif $path block[DIND] $((b + 1))" "$img" 2>/dev/null
	debugfs -w -R "sif $path block[TIND] $((b + 2))" "$img" 2>/dev/null
}

# The first block of PATH in IMAGE
first_block() {
	debugfs -R "bmap $2 0" "$1" 2>/dev/null
}

asan_build() {
	# grep reads all: an early exit could kill ldd's writer with SIGPIPE
	ldd "$XIPTOOL" 2>/dev/null | grep 'libasan\|libubsan' >/dev/null
}

# bounded CMD...: run a command with the memory and time bounds; sets
# $status, $output (stderr included), $rss_kb and $secs.  Without ASan the
# heap is also capped (RLIMIT_DATA), so a huge allocation fails early.
bounded() {
	local limit=()

	asan_build || limit=(prlimit --data=$((MAX_RSS_KB * 1024)) --)
	run timeout "$MAX_SECONDS" /usr/bin/time -f '%M %e' -o "$T/usage" \
		"${limit[@]}" "$@"
	read -r rss_kb secs < <(tail -n 1 "$T/usage")
	echo "# $* -> exit $status, ${rss_kb} KiB, ${secs} s" >&3
}

# The command failed or succeeded cleanly within the bounds.
assert_clean() {
	local allowed=${1:-"0 3"}

	[ "$status" -ne 124 ] || { echo "timed out after ${MAX_SECONDS}s"; return 1; }
	[[ " $allowed " == *" $status "* ]] || { echo "exit $status: ${output:0:2000}"; return 1; }
	[ "$rss_kb" -lt "$MAX_RSS_KB" ] || { echo "resident ${rss_kb} KiB"; return 1; }
	[[ "$output" != *AddressSanitizer* && "$output" != *"runtime error"* &&
	   "$output" != *LeakSanitizer* ]] || { echo "${output:0:2000}"; return 1; }
	if [ "$status" -eq 3 ]; then
		[[ "$output" == "xiptool "*": "*": "* ]] || { echo "bad message: $output"; return 1; }
	fi
}

# Every read-only command that takes an image, on IMAGE.
each_reader() {
	local img=$1

	bounded "$XIPTOOL" info "$img"
	assert_clean
	bounded "$XIPTOOL" info --json "$img"
	assert_clean
	bounded "$XIPTOOL" verify "$img"
	assert_clean "0 1 3"
	bounded "$XIPTOOL" ls -l -a "$img" /
	assert_clean
	bounded "$XIPTOOL" ls -l "$img" /dir
	assert_clean
	bounded "$XIPTOOL" stat "$img" /hello
	assert_clean
	bounded "$XIPTOOL" read -o "$T/out" "$img" /hello
	assert_clean
}

@test "a valid 4 GiB sparse image: info is fast and small" {
	big_image
	bounded "$XIPTOOL" info "$T/big.img"
	assert_clean 0
	[[ "$output" == *"Size:"*4294967296* ]]
	each_reader "$T/big.img"
}

@test "4 GiB image, superblock claims the most inodes a group can hold" {
	big_image
	# 32768 inodes per group (8 x block size), consistent count
	sb_set "$T/big.img" inodes_per_group=32768 inodes_count=$((32768 * 32)) \
		free_inodes_count=$((32768 * 32 - 20))
	each_reader "$T/big.img"
}

@test "4 GiB image, largest inodes and the most per group: inode tables cover the image" {
	big_image
	sb_set "$T/big.img" inodes_per_group=32768 inodes_count=$((32768 * 32)) \
		inode_size=4096
	each_reader "$T/big.img"
}

@test "4 GiB image, 64 KiB blocks claimed" {
	big_image
	sb_set "$T/big.img" log_block_size=6 blocks_count=65536 \
		blocks_per_group=524288 inodes_per_group=1024 inodes_count=1024
	each_reader "$T/big.img"
}

@test "4 GiB image, more blocks than the image holds" {
	big_image
	sb_set "$T/big.img" blocks_count=0xffffffff
	bounded "$XIPTOOL" info "$T/big.img"
	assert_clean 3
	[[ "$output" == *"blocks"* ]]
	sb_set "$T/big.img" blocks_count=$((1 << 20)) feature_incompat=0x82 \
		blocks_count_hi=0xffff desc_size=64
	bounded "$XIPTOOL" info "$T/big.img"
	assert_clean 3
}

@test "4 GiB image, smallest groups: 8 blocks per group, 131072 groups" {
	big_image
	sb_set "$T/big.img" blocks_per_group=8 inodes_per_group=8 \
		inodes_count=$((8 * 131072))
	each_reader "$T/big.img"
}

@test "4 GiB image, meta_bg with a huge first_meta_bg and reserved GDT blocks" {
	big_image
	sb_set "$T/big.img" feature_incompat=0x12 first_meta_bg=0xffffffff
	each_reader "$T/big.img"
	big_image
	sb_set "$T/big.img" reserved_gdt_blocks=0xffff
	each_reader "$T/big.img"
}

@test "4 GiB image, group descriptors point past the end and into the superblock" {
	big_image
	gd_set "$T/big.img" 0 inode_table=0xfffffff0 block_bitmap=0 \
		inode_bitmap=0xffffffff
	gd_set "$T/big.img" 31 inode_table=1
	each_reader "$T/big.img"
}

# big_image with file $1's block map leading 40000 times back to its first
# block, and a size of ($2 << 32) + 0xfffff000 bytes.
big_image_looped() {
	require_cmd debugfs
	big_image
	loop_map "$T/big.img" "$1" "$(first_block "$T/big.img" "$1")" 40000
	debugfs -w -R "sif $1 size 0xfffff000" "$T/big.img" 2>/dev/null
	debugfs -w -R "sif $1 size_hi $2" "$T/big.img" 2>/dev/null
}

@test "4 GiB image, a directory whose block map leads back to one block" {
	big_image_looped /dir 0xffff
	bounded "$XIPTOOL" ls "$T/big.img" /dir
	assert_clean 3
	[[ "$output" == *"mapped twice"* ]]
	# a name in the first block is still found, a missing one is not
	bounded "$XIPTOOL" stat "$T/big.img" /dir/x
	assert_clean 0
	bounded "$XIPTOOL" stat "$T/big.img" /dir/missing
	assert_clean 3
	each_reader "$T/big.img"
}

@test "4 GiB image, a 4 TiB file whose indirect blocks all lead to one block" {
	big_image_looped /hello 0x3ff
	bounded "$XIPTOOL" stat "$T/big.img" /hello
	assert_clean 3
	[[ "$output" == *"maps more blocks than the image holds"* ]]
	bounded "$XIPTOOL" ls -l "$T/big.img" /
	assert_clean "0 3"
	# reading is bounded by what is asked for
	bounded "$XIPTOOL" read --length 16M -o "$T/out" "$T/big.img" /hello
	assert_clean 0
	[ "$(stat -c %s "$T/out")" -eq $((16 << 20)) ]
}

@test "damaged superblock fields one at a time on a small image" {
	mkdir -p "$T/tree"; printf 'hello\n' > "$T/tree/hello"
	mkimg "$T/base.img" 1M "$T/tree" -N 64
	for v in log_block_size=7 log_block_size=0xffffffff blocks_per_group=0 \
		 blocks_per_group=7 inodes_per_group=0 inodes_count=0 \
		 first_data_block=5 rev_level=2 inode_size=0 inode_size=100 \
		 inode_size=8192 first_ino=0 first_ino=0xffffffff \
		 feature_incompat=0xffffffff feature_ro_compat=0xffffffff \
		 desc_size=0xffff log_groups_per_flex=31; do
		cp "$T/base.img" "$T/img"
		sb_set "$T/img" "$v"
		echo "# $v" >&3
		each_reader "$T/img"
	done
}

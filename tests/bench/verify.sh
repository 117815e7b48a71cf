#!/usr/bin/env bash
# xiptool verify vs e2fsck -fn on the same large image, built with mke2fs -d
# from a big tree (default /usr/share; XIP_BENCH_VERIFY_SRC=DIR to change).
# Both walk every inode, block map and directory and compare the bitmaps.
# Target from the issue: verify no slower than e2fsck (ratio <= 1.0).
set -euo pipefail
. "$(dirname "$0")/common.bash"
src=${XIP_BENCH_VERIFY_SRC:-/usr/share}
bench_scratch

kib=$(du -sk "$src" 2>/dev/null | cut -f1)
names=$(find "$src" 2>/dev/null | wc -l)
size=$(( (kib * 13 / 10 + names * 4 + 65536) / 1024 ))M
echo "image of $size from $src ($((kib / 1024)) MiB, $names names)"
img=$B/verify.img
mke2fs -q -F -t ext2 -b 4096 -d "$src" "$img" "$size" >/dev/null 2>&1
e2fsck -fn "$img"
# clean, apart from files mke2fs -d could not lay out contiguously
"$XIPTOOL" verify "$img" | tail -1 || [ "$?" -eq 1 ]

# verify exits 1 on the non-contiguous ELF files mke2fs -d writes: time it
# through a wrapper that accepts 0 and 1
verify() { "$XIPTOOL" verify "$img" >/dev/null || [ "$?" -eq 1 ]; }
x=$(bench_time verify)
p=$(bench_time e2fsck -fn "$img")
bench_report "verify of a $size image from $src [s] vs e2fsck -fn" \
	"$(bench_fmt "$x")" "$(bench_fmt "$p")" "<=1.0"

#!/usr/bin/env bash
# xiptool verify vs e2fsck -fn on the same large image, built with mke2fs -d
# from a big tree (default /usr/share; XIP_BENCH_VERIFY_SRC=DIR to change).
# Both walk every inode, block map and directory and compare the bitmaps.
# Target: verify no slower than e2fsck (ratio <= 1.0).
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

# the same tree laid out by xiptool mkfs (every file contiguous: clean)
ximg=$B/verify-xip.img
"$XIPTOOL" mkfs -d "$src" "$ximg" | tail -1
x=$(bench_time "$XIPTOOL" verify "$ximg")
p=$(bench_time e2fsck -fn "$ximg")
bench_report "verify of an xiptool mkfs image of $src [s] vs e2fsck -fn" \
	"$(bench_fmt "$x")" "$(bench_fmt "$p")" "<=1.0"
rm -f "$ximg"

# 256 GiB sparse images that hold almost nothing, as mke2fs and xiptool
# mkfs make them: verify's time and memory follow what is in use, not the
# size.  Targets: time <= e2fsck -fn, peak RSS <= 64 MB
# (the RSS target is that bound divided by e2fsck's own peak).
big_mke2fs=$B/big-mke2fs.img
big_mkfs=$B/big-mkfs.img
truncate -s 256G "$big_mke2fs"
mke2fs -F -q -t ext2 -b 4096 -N 200000 "$big_mke2fs"
mkdir -p "$B/one"
echo hello > "$B/one/f"
"$XIPTOOL" mkfs -s 256G -d "$B/one" "$big_mkfs" >/dev/null

# peak resident set size of a command, in MB
peak_mb() {
	/usr/bin/time -f '%M' -o "$B/rss" "$@" >/dev/null 2>&1 || true
	awk '{ kb = $1 } END { printf "%.1f\n", kb / 1024 }' "$B/rss"
}

for kind in mke2fs mkfs; do
	img=$B/big-$kind.img
	"$XIPTOOL" verify "$img" | tail -2
	x=$(bench_time "$XIPTOOL" verify "$img")
	p=$(bench_time e2fsck -fn "$img")
	bench_report "verify of a 256 GiB nearly empty $kind image [s] vs e2fsck -fn" \
		"$(bench_fmt "$x")" "$(bench_fmt "$p")" "<=1.0"
	x=$(peak_mb "$XIPTOOL" verify "$img")
	p=$(peak_mb e2fsck -fn "$img")
	bench_report "peak RSS, verify of a 256 GiB nearly empty $kind image [MB] vs e2fsck -fn (target: <= 64 MB)" \
		"$x" "$p" "<=$(awk -v p="$p" 'BEGIN { printf "%.2f\n", 64 / p }')"
done

#!/usr/bin/env bash
# xiptool info vs dumpe2fs -h on the same 1 GiB image: the cost of opening
# an image on a segment (superblock, descriptors) against e2fsprogs reading
# the same header.  Target: at most 1.5 times dumpe2fs.
set -euo pipefail
. "$(dirname "$0")/common.bash"
BENCH_REPEAT=20
bench_scratch

img=$B/info.img
mke2fs -q -F -t ext2 -b 4096 "$img" 1G
"$XIPTOOL" info "$img"

x=$(bench_time "$XIPTOOL" info "$img")
p=$(bench_time dumpe2fs -h "$img")
bench_report "info of a 1 GiB image [ms] vs dumpe2fs -h" \
	"$(bench_fmt "$(awk -v s="$x" 'BEGIN { print s * 1000 }')" 2)" \
	"$(bench_fmt "$(awk -v s="$p" 'BEGIN { print s * 1000 }')" 2)" "<=1.5"

#!/bin/sh
# Benchmark: xiptool mkfs against mke2fs -d and genext2fs on one tree.
#
#   tests/bench/mkfs.sh [TREE]        (default /usr/share)
#
# Environment: XIPTOOL (default ./xiptool), RUNS (default 1; the best
# time of RUNS is kept), TMPDIR (where the images go).
#
# All three build the same tree with 4 KiB blocks into a new image file of
# the same size with the same inode count (the size xiptool computes, plus
# a tenth for the others' placement).  The tree is read once first, so
# every tool starts with the same warm cache, and each timing includes a
# final sync, as xiptool and mke2fs sync their image themselves.  Prints
# the seconds of each tool and the ratios to mke2fs (target: xiptool at
# most 0.5 of mke2fs).
set -eu
PATH=/usr/sbin:/sbin:$PATH
tree=${1:-/usr/share}
xiptool=${XIPTOOL:-./xiptool}
runs=${RUNS:-1}
work=$(mktemp -d "${TMPDIR:-/var/tmp}/xipbench.XXXXXX")
trap 'rm -rf "$work"' EXIT INT TERM

now() { date +%s.%N; }

# time_cmd NAME CMD...: best wall time of $runs runs, image removed between
time_cmd() {
	name=$1
	shift
	best=
	i=0
	while [ "$i" -lt "$runs" ]; do
		rm -f "$work/$name.img"
		sync
		t0=$(now)
		"$@" >"$work/$name.log" 2>&1 || {
			echo "mkfs bench: $name failed:" >&2
			tail -5 "$work/$name.log" >&2
			return 1
		}
		sync
		t1=$(now)
		t=$(echo "$t1 - $t0" | bc -l)
		if [ -z "$best" ] || [ "$(echo "$t < $best" | bc -l)" -eq 1 ]; then
			best=$t
		fi
		i=$((i + 1))
	done
	printf '%s\n' "$best"
}

command -v bc >/dev/null || { echo "mkfs bench: needs bc" >&2; exit 1; }
[ -d "$tree" ] || { echo "mkfs bench: $tree: not a directory" >&2; exit 1; }

echo "tree: $tree ($(du -sh "$tree" 2>/dev/null | cut -f1), $(find "$tree" | wc -l) names)"
# warm the cache, and learn the size and inode count xiptool picks
tar cf - "$tree" 2>/dev/null | cat >/dev/null
"$xiptool" mkfs -d "$tree" "$work/probe.img" >"$work/probe.log"
rm -f "$work/probe.img"
size=$(sed -n 's/.*), \([0-9]*\) bytes: .*/\1/p' "$work/probe.log")
inodes=$(sed -n 's/.* \([0-9]*\) inodes (.*/\1/p' "$work/probe.log")
blocks=$((size / 4096 + size / 4096 / 10))
echo "image: $size bytes (others: $blocks blocks of 4096), $inodes inodes"

tx=$(time_cmd xiptool "$xiptool" mkfs -q --page-size 4096 -d "$tree" "$work/xiptool.img")
tm=$(time_cmd mke2fs mke2fs -q -F -t ext2 -b 4096 -m 0 -N "$inodes" \
	-d "$tree" "$work/mke2fs.img" "$blocks")
if command -v genext2fs >/dev/null; then
	tg=$(time_cmd genext2fs genext2fs -B 4096 -b "$blocks" -N "$inodes" -z \
		-d "$tree" "$work/genext2fs.img")
else
	tg=
fi
printf '%-10s %8.2f s\n' "xiptool" "$tx" "mke2fs" "$tm"
[ -n "$tg" ] && printf '%-10s %8.2f s\n' "genext2fs" "$tg"
printf 'ratio xiptool/mke2fs:    %.3f (target <= 0.5)\n' "$(echo "$tx / $tm" | bc -l)"
[ -n "$tg" ] && printf 'ratio xiptool/genext2fs: %.3f\n' "$(echo "$tx / $tg" | bc -l)"
exit 0

#!/usr/bin/env bash
# xiptool mkfs vs mke2fs -t ext2 -b 4096 -d and genext2fs -B 4096 on one
# large tree (default /usr/share; another with an argument).  Target: at
# most half the time of mke2fs -d.
#
# And mkfs -d of that tree against tar -cf of it into a file on the same
# scratch directory (target: at most half as long again): both read every
# byte of the tree once and write it once.  Interleaved, best of
# MKFS_BENCH_TAR_ROUNDS (default 5), each ending with a sync.
# MKFS_BENCH_TAR_ONLY=1 measures only that.
#
# All three build the same tree into a new image on the scratch directory
# (tmpfs when possible), with the same inode count and, for the peers, the
# size xiptool computes plus a tenth for their own placement.  The tree is
# read once first so that every tool finds the same warm cache; each run
# ends with a sync.  One run each (best of MKFS_BENCH_REPEAT, default 1):
# mke2fs takes about a minute on /usr/share.
#
# First, what a large image of a small tree costs (target: at most twice
# mke2fs -d): both build a 256 GiB image of the same one-file tree, same
# block size, onto a new sparse file on the same disk file system
# (MKFS_SCALE_DIR, default $TMPDIR or /var/tmp: not tmpfs, where mke2fs
# would fill memory zeroing its inode tables), interleaved, best of 7, each
# ending with a sync.  MKFS_BENCH_SCALE_ONLY=1 measures only that.
set -euo pipefail
. "$(dirname "$0")/common.bash"
BENCH_REPEAT=${MKFS_BENCH_REPEAT:-1}
tree=${1:-/usr/share}
[ -d "$tree" ] || { echo "mkfs bench: $tree: not a directory" >&2; exit 1; }
bench_scratch
tar_only=${MKFS_BENCH_TAR_ONLY:-0}

# mkfs --tar of one directory of many members against mkfs -d of the same
# tree (target: at most half as long again): finding a name in the
# directory being filled must not cost a walk of the names already there.
# MKFS_BENCH_WIDE files of a few bytes (default 131072) in one directory,
# archived with GNU tar; both build into tmpfs, best of 3 each
# (MKFS_BENCH_WIDE_REPEAT).  MKFS_BENCH_WIDE_ONLY=1 measures only that.
wide=${MKFS_BENCH_WIDE:-131072}
if [ "$tar_only" != 1 ]; then
mkdir -p "$B/wide/d"
/usr/bin/python3 - "$B/wide/d" "$wide" <<'EOF2'
import os, sys
d, n = sys.argv[1], int(sys.argv[2])
for i in range(n):
    with open(os.path.join(d, "f%07d" % i), "w") as f:
        f.write("%d\n" % i)
EOF2
tar -C "$B/wide" -cf "$B/wide.tar" .
run_wide_tar() {
	rm -f "$B/wt.img"
	"$XIPTOOL" mkfs -q --page-size 4096 --tar "$B/wide.tar" "$B/wt.img"
}
run_wide_dir() {
	rm -f "$B/wd.img"
	"$XIPTOOL" mkfs -q --page-size 4096 -d "$B/wide" "$B/wd.img"
}
wt=$(BENCH_REPEAT=${MKFS_BENCH_WIDE_REPEAT:-3} bench_time run_wide_tar)
wd=$(BENCH_REPEAT=${MKFS_BENCH_WIDE_REPEAT:-3} bench_time run_wide_dir)
echo "$wide files in one directory: --tar $wt s, -d $wd s"
rm -rf "$B/wide" "$B/wide.tar" "$B/wt.img" "$B/wd.img"
bench_report "mkfs --tar of $wide files in one directory [s] vs mkfs -d" \
	"$(bench_fmt "$wt" 2)" "$(bench_fmt "$wd" 2)" "<=1.5"
[ "${MKFS_BENCH_WIDE_ONLY:-0}" = 1 ] && exit 0
fi

S=$(mktemp -d "${MKFS_SCALE_DIR:-${TMPDIR:-/var/tmp}}/xipscale.XXXXXX")
trap 'rm -rf "$S"; bench_cleanup' EXIT
mkdir "$S/src"
echo hello > "$S/src/f"
scale_xiptool() {
	rm -f "$S/x.img"
	"$XIPTOOL" mkfs -q -s 256G --page-size 4096 -d "$S/src" "$S/x.img" &&
		sync
}
scale_mke2fs() {
	rm -f "$S/m.img"
	mke2fs -q -F -t ext2 -b 4096 -d "$S/src" "$S/m.img" 256G && sync
}
if [ "$tar_only" = 1 ]; then
	:
elif truncate -s 256G "$S/probe" 2>/dev/null; then
	rm -f "$S/probe"
	read -r x m < <(bench_pair scale_xiptool scale_mke2fs)
	rm -f "$S/x.img"
	/usr/bin/time -f %M -o "$S/rss" "$XIPTOOL" mkfs -q -s 256G \
		--page-size 4096 -d "$S/src" "$S/x.img" >/dev/null
	echo "256 GiB of one file: xiptool $x s (peak RSS $(cat "$S/rss") KiB," \
	     "allocated $(du -k "$S/x.img" | cut -f1) KiB), mke2fs $m s"
	rm -f "$S/x.img" "$S/m.img"
	bench_report "mkfs -s 256G of a small tree [s] vs mke2fs -d" \
		"$(bench_fmt "$x" 3)" "$(bench_fmt "$m" 3)" "<=2"
else
	echo "mkfs bench: $S cannot hold a sparse file of 256 GiB: skipped"
fi
[ "${MKFS_BENCH_SCALE_ONLY:-0}" = 1 ] && exit 0

echo "tree: $tree ($(du -sh "$tree" 2>/dev/null | cut -f1), $(find "$tree" | wc -l) names)"
tar cf - "$tree" 2>/dev/null | cat >/dev/null

run_mkfs_tree() {
	rm -f "$B/x.img"
	"$XIPTOOL" mkfs -q --page-size 4096 -d "$tree" "$B/x.img" && sync
}
run_tar_tree() {
	rm -f "$B/t.tar"
	tar -cf - "$tree" 2>/dev/null >"$B/t.tar" && sync
}
read -r x t < <(BENCH_ROUNDS=${MKFS_BENCH_TAR_ROUNDS:-5} \
	bench_pair run_mkfs_tree run_tar_tree)
rm -f "$B/x.img" "$B/t.tar"
echo "mkfs -d $x s, tar -cf $t s"
bench_report "mkfs -d of $tree [s] vs tar -cf" "$(bench_fmt "$x" 2)" \
	"$(bench_fmt "$t" 2)" "<=1.5"
[ "$tar_only" = 1 ] && exit 0

"$XIPTOOL" mkfs --page-size 4096 -d "$tree" "$B/probe.img" | tee "$B/probe.log"
rm -f "$B/probe.img"
size=$(sed -n 's/.*), \([0-9]*\) bytes: .*/\1/p' "$B/probe.log")
inodes=$(sed -n 's/.* \([0-9]*\) inodes (.*/\1/p' "$B/probe.log")
blocks=$((size / 4096 + size / 4096 / 10))
echo "image: $size bytes; peers: $blocks blocks of 4096, $inodes inodes"

run_xiptool() {
	rm -f "$B/x.img"
	"$XIPTOOL" mkfs -q --page-size 4096 -d "$tree" "$B/x.img" && sync
}
run_mke2fs() {
	rm -f "$B/m.img"
	mke2fs -q -F -t ext2 -b 4096 -m 0 -N "$inodes" -d "$tree" "$B/m.img" \
		"$blocks" && sync
}
run_genext2fs() {
	rm -f "$B/g.img"
	genext2fs -B 4096 -b "$blocks" -N "$inodes" -z -d "$tree" "$B/g.img" &&
		sync
}

x=$(bench_time run_xiptool)
m=$(bench_time run_mke2fs)
echo "xiptool $x s, mke2fs $m s"
bench_report "mkfs of $tree [s] vs mke2fs -d" "$(bench_fmt "$x" 2)" \
	"$(bench_fmt "$m" 2)" "<=0.5"
if command -v genext2fs >/dev/null; then
	g=$(bench_time run_genext2fs)
	echo "genext2fs $g s"
	bench_report "mkfs of $tree [s] vs genext2fs" "$(bench_fmt "$x" 2)" \
		"$(bench_fmt "$g" 2)" "<=0.5"
fi

#!/usr/bin/env bash
# The engine against its peers on one file in an image on tmpfs
# (BENCH_SIZE, default 1G):
#   read:  xiptool read to a tmpfs file vs cp of the plain file
#          (target <= 1.05), vs debugfs dump, vs the kernel (loop mount,
#          cat; mount and unmount included so that its page cache is cold)
#          (target: faster, < 1);
#   write: xiptool write of the file into the image vs cp (target <= 1.2);
#   in-process: xip_file_read into a buffer vs memcpy of the same bytes
#          out of the segment, in MiB/s (target >= 0.9).
set -euo pipefail
. "$(dirname "$0")/common.bash"
bench_scratch

size=${BENCH_SIZE:-1G}
mkdir "$B/tree" "$B/mnt"
head -c "$size" /dev/urandom > "$B/tree/big"
bytes=$(stat -c %s "$B/tree/big")
mb=$((bytes / 1048576))
img_mb=$((2 * mb + mb / 4 + 64))	# room for the copy written below
mke2fs -q -F -t ext2 -b 4096 -d "$B/tree" "$B/img.sparse" "${img_mb}M"
# fully backed, like an attached segment (a sparse tmpfs file would make
# the kernel allocate and zero a page on each first touch of a free block)
cp --sparse=never "$B/img.sparse" "$B/img.orig"
rm -f "$B/img.sparse"
cp "$B/img.orig" "$B/img"
"$XIPTOOL" stat "$B/img" /big | grep -E 'Size|Runs|Contiguous'

# ---- read ----------------------------------------------------------------
x=$(bench_time "$XIPTOOL" read -o "$B/out1" "$B/img" /big)
cmp "$B/out1" "$B/tree/big"
p=$(bench_time cp "$B/tree/big" "$B/out2")
d=$(bench_time debugfs -R "dump /big $B/out3" "$B/img")
cmp "$B/out3" "$B/tree/big"
kernel_cat() {
	mount -t ext2 -o loop,ro "$B/img" "$B/mnt"
	cat "$B/mnt/big" > "$B/out4"
	umount "$B/mnt"
}
k=$(bench_time kernel_cat)
cmp "$B/out4" "$B/tree/big"
rm -f "$B/out1" "$B/out2" "$B/out3" "$B/out4"
echo "read: xiptool $x s, cp $p s, debugfs $d s, kernel $k s"
bench_report "read ${size} file [s] vs cp" "$(bench_fmt "$x")" "$(bench_fmt "$p")" "<=1.05"
bench_report "read ${size} file [s] vs debugfs dump" "$(bench_fmt "$x")" "$(bench_fmt "$d")" "<1"
bench_report "read ${size} file [s] vs kernel loop mount + cat" "$(bench_fmt "$x")" "$(bench_fmt "$k")" "<1"

# ---- write ---------------------------------------------------------------
# each round starts from the image without the new file; only the copy
# itself is timed
best_w="" best_c=""
mv "$B/tree/big" "$B/src"
for ((i = 0; i < BENCH_REPEAT; i++)); do
	cp "$B/img.orig" "$B/img"
	t0=$(bench_now)
	"$XIPTOOL" write --create --input "$B/src" "$B/img" /new
	t1=$(bench_now)
	rm -f "$B/copy"
	t2=$(bench_now)
	cp "$B/src" "$B/copy"
	t3=$(bench_now)
	w=$((t1 - t0)) c=$((t3 - t2))
	if [ -z "$best_w" ] || [ "$w" -lt "$best_w" ]; then best_w=$w; fi
	if [ -z "$best_c" ] || [ "$c" -lt "$best_c" ]; then best_c=$c; fi
done
"$XIPTOOL" read "$B/img" /new | cmp - "$B/src"
e2fsck -fn "$B/img" >/dev/null
w=$(awk -v n="$best_w" 'BEGIN { printf "%.6f", n / 1e9 }')
c=$(awk -v n="$best_c" 'BEGIN { printf "%.6f", n / 1e9 }')
echo "write: xiptool $w s, cp $c s"
bench_report "write ${size} file [s] vs cp" "$(bench_fmt "$w")" "$(bench_fmt "$c")" "<=1.2"

# ---- in-process ----------------------------------------------------------
bench_cc "$B/engine-read" engine-read.c
read -r _ e _ m < <("$B/engine-read" "$B/img" /new 5)
echo "in-process: engine $e MiB/s, memcpy $m MiB/s"
bench_report "engine read into a buffer [MiB/s] vs memcpy" "$(bench_fmt "$e" 1)" "$(bench_fmt "$m" 1)" ">=0.9"

#!/usr/bin/env bash
# xiptool mkfs --oci of an image layout against what a user does without
# it: umoci unpack of the same image, then xiptool mkfs -d of its rootfs.
# Target from the issue: at most 0.7 of the time, since no unpacked copy
# is made.  The layout holds one image of two gzip layers made by umoci
# from a tree (default /usr/share/doc; another with an argument), the
# second deleting a tenth of the files and rewriting another tenth.  Both
# run on the scratch directory (tmpfs when possible), interleaved, best of
# OCI_BENCH_ROUNDS rounds (default 3).
#
# Then whiteouts: a base layer of OCI_BENCH_NAMES (default 20000) empty
# files in one directory, and a second layer that whites every one of
# them out, against one that gives each name again (the same lookups, no
# removal).  Target: at most 1.5 of the time, a removal costing about
# what a replacement does (no rebuild of the directory's name table).
set -euo pipefail
. "$(dirname "$0")/common.bash"
BENCH_ROUNDS=${OCI_BENCH_ROUNDS:-3}
tree=${1:-/usr/share/doc}
[ -d "$tree" ] || { echo "oci bench: $tree: not a directory" >&2; exit 1; }
command -v umoci >/dev/null || { echo "oci bench: umoci is not installed" >&2; exit 1; }
bench_scratch
trap bench_cleanup EXIT

umoci init --layout "$B/L"
umoci new --image "$B/L:t"
umoci unpack --image "$B/L:t" "$B/b" >/dev/null
cp -a "$tree/." "$B/b/rootfs/"
umoci repack --image "$B/L:t" "$B/b" >/dev/null
rm -rf "$B/b"
umoci unpack --image "$B/L:t" "$B/b" >/dev/null
find "$B/b/rootfs" -type f | awk 'NR % 10 == 0' | xargs -r rm -f
find "$B/b/rootfs" -type f | awk 'NR % 10 == 5' | while read -r f; do
	echo changed >> "$f"
done
umoci repack --image "$B/L:t" "$B/b" >/dev/null
rm -rf "$B/b"
du -sh "$B/L"

run_oci() {
	rm -f "$B/oci.img"
	"$XIPTOOL" mkfs -q --page-size 4096 --oci "$B/L:t" "$B/oci.img"
}
run_unpack() {
	rm -rf "$B/u" "$B/dir.img"
	umoci unpack --image "$B/L:t" "$B/u" >/dev/null
	"$XIPTOOL" mkfs -q --page-size 4096 -d "$B/u/rootfs" "$B/dir.img"
}
read -r to tu < <(bench_pair run_oci run_unpack)
echo "mkfs --oci $to s, umoci unpack + mkfs -d $tu s"
bench_report "mkfs --oci of 2 layers [s] vs umoci unpack + mkfs -d" \
	"$(bench_fmt "$to" 2)" "$(bench_fmt "$tu" 2)" "<=0.7"

names=${OCI_BENCH_NAMES:-20000}
python3 - "$B" "$names" <<'EOF'
import io, sys, tarfile
b, n = sys.argv[1], int(sys.argv[2])
def layer(path, names):
    with tarfile.open(path, "w") as t:
        for name in names:
            i = tarfile.TarInfo(name)
            i.mtime = 1000000000
            t.addfile(i, io.BytesIO(b""))
layer(b + "/base.tar", ["d/f%06d" % k for k in range(n)])
layer(b + "/wh.tar", ["d/.wh.f%06d" % k for k in range(n)])
layer(b + "/again.tar", ["d/f%06d" % k for k in range(n)])
EOF
python3 "$TOP_SRCDIR/tests/lib/mkoci.py" "$B/W" "$B/base.tar" "$B/wh.tar"
python3 "$TOP_SRCDIR/tests/lib/mkoci.py" "$B/A" "$B/base.tar" "$B/again.tar"
run_wh() {
	rm -f "$B/wh.img"
	"$XIPTOOL" mkfs -q --page-size 4096 --oci "$B/W:t" "$B/wh.img"
}
run_again() {
	rm -f "$B/again.img"
	"$XIPTOOL" mkfs -q --page-size 4096 --oci "$B/A:t" "$B/again.img"
}
read -r tw ta < <(bench_pair run_wh run_again)
echo "mkfs --oci: $names whiteouts $tw s, $names names given again $ta s"
bench_report "mkfs --oci, a layer whiting out $names names [s] vs one giving them again" \
	"$(bench_fmt "$tw" 2)" "$(bench_fmt "$ta" 2)" "<=1.5"

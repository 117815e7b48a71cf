#!/usr/bin/env bash
# xiptool mkfs --oci docker:// (an image pulled straight from a registry)
# against what a user does without it: skopeo copy docker:// oci:LAYOUT,
# then xiptool mkfs --oci LAYOUT.  Target: at most 0.7 of the time (no
# copy of the layers on disk, one pass over the network).  The registry
# is Debian's docker-registry on the loopback interface (plain HTTP,
# storage in the scratch directory); the image has two gzip layers made
# from a tree (default /usr/share/doc; another with an argument), the
# second deleting a tenth of the files and rewriting another tenth.  Best
# of OCI_BENCH_ROUNDS rounds (default 3), interleaved.
set -euo pipefail
export SOURCE_DATE_EPOCH=1000000000
. "$(dirname "$0")/common.bash"
BENCH_ROUNDS=${OCI_BENCH_ROUNDS:-3}
tree=${1:-/usr/share/doc}
[ -d "$tree" ] || { echo "registry bench: $tree: not a directory" >&2; exit 1; }
for c in umoci skopeo docker-registry; do
	command -v "$c" >/dev/null || { echo "registry bench: $c is not installed" >&2; exit 1; }
done
bench_scratch
reg_pid=
stop_registry() {
	[ -z "$reg_pid" ] || kill "$reg_pid" 2>/dev/null || true
	bench_cleanup
}
trap stop_registry EXIT

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

bench_registry
port=$reg_port
skopeo copy -q --dest-tls-verify=false "oci:$B/L:t" "docker://127.0.0.1:$port/bench/img:t"
ref="docker://127.0.0.1:$port/bench/img:t"

run_pull() {
	rm -f "$B/pull.img"
	"$XIPTOOL" mkfs -q --page-size 4096 --tls-verify=false --oci "$ref" \
		"$B/pull.img" 2>/dev/null
}
run_copy() {
	rm -rf "$B/C" "$B/copy.img"
	skopeo copy -q --src-tls-verify=false "$ref" "oci:$B/C:t"
	"$XIPTOOL" mkfs -q --page-size 4096 --oci "$B/C:t" "$B/copy.img"
}
read -r tp tc < <(bench_pair run_pull run_copy)
cmp "$B/pull.img" "$B/copy.img"
echo "mkfs --oci docker:// $tp s, skopeo copy + mkfs --oci LAYOUT $tc s"
bench_report "mkfs --oci docker:// of 2 layers [s] vs skopeo copy + mkfs --oci" \
	"$(bench_fmt "$tp" 2)" "$(bench_fmt "$tc" 2)" "<=0.7"

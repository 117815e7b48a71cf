#!/usr/bin/env bash
# NBD: nbdcopy of a 768 MiB export served by nbdkit-xiptool-plugin against
# nbdkit's own file plugin serving the same segment file (both read-only,
# unix sockets, to null:), and `xiptool attach nbd+unix://` (pull into a
# segment, record, detach) against nbdcopy of the same export into a file
# on tmpfs.  Targets: the plugin at most 1.1 times the file plugin; the
# pull at most 1.2 times nbdcopy.  BENCH_NBD_MB sets the size (default 768).
set -euo pipefail
. "$(dirname "$0")/common.bash"
bench_segments
mb=${BENCH_NBD_MB:-768}
plugin=${TOP_BUILDDIR:-$(dirname "$XIPTOOL")}/nbdkit-xiptool-plugin.so
name=nbdbench$$
for c in nbdkit nbdcopy; do
	command -v "$c" >/dev/null || { echo "nbd.sh: $c is not installed" >&2; exit 1; }
done
[ -f "$plugin" ] || { echo "nbd.sh: $plugin was not built" >&2; exit 1; }

mkdir "$B/tree"
head -c $((mb * 7 / 8))M /dev/urandom > "$B/tree/data"
mke2fs -q -F -t ext2 -b 4096 -d "$B/tree" "$B/img" "${mb}M"
rm -rf "$B/tree"
"$XIPTOOL" attach -n "$name" "$B/img" >/dev/null
seg=$("$XIPTOOL" list --noheadings -r -o PATH "$name")

pids=()
stop_servers() {
	local p
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	"$XIPTOOL" detach --all --force >/dev/null 2>&1 || true
	bench_cleanup
}
trap stop_servers EXIT
serve() {
	local sock=$1
	shift
	nbdkit -f -U "$sock" --pidfile "$sock.pid" "$@" </dev/null >"$sock.log" 2>&1 &
	pids+=($!)
	for _ in $(seq 200); do [ -s "$sock.pid" ] && return 0; sleep 0.05; done
	cat "$sock.log" >&2
	return 1
}
serve "$B/x.sock" "$plugin" image="@$name" readonly=true
serve "$B/f.sock" -r file "$seg"
xuri="nbd+unix:///?socket=$B/x.sock"
furi="nbd+unix:///?socket=$B/f.sock"

copy_xiptool() { nbdcopy "$xuri" null:; }
copy_file() { nbdcopy "$furi" null:; }
BENCH_ROUNDS=${BENCH_ROUNDS:-5}
read -r x p < <(bench_pair copy_xiptool copy_file)
bench_report "nbdcopy of a ${mb} MiB export [s] vs nbdkit file plugin" \
	"$(bench_fmt "$x" 3)" "$(bench_fmt "$p" 3)" "<=1.1"

pull_xiptool() { "$XIPTOOL" attach -n "p$name" "$xuri" && "$XIPTOOL" detach "p$name"; }
pull_nbdcopy() { nbdcopy "$xuri" "$B/copy" && rm "$B/copy"; }
read -r x p < <(bench_pair pull_xiptool pull_nbdcopy)
bench_report "attach nbd+unix:// ${mb} MiB (+detach) [s] vs nbdcopy to tmpfs" \
	"$(bench_fmt "$x" 3)" "$(bench_fmt "$p" 3)" "<=1.2"

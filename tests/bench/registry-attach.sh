#!/usr/bin/env bash
# xiptool attach docker:// (an image pushed with xiptool push, streamed into
# a segment, hashed as it arrives and checked against its digest, then
# recorded; detached after) against curl -o of the same blob to tmpfs.
# Target: at most 1.2 of the time.  The registry is Debian's
# docker-registry on the loopback interface (plain HTTP, storage in the
# scratch directory); the image holds REGISTRY_ATTACH_MB MiB (default 512)
# of random data.  Best of BENCH_ROUNDS rounds (default 5), interleaved.
set -euo pipefail
. "$(dirname "$0")/common.bash"
BENCH_ROUNDS=${BENCH_ROUNDS:-5}
mb=${REGISTRY_ATTACH_MB:-512}
for c in docker-registry curl; do
	command -v "$c" >/dev/null || { echo "registry-attach bench: $c is not installed" >&2; exit 1; }
done
bench_segments
reg_pid=
stop_registry() {
	"$XIPTOOL" detach --all --force >/dev/null 2>&1 || true
	[ -z "$reg_pid" ] || kill "$reg_pid" 2>/dev/null || true
	bench_cleanup
}
trap stop_registry EXIT

mkdir -p "$B/tree"
head -c "$((mb * 1024 * 1024 - 8 * 1024 * 1024))" /dev/urandom > "$B/tree/data"
"$XIPTOOL" mkfs -q -d "$B/tree" "$B/img"
rm -rf "$B/tree"
size=$(stat -c %s "$B/img")

bench_registry
port=$reg_port
ref="docker://127.0.0.1:$port/bench/img:t"
"$XIPTOOL" push -q --tls-verify=false "$B/img" "$ref"
digest=sha256:$(sha256sum "$B/img" | cut -d' ' -f1)
rm -f "$B/img"
url="http://127.0.0.1:$port/v2/bench/img/blobs/$digest"

pull_xiptool() {
	"$XIPTOOL" attach -n pulled --tls-verify=false "$ref" &&
		"$XIPTOOL" detach pulled
}
pull_curl() {
	curl -sf -o "$B/blob" "$url" && rm -f "$B/blob"
}
read -r tx tc < <(bench_pair pull_xiptool pull_curl)
echo "attach docker:// $tx s, curl -o tmpfs $tc s ($size bytes)"
bench_report "attach docker:// ${mb} MiB (+detach) [s] vs curl -o to tmpfs" \
	"$(bench_fmt "$tx" 2)" "$(bench_fmt "$tc" 2)" "<=1.2"

#!/usr/bin/env bash
# attach --lazy: a 1 GiB image served by nbdkit's file plugin over
# nbd+unix:// behind its rate filter at 2 Gbit/s.  Time from the start of
# `attach --lazy` to the end of `exec @NAME /bin/busybox true` against the
# same with a full attach (target <= 0.1); time to complete the lazy fill
# against a full attach (target <= 1.1).  BENCH_LAZY_MB sets the size
# (default 1024), BENCH_LAZY_RATE the filter's rate (default 2G).
set -euo pipefail
. "$(dirname "$0")/common.bash"
bench_segments
export XIPTOOL_SHMDIR=$B/shm
mkdir "$B/shm"
mb=${BENCH_LAZY_MB:-1024}
rate=${BENCH_LAZY_RATE:-2G}
name=lazybench$$
for c in nbdkit busybox; do
	command -v "$c" >/dev/null || { echo "lazy.sh: $c is not installed" >&2; exit 1; }
done

mkdir -p "$B/tree/bin"
cp "$(command -v busybox)" "$B/tree/bin/busybox"
head -c $((mb * 15 / 16))M /dev/urandom >"$B/tree/data"
"$XIPTOOL" mkfs -q -d "$B/tree" "$B/img" >/dev/null
rm -rf "$B/tree"

pid=
stop_server() {
	[ -z "$pid" ] || kill "$pid" 2>/dev/null || true
	"$XIPTOOL" detach --all --force >/dev/null 2>&1 || true
	bench_cleanup
}
trap stop_server EXIT
nbdkit -f -U "$B/a.sock" --pidfile "$B/a.pid" --filter=rate file "$B/img" \
	rate="$rate" </dev/null >"$B/a.log" 2>&1 &
pid=$!
for _ in $(seq 200); do [ -s "$B/a.pid" ] && break; sleep 0.05; done
[ -s "$B/a.pid" ] || { cat "$B/a.log" >&2; exit 1; }
uri="nbd+unix:///?socket=$B/a.sock"

first_lazy() {
	"$XIPTOOL" attach --lazy -n "l$name" "$uri" &&
		"$XIPTOOL" exec "@l$name" /bin/busybox true &&
		"$XIPTOOL" detach "l$name"
}
first_full() {
	"$XIPTOOL" attach -n "f$name" "$uri" &&
		"$XIPTOOL" exec "@f$name" /bin/busybox true &&
		"$XIPTOOL" detach "f$name"
}
# info waits for the whole fill of a lazy segment
fill_lazy() {
	"$XIPTOOL" attach --lazy -n "l$name" "$uri" &&
		"$XIPTOOL" info "@l$name" >/dev/null &&
		"$XIPTOOL" detach "l$name"
}
fill_full() {
	"$XIPTOOL" attach -n "f$name" "$uri" &&
		"$XIPTOOL" info "@f$name" >/dev/null &&
		"$XIPTOOL" detach "f$name"
}
BENCH_ROUNDS=${BENCH_ROUNDS:-3}
read -r l f < <(bench_pair first_lazy first_full)
bench_report "attach --lazy to the end of exec busybox true, ${mb} MiB at $rate [s] vs full attach" \
	"$(bench_fmt "$l" 3)" "$(bench_fmt "$f" 3)" "<=0.1"
read -r l f < <(bench_pair fill_lazy fill_full)
bench_report "attach --lazy to the fill complete, ${mb} MiB at $rate [s] vs full attach" \
	"$(bench_fmt "$l" 3)" "$(bench_fmt "$f" 3)" "<=1.1"

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
	if [ -n "$pid" ] && ! kill "$pid" 2>/dev/null; then
		echo "lazy.sh: nbdkit ended early:" >&2
		cat "$B/a.log" >&2
	fi
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

# One lazy round: the first exec's time, then the fill's (info waits for
# the whole fill); the filler is never stopped mid-fill (nbdkit 1.32
# aborts on a client that goes with reads in flight behind the rate
# filter).  One full round: the attach's time, then the exec's.
ns() { bench_now; }
best() { if [ -z "$1" ] || [ "$2" -lt "$1" ]; then echo "$2"; else echo "$1"; fi; }
lf= ll= ff= fl=
for ((r = 0; r < ${BENCH_ROUNDS:-3}; r++)); do
	t0=$(ns)
	"$XIPTOOL" attach --lazy -n "l$name" "$uri" >/dev/null
	"$XIPTOOL" exec "@l$name" /bin/busybox true
	t1=$(ns)
	"$XIPTOOL" info "@l$name" >/dev/null
	t2=$(ns)
	"$XIPTOOL" detach "l$name"
	lf=$(best "$lf" $((t1 - t0)))
	ll=$(best "$ll" $((t2 - t0)))
	t0=$(ns)
	"$XIPTOOL" attach -n "f$name" "$uri" >/dev/null
	t1=$(ns)
	"$XIPTOOL" exec "@f$name" /bin/busybox true
	t2=$(ns)
	"$XIPTOOL" detach "f$name"
	ff=$(best "$ff" $((t2 - t0)))
	fl=$(best "$fl" $((t1 - t0)))
done
s() { awk -v n="$1" 'BEGIN { printf "%.3f\n", n / 1e9 }'; }
bench_report "attach --lazy to the end of exec busybox true, ${mb} MiB at $rate [s] vs full attach" \
	"$(s "$lf")" "$(s "$ff")" "<=0.1"
bench_report "attach --lazy to the fill complete, ${mb} MiB at $rate [s] vs full attach" \
	"$(s "$ll")" "$(s "$fl")" "<=1.1"

# Helpers of the benchmark scripts (tests/bench/*.sh).  Source with:
#   . "$(dirname "$0")/common.bash"
# See README.md in this directory for the BENCH line format.

: "${XIPTOOL:=${TOP_BUILDDIR:-$PWD}/xiptool}"
: "${TOP_SRCDIR:=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}"
: "${BENCH_REPEAT:=3}"
export XIPTOOL TOP_SRCDIR BENCH_REPEAT
PATH=/usr/sbin:/sbin:$PATH

# bench_scratch [DIR]: a scratch directory (on tmpfs when /dev/shm is
# writable, or below DIR), removed when the script exits.  Sets $B.
bench_scratch() {
	local base=${1:-}
	if [ -z "$base" ]; then
		if [ -d /dev/shm ] && [ -w /dev/shm ]; then
			base=/dev/shm
		else
			base=${TMPDIR:-/tmp}
		fi
	fi
	B=$(mktemp -d "$base/xipbench.XXXXXX")
	export B
	trap 'bench_cleanup' EXIT
}

# bench_segments: bench_scratch, with a registry of attached segments of
# the script's own in it ($XIPTOOL_RUNDIR).
bench_segments() {
	bench_scratch
	export XIPTOOL_RUNDIR=$B/run
}

# Unmount what a script left mounted below $B, then remove $B.
bench_cleanup() {
	local m
	[ -n "${B:-}" ] || return 0
	for m in $(awk -v b="$B" 'index($2, b) == 1 { print $2 }' /proc/mounts | sort -r); do
		umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || true
	done
	rm -rf "$B"
}

# bench_now: monotonic-enough wall clock in nanoseconds.
bench_now() {
	date +%s%N
}

# bench_time CMD [ARG...]: run CMD $BENCH_REPEAT times (output discarded)
# and print the best wall time in seconds.  A failing CMD fails the script.
bench_time() {
	local i t0 t1 best=""
	for ((i = 0; i < BENCH_REPEAT; i++)); do
		t0=$(bench_now)
		"$@" >/dev/null 2>&1 || {
			echo "bench: command failed: $*" >&2
			return 1
		}
		t1=$(bench_now)
		if [ -z "$best" ] || [ $((t1 - t0)) -lt "$best" ]; then
			best=$((t1 - t0))
		fi
	done
	awk -v ns="$best" 'BEGIN { printf "%.6f\n", ns / 1e9 }'
}

# bench_pair A B: time the commands (or shell functions) A and B, given
# without arguments, in $BENCH_ROUNDS interleaved rounds (default 7; A
# first in odd rounds, B first in even ones) and print "bestA bestB" in
# seconds.  For measures short enough that the machine drifts between two
# separate series; a failing command fails it.
bench_pair() {
	local a=$1 b=$2 r best_a="" best_b="" t0 t1 cmd first second
	for ((r = 0; r < ${BENCH_ROUNDS:-7}; r++)); do
		if ((r % 2)); then first=$b second=$a; else first=$a second=$b; fi
		for cmd in "$first" "$second"; do
			t0=$(bench_now)
			"$cmd" >/dev/null 2>&1 || {
				echo "bench: command failed: $cmd" >&2
				return 1
			}
			t1=$(bench_now)
			if [ "$cmd" = "$a" ]; then
				if [ -z "$best_a" ] || [ $((t1 - t0)) -lt "$best_a" ]; then
					best_a=$((t1 - t0))
				fi
			elif [ -z "$best_b" ] || [ $((t1 - t0)) -lt "$best_b" ]; then
				best_b=$((t1 - t0))
			fi
		done
	done
	awk -v a="$best_a" -v b="$best_b" 'BEGIN { printf "%.6f %.6f\n", a / 1e9, b / 1e9 }'
}

# bench_report MEASURE XIPTOOL PEER TARGET
# Print one BENCH line.  XIPTOOL and PEER are numbers in the unit the
# MEASURE names; the ratio is XIPTOOL / PEER; TARGET is a condition on the
# ratio: <=X, <X, >=X or >X.
bench_report() {
	local measure=$1 x=$2 p=$3 target=$4
	case $measure in
	*$'\t'*) echo "bench: tab in measure name: $measure" >&2; return 1 ;;
	esac
	awk -v m="$measure" -v x="$x" -v p="$p" -v t="$target" 'BEGIN {
		if (p + 0 == 0) { ratio = "-"; ok = "no" }
		else {
			r = x / p; ratio = sprintf("%.2f", r)
			op = t; sub(/[0-9.].*/, "", op); v = substr(t, length(op) + 1) + 0
			r = ratio + 0
			if (op == "<=") ok = r <= v
			else if (op == "<") ok = r < v
			else if (op == ">=") ok = r >= v
			else if (op == ">") ok = r > v
			else { print "bench: bad target: " t > "/dev/stderr"; exit 1 }
			ok = ok ? "yes" : "no"
		}
		printf "BENCH\t%s\t%s\t%s\t%s\t%s\t%s\n", m, x, p, ratio, t, ok
	}'
}

# bench_fmt NUMBER [DECIMALS]: a number rounded for the table.
bench_fmt() {
	awk -v n="$1" -v d="${2:-3}" 'BEGIN { printf "%.*f\n", d, n }'
}

# bench_cc OUT SRC: build the benchmark program tests/bench/SRC into OUT,
# as every script does (engine-read.c against this build's libxip.a, the
# others against the C library only)
bench_cc() {
	local cc=${CC:-cc} san
	case $2 in
	engine-read.c)
		# with the build's sanitizer flags, which libxip.a was built with
		san=$(sed -n 's/^SAN_LDFLAGS = //p' "$TOP_BUILDDIR/Makefile" 2>/dev/null || true)
		# shellcheck disable=SC2046,SC2086
		"$cc" -O2 -std=gnu11 -I"$TOP_SRCDIR/lib" -I"$TOP_BUILDDIR" $san \
			-o "$1" "$TOP_SRCDIR/tests/bench/$2" \
			"$TOP_BUILDDIR/libxip.a" $(pkg-config --cflags --libs ext2fs com_err blkid smartcols zlib)
		;;
	*)
		"$cc" -O2 -std=gnu11 -o "$1" "$TOP_SRCDIR/tests/bench/$2"
		;;
	esac
}

# bench_registry: Debian's docker-registry on a free port of 127.0.0.1
# (plain HTTP, its storage in $B/store), up and answering: $reg_port and
# $reg_pid (the caller kills it); fails when it does not answer in 10 s.
bench_registry() {
	reg_port=$(python3 -c 'import socket
s = socket.socket()
s.bind(("127.0.0.1", 0))
print(s.getsockname()[1])')
	cat > "$B/reg.yml" <<YML
version: 0.1
log: {level: error, accesslog: {disabled: true}}
storage: {filesystem: {rootdirectory: $B/store}}
http: {addr: "127.0.0.1:$reg_port", secret: bench}
YML
	docker-registry serve "$B/reg.yml" > "$B/reg.log" 2>&1 &
	reg_pid=$!
	for _ in $(seq 100); do
		curl -sf "http://127.0.0.1:$reg_port/v2/" >/dev/null && return 0
		sleep 0.1
	done
	echo "bench: docker-registry did not answer (see $B/reg.log)" >&2
	return 1
}

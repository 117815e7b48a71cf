#!/usr/bin/env bash
# xiptool exec: start-up time and memory of programs run from a segment.
#
# Latency (ms per run, best of $BENCH_ROUNDS interleaved rounds of
# EXEC_BENCH_RUNS runs each): `xiptool exec @seg /bin/busybox true` against the same busybox
# run natively (target from the issue: at most 1.5 times), extracted with
# debugfs and run, and run from a loop mount of the image (mount, run,
# umount each time).
#
# Memory: 8 concurrent `busybox sleep` from one segment against 8 from a
# loop mount of the same image.  Extra copies of text: the private pages
# of the text mappings (smaps) plus the page cache the program's file holds
# beside the segment (fincore of the mounted file; none for exec, whose
# text pages are the segment's).  Target: no extra copy.
set -euo pipefail
. "$(dirname "$0")/common.bash"
runs=${EXEC_BENCH_RUNS:-200}
[ -x /bin/busybox ] || { echo "exec bench: needs /bin/busybox (busybox-static)" >&2; exit 1; }
bench_scratch
seg=xipbench$$
mnt=$B/mnt

cleanup() {
	"$XIPTOOL" detach "$seg" >/dev/null 2>&1 || true
	bench_cleanup
}
trap cleanup EXIT

mkdir -p "$B/tree/bin" "$B/dump" "$mnt" "$B/native"
cp /bin/busybox "$B/tree/bin/busybox"
# a static program that does nothing: what a start costs beside the program
printf 'int main(void) { return 0; }\n' > "$B/nothing.c"
${CC:-cc} -O2 -static -o "$B/native/nothing" "$B/nothing.c"
cp "$B/native/nothing" "$B/tree/bin/nothing"
if "$XIPTOOL" mkfs -q --page-size 4096 -d "$B/tree" "$B/img" 2>/dev/null; then
	echo "image: xiptool mkfs"
else
	mke2fs -q -F -t ext2 -b 4096 -d "$B/tree" "$B/img" 16M
	echo "image: mke2fs -d"
fi
"$XIPTOOL" attach -n "$seg" "$B/img"
"$XIPTOOL" stat "@$seg" /bin/busybox | grep -E '^(Runs|Contiguous):'
cp /bin/busybox "$B/native/busybox"

# loop N CMD...: run CMD N times
loop() {
	local n=$1 i
	shift
	for ((i = 0; i < n; i++)); do
		"$@"
	done
}

via_debugfs() {
	debugfs -R "dump /bin/busybox $B/dump/busybox" "$B/img" 2>/dev/null
	chmod 755 "$B/dump/busybox"
	"$B/dump/busybox" true
	rm -f "$B/dump/busybox"
}

via_mount() {
	mount -t ext2 -o loop,ro "$B/img" "$mnt"
	"$mnt/bin/busybox" true
	umount "$mnt"
}

ms() {	# seconds for N runs -> ms per run
	awk -v s="$1" -v n="$2" 'BEGIN { printf "%.3f", s * 1000 / n }'
}

"$XIPTOOL" exec "@$seg" /bin/busybox true
run_exec() { loop "$runs" "$XIPTOOL" exec "@$seg" /bin/busybox true; }
run_native() { loop "$runs" "$B/native/busybox" true; }
read -r x p < <(bench_pair run_exec run_native)
bench_report "exec busybox true [ms] vs native" "$(ms "$x" "$runs")" \
	"$(ms "$p" "$runs")" "<=1.5"
slow=$((runs / 10 > 0 ? runs / 10 : 1))
d=$(bench_time loop "$slow" via_debugfs)
bench_report "exec busybox true [ms] vs debugfs dump + run" \
	"$(ms "$x" "$runs")" "$(ms "$d" "$slow")" "<=1"
m=$(bench_time loop "$slow" via_mount)
bench_report "exec busybox true [ms] vs loop mount + run + umount" \
	"$(ms "$x" "$runs")" "$(ms "$m" "$slow")" "<=1"

# text_kib PID FILE: private KiB of PID's executable mappings of FILE
text_private_kib() {
	awk -v f="$2" '
		/^[0-9a-f]+-[0-9a-f]+ / { in_text = ($2 ~ /x/ && $6 == f) }
		in_text && /^Private_(Clean|Dirty):/ { s += $2 }
		END { print s + 0 }' "/proc/$1/smaps"
}

text_rss_kib() {
	awk -v f="$2" '
		/^[0-9a-f]+-[0-9a-f]+ / { in_text = ($2 ~ /x/ && $6 == f) }
		in_text && /^Rss:/ { s += $2 }
		END { print s + 0 }' "/proc/$1/smaps"
}

meminfo() {
	awk -v k="$1:" '$1 == k { print $2 }' /proc/meminfo
}

# start8 CMD...: 8 sleeping copies; prints their pids
start8() {
	local i
	for ((i = 0; i < 8; i++)); do
		"$@" sleep 30 >/dev/null 2>&1 &
		echo $!
	done
}

# run8 FILE CMD...: 8 copies of CMD, whose text is FILE, from cold caches;
# after a second, their text's private and Rss KiB summed in $priv and
# $rss, the page cache of FILE in $fcache, the growth of Cached and Shmem
# in $more; then they are stopped.
run8() {
	local file=$1 pids pid cached0 shmem0
	shift
	sync
	echo 3 > /proc/sys/vm/drop_caches 2>/dev/null || true
	cached0=$(meminfo Cached) shmem0=$(meminfo Shmem)
	pids=$(start8 "$@")
	sleep 1
	priv=0 rss=0
	for pid in $pids; do
		priv=$((priv + $(text_private_kib "$pid" "$file")))
		rss=$((rss + $(text_rss_kib "$pid" "$file")))
	done
	fcache=$(fincore -b -n -o RES "$file" 2>/dev/null | awk '{ print int($1 / 1024) }')
	more="Cached $(($(meminfo Cached) - cached0)) KiB, Shmem $(($(meminfo Shmem) - shmem0)) KiB more"
	# shellcheck disable=SC2086
	kill $pids; wait 2>/dev/null || true
}

# faults CMD...: page faults (traps, as perf counts them) of one run of
# CMD, the median of 21; nothing without perf
faults() {
	command -v perf >/dev/null || return 0
	perf stat -x, -e page-faults -r 21 -- "$@" 2>&1 >/dev/null |
		awk -F, '$3 == "page-faults" { print $1 + 0 }'
}

# bench_small: interleaved single posix_spawn starts, medians over
# EXEC_BENCH_PAIRS pairs (tests/bench/spawnpair.c), against the same
# busybox started by the kernel; then where the difference goes: the same
# for a static program that does nothing, whose start from a segment
# costs what xiptool adds to any program (the front end's own start, the
# record, the image's metadata, the loader), against its start by the
# kernel
bench_small() {
	local pairs=${EXEC_BENCH_PAIRS:-400} x p cx cp
	bench_cc "$B/spawnpair" spawnpair.c
	read -r x p cx cp < <("$B/spawnpair" "$pairs" "$XIPTOOL" exec "@$seg" \
		/bin/busybox true -- "$B/native/busybox" true)
	bench_report "exec busybox true, median of $pairs spawns [ms] vs native" \
		"$x" "$p" "<=1.15"
	echo "exec busybox true, median CPU time [ms]: $cx, native $cp;" \
		"page faults: $(faults "$XIPTOOL" exec "@$seg" /bin/busybox true)," \
		"native $(faults "$B/native/busybox" true)"
	read -r x p cx cp < <("$B/spawnpair" "$pairs" "$XIPTOOL" exec "@$seg" \
		/bin/nothing -- "$B/native/nothing")
	bench_report "exec of a static program doing nothing [ms] vs native" \
		"$x" "$p" ">0"
	echo "what exec adds to any start: $(awk -v x="$x" -v p="$p" \
		'BEGIN { printf "%.3f", x - p }') ms, CPU time $(awk -v x="$cx" \
		-v p="$cp" 'BEGIN { printf "%.3f", x - p }') ms; page faults:" \
		"$(faults "$XIPTOOL" exec "@$seg" /bin/nothing), native" \
		"$(faults "$B/native/nothing")"
}

# bench_syscalls: system calls of one run (strace -f -c), against native;
# the target is native + 30, as a ratio
bench_syscalls() {
	local x p
	command -v strace >/dev/null || { echo "exec bench: no strace" >&2; return 0; }
	count() { strace -f -c -o "$B/strace.out" "$@" >/dev/null &&
		awk '$NF == "total" { print $4 }' "$B/strace.out"; }	# calls (errors may follow)
	x=$(count "$XIPTOOL" exec "@$seg" /bin/busybox true)
	p=$(count "$B/native/busybox" true)
	bench_report "exec busybox true, system calls vs native" "$x" "$p" \
		"<=$(awk -v p="$p" 'BEGIN { printf "%.2f", (p + 30) / p }')"
}

# private_kib PID: the process's anonymous KiB (its own pages: written
# data, heap, stack, copies); the segment's pages are shared, but count as
# Private_* in smaps while a single process maps them
private_kib() {
	awk '$1 == "Anonymous:" { print $2 }' "/proc/$1/smaps_rollup"
}

# bench_private: private KiB of one running `busybox sleep` (median of 4),
# against the same started by the kernel; target: at most 8 KiB more
bench_private() {
	local xs=() ps=() pid i x p
	for ((i = 0; i < 4; i++)); do
		"$XIPTOOL" exec "@$seg" /bin/busybox sleep 30 &
		pid=$! ; "$B/native/busybox" sleep 30 & sleep 0.3
		xs+=("$(private_kib "$pid")") ps+=("$(private_kib $!)")
		kill "$pid" $! ; wait "$pid" $! 2>/dev/null || true
	done
	x=$(printf '%s\n' "${xs[@]}" | sort -n | sed -n 2p)
	p=$(printf '%s\n' "${ps[@]}" | sort -n | sed -n 2p)
	bench_report "private KiB per running busybox sleep vs native" "$x" \
		"$p" "<=$(awk -v p="$p" 'BEGIN { printf "%.2f", (p + 8) / p }')"
}

bench_small
bench_syscalls
bench_private

segpath=$("$XIPTOOL" list --noheadings -r -o PATH "$seg")
run8 "$segpath" "$XIPTOOL" exec "@$seg" /bin/busybox
xpriv=$priv
echo "exec: 8 processes, text Rss $rss KiB (segment pages), private $priv KiB;" \
	"$more"

mount -t ext2 -o loop,ro "$B/img" "$mnt"
run8 "$mnt/bin/busybox" "$mnt/bin/busybox"
umount "$mnt"
echo "loop mount: 8 processes, text Rss $rss KiB, private $priv KiB," \
	"page cache of the file $fcache KiB;" \
	"$more"

bench_report "extra copies of busybox text, 8 running [KiB] vs loop mount" \
	"$xpriv" "$((priv + fcache))" "<=0.05"

# ---- large programs ---------------------------------------------------
# A static program with 64 MiB of text that calls each text page once,
# linked with -z max-page-size=0x200000 (tests/lib/bigprog.bash), in an
# image made with mkfs --align 2M.  Median ms per spawn-to-exit over
# $EXEC_LARGE_RUNS interleaved spawns (tests/bench/spawntime.c) of:
#   native from ext4    the program on a loop-mounted ext4 image (page
#                       cache, large folios)
#   native from tmpfs   on a tmpfs mounted huge=always
#   native from shm     on /dev/shm (no huge pages when shmem_enabled is
#                       never)
#   exec default        xiptool exec from a default segment (root's: a
#                       tmpfs with huge pages xiptool mounts)
#   exec hugetlbfs      xiptool exec from an attach --hugepages segment
# Target (issue): both exec lines <= 1.0 times native from ext4.
large_program_bench() (
	local lb="$B/large" n=${EXEC_LARGE_RUNS:-100}
	local seg_d="xiplarge$$" seg_h="xiplargeh$$" old_nr t
	old_nr=$(cat /proc/sys/vm/nr_hugepages)
	large_cleanup() {
		"$XIPTOOL" detach "$seg_d" >/dev/null 2>&1 || true
		"$XIPTOOL" detach "$seg_h" >/dev/null 2>&1 || true
		for m in "$lb/ext4" "$lb/thp" "$lb/huge"; do
			umount "$m" 2>/dev/null || true
		done
		echo "$old_nr" > /proc/sys/vm/nr_hugepages
	}
	trap large_cleanup EXIT
	. "$TOP_SRCDIR/tests/lib/bigprog.bash"
	mkdir -p "$lb/tree" "$lb/ext4" "$lb/thp" "$lb/huge"
	bench_cc "$lb/spawntime" spawntime.c
	make_bigprog "$lb/tree/big"
	"$XIPTOOL" mkfs -q --align 2M -d "$lb/tree" "$lb/img"
	mke2fs -q -F -t ext4 -d "$lb/tree" "$lb/ext4.img" 160M
	mount -t ext4 -o loop,ro "$lb/ext4.img" "$lb/ext4"
	mount -t tmpfs -o huge=always,size=160M none "$lb/thp"
	cp "$lb/tree/big" "$lb/thp/big"
	cp "$lb/tree/big" "$lb/shm-big"
	"$XIPTOOL" attach -n "$seg_d" "$lb/img" >/dev/null
	echo "default segment: $("$XIPTOOL" list --noheadings -r -o PATH "$seg_d")"
	echo $((old_nr + 96)) > /proc/sys/vm/nr_hugepages
	mount -t hugetlbfs none "$lb/huge"
	XIPTOOL_HUGETLBFS="$lb/huge" "$XIPTOOL" attach --hugepages \
		-n "$seg_h" "$lb/img" >/dev/null
	t=$("$lb/spawntime" "$n" "$lb/ext4/big" -- "$lb/thp/big" -- \
		"$lb/shm-big" -- "$XIPTOOL" exec "@$seg_d" /big -- \
		"$XIPTOOL" exec "@$seg_h" /big | tr '\n' ' ')
	read -r ext4 thp shm xd xh <<<"$t"
	echo "64 MiB program, median ms: ext4 $ext4, tmpfs huge=always $thp," \
		"/dev/shm $shm, exec default segment $xd, exec hugetlbfs $xh"
	bench_report "exec 64 MiB program, default segment [ms] vs native from ext4" \
		"$xd" "$ext4" "<=1.0"
	bench_report "exec 64 MiB program, hugetlbfs segment [ms] vs native from ext4" \
		"$xh" "$ext4" "<=1.0"
	bench_report "exec 64 MiB program, default segment [ms] vs native from tmpfs huge=always" \
		"$xd" "$thp" ">0"
	bench_report "exec 64 MiB program, default segment [ms] vs native from /dev/shm" \
		"$xd" "$shm" "<=1.0"
)

if [ "$(id -u)" -eq 0 ] && command -v gcc >/dev/null; then
	large_program_bench
else
	echo "large programs: needs root (mounts) and gcc" >&2
fi

#!/usr/bin/env bats
# Writers stopped anywhere: SIGKILL at every ordering step (the
# XIPTOOL_TEST_CRASH_AFTER hook) and after random delays, SIGINT/SIGTERM,
# ENOSPC.  After each stop, e2fsck -fn must find the image clean or with
# leaks only (blocks and inodes marked in use that nothing uses), and no
# file that was there before may have changed.  Writers refuse an image
# that is not clean, and one the kernel has mounted through a loop device.
# The crash points exist in the test build only (tests/hooks/xiptool).

load ../lib/common
use_test_hooks

LEAKS="$TOP_SRCDIR/tests/lib/e2fsck-leaks.py"

setup() {
	common_setup
	require_test_hooks
	require_cmd e2fsck debugfs python3
	mkdir -p "$T/tree/dir"
	head -c 61440 /dev/urandom > "$T/tree/f60k"	# 15 blocks: 3 indirect
	head -c 300000 /dev/urandom > "$T/tree/f300k"
	head -c 5000000 /dev/urandom > "$T/tree/f5m"	# double indirect
	echo hello > "$T/tree/dir/small"
	xiptool mkfs -q -d "$T/tree" --extra 8M "$T/base.img"
	(cd "$T/tree" && find . -type f | sort | xargs md5sum) > "$T/sums"
}

teardown() {
	common_teardown
}

# Every file listed in $T/sums still holds its bytes (read by debugfs).
tree_intact() {
	rm -rf "$T/out"
	mkdir "$T/out"
	debugfs -R "rdump / $T/out" "$1" >/dev/null 2>&1
	(cd "$T/out" && md5sum --quiet -c "$T/sums")
}

# After a stop: leaks only, nothing old changed, refused until repaired,
# then e2fsck -fy leaves it clean.
after_stop() {
	local img=$1
	python3 "$LEAKS" "$img"
	tree_intact "$img"
	if [ "$(dumpe2fs -h "$img" 2>/dev/null | sed -n 's/^Filesystem state: *//p')" != clean ]; then
		run xiptool write "$img" /dir/small /dev/null
		[ "$status" -eq 3 ]
		[[ "$output" == *"not clean"*"e2fsck -fy"* ]]
		e2fsck -fy "$img" >/dev/null 2>&1 || [ $? -eq 1 ]
	fi
	e2fsck -fn "$img" >/dev/null 2>&1
}

# crash_at N COMMAND...: run COMMAND on a fresh copy of $T/work.img
# ($T/t.img), killed at its N-th step; 0 when it completed, 1 when it
# was killed and the image passed after_stop, 2 otherwise.
crash_at() {
	local n=$1 rc=0
	shift
	cp "$T/work.img" "$T/t.img"
	XIPTOOL_TEST_CRASH_AFTER=$n "$@" 2>/dev/null || rc=$?
	[ "$rc" -eq 0 ] && return 0
	[ "$rc" -eq 137 ] || { echo "step $n: exit $rc"; return 2; }
	after_stop "$T/t.img" || { echo "after step $n"; return 2; }
	return 1
}

# crash_sweep STRIDE COMMAND...: kill COMMAND at every one of its first
# 40 steps, then at every STRIDE-th, and at every one of the 30 steps
# before it completes (its last commit, the final flush, the clean mark).
# The run that completes leaves its image in $T/t.img.
crash_sweep() {
	local stride=$1 n rc lo hi
	shift
	for ((n = 1; ; n += (n < 40 ? 1 : stride))); do
		rc=0
		crash_at "$n" "$@" || rc=$?
		[ "$rc" -eq 2 ] && return 1
		[ "$rc" -eq 0 ] && break
		lo=$n
		[ "$n" -lt 100000 ] || { echo "never completed"; return 1; }
	done
	# a command that is never killed has no crash point to sweep
	[ -n "${lo:-}" ] ||
		{ echo "step 1 completed: no crash point in $XIPTOOL"; return 1; }
	# the first step at which it completes lies in (lo, n]
	hi=$n
	while [ $((hi - lo)) -gt 1 ]; do
		n=$(((lo + hi) / 2))
		rc=0
		crash_at "$n" "$@" || rc=$?
		[ "$rc" -eq 2 ] && return 1
		if [ "$rc" -eq 0 ]; then hi=$n; else lo=$n; fi
	done
	for ((n = hi - 30 > 40 ? hi - 30 : 40; n < hi; n++)); do
		crash_at "$n" "$@" && { echo "step $n completed"; return 1; }
		[ $? -eq 1 ] || return 1
	done
	crash_at "$hi" "$@"
}

@test "write --create killed at every step of its first and last commits and across the rest" {
	head -c 4300000 /dev/urandom > "$T/in"	# 1050 blocks: two commits
	cp "$T/base.img" "$T/work.img"
	# the steps of one run: the first completes
	crash_sweep 97 xiptool write --create "$T/t.img" /new "$T/in"
	cmp <(debugfs -R "cat /new" "$T/t.img" 2>/dev/null) "$T/in"
	e2fsck -fn "$T/t.img"
}

@test "appends that copy an indirect block, and double-indirect files, killed at every step" {
	head -c 5000 /dev/urandom > "$T/in"
	cp "$T/base.img" "$T/work.img"
	crash_sweep 1 xiptool write --append "$T/t.img" /f60k "$T/in"
	cmp <(debugfs -R "cat /f60k" "$T/t.img" 2>/dev/null) <(cat "$T/tree/f60k" "$T/in")
	crash_sweep 1 xiptool write --append "$T/t.img" /f5m "$T/in"
	cmp <(debugfs -R "cat /f5m" "$T/t.img" 2>/dev/null) <(cat "$T/tree/f5m" "$T/in")
	crash_sweep 1 xiptool write --offset 4100000 "$T/t.img" /f300k "$T/in"
	e2fsck -fn "$T/t.img"
}

@test "truncates killed at every step: shrinking keeps the head, growing leaves a hole" {
	cp "$T/base.img" "$T/work.img"
	cp "$T/tree/f5m" "$T/f5m.orig"
	sed -i '/f5m/d' "$T/sums"	# the file being truncated may change
	for size in 100000 4200000 49152 0 9000000; do
		crash_sweep 1 xiptool truncate "$T/t.img" /f5m "$size"
		n=$((size < 5000000 ? size : 5000000))
		cmp <(debugfs -R "cat /f5m" "$T/t.img" 2>/dev/null | head -c "$n") \
			<(head -c "$n" "$T/f5m.orig")
		[ "$(debugfs -R "stat /f5m" "$T/t.img" 2>/dev/null | sed -n 's/.*Group: .*Size: \([0-9]*\).*/\1/p')" -eq "$size" ]
		e2fsck -fn "$T/t.img"
	done
}

@test "write --create killed after random delays: leaks only, and the next write does not reuse what the dead one took" {
	head -c 40000000 /dev/urandom > "$T/in"
	cp "$T/base.img" "$T/img"
	for round in $(seq 1 12); do
		delay=$(python3 -c "import random; print(random.uniform(0.005, 0.35))")
		xiptool write --create "$T/img" "/r$round" "$T/in" 2>/dev/null &
		sleep "$delay"
		kill -KILL $! 2>/dev/null || true
		wait $! 2>/dev/null || true
		after_stop "$T/img" || { echo "round $round, delay $delay"; false; }
		# a complete file beside the wreck: both must be intact afterwards
		head -c 300000 /dev/urandom > "$T/ok$round"
		xiptool write --create --input "$T/ok$round" "$T/img" "/ok$round"
		echo "$(md5sum < "$T/ok$round" | cut -d' ' -f1) ./ok$round" >> "$T/sums"
		tree_intact "$T/img"
		xiptool truncate "$T/img" "/r$round" 0 2>/dev/null || true
	done
	e2fsck -fn "$T/img"
}

# caught PID SIG...: process PID catches each signal number (its SigCgt
# mask in /proc): killed by the signal's default action, a command ends
# with the same status as when it stops by itself.
caught() {
	local mask n pid=$1
	shift
	mask=$(sed -n 's/^SigCgt:[[:space:]]*//p' "/proc/$pid/status")
	[ -n "$mask" ]
	for n in "$@"; do
		[ $(( (0x$mask >> (n - 1)) & 1 )) -eq 1 ]
	done
}

@test "SIGTERM and SIGINT during a write: rolled back, clean image, exit 143 and 130" {
	cp "$T/base.img" "$T/img"
	for sig in TERM INT; do
		mkfifo "$T/fifo$sig"
		# a background job starts with SIGINT ignored: restore it
		env --default-signal=INT "$XIPTOOL" write --append "$T/img" /f300k \
			< "$T/fifo$sig" &
		pid=$!
		exec 7> "$T/fifo$sig"
		head -c 3000000 /dev/urandom >&7
		sleep 0.3
		# SIGHUP, SIGINT and SIGTERM are caught, not fatal
		caught "$pid" 1 2 15
		kill -"$sig" "$pid"
		rc=0
		wait "$pid" || rc=$?
		exec 7>&-
		if [ "$sig" = TERM ]; then [ "$rc" -eq 143 ]; else [ "$rc" -eq 130 ]; fi
		e2fsck -fn "$T/img"
		tree_intact "$T/img"
		[ "$(dumpe2fs -h "$T/img" 2>/dev/null | sed -n 's/^Filesystem state: *//p')" = clean ]
	done
}

@test "ENOSPC in the middle of a write costs nothing that was there" {
	xiptool mkfs -q -d "$T/tree" --extra 1M "$T/small.img"
	head -c 3000000 /dev/urandom > "$T/in"
	run xiptool write --create "$T/small.img" /big "$T/in"
	[ "$status" -eq 3 ]
	[[ "$output" == *"no space left"* ]]
	e2fsck -fn "$T/small.img"
	tree_intact "$T/small.img"
}

@test "an image that is not clean is refused for writing; info and verify say so" {
	cp "$T/base.img" "$T/img"
	debugfs -w -R "ssv state 0" "$T/img" 2>/dev/null
	cp "$T/img" "$T/before"
	run xiptool write --create "$T/img" /x /dev/null
	[ "$status" -eq 3 ]
	[ "${#lines[@]}" -eq 1 ]
	[[ "$output" == "xiptool write: $T/img: file system not clean ("*"): run e2fsck -fy on it before writing" ]]
	run xiptool truncate "$T/img" /f60k 0
	[ "$status" -eq 3 ]
	cmp "$T/img" "$T/before"
	run xiptool info "$T/img"
	[[ "$output" == *"not clean"* ]]
	run xiptool verify "$T/img"
	[[ "$output" == *"not cleanly"* ]]
	debugfs -w -R "ssv state 3" "$T/img" 2>/dev/null	# valid + errors
	run xiptool write --create "$T/img" /x /dev/null
	[ "$status" -eq 3 ]
	[[ "$output" == *"errors were recorded"* ]]
}

@test "a write leaves the image clean and marks it unclean while it runs; a write that changes nothing changes no byte" {
	cp "$T/base.img" "$T/img"
	mkfifo "$T/fifo"
	xiptool write --create "$T/img" /x < "$T/fifo" &
	pid=$!
	exec 7> "$T/fifo"
	printf 'some' >&7
	sleep 0.3
	[ "$(dumpe2fs -h "$T/img" 2>/dev/null | sed -n 's/^Filesystem state: *//p')" = "not clean" ]
	exec 7>&-
	wait "$pid"
	[ "$(dumpe2fs -h "$T/img" 2>/dev/null | sed -n 's/^Filesystem state: *//p')" = clean ]
	e2fsck -fn "$T/img"
	cp "$T/img" "$T/before"
	run xiptool write "$T/img" /no/such "$T/tree/f60k"
	[ "$status" -eq 3 ]
	cmp "$T/img" "$T/before"
}

@test "writes, truncates and mkfs -f are refused while the kernel has the image mounted through a loop device" {
	require_loop
	cp "$T/base.img" "$T/img"
	mkdir -p "$T/mnt"
	mount -t ext2 -o loop,ro "$T/img" "$T/mnt"
	dev=$(findmnt -n -o SOURCE "$T/mnt")
	cp "$T/img" "$T/before"
	run xiptool write --create "$T/img" /x "$T/tree/f60k"
	[ "$status" -eq 3 ]
	[ "${#lines[@]}" -eq 1 ]
	[[ "$output" == *"$T/img"*"$dev"*"$T/mnt"* ]]
	run xiptool truncate "$T/img" /f60k 0
	[ "$status" -eq 3 ]
	[[ "$output" == *"$dev"* ]]
	run xiptool mkfs -f -q -d "$T/tree" "$T/img"
	[ "$status" -eq 3 ]
	[[ "$output" == *"$T/img"*"$dev"*"$T/mnt"* ]]
	umount "$T/mnt"
	cmp "$T/img" "$T/before"
	# bound but not mounted: allowed, and the device cannot be mounted
	# while the write holds it
	loopdev=$(losetup -f --show "$T/img")
	xiptool write --create "$T/img" /x "$T/tree/f60k"
	losetup -d "$loopdev"
	e2fsck -fn "$T/img"
}

@test "write @NAME is refused while the segment's loop device is mounted" {
	require_loop
	export XIPTOOL_RUNDIR="$T/run"
	name="crash${T##*.}"
	xiptool attach -t sw --loop -n "$name" "$T/base.img"
	dev=$(xiptool list --json | python3 -c "import json,sys; print([s['loop'] for s in json.load(sys.stdin)['segments'] if s['name']=='$name'][0])")
	mkdir -p "$T/mnt"
	mount -t ext2 -o ro "$dev" "$T/mnt"
	run xiptool write --create "@$name" /x "$T/tree/f60k"
	[ "$status" -eq 3 ]
	[[ "$output" == *"$dev"*"$T/mnt"* ]]
	umount "$T/mnt"
	xiptool write --create "@$name" /x "$T/tree/f60k"
	xiptool detach --save "$T/saved.img" "$name"
	e2fsck -fn "$T/saved.img"
	cmp <(debugfs -R "cat /x" "$T/saved.img" 2>/dev/null) "$T/tree/f60k"
}

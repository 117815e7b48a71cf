#!/usr/bin/env bats
# The registry under load, for about 20 seconds: workers attach their own
# segments (as files and behind loop devices), run a program from them,
# list them and detach them, while writers append to one shared sw segment
# that others run programs from and read, and a lister lists everything.
# Every command must succeed, every appended line must be in the saved
# image (e2fsck clean), and nothing of the test's own may be left: no
# record, no segment file, no loop device.  STRESS_SECONDS sets the time.

load ../lib/common
load ../lib/attach

# fail WHAT OUTPUT: record a failed command (the workers run in the
# background; the test checks the record at the end).
fail() {
	printf '%s: %s\n' "$1" "$2" >> "$T/failures"
}

# worker I: attach (every other round --loop), exec, list, detach its own
# segments until the deadline.
worker() {
	local i=$1 r=0 n out loop
	while [ "$SECONDS" -lt "$deadline" ]; do
		n="k$U-$i-$r"
		loop=()
		((r % 2)) && loop=(--loop)
		out=$("$XIPTOOL" attach "${loop[@]}" -n "$n" "$T/img" 2>&1) ||
			{ fail "attach ${loop[*]} $n" "$out"; break; }
		out=$("$XIPTOOL" exec "@$n" /bin/busybox true 2>&1) ||
			fail "exec @$n" "$out"
		out=$("$XIPTOOL" list --noheadings -r -o NAME "$n" 2>&1)
		[ "$out" = "$n" ] || fail "list $n" "$out"
		out=$("$XIPTOOL" detach "$n" 2>&1) ||
			{ fail "detach $n" "$out"; break; }
		r=$((r + 1))
	done
	echo "$r" > "$T/rounds.$i"
}

# writer I: append numbered lines to /var/log of the shared segment.
writer() {
	local i=$1 r=0 out
	while [ "$SECONDS" -lt "$deadline" ]; do
		out=$(printf 'line %s-%s\n' "$i" "$r" |
		      "$XIPTOOL" write --append "@$W" /var/log 2>&1) &&
			printf 'line %s-%s\n' "$i" "$r" >> "$T/appended.$i" ||
			fail "write --append @$W (round $r)" "$out"
		r=$((r + 1))
	done
}

# reader: run a program from the shared segment and read its log.
reader() {
	local out
	while [ "$SECONDS" -lt "$deadline" ]; do
		out=$("$XIPTOOL" exec "@$W" /bin/busybox true 2>&1) ||
			fail "exec @$W" "$out"
		out=$("$XIPTOOL" read "@$W" /var/log 2>&1 >/dev/null) ||
			fail "read @$W" "$out"
	done
}

lister() {
	local out
	while [ "$SECONDS" -lt "$deadline" ]; do
		out=$("$XIPTOOL" list --json 2>&1 >/dev/null) || fail "list" "$out"
	done
}

@test "stress: attach, exec, list, detach and appends side by side leave nothing behind" {
	require_loop
	[ -x /bin/busybox ] || skip "busybox-static is not installed"
	mkdir -p "$T/tree/bin" "$T/tree/var"
	cp /bin/busybox "$T/tree/bin/busybox"
	: > "$T/tree/var/log"
	xiptool mkfs -q --extra 8M -d "$T/tree" "$T/img"
	W="w$SEG"
	xiptool attach -t sw -n "$W" "$T/img"
	deadline=$((SECONDS + ${STRESS_SECONDS:-20}))
	pids=()
	for i in 1 2 3; do worker "$i" & pids+=($!); done
	for i in 1 2; do writer "$i" & pids+=($!); done
	reader & pids+=($!)
	lister & pids+=($!)
	for p in "${pids[@]}"; do wait "$p"; done
	rounds=$(( $(cat "$T"/rounds.* | paste -sd+) ))
	lines=$(cat "$T"/appended.* 2>/dev/null | wc -l)
	echo "# $rounds attach/exec/list/detach rounds, $lines appends" >&3
	[ ! -s "$T/failures" ] || { cat "$T/failures"; false; }
	[ "$rounds" -gt 0 ]
	[ "$lines" -gt 0 ]
	# every appended line is there, once; the saved image is sound
	run xiptool detach --save "$T/saved.img" "$W"
	[ "$status" -eq 0 ]
	e2fsck -fn "$T/saved.img"
	debugfs -R 'cat /var/log' "$T/saved.img" 2>/dev/null | sort > "$T/log"
	cat "$T"/appended.* | sort > "$T/expected"
	diff "$T/expected" "$T/log"
	# nothing of ours is left (but the lock, and attach --populate auto's
	# verdict for this boot)
	[ -z "$(ls -A "$T/run" | grep -vx -e .lock -e .populate)" ]
	[ -z "$(ls /dev/shm | grep -- "$U")" ]
	[ -z "$(ls "$T/run.shm" | grep -- "$U")" ]
	for f in /sys/block/loop*/loop/backing_file; do
		[ -e "$f" ] || continue
		if grep -q -- "$U" "$f"; then
			loop_gone "$(basename "$(dirname "$(dirname "$f")")")" ||
				{ echo "left bound: $f: $(cat "$f")"; false; }
		fi
	done
}

#!/usr/bin/env bats
# The registry under concurrent commands: changes are serialised by the
# registry lock (a flock on .lock in the run directory), which a test can
# hold itself to line commands up and release them together.

load ../lib/common
load ../lib/attach

# Hold the registry lock in the background until release_lock (or 30 s:
# a failed test does not release it; bats waits for what holds its output).
hold_lock() {
	xiptool list >/dev/null		# the run directory
	: > "$T/run/.lock"
	flock -x "$T/run/.lock" sh -c 'touch "$1"; i=0; while [ ! -e "$2" ] && [ $i -lt 600 ]; do sleep 0.05; i=$((i + 1)); done' \
		_ "$T/held" "$T/release" </dev/null >/dev/null 2>&1 3>&- &
	holder=$!
	wait_until 5 test -e "$T/held"
}

release_lock() {
	touch "$T/release"
	wait "$holder"
	rm -f "$T/held" "$T/release"
}

# Do N processes wait for the lock file (inode INO)?
lock_waiting() {
	[ "$(grep -c -- "-> FLOCK.*:$2 " /proc/locks)" -ge "$1" ]
}

# Does process PID wait for the lock file (inode INO), or has it ended?
waits_or_ended() {
	lock_waiting 1 "$2" || ! kill -0 "$1" 2>/dev/null
}

# Wait until N processes wait for the lock file (or two seconds passed).
lock_waiters() {
	wait_until 2 lock_waiting "$1" "$(stat -c %i "$T/run/.lock")" || true
}

# Two xiptool commands (the words of $1 and of $2) started while the
# registry lock is held, then let go together: one must succeed, the other
# fail with 3.  Their output in $T/out1 and $T/out2.
race_two() {
	local -a c1 c2
	local s1=0 s2=0 p1 p2
	read -ra c1 <<< "$1"
	read -ra c2 <<< "$2"
	hold_lock
	"$XIPTOOL" "${c1[@]}" > "$T/out1" 2>&1 & p1=$!
	"$XIPTOOL" "${c2[@]}" > "$T/out2" 2>&1 & p2=$!
	lock_waiters 2
	release_lock
	wait "$p1" || s1=$?
	wait "$p2" || s2=$?
	[ "$((s1 + s2))" -eq 3 ] && [ "$((s1 * s2))" -eq 0 ] ||
		{ cat "$T/out1" "$T/out2"; false; }
}

@test "two detaches of one segment: one succeeds, the other says it is not attached" {
	attach_tree_loop
	race_two "detach $SEG" "detach $SEG"
	[ "$(cat "$T/out1" "$T/out2")" = "xiptool detach: @$SEG: no attached segment of that name" ]
	[ ! -e "$path" ]
	[ ! -e "$T/run/$SEG" ]
	loop_gone "$dev" "$path"
}

@test "two attaches of one name: one wins, the other is told it is attached; no file is left over" {
	make_tree_image
	race_two "attach -n $SEG $T/img" "attach -n $SEG -t sw $T/img"
	run sort "$T/out1" "$T/out2"
	[ "${lines[0]}" = "$SEG" ]
	[ "${lines[1]}" = "xiptool attach: $SEG: a segment of that name is already attached: give another with -n OTHER, or detach it first" ]
	[ "$(ls "$T/run.shm" | grep -c -- "$SEG")" = 1 ]
	# the registry's lock, the record and its segment's holder lock (and
	# attach --populate auto's verdict for this boot)
	lock=$(basename "$(holder_lock "$(seg_col "$SEG" PATH)")")
	[ "$(ls -A "$T/run" | grep -vx -e .lock -e .populate -e "$lock")" = "$SEG" ]
	cmp "$(seg_col "$SEG" PATH)" "$T/img"
}

# Start attaching make_tree_image's image followed by 1 GiB of zeros,
# gzipped (a few seconds of work), in the background (its pid in $pid);
# return once its record says it is attaching.
attach_slowly() {
	make_tree_image
	gzip -1 -c "$T/img" > "$T/big.gz"
	head -c 64M /dev/zero | gzip -1 -c > "$T/z64.gz"
	for i in $(seq 16); do cat "$T/z64.gz"; done >> "$T/big.gz"
	"$XIPTOOL" attach -n "$SEG" "$T/big.gz" & pid=$!
	wait_until 4 grep -qx 'state=attaching' "$T/run/$SEG" 2>/dev/null || true
}

@test "an attach killed while filling: list shows nothing live, then removes its claim and its file" {
	attach_slowly
	kill -9 "$pid"
	wait "$pid" || true
	grep -qx 'state=attaching' "$T/run/$SEG"
	path=$(sed -n 's/^path=//p' "$T/run/$SEG")
	[ -e "$path" ]
	run xiptool list --noheadings -o NAME
	[ "$status" -eq 0 ]
	[ -z "$output" ]
	[ ! -e "$T/run/$SEG" ]
	[ ! -e "$path" ]
	run xiptool attach -n "$SEG" "$T/img"
	[ "$status" -eq 0 ]
}

@test "a segment being attached is not used, listed or detached" {
	attach_slowly
	run xiptool info "@$SEG"
	s_info=$status o_info=$output
	run xiptool detach "$SEG"
	s_det=$status o_det=$output
	run xiptool list --noheadings -o NAME
	o_list=$output
	kill -9 "$pid"; wait "$pid" || true
	[ "$s_info" -eq 3 ]
	[[ "$o_info" == "xiptool info: @$SEG: still being attached (by process $pid)" ]]
	[ "$s_det" -eq 3 ]
	[ "$o_det" = "xiptool detach: $SEG: still being attached (by process $pid)" ]
	[ -z "$o_list" ]
}

@test "a reader that finds a stale record removes it only under the lock" {
	make_tree_image
	xiptool attach -n "$SEG" "$T/img"
	path=$(seg_col "$SEG" PATH)
	hold_lock
	rm -f "$path"
	# list finds it stale and waits for the lock to remove it: once it
	# waits there (the kernel's lock table shows it), the record is still
	# there and list has not ended; let go, list ends and it is gone
	"$XIPTOOL" list --noheadings -o NAME > "$T/out1" 2>&1 & p1=$!
	ino=$(stat -c %i "$T/run/.lock")
	wait_until 60 waits_or_ended "$p1" "$ino"
	kill -0 "$p1"
	lock_waiting 1 "$ino"
	[ -e "$T/run/$SEG" ]
	release_lock
	wait "$p1"
	[ ! -s "$T/out1" ]
	[ ! -e "$T/run/$SEG" ]
	run xiptool list --noheadings -o NAME
	[ "$status" -eq 0 ]
	[ -z "$output" ]
}

@test "an attach waits while another process holds the registry lock" {
	make_tree_image
	hold_lock
	"$XIPTOOL" attach -n "$SEG" "$T/img" > "$T/out1" 2>&1 & p1=$!
	lock_waiters 1
	# it waits for the lock: no record yet, the process still there
	[ "$(grep -c -- "-> FLOCK.*:$(stat -c %i "$T/run/.lock") " /proc/locks)" -eq 1 ]
	[ ! -e "$T/run/$SEG" ]
	kill -0 "$p1"
	release_lock
	wait "$p1"
	grep -qx 'state=attached' "$T/run/$SEG"
}

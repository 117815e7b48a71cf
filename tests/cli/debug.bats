#!/usr/bin/env bats
# XIPTOOL_DEBUG: trace lines of the rooms it names, on standard error only.

load ../lib/common

bats_require_minimum_version 1.5.0

setup() {
	common_setup
	mkdir "$T/tree"
	cp /usr/bin/true "$T/tree/true"
	echo hello > "$T/tree/hello"
	xiptool mkfs -q -d "$T/tree" "$T/img"
}

@test "debug: without XIPTOOL_DEBUG nothing is traced" {
	run --separate-stderr env -u XIPTOOL_DEBUG "$XIPTOOL" read "$T/img" /hello
	[ "$status" -eq 0 ]
	[ "$output" = hello ]
	[ -z "$stderr" ]
}

@test "debug: segment lines on stderr, stdout unchanged" {
	run --separate-stderr env XIPTOOL_DEBUG=segment "$XIPTOOL" read "$T/img" /hello
	[ "$status" -eq 0 ]
	[ "$output" = hello ]
	size=$(stat -c %s "$T/img")
	[[ "$stderr" == *"xiptool["[0-9]*"]: segment: $T/img: file of $size bytes mapped read-only at 0x"* ]]
	[[ "$stderr" == *"segment: $T/img: unmapped"* ]]
	# every line is a trace line of the room asked for
	[ -z "$(grep -v '^xiptool\[[0-9]*\]: segment: ' <<<"$stderr")" ]
}

@test "debug: only the rooms named are traced; unknown names are ignored" {
	run --separate-stderr env XIPTOOL_DEBUG=build,nosuchroom "$XIPTOOL" mkfs -q -d "$T/tree" "$T/img2"
	[ "$status" -eq 0 ]
	[[ "$stderr" == *": build: $T/tree: tree of "*" 2 files, "* ]]
	[[ "$stderr" == *": build: $T/img2: in place"* ]]
	[ -z "$(grep -v '^xiptool\[[0-9]*\]: build: ' <<<"$stderr")" ]
	run --separate-stderr env XIPTOOL_DEBUG=nosuchroom "$XIPTOOL" read "$T/img" /hello
	[ "$status" -eq 0 ]
	[ -z "$stderr" ]
}

@test "debug: exec traces the mappings, and they point at the file's blocks" {
	require_cmd debugfs readelf
	run --separate-stderr env XIPTOOL_DEBUG=exec "$XIPTOOL" exec "$T/img" /true
	[ "$status" -eq 0 ]
	[[ "$stderr" == *"exec: /true: ELF type "* ]]
	[[ "$stderr" == *"jump to 0x"* ]]
	# the first PT_LOAD of /true is mapped from the block debugfs names
	off=$(readelf -lW "$T/tree/true" | awk '$1 == "LOAD" && !n++ { print $2 }')
	blk=$(debugfs -R "bmap /true $(( off / 4096 ))" "$T/img" 2>/dev/null)
	want=$(printf '0x%x' $(( blk * 4096 + off % 4096 )))
	first=$(grep -m1 ': /true: map 0x' <<<"$stderr")
	[[ "$first" == *" from the segment at $want" ]]
}

@test "debug: all traces every room, attach and detach included" {
	require_loop
	export XIPTOOL_RUNDIR="$T/run"
	mkdir -m 700 "$T/run"
	run --separate-stderr env XIPTOOL_DEBUG=all "$XIPTOOL" attach -n dbg --loop "$T/img"
	[ "$status" -eq 0 ]
	dev=${output#dbg }
	[[ "$stderr" == *": registry: new record dbg (type sr, "* ]]
	[[ "$stderr" == *": attach: $T/img -> "* ]]
	[[ "$stderr" == *": loop: $dev bound to "* ]]
	run --separate-stderr env XIPTOOL_DEBUG=all "$XIPTOOL" detach dbg
	[ "$status" -eq 0 ]
	[[ "$stderr" == *": loop: $dev released from "* ]]
	[[ "$stderr" == *": registry: record dbg removed"* ]]
}

@test "debug: verify traces its passes, and where the findings appear" {
	require_cmd debugfs
	run --separate-stderr env XIPTOOL_DEBUG=check "$XIPTOOL" verify "$T/img"
	[ "$status" -eq 0 ]
	[ "$(grep -c ': check: .* done, 0 finding(s)$' <<<"$stderr")" -eq 6 ]
	debugfs -w -R "sif /hello links_count 5" "$T/img" >/dev/null 2>&1
	run --separate-stderr env XIPTOOL_DEBUG=check "$XIPTOOL" verify "$T/img"
	[ "$status" -eq 1 ]
	[[ "$stderr" == *"pass 2 (directories) done, 0 finding(s)"* ]]
	[[ "$stderr" != *"passes 3 and 4 (connectivity, link counts) done, 0 finding(s)"* ]]
	[[ "$stderr" == *"passes 3 and 4 (connectivity, link counts) done, "[1-9]*" finding(s)"* ]]
}

@test "debug: engine traces each block a write allocates, as debugfs then finds them" {
	require_cmd debugfs
	head -c $((5 * 4096 + 10)) /dev/urandom > "$T/in"
	run --separate-stderr env XIPTOOL_DEBUG=engine "$XIPTOOL" write --create --input "$T/in" "$T/img" /new
	[ "$status" -eq 0 ]
	[[ "$stderr" == *": engine: inode "*": write of 20490 bytes at 0 (size 0) from $T/in"* ]]
	[[ "$stderr" == *": write committed"* ]]
	traced=$(sed -n 's/.*: file block [0-9]* -> block \([0-9]*\) .*/\1/p' <<<"$stderr" | tr '\n' ' ')
	[ "$traced" = "$(debugfs -R 'blocks /new' "$T/img" 2>/dev/null)" ]
	run --separate-stderr env XIPTOOL_DEBUG=engine "$XIPTOOL" truncate "$T/img" /new 100
	[ "$status" -eq 0 ]
	[[ "$stderr" == *": truncate from 20490 to 100 bytes"* ]]
	[[ "$stderr" == *": blocks from file block 1 on freed"* ]]
}

@test "debug: control bytes of names are shown as '?', never sent to the terminal" {
	name=$(printf 'e\033]0;x\007c')
	cp /usr/bin/true "$T/tree/$name"
	xiptool mkfs -q -f -d "$T/tree" "$T/img"
	run --separate-stderr env XIPTOOL_DEBUG=exec "$XIPTOOL" exec "$T/img" "/$name"
	[ "$status" -eq 0 ]
	[[ "$stderr" == *": exec: /e?]0;x?c: ELF type "* ]]
	[ -z "$(tr -d '\n' <<<"$stderr" | tr -d '[:print:]')" ]
}

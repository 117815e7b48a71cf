#!/usr/bin/env bats
# xiptool exec from a read-only segment that keeps what the loader read of
# a program (a trusted.xiptool.exec.* attribute of the segment file per
# path, lib/exec/exec_cache.c), so that the next start reads only that.
# Peers: getfattr and setfattr (attr), strace, the programs' own output.

load ../lib/common

bats_require_minimum_version 1.5.0

setup() {
	common_setup
	[ -x /bin/busybox ] || skip "busybox-static is not installed"
	command -v getfattr >/dev/null || skip "getfattr (attr) is not installed"
	command -v strace >/dev/null || skip "strace is not installed"
	[ "$(id -u)" -eq 0 ] || skip "trusted.* attributes are the administrator's"
	export XIPTOOL_RUNDIR=$T/run
	mkdir -p "$T/tree/bin" "$T/tree/usr/bin"
	cp /bin/busybox "$T/tree/bin/busybox"
	cp /usr/bin/true "$T/tree/usr/bin/true"
	xiptool mkfs -q -d "$T/tree" "$T/img"
	NAME=cache$$
	xiptool attach -n "$NAME" "$T/img"
	SEG=$(xiptool list --noheadings -r -o PATH "$NAME")
	[ "$(stat -f -c %T "$SEG")" = tmpfs ] || skip "the segment is not on tmpfs"
}

teardown() {
	xiptool detach "$NAME" >/dev/null 2>&1 || true
	common_teardown
}

# the segment's entries: "NAME=0xVALUE" lines
entries() {
	local out
	# (getfattr's "Removing leading '/'" notice is not an error)
	out=$(getfattr -d -m '^trusted\.xiptool\.exec\.' -e hex "$SEG" 2>/dev/null) ||
		return
	# none is no failure (grep: 1), a failing grep is (2)
	grep '^trusted' <<<"$out" || [ $? -eq 1 ]
}

# entry_of PATH: the attribute the start of PATH keeps (its debug line)
entry_of() {
	XIPTOOL_DEBUG=exec "$XIPTOOL" exec "@$NAME" "$1" 2>&1 >/dev/null |
		sed -n "s|.*exec: $1: kept in \(trusted\.xiptool\.exec\.[0-9a-f]*\)\$|\1|p"
}

# calls NAME...: how many times each system call is made on the segment
# file by `xiptool exec @NAME /bin/busybox echo x` (from its open to its
# close; a sanitizer build's run-time reads its own files too)
calls() {
	local c
	strace -f -o "$BATS_TEST_TMPDIR/tr" "$XIPTOOL" exec "@$NAME" \
		/bin/busybox echo x >/dev/null
	for c in "$@"; do
		awk -v seg="\"$SEG\"" -v c="$c(" '
			index($0, "openat(") && index($0, seg) { fd = $NF }
			fd != "" && index($0, c fd ",") { n++ }
			fd != "" && index($0, "close(" fd ")") { fd = "" }
			END { print n + 0 }' "$BATS_TEST_TMPDIR/tr"
	done
}

@test "exec: the first start from a read-only segment keeps what it read of the program, the next ones read only that" {
	local n
	[ -z "$(entries)" ]
	run -0 xiptool exec "@$NAME" /bin/busybox echo one
	[ "$output" = one ]
	run -0 entries
	echo "$output"
	[ "${#lines[@]}" -eq 1 ]
	# XIPEXEC1, then the entry
	[[ "$output" == *=0x5849504558454331* ]]
	# one attribute read, not one byte of the image, nothing written
	n=$(calls fgetxattr pread64 fsetxattr | paste -sd ' ')
	cat "$BATS_TEST_TMPDIR/tr"
	echo "fgetxattr pread64 fsetxattr: $n"
	[ "$n" = "1 0 0" ]
	run -0 xiptool exec "@$NAME" /bin/busybox echo two
	[ "$output" = two ]
	# as the program runs natively, started again and again
	run -0 xiptool exec "@$NAME" /bin/busybox sh -c 'echo a | cat; echo b | tr b c'
	[ "$output" = "$(printf 'a\nc')" ]
}

@test "exec: a damaged entry is ignored and replaced" {
	local attr
	xiptool exec "@$NAME" /bin/busybox true
	attr=$(entries | sed 's/=.*//')
	[ -n "$attr" ]
	for v in 0x00 0x5849504558454331 0x58495045584543310000000000000000; do
		setfattr -n "$attr" -v "$v" "$SEG"
		run -0 xiptool exec "@$NAME" /bin/busybox echo ok
		[ "$output" = ok ]
		[[ "$(entries)" == "$attr=0x5849504558454331"* ]]
		[ "$(entries | wc -c)" -gt 200 ]
	done
}

@test "exec: an entry is the path's own: another program's entry under its name is not used" {
	local tattr bval
	# the entry /usr/bin/true keeps, then busybox's value under its name
	tattr=$(entry_of /usr/bin/true)
	[ -n "$tattr" ]
	xiptool exec "@$NAME" /bin/busybox true
	bval=$(entries | grep -v "^$tattr=" | sed 's/^[^=]*=//')
	[ -n "$bval" ]
	setfattr -n "$tattr" -v "$bval" "$SEG"
	# GNU true, not busybox's applet (which prints nothing)
	run -0 xiptool exec "@$NAME" /usr/bin/true --version
	[[ "$output" == *"GNU coreutils"* ]]
	[ "$(getfattr -n "$tattr" -e hex "$SEG" | sed -n 's/^[^=]*=//p')" != "$bval" ]
}

@test "exec: an entry whose blocks lie past the segment is not used" {
	local attr
	xiptool exec "@$NAME" /bin/busybox true
	attr=$(entries | sed 's/=.*//')
	# the first run's first block, 2^40: 56 bytes of head and the path
	getfattr -n "$attr" --only-values "$SEG" > "$T/entry"
	python3 - "$T/entry" <<-'EOF'
		import struct, sys
		b = bytearray(open(sys.argv[1], 'rb').read())
		pathlen, nruns = struct.unpack_from('=II', b, 40)
		assert nruns >= 1
		struct.pack_into('=Q', b, 56 + pathlen + 8, 1 << 40)
		open(sys.argv[1], 'wb').write(b)
	EOF
	setfattr -n "$attr" -v "0x$(od -An -v -tx1 "$T/entry" | tr -d ' \n')" "$SEG"
	run -0 xiptool exec "@$NAME" /bin/busybox echo ok
	[ "$output" = ok ]
	# replaced by what the image says
	getfattr -n "$attr" --only-values "$SEG" | cmp -s - "$T/entry" && return 1
	true
}

@test "exec: a writable segment, and an image path, keep nothing and read no entry" {
	xiptool detach "$NAME"
	xiptool attach -t sw -n "$NAME" "$T/img"
	SEG=$(xiptool list --noheadings -r -o PATH "$NAME")
	run -0 xiptool exec "@$NAME" /bin/busybox echo ok
	[ "$output" = ok ]
	[ -z "$(entries)" ]
	strace -f -o "$BATS_TEST_TMPDIR/tr" "$XIPTOOL" exec "$T/img" \
		/bin/busybox true
	run -1 grep 'xattr(' "$BATS_TEST_TMPDIR/tr"
}

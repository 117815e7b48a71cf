#!/usr/bin/env bats
# The command line: global options, help, usage errors.

load ../lib/common

bats_require_minimum_version 1.5.0

@test "--version prints the package version" {
	run xiptool --version
	[ "$status" -eq 0 ]
	[[ "$output" =~ ^xiptool\ [0-9]+\.[0-9]+ ]]
}

@test "--help lists every command and exits 0" {
	run xiptool --help
	[ "$status" -eq 0 ]
	[[ "$output" == *"Usage: xiptool"* ]]
	[[ "$output" == *"info"* ]]
	[[ "$output" == *"Exit status"* ]]
}

@test "help, help CMD and CMD --help all work" {
	run xiptool help
	[ "$status" -eq 0 ]
	[[ "$output" == *"Commands:"* ]]
	run xiptool help info
	[ "$status" -eq 0 ]
	[[ "$output" == *"Usage: xiptool info"* ]]
	[[ "$output" == *"--json"* ]]
	run xiptool info --help
	[ "$status" -eq 0 ]
	[[ "$output" == *"Usage: xiptool info"* ]]
}

@test "no command is a usage error" {
	run xiptool
	[ "$status" -eq 2 ]
}

@test "unknown command: one line, a hint, exit 2" {
	run xiptool frobnicate
	[ "$status" -eq 2 ]
	[ "${lines[0]}" = "xiptool: 'frobnicate' is not an xiptool command" ]
	[ "${lines[1]}" = "Try 'xiptool --help' for more information." ]
	[ "${#lines[@]}" -eq 2 ]
	run xiptool help frobnicate
	[ "$status" -eq 2 ]
}

@test "unknown global option: exit 2 with a hint" {
	run xiptool --frobnicate info x
	[ "$status" -eq 2 ]
	[[ "${lines[0]}" == "xiptool: --frobnicate: unknown option" ]]
	[[ "${lines[1]}" == "Try 'xiptool --help' for more information." ]]
}

@test "unknown command option: exit 2 with a hint naming the command" {
	run xiptool info --frobnicate x
	[ "$status" -eq 2 ]
	[[ "${lines[0]}" == "xiptool info: --frobnicate: unknown option" ]]
	[[ "${lines[1]}" == "Try 'xiptool info --help' for more information." ]]
}

@test "missing and extra arguments are usage errors" {
	run xiptool info
	[ "$status" -eq 2 ]
	[[ "${lines[0]}" == "xiptool info: missing argument"* ]]
	run xiptool info a b
	[ "$status" -eq 2 ]
	[[ "${lines[0]}" == "xiptool info: too many arguments"* ]]
}

@test "the man page of xiptool formats cleanly and lists the commands" {
	require_cmd groff
	run groff -ww -z -man "$TOP_SRCDIR/man/xiptool.1"
	[ "$status" -eq 0 ]
	[ -z "$output" ]
	cmds=$("$XIPTOOL" --help | sed -n '/^Commands:/,/^$/p' | awk 'NF && !/Commands:/ { print $1 }')
	# the loop below must have something to check
	[ "$(wc -w <<<"$cmds")" -ge 15 ]
	for c in $cmds; do
		grep -q "^\.B $c" "$TOP_SRCDIR/man/xiptool.1" || { echo "man page lacks $c"; false; }
	done
}

@test "bash completion offers every command" {
	require_cmd bash
	[ -f /usr/share/bash-completion/bash_completion ] || skip "bash-completion is not installed"
	run bash -c "source /usr/share/bash-completion/bash_completion; source '$TOP_SRCDIR/completions/xiptool';
		COMP_WORDS=(xiptool ''); COMP_CWORD=1; COMP_LINE='xiptool '; COMP_POINT=8; _xiptool; echo \"\${COMPREPLY[*]}\""
	[ "$status" -eq 0 ]
	cmds=$("$XIPTOOL" --help | sed -n '/^Commands:/,/^$/p' | awk 'NF && !/Commands:/ { print $1 }')
	[ "$(wc -w <<<"$cmds")" -ge 15 ]
	for c in $cmds; do
		[[ " $output " == *" $c "* ]] || { echo "completion lacks $c: $output"; false; }
	done
}

# A small image of one file, and a copy to compare it with.
small_image() {
	mkdir -p "$T/tree"
	printf 'hello\n' > "$T/tree/f"
	mkimg "$T/img" 8M "$T/tree"
	cp "$T/img" "$T/orig"
}

@test "a closed stderr, stdout or stdin: no message and no data lands in the image" {
	small_image
	# the error message of a write, stderr closed: the image was fd 2
	run bash -c 'printf data | "$0" write "$1" /no/such 2>&-' "$XIPTOOL" "$T/img"
	[ "$status" -eq 3 ]
	cmp "$T/orig" "$T/img"
	run bash -c '"$0" truncate "$1" /no/such 0 2>&-' "$XIPTOOL" "$T/img"
	[ "$status" -eq 3 ]
	cmp "$T/orig" "$T/img"
	# stdin closed: what is written is empty, not the image itself
	run bash -c '"$0" write --create "$1" /new <&- 2>&1' "$XIPTOOL" "$T/img"
	[ "$status" -eq 0 ]
	[ -z "$output" ]
	[ "$(xiptool stat "$T/img" /new | sed -n 's/^Size: *//p')" = 0 ]
	e2fsck -fn "$T/img" >/dev/null
	# stdout closed: the listing goes nowhere, and nothing fails
	run bash -c '"$0" ls "$1" 2>&1 >&-' "$XIPTOOL" "$T/img"
	[ "$status" -eq 0 ]
	[ -z "$output" ]
	# all three closed
	cp "$T/orig" "$T/img"
	run bash -c 'printf x | "$0" write "$1" /no/such <&- >&- 2>&-; echo "rc=$?"' \
		"$XIPTOOL" "$T/img"
	[ "$output" = rc=3 ]
	cmp "$T/orig" "$T/img"
}

@test "a failed write to stdout is a runtime failure (exit 3, one message) for every command that prints" {
	require_loop
	small_image
	local args
	export XIPTOOL_RUNDIR=$T/run
	xiptool attach -n "cli${T##*.}" "$T/img" >/dev/null
	while read -r args; do
		# shellcheck disable=SC2086
		run bash -c '"$0" "$@" >/dev/full' "$XIPTOOL" $args
		[ "$status" -eq 3 ] || { echo "$args: exit $status: $output"; false; }
		[[ $output == "xiptool"*": write error"* ]] || { echo "$args: $output"; false; }
		[ "${#lines[@]}" -eq 1 ] || { echo "$args: $output"; false; }
	done <<-EOF2
		--version
		--help
		help
		help info
		info $T/img
		info --json $T/img
		info --help
		ls $T/img
		ls -l $T/img /
		stat $T/img /f
		stat --json $T/img /f
		verify $T/img
		verify --json $T/img
		align-check $T/img
		align-check --json $T/img
		list
		list --json
		read $T/img /f
		exec --help
	EOF2
	xiptool detach "cli${T##*.}"
	# a reader that went away is no error to report (EPIPE, as util-linux)
	run bash -c 'trap "" PIPE; "$0" --help | true; echo "${PIPESTATUS[0]}"' "$XIPTOOL"
	[ "$output" = 0 ]
}

@test "sizes and offsets are decimal with binary suffixes: 010 is ten, 0x10 and -1 are usage errors" {
	small_image
	[ "$(xiptool read --offset 010 "$T/img" /f 2>&1)" = "" ]
	printf '0123456789abcdefghij' | xiptool write "$T/img" /f
	[ "$(xiptool read --offset 010 --length 05 "$T/img" /f)" = abcde ]
	[ "$(xiptool read --offset 08 --length 2 "$T/img" /f)" = 89 ]
	for bad in 0x10 -1 -0 +1 ' 1' 1.5K 1KK 10Q 18446744073709551616 16777216T ''; do
		run xiptool read --offset "$bad" "$T/img" /f
		[ "$status" -eq 2 ] || { echo "'$bad': exit $status"; false; }
		[[ ${lines[0]} == "xiptool read: --offset: "*"'$bad'"* ]] || { echo "$output"; false; }
		[ "${lines[1]}" = "Try 'xiptool read --help' for more information." ]
	done
	run xiptool read --offset 0x10 "$T/img" /f
	[ "${lines[0]}" = "xiptool read: --offset: invalid offset '0x10' (expected a decimal number with an optional K, M, G or T suffix)" ]
	run xiptool read --offset xyz "$T/img" /f
	[ "$status" -eq 2 ]
	[ "${lines[0]}" = "xiptool read: --offset: invalid offset 'xyz' (expected a decimal number with an optional K, M, G or T suffix)" ]
	run xiptool write --offset -3 "$T/img" /f < /dev/null
	[ "$status" -eq 2 ]
	[ "${lines[0]}" = "xiptool write: --offset: invalid offset '-3': negative" ]
	run xiptool read --length -1 "$T/img" /f
	[ "${lines[0]}" = "xiptool read: --length: invalid size '-1': negative" ]
	run xiptool read --offset 99999999999999999999 "$T/img" /f
	[ "${lines[0]}" = "xiptool read: --offset: offset '99999999999999999999' is too large" ]
	# a page size with a leading zero is decimal too (octal was invalid)
	run xiptool verify --page-size 04096 "$T/img"
	[ "$status" -eq 0 ]
}

@test "started under another name, the front end names it escaped" {
	run -126 bash -c 'exec -a "$1" "$0" info x' "$XIPTOOL" $'sh\e]0;title\a\nxiptool: forged'
	[ "${#lines[@]}" -eq 1 ]
	[[ $output == "xiptool: started as 'sh\\x1b]0;title\\a\\nxiptool: forged', not as xiptool"* ]]
}

@test "every command takes -h, --help, -? and help CMD alike: its own help on stdout, exit 0" {
	local cmd cmds
	cmds=$(xiptool --help | sed -n '/^Commands:/,/^$/p' | awk 'NR > 1 && NF { print $1 }')
	[ "$(printf '%s\n' "$cmds" | wc -l)" -ge 10 ]
	for cmd in $cmds; do
		[ "$cmd" = help ] && continue
		run -0 --separate-stderr xiptool "$cmd" -h
		[ -z "$stderr" ]
		[[ "${lines[0]}" == "Usage: xiptool $cmd "* ]]
		[[ "$output" == *"  -h, --help "*"Show this help message"* ]]
		local h=$output
		run -0 xiptool "$cmd" --help
		[ "$output" = "$h" ]
		run -0 xiptool "$cmd" '-?'
		[ "$output" = "$h" ]
		run -0 xiptool help "$cmd"
		[ "$output" = "$h" ]
		# and in the usage text as popt writes it
		run -0 xiptool "$cmd" --usage
		[[ "$output" == *"[-h|--help]"* ]]
	done
}

@test "a short option letter means one option in every command, and xiptool(1)'s table lists each" {
	require_cmd python3 groff
	local cmd cmds
	cmds=$(xiptool --help | sed -n '/^Commands:/,/^$/p' | awk 'NR > 1 && NF && $1 != "help" { print $1 }')
	{
		xiptool --help | sed 's/^/xiptool /'
		for cmd in $cmds; do
			xiptool "$cmd" --help | sed "s/^/$cmd /"
		done
	} > "$T/helps"
	MANWIDTH=200 man -l "$TOP_SRCDIR/man/xiptool.1" 2>/dev/null > "$T/man"
	run python3 - "$T/helps" "$T/man" <<'PY'
import re, sys
pairs = {}
for line in open(sys.argv[1]):
    cmd, _, rest = line.partition(' ')
    m = re.match(r'\s+-(\S), --([a-z0-9-]+)', rest)
    if m:
        pairs.setdefault(m.group(1), {}).setdefault(m.group(2), set()).add(cmd)
assert len(pairs) >= 20, pairs
# one long name per letter; -H: huge pages, in two commands' words
bad = {k: v for k, v in pairs.items()
       if len(v) > 1 and set(v) != {'huge', 'hugepages'}}
assert not bad, 'letters with several meanings: %r' % bad
man = open(sys.argv[2]).read()
table = man[man.index('Short options'):man.index('EXIT STATUS')]
for letter, longs in pairs.items():
    for long in longs:
        row = [l for l in table.splitlines() if re.match(r'\s+-%s\s' % re.escape(letter), l)]
        assert row and '--' + long in row[0], (letter, long, row)
print('ok', len(pairs))
PY
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == "ok "* ]]
}

@test "a path that is not in the image says so, naming the image; align-check and attach --file too" {
	mkdir -p "$T/tree/d"
	echo hi > "$T/tree/d/f"
	xiptool mkfs -q -d "$T/tree" "$T/img"
	for cmd in read stat ls align-check; do
		run --separate-stderr xiptool "$cmd" "$T/img" /nope
		[ "$status" -eq 3 ]
		[ "$stderr" = "xiptool $cmd: /nope: not found in $T/img" ]
		run --separate-stderr xiptool "$cmd" "$T/img" /nope/x
		[ "$status" -eq 3 ]
		[ "$stderr" = "xiptool $cmd: /nope/x: directory /nope not found in $T/img" ]
	done
	XIPTOOL_RUNDIR="$T/run" run xiptool attach --file /nope -n "f${T##*.}" "$T/img"
	[ "$status" -eq 3 ]
	[ "$output" = "xiptool attach: /nope: not found in $T/img" ]
	[ -z "$(ls "$T/run" 2>/dev/null)" ]
}

@test "registry options: mkfs --oci docker://, push and attach docker:// hold --creds, --authfile and --tls-verify to one rule" {
	ref=docker://127.0.0.1:1/a:t
	for cmd in "mkfs --oci $ref $T/img" "push $T/img $ref" "attach $ref"; do
		c=${cmd%% *}
		# shellcheck disable=SC2086
		fails_with 2 "xiptool $c: --creds: expected USER:PASSWORD
Try 'xiptool $c --help' for more information." xiptool ${cmd%% *} --creds nopassword ${cmd#* }
		# shellcheck disable=SC2086
		fails_with 2 "xiptool $c: --creds and --authfile exclude each other
Try 'xiptool $c --help' for more information." xiptool $c --creds u:p --authfile "$T/auth.json" ${cmd#* }
		# shellcheck disable=SC2086
		fails_with 2 "xiptool $c: --tls-verify: 'maybe': expected true or false
Try 'xiptool $c --help' for more information." xiptool $c --tls-verify=maybe ${cmd#* }
	done
	for cmd in "mkfs --oci $ref $T/img" "push $T/img $ref"; do
		c=${cmd%% *}
		# shellcheck disable=SC2086
		fails_with 2 "xiptool $c: --timeout: must be at least 1 second
Try 'xiptool $c --help' for more information." xiptool $c --timeout 0 ${cmd#* }
	done
	[ ! -e "$T/img" ]
}

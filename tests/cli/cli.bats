#!/usr/bin/env bats
# The command line: global options, help, usage errors.

load ../lib/common

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
	for c in $("$XIPTOOL" --help | sed -n '/^Commands:/,/^$/p' | awk 'NF && !/Commands:/ { print $1 }'); do
		grep -q "^\.B $c" "$TOP_SRCDIR/man/xiptool.1" || { echo "man page lacks $c"; false; }
	done
}

@test "bash completion offers every command" {
	require_cmd bash
	[ -f /usr/share/bash-completion/bash_completion ] || skip "bash-completion is not installed"
	run bash -c "source /usr/share/bash-completion/bash_completion; source '$TOP_SRCDIR/completions/xiptool';
		COMP_WORDS=(xiptool ''); COMP_CWORD=1; COMP_LINE='xiptool '; COMP_POINT=8; _xiptool; echo \"\${COMPREPLY[*]}\""
	[ "$status" -eq 0 ]
	for c in $("$XIPTOOL" --help | sed -n '/^Commands:/,/^$/p' | awk 'NF && !/Commands:/ { print $1 }'); do
		[[ " $output " == *" $c "* ]] || { echo "completion lacks $c: $output"; false; }
	done
}

#!/usr/bin/env bats
# Every command has a man page whose OPTIONS match its --help exactly, and
# completions that offer its options.

load ../lib/common

commands() {
	"$XIPTOOL" --help | sed -n '/^Commands:/,/^$/p' |
		awk 'NF && !/Commands:/ && $1 != "help" { print $1 }'
}

help_options() {
	"$XIPTOOL" "$1" --help | grep -oE -- '--[a-z][a-z0-9-]*' | sort -u
}

man_options() {
	sed -n '/^\.SH OPTIONS/,/^\.SH /p' "$1" | sed 's/\\-/-/g' |
		grep -oE -- '--[a-z][a-z0-9-]*' | sort -u
}

@test "every command has a man page with the required sections" {
	for c in $(commands); do
		m="$TOP_SRCDIR/man/xiptool-$c.1"
		[ -f "$m" ] || { echo "no $m"; false; }
		for s in NAME SYNOPSIS DESCRIPTION OPTIONS "EXIT STATUS" EXAMPLES "SEE ALSO"; do
			grep -q "^\.SH \"\?$s\"\?\$" "$m" || { echo "$m lacks $s"; false; }
		done
		grep -q "xiptool\\\\-$c\|xiptool-$c" "$TOP_SRCDIR/man/xiptool.1" ||
			{ echo "xiptool.1 does not mention xiptool-$c"; false; }
	done
}

@test "man pages format without warnings" {
	require_cmd groff
	for m in "$TOP_SRCDIR"/man/*.1 "$TOP_SRCDIR"/man/*.5; do
		out=$(groff -ww -z -man "$m" 2>&1)
		[ -z "$out" ] || { echo "$m: $out"; false; }
		if command -v man >/dev/null; then
			out=$(MANWIDTH=80 man --warnings -l "$m" 2>&1 >/dev/null)
			[ -z "$out" ] || { echo "$m: $out"; false; }
		fi
	done
}

@test "xiptool.conf(5): its sections, named by the pages of the commands that read it, in the build tree's man5" {
	m="$TOP_SRCDIR/man/xiptool.conf.5"
	for s in NAME SYNOPSIS DESCRIPTION SECURITY ENVIRONMENT FILES EXAMPLES "SEE ALSO"; do
		grep -q "^\.SH \"\?$s\"\?\$" "$m" || { echo "$m lacks $s"; false; }
	done
	for c in xiptool xiptool-attach xiptool-exec; do
		grep -q '^\.BR xiptool\.conf (5)' "$TOP_SRCDIR/man/$c.1" ||
			{ echo "$c.1 does not name xiptool.conf(5)"; false; }
	done
	# MANPATH="$PWD/man:" of the build tree finds it in its section
	[ -e "${TOP_BUILDDIR:-$PWD}/man/man5/xiptool.conf.5" ]
	if command -v man >/dev/null; then
		run man -M "${TOP_BUILDDIR:-$PWD}/man" -w 5 xiptool.conf
		[ "$status" -eq 0 ]
		[ "$(realpath "$output")" = "$(realpath "$m")" ]
	fi
}

@test "man page OPTIONS match each command's --help exactly" {
	for c in $(commands); do
		m="$TOP_SRCDIR/man/xiptool-$c.1"
		diff <(help_options "$c") <(man_options "$m") ||
			{ echo "options of $c differ: < --help, > $m"; false; }
	done
}

@test "bash completion offers each command's options" {
	[ -f /usr/share/bash-completion/bash_completion ] || skip "bash-completion is not installed"
	for c in $(commands); do
		got=$(bash -c "source /usr/share/bash-completion/bash_completion
			source '$TOP_SRCDIR/completions/xiptool'
			COMP_WORDS=(xiptool $c --); COMP_CWORD=2
			COMP_LINE='xiptool $c --'; COMP_POINT=\${#COMP_LINE}
			_xiptool; printf '%s\n' \"\${COMPREPLY[@]}\"" | sort -u)
		for o in $(help_options "$c"); do
			grep -qx -- "$o" <<<"$got" || { echo "bash completion of $c lacks $o"; false; }
		done
	done
}

@test "zsh completion knows every command" {
	for c in $(commands); do
		grep -q "'$c:" "$TOP_SRCDIR/completions/_xiptool" ||
			{ echo "_xiptool lacks $c"; false; }
	done
	if command -v zsh >/dev/null; then
		run zsh -n "$TOP_SRCDIR/completions/_xiptool"
		[ "$status" -eq 0 ]
	fi
}

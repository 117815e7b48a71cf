#!/usr/bin/env bats
# The front end: `xiptool` runs `exec` itself and hands every other command
# to xiptool-main.  Peers: file(1) and ldd for how it is linked,
# /proc/PID/maps of a program it started, the kernel running busybox.

load ../lib/common

bats_require_minimum_version 1.5.0

MAIN=${XIPTOOL%/*}/xiptool-main

static_front() {
	grep -q '^#define XIP_STATIC_FRONT 1' "$TOP_BUILDDIR/config.h"
}

need_busybox() {
	[ -x /bin/busybox ] || skip "busybox-static is not installed"
}

# exec's manual page, rendered: the oracle of its help and usage texts
exec_man() {
	groff -man -Tascii -P-cbou -rLL=300n "$TOP_SRCDIR/man/xiptool-exec.1"
}

# man_synopsis: "xiptool exec [OPTION...] IMAGE PATH [ARG...]"
man_synopsis() {
	exec_man | sed -n '/^SYNOPSIS/{n;p;}' | tr -s ' ' | sed 's/^ //'
}

# man_heads: the item heads of OPTIONS ("-e, --env=NAME=VALUE"), in order
man_heads() {
	exec_man | sed -n '/^OPTIONS/,/^EXIT STATUS/p' |
		sed -n 's/^       \(-.*\)$/\1/p'
}

# help_heads TEXT: the option column of a --help text, in order
help_heads() {
	sed -n 's/^ \{2,6\}\(-.*\)$/\1/p' <<<"$1" | sed 's/  .*//'
}

# man_usage: what popt's --usage prints for the options of the manual
# page (on one line): the short flags bundled, then every option with its
# argument after "=", then the synopsis' arguments
man_usage() {
	local bundle= items= h short long
	while IFS= read -r h; do
		short= long=$h
		if [[ "$h" == -?,\ * ]]; then
			short=${h:1:1}
			long=${h#*, }
		fi
		long=${long/ /=}
		if [ -n "$short" ] && [[ "$long" != *=* ]]; then
			bundle+=$short
		fi
		items+=" [${short:+-$short|}$long]"
	done < <(man_heads)
	local syn
	syn=$(man_synopsis)
	echo "Usage: xiptool exec [-$bundle]$items ${syn#xiptool exec }"
}

@test "every command reaches xiptool-main with its arguments and exit status" {
	run xiptool --version
	[ "$status" -eq 0 ]
	[ "$output" = "$("$MAIN" --version)" ]
	run xiptool --help
	[ "$status" -eq 0 ]
	[ "$output" = "$("$MAIN" --help)" ]
	run -2 xiptool no-such-command
	[[ "$output" == *"'no-such-command' is not an xiptool command"* ]]
	run -3 xiptool info "$T/missing.img"
	[[ "$output" == *"$T/missing.img"* ]]
	# arguments with spaces and empty ones arrive unchanged
	mkdir -p "$T/tree"
	printf 'a b\n' > "$T/tree/f"
	xiptool mkfs -q -d "$T/tree" "$T/sp ace.img"
	run -0 xiptool read "$T/sp ace.img" /f
	[ "$output" = "a b" ]
}

@test "exec is run by the front end: the same options, help and exit codes" {
	require_cmd groff
	# the help's usage line and options are the manual page's
	run -0 xiptool exec --help
	help=$output
	syn=$(man_synopsis)
	[ -n "$syn" ]
	[ "${lines[0]}" = "Usage: $syn" ]
	heads=$(man_heads)
	[ "$(wc -l <<<"$heads")" -ge 6 ]
	diff -u <(echo "$heads") <(help_heads "$help")
	run -2 xiptool exec
	run -2 xiptool exec --interp-from nowhere img /x
	mkdir -p "$T/tree/bin"
	cp /usr/bin/true "$T/tree/bin/true"
	xiptool mkfs -q -d "$T/tree" "$T/img"
	run -0 xiptool exec "$T/img" /bin/true
	run -127 xiptool exec "$T/img" /bin/absent
	# global options before the command
	run -0 --separate-stderr xiptool -v exec "$T/img" /bin/true
	[[ "$stderr" == *"interpreter"*"from the host"* ]]
	run -0 --separate-stderr xiptool -v -q exec "$T/img" /bin/true
	[ -z "$stderr" ]
}

@test "exec parses its options itself: popt's forms, messages and exit codes" {
	mkdir -p "$T/tree/bin"
	cp /usr/bin/env "$T/tree/bin/env"
	xiptool mkfs -q -d "$T/tree" "$T/img"
	# short bundles, attached and separate arguments, --name=value
	# (and exec's marker of what it runs, last)
	run -0 xiptool exec -ie X=1 -eY=2 --argv0=env "$T/img" /bin/env
	[ "$output" = "$(printf 'X=1\nY=2\nXIPTOOL_EXEC=1:auto:%s:/bin/env' "$T/img")" ]
	run -0 xiptool exec --clear-env --env Z=3 --argv0 env -- "$T/img" /bin/env
	[ "$output" = "$(printf 'Z=3\nXIPTOOL_EXEC=1:auto:%s:/bin/env' "$T/img")" ]
	# options end at IMAGE: the rest belongs to the program
	run -0 xiptool exec -i "$T/img" /bin/env -i A=1
	[ "$output" = "A=1" ]
	for args in "--bogus" "--bogus=1" "-iz" "---x" "-x" "-a" "--arg" "--arg=x" "--he" "--clear" "--=x"; do
		run -2 --separate-stderr xiptool exec $args "$T/img" /bin/env
		[ "$stderr" = "xiptool exec: $args: unknown option
Try 'xiptool exec --help' for more information." ] || { echo "$args: $stderr"; false; }
	done
	# no abbreviations of long names, also where an argument would be missing
	for args in "--arg" "--en" "--interp"; do
		run -2 --separate-stderr xiptool exec $args
		[ "$stderr" = "xiptool exec: $args: unknown option
Try 'xiptool exec --help' for more information." ] || { echo "$args: $stderr"; false; }
	done
	for args in "--clear-env=1" "--help=x" "--usage=1"; do
		run -2 --separate-stderr xiptool exec $args "$T/img" /bin/env
		[ "$stderr" = "xiptool exec: $args: option does not take an argument
Try 'xiptool exec --help' for more information." ]
	done
	for args in "-e" "-ie" "--env" "--argv0" "--interp-from"; do
		run -2 --separate-stderr xiptool exec $args
		[ "$stderr" = "xiptool exec: $args: missing argument
Try 'xiptool exec --help' for more information." ]
	done
	run -2 --separate-stderr xiptool exec -e NOVALUE "$T/img" /bin/env
	[ "$stderr" = "xiptool exec: --env: 'NOVALUE': expected NAME=VALUE
Try 'xiptool exec --help' for more information." ]
	run -2 --separate-stderr xiptool exec "$T/img"
	[[ "$stderr" == "xiptool exec: missing argument (usage: xiptool exec [OPTION...] IMAGE PATH [ARG...])"* ]]
	# help and usage, also from within a bundle, exit 0 on stdout
	run -0 --separate-stderr xiptool exec -i?
	[[ "${lines[0]}" == "Usage: xiptool exec [OPTION...] IMAGE PATH [ARG...]" ]]
	[[ "$output" == *"  -h, --help                            Show this help message"* ]]
	[ -z "$stderr" ]
	run -0 --separate-stderr xiptool exec -ih
	[[ "${lines[0]}" == "Usage: xiptool exec [OPTION...] IMAGE PATH [ARG...]" ]]
	[ -z "$stderr" ]
	run -0 xiptool exec --usage
	[[ "${lines[0]}" == "Usage: xiptool exec [-ih] [--argv0=NAME] [-e|--env=NAME=VALUE]" ]]
	require_cmd groff
	# the options of the manual page, from the front end and xiptool-main
	want=$(man_usage)
	[[ "$want" == "Usage: xiptool exec [-"?*"] [-"*"] [OPTION...] IMAGE PATH [ARG...]" ]]
	[ "$(tr -s ' \n' ' ' <<<"$output")" = "$want " ]
	run -0 "$MAIN" exec --usage
	[[ "${lines[2]}" == "        [--usage] [OPTION...] IMAGE PATH [ARG...]" ]]
	[ "$(tr -s ' \n' ' ' <<<"$output")" = "$want " ]
}

@test "the front end runs exec on its own; other commands say where it looked for xiptool-main" {
	need_busybox
	mkdir -p "$T/alone" "$T/tree/bin"
	cp "$XIPTOOL" "$T/alone/xiptool"
	cp /bin/busybox "$T/tree/bin/busybox"
	xiptool mkfs -q -d "$T/tree" "$T/img"
	run -0 "$T/alone/xiptool" exec "$T/img" /bin/busybox echo alone
	[ "$output" = alone ]
	if [ -x "${XIP_PKGLIBEXECDIR:-/nonexistent}/xiptool-main" ]; then
		skip "an installed xiptool-main would answer"
	fi
	run -3 "$T/alone/xiptool" info "$T/img"
	[[ "$output" == *"cannot run xiptool-main"*"$T/alone"* ]]
}

@test "an installed layout (bin/ and libexec/xiptool/) works wherever it is moved" {
	mkdir -p "$T/root/bin" "$T/root/libexec/xiptool"
	cp "$XIPTOOL" "$T/root/bin/xiptool"
	cp "$MAIN" "$T/root/libexec/xiptool/xiptool-main"
	run -0 "$T/root/bin/xiptool" --version
	[ "$output" = "$("$MAIN" --version)" ]
}

@test "the front end is linked as configure said: a static PIE unless disabled or sanitized" {
	run file -L "$XIPTOOL"
	if static_front; then
		[[ "$output" == *"static-pie linked"* ]]
		run ldd "$XIPTOOL"
		[[ "$output" != *"libext2fs"* ]]
		# against musl whenever musl-gcc is there (unless configured
		# --without-musl-front): nothing of glibc's start-up is in it
		if grep -q '^#define XIP_MUSL_FRONT 1' "$TOP_BUILDDIR/config.h"; then
			if grep -q GLIBC_TUNABLES "$XIPTOOL"; then false; fi
		else
			grep -q GLIBC_TUNABLES "$XIPTOOL"
			if command -v musl-gcc >/dev/null; then
				grep -q -- '--without-musl-front' "$TOP_BUILDDIR/config.log"
			fi
		fi
	else
		[[ "$output" == *"dynamically linked"* ]]
		grep -Eq -- '--disable-static-front|--enable-sanitizers' "$TOP_BUILDDIR/config.log"
	fi
	# xiptool-main is the one that needs libsmartcols
	run ldd "$MAIN"
	[[ "$output" == *"libsmartcols"* ]]
}

# links_libc_only FILE: nothing of libext2fs, libcom_err, libblkid, popt or
# zlib in FILE's symbols, and (dynamic) no such library needed.
links_libc_only() {
	run -0 nm "$1"
	[ -n "$output" ]
	if grep -E '(^| )(ext2fs_|blkid_|popt|inflate|deflate|com_err|error_message|initialize_ext2_error_table)' <<<"$output"; then
		echo "$1: links a library other than the C library" >&2
		false
	fi
	run ldd "$1"
	if grep -E 'libext2fs|libcom_err|libblkid|libpopt|libz\.' <<<"$output"; then
		false
	fi
}

# is_musl_static FILE: a static PIE of musl, with nothing of glibc.
is_musl_static() {
	run -0 file -L "$1"
	[[ "$output" == *"static-pie linked"* ]] || { echo "$output"; false; }
	run ldd "$1"
	[[ "$output" == *"statically linked"* || "$output" == *"not a dynamic executable"* ]] || { echo "$output"; false; }
	run -0 nm "$1"
	# musl's start-up is there ...
	grep -q ' __init_libc$' <<<"$output"
	# ... and none of glibc's (its static-PIE start-up, TLS set-up,
	# tunables)
	if grep -E ' (_dl_relocate_static_pie|__libc_setup_tls|__libc_start_call_main|_IO_stdin_used|__tunables_init)$' <<<"$output"; then
		echo "$1: glibc objects in the musl front end" >&2
		false
	fi
	if grep -q GLIBC_TUNABLES "$1"; then false; fi
}

@test "the front end links nothing but the C library: no libext2fs, blkid, popt or zlib in it" {
	links_libc_only "$XIPTOOL"
	if grep -q '^#define XIP_MUSL_FRONT 1' "$TOP_BUILDDIR/config.h"; then
		is_musl_static "$XIPTOOL"
	elif static_front; then
		run -0 file -L "$XIPTOOL"
		[[ "$output" == *"static-pie linked"* ]]
	fi
	# the musl build made for the tests (sanitizer builds)
	if [ -e "$TOP_BUILDDIR/tests/musl/xiptool" ]; then
		links_libc_only "$TOP_BUILDDIR/tests/musl/xiptool"
		is_musl_static "$TOP_BUILDDIR/tests/musl/xiptool"
	fi
	# xiptool-main is the one with the libraries
	run -0 nm "$MAIN"
	grep -q ' ext2fs_open2$' <<<"$output"
}

@test "run again under another name (a program's /proc/self/exe), it refuses to act on the arguments" {
	mkdir -p "$T/tree"
	echo keep > "$T/tree/f"
	xiptool mkfs -q -d "$T/tree" "$T/img"
	cp "$T/img" "$T/img.orig"
	# what busybox does for `truncate -s 0 ...` run by its shell
	run -126 bash -c 'exec -a truncate "$0" "$1" /f 0' "$XIPTOOL" "$T/img"
	[[ "$output" == *"started as 'truncate'"* ]]
	cmp "$T/img" "$T/img.orig"
	run -126 bash -c 'exec -a /usr/bin/ls "$0" -l "$1"' "$XIPTOOL" "$T/img"
	# a link of another name to the front end is the front end
	mkdir -p "$T/bin"
	ln -s "$XIPTOOL" "$T/bin/xip"
	run -0 "$T/bin/xip" read "$T/img" /f
	[ "$output" = keep ]
	run -0 env PATH="$T/bin:$PATH" xip read "$T/img" /f
	[ "$output" = keep ]
	# ... but not a name that PATH resolves to another program
	run -126 env PATH="$T/bin:$PATH" bash -c 'exec -a cat "$0" "$1"' \
		"$XIPTOOL" "$T/img"
}

@test "busybox sh from an image: an applet it re-executes through /proc/self/exe is busybox again, never an xiptool command" {
	need_busybox
	mkdir -p "$T/tree/bin"
	cp /bin/busybox "$T/tree/bin/busybox"
	echo keep > "$T/tree/f"
	xiptool mkfs -q -d "$T/tree" "$T/img"
	cp "$T/img" "$T/img.orig"
	run -0 --separate-stderr xiptool exec "$T/img" /bin/busybox sh -c \
		'echo in | cat; echo "cat: $?"; truncate "$0" /f 0; echo "truncate: $?"; echo after' "$T/img"
	[ "$output" = "$(printf 'in\ncat: 0\ntruncate: 1\nafter')" ]
	# busybox's truncate (which wants -s), not xiptool's: /f in the
	# image is untouched
	[[ "$stderr" == *"Usage: truncate "*"-s SIZE"* ]]
	cmp "$T/img" "$T/img.orig"
	[ "$(xiptool read "$T/img" /f)" = keep ]
}

# maps_of CMD...: /proc/PID/maps of CMD (a `busybox sleep` it starts), once
# the program runs
maps_of() {
	"$@" &
	local pid=$! i
	for i in $(seq 50); do
		[ "$(cat "/proc/$pid/comm" 2>/dev/null)" = busybox ] && break
		sleep 0.1
	done
	cat "/proc/$pid/maps"
	kill "$pid"
	wait "$pid" 2>/dev/null || true
}

# text_sharing_jump_page BIN: the text symbols of BIN (nm) in the page of
# xip_exec_jump other than its own two
text_sharing_jump_page() {
	nm -n --defined-only "$1" | awk -v page="$(getconf PAGESIZE)" '
		function num(h,  i, n) {
			n = 0
			for (i = 1; i <= length(h); i++)
				n = n * 16 + index("0123456789abcdef",
						   substr(tolower(h), i, 1)) - 1
			return n
		}
		{ addr[NR] = $1; type[NR] = $2; name[NR] = $3 }
		$3 == "xip_exec_jump" { at = int(num($1) / page) }
		END {
			if (at == "") { print "no xip_exec_jump"; exit }
			for (i = 1; i <= NR; i++)
				if (type[i] ~ /^[TtWw]$/ &&
				    int(num(addr[i]) / page) == at &&
				    name[i] != "xip_exec_jump" &&
				    name[i] != "xip_exec_jump_end")
					print name[i]
		}'
}

@test "the loader's last instructions have a page of their own in each loader (it is moved out of the text before the jump)" {
	local loader
	command -v nm >/dev/null || skip "no nm"
	for loader in "$XIPTOOL" "$MAIN"; do
		run -0 text_sharing_jump_page "$loader"
		[ -z "$output" ] || {
			echo "$loader: $output"
			false
		}
	done
}

@test "nothing of the loader (executable or shared library) stays mapped in the program but its last instructions, whichever ran exec" {
	need_busybox
	mkdir -p "$T/tree/bin"
	cp /bin/busybox "$T/tree/bin/busybox"
	xiptool mkfs -q -d "$T/tree" "$T/img"
	local maps lmaps range
	for loader in "$XIPTOOL" "$MAIN"; do
		maps=$(maps_of "$loader" exec "$T/img" /bin/busybox sleep 30)
		grep -q " $T/img\$" <<<"$maps"
		# of the loader's file, only the two pages of its last
		# instructions, moved out of its text (read+exec, clean)
		lmaps=$(grep "$(readlink -f "$loader")" <<<"$maps" || true)
		[ "$(grep -c . <<<"$lmaps")" -le 1 ] || {
			echo "$maps"
			false
		}
		if [ -n "$lmaps" ]; then
			grepq ' r-xp ' <<<"$lmaps"
			read -r range _ <<<"$lmaps"
			[ $((0x${range#*-} - 0x${range%-*})) -le 8192 ]
		fi
		[ "$(grep -c '\.so' <<<"$maps")" -eq 0 ] || {
			echo "$maps"
			false
		}
		# (or an anonymous page with a copy of them), no writable+executable
		[ "$(grep -c ' r-xp 00000000 00:00 0 *$' <<<"$maps")" -le 1 ]
		[ "$(grep -c ' rwxp ' <<<"$maps")" -eq 0 ]
	done
}

# musl_front: the musl front end of this build (installed, or made for
# the tests), or skip.
musl_front() {
	if grep -q '^#define XIP_MUSL_FRONT 1' "$TOP_BUILDDIR/config.h"; then
		echo "$XIPTOOL"
	elif [ -e "$TOP_BUILDDIR/tests/musl/xiptool" ]; then
		echo "$TOP_BUILDDIR/tests/musl/xiptool"
	else
		skip "no musl front end in this build"
	fi
}

@test "the musl front end's entry point asks for the pages every start writes before any of its code runs" {
	local front pg rw hot size base len um a1 l1 keep
	need_busybox
	command -v strace >/dev/null || skip "strace is not installed"
	command -v nm >/dev/null || skip "no nm"
	case $(uname -m) in x86_64 | aarch64) ;; *) skip "no entry point of its own on $(uname -m)" ;; esac
	front=$(musl_front)
	mkdir -p "$T/tree/bin"
	cp /bin/busybox "$T/tree/bin/busybox"
	xiptool mkfs -q -d "$T/tree" "$T/img"
	# entered at xip_front_entry, not at musl's _start
	run -0 nm "$front"
	sym() { awk -v s="$1" '$3 == s { print "0x" $1 }' <<<"$output"; }
	[ "$(readelf -h "$front" | awk '/Entry point/ { print $NF }')" = "$(printf '0x%x' "$(sym xip_front_entry)")" ]
	# the arena is the last of the bss
	kib() {
		sed -n "s/^#define $1\t(\([0-9]*\) \* 1024)\$/\1/p" "$TOP_SRCDIR/cmd/front_mem.h"
	}
	hot=$(kib XIP_FRONT_ARENA_HOT)
	size=$(kib XIP_FRONT_ARENA_SIZE)
	[ -n "$hot" ]
	[ -n "$size" ]
	[ $(($(sym _end) - $(sym xip_front_arena))) -le $((size * 1024 + 64)) ]
	pg=$(getconf PAGESIZE)
	rw=$(($(sym __init_array_start) & -pg))
	# its first system calls, before musl sets up its thread pointer: the
	# writable pages from the first to the page the arena's first hot
	# bytes end in, then the text and read-only data, granted;
	# the jump unmaps the whole file but its first pages, up to and with
	# the page of the jump's code (first in its text: its ELF headers and
	# its last instructions), in one range; nothing of [stack], over whose
	# top the program's stack is built (the front end runs exec on a
	# stack in its arena)
	strace -o "$BATS_TEST_TMPDIR/tr" "$front" exec "$T/img" /bin/busybox true
	sed -n 2,3p "$BATS_TEST_TMPDIR/tr" > "$BATS_TEST_TMPDIR/first"
	len=$((($(sym _end) + pg - 1) & -pg))
	keep=$((($(sym xip_exec_jump) & -pg) + pg))
	[ "$keep" -le $((2 * pg)) ]
	cat "$BATS_TEST_TMPDIR/tr"
	mapfile -t um < <(sed -n 's/^munmap(\(0x[0-9a-f]*\), \([0-9]*\)) *= 0$/\1 \2/p' "$BATS_TEST_TMPDIR/tr")
	[ "${#um[@]}" -eq 1 ]
	read -r a1 l1 <<<"${um[0]}"
	[ "$l1" -eq "$((len - keep))" ]
	base=$((a1 - keep))
	diff "$BATS_TEST_TMPDIR/first" - <<-EOT
		madvise($(printf '0x%x' $((base + rw))), $(((($(sym xip_front_arena) + hot * 1024) & -pg) - rw)), MADV_POPULATE_WRITE) = 0
		madvise($(printf '0x%x' "$base"), $rw, MADV_POPULATE_READ) = 0
	EOT
}

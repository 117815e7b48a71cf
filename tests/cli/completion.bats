#!/usr/bin/env bats
# The bash completion, driven the way bash drives it: COMP_WORDS/COMP_CWORD
# set, _xiptool called, COMPREPLY checked.  Subcommands and options are
# checked against `xiptool --help`, paths inside an image against the tree
# mke2fs built the image from, segment names against `xiptool list`.

load ../lib/common

setup() {
	common_setup
	[ -f /usr/share/bash-completion/bash_completion ] ||
		skip "bash-completion is not installed"
	# the completion runs `xiptool` from PATH, as it would once installed
	mkdir "$T/bin"
	ln -s "$XIPTOOL" "$T/bin/xiptool"
	export XIPTOOL_RUNDIR=$T/run
	SEG=""
}

teardown() {
	if [ -n "$SEG" ]; then
		"$XIPTOOL" detach --force "$SEG" >/dev/null 2>&1 || true
	fi
	common_teardown
}

# complete WORD...: the candidates bash would offer for the last WORD
# (which may be empty) of the command line "WORD WORD ...", one per line,
# sorted.
complete() {
	local line="$*"
	{
		echo 'source /usr/share/bash-completion/bash_completion'
		echo "source '$TOP_SRCDIR/completions/xiptool'"
		echo "PATH='$T/bin':\$PATH"
		declare -p XIPTOOL_RUNDIR
		printf 'COMP_WORDS=('
		printf '%q ' "$@"
		printf ')\n'
		echo "COMP_CWORD=$(($# - 1))"
		printf 'COMP_LINE=%q\n' "$line"
		echo 'COMP_POINT=${#COMP_LINE}'
		echo '_xiptool 2>/dev/null'
		echo 'printf "%s\n" "${COMPREPLY[@]}"'
	} >"$T/drive.bash"
	bash "$T/drive.bash" | sed '/^$/d' | LC_ALL=C sort
}

commands() {
	"$XIPTOOL" --help | sed -n '/^Commands:/,/^$/p' |
		awk 'NF && !/Commands:/ { print $1 }' | LC_ALL=C sort
}

# The tree the image is built from, and the image (mke2fs -d).
mktree() {
	mkdir -p "$T/tree/bin" "$T/tree/etc/sub" "$T/tree/.hidden" "$T/tree/usr/lib"
	echo motd >"$T/tree/etc/motd"
	echo spaced >"$T/tree/etc/with space"
	echo x >"$T/tree/etc/sub/deep"
	echo x >"$T/tree/etc/.profile"
	echo x >"$T/tree/bin/busybox"
	ln -s /etc "$T/tree/etc-link"
	mkimg "$T/a.img" 8M "$T/tree"
}

# The expected candidates for directory DIR (as typed: "/etc/", "" or
# "etc/") of the source tree, starting with PREFIX: names quoted like the
# shell, directories with a trailing slash, dot names only for a dot prefix.
expected() {
	local dir=$1 prefix=$2 host=$T/tree/${1#/} n q
	(
		cd "$host" || exit 1
		for n in * .*; do
			[ -e "$n" ] || [ -L "$n" ] || continue
			case $n in . | .. | lost+found) continue ;; esac
			case $n in .*) case $prefix in .*) ;; *) continue ;; esac ;; esac
			case $n in "$prefix"*) ;; *) continue ;; esac
			q=$(printf '%q' "$dir$n")
			if [ -d "$n" ] && [ ! -L "$n" ]; then echo "$q/"; else echo "$q"; fi
		done
		# the image root also has lost+found
		if [ -z "${dir#/}" ] && case lost+found in "$prefix"*) true ;; *) false ;; esac; then
			echo "${dir}lost+found/"
		fi
	) | LC_ALL=C sort
}

@test "subcommands: every command of --help, and help" {
	# every loop below runs over this list: it must not be empty
	[ "$(commands | wc -l)" -ge 15 ]
	run complete xiptool ""
	[ "$output" = "$(commands)" ] || { echo "got: $output"; false; }
	run complete xiptool help ""
	[ "$output" = "$(commands)" ]
	# a prefix narrows the list to the commands starting with it
	for c in $(commands); do
		run complete xiptool "${c:0:2}"
		grep -qx "$c" <<<"$output" || { echo "${c:0:2} does not offer $c"; false; }
		if grep -qv "^${c:0:2}" <<<"$output"; then
			echo "${c:0:2} offers more than its matches: $output"
			false
		fi
	done
	# global options before the command are skipped
	run complete xiptool -v ""
	[ "$output" = "$(commands)" ]
}

@test "options: global ones, and each command's own from its --help" {
	run complete xiptool -
	[ "$("$XIPTOOL" --help | grep -oE -- '--[a-z][a-z-]+' | sort -u | wc -l)" -ge 2 ]
	[ "$(commands | wc -l)" -ge 15 ]
	for o in $("$XIPTOOL" --help | grep -oE -- '--[a-z][a-z-]+' | sort -u); do
		grep -qx -- "$o" <<<"$output" || { echo "global $o missing"; false; }
	done
	for c in $(commands); do
		[ "$c" = help ] && continue
		run complete xiptool "$c" --
		# at least --help: an empty list would check nothing
		"$XIPTOOL" "$c" --help | grepq -- '--help'
		for o in $("$XIPTOOL" "$c" --help | grep -oE -- '--[a-z][a-z0-9-]*' | sort -u); do
			grep -qx -- "$o" <<<"$output" || { echo "$c: $o missing"; false; }
		done
		# and nothing that is not an option of this command
		for o in $(grep -- '^--' <<<"$output"); do
			"$XIPTOOL" "$c" --help | grepq -- "$o\b" ||
				{ echo "$c: $o offered but not in --help"; false; }
		done
	done
}

@test "IMAGE arguments complete host files" {
	mktree
	run complete xiptool ls "$T/a.i"
	[ "$output" = "$T/a.img" ]
	run complete xiptool read "$T/tr"
	[ "$output" = "$T/tree" ]
}

@test "PATH arguments complete names inside the image via xiptool ls" {
	mktree
	run complete xiptool read "$T/a.img" /
	[ "$output" = "$(expected / "")" ] || { echo "got: $output"; echo "want: $(expected / "")"; false; }
	run complete xiptool read "$T/a.img" /e
	[ "$output" = "$(expected / e)" ]
	[ "$(wc -l <<<"$output")" -eq 2 ]   # /etc/ and /etc-link
	run complete xiptool stat "$T/a.img" /etc/
	[ "$output" = "$(expected /etc/ "")" ]
	grep -qx '/etc/with\\ space' <<<"$output"
	grep -qx '/etc/sub/' <<<"$output"
	run complete xiptool ls "$T/a.img" /etc/su
	[ "$output" = /etc/sub/ ]
	run complete xiptool read "$T/a.img" /etc/sub/
	[ "$output" = /etc/sub/deep ]
	# dot names only when asked for
	run complete xiptool read "$T/a.img" /etc/.
	[ "$output" = "$(expected /etc/ .)" ]
	[ "$output" = /etc/.profile ]
	run complete xiptool read "$T/a.img" /.
	[ "$output" = /.hidden/ ]
	# relative to the image root
	run complete xiptool read "$T/a.img" etc/m
	[ "$output" = etc/motd ]
	# nothing for a directory that does not exist, or a file used as one
	run complete xiptool read "$T/a.img" /nope/
	[ -z "$output" ]
	run complete xiptool read "$T/a.img" /etc/motd/
	[ -z "$output" ]
}

@test "PATH completion skips options and their values to find IMAGE" {
	mktree
	run complete xiptool read --offset 4 -o "$T/out" "$T/a.img" /et
	[ "$output" = "$(expected / et)" ]
	run complete xiptool read --length=3 "$T/a.img" /etc/m
	[ "$output" = /etc/motd ]
	run complete xiptool -v ls -l "$T/a.img" /u
	[ "$output" = /usr/ ]
	# options whose value follows after a space in --help ("--env NAME=VALUE")
	if commands | grepq -x exec; then
		run complete xiptool exec -e FOO=1 "$T/a.img" /b
		[ "$output" = /bin/ ]
	fi
	# the value of an option is not a path in the image
	run complete xiptool read "$T/a.img" -o "$T/a.i"
	[ "$output" = "$T/a.img" ]
}

@test "PATH completion follows the image through every command that takes one" {
	mktree
	for c in read stat ls write truncate exec align-check; do
		commands | grepq -x "$c" || continue
		run complete xiptool "$c" "$T/a.img" /b
		[ "$output" = /bin/ ] || { echo "$c: got '$output'"; false; }
	done
	if commands | grepq -x align-check; then
		run complete xiptool align-check "$T/a.img" /bin/busybox /e
		[ "$output" = "$(expected / e)" ]
	fi
	if commands | grepq -x truncate; then
		# the third argument of truncate is a size, not a path
		run complete xiptool truncate "$T/a.img" /etc/motd /e
		[ "$output" != "$(expected / e)" ] || [ -z "$(expected / e)" ]
	fi
}

@test "extract: IMAGE, then a host directory, then a path inside the image" {
	mktree
	mkdir "$T/outdir"
	run complete xiptool extract "$T/a.i"
	[ "$output" = "$T/a.img" ]
	# DIR: host directories only
	run complete xiptool extract "$T/a.img" "$T/o"
	[ "$output" = "$T/outdir" ]
	run complete xiptool extract "$T/a.img" "$T/a."
	[ -z "$output" ]
	# PATH: names inside the image, options skipped
	run complete xiptool extract --no-owner "$T/a.img" "$T/outdir" /e
	[ "$output" = "$(expected / e)" ]
	run complete xiptool extract "$T/a.img" "$T/outdir" /etc/su
	[ "$output" = /etc/sub/ ]
	# nothing after PATH
	run complete xiptool extract "$T/a.img" "$T/outdir" /etc "$T/a"
	[ -z "$output" ]
}

@test "mkfs --tar completes tar archives, compressed or not" {
	mkdir "$T/d"
	: > "$T/d/root.tar"
	: > "$T/d/layer.tar.zst"
	: > "$T/d/other.txt"
	run complete xiptool mkfs --tar "$T/d/"
	[ "$output" = "$(printf '%s\n' "$T/d/layer.tar.zst" "$T/d/root.tar")" ]
}

@test "mkfs --oci completes layout directories, then the layout's tags (bash, zsh)" {
	mkdir -p "$T/L/blobs" "$T/other"
	echo '{"schemaVersion":2,"manifests":[{"digest":"sha256:0","annotations":{"org.opencontainers.image.ref.name":"v1"}},{"annotations":{"org.opencontainers.image.ref.name":"latest"}}]}' > "$T/L/index.json"
	run complete xiptool mkfs --oci "$T/L:"
	[ "$output" = "$(printf 'latest\nv1')" ] || { echo "got: $output"; false; }
	run complete xiptool mkfs --oci "$T/L:l"
	[ "$output" = latest ] || { echo "got: $output"; false; }
	run complete xiptool mkfs --oci "$T/o"
	[ "$output" = "$T/other" ] || { echo "got: $output"; false; }
	if command -v zsh >/dev/null; then
		run zsh -c "source <(sed '\$d' '$TOP_SRCDIR/completions/_xiptool')
			compadd() { print -l -- \"\${@[2,-1]}\"; }
			compset() { :; }
			PREFIX='$T/L:'; _xiptool_oci_layout"
		[ "$output" = "$(printf 'v1\nlatest')" ] || { echo "got: $output"; false; }
	fi
}

@test "@NAME completes attached segment names from xiptool list" {
	commands | grepq -x attach || skip "attach is not available yet"
	commands | grepq -x list || skip "list is not available yet"
	require_root
	mktree
	SEG=cpl-$$
	run "$XIPTOOL" attach -n "$SEG" "$T/a.img"
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	names=$("$XIPTOOL" list --noheadings --raw --output NAME | LC_ALL=C sort)
	grep -qx "$SEG" <<<"$names"
	run complete xiptool info @
	[ "$output" = "$(sed 's/^/@/' <<<"$names")" ]
	run complete xiptool info "@cpl-$$"
	[ "$output" = "@$SEG" ]
	run complete xiptool info @no-such-segment-
	[ -z "$output" ]
	# and paths inside the segment's image
	run complete xiptool read "@$SEG" /etc/m
	[ "$output" = /etc/motd ]
	if commands | grepq -x detach; then
		run complete xiptool detach cpl-
		grep -qx "$SEG" <<<"$output"
	fi
	# ps takes segment names, bare or as @NAME, after its options
	run complete xiptool ps --json cpl-
	[ "$output" = "$SEG" ]
	run complete xiptool ps "@cpl-$$"
	[ "$output" = "@$SEG" ]
	# and extract takes @NAME as its IMAGE
	run complete xiptool extract "@cpl-$$"
	[ "$output" = "@$SEG" ]
}

# zsh_complete WORD...: the candidates of _xiptool_image_path for the last
# WORD, with zsh's compadd replaced by one that prints what it is given
# (filtered by the prefix, as compadd does).
zsh_complete() {
	{
		echo "source <(sed '\$d' '$TOP_SRCDIR/completions/_xiptool')"
		echo "PATH='$T/bin':\$PATH"
		cat <<'EOS'
compadd() {
	local arr="" suf=""
	while (($#)); do
		case $1 in
		-a) arr=$2; shift 2 ;;
		-S) suf=$2; shift 2 ;;
		*) shift ;;
		esac
	done
	local x
	for x in ${(P)arr}; do
		[[ $x == ${(b)PREFIX}* ]] && print -r -- "$x$suf"
	done
}
EOS
		printf 'words=('
		printf '%q ' "${@:2}"
		printf ')\n'
		echo "CURRENT=$(($# - 1))"
		printf 'PREFIX=%q\n' "${!#}"
		echo '_xiptool_image_path'
	} >"$T/drive.zsh"
	zsh -f "$T/drive.zsh" | LC_ALL=C sort
}

@test "zsh: PATH arguments complete names inside the image" {
	require_cmd zsh
	mktree
	run zsh_complete xiptool read "$T/a.img" /e
	[ "$output" = "$(printf '/etc-link\n/etc/')" ] || { echo "got: $output"; false; }
	run zsh_complete xiptool stat -J "$T/a.img" /etc/
	[ "$output" = "$(expected /etc/ "" | sed 's/\\//g')" ] || { echo "got: $output"; false; }
	run zsh_complete xiptool read --offset 4 "$T/a.img" /etc/.
	[ "$output" = /etc/.profile ]
	run zsh_complete xiptool ls "$T/a.img" /nope/
	[ -z "$output" ]
}

@test "attach completes the NBD URI forms besides image files" {
	commands | grepq -x attach || skip "attach is not available yet"
	run complete xiptool attach nbd
	[ "$(grep :// <<<"$output")" = "$(printf 'nbd+unix:///\nnbd://\nnbds+unix:///\nnbds://')" ] ||
		{ echo "got: $output"; false; }
	run complete xiptool attach -t sw nbd+u
	[ "$output" = "nbd+unix:///" ]
	# files still complete, next to the URIs
	mkdir "$T/d"
	touch "$T/d/nbd-root.img"
	run bash -c "cd '$T/d' && $(declare -f complete); T='$T' TOP_SRCDIR='$TOP_SRCDIR' XIPTOOL_RUNDIR='$T/run'; complete xiptool attach nbd"
	grep -qx 'nbd-root.img' <<<"$output" || { echo "got: $output"; false; }
	grep -qx 'nbd://' <<<"$output"
	# only where attach takes its source
	run complete xiptool info nbd
	if grep -q :// <<<"$output"; then
		echo "info offers NBD URIs: $output"
		false
	fi
	if command -v zsh >/dev/null; then
		grep -q "'1:image or NBD URI:_xiptool_attach_source'" "$TOP_SRCDIR/completions/_xiptool"
		run zsh -c "source <(sed '\$d' '$TOP_SRCDIR/completions/_xiptool')
			compadd() { print -l -- \"\${@[-4,-1]}\"; }
			_xiptool_image() { :; }
			PREFIX=nbd; _xiptool_attach_source"
		[ "$output" = "$(printf 'nbd://\nnbds://\nnbd+unix:///\nnbds+unix:///')" ] ||
			{ echo "got: $output"; false; }
	fi
}

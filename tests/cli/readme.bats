#!/usr/bin/env bats
# The README's examples, run in order as a new user would follow them: its
# shell blocks (```sh, and the prompted lines of ```console) pasted into
# one fresh shell (HOME, a system PATH and TERM only) in the clone right
# after the quick start, nothing installed: the README's own first lines
# must put the build's xiptool, manual pages and plugin in reach.  A block
# marked <!-- readme-test: skip REASON --> is left out, and said so
# (tests/lib/readme-blocks.py).

load ../lib/common

bats_require_minimum_version 1.5.0

BLOCKS="$TOP_SRCDIR/tests/lib/readme-blocks.py"

setup() {
	common_setup
	# the tour makes its own directory in the home directory
	W=$T/home/xiptool-tour
	mkdir -p "$T/home" "$T/run"
	export XIPTOOL_RUNDIR=$T/run
}

teardown() {
	local p
	# a server an example started and a failure left running
	for p in "$W"/*.pid; do
		[ -f "$p" ] && kill "$(cat "$p")" 2>/dev/null
	done
	if [ -d "$T/run" ]; then
		umount "$W/mnt" 2>/dev/null || true
		xiptool detach --all --force >/dev/null 2>&1 || true
	fi
	common_teardown
}

# readme_run FILE DIR: run the examples of FILE in a fresh shell started
# in DIR ($output, $status).  Its environment is a new login's: HOME,
# PATH and TERM, and XIPTOOL_RUNDIR, so that the run's segments are its
# own registry's, not the machine's (xiptool's default, /run/xiptool,
# holds other users' and other tests').
readme_run() {
	"$PY" "$BLOCKS" "$1" > "$T/readme.sh"
	cd "$2"
	# fd 3 closed: a server an example leaves in the background must not
	# hold the TAP stream open
	run timeout 600 env -i HOME="$T/home" \
		PATH=/usr/sbin:/usr/bin:/sbin:/bin TERM="${TERM:-dumb}" \
		XIPTOOL_RUNDIR="$XIPTOOL_RUNDIR" bash "$T/readme.sh" 3>&-
	cd "$T"
}

@test "readme: every example of README.md runs, in order, in a fresh shell in the build tree" {
	local top=${TOP_BUILDDIR:-$TOP_SRCDIR}
	require_loop
	require_cmd nbdkit gzip e2fsck man
	[ -x /bin/busybox ] || skip "busybox-static is not installed"
	if ldd /bin/busybox >/dev/null 2>&1; then
		skip "/bin/busybox is dynamic (busybox-static is not installed)"
	fi
	[ -e "$top/nbdkit-xiptool-plugin.so" ] ||
		skip "the nbdkit plugin was not built (nbdkit-plugin-dev missing at configure time)"
	# the quick start builds in the clone, which is then the build tree;
	# an out-of-tree build's directory holds the same: xiptool, the
	# plugin, man/man1
	ls -a "$top" > "$T/top-before"
	readme_run "$TOP_SRCDIR/README.md" "$top"
	echo "$output"
	grep '^skip ' <<<"$output" | sed 's/^/# /' >&3
	[ "$status" -eq 0 ]
	[ "${lines[-1]}" = done ]
	# man found the build tree's pages, the tour ran outside the tree
	grep -qx '  *xiptool-mkfs - build an ext2 XIP image.*' <<<"$output"
	ls -a "$top" | diff "$T/top-before" -
	# the tour and the sections after it ran; the quick start did not
	[ "$(grep -c '^run README.md:' <<<"$output")" -ge 11 ]
	grep -q "^skip README.md:[0-9]*: .*CI's own" <<<"$output"
	grep -qx 'hello from the segment' <<<"$output"
	grep -qx 'running from the pulled segment' <<<"$output"
	# what the examples made is what they say
	cmp "$W/outbox/checked.img" "$W/checked.img"
	e2fsck -fn "$W/rootfs.img"
	e2fsck -fn "$W/release.img"
	[ -z "$(ls "$T/run" | grep -v '\.lock$' || true)" ]
}

@test "readme: a failing example fails the run and names its line" {
	cat > "$T/R.md" <<-'EOF'
	# Sample

	```sh
	echo one > one.txt
	```

	<!-- readme-test: skip needs a printer -->
	```sh
	lp one.txt
	```

	```console
	# cat one.txt
	one
	# false; echo $?
	1
	# echo \
	  two
	```

	```
	$ this is output, not run
	```

	```sh
	true
	grep -q nothing one.txt
	echo not reached
	```
	EOF
	mkdir -p "$W"
	readme_run "$T/R.md" "$W"
	echo "$output"
	[ "$status" -eq 1 ]
	[ "${lines[0]}" = "run R.md:3" ]
	[ "${lines[1]}" = "skip R.md:8: needs a printer" ]
	[ "${lines[2]}" = "run R.md:12" ]
	[ "${lines[3]}" = one ]
	[ "${lines[4]}" = 1 ]
	[ "${lines[5]}" = "two" ]
	[ "${lines[6]}" = "run R.md:25" ]
	[ "${lines[7]}" = "R.md:27: failed (status 1): grep -q nothing one.txt" ]
	[ "${#lines[@]}" -eq 8 ]
	[ "$(cat "$W/one.txt")" = one ]
}

@test "readme: a marker without its block, or without a reason, is refused" {
	printf '<!-- readme-test: skip a reason -->\ntext\n' > "$T/A.md"
	run "$PY" "$BLOCKS" "$T/A.md"
	[ "$status" -ne 0 ]
	[[ "$output" == *"A.md:1: marker not followed by a shell example"* ]]
	printf '<!-- readme-test: skip -->\n```sh\ntrue\n```\n' > "$T/B.md"
	run "$PY" "$BLOCKS" "$T/B.md"
	[ "$status" -ne 0 ]
	[[ "$output" == *"B.md:1: a marker is <!-- readme-test: skip REASON -->"* ]]
	printf '```sh\ntrue\n' > "$T/C.md"
	run "$PY" "$BLOCKS" "$T/C.md"
	[ "$status" -ne 0 ]
	[[ "$output" == *"C.md:1: fence never closed"* ]]
}

# Shared helpers of the bats tests.  Load with: load ../lib/common

# A pipeline fails when any of its commands fails, not only the last: a
# crash or a wrong exit status of xiptool on the left of `| cmp` or
# `| grep` fails the test.  Set here, at load time, it holds in setup,
# in every test body and in teardown (bats runs them in the shell that
# loaded this file).  A command that legitimately dies of SIGPIPE (yes,
# an early exit of head or grep -q on the right) must not sit on the
# left of a pipe.
set -o pipefail

: "${XIPTOOL:=${TOP_BUILDDIR:-$PWD}/xiptool}"
: "${TOP_SRCDIR:=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}"
export XIPTOOL TOP_SRCDIR
PATH=/usr/sbin:/sbin:$PATH

xiptool() {
	"$XIPTOOL" "$@"
}

# use_test_hooks: run the test build (tests/hooks/, built by `make check`:
# the crash points and mkfs pauses that XIPTOOL_TEST_* drive, which the
# installed programs do not have) as xiptool from now on.
use_test_hooks() {
	XIPTOOL=${TOP_BUILDDIR:-$PWD}/tests/hooks/xiptool
	export XIPTOOL
}

# In setup of a file that called use_test_hooks: the test build is there.
require_test_hooks() {
	[ -x "$XIPTOOL" ] && [ -x "$(dirname "$XIPTOOL")/xiptool-main" ] ||
		{ echo "$XIPTOOL: no test build (make check builds it)"; false; }
}

# A scratch directory per test, removed afterwards.
common_setup() {
	T=$(mktemp -d "${BATS_TMPDIR:-/tmp}/xipt.XXXXXX")
	export T
}

common_teardown() {
	local m
	# unmount anything a failed test left mounted below $T
	if [ -n "${T:-}" ]; then
		for m in $(awk -v t="$T" 'index($2, t) == 1 { print $2 }' /proc/mounts | sort -r); do
			umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || true
		done
		rm -rf "$T"
	fi
}

setup() { common_setup; }
teardown() { common_teardown; }

# holder_lock FILE: the lock file xiptool's holders of FILE lock (flock):
# in the caller's run directory, named by FILE's device and inode
holder_lock() {
	local dev ino
	dev=$(stat -L -c %d "$1")
	ino=$(stat -L -c %i "$1")
	echo "${XIPTOOL_RUNDIR:-/run/xiptool}/.lock:$dev:$ino"
}

# as_nobody CMD...: run as uid and gid 65534 without capabilities
# (setpriv; the caller requires it)
as_nobody() {
	setpriv --reuid=65534 --regid=65534 --clear-groups \
		--inh-caps=-all --bounding-set=-all -- "$@"
}

# Skip unless we are root and loop devices work.
require_root() {
	[ "$(id -u)" -eq 0 ] || skip "needs root"
}

require_loop() {
	require_root
	[ -e /dev/loop-control ] || skip "no loop devices (/dev/loop-control missing)"
}

# fails_with STATUS MESSAGE CMD [ARG...]: CMD (run) exits with STATUS and
# prints exactly MESSAGE
fails_with() {
	local want=$1 msg=$2
	shift 2
	run "$@"
	echo "$output"
	[ "$status" -eq "$want" ]
	[ "$output" = "$msg" ]
}

# grepq ARGS...: grep -q that reads all of its input, for the right end of
# a pipe: grep -q leaves at the first match, and the writer, killed by
# SIGPIPE, would fail the pipeline under pipefail.
grepq() {
	grep "$@" >/dev/null
}

# Has process PID ended (or is it not ours to signal)?
gone() {
	if kill -0 "$1" 2>/dev/null; then
		return 1
	fi
}

# wait_until SECONDS CMD...: run CMD every 50 ms until it succeeds (0), or
# give up once SECONDS have passed (1).  Every wait on an outside thing
# (a server starting, a lock taken, a process gone) has this deadline.
wait_until() {
	local i n=$(($1 * 20))
	shift
	for ((i = 0; i < n; i++)); do
		"$@" && return 0
		sleep 0.05
	done
	return 1
}

require_cmd() {
	local c
	for c in "$@"; do
		command -v "$c" >/dev/null 2>&1 || skip "$c is not installed"
	done
}

# mkimg IMAGE SIZE [DIR] [extra mke2fs options...]
# An ext2 image with 4 KiB blocks made by the real mke2fs.
mkimg() {
	local img=$1 size=$2 dir=${3:-}
	shift 3 2>/dev/null || shift $#
	if [ -n "$dir" ]; then
		mke2fs -q -F -t ext2 -b 4096 -d "$dir" "$@" "$img" "$size" >/dev/null
	else
		mke2fs -q -F -t ext2 -b 4096 "$@" "$img" "$size" >/dev/null
	fi
}

# Trees made by gentree.py and compared as treelist.py lists them, with
# the system's python (wrappers around python3 can cost a second a call).
GENTREE="$TOP_SRCDIR/tests/gentree.py"
TREELIST="$TOP_SRCDIR/tests/lib/treelist.py"
PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3

# list DIR [treelist options]: the canonical listing of a tree
list() {
	"$PY" "$TREELIST" "$@"
}

# The file of the library lib$1 that xiptool-main loads at first use,
# after checking that none of the libraries it loads so is linked.
lazy_lib() {
	local main="$TOP_BUILDDIR/xiptool-main" soname
	if ldd "$main" | grep -E 'lib(archive|nbd|crypto|json-c|curl|mount)\.so'; then return 1; fi
	soname=$(grep -aoE -m1 "lib$1\.so\.[0-9]+" "$main" | head -1)
	[ -n "$soname" ] || return 1
	# awk reads to the end: an early exit would kill ldconfig with SIGPIPE
	ldconfig -p | awk -v s="$soname" '$1 == s && !n++ { print $NF }'
}

# `xiptool $1` refuses 1 MiB of random bytes ($T/rand): exit 3, one line
# naming the file.
random_refused() {
	head -c 1048576 /dev/urandom > "$T/rand"
	run xiptool "$1" "$T/rand"
	[ "$status" -eq 3 ]
	[ "${#lines[@]}" -eq 1 ]
	[[ "$output" == "xiptool $1: $T/rand: "* ]]
}

# probe_aux KIND PLATFORM: the auxiliary vector $IMG's /probe-KIND sees
# under `xiptool exec` (in $output): what every loader must give, and the
# same values (AT_HWCAP, AT_PAGESZ, ...) as when the kernel (or qemu)
# starts $PROBES/probe-KIND, but for AT_RANDOM and AT_EXECFN.
probe_aux() {
	local native want
	run xiptool exec "$IMG" "/probe-$1" aux
	[ "$status" -eq 0 ] || { echo "$1: $output"; false; }
	echo "$1: $output"
	for want in 'entry-ok 1' 'phdr-ok 1' 'base-ok 1' 'hwcap-ok 1' \
		"execfn /probe-$1" "platform $2"; do
		grep -qx "$want" <<<"$output"
	done
	case $1 in
	static*) grep -qx 'base zero' <<<"$output" ;;
	*) grep -qx 'base nonzero' <<<"$output" ;;
	esac
	native=$("$PROBES/probe-$1" aux | grep -v '^random\|^execfn')
	[ "$(grep -v '^random\|^execfn' <<<"$output")" = "$native" ]
}

# probe_maps KIND: $IMG's /probe-KIND under `xiptool exec` has its text
# mapped from the image at the block debugfs names (4 KiB blocks), and no
# mapping both writable and executable.
probe_maps() {
	local page blk
	run xiptool exec "$IMG" "/probe-$1" maps
	[ "$status" -eq 0 ]
	echo "$1: $output"
	page=$(sed -n 's/^text-page //p' <<<"$output")
	[ -n "$page" ]
	blk=$(debugfs -R "bmap /probe-$1 $page" "$IMG" 2>/dev/null)
	grep -qx "text-map $IMG $((blk * 4096)) r-xp" <<<"$output"
	grep -qx 'rwx 0' <<<"$output"
}

# e2fsck -fn finds nothing to fix in $1 (its report shown on failure).
fsck_clean() {
	run e2fsck -fn "$1"
	echo "$output"
	[ "$status" -eq 0 ]
}

# The value of a "Field: value" line of dumpe2fs -h.
dumpe2fs_field() {
	dumpe2fs -h "$1" 2>/dev/null | sed -n "s/^$2:[[:space:]]*//p"
}

# The value of a "Field: value" line of xiptool info.
info_field() {
	printf '%s\n' "$1" | sed -n "s/^$2:[[:space:]]*//p"
}

# Mount an image read-only through a loop device at $T/mnt (ext2 driver by
# default; pass ext4 to use that driver).
loop_mount() {
	local img=$1 fstype=${2:-ext2}
	mkdir -p "$T/mnt"
	mount -t "$fstype" -o loop,ro "$img" "$T/mnt"
}

loop_umount() {
	umount "$T/mnt"
}

# Free blocks of an image, as dumpe2fs counts them.
free_blocks() {
	dumpe2fs_field "$1" 'Free blocks'
}

# tmpfs_dir NAME: a tmpfs at $T/NAME, where many small files are made fast
# (common_teardown unmounts it).
tmpfs_dir() {
	mkdir -p "$T/$1"
	mount -t tmpfs -o size=4G tmpfs "$T/$1"
}

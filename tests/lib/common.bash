# Shared helpers of the bats tests.  Load with: load ../lib/common

: "${XIPTOOL:=${TOP_BUILDDIR:-$PWD}/xiptool}"
: "${TOP_SRCDIR:=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}"
export XIPTOOL TOP_SRCDIR
PATH=/usr/sbin:/sbin:$PATH

xiptool() {
	"$XIPTOOL" "$@"
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

# Skip unless we are root and loop devices work.
require_root() {
	[ "$(id -u)" -eq 0 ] || skip "needs root"
}

require_loop() {
	require_root
	[ -e /dev/loop-control ] || skip "no loop devices (/dev/loop-control missing)"
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

# Helpers of the attach, detach, list and save tests.  Load after common:
#   load ../lib/common
#   load ../lib/attach
# Every test gets its own registry ($T/run) and segment names that contain
# the scratch directory's unique suffix, so tests never touch the real
# registry nor each other's segments.

attach_setup() {
	common_setup
	export XIPTOOL_RUNDIR="$T/run"
	U=${T##*.}			# unique per test
	SEG="s$U"
}

# Release whatever a test left behind: mounts, loop devices, segments.
attach_teardown() {
	local m st path loop
	if [ -n "${T:-}" ]; then
		for m in $(awk -v t="$T" 'index($2, t) == 1 { print $2 }' /proc/mounts | sort -r); do
			umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || true
		done
		"$XIPTOOL" detach --all --force >/dev/null 2>&1 || true
		for st in "$T"/run/* "$T"/urun/*; do
			[ -f "$st" ] || continue
			path=$(sed -n 's/^path=//p' "$st")
			loop=$(sed -n 's/^loop=//p' "$st")
			# only if it still serves this segment
			[ -n "$loop" ] && [ -n "$path" ] &&
				[ "$(cat "/sys/block/${loop##*/}/loop/backing_file" 2>/dev/null)" = "$path" ] &&
				losetup -d "$loop" 2>/dev/null
			[ -n "$path" ] && { chattr -i "$path" 2>/dev/null || true; }
			[ -n "$path" ] && rm -f "$path"
		done
		for path in /dev/shm/xiptool-*"$U"*; do
			[ -e "$path" ] || continue
			for loop in $(losetup -n -O NAME -j "$path" 2>/dev/null); do
				losetup -d "$loop" 2>/dev/null
			done
			chattr -i "$path" 2>/dev/null || true
			rm -rf "$path"
		done
	fi
	common_teardown
}

setup() { attach_setup; }
teardown() { attach_teardown; }

# An image of this machine's busybox at $T/img (/bin/busybox); skips
# unless that busybox is static.
static_busybox_image() {
	require_cmd busybox
	file -L "$(command -v busybox)" 2>/dev/null | grepq 'statically linked' || skip "busybox is not static"
	mkdir -p "$T/tree/bin"
	cp "$(command -v busybox)" "$T/tree/bin/busybox"
	xiptool mkfs -d "$T/tree" "$T/img" >/dev/null
}

# A small tree and a 16 MiB ext2 image of it (4 KiB blocks) at $T/img.
make_tree_image() {
	mkdir -p "$T/tree/dir/sub"
	printf 'hello\n' > "$T/tree/hello.txt"
	head -c 40960 /dev/urandom > "$T/tree/small.bin"
	head -c 300000 /dev/urandom > "$T/tree/dir/blob"
	ln -s hello.txt "$T/tree/link"
	mkimg "$T/img" 16M "$T/tree" -L "l$U" "$@"
}

# attach_tree_loop [-t TYPE] ARGS...: make_tree_image (ARGS passed on),
# attached as $SEG (of TYPE, default sr) with a loop device: the device
# in $dev, the segment file in $path.
attach_tree_loop() {
	local type=sr
	if [ "${1:-}" = -t ]; then
		type=$2
		shift 2
	fi
	require_loop
	make_tree_image "$@"
	run xiptool attach -t "$type" --loop -n "$SEG" "$T/img"
	[ "$status" -eq 0 ]
	dev=${output##* }
	path=$(seg_col "$SEG" PATH)
}

# No segment file of segment $1 is left in directory $2 (/dev/shm and
# root's tmpfs with huge pages, RUNDIR.shm beside the run directory): its
# name is xiptool-NAME. (xiptool-UID:NAME. for users) and random bits.
no_segfile() {
	local f dir
	for dir in ${2:-/dev/shm "$XIPTOOL_RUNDIR.shm"}; do
		for f in "$dir/xiptool-$1".* "$dir/xiptool-"*":$1".*; do
			[ -e "$f" ] || [ -L "$f" ] || continue
			echo "left behind: $f"
			return 1
		done
	done
}

# The value of one column of `xiptool list` for segment $1.
seg_col() {
	"$XIPTOOL" list --noheadings -r -o "$2" "$1"
}

# Wait until loop device $1 no longer serves segment file $2 (the kernel
# may clear it on the last close; another test may bind it again at once).
loop_gone() {
	local i f="/sys/block/${1##*/}/loop/backing_file"
	for i in $(seq 50); do
		[ -e "$f" ] || return 0
		[ -n "${2:-}" ] && [ "$(cat "$f" 2>/dev/null)" != "$2" ] && return 0
		sleep 0.1
	done
	return 1
}

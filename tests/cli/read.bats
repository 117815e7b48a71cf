#!/usr/bin/env bats
# xiptool read against the source tree mke2fs -d copied, debugfs and the
# kernel's own reading of the same image.

load ../lib/common

BS=4096
# file sizes around every block-map boundary of a 4 KiB-block ext2 inode:
# direct (12), indirect (12 + 1024), double indirect
SIZES="0 1 4095 4096 4097 $((12 * BS)) $((13 * BS)) $((12 * BS + 1)) \
$((1036 * BS)) $((1036 * BS + 1)) $((1037 * BS))"

make_tree() {
	local s
	mkdir -p "$T/tree/dir/sub"
	for s in $SIZES; do
		head -c "$s" /dev/urandom > "$T/tree/f$s"
	done
	head -c 5000000 /dev/urandom > "$T/tree/big"
	# sparse: a hole, data, a hole at the end
	truncate -s 10M "$T/tree/sparse"
	printf 'middle' | dd of="$T/tree/sparse" bs=1 seek=6000000 conv=notrunc status=none
	# data behind the triple-indirect boundary (file block 1049612)
	truncate -s 5G "$T/tree/huge"
	printf 'far' | dd of="$T/tree/huge" bs=1 seek=4500000000 conv=notrunc status=none
	# all hole
	truncate -s 1M "$T/tree/empty-sparse"
	printf 'hello\n' > "$T/tree/dir/sub/hello"
	ln -s sub/hello "$T/tree/dir/rel"
	ln -s /dir/sub/hello "$T/tree/dir/abs"
	ln -s ../../../../../dir/sub/hello "$T/tree/dir/escape"
	ln -s "$(printf 'x%.0s' $(seq 1 100))" "$T/tree/slowlink"
	ln -s sub "$T/tree/dir/sublink"
	ln -s loop2 "$T/tree/loop1"
	ln -s loop1 "$T/tree/loop2"
	ln -s nowhere "$T/tree/dangling"
}

@test "read of every file equals the source bytes (boundaries, sparse, > 4 MiB, triple indirect)" {
	make_tree
	mkimg "$T/img" 64M "$T/tree"
	for f in "$T"/tree/f* "$T/tree/big" "$T/tree/sparse" "$T/tree/empty-sparse" "$T/tree/huge"; do
		xiptool read "$T/img" "/${f##*/}" | cmp - "$f"
	done
	# the output file variant
	xiptool read -o "$T/out" "$T/img" /big
	cmp "$T/out" "$T/tree/big"
}

@test "read agrees with debugfs cat and with the kernel (ext2 and ext4 drivers)" {
	require_loop
	make_tree
	mkimg "$T/img" 64M "$T/tree"
	for drv in ext2 ext4; do
		loop_mount "$T/img" "$drv"
		for f in f$((1037 * BS)) big sparse; do
			xiptool read "$T/img" "/$f" | cmp - "$T/mnt/$f"
		done
		loop_umount
	done
	for f in f4097 sparse; do
		debugfs -R "cat /$f" "$T/img" 2>/dev/null | cmp - <(xiptool read "$T/img" "/$f")
	done
}

@test "read of extent-mapped files of an ext4 image" {
	make_tree
	rm -f "$T/tree/huge"	# ext4 without huge_file would not care; keep it fast
	mke2fs -q -F -t ext4 -b 4096 -d "$T/tree" "$T/img4" 64M
	for f in f$((1037 * BS)) big sparse empty-sparse f1 f0; do
		xiptool read "$T/img4" "/$f" | cmp - "$T/tree/$f"
	done
	run xiptool stat "$T/img4" /big
	[ "$status" -eq 0 ]
	[[ "$output" == *"Extents:"*yes* ]]
}

@test "--offset and --length select the same bytes as dd" {
	make_tree
	mkimg "$T/img" 64M "$T/tree"
	f=$T/tree/big
	for spec in 0:1 1:4095 4095:2 4096:4096 49000:5000 4243000:700000 4999990:100 5000000:10 6000000:1; do
		off=${spec%%:*} len=${spec##*:}
		xiptool read --offset "$off" --length "$len" "$T/img" /big > "$T/part"
		dd if="$f" bs=1M iflag=skip_bytes,count_bytes skip="$off" count="$len" status=none | cmp - "$T/part"
	done
	xiptool read --offset 4K --length 1K "$T/img" /big | cmp - <(dd if="$f" bs=1024 skip=4 count=1 status=none)
	xiptool read --offset 5999990 --length 20 "$T/img" /sparse | cmp - <(dd if="$T/tree/sparse" bs=1 skip=5999990 count=20 status=none)
}

@test "paths: symlinks inside the image, . and .., never above the root" {
	make_tree
	mkimg "$T/img" 64M "$T/tree"
	[ "$(xiptool read "$T/img" /dir/rel)" = hello ]
	[ "$(xiptool read "$T/img" /dir/abs)" = hello ]
	[ "$(xiptool read "$T/img" /dir/escape)" = hello ]
	[ "$(xiptool read "$T/img" /dir/sublink/hello)" = hello ]
	[ "$(xiptool read "$T/img" /../../dir/./sub/../sub//hello)" = hello ]
	[ "$(xiptool read "$T/img" dir/sub/hello)" = hello ]
	fails_with 3 "xiptool read: /slowlink: not found in $T/img" \
		xiptool read "$T/img" /slowlink
}

@test "errors: missing, directory, not a directory, loop, dangling link" {
	make_tree
	mkimg "$T/img" 64M "$T/tree"
	fails_with 3 "xiptool read: /nope: not found in $T/img" \
		xiptool read "$T/img" /nope
	fails_with 3 "xiptool read: /nodir/deeper/f: directory /nodir not found in $T/img" \
		xiptool read "$T/img" /nodir/deeper/f
	fails_with 3 "xiptool read: /dir: is a directory in $T/img: list it with 'xiptool ls $T/img /dir'" \
		xiptool read "$T/img" /dir
	fails_with 3 "xiptool read: /f1/x: /f1 is not a directory in $T/img" \
		xiptool read "$T/img" /f1/x
	fails_with 3 "xiptool read: /f1/: not a directory in $T/img" \
		xiptool read "$T/img" /f1/
	fails_with 3 "xiptool read: /loop1: Too many levels of symbolic links" \
		xiptool read "$T/img" /loop1
	fails_with 3 "xiptool read: /dangling: not found in $T/img" \
		xiptool read "$T/img" /dangling
	# the output's failure blames the output, not the file read
	if [ -w /dev/full ]; then
		fails_with 3 "xiptool read: /dev/full: write error: No space left on device" \
			xiptool read -o /dev/full "$T/img" /f4096
	fi
	run xiptool read "$T/img"
	[ "$status" -eq 2 ]
	run xiptool read --offset 1Q "$T/img" /f1
	[ "$status" -eq 2 ]
}

# read_refused DEBUGFS-REQUEST PATH MESSAGE: in a copy of $T/img ($T/bad)
# changed by the debugfs request, reading PATH fails (3) with MESSAGE.
read_refused() {
	cp "$T/img" "$T/bad"
	debugfs -w -R "$1" "$T/bad" 2>/dev/null
	run xiptool read "$T/bad" "$2"
	[ "$status" -eq 3 ]
	[[ "$output" == *"$3"* ]]
}

@test "damaged block maps are refused before any pointer is formed" {
	make_tree
	mkimg "$T/img" 64M "$T/tree"
	big=f$((1037 * BS))
	# a direct block number beyond the end of the image
	read_refused "sif /$big block[2] 999999" "/$big" "block 999999 (file block 2) beyond end of image"
	# a direct block pointing at the group descriptors
	read_refused "sif /$big block[3] 1" "/$big" "block 1 (file block 3) lies in file system metadata"
	# the indirect block itself out of range
	read_refused "sif /$big block[IND] 4000000000" "/$big" "indirect block 4000000000 (file block 12) beyond end of image"
	# a number read out of the double-indirect block
	cp "$T/img" "$T/bad"
	dind=$(debugfs -R "stat /$big" "$T/img" 2>/dev/null | sed -n 's/.*(DIND):\([0-9]*\).*/\1/p')
	[ -n "$dind" ]
	printf '\xff\xff\xff\x7f' | dd of="$T/bad" bs=1 seek=$((dind * BS)) conv=notrunc status=none
	run xiptool read "$T/bad" "/$big"
	[ "$status" -eq 3 ]
	[[ "$output" == *"indirect block 2147483647 (file block 1036) beyond end of image"* ]]
	# the first 1036 blocks are still readable
	xiptool read --length $((1036 * BS)) "$T/bad" "/$big" | cmp - <(head -c $((1036 * BS)) "$T/tree/$big")
}

@test "extent and inline-data flags on an image without those features are refused" {
	make_tree
	mkimg "$T/img" 64M "$T/tree"
	read_refused "sif /f4097 flags 0x80000" /f4097 "extents flag set but the image lacks the extents feature"
	read_refused "sif /f4097 flags 0x10000000" /f4097 "lacks the inline_data feature"
}

@test "read takes a shared lock: readers run together, a writer's lock makes it wait and fail" {
	require_cmd flock
	mkimg "$T/img" 8M
	xiptool ls "$T/img" / >/dev/null	# the run directory made
	lock=$(holder_lock "$T/img")
	flock -s "$lock" -c "'$XIPTOOL' read '$T/img' /lost+found/. >/dev/null 2>&1; '$XIPTOOL' ls '$T/img' /" | grepq -x lost+found
	run flock -x "$lock" -c "timeout 20 '$XIPTOOL' ls '$T/img' /"
	[ "$status" -eq 3 ]
	[[ "$output" == *"busy"* ]]
}

# the system calls that moved the file's bytes, one name per line
moved_by() {
	# (the leak checker of a sanitizer build cannot run under ptrace)
	ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" \
		strace -f -qq -e trace=copy_file_range,splice,sendfile -o "$T/trace" "$@"
	grep -oE '^[0-9 ]*(copy_file_range|splice|sendfile)' "$T/trace" |
		grep -oE '[a-z_]+$' | sort -u
}

@test "the kernel moves the data: copy_file_range to a file, splice to a pipe, sendfile to a device or socket" {
	command -v strace >/dev/null || skip "strace is not installed"
	make_tree
	mkimg "$T/img" 64M "$T/tree"
	run moved_by "$XIPTOOL" read -o "$T/out" "$T/img" /big
	[ "$status" -eq 0 ]
	[ "$output" = copy_file_range ]
	cmp "$T/out" "$T/tree/big"
	# holes come out as zeros, data runs by the kernel
	run moved_by "$XIPTOOL" read -o "$T/out" "$T/img" /sparse
	[ "$output" = copy_file_range ]
	cmp "$T/out" "$T/tree/sparse"
	moved_by sh -c '"$1" read "$2" /big | cat > "$3"' sh "$XIPTOOL" "$T/img" "$T/out" > "$T/how"
	[ "$(cat "$T/how")" = splice ]
	cmp "$T/out" "$T/tree/big"
	run moved_by sh -c '"$1" read "$2" /big > /dev/null' sh "$XIPTOOL" "$T/img"
	[ "$output" = sendfile ]
	# a socket: the reader on the other end gets every byte
	python3 - "$XIPTOOL" "$T/img" "$T/out" <<'PY'
import socket, subprocess, sys
a, b = socket.socketpair()
p = subprocess.Popen([sys.argv[1], "read", sys.argv[2], "/big"], stdout=a)
a.close()
with open(sys.argv[3], "wb") as f:
    while True:
        d = b.recv(1 << 20)
        if not d:
            break
        f.write(d)
sys.exit(p.wait())
PY
	cmp "$T/out" "$T/tree/big"
}

@test "outputs the kernel cannot copy to still get every byte: O_APPEND, --offset/--length, a closed pipe" {
	make_tree
	mkimg "$T/img" 64M "$T/tree"
	printf 'head' > "$T/out"
	"$XIPTOOL" read "$T/img" /big >> "$T/out"
	{ printf 'head'; cat "$T/tree/big"; } | cmp - "$T/out"
	"$XIPTOOL" read --offset 4095 --length 1000003 "$T/img" /sparse > "$T/out"
	dd if="$T/tree/sparse" bs=1M iflag=skip_bytes,count_bytes skip=4095 count=1000003 status=none | cmp - "$T/out"
	"$XIPTOOL" read --offset 5999990 --length 20 "$T/img" /sparse | cat > "$T/out"
	dd if="$T/tree/sparse" bs=1M iflag=skip_bytes,count_bytes skip=5999990 count=20 status=none | cmp - "$T/out"
	# the reader goes away: no error message for a broken pipe, no hang
	run env --default-signal=PIPE \
		sh -c '"$1" read "$2" /big | head -c 10 | wc -c' sh "$XIPTOOL" "$T/img"
	[ "$status" -eq 0 ]
	[ "$output" = 10 ]
}

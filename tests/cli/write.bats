#!/usr/bin/env bats
# xiptool write against a model file on the host, checked by e2fsck,
# debugfs and the kernel.

load ../lib/common

BS=4096

@test "writes at every boundary match the model; debugfs, the kernel and e2fsck agree" {
	require_loop
	mkdir -p "$T/tree"
	head -c 70000 /dev/urandom > "$T/tree/f"
	cp "$T/tree/f" "$T/model"
	mkimg "$T/img" 32M "$T/tree"
	for spec in 0:1 4095:2 $((12 * BS - 1)):2 $((1036 * BS - 5)):10 $((1037 * BS)):$((3 * BS)) 100:200000 70000:1; do
		off=${spec%%:*} len=${spec##*:}
		head -c "$len" /dev/urandom > "$T/in"
		xiptool write --offset "$off" --input "$T/in" "$T/img" /f
		dd if="$T/in" of="$T/model" bs=1M oflag=seek_bytes seek="$off" conv=notrunc status=none
	done
	xiptool read "$T/img" /f | cmp - "$T/model"
	debugfs -R "cat /f" "$T/img" 2>/dev/null | cmp - "$T/model"
	e2fsck -fn "$T/img"
	for drv in ext2 ext4; do
		loop_mount "$T/img" "$drv"
		cmp "$T/mnt/f" "$T/model"
		loop_umount
	done
}

@test "stdin and --append; mtime and ctime move forward" {
	mkdir -p "$T/tree"
	printf 'one\n' > "$T/tree/f"
	touch -d '2001-01-01' "$T/tree/f"
	mkimg "$T/img" 16M "$T/tree"
	before=$(date +%s)
	printf 'two\n' | xiptool write --append "$T/img" /f
	head -c 3000000 /dev/urandom | tee "$T/big" | xiptool write --append "$T/img" /f
	(printf 'one\ntwo\n'; cat "$T/big") | cmp - <(xiptool read "$T/img" /f)
	# the input as the last argument, like -i
	printf 'ONE' > "$T/in"
	xiptool write "$T/img" /f "$T/in"
	[ "$(xiptool read --length 8 "$T/img" /f)" = "ONE
two" ]
	run xiptool write --input "$T/in" "$T/img" /f "$T/in"
	[ "$status" -eq 2 ]
	m=$(debugfs -R "stat /f" "$T/img" 2>/dev/null | sed -n 's/^ *mtime: 0x\([0-9a-f]*\).*/\1/p')
	[ $((16#$m)) -ge "$before" ]
	c=$(debugfs -R "stat /f" "$T/img" 2>/dev/null | sed -n 's/^ *ctime: 0x\([0-9a-f]*\).*/\1/p')
	[ $((16#$c)) -ge "$before" ]
	e2fsck -fn "$T/img"
}

@test "--create makes the directory entry (mode, owner); the parent must exist" {
	require_loop
	mkimg "$T/img" 16M
	printf 'hello' | xiptool write --create --mode 640 "$T/img" /new
	printf 'x' | xiptool write --create "$T/img" /new	# exists: written in place
	[ "$(xiptool read "$T/img" /new)" = xello ]
	run xiptool write --create "$T/img" /nodir/f < /dev/null
	[ "$status" -eq 3 ]
	[ "$output" = "xiptool write: /nodir/f: directory /nodir not found in $T/img" ]
	run xiptool write "$T/img" /absent < /dev/null
	[ "$status" -eq 3 ]
	[ "$output" = "xiptool write: /absent: not found in $T/img" ]
	run xiptool write --create "$T/img" /new/f < /dev/null
	[ "$status" -eq 3 ]
	[ "$output" = "xiptool write: /new/f: /new is not a directory in $T/img" ]
	run xiptool write --create "$T/img" /lost+found < /dev/null
	[ "$status" -eq 3 ]
	[[ "$output" == *"Is a directory"* ]]
	run xiptool write --mode 600 "$T/img" /new < /dev/null
	[ "$status" -eq 2 ]
	# enough entries to need new directory blocks
	for i in $(seq 1 150); do
		xiptool write --create "$T/img" "/lost+found/a-rather-long-file-name-number-$i" < /dev/null
	done
	e2fsck -fn "$T/img"
	loop_mount "$T/img"
	[ "$(stat -c '%a %u %g %s' "$T/mnt/new")" = "640 $(id -u) $(id -g) 5" ]
	[ "$(ls "$T/mnt/lost+found" | wc -l)" -eq 150 ]
	loop_umount
}

@test "holes: reading allocates nothing; writing allocates exactly the touched blocks, the rest reads zero" {
	mkdir -p "$T/tree"
	truncate -s 20M "$T/tree/sparse"
	mkimg "$T/img" 32M "$T/tree"
	sum=$(md5sum < "$T/img")
	xiptool read "$T/img" /sparse | cmp - "$T/tree/sparse"
	[ "$(md5sum < "$T/img")" = "$sum" ]
	free0=$(free_blocks "$T/img")
	# one byte in a direct block: one block
	printf 'A' | xiptool write --offset 5000 "$T/img" /sparse
	[ "$(free_blocks "$T/img")" -eq $((free0 - 1)) ]
	# one byte behind the indirect boundary: the indirect block and one data block
	printf 'B' | xiptool write --offset $((12 * BS + 10)) "$T/img" /sparse
	[ "$(free_blocks "$T/img")" -eq $((free0 - 3)) ]
	# three blocks of the double-indirect tree: dind, ind, three data blocks
	head -c $((BS + 2)) /dev/zero | tr '\0' C | xiptool write --offset $((1036 * BS + BS - 1)) "$T/img" /sparse
	[ "$(free_blocks "$T/img")" -eq $((free0 - 3 - 5)) ]
	cp "$T/tree/sparse" "$T/model"
	printf 'A' | dd of="$T/model" bs=1 seek=5000 conv=notrunc status=none
	printf 'B' | dd of="$T/model" bs=1 seek=$((12 * BS + 10)) conv=notrunc status=none
	head -c $((BS + 2)) /dev/zero | tr '\0' C | dd of="$T/model" bs=1 seek=$((1036 * BS + BS - 1)) conv=notrunc status=none
	xiptool read "$T/img" /sparse | cmp - "$T/model"
	[ "$(xiptool stat "$T/img" /sparse | sed -n 's/^Data blocks: *//p')" -eq 5 ]
	e2fsck -fn "$T/img"
}

@test "a read-only image is refused with EROFS and stays byte-identical" {
	mkdir -p "$T/tree"
	printf 'data' > "$T/tree/f"
	mkimg "$T/img" 16M "$T/tree"
	chmod 444 "$T/img"
	sum=$(md5sum < "$T/img")
	run xiptool write "$T/img" /f <<<"new"
	[ "$status" -eq 3 ]
	[[ "$output" == "xiptool write: $T/img: read-only"* ]]
	run xiptool truncate "$T/img" /f 0
	[ "$status" -eq 3 ]
	[[ "$output" == *"read-only"* ]]
	[ "$(md5sum < "$T/img")" = "$sum" ]
	[ "$(xiptool read "$T/img" /f)" = data ]
}

@test "image full: ENOSPC reported, nothing visible past the old size, e2fsck clean" {
	mkdir -p "$T/tree"
	head -c 10000 /dev/urandom > "$T/tree/f"
	mkimg "$T/img" 4M "$T/tree"
	free0=$(free_blocks "$T/img")
	head -c 8M /dev/urandom > "$T/in"
	run xiptool write --append --input "$T/in" "$T/img" /f
	[ "$status" -eq 3 ]
	[[ "$output" == "xiptool write: /f: no space left in $T/img"* ]]
	e2fsck -fn "$T/img"
	xiptool read "$T/img" /f | cmp - "$T/tree/f"
	[ "$(free_blocks "$T/img")" -eq "$free0" ]
	# a new file: left empty
	run xiptool write --create --input "$T/in" "$T/img" /g
	[ "$status" -eq 3 ]
	[ "$(xiptool stat "$T/img" /g | sed -n 's/^Size: *//p')" -eq 0 ]
	e2fsck -fn "$T/img"
	# there was room for this much all along
	head -c $(( (free0 - 10) * BS )) "$T/in" | xiptool write "$T/img" /g
	e2fsck -fn "$T/img"
}

@test "a write that fails leaves the file byte for byte as it was: over old data, into holes, past the end, from a file and from a pipe" {
	mkdir -p "$T/tree"
	head -c 10000 /dev/urandom > "$T/tree/f"
	mkimg "$T/img" 4M "$T/tree"
	# holes in the middle, data after them
	head -c 5000 /dev/urandom > "$T/mid"
	xiptool write --offset $((40 * BS)) --input "$T/mid" "$T/img" /f
	xiptool read "$T/img" /f > "$T/before"
	stat0=$(debugfs -R "stat /f" "$T/img" 2>/dev/null | grep -v time)
	free0=$(free_blocks "$T/img")
	head -c 8M /dev/zero | tr '\0' 'Z' > "$T/in"
	run xiptool write --input "$T/in" "$T/img" /f
	[ "$status" -eq 3 ]
	[[ "$output" == "xiptool write: /f: no space left in $T/img"* ]]
	xiptool read "$T/img" /f | cmp - "$T/before"
	debugfs -R "cat /f" "$T/img" 2>/dev/null | cmp - "$T/before"
	[ "$(debugfs -R "stat /f" "$T/img" 2>/dev/null | grep -v time)" = "$stat0" ]
	[ "$(free_blocks "$T/img")" -eq "$free0" ]
	e2fsck -fn "$T/img"
	# the same from a pipe, at an offset inside the holes
	run sh -c "cat '$T/in' | '$XIPTOOL' write --offset 5000 '$T/img' /f"
	[ "$status" -eq 3 ]
	xiptool read "$T/img" /f | cmp - "$T/before"
	[ "$(debugfs -R "stat /f" "$T/img" 2>/dev/null | grep -v time)" = "$stat0" ]
	[ "$(free_blocks "$T/img")" -eq "$free0" ]
	e2fsck -fn "$T/img"
}

@test "large files: a write past 4 GiB sets large_file; the kernel sees the size" {
	require_loop
	mkimg "$T/img" 16M "" -O ^large_file
	# mke2fs 1.47 sets large_file regardless: clear it
	debugfs -w -R "feature -large_file" "$T/img" >/dev/null 2>&1
	if dumpe2fs -h "$T/img" 2>/dev/null | grepq large_file; then false; fi
	printf 'far' | xiptool write --create --offset 5G "$T/img" /big
	dumpe2fs -h "$T/img" 2>/dev/null | grepq large_file
	e2fsck -fn "$T/img"
	loop_mount "$T/img"
	[ "$(stat -c %s "$T/mnt/big")" -eq $((5 * 1024 * 1024 * 1024 + 3)) ]
	[ "$(tail -c 3 "$T/mnt/big")" = far ]
	loop_umount
	[ "$(xiptool read --offset 5G "$T/img" /big)" = far ]
}

@test "writers are exclusive: a reader's shared lock makes write wait, then fail" {
	require_cmd flock
	mkimg "$T/img" 8M
	printf 'x' | xiptool write --create "$T/img" /f
	run flock -s "$(holder_lock "$T/img")" -c "printf y | '$XIPTOOL' write '$T/img' /f"
	[ "$status" -eq 3 ]
	[[ "$output" == *"busy"* ]]
	[ "$(xiptool read "$T/img" /f)" = x ]
	# two writers at once: both land, in some order, and the image is clean
	head -c 2M /dev/urandom > "$T/a"
	head -c 2M /dev/urandom > "$T/b"
	xiptool write --create --input "$T/a" "$T/img" /a & pa=$!
	xiptool write --create --input "$T/b" "$T/img" /b & pb=$!
	wait $pa
	wait $pb
	xiptool read "$T/img" /a | cmp - "$T/a"
	xiptool read "$T/img" /b | cmp - "$T/b"
	e2fsck -fn "$T/img"
}

@test "extent-mapped files (ext4) are written in place; unwritten extents are refused" {
	require_loop
	mkdir -p "$T/tree"
	head -c 50000 /dev/urandom > "$T/tree/f"
	mke2fs -q -F -t ext4 -b 4096 -d "$T/tree" "$T/img" 32M
	cp "$T/tree/f" "$T/model"
	head -c 300000 /dev/urandom > "$T/in"
	xiptool write --offset 2M --input "$T/in" "$T/img" /f
	dd if="$T/in" of="$T/model" bs=1M oflag=seek_bytes seek=2M conv=notrunc status=none
	xiptool read "$T/img" /f | cmp - "$T/model"
	e2fsck -fn "$T/img"
	[[ "$(xiptool stat "$T/img" /f)" == *"Extents:"*yes* ]]
	# fallocate leaves an unwritten extent
	mkdir -p "$T/mnt"
	mount -t ext4 -o loop "$T/img" "$T/mnt"
	fallocate -l 1M "$T/mnt/pre"
	umount "$T/mnt"
	run xiptool write "$T/img" /pre <<<"x"
	[ "$status" -eq 3 ]
	[[ "$output" == *"unwritten extents is not supported"* ]]
	[ "$(xiptool read "$T/img" /pre | tr -d '\0' | wc -c)" -eq 0 ]
	loop_mount "$T/img" ext4
	cmp "$T/mnt/f" "$T/model"
	loop_umount
}

@test "a regular file goes in by copy_file_range, a pipe by pwrite: never through the mapping; the kernel reads both back" {
	command -v strace >/dev/null || skip "strace is not installed"
	require_loop
	mkdir -p "$T/tree"
	printf 'x' > "$T/tree/keep"
	mkimg "$T/img" 64M "$T/tree"
	# crosses the indirect and double-indirect boundaries, unaligned tail
	head -c $((1040 * BS + 777)) /dev/urandom > "$T/in"
	ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" \
		strace -f -qq -e trace=copy_file_range,pwrite64 -o "$T/trace" \
		"$XIPTOOL" write --create --input "$T/in" "$T/img" /file
	# the data: a few large copies, not one call per block
	n=$(grep -c 'copy_file_range(' "$T/trace")
	[ "$n" -ge 1 ]
	[ "$n" -le 16 ]
	cat "$T/in" | ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" \
		strace -f -qq -e trace=copy_file_range,pwrite64 -o "$T/trace" \
		"$XIPTOOL" write --create "$T/img" /piped
	if grep -q 'copy_file_range(' "$T/trace"; then false; fi
	# whole runs of blocks per pwrite, not a block at a time
	grep -qE 'pwrite64\([0-9]+, ".*"\.\.\., [0-9]{6,}, [0-9]+\)' "$T/trace"
	xiptool read "$T/img" /file | cmp - "$T/in"
	xiptool read "$T/img" /piped | cmp - "$T/in"
	e2fsck -fn "$T/img"
	loop_mount "$T/img" ext2
	cmp "$T/mnt/file" "$T/in"
	cmp "$T/mnt/piped" "$T/in"
	loop_umount
}

@test "a pipe over 16 MiB is gathered in an unlinked file of TMPDIR, then copied in by the kernel" {
	command -v strace >/dev/null || skip "strace is not installed"
	mkdir -p "$T/tree" "$T/tmp"
	printf 'x' > "$T/tree/keep"
	mkimg "$T/img" 64M "$T/tree"
	head -c $((20 * 1024 * 1024 + 333)) /dev/urandom > "$T/in"
	cat "$T/in" | TMPDIR="$T/tmp" ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" \
		strace -f -qq -e trace=copy_file_range,openat -o "$T/trace" \
		"$XIPTOOL" write --create "$T/img" /big
	grep -q "openat(AT_FDCWD, \"$T/tmp\", O_RDWR|O_CLOEXEC|O_TMPFILE" "$T/trace"
	n=$(grep -c 'copy_file_range(' "$T/trace")
	[ "$n" -ge 1 ]
	[ "$n" -le 16 ]
	[ -z "$(ls -A "$T/tmp")" ]
	xiptool read "$T/img" /big | cmp - "$T/in"
	e2fsck -fn "$T/img"
	# too large for the image: refused whole, the old file as it was
	cp "$T/img" "$T/before"
	run bash -c 'head -c $((70 * 1024 * 1024)) /dev/zero | tr "\0" y |
		TMPDIR="$T/tmp" "$XIPTOOL" write "$T/img" /big'
	[ "$status" -eq 3 ]
	[[ "$output" == *"no space left in $T/img"* ]]
	xiptool read "$T/img" /big | cmp - "$T/in"
	e2fsck -fn "$T/img"
	[ -z "$(ls -A "$T/tmp")" ]
}

@test "write on a damaged map that names its own indirect block as data: refused before any byte, the file still reads" {
	local before
	# the fuzzer's image (tests/fuzz/regress/write): /sparse's file block 78
	# is its own indirect block
	sh "$TOP_SRCDIR/tests/fuzz/regress/write/data-block-in-own-map.sh" "$T/dm.img"
	head -c 3334 /dev/urandom > "$T/w1"
	head -c 12336 /dev/urandom > "$T/w2"
	# a new block: the map is copied, the old indirect block freed
	xiptool write --offset 307204 "$T/dm.img" /sparse "$T/w1"
	xiptool read "$T/dm.img" /sparse > "$T/before"
	# the copy lands in the freed block, which file block 78 names
	run xiptool write --offset 310538 "$T/dm.img" /sparse "$T/w2"
	echo "$output"
	[ "$status" -eq 3 ]
	[ "${#lines[@]}" -eq 1 ]
	grepq "inode 30: file blocks from 78 are in blocks from 32, one of which holds the file's block map (a damaged image)" <<<"$output"
	# nothing changed: the file reads as before, its map whole
	xiptool read "$T/dm.img" /sparse > "$T/after"
	cmp "$T/before" "$T/after"
}

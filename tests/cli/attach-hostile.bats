#!/usr/bin/env bats
# attach, detach, list and save beside hostile local users: a segment file
# replaced after attach, names of two users, permissions of the segment,
# files that are not images, a planted run directory, and images that
# decompress to more than they claim or than memory holds.

load ../lib/common
load ../lib/attach

# Run a command as the unprivileged user 65534.
asuser() {
	setpriv --reuid=65534 --regid=65534 --clear-groups -- "$@"
}

# Files of $T readable by user 65534.
open_scratch() {
	chmod 755 "$T"
	[ -e "$T/img" ] && chmod 644 "$T/img"
	return 0
}

# An image with /bin/busybox, at $T/bb.img.
busybox_image() {
	[ -x /bin/busybox ] || skip "busybox-static is not installed"
	mkdir -p "$T/bbtree/bin"
	cp /bin/busybox "$T/bbtree/bin/busybox"
	xiptool mkfs -d "$T/bbtree" "$T/bb.img" >/dev/null
}

@test "the state file records the segment file's device, inode and owner" {
	make_tree_image
	xiptool attach -n "$SEG" "$T/img"
	path=$(seg_col "$SEG" PATH)
	st="$T/run/$SEG"
	[ "$(sed -n 's/^dev=//p' "$st")" = "$(stat -c %d "$path")" ]
	[ "$(sed -n 's/^ino=//p' "$st")" = "$(stat -c %i "$path")" ]
	[ "$(sed -n 's/^fileuid=//p' "$st")" = "$(stat -c %u "$path")" ]
}

@test "a symlink planted where a vanished segment was: write refuses, the victim is untouched, detach removes only the entry" {
	require_root
	make_tree_image
	cp "$T/img" "$T/victim.img"
	chmod 600 "$T/victim.img"
	sum=$(md5sum < "$T/victim.img")
	xiptool attach -t sw -n "$SEG" "$T/img"
	path=$(seg_col "$SEG" PATH)
	rm -f "$path"
	ln -s "$T/victim.img" "$path"
	printf 'owned\n' > "$T/data"
	run xiptool write "@$SEG" /hello.txt "$T/data"
	[ "$status" -eq 3 ]
	[ "$output" = "xiptool write: @$SEG: $path is not the segment that was attached (device/inode changed): refusing" ]
	[ "$(md5sum < "$T/victim.img")" = "$sum" ]
	run xiptool save "$SEG" "$T/out.img"
	[ "$status" -eq 3 ]
	[[ "$output" == *"is not the segment that was attached"* ]]
	[ ! -e "$T/out.img" ]
	run xiptool detach "$SEG"
	[ "$status" -eq 3 ]
	[ "$output" = "xiptool detach: $SEG: $path is not the segment that was attached (device/inode changed): entry removed, the file left alone" ]
	[ ! -e "$T/run/$SEG" ]
	[ -L "$path" ]
	[ "$(md5sum < "$T/victim.img")" = "$sum" ]
	rm -f "$path"
}

@test "another user's file planted where a vanished segment was: root's exec and read refuse it" {
	require_root
	require_cmd setpriv
	busybox_image
	chmod 755 "$T"
	chmod 644 "$T/bb.img"
	xiptool attach -n "$SEG" "$T/bb.img"
	path=$(seg_col "$SEG" PATH)
	run xiptool exec "@$SEG" /bin/busybox true
	[ "$status" -eq 0 ]
	# /dev/shm emptied (a reboot with /run on disk), a user moves in
	rm -f "$path"
	asuser cp "$T/bb.img" "$path"
	[ "$(stat -c %u "$path")" = 65534 ]
	run xiptool exec "@$SEG" /bin/busybox id -u
	[ "$status" -eq 3 ]
	[ "$output" = "xiptool exec: @$SEG: $path is not the segment that was attached (device/inode changed): refusing" ]
	run xiptool read "@$SEG" /bin/busybox
	[ "$status" -eq 3 ]
	[[ "$output" == *"is not the segment that was attached"* ]]
	# list drops the entry, the user's file stays theirs
	run xiptool list -n -o NAME
	[ "$status" -eq 0 ]
	[ -z "$output" ]
	[ ! -e "$T/run/$SEG" ]
	[ "$(stat -c %u "$path")" = 65534 ]
	rm -f "$path"
}

@test "a segment file replaced by another of the same owner is refused too (inode changed)" {
	make_tree_image
	xiptool attach -n "$SEG" "$T/img"
	path=$(seg_col "$SEG" PATH)
	cp "$path" "$T/copy"
	rm -f "$path"
	cp "$T/copy" "$path"
	run xiptool info "@$SEG"
	[ "$status" -eq 3 ]
	[[ "$output" == *"$path is not the segment that was attached (device/inode changed): refusing" ]]
	# a FIFO in its place does not hang anyone
	rm -f "$path"
	mkfifo "$path"
	run timeout 10 "$XIPTOOL" info "@$SEG"
	[ "$status" -eq 3 ]
	[[ "$output" == *"is not the segment that was attached"* ]]
	run timeout 10 "$XIPTOOL" detach "$SEG"
	[ "$status" -eq 3 ]
	[ -p "$path" ]
	rm -f "$path"
}

@test "two users' names never share a segment file" {
	require_root
	require_cmd setpriv
	make_tree_image
	open_scratch
	mkdir -m 700 "$T/urun"
	chown 65534:65534 "$T/urun"
	run asuser env XIPTOOL_RUNDIR="$T/urun" "$XIPTOOL" attach -n "$SEG" "$T/img"
	[ "$status" -eq 0 ]
	upath=$(asuser env XIPTOOL_RUNDIR="$T/urun" "$XIPTOOL" list -n -r -o PATH "$SEG")
	run xiptool attach -n "65534-$SEG" "$T/img"
	[ "$status" -eq 0 ]
	rpath=$(seg_col "65534-$SEG" PATH)
	[ "$upath" != "$rpath" ]
	[ "$(stat -c %u "$upath")" = 65534 ]
	[ "$(stat -c %i "$upath")" != "$(stat -c %i "$rpath")" ]
	# a name is a name: no separator the user's names may contain
	[[ "$upath" == "/dev/shm/xiptool-65534:$SEG" ]]
	run asuser env XIPTOOL_RUNDIR="$T/urun" "$XIPTOOL" detach "$SEG"
	[ "$status" -eq 0 ]
	[ -e "$rpath" ]
}

@test "a segment is no more readable than its image: owner and mode kept, writes dropped for sr and er" {
	require_root
	require_cmd setpriv
	make_tree_image
	chmod 755 "$T"
	chmod 600 "$T/img"
	xiptool attach -n "$SEG" "$T/img"
	path=$(seg_col "$SEG" PATH)
	[ "$(stat -c '%u %g %a' "$path")" = "0 0 400" ]
	run asuser cat "$path"
	[ "$status" -ne 0 ]
	# owner and group of the image, minus the write bits for read-only types
	chown 65534:65534 "$T/img"
	chmod 640 "$T/img"
	xiptool attach -t er -n "e$SEG" "$T/img"
	[ "$(stat -c '%u %g %a' "$(seg_col "e$SEG" PATH)")" = "65534 65534 440" ]
	xiptool attach -t sw -n "w$SEG" "$T/img"
	[ "$(stat -c '%u %g %a' "$(seg_col "w$SEG" PATH)")" = "65534 65534 640" ]
	# set-id bits never travel
	chmod 6755 "$T/img"
	xiptool attach -n "x$SEG" "$T/img"
	[ "$(stat -c %a "$(seg_col "x$SEG" PATH)")" = 555 ]
	# no source: the caller's, 0600
	xiptool attach -t sn -n "n$SEG" --size 1M
	[ "$(stat -c '%u %a' "$(seg_col "n$SEG" PATH)")" = "0 600" ]
	# root still writes an sw segment it made from a read-only image
	chmod 444 "$T/img"
	xiptool attach -t sw -n "r$SEG" "$T/img"
	[ "$(stat -c %a "$(seg_col "r$SEG" PATH)")" = 644 ]
	printf 'x\n' > "$T/data"
	run xiptool write "@r$SEG" /hello.txt "$T/data"
	[ "$status" -eq 0 ]
}

@test "a file that is not an ext2 image is refused unless --raw; nothing is left behind" {
	printf 'root:$6$secret:19000:0:99999:7:::\n' > "$T/shadow"
	chmod 600 "$T/shadow"
	run xiptool attach -n "$SEG" "$T/shadow"
	[ "$status" -eq 3 ]
	[ "$output" = "xiptool attach: $T/shadow: not an ext2 image (no ext2 superblock): give --raw to attach it anyway" ]
	[ ! -e "/dev/shm/xiptool-$SEG" ]
	[ -z "$(ls "$T/run" 2>/dev/null)" ]
	# compressed: checked on the first decompressed bytes
	head -c 8M /dev/zero | gzip -c > "$T/zeros.gz"
	run xiptool attach -n "$SEG" "$T/zeros.gz"
	[ "$status" -eq 3 ]
	[[ "$output" == *"$T/zeros.gz: not an ext2 image"* ]]
	[ ! -e "/dev/shm/xiptool-$SEG" ]
	# asked for explicitly
	run xiptool attach --raw -n "$SEG" "$T/shadow"
	[ "$status" -eq 0 ]
	path=$(seg_col "$SEG" PATH)
	cmp -n "$(stat -c %s "$T/shadow")" "$path" "$T/shadow"
	[ "$(stat -c %a "$path")" = 400 ]
	run xiptool attach -t sn --raw -n "n$SEG" --size 1M
	[ "$status" -eq 2 ]
}

@test "a planted run directory is refused: a symlink, another user's, writable by others" {
	require_root
	make_tree_image
	mkdir -m 700 "$T/real"
	ln -s "$T/real" "$T/link"
	run env XIPTOOL_RUNDIR="$T/link" "$XIPTOOL" attach -n "$SEG" "$T/img"
	[ "$status" -eq 3 ]
	[ "$output" = "xiptool attach: $T/link: run directory is a symbolic link: refusing" ]
	[ ! -e "/dev/shm/xiptool-$SEG" ]
	[ -z "$(ls "$T/real")" ]
	run env XIPTOOL_RUNDIR="$T/link" "$XIPTOOL" list
	[ "$status" -eq 3 ]
	# $XDG_RUNTIME_DIR/xiptool of a user, a symlink to their own directory
	if command -v setpriv >/dev/null; then
		chmod 755 "$T"
		mkdir -m 700 "$T/xdg" "$T/xdg/mine"
		ln -s mine "$T/xdg/xiptool"
		chown -h 65534:65534 "$T/xdg" "$T/xdg/mine" "$T/xdg/xiptool"
		run asuser env -u XIPTOOL_RUNDIR XDG_RUNTIME_DIR="$T/xdg" "$XIPTOOL" list
		[ "$status" -eq 3 ]
		[ "$output" = "xiptool list: $T/xdg/xiptool: run directory is a symbolic link: refusing" ]
	fi
	mkdir -m 700 "$T/theirs"
	chown 65534 "$T/theirs"
	run env XIPTOOL_RUNDIR="$T/theirs" "$XIPTOOL" list
	[ "$status" -eq 3 ]
	[[ "$output" == "xiptool list: $T/theirs: run directory must belong to uid 0 and not be writable by others" ]]
	mkdir -m 770 "$T/group"
	run env XIPTOOL_RUNDIR="$T/group" "$XIPTOOL" list
	[ "$status" -eq 3 ]
	[[ "$output" == "xiptool list: $T/group: run directory must belong to uid 0"* ]]
}

# A gzip file that starts as an ext2 image ($T/img) and decompresses to
# $1 MiB more zeros (concatenated members of 64 MiB each).
zero_bomb() {
	local mb=$1 i
	gzip -1 -c "$T/img" > "$T/bomb.gz"
	head -c 64M /dev/zero | gzip -1 -c > "$T/z64.gz"
	for ((i = 0; i < mb / 64; i++)); do cat "$T/z64.gz"; done >> "$T/bomb.gz"
}

@test "--size is a hard limit while decompressing: stop at once, reserve no more, leave nothing" {
	require_cmd prlimit
	make_tree_image
	zero_bomb 2048
	# a file size limit catches any reservation beyond it (SIGXFSZ)
	run timeout 10 prlimit --fsize=$((128 << 20)) -- "$XIPTOOL" attach --loop -n "$SEG" --size 64M "$T/bomb.gz"
	[ "$status" -eq 3 ]
	[ "$output" = "xiptool attach: $T/bomb.gz: decompresses to more than --size (67108864 bytes)" ]
	[ ! -e "/dev/shm/xiptool-$SEG" ]
	[ -z "$(ls "$T/run" 2>/dev/null)" ]
	[ -z "$(losetup -n -j "/dev/shm/xiptool-$SEG" 2>/dev/null)" ]
}

@test "a gzip trailer claiming 4 GiB reserves nothing of it" {
	require_cmd prlimit python3
	python3 - "$T/liar.gz" <<'PY'
import gzip, struct, sys
data = bytearray(gzip.compress(b"hello"))
data[-4:] = struct.pack("<I", 0xffffffff)	# ISIZE: 4 GiB - 1
open(sys.argv[1], "wb").write(data)
PY
	[ "$(stat -c %s "$T/liar.gz")" -lt 40 ]
	run timeout 10 prlimit --fsize=$((64 << 20)) -- "$XIPTOOL" attach --raw -n "$SEG" "$T/liar.gz"
	[ "$status" -eq 3 ]
	[[ "$output" == "xiptool attach: $T/liar.gz: gzip data is corrupt"* ]]
	[ ! -e "/dev/shm/xiptool-$SEG" ]
}

@test "without --size the free memory of the target caps a segment; nothing is left behind" {
	require_root
	make_tree_image
	mkdir "$T/shm"
	mount -t tmpfs -o size=8M tmpfs "$T/shm"
	export XIPTOOL_SHMDIR="$T/shm"
	run timeout 20 "$XIPTOOL" attach -n "$SEG" "$T/img"
	[ "$status" -eq 3 ]
	[[ "$output" == "xiptool attach: $T/img: 16777216 bytes do not fit in $T/shm ("*" bytes free)" ]]
	[ -z "$(ls "$T/shm")" ]
	[ -z "$(ls "$T/run" 2>/dev/null)" ]
	gzip -1 -c "$T/img" > "$T/img.gz"
	run timeout 20 "$XIPTOOL" attach -n "$SEG" "$T/img.gz"
	[ "$status" -eq 3 ]
	[[ "$output" == "xiptool attach: $T/img.gz: decompresses to more than the free memory of $T/shm ("*" bytes)" ]]
	[ -z "$(ls "$T/shm")" ]
	[ -z "$(ls "$T/run" 2>/dev/null)" ]
	run xiptool attach -t sn -n "$SEG" --size 64M
	[ "$status" -eq 3 ]
	[[ "$output" == "xiptool attach: $SEG: 67108864 bytes do not fit in $T/shm ("*" bytes free)" ]]
	[ -z "$(ls "$T/shm")" ]
	umount "$T/shm"
}

@test "a file planted where a new segment's file goes is refused and left as it was" {
	make_tree_image
	export XIPTOOL_SHMDIR="$T/shm"
	mkdir -m 0755 "$T/shm"
	printf 'planted' > "$T/shm/xiptool-$SEG"
	chmod 0644 "$T/shm/xiptool-$SEG"
	run xiptool attach -n "$SEG" "$T/img"
	[ "$status" -eq 3 ]
	[ "$output" = "xiptool attach: $T/shm/xiptool-$SEG: segment file exists (attached through another registry, or left over)" ]
	[ "$(cat "$T/shm/xiptool-$SEG")" = planted ]
	[ "$(stat -c %a "$T/shm/xiptool-$SEG")" = 644 ]
	[ ! -e "$T/run/$SEG" ]
}

#!/usr/bin/env bats
# xiptool save (and detach --save): the segment written back to an image
# file atomically, checked with e2fsck and debugfs.

load ../lib/common
load ../lib/attach

@test "sw: a change made through the loop device is in the saved image, e2fsck clean" {
	attach_tree_loop -t sw
	mkdir "$T/mnt"
	mount -t ext2 "$dev" "$T/mnt"
	printf 'changed\n' > "$T/mnt/new.txt"
	rm "$T/mnt/hello.txt"
	umount "$T/mnt"
	run xiptool save "$SEG" "$T/saved.img"
	[ "$status" -eq 0 ]
	[ -z "$output" ]
	e2fsck -fn "$T/saved.img"
	[ "$(debugfs -R 'cat /new.txt' "$T/saved.img" 2>/dev/null)" = changed ]
	run debugfs -R 'stat /hello.txt' "$T/saved.img"
	[[ "$output" == *"File not found"* ]]
	cmp "$(seg_col "$SEG" PATH)" "$T/saved.img"
	# save by loop device, over an existing file: replaced, not rewritten
	ino=$(stat -c %i "$T/saved.img")
	run xiptool save "$dev" "$T/saved.img"
	[ "$status" -eq 0 ]
	[ "$(stat -c %i "$T/saved.img")" != "$ino" ]
	[ -z "$(ls "$T" | grep 'saved.img.')" ]
}

@test "sw: a change written through @NAME is in the saved image" {
	make_tree_image
	xiptool attach -t sw -n "$SEG" "$T/img"
	printf 'through the engine\n' > "$T/data"
	run xiptool write "@$SEG" /hello.txt "$T/data"
	[ "$status" -eq 0 ]
	xiptool save "$SEG" "$T/saved.img"
	e2fsck -fn "$T/saved.img"
	[ "$(debugfs -R 'cat /hello.txt' "$T/saved.img" 2>/dev/null)" = "through the engine" ]
}

@test "sw: a change written by debugfs into the segment file is saved" {
	make_tree_image
	xiptool attach -t sw -n "$SEG" "$T/img"
	path=$(seg_col "$SEG" PATH)
	printf 'by debugfs\n' > "$T/data"
	debugfs -w -R "write $T/data /d.txt" "$path" >/dev/null 2>&1
	xiptool save "$SEG" "$T/saved.img"
	e2fsck -fn "$T/saved.img"
	[ "$(debugfs -R 'cat /d.txt' "$T/saved.img" 2>/dev/null)" = "by debugfs" ]
	# the saved image is sparse where the segment is zero
	[ "$(stat -c %b "$T/saved.img")" -lt $(( $(stat -c %s "$T/saved.img") / 512 / 2 )) ]
}

@test "save errors: unknown segment, bad destination; nothing is left behind" {
	make_tree_image
	xiptool attach -n "$SEG" "$T/img"
	run xiptool save "n$SEG" "$T/out.img"
	[ "$status" -eq 3 ]
	[ "$output" = "xiptool save: @n$SEG: no attached segment of that name" ]
	run xiptool save "$SEG" /dev/null
	[ "$status" -eq 3 ]
	[ "$output" = "xiptool save: /dev/null: not a regular file" ]
	run xiptool save "$SEG" "$T/no/such/dir/out.img"
	[ "$status" -eq 3 ]
	[ "$output" = "xiptool save: $T/no/such/dir/out.img: No such file or directory" ]
	run xiptool save "$SEG"
	[ "$status" -eq 2 ]
	[ ! -e "$T/out.img" ]
}

@test "save waits for no writer: an exclusive holder makes it fail busy" {
	make_tree_image
	xiptool attach -t ew -n "$SEG" "$T/img"
	path=$(seg_col "$SEG" PATH)
	flock -F -x "$(holder_lock "$path")" sleep 30 & holder=$!
	for i in $(seq 50); do grep -q " $holder " /proc/locks 2>/dev/null && break; sleep 0.05; done
	run xiptool save "$SEG" "$T/out.img"
	kill "$holder"; wait "$holder" 2>/dev/null || true
	[ "$status" -eq 3 ]
	[ "$output" = "xiptool save: $SEG: busy: the segment is held by process $holder (sleep)" ]
	[ ! -e "$T/out.img" ]
}

# Run a command as user $1 (no groups but its own).
as() {
	local u=$1
	shift
	setpriv --reuid="$u" --regid="$u" --clear-groups -- "$@"
}

@test "save: the image's owner and no wider mode, over the image too; another user reads nothing the image kept from them" {
	require_root
	require_cmd setpriv
	make_tree_image
	chmod 755 "$T"
	chown 65534:65534 "$T/img"
	chmod 600 "$T/img"
	xiptool attach -t sw -n "$SEG" "$T/img"
	# a new file: the image's owner and mode, whatever the umask allows
	run sh -c "umask 022; exec \"\$0\" save \"\$1\" \"\$2\"" "$XIPTOOL" "$SEG" "$T/new.img"
	[ "$status" -eq 0 ]
	[ "$(stat -c '%u %g %a' "$T/new.img")" = "65534 65534 600" ]
	run as 65533 cat "$T/new.img"
	[ "$status" -ne 0 ]
	cmp "$T/new.img" "$T/img"
	# back over the image: a new inode, the owner and mode kept
	printf 'saved\n' > "$T/data"
	xiptool write "@$SEG" /hello.txt "$T/data"
	ino=$(stat -c %i "$T/img")
	run xiptool save "$SEG" "$T/img"
	[ "$status" -eq 0 ]
	[ "$(stat -c %i "$T/img")" != "$ino" ]
	[ "$(stat -c '%u %g %a' "$T/img")" = "65534 65534 600" ]
	e2fsck -fn "$T/img"
	[ "$(debugfs -R 'cat /hello.txt' "$T/img" 2>/dev/null)" = saved ]
	# over a file more open than the image: narrowed to the image's bits
	install -m 666 /dev/null "$T/wide.img"
	run xiptool save "$SEG" "$T/wide.img"
	[ "$status" -eq 0 ]
	[ "$(stat -c '%u %a' "$T/wide.img")" = "65534 600" ]
	# over a file narrower than the image: the narrower bits stay
	chmod 644 "$T/img"
	xiptool attach -t sw -n "c$SEG" "$T/img"
	install -m 640 /dev/null "$T/narrow.img"
	run xiptool save "c$SEG" "$T/narrow.img"
	[ "$status" -eq 0 ]
	[ "$(stat -c '%u %g %a' "$T/narrow.img")" = "65534 65534 640" ]
	# a new file: the umask narrows the image's bits, never widens them
	run sh -c "umask 077; exec \"\$0\" save \"\$1\" \"\$2\"" "$XIPTOOL" "c$SEG" "$T/masked.img"
	[ "$status" -eq 0 ]
	[ "$(stat -c %a "$T/masked.img")" = 600 ]
	# detach --save: the same
	run xiptool detach --save "$T/last.img" "$SEG"
	[ "$status" -eq 0 ]
	[ "$(stat -c '%u %g %a' "$T/last.img")" = "65534 65534 600" ]
	run as 65533 cat "$T/last.img"
	[ "$status" -ne 0 ]
}

@test "save: a segment with no image file (sn) gives the caller's file, no more open than the segment" {
	require_root
	xiptool attach -t sn -n "$SEG" --size 1M
	run sh -c "umask 022; exec \"\$0\" save \"\$1\" \"\$2\"" "$XIPTOOL" "$SEG" "$T/zero.img"
	[ "$status" -eq 0 ]
	[ "$(stat -c '%u %a' "$T/zero.img")" = "0 600" ]
	cmp -n 1048576 "$T/zero.img" /dev/zero
}

# sw_segment_and_pub: as root, the tree image attached as $SEG of type sw
# and $T/pub, a directory every user may write in (as /tmp).
sw_segment_and_pub() {
	require_root
	require_cmd setpriv
	make_tree_image
	chmod 755 "$T"
	xiptool attach -t sw -n "$SEG" "$T/img"
	mkdir -m 1777 "$T/pub"
}

@test "save and detach --save: a symlink at the destination is refused, never followed nor replaced; a failed save leaves the old file whole" {
	sw_segment_and_pub
	# a symlink another user planted in $T/pub
	printf 'victim\n' > "$T/victim"
	chmod 666 "$T/victim"
	as 65534 ln -s "$T/victim" "$T/pub/out.img"
	run xiptool save "$SEG" "$T/pub/out.img"
	[ "$status" -eq 3 ]
	[ "$output" = "xiptool save: $T/pub/out.img: is a symbolic link; refusing to write through it" ]
	[ "$(readlink "$T/pub/out.img")" = "$T/victim" ]
	[ "$(cat "$T/victim")" = victim ]
	[ "$(ls -A "$T/pub")" = out.img ]
	run xiptool detach --save "$T/pub/out.img" "$SEG"
	[ "$status" -eq 3 ]
	[ "$output" = "xiptool detach: $T/pub/out.img: is a symbolic link; refusing to write through it" ]
	[ -n "$(seg_col "$SEG" PATH)" ]
	[ "$(cat "$T/victim")" = victim ]
	# no room for the new image: the old file stays as it was, no temporary
	mkdir "$T/small"
	mount -t tmpfs -o size=128k tmpfs "$T/small"
	printf 'old\n' > "$T/small/out.img"
	run xiptool save "$SEG" "$T/small/out.img"
	[ "$status" -eq 3 ]
	[ "$output" = "xiptool save: $T/small/out.img: No space left on device" ]
	[ "$(cat "$T/small/out.img")" = old ]
	[ "$(ls -A "$T/small")" = out.img ]
	umount "$T/small"
}

@test "save and detach --save: another user's file in a shared sticky directory is never written nor replaced" {
	sw_segment_and_pub
	as 65534 sh -c "echo theirs > '$T/pub/out.img'; chmod 666 '$T/pub/out.img'"
	ino=$(stat -c %i "$T/pub/out.img")
	run xiptool save "$SEG" "$T/pub/out.img"
	echo "$output"
	[ "$status" -eq 3 ]
	[ "$output" = "xiptool save: $T/pub/out.img: owned by another user (uid 65534) in a shared directory; refusing to replace it" ]
	run xiptool detach --save "$T/pub/out.img" "$SEG"
	[ "$status" -eq 3 ]
	[ "$output" = "xiptool detach: $T/pub/out.img: owned by another user (uid 65534) in a shared directory; refusing to replace it" ]
	[ -n "$(seg_col "$SEG" PATH)" ]
	[ "$(cat "$T/pub/out.img")" = theirs ]
	[ "$(stat -c '%i %u' "$T/pub/out.img")" = "$ino 65534" ]
	[ "$(ls -A "$T/pub")" = out.img ]
	# a new name there is root's own
	xiptool save "$SEG" "$T/pub/mine.img"
	[ "$(stat -c %u "$T/pub/mine.img")" -eq 0 ]
	e2fsck -fn "$T/pub/mine.img"
}

@test "save by a user: their own file, the image's group only when theirs to give, never wider than the image" {
	require_root
	require_cmd setpriv
	make_tree_image
	chmod 755 "$T"
	chown 65534:65534 "$T/img"
	chmod 640 "$T/img"
	mkdir -m 700 "$T/urun" "$T/out"
	chown 65534:65534 "$T/urun" "$T/out"
	run as 65534 env XIPTOOL_RUNDIR="$T/urun" "$XIPTOOL" attach -t sw -n "$SEG" "$T/img"
	[ "$status" -eq 0 ]
	run as 65534 env XIPTOOL_RUNDIR="$T/urun" sh -c 'umask 022; exec "$0" save "$1" "$2"' "$XIPTOOL" "$SEG" "$T/out/new.img"
	[ "$status" -eq 0 ]
	[ "$(stat -c '%u %g %a' "$T/out/new.img")" = "65534 65534 640" ]
	cmp "$T/out/new.img" "$T/img"
	# an image of a group the user is not in: that group's bits go
	chown 0:100 "$T/img"
	chmod 664 "$T/img"
	run as 65534 env XIPTOOL_RUNDIR="$T/urun" "$XIPTOOL" attach -t sw -n "g$SEG" "$T/img"
	[ "$status" -eq 0 ]
	run as 65534 env XIPTOOL_RUNDIR="$T/urun" sh -c 'umask 002; exec "$0" save "$1" "$2"' "$XIPTOOL" "g$SEG" "$T/out/g.img"
	[ "$status" -eq 0 ]
	[ "$(stat -c '%u %g %a' "$T/out/g.img")" = "65534 65534 604" ]
	run as 65534 env XIPTOOL_RUNDIR="$T/urun" "$XIPTOOL" detach "$SEG" "g$SEG"
	[ "$status" -eq 0 ]
}

#!/usr/bin/env bats
# xiptool save (and detach --save): the segment written back to an image
# file atomically, checked with e2fsck and debugfs.

load ../lib/common
load ../lib/attach

@test "sw: a change made through the loop device is in the saved image, e2fsck clean" {
	require_loop
	make_tree_image
	run xiptool attach -t sw --loop -n "$SEG" "$T/img"
	[ "$status" -eq 0 ]
	dev=${output##* }
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
	[[ "$output" == "xiptool save: $T/no/such/dir/out.img: cannot create: "* ]]
	run xiptool save "$SEG"
	[ "$status" -eq 2 ]
	[ ! -e "$T/out.img" ]
}

@test "save waits for no writer: an exclusive holder makes it fail busy" {
	make_tree_image
	xiptool attach -t ew -n "$SEG" "$T/img"
	path=$(seg_col "$SEG" PATH)
	flock -F -x "$path" sleep 30 & holder=$!
	for i in $(seq 50); do grep -q " $holder " /proc/locks 2>/dev/null && break; sleep 0.05; done
	run xiptool save "$SEG" "$T/out.img"
	kill "$holder"; wait "$holder" 2>/dev/null || true
	[ "$status" -eq 3 ]
	[ "$output" = "xiptool save: $SEG: busy: the segment is held by process $holder (sleep)" ]
	[ ! -e "$T/out.img" ]
}

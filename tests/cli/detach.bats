#!/usr/bin/env bats
# xiptool detach: releases loop devices, segment files and state files;
# refuses while the kernel or a running program uses the segment.

load ../lib/common
load ../lib/attach

@test "detach by loop device name releases everything" {
	attach_tree_loop
	run xiptool detach "$dev"
	[ "$status" -eq 0 ]
	[ -z "$output" ]
	loop_gone "$dev" "$path"
	[ ! -e "$path" ]
	[ ! -e "$T/run/$SEG" ]
}

@test "detach refuses while the loop device is mounted; --force detaches lazily" {
	attach_tree_loop
	mkdir "$T/mnt"
	mount -o ro "$dev" "$T/mnt"
	run xiptool detach "$SEG"
	[ "$status" -eq 3 ]
	[ "$output" = "xiptool detach: $SEG: busy: $dev is mounted on $T/mnt (use --force)" ]
	[ -e "$path" ]
	[ "$(seg_col "$SEG" LOOP)" = "$dev" ]
	run xiptool detach --force "$SEG"
	[ "$status" -eq 0 ]
	[ ! -e "$path" ]
	[ ! -e "$T/run/$SEG" ]
	# the mounted file system still reads its (now unlinked) segment
	cmp "$T/mnt/dir/blob" "$T/tree/dir/blob"
	umount "$T/mnt"
	loop_gone "$dev" "$path"
}

@test "a mount point whose name has a space: detach and ps name it as it is" {
	attach_tree_loop
	mkdir "$T/a dir"
	mount -o ro "$dev" "$T/a dir"
	run xiptool detach "$SEG"
	[ "$status" -eq 3 ]
	[ "$output" = "xiptool detach: $SEG: busy: $dev is mounted on $T/a dir (use --force)" ]
	run xiptool ps --noheadings "@$SEG"
	[ "$status" -eq 0 ]
	[[ "${lines[0]}" =~ ^$SEG\ +$dev\ on\ $T/a\ dir\ +[0-9]+\ +[0-9]+$ ]]
	umount "$T/a dir"
	xiptool detach "$SEG"
	loop_gone "$dev" "$path"
}

@test "detach refuses while a running program holds the segment; --force works" {
	make_tree_image
	xiptool attach -n "$SEG" "$T/img"
	path=$(seg_col "$SEG" PATH)
	# a running exec holds the segment's shared holder lock
	flock -F -s "$(holder_lock "$path")" sleep 30 & holder=$!
	for i in $(seq 50); do grep -q " $holder " /proc/locks 2>/dev/null && break; sleep 0.05; done
	run xiptool detach "$SEG"
	[ "$status" -eq 3 ]
	[ "$output" = "xiptool detach: $SEG: busy: the segment is held by process $holder (sleep) (use --force)" ]
	[ -e "$path" ]
	run xiptool detach -f "$SEG"
	kill "$holder"; wait "$holder" 2>/dev/null || true
	[ "$status" -eq 0 ]
	[ ! -e "$path" ]
	[ ! -e "$T/run/$SEG" ]
}

@test "detach --all releases every segment of the registry" {
	require_loop
	make_tree_image
	xiptool attach -n "a$SEG" "$T/img"
	run xiptool attach -n "b$SEG" -t sw --loop "$T/img"
	[ "$status" -eq 0 ]
	dev=${output##* }
	[ -b "$dev" ]
	path=$(seg_col "b$SEG" PATH)
	xiptool attach -n "c$SEG" -t sn --size 1M
	[ "$(xiptool list --noheadings | wc -l)" = 3 ]
	run xiptool detach --all
	[ "$status" -eq 0 ]
	[ -z "$(xiptool list --noheadings)" ]
	[ -z "$(ls "$T/run")" ]
	loop_gone "$dev" "$path"
	[ -z "$(ls /dev/shm | grep -- "$SEG")" ]
	[ -z "$(ls "$T/run.shm" | grep -- "$SEG")" ]
}

@test "detach --save writes the image first, atomically" {
	make_tree_image
	xiptool attach -n "$SEG" -t sw "$T/img"
	run xiptool detach --save "$T/out.img" "$SEG"
	[ "$status" -eq 0 ]
	cmp "$T/out.img" "$T/img"
	[ -z "$(ls "$T" | grep 'out.img.')" ]
	[ ! -e "$T/run/$SEG" ]
}

@test "stale entries are cleaned: segment file gone, loop device released elsewhere" {
	require_loop
	make_tree_image
	xiptool attach -n "$SEG" "$T/img"
	run xiptool attach -n "b$SEG" --loop "$T/img"
	dev=${output##* }
	rm -f "$(seg_col "$SEG" PATH)"
	run xiptool list --noheadings -o NAME
	[ "$status" -eq 0 ]
	[ "$output" = "b$SEG" ]
	[ ! -e "$T/run/$SEG" ]
	run xiptool detach "$SEG"
	[ "$status" -eq 3 ]
	[ "$output" = "xiptool detach: @$SEG: no attached segment of that name" ]
	losetup -d "$dev"
	loop_gone "$dev" "$(seg_col "b$SEG" PATH)"
	[ -z "$(seg_col "b$SEG" LOOP)" ]
	run xiptool detach "b$SEG"
	[ "$status" -eq 0 ]
}

@test "detach usage errors and unknown segments" {
	run xiptool detach
	[ "$status" -eq 2 ]
	[[ "${lines[0]}" == "xiptool detach: missing NAME (or --all)" ]]
	run xiptool detach --all foo
	[ "$status" -eq 2 ]
	run xiptool detach --save "$T/x" a b
	[ "$status" -eq 2 ]
	run xiptool detach "n$SEG"
	[ "$status" -eq 3 ]
	[ "$output" = "xiptool detach: @n$SEG: no attached segment of that name" ]
	run xiptool detach /dev/loop999
	[ "$status" -eq 3 ]
	[ "$output" = "xiptool detach: /dev/loop999: no attached segment uses this device" ]
}

@test "detach refuses while xiptool exec runs a program from the segment" {
	static_busybox_image
	xiptool attach -n "$SEG" "$T/img"
	"$XIPTOOL" exec "@$SEG" /bin/busybox sleep 30 & prog=$!
	for i in $(seq 100); do grep -q " $prog " /proc/locks 2>/dev/null && break; sleep 0.05; done
	run xiptool detach "$SEG"
	kill "$prog"; wait "$prog" 2>/dev/null || true
	[ "$status" -eq 3 ]
	[[ "$output" == "xiptool detach: $SEG: busy: the segment is held by process $prog "* ]]
	run xiptool detach "$SEG"
	[ "$status" -eq 0 ]
}

@test "a segment file removed behind xiptool's back: its loop device is released with the stale record" {
	attach_tree_loop
	rm -f "$path"
	[ "$(losetup -n -O BACK-FILE "$dev")" = "$path (deleted)" ]
	run xiptool list --noheadings -o NAME
	[ "$status" -eq 0 ]
	[ -z "$output" ]
	[ ! -e "$T/run/$SEG" ]
	loop_gone "$dev" "$path (deleted)"
}

@test "detach while nbdkit serves the segment names the server, not the parent it forked from" {
	require_cmd nbdkit
	plugin=$TOP_BUILDDIR/nbdkit-xiptool-plugin.so
	[ -f "$plugin" ] || skip "the nbdkit plugin was not built"
	make_tree_image
	xiptool attach -n "$SEG" "$T/img"
	# nbdkit opens the image, then forks into the background
	nbdkit -U "$T/n.sock" --pidfile "$T/n.pid" "$plugin" image="@$SEG" \
		readonly=true </dev/null >"$T/n.log" 2>&1 3>&- & parent=$!
	wait "$parent"
	for i in $(seq 200); do [ -s "$T/n.pid" ] && break; sleep 0.05; done
	server=$(cat "$T/n.pid")
	# /proc/locks still names the parent, which is gone
	grepq " $parent " /proc/locks
	run xiptool detach "$SEG"
	kill "$server"
	[ "$status" -eq 3 ]
	[ "$server" -ne "$parent" ]
	[ "$output" = "xiptool detach: $SEG: busy: the segment is held by process $server (nbdkit) (use --force)" ]
	for i in $(seq 100); do kill -0 "$server" 2>/dev/null || break; sleep 0.1; done
	run xiptool detach "$SEG"
	[ "$status" -eq 0 ]
}

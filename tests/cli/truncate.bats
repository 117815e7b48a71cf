#!/usr/bin/env bats
# xiptool truncate: freed blocks, zeroed tails and holes, checked by
# dumpe2fs, e2fsck and the kernel.

load ../lib/common

BS=4096

@test "shrinking frees every block past the end, indirect blocks included" {
	mkimg "$T/img" 32M
	free0=$(free_blocks "$T/img")
	head -c $((2100 * BS)) /dev/urandom > "$T/in"
	xiptool write --create -i "$T/in" "$T/img" /f
	# 2100 data blocks + ind + dind + 2 ind below it
	[ "$(free_blocks "$T/img")" -eq $((free0 - 2100 - 4)) ]
	xiptool truncate "$T/img" /f $((1037 * BS))
	# 1037 data + ind + dind + 1 ind
	[ "$(free_blocks "$T/img")" -eq $((free0 - 1037 - 3)) ]
	e2fsck -fn "$T/img"
	xiptool truncate "$T/img" /f $((12 * BS + 1))
	[ "$(free_blocks "$T/img")" -eq $((free0 - 13 - 1)) ]
	xiptool truncate "$T/img" /f 0
	[ "$(free_blocks "$T/img")" -eq "$free0" ]
	e2fsck -fn "$T/img"
	[ "$(xiptool stat "$T/img" /f | sed -n 's/^Sectors: *//p')" -eq 0 ]
}

@test "the tail of the last block is zeroed; growing leaves a hole (nothing allocated)" {
	require_loop
	mkimg "$T/img" 16M
	head -c 20000 /dev/urandom > "$T/in"
	xiptool write --create -i "$T/in" "$T/img" /f
	xiptool truncate "$T/img" /f 5000
	free1=$(free_blocks "$T/img")
	xiptool truncate "$T/img" /f 1M
	[ "$(free_blocks "$T/img")" -eq "$free1" ]
	(head -c 5000 "$T/in"; head -c $((1048576 - 5000)) /dev/zero) > "$T/model"
	xiptool read "$T/img" /f | cmp - "$T/model"
	e2fsck -fn "$T/img"
	loop_mount "$T/img"
	cmp "$T/mnt/f" "$T/model"
	loop_umount
	# a write past the end of a shrunk file sees zeros in between too
	xiptool truncate "$T/img" /f 100
	printf 'z' | xiptool write --offset 3000 "$T/img" /f
	(head -c 100 "$T/in"; head -c 2900 /dev/zero; printf z) | cmp - <(xiptool read "$T/img" /f)
}

@test "sizes take K, M and G suffixes; sizes above 4 GiB work" {
	mkimg "$T/img" 16M
	printf 'x' | xiptool write --create "$T/img" /f
	xiptool truncate "$T/img" /f 3K
	[ "$(xiptool stat "$T/img" /f | sed -n 's/^Size: *//p')" -eq 3072 ]
	xiptool truncate "$T/img" /f 6G
	[ "$(xiptool stat "$T/img" /f | sed -n 's/^Size: *//p')" -eq $((6 << 30)) ]
	e2fsck -fn "$T/img"
	xiptool truncate "$T/img" /f 2M
	e2fsck -fn "$T/img"
}

@test "truncate errors: missing file, directory, bad size" {
	mkimg "$T/img" 16M
	run xiptool truncate "$T/img" /nope 0
	[ "$status" -eq 3 ]
	[ "$output" = "xiptool truncate: /nope: No such file or directory" ]
	run xiptool truncate "$T/img" /lost+found 0
	[ "$status" -eq 3 ]
	[[ "$output" == *"is a directory"* ]]
	run xiptool truncate "$T/img" /lost+found 12Q
	[ "$status" -eq 2 ]
	run xiptool truncate "$T/img" /lost+found
	[ "$status" -eq 2 ]
}

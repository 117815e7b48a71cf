#!/usr/bin/env bats
# xiptool info against dumpe2fs and libblkid's view of the same image.

load ../lib/common

make_tree() {
	mkdir -p "$T/tree/dir/sub"
	printf 'hello\n' > "$T/tree/hello.txt"
	head -c 100000 /dev/urandom > "$T/tree/dir/blob"
	ln -s hello.txt "$T/tree/link"
}

# xiptool info $1, which must succeed: its report in $output.
info_of() {
	run xiptool info "$1"
	[ "$status" -eq 0 ]
}

@test "info agrees with dumpe2fs on a mke2fs-made image" {
	make_tree
	mkimg "$T/img" 32M "$T/tree" -L mylabel -N 256
	info_of "$T/img"
	[ "$(info_field "$output" 'Block size')" = "$(dumpe2fs_field "$T/img" 'Block size')" ]
	[ "$(info_field "$output" 'Blocks')" = "$(dumpe2fs_field "$T/img" 'Block count')" ]
	[ "$(info_field "$output" 'Blocks free')" = "$(dumpe2fs_field "$T/img" 'Free blocks')" ]
	[ "$(info_field "$output" 'Blocks reserved')" = "$(dumpe2fs_field "$T/img" 'Reserved block count')" ]
	[ "$(info_field "$output" 'Inodes')" = "$(dumpe2fs_field "$T/img" 'Inode count')" ]
	[ "$(info_field "$output" 'Inodes free')" = "$(dumpe2fs_field "$T/img" 'Free inodes')" ]
	[ "$(info_field "$output" 'Label')" = "$(dumpe2fs_field "$T/img" 'Filesystem volume name')" ]
	[ "$(info_field "$output" 'UUID')" = "$(dumpe2fs_field "$T/img" 'Filesystem UUID')" ]
	[ "$(info_field "$output" 'Size')" = "$(stat -c %s "$T/img")" ]
	[ "$(info_field "$output" 'Page size')" = "$(getconf PAGESIZE)" ]
	groups=$(dumpe2fs "$T/img" 2>/dev/null | grep -c '^Group [0-9]')
	[ "$(info_field "$output" 'Groups')" = "$groups" ]
	used=$(( $(dumpe2fs_field "$T/img" 'Block count') - $(dumpe2fs_field "$T/img" 'Free blocks') ))
	[ "$(info_field "$output" 'Blocks used')" = "$used" ]
}

@test "info reports a page-sized image XIP capable, a 1k-block image not, with the reason" {
	[ "$(getconf PAGESIZE)" -eq 4096 ] || skip "page size is not 4096"
	mkimg "$T/img" 8M
	info_of "$T/img"
	[ "$(info_field "$output" 'XIP capable')" = yes ]
	mke2fs -q -F -t ext2 -b 1024 "$T/k1" 8M
	info_of "$T/k1"
	[ "$(info_field "$output" 'XIP capable')" = no ]
	[[ "$output" == *"block size 1024 differs from page size 4096"* ]]
}

@test "info --json is valid JSON with the same numbers" {
	require_cmd python3
	mkimg "$T/img" 16M "" -L js
	run xiptool info --json "$T/img"
	[ "$status" -eq 0 ]
	blocks=$(printf '%s' "$output" | python3 -c 'import json,sys; d=json.load(sys.stdin)["image"][0]; print(d["blocks"], d["xip-capable"], d["label"], d["inodes-free"])')
	[ "$blocks" = "$(dumpe2fs_field "$T/img" 'Block count') True js $(dumpe2fs_field "$T/img" 'Free inodes')" ]
}

@test "info refuses a squashfs image, naming what it is" {
	require_cmd mksquashfs
	mkdir -p "$T/sq"; echo hi > "$T/sq/f"
	mksquashfs "$T/sq" "$T/sq.img" -quiet -noappend >/dev/null
	run xiptool info "$T/sq.img"
	[ "$status" -eq 3 ]
	[ "${#lines[@]}" -eq 1 ]
	[ "$output" = "xiptool info: $T/sq.img: holds squashfs, not an ext2 file system" ]
}

@test "info refuses random bytes with one line naming the file" {
	random_refused info
}

@test "info on a missing file, a directory, an empty file" {
	run xiptool info "$T/nope"
	[ "$status" -eq 3 ]
	[ "$output" = "xiptool info: $T/nope: No such file or directory" ]
	run xiptool info "$T"
	[ "$status" -eq 3 ]
	[[ "$output" == *"is a directory"* ]]
	: > "$T/empty"
	run xiptool info "$T/empty"
	[ "$status" -eq 3 ]
	[[ "$output" == *"empty"* ]]
}

@test "info never crashes on damaged images" {
	mkimg "$T/good" 8M
	# superblock fields: magic, counts, sizes, per-group values
	for spec in 1080:2 1028:4 1048:4 1056:4 1064:4 1024:4 1104:4 1112:4 1112:2 1060:4; do
		off=${spec%%:*} len=${spec##*:}
		for val in 00 ff 7f; do
			cp "$T/good" "$T/bad"
			printf "%0$((len * 2))d" 0 | tr 0 "${val:0:1}" | xxd -r -p 2>/dev/null > "$T/patch" ||
				head -c "$len" /dev/zero > "$T/patch"
			dd if="$T/patch" of="$T/bad" bs=1 seek="$off" conv=notrunc status=none
			run xiptool info "$T/bad"
			[ "$status" -eq 0 ] || [ "$status" -eq 3 ]
			[ "${#lines[@]}" -ge 1 ]
		done
	done
	# descriptors pointing outside, a truncated image
	cp "$T/good" "$T/bad"
	printf '\xff\xff\xff\x7f' | dd of="$T/bad" bs=1 seek=4104 conv=notrunc status=none
	run xiptool info "$T/bad"
	[ "$status" -eq 3 ]
	[[ "$output" == *"group descriptors"* ]]
	cp "$T/good" "$T/bad"
	truncate -s 1M "$T/bad"
	run xiptool info "$T/bad"
	[ "$status" -eq 3 ]
	[[ "$output" == *"claims 2048 blocks"* ]]
}

@test "info says whether the image can be a guest's pmem device, and why not" {
	[ "$(getconf PAGESIZE)" -eq 4096 ] || skip "page size is not 4096"
	mkimg "$T/img" 8M
	info_of "$T/img"
	[ "$(info_field "$output" 'Guest pmem')" = yes ]
	[[ "$output" != *"Not pmem because"* ]]
	mkimg "$T/odd" 5M
	truncate -s $(( (5 << 20) + 4096 )) "$T/odd"
	info_of "$T/odd"
	[ "$(info_field "$output" 'Guest pmem')" = no ]
	[ "$(info_field "$output" 'Not pmem because')" = "size 5246976 is not a multiple of 2 MiB: the guest's nd_pmem refuses it (attach pads segments)" ]
	mke2fs -q -F -t ext2 -b 1024 "$T/k1" 8M
	run xiptool info "$T/k1"
	[ "$(info_field "$output" 'Guest pmem')" = no ]
	[[ "$(info_field "$output" 'Not pmem because')" == "block size 1024 differs from page size 4096"* ]]
	run xiptool info --json "$T/k1"
	[ "$status" -eq 0 ]
	[ "$(printf '%s' "$output" | python3 -c 'import json,sys; d=json.load(sys.stdin)["image"][0]; print(d["pmem"], d["pmem-reason"][:10])')" = "False block size" ]
}

@test "a malformed @NAME gets one reason, named once, from info, exec, attach and the plugin" {
	local name
	for name in "" ./x.img a/b; do
		run xiptool info "@$name"
		[ "$status" -eq 3 ]
		[ "${#lines[@]}" -eq 1 ]
		[[ "$output" == "xiptool info: @$name: "*segment\ name* ]]
		[[ "$output" != *"@$name: @"* ]]
		[[ "$output" != *": $name: "* ]]
		run xiptool exec "@$name" /bin/true
		[ "$status" -eq 127 ]
		[ "${#lines[@]}" -eq 1 ]
		[[ "$output" == "xiptool exec: @$name: "*segment\ name* ]]
	done
	run xiptool attach --name ./x "$T/none.img"
	[ "$status" -eq 2 ]
	[ "${lines[0]}" = "xiptool attach: --name ./x: segment name must not start with '.'" ]
	command -v nbdkit >/dev/null || skip "nbdkit is not installed"
	run nbdkit -U - "$TOP_BUILDDIR/nbdkit-xiptool-plugin.so" image=@ --run true
	[ "$status" -ne 0 ]
	[[ "$output" == *"@: empty segment name"* ]]
	[[ "$output" != *"@: @:"* ]]
}

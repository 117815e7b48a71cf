#!/usr/bin/env bats
# xiptool attach: segments filled from images, checked against the kernel
# (a loop mount), cmp, blkid and losetup.

load ../lib/common
load ../lib/attach

bats_require_minimum_version 1.5.0

@test "attach --loop: list shows it, the kernel mounts it, detach leaves nothing" {
	require_loop
	make_tree_image
	run xiptool attach --loop -n "$SEG" "$T/img"
	[ "$status" -eq 0 ]
	name=${output%% *} dev=${output##* }
	[ "$name" = "$SEG" ]
	[[ "$dev" == /dev/loop[0-9]* ]]
	path=$(seg_col "$SEG" PATH)
	# list: every default column, against blkid and stat
	run xiptool list
	[ "$status" -eq 0 ]
	[[ "${lines[0]}" =~ ^NAME\ +TYPE\ +SIZE\ +FILLED\ +STATE\ +LOOP\ +IMAGE\ +LABEL\ +UUID\ +VERIFIED$ ]]
	read -r n t s l i lab uuid <<< "$(xiptool list --noheadings -o NAME,TYPE,SIZE,LOOP,IMAGE,LABEL,UUID "$SEG")"
	[ "$n $t $s $l" = "$SEG sr $(stat -c %s "$T/img") $dev" ]
	[ "$i" = "$(realpath "$T/img")" ]
	[ "$lab" = "$(blkid -o value -s LABEL "$T/img")" ]
	[ "$uuid" = "$(blkid -o value -s UUID "$T/img")" ]
	# the kernel's view of the loop device
	[ "$(losetup -n -O BACK-FILE "$dev")" = "$path" ]
	[ "$(blockdev --getro "$dev")" = 1 ]
	cmp "$dev" "$T/img"
	mkdir "$T/mnt"
	mount -o ro "$dev" "$T/mnt"
	diff -r --no-dereference "$T/tree" "$T/mnt" -x lost+found
	umount "$T/mnt"
	run xiptool detach "$SEG"
	[ "$status" -eq 0 ]
	[ ! -e "$path" ]
	[ ! -e "$T/run/$SEG" ]
	loop_gone "$dev" "$path"
	[ -z "$(losetup -n -j "$path")" ]
	run xiptool list --noheadings
	[ -z "$output" ]
}

@test "attach prints the name derived from the image; the segment is a byte copy, mode 0444" {
	make_tree_image
	cp "$T/img" "$T/my root.v1.img"
	run xiptool attach "$T/my root.v1.img"
	[ "$status" -eq 0 ]
	[ "$output" = "my_root.v1" ]
	path=$(seg_col my_root.v1 PATH)
	# root's: on the tmpfs with huge pages xiptool mounts in its run directory
	[[ "$path" =~ ^"$T/run.shm/xiptool-my_root.v1."[0-9a-f]{16}$ ]]
	run awk -v d="$T/run.shm" '$2 == d { print $3, $4 }' /proc/mounts
	[[ "$output" == "tmpfs "*"huge=within_size"* ]]
	cmp "$path" "$T/img"
	[ "$(stat -c %a "$path")" = 444 ]
	[ -z "$(find "$path" -type l)" ]
	run xiptool info "@my_root.v1"
	[ "$status" -eq 0 ]
	[ "$(info_field "$output" UUID)" = "$(blkid -o value -s UUID "$T/img")" ]
	# a second segment keeps the mount through the first one's detach
	xiptool attach -n second "$T/img"
	xiptool detach my_root.v1
	grepq " $T/run.shm tmpfs " /proc/mounts
	# the last one gone, the mount goes too, and the run directory can be
	# removed
	xiptool detach second
	if grep -F " $T/run.shm " /proc/mounts; then false; fi
	[ ! -e "$T/run.shm" ]
}

@test "attach: the huge-page tmpfs unmounted by a detach while another attach chose it is mounted again" {
	use_test_hooks
	require_test_hooks
	make_tree_image
	xiptool attach -n first "$T/img"
	# between the choice of the directory and the claim of the name, the
	# last segment on the mount goes, and its detach unmounts it
	XIPTOOL_TEST_ATTACH_BEFORE_CLAIM="$XIPTOOL detach first" \
		xiptool attach -n second "$T/img"
	path=$(seg_col second PATH)
	[[ "$path" =~ ^"$T/run.shm/xiptool-second."[0-9a-f]{16}$ ]]
	run awk -v d="$T/run.shm" '$2 == d { print $3, $4 }' /proc/mounts
	[[ "$output" == "tmpfs "*"huge=within_size"* ]]
	[ "$(stat -f -c %T "$path")" = tmpfs ]
	cmp "$path" "$T/img"
	run xiptool list --noheadings -o NAME
	[ "$output" = second ]
	xiptool detach second
	[ ! -e "$T/run.shm" ]
}

@test "type sr: writes through @NAME are refused, the segment stays byte-identical" {
	make_tree_image
	xiptool attach -n "$SEG" "$T/img"
	path=$(seg_col "$SEG" PATH)
	printf 'new\n' > "$T/new"
	run xiptool write "@$SEG" /hello.txt "$T/new"
	[ "$status" -eq 3 ]
	[ "$output" = "xiptool write: @$SEG: segment is read-only (type sr): attach it with -t sw to write to it" ]
	cmp "$path" "$T/img"
}

@test "type sr: the loop device is read-only and refuses writes" {
	attach_tree_loop
	[ "$(blockdev --getro "$dev")" = 1 ]
	[ "$(cat "/sys/block/${dev#/dev/}/ro")" = 1 ]
	run dd if=/dev/zero of="$dev" bs=4096 count=1 conv=notrunc status=none
	[ "$status" -ne 0 ]
	cmp "$(seg_col "$SEG" PATH)" "$T/img"
}

@test "type sw: mode 0600, a writable loop device, changes land in the segment in place" {
	require_loop
	make_tree_image
	chmod 600 "$T/img"	# the segment keeps the image's mode
	sum=$(md5sum < "$T/img")
	run xiptool attach -t sw --loop -n "$SEG" "$T/img"
	[ "$status" -eq 0 ]
	dev=${output##* }
	path=$(seg_col "$SEG" PATH)
	[ "$(stat -c %a "$path")" = 600 ]
	[ "$(blockdev --getro "$dev")" = 0 ]
	mkdir "$T/mnt"
	mount -t ext2 "$dev" "$T/mnt"
	printf 'changed\n' > "$T/mnt/new.txt"
	umount "$T/mnt"
	# the segment file itself holds the change: no second copy
	[ "$(debugfs -R 'cat /new.txt' "$path" 2>/dev/null)" = changed ]
	run xiptool info "@$SEG"
	[ "$status" -eq 0 ]
	[ "$(md5sum < "$T/img")" = "$sum" ]	# the source is untouched
}

@test "a gzip image (by magic, not name) attaches and reads identically" {
	make_tree_image
	gzip -c "$T/img" > "$T/packed"
	run xiptool attach -n "$SEG" "$T/packed"
	[ "$status" -eq 0 ]
	cmp "$(seg_col "$SEG" PATH)" "$T/img"
	[ "$(seg_col "$SEG" SIZE)" = "$(stat -c %s "$T/img")" ]
	[ "$(seg_col "$SEG" COMPRESSED)" = 1 ]
	[ "$(seg_col "$SEG" LABEL)" = "l$U" ]
	run xiptool info "@$SEG"
	[ "$status" -eq 0 ]
	# several members, as cat a.gz b.gz gives
	head -c 8M "$T/img" | gzip -c > "$T/two.gz"
	tail -c 8M "$T/img" | gzip -c >> "$T/two.gz"
	run xiptool attach -n "b$SEG" "$T/two.gz"
	[ "$status" -eq 0 ]
	cmp "$(seg_col "b$SEG" PATH)" "$T/img"
}

@test "a truncated or corrupt gzip image is refused and leaves nothing behind" {
	make_tree_image
	gzip -c "$T/img" > "$T/img.gz"
	head -c 20000 "$T/img.gz" > "$T/cut.gz"
	run xiptool attach -n "$SEG" "$T/cut.gz"
	[ "$status" -eq 3 ]
	[ "$output" = "xiptool attach: $T/cut.gz: gzip data is truncated" ]
	no_segfile "$SEG"
	[ -z "$(ls "$T/run")" ]
	cp "$T/img.gz" "$T/bad.gz"
	printf 'XXXXXXXX' | dd of="$T/bad.gz" bs=1 seek=100 conv=notrunc status=none
	run xiptool attach -n "$SEG" "$T/bad.gz"
	[ "$status" -eq 3 ]
	[[ "$output" == "xiptool attach: $T/bad.gz: gzip data is corrupt"* ]]
	no_segfile "$SEG"
}

@test "exclusive types: a second holder is refused, shared types are not" {
	make_tree_image
	chmod 600 "$T/img"	# the segment keeps the image's mode, minus writes
	xiptool attach -t er -n "$SEG" "$T/img"
	path=$(seg_col "$SEG" PATH)
	[ "$(stat -c %a "$path")" = 400 ]
	run xiptool info "@$SEG"
	[ "$status" -eq 0 ]
	# another process holds the segment (exclusive types lock it)
	flock -F -x "$(holder_lock "$path")" sleep 20 & holder=$!
	for i in $(seq 50); do grep -q " $holder " /proc/locks 2>/dev/null && break; sleep 0.05; done
	run xiptool info "@$SEG"
	kill "$holder"; wait "$holder" 2>/dev/null || true
	[ "$status" -eq 3 ]
	[ "$output" = "xiptool info: $SEG: exclusive segment (type er) is held by another process" ]
	# shared type: a shared holder (a running program) does not stop readers
	xiptool attach -t sr -n "r$SEG" "$T/img"
	flock -F -s "$(holder_lock "$(seg_col "r$SEG" PATH)")" sleep 20 & holder=$!
	sleep 0.2
	run xiptool info "@r$SEG"
	kill "$holder"; wait "$holder" 2>/dev/null || true
	[ "$status" -eq 0 ]
}

@test "invalid names are usage errors; a duplicate name is refused" {
	make_tree_image
	for bad in "" ".hidden" "a/b" "sp ace" "caf$(printf '\xc3\xa9')" "x\$y" \
		"$(printf 'a%.0s' $(seq 65))"; do
		run xiptool attach -n "$bad" "$T/img"
		[ "$status" -eq 2 ] || { echo "accepted '$bad'"; false; }
		# the name given, then its one reason
		[[ "${lines[0]}" == "xiptool attach: --name${bad:+ }${bad:0:70}: "*"segment name"* ]]
	done
	long=$(printf 'b%.0s' $(seq 63))
	run xiptool attach -n "${long}$U" "$T/img"
	[ "$status" -eq 2 ]
	run xiptool attach -n "${long:0:$((64 - ${#U}))}$U" "$T/img"
	[ "$status" -eq 0 ]
	run xiptool attach -n "$SEG" "$T/img"
	[ "$status" -eq 0 ]
	before=$(cat "$T/run/$SEG")
	run xiptool attach -n "$SEG" -t sw "$T/img"
	[ "$status" -eq 3 ]
	[ "$output" = "xiptool attach: $SEG: a segment of that name is already attached: give another with -n OTHER, or detach it first" ]
	[ "$(cat "$T/run/$SEG")" = "$before" ]
	[ "$(seg_col "$SEG" TYPE)" = sr ]
}

@test "types sn and en: an empty zero-filled segment of --size" {
	run xiptool attach -t sn -n "$SEG" --size 3M
	[ "$status" -eq 0 ]
	path=$(seg_col "$SEG" PATH)
	[ "$(stat -c %s "$path")" = $((4 << 20)) ]
	[ "$(seg_col "$SEG" SIZE)" = 3145728 ]
	cmp "$path" <(head -c $((4 << 20)) /dev/zero)
	[ "$(stat -c %a "$path")" = 600 ]
	run xiptool attach -t en -n "e$SEG"
	[ "$status" -eq 2 ]
	[[ "${lines[0]}" == *"type en needs --size"* ]]
	make_tree_image
	run xiptool attach -t sn -n "e$SEG" --size 1M "$T/img"
	[ "$status" -eq 2 ]
	run xiptool attach -t xx "$T/img"
	[ "$status" -eq 2 ]
	[[ "${lines[0]}" == "xiptool attach: --type: unknown segment type 'xx'"* ]]
	run xiptool attach
	[ "$status" -eq 2 ]
}

@test "--size: a larger writable segment is zero-filled past the image; a smaller one is refused" {
	make_tree_image
	run xiptool attach -t sw -n "$SEG" --size 20M "$T/img"
	[ "$status" -eq 0 ]
	path=$(seg_col "$SEG" PATH)
	[ "$(stat -c %s "$path")" = $((20 << 20)) ]
	cmp -n $((16 << 20)) "$path" "$T/img"
	cmp -i $((16 << 20)):0 "$path" <(head -c $((4 << 20)) /dev/zero)
	run xiptool attach -n "b$SEG" --size 1M "$T/img"
	[ "$status" -eq 3 ]
	[[ "$output" == *"is smaller than the image"* ]]
	gzip -c "$T/img" > "$T/img.gz"
	run xiptool attach -n "b$SEG" --size 1M "$T/img.gz"
	[ "$status" -eq 3 ]
	[ "$output" = "xiptool attach: $T/img.gz: decompresses to more than --size (1048576 bytes)" ]
	no_segfile "b$SEG"
}

@test "non-root: attach works with a user run directory" {
	require_root
	require_cmd setpriv
	make_tree_image
	chmod 755 "$T"
	chmod 644 "$T/img"
	mkdir -m 700 "$T/urun" "$T/xdg"
	chown 65534:65534 "$T/urun" "$T/xdg"
	asuser() {
		setpriv --reuid=65534 --regid=65534 --clear-groups -- "$@"
	}
	run asuser env XIPTOOL_RUNDIR="$T/urun" "$XIPTOOL" attach -n "$SEG" "$T/img"
	[ "$status" -eq 0 ]
	path=$(asuser env XIPTOOL_RUNDIR="$T/urun" "$XIPTOOL" list --noheadings -r -o PATH "$SEG")
	[[ "$path" =~ ^"/dev/shm/xiptool-65534:$SEG."[0-9a-f]{16}$ ]]
	# the caller's file, readable by others as the image is; not by a
	# group the image did not name
	[ "$(stat -c '%u %a' "$path")" = "65534 404" ]
	[ -f "$T/urun/$SEG" ]
	[ -z "$(ls "$T/run" 2>/dev/null)" ]
	run asuser env XIPTOOL_RUNDIR="$T/urun" "$XIPTOOL" info "@$SEG"
	[ "$status" -eq 0 ]
	cmp "$path" "$T/img"
	run asuser env XIPTOOL_RUNDIR="$T/urun" "$XIPTOOL" detach "$SEG"
	[ "$status" -eq 0 ]
	[ ! -e "$path" ]
	# $XDG_RUNTIME_DIR/xiptool when XIPTOOL_RUNDIR is not set
	run asuser env -u XIPTOOL_RUNDIR XDG_RUNTIME_DIR="$T/xdg" "$XIPTOOL" attach -n "$SEG" "$T/img"
	[ "$status" -eq 0 ]
	[ -f "$T/xdg/xiptool/$SEG" ]
	[ "$(stat -c %a "$T/xdg/xiptool")" = 700 ]
	run asuser env -u XIPTOOL_RUNDIR XDG_RUNTIME_DIR="$T/xdg" "$XIPTOOL" detach "$SEG"
	[ "$status" -eq 0 ]
	# no run directory at all
	run asuser env -u XIPTOOL_RUNDIR -u XDG_RUNTIME_DIR "$XIPTOOL" attach -n "$SEG" "$T/img"
	[ "$status" -eq 3 ]
	[[ "$output" == *"no run directory"* ]]
	no_segfile "$SEG"
}

@test "--file: a contiguous file of the image as its own loop device" {
	require_loop
	make_tree_image
	run xiptool attach -n "$SEG" --file /small.bin "$T/img"
	[ "$status" -eq 0 ]
	dev=${output##* }
	[[ "$dev" == /dev/loop[0-9]* ]]
	[ "$(blockdev --getsize64 "$dev")" = 40960 ]
	cmp "$dev" "$T/tree/small.bin"
	[ "$(seg_col "$SEG" FILE)" = /small.bin ]
	# the offset is where debugfs says the file's first block is
	blk=$(debugfs -R 'bmap /small.bin 0' "$T/img" 2>/dev/null)
	[ "$(seg_col "$SEG" OFFSET)" = $((blk * 4096)) ]
	path=$(seg_col "$SEG" PATH)
	xiptool detach "$SEG"
	loop_gone "$dev" "$path"
}

@test "--file: a file that is not contiguous, a directory, a missing file are clear errors" {
	require_loop
	make_tree_image
	# an ext2 file over 12 blocks has its indirect block among its data
	run xiptool attach -n "$SEG" --file /dir/blob "$T/img"
	[ "$status" -eq 3 ]
	[[ "$output" == "xiptool attach: /dir/blob: not contiguous in the image"* ]]
	run xiptool attach -n "$SEG" --file /dir "$T/img"
	[ "$status" -eq 3 ]
	[[ "$output" == *"/dir: not a regular file"* ]]
	run xiptool attach -n "$SEG" --file /nope "$T/img"
	[ "$status" -eq 3 ]
	no_segfile "$SEG"
	[ -z "$(ls "$T/run")" ]
}

@test "--hugepages: without hugetlbfs a clear error; with it the segment is filled through mmap" {
	require_root
	make_tree_image
	if ! awk '$3 == "hugetlbfs" { f = 1 } END { exit !f }' /proc/mounts; then
		run env -u XIPTOOL_HUGETLBFS "$XIPTOOL" attach --hugepages -n "$SEG" "$T/img"
		[ "$status" -eq 3 ]
		[[ "$output" == *"no hugetlbfs is mounted"* ]]
	fi
	old=$(cat /proc/sys/vm/nr_hugepages)
	echo "$old" > "$T/nr_hugepages"
	echo $((old + 8)) > /proc/sys/vm/nr_hugepages 2>/dev/null || skip "cannot reserve huge pages"
	free=$(awk '/^HugePages_Free/ { print $2 }' /proc/meminfo)
	[ "$free" -ge 8 ] || { echo "$old" > /proc/sys/vm/nr_hugepages; skip "no free huge pages"; }
	mkdir "$T/huge"
	mount -t hugetlbfs none "$T/huge"
	run env XIPTOOL_HUGETLBFS="$T/huge" "$XIPTOOL" attach --hugepages -n "$SEG" "$T/img"
	st=$status
	path=$(seg_col "$SEG" PATH)
	ok=0
	[ "$st" -eq 0 ] && [[ "$path" =~ ^"$T/huge/xiptool-$SEG."[0-9a-f]{16}$ ]] &&
		cmp -n $((16 << 20)) "$path" "$T/img" &&
		"$XIPTOOL" info "@$SEG" >/dev/null && ok=1
	"$XIPTOOL" detach "$SEG" || ok=0
	umount "$T/huge"
	echo "$old" > /proc/sys/vm/nr_hugepages
	[ "$ok" = 1 ]
}

@test "attach: options that exclude each other are usage errors, each worded once, nothing left" {
	u="nbd+unix:///?socket=$T/none.sock"
	run xiptool attach --lazy --trust "$T/trust" --root-hash-signature "$T/sig" -n "$SEG" "$u"
	[ "$status" -eq 2 ]
	[ "${lines[0]}" = "xiptool attach: --lazy and --trust exclude each other: a lazy segment is checked against --root-hash" ]
	run xiptool attach --lazy -t sw -n "$SEG" "$u"
	[ "$status" -eq 2 ]
	[ "${lines[0]}" = "xiptool attach: --lazy: type sw is writable: only sr and er segments are filled lazily" ]
	# the default type is sr: no usage error, a server that is not there
	run xiptool attach --lazy -n "$SEG" "$u"
	[ "$status" -eq 3 ]
	[[ "${lines[0]}" == "xiptool attach: $u: cannot connect: "* ]]
	run xiptool attach --lazy --hugepages -n "$SEG" "$u"
	[ "$status" -eq 2 ]
	[ "${lines[0]}" = "xiptool attach: --lazy and --hugepages exclude each other: hugetlbfs files are filled through their mapping" ]
	run xiptool attach --lazy --file /bin/sh -n "$SEG" "$u"
	[ "$status" -eq 2 ]
	[ "${lines[0]}" = "xiptool attach: --lazy and --loop exclude each other: a loop device needs the whole image" ]
	run xiptool attach --hugepages --trust "$T/trust" -n "$SEG" "$T/img"
	[ "$status" -eq 2 ]
	[ "${lines[0]}" = "xiptool attach: --trust and --hugepages exclude each other: hugetlbfs cannot seal a verified segment (no immutable flag)" ]
	[ -z "$(ls -A "$T/run" 2>/dev/null)" ]
}

@test "libmount is loaded only to read the mount table: not linked; a broken one is a one-line error of --hugepages" {
	require_root
	lib=$(lazy_lib mount)
	[ -n "$lib" ]
	make_tree_image
	run unshare -m sh -c 'mount --bind /dev/null "$1" && exec env -u XIPTOOL_HUGETLBFS "$2" attach --hugepages -n "$3" "$4"' \
		sh "$lib" "$XIPTOOL" "$SEG" "$T/img"
	echo "$output"
	[ "$status" -eq 3 ]
	[ "${#lines[@]}" -eq 1 ]
	[[ "$output" == "xiptool attach: cannot load ${lib##*/}: "* ]]
	# a command that reads no mount table runs without it
	run unshare -m sh -c 'mount --bind /dev/null "$1" && exec "$2" info "$3"' \
		sh "$lib" "$XIPTOOL" "$T/img"
	[ "$status" -eq 0 ]
}

@test "@NAME works with the engine's commands: read, ls and stat see the image" {
	make_tree_image
	gzip -c "$T/img" > "$T/img.gz"
	xiptool attach -n "$SEG" "$T/img.gz"
	run xiptool read "@$SEG" /dir/blob
	[ "$status" -eq 0 ]
	xiptool read -o "$T/blob" "@$SEG" /dir/blob
	cmp "$T/blob" "$T/tree/dir/blob"
	run xiptool ls "@$SEG" /
	[ "$status" -eq 0 ]
	[[ "$output" == *hello.txt* && "$output" == *small.bin* ]]
	run xiptool stat "@$SEG" /hello.txt
	[ "$status" -eq 0 ]
	run xiptool read "@n$SEG" /hello.txt
	[ "$status" -eq 3 ]
	[ "$output" = "xiptool read: @n$SEG: no attached segment of that name" ]
}

@test "attach @NAME copies a segment: a writable copy of a read-only one" {
	make_tree_image
	chmod 600 "$T/img"
	xiptool attach -n "$SEG" "$T/img"
	run xiptool attach -t sw "@$SEG"
	[ "$status" -eq 2 ] || [ "$status" -eq 3 ]
	[ "$output" = "xiptool attach: @$SEG: a copy of a segment needs a name: give one with --name" ]
	run xiptool attach -t sw -n "w$SEG" "@$SEG"
	[ "$status" -eq 0 ]
	cmp "$(seg_col "w$SEG" PATH)" "$T/img"
	[ "$(seg_col "w$SEG" IMAGE)" = "@$SEG" ]
	[ "$(stat -c %a "$(seg_col "w$SEG" PATH)")" = 600 ]
}

@test "sw: a change made to the segment is seen at once through @NAME and the loop device" {
	attach_tree_loop -t sw
	[ -b "$dev" ]
	# the kernel reads the segment through the loop device first (cached)
	debugfs -R 'cat /hello.txt' "$dev" >/dev/null 2>&1
	printf 'in place\n' > "$T/data"
	debugfs -w -R "write $T/data /p.txt" "$path" >/dev/null 2>&1
	[ "$(xiptool read "@$SEG" /p.txt)" = "in place" ]
	blockdev --flushbufs "$dev"
	[ "$(debugfs -R 'cat /p.txt' "$dev" 2>/dev/null)" = "in place" ]
}

@test "a block device as the source: a segment from a loop device" {
	require_loop
	make_tree_image
	dev=$(losetup -f --show -r "$T/img")
	run xiptool attach -n "$SEG" "$dev"
	losetup -d "$dev"
	[ "$status" -eq 0 ]
	cmp "$(seg_col "$SEG" PATH)" "$T/img"
	[ "$(seg_col "$SEG" IMAGE)" = "$dev" ]
}

@test "--file on an image from xiptool mkfs: a large program is one contiguous loop device" {
	require_loop
	require_cmd busybox
	mkdir -p "$T/tree/bin"
	cp "$(command -v busybox)" "$T/tree/bin/busybox"
	xiptool mkfs -d "$T/tree" "$T/img" >/dev/null
	run xiptool attach -n "$SEG" --file /bin/busybox "$T/img"
	[ "$status" -eq 0 ]
	dev=${output##* }
	size=$(stat -c %s "$T/tree/bin/busybox")
	[ "$(blockdev --getsize64 "$dev")" = $(( (size + 511) / 512 * 512 )) ]
	cmp -n "$size" "$dev" "$T/tree/bin/busybox"
	# the loop device reads the segment's bytes in place: no copy
	[ "$(seg_col "$SEG" OFFSET)" -gt 0 ]
	cmp -n "$size" -i "$(seg_col "$SEG" OFFSET):0" "$(seg_col "$SEG" PATH)" "$T/tree/bin/busybox"
}

@test "segment files are padded to 2 MiB for guest pmem; list, the loop device, save and detach --save keep the image's size" {
	require_loop
	mkdir -p "$T/tree"
	head -c 300000 /dev/urandom > "$T/tree/blob"
	xiptool mkfs -q -d "$T/tree" "$T/img"
	size=$(stat -c %s "$T/img")
	[ $((size % (2 << 20))) -ne 0 ]
	run xiptool attach --loop -t sw -n "$SEG" "$T/img"
	[ "$status" -eq 0 ]
	dev=${output##* }
	path=$(seg_col "$SEG" PATH)
	[ "$(stat -c %s "$path")" = $(( (size + (2 << 20) - 1) / (2 << 20) * (2 << 20) )) ]
	[ "$(seg_col "$SEG" SIZE)" = "$size" ]
	[ "$(blockdev --getsize64 "$dev")" = "$size" ]
	cmp -n "$size" "$path" "$T/img"
	# the padding is zeros
	cmp -i "$size:0" "$path" <(head -c $(( $(stat -c %s "$path") - size )) /dev/zero)
	run xiptool info "@$SEG"
	[ "$status" -eq 0 ]
	[ "$(info_field "$output" 'Guest pmem')" = yes ]
	run xiptool save "$SEG" "$T/saved"
	[ "$status" -eq 0 ]
	[ "$(stat -c %s "$T/saved")" = "$size" ]
	cmp "$T/saved" "$T/img"
	run xiptool detach --save "$T/saved2" "$SEG"
	[ "$status" -eq 0 ]
	[ "$(stat -c %s "$T/saved2")" = "$size" ]
	cmp "$T/saved2" "$T/img"
}

@test "info @NAME gives the image's size and the padded segment's, labelled; the padded segment can be pmem" {
	mkdir -p "$T/tree"
	mkimg "$T/img" 2204K "$T/tree"
	[ "$(stat -c %s "$T/img")" -eq 2256896 ]
	xiptool attach -n "$SEG" "$T/img"
	[ "$(stat -c %s "$(seg_col "$SEG" PATH)")" -eq 4194304 ]
	run xiptool info "@$SEG"
	[ "$status" -eq 0 ]
	[ "$(info_field "$output" 'Image size')" = 2256896 ]
	[ "$(info_field "$output" 'Segment size')" = 4194304 ]
	[ -z "$(info_field "$output" Size)" ]
	[ "$(info_field "$output" 'Guest pmem')" = yes ]
	run xiptool info --json "@$SEG"
	[ "$status" -eq 0 ]
	grep -q '"size": 2256896,' <<<"$output"
	grep -q '"segment-size": 4194304,' <<<"$output"
	# a plain image has one size
	run xiptool info "$T/img"
	[ "$(info_field "$output" Size)" = 2256896 ]
	[ -z "$(info_field "$output" 'Segment size')" ]
	[ "$(seg_col "$SEG" SIZE)" = 2256896 ]
	xiptool detach "$SEG"
}

# mmap calls of `xiptool exec @$1 /bin/busybox true` on the segment's
# file (from its open to its close: a sanitizer's run-time maps others):
# "POPULATED ALL"
populated_maps() {
	strace -f -e trace=open,openat,close,mmap -o "$BATS_TEST_TMPDIR/maps" \
		"$XIPTOOL" exec "@$1" /bin/busybox true
	cat "$BATS_TEST_TMPDIR/maps" >&2
	awk -v f="\"$(seg_col "$1" PATH)\"" '
		/open(at)?\(/ && index($0, f) { split($0, a, "= "); fd = a[2] + 0; next }
		fd != "" && $0 ~ "close\\(" fd "\\)" { fd = ""; next }
		fd != "" && $0 ~ "mmap\\(" && $0 ~ ", " fd ", 0" { t++; if (/MAP_POPULATE/) n++ }
		END { print n + 0, t + 0 }' "$BATS_TEST_TMPDIR/maps"
}

@test "attach --populate: exec maps a program's read-only pages at once only where the record says so; auto takes this boot's verdict" {
	[ -x /bin/busybox ] || skip "no /bin/busybox"
	command -v strace >/dev/null || skip "strace is not installed"
	local n all
	mkdir -p "$T/pop/bin"
	cp /bin/busybox "$T/pop/bin/busybox"
	xiptool mkfs -q -d "$T/pop" "$T/pop.img"
	run -2 xiptool attach --populate=sometimes -n "${SEG}x" "$T/pop.img"
	grepq -- "--populate: 'sometimes': expected auto, always or never" <<<"$output"
	run -3 xiptool list --noheadings "${SEG}x"
	xiptool attach --populate=always -n "${SEG}a" "$T/pop.img"
	xiptool attach --populate=never -n "${SEG}n" "$T/pop.img"
	[ "$(seg_col "${SEG}a" POPULATE)" = 1 ]
	[ "$(seg_col "${SEG}n" POPULATE)" = 0 ]
	run -0 xiptool list -o NAME,POPULATE
	[[ "${lines[0]}" =~ ^NAME\ +POPULATE$ ]]
	# always: the read-only mappings (header, text, read-only data), not
	# the writable data
	populated_maps "${SEG}a" > "$T/pm"
	read -r n all < "$T/pm"
	[ "$all" -ge 4 ]
	[ "$n" -eq 3 ]
	run -1 grep 'PROT_WRITE, MAP_PRIVATE|MAP_POPULATE' "$BATS_TEST_TMPDIR/maps"
	populated_maps "${SEG}n" > "$T/pm"
	read -r n all < "$T/pm"
	[ "$all" -ge 4 ]
	[ "$n" -eq 0 ]
	# auto, each verdict forced: the record, and exec does what it says
	XIPTOOL_POPULATE_AUTO=yes xiptool attach -n "${SEG}y" "$T/pop.img"
	XIPTOOL_POPULATE_AUTO=no xiptool attach -n "${SEG}u" "$T/pop.img"
	[ "$(seg_col "${SEG}y" POPULATE)" = 1 ]
	[ "$(seg_col "${SEG}u" POPULATE)" = 0 ]
	populated_maps "${SEG}y" > "$T/pm"
	read -r n all < "$T/pm"
	[ "$all" -ge 4 ]
	[ "$n" -eq 3 ]
	populated_maps "${SEG}u" > "$T/pm"
	read -r n all < "$T/pm"
	[ "$all" -ge 4 ]
	[ "$n" -eq 0 ]
	# neither measured nor kept
	[ ! -e "$XIPTOOL_RUNDIR/.populate" ]
	run -3 env XIPTOOL_POPULATE_AUTO=maybe "$XIPTOOL" attach -n "${SEG}m" "$T/pop.img"
	[ "$output" = "xiptool attach: XIPTOOL_POPULATE_AUTO: 'maybe': expected yes or no" ]
	run -3 xiptool list --noheadings "${SEG}m"
	xiptool detach "${SEG}a"
	xiptool detach "${SEG}n"
	xiptool detach "${SEG}y"
	xiptool detach "${SEG}u"
}

# attach_auto NAME: attach $T/img as NAME with --populate auto, its
# debug lines in $T/dbg; prints the record's POPULATE
attach_auto() {
	XIPTOOL_DEBUG=attach xiptool attach -n "$1" "$T/img" 2>"$T/dbg" >/dev/null
	cat "$T/dbg" >&2
	seg_col "$1" POPULATE
	xiptool detach "$1"
}

@test "attach --populate auto: measured once per boot and kept in the run directory; a kept verdict not the caller's own is measured again" {
	require_root
	local boot v pop
	make_tree_image
	boot=$(cat /proc/sys/kernel/random/boot_id)
	# the first attach measures and keeps the verdict, 0600, one line
	pop=$(attach_auto "${SEG}1")
	grepq -E "attach: populate: (yes|no) \(measured now\)$" "$T/dbg"
	v=$(sed -n 's/.*attach: populate: \(yes\|no\) .*/\1/p' "$T/dbg")
	[ "$(cat "$XIPTOOL_RUNDIR/.populate")" = "$boot $v" ]
	[ "$(stat -c %a:%u:%h "$XIPTOOL_RUNDIR/.populate")" = 600:0:1 ]
	if [ "$v" = yes ]; then [ "$pop" = 1 ]; else [ "$pop" = 0 ]; fi
	# the next ones read it: each verdict kept gives its record
	echo "$boot yes" > "$XIPTOOL_RUNDIR/.populate"
	[ "$(attach_auto "${SEG}2")" = 1 ]
	grepq "attach: populate: yes (measured this boot)" "$T/dbg"
	echo "$boot no" > "$XIPTOOL_RUNDIR/.populate"
	[ "$(attach_auto "${SEG}3")" = 0 ]
	grepq "attach: populate: no (measured this boot)" "$T/dbg"
	# no file in the run directory but the records' and locks'
	run -0 ls -A "$XIPTOOL_RUNDIR"
	[ "$(grep -v '^\.lock' <<<"$output")" = .populate ]
	# another boot's, one writable by others, another user's, a second
	# link, a symlink, a FIFO (never waited on), a damaged one: measured
	# again and replaced
	echo "00000000-0000-0000-0000-000000000000 yes" > "$XIPTOOL_RUNDIR/.populate"
	attach_auto "${SEG}4" >/dev/null
	grepq "(measured now)" "$T/dbg"
	[[ "$(cat "$XIPTOOL_RUNDIR/.populate")" == "$boot "* ]]
	for how in mode owner link symlink fifo damaged; do
		rm -f "$XIPTOOL_RUNDIR/.populate"
		echo "$boot yes" > "$T/planted"
		case $how in
		mode) cp "$T/planted" "$XIPTOOL_RUNDIR/.populate"
		      chmod 0666 "$XIPTOOL_RUNDIR/.populate" ;;
		owner) cp "$T/planted" "$XIPTOOL_RUNDIR/.populate"
		       chown 65534 "$XIPTOOL_RUNDIR/.populate" ;;
		link) ln "$T/planted" "$XIPTOOL_RUNDIR/.populate" ;;
		symlink) ln -s "$T/planted" "$XIPTOOL_RUNDIR/.populate" ;;
		fifo) mkfifo "$XIPTOOL_RUNDIR/.populate" ;;
		damaged) echo "$boot yes please" > "$XIPTOOL_RUNDIR/.populate" ;;
		esac
		attach_auto "${SEG}$how" >/dev/null
		grepq "(measured now)" "$T/dbg" || { echo "$how: trusted"; false; }
		[ ! -L "$XIPTOOL_RUNDIR/.populate" ]
		[ -f "$XIPTOOL_RUNDIR/.populate" ]
		[ "$(stat -c %a:%u:%h "$XIPTOOL_RUNDIR/.populate")" = 600:0:1 ]
		# what was planted elsewhere is untouched
		[ "$(cat "$T/planted")" = "$boot yes" ]
	done
}

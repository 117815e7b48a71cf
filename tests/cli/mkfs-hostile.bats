#!/usr/bin/env bats
# xiptool mkfs run by root beside hostile local users: the output is never
# written through what another user planted, a source tree changed between
# the scan and the copy is refused, a segment in use is left alone, and a
# failure or a kill leaves the old image and no temporary file.  The
# changes and kills in the middle of mkfs use the test build's pauses
# (XIPTOOL_TEST_MKFS_*).

load ../lib/common
use_test_hooks

setup() {
	common_setup
	require_root
	require_test_hooks
	require_cmd setpriv
	chmod 755 "$T"
	# a directory every user may write, like /tmp
	mkdir "$T/shared" && chmod 1777 "$T/shared"
	# a tree owned by the other user, and a secret only root can read
	mkdir -p "$T/w/src/sub" && chown -R 65534:65534 "$T/w"
	printf 'fine-data\n' > "$T/w/src/sub/f"
	printf 'top-level\n' > "$T/w/src/top"
	chown 65534:65534 "$T/w/src/sub/f" "$T/w/src/top"
	mkdir -m 700 "$T/secret"
	printf 'TOPSECRET\n' > "$T/secret/f"
	printf 'TOPSECRET\n' > "$T/secret/top"
}

teardown() {
	[ -n "${holder:-}" ] && kill "$holder" 2>/dev/null
	[ -n "${holder:-}" ] && wait "$holder" 2>/dev/null
	if [ -f "$T/segname" ]; then
		XIPTOOL_RUNDIR=$T/run "$XIPTOOL" detach --force "$(cat "$T/segname")" || true
	fi
	if [ -f "$T/loopdev" ]; then
		losetup -d "$(cat "$T/loopdev")" 2>/dev/null || true
	fi
	common_teardown
}

# no_secret IMAGE: the image, if any, holds no byte of the secret
no_secret() {
	[ ! -e "$1" ] || ! grep -q TOPSECRET "$1"
}

# only_files DIR NAME...: DIR holds exactly these names (no temporary file)
only_files() {
	local dir=$1
	shift
	[ "$(ls -A "$dir" | sort | tr '\n' ' ')" = "$(printf '%s\n' "$@" | sort | tr '\n' ' ')" ]
}

@test "mkfs -d: a directory swapped for a symlink after the scan is refused, the secret stays out" {
	hook="mv '$T/w/src/sub' '$T/w/src/old' && ln -s '$T/secret' '$T/w/src/sub'"
	XIPTOOL_TEST_MKFS_AFTER_SCAN="setpriv --reuid=65534 --regid=65534 --clear-groups sh -c \"$hook\"" \
		run xiptool mkfs -d "$T/w/src" "$T/img"
	echo "$output"
	no_secret "$T/img"
	[ "$status" -eq 3 ]
	[ "$output" = "xiptool mkfs: $T/w/src/sub: changed during the scan" ]
	[ ! -e "$T/img" ]
	only_files "$T" shared w secret
}

@test "mkfs -d: a file replaced after the scan is refused; a fifo swapped in does not block" {
	hook="rm '$T/w/src/top' && ln -s '$T/secret/top' '$T/w/src/top'"
	XIPTOOL_TEST_MKFS_AFTER_SCAN="$hook" run xiptool mkfs -d "$T/w/src" "$T/img"
	echo "$output"
	no_secret "$T/img"
	[ "$status" -eq 3 ]
	[ "$output" = "xiptool mkfs: $T/w/src/top: changed during the scan" ]
	[ ! -e "$T/img" ]
	rm "$T/w/src/top" && printf 'top-level\n' > "$T/w/src/top"
	hook="rm '$T/w/src/top' && mkfifo '$T/w/src/top'"
	XIPTOOL_TEST_MKFS_AFTER_SCAN="$hook" run timeout 60 "$XIPTOOL" mkfs -d "$T/w/src" "$T/img"
	echo "$output"
	[ "$status" -eq 3 ]
	[ "$output" = "xiptool mkfs: $T/w/src/top: changed during the scan" ]
	[ ! -e "$T/img" ]
}

@test "mkfs -d: a file written in place after the scan (the same inode) is refused" {
	XIPTOOL_TEST_MKFS_AFTER_SCAN="truncate -s 3 '$T/w/src/top'" \
		run xiptool mkfs -d "$T/w/src" "$T/img"
	echo "$output"
	[ "$status" -eq 3 ]
	[ "$output" = "xiptool mkfs: $T/w/src/top: changed during the scan" ]
	[ ! -e "$T/img" ]
}

@test "mkfs -d: hard links are checked against the inode the scan grouped them by" {
	ln "$T/w/src/top" "$T/w/src/second"
	hook="cd '$T/w/src' && rm top second && cp '$T/secret/top' top && ln top second"
	XIPTOOL_TEST_MKFS_AFTER_SCAN="$hook" run xiptool mkfs -d "$T/w/src" "$T/img"
	echo "$output"
	no_secret "$T/img"
	[ "$status" -eq 3 ]
	[[ "$output" =~ ^"xiptool mkfs: $T/w/src/"(top|second)": changed during the scan"$ ]]
	[ ! -e "$T/img" ]
	# unchanged, the two names are one inode in the image
	rm "$T/w/src/second" "$T/w/src/top"
	printf 'top-level\n' > "$T/w/src/top"
	ln "$T/w/src/top" "$T/w/src/second"
	xiptool mkfs -q -d "$T/w/src" "$T/img"
	e2fsck -fn "$T/img"
	a=$(debugfs -R "stat /top" "$T/img" 2>/dev/null | sed -n 's/^Inode: \([0-9]*\).*/\1/p')
	b=$(debugfs -R "stat /second" "$T/img" 2>/dev/null | sed -n 's/^Inode: \([0-9]*\).*/\1/p')
	[ -n "$a" ]
	[ "$a" = "$b" ]
}

@test "mkfs -d: extended attributes of files, directories, symlinks and devices" {
	require_loop
	require_cmd python3
	mkdir "$T/x" && echo data > "$T/x/f" && ln -s f "$T/x/l" && mknod "$T/x/null" c 1 3
	python3 - "$T/x" <<-'EOF'
	import os, sys
	d = sys.argv[1]
	os.setxattr(d + "/f", "user.f", b"file")
	os.setxattr(d, "user.d", b"dir")
	os.setxattr(d + "/l", "trusted.l", b"link", follow_symlinks=False)
	os.setxattr(d + "/null", "trusted.n", b"dev", follow_symlinks=False)
	EOF
	xiptool mkfs -q -d "$T/x" "$T/img"
	mkdir "$T/mnt"
	mount -o loop,ro "$T/img" "$T/mnt"
	run python3 - "$T/mnt" <<-'EOF'
	import os, sys
	d = sys.argv[1]
	print(os.getxattr(d + "/f", "user.f"), os.getxattr(d, "user.d"),
	      os.getxattr(d + "/l", "trusted.l", follow_symlinks=False),
	      os.getxattr(d + "/null", "trusted.n", follow_symlinks=False))
	EOF
	umount "$T/mnt"
	echo "$output"
	[ "$output" = "b'file' b'dir' b'link' b'dev'" ]
}

@test "mkfs: an output path that is another user's symlink is refused" {
	: > "$T/victim"
	as_nobody ln -s "$T/victim" "$T/shared/out.img"
	run xiptool mkfs -d "$T/w/src" "$T/shared/out.img"
	echo "$output"
	[ "$status" -eq 3 ]
	[ "$output" = "xiptool mkfs: $T/shared/out.img: is a symbolic link; refusing to write through it" ]
	[ ! -s "$T/victim" ]
	echo precious > "$T/victim"
	run xiptool mkfs -f -d "$T/w/src" "$T/shared/out.img"
	[ "$status" -eq 3 ]
	[ "$output" = "xiptool mkfs: $T/shared/out.img: is a symbolic link; refusing to write through it" ]
	[ "$(cat "$T/victim")" = precious ]
	[ -L "$T/shared/out.img" ]
	# a dangling one creates nothing where it points
	as_nobody ln -s "$T/created" "$T/shared/dangling.img"
	run xiptool mkfs "$T/shared/dangling.img"
	[ "$status" -eq 3 ]
	[ ! -e "$T/created" ]
	only_files "$T/shared" out.img dangling.img
}

@test "mkfs: another user's file in a shared sticky directory is not replaced" {
	as_nobody touch "$T/shared/out.img"
	run xiptool mkfs -d "$T/w/src" "$T/shared/out.img"
	echo "$output"
	[ "$status" -eq 3 ]
	[ "$output" = "xiptool mkfs: $T/shared/out.img: owned by another user (uid 65534) in a shared directory; refusing to replace it" ]
	run xiptool mkfs -f -d "$T/w/src" "$T/shared/out.img"
	[ "$status" -eq 3 ]
	[ ! -s "$T/shared/out.img" ]
	[ "$(stat -c %u "$T/shared/out.img")" -eq 65534 ]
	only_files "$T/shared" out.img
	# a new name there is fine, and so is replacing one's own file
	xiptool mkfs -q -d "$T/w/src" "$T/shared/mine.img"
	xiptool mkfs -q -f "$T/shared/mine.img"
	e2fsck -fn "$T/shared/mine.img"
	only_files "$T/shared" out.img mine.img
	# the other user may replace their own file there
	as_nobody "$XIPTOOL" mkfs -q "$T/shared/out.img"
	e2fsck -fn "$T/shared/out.img"
	[ "$(stat -c %u "$T/shared/out.img")" -eq 65534 ]
}

@test "mkfs: a failed or killed mkfs -f leaves the old image and no temporary file" {
	mkdir "$T/out"
	xiptool mkfs -q -L old -d "$T/w/src" "$T/out/img"
	sum=$(sha256sum < "$T/out/img")
	# fails while copying: the tree changed
	XIPTOOL_TEST_MKFS_AFTER_SCAN="rm '$T/w/src/top'" run xiptool mkfs -f -L new -d "$T/w/src" "$T/out/img"
	echo "$output"
	[ "$status" -eq 3 ]
	[ "$(sha256sum < "$T/out/img")" = "$sum" ]
	only_files "$T/out" img
	printf 'top-level\n' > "$T/w/src/top"
	# killed in the middle, with an unnamed and with a named temporary file
	XIPTOOL_TEST_MKFS_AFTER_SCAN='kill -KILL $PPID' run xiptool mkfs -f -L new -d "$T/w/src" "$T/out/img"
	[ "$status" -eq 137 ]
	[ "$(sha256sum < "$T/out/img")" = "$sum" ]
	only_files "$T/out" img
	for sig in TERM INT HUP; do
		XIPTOOL_TEST_MKFS_NAMED_TEMP=1 XIPTOOL_TEST_MKFS_AFTER_SCAN="ls -A '$T/out' > '$T/during'; kill -$sig \$PPID" \
			run env --default-signal="$sig" "$XIPTOOL" mkfs -f -L new \
			-d "$T/w/src" "$T/out/img"
		echo "$sig: $status $output"
		[ "$status" -eq $((128 + $(kill -l $sig))) ]
		[ "$(wc -l < "$T/during")" -eq 2 ]
		[ "$(sha256sum < "$T/out/img")" = "$sum" ]
		only_files "$T/out" img
	done
	# the named temporary file is private until it is complete
	XIPTOOL_TEST_MKFS_NAMED_TEMP=1 XIPTOOL_TEST_MKFS_AFTER_SCAN="stat -c %a '$T'/out/.img.* > '$T/during'" \
		xiptool mkfs -q -f -L new -d "$T/w/src" "$T/out/img"
	[ "$(cat "$T/during")" = 600 ]
	[ "$(dumpe2fs_field "$T/out/img" 'Filesystem volume name')" = new ]
	only_files "$T/out" img
}

@test "mkfs: a new image gets the umask's mode; a replaced one keeps its mode and owner" {
	mkdir "$T/out" && chown 65534:65534 "$T/out"
	(umask 027 && xiptool mkfs -q "$T/out/new.img")
	[ "$(stat -c %a "$T/out/new.img")" = 640 ]
	as_nobody sh -c "umask 077; : > '$T/out/theirs.img'; chmod 604 '$T/out/theirs.img'"
	xiptool mkfs -q "$T/out/theirs.img"
	[ "$(stat -c '%a %u %g' "$T/out/theirs.img")" = "604 65534 65534" ]
	e2fsck -fn "$T/out/theirs.img"
	# without write permission on the file, the other user cannot replace it
	chmod 644 "$T/out/new.img" && chown 0:0 "$T/out/new.img"
	run as_nobody "$XIPTOOL" mkfs -f "$T/out/new.img"
	echo "$output"
	[ "$status" -eq 3 ]
	[ "$output" = "xiptool mkfs: $T/out/new.img: Permission denied" ]
	[ "$(stat -c %u "$T/out/new.img")" -eq 0 ]
	only_files "$T/out" new.img theirs.img
}

@test "mkfs -f: an attached segment in use is refused by name and by path, and left intact" {
	export XIPTOOL_RUNDIR=$T/run
	name=mkfsh-${T##*.}
	echo "$name" > "$T/segname"
	mkdir -p "$T/src/d" && echo hello > "$T/src/d/f"
	xiptool attach -t sn -n "$name" --size 8M
	xiptool mkfs -q -d "$T/src" "@$name"
	path=$(sed -n 's/^path=//p' "$T/run/$name")
	[ -f "$path" ]
	# a running program holds the segment (as xiptool exec does)
	flock -F -s "$(holder_lock "$path")" sleep 60 & holder=$!
	for i in $(seq 100); do grep -q " $holder " /proc/locks 2>/dev/null && break; sleep 0.05; done
	echo other > "$T/src/d/f"
	run xiptool mkfs -f -d "$T/src" "@$name"
	echo "$output"
	[ "$status" -eq 3 ]
	[ "$output" = "xiptool mkfs: @$name: busy: the segment is held by process $holder (sleep)" ]
	run xiptool mkfs -f -d "$T/src" "$path"
	echo "$output"
	[ "$status" -eq 3 ]
	[ "$output" = "xiptool mkfs: $path: busy: attached segment @$name: the segment is held by process $holder (sleep)" ]
	[ "$(xiptool read "@$name" /d/f)" = hello ]
	[ "$(stat -c %s "$path")" -eq $((8 << 20)) ]
	kill "$holder"; wait "$holder" 2>/dev/null || true
	holder=
	# free again: written in place, the segment keeps its file and size
	ino=$(stat -c %i "$path")
	xiptool mkfs -q -f -d "$T/src" "$path"
	[ "$(xiptool read "@$name" /d/f)" = other ]
	[ "$(stat -c '%i %s' "$path")" = "$ino $((8 << 20))" ]
}

@test "mkfs: a block device through a root-owned symlink; another user's symlink to it is refused" {
	require_loop
	truncate -s 16M "$T/disk"
	dev=$(losetup --find --show "$T/disk")
	echo "$dev" > "$T/loopdev"
	ln -s "$dev" "$T/bylabel"
	run xiptool mkfs -q -d "$T/w/src" "$T/bylabel"
	echo "$output"
	[ "$status" -eq 0 ]
	[ -L "$T/bylabel" ]
	e2fsck -fn "$dev"
	as_nobody ln -s "$dev" "$T/shared/dev.img"
	run xiptool mkfs -f "$T/shared/dev.img"
	[ "$status" -eq 3 ]
	[ "$output" = "xiptool mkfs: $T/shared/dev.img: is a symbolic link; refusing to write through it" ]
}

@test "mkfs -f: a segment a program runs from (xiptool exec) is refused by path and by name" {
	require_cmd busybox
	file -L "$(command -v busybox)" 2>/dev/null | grepq 'statically linked' || skip "busybox is not static"
	export XIPTOOL_RUNDIR=$T/run
	name=mkfsx-${T##*.}
	mkdir -p "$T/tree/bin" && cp "$(command -v busybox)" "$T/tree/bin/busybox"
	xiptool mkfs -q -d "$T/tree" "$T/img"
	xiptool attach -n "$name" -t sw "$T/img"
	echo "$name" > "$T/segname"
	path=$(sed -n 's/^path=//p' "$T/run/$name")
	"$XIPTOOL" exec "@$name" /bin/busybox sleep 60 & holder=$!
	for i in $(seq 100); do grep -q " $holder " /proc/locks 2>/dev/null && break; sleep 0.05; done
	size=$(stat -c %s "$path")	# the image, padded for guests' pmem
	[ "$size" -ge "$(stat -c %s "$T/img")" ]
	run xiptool mkfs -f "$path"
	echo "$output"
	# the program was not disturbed: it is still running, the segment whole
	sleep 0.2
	kill -0 "$holder"
	[ "$(stat -c %s "$path")" -eq "$size" ]
	cmp <(xiptool read "@$name" /bin/busybox) "$T/tree/bin/busybox"
	[ "$status" -eq 3 ]
	[[ "$output" == "xiptool mkfs: $path: busy: attached segment @$name: the segment is held by process $holder "* ]]
	run xiptool mkfs -f "@$name"
	[ "$status" -eq 3 ]
	[[ "$output" == "xiptool mkfs: @$name: busy: the segment is held by process $holder "* ]]
	kill -0 "$holder"
}

# sparse_elf OUT SIZE ALIGN OFFSET:FILESZ...: a sparse file of SIZE bytes
# that starts with an x86-64 ELF header and a PT_LOAD per OFFSET:FILESZ
# (p_align ALIGN), 16 bytes of data at the start of each
sparse_elf() {
	python3 - "$@" <<'PY'
import struct, sys
out, size, align = sys.argv[1], int(sys.argv[2], 0), int(sys.argv[3], 0)
loads = [tuple(int(x, 0) for x in a.split(":")) for a in sys.argv[4:]]
eh = struct.pack("<16sHHIQQQIHHHHHH", b"\x7fELF\x02\x01\x01" + bytes(9),
                 2, 62, 1, 0x401000, 64, 0, 0, 64, 56, len(loads), 64, 0, 0)
ph = b"".join(struct.pack("<IIQQQQQQ", 1, 5, off, 0x400000 + off,
                          0x400000 + off, fsz, fsz, align)
              for off, fsz in loads)
with open(out, "wb") as f:
    f.write(eh + ph)
    for off, fsz in loads[1:]:
        f.seek(off)
        f.write(b"\x90" * 16)
    f.truncate(size)
PY
}

# used_blocks IMAGE: the blocks in use in IMAGE (dumpe2fs)
used_blocks() {
	echo $(($(dumpe2fs_field "$1" 'Block count') - $(dumpe2fs_field "$1" 'Free blocks')))
}

@test "mkfs -d: a sparse ELF file whose header claims 1 GiB stays sparse in the image" {
	mkdir "$T/elf"
	# one PT_LOAD of 1 GiB over a 4 KiB-on-disk file
	sparse_elf "$T/elf/one" 0x40000000 0x1000 0:0x40000000
	# two PT_LOADs 1 GiB apart, "aligned" to 1 GiB
	sparse_elf "$T/elf/two" 0x40000000 0x40000000 0:0x1000 0x3ffff000:0x1000
	[ "$(stat -c %b "$T/elf/one")" -le 16 ]
	xiptool mkfs -q -d "$T/elf" "$T/img"
	fsck_clean "$T/img"
	used=$(used_blocks "$T/img")
	echo "used: $used"
	[ "$used" -lt 64 ]
	[ "$(stat -c %s "$T/img")" -lt $((16 << 20)) ]
	# the bytes are the same, holes read as zeros
	xiptool read --length 8192 "$T/img" /one | cmp - <(head -c 8192 "$T/elf/one")
	xiptool read --offset $((0x3ffff000)) "$T/img" /two | cmp - <(tail -c 4096 "$T/elf/two")
}

@test "mkfs -d: the linker's padding is filled, up to 2 MiB a gap and 8 MiB in all" {
	mkdir "$T/elf"
	# 2 MiB-aligned PT_LOADs after 2 MiB less a page of padding each
	loads=
	for i in $(seq 0 11); do loads="$loads $((i << 21)):0x1000"; done
	# shellcheck disable=SC2086
	sparse_elf "$T/elf/pad" $((12 << 21)) 0x200000 $loads
	xiptool mkfs -q -d "$T/elf" "$T/img"
	fsck_clean "$T/img"
	used=$(used_blocks "$T/img")
	echo "used: $used"
	# 8 MiB of padding (2048 blocks) and the 12 PT_LOADs, the rest a hole
	[ "$used" -ge $((2048 + 12)) ]
	[ "$used" -lt $((2048 + 12 + 2 * 512 + 64)) ]
	debugfs -R "bmap /pad 1" "$T/img" | grep -vx 0
	debugfs -R "bmap /pad $((8 << 8))" "$T/img" | grep -vx 0
	debugfs -R "bmap /pad $((22 << 8 | 1))" "$T/img" | grep -x 0
}

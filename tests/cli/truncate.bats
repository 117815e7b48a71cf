#!/usr/bin/env bats
# xiptool truncate: freed blocks, zeroed tails and holes, checked by
# dumpe2fs, e2fsck and the kernel.

load ../lib/common

BS=4096

# /f of $T/img (16 MiB): 20000 random bytes ($T/in) cut to 5000.
shrunk_file() {
	mkimg "$T/img" 16M
	head -c 20000 /dev/urandom > "$T/in"
	xiptool write --create --input "$T/in" "$T/img" /f
	xiptool truncate "$T/img" /f 5000
}

@test "shrinking frees every block past the end, indirect blocks included" {
	mkimg "$T/img" 32M
	free0=$(free_blocks "$T/img")
	head -c $((2100 * BS)) /dev/urandom > "$T/in"
	xiptool write --create --input "$T/in" "$T/img" /f
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
	shrunk_file
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
	[ "$output" = "xiptool truncate: /nope: not found in $T/img" ]
	run xiptool truncate "$T/img" /var/log/boot 0
	[ "$status" -eq 3 ]
	[ "$output" = "xiptool truncate: /var/log/boot: directory /var not found in $T/img" ]
	run xiptool truncate "$T/img" /lost+found 0
	[ "$status" -eq 3 ]
	[[ "$output" == *"is a directory"* ]]
	run xiptool truncate "$T/img" /lost+found 12Q
	[ "$status" -eq 2 ]
	run xiptool truncate "$T/img" /lost+found
	[ "$status" -eq 2 ]
}

# mmap_tail FILE: the bytes past the end of FILE in its last page, as a
# shared read-only mapping of FILE shows them (the kernel maps whole pages).
mmap_tail() {
	"$PY" - "$1" <<'PYEOF'
import ctypes, mmap, os, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.mmap.restype = ctypes.c_void_p
libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int,
		      ctypes.c_int, ctypes.c_int, ctypes.c_long]
fd = os.open(sys.argv[1], os.O_RDONLY)
size = os.fstat(fd).st_size
pg = mmap.PAGESIZE
length = (size + pg - 1) // pg * pg
p = libc.mmap(None, length, mmap.PROT_READ, mmap.MAP_SHARED, fd, 0)
if p in (None, ctypes.c_void_p(-1).value):
	sys.exit("mmap: " + os.strerror(ctypes.get_errno()))
sys.stdout.buffer.write(ctypes.string_at(p, length)[size:])
PYEOF
}

@test "the kernel's mapping of the last page shows zeros past the end after a shrink, and after a grow" {
	require_loop
	shrunk_file
	loop_mount "$T/img"
	mmap_tail "$T/mnt/f" > "$T/tail"
	loop_umount
	# 5000 bytes end inside the second page: 8192 - 5000 bytes past them
	[ "$(stat -c %s "$T/tail")" -eq 3192 ]
	cmp "$T/tail" <(head -c 3192 /dev/zero)
	# grown back, the old tail is file data: zeros
	xiptool truncate "$T/img" /f 20000
	(head -c 5000 "$T/in"; head -c 15000 /dev/zero) > "$T/model"
	loop_mount "$T/img"
	cmp "$T/mnt/f" "$T/model"
	loop_umount
	e2fsck -fn "$T/img"
}

@test "bytes a peer left past the end of the last block never become file data" {
	require_loop
	mkimg "$T/img" 16M
	head -c 5000 /dev/urandom > "$T/in"
	xiptool write --create --input "$T/in" "$T/img" /f
	blk=$(debugfs -R "bmap /f 1" "$T/img" 2>/dev/null)
	[ "$blk" -gt 0 ]
	# non-zero bytes past the end of the file, inside its last block
	head -c 3192 /dev/urandom |
		dd of="$T/img" bs=1 seek=$((blk * BS + 904)) conv=notrunc status=none
	cp "$T/img" "$T/img2"
	# a grow: the old tail reads as zeros, through us and the kernel
	xiptool truncate "$T/img" /f 12000
	(cat "$T/in"; head -c 7000 /dev/zero) > "$T/model"
	xiptool read "$T/img" /f | cmp - "$T/model"
	loop_mount "$T/img"
	cmp "$T/mnt/f" "$T/model"
	loop_umount
	# a write past the end: the bytes in between read as zeros
	printf 'z' | xiptool write --offset 9000 "$T/img2" /f
	(cat "$T/in"; head -c 4000 /dev/zero; printf z) > "$T/model2"
	xiptool read "$T/img2" /f | cmp - "$T/model2"
	loop_mount "$T/img2"
	cmp "$T/mnt/f" "$T/model2"
	loop_umount
	e2fsck -fn "$T/img"
	e2fsck -fn "$T/img2"
}

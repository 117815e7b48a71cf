#!/usr/bin/env bats
# xiptool mkfs against the kernel's ext2 and ext4 drivers, e2fsck, debugfs
# and dumpe2fs.

load ../lib/common

CONTIG="$TOP_SRCDIR/tests/lib/contig.py"

# mounted_list IMAGE FSTYPE OUT [treelist options]
mounted_list() {
	local img=$1 fstype=$2 out=$3
	shift 3
	loop_mount "$img" "$fstype"
	list "$T/mnt" --no-lpf "$@" > "$out" || { loop_umount; return 1; }
	loop_umount
}

teardown() {
	if [ -f "$T/shmdir" ]; then
		umount "$T/mnt" 2>/dev/null || true
		rm -rf "$(cat "$T/shmdir")"
	fi
	if [ -f "$T/segname" ]; then
		XIPTOOL_RUNDIR=$T/run "$XIPTOOL" detach --force "$(cat "$T/segname")" || true
	fi
	if [ -f "$T/loopdev" ]; then
		umount "$T/mnt" 2>/dev/null || true
		losetup -d "$(cat "$T/loopdev")" 2>/dev/null || true
	fi
	common_teardown
}

@test "mkfs: the kernel (ext2 and ext4 drivers) shows exactly the source tree" {
	require_loop
	require_cmd python3 e2fsck
	"$PY" "$GENTREE" "$T/src"
	run xiptool mkfs -d "$T/src" "$T/img"
	echo "$output"
	[ "$status" -eq 0 ]
	fsck_clean "$T/img"
	# holes: the ext4 driver maps them with SEEK_DATA/SEEK_HOLE (the ext2
	# driver reports every file as all data)
	list "$T/src" --xattrs --holes > "$T/l.src"
	mounted_list "$T/img" ext4 "$T/l.ext4" --xattrs --holes
	mounted_list "$T/img" ext2 "$T/l.ext2" --xattrs
	diff -u "$T/l.src" "$T/l.ext4"
	sed 's/ map=[^ ]*//' "$T/l.src" | diff -u - "$T/l.ext2"
	# the listing must have seen every kind of inode
	grep -q ' 0o20000 .* 1:3 group=' "$T/l.src"
	grep -q ' 0o60000 .* 8:0' "$T/l.src"
	grep -q ' 0o20000 .* 511:1048575' "$T/l.src"
	grep -q ' 0o10000 ' "$T/l.src"
	grep -q ' 0o140000 ' "$T/l.src"
	grep -q ' ->/z/z/z' "$T/l.src"
	grep -q 'user.big=' "$T/l.src"
	grep -q 'trusted.t=' "$T/l.src"
	grep -q ' 4000000000 3 ' "$T/l.src"
	grep -q 'm-31536000' "$T/l.src"
	grep -q '^/holes/all-hole .* map=none' "$T/l.ext4"
	grep -q '^/holes/indirect .* map=0-1,1280-1281,4864-4865' "$T/l.ext4"
}

@test "mkfs: every regular file is one run of blocks, indirect blocks outside it" {
	require_loop
	require_cmd python3 debugfs
	"$PY" "$GENTREE" "$T/src" --big --many 50
	xiptool mkfs -q -d "$T/src" "$T/img"
	loop_mount "$T/img"
	run "$PY" "$CONTIG" "$T/img" "$T/mnt"
	loop_umount
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"splits 0"* ]]
	# the engine sees the same: one run
	run xiptool stat "$T/img" /files/big-20M
	echo "$output"
	[[ "$output" == *"Runs:"*" 1"* && "$output" == *"Contiguous:"*"yes"* ]]
	# debugfs shows the indirect blocks apart from the data run
	run debugfs -R "stat /files/big-20M" "$T/img"
	[[ "$output" == *"(IND)"* && "$output" == *"(DIND)"* ]]
}

@test "mkfs: a file larger than a block group is split only at group boundaries; --align 2M" {
	require_loop
	require_cmd python3 debugfs
	[ "$(getconf PAGESIZE)" -eq 4096 ] || skip "needs 4 KiB pages (128 MiB groups)"
	# on tmpfs when possible: 300 MiB of disk writes can take a minute
	# on a busy machine
	S=$T
	if [ -w /dev/shm ]; then
		S=$(mktemp -d /dev/shm/xipmkfs.XXXXXX)
		echo "$S" > "$T/shmdir"
	fi
	mkdir "$S/src"
	head -c 150M /dev/zero > "$S/src/huge"
	head -c 3M /dev/urandom > "$S/src/three"
	head -c 5000 /dev/urandom > "$S/src/small"
	xiptool mkfs -q --align 2M -d "$S/src" "$S/img"
	fsck_clean "$S/img"
	loop_mount "$S/img"
	run "$PY" "$CONTIG" "$S/img" "$T/mnt" --align 2097152
	cmp "$S/src/huge" "$T/mnt/huge"
	cmp "$S/src/three" "$T/mnt/three"
	loop_umount
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"splits 1"* ]]
	# the engine's view: two runs, the second from the next group's start
	run xiptool stat "$S/img" /huge
	echo "$output"
	[[ "$output" =~ "Runs:"\ +2 ]]
	run xiptool stat "$S/img" /three
	[[ "$output" =~ "Runs:"\ +1 ]]
}

@test "mkfs: reproducible across locales; no time later than SOURCE_DATE_EPOCH" {
	require_loop
	require_cmd python3 dumpe2fs
	"$PY" "$GENTREE" "$T/src" --many 50
	SOURCE_DATE_EPOCH=1600000000 LC_ALL=C xiptool mkfs -q -d "$T/src" "$T/a"
	sleep 1
	SOURCE_DATE_EPOCH=1600000000 LC_ALL=C.UTF-8 xiptool mkfs -q -d "$T/src" "$T/b"
	[ "$(sha256sum < "$T/a")" = "$(sha256sum < "$T/b")" ]
	fsck_clean "$T/a"
	# superblock times are the epoch; UUID and hash seed are set
	when=$(TZ=UTC LC_ALL=C date -d @1600000000 '+%a %b %e %H:%M:%S %Y')
	[ "$(TZ=UTC LC_ALL=C dumpe2fs_field "$T/a" 'Filesystem created')" = "$when" ]
	[ "$(TZ=UTC LC_ALL=C dumpe2fs_field "$T/a" 'Last write time')" = "$when" ]
	[ "$(dumpe2fs_field "$T/a" 'Filesystem UUID')" != 00000000-0000-0000-0000-000000000000 ]
	[ "$(dumpe2fs_field "$T/a" 'Directory Hash Seed')" != 00000000-0000-0000-0000-000000000000 ]
	loop_mount "$T/a"
	newer=$(find "$T/mnt" -newermt @1600000000 | wc -l)
	newer_c=$(find "$T/mnt" -newerct @1600000000 | wc -l)
	older=$(find "$T/mnt/files/size-1" -newermt @0 | wc -l)
	loop_umount
	[ "$newer" -eq 0 ]
	[ "$newer_c" -eq 0 ]
	# times before the epoch are kept
	[ "$older" -eq 0 ]
	# --timestamp wins over SOURCE_DATE_EPOCH; another tree, another UUID
	SOURCE_DATE_EPOCH=1 xiptool mkfs -q --timestamp 1600000000 -d "$T/src" "$T/c"
	cmp "$T/a" "$T/c"
	touch "$T/src/extra"
	SOURCE_DATE_EPOCH=1600000000 xiptool mkfs -q -d "$T/src" "$T/d"
	[ "$(dumpe2fs_field "$T/a" 'Filesystem UUID')" != "$(dumpe2fs_field "$T/d" 'Filesystem UUID')" ]
}

@test "mkfs: the derived UUID covers the contents: one byte of one file apart, another UUID; the same tree, the same UUID" {
	require_cmd dumpe2fs blkid python3
	mkdir -p "$T/a/dir"
	head -c 300000 /dev/urandom > "$T/a/dir/big"
	head -c 5000 /dev/urandom > "$T/a/small"
	truncate -s 1M "$T/a/sparse"
	printf 'x' | dd of="$T/a/sparse" bs=1 seek=700000 conv=notrunc status=none
	cp -a "$T/a" "$T/b"
	# byte 123456 of one file changed, its times and everything else kept
	python3 -c 'import sys
f = open(sys.argv[1], "r+b"); f.seek(123456); b = f.read(1)
f.seek(123456); f.write(bytes([b[0] ^ 1]))' "$T/b/dir/big"
	touch -r "$T/a/dir/big" "$T/b/dir/big"
	[ "$(cmp "$T/a/dir/big" "$T/b/dir/big" | wc -l)" -eq 1 ]
	SOURCE_DATE_EPOCH=1600000000 xiptool mkfs -q -d "$T/a" "$T/a.img"
	SOURCE_DATE_EPOCH=1600000000 xiptool mkfs -q -d "$T/b" "$T/b.img"
	SOURCE_DATE_EPOCH=1600000000 xiptool mkfs -q -d "$T/a" "$T/a2.img"
	ua=$(blkid -o value -s UUID "$T/a.img")
	ub=$(blkid -o value -s UUID "$T/b.img")
	[ -n "$ua" ]
	[ -n "$ub" ]
	[ "$ua" != "$ub" ]
	[ "$(dumpe2fs_field "$T/a.img" 'Filesystem UUID')" = "$ua" ]
	[ "$(dumpe2fs_field "$T/b.img" 'Filesystem UUID')" = "$ub" ]
	# a name-based (SHA-1, version 5) UUID of the RFC 4122 variant
	[[ "$ua" == ????????-????-5???-[89ab]???-???????????? ]]
	# the same tree again: the same UUID, the same image
	[ "$(blkid -o value -s UUID "$T/a2.img")" = "$ua" ]
	cmp "$T/a.img" "$T/a2.img"
	# a hole moved is another content too
	rm "$T/b/sparse"
	truncate -s 1M "$T/b/sparse"
	printf 'x' | dd of="$T/b/sparse" bs=1 seek=800000 conv=notrunc status=none
	touch -r "$T/a/sparse" "$T/b/sparse"
	cp "$T/a/dir/big" "$T/b/dir/big"
	touch -r "$T/a/dir/big" "$T/b/dir/big"
	SOURCE_DATE_EPOCH=1600000000 xiptool mkfs -q -d "$T/b" "$T/c.img"
	[ "$(blkid -o value -s UUID "$T/c.img")" != "$ua" ]
	fsck_clean "$T/a.img"
	fsck_clean "$T/b.img"
}

@test "mkfs: the derived UUID of a fixed tree is pinned (contents hashed in runs of 1 MiB after their offsets)" {
	require_cmd blkid
	mkdir -p "$T/t/d"
	seq 1 400000 > "$T/t/big"
	echo hi > "$T/t/small"
	seq 1 10 > "$T/t/d/f"
	chmod 755 "$T/t" "$T/t/d"
	chmod 644 "$T/t/big" "$T/t/small" "$T/t/d/f"
	xiptool mkfs -q --page-size 4096 --owner 0:0 --timestamp 1600000000 \
		-d "$T/t" "$T/img"
	[ "$(blkid -o value -s UUID "$T/img")" = 3ea696a5-62cf-5330-ab4a-8b6cd149b35a ]
}

@test "mkfs: -L, -U, -N, -s and an empty file system without -d" {
	require_cmd dumpe2fs blkid
	xiptool mkfs -q -L mylabel -U 0b6e1a02-5d87-4c5e-a6a3-6ef8a55e7a1d \
		-N 1000 -s 16M "$T/img"
	fsck_clean "$T/img"
	[ "$(dumpe2fs_field "$T/img" 'Filesystem volume name')" = mylabel ]
	[ "$(blkid -o value -s UUID "$T/img")" = 0b6e1a02-5d87-4c5e-a6a3-6ef8a55e7a1d ]
	[ "$(dumpe2fs_field "$T/img" 'Inode count')" -ge 1000 ]
	[ "$(stat -c %s "$T/img")" -eq $((16 << 20)) ]
	[ "$(dumpe2fs_field "$T/img" 'Block size')" -eq "$(getconf PAGESIZE)" ]
	[ "$(dumpe2fs_field "$T/img" 'Filesystem revision #')" = "1 (dynamic)" ]
	features=$(dumpe2fs_field "$T/img" 'Filesystem features')
	[ "$features" = "filetype sparse_super large_file" ]
	# the file is sparse: far fewer blocks than its size
	[ "$(( $(stat -c %b "$T/img") * 512 ))" -lt $((4 << 20)) ]
	run debugfs -R "ls -l /" "$T/img"
	[[ "$output" == *"lost+found"* ]]
	run xiptool mkfs -q -U clear "$T/z"
	[ "$status" -eq 0 ]
	[ "$(dumpe2fs_field "$T/z" 'Filesystem UUID')" = "<none>" ]
	run xiptool mkfs -L seventeen-bytes-x "$T/y"
	[ "$status" -eq 2 ]
	[[ "$output" == *"--label: 'seventeen-bytes-x' is longer than 16 bytes"* ]]
	run xiptool mkfs -U not-a-uuid "$T/y"
	[ "$status" -eq 2 ]
	[ ! -e "$T/y" ]
}

@test "mkfs: --page-size 16384 and 65536 images are clean, block size as asked" {
	require_cmd python3 e2fsck
	"$PY" "$GENTREE" "$T/src" --many 20
	for ps in 16384 65536; do
		xiptool mkfs -q --page-size $ps -d "$T/src" "$T/img$ps"
		fsck_clean "$T/img$ps"
		[ "$(dumpe2fs_field "$T/img$ps" 'Block size')" -eq $ps ]
		debugfs -R "dump /files/size-5242880 $T/out$ps" "$T/img$ps" 2>/dev/null
		cmp "$T/src/files/size-5242880" "$T/out$ps"
	done
	run xiptool mkfs --page-size 8192 "$T/x"
	[ "$status" -eq 2 ]
	[[ "$output" == *"must be 4096, 16384 or 65536"* ]]
}

@test "mkfs: --squash and a device table, run without root" {
	require_loop
	require_cmd setpriv python3
	chmod 755 "$T"
	mkdir "$T/scratch" && chown 65534:65534 "$T/scratch"
	as_nobody "$PY" "$GENTREE" "$T/scratch/src" --many 10
	# a mode-000 file is unreadable to its owner too
	as_nobody chmod -R u+rX "$T/scratch/src"
	cat > "$T/scratch/table" <<-'EOF'
	# name     type mode uid gid major minor start inc count
	/dev        d   755  0   0   -     -     -     -   -
	/dev/console c  600  0   5   5     1     -     -   -
	/dev/null   c   666  0   0   1     3     0     0   0
	/dev/sda    b   660  0   6   8     0     0     1   3
	/dev/fifo   p   640  7   8   -     -     -     -   -
	/files/size-1 f 4711 12  34  -     -     -     -   -
	/dirs       d   700  1   1   -     -     -     -   -
	EOF
	run as_nobody "$XIPTOOL" mkfs --squash -D "$T/scratch/table" -d "$T/scratch/src" "$T/scratch/img"
	echo "$output"
	[ "$status" -eq 0 ]
	fsck_clean "$T/scratch/img"
	loop_mount "$T/scratch/img"
	m=$T/mnt
	[ "$(stat -c '%F %a %u %g %t:%T' "$m/dev/console")" = "character special file 600 0 5 5:1" ]
	[ "$(stat -c '%F %a %u %g %t:%T' "$m/dev/null")" = "character special file 666 0 0 1:3" ]
	[ "$(stat -c '%F %a %u %g %t:%T' "$m/dev/sda0")" = "block special file 660 0 6 8:0" ]
	[ "$(stat -c '%F %a %u %g %t:%T' "$m/dev/sda2")" = "block special file 660 0 6 8:2" ]
	[ ! -e "$m/dev/sda3" ]
	[ "$(stat -c '%F %a %u %g' "$m/dev/fifo")" = "fifo 640 7 8" ]
	[ "$(stat -c '%a %u %g' "$m/files/size-1")" = "4711 12 34" ]
	[ "$(stat -c '%a %u %g' "$m/dirs")" = "700 1 1" ]
	# everything else belongs to root, whoever ran mkfs
	others=$(find "$m" -path "$m/dev" -prune -o ! -path "$m/files/size-1" ! -path "$m/dirs" \( ! -uid 0 -o ! -gid 0 \) -print | wc -l)
	total=$(find "$m" | wc -l)
	loop_umount
	[ "$others" -eq 0 ]
	[ "$total" -gt 50 ]
}

@test "mkfs: --owner, --uid-map and --gid-map" {
	require_loop
	mkdir -p "$T/src/d"
	echo a > "$T/src/a"; echo b > "$T/src/d/b"; echo c > "$T/src/c"
	chown 1000:1000 "$T/src/a" "$T/src/d"
	chown 1005:2000 "$T/src/d/b"
	chown 7:7 "$T/src/c"
	xiptool mkfs -q --uid-map 1000:0:10 --gid-map 1000:50 --gid-map 2000:60 -d "$T/src" "$T/img"
	loop_mount "$T/img"
	[ "$(stat -c '%u:%g' "$T/mnt/a")" = 0:50 ]
	[ "$(stat -c '%u:%g' "$T/mnt/d")" = 0:50 ]
	[ "$(stat -c '%u:%g' "$T/mnt/d/b")" = 5:60 ]
	[ "$(stat -c '%u:%g' "$T/mnt/c")" = 7:7 ]
	loop_umount
	xiptool mkfs -q --owner 123:456 -d "$T/src" "$T/img2"
	loop_mount "$T/img2"
	n=$(find "$T/mnt" ! -path "$T/mnt/lost+found" \( ! -uid 123 -o ! -gid 456 \) | wc -l)
	loop_umount
	[ "$n" -eq 0 ]
	run xiptool mkfs --uid-map 1000 "$T/x"
	[ "$status" -eq 2 ]
	[[ "$output" == *"invalid id map '1000'"* ]]
	run xiptool mkfs --squash --owner 1:1 "$T/x"
	[ "$status" -eq 2 ]
	[ ! -e "$T/x" ]
}

@test "mkfs: too small an image says the size it needs and leaves nothing" {
	require_cmd python3
	"$PY" "$GENTREE" "$T/src" --many 10
	run xiptool mkfs -s 1M -d "$T/src" "$T/img"
	echo "$output"
	[ "$status" -eq 3 ]
	[[ "$output" =~ ^"xiptool mkfs: $T/img: image too small: 1048576 bytes given, needs "([0-9]+)" ("([0-9]+)\.([0-9])" MiB): give at least "([0-9]+)" MiB"$ ]]
	need=${BASH_REMATCH[1]}
	tenths=$(( BASH_REMATCH[2] * 10 + BASH_REMATCH[3] ))
	mib=${BASH_REMATCH[4]}
	# the tenths of a MiB rounded up, the advice in whole MiB, never short
	[ "$tenths" -eq $(( (need * 10 + 1048575) / 1048576 )) ]
	[ "$mib" -eq $(( (tenths + 9) / 10 )) ]
	[ $(( mib << 20 )) -ge "$need" ]
	[ ! -e "$T/img" ]
	xiptool mkfs -q -s "${mib}M" -d "$T/src" "$T/img-advised"
	fsck_clean "$T/img-advised"
	# the size it names is enough
	xiptool mkfs -q -s "$need" -d "$T/src" "$T/img"
	fsck_clean "$T/img"
	run xiptool mkfs -N 5 -d "$T/src" "$T/img2"
	[ "$status" -eq 3 ]
	[[ "$output" == *"5 inodes are too few: the tree needs"* ]]
	[ ! -e "$T/img2" ]
}

@test "mkfs: an existing non-empty image needs --force; an empty one is used" {
	echo precious > "$T/img"
	run xiptool mkfs "$T/img"
	[ "$status" -eq 3 ]
	[ "$output" = "xiptool mkfs: $T/img: exists and is not empty (use --force to overwrite it)" ]
	[ "$(cat "$T/img")" = precious ]
	xiptool mkfs -q --force "$T/img"
	fsck_clean "$T/img"
	# an image inside the tree is left out of it
	mkdir "$T/tree" && echo x > "$T/tree/x" && echo old > "$T/tree/self.img"
	xiptool mkfs -q --force -d "$T/tree" "$T/tree/self.img"
	fsck_clean "$T/tree/self.img"
	run debugfs -R "ls -p /" "$T/tree/self.img"
	[[ "$output" == *"/x/"* && "$output" != *"self.img"* ]]
	: > "$T/empty"
	xiptool mkfs -q "$T/empty"
	fsck_clean "$T/empty"
	run xiptool mkfs "$T"
	[ "$status" -eq 3 ]
	[[ "$output" == *"$T: not a regular file or block device"* ]]
}

@test "mkfs: errors name the source path and leave no image behind" {
	require_root
	require_cmd setpriv
	chmod 755 "$T"
	mkdir -p "$T/w/src/sub" && echo secret > "$T/w/src/sub/locked"
	chmod 000 "$T/w/src/sub/locked"
	chown -R 65534:65534 "$T/w"
	run as_nobody "$XIPTOOL" mkfs -d "$T/w/src" "$T/w/img"
	echo "$output"
	[ "$status" -eq 3 ]
	[ "$output" = "xiptool mkfs: $T/w/src/sub/locked: Permission denied" ]
	[ ! -e "$T/w/img" ]
	chmod 000 "$T/w/src/sub"
	run as_nobody "$XIPTOOL" mkfs -d "$T/w/src" "$T/w/img"
	[ "$status" -eq 3 ]
	[ "$output" = "xiptool mkfs: $T/w/src/sub: Permission denied" ]
	[ ! -e "$T/w/img" ]
	run xiptool mkfs -d "$T/nonexistent" "$T/img"
	[ "$status" -eq 3 ]
	[ "$output" = "xiptool mkfs: $T/nonexistent: No such file or directory" ]
	[ ! -e "$T/img" ]
	mkdir "$T/ok"
	printf '/x c 600 0 0 1 1 - - -\n/no/such c 600 0 0 1 1 - - -\n' > "$T/table"
	run xiptool mkfs -D "$T/table" -d "$T/ok" "$T/img"
	[ "$status" -eq 3 ]
	[ "$output" = "xiptool mkfs: $T/table:2: /no/such: no such file or parent directory in the tree" ]
	printf '/%s c 600 0 0 1 1 - - -\n' "$(printf 'n%.0s' $(seq 256))" > "$T/table"
	run xiptool mkfs -D "$T/table" -d "$T/ok" "$T/img"
	[ "$status" -eq 3 ]
	[[ "$output" == *"name too long (at most 255 bytes)" ]]
	printf '/x q 600 0 0 1 1 - - -\n' > "$T/table"
	run xiptool mkfs -D "$T/table" -d "$T/ok" "$T/img"
	[ "$status" -eq 3 ]
	[ "$output" = "xiptool mkfs: $T/table:1: unknown type 'q' (f, d, c, b or p)" ]
	[ ! -e "$T/img" ]
}

@test "mkfs: a block device; a mounted one is refused" {
	require_loop
	truncate -s 32M "$T/disk"
	dev=$(losetup --find --show "$T/disk")
	echo "$dev" > "$T/loopdev"
	mkdir -p "$T/src" && echo hi > "$T/src/hi"
	run xiptool mkfs -d "$T/src" "$dev"
	echo "$output"
	[ "$status" -eq 0 ]
	fsck_clean "$dev"
	[ "$(dumpe2fs_field "$dev" 'Block count')" -eq $((32 * 1024 * 1024 / $(getconf PAGESIZE))) ]
	mkdir "$T/mnt"
	mount -o ro "$dev" "$T/mnt"
	[ "$(cat "$T/mnt/hi")" = hi ]
	run xiptool mkfs "$dev"
	umount "$T/mnt"
	losetup -d "$dev"
	echo "$output"
	[ "$status" -eq 3 ]
	[ "$output" = "xiptool mkfs: $dev: device is mounted or in use (use --force to overwrite it)" ]
}

@test "mkfs: onto an attached segment (@NAME)" {
	require_cmd e2fsck
	export XIPTOOL_RUNDIR=$T/run
	name=mkfs-test-$$
	echo "$name" > "$T/segname"
	mkdir -p "$T/src/d" && echo hello > "$T/src/d/f"
	xiptool attach -t sn -n "$name" --size 8M
	run xiptool mkfs -d "$T/src" "@$name"
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$(xiptool read "@$name" /d/f)" = hello ]
	xiptool save "$name" "$T/saved.img"
	fsck_clean "$T/saved.img"
	[ "$(stat -c %s "$T/saved.img")" -eq $((8 << 20)) ]
	# too small: refused before the segment is touched
	head -c 20M /dev/zero > "$T/src/big"
	run xiptool mkfs -d "$T/src" "@$name"
	[ "$status" -eq 3 ]
	[[ "$output" == *"@$name: image too small: 8388608 bytes given, needs "* ]]
	[ "$(xiptool read "@$name" /d/f)" = hello ]
}

@test "mkfs: progress on a TTY only" {
	require_cmd script python3
	"$PY" "$GENTREE" "$T/src" --many 10
	run xiptool mkfs -d "$T/src" "$T/a"
	[ "$status" -eq 0 ]
	[[ "$output" != *"files, "*MiB* ]]
	[[ "$output" == "$T/a: "*" files ("* ]]
	run xiptool mkfs -q -d "$T/src" "$T/b"
	[ "$output" = "" ]
	script -qec "'$XIPTOOL' mkfs -d '$T/src' '$T/c'" /dev/null > "$T/tty.out"
	grep -q "files, .* MiB" "$T/tty.out"
}

# subdirs DIR FROM TO: DIR/dNNNNN for NNNNN in [FROM, TO) made (or, when
# TO < FROM, those in [TO, FROM) removed)
subdirs() {
	"$PY" - "$@" <<'EOF'
import os, sys
d, a, b = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
for i in range(a, b) if a < b else range(b, a):
    p = "%s/d%05d" % (d, i)
    os.mkdir(p) if a < b else os.rmdir(p)
EOF
}

@test "mkfs -d: more subdirectories than ext2's 32000 links are refused, nothing left; 31998 build and the kernel counts them" {
	require_loop
	tmpfs_dir w
	mkdir -p "$T/w/src/big" "$T/w/out"
	subdirs "$T/w/src/big" 0 65534
	echo ok > "$T/w/src/big/d00000/f"
	# 2 + 65534 is 0 in a 16-bit count: refused, not wrapped
	run xiptool mkfs -d "$T/w/src" "$T/w/out/img"
	echo "$output"
	[ "$status" -eq 3 ]
	[ "${#lines[@]}" -eq 1 ]
	[ "$output" = "xiptool mkfs: $T/w/src/big: 65534 subdirectories: ext2 allows at most 31998 (32000 links)" ]
	[ -z "$(ls -A "$T/w/out")" ]
	# one past the limit
	subdirs "$T/w/src/big" 65534 31999
	run xiptool mkfs -d "$T/w/src" "$T/w/out/img"
	[ "$status" -eq 3 ]
	[[ "$output" == *"/big: 31999 subdirectories: "* ]]
	[ -z "$(ls -A "$T/w/out")" ]
	# at the limit
	subdirs "$T/w/src/big" 31999 31998
	xiptool mkfs -q -d "$T/w/src" "$T/w/out/img"
	fsck_clean "$T/w/out/img"
	for fstype in ext2 ext4; do
		loop_mount "$T/w/out/img" "$fstype"
		[ "$(stat -c %h "$T/mnt/big")" -eq 32000 ]
		[ "$(cat "$T/mnt/big/d00000/f")" = ok ]
		loop_umount
	done
	# one removed by the kernel: the count follows, the image stays clean
	mount -t ext2 -o loop "$T/w/out/img" "$T/mnt"
	rmdir "$T/mnt/big/d31997"
	[ "$(stat -c %h "$T/mnt/big")" -eq 31999 ]
	umount "$T/mnt"
	fsck_clean "$T/w/out/img"
}

@test "mkfs IMAGE DIR (another tool's order) is a usage error that says to give the tree with -d" {
	mkdir -p "$T/tree"
	echo hi > "$T/tree/f"
	run xiptool mkfs "$T/img" "$T/tree"
	[ "$status" -eq 2 ]
	[ "${lines[0]}" = "xiptool mkfs: too many arguments: give the tree with -d (xiptool mkfs -d $T/tree $T/img)" ]
	[ ! -e "$T/img" ]
	# the advice works
	run xiptool mkfs -q -d "$T/tree" "$T/img"
	[ "$status" -eq 0 ]
	# a second argument that is no directory: the plain usage error
	run xiptool mkfs "$T/img2" "$T/tree/f"
	[ "$status" -eq 2 ]
	[[ "${lines[0]}" == "xiptool mkfs: too many arguments (usage: xiptool mkfs "* ]]
	run xiptool mkfs -d "$T/tree" "$T/img3" "$T/tree"
	[ "$status" -eq 2 ]
	[[ "${lines[0]}" == "xiptool mkfs: too many arguments (usage: xiptool mkfs "* ]]
	[ ! -e "$T/img2" ]
	[ ! -e "$T/img3" ]
}

#!/usr/bin/env bats
# xiptool verify against e2fsck -fn, debugfs and the kernel's ext2/ext4
# drivers on the same images.

load ../lib/common
load ../lib/names

# A source tree without ELF files (mke2fs -d never writes a file longer
# than 12 blocks contiguously; verify counts that against ELF files only).
make_tree() {
	mkdir -p "$T/tree/dir/sub" "$T/tree/empty"
	printf 'hello\n' > "$T/tree/hello.txt"
	head -c 100000 /dev/urandom > "$T/tree/dir/blob"
	head -c 5000 /dev/urandom > "$T/tree/dir/sub/small"
	ln -s hello.txt "$T/tree/link"
	ln -s "$(printf 'd/%.0s' $(seq 40))target" "$T/tree/slowlink"
	ln "$T/tree/hello.txt" "$T/tree/dir/hard"
	mkfifo "$T/tree/fifo"
	mknod "$T/tree/null" c 1 3
	chmod 4711 "$T/tree/dir/sub/small"
	chown 123:456 "$T/tree/dir/blob"
	touch -d '2001-02-03 04:05:06' "$T/tree/dir/sub"
}

summary() {
	printf '%s\n' "$output" | grep -v '^pmem: ' | tail -1
}

# xiptool verify --against $T/tree $T/img, which must exit $1: its report
# in $output (and shown on failure).
verify_against() {
	run xiptool verify --against "$T/tree" "$T/img"
	echo "$output"
	[ "$status" -eq "$1" ]
}

@test "a clean mke2fs -d image verifies clean, as e2fsck says, and equal to its tree" {
	make_tree
	mkimg "$T/img" 16M "$T/tree"
	fsck_clean "$T/img"
	run xiptool verify "$T/img"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$(summary)" == "$T/img: clean: 0 problems, "* ]]
	verify_against 0
	if grep -v '^warning: ' <<<"$output" | grep -v "^$T/img: clean" | grep -v "^pmem: " | grepq .; then false; fi
}

@test "--against reports a changed byte, mode, owner, mtime, symlink, device and hard link" {
	make_tree
	mkimg "$T/img" 16M "$T/tree"
	# one byte of the file in the image, inverted (the file is random: a
	# fixed byte could be the one already there)
	blk=$(debugfs -R "bmap /dir/blob 3" "$T/img" 2>/dev/null)
	at=$((blk * 4096 + 17))
	byte=$(od -An -tu1 -j "$at" -N1 "$T/img")
	printf "\\$(printf %03o $((255 - byte)))" | dd of="$T/img" bs=1 seek="$at" conv=notrunc status=none
	[ "$(od -An -tu1 -j "$at" -N1 "$T/img")" -eq $((255 - byte)) ]
	# one mode in the image
	debugfs -w -R "sif /hello.txt mode 0100600" "$T/img" 2>/dev/null
	# the source changes: a symlink target, an owner, an mtime, a device,
	# a broken hard link, a new file
	ln -sfn dir "$T/tree/link"
	chown 7 "$T/tree/dir/sub/small"
	touch -d '2002-01-01' "$T/tree/empty"
	rm "$T/tree/null"; mknod "$T/tree/null" c 1 5
	cp "$T/tree/dir/hard" "$T/tree/dir/hard.new"; mv "$T/tree/dir/hard.new" "$T/tree/dir/hard"
	chmod 0600 "$T/tree/dir/hard"
	echo new > "$T/tree/dir/new"
	verify_against 1
	grep -qx '/dir/blob: content differs (crc32 [0-9a-f]* in the image, [0-9a-f]* in the source)' <<<"$output"
	grep -qx '/hello.txt: mode 0600 in the image, 0644 in the source' <<<"$output"
	grep -qx "/link: symlink to 'hello.txt' in the image, to 'dir' in the source" <<<"$output"
	grep -qx '/dir/sub/small: owner 0 in the image, 7 in the source' <<<"$output"
	grep -qx '/empty: mtime [0-9]* in the image, [0-9]* in the source' <<<"$output"
	grep -qx '/null: device 1:3 in the image, 1:5 in the source' <<<"$output"
	grep -q '^/dir/hard: a hard link of /hello.txt in the image, not in the source$\|^/hello.txt: a hard link of /dir/hard in the image, not in the source$' <<<"$output"
	grep -qx '/dir/new: missing from the image' <<<"$output"
	# without --against the structure is still sound
	run xiptool verify "$T/img"
	[ "$status" -eq 0 ]
}

@test "--against: a file only in the image, a type change, a missing tree" {
	make_tree
	mkimg "$T/img" 16M "$T/tree"
	rm "$T/tree/dir/sub/small"
	rm "$T/tree/fifo"; mkdir "$T/tree/fifo"
	verify_against 1
	grep -qx '/dir/sub/small: only in the image' <<<"$output"
	grep -qx '/fifo: a fifo in the image, a directory in the source' <<<"$output"
	run xiptool verify --against "$T/nope" "$T/img"
	[ "$status" -eq 3 ]
	[ "$output" = "xiptool verify: $T/nope: No such file or directory" ]
}

@test "an image from xiptool mkfs verifies clean, equal to its tree; one byte, mode, symlink reported" {
	require_cmd busybox
	make_tree
	cp "$(command -v busybox)" "$T/tree/busybox"
	xiptool mkfs -q -d "$T/tree" "$T/img"
	fsck_clean "$T/img"
	verify_against 0
	# a clean verify says so in one line, nothing else
	[ "${#lines[@]}" -eq 1 ]
	[[ "$output" == "$T/img: clean: 0 problems, 0 warnings "* ]]
	blk=$(debugfs -R "bmap /busybox 100" "$T/img" 2>/dev/null)
	printf '\x01' | dd of="$T/img" bs=1 seek=$((blk * 4096 + 5)) conv=notrunc status=none
	debugfs -w -R "sif /dir/sub/small mode 0104755" "$T/img" 2>/dev/null
	: > "$T/ref"; touch -h -r "$T/tree/link" "$T/ref"
	ln -sfn elsewhere "$T/tree/link"
	touch -h -r "$T/ref" "$T/tree/link"
	verify_against 1
	grep -qx '/busybox: content differs (crc32 [0-9a-f]* in the image, [0-9a-f]* in the source)' <<<"$output"
	grep -qx '/dir/sub/small: mode 4755 in the image, 4711 in the source' <<<"$output"
	grep -qx "/link: symlink to 'hello.txt' in the image, to 'elsewhere' in the source" <<<"$output"
	[ "$(grep -v "^pmem: " <<<"$output" | grep -vc "^$T/img: ")" -eq 3 ]
}

@test "--json lists the same findings as the text output" {
	require_cmd python3
	make_tree
	mkimg "$T/img" 16M "$T/tree"
	debugfs -w -R "sif /hello.txt links_count 5" "$T/img" 2>/dev/null
	debugfs -w -R "freeb 100" "$T/img" 2>/dev/null
	run xiptool verify "$T/img"
	[ "$status" -eq 1 ]
	text=$(printf '%s\n' "$output" | sed '$d' | sed 's/^warning: //')
	run xiptool verify --json "$T/img"
	[ "$status" -eq 1 ]
	json=$(printf '%s' "$output" | python3 -c '
import json, sys
for f in json.load(sys.stdin)["findings"]:
    assert f["severity"] in ("error", "warning")
    print(f["message"])')
	[ "$text" = "$json" ]
	ino=$(debugfs -R "stat /hello.txt" "$T/img" 2>/dev/null | sed -n 's/^Inode: \([0-9]*\).*/\1/p')
	printf '%s' "$output" | python3 -c '
import json, sys
ino = int(sys.argv[1])
f = [f for f in json.load(sys.stdin)["findings"] if f["object"] == "inode"][0]
assert f["path"] == "/hello.txt" and f["inode"] == ino, f
assert f["message"] == "inode %d (/hello.txt): link count 5, should be 2" % ino, f' "$ino"
}

@test "damage generator: verify fails whenever e2fsck -fn does, names the structure, never crashes" {
	require_cmd e2fsck debugfs python3
	run "$TOP_SRCDIR/tests/damage.sh" "$XIPTOOL" "$T/dmg" "${DAMAGE_ROUNDS:-25}" "$RANDOM"
	echo "$output" | grep -v '^ok'
	[ "$status" -eq 0 ]
}

@test "XIP capability: a 1 KiB-block image fails unless --page-size says 1K" {
	[ "$(getconf PAGESIZE)" -eq 4096 ] || skip "page size is not 4096"
	mke2fs -q -F -t ext2 -b 1024 "$T/k1" 8M
	run xiptool verify "$T/k1"
	[ "$status" -eq 1 ]
	grep -qx 'image: block size 1024 differs from page size 4096: not XIP-capable' <<<"$output"
	run xiptool verify --page-size 1K "$T/k1"
	[ "$status" -eq 0 ]
	truncate -s $((8 * 1024 * 1024 + 1024)) "$T/k1"
	run xiptool verify --page-size 4096 "$T/k1"
	[ "$status" -eq 1 ]
	grep -q 'image: size 8389632 is not a multiple of the page size 4096' <<<"$output"
	run xiptool verify --page-size 1000 "$T/k1"
	[ "$status" -eq 2 ]
}

@test "an ELF file written by mke2fs -d is not contiguous: an error, while e2fsck is clean" {
	require_cmd busybox
	mkdir -p "$T/tree"
	cp "$(command -v busybox)" "$T/tree/busybox"
	head -c 200000 /dev/urandom > "$T/tree/data"
	mkimg "$T/img" 16M "$T/tree"
	fsck_clean "$T/img"
	run xiptool verify "$T/img"
	echo "$output"
	[ "$status" -eq 1 ]
	grep -qx 'inode 1[23] (/busybox): ELF file data is not contiguous (2 runs)' <<<"$output"
	grep -qx 'warning: inode 1[23] (/data): file data is not contiguous (2 runs)' <<<"$output"
	[[ "$(summary)" == *": 1 problem, 1 warning "* ]]
}

@test "images written by the kernel's ext2 and ext4 drivers verify as e2fsck says" {
	require_loop
	make_tree
	for fstype in ext2 ext4; do
		mkimg "$T/img" 32M "$T/tree"
		mkdir -p "$T/mnt"
		mount -t "$fstype" -o loop "$T/img" "$T/mnt"
		mkdir "$T/mnt/many"
		for i in $(seq 600); do echo "$i" > "$T/mnt/many/some-long-file-name-$i"; done
		for i in $(seq 1 3 600); do rm "$T/mnt/many/some-long-file-name-$i"; done
		head -c 3000000 /dev/urandom > "$T/mnt/large"
		rm -r "$T/mnt/dir"
		ln "$T/mnt/large" "$T/mnt/many/large-link"
		umount "$T/mnt"
		fsck_clean "$T/img"
		run xiptool verify "$T/img"
		echo "$fstype: $output" | grep -v '^warning'
		[ "$status" -eq 0 ]
	done
}

@test "cannot read at all: exit 3 with one line; damaged but ext2: exit 1 naming the field" {
	random_refused verify
	run xiptool verify "$T/missing"
	[ "$status" -eq 3 ]
	: > "$T/empty"
	run xiptool verify "$T/empty"
	[ "$status" -eq 3 ]
	if command -v mksquashfs >/dev/null; then
		mkdir -p "$T/sq"; echo hi > "$T/sq/f"
		mksquashfs "$T/sq" "$T/sq.img" -quiet -noappend >/dev/null
		run xiptool verify "$T/sq.img"
		[ "$status" -eq 3 ]
		[ "$output" = "xiptool verify: $T/sq.img: holds squashfs, not an ext2 file system" ]
	fi
	# ext4 is readable (e2fsck reads it) but not ext2: a problem, named
	mke2fs -q -F -t ext4 "$T/e4" 16M
	run xiptool verify "$T/e4"
	[ "$status" -eq 1 ]
	grep -Eq '^superblock: feature [a-z_0-9]+ is not ext2 \(s_feature_incompat 0x[0-9a-f]+\): not an XIP ext2 image$' <<<"$output"
	# a truncated image: the superblock claims more than there is
	mkimg "$T/img" 8M
	truncate -s 1M "$T/img"
	run xiptool verify "$T/img"
	[ "$status" -eq 1 ]
	grep -q '^superblock: block count 2048 (s_blocks_count) exceeds the image (256 blocks of 4096 bytes)$' <<<"$output"
	run xiptool verify
	[ "$status" -eq 2 ]
}

@test "progress appears on a terminal only" {
	require_cmd script
	mkimg "$T/img" 16M
	run xiptool verify "$T/img"
	[[ "$output" != *$'\r'* ]]
	run script -qec "'$XIPTOOL' verify '$T/img'" /dev/null
	[ "$status" -eq 0 ]
	[[ "$output" == *"xiptool verify: inodes"* ]]
}

@test "names from the image are escaped in findings; --json is valid and holds them" {
	require_cmd python3
	hostile_tree "$T/tree"
	mkimg "$T/img" 8M "$T/tree"
	m1=$(stat -c %Y "$T/tree/$EVIL")
	m2=$(stat -c %Y "$T/tree/bad"$'\xff')
	printf 'changed\n' > "$T/tree/$EVIL"
	printf 'changed\n' > "$T/tree/bad"$'\xff'
	# only the size differs, whichever second the rewrite falls in
	touch -m -d "@$m1" "$T/tree/$EVIL"
	touch -m -d "@$m2" "$T/tree/bad"$'\xff'
	verify_against 1
	[ "${#lines[@]}" -eq 3 ]
	[ "${lines[0]}" = '/bad\xff: size 2 in the image, 8 in the source' ]
	[ "${lines[1]}" = "/$EVIL_ESC: size 2 in the image, 8 in the source" ]
	if printf '%s' "$output" | LC_ALL=C grep -q '[[:cntrl:]]'; then false; fi
	xiptool verify --json --against "$T/tree" "$T/img" > "$T/out.json" || [ $? -eq 1 ]
	python3 - "$T/out.json" "/$EVIL" <<'PY'
import json, sys
raw = open(sys.argv[1], "rb").read()
assert all(b >= 0x20 or b == 0x0a for b in raw), raw
msgs = [f["message"] for f in json.loads(raw.decode("utf-8"))["findings"]]
assert msgs == ["/bad\\xff: size 2 in the image, 8 in the source",
                sys.argv[2] + ": size 2 in the image, 8 in the source"], msgs
PY
}

@test "verify --pmem says whether the image can be a guest's pmem device, in text and --json; a clean verify is one line" {
	[ "$(getconf PAGESIZE)" -eq 4096 ] || skip "page size is not 4096"
	mkimg "$T/img" 8M
	run xiptool verify --pmem "$T/img"
	[ "$status" -eq 0 ]
	[ "${lines[-1]}" = "pmem: yes" ]
	run xiptool verify --pmem --json "$T/img"
	[ "$(printf '%s' "$output" | python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["pmem"], "pmem-reason" in d, d["findings"])')" = "True False []" ]
	# without --pmem: no verdict, in text or JSON
	run xiptool verify --json "$T/img"
	[ "$(printf '%s' "$output" | python3 -c 'import json,sys; d=json.load(sys.stdin); print("pmem" in d, d["findings"])')" = "False []" ]
	truncate -s $(( (8 << 20) + 4096 )) "$T/img"
	run xiptool verify "$T/img"
	[ "$status" -eq 0 ]
	[ "${#lines[@]}" -eq 1 ]
	[[ "$output" != *pmem* ]]
	run xiptool verify --pmem "$T/img"
	[ "$status" -eq 0 ]
	[ "${lines[-1]}" = "pmem: no: size 8392704 is not a multiple of 2 MiB: the guest's nd_pmem refuses it (attach pads segments)" ]
	run xiptool verify --json --pmem "$T/img"
	[ "$(printf '%s' "$output" | python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["pmem"], d["pmem-reason"][:7])')" = "False size 83" ]
	mke2fs -q -F -t ext2 -b 1024 "$T/k1" 8M
	run xiptool verify --pmem "$T/k1"
	[[ "${lines[-1]}" == "pmem: no: block size 1024 differs from page size 4096: the guest's ext4 refuses DAX" ]]
	# an ext4 image: its superblock was read; the verdict is not judged
	mke2fs -q -F -t ext4 "$T/k4" 8M
	run xiptool verify --pmem "$T/k4"
	[ "$status" -eq 1 ]
	[ "${lines[-1]}" = "pmem: no: not judged: the image is not an ext2 file system xiptool can walk" ]
}

@test "--against: a source file that is a FIFO, or becomes one between lstat and open, is reported, never waited on" {
	require_cmd timeout
	make_tree
	mkimg "$T/img" 16M "$T/tree"
	# a FIFO where the image has a regular file
	mv "$T/tree/dir/sub/small" "$T/small"
	mkfifo "$T/tree/dir/sub/small"
	run timeout 20 "$XIPTOOL" verify --against "$T/tree" "$T/img"
	echo "$output"
	[ "$status" -eq 1 ]
	grep -qx '/dir/sub/small: a regular file in the image, a fifo in the source' <<<"$output"
	rm "$T/tree/dir/sub/small"
	mv "$T/small" "$T/tree/dir/sub/small"
	# the swap itself: the test build holds verify at the open of the
	# file (after its fstatat) until the file is a FIFO
	use_test_hooks
	require_test_hooks
	mkfifo "$T/fifo"
	XIPTOOL_TEST_VERIFY_PAUSE=$T/paused XIPTOOL_TEST_VERIFY_PAUSE_AT=$T/tree/dir/blob \
		timeout 20 "$XIPTOOL" verify --against "$T/tree" "$T/img" \
		> "$T/out" 2>&1 &
	pid=$!
	for _ in $(seq 400); do [ -e "$T/paused" ] && break; sleep 0.05; done
	[ -e "$T/paused" ]
	mv "$T/fifo" "$T/tree/dir/blob"
	rm "$T/paused"
	rc=0
	wait "$pid" || rc=$?
	cat "$T/out"
	[ "$rc" -eq 1 ]
	grep -qx "/dir/blob: content not compared: $T/tree/dir/blob: replaced while being compared" "$T/out"
}

# dir_damage TEXT DIR NAME FIELD VALUE...: in a copy of $T/clean, change
# fields of the entry NAME in the first block of DIR (tests/lib/dirent.py);
# e2fsck -fn must find errors, verify must report TEXT and exit 1.
dir_damage() {
	local text=$1 dir=$2 blk
	shift 2
	cp "$T/clean" "$T/img"
	blk=$(debugfs -R "bmap $dir 0" "$T/img" 2>/dev/null)
	"$PY" "$TOP_SRCDIR/tests/lib/dirent.py" "$T/img" "$blk" "$@"
	# e2fsck: 4, errors left uncorrected (8 too when it gives up)
	run e2fsck -fn "$T/img"
	[ $((status & 4)) -eq 4 ]
	run xiptool verify "$T/img"
	echo "$dir $*: $output"
	[ "$status" -eq 1 ]
	grep -qF -- "$text" <<<"$output"
}

# the inode number of PATH in $T/clean, as debugfs says
ino_of() {
	debugfs -R "stat $1" "$T/clean" 2>/dev/null | sed -n 's/^Inode: \([0-9]*\).*/\1/p'
}

@test "directory entries: each kind of damage is found, as e2fsck finds it" {
	require_cmd e2fsck debugfs
	mkdir -p "$T/tree/d/s"
	printf 'a\n' > "$T/tree/d/a"
	printf 'b\n' > "$T/tree/d/b"
	mkimg "$T/clean" 8M "$T/tree"
	fsck_clean "$T/clean"
	s=$(ino_of /d/s)
	[ "$s" -gt 11 ]
	d=$(ino_of /d)
	[ "$d" -gt 11 ]
	last=$(dumpe2fs_field "$T/clean" 'Inode count')
	# rec_len: not a multiple of 4, below 12, past the block's end
	dir_damage "invalid rec_len 14" /d .. rec_len 14
	dir_damage "invalid rec_len 8" /d . rec_len 8 name_len 0
	dir_damage "invalid rec_len 4096" /d .. rec_len 4096
	# the last entry leaves less than an entry's header after it
	dir_damage "entry at offset 4092 is truncated" / d rec_len -4
	# a name longer than its record
	dir_damage "name_len 5 exceeds rec_len 12" /d . name_len 5
	# inode numbers: past the last, reserved, not in use
	dir_damage "invalid inode number $((last + 1))" /d a inode $((last + 1))
	dir_damage "points to reserved inode 7" /d a inode 7
	dir_damage "points to unused inode $last" /d a inode "$last"
	# the file type against the inode's mode
	dir_damage "has file type directory, the inode is a regular file" \
		/d a file_type 2
	# '.' and '..': first and second, their targets, present
	dir_damage "'.' points to inode 2" /d . inode 2
	dir_damage "first entry is 'x', not '.'" /d . name x
	dir_damage "second entry is '.x', not '..'" /d .. name .x
	dir_damage "missing '.' entry" /d . inode 0
	dir_damage "'..' is inode 2, should be $d" /d/s .. inode 2
	dir_damage "extra '.' entry" /d a name .
	# the bytes after the name of '.' and '..' (e2fsck wants them NUL)
	dir_damage "'.' entry is not NUL-terminated" /d . pad 0x9a
	dir_damage "'..' entry is not NUL-terminated" /d/s .. pad 1
	# names: empty, with '/', twice
	dir_damage "entry with an empty name" /d a name_len 0
	dir_damage "has '/' or NUL in its name" /d a name /
	dir_damage "entry 'a' appears twice in the directory" /d b name a
	# a second name for a directory
	dir_damage "is a second link to directory inode $s" \
		/d a inode "$s" file_type 2
	# a hole between two blocks of a directory of three blocks
	for i in $(seq 90); do
		: > "$T/tree/d/$(printf 'n%099d' "$i")"
	done
	mkimg "$T/clean" 8M "$T/tree"
	fsck_clean "$T/clean"
	[ "$(debugfs -R "stat /d" "$T/clean" 2>/dev/null | sed -n 's/.*Size: \([0-9]*\).*/\1/p' | head -1)" -eq 12288 ]
	cp "$T/clean" "$T/img"
	debugfs -w -R "sif /d block[1] 0" "$T/img" 2>/dev/null
	run e2fsck -fn "$T/img"
	[ $((status & 4)) -eq 4 ]
	run xiptool verify "$T/img"
	echo "$output"
	[ "$status" -eq 1 ]
	grep -qF "directory has a hole at block 1" <<<"$output"
}

# verify_swapping SCRIPT: verify --against $T/w/tree $T/img, its output in
# $T/out (shown) and its exit status in $rc, paused once it has compared
# the top directory while SCRIPT runs as uid 65534.
verify_swapping() {
	XIPTOOL_TEST_VERIFY_PAUSE=$T/paused XIPTOOL_TEST_VERIFY_PAUSE_AT=$T/w/tree \
		"$XIPTOOL" verify --against "$T/w/tree" "$T/img" > "$T/out" 2>&1 &
	pid=$!
	for _ in $(seq 600); do [ -e "$T/paused" ] && break; sleep 0.05; done
	[ -e "$T/paused" ]
	setpriv --reuid=65534 --regid=65534 --clear-groups -- sh -c "$1"
	rm "$T/paused"
	rc=0
	wait "$pid" || rc=$?
	cat "$T/out"
}

@test "--against: a source directory swapped for a symlink while verify runs is not followed" {
	require_root
	require_cmd setpriv python3
	use_test_hooks
	require_test_hooks
	chmod 755 "$T"
	# the other user's tree, and a directory only root may read
	mkdir -p "$T/w/tree/sub"
	printf 'fine\n' > "$T/w/tree/sub/f"
	chown -R 65534:65534 "$T/w"
	xiptool mkfs -q -d "$T/w/tree" "$T/img"
	mkdir -m 700 "$T/secret"
	# as long as sub/f: its crc32 would be compared
	printf 'SECR\n' > "$T/secret/f"
	printf 'x\n' > "$T/secret/hidden-name"
	crc=$(python3 -c 'import sys, zlib; print("%08x" % zlib.crc32(open(sys.argv[1], "rb").read()))' "$T/secret/f")
	# verify pauses once it has compared the top directory (sub was one)
	verify_swapping "mv '$T/w/tree/sub' '$T/w/tree/old' && ln -s '$T/secret' '$T/w/tree/sub'"
	[ -L "$T/w/tree/sub" ]
	[ "$rc" -eq 1 ]
	run grep -c -e hidden-name -e "$crc" "$T/out"
	[ "$output" = 0 ]
	grepq -Fx "/sub: cannot read the source directory $T/w/tree/sub: Not a directory" "$T/out"
	# swapped for another directory: not listed either
	rm "$T/w/tree/sub"
	mv "$T/w/tree/old" "$T/w/tree/sub"
	mkdir "$T/w/decoy"
	printf 'x\n' > "$T/w/decoy/decoy-name"
	chown -R 65534:65534 "$T/w/decoy"
	verify_swapping "mv '$T/w/tree/sub' '$T/w/old' && mv '$T/w/decoy' '$T/w/tree/sub'"
	[ "$rc" -eq 1 ]
	run grep -c decoy-name "$T/out"
	[ "$output" = 0 ]
	grepq -Fx "/sub: cannot read the source directory $T/w/tree/sub: replaced while being compared" "$T/out"
}

#!/usr/bin/env bats
# xiptool mkfs --tar against GNU tar's own extraction followed by mkfs -d,
# the kernel's ext4 driver, e2fsck and debugfs.

load ../lib/common

# a time before every time gentree.py sets after 1970 and after none of
# the ones GNU tar writes: --timestamp makes ctime and atime stable
TS=1000000000

# untar ARCHIVE DIR: GNU tar's extraction, owners and modes as stored
untar() {
	rm -rf "$2"
	mkdir "$2"
	tar --numeric-owner --same-permissions --xattrs --xattrs-include='*' \
		-C "$2" -xf "$1" 2>/dev/null
}

@test "mkfs --tar: the same image, byte for byte, as mkfs -d of GNU tar's extraction (pax, sparse, xattrs)" {
	require_root
	require_cmd python3 e2fsck tar
	"$PY" "$GENTREE" "$T/src"
	# pax with sparse members (GNU.sparse 1.0) and SCHILY.xattr records
	tar --format=pax --sparse --xattrs --xattrs-include='*' \
		-C "$T/src" -cf "$T/a.tar" . 2>/dev/null
	list=$(tar -tvf "$T/a.tar")
	grep -q 'holes/indirect' <<<"$list"
	run xiptool mkfs --timestamp "$TS" --tar "$T/a.tar" "$T/tar.img"
	echo "$output"
	[ "$status" -eq 0 ]
	fsck_clean "$T/tar.img"
	untar "$T/a.tar" "$T/x"
	xiptool mkfs -q --timestamp "$TS" -d "$T/x" "$T/dir.img"
	cmp "$T/tar.img" "$T/dir.img"
	# the extracted tree has what the test is about
	list "$T/x" --holes --xattrs > "$T/l.x"
	grep -q '^/holes/indirect .* map=0-1,1280-1281,4864-4865' "$T/l.x"
	grep -q 'user.big=' "$T/l.x"
	grep -q ' 0o60000 .* 8:0' "$T/l.x"
	grep -q ' 0o10000 ' "$T/l.x"
	grep -q 'group=' "$T/l.x"
	grep -q ' 4000000000 3 ' "$T/l.x"
}

@test "mkfs --tar: the kernel shows the tree GNU tar extracts (GNU format, sparse, long names)" {
	require_loop
	require_cmd python3 tar
	"$PY" "$GENTREE" "$T/src" --many 20
	tar --format=gnu --sparse -C "$T/src" -cf "$T/g.tar" . 2>/dev/null
	untar "$T/g.tar" "$T/x"
	xiptool mkfs -q --tar "$T/g.tar" "$T/img"
	fsck_clean "$T/img"
	list "$T/x" --holes --no-ctime > "$T/l.x"
	mkdir "$T/mnt"
	mount -t ext4 -o loop,ro "$T/img" "$T/mnt"
	list "$T/mnt" --holes --no-ctime --no-lpf > "$T/l.img"
	umount "$T/mnt"
	# atime aside (the listing has none), the root's times are the
	# extraction's and the build's; the rest must be equal
	grep -v '^/ ' "$T/l.x" | diff -u - <(grep -v '^/ ' "$T/l.img")
	# a name of 255 bytes and a path far beyond ustar's 100
	grep -qE '^/names/n{200,}' "$T/l.x"
	grep -q '^/holes/leading .* map=512-514' "$T/l.img"
}

@test "mkfs --tar: gzip, xz and zstd are detected; stdin works; the image is reproducible" {
	require_cmd python3 tar gzip xz zstd
	"$PY" "$GENTREE" "$T/src" --many 20
	tar --format=pax --sparse -C "$T/src" -cf "$T/a.tar" . 2>/dev/null
	gzip -k "$T/a.tar"
	xz -k "$T/a.tar"
	zstd -q "$T/a.tar"
	export SOURCE_DATE_EPOCH=$TS
	xiptool mkfs -q --tar "$T/a.tar" "$T/plain.img"
	for c in gz xz zst; do
		xiptool mkfs -q --tar "$T/a.tar.$c" "$T/$c.img"
		cmp "$T/plain.img" "$T/$c.img"
	done
	xiptool mkfs -q --tar - "$T/stdin.img" < "$T/a.tar.xz"
	cmp "$T/plain.img" "$T/stdin.img"
	zstd -dc "$T/a.tar.zst" | xiptool mkfs -q --tar - "$T/pipe.img"
	cmp "$T/plain.img" "$T/pipe.img"
	# member order does not matter: the same tree, listed differently
	(cd "$T/src" && find . -print0 | sort -rz |
		tar --format=pax --sparse --no-recursion --null -T - \
			-cf "$T/rev.tar" \
			2>/dev/null)
	xiptool mkfs -q --tar "$T/rev.tar" "$T/rev.img"
	cmp "$T/plain.img" "$T/rev.img"
}

@test "mkfs --tar: ustar, numeric owners and device nodes as GNU tar stores them" {
	require_root
	require_cmd tar debugfs
	mkdir -p "$T/src/d"
	printf 'hi\n' > "$T/src/d/f"
	mknod "$T/src/d/null" c 1 3
	mkfifo "$T/src/d/fifo"
	ln -s f "$T/src/d/sl"
	ln "$T/src/d/f" "$T/src/hard"
	chown -h 12345:54321 "$T/src/d/f" "$T/src/d/sl"
	chmod 4750 "$T/src/d/f"
	touch -h -d @1234567890 "$T/src/d/f" "$T/src/d/sl" "$T/src/d" "$T/src"
	tar --format=ustar -C "$T/src" -cf "$T/u.tar" .
	untar "$T/u.tar" "$T/x"
	xiptool mkfs -q --timestamp "$TS" --tar "$T/u.tar" "$T/tar.img"
	xiptool mkfs -q --timestamp "$TS" -d "$T/x" "$T/dir.img"
	cmp "$T/tar.img" "$T/dir.img"
	fsck_clean "$T/tar.img"
	run debugfs -R 'stat /d/f' "$T/tar.img"
	[[ "$output" == *"Mode:  04750"* ]]
	[[ "$output" == *"User: 12345   Group: 54321"* ]]
	[[ "$output" == *"Links: 2"* ]]
	debugfs -R 'stat /d/null' "$T/tar.img" | grepq 'Device major/minor number: 01:03'
	debugfs -R 'stat /d/fifo' "$T/tar.img" | grepq 'Type: FIFO'
}

@test "mkfs --tar: names that would leave the top are refused or made relative; nothing is written outside" {
	require_cmd python3
	"$PY" - "$T" <<'EOF'
import io, sys, tarfile
t = sys.argv[1]
def mk(name, members):
    with tarfile.open(t + "/" + name, "w", format=tarfile.GNU_FORMAT) as tf:
        for n, kind, arg in members:
            ti = tarfile.TarInfo(n)
            if kind == "f":
                ti.size = len(arg)
                tf.addfile(ti, io.BytesIO(arg))
            elif kind == "h":
                ti.type = tarfile.LNKTYPE
                ti.linkname = arg
                tf.addfile(ti)
            elif kind == "s":
                ti.type = tarfile.SYMTYPE
                ti.linkname = arg
                tf.addfile(ti)
mk("up.tar", [("ok", "f", b"x"), ("../escaped", "f", b"evil")])
mk("deep.tar", [("a/b/../../../escaped", "f", b"evil")])
mk("hard.tar", [("h", "h", "../../etc/passwd")])
mk("through.tar", [("s", "s", ".."), ("s/escaped", "f", b"evil")])
mk("abs.tar", [("/abs/file", "f", b"abs"), ("./x/./y", "f", b"y"),
               ("//z", "f", b"z")])
EOF
	mkdir "$T/dest"
	cd "$T/dest"
	for a in up deep hard through; do
		run xiptool mkfs --tar "$T/$a.tar" "$T/dest/$a.img"
		echo "$output"
		[ "$status" -eq 3 ]
		[[ "$output" == "xiptool mkfs: $T/$a.tar: "* ]]
		[ "${#lines[@]}" -eq 1 ]
		[ ! -e "$T/dest/$a.img" ]
	done
	[ ! -e "$T/escaped" ]
	[ ! -e "$T/dest/escaped" ]
	[ -z "$(ls -A "$T/dest")" ]
	run xiptool mkfs --tar "$T/up.tar" "$T/dest/x.img"
	[[ "$output" == *": ../escaped: a name with '..' would leave the top" ]]
	run xiptool mkfs --tar "$T/through.tar" "$T/dest/x.img"
	[[ "$output" == *": s/escaped: s: not a directory in the archive" ]]
	# absolute names and "." components are made relative to the top
	xiptool mkfs -q --tar "$T/abs.tar" "$T/abs.img"
	[ "$(debugfs -R 'cat /abs/file' "$T/abs.img" 2>/dev/null)" = abs ]
	[ "$(debugfs -R 'cat /x/y' "$T/abs.img" 2>/dev/null)" = y ]
	[ "$(debugfs -R 'cat /z' "$T/abs.img" 2>/dev/null)" = z ]
}

@test "mkfs --tar: input that is not a tar archive, or a cut one, is exit 3 and leaves nothing" {
	require_cmd tar
	head -c 10000 /dev/urandom > "$T/junk"
	: > "$T/empty"
	mkdir -p "$T/src"
	head -c 300000 /dev/urandom > "$T/src/f"
	tar -C "$T/src" -cf "$T/full.tar" .
	head -c 100000 "$T/full.tar" > "$T/cut.tar"
	gzip -c "$T/full.tar" > "$T/full.tar.gz"
	head -c 5000 "$T/full.tar.gz" > "$T/cut.tar.gz"
	for a in junk empty cut.tar cut.tar.gz; do
		run xiptool mkfs --tar "$T/$a" "$T/img"
		echo "$output"
		[ "$status" -eq 3 ]
		[ "${#lines[@]}" -eq 1 ]
		[[ "$output" == "xiptool mkfs: $T/$a: "* ]]
		[ ! -e "$T/img" ]
	done
	run xiptool mkfs --tar "$T/junk" "$T/img"
	[[ "$output" == *"not a tar archive"* ]]
	run xiptool mkfs --tar "$T/cut.tar" "$T/img"
	[[ "$output" == *"Truncated tar archive"* ]]
	run xiptool mkfs --tar "$T/missing" "$T/img"
	[ "$status" -eq 3 ]
	[[ "$output" == *"missing: No such file or directory" ]]
	run xiptool mkfs --tar "$T/full.tar" -d "$T/src" "$T/img"
	[ "$status" -eq 2 ]
	[ ! -e "$T/img" ]
	# an existing image is left as it was
	printf precious > "$T/img"
	run xiptool mkfs -f --tar "$T/junk" "$T/img"
	[ "$status" -eq 3 ]
	[ "$(cat "$T/img")" = precious ]
}

CUTTAR="$TOP_SRCDIR/tests/lib/cuttar.py"

# unterminated NAME: mkfs --tar of $T/NAME builds $T/NAME.img, the same
# image as $T/full.img, and warns once, naming the archive
unterminated() {
	run --separate-stderr xiptool mkfs -q --timestamp $TS --tar "$T/$1" "$T/$1.img"
	echo "$output"
	echo "$stderr"
	[ "$status" -eq 0 ]
	[ -z "$output" ]
	[ "$stderr" = "xiptool mkfs: warning: $T/$1: no end-of-archive blocks after the last member (read as complete)" ]
	cmp "$T/full.img" "$T/$1.img"
}

# cut_refused NAME REASON: mkfs --tar of $T/NAME: exit 3, the line
# "xiptool mkfs: $T/NAME: REASON", no image
cut_refused() {
	run xiptool mkfs -q --tar "$T/$1" "$T/$1.img"
	echo "$output"
	[ "$status" -eq 3 ]
	[ "$output" = "xiptool mkfs: $T/$1: $2" ]
	[ ! -e "$T/$1.img" ]
}

@test "mkfs --tar: an archive that ends after its last member, complete, without end-of-archive blocks is read with a warning; one cut inside a member or in its compression is refused" {
	bats_require_minimum_version 1.5.0
	require_cmd python3 gzip e2fsck
	# a member of 300001 bytes last (its data needs padding), or a
	# directory (whose header ends on a block boundary)
	"$PY" - "$T" <<-'EOF'
	import io, os, sys, tarfile
	def make(path, members):
	    with tarfile.open(path, "w", format=tarfile.PAX_FORMAT) as t:
	        for name, data in members:
	            i = tarfile.TarInfo(name)
	            i.mtime, i.mode = 1000000000, 0o640
	            if data is None:
	                i.type, i.mode = tarfile.DIRTYPE, 0o750
	            else:
	                i.size = len(data)
	            t.addfile(i, io.BytesIO(data or b""))
	members = [("d/a", b"hello\n"), ("d/b", os.urandom(300001))]
	make(sys.argv[1] + "/full.tar", members)
	make(sys.argv[1] + "/dir.tar", members + [("e", None)])
	EOF
	xiptool mkfs -q --timestamp $TS --tar "$T/full.tar" "$T/full.img"
	fsck_clean "$T/full.img"
	"$PY" "$CUTTAR" "$T/full.tar" "$T/end.tar" end
	unterminated end.tar
	"$PY" "$CUTTAR" "$T/full.tar" "$T/pad.tar" pad
	unterminated pad.tar
	gzip -kn "$T/end.tar"
	unterminated end.tar.gz
	# the same with the directory: no warning when complete
	xiptool mkfs -q -f --timestamp $TS --tar "$T/dir.tar" "$T/full.img"
	run --separate-stderr xiptool mkfs -q --timestamp $TS --tar "$T/dir.tar" "$T/dir.img"
	[ "$status" -eq 0 ]
	[ -z "$stderr" ]
	"$PY" "$CUTTAR" "$T/dir.tar" "$T/dirend.tar" header
	unterminated dirend.tar
	# a member cut short, or all of its data missing
	"$PY" "$CUTTAR" "$T/full.tar" "$T/inside.tar" inside
	cut_refused inside.tar "d/b: Truncated tar archive"
	"$PY" "$CUTTAR" "$T/full.tar" "$T/nodata.tar" header
	cut_refused nodata.tar "d/b: Truncated tar archive"
	# the member complete, but not the gzip stream (its trailer cut), or
	# a second gzip stream cut short after it: a decompressor's error is
	# no end
	head -c -8 "$T/end.tar.gz" > "$T/cut.tar.gz"
	cut_refused cut.tar.gz "d/b: truncated or damaged data"
	head -c 100000 /dev/zero | gzip -cn > "$T/zeros.gz"
	cat "$T/end.tar.gz" > "$T/two.tar.gz"
	head -c 20 "$T/zeros.gz" >> "$T/two.tar.gz"
	cut_refused two.tar.gz "d/b: truncated gzip input"
	# one end-of-archive block of the two is an end: no warning
	size=$(stat -c %s "$T/end.tar")
	cp "$T/end.tar" "$T/lone.tar"
	head -c $(( (512 - size % 512) % 512 + 512 )) /dev/zero >> "$T/lone.tar"
	xiptool mkfs -q -f --timestamp $TS --tar "$T/full.tar" "$T/full.img"
	run --separate-stderr xiptool mkfs -q --timestamp $TS --tar "$T/lone.tar" "$T/lone.img"
	[ "$status" -eq 0 ]
	[ -z "$stderr" ]
	cmp "$T/full.img" "$T/lone.img"
}

@test "mkfs --inodes: a decimal count (not octal, not hex)" {
	run xiptool mkfs --inodes 0x40 "$T/img"
	[ "$status" -eq 2 ]
	[[ "$output" == *"--inodes: invalid number '0x40'"* ]]
	[ ! -e "$T/img" ]
	run xiptool mkfs --inodes -5 "$T/img"
	[ "$status" -eq 2 ]
	# 010 is ten: too few for an empty image (eleven), eight would say 8
	run xiptool mkfs --inodes 010 "$T/img"
	[ "$status" -eq 3 ]
	[[ "$output" == *": 10 inodes are too few"* ]]
	xiptool mkfs -q --inodes 0100 "$T/img"
	[ "$(dumpe2fs -h "$T/img" 2>/dev/null | sed -n 's/^Inode count:[[:space:]]*//p')" -ge 100 ]
}

@test "libarchive is loaded only by mkfs --tar: not linked, and a broken one is a one-line error" {
	lib=$(lazy_lib archive)
	[ -n "$lib" ]
	mkdir -p "$T/tree"
	printf 'x' > "$T/tree/f"
	tar -C "$T/tree" -cf "$T/a.tar" .
	# other commands run without it
	unshare -m sh -c 'mount --bind /dev/null "$1" && "$2" mkfs -d "$3" "$4" && "$2" verify "$4"' \
		sh "$lib" "$XIPTOOL" "$T/tree" "$T/d.img"
	run unshare -m sh -c 'mount --bind /dev/null "$1" && exec "$2" mkfs --tar "$3" "$4"' \
		sh "$lib" "$XIPTOOL" "$T/a.tar" "$T/t.img"
	echo "$output"
	[ "$status" -eq 3 ]
	[ "${#lines[@]}" -eq 1 ]
	[[ "$output" == *"cannot load ${lib##*/}: "* ]]
	[ ! -e "$T/t.img" ]
	"$XIPTOOL" mkfs --tar "$T/a.tar" "$T/t.img"
	e2fsck -fn "$T/t.img"
}

# links_tar OUT NAMES DIRS: a tar.gz of the file f ("ok") and NAMES - 1
# hard links l00001... to it, then the directories big/dNNNNN, DIRS of them
links_tar() {
	"$PY" - "$@" <<'EOF'
import io, sys, tarfile
out, names, dirs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
with tarfile.open(out, "w:gz", format=tarfile.GNU_FORMAT) as tf:
    ti = tarfile.TarInfo("f")
    ti.size = 3
    tf.addfile(ti, io.BytesIO(b"ok\n"))
    for i in range(1, names):
        ti = tarfile.TarInfo("l%05d" % i)
        ti.type = tarfile.LNKTYPE
        ti.linkname = "f"
        tf.addfile(ti)
    for i in range(dirs):
        ti = tarfile.TarInfo("big/d%05d" % i)
        ti.type = tarfile.DIRTYPE
        ti.mode = 0o755
        tf.addfile(ti)
EOF
}

# refused_links ARCHIVE MESSAGE: mkfs --tar ARCHIVE is exit 3 with the one
# line MESSAGE and leaves no image and no temporary file
refused_links() {
	mkdir -p "$T/w/out" "$T/w/tmp"
	run env TMPDIR="$T/w/tmp" "$XIPTOOL" mkfs --tar "$1" "$T/w/out/img"
	echo "$output"
	[ "$status" -eq 3 ]
	[ "${#lines[@]}" -eq 1 ]
	[ "$output" = "xiptool mkfs: $1/$2" ]
	[ -z "$(ls -A "$T/w/out")" ]
	[ -z "$(ls -A "$T/w/tmp")" ]
}

# at_the_limit names|dirs MANY OVER MAX MESSAGE: links_tar archives of
# MANY and of OVER hard links (or subdirectories of big) are refused with
# MESSAGE (its %d: their count), one of MAX builds $T/w/img, e2fsck clean
at_the_limit() {
	local kind=$1 n msg
	shift
	for n in "$1" "$2" "$3"; do
		if [ "$kind" = names ]; then
			links_tar "$T/w/t$n.tar.gz" "$n" 0
		else
			links_tar "$T/w/t$n.tar.gz" 1 "$n"
		fi
	done
	for n in "$1" "$2"; do
		# shellcheck disable=SC2059
		printf -v msg "$4" "$n"
		refused_links "$T/w/t$n.tar.gz" "$msg"
	done
	xiptool mkfs -q --tar "$T/w/t$3.tar.gz" "$T/w/img"
	fsck_clean "$T/w/img"
}

@test "mkfs --tar: 65537 names for one file are refused, nothing left; 65000 build, and a name removed in the kernel loses nothing" {
	require_loop
	tmpfs_dir w
	# 65537 names are 1 in a 16-bit count: one rm would free the inode
	at_the_limit names 65537 65001 65000 \
		"f: %d names for one inode: ext2 allows at most 65000 links"
	[ "$(stat -c %s "$T/w/t65537.tar.gz")" -lt 1000000 ]
	for fstype in ext2 ext4; do
		loop_mount "$T/w/img" "$fstype"
		[ "$(stat -c %h "$T/mnt/l64999")" -eq 65000 ]
		[ "$(stat -c %i "$T/mnt/f")" = "$(stat -c %i "$T/mnt/l00001")" ]
		loop_umount
	done
	# the ext4 driver: no further name; one removed, the data stays
	mount -t ext4 -o loop "$T/w/img" "$T/mnt"
	run ln "$T/mnt/f" "$T/mnt/one-more"
	[ "$status" -ne 0 ]
	[[ "$output" == *"Too many links"* ]]
	rm "$T/mnt/f"
	umount "$T/mnt"
	fsck_clean "$T/w/img"
	loop_mount "$T/w/img" ext2
	[ "$(stat -c %h "$T/mnt/l00001")" -eq 64999 ]
	[ "$(cat "$T/mnt/l64999")" = ok ]
	loop_umount
}

@test "mkfs --tar: more subdirectories than ext2's 32000 links are refused, nothing left; 31998 build" {
	require_loop
	tmpfs_dir w
	at_the_limit dirs 65534 31999 31998 \
		"big: %d subdirectories: ext2 allows at most 31998 (32000 links)"
	for fstype in ext2 ext4; do
		loop_mount "$T/w/img" "$fstype"
		[ "$(stat -c %h "$T/mnt/big")" -eq 32000 ]
		[ "$(stat -c %h "$T/mnt/big/d31997")" -eq 2 ]
		loop_umount
	done
}

# small_tmpdir MIB: a tmpfs of MIB MiB at $T/tmp, the spool's TMPDIR
small_tmpdir() {
	mkdir "$T/tmp"
	mount -t tmpfs -o size="$1"m tmpfs "$T/tmp"
}

@test "mkfs --tar: the spool holds no more data than the image may (-s), no blocks of zeros and not a replaced member's data" {
	require_root
	require_cmd python3 e2fsck debugfs
	"$PY" - "$T" <<-'EOF'
	import io, os, sys, tarfile
	T = sys.argv[1]
	def add(t, name, data):
	    i = tarfile.TarInfo(name)
	    i.size = len(data)
	    t.addfile(i, io.BytesIO(data))
	# 48 MiB that gzip makes a few hundred KiB of
	with tarfile.open(T + "/pattern.tgz", "w:gz") as t:
	    add(t, "big", b"abcdefg\n" * (6 << 20))
	with tarfile.open(T + "/zeros.tgz", "w:gz") as t:
	    add(t, "zero", bytes(48 << 20))
	    add(t, "hi", b"hi\n")
	f1, f2 = os.urandom(8 << 20), os.urandom(8 << 20)
	open(T + "/f2", "wb").write(f2)
	with tarfile.open(T + "/again.tar", "w") as t:
	    add(t, "f", f1)
	    add(t, "f", f2)
	    add(t, "g", os.urandom(2 << 20))
	EOF
	small_tmpdir 12
	# stops at what -s 8M holds, before the spool fills its 12 MiB
	run env TMPDIR="$T/tmp" "$XIPTOOL" mkfs -s 8M --tar "$T/pattern.tgz" "$T/p.img"
	echo "$output"
	[ "$status" -eq 3 ]
	[ "${#lines[@]}" -eq 1 ]
	[ "$output" = "xiptool mkfs: $T/pattern.tgz: big: the files need more than the image's 8388608 bytes" ]
	[ ! -e "$T/p.img" ]
	# 48 MiB of zeros take no room in the spool, and read back as zeros
	run env TMPDIR="$T/tmp" "$XIPTOOL" mkfs --tar "$T/zeros.tgz" "$T/z.img"
	echo "$output"
	[ "$status" -eq 0 ]
	fsck_clean "$T/z.img"
	debugfs -R "dump /zero $T/zero" "$T/z.img"
	[ "$(stat -c %s "$T/zero")" -eq $((48 << 20)) ]
	cmp -n $((48 << 20)) "$T/zero" /dev/zero
	[ "$(debugfs -R 'cat /hi' "$T/z.img")" = hi ]
	# a member given again: the first one's 8 MiB leave the spool
	run env TMPDIR="$T/tmp" "$XIPTOOL" mkfs -s 16M --tar "$T/again.tar" "$T/a.img"
	echo "$output"
	[ "$status" -eq 0 ]
	fsck_clean "$T/a.img"
	debugfs -R "dump /f $T/f" "$T/a.img"
	cmp "$T/f" "$T/f2"
	# nothing of the spool stays
	[ -z "$(ls -A "$T/tmp")" ]
}

#!/usr/bin/env bats
# attach, detach, list and save beside hostile local users: a segment file
# replaced after attach, names of two users, permissions of the segment,
# files that are not images, a planted run directory, and images that
# decompress to more than they claim or than memory holds.

load ../lib/common
load ../lib/attach

# Run a command as the unprivileged user 65534.
asuser() {
	setpriv --reuid=65534 --regid=65534 --clear-groups -- "$@"
}

# The huge pages a test reserved are given back.
teardown() {
	local pages=
	if [ -n "${T:-}" ] && [ -f "$T/nr_hugepages" ]; then
		pages=$(cat "$T/nr_hugepages")
	fi
	attach_teardown
	if [ -n "$pages" ]; then
		echo "$pages" > /proc/sys/vm/nr_hugepages
	fi
}

# Files of $T readable by user 65534.
open_scratch() {
	chmod 755 "$T"
	[ -e "$T/img" ] && chmod 644 "$T/img"
	return 0
}

# An image with /bin/busybox, at $T/bb.img.
busybox_image() {
	[ -x /bin/busybox ] || skip "busybox-static is not installed"
	mkdir -p "$T/bbtree/bin"
	cp /bin/busybox "$T/bbtree/bin/busybox"
	xiptool mkfs -d "$T/bbtree" "$T/bb.img" >/dev/null
}

@test "the state file records the segment file's device, inode and owner" {
	make_tree_image
	xiptool attach -n "$SEG" "$T/img"
	path=$(seg_col "$SEG" PATH)
	st="$T/run/$SEG"
	[ "$(sed -n 's/^dev=//p' "$st")" = "$(stat -c %d "$path")" ]
	[ "$(sed -n 's/^ino=//p' "$st")" = "$(stat -c %i "$path")" ]
	[ "$(sed -n 's/^fileuid=//p' "$st")" = "$(stat -c %u "$path")" ]
}

@test "a symlink planted where a vanished segment was: write refuses, the victim is untouched, detach removes only the entry" {
	require_root
	make_tree_image
	cp "$T/img" "$T/victim.img"
	chmod 600 "$T/victim.img"
	sum=$(md5sum < "$T/victim.img")
	xiptool attach -t sw -n "$SEG" "$T/img"
	path=$(seg_col "$SEG" PATH)
	rm -f "$path"
	ln -s "$T/victim.img" "$path"
	printf 'owned\n' > "$T/data"
	run xiptool write "@$SEG" /hello.txt "$T/data"
	[ "$status" -eq 3 ]
	[ "$output" = "xiptool write: @$SEG: $path is not the segment that was attached (device/inode changed): refusing" ]
	[ "$(md5sum < "$T/victim.img")" = "$sum" ]
	run xiptool save "$SEG" "$T/out.img"
	[ "$status" -eq 3 ]
	[[ "$output" == *"is not the segment that was attached"* ]]
	[ ! -e "$T/out.img" ]
	run xiptool detach "$SEG"
	[ "$status" -eq 3 ]
	[ "$output" = "xiptool detach: $SEG: $path is not the segment that was attached (device/inode changed): entry removed, the file left alone" ]
	[ ! -e "$T/run/$SEG" ]
	[ -L "$path" ]
	[ "$(md5sum < "$T/victim.img")" = "$sum" ]
	rm -f "$path"
}

@test "a symlink to the segment itself in its place: read of @NAME refuses it, as lstat would (O_NOFOLLOW)" {
	require_root
	make_tree_image
	xiptool attach -n "$SEG" "$T/img"
	path=$(seg_col "$SEG" PATH)
	[ "$(xiptool read "@$SEG" /hello.txt)" = hello ]
	# the same file, device and inode, reached through a link
	mv "$path" "$path.moved"
	ln -s "$path.moved" "$path"
	run xiptool read "@$SEG" /hello.txt
	[ "$status" -eq 3 ]
	[ "$output" = "xiptool read: @$SEG: $path is not the segment that was attached (device/inode changed): refusing" ]
	rm -f "$path"
	mv "$path.moved" "$path"
	[ "$(xiptool read "@$SEG" /hello.txt)" = hello ]
	xiptool detach "$SEG"
}

# shared_segment: busybox's image, readable by all, attached as $SEG in
# the directory users share (root's default is its own); its file $path.
shared_segment() {
	busybox_image
	chmod 755 "$T"
	chmod 644 "$T/bb.img"
	export XIPTOOL_SHMDIR=/dev/shm
	xiptool attach -n "$SEG" "$T/bb.img"
	path=$(seg_col "$SEG" PATH)
}

@test "another user's file planted where a vanished segment was: root's exec and read refuse it" {
	require_root
	require_cmd setpriv
	shared_segment
	run xiptool exec "@$SEG" /bin/busybox true
	[ "$status" -eq 0 ]
	# /dev/shm emptied (a reboot with /run on disk), a user moves in
	rm -f "$path"
	asuser cp "$T/bb.img" "$path"
	[ "$(stat -c %u "$path")" = 65534 ]
	run xiptool exec "@$SEG" /bin/busybox id -u
	[ "$status" -eq 126 ]
	[ "$output" = "xiptool exec: @$SEG: $path is not the segment that was attached (device/inode changed): refusing" ]
	run xiptool read "@$SEG" /bin/busybox
	[ "$status" -eq 3 ]
	[[ "$output" == *"is not the segment that was attached"* ]]
	# list drops the entry, the user's file stays theirs
	run xiptool list --noheadings -o NAME
	[ "$status" -eq 0 ]
	[ -z "$output" ]
	[ ! -e "$T/run/$SEG" ]
	[ "$(stat -c %u "$path")" = 65534 ]
	rm -f "$path"
}

# Start user 65534 holding flock(1) MODE (-x or -s) on FILE for at most
# 30 s, in the background (its pid in $holder); return once it holds it.
user_flock() {
	setpriv --reuid=65534 --regid=65534 --clear-groups -- \
		flock -F "$1" "$2" sleep 30 & holder=$!
	wait_until 5 grep -q " $holder " /proc/locks
}

@test "another user's flock on a readable segment file blocks none of root's commands; xiptool's own lock still coordinates" {
	require_root
	require_cmd setpriv flock
	# a shared read-only segment, 0444: anyone may open it for reading
	shared_segment
	[ "$(stat -c %a "$path")" = 444 ]
	# LOCK_EX by the user: exec, read and verify run all the same
	user_flock -x "$path"
	run xiptool exec "@$SEG" /bin/busybox echo ran
	[ "$status" -eq 0 ]
	[ "$output" = ran ]
	xiptool read "@$SEG" /bin/busybox | cmp - /bin/busybox
	xiptool read "$path" /bin/busybox | cmp - /bin/busybox
	run xiptool verify "@$SEG"
	[ "$status" -eq 0 ]
	run xiptool save "$SEG" "$T/saved.img"
	[ "$status" -eq 0 ]
	# the user cannot reach the lock xiptool takes
	run asuser flock -n -s "$(holder_lock "$path")" true
	[ "$status" -ne 0 ]
	kill "$holder"
	wait "$holder" || true
	# LOCK_SH by the user on a writable segment: write, truncate, detach
	xiptool attach -t sw -n "w$SEG" "$T/bb.img"
	wpath=$(seg_col "w$SEG" PATH)
	[[ "$(stat -c %a "$wpath")" == *4 ]]	# others read it
	user_flock -s "$wpath"
	printf 'data\n' | xiptool write --create "@w$SEG" /f
	[ "$(xiptool read "@w$SEG" /f)" = data ]
	xiptool truncate "@w$SEG" /f 2
	[ "$(xiptool read "@w$SEG" /f)" = da ]
	printf 'path\n' | xiptool write "$wpath" /f
	[ "$(xiptool read "@w$SEG" /f)" = path ]
	xiptool detach "w$SEG"
	[ ! -e "$wpath" ]
	kill "$holder"
	wait "$holder" || true
	# root's own holders still coordinate: a running program keeps
	# detach and writers out
	"$XIPTOOL" exec "@$SEG" /bin/busybox sleep 30 & prog=$!
	wait_until 5 grep -q " $prog " /proc/locks
	run xiptool detach "$SEG"
	[ "$status" -eq 3 ]
	[[ "$output" == "xiptool detach: $SEG: busy: the segment is held by process $prog "* ]]
	kill "$prog"
	wait "$prog" || true
	xiptool attach -t sw -n "w$SEG" "$T/bb.img"
	wpath=$(seg_col "w$SEG" PATH)
	"$XIPTOOL" exec "@w$SEG" /bin/busybox sleep 30 & prog=$!
	wait_until 5 grep -q " $prog " /proc/locks
	run xiptool write --create "@w$SEG" /g < /dev/null
	[ "$status" -eq 3 ]
	[ "$output" = "xiptool write: w$SEG: busy: another xiptool holds it open" ]
	run xiptool detach "w$SEG"
	[ "$status" -eq 3 ]
	kill "$prog"
	wait "$prog" || true
	xiptool detach "w$SEG"
	xiptool detach "$SEG"
	[ ! -e "$path" ]
	# no lock file is left of either (.populate: attach --populate
	# auto's verdict for this boot)
	[ -z "$(ls -A "$T/run" | grep -vx -e .lock -e .populate)" ]
}

@test "a segment file replaced by another of the same owner is refused too (inode changed)" {
	make_tree_image
	xiptool attach -n "$SEG" "$T/img"
	path=$(seg_col "$SEG" PATH)
	cp "$path" "$T/copy"
	rm -f "$path"
	cp "$T/copy" "$path"
	run xiptool info "@$SEG"
	[ "$status" -eq 3 ]
	[[ "$output" == *"$path is not the segment that was attached (device/inode changed): refusing" ]]
	# a FIFO in its place does not hang anyone
	rm -f "$path"
	mkfifo "$path"
	run timeout 10 "$XIPTOOL" info "@$SEG"
	[ "$status" -eq 3 ]
	[[ "$output" == *"is not the segment that was attached"* ]]
	run timeout 10 "$XIPTOOL" detach "$SEG"
	[ "$status" -eq 3 ]
	[ -p "$path" ]
	rm -f "$path"
}

@test "two users' names never share a segment file" {
	require_root
	require_cmd setpriv
	make_tree_image
	open_scratch
	mkdir -m 700 "$T/urun"
	chown 65534:65534 "$T/urun"
	run asuser env XIPTOOL_RUNDIR="$T/urun" "$XIPTOOL" attach -n "$SEG" "$T/img"
	[ "$status" -eq 0 ]
	upath=$(asuser env XIPTOOL_RUNDIR="$T/urun" "$XIPTOOL" list --noheadings -r -o PATH "$SEG")
	run xiptool attach -n "65534-$SEG" "$T/img"
	[ "$status" -eq 0 ]
	rpath=$(seg_col "65534-$SEG" PATH)
	[ "$upath" != "$rpath" ]
	[ "$(stat -c %u "$upath")" = 65534 ]
	[ "$(stat -c %i "$upath")" != "$(stat -c %i "$rpath")" ]
	# a name is a name: no separator the user's names may contain
	[[ "$upath" =~ ^"/dev/shm/xiptool-65534:$SEG."[0-9a-f]{16}$ ]]
	run asuser env XIPTOOL_RUNDIR="$T/urun" "$XIPTOOL" detach "$SEG"
	[ "$status" -eq 0 ]
	[ -e "$rpath" ]
}

# As user 65534: make segment file $1 writable and write to it.  Both
# must fail; the segment's bytes stay those of $2.
user_cannot_rewrite() {
	run asuser chmod u+w "$1"
	[ "$status" -ne 0 ]
	run asuser chmod 666 "$1"
	[ "$status" -ne 0 ]
	run asuser dd if=/dev/zero of="$1" bs=4096 count=1 conv=notrunc status=none
	[ "$status" -ne 0 ]
	run asuser truncate -s 0 "$1"
	[ "$status" -ne 0 ]
	cmp -n "$(stat -c %s "$2")" "$1" "$2"
}

@test "a segment of a user's image stays root's: the user can neither chmod nor write it; read bits only as the image had them" {
	require_root
	require_cmd setpriv
	make_tree_image
	chmod 755 "$T"
	chmod 600 "$T/img"
	xiptool attach -n "$SEG" "$T/img"
	path=$(seg_col "$SEG" PATH)
	[ "$(stat -c '%u %g %a' "$path")" = "0 0 400" ]
	run asuser cat "$path"
	[ "$status" -ne 0 ]
	# the user's own image, group-readable: root's segment, the image's
	# group with its read bit, write bits only for root (writable types)
	chown 65534:65534 "$T/img"
	chmod 660 "$T/img"
	for t in sr er sw ew; do
		xiptool attach -t "$t" -n "$t$SEG" "$T/img"
		p=$(seg_col "$t$SEG" PATH)
		case $t in
		*r) want=440 ;;
		*) want=640 ;;
		esac
		[ "$(stat -c '%u %g %a' "$p")" = "0 65534 $want" ]
		# readable through the group the image named
		asuser cmp -n 16777216 "$p" "$T/img"
		user_cannot_rewrite "$p" "$T/img"
	done
	run xiptool verify "@sr$SEG"
	[ "$status" -eq 0 ]
	# write bits of the image's group and others never travel, nor
	# set-id bits; execute bits go with the read bits (exec's
	# AT_EXECVE_CHECK under SECBIT_EXEC_RESTRICT_FILE asks for them)
	chmod 6777 "$T/img"
	xiptool attach -n "x$SEG" "$T/img"
	xiptool attach -t sw -n "y$SEG" "$T/img"
	[ "$(stat -c '%u %a' "$(seg_col "x$SEG" PATH)")" = "0 555" ]
	[ "$(stat -c '%u %a' "$(seg_col "y$SEG" PATH)")" = "0 755" ]
	user_cannot_rewrite "$(seg_col "y$SEG" PATH)" "$T/img"
	# a copy of a segment (@NAME) is no wider than its source
	xiptool attach -t sw -n "c$SEG" "@sr$SEG"
	[ "$(stat -c '%u %g %a' "$(seg_col "c$SEG" PATH)")" = "0 65534 640" ]
	# no source: the caller's, 0600
	xiptool attach -t sn -n "n$SEG" --size 1M
	xiptool attach -t en -n "m$SEG" --size 1M
	[ "$(stat -c '%u %a' "$(seg_col "n$SEG" PATH)")" = "0 600" ]
	[ "$(stat -c '%u %a' "$(seg_col "m$SEG" PATH)")" = "0 600" ]
	# root still writes an sw segment it made from a read-only image
	chmod 444 "$T/img"
	xiptool attach -t sw -n "r$SEG" "$T/img"
	[ "$(stat -c %a "$(seg_col "r$SEG" PATH)")" = 644 ]
	printf 'x\n' > "$T/data"
	run xiptool write "@r$SEG" /hello.txt "$T/data"
	[ "$status" -eq 0 ]
	# the records: root's, in root's run directory, out of the user's reach
	[ "$(stat -c '%u %a' "$T/run")" = "0 700" ]
	for r in "$T/run/sr$SEG" "$T/run/sw$SEG" "$T/run/n$SEG"; do
		[ "$(stat -c '%u %a' "$r")" = "0 600" ]
	done
	run asuser sh -c "printf 'path=/tmp/x\n' >> '$T/run/sr$SEG'"
	[ "$status" -ne 0 ]
	run asuser ls "$T/run"
	[ "$status" -ne 0 ]
}

# Files user 65534 plants at the names an attach of $SEG in $1 could use:
# the segment file's name before it took random bits, and guesses at
# those (a symlink to $T/victim, a directory, a FIFO, a file).
plant() {
	printf 'victim\n' > "$T/victim"
	chmod 666 "$T/victim"
	asuser touch "$1/xiptool-$SEG"
	# hugetlbfs holds no symlinks: a file there
	if ! asuser ln -s "$T/victim" "$1/xiptool-$SEG.0000000000000000" 2>/dev/null; then
		asuser touch "$1/xiptool-$SEG.0000000000000000"
	fi
	asuser mkdir "$1/xiptool-$SEG.ffffffffffffffff"
	asuser mkfifo "$1/xiptool-$SEG.tmp"
	asuser touch "$1/xiptool-0:$SEG"
	planted "$1" > "$T/planted"
}

# What the planted files are: names, types, owners, sizes, times.
planted() {
	stat -c '%n %F %u %s %Y %i' "$1/xiptool-$SEG" "$1/xiptool-$SEG".???????????????? \
		"$1/xiptool-$SEG.tmp" "$1/xiptool-0:$SEG"
}

# The segment $SEG is in $1, root's, not one of the planted files, and
# these are untouched.
not_redirected() {
	local path
	path=$(seg_col "$SEG" PATH)
	[[ "$path" =~ ^"$1/xiptool-$SEG."[0-9a-f]{16}$ ]]
	[ ! -L "$path" ]
	[ "$(stat -c '%u %F' "$path")" = "0 regular file" ]
	cmp -n 16777216 "$path" "$T/img"
	planted "$1" | grep -v -F "$path" > "$T/now"
	diff "$T/planted" "$T/now"
	[ "$(cat "$T/victim")" = victim ]
}

@test "another user's files at the names of a segment deny no attach and receive nothing" {
	require_root
	require_cmd setpriv
	make_tree_image
	open_scratch
	# root's default is its own tmpfs; /dev/shm is what users share
	export XIPTOOL_SHMDIR=/dev/shm
	plant /dev/shm
	run xiptool attach -n "$SEG" "$T/img"
	[ "$status" -eq 0 ]
	[ "$output" = "$SEG" ]
	not_redirected /dev/shm
	run xiptool info "@$SEG"
	[ "$status" -eq 0 ]
	run xiptool detach "$SEG"
	[ "$status" -eq 0 ]
	# writable, with a loop device: the same
	run xiptool attach -t sw -n "$SEG" "$T/img"
	[ "$status" -eq 0 ]
	not_redirected /dev/shm
	printf 'mine\n' > "$T/data"
	run xiptool write "@$SEG" /hello.txt "$T/data"
	[ "$status" -eq 0 ]
	[ "$(cat "$T/victim")" = victim ]
	run xiptool detach "$SEG"
	[ "$status" -eq 0 ]
	planted /dev/shm > "$T/now"
	diff "$T/planted" "$T/now"
	rm -rf "/dev/shm/xiptool-$SEG" "/dev/shm/xiptool-$SEG".???????????????? \
		"/dev/shm/xiptool-$SEG.tmp" "/dev/shm/xiptool-0:$SEG"
}

@test "a segment directory another user owns, or may write to without the sticky bit, is refused" {
	require_root
	make_tree_image
	mkdir -m 755 "$T/theirs" "$T/open"
	chown 65534 "$T/theirs"
	chmod 777 "$T/open"
	run env XIPTOOL_SHMDIR="$T/theirs" "$XIPTOOL" attach -n "$SEG" "$T/img"
	[ "$status" -eq 3 ]
	[ "$output" = "xiptool attach: $T/theirs: segment directory must belong to root or uid 0 and be sticky when others may write to it" ]
	run env XIPTOOL_SHMDIR="$T/open" "$XIPTOOL" attach -n "$SEG" "$T/img"
	[ "$status" -eq 3 ]
	[[ "$output" == "xiptool attach: $T/open: segment directory must belong"* ]]
	[ -z "$(ls -A "$T/theirs")" ]
	[ -z "$(ls -A "$T/open")" ]
	[ -z "$(ls "$T/run" 2>/dev/null)" ]
	chmod 1777 "$T/open"
	run env XIPTOOL_SHMDIR="$T/open" "$XIPTOOL" attach -n "$SEG" "$T/img"
	[ "$status" -eq 0 ]
	run xiptool detach "$SEG"
	[ "$status" -eq 0 ]
	[ -z "$(ls -A "$T/open")" ]
}

@test "--hugepages: a segment on a hugetlbfs others write to is root's and squatting there denies nothing" {
	require_root
	require_cmd setpriv
	make_tree_image
	open_scratch
	old=$(cat /proc/sys/vm/nr_hugepages)
	echo "$old" > "$T/nr_hugepages"
	echo $((old + 8)) > /proc/sys/vm/nr_hugepages 2>/dev/null || skip "cannot reserve huge pages"
	free=$(awk '/^HugePages_Free/ { print $2 }' /proc/meminfo)
	if [ "$free" -lt 8 ]; then
		echo "$old" > /proc/sys/vm/nr_hugepages
		skip "no free huge pages"
	fi
	mkdir "$T/huge"
	mount -t hugetlbfs -o mode=1777 none "$T/huge"
	export XIPTOOL_HUGETLBFS="$T/huge"
	chown 65534:65534 "$T/img"
	chmod 644 "$T/img"
	plant "$T/huge"
	run xiptool attach --hugepages -n "$SEG" "$T/img"
	[ "$status" -eq 0 ]
	not_redirected "$T/huge"
	path=$(seg_col "$SEG" PATH)
	[ "$(stat -c '%u %a' "$path")" = "0 444" ]
	run asuser chmod u+w "$path"
	[ "$status" -ne 0 ]
	run xiptool detach "$SEG"
	[ "$status" -eq 0 ]
	rm -rf "$T/huge/"*
}

@test "a file that is not an ext2 image is refused unless --raw; nothing is left behind" {
	printf 'root:$6$secret:19000:0:99999:7:::\n' > "$T/shadow"
	chmod 600 "$T/shadow"
	run xiptool attach -n "$SEG" "$T/shadow"
	[ "$status" -eq 3 ]
	[ "$output" = "xiptool attach: $T/shadow: not an ext2 file system (no ext2 superblock)" ]
	no_segfile "$SEG"
	[ -z "$(ls "$T/run" 2>/dev/null)" ]
	# compressed: checked on the first decompressed bytes
	head -c 8M /dev/zero | gzip -c > "$T/zeros.gz"
	run xiptool attach -n "$SEG" "$T/zeros.gz"
	[ "$status" -eq 3 ]
	[[ "$output" == *"$T/zeros.gz: not an ext2 file system"* ]]
	no_segfile "$SEG"
	# asked for explicitly
	run xiptool attach --raw -n "$SEG" "$T/shadow"
	[ "$status" -eq 0 ]
	path=$(seg_col "$SEG" PATH)
	cmp -n "$(stat -c %s "$T/shadow")" "$path" "$T/shadow"
	[ "$(stat -c %a "$path")" = 400 ]
	run xiptool attach -t sn --raw -n "n$SEG" --size 1M
	[ "$status" -eq 2 ]
}

@test "a planted run directory is refused: a symlink, another user's, writable by others" {
	require_root
	make_tree_image
	mkdir -m 700 "$T/real"
	ln -s "$T/real" "$T/link"
	run env XIPTOOL_RUNDIR="$T/link" "$XIPTOOL" attach -n "$SEG" "$T/img"
	[ "$status" -eq 3 ]
	[ "$output" = "xiptool attach: $T/link: run directory is a symbolic link: refusing" ]
	no_segfile "$SEG"
	[ -z "$(ls "$T/real")" ]
	run env XIPTOOL_RUNDIR="$T/link" "$XIPTOOL" list
	[ "$status" -eq 3 ]
	# $XDG_RUNTIME_DIR/xiptool of a user, a symlink to their own directory
	if command -v setpriv >/dev/null; then
		chmod 755 "$T"
		mkdir -m 700 "$T/xdg" "$T/xdg/mine"
		ln -s mine "$T/xdg/xiptool"
		chown -h 65534:65534 "$T/xdg" "$T/xdg/mine" "$T/xdg/xiptool"
		run asuser env -u XIPTOOL_RUNDIR XDG_RUNTIME_DIR="$T/xdg" "$XIPTOOL" list
		[ "$status" -eq 3 ]
		[ "$output" = "xiptool list: $T/xdg/xiptool: run directory is a symbolic link: refusing" ]
	fi
	mkdir -m 700 "$T/theirs"
	chown 65534 "$T/theirs"
	run env XIPTOOL_RUNDIR="$T/theirs" "$XIPTOOL" list
	[ "$status" -eq 3 ]
	[[ "$output" == "xiptool list: $T/theirs: run directory must belong to uid 0 and not be writable by others" ]]
	mkdir -m 770 "$T/group"
	run env XIPTOOL_RUNDIR="$T/group" "$XIPTOOL" list
	[ "$status" -eq 3 ]
	[[ "$output" == "xiptool list: $T/group: run directory must belong to uid 0"* ]]
}

# A gzip file that starts as an ext2 image ($T/img) and decompresses to
# $1 MiB more zeros (concatenated members of 64 MiB each).
zero_bomb() {
	local mb=$1 i
	gzip -1 -c "$T/img" > "$T/bomb.gz"
	head -c 64M /dev/zero | gzip -1 -c > "$T/z64.gz"
	for ((i = 0; i < mb / 64; i++)); do cat "$T/z64.gz"; done >> "$T/bomb.gz"
}

@test "--size is a hard limit while decompressing: stop at once, reserve no more, leave nothing" {
	require_cmd prlimit
	make_tree_image
	zero_bomb 2048
	# a file size limit catches any reservation beyond it (SIGXFSZ)
	run timeout 10 prlimit --fsize=$((128 << 20)) -- "$XIPTOOL" attach --loop -n "$SEG" --size 64M "$T/bomb.gz"
	[ "$status" -eq 3 ]
	[ "$output" = "xiptool attach: $T/bomb.gz: decompresses to more than --size (67108864 bytes)" ]
	no_segfile "$SEG"
	[ -z "$(ls "$T/run" 2>/dev/null)" ]
	run losetup -n -l -O BACK-FILE
	[ "$status" -eq 0 ]
	[[ "$output" != *"/xiptool-$SEG."* ]]
}

@test "a gzip trailer claiming 4 GiB reserves nothing of it" {
	require_cmd prlimit python3
	python3 - "$T/liar.gz" <<'PY'
import gzip, struct, sys
data = bytearray(gzip.compress(b"hello"))
data[-4:] = struct.pack("<I", 0xffffffff)	# ISIZE: 4 GiB - 1
open(sys.argv[1], "wb").write(data)
PY
	[ "$(stat -c %s "$T/liar.gz")" -lt 40 ]
	run timeout 10 prlimit --fsize=$((64 << 20)) -- "$XIPTOOL" attach --raw -n "$SEG" "$T/liar.gz"
	[ "$status" -eq 3 ]
	[[ "$output" == "xiptool attach: $T/liar.gz: gzip data is corrupt"* ]]
	no_segfile "$SEG"
}

@test "without --size the free memory of the target caps a segment; nothing is left behind" {
	require_root
	make_tree_image
	mkdir "$T/shm"
	mount -t tmpfs -o size=8M tmpfs "$T/shm"
	export XIPTOOL_SHMDIR="$T/shm"
	run timeout 20 "$XIPTOOL" attach -n "$SEG" "$T/img"
	[ "$status" -eq 3 ]
	[[ "$output" == "xiptool attach: $T/img: 16777216 bytes do not fit in $T/shm ("*" bytes free)" ]]
	[ -z "$(ls "$T/shm")" ]
	[ -z "$(ls "$T/run" 2>/dev/null)" ]
	gzip -1 -c "$T/img" > "$T/img.gz"
	run timeout 20 "$XIPTOOL" attach -n "$SEG" "$T/img.gz"
	[ "$status" -eq 3 ]
	[[ "$output" == "xiptool attach: $T/img.gz: decompresses to more than the free memory of $T/shm ("*" bytes)" ]]
	[ -z "$(ls "$T/shm")" ]
	[ -z "$(ls "$T/run" 2>/dev/null)" ]
	run xiptool attach -t sn -n "$SEG" --size 64M
	[ "$status" -eq 3 ]
	[[ "$output" == "xiptool attach: $SEG: 67108864 bytes do not fit in $T/shm ("*" bytes free)" ]]
	[ -z "$(ls "$T/shm")" ]
	umount "$T/shm"
}

@test "an image that is not ext2 gets one message from every command: what it holds, or that it holds no ext2" {
	require_cmd mkfs.erofs mksquashfs gzip
	mkdir -p "$T/src"; echo hi > "$T/src/f"
	mkfs.erofs -q "$T/er.img" "$T/src" >/dev/null 2>&1 || mkfs.erofs "$T/er.img" "$T/src" >/dev/null
	mksquashfs "$T/src" "$T/sq.img" -quiet -noappend >/dev/null
	head -c 200000 /dev/urandom > "$T/noise"
	gzip -c "$T/er.img" > "$T/er.img.gz"
	local img want cmd
	for img in er sq noise; do
		case $img in
		er) want="$T/er.img: holds erofs, not an ext2 file system" ;;
		sq) want="$T/sq.img: holds squashfs, not an ext2 file system" ;;
		noise) want="$T/noise: not an ext2 file system (no ext2 superblock)" ;;
		esac
		[ "$img" = noise ] || img=$img.img
		for cmd in info verify align-check attach; do
			run xiptool "$cmd" "$T/$img"
			[ "$status" -eq 3 ]
			[ "$output" = "xiptool $cmd: $want" ]
		done
		for cmd in ls stat read; do
			run xiptool "$cmd" "$T/$img" /f
			[ "$status" -eq 3 ]
			[ "$output" = "xiptool $cmd: $want" ]
		done
		run xiptool exec "$T/$img" /f
		[ "$output" = "xiptool exec: $want" ]
		run xiptool extract "$T/$img" "$T/out"
		[ "$status" -eq 3 ]
		[ "$output" = "xiptool extract: $want" ]
	done
	run xiptool attach "$T/er.img.gz"
	[ "$status" -eq 3 ]
	[ "$output" = "xiptool attach: $T/er.img.gz: holds erofs, not an ext2 file system" ]
	# an attached segment is named as it was given, never by its file
	run xiptool attach -t sn -s 1M -n "$SEG"
	[ "$status" -eq 0 ]
	for cmd in info verify ls; do
		run xiptool "$cmd" "@$SEG"
		[ "$status" -eq 3 ]
		[ "$output" = "xiptool $cmd: @$SEG: not an ext2 file system (no ext2 superblock)" ]
	done
	run xiptool detach "$SEG"
	[ "$status" -eq 0 ]
}

@test "a user's attach --loop says that --loop needs root and a plain attach does not; nothing is left" {
	require_root
	require_cmd setpriv
	busybox_image
	chmod 755 "$T"
	chmod 644 "$T/bb.img"
	mkdir -m 1777 "$T/users"
	run asuser env XIPTOOL_RUNDIR="$T/users/run" XIPTOOL_SHMDIR=/dev/shm "$XIPTOOL" attach --loop -n "$SEG" "$T/bb.img"
	[ "$status" -eq 3 ]
	[ "${#lines[@]}" -eq 1 ]
	[ "$output" = "xiptool attach: /dev/loop-control: Permission denied: --loop needs root (binding a loop device); a plain attach, without --loop, works for any user" ]
	[ -z "$(ls /dev/shm | grep -F "$SEG")" ]
	[ -z "$(ls "$T/users/run" 2>/dev/null)" ]
	# and the plain attach does work for that user
	run asuser env XIPTOOL_RUNDIR="$T/users/run" XIPTOOL_SHMDIR=/dev/shm "$XIPTOOL" attach -n "$SEG" "$T/bb.img"
	[ "$status" -eq 0 ]
	run asuser env XIPTOOL_RUNDIR="$T/users/run" "$XIPTOOL" detach "$SEG"
	[ "$status" -eq 0 ]
}

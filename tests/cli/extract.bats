#!/usr/bin/env bats
# xiptool extract against the source tree itself (tree -> mkfs -> extract),
# debugfs rdump and fsck.erofs --extract, and images with hostile names.

load ../lib/common

# what every extractor keeps: path, type, mode without the set-id bits,
# owner, mtime, content, link target, device (no link counts, holes,
# xattrs)
basic() {
	sed -E 's/ n[0-9]+ / /; s/ (map|group)=[^ ]*//g; s/ x:[^ ]*$//' |
		awk '{ $3 = substr($3, 2); print }'
}

# what debugfs rdump keeps: no times, nothing of a symlink but its target
rdump_view() {
	awk '$1 != "/" { if ($2 == "0o120000") print $1, $2, $NF;
			  else { $6 = ""; print } }'
}

# a tree both peers can store
small_tree() {
	mkdir -p "$1/d/sub" "$1/empty"
	head -c 100000 /dev/urandom > "$1/d/f"
	ln "$1/d/f" "$1/hl"
	ln -s d/f "$1/sl"
	mknod "$1/d/null" c 1 3
	mkfifo "$1/fifo"
	truncate -s 1M "$1/sparse"
	printf x | dd of="$1/sparse" bs=1 seek=500000 conv=notrunc status=none
	chown 123:456 "$1/d/sub"
	chmod 1777 "$1/d/sub"
	chmod 0750 "$1/empty"
	touch -d @1234567890 "$1/d/sub" "$1/d/f" "$1/empty"
}

@test "extract: tree -> mkfs -> extract gives back the identical tree (holes, xattrs, links, devices, times)" {
	require_root
	require_cmd python3
	"$PY" "$GENTREE" "$T/src"
	xiptool mkfs -q -d "$T/src" "$T/img"
	run xiptool extract "$T/img" "$T/out"
	echo "$output"
	[ "$status" -eq 0 ]
	[ -z "$output" ]
	# the atime is the image's (checked before anything reads the file)
	atime=$(xiptool stat --json "$T/img" /files/size-100000 |
		sed -n 's/.*"atime": *"\([^"]*\)".*/\1/p')
	[ -n "$atime" ]
	[ "$(TZ=UTC stat -c %x "$T/out/files/size-100000" |
	     sed 's/ /T/; s/ +0000/Z/')" = "$atime" ]
	list "$T/src" --holes --xattrs --no-ctime > "$T/l.src"
	list "$T/out" --holes --xattrs --no-ctime --no-lpf > "$T/l.out"
	diff -u "$T/l.src" "$T/l.out"
	# the listing saw what the test is about
	grep -q '^/holes/indirect .* map=0-1,1280-1281,4864-4865' "$T/l.out"
	grep -q 'user.big=' "$T/l.out"
	grep -q ' 0o140000 ' "$T/l.out"
	grep -q ' 0o60000 .* 8:0' "$T/l.out"
	grep -q 'group=' "$T/l.out"
	# nanoseconds too
	[ "$(stat -c %y "$T/out/files/size-4096")" = \
	  "$(stat -c %y "$T/src/files/size-4096")" ]
	[[ "$(stat -c %y "$T/out/files/size-4096")" == *".123456789 "* ]]
	# nothing but the tree: no staging directory left
	[ -z "$(ls -A "$T" | grep '^\.')" ]
}

@test "extract: the same files as debugfs rdump, for the tree and for a subtree" {
	require_root
	require_cmd debugfs python3
	"$PY" "$GENTREE" "$T/src" --many 20
	xiptool mkfs -q -d "$T/src" "$T/img"
	mkdir "$T/rd"
	debugfs -R "rdump /holes /links /files $T/rd" "$T/img" 2>/dev/null
	mkdir "$T/x"
	for p in /holes links /files; do
		xiptool extract "$T/img" "$T/x" "$p"
	done
	# rdump keeps bytes, targets, owners and permission bits (not the
	# times of symlinks; a time before 1970 comes out as after 2100)
	list "$T/rd" --no-ctime | basic | rdump_view > "$T/l.rd"
	list "$T/x" --no-ctime | basic | rdump_view > "$T/l.x"
	diff -u "$T/l.rd" "$T/l.x"
	grep -q '^/holes/middle 0o100000' "$T/l.x"
	grep -q '^/links/slow-2001 .*->/z/z' "$T/l.x"
	# and a single file as DIR/NAME
	xiptool extract "$T/img" "$T/one" /files/size-4097
	cmp "$T/src/files/size-4097" "$T/one/size-4097"
}

@test "extract: the same tree as fsck.erofs --extract of mkfs.erofs" {
	require_root
	require_cmd mkfs.erofs fsck.erofs python3
	small_tree "$T/src"
	mkfs.erofs "$T/e.img" "$T/src" >/dev/null 2>&1
	fsck.erofs --extract="$T/e" --preserve "$T/e.img" >/dev/null
	xiptool mkfs -q -d "$T/src" "$T/img"
	xiptool extract "$T/img" "$T/x"
	list "$T/e" --no-ctime | basic > "$T/l.e"
	list "$T/x" --no-ctime --no-lpf | basic > "$T/l.x"
	diff -u "$T/l.e" "$T/l.x"
	grep -q '^/d/null 0o20000 .* 1:3' "$T/l.x"
	grep -q '^/d/sub 0o40000 777 123 456 m1234567890' "$T/l.x"
	# what fsck.erofs 1.5 drops, extract keeps: hard links, holes
	[ "$(stat -c %i "$T/x/hl")" = "$(stat -c %i "$T/x/d/f")" ]
	[ "$(stat -c %b "$T/x/sparse")" -le 16 ]
}

@test "extract: into an existing DIR adds the entries; a name already there is refused and nothing is written" {
	small_tree "$T/src"
	xiptool mkfs -q -d "$T/src" "$T/img"
	mkdir "$T/x"
	echo mine > "$T/x/keep"
	xiptool extract --no-owner "$T/img" "$T/x"
	[ "$(cat "$T/x/keep")" = mine ]
	cmp "$T/src/d/f" "$T/x/d/f"
	# a planted symlink where the tree has a directory is not followed
	mkdir "$T/y" "$T/target"
	ln -s "$T/target" "$T/y/d"
	run xiptool extract "$T/img" "$T/y"
	echo "$output"
	[ "$status" -eq 3 ]
	[ "${#lines[@]}" -eq 1 ]
	[[ "$output" == "xiptool extract: $T/img: $T/y/d: exists already" ]]
	[ -z "$(ls -A "$T/target")" ]
	[ "$(ls -A "$T/y")" = d ]
	# a subtree whose name exists
	run xiptool extract "$T/img" "$T/x" /d
	[ "$status" -eq 3 ]
	[ "$(ls -A "$T/x" | wc -l)" -eq "$(ls -A "$T/src" | wc -l | awk '{print $1 + 2}')" ]
}

# patch IMAGE FROM TO: replace the only occurrence of the bytes FROM
patch_name() {
	"$PY" - "$@" <<'EOF'
import sys
p, a, b = sys.argv[1], sys.argv[2].encode(), sys.argv[3].encode()
d = open(p, "rb").read()
assert d.count(a) == 1, d.count(a)
open(p, "wb").write(d.replace(a, b))
EOF
}

@test "extract: names of a damaged image that would leave DIR are refused; nothing is left behind" {
	require_cmd python3 debugfs
	mkdir -p "$T/src/dir"
	echo x > "$T/src/dir/aXb"
	echo y > "$T/src/dir/zz"
	echo z > "$T/src/qq"
	xiptool mkfs -q -d "$T/src" "$T/img"
	cp "$T/img" "$T/slash.img"
	patch_name "$T/slash.img" aXb a/b
	cp "$T/img" "$T/dots.img"
	patch_name "$T/dots.img" zz ..
	cp "$T/img" "$T/loop.img"
	debugfs -w -R "link /dir /dir/up" "$T/loop.img" 2>/dev/null
	mkdir "$T/dest"
	for i in slash dots loop; do
		run xiptool extract "$T/$i.img" "$T/dest/out"
		echo "$output"
		[ "$status" -eq 3 ]
		[ "${#lines[@]}" -eq 1 ]
		[[ "$output" == "xiptool extract: $T/$i.img: /dir"* ]]
		[ -z "$(ls -A "$T/dest")" ]
	done
	run xiptool extract "$T/slash.img" "$T/dest/out"
	[[ "$output" == *"/dir: entry 'a/b': a name that would leave the directory; refused" ]]
	run xiptool extract "$T/dots.img" "$T/dest/out"
	[[ "$output" == *"/dir: entry '..': a name that would leave the directory; refused" ]]
	run xiptool extract "$T/loop.img" "$T/dest/out"
	[[ "$output" == *"is its own ancestor" ]]
	# an existing DIR is left as it was
	mkdir "$T/dest/x"
	run xiptool extract "$T/slash.img" "$T/dest/x"
	[ "$status" -eq 3 ]
	[ -z "$(ls -A "$T/dest/x")" ]
	# the parts that are sound still extract
	xiptool extract "$T/slash.img" "$T/dest/q" /qq
	[ "$(cat "$T/dest/q/qq")" = z ]
}

@test "extract: usage errors and missing paths" {
	xiptool mkfs -q "$T/img"
	run xiptool extract "$T/img"
	[ "$status" -eq 2 ]
	run xiptool extract "$T/img" "$T/o" /a /b
	[ "$status" -eq 2 ]
	run xiptool extract "$T/img" "$T/o" /nope
	[ "$status" -eq 3 ]
	[[ "$output" == "xiptool extract: $T/img: "*"nope"* ]]
	[ ! -e "$T/o" ]
	run xiptool extract "$T/img" "$T/o" /lost+found/.
	[ "$status" -eq 3 ]
	[[ "$output" == *"name a file by its own name"* ]]
	[ ! -e "$T/o" ]
	run xiptool extract "$T/nonexistent.img" "$T/o"
	[ "$status" -eq 3 ]
	[ ! -e "$T/o" ]
}

@test "extract: SIGINT or SIGTERM mid-way removes the staging directory and exits 130 / 143" {
	mkdir -p "$T/src"
	(cd "$T/src" && mkdir -p d{1..100}/{1..200})
	xiptool mkfs -q -d "$T/src" "$T/img"
	mkdir "$T/dest"
	for sig in INT TERM; do
		# a background job of a shell without job control ignores
		# SIGINT (and extract keeps an ignored signal ignored)
		env --default-signal=INT,TERM "$XIPTOOL" extract "$T/img" \
			"$T/dest/out" 2> "$T/err" &
		pid=$!
		# the staging directory has begun to fill
		n=0
		for _ in $(seq 600); do
			n=$(find "$T/dest" -mindepth 3 -maxdepth 3 | wc -l)
			if [ "$n" -ge 50 ]; then break; fi
			sleep 0.05
		done
		[ "$n" -ge 50 ]
		kill -"$sig" "$pid"
		rc=0
		wait "$pid" || rc=$?
		cat "$T/err"
		[ "$rc" -eq $((128 + $(kill -l "$sig"))) ]
		[ -z "$(ls -A "$T/dest")" ]
		[ "$(cat "$T/err")" = "xiptool extract: $T/img: $T/dest/out: interrupted, nothing written" ]
	done
}

@test "extract: directories hard-linked into a DAG and files with more names than links are refused at once; nothing is left behind" {
	require_cmd debugfs e2fsck
	# 24 levels, each directory named twice: 2^24 paths to the bottom
	depth=24
	head -c 65536 /dev/urandom > "$T/payload"
	mkimg "$T/dag.img" 2M
	p=/l1
	{
		echo "mkdir /l1"
		echo "link /l1 /m1"
		for i in $(seq 2 "$depth"); do
			echo "mkdir $p/l$i"
			echo "link $p/l$i $p/m$i"
			p=$p/l$i
		done
		echo "write $T/payload $p/payload"
	} > "$T/cmds"
	debugfs -w -f "$T/cmds" "$T/dag.img" >/dev/null 2>&1
	# the peers see the second names
	run e2fsck -fn "$T/dag.img"
	[ "$status" -eq 4 ]
	run xiptool verify "$T/dag.img"
	[ "$status" -eq 1 ]
	debugfs -R "stat ${p%/*}/m$depth" "$T/dag.img" 2>/dev/null | grepq 'Type: directory'
	mkdir "$T/dest"
	run timeout 60 "$XIPTOOL" extract "$T/dag.img" "$T/dest/out"
	echo "$output"
	[ "$status" -eq 3 ]
	[ "${#lines[@]}" -eq 1 ]
	[[ "$output" == "xiptool extract: $T/dag.img: ${p%/*}/m$depth: directory inode "*" has a second name; refused" ]]
	[ -z "$(ls -A "$T/dest")" ]
	# into an existing DIR, and a subtree: the same
	mkdir "$T/dest/x"
	run timeout 60 "$XIPTOOL" extract "$T/dag.img" "$T/dest/x" /m1
	[ "$status" -eq 3 ]
	[[ "$output" == *": /m1/"*"/m$depth: directory inode "*" has a second name; refused" ]]
	[ -z "$(ls -A "$T/dest/x")" ]

	# a file of one link named twice, one of two links named three times
	mkdir "$T/src"
	echo one > "$T/src/f"
	echo two > "$T/src/h1"
	ln "$T/src/h1" "$T/src/h2"
	xiptool mkfs -q -d "$T/src" "$T/img"
	cp "$T/img" "$T/f.img"
	debugfs -w -R "ln /f /g" "$T/f.img" 2>/dev/null
	cp "$T/img" "$T/h.img"
	debugfs -w -R "ln /h1 /h3" "$T/h.img" 2>/dev/null
	for i in f h; do
		run e2fsck -fn "$T/$i.img"
		[ "$status" -eq 4 ]
	done
	run xiptool extract "$T/f.img" "$T/dest/out"
	echo "$output"
	[ "$status" -eq 3 ]
	[[ "$output" =~ ^"xiptool extract: $T/f.img: /"[fg]": inode "[0-9]+" has more names than its link count (1); refused"$ ]]
	run xiptool extract "$T/h.img" "$T/dest/out"
	echo "$output"
	[ "$status" -eq 3 ]
	[[ "$output" =~ ^"xiptool extract: $T/h.img: /h"[123]": inode "[0-9]+" has more names than its link count (2); refused"$ ]]
	[ -z "$(ls -A "$T/dest/x")" ]
	[ "$(ls -A "$T/dest")" = x ]
	# the sound image extracts, its hard link as one
	xiptool extract "$T/img" "$T/dest/out"
	[ "$(stat -c %i "$T/dest/out/h1")" = "$(stat -c %i "$T/dest/out/h2")" ]
}

@test "extract: a name twice in one directory is refused as damage, whatever the two entries are; nothing is opened twice, nothing is left behind" {
	require_cmd python3
	mkdir -p "$T/src/d"
	# mkfs writes a directory's entries sorted: *_AAAA comes first
	mkfifo "$T/src/p_AAAA"
	echo second > "$T/src/p_BBBB"
	echo first > "$T/src/q_AAAA"
	mkfifo "$T/src/q_BBBB"
	echo first > "$T/src/d/f_AAAA"
	echo second > "$T/src/d/f_BBBB"
	mkdir "$T/src/m_AAAA" "$T/src/m_BBBB"
	ln -s x "$T/src/s_AAAA"
	ln -s y "$T/src/s_BBBB"
	echo linked > "$T/src/h_AAAA"
	ln "$T/src/h_AAAA" "$T/src/h_BBBB"
	xiptool mkfs -q -d "$T/src" "$T/img"
	mkdir "$T/dest"
	for i in p q d/f m s h; do
		cp "$T/img" "$T/dup.img"
		patch_name "$T/dup.img" "${i##*/}_BBBB" "${i##*/}_AAAA"
		# a FIFO made first is never opened for writing (it would
		# block until a reader came)
		run timeout 20 "$XIPTOOL" extract "$T/dup.img" "$T/dest/out"
		echo "$output"
		[ "$status" -eq 3 ]
		[ "${#lines[@]}" -eq 1 ]
		[ "$output" = "xiptool extract: $T/dup.img: /${i}_AAAA: a second entry of that name in its directory; refused" ]
		[ -z "$(ls -A "$T/dest")" ]
		# a subtree with the damage inside, into an existing DIR
		mkdir "$T/dest/x"
		run timeout 20 "$XIPTOOL" extract "$T/dup.img" "$T/dest/x" /d
		if [ "$i" = d/f ]; then
			[ "$status" -eq 3 ]
			[ "$output" = "xiptool extract: $T/dup.img: /d/f_AAAA: a second entry of that name in its directory; refused" ]
			[ -z "$(ls -A "$T/dest/x")" ]
		else
			[ "$status" -eq 0 ]
			[ "$(cat "$T/dest/x/d/f_BBBB")" = second ]
		fi
		rm -rf "$T/dest/x"
	done
	# the image without the damage extracts whole
	xiptool extract "$T/img" "$T/dest/out"
	[ "$(cat "$T/dest/out/d/f_BBBB")" = second ]
	[ -p "$T/dest/out/q_BBBB" ]
}

@test "extract: DIR is reached without following a symlink, and not through a directory another user can change" {
	require_root
	require_cmd setpriv
	small_tree "$T/src"
	xiptool mkfs -q -d "$T/src" "$T/img"
	chmod 755 "$T"
	mkdir "$T/target" "$T/eve"
	chown 65534:65534 "$T/eve"
	nobody() {
		setpriv --reuid=65534 --regid=65534 --clear-groups "$@"
	}
	# another user's symlink as DIR, and as a parent of DIR
	nobody ln -s "$T/target" "$T/eve/out"
	nobody ln -s "$T/target" "$T/eve/p"
	for dir in "$T/eve/out" "$T/eve/p/new"; do
		run xiptool extract "$T/img" "$dir"
		echo "$output"
		[ "$status" -eq 3 ]
		[ "${#lines[@]}" -eq 1 ]
		[ "$output" = "xiptool extract: $T/img: $T/eve: owned by user 65534, neither root nor the caller; refused" ]
		[ -z "$(ls -A "$T/target")" ]
	done
	# the same, given relative to the working directory
	run sh -c 'cd "$1/eve" && exec "$2" extract "$1/img" out /d' sh "$T" "$XIPTOOL"
	[ "$status" -eq 3 ]
	[ "$output" = "xiptool extract: $T/img: $T/eve: owned by user 65534, neither root nor the caller; refused" ]
	[ -z "$(ls -A "$T/target")" ]
	# a symlink of root's own is not followed either
	ln -s target "$T/lnk"
	for dir in "$T/lnk" "$T/lnk/new" "$T/lnk/"; do
		run xiptool extract "$T/img" "$dir"
		echo "$output"
		[ "$status" -eq 3 ]
		[ "$output" = "xiptool extract: $T/img: $T/lnk: a symbolic link; the destination is not reached through one" ]
		[ -z "$(ls -A "$T/target")" ]
	done
	# a directory the group or others can write to, without the sticky bit
	mkdir -m 775 "$T/gw"
	mkdir -m 777 "$T/ww"
	run xiptool extract "$T/img" "$T/gw/x"
	[ "$status" -eq 3 ]
	[ "$output" = "xiptool extract: $T/img: $T/gw: writable by its group without the sticky bit; refused" ]
	run xiptool extract "$T/img" "$T/ww/x" /d
	[ "$status" -eq 3 ]
	[ "$output" = "xiptool extract: $T/img: $T/ww: writable by others without the sticky bit; refused" ]
	[ -z "$(ls -A "$T/gw")" ]
	[ -z "$(ls -A "$T/ww")" ]
	# with the sticky bit (as /tmp), below a directory of the caller's own
	mkdir -m 1777 "$T/pub"
	xiptool extract "$T/img" "$T/pub/ok"
	cmp "$T/src/d/f" "$T/pub/ok/d/f"
	mkdir "$T/mine"
	chown 65534:65534 "$T/mine"
	run setpriv --reuid=65534 --regid=65534 --clear-groups "$XIPTOOL" extract "$T/img" "$T/mine/x" /d/f
	echo "$output"
	[ "$status" -eq 0 ]
	cmp "$T/src/d/f" "$T/mine/x/f"
}

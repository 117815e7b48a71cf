#!/usr/bin/env bats
# xiptool ls against the kernel's listing of the same image.

load ../lib/common
load ../lib/names

make_tree() {
	mkdir -p "$T/tree/dir/sub" "$T/tree/many"
	printf 'hello\n' > "$T/tree/hello.txt"
	head -c 70000 /dev/urandom > "$T/tree/dir/blob"
	chmod 4751 "$T/tree/dir/blob"
	: > "$T/tree/.hidden"
	ln -s hello.txt "$T/tree/link"
	mkfifo "$T/tree/fifo"
	# a directory of several blocks
	for i in $(seq 1 300); do : > "$T/tree/many/file-with-a-long-name-$i"; done
}

@test "ls lists what the kernel lists (root, nested, multi-block directory)" {
	require_loop
	make_tree
	mkimg "$T/img" 16M "$T/tree"
	loop_mount "$T/img"
	for d in / /dir /many /dir/sub; do
		diff <(xiptool ls -a "$T/img" "$d" | grep -vx '\.\|\.\.') <(LC_ALL=C ls -A "$T/mnt$d")
		diff <(xiptool ls "$T/img" "$d") <(LC_ALL=C ls "$T/mnt$d")
	done
	loop_umount
	[ "$(xiptool ls "$T/img" /many | wc -l)" -eq 300 ]
}

@test "ls -l shows the mode, links, owner, size and link target the kernel shows" {
	require_loop
	make_tree
	mkimg "$T/img" 16M "$T/tree"
	loop_mount "$T/img"
	xiptool ls -l "$T/img" / | while read -r mode links uid gid size day time name rest; do
		st=$(stat -c '%A %h %u %g %s' "$T/mnt/$name")
		[ "$st" = "$mode $links $uid $gid $size" ] || { echo "$name: $st != $mode $links $uid $gid $size"; false; }
		[ "$(date -u -d "@$(stat -c %Y "$T/mnt/$name")" '+%Y-%m-%d %H:%M')" = "$day $time" ]
	done
	loop_umount
	xiptool ls -l "$T/img" / | grepq ' link -> hello.txt$'
	xiptool ls -l "$T/img" /dir | grepq '^-rwsr-x--x '
}

@test "ls of a file lists the file; -a shows . and .." {
	make_tree
	mkimg "$T/img" 16M "$T/tree"
	[ "$(xiptool ls "$T/img" /hello.txt)" = /hello.txt ]
	xiptool ls -a "$T/img" / | grepq -x '\.hidden'
	xiptool ls -a "$T/img" / | grepq -x '\.\.'
	run xiptool ls "$T/img" /
	[ "$status" -eq 0 ]
	if grep -q '^\.' <<<"$output"; then false; fi
	[ "$(xiptool ls "$T/img")" = "$(xiptool ls "$T/img" /)" ]
}

@test "ls errors: missing path, damaged directory" {
	make_tree
	mkimg "$T/img" 16M "$T/tree"
	fails_with 3 "xiptool ls: /nope: not found in $T/img" \
		xiptool ls "$T/img" /nope
	fails_with 3 "xiptool ls: /nope/sub: directory /nope not found in $T/img" \
		xiptool ls "$T/img" /nope/sub
	# a rec_len of 0 in the first entry of /dir
	blk=$(debugfs -R "bmap /dir 0" "$T/img" 2>/dev/null)
	cp "$T/img" "$T/bad"
	printf '\x00\x00' | dd of="$T/bad" bs=1 seek=$((blk * 4096 + 4)) conv=notrunc status=none
	run xiptool ls "$T/bad" /dir
	[ "$status" -eq 3 ]
	[[ "$output" == *"directory inode"*"corrupt entry at offset 0"* ]]
}

@test "names from the image are printed escaped: no forged line, no escape sequence" {
	require_cmd python3
	hostile_tree "$T/tree"
	mkimg "$T/img" 8M "$T/tree"
	run xiptool ls "$T/img"
	[ "$status" -eq 0 ]
	[ "$output" = "$HOSTILE_LS" ]
	[ "$(xiptool ls "$T/img" | wc -l)" -eq 7 ]
	if LC_ALL=C grep -q '[[:cntrl:]]' <<<"$output"; then false; fi
	run xiptool ls -l "$T/img"
	[ "$status" -eq 0 ]
	[ "${#lines[@]}" -eq 7 ]
	[[ ${lines[4]} == *' lnk\x1b[2J -> target\x1b[31mred' ]]
	[[ ${lines[3]} == *" $EVIL_ESC" ]]
	if LC_ALL=C grep -q '[[:cntrl:]]' <<<"$output"; then false; fi
	# a file named on the command line, and messages
	[ "$(xiptool ls "$T/img" "/$EVIL")" = "/$EVIL_ESC" ]
	fails_with 3 "xiptool ls: /$EVIL_ESC/x: /$EVIL_ESC is not a directory in $T/img" \
		xiptool ls "$T/img" "/$EVIL/x"
}

@test "a directory that lists nothing (size 0 in a damaged image) lists nothing, cleanly under the sanitizers" {
	mkdir -p "$T/tree/dir"
	mkimg "$T/img" 8M "$T/tree"
	debugfs -w -R "sif /dir size 0" "$T/img" 2>/dev/null
	# UBSan stops at the first finding (configure's -fno-sanitize-recover
	# does too): qsort of no entries was given a null array
	export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
	for opt in -l -a -la ''; do
		# shellcheck disable=SC2086
		run xiptool ls $opt "$T/img" /dir
		[ "$status" -eq 0 ] || { echo "ls $opt: exit $status: $output"; false; }
		[ -z "$output" ]
	done
}

@test "ls -l shows a device's MAJOR, MINOR where its size would be, as the kernel mounts it" {
	require_loop
	make_tree
	mkimg "$T/img" 16M "$T/tree"
	debugfs -w -R "mknod null c 1 3" "$T/img" 2>/dev/null
	debugfs -w -R "mknod sda b 8 16" "$T/img" 2>/dev/null
	run -0 xiptool ls -l "$T/img" /null
	[[ "$output" =~ ^c.........\ +1\ +0\ +0\ +1,\ +3\ [0-9-]+\ [0-9:]+\ /null$ ]]
	run -0 xiptool ls -l "$T/img" /sda
	[[ "$output" =~ ^b.........\ +1\ +0\ +0\ +8,\ +16\ [0-9-]+\ [0-9:]+\ /sda$ ]]
	# the kernel agrees on the numbers
	loop_mount "$T/img"
	[ "$(stat -c '%t %T' "$T/mnt/null")" = "1 3" ]
	[ "$(stat -c '%t %T' "$T/mnt/sda")" = "8 10" ]
	loop_umount
	# the columns stay aligned with the other entries'
	run -0 xiptool ls -l "$T/img" /
	local w
	w=$(awk '{ print index($0, " 20") }' <<<"$output" | sort -u | wc -l)
	[ "$w" -eq 1 ]
}

#!/usr/bin/env bats
# The files xiptool creates for output (mkfs --root-hash-file, read -o,
# save) are made as mkfs makes an image: a new private file renamed into
# place.  Run by root beside another user who plants symbolic links and
# files in a shared sticky directory: nothing is written through a link,
# no other user's file is written into or replaced, and a failure leaves
# the old file as it was.

load ../lib/common

setup() {
	common_setup
	require_root
	require_cmd setpriv
	chmod 755 "$T"
	# a directory every user may write, like /tmp
	mkdir "$T/shared" && chmod 1777 "$T/shared"
	mkdir "$T/tree"
	printf 'hello\n' > "$T/tree/f"
}

only_files() {
	local dir=$1
	shift
	[ "$(ls -A "$dir" | sort | tr '\n' ' ')" = "$(printf '%s\n' "$@" | sort | tr '\n' ' ')" ]
}

# plant_theirs NAME: uid 65534's file $T/shared/NAME, writable by all;
# its inode in $ino.
plant_theirs() {
	as_nobody sh -c "echo theirs > '$T/shared/$1'; chmod 666 '$T/shared/$1'"
	ino=$(stat -c %i "$T/shared/$1")
}

# still_theirs NAME: the planted file is as it was, the only one there.
still_theirs() {
	[ "$(cat "$T/shared/$1")" = theirs ]
	[ "$(stat -c '%i %u' "$T/shared/$1")" = "$ino 65534" ]
	only_files "$T/shared" "$1"
}

@test "mkfs --root-hash-file: another user's symlink is refused, its target untouched" {
	echo precious > "$T/victim"
	as_nobody ln -s "$T/victim" "$T/shared/rh"
	run xiptool mkfs -q --verity -d "$T/tree" --root-hash-file "$T/shared/rh" "$T/img"
	echo "$output"
	[ "$status" -eq 3 ]
	[ "$output" = "xiptool mkfs: $T/shared/rh: is a symbolic link; refusing to write through it" ]
	[ "$(cat "$T/victim")" = precious ]
	[ -L "$T/shared/rh" ]
	# refused before anything was built
	[ ! -e "$T/img" ]
	# a dangling one creates nothing where it points
	as_nobody ln -s "$T/created" "$T/shared/dangling"
	run xiptool mkfs -q -f --verity -d "$T/tree" --root-hash-file "$T/shared/dangling" "$T/img"
	[ "$status" -eq 3 ]
	[ ! -e "$T/created" ]
	only_files "$T/shared" rh dangling
}

@test "mkfs --root-hash-file: another user's file in a sticky directory is never written" {
	plant_theirs rh
	run xiptool mkfs -q --verity -d "$T/tree" --root-hash-file "$T/shared/rh" "$T/img"
	echo "$output"
	[ "$status" -eq 3 ]
	[ "$output" = "xiptool mkfs: $T/shared/rh: owned by another user (uid 65534) in a shared directory; refusing to replace it" ]
	still_theirs rh
	# a new name there is fine, private to root, and so is replacing it
	run xiptool mkfs -f --verity -d "$T/tree" --root-hash-file "$T/shared/mine" "$T/img"
	[ "$status" -eq 0 ]
	root=$(sed -n 's/^root hash: //p' <<<"$output")
	[ "$(cat "$T/shared/mine")" = "$root" ]
	[ "$(stat -c %u "$T/shared/mine")" -eq 0 ]
	xiptool mkfs -q -f --verity --salt 00 -d "$T/tree" --root-hash-file "$T/shared/mine" "$T/img"
	[ "$(cat "$T/shared/mine")" != "$root" ]
	only_files "$T/shared" rh mine
}

@test "mkfs --root-hash-file: a new file gets the umask's mode, a replaced one keeps its mode" {
	(umask 077 && xiptool mkfs -q --verity -d "$T/tree" --root-hash-file "$T/rh" "$T/img")
	[ "$(stat -c %a "$T/rh")" = 600 ]
	chmod 640 "$T/rh"
	xiptool mkfs -q -f --verity -d "$T/tree" --root-hash-file "$T/rh" "$T/img"
	[ "$(stat -c %a "$T/rh")" = 640 ]
	[ "$(wc -l < "$T/rh")" -eq 1 ]
	only_files "$T" img rh shared tree
}

@test "read -o: another user's symlink is refused, its target untouched" {
	xiptool mkfs -q -d "$T/tree" "$T/img"
	echo precious > "$T/victim"
	as_nobody ln -s "$T/victim" "$T/shared/out"
	run xiptool read -o "$T/shared/out" "$T/img" /f
	echo "$output"
	[ "$status" -eq 3 ]
	[ "$output" = "xiptool read: $T/shared/out: is a symbolic link; refusing to write through it" ]
	[ "$(cat "$T/victim")" = precious ]
	as_nobody ln -s "$T/created" "$T/shared/dangling"
	run xiptool read -o "$T/shared/dangling" "$T/img" /f
	[ "$status" -eq 3 ]
	[ ! -e "$T/created" ]
	only_files "$T/shared" out dangling
}

@test "read -o: another user's file in a sticky directory is never written" {
	xiptool mkfs -q -d "$T/tree" "$T/img"
	plant_theirs out
	run xiptool read -o "$T/shared/out" "$T/img" /f
	echo "$output"
	[ "$status" -eq 3 ]
	[ "$output" = "xiptool read: $T/shared/out: owned by another user (uid 65534) in a shared directory; refusing to replace it" ]
	still_theirs out
	# the other user may still write their own file there
	chmod 644 "$T/img"
	as_nobody "$XIPTOOL" read -o "$T/shared/out" "$T/img" /f
	[ "$(cat "$T/shared/out")" = hello ]
	[ "$(stat -c %u "$T/shared/out")" -eq 65534 ]
}

@test "read -o: a failed read leaves the old file as it was, and no temporary file" {
	xiptool mkfs -q -d "$T/tree" "$T/img"
	mkdir "$T/out"
	echo old > "$T/out/f"
	ino=$(stat -c %i "$T/out/f")
	run xiptool read -o "$T/out/f" "$T/img" /missing
	[ "$status" -eq 3 ]
	[ "$(cat "$T/out/f")" = old ]
	only_files "$T/out" f
	# a complete read replaces it: a new inode, never the old one rewritten
	xiptool read -o "$T/out/f" "$T/img" /f
	[ "$(cat "$T/out/f")" = hello ]
	[ "$(stat -c %i "$T/out/f")" != "$ino" ]
	only_files "$T/out" f
	# a character device is written in place
	xiptool read -o /dev/null "$T/img" /f
	[ -c /dev/null ]
}

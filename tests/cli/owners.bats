#!/usr/bin/env bats
# Root and every user's segments: list --all shows them with their owner,
# detach UID:NAME releases a user's segment with the holder checks of any
# detach.  A user's registry is written by that user: root acts on none
# of what they planted there (a symlinked run directory, a record naming
# root's files).

load ../lib/common
load ../lib/attach

# User 65534's registry in $UREG, under $T/users (XIPTOOL_USERS_RUNDIR,
# in place of /run/user), and a tree image they may read at $T/img.
setup() {
	attach_setup
	require_root
	require_cmd setpriv
	chmod 755 "$T"
	mkdir -p "$T/users/65534"
	UREG="$T/users/65534/xiptool"
	mkdir -m 700 "$UREG"
	chown 65534:65534 "$UREG"
	export XIPTOOL_USERS_RUNDIR="$T/users"
}

# Run a command as user 65534, with their registry.
asuser() {
	setpriv --reuid=65534 --regid=65534 --clear-groups -- \
		env XIPTOOL_RUNDIR="$UREG" "$@"
}

# User 65534 attaches $T/img as $SEG; its segment file in $upath.
user_attach() {
	[ -e "$T/img" ] || make_tree_image
	chmod 644 "$T/img"
	run asuser "$XIPTOOL" attach -n "$SEG" "$T/img"
	[ "$status" -eq 0 ]
	upath=$(sed -n 's/^path=//p' "$UREG/$SEG")
	[ "$(stat -c %u "$upath")" = 65534 ]
}

# A record of user 65534, as they could write it: segment $1, file $2
# with the identity of $2, owned (says the record) by uid $3.
forge_record() {
	cat > "$UREG/$1" <<EOT
name=$1
type=sr
size=4096
populate=0
state=attached
owner=65534
dev=$(stat -c %d "$2")
ino=$(stat -c %i "$2")
fileuid=$3
loop=
path=$2
EOT
	chown 65534:65534 "$UREG/$1"
}

@test "list --all shows a user's segment with its owner; list shows root's only" {
	require_cmd python3
	user_attach
	xiptool attach -n "r$SEG" "$T/img"
	run xiptool list --noheadings -r -o NAME
	[ "$status" -eq 0 ]
	[ "$output" = "r$SEG" ]
	run xiptool list --all --noheadings -r -o OWNER,NAME,PATH
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = "0 r$SEG $(seg_col "r$SEG" PATH)" ]
	[ "${lines[1]}" = "65534 $SEG $upath" ]
	[ "${#lines[@]}" -eq 2 ]
	# the default columns of --all start with OWNER
	run xiptool list --all
	[ "$status" -eq 0 ]
	[[ "${lines[0]}" == "OWNER"*"NAME"* ]]
	# a user's segment named UID:NAME
	run xiptool list --all --noheadings -r -o NAME "65534:$SEG"
	[ "$status" -eq 0 ]
	[ "$output" = "$SEG" ]
	run xiptool list --all --json -o NAME,OWNER
	[ "$status" -eq 0 ]
	printf '%s' "$output" > "$T/list.json"
	[ "$(python3 -c 'import json,sys; print(sorted((s["owner"], s["name"]) for s in json.load(open(sys.argv[1]))["segments"]))' "$T/list.json")" = "[(0, 'r$SEG'), (65534, '$SEG')]" ]
	# a user's --all is their own registry
	run asuser "$XIPTOOL" list --all --noheadings -r -o OWNER,NAME
	[ "$status" -eq 0 ]
	[ "$output" = "65534 $SEG" ]
	# root read it and changed nothing of the user's
	[ -z "$(find "$UREG" -user 0)" ]
}

@test "list --all: a user's record that says verified and signed, of a segment never sealed, is neither" {
	user_attach
	# the user writes their own record: its word is not taken
	asuser sh -c 'printf "verified=1\nsigner=/CN=forged\n" >> "$1"' sh "$UREG/$SEG"
	grepq -x 'signer=/CN=forged' "$UREG/$SEG"
	run xiptool list --all --noheadings -r -o NAME,VERIFIED,SIGNER "65534:$SEG"
	[ "$status" -eq 0 ]
	[[ "$output" =~ ^"$SEG 0"\ ?$ ]]
	run xiptool list --all --json -o NAME,VERIFIED,SIGNER "65534:$SEG"
	[ "$status" -eq 0 ]
	grepq '"verified": false' <<<"$output"
	grepq '"signer": null' <<<"$output"
}

@test "root's detach UID:NAME and USER:NAME release a user's segment: file, record, nothing left" {
	user_attach
	run xiptool detach "65534:$SEG"
	[ "$status" -eq 0 ]
	[ -z "$output" ]
	[ ! -e "$upath" ]
	[ ! -e "$UREG/$SEG" ]
	no_segfile "$SEG"
	run xiptool list --all --noheadings -o NAME
	[ "$status" -eq 0 ]
	[ -z "$output" ]
	user_attach
	run xiptool detach "$(id -nu 65534):@$SEG"
	[ "$status" -eq 0 ]
	[ ! -e "$upath" ]
	[ ! -e "$UREG/$SEG" ]
	[ -z "$(find "$UREG" -user 0)" ]
}

@test "a user cannot detach another's segment by UID:NAME; their own UID:NAME is theirs" {
	make_tree_image
	xiptool attach -n "$SEG" "$T/img"
	path=$(seg_col "$SEG" PATH)
	run asuser "$XIPTOOL" detach "0:$SEG"
	[ "$status" -eq 3 ]
	[ "$output" = "xiptool detach: 0:$SEG: permission denied: only root detaches another user's segment" ]
	[ -e "$path" ]
	[ -e "$T/run/$SEG" ]
	user_attach
	run asuser "$XIPTOOL" detach "65534:$SEG"
	[ "$status" -eq 0 ]
	[ ! -e "$upath" ]
	run xiptool detach "nosuchuser$U:$SEG"
	[ "$status" -eq 3 ]
	[ "$output" = "xiptool detach: nosuchuser$U: no such user" ]
}

@test "a user's segment held by their running program: root's detach refuses it, --force releases it" {
	static_busybox_image
	chmod 644 "$T/img"
	asuser "$XIPTOOL" attach -n "$SEG" "$T/img"
	upath=$(sed -n 's/^path=//p' "$UREG/$SEG")
	asuser "$XIPTOOL" exec "@$SEG" /bin/busybox sleep 30 & prog=$!
	ino=$(stat -c %i "$upath")
	for i in $(seq 100); do grep -q ":$ino " /proc/locks 2>/dev/null && break; sleep 0.05; done
	run xiptool detach "65534:$SEG"
	[ "$status" -eq 3 ]
	[[ "$output" =~ ^"xiptool detach: $SEG: busy: the segment is held by process "([0-9]+)" (busybox) (use --force)"$ ]]
	# the user's program
	[ "$(stat -c %u "/proc/${BASH_REMATCH[1]}")" = 65534 ]
	[ -e "$upath" ]
	[ -e "$UREG/$SEG" ]
	run xiptool detach --force "65534:$SEG"
	kill "$prog"; wait "$prog" 2>/dev/null || true
	[ "$status" -eq 0 ]
	[ ! -e "$upath" ]
	[ ! -e "$UREG/$SEG" ]
}

# list_and_detach_refuse COLUMNS LINE WHAT WHY: list --all -o COLUMNS
# warns WHY and shows LINE alone; detach WHAT fails with WHY.
list_and_detach_refuse() {
	run xiptool list --all --noheadings -r -o "$1"
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = "xiptool list: warning: $4" ]
	[ "${lines[1]}" = "$2" ]
	[ "${#lines[@]}" -eq 2 ]
	run xiptool detach "$3"
	[ "$status" -eq 3 ]
	[ "$output" = "xiptool detach: $4" ]
}

@test "a user's run directory planted as a symlink to root's: list --all warns and leaves it out, detach refuses" {
	make_tree_image
	xiptool attach -n "$SEG" "$T/img"
	path=$(seg_col "$SEG" PATH)
	mkdir -p "$T/users/65533"
	chown 65533 "$T/users/65533"
	ln -s "$T/run" "$T/users/65533/xiptool"
	list_and_detach_refuse OWNER,NAME "0 $SEG" "65533:$SEG" \
		"$T/users/65533/xiptool: run directory is a symbolic link: refusing"
	[ -e "$path" ]
	[ -e "$T/run/$SEG" ]
	# a real directory, not theirs
	rm "$T/users/65533/xiptool"
	mkdir -m 700 "$T/users/65533/xiptool"
	cp "$T/run/$SEG" "$T/users/65533/xiptool/"
	run xiptool detach "65533:$SEG"
	[ "$status" -eq 3 ]
	[ "$output" = "xiptool detach: $T/users/65533/xiptool: run directory must belong to uid 65533 and not be writable by others" ]
	[ -e "$path" ]
}

@test "a user's record naming root's files: neither listed nor acted on, the files stay" {
	user_attach
	printf 'root\n' > "$T/rootfile"
	# root's file, the record says so
	forge_record "a$SEG" "$T/rootfile" 0
	# root's file in a directory of root's, the record says the user's
	forge_record "b$SEG" "$T/rootfile" 65534
	# the user's segment file, reached through a symlink of theirs
	mkdir "$T/users/65534/d"
	chown 65534 "$T/users/65534/d"
	ln -s "$(dirname "$upath")" "$T/users/65534/d/shm"
	forge_record "c$SEG" "$T/users/65534/d/shm/$(basename "$upath")" 65534
	# ... through a symlink of theirs in /dev/shm (to /dev/shm itself)
	asuser ln -s /dev/shm "/dev/shm/xiptool-link-$U"
	forge_record "d$SEG" "/dev/shm/xiptool-link-$U/$(basename "$upath")" 65534
	# a file of theirs in a directory everyone may write to, not sticky
	mkdir -m 777 "$T/open"
	asuser touch "$T/open/f"
	forge_record "e$SEG" "$T/open/f" 65534
	run xiptool list --all --noheadings -r -o OWNER,NAME
	[ "$status" -eq 0 ]
	printf '%s\n' "${lines[@]}" | grepq "^65534 $SEG\$"
	for x in a b c d e; do
		printf '%s\n' "${lines[@]}" | grepq "^xiptool list: warning: $UREG/$x$SEG: records .*, not a segment file of uid 65534: refusing$"
	done
	[ "${#lines[@]}" -eq 6 ]
	for x in a b c d e; do
		run xiptool detach "65534:$x$SEG"
		[ "$status" -eq 3 ]
		[[ "$output" == "xiptool detach: $UREG/$x$SEG: records "*", not a segment file of uid 65534: refusing" ]]
		[ -e "$UREG/$x$SEG" ]
	done
	[ "$(cat "$T/rootfile")" = root ]
	[ -e "$upath" ]
	[ -e "$T/open/f" ]
}

@test "a user's record naming a root file in /dev/shm: the identity and owner checks refuse it, the file stays" {
	user_attach
	victim=/dev/shm/xiptool-victim-$U
	printf 'root\n' > "$victim"
	forge_record "v$SEG" "$victim" 65534
	run xiptool list --all --noheadings -r -o NAME
	[ "$status" -eq 0 ]
	[ "$output" = "$SEG" ]
	run xiptool detach "65534:v$SEG"
	[ "$status" -eq 3 ]
	[ "$output" = "xiptool detach: v$SEG: $victim is not the segment that was attached (device/inode changed): entry removed, the file left alone" ]
	[ "$(cat "$victim")" = root ]
	# the record says root's: a file of root's is not the user's segment
	forge_record "w$SEG" "$victim" 0
	list_and_detach_refuse NAME "$SEG" "65534:w$SEG" \
		"$UREG/w$SEG: records $victim, not a segment file of uid 65534: refusing"
	[ "$(cat "$victim")" = root ]
	rm -f "$victim"
}

@test "a user holding their registry's lock forever: root's detach UID:NAME gives up busy, then works once it is free" {
	require_cmd flock timeout
	user_attach
	# the user takes their own registry lock and keeps it
	# (one process from setpriv to sleep: killing it frees the lock)
	setpriv --reuid=65534 --regid=65534 --clear-groups -- \
		sh -c 'exec 9<"$0" && flock -x 9 && exec sleep 600' "$UREG/.lock" \
		</dev/null >/dev/null 2>&1 3>&- &
	holder=$!
	for _ in $(seq 100); do
		grep -q "$(stat -c '%i' "$UREG/.lock")" /proc/locks && break
		sleep 0.1
	done
	grep -q ":$(stat -c '%i' "$UREG/.lock") " /proc/locks
	run timeout 60 "$XIPTOOL" detach "65534:$SEG"
	kill "$holder"
	wait "$holder" || true
	[ "$status" -eq 3 ]
	[ "${#lines[@]}" -eq 1 ]
	[[ "$output" == *"/.lock: held by another process for 5 s: uid 65534's registry is busy" ]]
	[ -e "$upath" ]
	run xiptool detach "65534:$SEG"
	echo "$output"
	[ "$status" -eq 0 ]
	[ ! -e "$upath" ]
}

@test "a user's lock file replaced by a FIFO: root's detach UID:NAME refuses it and makes no file of root's there" {
	user_attach
	lock=$(ls -A "$UREG" | grep '^\.lock:')
	[ -n "$lock" ]
	rm -f "$UREG/$lock"
	asuser mkfifo "$UREG/$lock"
	run timeout 60 "$XIPTOOL" detach "65534:$SEG"
	[ "$status" -eq 3 ]
	[ "$output" = "xiptool detach: $UREG/$lock: not a lock file of uid 65534: refusing" ]
	[ -p "$UREG/$lock" ]
	[ -e "$upath" ]
	[ -z "$(find "$UREG" -user 0)" ]
}

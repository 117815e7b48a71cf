#!/usr/bin/env bats
# xiptool stat against the kernel's stat(1) and debugfs.

load ../lib/common
load ../lib/names

@test "stat agrees with the kernel: mode, owner, size, sectors, times" {
	require_loop
	mkdir -p "$T/tree"
	head -c 100000 /dev/urandom > "$T/tree/f"
	chmod 640 "$T/tree/f"
	chown 1234:567 "$T/tree/f"
	mkimg "$T/img" 16M "$T/tree"
	run xiptool stat "$T/img" /f
	[ "$status" -eq 0 ]
	loop_mount "$T/img"
	[ "$(info_field "$output" Inode)" = "$(stat -c %i "$T/mnt/f")" ]
	[ "$(info_field "$output" Mode)" = "0$(stat -c %a "$T/mnt/f")" ]
	[ "$(info_field "$output" UID)" = 1234 ]
	[ "$(info_field "$output" GID)" = 567 ]
	[ "$(info_field "$output" Size)" = "$(stat -c %s "$T/mnt/f")" ]
	[ "$(info_field "$output" Sectors)" = "$(stat -c %b "$T/mnt/f")" ]
	[ "$(info_field "$output" Links)" = "$(stat -c %h "$T/mnt/f")" ]
	[ "$(info_field "$output" Type)" = "$(stat -c %F "$T/mnt/f")" ]
	m=$(stat -c %Y "$T/mnt/f")
	[ "$(info_field "$output" Modify)" = "$(date -u -d "@$m" +%Y-%m-%dT%H:%M:%S).000000000Z" ]
	loop_umount
}

@test "stat shows block runs, holes and contiguity as debugfs maps them" {
	mkdir -p "$T/tree"
	head -c 40000 /dev/urandom > "$T/tree/small"
	truncate -s 1M "$T/tree/sparse"
	printf x | dd of="$T/tree/sparse" bs=1 seek=500000 conv=notrunc status=none
	mkimg "$T/img" 16M "$T/tree"
	run xiptool stat "$T/img" /small
	[ "$(info_field "$output" 'Data blocks')" = 10 ]
	[ "$(info_field "$output" 'Hole blocks')" = 0 ]
	[ "$(info_field "$output" Contiguous)" = yes ]
	first=$(debugfs -R "bmap /small 0" "$T/img" 2>/dev/null)
	[ "$(info_field "$output" 'Block runs')" = "0-9@$first-$((first + 9))" ]
	run xiptool stat "$T/img" /sparse
	[ "$(info_field "$output" 'Data blocks')" = 1 ]
	[ "$(info_field "$output" 'Hole blocks')" = 255 ]
	b=$(debugfs -R "bmap /sparse 122" "$T/img" 2>/dev/null)
	[ "$(info_field "$output" 'Block runs')" = "122-122@$b-$b" ]
}

@test "stat --json, of a symlink (not followed), of a directory" {
	require_cmd python3
	mkdir -p "$T/tree/d"
	ln -s d "$T/tree/l"
	mkimg "$T/img" 16M "$T/tree"
	run xiptool stat --json "$T/img" /l
	[ "$status" -eq 0 ]
	got=$(printf '%s' "$output" | python3 -c 'import json,sys; d=json.load(sys.stdin)["stat"][0]; print(d["type"], d["target"], d["size"], d["contiguous"], d["extents"])')
	[ "$got" = "symbolic link d 1 True False" ]
	run xiptool stat "$T/img" /d
	[ "$(info_field "$output" Type)" = directory ]
	fails_with 3 "xiptool stat: /nope: not found in $T/img" \
		xiptool stat "$T/img" /nope
	fails_with 3 "xiptool stat: /nope/f: directory /nope not found in $T/img" \
		xiptool stat "$T/img" /nope/f
}

@test "names from the image are escaped (text), valid UTF-8 JSON (--json)" {
	require_cmd python3
	hostile_tree "$T/tree"
	ln -s "bad"$'\xff'"c1"$'\xc2\x9b'"2J" "$T/tree/l2"
	mkimg "$T/img" 8M "$T/tree"
	run xiptool stat "$T/img" "/$LNK"
	[ "$status" -eq 0 ]
	[[ $output == *'Target:      target\x1b[31mred'* ]]
	if printf '%s' "$output" | LC_ALL=C grep -q '[[:cntrl:]]'; then false; fi
	xiptool stat --json "$T/img" "/$LNK" > "$T/a.json"
	xiptool stat --json "$T/img" /l2 > "$T/b.json"
	python3 - "$T/a.json" "$T/b.json" <<'PY'
import json, sys
def load(p):
    raw = open(p, "rb").read()
    assert all(b >= 0x20 or b == 0x0a for b in raw), raw
    return json.loads(raw.decode("utf-8"))["stat"][0]
assert load(sys.argv[1])["target"] == "target\x1b[31mred"
# bytes JSON cannot hold, and a C1 control, as \xHH text
assert load(sys.argv[2])["target"] == "bad\\xffc1\\xc2\\x9b2J", load(sys.argv[2])
PY
}

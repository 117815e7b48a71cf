#!/usr/bin/env bats
# xiptool list: the registry as a table or JSON (libsmartcols, like
# losetup -l -J), checked against stat, blkid and losetup.

load ../lib/common
load ../lib/attach

@test "list with nothing attached prints nothing; --json an empty array" {
	require_cmd python3
	run xiptool list
	[ "$status" -eq 0 ]
	[ -z "$output" ]
	run xiptool list --json
	[ "$status" -eq 0 ]
	[ "$(printf '%s' "$output" | python3 -c 'import json,sys; print(json.load(sys.stdin)["segments"])')" = "[]" ]
}

@test "list --json: types and values match stat, blkid and losetup" {
	require_loop
	require_cmd python3
	make_tree_image
	gzip -c "$T/img" > "$T/img.gz"
	xiptool attach -n "a$SEG" "$T/img.gz"
	run xiptool attach -n "b$SEG" -t sw --loop "$T/img"
	[ "$status" -eq 0 ]
	dev=${output##* }
	[ -b "$dev" ]
	run xiptool list --json -o +PATH,RO,COMPRESSED,OWNER
	[ "$status" -eq 0 ]
	printf '%s' "$output" > "$T/list.json"
	python3 - "$T/list.json" "a$SEG" "b$SEG" "$dev" "$(stat -c %s "$T/img")" \
		"$(blkid -o value -s UUID "$T/img")" "l$U" "$(realpath "$T/img")" <<'PY'
import json, os, sys
f, a, b, dev, size, uuid, label, img = sys.argv[1:]
segs = {s["name"]: s for s in json.load(open(f))["segments"]}
assert set(segs) == {a, b}, segs
sa, sb = segs[a], segs[b]
assert sa["type"] == "sr" and sb["type"] == "sw"
assert sa["size"] == int(size) and sb["size"] == int(size)
assert sa["loop"] is None and sb["loop"] == dev
assert sa["uuid"] == uuid and sa["label"] == label
assert sa["ro"] is True and sb["ro"] is False
assert sa["compressed"] is True and sb["compressed"] is False
assert sa["image"] == img + ".gz" and sb["image"] == img
assert sa["owner"] == 0
assert sa["path"].startswith(os.environ["XIPTOOL_RUNDIR"] + ".shm/xiptool-")
PY
	[ "$(losetup -n -O BACK-FILE "$dev")" = "$(seg_col "b$SEG" PATH)" ]
}

@test "list -o picks columns; unknown columns are usage errors; names filter" {
	make_tree_image
	before=$(date +%s)
	xiptool attach -n "a$SEG" "$T/img"
	after=$(date +%s)
	xiptool attach -n "b$SEG" -t ew "$T/img"
	run xiptool list -o name,TYPE
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = "NAME$(printf ' %.0s' $(seq $((${#SEG} + 1 - 4))))TYPE" ] ||
		[[ "${lines[0]}" =~ ^NAME\ +TYPE$ ]]
	[[ "${lines[1]}" =~ ^a$SEG\ +sr$ ]]
	[[ "${lines[2]}" =~ ^b$SEG\ +ew$ ]]
	run xiptool list --noheadings -r -o NAME,SIZE "b$SEG"
	[ "$status" -eq 0 ]
	[ "$output" = "b$SEG $(stat -c %s "$T/img")" ]
	run xiptool list --noheadings -o NAME "@a$SEG"
	[ "$status" -eq 0 ]
	[ "$output" = "a$SEG" ]
	run xiptool list --noheadings -o NAME "a$SEG" "n$SEG"
	[ "$status" -eq 3 ]
	[ "$output" = "xiptool list: n$SEG: no attached segment of that name" ]
	run xiptool list -o NAME,BOGUS
	[ "$status" -eq 2 ]
	[ "${lines[0]}" = "xiptool list: --output: unknown column 'BOGUS'" ]
	run xiptool list -o +CREATED --noheadings -r "a$SEG"
	[ "$status" -eq 0 ]
	created=${output##* }
	[[ "$created" =~ ^[0-9]{4}-[0-9]{2}-[0-9]{2}T ]]
	# the attach's own time: between the clock's readings around it
	created=$(date -d "$created" +%s)
	[ "$created" -ge "$before" ]
	[ "$created" -le "$after" ]
}

@test "list refuses a run directory others can write to" {
	mkdir -m 777 "$T/open"
	run env XIPTOOL_RUNDIR="$T/open" "$XIPTOOL" list
	[ "$status" -eq 3 ]
	[[ "$output" == "xiptool list: $T/open: run directory must belong to uid"* ]]
}

@test "list ignores stray files and reports a damaged state file by name" {
	make_tree_image
	xiptool attach -n "$SEG" "$T/img"
	: > "$T/run/.tmpfile"
	printf 'garbage\n' > "$T/run/d$SEG"
	run xiptool list --noheadings -o NAME
	[ "$status" -eq 3 ]
	[ "$output" = "xiptool list: $T/run/d$SEG: damaged state file" ]
	rm "$T/run/d$SEG"
	run xiptool list --noheadings -o NAME
	[ "$output" = "$SEG" ]
}

@test "completions offer attached segment names (bash: @NAME for images, names for detach)" {
	[ -f /usr/share/bash-completion/bash_completion ] || skip "bash-completion is not installed"
	make_tree_image
	xiptool attach -n "$SEG" "$T/img"
	complete_words() {
		PATH="$(dirname "$XIPTOOL"):$PATH" bash -c "source /usr/share/bash-completion/bash_completion
			source '$TOP_SRCDIR/completions/xiptool'
			COMP_WORDS=($*); COMP_CWORD=$(($# - 1))
			COMP_LINE='$*'; COMP_POINT=\${#COMP_LINE}
			_xiptool; printf '%s\n' \"\${COMPREPLY[@]}\""
	}
	run complete_words xiptool info "@s$U"
	[ "$output" = "@$SEG" ]
	run complete_words xiptool detach "s$U"
	[ "$output" = "$SEG" ]
	run complete_words xiptool save "s$U"
	[ "$output" = "$SEG" ]
	grep -q '_xiptool_segments' "$TOP_SRCDIR/completions/_xiptool"
}

@test "list shows what was built into an sn segment: xiptool mkfs @NAME, then the kernel mounts it" {
	require_loop
	mkdir -p "$T/tree/d"
	printf 'built in place\n' > "$T/tree/d/f"
	run xiptool attach -t sn -n "$SEG" --size 16M --loop
	[ "$status" -eq 0 ]
	dev=${output##* }
	[ -z "$(seg_col "$SEG" LABEL)" ]
	run xiptool mkfs -d "$T/tree" -L "m$U" "@$SEG"
	[ "$status" -eq 0 ]
	[ "$(seg_col "$SEG" LABEL)" = "m$U" ]
	path=$(seg_col "$SEG" PATH)
	[ "$(seg_col "$SEG" UUID)" = "$(blkid -o value -s UUID "$path")" ]
	e2fsck -fn "$path"
	blockdev --flushbufs "$dev"
	mkdir "$T/mnt"
	mount -o ro "$dev" "$T/mnt"
	[ "$(cat "$T/mnt/d/f")" = "built in place" ]
	umount "$T/mnt"
}

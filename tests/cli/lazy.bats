#!/usr/bin/env bats
# attach --lazy: the attach returns with the metadata and the tree; a
# filler brings the rest; readers wait only for what they touch.

load ../lib/common
load ../lib/attach
load ../lib/nbd

# A tree with busybox and a far file, its verity image at $T/img.
lazy_image() {
	mkdir -p "$T/tree/bin" "$T/tree/far"
	cp "$(command -v busybox)" "$T/tree/bin/busybox"
	head -c 24M /dev/urandom >"$T/tree/far/big.bin"
	printf 'the far end\n' >"$T/tree/far/zz.txt"
	run "$XIPTOOL" mkfs -q --verity -d "$T/tree" "$T/img"
	[ "$status" -eq 0 ]
	ROOT=$(sed -n 's/^root hash: //p' <<<"$output")
	[ ${#ROOT} -eq 64 ]
}

json_field() {
	"$XIPTOOL" list --json "$1" | python3 -c "import json,sys; print(json.load(sys.stdin)['segments'][0]['$2'])"
}

@test "lazy: the first exec runs while most of the image has not arrived; the fill completes byte for byte" {
	require_pull
	require_cmd busybox
	lazy_image
	nbd_start a --filter=rate file "$T/img" rate=40M
	run "$XIPTOOL" attach --lazy --root-hash "$ROOT" -n "$SEG" "$(nbd_uri a)"
	[ "$status" -eq 0 ]
	run "$XIPTOOL" exec "@$SEG" /bin/busybox echo hi
	[ "$status" -eq 0 ]
	[ "$output" = hi ]
	filled=$(json_field "$SEG" filled)
	size=$(json_field "$SEG" size)
	[ "$filled" -lt "$size" ]
	[ "$(json_field "$SEG" state)" = filling ]
	# a file at the far end, early
	run "$XIPTOOL" read "@$SEG" /far/zz.txt
	[ "$status" -eq 0 ]
	[ "$output" = "the far end" ]
	run "$XIPTOOL" save "@$SEG" "$T/out.img"
	[ "$status" -eq 0 ]
	cmp "$T/out.img" "$T/img"
	[ "$(json_field "$SEG" state)" = complete ]
	[ "$(json_field "$SEG" filled)" = "$size" ]
	[ "$(json_field "$SEG" verified)" = True ]
	run "$XIPTOOL" detach "$SEG"
	[ "$status" -eq 0 ]
	run ls -A "$T/run"
	[[ "$output" != *fill* ]]
	[ -z "$(ls -A "$T/shm")" ]
}

@test "lazy: a flipped byte of the served program with --root-hash: neither run nor read, the segment failed, detach leaves nothing" {
	require_pull
	require_cmd busybox debugfs
	lazy_image
	cp "$T/img" "$T/bad.img"
	blk=$(debugfs -R "bmap /bin/busybox 3" "$T/img" 2>/dev/null)
	[ -n "$blk" ]
	byte=$(dd if="$T/img" bs=1 skip=$((blk * 4096 + 100)) count=1 2>/dev/null | od -An -tu1 | tr -d ' ')
	printf "$(printf '\\%03o' $(((byte + 1) % 256)))" |
		dd of="$T/bad.img" bs=1 seek=$((blk * 4096 + 100)) conv=notrunc 2>/dev/null
	nbd_start a --filter=rate file "$T/bad.img" rate=4M
	run "$XIPTOOL" attach --lazy --root-hash "$ROOT" -n "$SEG" "$(nbd_uri a)"
	[ "$status" -eq 0 ]
	run "$XIPTOOL" exec "@$SEG" /bin/busybox true
	[ "$status" -ne 0 ]
	[[ "$output" == *"block $blk"* ]] || { echo "$output"; false; }
	run "$XIPTOOL" read "@$SEG" /bin/busybox
	[ "$status" -eq 3 ]
	[ "$(json_field "$SEG" state)" = failed ]
	run "$XIPTOOL" detach "$SEG"
	[ "$status" -eq 0 ]
	run ls -A "$T/run"
	[[ "$output" != *fill* ]]
	[ -z "$(ls -A "$T/shm")" ]
}

@test "lazy: server killed mid-fill: a read of a far block fails within the deadline, detach leaves nothing" {
	require_pull
	lazy_image
	nbd_start a --filter=rate file "$T/img" rate=4M
	run "$XIPTOOL" attach --lazy --timeout 3 -n "$SEG" "$(nbd_uri a)"
	[ "$status" -eq 0 ]
	kill "$(cat "$T/a.pid")"
	SECONDS=0
	run "$XIPTOOL" read "@$SEG" /far/big.bin
	[ "$status" -eq 3 ]
	# at once, with the fill's failure, not at the deadline
	[[ "$output" == *"never arrived"* ]] || { echo "$output"; false; }
	[ "$SECONDS" -le 10 ]
	[ "$(json_field "$SEG" state)" = failed ]
	run "$XIPTOOL" detach "$SEG"
	[ "$status" -eq 0 ]
	[ -z "$(ls -A "$T/shm")" ]
}

@test "lazy: list and ps show the filler; SIGTERM of the filler turns the segment failed" {
	require_pull
	lazy_image
	nbd_start a --filter=rate file "$T/img" rate=4M
	run "$XIPTOOL" attach --lazy -n "$SEG" "$(nbd_uri a)"
	[ "$status" -eq 0 ]
	pid=$(json_field "$SEG" filler)
	[ "$pid" -gt 0 ]
	[ "$(cat "/proc/$pid/comm")" = xiptool-fill ]
	[ "$pid" = "$(fill_pid "$(fill_file)")" ]
	run "$XIPTOOL" ps --noheadings "$SEG"
	[ "$status" -eq 0 ]
	grep -Eq "^[^ ]*$SEG +$pid +xiptool-fill +- +fill " <<<"$output" || { echo "$output"; false; }
	kill -TERM "$pid"
	for i in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
	[ "$(json_field "$SEG" state)" = failed ]
	[ "$(json_field "$SEG" filler)" = None ]
	run "$XIPTOOL" read "@$SEG" /far/big.bin
	[ "$status" -eq 3 ]
	run "$XIPTOOL" detach "$SEG"
	[ "$status" -eq 0 ]
}

@test "lazy: --lazy needs an NBD URI and excludes --loop" {
	run "$XIPTOOL" attach --lazy -n "$SEG" "$T/nothing.img"
	[ "$status" -eq 2 ]
	run "$XIPTOOL" attach --lazy --loop -n "$SEG" "nbd+unix:///?socket=$T/x.sock"
	[ "$status" -eq 2 ]
}

# The fill state file of the one lazy segment of the test.
fill_file() {
	local f
	for f in "$T"/run/.fill:*; do
		[ -f "$f" ] && echo "$f" && return 0
	done
	return 1
}

# The header's request counter (struct xip_fill_hdr: requests at byte 48).
fill_requests() {
	od -An -tu8 -j48 -N8 "$1" | tr -d ' '
}

@test "lazy: two readers of the same missing block are served by one request" {
	require_pull
	require_cmd busybox
	lazy_image
	nbd_start a --filter=delay file "$T/img" delay-read=400ms
	run "$XIPTOOL" attach --lazy -n "$SEG" "$(nbd_uri a)"
	[ "$status" -eq 0 ]
	ff=$(fill_file)
	before=$(fill_requests "$ff")
	"$XIPTOOL" read "@$SEG" /far/zz.txt >"$T/r1" 2>&1 &
	p1=$!
	"$XIPTOOL" read "@$SEG" /far/zz.txt >"$T/r2" 2>&1 &
	p2=$!
	wait "$p1"
	wait "$p2"
	[ "$(cat "$T/r1")" = "the far end" ]
	[ "$(cat "$T/r2")" = "the far end" ]
	# served by a request, not by the sweep, which is far behind
	[ "$(json_field "$SEG" state)" = filling ]
	after=$(fill_requests "$ff")
	[ $((after - before)) -eq 1 ]
	run "$XIPTOOL" detach "$SEG"
	[ "$status" -eq 0 ]
}

# The filler's pid in the header (struct xip_fill_hdr: pid at byte 56).
fill_pid() {
	od -An -td4 -j56 -N4 "$1" | tr -d ' '
}

filler_known() {
	local f
	f=$(fill_file) || return 1
	[ "$(fill_pid "$f")" -gt 0 ]
}

@test "lazy: SIGTERM of attach --lazy while it pulls the metadata leaves nothing" {
	require_pull
	lazy_image
	nbd_start a --filter=delay file "$T/img" delay-read=1
	"$XIPTOOL" attach --lazy -n "$SEG" "$(nbd_uri a)" >"$T/out" 2>&1 &
	pid=$!
	# the filler started: the attach is pulling the metadata through it
	wait_until 20 filler_known
	fpid=$(fill_pid "$(fill_file)")
	kill -0 "$fpid"
	sleep 0.3
	kill -0 "$pid"
	kill -TERM "$pid"
	rc=0
	wait "$pid" || rc=$?
	[ "$rc" -eq 143 ] || { cat "$T/out"; false; }
	[ "$(wc -l <"$T/out")" -le 1 ]
	wait_until 10 gone "$fpid"
	run "$XIPTOOL" list --json
	[ "$status" -eq 0 ]
	[[ "$output" != *"$SEG"* ]]
	run ls -A "$T/run"
	[[ "$output" != *fill* ]] || { echo "$output"; false; }
	[[ "$output" != *"$SEG"* ]]
	[ -z "$(ls -A "$T/shm")" ]
}

# A small verity image at $T/img (a few MiB, a far file at its end).
lazy_small() {
	mkdir -p "$T/tree/far"
	head -c 6M /dev/urandom >"$T/tree/far/big.bin"
	printf 'the far end\n' >"$T/tree/far/zz.txt"
	run "$XIPTOOL" mkfs -q --verity -d "$T/tree" "$T/img"
	[ "$status" -eq 0 ]
	ROOT=$(sed -n 's/^root hash: //p' <<<"$output")
	[ ${#ROOT} -eq 64 ]
}

@test "lazy: info and verify of a filling segment wait for the whole fill" {
	require_pull
	lazy_small
	nbd_start a --filter=rate file "$T/img" rate=4M
	run "$XIPTOOL" attach --lazy -n "$SEG" "$(nbd_uri a)"
	[ "$status" -eq 0 ]
	run "$XIPTOOL" attach --lazy -n "v$SEG" "$(nbd_uri a)"
	[ "$status" -eq 0 ]
	[ "$(json_field "$SEG" state)" = filling ]
	[ "$(json_field "v$SEG" state)" = filling ]
	# the tree's fields come from bytes that had not arrived
	run "$XIPTOOL" info "@$SEG"
	[ "$status" -eq 0 ]
	[[ "$output" == *"Verity tree:            yes"* ]] || { echo "$output"; false; }
	[ "$(json_field "$SEG" state)" = complete ]
	run "$XIPTOOL" verify --root-hash "$ROOT" "@v$SEG"
	[ "$status" -eq 0 ]
	[ "$(json_field "v$SEG" state)" = complete ]
}

@test "lazy: the plugin serves a filling segment byte for byte (nbdcopy)" {
	require_pull
	lazy_small
	nbd_start a --filter=rate file "$T/img" rate=4M
	run "$XIPTOOL" attach --lazy -n "$SEG" "$(nbd_uri a)"
	[ "$status" -eq 0 ]
	nbd_serve b image="@$SEG"
	[ "$(json_field "$SEG" state)" = filling ]
	run nbdcopy "$(nbd_uri b)" "$T/copy.img"
	[ "$status" -eq 0 ]
	cmp "$T/copy.img" "$T/img"
	nbd_stop b
}

@test "lazy: exec waits for the pages of the program's PT_LOADs, not for the rest of its file" {
	require_pull
	require_cmd busybox
	mkdir -p "$T/tree/bin"
	# 32 MiB after the ELF file's end: in no PT_LOAD
	cat "$(command -v busybox)" >"$T/tree/bin/busybox"
	head -c 32M /dev/urandom >>"$T/tree/bin/busybox"
	chmod +x "$T/tree/bin/busybox"
	run "$XIPTOOL" mkfs -q -d "$T/tree" "$T/img"
	[ "$status" -eq 0 ]
	nbd_start a --filter=rate file "$T/img" rate=4M
	run "$XIPTOOL" attach --lazy -n "$SEG" "$(nbd_uri a)"
	[ "$status" -eq 0 ]
	SECONDS=0
	run "$XIPTOOL" exec "@$SEG" /bin/busybox echo hi
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	[ "$output" = hi ]
	# the whole file would take 8 s at 4 MB/s
	[ "$SECONDS" -le 4 ]
	[ "$(json_field "$SEG" state)" = filling ]
	run "$XIPTOOL" detach "$SEG"
	[ "$status" -eq 0 ]
}

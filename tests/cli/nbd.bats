#!/usr/bin/env bats
# NBD: nbdkit with the xiptool plugin, checked with clients nobody here
# wrote (nbdinfo, nbdcopy, qemu-img, qemu-io) and with e2fsck and debugfs;
# and `xiptool attach nbd://...`, which pulls an export into a segment.

load ../lib/common
load ../lib/attach
load ../lib/nbd
load ../lib/verity

# A 32 MiB image of random files ($T/tree), one of them sparse.
make_nbd_image() {
	mkdir -p "$T/tree/dir"
	head -c 5000000 /dev/urandom > "$T/tree/big"
	head -c 70000 /dev/urandom > "$T/tree/dir/small"
	echo hello > "$T/tree/hello"
	# data, a hole of 1 MiB, data, a hole up to 3 MiB
	head -c 8192 /dev/urandom > "$T/tree/sparse"
	head -c 12288 /dev/urandom | dd of="$T/tree/sparse" bs=4096 seek=258 conv=notrunc status=none
	truncate -s 3M "$T/tree/sparse"
	mkimg "$T/img" 32M "$T/tree" -L "n$U"
}

# make_nbd_image, attached as a writable (sw) segment $SEG.
attach_nbd_image_sw() {
	make_nbd_image
	xiptool attach -t sw -n "$SEG" "$T/img"
}

# Serve $T/img with every read delayed $1 s and start pulling it as $SEG
# in the background ($apid, output in $T/attach.out); return once the
# pull has begun (the segment file exists).
slow_pull() {
	local i
	nbd_start a --filter=delay "$PLUGIN" image="$T/img" readonly=true delay-read="$1"
	"$XIPTOOL" attach -n "$SEG" "$(nbd_uri a)" >"$T/attach.out" 2>&1 &
	apid=$!
	wait_until 10 compgen -G "$T/shm/xiptool-$SEG.*" >/dev/null
}

require_qemu() {
	require_cmd qemu-img qemu-io
}

@test "8 concurrent nbdcopy clients get the image byte for byte; qemu-img agrees" {
	require_plugin
	make_nbd_image
	nbd_serve a image="$T/img" readonly=true
	uri=$(nbd_uri a)
	pids=()
	for i in 1 2 3 4 5 6 7 8; do
		nbdcopy "$uri" "$T/out$i" &
		pids+=($!)
	done
	for p in "${pids[@]}"; do
		wait "$p"
	done
	for i in 1 2 3 4 5 6 7 8; do
		cmp "$T/out$i" "$T/img"
	done
	[ "$(nbd_info_field "$uri" export-size)" = "$(stat -c %s "$T/img")" ]
	[ "$(nbd_info_field "$uri" is_read_only)" = true ]
	[ "$(nbd_info_field "$uri" can_multi_conn)" = true ]
	[ "$(nbd_info_field "$uri" block_size_preferred)" = 4096 ]
	if command -v qemu-img >/dev/null; then
		run qemu-img compare -f raw -F raw "$T/img" "$uri"
		[ "$status" -eq 0 ] || { echo "$output"; false; }
	fi
}

@test "an sr segment is served read-only: writes are refused and it stays byte-identical" {
	require_plugin
	require_qemu
	make_nbd_image
	xiptool attach -t sr -n "$SEG" "$T/img"
	nbd_serve a image="@$SEG"
	uri=$(nbd_uri a)
	[ "$(nbd_info_field "$uri" is_read_only)" = true ]
	# the server itself holds the segment read-only: every descriptor
	# of its file is O_RDONLY, every mapping of it without write access
	pid=$(cat "$T/a.pid")
	path=$(seg_col "$SEG" PATH)
	maps=$(awk -v p="$path" '$6 == p { print $2 }' "/proc/$pid/maps")
	[ -n "$maps" ]
	[ -z "$(grep w <<<"$maps")" ]
	for fd in "/proc/$pid/fd/"*; do
		[ "$(readlink "$fd")" = "$path" ] || continue
		flags=$(awk '$1 == "flags:" { print $2 }' "/proc/$pid/fdinfo/${fd##*/}")
		[ $((0$flags & 3)) -eq 0 ]
	done
	run qemu-io -f raw -c 'write -P 0x55 0 65536' "$uri"
	[[ "$output" == *"ermission"* || "$output" == *"read-only"* || "$output" == *"read only"* ]] ||
		{ echo "$output"; false; }
	head -c 1M /dev/urandom > "$T/junk"
	run nbdcopy "$T/junk" "$uri"
	[ "$status" -ne 0 ]
	nbdcopy "$uri" "$T/out"
	cmp "$T/out" "$T/img"
	cmp "$(seg_col "$SEG" PATH)" "$T/img"
}

@test "an sw segment: a file= export takes writes, they land in the file, e2fsck stays clean" {
	require_plugin
	require_qemu
	attach_nbd_image_sw
	path=$(seg_col "$SEG" PATH)
	nbd_serve a image="@$SEG" file=/big
	uri=$(nbd_uri a)
	[ "$(nbd_info_field "$uri" is_read_only)" = false ]
	[ "$(nbd_info_field "$uri" can_fua)" = true ]
	[ "$(nbd_info_field "$uri" can_multi_conn)" = false ]
	# a writer of the image: marked not clean while it serves
	[ "$(dumpe2fs_field "$path" 'Filesystem state')" = "not clean" ]
	run qemu-io -f raw -c 'write -P 0xab 4096 65536' -c 'write -z 1048576 8192' \
		-c 'write -P 0xcd -f 4999000 1000' -c flush "$uri"
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	nbd_stop a
	[ "$(dumpe2fs_field "$path" 'Filesystem state')" = clean ]
	# the expected file, written by hand
	cp "$T/tree/big" "$T/expect"
	head -c 65536 /dev/zero | tr '\0' '\253' |
		dd of="$T/expect" bs=1 seek=4096 conv=notrunc status=none
	head -c 8192 /dev/zero | dd of="$T/expect" bs=1 seek=1048576 conv=notrunc status=none
	head -c 1000 /dev/zero | tr '\0' '\315' |
		dd of="$T/expect" bs=1 seek=4999000 conv=notrunc status=none
	xiptool read "@$SEG" /big | cmp - "$T/expect"
	xiptool save "$SEG" "$T/saved"
	debugfs -R "cat /big" "$T/saved" 2>/dev/null | cmp - "$T/expect"
	fsck_clean "$T/saved"
	# nothing but the file changed
	debugfs -R "cat /dir/small" "$T/saved" 2>/dev/null | cmp - "$T/tree/dir/small"
}

@test "an sw segment: a whole export belongs to the client, which writes a new file system" {
	require_plugin
	attach_nbd_image_sw
	mkdir "$T/tree2"
	head -c 200000 /dev/urandom > "$T/tree2/other"
	mkimg "$T/img2" 32M "$T/tree2"
	nbd_serve a image="@$SEG"
	uri=$(nbd_uri a)
	[ "$(nbd_info_field "$uri" is_read_only)" = false ]
	nbdcopy --flush "$T/img2" "$uri"
	nbd_stop a
	cmp "$(seg_col "$SEG" PATH)" "$T/img2"
	xiptool read "@$SEG" /other | cmp - "$T/tree2/other"
	xiptool save "$SEG" "$T/saved"
	fsck_clean "$T/saved"
}

@test "a file= export equals the file; its holes read as zeros and are reported as holes" {
	require_plugin
	make_nbd_image
	nbd_serve a image="$T/img" file=/sparse readonly=true
	uri=$(nbd_uri a)
	nbdcopy "$uri" "$T/out"
	cmp "$T/out" "$T/tree/sparse"
	debugfs -R "cat /sparse" "$T/img" 2>/dev/null | cmp - "$T/out"
	run nbdinfo --map "$uri"
	[ "$status" -eq 0 ]
	# data 0-8K, hole to 1032K, data 12K, hole to 3M: as the kernel maps it
	[ "$(awk '{ print $1, $2, $4 }' <<<"$output")" = "0 8192 data
8192 1048576 hole,zero
1056768 12288 data
1069056 2076672 hole,zero" ] || { echo "$output"; false; }
	nbd_serve b image="$T/img" file=/dir/small readonly=true
	nbdcopy "$(nbd_uri b)" - | cmp - "$T/tree/dir/small"
}

@test "a file= export refuses writes into holes and past the end, and changes nothing" {
	require_plugin
	require_qemu
	make_nbd_image
	cp "$T/img" "$T/before"
	nbd_serve a image="$T/img" file=/sparse
	uri=$(nbd_uri a)
	run qemu-io -f raw -c 'write -P 0x11 4096 8192' "$uri"
	[[ "$output" == *"No space left"* ]] || { echo "$output"; false; }
	grep -q "/sparse: write into a hole at byte 8192: only the file's allocated blocks can be written over NBD" "$T/a.log"
	run qemu-io -f raw -c "write -P 0x11 $((3 * 1048576 - 512)) 4096" "$uri"
	[ "$status" -ne 0 ] || [[ "$output" == *"error"* || "$output" == *"ENOSPC"* || "$output" == *"No space"* || "$output" == *"out of range"* || "$output" == *"Input/output"* ]] ||
		{ echo "$output"; false; }
	# zeroing a hole needs no block
	run qemu-io -f raw -c 'write -z 65536 65536' "$uri"
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	nbd_stop a
	fsck_clean "$T/img"
	debugfs -R "cat /sparse" "$T/img" 2>/dev/null | cmp - "$T/tree/sparse"
}

@test "the plugin takes xiptool's locks: readers share, a writer excludes" {
	require_plugin
	attach_nbd_image_sw
	# two read-only exports share the segment; xiptool read too
	nbd_serve r1 image="@$SEG" readonly=true
	nbd_serve r2 image="@$SEG" file=/hello readonly=true
	[ "$(nbdcopy "$(nbd_uri r2)" -)" = hello ]
	xiptool read "@$SEG" /hello
	# ...but not a writer
	run xiptool write "@$SEG" /hello <<<"bye"
	[ "$status" -eq 3 ]
	[[ "$output" == *"busy"* ]] || { echo "$output"; false; }
	# ...and the refused writer did not end the file export
	[ "$(nbdcopy "$(nbd_uri r2)" -)" = hello ]
	run xiptool detach "$SEG"
	[ "$status" -eq 3 ]
	nbd_stop r1
	nbd_stop r2
	# a writable export excludes another server
	nbd_serve w image="@$SEG"
	run timeout 30 nbdkit -f -U "$T/x.sock" "$PLUGIN" image="@$SEG" readonly=true
	[ "$status" -eq 1 ]
	[[ "$output" == *"$SEG: busy"* ]] || { echo "$output"; false; }
}

@test "bad parameters: nbdkit's usual one-line errors at start-up" {
	require_plugin
	make_nbd_image
	run timeout 30 nbdkit -f -U "$T/x.sock" "$PLUGIN"
	[ "$status" -eq 1 ]
	[[ "$output" == *"error: the image parameter is required: image=IMAGE or image=@NAME"* ]] ||
		{ echo "$output"; false; }
	run timeout 30 nbdkit -f -U "$T/x.sock" "$PLUGIN" image="$T/nonexistent"
	[ "$status" -eq 1 ]
	[[ "$output" == *"$T/nonexistent: No such file or directory"* ]] || { echo "$output"; false; }
	run timeout 30 nbdkit -f -U "$T/x.sock" "$PLUGIN" image="@nosuch$U"
	[ "$status" -eq 1 ]
	[[ "$output" == *"nosuch$U"* ]] || { echo "$output"; false; }
	run timeout 30 nbdkit -f -U "$T/x.sock" "$PLUGIN" image="$T/img" file=/nope
	[ "$status" -eq 1 ]
	[[ "$output" == *"/nope: No such file or directory"* ]] || { echo "$output"; false; }
	run timeout 30 nbdkit -f -U "$T/x.sock" "$PLUGIN" image="$T/img" file=/dir
	[ "$status" -eq 1 ]
	[[ "$output" == *"/dir: not a regular file"* ]] || { echo "$output"; false; }
	run timeout 30 nbdkit -f -U "$T/x.sock" "$PLUGIN" image="$T/img" bogus=1
	[ "$status" -eq 1 ]
	[[ "$output" == *"unknown parameter 'bogus'"* ]] || { echo "$output"; false; }
	head -c 1M /dev/urandom > "$T/noise"
	run timeout 30 nbdkit -f -U "$T/x.sock" "$PLUGIN" image="$T/noise" file=/x
	[ "$status" -eq 1 ]
	[[ "$output" == *"$T/noise: not an ext2 file system (no ext2 superblock)"* ]] || { echo "$output"; false; }
	# the image was not left unclean by the failed writer
	[ "$(dumpe2fs_field "$T/img" 'Filesystem state')" = clean ]
	[ ! -e "$T/x.sock" ] || [ -z "$(pgrep -f "$T/x.sock")" ]
}

@test "attach nbd+unix:// pulls the export into a segment registered like any other" {
	require_pull
	make_nbd_image
	nbd_serve a image="$T/img" readonly=true
	run xiptool attach -n "$SEG" "$(nbd_uri a)"
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	[ "$output" = "$SEG" ]
	path=$(seg_col "$SEG" PATH)
	cmp "$path" "$T/img"
	[ "$(seg_col "$SEG" TYPE)" = sr ]
	[ "$(seg_col "$SEG" IMAGE)" = "$(nbd_uri a)" ]
	[ "$(seg_col "$SEG" LABEL)" = "n$U" ]
	# no image file: the caller's, read-only for sr
	[ "$(stat -c '%u %a' "$path")" = "0 400" ]
	xiptool read "@$SEG" /big | cmp - "$T/tree/big"
	run xiptool verify "@$SEG"
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	xiptool detach "$SEG"
	[ ! -e "$path" ]
	# a segment served by the plugin, pulled into another (sw) one
	xiptool attach -n "$SEG" "$T/img"
	nbd_serve b image="@$SEG"
	run xiptool attach -t sw -n "w$SEG" "$(nbd_uri b)"
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	cmp "$(seg_col "w$SEG" PATH)" "$T/img"
	[ "$(stat -c '%u %a' "$(seg_col "w$SEG" PATH)")" = "0 600" ]
	echo changed | xiptool write "@w$SEG" /hello
	[ "$(xiptool read "@w$SEG" /hello)" = changed ]
}

@test "attach nbd://HOST:PORT/EXPORT names the segment after the export" {
	require_pull
	make_nbd_image
	port=$(free_port)
	rm -f "$T/t.pid"
	nbdkit -f -i 127.0.0.1 -p "$port" --pidfile "$T/t.pid" "$PLUGIN" \
		image="$T/img" readonly=true </dev/null >"$T/t.log" 2>&1 3>&- &
	wait_until 10 test -s "$T/t.pid" || { cat "$T/t.log"; false; }
	name="root$U"
	run xiptool attach "nbd://127.0.0.1:$port/$name.img"
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	[ "$output" = "$name" ]
	cmp "$(seg_col "$name" PATH)" "$T/img"
	xiptool detach "$name"
}

@test "attach refuses an export that holds no ext2 image, leaving nothing" {
	require_pull
	head -c 4M /dev/urandom > "$T/noise"
	nbd_start a file "$T/noise"
	run xiptool attach -n "$SEG" "$(nbd_uri a)"
	[ "$status" -eq 3 ]
	[ "$output" = "xiptool attach: $(nbd_uri a): the export holds no ext2 image (no superblock magic)" ]
	[ -z "$(xiptool list --noheadings)" ]
	[ -z "$(ls "$T/shm")" ]
	# ext2 magic, broken geometry: refused after the pull
	make_nbd_image
	cp "$T/img" "$T/bad"
	printf '\377\377\377\377' | dd of="$T/bad" bs=1 seek=$((1024 + 4)) conv=notrunc status=none
	nbd_start b file "$T/bad"
	run xiptool attach -n "$SEG" "$(nbd_uri b)"
	[ "$status" -eq 3 ]
	[[ "$output" == "xiptool attach: $(nbd_uri b): superblock claims "* ]] || { echo "$output"; false; }
	[ -z "$(xiptool list --noheadings)" ]
	[ -z "$(ls "$T/shm")" ]
	# nobody listening
	run xiptool attach -n "$SEG" "nbd+unix:///?socket=$T/none.sock"
	[ "$status" -eq 3 ]
	[[ "$output" == "xiptool attach: nbd+unix:///?socket=$T/none.sock: cannot connect: "* ]] ||
		{ echo "$output"; false; }
	[ -z "$(ls "$T/shm")" ]
}

@test "a server killed mid-pull: exit 3, one clear line, no segment and no entry left" {
	require_pull
	mkdir "$T/tree"
	head -c 50M /dev/urandom > "$T/tree/big"
	mkimg "$T/img" 64M "$T/tree"
	# every read waits: 64 MiB in 1 MiB requests, 16 at a time, take 4 s
	slow_pull 1
	sleep 0.5
	kill -9 "$(cat "$T/a.pid")"
	rc=0
	wait "$apid" || rc=$?
	[ "$rc" -eq 3 ] || { cat "$T/attach.out"; false; }
	[ "$(wc -l <"$T/attach.out")" -eq 1 ]
	grep -q "^xiptool attach: $(nbd_uri a): the server went away during the pull ([0-9]* of 67108864 bytes received)$" "$T/attach.out" ||
		grep -q "^xiptool attach: $(nbd_uri a): connection lost during the pull: " "$T/attach.out" ||
		{ cat "$T/attach.out"; false; }
	[ -z "$(ls "$T/shm")" ]
	[ -z "$(xiptool list --noheadings)" ]
	[ -z "$(ls "$T/run")" ]
}

@test "a pull stopped by SIGTERM leaves nothing and reports the signal" {
	require_pull
	make_nbd_image
	slow_pull 2
	kill -TERM "$apid"
	rc=0
	wait "$apid" || rc=$?
	[ "$rc" -eq 143 ] || { cat "$T/attach.out"; false; }
	grep -q "interrupted" "$T/attach.out" || { cat "$T/attach.out"; false; }
	[ -z "$(ls "$T/shm")" ]
	[ -z "$(xiptool list --noheadings)" ]
}

@test "attach from NBD shows progress on a terminal only" {
	require_pull
	require_cmd script
	make_nbd_image
	nbd_serve a image="$T/img" readonly=true
	run xiptool attach -n "$SEG" "$(nbd_uri a)"
	[ "$output" = "$SEG" ]
	xiptool detach "$SEG"
	script -qec "'$XIPTOOL' attach -n '$SEG' '$(nbd_uri a)'" /dev/null >"$T/tty.out"
	grep -q "xiptool attach: 32/32 MiB" "$T/tty.out"
}

@test "libnbd is loaded only by attach nbd://: a broken one is a one-line error, nothing attached" {
	lib=$(lazy_lib nbd)
	[ -n "$lib" ]
	run unshare -m sh -c 'mount --bind /dev/null "$1" && exec "$2" attach -n lazy "nbd+unix:///x?socket=$3"' \
		sh "$lib" "$XIPTOOL" "$T/none.sock"
	echo "$output"
	[ "$status" -eq 3 ]
	[ "${#lines[@]}" -eq 1 ]
	[[ "$output" == *"cannot load ${lib##*/}: "* ]]
	run "$XIPTOOL" list --noheadings lazy
	[ "$status" -eq 3 ]
	[[ "$output" == *"no attached segment of that name"* ]]
}

@test "the export of @NAME has the image's size, not the padded segment's; attach nbd:// records it" {
	require_pull
	mkdir "$T/tree"
	echo hello > "$T/tree/hello"
	mkimg "$T/img" 2204K "$T/tree"
	want=$(stat -c %s "$T/img")
	xiptool attach -n "$SEG" "$T/img"
	path=$(seg_col "$SEG" PATH)
	# the segment file is padded to whole 2 MiB sections
	[ "$(stat -c %s "$path")" -gt "$want" ]
	[ "$(seg_col "$SEG" SIZE)" = "$want" ]
	nbd_serve a image="@$SEG" readonly=true
	uri=$(nbd_uri a)
	[ "$(nbdinfo --size "$uri")" = "$want" ]
	nbdcopy "$uri" "$T/out"
	cmp "$T/out" "$T/img"
	run xiptool attach -n "p$SEG" "$uri"
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	[ "$(seg_col "p$SEG" SIZE)" = "$want" ]
	xiptool save "p$SEG" "$T/saved"
	cmp "$T/saved" "$T/img"
	# a writable segment's whole export too
	nbd_stop a
	xiptool attach -t sw -n "w$SEG" "$T/img"
	nbd_serve b image="@w$SEG"
	[ "$(nbdinfo --size "$(nbd_uri b)")" = "$want" ]
}

# A small image ($T/img) for the stall tests.
make_small_image() {
	mkdir -p "$T/tree"
	head -c 300000 /dev/urandom > "$T/tree/data"
	mkimg "$T/img" 8M "$T/tree"
}

@test "attach --timeout takes whole seconds from 1 to 86400" {
	for bad in 0 -1 1.5 x 86401; do
		run xiptool attach --timeout "$bad" -n "$SEG" nbd://localhost/
		[ "$status" -eq 2 ]
		[[ "${lines[0]}" == *--timeout* ]]
	done
	no_segfile "$SEG"
}

@test "a server that stalls in the handshake, on the superblock or in block status: exit 3 within the stall limit, nothing left" {
	require_pull
	make_small_image
	mute_server m
	for step in handshake superblock status mute; do
		if [ "$step" = mute ]; then
			uri=$(nbd_uri m)
			what=handshake
		else
			stall_server "$step" "$step"
			uri=$(nbd_uri "$step")
			what=$step
		fi
		[ "$what" != superblock ] || what="superblock read"
		[ "$what" != status ] || what="block status"
		"$XIPTOOL" attach --timeout 2 -n "$SEG" "$uri" \
			>"$T/attach.out" 2>&1 &
		apid=$!
		# a hang guard, not a measure: the stall limit ends it
		wait_exit "$apid" 120
		cat "$T/attach.out"
		[ "$rc" -eq 3 ]
		[ "$(cat "$T/attach.out")" = "xiptool attach: $uri: $what: no complete reply from the server for 2 s" ]
		# the server had the step's request: it was given up waiting
		[ "$(stall_events "$step")" -ge 1 ]
		nothing_left
	done
}

@test "SIGINT and SIGTERM stop an attach stalled in the handshake, on the superblock or in block status at once, leaving nothing" {
	require_pull
	make_small_image
	mute_server m
	for step in handshake superblock status; do
		stall_server "$step" "$step"
	done
	for sig in INT TERM; do
		for step in mute handshake superblock status; do
			if [ "$step" = mute ]; then
				uri=$(nbd_uri m)
			else
				uri=$(nbd_uri "$step")
			fi
			env --default-signal=INT "$XIPTOOL" attach -n "$SEG" "$uri" \
				>"$T/attach.out" 2>&1 &
			apid=$!
			# stalled: the claim made (block status) or a moment passed
			if [ "$step" = status ]; then
				for i in $(seq 200); do
					if ! no_segfile "$SEG" "$T/shm" >/dev/null; then
						break
					fi
					sleep 0.05
				done
				run no_segfile "$SEG" "$T/shm"
				[ "$status" -ne 0 ]
			fi
			sleep 1
			kill -0 "$apid"
			kill -"$sig" "$apid"
			wait_exit "$apid" 3
			cat "$T/attach.out"
			if [ "$sig" = INT ]; then
				[ "$rc" -eq 130 ]
			else
				[ "$rc" -eq 143 ]
			fi
			[ "$(cat "$T/attach.out")" = "xiptool attach: $uri: interrupted" ]
			nothing_left
		done
	done
}

# An image whose /x holds 64 KiB of 'p' (public), for the lease tests.
make_public_image() {
	mkdir -p "$T/tree"
	head -c 65536 /dev/zero | tr '\0' p > "$T/tree/x"
	mkimg "$1" 8M "$T/tree"
	head -c 65536 /dev/zero | tr '\0' S > "$T/secret"
}

# The export $1 no longer serves: reads and block status fail, and what
# was read holds no byte of the secret.
export_ended() {
	rm -f "$T/out"
	run nbdcopy "$1" "$T/out"
	[ "$status" -ne 0 ]
	[ -z "$(tr -d p <"$T/out" 2>/dev/null | tr -d '\0' | head -c 1)" ]
	run nbdinfo --map "$1"
	[ "$status" -ne 0 ]
}

@test "a read-only file= export ends when the image is opened for writing: a loop device bound later leaks no other file's blocks" {
	require_plugin
	require_loop
	make_public_image "$T/img"
	# nbdkit forks into the background, as it does by default (its
	# messages kept on stderr)
	nbdkit -v --log=stderr -U "$T/a.sock" --pidfile "$T/a.pid" "$PLUGIN" \
		image="$T/img" file=/x readonly=true </dev/null >"$T/a.log" 2>&1 3>&-
	uri=$(nbd_uri a)
	nbdcopy "$uri" - | cmp - "$T/tree/x"
	[ "$(grep -c "opened for writing by another process" "$T/a.log")" -eq 0 ]
	dev=$(losetup -f --show "$T/img")
	# the writer was let go by the plugin, which logs it first, not by
	# the kernel's lease-break time
	[ "$(grep -c "^nbdkit: error: $T/img: opened for writing by another process: /x is no longer served (its blocks may change)$" "$T/a.log")" -eq 1 ]
	xiptool truncate "$dev" /x 0
	xiptool write --create "$dev" /secret "$T/secret"
	losetup -d "$dev"
	debugfs -R "cat /secret" "$T/img" 2>/dev/null | cmp - "$T/secret"
	export_ended "$uri"
	# the image as it is now is served again by a new export
	nbd_start b "$PLUGIN" image="$T/img" file=/secret readonly=true
	nbdcopy "$(nbd_uri b)" - | cmp - "$T/secret"
	# a kernel mount through a loop device is a writer too
	make_public_image "$T/img2"
	nbd_start c "$PLUGIN" image="$T/img2" file=/x readonly=true
	uri=$(nbd_uri c)
	nbdcopy "$uri" - | cmp - "$T/tree/x"
	mkdir "$T/mnt"
	mount -o loop "$T/img2" "$T/mnt"
	truncate -s 0 "$T/mnt/x"
	cp "$T/secret" "$T/mnt/secret"
	umount "$T/mnt"
	export_ended "$uri"
	grep -q "^nbdkit: error: $T/img2: opened for writing by another process: /x is no longer served (its blocks may change)$" "$T/c.log"
	grep -q "/x is no longer served: the image was opened for writing" "$T/c.log"
}

@test "a read-only file= export refuses to start while the image is open for writing; a read-only loop device is no writer" {
	require_plugin
	require_loop
	make_public_image "$T/img"
	dev=$(losetup -f --show "$T/img")
	run timeout 30 nbdkit -f -U "$T/x.sock" "$PLUGIN" image="$T/img" file=/x readonly=true
	losetup -d "$dev"
	[ "$status" -eq 1 ]
	[[ "$output" == *"error: $T/img: open for writing elsewhere (a loop device bound read-write, a writer): a read-only file= export needs every writer gone"* ]] ||
		{ echo "$output"; false; }
	dev=$(losetup -r -f --show "$T/img")
	nbd_start a "$PLUGIN" image="$T/img" file=/x readonly=true
	run nbdcopy "$(nbd_uri a)" "$T/out"
	losetup -d "$dev"
	[ "$status" -eq 0 ]
	cmp "$T/out" "$T/tree/x"
	# readers do not end it
	xiptool read "$T/img" /x | cmp - "$T/tree/x"
	nbdcopy "$(nbd_uri a)" - | cmp - "$T/tree/x"
	# nor does an xiptool writer, which finds the image busy first
	run xiptool write "$T/img" /x <<<"bye"
	[ "$status" -eq 3 ]
	[ "$output" = "xiptool write: $T/img: busy: another xiptool holds it open" ]
	nbdcopy "$(nbd_uri a)" - | cmp - "$T/tree/x"
}

@test "root-hash= refuses bytes after the verity tree, as attach --root-hash does; the exact image is served whole" {
	require_pull
	vt_tree
	vt_mkfs "$T/vimg"
	size=$(stat -c %s "$T/vimg")
	cat "$T/vimg" > "$T/long"
	head -c 8192 /dev/urandom >> "$T/long"
	run timeout 30 nbdkit -f -U "$T/x.sock" "$PLUGIN" image="$T/long" root-hash="$ROOT"
	[ "$status" -eq 1 ]
	[[ "$output" == *"error: $T/long: 8192 bytes after the verity tree (it ends at $size)"* ]] ||
		{ echo "$output"; false; }
	run xiptool attach --root-hash "$ROOT" -n "$SEG" "$T/long"
	[ "$status" -eq 3 ]
	[ "$output" = "xiptool attach: $T/long: 8192 bytes after the verity tree (it ends at $size)" ]
	# an unverified segment holding them: refused the same way
	xiptool attach -n "$SEG" "$T/long"
	run timeout 30 nbdkit -f -U "$T/x.sock" "$PLUGIN" image="@$SEG" root-hash="$ROOT"
	[ "$status" -eq 1 ]
	[[ "$output" == *"8192 bytes after the verity tree (it ends at $size)"* ]] ||
		{ echo "$output"; false; }
	xiptool detach "$SEG"
	nbd_serve a image="$T/vimg" root-hash="$ROOT"
	[ "$(nbdinfo --size "$(nbd_uri a)")" = "$size" ]
	nbdcopy "$(nbd_uri a)" - | cmp - "$T/vimg"
}

@test "root-hash=: a writer after the check ends the export, and none may be there at its start" {
	require_plugin
	require_loop
	vt_tree
	vt_mkfs "$T/vimg"
	nbd_serve a image="$T/vimg" root-hash="$ROOT"
	uri=$(nbd_uri a)
	nbdcopy "$uri" - | cmp - "$T/vimg"
	# a byte of busybox changed in place, after the check
	vt_flip "$T/vimg" "$(vt_offset "$T/vimg" data)"
	run nbdcopy "$uri" "$T/out"
	[ "$status" -ne 0 ]
	grep -q "^nbdkit: error: $T/vimg: opened for writing by another process: the verified image is no longer served (its blocks may change)$" "$T/a.log"
	grep -q "the verified image is no longer served: the image was opened for writing" "$T/a.log"
	nbd_stop a
	# the changed image does not start again
	run timeout 30 nbdkit -f -U "$T/x.sock" "$PLUGIN" image="$T/vimg" root-hash="$ROOT"
	[ "$status" -eq 1 ]
	[[ "$output" == *"(/bin/busybox): does not match its hash"* ]] || { echo "$output"; false; }
	vt_flip "$T/vimg" "$(vt_offset "$T/vimg" data)"
	# a writer at the start: refused; a read-only loop device is none
	dev=$(losetup -f --show "$T/vimg")
	run timeout 30 nbdkit -f -U "$T/x.sock" "$PLUGIN" image="$T/vimg" root-hash="$ROOT"
	[ "$status" -eq 1 ]
	[[ "$output" == *"error: $T/vimg: open for writing elsewhere (a loop device bound read-write, a writer): root-hash= needs every writer gone"* ]] ||
		{ echo "$output"; false; }
	# ...and the writable device itself is not served either
	run timeout 30 nbdkit -f -U "$T/x.sock" "$PLUGIN" image="$dev" root-hash="$ROOT"
	losetup -d "$dev"
	[ "$status" -eq 1 ]
	[[ "$output" == *"error: $dev: a writable block device may change after the check: root-hash= needs it read-only (losetup -r, blockdev --setro)"* ]] ||
		{ echo "$output"; false; }
	dev=$(losetup -r -f --show "$T/vimg")
	nbd_serve b image="$dev" root-hash="$ROOT"
	run nbdcopy "$(nbd_uri b)" "$T/out"
	nbd_stop b
	losetup -d "$dev"
	[ "$status" -eq 0 ]
	cmp "$T/out" "$T/vimg"
}

@test "a server that trickles its replies a byte at a time: attach --timeout gives up with exit 3, nothing left; SIGTERM stops it at once" {
	require_pull
	make_small_image
	nbd_start a file "$T/img"
	# the handshake, the superblock and block status go through whole;
	# the first read's reply trickles, a byte every 0.1 s
	trickle_server t "$T/a.sock" 16384
	uri=$(nbd_uri t)
	"$XIPTOOL" attach --timeout 2 -n "$SEG" "$uri" >"$T/attach.out" 2>&1 &
	apid=$!
	# a hang guard, not a measure: the stall limit ends it
	wait_exit "$apid" 60
	cat "$T/attach.out"
	[ "$rc" -eq 3 ]
	[ "$(cat "$T/attach.out")" = "xiptool attach: $uri: pull: no complete reply from the server for 2 s" ]
	# bytes kept coming all along: the reply was trickling, not stalled
	[ "$(wc -l <"$T/t.trickled")" -ge 2 ]
	nothing_left
	# a stop signal in the middle of a trickle, through a fresh server (the
	# give-up above left reads in flight there: nbdkit 1.32 may abort on
	# such a disconnect, raw_send_socket)
	nbd_stop a
	nbd_start a file "$T/img"
	: >"$T/t.trickled"
	"$XIPTOOL" attach -n "$SEG" "$uri" >"$T/attach.out" 2>&1 &
	apid=$!
	wait_until 60 test -s "$T/t.trickled"
	kill -TERM "$apid"
	wait_exit "$apid" 60
	[ "$rc" -eq 143 ]
	[ "$(cat "$T/attach.out")" = "xiptool attach: $uri: interrupted" ]
	nothing_left
}

@test "a pull reserves the segment's memory as it asks for bytes: halfway, far less than the whole; all of it once done" {
	require_pull
	use_test_hooks
	require_test_hooks
	mkdir -p "$T/tree"
	head -c 1M /dev/urandom > "$T/tree/data"
	mkimg "$T/img" 256M "$T/tree"
	want=$((256 << 20))
	[ "$(stat -c %s "$T/img")" -eq "$want" ]
	# nbdkit's file plugin reports the image's holes as zeros
	nbd_start a file "$T/img"
	uri=$(nbd_uri a)
	rm -f "$T/paused"
	XIPTOOL_TEST_ATTACH_PAUSE=$T/paused "$XIPTOOL" attach -n "$SEG" "$uri" \
		>"$T/attach.out" 2>&1 &
	apid=$!
	wait_until 60 test -e "$T/paused"
	seg=$(compgen -G "$T/shm/xiptool-$SEG.*")
	[ "$(stat -c %s "$seg")" -eq "$want" ]
	held=$(($(stat -c '%b * %B' "$seg")))
	echo "reserved halfway: $held of $want bytes"
	[ "$held" -gt 0 ]
	[ "$held" -le $((want / 4)) ]
	kill -TERM "$apid"
	wait_exit "$apid" 60
	[ "$rc" -eq 143 ]
	nothing_left
	# a pull that succeeds has the whole segment reserved
	nbd_start b file "$T/img"
	run xiptool attach -n "$SEG" "$(nbd_uri b)"
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	seg=$(seg_col "$SEG" PATH)
	[ "$(($(stat -c '%b * %B' "$seg")))" -ge "$want" ]
	cmp "$seg" "$T/img"
}

# nbdkit -U - PLUGIN PARAMS... --run 'nbdinfo --size "$uri"', bounded:
# nbdkit's own idiom must end once its command has ($output, $status).
nbd_run_size() {
	run timeout -k 5 30 nbdkit -U - "$PLUGIN" "$@" \
		--run 'nbdinfo --size "$uri"'
}

@test "nbdkit --run ends with every export form: whole, file=, @NAME, readonly=true, root-hash=" {
	local root size served n=0 form
	require_plugin
	mkdir -p "$T/tree"
	echo hello > "$T/tree/hello"
	root=$(xiptool mkfs -q --verity -d "$T/tree" "$T/img" |
		sed -n 's/^root hash: //p')
	[ -n "$root" ]
	size=$(stat -c %s "$T/img")
	xiptool attach -n "$SEG" "$T/img"
	# root-hash=: what a server started without --run serves (first:
	# a writable export marks the image's superblock)
	for form in "image=$T/img" "image=@$SEG"; do
		nbd_serve "r$n" $form root-hash="$root"
		served=$(nbdinfo --size "$(nbd_uri "r$n")")
		nbd_stop "r$n"
		nbd_run_size $form root-hash="$root"
		echo "$form root-hash=: $status: $output"
		[ "$status" -eq 0 ]
		[ "$output" = "$served" ]
		n=$((n + 1))
	done
	# the size each form must report: the image's, the file's
	for form in "$size image=$T/img" \
		"$size image=$T/img readonly=true" \
		"6 image=$T/img file=/hello" \
		"6 image=$T/img file=/hello readonly=true" \
		"$size image=@$SEG" \
		"6 image=@$SEG file=/hello"; do
		nbd_run_size ${form#* }
		echo "${form#* }: $status: $output"
		[ "$status" -eq 0 ]
		[ "$output" = "${form%% *}" ]
		n=$((n + 1))
	done
	xiptool detach "$SEG"
}

#!/usr/bin/env bats
# Verified images: mkfs --verity against veritysetup, e2fsck and the
# kernel; verify --root-hash and info; attach --root-hash.

load ../lib/common
load ../lib/attach
load ../lib/nbd
load ../lib/verity

bats_require_minimum_version 1.5.0

setup() {
	nbd_setup
	require_cmd veritysetup debugfs
	vt_tree
}

teardown() { nbd_teardown; }

@test "mkfs --verity: veritysetup verify accepts the tree at the file system's end" {
	vt_mkfs "$T/img"
	fsb=$(vt_fs_bytes "$T/img")
	run veritysetup verify "$T/img" "$T/img" "$ROOT" --hash-offset="$fsb"
	echo "$output"
	[ "$status" -eq 0 ]
	run veritysetup dump "$T/img" --hash-offset="$fsb"
	grepq -x 'Hash algorithm:[[:space:]]*sha256' <<<"$output"
	grepq -x 'Data block size:[[:space:]]*4096' <<<"$output"
	grepq -x "Data blocks:[[:space:]]*$((fsb / 4096))" <<<"$output"
}

@test "mkfs --verity: veritysetup format of the same data and salt gives the same root hash" {
	vt_mkfs "$T/img"
	fsb=$(vt_fs_bytes "$T/img")
	salt=$(veritysetup dump "$T/img" --hash-offset="$fsb" | awk '/^Salt:/ { print $2 }')
	[ ${#salt} -eq 64 ]
	head -c "$fsb" "$T/img" > "$T/data"
	run veritysetup format "$T/data" "$T/hash" --salt="$salt" \
		--data-block-size=4096 --hash-block-size=4096
	echo "$output"
	[ "$status" -eq 0 ]
	grepq -x "Root hash:[[:space:]]*$ROOT" <<<"$output"
	# the tree itself is veritysetup's byte for byte (but the UUID)
	tail -c +$((fsb + 4097)) "$T/img" > "$T/ours"
	tail -c +4097 "$T/hash" > "$T/theirs"
	cmp "$T/ours" "$T/theirs"
}

@test "mkfs --verity: e2fsck -fn clean, the kernel mounts it (ext2 and ext4), verify clean" {
	require_loop
	vt_mkfs "$T/img"
	fsck_clean "$T/img"
	for fs in ext2 ext4; do
		loop_mount "$T/img" "$fs"
		cmp "$T/mnt/bin/busybox" "$T/tree/bin/busybox"
		loop_umount
	done
	run xiptool verify --root-hash "$ROOT" "$T/img"
	echo "$output"
	[ "$status" -eq 0 ]
	grepq '^verity: every block matches' <<<"$output"
}

@test "mkfs --verity: reproducible with SOURCE_DATE_EPOCH; --salt; random otherwise; --root-hash-file" {
	vt_mkfs "$T/a"
	a=$ROOT
	vt_mkfs "$T/b" --root-hash-file "$T/rh"
	cmp "$T/a" "$T/b"
	[ "$(cat "$T/rh")" = "$a" ]
	run xiptool mkfs -q --verity -d "$T/tree" "$T/c"
	[ "$status" -eq 0 ]
	c=$(sed -n 's/^root hash: //p' <<<"$output")
	run xiptool mkfs -q --verity -d "$T/tree" "$T/d"
	[ "$status" -eq 0 ]
	d=$(sed -n 's/^root hash: //p' <<<"$output")
	[[ "$c" =~ ^[0-9a-f]{64}$ ]]
	[[ "$d" =~ ^[0-9a-f]{64}$ ]]
	[ "$c" != "$d" ]
	vt_mkfs "$T/e" --salt 00112233
	fsb=$(vt_fs_bytes "$T/e")
	run veritysetup dump "$T/e" --hash-offset="$fsb"
	grepq -x 'Salt:[[:space:]]*00112233' <<<"$output"
	run veritysetup verify "$T/e" "$T/e" "$ROOT" --hash-offset="$fsb"
	[ "$status" -eq 0 ]
}

@test "mkfs --verity: usage errors" {
	run xiptool mkfs --salt 00 -d "$T/tree" "$T/img"
	[ "$status" -eq 2 ]
	run xiptool mkfs --verity --salt 0g -d "$T/tree" "$T/img"
	[ "$status" -eq 2 ]
	[ ! -e "$T/img" ]
}

@test "mkfs --verity --page-size 16K and 64K: veritysetup verifies them" {
	for ps in 16K 64K; do
		vt_mkfs "$T/img$ps" --page-size "$ps"
		fsb=$(vt_fs_bytes "$T/img$ps")
		run veritysetup verify "$T/img$ps" "$T/img$ps" "$ROOT" --hash-offset="$fsb"
		echo "$ps: $output"
		[ "$status" -eq 0 ]
		run xiptool verify --page-size "$ps" --root-hash "$ROOT" "$T/img$ps"
		echo "$output"
		[ "$status" -eq 0 ]
	done
}

@test "info shows the verity tree: offset, algorithm, block sizes, salt" {
	vt_mkfs "$T/img" --salt abcdef
	fsb=$(vt_fs_bytes "$T/img")
	run xiptool info "$T/img"
	[ "$status" -eq 0 ]
	[ "$(info_field "$output" 'Verity tree')" = yes ]
	[ "$(info_field "$output" 'Verity offset')" = "$fsb" ]
	[ "$(info_field "$output" 'Verity algorithm')" = sha256 ]
	[ "$(info_field "$output" 'Verity hash block size')" = 4096 ]
	[ "$(info_field "$output" 'Verity salt')" = abcdef ]
	mkimg "$T/plain" 4M
	run xiptool info "$T/plain"
	[ "$(info_field "$output" 'Verity tree')" = no ]
}

# verify_bad KIND WHAT: verify --root-hash of a copy with one bit flipped
# in KIND exits 1 and names WHAT.
verify_bad() {
	cp "$T/img" "$T/bad"
	vt_flip "$T/bad" "$(vt_offset "$T/img" "$1")"
	run xiptool verify --root-hash "$ROOT" "$T/bad"
	echo "$1: $output"
	[ "$status" -eq 1 ]
	grepq -F "$2" <<<"$output"
	run xiptool verify --json --root-hash "$ROOT" "$T/bad"
	[ "$status" -eq 1 ]
	grepq '"verity": false' <<<"$output"
	grepq '"object": "verity"' <<<"$output"
}

@test "verify --root-hash: one flipped bit in file data, free space, superblock, hash block, verity superblock" {
	vt_mkfs "$T/img"
	blk=$(debugfs -R "bmap /bin/busybox 10" "$T/img" 2>/dev/null)
	verify_bad data "block $blk (/bin/busybox): does not match its hash"
	verify_bad free "(free space): does not match its hash"
	verify_bad super "block 0 (metadata): does not match its hash"
	verify_bad hash "hash block"
	verify_bad vsb "the root hash does not match"
	run xiptool verify --json --root-hash "$ROOT" "$T/img"
	[ "$status" -eq 0 ]
	grepq '"verity": true' <<<"$output"
}

@test "verify --root-hash: a wrong root hash, no tree, a truncated tree" {
	vt_mkfs "$T/img"
	wrong=$(printf '%s' "$ROOT" | tr 0-9a-f 1-9a-f0)
	run xiptool verify --root-hash "$wrong" "$T/img"
	echo "$output"
	[ "$status" -eq 1 ]
	grepq 'root hash does not match' <<<"$output"
	head -c -4096 "$T/img" > "$T/short"
	run xiptool verify --root-hash "$ROOT" "$T/short"
	echo "$output"
	[ "$status" -eq 1 ]
	grepq 'truncated' <<<"$output"
	mkimg "$T/plain" 4M
	run xiptool verify --root-hash "$ROOT" "$T/plain"
	echo "$output"
	[ "$status" -eq 1 ]
	grepq 'no verity superblock' <<<"$output"
	run xiptool verify --root-hash xyz "$T/img"
	[ "$status" -eq 2 ]
}

# attach_bad SOURCE: attach --root-hash of SOURCE exits 3 with one line
# naming a bad block, and leaves no record, segment file or loop device.
attach_bad() {
	run xiptool attach --loop --root-hash "$ROOT" -n "$SEG" "$1"
	echo "$1: $output"
	[ "$status" -eq 3 ]
	[ "${#lines[@]}" -eq 1 ]
	grepq -E 'block [0-9]+|root hash does not match' <<<"$output"
	run xiptool list --noheadings "$SEG"
	[ "$status" -eq 3 ]
	no_segfile "$SEG" "$T/shm"
	[ -z "$(ls -A "$T/run" 2>/dev/null | grep -v '^\.' || true)" ]
	# no loop device backed by a file of $T/shm (a deleted one included)
	run -0 losetup -l -n -O BACK-FILE
	[[ "$output" != *"$T/shm/"* ]]
}

@test "attach --root-hash: a verified segment is sealed, listed as verified, runs and reads" {
	vt_mkfs "$T/img"
	run xiptool attach --root-hash "$ROOT" -n "$SEG" "$T/img"
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$(seg_col "$SEG" VERIFIED)" = 1 ]
	run xiptool list
	grepq -w VERIFIED <<<"$output"
	run xiptool list --json "$SEG"
	grepq '"verified": true' <<<"$output"
	path=$(seg_col "$SEG" PATH)
	lsattr "$path" | grepq '^----i'
	# root cannot open it for writing
	run "$PY" -c "import os, sys; os.open(sys.argv[1], os.O_RDWR)" "$path"
	[ "$status" -ne 0 ]
	grepq 'Operation not permitted' <<<"$output"
	run xiptool exec "@$SEG" /bin/busybox echo verified
	[ "$status" -eq 0 ]
	[ "$output" = verified ]
	xiptool read "@$SEG" /hello.txt | cmp - "$T/tree/hello.txt"
	run xiptool verify --root-hash "$ROOT" "@$SEG"
	echo "$output"
	[ "$status" -eq 0 ]
	# the image, then the segment's padding to 2 MiB
	head -c "$(stat -c %s "$T/img")" "$path" | cmp - "$T/img"
	xiptool detach --save "$T/saved" "$SEG"
	cmp "$T/saved" "$T/img"
	no_segfile "$SEG" "$T/shm"
	# a plain attach is not verified, and detach removes a sealed one
	xiptool attach -n "$SEG" "$T/img"
	[ "$(seg_col "$SEG" VERIFIED)" = 0 ]
	xiptool detach "$SEG"
	xiptool attach --root-hash "$ROOT" -n "$SEG" "$T/img"
	xiptool detach "$SEG"
	no_segfile "$SEG" "$T/shm"
}

@test "list: a verified segment unsealed and rewritten, resealed, or replaced is no longer verified" {
	require_cmd chattr
	vt_mkfs "$T/img"
	xiptool attach --root-hash "$ROOT" -n "$SEG" "$T/img"
	[ "$(seg_col "$SEG" VERIFIED)" = 1 ]
	path=$(seg_col "$SEG" PATH)
	off=$(vt_offset "$T/img" data)
	# the seal removed and a byte rewritten
	chattr -i "$path"
	vt_flip "$path" "$off"
	[ "$(seg_col "$SEG" VERIFIED)" = 0 ]
	run xiptool list --json "$SEG"
	[ "$status" -eq 0 ]
	grepq '"verified": false' <<<"$output"
	# sealed again over the changed bytes: the seal is not the check's
	chattr +i "$path"
	[ "$(seg_col "$SEG" VERIFIED)" = 0 ]
	run xiptool list --json "$SEG"
	[ "$status" -eq 0 ]
	grepq '"verified": false' <<<"$output"
	xiptool detach "$SEG"
	# another file, sealed, in the segment file's place: not verified
	xiptool attach --root-hash "$ROOT" -n "$SEG" "$T/img"
	path=$(seg_col "$SEG" PATH)
	cp "$path" "$T/copy"
	chattr -i "$path"
	mv "$T/copy" "$path"
	chattr +i "$path"
	run xiptool list --json
	[ "$status" -eq 0 ]
	if grepq '"verified": true' <<<"$output"; then false; fi
	chattr -i "$path"
	rm -f "$path"
}

@test "attach --root-hash from gzip and nbd:// (nbdkit's file plugin)" {
	require_pull
	vt_mkfs "$T/img"
	gzip -c "$T/img" > "$T/img.gz"
	xiptool attach --root-hash "$ROOT" -n "$SEG" "$T/img.gz"
	head -c "$(stat -c %s "$T/img")" "$(seg_col "$SEG" PATH)" | cmp - "$T/img"
	xiptool detach "$SEG"
	nbdkit -U "$T/f.sock" --pidfile "$T/f.pid" -r file "$T/img"
	xiptool attach --root-hash "$ROOT" -n "$SEG" "nbd+unix:///?socket=$T/f.sock"
	[ "$(seg_col "$SEG" VERIFIED)" = 1 ]
	xiptool detach "$SEG"
}

@test "attach --root-hash refuses one flipped bit anywhere, from a file, gzip and nbd://, leaving nothing" {
	require_pull
	require_loop
	vt_mkfs "$T/img"
	for kind in data free super hash vsb; do
		cp "$T/img" "$T/bad-$kind"
		vt_flip "$T/bad-$kind" "$(vt_offset "$T/img" "$kind")"
		attach_bad "$T/bad-$kind"
		gzip -c "$T/bad-$kind" > "$T/bad-$kind.gz"
		attach_bad "$T/bad-$kind.gz"
		nbdkit -U "$T/$kind.sock" --pidfile "$T/$kind.pid" -r file "$T/bad-$kind"
		attach_bad "nbd+unix:///?socket=$T/$kind.sock"
	done
	blk=$(debugfs -R "bmap /bin/busybox 10" "$T/img" 2>/dev/null)
	run xiptool attach --root-hash "$ROOT" -n "$SEG" "$T/bad-data"
	[ "$output" = "xiptool attach: $T/bad-data: block $blk (/bin/busybox): does not match its hash in the verity tree" ]
}

@test "attach --root-hash: a wrong hash, no tree, a truncated tree are refused; writable types are usage errors" {
	vt_mkfs "$T/img"
	wrong=$(printf '%s' "$ROOT" | tr 0-9a-f 1-9a-f0)
	run xiptool attach --root-hash "$wrong" -n "$SEG" "$T/img"
	[ "$status" -eq 3 ]
	grepq 'root hash does not match' <<<"$output"
	head -c -4096 "$T/img" > "$T/short"
	run xiptool attach --root-hash "$ROOT" -n "$SEG" "$T/short"
	echo "$output"
	[ "$status" -eq 3 ]
	grepq truncated <<<"$output"
	mkimg "$T/plain" 4M
	run xiptool attach --root-hash "$ROOT" -n "$SEG" "$T/plain"
	[ "$status" -eq 3 ]
	grepq 'no verity superblock' <<<"$output"
	cat "$T/img" "$T/plain" > "$T/long"
	run xiptool attach --root-hash "$ROOT" -n "$SEG" "$T/long"
	echo "$output"
	[ "$status" -eq 3 ]
	grepq 'after the verity tree' <<<"$output"
	no_segfile "$SEG" "$T/shm"
	for t in sw ew sn; do
		run xiptool attach -t "$t" --root-hash "$ROOT" -n "$SEG" "$T/img"
		[ "$status" -eq 2 ]
	done
	run xiptool attach --raw --root-hash "$ROOT" -n "$SEG" "$T/img"
	[ "$status" -eq 2 ]
	run xiptool attach --root-hash 12z -n "$SEG" "$T/img"
	[ "$status" -eq 2 ]
	# hugetlbfs has no immutable flag: refused, not left unsealed
	run xiptool attach --hugepages --root-hash "$ROOT" -n "$SEG" "$T/img"
	echo "$output"
	[ "$status" -eq 2 ]
	grepq -- '--root-hash and --hugepages exclude each other: hugetlbfs cannot seal' <<<"$output"
	no_segfile "$SEG" "$T/shm"
	xiptool attach -t er --root-hash "$ROOT" -n "$SEG" "$T/img"
	xiptool detach "$SEG"
}

@test "trees veritysetup made with sha1 and sha512: info, verify and attach (file, gzip, nbd://) take them, and refuse one flipped bit" {
	require_pull
	require_loop
	for alg in sha1 sha512; do
		img=$T/$alg.img
		vt_veritysetup "$img" "$alg"
		case $alg in
		sha1) [ ${#ROOT} -eq 40 ] ;;
		sha512) [ ${#ROOT} -eq 128 ] ;;
		esac
		run xiptool info "$img"
		[ "$(info_field "$output" 'Verity algorithm')" = "$alg" ]
		run xiptool verify --root-hash "$ROOT" "$img"
		echo "$output"
		[ "$status" -eq 0 ]
		grepq -F ", $alg)" <<<"$output"
		gzip -c "$img" > "$img.gz"
		nbdkit -U "$T/$alg.sock" --pidfile "$T/$alg.pid" -r file "$img"
		for src in "$img" "$img.gz" "nbd+unix:///?socket=$T/$alg.sock"; do
			run xiptool attach --root-hash "$ROOT" -n "$SEG" "$src"
			echo "$src: $output"
			[ "$status" -eq 0 ]
			[ "$(seg_col "$SEG" VERIFIED)" = 1 ]
			head -c "$(stat -c %s "$img")" "$(seg_col "$SEG" PATH)" | cmp - "$img"
			xiptool detach "$SEG"
		done
		for kind in data hash; do
			bad=$T/bad-$alg-$kind
			cp "$img" "$bad"
			vt_flip "$bad" "$(vt_offset "$img" "$kind")"
			run xiptool verify --root-hash "$ROOT" "$bad"
			echo "$output"
			[ "$status" -eq 1 ]
			case $kind in
			data) grepq -F "(/bin/busybox): does not match its hash" <<<"$output" ;;
			hash) grepq -E "hash block [0-9]+ \(tree level 0\) does not match" <<<"$output" ;;
			esac
			attach_bad "$bad"
			gzip -c "$bad" > "$bad.gz"
			attach_bad "$bad.gz"
			nbdkit -U "$bad.sock" --pidfile "$bad.pid" -r file "$bad"
			attach_bad "nbd+unix:///?socket=$bad.sock"
		done
	done
}

@test "nbdkit plugin root-hash=: serves a verified image, refuses to start on a bad one" {
	require_plugin
	vt_mkfs "$T/img"
	nbdkit -U "$T/p.sock" --pidfile "$T/p.pid" "$PLUGIN" image="$T/img" root-hash="$ROOT"
	nbdcopy "nbd+unix:///?socket=$T/p.sock" - | cmp - "$T/img"
	cp "$T/img" "$T/bad"
	vt_flip "$T/bad" "$(vt_offset "$T/img" data)"
	run timeout 30 nbdkit -f -U "$T/x.sock" "$PLUGIN" image="$T/bad" root-hash="$ROOT"
	echo "$output"
	[ "$status" -ne 0 ]
	grepq '(/bin/busybox): does not match its hash' <<<"$output"
	run timeout 30 nbdkit -f -U "$T/x.sock" "$PLUGIN" image="$T/img" root-hash="$ROOT" readonly=false
	[ "$status" -ne 0 ]
	xiptool attach --root-hash "$ROOT" -n "$SEG" "$T/img"
	nbdkit -U "$T/q.sock" --pidfile "$T/q.pid" "$PLUGIN" image="@$SEG" root-hash="$ROOT"
	nbdcopy "nbd+unix:///?socket=$T/q.sock" - | cmp - "$T/img"
}

@test "a kill during attach --root-hash (before the check, after the seal) leaves nothing once the registry is next used" {
	use_test_hooks
	require_test_hooks
	vt_mkfs "$T/img"
	for n in 1 2; do
		rc=0
		XIPTOOL_TEST_CRASH_AFTER=$n "$XIPTOOL" attach --root-hash "$ROOT" \
			-n "$SEG" "$T/img" 2>/dev/null || rc=$?
		[ "$rc" -eq 137 ]
		nothing_left
	done
	xiptool attach --root-hash "$ROOT" -n "$SEG" "$T/img"
	xiptool detach "$SEG"
}

@test "attach --root-hash: superblocks that change between their read-ahead and the copy (file, nbd://) are refused, leaving nothing" {
	require_pull
	use_test_hooks
	require_test_hooks
	vt_mkfs "$T/img"
	fsb=$(vt_fs_bytes "$T/img")
	# the verity superblock's UUID (no hash covers it) and its salt, the
	# ext2 superblock: each changed after attach read it ahead
	for off in $((fsb + 20)) "$(vt_offset "$T/img" vsb)" \
		   "$(vt_offset "$T/img" super)"; do
		cp "$T/img" "$T/changed"
		vt_flip "$T/changed" "$off"
		cp "$T/img" "$T/src"
		nbdkit -U "$T/$off.sock" --pidfile "$T/$off.pid" -r file "$T/src"
		for src in "$T/src" "nbd+unix:///?socket=$T/$off.sock"; do
			cp "$T/img" "$T/src"
			# cp writes into the same file, which attach has open
			run env XIPTOOL_TEST_ATTACH_BEFORE_CLAIM="cp '$T/changed' '$T/src'" \
				"$XIPTOOL" attach --root-hash "$ROOT" -n "$SEG" "$src"
			echo "$off $src: $output"
			[ "$status" -eq 3 ]
			[ "$output" = "xiptool attach: $src: the superblocks changed after they were read ahead (the image changed while it was read)" ]
			cmp "$T/src" "$T/changed"
			nothing_left
		done
	done
	# the changed superblocks are not what the root hash admits either
	run xiptool attach --root-hash "$ROOT" -n "$SEG" "$T/changed"
	[ "$status" -eq 3 ]
}

@test "attach --root-hash failing after the seal takes the immutable flag back and leaves no segment file and no record" {
	use_test_hooks
	require_test_hooks
	require_cmd lsattr
	vt_mkfs "$T/img"
	# once the segment is sealed, its record goes: the commit fails
	run env XIPTOOL_TEST_ATTACH_AFTER_SEAL="lsattr '$T/shm'/xiptool-$SEG.* | grep -q '^----i' && rm '$T/run/$SEG'" \
		"$XIPTOOL" attach --root-hash "$ROOT" -n "$SEG" "$T/img"
	echo "$output"
	[ "$status" -eq 3 ]
	[ "${#lines[@]}" -eq 1 ]
	[ -z "$(ls -A "$T/shm")" ]
	nothing_left
	xiptool attach --root-hash "$ROOT" -n "$SEG" "$T/img"
	xiptool detach "$SEG"
	[ -z "$(ls -A "$T/shm")" ]
}

@test "attach --root-hash: of two bad data blocks in the two halves the lower is named, from a file and nbd://" {
	require_pull
	vt_mkfs "$T/img"
	lo=$(debugfs -R "bmap /bin/busybox 1" "$T/img" 2>/dev/null)
	hi=$(debugfs -R "bmap /data/blob 70" "$T/img" 2>/dev/null)
	[ "$lo" -lt "$hi" ]
	cp "$T/img" "$T/bad"
	vt_flip "$T/bad" $((hi * 4096 + 9))
	vt_flip "$T/bad" $((lo * 4096 + 9))
	run xiptool attach --root-hash "$ROOT" -n "$SEG" "$T/bad"
	echo "$output"
	[ "$status" -eq 3 ]
	[ "$output" = "xiptool attach: $T/bad: block $lo (/bin/busybox): does not match its hash in the verity tree" ]
	nbdkit -U "$T/b.sock" --pidfile "$T/b.pid" -r file "$T/bad"
	run xiptool attach --root-hash "$ROOT" -n "$SEG" "nbd+unix:///?socket=$T/b.sock"
	echo "$output"
	[ "$status" -eq 3 ]
	grepq -F "block $lo (/bin/busybox): does not match" <<<"$output"
	no_segfile "$SEG" "$T/shm"
}

# nothing_left: no record of $SEG (the registry's next use takes a dead
# claim back) and no segment file
nothing_left() {
	run xiptool list --noheadings "$SEG"
	[ "$status" -eq 3 ]
	no_segfile "$SEG" "$T/shm"
	[ ! -e "$T/run/$SEG" ]
}

# paused_attach SIGNAL SOURCE: attach --root-hash SOURCE with the test
# build paused halfway through the fill, then SIGNAL it.
paused_attach() {
	rm -f "$T/paused"
	XIPTOOL_TEST_ATTACH_PAUSE=$T/paused "$XIPTOOL" attach --root-hash "$ROOT" \
		-n "$SEG" "$2" 2>"$T/err" &
	pid=$!
	for _ in $(seq 600); do [ -e "$T/paused" ] && break; sleep 0.05; done
	[ -e "$T/paused" ]
	# half the segment is there, nothing is published
	run xiptool list --noheadings "$SEG"
	[ "$status" -eq 3 ]
	kill -s "$1" "$pid"
	rc=0
	wait "$pid" || rc=$?
	echo "$1 $2: $rc $(cat "$T/err")"
}

@test "a SIGTERM or kill -9 halfway through the fill of attach --root-hash (file, nbd://) leaves nothing" {
	require_pull
	use_test_hooks
	require_test_hooks
	mkdir -p "$T/tree/big"
	head -c 12M /dev/urandom > "$T/tree/big/file"
	vt_mkfs "$T/img"
	# a server per client: nbdkit 1.32 refuses connections after a
	# client went away with reads in flight
	nbdkit -U "$T/k.sock" --pidfile "$T/k.pid" -r file "$T/img"
	nbdkit -U "$T/l.sock" --pidfile "$T/l.pid" -r file "$T/img"
	for pair in "$T/img $T/img" "k l"; do
		read -r a b <<<"$pair"
		if [ "$a" = k ]; then
			a="nbd+unix:///?socket=$T/k.sock"
			b="nbd+unix:///?socket=$T/l.sock"
		fi
		paused_attach TERM "$a"
		[ "$rc" -eq 143 ]
		grepq interrupted "$T/err"
		# at once: no record, no segment file
		[ ! -e "$T/run/$SEG" ]
		no_segfile "$SEG" "$T/shm"
		paused_attach KILL "$b"
		[ "$rc" -eq 137 ]
		nothing_left
	done
	xiptool attach --root-hash "$ROOT" -n "$SEG" "$T/img"
	xiptool detach "$SEG"
}

@test "libcrypto is loaded only to hash: not linked; without it info, verify and exec run, and hashing is a one-line error leaving nothing" {
	local lib root off
	lib=$(lazy_lib crypto)
	[ -n "$lib" ]
	vt_mkfs "$T/img"
	mkdir -p "$T/tree2"
	printf 'x' > "$T/tree2/f"
	# what hashes nothing runs without it: the tree is read, not hashed
	unshare -m sh -c 'mount --bind /dev/null "$1" && "$2" info "$3" &&
		"$2" verify "$3" && "$2" exec "$3" /bin/busybox echo ran' \
		sh "$lib" "$XIPTOOL" "$T/img" > "$T/out"
	grepq '^Verity data blocks:' "$T/out"
	grepq 'clean: 0 problems' "$T/out"
	grepq -x ran "$T/out"
	# each command that hashes: one line naming the library, exit 3,
	# no finding (nothing was checked), nothing left
	for cmd in "verify --root-hash $ROOT $T/img" \
		"attach --root-hash $ROOT -n $SEG $T/img" \
		"mkfs --verity -d $T/tree2 $T/v.img"; do
		run unshare -m sh -c 'mount --bind /dev/null "$1" && shift && exec "$@"' \
			sh "$lib" "$XIPTOOL" $cmd
		echo "$cmd: $output"
		[ "$status" -eq 3 ]
		[ "${#lines[@]}" -eq 1 ]
		[[ "$output" == *"cannot load libcrypto.so."*"file too short"* ]]
	done
	[ ! -e "$T/v.img" ]
	run -3 xiptool list --noheadings "$SEG"
	# with it, the same commands work
	xiptool verify --root-hash "$ROOT" "$T/img"
	run -0 xiptool mkfs -q --verity -d "$T/tree2" "$T/v.img"
	root=$(sed -n 's/^root hash: //p' <<<"$output")
	off=$(xiptool info "$T/v.img" | sed -n 's/^Verity offset: *//p')
	veritysetup verify "$T/v.img" "$T/v.img" "$root" --hash-offset="$off"
}

@test "verify and attach take --root-hash-file as mkfs writes it (and veritysetup reads it)" {
	vt_mkfs "$T/img" --root-hash-file "$T/rh"
	[ "$(cat "$T/rh")" = "$ROOT" ]
	# veritysetup reads the same file
	run veritysetup verify "$T/img" "$T/img" --hash-offset "$(vt_fs_bytes "$T/img")" --root-hash-file "$T/rh"
	[ "$status" -eq 0 ]
	run xiptool verify --root-hash-file "$T/rh" "$T/img"
	echo "$output"
	[ "$status" -eq 0 ]
	grepq '^verity: every block matches the root hash' <<<"$output"
	# with a newline, as echo writes it
	echo "$ROOT" > "$T/rh-nl"
	run xiptool verify --root-hash-file "$T/rh-nl" "$T/img"
	[ "$status" -eq 0 ]
	# another image's hash in the file: a mismatch, found
	vt_mkfs "$T/other" --salt 00
	printf '%s' "$ROOT" > "$T/rh-other"
	run xiptool verify --root-hash-file "$T/rh-other" "$T/img"
	[ "$status" -eq 1 ]
	run xiptool attach --root-hash-file "$T/rh-other" -n "$SEG" "$T/img"
	[ "$status" -eq 3 ]
	no_segfile "$SEG" "$T/shm"
	run xiptool attach --root-hash-file "$T/rh" -n "$SEG" "$T/img"
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$(seg_col "$SEG" VERIFIED)" = 1 ]
	run xiptool detach "$SEG"
	[ "$status" -eq 0 ]
	# a file that is no hash, missing, a directory; both options
	printf 'xyz\n' > "$T/rh-bad"
	for f in "$T/rh-bad" "$T/none" "$T"; do
		run xiptool verify --root-hash-file "$f" "$T/img"
		[ "$status" -eq 3 ]
		[ "${#lines[@]}" -eq 1 ]
		[[ "$output" == "xiptool verify: $f: "* ]]
		run xiptool attach --root-hash-file "$f" -n "$SEG" "$T/img"
		[ "$status" -eq 3 ]
		[[ "$output" == "xiptool attach: $f: "* ]]
		no_segfile "$SEG" "$T/shm"
	done
	run xiptool verify --root-hash "$ROOT" --root-hash-file "$T/rh" "$T/img"
	[ "$status" -eq 2 ]
	[ "${lines[0]}" = "xiptool verify: --root-hash and --root-hash-file exclude each other" ]
	run xiptool attach --root-hash "$ROOT" --root-hash-file "$T/rh" -n "$SEG" "$T/img"
	[ "$status" -eq 2 ]
}

#!/usr/bin/env bats
# Root hash signatures: mkfs --verity --private-key/--certificate and
# xiptool sign against OpenSSL (openssl smime signs the same bytes and
# verifies ours), veritysetup, e2fsck and the kernel; the signature block
# after the tree as info, attach --root-hash and hostile bytes see it.

load ../lib/common
load ../lib/attach
load ../lib/verity

bats_require_minimum_version 1.5.0

setup() {
	attach_setup
	require_cmd openssl veritysetup dumpe2fs
	vt_tree
	for k in 1 2; do
		openssl req -x509 -newkey rsa:2048 -nodes -days 2 \
			-subj "/CN=xiptool-test$k" -keyout "$T/key$k.pem" \
			-out "$T/cert$k.pem" 2>/dev/null
	done
}

# sig_field IMAGE FIELD: a field of the signature block at the first
# multiple of 4096 after the verity tree ("offset", "len", "end").
sig_field() {
	"$PY" - "$1" "$2" "$(vt_fs_bytes "$1")" <<'PYEOF'
import struct, sys
d = open(sys.argv[1], 'rb').read()
off = d.find(b'xipsig1\0', int(sys.argv[3]))
ln = struct.unpack('<I', d[off + 16:off + 20])[0] if off >= 0 else 0
end = off + 4096 + (ln + 4095) // 4096 * 4096
print({'offset': off, 'len': ln, 'end': end}[sys.argv[2]])
PYEOF
}

# sig_der IMAGE OUT: the DER bytes of IMAGE's signature block into OUT.
sig_der() {
	local off len
	off=$(sig_field "$1" offset)
	len=$(sig_field "$1" len)
	[ "$off" -gt 0 ]
	tail -c +$((off + 4097)) "$1" | head -c "$len" > "$2"
}

# openssl_verify SIG CERT: OpenSSL accepts SIG over $ROOT (hex, no newline).
openssl_verify() {
	printf %s "$ROOT" > "$T/hash.txt"
	run openssl smime -verify -binary -inform der -in "$1" \
		-content "$T/hash.txt" -certfile "$2" -CAfile "$2" \
		-purpose any -out /dev/null
	echo "$output"
	[ "$status" -eq 0 ]
}

# openssl_sign KEY CERT OUT: what openssl smime makes of $ROOT.
openssl_sign() {
	printf %s "$ROOT" > "$T/hash.txt"
	openssl smime -sign -nocerts -noattr -binary -in "$T/hash.txt" \
		-inkey "$1" -signer "$2" -outform der -out "$3"
}

@test "mkfs --verity --private-key: OpenSSL's signature, in the image and the file; veritysetup, e2fsck, the kernel" {
	vt_mkfs "$T/img" --private-key "$T/key1.pem" \
		--certificate "$T/cert1.pem" --signature-file "$T/img.p7s"
	openssl_verify "$T/img.p7s" "$T/cert1.pem"
	openssl_sign "$T/key1.pem" "$T/cert1.pem" "$T/ref.p7s"
	cmp "$T/img.p7s" "$T/ref.p7s"
	sig_der "$T/img" "$T/emb.der"
	cmp "$T/emb.der" "$T/img.p7s"
	# the block ends the image; the hash offset is the file system's end
	[ "$(sig_field "$T/img" end)" -eq "$(stat -c %s "$T/img")" ]
	fsb=$(vt_fs_bytes "$T/img")
	run veritysetup verify "$T/img" "$T/img" "$ROOT" --hash-offset="$fsb"
	echo "$output"
	[ "$status" -eq 0 ]
	fsck_clean "$T/img"
	require_loop
	loop_mount "$T/img" ext4
	cmp "$T/mnt/bin/busybox" "$T/tree/bin/busybox"
	loop_umount
}

@test "info shows the signature: none, or its size, signer and signed root hash" {
	vt_mkfs "$T/plain"
	run xiptool info "$T/plain"
	[ "$status" -eq 0 ]
	grepq -x 'Signature: *none' <<<"$output"
	vt_mkfs "$T/img" --private-key "$T/key1.pem" --certificate "$T/cert1.pem" \
		--signature-file "$T/img.p7s"
	serial=$(openssl x509 -in "$T/cert1.pem" -noout -serial | sed 's/^serial=//' | tr A-F a-f)
	run xiptool info "$T/img"
	echo "$output"
	[ "$status" -eq 0 ]
	grepq -x "Signature: *present ($(stat -c %s "$T/img.p7s") bytes, signer issuer /CN=xiptool-test1 serial $serial, root hash $ROOT)" <<<"$output"
	grepq -x "Signed root hash: *$ROOT" <<<"$output"
}

@test "sign: an unsigned verity image gets the signature mkfs would give it; file system and tree untouched" {
	vt_mkfs "$T/img"
	cp "$T/img" "$T/orig"
	run xiptool sign --private-key "$T/key1.pem" --certificate "$T/cert1.pem" \
		--signature-file "$T/img.p7s" "$T/img"
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$output" = "$T/img: signed ($(stat -c %s "$T/img.p7s") bytes of signature)" ]
	openssl_verify "$T/img.p7s" "$T/cert1.pem"
	sig_der "$T/img" "$T/emb.der"
	cmp "$T/emb.der" "$T/img.p7s"
	# every byte of the unsigned image is still there, unchanged
	cmp -n "$(stat -c %s "$T/orig")" "$T/img" "$T/orig"
	vt_mkfs "$T/signed" --private-key "$T/key1.pem" --certificate "$T/cert1.pem"
	cmp "$T/img" "$T/signed"
}

@test "sign again: the old block is replaced by the new signer's" {
	vt_mkfs "$T/img" --private-key "$T/key1.pem" --certificate "$T/cert1.pem"
	size=$(stat -c %s "$T/img")
	run xiptool sign --private-key "$T/key2.pem" --certificate "$T/cert2.pem" \
		--signature-file "$T/img.p7s" "$T/img"
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$(stat -c %s "$T/img")" -eq "$size" ]
	[ "$(grep -c -a 'xipsig1' "$T/img")" -eq 1 ]
	sig_der "$T/img" "$T/emb.der"
	cmp "$T/emb.der" "$T/img.p7s"
	openssl_verify "$T/img.p7s" "$T/cert2.pem"
	run xiptool info "$T/img"
	grepq 'Signature: *present .*signer issuer /CN=xiptool-test2 ' <<<"$output"
}

@test "sign: a corrupt block is replaced; a tree that does not match its data is refused" {
	vt_mkfs "$T/img" --private-key "$T/key1.pem" --certificate "$T/cert1.pem"
	off=$(sig_field "$T/img" offset)
	vt_flip "$T/img" $((off + 4100))
	run xiptool sign --private-key "$T/key1.pem" --certificate "$T/cert1.pem" "$T/img"
	echo "$output"
	[ "$status" -eq 0 ]
	run xiptool info "$T/img"
	grepq 'Signature: *present ' <<<"$output"
	# a data block changed after the tree was made
	vt_flip "$T/img" 8192
	cp "$T/img" "$T/before"
	run xiptool sign --private-key "$T/key2.pem" --certificate "$T/cert2.pem" "$T/img"
	echo "$output"
	[ "$status" -eq 3 ]
	[ "${#lines[@]}" -eq 1 ]
	grepq "^xiptool sign: $T/img: data block 2 does not match its hash" <<<"$output"
	cmp "$T/img" "$T/before"
}

@test "sign: an image without a verity tree is refused in one line, left as it was" {
	xiptool mkfs -q -d "$T/tree" "$T/img"
	cp "$T/img" "$T/before"
	run xiptool sign --private-key "$T/key1.pem" --certificate "$T/cert1.pem" "$T/img"
	echo "$output"
	[ "$status" -eq 3 ]
	[ "$output" = "xiptool sign: $T/img: not a verity image (no verity superblock after the file system)" ]
	cmp "$T/img" "$T/before"
	[ "$(ls -A "$T" | grep -c '^\.img')" -eq 0 ]
}

@test "a key that does not match the certificate: exit 3 before anything is built or changed" {
	run xiptool mkfs -q --verity -d "$T/tree" --private-key "$T/key1.pem" \
		--certificate "$T/cert2.pem" "$T/img"
	echo "$output"
	[ "$status" -eq 3 ]
	[ "$output" = "xiptool mkfs: $T/key1.pem: the private key does not match the certificate $T/cert2.pem" ]
	[ ! -e "$T/img" ]
	vt_mkfs "$T/img"
	cp "$T/img" "$T/before"
	run xiptool sign --private-key "$T/key2.pem" --certificate "$T/cert1.pem" "$T/img"
	[ "$status" -eq 3 ]
	[ "${#lines[@]}" -eq 1 ]
	cmp "$T/img" "$T/before"
}

@test "usage: key and certificate go together, and need --verity" {
	run xiptool mkfs -q -d "$T/tree" --private-key "$T/key1.pem" \
		--certificate "$T/cert1.pem" "$T/img"
	[ "$status" -eq 2 ]
	run xiptool mkfs -q --verity -d "$T/tree" --private-key "$T/key1.pem" "$T/img"
	[ "$status" -eq 2 ]
	run xiptool sign --private-key "$T/key1.pem" "$T/img"
	[ "$status" -eq 2 ]
	[ ! -e "$T/img" ]
}

@test "--signature-file: another user's symlink is refused, its target untouched" {
	require_root
	require_cmd setpriv
	chmod 755 "$T"
	mkdir "$T/shared" && chmod 1777 "$T/shared"
	echo precious > "$T/victim"
	as_nobody ln -s "$T/victim" "$T/shared/sig"
	run xiptool mkfs -q --verity -d "$T/tree" --private-key "$T/key1.pem" \
		--certificate "$T/cert1.pem" --signature-file "$T/shared/sig" "$T/img"
	echo "$output"
	[ "$status" -eq 3 ]
	[ "$output" = "xiptool mkfs: $T/shared/sig: is a symbolic link; refusing to write through it" ]
	[ ! -e "$T/img" ]
	vt_mkfs "$T/img"
	cp "$T/img" "$T/before"
	run xiptool sign --private-key "$T/key1.pem" --certificate "$T/cert1.pem" \
		--signature-file "$T/shared/sig" "$T/img"
	echo "$output"
	[ "$status" -eq 3 ]
	[ "$output" = "xiptool sign: $T/shared/sig: is a symbolic link; refusing to write through it" ]
	[ "$(cat "$T/victim")" = precious ]
	[ -L "$T/shared/sig" ]
	cmp "$T/img" "$T/before"
}

@test "sign: a symlink at the image or another user's image in a shared directory is refused" {
	require_root
	require_cmd setpriv
	chmod 755 "$T"
	mkdir "$T/shared" && chmod 1777 "$T/shared"
	vt_mkfs "$T/img"
	cp "$T/img" "$T/before"
	as_nobody ln -s "$T/img" "$T/shared/link"
	run xiptool sign --private-key "$T/key1.pem" --certificate "$T/cert1.pem" "$T/shared/link"
	echo "$output"
	[ "$status" -eq 3 ]
	[ "$output" = "xiptool sign: $T/shared/link: is a symbolic link; refusing to write through it" ]
	cmp "$T/img" "$T/before"
	cp "$T/img" "$T/shared/theirs"
	chown 65534:65534 "$T/shared/theirs"
	run xiptool sign --private-key "$T/key1.pem" --certificate "$T/cert1.pem" "$T/shared/theirs"
	[ "$status" -eq 3 ]
	cmp "$T/shared/theirs" "$T/before"
}

@test "attach --root-hash admits a signed image, and refuses a block that is not valid" {
	vt_mkfs "$T/img" --private-key "$T/key1.pem" --certificate "$T/cert1.pem"
	run xiptool attach -n "$SEG" --root-hash "$ROOT" "$T/img"
	echo "$output"
	[ "$status" -eq 0 ]
	xiptool detach "$SEG"
	gzip -k "$T/img"
	run xiptool attach -n "$SEG" --root-hash "$ROOT" "$T/img.gz"
	echo "$output"
	[ "$status" -eq 0 ]
	xiptool detach "$SEG"
	off=$(sig_field "$T/img" offset)
	vt_flip "$T/img" $((off + 4100))
	run xiptool attach -n "$SEG" --root-hash "$ROOT" "$T/img"
	echo "$output"
	[ "$status" -eq 3 ]
	grepq "bytes after the verity tree" <<<"$output"
}

# info_flipped OFFSET WHY: info of a copy of $T/img with the byte at
# OFFSET flipped says the signature block is invalid for WHY (grep -x).
info_flipped() {
	cp "$T/img" "$T/flipped"
	vt_flip "$T/flipped" "$1"
	run xiptool info "$T/flipped"
	grepq -x "Signature: *invalid: signature block: $2" <<<"$output"
}

@test "hostile signature blocks: huge, truncated, flipped, padded: info says why, nothing crashes" {
	vt_mkfs "$T/img" --private-key "$T/key1.pem" --certificate "$T/cert1.pem"
	off=$(sig_field "$T/img" offset)
	size=$(stat -c %s "$T/img")
	# a length far past the image and the cap
	cp "$T/img" "$T/huge"
	printf '\xff\xff\xff\x7f' | dd of="$T/huge" bs=1 seek=$((off + 16)) conv=notrunc status=none
	run xiptool info "$T/huge"
	echo "$output"
	[ "$status" -eq 0 ]
	grepq -x 'Signature: *invalid: signature block: a signature of 2147483647 bytes (1 to 65536)' <<<"$output"
	# cut short
	cp "$T/img" "$T/short"
	truncate -s $((size - 4096)) "$T/short"
	run xiptool info "$T/short"
	grepq -x 'Signature: *invalid: signature block: truncated .*' <<<"$output"
	# a flipped signature byte
	info_flipped $((off + 4100)) 'the signature does not match its digest'
	# a byte in the header's reserved zeros
	info_flipped $((off + 100)) 'malformed header'
	# another version
	info_flipped $((off + 8)) 'version 17 (only 1)'
}

@test "the nbdkit plugin's root-hash= serves a signed image, and refuses a block that is not valid" {
	require_cmd nbdkit nbdinfo
	plugin=${TOP_BUILDDIR:-$PWD}/nbdkit-xiptool-plugin.so
	[ -f "$plugin" ] || skip "the nbdkit plugin was not built"
	vt_mkfs "$T/img" --private-key "$T/key1.pem" --certificate "$T/cert1.pem"
	run timeout 60 nbdkit -U - "$plugin" image="$T/img" root-hash="$ROOT" \
		--run 'nbdinfo --size "$uri"'
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$output" = "$(stat -c %s "$T/img")" ]
	off=$(sig_field "$T/img" offset)
	vt_flip "$T/img" $((off + 4100))
	run timeout 60 nbdkit -U - "$plugin" image="$T/img" root-hash="$ROOT" \
		--run 'nbdinfo --size "$uri"'
	echo "$output"
	grepq "$T/img: 8192 bytes after the verity tree" <<<"$output"
	[ "$status" -ne 0 ]
}

@test "verify --trust: the signature against a certificate or a directory, then every block against the signed root hash" {
	vt_mkfs "$T/img" --private-key "$T/key1.pem" --certificate "$T/cert1.pem"
	run xiptool verify --trust "$T/cert1.pem" "$T/img"
	echo "$output"
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = "$T/img: signature verified, signer /CN=xiptool-test1" ]
	grepq '^verity: every block matches the root hash' <<<"$output"
	mkdir "$T/trust"
	cp "$T/cert2.pem" "$T/cert1.pem" "$T/trust/"
	run xiptool verify --trust "$T/trust" "$T/img"
	[ "$status" -eq 0 ]
	# a symbolic link in the store is refused, not followed
	ln -s "$T/cert1.pem" "$T/trust/link.pem"
	run xiptool verify --trust "$T/trust" "$T/img"
	echo "$output"
	[ "$status" -eq 3 ]
	[ "$output" = "xiptool verify: $T/trust/link.pem: a symbolic link; a trust store is not read through links" ]
	rm "$T/trust/link.pem"
	# another signer's certificate only
	run xiptool verify --trust "$T/cert2.pem" "$T/img"
	echo "$output"
	[ "$status" -eq 1 ]
	[ "$output" = "xiptool verify: $T/img: the signature does not verify against $T/cert2.pem: signer certificate not found" ]
	# a data block changed after signing: the signed root hash catches it
	vt_flip "$T/img" 8192
	run xiptool verify --trust "$T/cert1.pem" "$T/img"
	echo "$output"
	[ "$status" -eq 1 ]
	grepq '^block 2 (metadata): does not match its hash in the verity tree' <<<"$output"
	# unsigned
	vt_mkfs "$T/plain"
	run xiptool verify --trust "$T/cert1.pem" "$T/plain"
	[ "$status" -eq 1 ]
	[ "$output" = "xiptool verify: $T/plain: not signed: no signature block after the verity tree" ]
	run xiptool verify --trust "$T/cert1.pem" --root-hash "$ROOT" "$T/plain"
	[ "$status" -eq 2 ]
	run xiptool verify --trust "$T/missing.pem" "$T/img"
	[ "$status" -eq 3 ]
	# another user's certificate is not trusted
	require_root
	chown 65534:65534 "$T/trust/cert2.pem"
	run xiptool verify --trust "$T/trust" "$T/img"
	echo "$output"
	[ "$status" -eq 3 ]
	[ "$output" = "xiptool verify: $T/trust/cert2.pem: owned by another user (uid 65534); refusing to use it" ]
}

@test "verify --trust: a signature made by openssl smime, put in the block, verifies" {
	vt_mkfs "$T/img"
	openssl_sign "$T/key2.pem" "$T/cert2.pem" "$T/ref.p7s"
	len=$(stat -c %s "$T/ref.p7s")
	"$PY" - "$T/img" "$T/ref.p7s" <<'PYEOF'
import hashlib, struct, sys
der = open(sys.argv[2], 'rb').read()
hdr = b'xipsig1\0' + struct.pack('<IIII', 1, 4096, len(der), 0) + hashlib.sha256(der).digest()
blk = hdr + bytes(4096 - len(hdr)) + der + bytes(-len(der) % 4096)
with open(sys.argv[1], 'ab') as f:
    f.write(blk)
PYEOF
	run xiptool info "$T/img"
	grepq -x "Signature: *present ($len bytes, signer issuer /CN=xiptool-test2 serial .*)" <<<"$output"
	run xiptool verify --trust "$T/cert2.pem" "$T/img"
	echo "$output"
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = "$T/img: signature verified, signer /CN=xiptool-test2" ]
}

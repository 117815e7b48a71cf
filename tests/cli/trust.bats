#!/usr/bin/env bats
# Trust at attach: attach --trust admits an image against the root hash
# its signature signs (checked against a trust store of certificates,
# made here by openssl req/x509/smime), from a file, gzip and nbd://, and
# records the signer; every bad signature, certificate or store is a
# one-line refusal that leaves nothing behind.

load ../lib/common
load ../lib/attach
load ../lib/nbd
load ../lib/verity

bats_require_minimum_version 1.5.0

# cert NAME [openssl req options...]: an EC key and a self-signed
# certificate, $T/NAME-key.pem and $T/NAME-cert.pem, subject /CN=NAME.
cert() {
	local n=$1
	shift
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 \
		-nodes -days 2 -subj "/CN=$n" -keyout "$T/$n-key.pem" \
		-out "$T/$n-cert.pem" "$@" 2>/dev/null
}

# leaf NAME CA: a key and a certificate /CN=NAME issued by CA.
leaf() {
	openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 \
		-nodes -subj "/CN=$1" -keyout "$T/$1-key.pem" \
		-out "$T/$1.csr" 2>/dev/null
	openssl x509 -req -in "$T/$1.csr" -CA "$T/$2-cert.pem" \
		-CAkey "$T/$2-key.pem" -CAcreateserial -days 2 \
		-out "$T/$1-cert.pem" 2>/dev/null
}

# smime_sign NAME HEX OUT [options...]: openssl's detached signature of
# HEX (no newline) by NAME's key, DER.
smime_sign() {
	printf %s "$2" > "$T/hash.txt"
	openssl smime -sign -noattr -binary -in "$T/hash.txt" \
		-inkey "$T/$1-key.pem" -signer "$T/$1-cert.pem" -outform der \
		-out "$3" "${@:4}"
}

setup() {
	nbd_setup
	require_cmd openssl veritysetup dumpe2fs
	# no default store but the tests' own
	export XIPTOOL_TRUST_DIR=$T/no-default
	vt_tree
	cert signer
	cert other
	mkdir -m 755 "$T/trust"
	cp "$T/signer-cert.pem" "$T/trust/"
	chmod 644 "$T/trust/signer-cert.pem"
	vt_mkfs "$T/img" --private-key "$T/signer-key.pem" \
		--certificate "$T/signer-cert.pem"
	IMG_ROOT=$ROOT
}

teardown() {
	# a program a test left running from a segment
	if [ -n "${SLEEPER:-}" ]; then
		kill "$SLEEPER" 2>/dev/null || [ $? -eq 1 ]
	fi
	nbd_teardown
}

# Nothing of segment $SEG is left: no record, no segment file, no loop.
nothing_left() {
	run xiptool list --noheadings "$SEG"
	[ "$status" -eq 3 ]
	no_segfile "$SEG" "$T/shm"
	run -0 ls -A "$T/run"
	[ -z "$(grep -v '^\.' <<<"$output")" ]
	run -0 losetup -l -n -O BACK-FILE
	[[ "$output" != *"$T/shm/"* ]]
}

# refused MESSAGE ARGS...: attach --loop ARGS exits 3 with the one line
# "xiptool attach: MESSAGE", leaving nothing.
refused() {
	local want=$1
	shift
	run xiptool attach --loop -n "$SEG" "$@"
	echo "$output"
	[ "$status" -eq 3 ]
	[ "${#lines[@]}" -eq 1 ]
	[ "$output" = "xiptool attach: $want" ]
	nothing_left
}

@test "attach --trust: from a file, gzip and nbd:// admitted against the signed root hash, sealed; list tells the signer" {
	require_pull
	run xiptool attach --trust "$T/trust" -n "$SEG" "$T/img"
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$(seg_col "$SEG" VERIFIED)" = 1 ]
	[ "$(seg_col "$SEG" SIGNER)" = /CN=signer ]
	run -0 xiptool list --json "$SEG"
	printf '%s' "$output" > "$T/list.json"
	"$PY" - "$T/list.json" "$SEG" <<'PYEOF'
import json, sys
s = json.load(open(sys.argv[1]))["segments"]
assert len(s) == 1 and s[0]["name"] == sys.argv[2], s
assert s[0]["verified"] is True and s[0]["signer"] == "/CN=signer", s
PYEOF
	# the default columns stay as they were
	run -0 xiptool list
	[[ "${lines[0]}" =~ VERIFIED$ ]]
	path=$(seg_col "$SEG" PATH)
	lsattr "$path" | grepq '^----i'
	head -c "$(stat -c %s "$T/img")" "$path" | cmp - "$T/img"
	run -0 xiptool exec "@$SEG" /bin/busybox echo signed
	[ "$output" = signed ]
	run -0 xiptool info "@$SEG"
	grepq -x 'Segment verified: *yes' <<<"$output"
	grepq -x 'Segment signer: */CN=signer' <<<"$output"
	# the seal gone, the signer no longer vouches for the bytes
	chattr -i "$path"
	[ "$(seg_col "$SEG" VERIFIED)" = 0 ]
	[ -z "$(seg_col "$SEG" SIGNER)" ]
	run -0 xiptool list --json "$SEG"
	grepq '"signer": null' <<<"$output"
	run -0 xiptool info "@$SEG"
	grepq -x 'Segment verified: *no' <<<"$output"
	if grepq '^Segment signer:' <<<"$output"; then false; fi
	chattr +i "$path"
	xiptool detach "$SEG"
	# with the root hash too: the same one
	xiptool attach --trust "$T/trust/signer-cert.pem" --root-hash "$ROOT" \
		-n "$SEG" "$T/img"
	[ "$(seg_col "$SEG" SIGNER)" = /CN=signer ]
	xiptool detach "$SEG"
	# --root-hash alone: verified, nobody's signature checked
	xiptool attach --root-hash "$ROOT" -n "$SEG" "$T/img"
	[ "$(seg_col "$SEG" VERIFIED)" = 1 ]
	[ -z "$(seg_col "$SEG" SIGNER)" ]
	xiptool detach "$SEG"
	gzip -c "$T/img" > "$T/img.gz"
	xiptool attach --trust "$T/trust" -n "$SEG" "$T/img.gz"
	[ "$(seg_col "$SEG" SIGNER)" = /CN=signer ]
	[ "$(seg_col "$SEG" COMPRESSED)" = 1 ]
	xiptool detach "$SEG"
	nbdkit -U "$T/f.sock" --pidfile "$T/f.pid" -r file "$T/img"
	xiptool attach --trust "$T/trust" -n "$SEG" "nbd+unix:///?socket=$T/f.sock"
	[ "$(seg_col "$SEG" SIGNER)" = /CN=signer ]
	[ "$(seg_col "$SEG" VERIFIED)" = 1 ]
	xiptool detach "$SEG"
	no_segfile "$SEG" "$T/shm"
}

@test "attach --trust refuses another signer, a damaged, missing or misplaced signature, a mismatching --root-hash; file, gzip, nbd://; nothing left" {
	require_pull
	require_loop
	# signed by a key whose certificate is not in the store
	vt_mkfs "$T/img2" --private-key "$T/other-key.pem" \
		--certificate "$T/other-cert.pem"
	refused "$T/img2: the signature does not verify against $T/trust: signer certificate not found" \
		--trust "$T/trust" "$T/img2"
	gzip -c "$T/img2" > "$T/img2.gz"
	refused "$T/img2.gz: the signature does not verify against $T/trust: signer certificate not found" \
		--trust "$T/trust" "$T/img2.gz"
	nbdkit -U "$T/o.sock" --pidfile "$T/o.pid" -r file "$T/img2"
	refused "nbd+unix:///?socket=$T/o.sock: the signature does not verify against $T/trust: signer certificate not found" \
		--trust "$T/trust" "nbd+unix:///?socket=$T/o.sock"
	# no signature
	vt_mkfs "$T/plain"
	refused "$T/plain: not signed: no signature block after the verity tree" \
		--trust "$T/trust" "$T/plain"
	nbdkit -U "$T/p.sock" --pidfile "$T/p.pid" -r file "$T/plain"
	refused "nbd+unix:///?socket=$T/p.sock: not signed: no signature block after the verity tree" \
		--trust "$T/trust" "nbd+unix:///?socket=$T/p.sock"
	# the signature of another image's root hash: $T/img's block on
	# another tree
	echo more > "$T/tree/more.txt"
	vt_mkfs "$T/moved"
	off=$(( ($(stat -c %s "$T/img") - 8192) ))
	tail -c +$((off + 1)) "$T/img" >> "$T/moved"
	refused "$T/moved: the signature does not verify against $T/trust: signature failure" \
		--trust "$T/trust" "$T/moved"
	gzip -c "$T/moved" > "$T/moved.gz"
	refused "$T/moved.gz: the signature does not verify against $T/trust: signature failure" \
		--trust "$T/trust" "$T/moved.gz"
	# a flipped byte in the signature, its digest in the block made right
	cp "$T/img" "$T/flip"
	vt_flip "$T/flip" $((off + 4096 + 60))
	"$PY" - "$T/flip" "$off" <<'PYEOF'
import hashlib, struct, sys
off = int(sys.argv[2])
with open(sys.argv[1], 'r+b') as f:
    f.seek(off + 16)
    n = struct.unpack('<I', f.read(4))[0]
    f.seek(off + 4096)
    d = hashlib.sha256(f.read(n)).digest()
    f.seek(off + 24)
    f.write(d)
PYEOF
	run xiptool attach -n "$SEG" --trust "$T/trust" "$T/flip"
	[ "$status" -eq 3 ]
	grepq "^xiptool attach: $T/flip: the signature " <<<"$output"
	nothing_left
	# the block's own digest no longer matching; the block cut short
	cp "$T/img" "$T/flip2"
	vt_flip "$T/flip2" $((off + 4096 + 60))
	refused "$T/flip2: signature block: the signature does not match its digest" \
		--trust "$T/trust" "$T/flip2"
	head -c -4096 "$T/img" > "$T/cut"
	len=$("$PY" -c 'import struct, sys; f = open(sys.argv[1], "rb"); f.seek(int(sys.argv[2]) + 16); print(struct.unpack("<I", f.read(4))[0])' "$T/img" "$off")
	refused "$T/cut: signature block: truncated ($len signature bytes, 0 present)" \
		--trust "$T/trust" "$T/cut"
	# --root-hash too, but another one
	wrong=$(printf '%s' "$IMG_ROOT" | tr 0-9a-f 1-9a-f0)
	refused "$T/img: the root hash given is not the signed one ($IMG_ROOT)" \
		--trust "$T/trust" --root-hash "$wrong" "$T/img"
	# a data block changed after signing: the signed root hash catches it
	cp "$T/img" "$T/data"
	vt_flip "$T/data" "$(vt_offset "$T/img" data)"
	run xiptool attach --loop -n "$SEG" --trust "$T/trust" "$T/data"
	[ "$status" -eq 3 ]
	grepq "^xiptool attach: $T/data: block [0-9]* (/bin/busybox): does not match its hash in the verity tree$" <<<"$output"
	nothing_left
}

@test "attach --trust: a leaf of a trusted CA is admitted; of a CA not in the store, or expired, refused" {
	cert ca1
	cert ca2
	leaf leaf1 ca1
	leaf leaf2 ca2
	mkdir -m 755 "$T/ca"
	cp "$T/ca1-cert.pem" "$T/ca/"
	chmod 644 "$T/ca/ca1-cert.pem"
	# the signature carries the leaf's certificate: it chains to ca1
	smime_sign leaf1 "$ROOT" "$T/leaf1.p7s"
	run xiptool attach -n "$SEG" --trust "$T/ca" \
		--root-hash-signature "$T/leaf1.p7s" "$T/img"
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$(seg_col "$SEG" SIGNER)" = /CN=leaf1 ]
	xiptool detach "$SEG"
	smime_sign leaf2 "$ROOT" "$T/leaf2.p7s"
	refused "$T/img: the signature does not verify against $T/ca: certificate verify error (Verify error: unable to get local issuer certificate)" \
		--trust "$T/ca" --root-hash-signature "$T/leaf2.p7s" "$T/img"
	# an expired certificate, itself in the store
	require_cmd python3
	python3 -c 'import cryptography' 2>/dev/null || skip "python3-cryptography missing"
	(cd "$T" && python3 - <<'PYEOF'
import datetime as d
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization as s
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
k = ec.generate_private_key(ec.SECP256R1())
n = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, 'old')])
c = (x509.CertificateBuilder().subject_name(n).issuer_name(n)
     .public_key(k.public_key()).serial_number(7)
     .not_valid_before(d.datetime(2020, 1, 1))
     .not_valid_after(d.datetime(2020, 1, 2))
     .sign(k, hashes.SHA256()))
open('old-key.pem', 'wb').write(k.private_bytes(s.Encoding.PEM,
    s.PrivateFormat.PKCS8, s.NoEncryption()))
open('old-cert.pem', 'wb').write(c.public_bytes(s.Encoding.PEM))
PYEOF
	)
	smime_sign old "$ROOT" "$T/old.p7s" -nocerts
	cp "$T/old-cert.pem" "$T/trust/"
	chmod 644 "$T/trust/old-cert.pem"
	refused "$T/img: the signature does not verify against $T/trust: certificate verify error (Verify error: certificate has expired)" \
		--trust "$T/trust" --root-hash-signature "$T/old.p7s" "$T/img"
}

@test "--root-hash-signature: openssl smime's DER and PEM accepted by attach and verify; another root hash refused; a store needed" {
	vt_mkfs "$T/plain"
	smime_sign signer "$ROOT" "$T/sig.der" -nocerts
	openssl pkcs7 -inform der -in "$T/sig.der" -outform pem -out "$T/sig.pem"
	for s in der pem; do
		xiptool attach -n "$SEG" --trust "$T/trust" \
			--root-hash-signature "$T/sig.$s" "$T/plain"
		[ "$(seg_col "$SEG" SIGNER)" = /CN=signer ]
		[ "$(seg_col "$SEG" VERIFIED)" = 1 ]
		xiptool detach "$SEG"
		run xiptool verify --trust "$T/trust" --root-hash-signature "$T/sig.$s" "$T/plain"
		echo "$output"
		[ "$status" -eq 0 ]
		[ "${lines[0]}" = "$T/plain: signature verified, signer /CN=signer" ]
	done
	# a signature of another root hash
	wrong=$(printf '%s' "$ROOT" | tr 0-9a-f 1-9a-f0)
	smime_sign signer "$wrong" "$T/wrong.der" -nocerts
	refused "$T/plain: the signature does not verify against $T/trust: signature failure" \
		--trust "$T/trust" --root-hash-signature "$T/wrong.der" "$T/plain"
	run xiptool verify --trust "$T/trust" --root-hash-signature "$T/wrong.der" "$T/plain"
	[ "$status" -eq 1 ]
	# writable types and --raw cannot be verified: usage errors
	run xiptool attach -n "$SEG" --trust "$T/trust" -t sw "$T/img"
	[ "$status" -eq 2 ]
	grepq -- '--trust: type sw cannot be verified (only sr and er)' <<<"$output"
	run xiptool attach -n "$SEG" --trust "$T/trust" --raw "$T/img"
	[ "$status" -eq 2 ]
	grepq -- '--trust and --raw exclude each other' <<<"$output"
	run xiptool verify --trust "$T/trust" --root-hash "$IMG_ROOT" \
		--root-hash-signature "$T/sig.der" "$T/img"
	[ "$status" -eq 2 ]
	# no store given and no default one: a usage error
	run xiptool attach -n "$SEG" --root-hash-signature "$T/sig.der" "$T/plain"
	[ "$status" -eq 2 ]
	grepq -- '--root-hash-signature needs --trust PATH' <<<"$output"
	run xiptool verify --root-hash-signature "$T/sig.der" "$T/plain"
	[ "$status" -eq 2 ]
	# the default store ($XIPTOOL_TRUST_DIR here) serves instead
	export XIPTOOL_TRUST_DIR=$T/trust
	xiptool attach -n "$SEG" --root-hash-signature "$T/sig.der" "$T/plain"
	[ "$(seg_col "$SEG" SIGNER)" = /CN=signer ]
	xiptool detach "$SEG"
}

@test "verify: the default trust store checks a signed image; an unsigned one is checked as before; --root-hash alone needs no signature" {
	export XIPTOOL_TRUST_DIR=$T/trust
	run xiptool verify "$T/img"
	echo "$output"
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = "$T/img: signature verified, signer /CN=signer" ]
	vt_mkfs "$T/img2" --private-key "$T/other-key.pem" \
		--certificate "$T/other-cert.pem"
	run xiptool verify "$T/img2"
	[ "$status" -eq 1 ]
	[ "$output" = "xiptool verify: $T/img2: the signature does not verify against $T/trust: signer certificate not found" ]
	vt_mkfs "$T/plain"
	run xiptool verify "$T/plain"
	[ "$status" -eq 0 ]
	grepq "^$T/plain: clean" <<<"$output"
	# no tree at all, or not even a file system: as without a store
	xiptool mkfs -q -d "$T/tree" "$T/notree"
	run xiptool verify "$T/notree"
	[ "$status" -eq 0 ]
	grepq "^$T/notree: clean" <<<"$output"
	head -c 1M /dev/zero > "$T/zeros"
	XIPTOOL_TRUST_DIR=$T/no-default run xiptool verify "$T/zeros"
	before="$status $output"
	[ "$status" -eq 3 ]
	XIPTOOL_TRUST_DIR=$T/trust run xiptool verify "$T/zeros"
	[ "$status $output" = "$before" ]
	# attach --root-hash of a signed image: no signature needed
	xiptool attach -n "$SEG" --root-hash "$ROOT" "$T/img2"
	[ "$(seg_col "$SEG" VERIFIED)" = 1 ]
	[ -z "$(seg_col "$SEG" SIGNER)" ]
	xiptool detach "$SEG"
}

@test "a trust store writable or owned by another user, or with a symbolic link in it, is refused with the reason; nothing left" {
	require_root
	chmod o+w "$T/trust"
	refused "$T/trust: writable by other users (mode 0757); refusing to trust it" \
		--trust "$T/trust" "$T/img"
	chmod 755 "$T/trust"
	chmod g+w "$T/trust/signer-cert.pem"
	refused "$T/trust/signer-cert.pem: writable by other users (mode 0664); refusing to trust it" \
		--trust "$T/trust" "$T/img"
	refused "$T/trust/signer-cert.pem: writable by other users (mode 0664); refusing to trust it" \
		--trust "$T/trust/signer-cert.pem" "$T/img"
	chmod 644 "$T/trust/signer-cert.pem"
	chown 65534 "$T/trust/signer-cert.pem"
	refused "$T/trust/signer-cert.pem: owned by another user (uid 65534); refusing to use it" \
		--trust "$T/trust" "$T/img"
	chown 0 "$T/trust/signer-cert.pem"
	chown 65534 "$T/trust"
	refused "$T/trust: owned by another user (uid 65534); refusing to use it" \
		--trust "$T/trust" "$T/img"
	chown 0 "$T/trust"
	# a link another user planted, or root's own: refused either way
	ln -s "$T/other-cert.pem" "$T/trust/planted.pem"
	refused "$T/trust/planted.pem: a symbolic link; a trust store is not read through links" \
		--trust "$T/trust" "$T/img"
	rm "$T/trust/planted.pem"
	ln -s "$T/trust" "$T/link"
	refused "$T/link: a symbolic link; a trust store is not read through links" \
		--trust "$T/link" "$T/img"
	# the store as it should be
	xiptool attach -n "$SEG" --trust "$T/trust" "$T/img"
	[ "$(seg_col "$SEG" SIGNER)" = /CN=signer ]
	xiptool detach "$SEG"
}

@test "info: the Signature line says who signed which root hash, and, with a trust store (--trust or the default), whether it is valid" {
	run -0 xiptool info "$T/img"
	grepq -x "Signature: *present ([0-9]* bytes, signer issuer /CN=signer serial [0-9a-f]*, root hash $IMG_ROOT)" <<<"$output"
	grepq -x "Signed root hash: *$IMG_ROOT" <<<"$output"
	if grepq '^Signature valid:' <<<"$output"; then false; fi
	run -0 xiptool info --trust "$T/trust" "$T/img"
	grepq -x "Signature: *valid against $T/trust ([0-9]* bytes, signer /CN=signer, root hash $IMG_ROOT)" <<<"$output"
	grepq -x "Signer: */CN=signer" <<<"$output"
	grepq -x "Signature valid: *yes" <<<"$output"
	run -0 xiptool info --trust "$T/other-cert.pem" "$T/img"
	grepq -x "Signature: *invalid: the signature does not verify against $T/other-cert.pem: signer certificate not found (.*)" <<<"$output"
	grepq -x "Signature valid: *no" <<<"$output"
	# the default store
	XIPTOOL_TRUST_DIR=$T/trust run -0 xiptool info --json "$T/img"
	grepq '"signature-valid": true' <<<"$output"
	grepq '"signer": "/CN=signer"' <<<"$output"
	grepq "\"signed-root-hash\": \"$IMG_ROOT\"" <<<"$output"
}

@test "ps --json: the signer of the segment a process maps, and whether it is verified" {
	xiptool attach --trust "$T/trust" -n "$SEG" "$T/img"
	xiptool attach --root-hash "$IMG_ROOT" -n "b$SEG" "$T/img"
	path=$(seg_col "$SEG" PATH)
	"$XIPTOOL" exec "@$SEG" /bin/busybox sleep 30 &
	SLEEPER=$!
	for i in $(seq 100); do
		grep -q "${path##*/}" "/proc/$SLEEPER/maps" 2>/dev/null && break
		sleep 0.05
	done
	run -0 xiptool ps --json
	printf '%s' "$output" > "$T/ps.json"
	"$PY" - "$T/ps.json" "$SEG" "$SLEEPER" <<'PYEOF'
import json, sys
segs = {s["segment"]: s for s in json.load(open(sys.argv[1]))["segments"]}
a, b = segs[sys.argv[2]], segs["b" + sys.argv[2]]
assert a["signer"] == "/CN=signer" and a["verified"] is True, a
assert b["signer"] is None and b["verified"] is True, b
kid = [k for k in a["children"] if k["pid"] == int(sys.argv[3])]
assert len(kid) == 1 and kid[0]["signer"] == "/CN=signer", a
PYEOF
	# the table keeps its columns
	run -0 xiptool ps
	[[ "${lines[0]}" =~ COPIED$ ]]
	kill "$SLEEPER"
	wait_until 5 gone "$SLEEPER"
	SLEEPER=
}

@test "nbdkit plugin trust=: serves a signed image against the signed root hash; another signer, a root-hash= not the signed one, a bad block stop it" {
	require_pull
	nbdkit -U "$T/p.sock" --pidfile "$T/p.pid" "$PLUGIN" image="$T/img" \
		trust="$T/trust"
	nbdcopy "nbd+unix:///?socket=$T/p.sock" - | cmp - "$T/img"
	# what it serves, attach --trust admits
	xiptool attach --trust "$T/trust" -n "$SEG" "nbd+unix:///?socket=$T/p.sock"
	[ "$(seg_col "$SEG" SIGNER)" = /CN=signer ]
	xiptool detach "$SEG"
	run timeout 30 nbdkit -f -U "$T/x.sock" "$PLUGIN" image="$T/img" \
		trust="$T/other-cert.pem"
	echo "$output"
	[ "$status" -ne 0 ]
	grepq "the signature does not verify against $T/other-cert.pem: signer certificate not found" <<<"$output"
	wrong=$(printf '%s' "$IMG_ROOT" | tr 0-9a-f 1-9a-f0)
	run timeout 30 nbdkit -f -U "$T/x.sock" "$PLUGIN" image="$T/img" \
		trust="$T/trust" root-hash="$wrong"
	[ "$status" -ne 0 ]
	grepq "root-hash= is not the signed root hash ($IMG_ROOT)" <<<"$output"
	cp "$T/img" "$T/bad"
	vt_flip "$T/bad" "$(vt_offset "$T/img" data)"
	run timeout 30 nbdkit -f -U "$T/x.sock" "$PLUGIN" image="$T/bad" \
		trust="$T/trust"
	[ "$status" -ne 0 ]
	grepq '(/bin/busybox): does not match its hash' <<<"$output"
	run timeout 30 nbdkit -f -U "$T/x.sock" "$PLUGIN" image="$T/img" \
		trust="$T/trust" readonly=false
	[ "$status" -ne 0 ]
}

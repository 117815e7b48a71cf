#!/usr/bin/env bats
# xiptool push and attach docker://: images as OCI artifacts in a real
# registry (Debian's docker-registry, its access log counting requests;
# one with basic auth), read back by skopeo and by attach; a tampered
# blob, a container image, wrong credentials and a stop signal mid-pull
# leave nothing attached.

load ../lib/common
load ../lib/attach
load ../lib/registry
bats_require_minimum_version 1.5.0

export SOURCE_DATE_EPOCH=1000000000

setup_file() {
	require_cmd docker-registry skopeo htpasswd openssl python3 curl
	export RT=$BATS_FILE_TMPDIR
	reg_start plain accesslog
	reg_start auth htpasswd
	PLAIN=$(cat "$RT/plain/port")
	AUTH=$(cat "$RT/auth/port")
	export PLAIN AUTH
	mkdir -p "$RT/tree/etc"
	echo hello > "$RT/tree/etc/motd"
	head -c 100000 /dev/urandom > "$RT/tree/etc/data"
	"$XIPTOOL" mkfs -q -L pushed -d "$RT/tree" "$RT/plain.img"
	"$XIPTOOL" mkfs -q -L vpushed --verity --root-hash-file "$RT/root" \
		-d "$RT/tree" "$RT/verity.img"
}

teardown_file() {
	reg_stop_all
}

setup() {
	attach_setup
	mkdir -p "$T/shm"
	export XIPTOOL_SHMDIR=$T/shm
	R=r$(printf %s "$U" | tr 'A-Z' 'a-z')
	REPO=t/$R
}

teardown() {
	peer_stop_all
	attach_teardown
}

# nothing attached, no segment file, no record
nothing_left() {
	run ls -A "$T/shm"
	[ "$status" -eq 0 ]
	[ -z "$output" ]
	run "$XIPTOOL" list --noheadings
	[ "$status" -eq 0 ]
	[ -z "$output" ]
}

# the requests of the registry's access log for $REPO: "METHOD KIND", one
# a line (KIND: blobs, uploads, manifests)
requests() {
	python3 - "$RT/plain/log" "$REPO" <<-'EOF'
	import re, sys
	for line in open(sys.argv[1], errors="replace"):
	    m = re.search(r'"([A-Z]+) /v2/' + re.escape(sys.argv[2]) +
	                  r'/(blobs/uploads|blobs|manifests)[/?]', line)
	    if m:
	        print(m.group(1), m.group(2).replace("blobs/uploads", "uploads"))
	EOF
}

@test "push: an OCI artifact skopeo reads (artifactType, config and layer media types, annotations, the layer is the image)" {
	local ref="docker://127.0.0.1:$PLAIN/$REPO:v1" cfg
	run xiptool push --tls-verify=false "$RT/plain.img" "$ref"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ $output == "$RT/plain.img: pushed to $ref (sha256:"*"; 2 blobs sent, 0 already there)" ]]
	skopeo inspect --raw --tls-verify=false "$ref" > "$T/manifest.json"
	python3 - "$T/manifest.json" "$RT/plain.img" <<-'EOF'
	import hashlib, json, os, sys
	m = json.load(open(sys.argv[1]))
	img = open(sys.argv[2], "rb").read()
	assert m["mediaType"] == "application/vnd.oci.image.manifest.v1+json", m
	assert m["artifactType"] == "application/vnd.xiptool.image.v1", m
	assert m["config"]["mediaType"] == "application/vnd.xiptool.image.config.v1+json", m
	[l] = m["layers"]
	assert l["mediaType"] == "application/vnd.xiptool.image.layer.v1.ext2", l
	assert l["digest"] == "sha256:" + hashlib.sha256(img).hexdigest(), l
	assert l["size"] == len(img), l
	a = m["annotations"]
	assert a["org.opencontainers.image.title"] == "plain.img", a
	assert a["org.xiptool.image.label"] == "pushed", a
	assert a["org.xiptool.image.size"] == str(len(img)), a
	assert len(a["org.xiptool.image.uuid"]) == 36, a
	assert "org.xiptool.image.root-hash" not in a, a
	EOF
	cfg=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["config"]["digest"])' "$T/manifest.json")
	curl -fsS -o "$T/config.json" "http://127.0.0.1:$PLAIN/v2/$REPO/blobs/$cfg"
	python3 - "$T/config.json" "$RT/plain.img" <<-'EOF'
	import json, os, sys
	c = json.load(open(sys.argv[1]))
	assert c["label"] == "pushed", c
	assert c["size"] == os.path.getsize(sys.argv[2]), c
	assert c["signed"] is False, c
	assert "rootHash" not in c, c
	EOF
}

@test "push: a verity image's root hash in the annotations and the config" {
	local ref="docker://127.0.0.1:$PLAIN/$REPO:v1" cfg
	run xiptool push -q --tls-verify=false "$RT/verity.img" "$ref"
	echo "$output"
	[ "$status" -eq 0 ]
	[ -z "$output" ]
	skopeo inspect --raw --tls-verify=false "$ref" > "$T/manifest.json"
	python3 - "$T/manifest.json" "$(cat "$RT/root")" <<-'EOF'
	import json, sys
	a = json.load(open(sys.argv[1]))["annotations"]
	assert a["org.xiptool.image.root-hash"] == sys.argv[2], a
	EOF
	cfg=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["config"]["digest"])' "$T/manifest.json")
	curl -fsS -o "$T/config.json" "http://127.0.0.1:$PLAIN/v2/$REPO/blobs/$cfg"
	python3 - "$T/config.json" "$(cat "$RT/root")" <<-'EOF'
	import json, sys
	c = json.load(open(sys.argv[1]))
	assert c["rootHash"] == sys.argv[2], c
	assert c["label"] == "vpushed", c
	EOF
}

@test "push twice: the second asks for each blob (HEAD) and sends none; the manifest goes last" {
	local ref="docker://127.0.0.1:$PLAIN/$REPO:v1"
	run xiptool push --tls-verify=false "$RT/plain.img" "$ref"
	[ "$status" -eq 0 ]
	requests > "$T/first"
	cat "$T/first"
	[ "$(grep -c '^HEAD blobs$' "$T/first")" -eq 2 ]
	[ "$(grep -c '^POST uploads$' "$T/first")" -eq 2 ]
	[ "$(tail -n 1 "$T/first")" = "PUT manifests" ]
	run xiptool push --tls-verify=false "$RT/plain.img" "$ref"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ $output == *"; 0 blobs sent, 2 already there)" ]]
	requests | tail -n +"$(($(wc -l < "$T/first") + 1))" > "$T/second"
	cat "$T/second"
	[ "$(cat "$T/second" | tr '\n' ,)" = "HEAD blobs,HEAD blobs,PUT manifests," ]
}

@test "push: a layer over 16 MiB goes in PATCH chunks, then one PUT" {
	local ref="docker://127.0.0.1:$PLAIN/$REPO:big"
	mkdir "$T/big"
	head -c 18M /dev/urandom > "$T/big/blob"
	xiptool mkfs -q -d "$T/big" "$T/big.img"
	run xiptool push -q --tls-verify=false "$T/big.img" "$ref"
	echo "$output"
	[ "$status" -eq 0 ]
	requests > "$T/reqs"
	cat "$T/reqs"
	[ "$(grep -c '^PATCH uploads$' "$T/reqs")" -eq 1 ]
	xiptool attach -n "$SEG" --tls-verify=false "$ref"
	xiptool save "$SEG" "$T/back.img"
	cmp "$T/big.img" "$T/back.img"
}

@test "push: a digest is not a tag; not docker://: usage errors" {
	run xiptool push --tls-verify=false "$RT/plain.img" "docker://127.0.0.1:$PLAIN/$REPO@sha256:$(printf '%064d' 0)"
	echo "$output"
	[ "$status" -eq 2 ]
	[[ $output == "xiptool push: docker://127.0.0.1:$PLAIN/$REPO@sha256:"*": push needs a tag, not a digest"* ]]
	run xiptool push "$RT/plain.img" "$T/x"
	[ "$status" -eq 2 ]
}

@test "push and attach: wrong credentials: exit 3, one line, nothing attached" {
	local ref="docker://127.0.0.1:$AUTH/$REPO:v1"
	run xiptool push --tls-verify=false --creds user:wrong "$RT/plain.img" "$ref"
	echo "$output"
	[ "$status" -eq 3 ]
	[ "$output" = "xiptool push: docker://127.0.0.1:$AUTH/$REPO: authentication failed (wrong credentials?)" ]
	run xiptool push -q --tls-verify=false --creds user:pass "$RT/plain.img" "$ref"
	echo "$output"
	[ "$status" -eq 0 ]
	run xiptool attach -n "$SEG" --tls-verify=false --creds user:wrong "$ref"
	echo "$output"
	[ "$status" -eq 3 ]
	[ "$output" = "xiptool attach: docker://127.0.0.1:$AUTH/$REPO: authentication failed (wrong credentials?)" ]
	nothing_left
	run xiptool attach -n "$SEG" --tls-verify=false --creds user:pass "$ref"
	[ "$status" -eq 0 ]
}

@test "attach docker://: the pushed image in a segment (by tag and by digest); list shows the reference; save gives the image back" {
	local ref="docker://127.0.0.1:$PLAIN/$REPO:v1" digest
	xiptool push -q --tls-verify=false "$RT/plain.img" "$ref"
	run xiptool attach --tls-verify=false "$ref"
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$output" = "$R" ]
	run xiptool list --noheadings -o NAME,IMAGE
	[ "$status" -eq 0 ]
	[ "$(echo $output)" = "$R $ref" ]
	xiptool save "$R" "$T/back.img"
	cmp "$RT/plain.img" "$T/back.img"
	xiptool detach "$R"
	digest=sha256:$(skopeo inspect --raw --tls-verify=false "$ref" | sha256sum | cut -d' ' -f1)
	run xiptool attach -n "$SEG" --tls-verify=false "docker://127.0.0.1:$PLAIN/$REPO@$digest"
	echo "$output"
	[ "$status" -eq 0 ]
	xiptool save "$SEG" "$T/back2.img"
	cmp "$RT/plain.img" "$T/back2.img"
}

@test "attach docker:// --root-hash: a verity image admitted and sealed; a wrong root hash: exit 3, nothing left" {
	local ref="docker://127.0.0.1:$PLAIN/$REPO:v1" bad
	xiptool push -q --tls-verify=false "$RT/verity.img" "$ref"
	bad=$(sed 's/^./0/; t; s/^./1/' "$RT/root")
	[ "$bad" != "$(cat "$RT/root")" ] || bad=$(sed 's/^./1/' "$RT/root")
	run xiptool attach -n "$SEG" --tls-verify=false --root-hash "$bad" "$ref"
	echo "$output"
	[ "$status" -eq 3 ]
	[[ $output == "xiptool attach: $ref: the root hash does not match"* ]]
	nothing_left
	run xiptool attach -n "$SEG" --tls-verify=false --root-hash "$(cat "$RT/root")" "$ref"
	echo "$output"
	[ "$status" -eq 0 ]
	run xiptool list --noheadings -o NAME,VERIFIED
	[ "$(echo $output)" = "$SEG 1" ]
	xiptool save "$SEG" "$T/back.img"
	cmp "$RT/verity.img" "$T/back.img"
}

@test "attach docker://: a tampered blob in the registry's storage: exit 3, the digest named, nothing left" {
	local ref="docker://127.0.0.1:$PLAIN/$REPO:v1" digest blob
	xiptool push -q --tls-verify=false "$RT/plain.img" "$ref"
	digest=$(skopeo inspect --raw --tls-verify=false "$ref" | python3 -c 'import json,sys; print(json.load(sys.stdin)["layers"][0]["digest"])')
	blob=$(reg_blob_file plain "$digest")
	cp "$blob" "$T/blob.orig"
	printf 'X' | dd of="$blob" bs=1 seek=70000 conv=notrunc status=none
	run xiptool attach -n "$SEG" --tls-verify=false "$ref"
	cp "$T/blob.orig" "$blob"
	echo "$output"
	[ "$status" -eq 3 ]
	[[ $output == "xiptool attach: $ref: the layer's digest is sha256:"*", not $digest" ]]
	nothing_left
}

@test "attach docker://: a container image is refused in one line saying what it is" {
	local ref="docker://127.0.0.1:$PLAIN/$REPO:c"
	mkdir -p "$T/c/etc"
	echo c > "$T/c/etc/c"
	tar --numeric-owner -C "$T/c" -cf "$T/c.tar" .
	python3 "$TOP_SRCDIR/tests/lib/mkoci.py" "$T/L" "$T/c.tar"
	reg_push "$T/L:t" "$PLAIN" "$REPO:c"
	run xiptool attach -n "$SEG" --tls-verify=false "$ref"
	echo "$output"
	[ "$status" -eq 3 ]
	[ "$output" = "xiptool attach: $ref: a container image: use mkfs --oci for container images" ]
	nothing_left
}

@test "attach docker://: SIGTERM mid-pull: 143, nothing left" {
	local port ref rc=0
	xiptool push -q --tls-verify=false "$RT/plain.img" "docker://127.0.0.1:$PLAIN/$REPO:v1"
	port=$(peer_start stall stall --upstream "http://127.0.0.1:$PLAIN" --log "$T/stall.log")
	ref="docker://127.0.0.1:$port/$REPO:v1"
	"$XIPTOOL" attach -n "$SEG" --tls-verify=false "$ref" > "$T/attach.out" 2>&1 &
	apid=$!
	wait_until 10 grep -q stalled "$T/stall.log"
	kill -TERM "$apid"
	wait "$apid" || rc=$?
	cat "$T/attach.out"
	[ "$rc" -eq 143 ]
	grep -q "interrupted" "$T/attach.out"
	nothing_left
}

@test "push and attach docker:// --trust: a signed image says so in its config; admitted against the store, refused by another" {
	local ref="docker://127.0.0.1:$PLAIN/$REPO:s" n cfg
	for n in signer other; do
		openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 \
			-nodes -days 2 -subj "/CN=$n" -keyout "$T/$n-key.pem" \
			-out "$T/$n-cert.pem" 2>/dev/null
	done
	cp "$RT/verity.img" "$T/signed.img"
	xiptool sign --private-key "$T/signer-key.pem" --certificate "$T/signer-cert.pem" "$T/signed.img" >/dev/null
	xiptool push -q --tls-verify=false "$T/signed.img" "$ref"
	cfg=$(skopeo inspect --raw --tls-verify=false "$ref" | python3 -c 'import json,sys; print(json.load(sys.stdin)["config"]["digest"])')
	curl -fsS -o "$T/config.json" "http://127.0.0.1:$PLAIN/v2/$REPO/blobs/$cfg"
	python3 -c 'import json,sys; c = json.load(open(sys.argv[1])); assert c["signed"] is True, c' "$T/config.json"
	run xiptool attach -n "$SEG" --tls-verify=false --trust "$T/other-cert.pem" "$ref"
	echo "$output"
	[ "$status" -eq 3 ]
	[[ $output == "xiptool attach: $ref: the signature does not verify against $T/other-cert.pem"* ]]
	nothing_left
	run xiptool attach -n "$SEG" --tls-verify=false --trust "$T/signer-cert.pem" "$ref"
	echo "$output"
	[ "$status" -eq 0 ]
	run xiptool list --noheadings -o NAME,VERIFIED,SIGNER
	[ "$(echo $output)" = "$SEG 1 /CN=signer" ]
}

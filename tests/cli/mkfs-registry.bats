#!/usr/bin/env bats
# xiptool mkfs --oci docker://: images pulled from a real registry (Debian's
# docker-registry, plain HTTP, HTTPS with a self-signed certificate, basic
# auth) equal the images built from the layouts skopeo pushed; the token
# flow, a redirect to another host, a stall and hostile manifests come
# from registry-peer.py in front of the registry or in its place.

load ../lib/common
load ../lib/registry
bats_require_minimum_version 1.5.0

export SOURCE_DATE_EPOCH=1000000000

# a layout of two layers: a tree, then deletions (a whiteout, an opaque
# directory) and a new file
make_layout() {
	local d=$1 l
	mkdir -p "$d/l1/etc" "$d/l1/gone" "$d/l1/opq/a" "$d/l1/bin" "$d/l2/opq"
	echo hello > "$d/l1/etc/motd"
	echo x > "$d/l1/gone/f"
	echo o > "$d/l1/opq/a/o"
	head -c 200000 /dev/urandom > "$d/l1/bin/big"
	echo new > "$d/l2/opq/new"
	touch "$d/l2/opq/.wh..wh..opq" "$d/l2/.wh.gone"
	for l in l1 l2; do
		tar --numeric-owner -C "$d/$l" -cf "$d/$l.tar" .
	done
	python3 "$TOP_SRCDIR/tests/lib/mkoci.py" "$d/L" --gzip "$d/l1.tar" "$d/l2.tar"
}

# layout $1/M, tag "multi": an image index of linux/amd64 and linux/arm64
make_multi() {
	local d=$1 a
	for a in amd64 arm64; do
		mkdir -p "$d/m-$a/etc"
		echo "$a" > "$d/m-$a/etc/arch"
		tar --numeric-owner -C "$d/m-$a" -cf "$d/m-$a.tar" .
		python3 "$TOP_SRCDIR/tests/lib/mkoci.py" "$d/M-$a" "$d/m-$a.tar"
	done
	python3 - "$d" <<-'EOF'
	import hashlib, json, os, shutil, sys
	d = sys.argv[1]
	out = d + "/M"
	os.makedirs(out + "/blobs/sha256")
	shutil.copy(d + "/M-amd64/oci-layout", out)
	mans = []
	for a in ("amd64", "arm64"):
	    src = d + "/M-" + a
	    for b in os.listdir(src + "/blobs/sha256"):
	        shutil.copy(src + "/blobs/sha256/" + b, out + "/blobs/sha256/")
	    m = json.load(open(src + "/index.json"))["manifests"][0]
	    del m["annotations"]
	    m["platform"] = {"os": "linux", "architecture": a}
	    mans.append(m)
	idx = json.dumps({"schemaVersion": 2,
	                  "mediaType": "application/vnd.oci.image.index.v1+json",
	                  "manifests": mans}).encode()
	h = hashlib.sha256(idx).hexdigest()
	open(out + "/blobs/sha256/" + h, "wb").write(idx)
	json.dump({"schemaVersion": 2, "manifests": [{
	    "mediaType": "application/vnd.oci.image.index.v1+json",
	    "digest": "sha256:" + h, "size": len(idx),
	    "annotations": {"org.opencontainers.image.ref.name": "multi"}}]},
	    open(out + "/index.json", "w"))
	EOF
}

setup_file() {
	require_cmd docker-registry skopeo htpasswd openssl python3
	export RT=$BATS_FILE_TMPDIR
	reg_cert
	reg_start plain
	reg_start secure tls htpasswd
	PLAIN=$(cat "$RT/plain/port")
	SECURE=$(cat "$RT/secure/port")
	export PLAIN SECURE
	make_layout "$RT"
	make_multi "$RT"
	reg_push "$RT/L:t" "$PLAIN" t/img:v1
	reg_push "$RT/L:t" "$SECURE" t/img:v1 --dest-creds user:pass
	reg_push "$RT/M:multi" "$PLAIN" t/multi:v1 --all
	"$XIPTOOL" mkfs -q --oci "$RT/L:t" "$RT/layout.img"
}

teardown_file() {
	reg_stop_all
}

setup() {
	common_setup
	mkdir "$T/out"
}

teardown() {
	peer_stop_all
	common_teardown
}

# the last line of $output, and the number of lines
last_line() {
	printf '%s\n' "$output" | tail -n 1
}

nothing_left() {
	run ls -A "$T/out"
	[ "$status" -eq 0 ]
	[ -z "$output" ]
}

@test "mkfs --oci docker://: the image equals the layout's (whiteouts, an opaque directory), over plain HTTP with --tls-verify=false" {
	run xiptool mkfs -q --tls-verify=false --oci "docker://127.0.0.1:$PLAIN/t/img:v1" "$T/out/img"
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$output" = "xiptool mkfs: warning: docker://127.0.0.1:$PLAIN/t/img:v1: --tls-verify=false: plain HTTP and unverified certificates allowed" ]
	cmp "$RT/layout.img" "$T/out/img"
	fsck_clean "$T/out/img"
}

@test "mkfs --oci docker://: plain HTTP is never used without --tls-verify=false" {
	run xiptool mkfs -q --oci "docker://127.0.0.1:$PLAIN/t/img:v1" "$T/out/img"
	echo "$output"
	[ "$status" -eq 3 ]
	[ "$output" = "xiptool mkfs: docker://127.0.0.1:$PLAIN/t/img: manifests/v1: SSL connect error (a plain HTTP registry? --tls-verify=false allows it)" ]
	nothing_left
}

@test "mkfs --oci docker://: HTTPS trusted through SSL_CERT_FILE, basic auth from --creds, --authfile, REGISTRY_AUTH_FILE" {
	local ref="docker://127.0.0.1:$SECURE/t/img:v1" enc
	SSL_CERT_FILE=$RT/cert.pem run xiptool mkfs -q --creds user:pass --oci "$ref" "$T/out/img"
	echo "$output"
	[ "$status" -eq 0 ]
	[ -z "$output" ]
	cmp "$RT/layout.img" "$T/out/img"
	enc=$(printf user:pass | base64)
	printf '{"auths": {"127.0.0.1:%s": {"auth": "%s"}}}\n' "$SECURE" "$enc" > "$T/auth.json"
	SSL_CERT_FILE=$RT/cert.pem run xiptool mkfs -q --authfile "$T/auth.json" --oci "$ref" "$T/out/img2"
	echo "$output"
	[ "$status" -eq 0 ]
	cmp "$RT/layout.img" "$T/out/img2"
	SSL_CERT_FILE=$RT/cert.pem REGISTRY_AUTH_FILE=$T/auth.json run xiptool mkfs -q --oci "$ref" "$T/out/img3"
	echo "$output"
	[ "$status" -eq 0 ]
	cmp "$RT/layout.img" "$T/out/img3"
}

@test "mkfs --oci docker://: an untrusted certificate is refused unless --tls-verify=false" {
	local ref="docker://127.0.0.1:$SECURE/t/img:v1"
	run xiptool mkfs -q --creds user:pass --oci "$ref" "$T/out/img"
	echo "$output"
	[ "$status" -eq 3 ]
	[[ $output == *"(--tls-verify=false to skip the check)" ]]
	nothing_left
	run xiptool mkfs -q --creds user:pass --tls-verify=false --oci "$ref" "$T/out/img"
	echo "$output"
	[ "$status" -eq 0 ]
	cmp "$RT/layout.img" "$T/out/img"
}

@test "mkfs --oci docker://: wrong or missing credentials: exit 3, one line" {
	local ref="docker://127.0.0.1:$SECURE/t/img:v1"
	SSL_CERT_FILE=$RT/cert.pem HOME=$T XDG_RUNTIME_DIR=$T run xiptool mkfs -q --creds user:wrong --oci "$ref" "$T/out/img"
	echo "$output"
	[ "$status" -eq 3 ]
	[ "$output" = "xiptool mkfs: docker://127.0.0.1:$SECURE/t/img: authentication failed (wrong credentials?)" ]
	SSL_CERT_FILE=$RT/cert.pem HOME=$T XDG_RUNTIME_DIR=$T REGISTRY_AUTH_FILE= run xiptool mkfs -q --oci "$ref" "$T/out/img"
	echo "$output"
	[ "$status" -eq 3 ]
	[ "$output" = "xiptool mkfs: docker://127.0.0.1:$SECURE/t/img: the registry asks for credentials (--creds or --authfile)" ]
	nothing_left
}

@test "mkfs --oci docker://: a bearer token from the registry's token server (WWW-Authenticate: Bearer)" {
	local port
	port=$(peer_start bearer bearer --upstream "http://127.0.0.1:$PLAIN" --log "$T/bearer.log")
	run xiptool mkfs -q --tls-verify=false --creds user:pass --oci "docker://127.0.0.1:$port/t/img:v1" "$T/out/img"
	echo "$output"
	[ "$status" -eq 0 ]
	cmp "$RT/layout.img" "$T/out/img"
	grep -q '"path": "/token?scope=repository%3At%2Fimg%3Apull&service=test", "authorization": "Basic dXNlcjpwYXNz"' "$T/bearer.log"
	grep -q '"authorization": "Bearer tok-3c9f2a"' "$T/bearer.log"
	run xiptool mkfs -q --tls-verify=false --creds user:nope --oci "docker://127.0.0.1:$port/t/img:v1" "$T/out/img2"
	echo "$output"
	[ "$status" -eq 3 ]
	[ "$(last_line)" = "xiptool mkfs: docker://127.0.0.1:$port/t/img: authentication failed: credentials refused by the token server" ]
	[ ! -e "$T/out/img2" ]
}

@test "mkfs --oci docker://: --platform picks one image of an index; none for a platform the index lacks" {
	local a
	for a in amd64 arm64; do
		run xiptool mkfs -q --tls-verify=false --platform linux/$a --oci "docker://127.0.0.1:$PLAIN/t/multi:v1" "$T/out/$a"
		echo "$output"
		[ "$status" -eq 0 ]
		run debugfs -R "cat /etc/arch" "$T/out/$a"
		[ "$status" -eq 0 ]
		[ "$(last_line)" = "$a" ]
	done
	run xiptool mkfs -q --tls-verify=false --platform linux/s390x --oci "docker://127.0.0.1:$PLAIN/t/multi:v1" "$T/out/x"
	echo "$output"
	[ "$status" -eq 3 ]
	[[ $(last_line) == *"several images and none for linux/s390x"* ]]
	[ ! -e "$T/out/x" ]
}

@test "mkfs --oci docker://REPO@sha256:DIGEST: by digest; a digest the registry lacks: exit 3" {
	local dg
	dg=$(skopeo inspect --raw --tls-verify=false "docker://127.0.0.1:$PLAIN/t/img:v1" | sha256sum | cut -d' ' -f1)
	run xiptool mkfs -q --tls-verify=false --oci "docker://127.0.0.1:$PLAIN/t/img@sha256:$dg" "$T/out/img"
	echo "$output"
	[ "$status" -eq 0 ]
	cmp "$RT/layout.img" "$T/out/img"
	run xiptool mkfs -q --tls-verify=false --oci "docker://127.0.0.1:$PLAIN/t/img@sha256:$(printf '%064d' 0)" "$T/out/img2"
	echo "$output"
	[ "$status" -eq 3 ]
	[[ $(last_line) == *": not found (HTTP 404: manifest unknown)" ]]
	[ ! -e "$T/out/img2" ]
}

@test "mkfs --oci docker://: a missing tag: exit 3, one line" {
	run xiptool mkfs -q --tls-verify=false --oci "docker://127.0.0.1:$PLAIN/t/img:nosuch" "$T/out/img"
	echo "$output"
	[ "$status" -eq 3 ]
	[ "$(printf '%s\n' "$output" | wc -l)" -eq 2 ]
	[ "$(last_line)" = "xiptool mkfs: docker://127.0.0.1:$PLAIN/t/img: manifests/nosuch: not found (HTTP 404: manifest unknown)" ]
	nothing_left
}

# push a layout of one layer of random bytes as t/$1:v1; its layer's
# digest on stdout
push_unique() {
	mkdir -p "$T/u/bin"
	head -c 100000 /dev/urandom > "$T/u/bin/f"
	tar --numeric-owner -C "$T/u" -cf "$T/u.tar" .
	python3 "$TOP_SRCDIR/tests/lib/mkoci.py" "$T/U" --gzip "$T/u.tar"
	reg_push "$T/U:t" "$PLAIN" "t/$1:v1"
	layout_layers "$T/U" t
}

@test "mkfs --oci docker://: a layer missing from the registry: exit 3, nothing left" {
	local dg
	dg=$(push_unique missing)
	rm "$(reg_blob_file plain "$dg")"
	run xiptool mkfs -q --tls-verify=false --oci "docker://127.0.0.1:$PLAIN/t/missing:v1" "$T/out/img"
	echo "$output"
	[ "$status" -eq 3 ]
	[ "$(last_line)" = "xiptool mkfs: docker://127.0.0.1:$PLAIN/t/missing: blobs/$dg: not found (HTTP 404: blob unknown to registry)" ]
	nothing_left
}

@test "mkfs --oci docker://: a layer changed in the registry's storage: exit 3 (digest mismatch), nothing left" {
	local dg f
	dg=$(push_unique tampered)
	f=$(reg_blob_file plain "$dg")
	python3 -c 'import sys
p = sys.argv[1]
b = bytearray(open(p, "rb").read())
b[600] ^= 1
open(p, "wb").write(b)' "$f"
	run xiptool mkfs -q --tls-verify=false --oci "docker://127.0.0.1:$PLAIN/t/tampered:v1" "$T/out/img"
	echo "$output"
	[ "$status" -eq 3 ]
	[[ $(last_line) == "xiptool mkfs: docker://127.0.0.1:$PLAIN/t/tampered: layer 1 (${dg:0:19}): digest mismatch (sha256:"* ]]
	nothing_left
}

@test "mkfs --oci docker://: a layer longer than its descriptor (its Content-Length says so, or it streams on): exit 3, nothing left" {
	local dg f port
	dg=$(push_unique longer)
	f=$(reg_blob_file plain "$dg")
	head -c 70000 /dev/zero >> "$f"
	run xiptool mkfs -q --tls-verify=false --oci "docker://127.0.0.1:$PLAIN/t/longer:v1" "$T/out/img"
	echo "$output"
	[ "$status" -eq 3 ]
	[[ $(last_line) == "xiptool mkfs: docker://127.0.0.1:$PLAIN/t/longer: layer 1 (${dg:0:19}): size 17"*" exceeds the 10"*" bytes of its descriptor" ]]
	nothing_left
	port=$(peer_start nolength nolength --upstream "http://127.0.0.1:$PLAIN")
	run xiptool mkfs -q --tls-verify=false --oci "docker://127.0.0.1:$port/t/longer:v1" "$T/out/img"
	echo "$output"
	[ "$status" -eq 3 ]
	[[ $(last_line) == "xiptool mkfs: docker://127.0.0.1:$port/t/longer: layer 1 (${dg:0:19}): size exceeds the 10"*" bytes of its descriptor" ]]
	nothing_left
}

@test "mkfs --oci docker://: a registry that stops sending mid-layer: exit 3 within --timeout" {
	local port start
	port=$(peer_start stall stall --upstream "http://127.0.0.1:$PLAIN" --log "$T/stall.log")
	start=$SECONDS
	run xiptool mkfs -q --tls-verify=false --timeout 2 --oci "docker://127.0.0.1:$port/t/img:v1" "$T/out/img"
	echo "$output"
	[ "$status" -eq 3 ]
	[ $((SECONDS - start)) -le 5 ]
	grep -qx stalled "$T/stall.log"
	[[ $(last_line) == *": nothing received for 2 s" ]]
	nothing_left
}

@test "mkfs --oci docker://: a 503 is tried again" {
	local port
	port=$(peer_start flaky flaky --upstream "http://127.0.0.1:$PLAIN" --log "$T/flaky.log")
	run xiptool mkfs -q --tls-verify=false --oci "docker://127.0.0.1:$port/t/img:v1" "$T/out/img"
	echo "$output"
	[ "$status" -eq 0 ]
	cmp "$RT/layout.img" "$T/out/img"
	[ "$(grep -c '/blobs/' "$T/flaky.log")" -eq 4 ]
}

@test "mkfs --oci docker://: SIGTERM during a pull: exit 143, nothing left" {
	local port pid
	port=$(peer_start stall stall --upstream "http://127.0.0.1:$PLAIN" --log "$T/stall.log")
	"$XIPTOOL" mkfs -q --tls-verify=false --oci "docker://127.0.0.1:$port/t/img:v1" "$T/out/img" 2>/dev/null &
	pid=$!
	wait_until 10 grep -qsx stalled "$T/stall.log"
	kill -TERM "$pid"
	status=0
	wait "$pid" || status=$?
	[ "$status" -eq 143 ]
	nothing_left
}

@test "mkfs --oci docker://: blobs redirected to another host: followed, the credentials not sent there" {
	local other front
	other=$(peer_start plain other --host 127.0.0.2 --upstream "http://127.0.0.1:$PLAIN" --log "$T/other.log")
	front=$(peer_start redirect front --upstream "http://127.0.0.1:$PLAIN" --to "http://127.0.0.2:$other" --log "$T/front.log")
	run xiptool mkfs -q --tls-verify=false --creds user:pass --oci "docker://127.0.0.1:$front/t/img:v1" "$T/out/img"
	echo "$output"
	[ "$status" -eq 0 ]
	cmp "$RT/layout.img" "$T/out/img"
	grep -q '"authorization": "Basic dXNlcjpwYXNz"' "$T/front.log"
	[ "$(grep -c '/blobs/' "$T/other.log")" -eq 2 ]
	run grep -c '"authorization": null' "$T/other.log"
	[ "$output" -eq 2 ]
}

@test "mkfs --oci docker://: hostile manifests (huge, with a Content-Length or not, deep, a config's media type, a negative size): exit 3, one line" {
	local port c want
	for c in huge hugelen deep mediatype negsize; do
		port=$(peer_start hostile "h-$c" --case "$c")
		run xiptool mkfs -q --tls-verify=false --oci "docker://127.0.0.1:$port/t/h:v1" "$T/out/img"
		echo "$output"
		[ "$status" -eq 3 ]
		[ "$(printf '%s\n' "$output" | wc -l)" -eq 2 ]
		case $c in
		huge | hugelen) want="t/h:v1: larger than 4194304 bytes" ;;
		deep) want="not a JSON object: nesting too deep" ;;
		mediatype) want="not an image manifest (application/vnd.oci.image.config.v1+json)" ;;
		negsize) want="no digest, media type or size" ;;
		esac
		[[ $(last_line) == *"$want" ]]
		nothing_left
	done
}

@test "mkfs --oci docker://REPO@DIGEST: a manifest that is not the digest asked for: exit 3" {
	local port
	port=$(peer_start hostile h --case mediatype)
	run xiptool mkfs -q --tls-verify=false --oci "docker://127.0.0.1:$port/t/h@sha256:$(printf '%064d' 0)" "$T/out/img"
	echo "$output"
	[ "$status" -eq 3 ]
	[[ $(last_line) == "xiptool mkfs: docker://127.0.0.1:$port/t/h@sha256:$(printf '%064d' 0): digest mismatch (sha256:"* ]]
	nothing_left
}

@test "mkfs --oci docker://: usage errors: a bad reference, registry options without docker://, a bad --tls-verify" {
	fails_with 2 "xiptool mkfs: docker://127.0.0.1:1/Bad: not a repository name (expected docker://HOST[:PORT]/REPO[:TAG|@sha256:DIGEST])
Try 'xiptool mkfs --help' for more information." xiptool mkfs --oci docker://127.0.0.1:1/Bad "$T/out/img"
	run xiptool mkfs --creds a:b --oci "$RT/L:t" "$T/out/img"
	[ "$status" -eq 2 ]
	run xiptool mkfs --tls-verify=maybe --oci docker://127.0.0.1:1/a "$T/out/img"
	[ "$status" -eq 2 ]
	nothing_left
}

@test "mkfs --oci docker://: libcurl that cannot be loaded is a one-line error, exit 3, no image" {
	local lib
	require_root
	lib=$(lazy_lib curl)
	[ -n "$lib" ]
	run unshare -m sh -c 'mount --bind /dev/null "$1" && exec "$2" mkfs -q --oci "$3" "$4"' \
		sh "$lib" "$XIPTOOL" "docker://127.0.0.1:$PLAIN/t/img:v1" "$T/out/img"
	echo "$output"
	[ "$status" -eq 3 ]
	[ "${#lines[@]}" -eq 1 ]
	[[ $output == "xiptool mkfs: "*"cannot load libcurl.so."*"file too short" ]]
	nothing_left
}

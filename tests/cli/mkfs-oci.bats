#!/usr/bin/env bats
# xiptool mkfs --oci against umoci's own unpacking of the same image
# layout (layers made by umoci repack, a hand-made layer with an opaque
# whiteout, zstd layers by skopeo), the kernel's ext4 driver, e2fsck and
# verify --against.

load ../lib/common
bats_require_minimum_version 1.5.0

TS=1000000000

# layout L with tags t1 (one layer), t2 (deletes, replaces a directory by
# a file and a file by a directory, a hard link to a lower layer's file)
# and t3 (+ a hand-made layer: an opaque directory, a whiteout of nothing)
make_layout() {
	local r
	cd "$T"
	umoci init --layout L
	umoci new --image L:t1
	umoci unpack --image L:t1 b1 >/dev/null
	r=b1/rootfs
	mkdir -p $r/etc $r/gone $r/keep/sub $r/d2f $r/opq/a
	echo hi > $r/etc/motd
	echo x > $r/gone/f
	echo y > $r/keep/sub/y
	echo z > $r/d2f/z
	echo f2d > $r/f2d
	echo o > $r/opq/a/o
	echo o2 > $r/opq/old
	ln $r/etc/motd $r/etc/motd.hl
	ln -s motd $r/etc/sl
	chown 1234:5678 $r/keep/sub/y
	chmod 4751 $r/keep/sub/y
	setfattr -n user.foo -v bar $r/etc/motd
	mknod $r/keep/fifo p
	umoci repack --image L:t1 b1 >/dev/null
	umoci unpack --image L:t1 b2 >/dev/null
	r=b2/rootfs
	rm -rf $r/gone $r/d2f $r/f2d
	echo nowfile > $r/d2f
	mkdir $r/f2d
	echo in > $r/f2d/in
	ln $r/keep/sub/y $r/etc/y.hl
	umoci repack --image L:t2 b2 >/dev/null
	mkdir -p lay/opq
	echo new > lay/opq/new
	touch lay/opq/.wh..wh..opq lay/.wh.nothing
	tar --numeric-owner -C lay -cf opq.tar opq .wh.nothing
	umoci raw add-layer --image L:t2 --tag t3 opq.tar
	cd - >/dev/null
}

# the blob file of the first layer of tag $2 in layout $1
layer_blob() {
	local man
	man=$(python3 - "$1" "$2" <<-'EOF'
	import json, sys
	idx = json.load(open(sys.argv[1] + "/index.json"))
	for m in idx["manifests"]:
	    if m["annotations"]["org.opencontainers.image.ref.name"] == sys.argv[2]:
	        d = m["digest"].split(":")[1]
	man = json.load(open(sys.argv[1] + "/blobs/sha256/" + d))
	print(man["layers"][0]["digest"].split(":")[1])
	EOF
	)
	echo "$1/blobs/sha256/$man"
}

@test "mkfs --oci: the kernel shows what umoci unpack gives (deletes, replaced types, opaque directory, hard links, xattrs)" {
	require_loop
	require_cmd umoci python3 setfattr
	make_layout
	run xiptool mkfs --oci "$T/L:t3" "$T/img"
	echo "$output"
	[ "$status" -eq 0 ]
	fsck_clean "$T/img"
	umoci unpack --image "$T/L:t3" "$T/u" >/dev/null
	list "$T/u/rootfs" --xattrs --no-ctime > "$T/l.u"
	for fs in ext2 ext4; do
		loop_mount "$T/img" $fs
		list "$T/mnt" --xattrs --no-ctime --no-lpf > "$T/l.$fs"
		loop_umount
		diff -u "$T/l.u" "$T/l.$fs"
	done
	# what the layers did is in the listing
	run ! grep -F '.wh.' "$T/l.ext4"
	run ! grep '^/gone' "$T/l.ext4"
	run ! grep '^/opq/a' "$T/l.ext4"
	run ! grep '^/opq/old' "$T/l.ext4"
	grepq '^/opq/new ' "$T/l.ext4"
	grepq '^/d2f 0o100000 ' "$T/l.ext4"
	grepq '^/f2d 0o40000 ' "$T/l.ext4"
	grepq '^/etc/y.hl 0o100000 4751 1234 5678 n2 ' "$T/l.ext4"
	grepq '^/etc/motd .*user.foo=' "$T/l.ext4"
	run xiptool verify --against "$T/u/rootfs" "$T/img"
	echo "$output"
	[ "$status" -eq 0 ]
}

@test "mkfs --oci: zstd layers (skopeo) give the same image as gzip ones; --squash and the tag rules" {
	require_cmd umoci skopeo python3 setfattr
	require_root
	make_layout
	skopeo copy --dest-compress-format zstd oci:"$T/L:t3" oci:"$T/Z:t3" >/dev/null
	grepq 'tar+zstd' "$T/Z/blobs/sha256/"*
	xiptool mkfs -q --timestamp $TS --oci "$T/L:t3" "$T/gz.img"
	xiptool mkfs -q --timestamp $TS --oci "$T/Z:t3" "$T/zst.img"
	cmp "$T/gz.img" "$T/zst.img"
	# the only image: no tag needed
	xiptool mkfs -q --timestamp $TS --oci "$T/Z" "$T/notag.img"
	cmp "$T/gz.img" "$T/notag.img"
	# several: the tags are named
	run xiptool mkfs --oci "$T/L" "$T/amb.img"
	echo "$output"
	[ "$status" -eq 3 ]
	grepq 't1, t2, t3' <<<"$output"
	[ ! -e "$T/amb.img" ]
	xiptool mkfs -q --squash --oci "$T/L:t3" "$T/sq.img"
	run debugfs -R 'stat /etc/y.hl' "$T/sq.img"
	grepq 'User: *0 *Group: *0' <<<"$output"
}

@test "mkfs --oci --verity: the layers' image carries a tree veritysetup accepts, reproducibly" {
	require_cmd umoci python3 setfattr veritysetup dumpe2fs
	require_root
	make_layout
	run xiptool mkfs -q --timestamp $TS --verity --oci "$T/L:t3" "$T/v1.img"
	echo "$output"
	[ "$status" -eq 0 ]
	root=$(sed -n 's/^root hash: //p' <<<"$output")
	[ "${#root}" -eq 64 ]
	xiptool mkfs -q --timestamp $TS --verity --oci "$T/L:t3" "$T/v2.img"
	cmp "$T/v1.img" "$T/v2.img"
	blocks=$(dumpe2fs -h "$T/v1.img" 2>/dev/null | sed -n 's/^Block count:[[:space:]]*//p')
	bs=$(dumpe2fs -h "$T/v1.img" 2>/dev/null | sed -n 's/^Block size:[[:space:]]*//p')
	veritysetup verify "$T/v1.img" "$T/v1.img" "$root" --hash-offset=$((blocks * bs))
	xiptool verify --root-hash "$root" "$T/v1.img"
	# the file system is the one built without the tree
	xiptool mkfs -q --timestamp $TS --oci "$T/L:t3" "$T/plain.img"
	cmp -n $((blocks * bs)) "$T/v1.img" "$T/plain.img"
	e2fsck -fn "$T/v1.img"
}

@test "mkfs --oci: a multi-platform index picks this host's image or --platform's; uid and gid maps apply to the layers' owners" {
	require_cmd umoci python3 setfattr debugfs
	require_root
	make_layout
	case $(uname -m) in
	x86_64) host=amd64 other=arm64 ;;
	aarch64) host=arm64 other=amd64 ;;
	*) skip "no platform name for $(uname -m)" ;;
	esac
	# one index, no tags: t1's manifest for the other platform, t3's for
	# this host
	cp -a "$T/L" "$T/M"
	"$PY" - "$T/M/index.json" "$host" "$other" <<-'EOF'
	import json, sys
	ix = json.load(open(sys.argv[1]))
	by = {m["annotations"]["org.opencontainers.image.ref.name"]: m
	      for m in ix["manifests"]}
	out = []
	for tag, arch in (("t1", sys.argv[3]), ("t3", sys.argv[2])):
	    m = dict(by[tag])
	    del m["annotations"]
	    m["platform"] = {"os": "linux", "architecture": arch}
	    out.append(m)
	ix["manifests"] = out
	json.dump(ix, open(sys.argv[1], "w"))
	EOF
	xiptool mkfs -q --timestamp $TS --oci "$T/M" "$T/host.img"
	xiptool mkfs -q --timestamp $TS --oci "$T/L:t3" "$T/t3.img"
	cmp "$T/host.img" "$T/t3.img"
	xiptool mkfs -q --timestamp $TS --platform "linux/$other" --oci "$T/M" "$T/other.img"
	xiptool mkfs -q --timestamp $TS --oci "$T/L:t1" "$T/t1.img"
	cmp "$T/other.img" "$T/t1.img"
	run xiptool mkfs --platform linux/s390x --oci "$T/M" "$T/none.img"
	echo "$output"
	[ "$status" -eq 3 ]
	[ ! -e "$T/none.img" ]
	# owners from the layers, through the maps
	xiptool mkfs -q --uid-map 1234:2000 --gid-map 5678:3000 --oci "$T/L:t3" "$T/map.img"
	run debugfs -R 'stat /etc/y.hl' "$T/map.img"
	grepq 'User: *2000 *Group: *3000' <<<"$output"
}

# layer_digests LAYOUT TAG: the digests of the layers of TAG, in order
layer_digests() {
	"$PY" - "$1" "$2" <<-'EOF'
	import json, sys
	idx = json.load(open(sys.argv[1] + "/index.json"))
	for m in idx["manifests"]:
	    if m["annotations"]["org.opencontainers.image.ref.name"] == sys.argv[2]:
	        d = m["digest"].split(":")[1]
	man = json.load(open(sys.argv[1] + "/blobs/sha256/" + d))
	for l in man["layers"]:
	    print(l["digest"])
	EOF
}

@test "mkfs --oci: layers umoci insert wrote (no end-of-archive blocks) give what umoci unpack gives, with one warning naming each layer" {
	bats_require_minimum_version 1.5.0
	require_loop
	require_cmd umoci python3 zcat
	cd "$T"
	umoci init --layout L
	umoci new --image L:base
	mkdir -p src/sub
	echo hello > src/sub/motd	# last: 6 bytes of data, no padding
	chmod 640 src/sub/motd
	ln -s sub/motd src/link
	mkfifo src/fifo
	head -c 512 /dev/urandom > blk	# its data ends on a block boundary
	chmod 4755 blk
	umoci insert --image L:base src /opt
	umoci insert --image L:base blk /usr/blk
	cd - >/dev/null
	mapfile -t dg < <(layer_digests "$T/L" base)
	[ "${#dg[@]}" -eq 2 ]
	# what the layers are: no end-of-archive blocks (umoci 0.4.7)
	zcat "$T/L/blobs/sha256/${dg[0]#sha256:}" > "$T/l1.tar"
	zcat "$T/L/blobs/sha256/${dg[1]#sha256:}" > "$T/l2.tar"
	[ $(( $(stat -c %s "$T/l1.tar") % 512 )) -ne 0 ]
	[ $(( $(stat -c %s "$T/l2.tar") % 512 )) -eq 0 ]
	[ "$(tail -c 512 "$T/l2.tar" | tr -d '\0' | wc -c)" -gt 0 ]
	run --separate-stderr xiptool mkfs --oci "$T/L:base" "$T/img"
	echo "$output"
	echo "$stderr"
	[ "$status" -eq 0 ]
	[ "${#stderr_lines[@]}" -eq 2 ]
	for i in 0 1; do
		[ "${stderr_lines[$i]}" = "xiptool mkfs: warning: $T/L: layer $((i + 1)) (${dg[$i]}): no end-of-archive blocks after the last member (read as complete)" ]
	done
	fsck_clean "$T/img"
	umoci unpack --image "$T/L:base" "$T/u" >/dev/null
	list "$T/u/rootfs" --no-ctime > "$T/l.u"
	grepq '^/opt/sub/motd 0o100000 0640 .* s6 ' "$T/l.u"
	grepq '^/usr/blk 0o100000 4755 .* s512 ' "$T/l.u"
	grepq '^/opt/fifo 0o10000 ' "$T/l.u"
	for fs in ext2 ext4; do
		loop_mount "$T/img" $fs
		list "$T/mnt" --no-ctime --no-lpf > "$T/l.$fs"
		loop_umount
		diff -u "$T/l.u" "$T/l.$fs"
	done
}

# bad LAYOUT EXPECTED-MESSAGE: exit 3, the message, no image, no temporary
bad() {
	run xiptool mkfs --oci "$1" "$T/out/img"
	echo "$output"
	[ "$status" -eq 3 ]
	grepq -- "$2" <<<"$output"
	run ls -A "$T/out"
	[ -z "$output" ]
}

@test "mkfs --oci: a damaged layout: exit 3, nothing left" {
	require_cmd umoci python3 setfattr
	require_root
	make_layout
	mkdir "$T/out"
	bad "$T/L:nosuch" "no tag 'nosuch'"
	# a flipped byte in a layer
	cp -a "$T/L" "$T/F"
	b=$(layer_blob "$T/F" t1)
	chmod u+w "$b"
	# the byte at offset 100, inverted (a fixed value may be what is there)
	python3 -c 'import sys; f = open(sys.argv[1], "r+b"); f.seek(100); c = f.read(1)[0]; f.seek(100); f.write(bytes([c ^ 0xff]))' "$b"
	bad "$T/F:t1" 'digest mismatch'
	# a byte more than its descriptor says
	cp -a "$T/L" "$T/S"
	b=$(layer_blob "$T/S" t1)
	chmod u+w "$b"
	printf 'x' >> "$b"
	bad "$T/S:t1" 'size exceeds'
	# a missing blob
	cp -a "$T/L" "$T/M"
	rm "$(layer_blob "$T/M" t2)"
	bad "$T/M:t2" 'No such file'
	# a FIFO where a blob should be: refused, no wait
	cp -a "$T/L" "$T/P"
	b=$(layer_blob "$T/P" t1)
	rm "$b"
	mkfifo "$b"
	bad "$T/P:t1" 'not a regular file'
	# blobs/sha256 (or blobs) a symbolic link, even to a good copy: refused
	cp -a "$T/L" "$T/Y"
	mv "$T/Y/blobs/sha256" "$T/elsewhere"
	ln -s "$T/elsewhere" "$T/Y/blobs/sha256"
	bad "$T/Y:t1" 'a symbolic link on the way'
	rm "$T/Y/blobs/sha256"
	mv "$T/elsewhere" "$T/Y/blobs/sha256"
	mv "$T/Y/blobs" "$T/elsewhere"
	ln -s "$T/elsewhere" "$T/Y/blobs"
	bad "$T/Y:t1" 'a symbolic link on the way'
	# an index that is not JSON
	cp -a "$T/L" "$T/J"
	echo '{"manifests": [' > "$T/J/index.json"
	bad "$T/J:t1" 'not a JSON object'
	# a manifest that is an image config
	cp -a "$T/L" "$T/C"
	python3 - "$T/C" <<-'EOF'
	import json, sys
	p = sys.argv[1] + "/index.json"
	idx = json.load(open(p))
	man = json.load(open(sys.argv[1] + "/blobs/sha256/" +
	                     idx["manifests"][0]["digest"].split(":")[1]))
	idx["manifests"][0]["digest"] = man["config"]["digest"]
	idx["manifests"][0]["size"] = man["config"]["size"]
	json.dump(idx, open(p, "w"))
	EOF
	bad "$T/C:t1" 'not an image manifest'
}

# add_tar LAYOUT TAG: a layer made by python's tarfile from the script on stdin
add_tar() {
	python3 - "$T/h.tar" > /dev/null
	umoci raw add-layer --image "$1:t1" --tag "$2" "$T/h.tar"
}

@test "mkfs --oci: every layer is hostile input (names leaving the top, hard links to outside)" {
	require_cmd umoci python3 setfattr
	require_root
	make_layout
	mkdir "$T/out"
	add_tar "$T/L" up <<-'EOF'
	import io, sys, tarfile
	t = tarfile.open(sys.argv[1], "w")
	i = tarfile.TarInfo("a/../../evil"); i.size = 1
	t.addfile(i, io.BytesIO(b"x"))
	EOF
	bad "$T/L:up" "would leave the top"
	add_tar "$T/L" hl <<-'EOF'
	import sys, tarfile
	t = tarfile.open(sys.argv[1], "w")
	i = tarfile.TarInfo("passwd"); i.type = tarfile.LNKTYPE
	i.linkname = "../../etc/passwd"
	t.addfile(i)
	EOF
	bad "$T/L:hl" "leaves the top"
	# a whiteout that tries to leave the top
	add_tar "$T/L" wh <<-'EOF'
	import sys, tarfile
	t = tarfile.open(sys.argv[1], "w")
	t.addfile(tarfile.TarInfo("../.wh.etc"))
	EOF
	bad "$T/L:wh" "would leave the top"
}

# ---- layouts written by hand (tests/lib/mkoci.py), layers by python --------

MKOCI="$TOP_SRCDIR/tests/lib/mkoci.py"

# mktar OUT: a tar of the members on stdin, in order, one a line: "d PATH"
# a directory, "f PATH [TEXT]" a file of TEXT and a newline, "e PATH" an
# empty file (a whiteout)
mktar() {
	"$PY" -c '
import io, sys, tarfile
t = tarfile.open(sys.argv[1], "w", format=tarfile.PAX_FORMAT)
for line in sys.stdin:
    kind, path, *text = line.split(None, 2)
    i = tarfile.TarInfo(path)
    i.mtime = 1000000000
    if kind == "d":
        i.type, i.mode = tarfile.DIRTYPE, 0o755
        t.addfile(i)
        continue
    data = b"" if kind == "e" else (text[0] if text else "\n").encode()
    i.size, i.mode = len(data), 0o644
    t.addfile(i, io.BytesIO(data))
t.close()
' "$1"
}

# names IMAGE DIR: the names in DIR of IMAGE (debugfs), sorted, one a line,
# but . .. and lost+found
names() {
	debugfs -R "ls -p $2" "$1" 2>/dev/null |
		awk -F/ 'NF > 5 && $6 != "." && $6 != ".." && $6 != "lost+found" { print $6 }' |
		sort
}

# oci_img IMAGE LAYER.tar...: mkfs --oci of a layout of those layers: exit
# 0, e2fsck clean
oci_img() {
	local img=$1
	shift
	rm -rf "$T/H"
	"$PY" "$MKOCI" "$T/H" "$@"
	run xiptool mkfs --oci "$T/H:t" "$img"
	echo "$output"
	[ "$status" -eq 0 ]
	fsck_clean "$img"
}

@test "mkfs --oci: whiteouts remove what lower layers gave, never a name of their own layer; a base layer's remove nothing and never appear" {
	require_cmd python3 debugfs e2fsck
	mktar "$T/1.tar" <<-'EOF'
	d a
	f a/x
	e .wh.nothing
	d b
	f b/before
	e b/.wh..wh..opq
	f b/keep
	e b/.wh.before
	f top
	EOF
	mktar "$T/2.tar" <<-'EOF'
	f a/y
	e a/.wh.y
	e a/.wh.x
	d c
	f c/z
	e c/.wh..wh..opq
	e .wh.top
	f top2
	e .wh.top2
	EOF
	oci_img "$T/base.img" "$T/1.tar"
	[ "$(names "$T/base.img" /)" = "$(printf 'a\nb\ntop')" ]
	[ "$(names "$T/base.img" /b)" = "$(printf 'before\nkeep')" ]
	[ "$(names "$T/base.img" /a)" = x ]
	oci_img "$T/two.img" "$T/1.tar" "$T/2.tar"
	[ "$(names "$T/two.img" /)" = "$(printf 'a\nb\nc\ntop2')" ]
	[ "$(names "$T/two.img" /a)" = y ]
	[ "$(names "$T/two.img" /b)" = "$(printf 'before\nkeep')" ]
	[ "$(names "$T/two.img" /c)" = z ]
}

@test "mkfs --oci: an opaque whiteout empties a lower directory of many names, and one of none" {
	require_cmd python3 debugfs e2fsck
	{
		echo 'd big'
		for i in $(seq -w 0 19); do echo "f big/f$i"; done
		echo 'd empty'
		echo 'd other'
		echo 'f other/o1'
		echo 'f other/o2'
	} | mktar "$T/1.tar"
	mktar "$T/2.tar" <<-'EOF'
	f big/new1
	e big/.wh..wh..opq
	f big/new2
	e empty/.wh..wh..opq
	f empty/n
	EOF
	oci_img "$T/img" "$T/1.tar" "$T/2.tar"
	[ "$(names "$T/img" /big)" = "$(printf 'new1\nnew2')" ]
	[ "$(names "$T/img" /empty)" = n ]
	[ "$(names "$T/img" /other)" = "$(printf 'o1\no2')" ]
}

@test "mkfs --oci: names whited out in a large directory and given again by a later layer are there once, with the later data" {
	require_cmd python3 debugfs e2fsck
	{
		echo 'd d'
		for i in $(seq -w 0 29); do echo "f d/f$i one"; done
	} | mktar "$T/1.tar"
	for i in $(seq -w 0 2 29); do echo "e d/.wh.f$i"; done | mktar "$T/2.tar"
	for i in $(seq -w 0 29); do echo "f d/f$i three"; done | mktar "$T/3.tar"
	oci_img "$T/two.img" "$T/1.tar" "$T/2.tar"
	[ "$(names "$T/two.img" /d)" = "$(seq -f 'f%02g' 1 2 29)" ]
	oci_img "$T/img" "$T/1.tar" "$T/2.tar" "$T/3.tar"
	[ "$(names "$T/img" /d)" = "$(seq -f 'f%02g' 0 29)" ]
	mkdir "$T/x"
	debugfs -R "rdump /d $T/x" "$T/img"
	for i in $(seq -w 0 29); do
		[ "$(cat "$T/x/d/f$i")" = three ]
	done
}

# costly_json LAYOUT WHAT N: grow the index ("index": N more empty
# objects in its manifests), the manifest ("manifest": a member of N empty
# objects, its digest and size in the index follow) or nest an annotation
# of the index N arrays deep ("deep")
costly_json() {
	"$PY" - "$@" <<-'EOF'
	import hashlib, json, os, sys
	lay, what, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
	ipath = os.path.join(lay, "index.json")
	ix = json.load(open(ipath))
	if what == "index":
	    s = json.dumps(ix)
	    s = s[:-2] + "," + ",".join(["{}"] * n) + "]}"
	elif what == "deep":
	    ix["manifests"][0]["annotations"]["x"] = "@"
	    s = json.dumps(ix).replace('"@"', "[" * n + "]" * n)
	else:
	    d = ix["manifests"][0]["digest"][7:]
	    m = json.load(open(os.path.join(lay, "blobs", "sha256", d)))
	    m["x"] = [{}] * n
	    b = json.dumps(m).encode()
	    d = hashlib.sha256(b).hexdigest()
	    open(os.path.join(lay, "blobs", "sha256", d), "wb").write(b)
	    ix["manifests"][0]["digest"] = "sha256:" + d
	    ix["manifests"][0]["size"] = len(b)
	    s = json.dumps(ix)
	open(ipath, "w").write(s)
	EOF
}

# json_refused LAYOUT MESSAGE: exit 3, one line ending in MESSAGE, no
# image, and a peak of memory below 64 MiB
json_refused() {
	run /usr/bin/time -f '%M' -o "$T/rss" "$XIPTOOL" mkfs --oci "$1:t" "$T/j.img"
	echo "$output"
	[ "$status" -eq 3 ]
	[ "${#lines[@]}" -eq 1 ]
	[[ "$output" == "xiptool mkfs: $1"*": $2" ]]
	[ ! -e "$T/j.img" ]
	# time adds a line on the exit status before its own
	rss=$(tail -n 1 "$T/rss")
	echo "max rss $rss KiB"
	[ "$rss" -lt 65536 ]
}

@test "mkfs --oci: an index or manifest that would cost too much to parse (size, values, depth) is refused in one line, before it costs" {
	require_cmd python3 debugfs e2fsck
	[ -x /usr/bin/time ] || skip "/usr/bin/time is not installed"
	echo 'f hello' | mktar "$T/1.tar"
	"$PY" "$MKOCI" "$T/L" "$T/1.tar"
	for c in I8 I1 M D DOK; do cp -a "$T/L" "$T/$c"; done
	# 8 MiB of empty objects in the index (gigabytes once parsed)
	costly_json "$T/I8" index 2800000
	json_refused "$T/I8" 'larger than 4194304 bytes'
	# 1 MiB of them: under the size, over the values
	costly_json "$T/I1" index 350000
	json_refused "$T/I1" 'more than 131072 JSON values'
	costly_json "$T/M" manifest 70000
	json_refused "$T/M" 'more than 131072 JSON values'
	costly_json "$T/D" deep 20
	json_refused "$T/D" 'nesting too deep'
	# what real documents hold passes
	costly_json "$T/DOK" deep 10
	run xiptool mkfs -q --oci "$T/DOK:t" "$T/ok.img"
	[ "$status" -eq 0 ]
	fsck_clean "$T/ok.img"
}

# read_bytes CMD...: run CMD (its output in $T/out) and print its exit
# status and the bytes it read (rchar of the shell that waited for it)
read_bytes() {
	bash -c '"$@" > "$T/out" 2>&1; s=$?
		awk -v s=$s '\''$1 == "rchar:" { print s, $2 }'\'' /proc/$$/io' _ "$@"
}

@test "mkfs --oci: a small layer declared gigabytes large (a hole after its archive) is not read past the archive's end, nor far past a reader's error" {
	require_cmd python3 debugfs e2fsck
	printf 'f a\nf b\n' | mktar "$T/1.tar"
	"$PY" "$MKOCI" "$T/S" --sparse $((4 << 30)) "$T/1.tar"
	read -r st bytes < <(read_bytes "$XIPTOOL" mkfs --oci "$T/S:t" "$T/s.img")
	cat "$T/out"
	echo "status $st, $bytes bytes read"
	[ "$st" -eq 3 ]
	[ "$(wc -l < "$T/out")" -eq 1 ]
	grepq 'bytes past the end of its archive (at most 65536)$' "$T/out"
	[ "$bytes" -lt $((16 << 20)) ]
	[ ! -e "$T/s.img" ]
	# garbage where the archive's end should be, then the hole
	head -c 2048 "$T/1.tar" > "$T/bad.tar"
	head -c 20480 /dev/zero | tr '\0' '\377' >> "$T/bad.tar"
	"$PY" "$MKOCI" "$T/D" --sparse $((4 << 30)) "$T/bad.tar"
	read -r st bytes < <(read_bytes "$XIPTOOL" mkfs --oci "$T/D:t" "$T/d.img")
	cat "$T/out"
	echo "status $st, $bytes bytes read"
	[ "$st" -eq 3 ]
	[ "$(wc -l < "$T/out")" -eq 1 ]
	[ "$bytes" -lt $((16 << 20)) ]
	[ ! -e "$T/d.img" ]
	# zeros past the archive's end, up to the bound: read, hashed, fine
	cp "$T/1.tar" "$T/pad.tar"
	head -c 40000 /dev/zero >> "$T/pad.tar"
	oci_img "$T/pad.img" "$T/pad.tar"
	[ "$(names "$T/pad.img" /)" = "$(printf 'a\nb')" ]
}

@test "mkfs --oci: a hand-made layer without end-of-archive blocks is read with a warning, compressed or not; one cut inside a member is refused" {
	bats_require_minimum_version 1.5.0
	require_cmd python3 debugfs e2fsck
	printf 'd d\nf d/a hello\nf d/b world\n' | mktar "$T/full.tar"
	"$PY" "$TOP_SRCDIR/tests/lib/cuttar.py" "$T/full.tar" "$T/end.tar" end
	"$PY" "$TOP_SRCDIR/tests/lib/cuttar.py" "$T/full.tar" "$T/inside.tar" inside
	"$PY" "$MKOCI" "$T/H" "$T/full.tar"
	run --separate-stderr xiptool mkfs -q --oci "$T/H:t" "$T/full.img"
	[ "$status" -eq 0 ]
	[ -z "$stderr" ]
	for z in "" --gzip; do
		rm -rf "$T/H"
		"$PY" "$MKOCI" "$T/H" $z "$T/end.tar"
		dg=$(layer_digests "$T/H" t)
		run --separate-stderr xiptool mkfs -q --oci "$T/H:t" "$T/end$z.img"
		echo "$stderr"
		[ "$status" -eq 0 ]
		[ "$stderr" = "xiptool mkfs: warning: $T/H: layer 1 ($dg): no end-of-archive blocks after the last member (read as complete)" ]
		fsck_clean "$T/end$z.img"
		[ "$(names "$T/end$z.img" /d)" = "$(printf 'a\nb')" ]
		[ "$(debugfs -R 'cat /d/b' "$T/end$z.img")" = world ]
	done
	rm -rf "$T/H"
	"$PY" "$MKOCI" "$T/H" "$T/inside.tar"
	run xiptool mkfs --oci "$T/H:t" "$T/inside.img"
	echo "$output"
	[ "$status" -eq 3 ]
	[[ "$output" == "xiptool mkfs: $T/H: layer 1 (sha256:"*"): d/b: Truncated tar archive" ]]
	[ ! -e "$T/inside.img" ]
}

@test "mkfs --oci: the data of what a later layer removes leaves the spool, and counts no more against -s" {
	require_root
	require_cmd python3 debugfs e2fsck
	"$PY" - "$T" <<-'EOF'
	import io, os, sys, tarfile
	T = sys.argv[1]
	def layer(n, members):
	    with tarfile.open("%s/%d.tar" % (T, n), "w") as t:
	        for name, data in members:
	            i = tarfile.TarInfo(name)
	            i.size = len(data)
	            t.addfile(i, io.BytesIO(data))
	c = os.urandom(4 << 20)
	open(T + "/c", "wb").write(c)
	layer(1, [("a", os.urandom(4 << 20)), ("d/b", os.urandom(4 << 20))])
	layer(2, [(".wh.a", b""), ("d/.wh..wh..opq", b"")])
	layer(3, [("c", c), ("d/e", os.urandom(3 << 20))])
	EOF
	"$PY" "$MKOCI" "$T/L" "$T/1.tar" "$T/2.tar" "$T/3.tar"
	mkdir "$T/tmp"
	mount -t tmpfs -o size=10m tmpfs "$T/tmp"
	# 8 MiB at most named at once, 15 MiB in all
	run env TMPDIR="$T/tmp" "$XIPTOOL" mkfs -s 10M --oci "$T/L:t" "$T/img"
	echo "$output"
	[ "$status" -eq 0 ]
	fsck_clean "$T/img"
	[ "$(names "$T/img" /)" = "$(printf 'c\nd')" ]
	[ "$(names "$T/img" /d)" = e ]
	debugfs -R "dump /c $T/c.out" "$T/img"
	cmp "$T/c" "$T/c.out"
}

@test "mkfs --oci: libjson-c or libcrypto that cannot be loaded is a one-line error, exit 3, no image" {
	local name lib
	require_cmd umoci
	require_root
	cd "$T"
	umoci init --layout L
	umoci new --image L:t1
	cd - >/dev/null
	for name in json-c crypto; do
		lib=$(lazy_lib "$name")
		[ -n "$lib" ]
		run unshare -m sh -c 'mount --bind /dev/null "$1" && exec "$2" mkfs --oci "$3" "$4"' \
			sh "$lib" "$XIPTOOL" "$T/L:t1" "$T/img"
		echo "$name: $output"
		[ "$status" -eq 3 ]
		[ "${#lines[@]}" -eq 1 ]
		[[ "$output" == "xiptool mkfs: "*"cannot load lib$name.so."*"file too short" ]]
		[ ! -e "$T/img" ]
	done
	xiptool mkfs --oci "$T/L:t1" "$T/img"
	e2fsck -fn "$T/img"
}

# retag LAYOUT TAG...: the index's one manifest under each TAG, in order,
# with no platform
retag() {
	"$PY" - "$@" <<-'EOF2'
	import json, sys
	p = sys.argv[1] + "/index.json"
	ix = json.load(open(p))
	m = ix["manifests"][0]
	m.pop("platform", None)
	ix["manifests"] = [dict(m, annotations={
	    "org.opencontainers.image.ref.name": t}) for t in sys.argv[2:]]
	json.dump(ix, open(p, "w"))
	EOF2
}

@test "mkfs --oci: two tags of one manifest are one image, with or without a tag; two manifests without a tag are refused, the tags named" {
	require_cmd python3 debugfs e2fsck
	echo 'f hello' | mktar "$T/1.tar"
	"$PY" "$MKOCI" "$T/L" "$T/1.tar"
	retag "$T/L" base v2
	run xiptool mkfs -q --timestamp $TS --oci "$T/L" "$T/notag.img"
	echo "$output"
	[ "$status" -eq 0 ]
	fsck_clean "$T/notag.img"
	[ "$(names "$T/notag.img" /)" = hello ]
	xiptool mkfs -q --timestamp $TS --oci "$T/L:base" "$T/base.img"
	xiptool mkfs -q --timestamp $TS --oci "$T/L:v2" "$T/v2.img"
	cmp "$T/notag.img" "$T/base.img"
	cmp "$T/notag.img" "$T/v2.img"
	# a third tag of another manifest: no tag is ambiguous again
	echo 'f other' | mktar "$T/2.tar"
	"$PY" "$MKOCI" "$T/O" "$T/2.tar"
	cp "$T/O/blobs/sha256/"* "$T/L/blobs/sha256/"
	"$PY" - "$T/L/index.json" "$T/O/index.json" <<-'EOF2'
	import json, sys
	ix, other = (json.load(open(p)) for p in sys.argv[1:3])
	m = other["manifests"][0]
	m["annotations"]["org.opencontainers.image.ref.name"] = "v3"
	ix["manifests"].append(m)
	json.dump(ix, open(sys.argv[1], "w"))
	EOF2
	run xiptool mkfs --oci "$T/L" "$T/amb.img"
	echo "$output"
	[ "$status" -eq 3 ]
	[ "${#lines[@]}" -eq 1 ]
	[[ "$output" == "xiptool mkfs: $T/L: several images and none for "*": name one of the tags: base, v2, v3" ]]
	[ ! -e "$T/amb.img" ]
	xiptool mkfs -q --timestamp $TS --oci "$T/L:v2" "$T/v2b.img"
	cmp "$T/notag.img" "$T/v2b.img"
	xiptool mkfs -q --oci "$T/L:v3" "$T/v3.img"
	[ "$(names "$T/v3.img" /)" = other ]
}

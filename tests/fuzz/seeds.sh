#!/bin/sh
# Generate the seed corpora of the fuzz targets: small ext2 images made by
# the real mke2fs -d (and by xiptool mkfs when given) from a tree that
# exercises every code path of lookup and the block map, small ELF
# files compiled here, tar archives (python's tarfile, GNU tar) and OCI
# layouts (umoci, by hand: seeds.py), registry records (xiptool attach
# when given, by hand).  Nothing binary is stored in the repository.
#
#   seeds.sh OUTDIR [XIPTOOL]
#
# Writes OUTDIR/elf/* first, then OUTDIR/ext2/* (whose tree holds some of
# the ELF files as programs), then OUTDIR/tar, oci and record, then
# OUTDIR/verity/* (a root hash and an image with its tree by veritysetup,
# when it is there).
set -eu

out=$1
xiptool=${2:-}
PATH=/usr/sbin:/sbin:$PATH
CC=${CC:-cc}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/xipseeds.XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM
mkdir -p "$out/ext2" "$out/elf" "$out/tar" "$out/oci" "$out/record"

# Deterministic images: fixed time, UUID and hash seed.
E2FSPROGS_FAKE_TIME=1700000000
export E2FSPROGS_FAKE_TIME
uuid=5eed5eed-0000-4000-8000-000000000001

# --- ELF files ---------------------------------------------------------------
cat > "$tmp/hello.c" <<'C'
#include <stdio.h>
int counter = 42;
int main(int argc, char **argv) { printf("%s %d\n", argv[0], counter + argc); return 0; }
C
cat > "$tmp/tiny.c" <<'C'
static const char msg[] = "tiny\n";
char bss[8192];
void _start(void)
{
	long r;
	__asm__ volatile("syscall" : "=a"(r) : "a"(1), "D"(1), "S"(msg), "d"(5)
			 : "rcx", "r11", "memory");
	__asm__ volatile("syscall" : : "a"(60), "D"(bss[0]));
	for (;;)
		;
}
C
cat > "$tmp/lib.c" <<'C'
int lib_value = 7;
int lib_add(int a, int b) { return a + b + lib_value; }
C
elf() {
	name=$1
	shift
	if "$CC" "$@" -o "$out/elf/$name" 2>/dev/null; then
		strip "$out/elf/$name" 2>/dev/null || true
	fi
}
elf hello-pie "$tmp/hello.c" -O1 -pie -fPIE
elf hello-nopie "$tmp/hello.c" -O1 -no-pie
elf hello-max-page-64k "$tmp/hello.c" -O1 -Wl,-z,max-page-size=65536
elf hello-noseparate "$tmp/hello.c" -O1 -Wl,-z,noseparate-code
elf lib.so "$tmp/lib.c" -O1 -shared -fPIC
if [ "$(uname -m)" = x86_64 ]; then
	elf tiny-static "$tmp/tiny.c" -O1 -nostdlib -static -no-pie \
		-fno-stack-protector -Wl,--build-id=none
	elf tiny-static-pie "$tmp/tiny.c" -O1 -nostdlib -static-pie -fPIE \
		-fno-stack-protector -Wl,--build-id=none
	elf tiny-page-1k "$tmp/tiny.c" -O1 -nostdlib -static -no-pie \
		-fno-stack-protector -Wl,-z,max-page-size=1024 \
		-Wl,-z,common-page-size=1024
fi
"$CC" -c "$tmp/lib.c" -o "$out/elf/lib.o" 2>/dev/null || true

# --- the tree --------------------------------------------------------------
t=$tmp/tree
mkdir -p "$t/dir/sub/deeper" "$t/big" "$t/empty"
printf 'hello, xip\n' > "$t/hello.txt"
printf '#!/bin/sh\necho hi\n' > "$t/dir/script.sh"
: > "$t/dir/empty-file"
# 40 KiB: indirect blocks with 1 KiB blocks
i=0
while [ $i -lt 640 ]; do
	printf 'line %05d of a file that needs indirect blocks....\n' $i
	i=$((i + 1))
done > "$t/dir/sub/forty"
# holes: data at 0, 50 KiB, 300 KiB (double indirect with 1 KiB blocks)
printf 'head' > "$t/sparse"
printf 'mid' | dd of="$t/sparse" bs=1024 seek=50 conv=notrunc 2>/dev/null
printf 'tail' | dd of="$t/sparse" bs=1024 seek=300 conv=notrunc 2>/dev/null
# a hole at the end only
truncate -s 20000 "$t/dir/hole-at-end"
# many entries (hard links): directories of several blocks
i=0
while [ $i -lt 48 ]; do
	ln "$t/hello.txt" "$t/big/entry-with-a-rather-long-name-$i"
	i=$((i + 1))
done
ln -s hello.txt "$t/fast-link"
ln -s dir/sub/deeper/../../sub/./forty "$t/rel-link"
ln -s /dir/sub "$t/abs-link"
ln -s ../../../../../../../../../../../../../../../../../hello.txt \
	"$t/dir/slow-link-with-a-target-longer-than-sixty-bytes"
ln -s loop-b "$t/loop-a"
ln -s loop-a "$t/loop-b"
ln -s .. "$t/dir/sub/up"
ln -s missing "$t/dangling"
ln "$t/hello.txt" "$t/dir/hard-link"
# programs for the exec planning (xip_exec_prepare)
mkdir -p "$t/bin"
for p in tiny-static tiny-static-pie hello-pie; do
	[ -f "$out/elf/$p" ] && cp "$out/elf/$p" "$t/bin/$p"
done
ln -s tiny-static "$t/bin/prog"

# mkimg NAME SIZE [mke2fs options...]: an image padded to SIZE
mkimg() {
	name=$1 size=$2
	shift 2
	rm -f "$tmp/img"
	truncate -s "$size" "$tmp/img"
	mke2fs -q -F -U "$uuid" -E hash_seed=$uuid "$@" "$tmp/img" >/dev/null
	cp "$tmp/img" "$out/ext2/$name"
}

# small inputs fuzz fastest: a few files on 1 KiB blocks
small=$tmp/small
mkdir -p "$small/d"
printf 'hello\n' > "$small/hello.txt"
printf 'x' | dd of="$small/d/sparse" bs=1024 seek=14 conv=notrunc 2>/dev/null
ln -s ../hello.txt "$small/d/link"
ln -s d/link "$small/link2"
mkimg k1-small 64K -t ext2 -b 1024 -N 16 -m 0 -O ^resize_inode -d "$small"
if command -v genext2fs >/dev/null 2>&1; then
	rm -f "$tmp/img"
	genext2fs -b 64 -N 16 -d "$small" "$tmp/img" 2>/dev/null &&
		cp "$tmp/img" "$out/ext2/genext2fs-small"
fi
mkimg k4 256K -t ext2 -b 4096 -N 64 -m 0 -d "$t"
mkimg k4-empty 256K -t ext2 -b 4096 -N 16 -m 0
mkimg k4-rev0 256K -t ext2 -b 4096 -N 64 -m 0 -r 0 -d "$t"
mkimg k4-plain 256K -t ext2 -b 4096 -N 64 -m 0 \
	-O ^resize_inode,^dir_index,^filetype,^sparse_super,^large_file \
	-d "$t"
mkimg k1 512K -t ext2 -b 1024 -N 64 -m 0 -d "$t"
mkimg k1-plain 512K -t ext2 -b 1024 -N 64 -m 0 -I 128 \
	-O ^resize_inode,^dir_index,^ext_attr -d "$t"
mkimg k2 384K -t ext2 -b 2048 -N 64 -m 0 -d "$t"
mkimg k1-groups 768K -t ext2 -b 1024 -g 256 -N 64 -m 0 -d "$t"
mkimg ext4-k4 512K -t ext4 -b 4096 -N 64 -m 0 -O ^has_journal -d "$t"
mkimg ext4-k1 512K -t ext4 -b 1024 -N 64 -m 0 \
	-O ^has_journal,^metadata_csum,^64bit,inline_data -d "$t"
# and images of xiptool mkfs, when the build's xiptool is given
if [ -n "$xiptool" ]; then
	rm -f "$tmp/img"
	"$xiptool" mkfs -q -d "$t" -U "$uuid" --timestamp=1700000000 \
		"$tmp/img" || exit 1
	cp "$tmp/img" "$out/ext2/xiptool-mkfs"
	rm -f "$tmp/img"
	"$xiptool" mkfs -q -d "$t/bin" -U "$uuid" --timestamp=1700000000 \
		--align=64K "$tmp/img" || exit 1
	cp "$tmp/img" "$out/ext2/xiptool-mkfs-bin"
fi

# --- tar archives and OCI layouts (tests/fuzz/seeds.py) ----------------------
seeds_py=$(dirname "$0")/seeds.py
mkdir -p "$tmp/tar" "$tmp/oci"
python3 "$seeds_py" tar "$out/tar" "$tmp/tar" || exit 1
python3 "$seeds_py" oci "$out/oci" "$tmp/oci" || exit 1

# --- registry records --------------------------------------------------------
# as xiptool attach writes them (a private run and segment directory) ...
if [ -n "$xiptool" ]; then
	mkdir -p "$tmp/shm"
	for how in plain populate; do
		opt=
		[ $how = populate ] && opt="--populate always"
		# (where attaching cannot work, the records below are the seeds)
		# shellcheck disable=SC2086
		XIPTOOL_RUNDIR=$tmp/run XIPTOOL_SHMDIR=$tmp/shm \
			"$xiptool" attach -n seed-$how $opt \
			"$out/ext2/k1-small" > /dev/null 2>&1 || continue
		cp "$tmp/run/seed-$how" "$out/record/attach-$how"
		XIPTOOL_RUNDIR=$tmp/run XIPTOOL_SHMDIR=$tmp/shm \
			"$xiptool" detach seed-$how || exit 1
	done
fi
# ... and in every state and with every field an attach may write
record() {
	printf 'name=%s\ntype=%s\nsize=%s\npopulate=0\nstate=%s\n' "$1" "$2" "$3" "$4"
	[ "$4" = attaching ] && printf 'pid=4242\n'
	printf 'owner=0\ndev=40\nino=2\nfileuid=0\nloop=%s\npath=%s\n' "$5" "$6"
	printf 'image=%s\ncompressed=%s\nverified=%s\nfile=%s\n' "$7" "$8" "$9" "${10}"
	printf 'offset=%s\nsizelimit=%s\nlabel=%s\n' "${11}" "${12}" "${13}"
	printf 'uuid=5eed5eed-0000-4000-8000-000000000001\ncreated=1700000000\n'
	printf 'imageuid=1000\nimagegid=100\nimagemode=100644\n'
}
r=$out/record
record sr1 sr 65536 attached "" /dev/shm/xiptool-sr1.0123456789abcdef \
	/srv/a.img 0 0 "" 0 0 "" > "$r/sr"
record loop1 er 1048576 attached /dev/loop7 /run/xiptool.shm/xiptool-loop1.0 \
	/srv/b.img.gz 1 1 "" 0 1048576 rootfs > "$r/loop-compressed-verified"
record file1 sn 4096 attached /dev/loop3 /dev/shm/xiptool-file1.1 \
	/srv/c.img 0 0 /boot/vmlinuz 8192 4096 "" > "$r/file-offset"
record busy en 2097152 attaching "" /dev/hugepages/xiptool-busy.2 "" \
	0 0 "" 0 0 "" > "$r/attaching"
record 'esc' sw 8192 attached "" '/tmp/a\\b\nc' '/srv/new\nline' \
	0 0 "" 0 0 'label with \\ and \n' > "$r/escapes"

# --- verity: a root hash of 64 bytes, then an image with its tree -----------
# Small inputs fuzz fastest: 16 KiB of a file system (the first blocks of
# k1-small, its block count set to 16: the hash offset is all the verity
# probe reads of it), then veritysetup's tree of every hash on 1 KiB and
# 512-byte blocks.
mkdir -p "$out/verity"
if command -v veritysetup >/dev/null 2>&1 && command -v xxd >/dev/null 2>&1; then
	for v in sha1:1024 sha256:1024 sha512:1024 sha256:512 sha512:512; do
		h=${v%:*} b=${v#*:}
		head -c 16384 "$out/ext2/k1-small" > "$tmp/img"
		printf '\020\000\000\000' |
			dd of="$tmp/img" bs=1 seek=1028 conv=notrunc 2>/dev/null
		root=$(veritysetup format "$tmp/img" "$tmp/img" --hash "$h" \
			--hash-offset=16384 --data-blocks=$((16384 / b)) \
			--data-block-size="$b" --hash-block-size="$b" \
			--salt=5eed --uuid=$uuid |
			sed -n 's/^Root hash:[[:space:]]*//p') || exit 1
		[ -n "$root" ] || exit 1
		{
			printf '%s' "$root" | xxd -r -p
			head -c $((64 - ${#root} / 2)) /dev/zero
			cat "$tmp/img"
		} > "$out/verity/veritysetup-$h-$b"
	done
fi

# --- vsig: the bytes from a tree's end, a signature block among them --------
# The first byte says how many are the tree's (see fuzz_vsig.c): 0 and 8
# (2048 bytes of zeros, then the block).  The DER: openssl smime's, or a
# small INTEGER when there is no openssl.
mkdir -p "$out/vsig"
if command -v xxd >/dev/null 2>&1 && command -v sha256sum >/dev/null 2>&1; then
	if command -v openssl >/dev/null 2>&1 &&
		openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=seed \
			-keyout "$tmp/k.pem" -out "$tmp/c.pem" 2>/dev/null; then
		printf 00 > "$tmp/h.txt"
		openssl smime -sign -nocerts -noattr -binary -in "$tmp/h.txt" \
			-inkey "$tmp/k.pem" -signer "$tmp/c.pem" -outform der \
			-out "$tmp/der" || exit 1
	else
		printf '\060\003\002\001\005' > "$tmp/der"
	fi
	len=$(wc -c < "$tmp/der")
	pad=$(( (4096 - len % 4096) % 4096 ))
	le32() { printf '%08x' "$1" | sed 's/\(..\)\(..\)\(..\)\(..\)/\4\3\2\1/' | xxd -r -p; }
	{
		printf 'xipsig1\000'
		le32 1; le32 4096; le32 "$len"; le32 0
		sha256sum < "$tmp/der" | cut -c1-64 | xxd -r -p
		head -c $((4096 - 56)) /dev/zero
		cat "$tmp/der"
		head -c "$pad" /dev/zero
	} > "$tmp/block"
	cp "$tmp/block" "$out/vsig/block"
	{ printf '\010'; head -c 4095 /dev/zero; cat "$tmp/block"; } > "$out/vsig/after-tree"
	cp "$tmp/der" "$out/vsig/der"
fi

# --- registry client texts (fuzz_regauth.c: the first byte picks) -------------
mkdir -p "$out/regauth"
printf '\000docker://127.0.0.1:5000/team/app:v1.2' > "$out/regauth/ref-tag"
printf '\000docker://reg.io/a/b@sha256:%064d' 0 > "$out/regauth/ref-digest"
printf '\000alpine' > "$out/regauth/ref-short"
printf '\001Bearer realm="https://auth.io/token",service="reg.io",scope="repository:a/b:pull"' \
	> "$out/regauth/bearer"
printf '\001Basic realm="Registry Realm", charset="UTF-8"' > "$out/regauth/basic"
printf '\001Bearer realm="https://a/\\"q\\"",error=invalid_token' > "$out/regauth/escapes"
printf '\002{"token": "abc", "access_token": "abc", "expires_in": 300}' \
	> "$out/regauth/token"

exit 0

#!/usr/bin/env bash
# Damage generator for `xiptool verify`, checked against `e2fsck -fn`.
#
#   damage.sh XIPTOOL WORKDIR [FUZZ_ROUNDS] [SEED]
#
# Builds a small XIP image (4 KiB blocks, two groups) with mke2fs -d, then
# damages copies of it, one structure each: superblock fields, group
# descriptors, inode fields and block pointers, directory records, link
# counts, bitmaps, cross-linked files, a directory loop.  Then FUZZ_ROUNDS
# rounds of random bytes written into the metadata.  For every copy:
#   - verify must not crash (exit 0, 1 or 3, no sanitizer report);
#   - when e2fsck -fn reports errors (exit 4), verify must exit 1; when
#     e2fsck cannot use the image (exit 8), verify must exit 1 or 3;
#   - a targeted damage must be named in verify's output (a pattern).
# Prints one TAP line per case; exits 1 when any case fails.
set -u

XIPTOOL=$1
W=$2
ROUNDS=${3:-0}
SEED=${4:-1}
PATH=/usr/sbin:/sbin:$PATH
BS=4096
n=0
failed=0
disagree=0

mkdir -p "$W"
base=$W/base.img
img=$W/img

# ---- the base image -------------------------------------------------------

tree=$W/tree
rm -rf "$tree"
mkdir -p "$tree/d/e" "$tree/many"
printf 'hello\n' > "$tree/a"
ln "$tree/a" "$tree/d/hard"
head -c 300000 /dev/urandom > "$tree/big"
head -c 9000 /dev/urandom > "$tree/d/small"
ln -s a "$tree/l"
ln -s "$(printf 'long/%.0s' $(seq 30))target" "$tree/longlink"
mkfifo "$tree/fifo"
mknod "$tree/null" c 1 3 2>/dev/null || true
for i in $(seq 150); do : > "$tree/many/file-with-a-longish-name-$i"; done
mke2fs -q -F -t ext2 -b $BS -N 2048 -d "$tree" "$base" 136M >/dev/null || exit 2

dbg() { debugfs -R "$1" "$base" 2>/dev/null; }
ino_of() { dbg "stat $1" | sed -n 's/^Inode: \([0-9]*\).*/\1/p'; }
bmap() { dbg "bmap $1 $2"; }
dfield() { dumpe2fs "$base" 2>/dev/null | sed -n "$1" | head -1; }

INO_A=$(ino_of /a)
INO_D=$(ino_of /d)
INO_E=$(ino_of /d/e)
INO_FIFO=$(ino_of /fifo)
BLK_A=$(bmap /a 0)
BLK_ROOT=$(bmap / 0)
BLK_D=$(bmap /d 0)
BLK_MANY1=$(bmap /many 1)
IND_BIG=$(dbg "stat /big" | grep -o '(IND):[0-9]*' | cut -d: -f2)
ITABLE=$(dfield 's/.*Inode table at \([0-9]*\)-.*/\1/p')
BBITMAP=$(dfield 's/.*Block bitmap at \([0-9]*\) .*/\1/p')
IBITMAP=$(dfield 's/.*Inode bitmap at \([0-9]*\) .*/\1/p')
for v in INO_A INO_D INO_E BLK_A BLK_ROOT BLK_D BLK_MANY1 IND_BIG ITABLE BBITMAP IBITMAP; do
	[ -n "${!v}" ] || { echo "Bail out! cannot find $v"; exit 2; }
done

# Offset of the directory entry NAME in block BLK of the base image.
dirent_off() {
	python3 - "$base" "$1" "$2" <<'EOF'
import struct, sys
img, blk, name = sys.argv[1], int(sys.argv[2]), sys.argv[3].encode()
with open(img, 'rb') as f:
    f.seek(blk * 4096)
    b = f.read(4096)
off = 0
while off < 4096:
    ino, rec, nl, ft = struct.unpack_from('<IHBB', b, off)
    if rec < 8:
        break
    if ino and b[off + 8:off + 8 + nl] == name:
        print(blk * 4096 + off)
        sys.exit(0)
    off += rec
sys.exit(1)
EOF
}

poke() {	# poke OFFSET HEXBYTES
	printf "$(printf '%s' "$2" | sed 's/../\\x&/g')" |
		dd of="$img" bs=1 seek="$1" conv=notrunc status=none
}

le16() { printf '%02x%02x' $(($1 & 255)) $((($1 >> 8) & 255)); }
le32() { printf '%02x%02x%02x%02x' $(($1 & 255)) $((($1 >> 8) & 255)) \
	$((($1 >> 16) & 255)) $((($1 >> 24) & 255)); }

# ---- one case -------------------------------------------------------------

# judge NAME PATTERN: run both checkers on $img and compare.
judge() {
	local name=$1 pattern=$2 erc vrc why=""
	n=$((n + 1))
	e2fsck -fn "$img" >"$W/e2fsck.out" 2>&1
	erc=$?
	"$XIPTOOL" verify "$img" >"$W/verify.out" 2>"$W/verify.err"
	vrc=$?
	if grep -q -E 'Sanitizer|runtime error:' "$W/verify.err"; then
		why="sanitizer report"
	elif [ "$vrc" -ne 0 ] && [ "$vrc" -ne 1 ] && [ "$vrc" -ne 3 ]; then
		why="verify exit $vrc (crash?)"
	elif [ $((erc & 4)) -ne 0 ] && [ "$vrc" -ne 1 ]; then
		why="e2fsck found errors (exit $erc), verify exit $vrc"
	elif [ $((erc & 8)) -ne 0 ] && [ "$vrc" -eq 0 ]; then
		why="e2fsck cannot use the image (exit $erc), verify exit 0"
	elif [ -n "$pattern" ] &&
		! grep -q -E -- "$pattern" "$W/verify.out" "$W/verify.err"; then
		why="output does not match /$pattern/"
	fi
	if [ -n "$why" ]; then
		failed=$((failed + 1))
		echo "not ok $n - $name: $why"
		sed 's/^/#   verify: /' "$W/verify.out" "$W/verify.err" | head -20
		grep -v '^Pass\|^e2fsck 1\|^$' "$W/e2fsck.out" | sed 's/^/#   e2fsck: /' | head -10
	else
		echo "ok $n - $name (e2fsck $erc, verify $vrc)"
		if [ "$erc" -eq 0 ] && [ "$vrc" -ne 0 ]; then
			disagree=$((disagree + 1))
			echo "#   stricter than e2fsck: $(grep -v '^warning' "$W/verify.out" | head -1)"
		fi
	fi
}

# dmg NAME PATTERN COMMAND...: damage a fresh copy with COMMAND, judge it.
dmg() {
	local name=$1 pattern=$2
	shift 2
	cp --sparse=always "$base" "$img"
	"$@" >/dev/null 2>&1
	judge "$name" "$pattern"
}

dw() { debugfs -w -R "$1" "$img"; }

# ---- targeted damage --------------------------------------------------------

dmg "clean base image" "clean" true
# superblock fields
dmg "sb: inodes count" "s_inodes_count" dw "ssv inodes_count 1000"
dmg "sb: blocks count beyond the image" "s_blocks_count" dw "ssv blocks_count 99999999"
dmg "sb: blocks count too small" "s_blocks_count|outside the group|beyond end" dw "ssv blocks_count 30000"
dmg "sb: log block size" "s_log_block_size" dw "ssv log_block_size 9"
dmg "sb: blocks per group" "s_blocks_per_group" dw "ssv blocks_per_group 12"
dmg "sb: inodes per group" "s_inodes_per_group" dw "ssv inodes_per_group 7"
dmg "sb: first inode" "s_first_ino" dw "ssv first_ino 5"
dmg "sb: inode size" "s_inode_size" dw "ssv inode_size 100"
dmg "sb: revision" "s_rev_level" dw "ssv rev_level 9"
dmg "sb: free blocks count" "s_free_blocks_count" dw "ssv free_blocks_count 5"
dmg "sb: orphan file inode" "s_orphan_file_inum" dw "ssv orphan_file_inum $INO_A"
dmg "sb: quota inode" "s_usr_quota_inum" dw "ssv usr_quota_inum $INO_A"
dmg "sb: project quota inode" "s_prj_quota_inum" dw "ssv prj_quota_inum 177"
dmg "sb: descriptor size" "s_desc_size" poke $((1024 + 254)) "27"
dmg "sb: metadata_csum_seed without metadata_csum" "feature metadata_csum_seed is not ext2" poke $((1024 + 97)) "20"
dmg "sb: ext4 read-only feature" "feature huge_file is not ext2" dw "feature huge_file"
dmg "dir: file type of '.'" "entry '\.' \(inode [0-9]*\) has file type" poke $((BLK_D * BS + 7)) "e8"
dmg "sb: free inodes count" "s_free_inodes_count" dw "ssv free_inodes_count 5"
dmg "sb: reserved blocks" "s_r_blocks_count" dw "ssv r_blocks_count 99999"
dmg "sb: unknown incompatible feature" "s_feature_incompat" dw "ssv feature_incompat 0x1002"
dmg "sb: first data block" "s_first_data_block" dw "ssv first_data_block 1"
dmg "sb: cluster size" "s_log_cluster_size" dw "ssv log_cluster_size 4"
dmg "sb: magic (backup intact)" "s_magic" poke 1080 0000
dmg "sb: error state" "s_state" dw "ssv state 2"
# group descriptors
dmg "gd: block bitmap in another group" "group 0: block bitmap.*outside the group" dw "set_bg 0 block_bitmap 33000"
dmg "gd: inode bitmap beyond the image" "group 0: inode bitmap.*beyond end of image" dw "set_bg 0 inode_bitmap 99999999"
dmg "gd: inode table over the descriptors" "group 1: inode table.*(outside|overlaps)" dw "set_bg 1 inode_table 1"
dmg "gd: inode table overlaps bitmap" "group 0: inode table.*overlaps" dw "set_bg 0 inode_table $BBITMAP"
dmg "gd: free blocks count" "group 0: free block count" dw "set_bg 0 free_blocks_count 5"
dmg "gd: free inodes count" "group 0: free inode count" dw "set_bg 0 free_inodes_count 7"
dmg "gd: directories count" "group 0: directory count" dw "set_bg 0 used_dirs_count 99"
# inodes and block pointers
dmg "inode: block beyond the image" "\(/big\): block 99999999 beyond end" dw "sif /big block[2] 99999999"
dmg "inode: block on the inode table" "\(/big\): block $ITABLE is the inode table" dw "sif /big block[3] $ITABLE"
dmg "inode: block on the descriptors" "\(/big\): block 1 is the group descriptors" dw "sif /big block[4] 1"
dmg "inode: indirect block beyond the image" "\(/big\): indirect block 99999999 beyond" dw "sif /big block[IND] 99999999"
dmg "inode: double indirect on the bitmap" "\(/big\): indirect block $BBITMAP is the block bitmap" dw "sif /big block[DIND] $BBITMAP"
dmg "inode: cross-linked files" "block $BLK_A is also claimed by inode $INO_A|\(/a\): block $BLK_A is also claimed" dw "sif /big block[0] $BLK_A"
dmg "inode: size too small" "\(/big\): size 10 ends before" dw "sif /big size 10"
dmg "inode: i_blocks" "\(/a\): i_blocks is 100" dw "sif /a blocks 100"
dmg "inode: invalid mode" "\(/a\): invalid mode" dw "sif /a mode 0170644"
dmg "inode: deletion time" "\(/a\): in use but has a deletion time" dw "sif /a dtime 5"
dmg "inode: extents flag" "\(/a\): has the extents flag" dw "sif /a flags 0x80000"
dmg "inode: index flag on a file" "\(/a\): has the htree index flag" dw "sif /a flags 0x1000"
dmg "inode: no links but named" "points to unused inode $INO_FIFO" dw "sif /fifo links_count 0"
dmg "inode: fast symlink size" "\(/l\): symlink target is" dw "sif /l size 40"
dmg "inode: slow symlink with two blocks" "\(/longlink\): slow symlink" dw "sif /longlink block[1] $BLK_A"
dmg "inode: reserved inode with a huge size" "inode 6: size [0-9]* exceeds the largest file" dw "sif <6> size 0xa200000000000000"
dmg "inode: reserved inode with an xattr block" "inode 10: reserved inode has an extended attribute block" dw "sif <10> file_acl $BLK_A"
dmg "inode: bad blocks inode with an owner" "inode 1: bad blocks inode is invalid" dw "sif <1> uid 61"
dmg "inode: bad blocks inode with links" "inode 1: bad blocks inode is invalid" dw "sif <1> links_count 1"
dmg "inode: bad blocks inode with a mode" "inode 1: bad blocks inode is invalid" dw "sif <1> mode 0100644"
dmg "inode: special file with a size" "\(/fifo\): special file has size" dw "sif /fifo size 100"
dmg "inode: directory size" "\(/d\): directory size" dw "sif /d size 8192"
# link counts
dmg "links: file link count" "\(/a\): link count 5, should be 2" dw "sif /a links_count 5"
dmg "links: directory link count" "\(/d\): link count 9, should be 3" dw "sif /d links_count 9"
unattached() { dw "sif <1000> mode 0100644" && dw "sif <1000> links_count 1"; }
dmg "links: unattached inode" "inode 1000: in use .* but in no directory" unattached
# directory records
# two entries of one name: the first name in the second block of /many
# made equal to "file-with-a-longish-name-1" padded with zeros (the first
# block holds the names 1...)
dup_name() {
	python3 - "$img" "$BLK_MANY1" <<'PY'
import struct, sys
img, blk = sys.argv[1], int(sys.argv[2])
with open(img, 'r+b') as f:
    f.seek(blk * 4096)
    b = bytearray(f.read(4096))
    ino, rec, nl, ft = struct.unpack_from('<IHBB', b, 0)
    new = b'file-with-a-longish-name-1'
    new = (new + b'0' * nl)[:nl]
    b[8:8 + nl] = new
    f.seek(blk * 4096)
    f.write(b)
PY
}
dmg "dir: a name twice in one directory" "appears twice in the directory" dup_name
off=$(dirent_off "$BLK_ROOT" d)
dmg "dir: rec_len not a multiple of 4" "inode 2 \(/\): directory block 0.*invalid rec_len" poke $((off + 4)) "$(le16 13)"
dmg "dir: rec_len past the block" "inode 2 \(/\): directory block 0.*invalid rec_len" poke $((off + 4)) "$(le16 60000)"
dmg "dir: name_len past rec_len" "name_len 200 exceeds rec_len" poke $((off + 6)) "c8"
dmg "dir: inode number out of range" "entry 'd' has invalid inode number 99999" poke "$off" "$(le32 99999)"
dmg "dir: file type differs from the inode" "entry 'd' .*has file type symlink" poke $((off + 7)) "07"
dmg "dir: entry to a reserved inode" "entry 'd' points to reserved inode 7" poke "$off" "$(le32 7)"
dmg "dir: dot-dot wrong" "inode $INO_D \(/d\): '..' is inode $INO_D, should be 2" poke $((BLK_D * BS + 12)) "$(le32 "$INO_D")"
dmg "dir: first entry not dot" "first entry is" poke $((BLK_D * BS + 8)) "78"
dmg "dir: second block entry" "directory block 1 .*invalid rec_len" poke $((BLK_MANY1 * BS + 4)) "$(le16 2)"
dmg "dir: second link to a directory" "second link to directory inode $INO_D" dw "link /d /d/e/again"
loop() { dw "link /d /d/e/loop" && dw "unlink /d"; }
dmg "dir: loop cut off from the root" "loop|not reachable" loop
# bitmaps
dmg "bitmap: used block marked free" "block $BLK_A in use but marked free" dw "freeb $BLK_A"
dmg "bitmap: free block marked used" "block 30000 free but marked in use" dw "setb 30000"
dmg "bitmap: used inode marked free" "inode $INO_A in use but marked free" dw "freei <$INO_A>"
dmg "bitmap: free inode marked used" "inode 300 free but marked in use" dw "seti <300>"
dmg "bitmap: padding" "padding" poke $((IBITMAP * BS + 4000)) "00"

# ---- random bytes in the metadata ----------------------------------------------

if [ "$ROUNDS" -gt 0 ]; then
	regions="1024:1024 $((BS)):64 $((BBITMAP * BS)):$BS $((IBITMAP * BS)):512
$((ITABLE * BS)):$((BS * 2)) $((BLK_ROOT * BS)):$BS $((BLK_D * BS)):$BS
$((BLK_MANY1 * BS)):$BS $((IND_BIG * BS)):$BS"
	set -- $regions
	nreg=$#
	RANDOM=$SEED
	for r in $(seq "$ROUNDS"); do
		cp --sparse=always "$base" "$img"
		k=$((RANDOM % 4 + 1))
		desc=""
		for _ in $(seq $k); do
			eval "reg=\${$((RANDOM % nreg + 1))}"
			start=${reg%%:*} len=${reg##*:}
			off=$((start + (RANDOM * 32768 + RANDOM) % len))
			byte=$(printf '%02x' $((RANDOM % 256)))
			poke "$off" "$byte"
			desc="$desc $off=$byte"
		done
		judge "random round $r:$desc" ""
	done
fi

echo "1..$n"
echo "# $failed of $n cases failed; verify stricter than e2fsck in $disagree"
[ "$failed" -eq 0 ]

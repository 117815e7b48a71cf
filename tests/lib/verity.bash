# Helpers of the verified-image tests (tests/cli/verity.bats).

# A small tree: busybox (a program to run), a text file, random data.
vt_tree() {
	mkdir -p "$T/tree/bin" "$T/tree/data"
	cp /bin/busybox "$T/tree/bin/busybox"
	printf 'hello verity\n' > "$T/tree/hello.txt"
	head -c 300000 /dev/urandom > "$T/tree/data/blob"
}

# vt_mkfs IMAGE [mkfs options...]: a reproducible verified image of
# $T/tree with free space; its root hash in $ROOT.
vt_mkfs() {
	local img=$1
	shift
	run env SOURCE_DATE_EPOCH=1700000000 "$XIPTOOL" mkfs -q --verity \
		--extra 1M -d "$T/tree" "$@" "$img"
	echo "$output"
	[ "$status" -eq 0 ]
	ROOT=$(sed -n 's/^root hash: //p' <<<"$output")
	[ ${#ROOT} -eq 64 ]
}

# Bytes of the file system of IMAGE: the hash offset.
vt_fs_bytes() {
	local blocks bs
	blocks=$(dumpe2fs -h "$1" 2>/dev/null | sed -n 's/^Block count:[[:space:]]*//p')
	bs=$(dumpe2fs -h "$1" 2>/dev/null | sed -n 's/^Block size:[[:space:]]*//p')
	echo $((blocks * bs))
}

# vt_flip FILE OFFSET: flip bit 4 of the byte at OFFSET.
vt_flip() {
	"$PY" - "$1" "$2" <<'PYEOF'
import sys
with open(sys.argv[1], 'r+b') as f:
    f.seek(int(sys.argv[2]))
    b = f.read(1)[0] ^ 0x10
    f.seek(int(sys.argv[2]))
    f.write(bytes([b]))
PYEOF
}

# vt_offset IMAGE KIND: a byte offset in IMAGE of KIND: data (busybox's
# 10th block), free (a free block), super (the ext2 superblock's
# s_wtime), hash (a level-0 hash block), vsb (the verity superblock's salt).
vt_offset() {
	local img=$1 fsb blk
	fsb=$(vt_fs_bytes "$img")
	case $2 in
	data) blk=$(debugfs -R "bmap /bin/busybox 10" "$img" 2>/dev/null)
	      echo $((blk * 4096 + 123)) ;;
	free) blk=$(debugfs -R "ffb 1 $((fsb / 4096 - 40))" "$img" 2>/dev/null | awk '{print $NF}')
	      echo $((blk * 4096 + 77)) ;;
	super) echo $((1024 + 0x30)) ;;
	hash) echo $((fsb + 4096 * 2 + 5)) ;;
	vsb) echo $((fsb + 88 + 3)) ;;
	esac
}

# vt_veritysetup IMAGE ALG: an image of $T/tree with free space whose
# tree veritysetup formatted with hash ALG at the file system's end (the
# hash offset xiptool reads); its root hash in $ROOT.
vt_veritysetup() {
	local img=$1 fsb
	env SOURCE_DATE_EPOCH=1700000000 "$XIPTOOL" mkfs -q --extra 1M \
		-d "$T/tree" "$img"
	fsb=$(vt_fs_bytes "$img")
	[ "$(stat -c %s "$img")" -eq "$fsb" ]
	run veritysetup format "$img" "$img" --hash "$2" \
		--hash-offset="$fsb" --data-blocks=$((fsb / 4096)) \
		--data-block-size=4096 --hash-block-size=4096
	echo "$output"
	[ "$status" -eq 0 ]
	ROOT=$(sed -n 's/^Root hash:[[:space:]]*//p' <<<"$output")
	[ -n "$ROOT" ]
}

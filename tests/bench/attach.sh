#!/usr/bin/env bash
# xiptool attach against the plain copy a segment replaces: a 512 MiB
# image copied into tmpfs (cp --sparse=never: a segment reserves all its
# memory, as a DCSS is backed in full), a gzip image decompressed into
# tmpfs (gzip -dc), and a loop device over the copy (cp + losetup).  Each
# xiptool run also records the segment, identifies it with libblkid and
# detaches it again.  Targets: at most 1.2 times the peer.
# BENCH_ATTACH_MB sets the image size (default 512).
set -euo pipefail
. "$(dirname "$0")/common.bash"
bench_segments
mb=${BENCH_ATTACH_MB:-512}
name=bench$$

mkdir "$B/tree"
# half random, half text: a realistic mix for gzip
head -c $((mb / 4))M /dev/urandom > "$B/tree/random"
head -c $((mb * 3 / 16))M /dev/urandom | base64 > "$B/tree/text"
mke2fs -q -F -t ext2 -b 4096 -d "$B/tree" "$B/img" "${mb}M"
rm -rf "$B/tree"
gzip -1 -c "$B/img" > "$B/img.gz"

attach_cycle() {
	"$XIPTOOL" attach -n "$name" "$@" >/dev/null && "$XIPTOOL" detach "$name"
}
copy_cycle() {
	cp --sparse=never "$1" "$B/copy" && rm "$B/copy"
}
gunzip_cycle() {
	gzip -dc "$1" > "$B/copy" && rm "$B/copy"
}
loop_cycle() {
	local dev
	cp --sparse=never "$1" "$B/copy" && dev=$(losetup -f --show -r "$B/copy") &&
		losetup -d "$dev" && rm "$B/copy"
}

x=$(bench_time attach_cycle "$B/img")
p=$(bench_time copy_cycle "$B/img")
bench_report "attach+detach ${mb} MiB image [s] vs cp --sparse=never" \
	"$(bench_fmt "$x" 3)" "$(bench_fmt "$p" 3)" "<=1.2"

x=$(bench_time attach_cycle "$B/img.gz")
p=$(bench_time gunzip_cycle "$B/img.gz")
bench_report "attach+detach ${mb} MiB gzip image [s] vs gzip -dc to tmpfs" \
	"$(bench_fmt "$x" 3)" "$(bench_fmt "$p" 3)" "<=1.2"

if [ "$(id -u)" -eq 0 ] && [ -e /dev/loop-control ]; then
	x=$(bench_time attach_cycle --loop "$B/img")
	p=$(bench_time loop_cycle "$B/img")
	bench_report "attach --loop+detach ${mb} MiB [s] vs cp + losetup" \
		"$(bench_fmt "$x" 3)" "$(bench_fmt "$p" 3)" "<=1.2"
fi

# save: the attached segment back to an image file vs cp of the segment's
# own file (target <= 1.1)
"$XIPTOOL" attach -n "$name" "$B/img" >/dev/null
seg=$("$XIPTOOL" list -o PATH --noheadings -r "$name")
save_cycle() {
	"$XIPTOOL" save "$name" "$B/saved" && rm "$B/saved"
}
seg_copy() {
	cp "$seg" "$B/copy" && rm "$B/copy"
}
"$XIPTOOL" save "$name" "$B/saved"
cmp "$B/saved" "$B/img"
rm "$B/saved"
x=$(bench_time save_cycle)
p=$(bench_time seg_copy)
"$XIPTOOL" detach "$name"
bench_report "save ${mb} MiB segment [s] vs cp of the segment file" \
	"$(bench_fmt "$x" 3)" "$(bench_fmt "$p" 3)" "<=1.1"

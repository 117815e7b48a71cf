#!/usr/bin/env bats
# xiptool ps against the kernel's own accounting of the same processes
# (pmap -X, /proc/PID/exe) for programs run by xiptool exec and from a
# kernel mount of the segment's loop device.

load ../lib/common
load ../lib/attach

PIDS=()

setup() {
	attach_setup
	[ -x /bin/busybox ] || skip "busybox-static is not installed"
	mkdir -p "$T/tree/bin" "$T/tree/sbin"
	cp /bin/busybox "$T/tree/bin/busybox"
	ln -s ../bin/busybox "$T/tree/sbin/sleep"
	xiptool mkfs -q -d "$T/tree" "$T/img"
}

teardown() {
	local p
	for p in "${PIDS[@]}"; do
		kill "$p" 2>/dev/null || true
	done
	for p in "${PIDS[@]}"; do
		wait "$p" 2>/dev/null || true
	done
	attach_teardown
}

# pmap_pages PID MAPPING-NAME INODE: resident pages of PID's mappings of
# that file not copied (Rss - Anonymous) and copied (Anonymous), in the
# kernel's numbers as pmap prints them
pmap_pages() {
	pmap -X "$1" | awk -v name="$2" -v ino="$3" -v kpp="$(($(getconf PAGESIZE) / 1024))" '
		$5 == ino && $NF == name { rss += $7; anon += $11 }
		END { print (rss - anon) / kpp, anon / kpp }'
}

# wait until PID maps something of the segment (the loader has run)
wait_mapped() {
	local i
	for i in $(seq 100); do
		grep -q "$2" "/proc/$1/maps" 2>/dev/null && return 0
		sleep 0.05
	done
	return 1
}

@test "ps: a program run by xiptool exec, its pages shared and copied as the kernel counts them" {
	require_cmd pmap
	xiptool attach -n "$SEG" "$T/img"
	segfile=$(seg_col "$SEG" PATH)
	"$XIPTOOL" exec "@$SEG" /bin/busybox sleep 30 &
	PIDS+=($!)
	pid=$!
	wait_mapped "$pid" "$segfile"
	run xiptool ps --json "$SEG"
	echo "$output"
	[ "$status" -eq 0 ]
	# the kernel's numbers
	read -r shared copied < <(pmap_pages "$pid" "${segfile##*/}" "$(stat -c %i "$segfile")")
	[ "$shared" -gt 100 ]
	python3 - "$output" "$pid" "$shared" "$copied" "$SEG" <<'EOF2'
import json, sys
out, pid, shared, copied, seg = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
segs = json.loads(out)["segments"]
assert [s["segment"] for s in segs] == [seg], segs
kids = segs[0]["children"]
assert len(kids) == 1, kids
k = kids[0]
assert k["pid"] == pid and k["via"] == "exec", k
assert k["program"] == "/bin/busybox", k
assert k["command"] == "busybox", k
# the numbers move a little while the process runs; not by much
assert abs(k["shared"] - shared) <= 2 and abs(k["copied"] - copied) <= 2, (k, shared, copied)
assert segs[0]["shared"] == k["shared"] and segs[0]["copied"] == k["copied"]
EOF2
}

@test "ps: a program run from a kernel mount of the loop device, and one through exec, side by side" {
	require_loop
	require_cmd pmap
	xiptool attach -n "$SEG" --loop "$T/img"
	loop=$(seg_col "$SEG" LOOP)
	mkdir "$T/mnt"
	mount -t ext4 -o ro "$loop" "$T/mnt"
	"$T/mnt/sbin/sleep" 30 &
	PIDS+=($!)
	mpid=$!
	"$XIPTOOL" exec "@$SEG" /sbin/sleep 30 &
	PIDS+=($!)
	epid=$!
	wait_mapped "$mpid" "$T/mnt/bin/busybox"
	wait_mapped "$epid" "$(seg_col "$SEG" PATH)"
	# /proc/PID/exe of the mounted one is on the loop device
	[ "$(stat -L -c %d "/proc/$mpid/exe")" = "$(($(stat -c '0x%t' "$loop") * 256 + $(stat -c '0x%T' "$loop")))" ]
	run xiptool ps --noheadings "@$SEG"
	echo "$output"
	[ "$status" -eq 0 ]
	[ "${#lines[@]}" -eq 3 ]
	[[ "${lines[0]}" =~ ^$SEG\ +$loop\ on\ $T/mnt\ +[0-9]+\ +[0-9]+$ ]]
	grep -qE "^.-$SEG +$mpid +sleep +/bin/busybox +mount +[0-9]+ +[0-9]+$" <<<"$output"
	grep -qE "^.-$SEG +$epid +sleep +/bin/busybox +exec +[0-9]+ +[0-9]+$" <<<"$output"
	# the mounted one: pmap's numbers for busybox on the mount
	read -r shared copied < <(pmap_pages "$mpid" busybox "$(stat -c %i "$T/mnt/bin/busybox")")
	got=$(awk -v p="$mpid" '$2 == p { print $6, $7 }' <<<"$output")
	[ "${got% *}" -ge $((shared - 2)) ]
	[ "${got% *}" -le $((shared + 2)) ]
	# the totals add up
	total=$(awk 'NR == 1 { print $(NF - 1) }' <<<"$output")
	sum=$(awk 'NR > 1 { s += $6 } END { print s }' <<<"$output")
	[ "$total" -eq "$sum" ]
}

@test "ps: no processes, an unknown name, usage" {
	xiptool attach -n "$SEG" "$T/img"
	run xiptool ps "$SEG"
	[ "$status" -eq 0 ]
	[ "${#lines[@]}" -eq 2 ]
	[[ "${lines[1]}" =~ ^$SEG\ +-\ +0\ +0$ ]]
	run xiptool ps "nosuch$U"
	[ "$status" -eq 3 ]
	[ "$output" = "xiptool ps: nosuch$U: no such segment" ]
	run xiptool ps --bogus
	[ "$status" -eq 2 ]
	# nothing attached: an empty list
	xiptool detach "$SEG"
	run xiptool ps --json
	[ "$status" -eq 0 ]
	[[ "$(tr -d ' \n' <<<"$output")" == '{"segments":[]}' ]]
}

# map_file FILE PAGES: a python process that maps FILE shared, read-only,
# reads its first PAGES pages and sleeps; its pid in $mpid once mapped.
map_file() {
	python3 - "$1" "$2" "$T/mapped" <<'EOF2' &
import mmap, os, sys, time
f = open(sys.argv[1], "rb")
m = mmap.mmap(f.fileno(), 0, mmap.MAP_SHARED, mmap.PROT_READ)
pg = mmap.PAGESIZE
s = sum(m[i * pg] for i in range(int(sys.argv[2])))
open(sys.argv[3], "w").write("%d\n" % s)
time.sleep(60)
EOF2
	mpid=$!
	PIDS+=("$mpid")
	for i in $(seq 200); do
		[ -s "$T/mapped" ] && return 0
		sleep 0.05
	done
	return 1
}

@test "ps: a program mapping the segment file is mmap, nbdkit serving it is mmap, only the program xiptool exec started is exec" {
	require_cmd python3 nbdkit nbdcopy
	plugin=$TOP_BUILDDIR/nbdkit-xiptool-plugin.so
	[ -f "$plugin" ] || skip "the nbdkit plugin was not built"
	xiptool attach -n "$SEG" "$T/img"
	segfile=$(seg_col "$SEG" PATH)
	map_file "$segfile" 16
	# nbdkit in the background as it runs by default: the server is the
	# child it forks
	nbdkit -U "$T/n.sock" --pidfile "$T/n.pid" "$plugin" image="@$SEG" \
		readonly=true </dev/null >"$T/n.log" 2>&1 3>&-
	for i in $(seq 200); do [ -s "$T/n.pid" ] && break; sleep 0.05; done
	npid=$(cat "$T/n.pid")
	PIDS+=("$npid")
	nbdcopy "nbd+unix:///?socket=$T/n.sock" "$T/copy"
	cmp "$T/copy" "$T/img"
	"$XIPTOOL" exec "@$SEG" /bin/busybox sleep 30 &
	epid=$!
	PIDS+=("$epid")
	wait_mapped "$epid" "$segfile"
	run xiptool ps --json "$SEG"
	echo "$output"
	[ "$status" -eq 0 ]
	python3 - "$output" "$mpid" "$npid" "$epid" <<'EOF2'
import json, sys
out = json.loads(sys.argv[1])
mpid, npid, epid = map(int, sys.argv[2:5])
kids = {k["pid"]: k for k in out["segments"][0]["children"]}
assert sorted(kids) == sorted([mpid, npid, epid]), kids
m, n, e = kids[mpid], kids[npid], kids[epid]
assert m["via"] == "mmap" and m["program"] is None, m
# the 16 pages read, shared with the segment, none copied
assert m["shared"] >= 16 and m["copied"] == 0, m
assert n["via"] == "mmap" and n["command"] == "nbdkit", n
assert n["program"] is None, n
assert e["via"] == "exec" and e["program"] == "/bin/busybox", e
EOF2
	run xiptool ps "$SEG"
	grepq -E "^.-$SEG +$npid +nbdkit +- +mmap +[0-9]+ +0$" <<<"$output"
}

@test "ps: QEMU with the segment as its memory backend (a guest's pmem) is pmem" {
	require_cmd qemu-system-x86_64
	xiptool attach -n "$SEG" "$T/img"
	segfile=$(seg_col "$SEG" PATH)
	# -S: the machine is built (the backend mapped) but never runs
	qemu-system-x86_64 -S -machine pc,nvdimm=on -accel tcg -nodefaults \
		-m 128M,slots=2,maxmem=1G -display none -monitor none \
		-object "memory-backend-file,id=seg,share=on,mem-path=$segfile,size=$(stat -c %s "$segfile"),readonly=on" \
		-device nvdimm,memdev=seg,unarmed=on </dev/null >"$T/q.log" 2>&1 3>&- &
	qpid=$!
	PIDS+=("$qpid")
	wait_mapped "$qpid" "$segfile"
	map_file "$segfile" 4
	run xiptool ps "$SEG"
	echo "$output"
	[ "$status" -eq 0 ]
	grepq -E "^.-$SEG +$qpid +qemu-system-x86 +- +pmem +[0-9]+ +0$" <<<"$output"
	grepq -E "^.-$SEG +$mpid +python3 +- +mmap +[0-9]+ +0$" <<<"$output"
}

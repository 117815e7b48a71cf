#!/usr/bin/env bats
# Guests boot from one shared segment: their root file system is an sr
# segment shared as a virtio-pmem device, mounted by the initramfs with
# ext4 -o ro,dax=always, switched to, and the image's own /sbin/init runs
# as PID 1.  Three at once, with xiptool ps looking at them and a host
# program running from the same segment beside them.
# Run by `make check-vm`; guests still running when a test ends are stopped
# by teardown.

load lib

bats_require_minimum_version 1.5.0

teardown() {
	local p
	for p in "${HOSTPIDS[@]}"; do
		kill "$p" 2>/dev/null || true
		wait "$p" 2>/dev/null || true
	done
	vm_teardown
	attach_teardown
}

setup() {
	attach_setup
	vm_require
	HOSTPIDS=()
	vm_root_tree "$T/root"
	xiptool mkfs -q -d "$T/root" "$T/root.img"
	vm_initrd
}

# booted_from_root LOG: the guest's own /sbin/init ran as PID 1 from its
# pmem root, mounted ext4 ro with DAX, and its programs are DAX files
booted_from_root() {
	cat "$1"
	[ "$(vm_val "$1" mount)" = ok ]
	[ "$(vm_val "$1" init)" = pid=1 ]
	[[ "$(vm_val "$1" root)" =~ ^/dev/pmem0\ ext4\ ro,.*dax=always ]]
	[ "$(vm_val "$1" statx)" = "/sbin/init dax=1 known=1" ]
	grepq -x "XIPVM statx /bin/busybox dax=1 known=1" < <(tr -d '\r' <"$1")
}

@test "three guests boot at once from one sr segment as their virtio-pmem root: their own /sbin/init is PID 1, programs run under DAX, ps shows the three QEMUs and a host program, each guest powers off" {
	xiptool verify "$T/root.img" >/dev/null
	xiptool attach -t sr -n "$SEG" "$T/root.img"
	file=$(seg_col "$SEG" PATH)
	pids=()
	for g in a b c; do
		vm_ctl "$T/$g.ctl"
		VM_CTL=$T/$g.ctl vm_start "$T/$g.log" boot virtio-pmem "$file"
		pids+=("$VM_PID")
	done
	i=0
	for g in a b c; do
		vm_wait_for "$T/$g.log" "${pids[$i]}" "XIPVM ready"
		i=$((i + 1))
	done
	for g in a b c; do
		booted_from_root "$T/$g.log"
		grepq -x "XIPVM statx /bin/statx-dax dax=1 known=1" < <(tr -d '\r' <"$T/$g.log")
		[ "$(vm_val "$T/$g.log" run)" = from-the-root ]
		[ "$(vm_val "$T/$g.log" maps)" -ge 1 ]
	done
	# a host program running in place from the same segment
	"$XIPTOOL" exec "@$SEG" /bin/busybox sleep 60 &
	hpid=$!
	HOSTPIDS+=("$hpid")
	# until the loader has mapped it (a loaded machine: up to 30 s)
	for i in $(seq 300); do
		grep -q "$file" "/proc/$hpid/maps" 2>/dev/null && break
		sleep 0.1
	done
	grepq "$file" "/proc/$hpid/maps"
	run xiptool ps --json "$SEG"
	echo "$output"
	[ "$status" -eq 0 ]
	python3 - "$output" "$hpid" "${pids[@]}" <<'EOF2'
import json, sys
out = json.loads(sys.argv[1])
host, guests = int(sys.argv[2]), [int(p) for p in sys.argv[3:]]
kids = {k["pid"]: k for k in out["segments"][0]["children"]}
assert sorted(kids) == sorted(guests + [host]), kids
for g in guests:
    k = kids[g]
    assert k["via"] == "pmem" and k["command"].startswith("qemu-system"), k
    assert k["program"] is None, k
    # the guest's pages are the segment's: read through DAX, never copied
    assert k["shared"] > 0 and k["copied"] == 0, k
h = kids[host]
assert h["via"] == "exec" and h["program"] == "/bin/busybox", h
assert h["shared"] > 0, h
EOF2
	xiptool ps "$SEG" >&3
	# each guest powers off by itself once told
	for g in a b c; do
		vm_tell "$T/$g.ctl" poweroff
	done
	for p in "${pids[@]}"; do
		vm_exited "$p"
	done
	for g in a b c; do
		[ "$(vm_val "$T/$g.log" bye)" = poweroff ]
		grepq "reboot: Power down" "$T/$g.log"
	done
	# nothing the guests did changed the segment
	cmp -n "$(stat -c %s "$T/root.img")" "$file" "$T/root.img"
}

@test "nvdimm: a guest boots from the segment's raw pmem namespace, read-only without DAX (the initramfs falls back to ro)" {
	xiptool attach -t sr -n "$SEG" "$T/root.img"
	file=$(seg_col "$SEG" PATH)
	vm_ctl "$T/n.ctl"
	VM_CTL=$T/n.ctl vm_start "$T/n.log" boot nvdimm "$file"
	pid=$VM_PID
	vm_wait_for "$T/n.log" "$pid" "XIPVM ready"
	cat "$T/n.log"
	[ "$(vm_val "$T/n.log" dax)" = refused ]
	[ "$(vm_val "$T/n.log" mount)" = ok ]
	[ "$(vm_val "$T/n.log" init)" = pid=1 ]
	[[ "$(vm_val "$T/n.log" root)" =~ ^/dev/pmem0\ ext4\ ro, ]]
	[ "$(vm_val "$T/n.log" statx)" = "/sbin/init dax=0 known=1" ]
	[ "$(vm_val "$T/n.log" run)" = from-the-root ]
	run xiptool ps --json "$SEG"
	[ "$status" -eq 0 ]
	[ "$(python3 -c 'import json,sys; k=json.load(sys.stdin)["segments"][0]["children"]; print(len(k), k[0]["via"])' <<<"$output")" = "1 pmem" ]
	vm_tell "$T/n.ctl" poweroff
	vm_exited "$pid"
	[ "$(vm_val "$T/n.log" bye)" = poweroff ]
}

@test "two guests boot from a sealed, verified segment read-only: the pmem device is the whole segment (file system, hash tree, padding), programs run under DAX, a write fails with EROFS, root's raw write on the device changes nothing, each powers off" {
	xiptool mkfs -q --verity --root-hash-file "$T/root.hash" -d "$T/root" "$T/root-v.img"
	root=$(cat "$T/root.hash")
	xiptool verify --root-hash "$root" "$T/root-v.img" >/dev/null
	xiptool attach --root-hash "$root" -n "$SEG" "$T/root-v.img"
	[ "$(seg_col "$SEG" VERIFIED)" = 1 ]
	file=$(seg_col "$SEG" PATH)
	# sealed: not even root opens it for writing; QEMU maps it read-only
	# (readonly=on), all of it: nd_pmem wants a multiple of 2 MiB, which
	# attach pads the segment to, and the file system ends before the tree
	run ! sh -c 'exec 3>> "$1"' sh "$file"
	[ $(( $(stat -c %s "$file") % (2 << 20) )) -eq 0 ]
	[ "$(stat -c %s "$file")" -gt "$(stat -c %s "$T/root-v.img")" ]
	pids=()
	for g in a b; do
		vm_ctl "$T/$g.ctl"
		VM_CTL=$T/$g.ctl VM_APPEND=xipwrite=raw vm_start "$T/$g.log" boot virtio-pmem "$file"
		pids+=("$VM_PID")
	done
	i=0
	for g in a b; do
		vm_wait_for "$T/$g.log" "${pids[$i]}" "XIPVM ready"
		i=$((i + 1))
	done
	for g in a b; do
		booted_from_root "$T/$g.log"
		[ "$(vm_val "$T/$g.log" run)" = from-the-root ]
		[ "$(vm_val "$T/$g.log" write)" = "Read-only file system" ]
		vm_val "$T/$g.log" rawwrite >&3
		[[ "$(vm_val "$T/$g.log" rawwrite)" == status=* ]]
	done
	run xiptool ps --json "$SEG"
	[ "$status" -eq 0 ]
	[ "$(python3 -c 'import json,sys; k=json.load(sys.stdin)["segments"][0]["children"]; print(len(k), *sorted({c["via"] for c in k}), sum(c["copied"] for c in k))' <<<"$output")" = "2 pmem 0" ]
	for g in a b; do
		vm_tell "$T/$g.ctl" poweroff
	done
	for p in "${pids[@]}"; do
		vm_exited "$p"
	done
	for g in a b; do
		[ "$(vm_val "$T/$g.log" bye)" = poweroff ]
		grepq "reboot: Power down" "$T/$g.log"
	done
	# the segment holds the bytes it was verified with
	cmp -n "$(stat -c %s "$T/root-v.img")" "$file" "$T/root-v.img"
	xiptool verify --root-hash "$root" "@$SEG" >/dev/null
}

#!/usr/bin/env bats
# Guests share one segment as a pmem device under DAX: a distribution
# kernel under QEMU mounts an attached segment with ext4 -o dax=always.
# Run by `make check-vm`, not by `make check`: each boot takes seconds.
# Guests that are still running when a test ends are stopped by teardown.

load lib

teardown() {
	vm_teardown
	attach_teardown
}

setup() {
	attach_setup
	vm_require
	mkdir -p "$T/tree/bin"
	cp /bin/busybox "$T/tree/bin/busybox"
	head -c 1000000 /dev/urandom > "$T/tree/data"
	xiptool mkfs -q -d "$T/tree" "$T/img"
	vm_initrd
}

@test "two guests at once: ext4 -o dax=always on one sr segment through virtio-pmem, STATX_ATTR_DAX set, busybox runs, its pages exist once" {
	run xiptool attach -t sr -n "$SEG" "$T/img"
	[ "$status" -eq 0 ]
	file=$(seg_col "$SEG" PATH)
	[ $(( $(stat -c %s "$file") % (2 << 20) )) -eq 0 ]
	vm_start "$T/a.log" share virtio-pmem "$file"
	a=$VM_PID
	vm_start "$T/b.log" share virtio-pmem "$file"
	b=$VM_PID
	vm_wait "$T/a.log" "$a"
	vm_wait "$T/b.log" "$b"
	for g in a b; do
		cat "$T/$g.log"
		[ "$(vm_val "$T/$g.log" pmem0)" = yes ]
		[ "$(vm_val "$T/$g.log" mount)" = ok ]
		[[ "$(vm_val "$T/$g.log" mounts)" == *"ro"*"dax=always"* ]]
		[ "$(vm_val "$T/$g.log" statx)" = "/mnt/bin/busybox dax=1 known=1" ]
		[ "$(vm_val "$T/$g.log" run)" = from-the-image ]
	done
	# both guests read all of busybox through DAX: the host's page
	# cache pages of the segment file, mapped shared by both QEMUs
	for p in $a $b; do
		rss=$(smaps_sum "$p" "$file" Rss)
		pss=$(smaps_sum "$p" "$file" Pss)
		shared=$(( $(smaps_sum "$p" "$file" Shared_Clean) + $(smaps_sum "$p" "$file" Shared_Dirty) ))
		anon=$(smaps_sum "$p" "$file" Anonymous)
		echo "# qemu $p: segment mapping Rss $rss kB, Pss $pss kB, Shared $shared kB, Anonymous $anon kB" >&3
		# busybox's pages, read by both guests, are the segment's own
		# pages, mapped by both QEMUs: no copy (Anonymous) in either
		[ "$shared" -ge $(( $(stat -c %s /bin/busybox) / 1024 )) ]
		[ "$anon" -eq 0 ]
		# Pss: each page counted half in each of the two guests
		[ $(( pss * 2 )) -le $(( rss + rss / 10 )) ]
	done
	vm_stop "$a"
	vm_stop "$b"
	run xiptool verify "@$SEG"
	[ "$status" -eq 0 ]
	cmp -n "$(stat -c %s "$T/img")" "$file" "$T/img"
}

@test "a guest writes a sw segment under DAX: xiptool read sees it, verify is clean, save gives an e2fsck-clean image" {
	run xiptool attach -t sw -n "$SEG" --size 8M "$T/img"
	[ "$status" -eq 0 ]
	file=$(seg_col "$SEG" PATH)
	vm_start "$T/w.log" rw virtio-pmem "$file"
	vm_wait "$T/w.log" "$VM_PID"
	vm_exited "$VM_PID"
	cat "$T/w.log"
	[ "$(vm_val "$T/w.log" mount)" = ok ]
	[ "$(vm_val "$T/w.log" statx)" = "/mnt/bin/busybox dax=1 known=1" ]
	[ "$(vm_val "$T/w.log" umount)" = ok ]
	run xiptool read "@$SEG" /guest.txt
	[ "$status" -eq 0 ]
	[ "$output" = "written by the guest" ]
	xiptool read "@$SEG" /gdir/copy | cmp - <(head -c 100000 "$T/tree/data")
	run xiptool verify "@$SEG"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"@$SEG: clean: 0 problems"* ]]
	run xiptool save "$SEG" "$T/saved"
	[ "$status" -eq 0 ]
	[ "$(stat -c %s "$T/saved")" = $((8 << 20)) ]
	run e2fsck -fn "$T/saved"
	echo "$output"
	[ "$status" -eq 0 ]
}

@test "nvdimm: the guest sees a raw pmem namespace: it mounts, without DAX" {
	run xiptool attach -t sr -n "$SEG" "$T/img"
	[ "$status" -eq 0 ]
	file=$(seg_col "$SEG" PATH)
	vm_start "$T/n.log" nodax nvdimm "$file"
	vm_wait "$T/n.log" "$VM_PID"
	vm_exited "$VM_PID"
	cat "$T/n.log"
	[ "$(vm_val "$T/n.log" pmem0)" = yes ]
	[ "$(vm_val "$T/n.log" daxmount)" = refused ]
	grep -q "DAX unsupported by block device" "$T/n.log"
	[ "$(vm_val "$T/n.log" mount)" = ok ]
	[ "$(vm_val "$T/n.log" statx)" = "/mnt/bin/busybox dax=0 known=1" ]
	[ "$(vm_val "$T/n.log" run)" = from-the-image ]
}

@test "the ext2 driver's DAX, where the kernel has an ext2 driver" {
	modprobe -S "$KVER" --show-depends ext2 2>/dev/null | grepq '/ext2\.ko' ||
		skip "kernel $KVER has no ext2 module (its ext4 driver mounts ext2)"
	vm_initrd ext2
	run xiptool attach -t sr -n "$SEG" "$T/img"
	[ "$status" -eq 0 ]
	file=$(seg_col "$SEG" PATH)
	vm_start "$T/e.log" ro virtio-pmem "$file" ext2
	vm_wait "$T/e.log" "$VM_PID"
	vm_exited "$VM_PID"
	cat "$T/e.log"
	[ "$(vm_val "$T/e.log" mount)" = ok ]
	[ "$(vm_val "$T/e.log" statx)" = "/mnt/bin/busybox dax=1 known=1" ]
	[ "$(vm_val "$T/e.log" run)" = from-the-image ]
}

#!/bin/sh
# /sbin/init of the guest root file system image that boot.bats and
# tests/bench/guests.sh build: PID 1 after the initramfs switched its root
# to the pmem device.  Reports on the serial console ("XIPVM key value"),
# waits for the host's word on ttyS1, then powers the guest off.
export PATH=/bin:/sbin
mount -t proc proc /proc
mount -t sysfs sys /sys
say() { echo "XIPVM $*"; }
# the host's words come on ttyS1: open it once, before saying anything the
# host answers, and keep it open (a serial port drops what arrives while it
# is closed and clears its receive FIFO when opened: a word sent between a
# close and the next open would be lost); no echo, the host's pipe carries
# both directions
if (: < /dev/ttyS1) 2>/dev/null; then
	exec 3< /dev/ttyS1
	stty -F /dev/ttyS1 raw -echo 2>/dev/null
fi
say init pid=$$
say root "$(awk '$2 == "/" { r = $1 " " $3 " " $4 } END { print r }' /proc/mounts)"
# programs of the root file system run from its DAX pages
statx-dax /sbin/init /bin/busybox /bin/statx-dax | sed 's/^/XIPVM statx /'
say run "$(busybox echo from-the-root)"
say maps "$(grep -c ' /bin/busybox$' /proc/self/maps)"
# a write to the root file system fails: it is mounted read-only
say write "$( (echo x > /xipvm-write) 2>&1 | sed 's/^.*: //')"
# xipwrite=raw: root writes the device itself with O_DIRECT (the first
# 512 bytes of this script over ext2's unused boot sector); the host backs
# it read-only, so the bytes it holds must not change, whatever the guest
# is told
if grep -q xipwrite=raw /proc/cmdline; then
	busybox dd if=/sbin/init of=/dev/pmem0 bs=512 count=1 conv=notrunc \
		oflag=direct status=none 2>/dev/null
	say rawwrite status=$?
fi
# the benchmark's work, when the host says: read every file of the root
# file system
if grep -q xipread=all /proc/cmdline; then
	say wait read
	read -t 900 word <&3
	# the guest's page cache (kB): files, and block device buffers
	# (the file system's metadata) before and after
	say cache-before "$(awk '$1 == "Cached:" || $1 == "Buffers:" { s += $2 } END { print s }' /proc/meminfo)"
	find / -xdev -type f -exec cat {} + > /dev/null
	say cache-after "$(awk '$1 == "Cached:" || $1 == "Buffers:" { s += $2 } END { print s }' /proc/meminfo)"
	say read done
fi
say ready
read -t 900 word <&3 || word=timeout
say bye "$word"
sync
poweroff -f

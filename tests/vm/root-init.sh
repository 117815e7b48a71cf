#!/bin/sh
# /sbin/init of the guest root file system image that boot.bats and
# tests/bench/guests.sh build: PID 1 after the initramfs switched its root
# to the pmem device.  Reports on the serial console ("XIPVM key value"),
# waits for the host's word on ttyS1, then powers the guest off.
export PATH=/bin:/sbin
mount -t proc proc /proc
mount -t sysfs sys /sys
say() { echo "XIPVM $*"; }
say init pid=$$
say root "$(awk '$2 == "/" { r = $1 " " $3 " " $4 } END { print r }' /proc/mounts)"
# programs of the root file system run from its DAX pages
statx-dax /sbin/init /bin/busybox /bin/statx-dax | sed 's/^/XIPVM statx /'
say run "$(busybox echo from-the-root)"
say maps "$(grep -c ' /bin/busybox$' /proc/self/maps)"
stty -F /dev/ttyS1 raw -echo 2>/dev/null
# the benchmark's work, when the host says: read every file of the root
# file system
if grep -q xipread=all /proc/cmdline; then
	say wait read
	read -t 900 word < /dev/ttyS1
	say cached-before "$(awk '$1 == "Cached:" { print $2 }' /proc/meminfo)"
	find / -xdev -type f -exec cat {} + > /dev/null
	say cached-after "$(awk '$1 == "Cached:" { print $2 }' /proc/meminfo)"
	say read done
fi
say ready
read -t 900 word < /dev/ttyS1 || word=timeout
say bye "$word"
sync
poweroff -f

#!/bin/busybox sh
# The guest's /init: load the pmem modules, mount the pmem device with DAX,
# run the checks the kernel command line asks for, print one
# "XIPVM key value" line per result on the serial console.
/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
say() { echo "XIPVM $*"; }
for m in $(cat /modules.order); do insmod "/modules/$m" 2>/dev/null; done
mode=$(sed -n 's/.*xipmode=\([a-z0-9]*\).*/\1/p' /proc/cmdline)
fstype=$(sed -n 's/.*xipfs=\([a-z0-9]*\).*/\1/p' /proc/cmdline)
# the device to wait for (boot: the root file system's), pmem0 by default
rootdev=$(sed -n 's/.*xipdev=\([a-z0-9]*\).*/\1/p' /proc/cmdline)
rootdev=${rootdev:-pmem0}
# the device appears once its driver probed it, which libnvdimm may do
# after insmod returns; a TCG guest on a busy host runs slowly.  Wait up to
# xipwait= seconds (default 120); devwait says how long it took (tenths).
dwait=$(sed -n 's/.*xipwait=\([0-9]*\).*/\1/p' /proc/cmdline)
i=0
while [ ! -b /dev/$rootdev ] && [ $i -lt $(( ${dwait:-120} * 10 )) ]; do
	sleep 0.1
	i=$((i + 1))
done
say devwait "$i"
say pmem0 $([ -b /dev/pmem0 ] && echo yes || echo no)
dmesg | grep -iE 'pmem|nd_|dax|ext4|ext2' | sed 's/^/XIPVM dmesg /'
mkdir -p /mnt
# boot: the pmem device (or xipdev=) is the root file system; its own
# /sbin/init runs
if [ "$mode" = boot ]; then
	mkdir -p /newroot
	opts=ro,dax=always
	[ "$rootdev" = pmem0 ] || opts=ro
	# an nvdimm's raw namespace has no DAX: ext4 refuses dax=always
	if mount -t ext4 -o $opts /dev/$rootdev /newroot ||
	   { [ "$opts" != ro ] && mount -t ext4 -o ro /dev/$rootdev /newroot &&
	     say dax refused; }; then
		say mount ok
		umount /proc /sys
		mount --move /dev /newroot/dev
		exec switch_root /newroot /sbin/init
	fi
	say mount failed
	say done
	poweroff -f
fi
case $mode in
ro|share) opts=ro,dax=always ;;
rw) opts=dax=always ;;
nodax) opts=ro ;;
esac
[ "$fstype" = ext2 ] && opts=${opts%dax=always}dax
if [ "$mode" = nodax ]; then
	mount -t ext4 -o ro,dax=always /dev/pmem0 /mnt 2>/dev/null &&
		{ say daxmount ok; umount /mnt; } || say daxmount refused
fi
if mount -t "${fstype:-ext4}" -o "$opts" /dev/pmem0 /mnt; then
	say mount ok
	grep ' /mnt ' /proc/mounts | sed 's/^/XIPVM mounts /'
	/statx-dax /mnt/bin/busybox | sed 's/^/XIPVM statx /'
	say run "$(/mnt/bin/busybox echo from-the-image)"
	cat /mnt/bin/busybox > /dev/null
	if [ "$mode" = rw ]; then
		echo "written by the guest" > /mnt/guest.txt
		mkdir /mnt/gdir && head -c 100000 /mnt/data > /mnt/gdir/copy
		sync
		umount /mnt && say umount ok
	fi
else
	say mount failed
fi
say done
# share: stay up until the host has looked at both guests
[ "$mode" = share ] && sleep 600
poweroff -f

# Helpers for the guest tests: a distribution kernel under
# qemu-system-x86_64 (KVM when /dev/kvm exists, TCG otherwise), an
# initramfs built now from busybox-static and the kernel's modules.

load ../lib/common
load ../lib/attach

VM_MODULES="virtio_pci nd_virtio virtio_pmem nd_pmem nfit ext4"

vm_require() {
	require_root
	require_cmd qemu-system-x86_64
	require_cmd cpio
	require_cmd gcc
	[ -x /bin/busybox ] && file -L /bin/busybox | grep -q 'statically linked' ||
		skip "needs busybox-static"
	KERNEL=$(ls /boot/vmlinuz-* 2>/dev/null | sort -V | tail -1)
	[ -n "$KERNEL" ] || skip "no kernel in /boot (linux-image-amd64)"
	KVER=${KERNEL#/boot/vmlinuz-}
	[ -d "/lib/modules/$KVER" ] || skip "no modules for $KVER"
	ACCEL=tcg
	[ -w /dev/kvm ] && ACCEL=kvm
	return 0
}

# Build $T/initrd: busybox, the statx probe, the modules $VM_MODULES need
# in the order modprobe --show-depends gives, and init.sh.
vm_initrd() {
	local root=$T/initrd.d m f
	mkdir -p "$root"/{bin,proc,sys,dev,modules}
	cp /bin/busybox "$root/bin/busybox"
	gcc -static -O2 -o "$root/statx-dax" "$TOP_SRCDIR/tests/vm/statx-dax.c"
	cp "$TOP_SRCDIR/tests/vm/init.sh" "$root/init"
	chmod 755 "$root/init"
	: > "$root/modules.order"
	for m in $VM_MODULES "$@"; do
		modprobe -S "$KVER" --show-depends "$m" 2>/dev/null |
			sed -n 's/^insmod \([^ ]*\).*/\1/p'
	done | awk '!seen[$0]++' | while read -r f; do
		case $f in
		*.ko.xz) xz -dc "$f" > "$root/modules/$(basename "${f%.xz}")"
			 f=${f%.xz} ;;
		*.ko.zst) zstd -qdc "$f" > "$root/modules/$(basename "${f%.zst}")"
			  f=${f%.zst} ;;
		*) cp "$f" "$root/modules/" ;;
		esac
		basename "$f" >> "$root/modules.order"
	done
	(cd "$root" && find . | cpio -o -H newc --quiet) | gzip -1 > "$T/initrd"
}

# vm_start LOG MODE DEVICE SEGFILE [FS]: boot one guest in the background
# on SEGFILE as DEVICE (virtio-pmem or nvdimm); its PID in $VM_PID.
vm_start() {
	local log=$1 mode=$2 dev=$3 file=$4 fs=${5:-ext4} ro=on dopt size
	size=$(stat -c %s "$file")
	[ "$mode" = rw ] && ro=off
	case $dev in
	virtio-pmem) dopt="-device virtio-pmem-pci,memdev=seg" mach=pc ;;
	nvdimm) dopt="-device nvdimm,memdev=seg,unarmed=$ro" mach=pc,nvdimm=on ;;
	esac
	# shellcheck disable=SC2086
	qemu-system-x86_64 -machine "$mach" -accel "$ACCEL" -cpu max -smp 1 \
		-m 256M,slots=2,maxmem=4G -nographic -no-reboot -nodefaults \
		-kernel "$KERNEL" -initrd "$T/initrd" \
		-append "console=ttyS0 panic=-1 loglevel=4 xipmode=$mode xipfs=$fs" \
		-object "memory-backend-file,id=seg,share=on,mem-path=$file,size=$size,readonly=$ro" \
		$dopt -serial "file:$log" -monitor none -display none \
		> "$log.qemu" 2>&1 &
	VM_PID=$!
	echo "$VM_PID" >> "$T/vm.pids"
}

# Stop the guests this test started (by their PIDs), if still running.
vm_teardown() {
	local p
	[ -f "${T:-}/vm.pids" ] || return 0
	while read -r p; do
		kill "$p" 2>/dev/null || true
	done < "$T/vm.pids"
}

# vm_wait LOG PID: until the guest printed "XIPVM done" (or died).
vm_wait() {
	local i
	for i in $(seq 1200); do
		grep -q "XIPVM done" "$1" 2>/dev/null && return 0
		kill -0 "$2" 2>/dev/null || break
		sleep 0.25
	done
	echo "---- guest $1:"; cat "$1" "$1.qemu"
	return 1
}

vm_stop() {
	kill "$1" 2>/dev/null || true
	wait "$1" 2>/dev/null || true
}

# vm_val LOG KEY: the rest of the guest's "XIPVM KEY ..." line.
vm_val() {
	sed -n "s/^.*XIPVM $2 //p" "$1" | tr -d '\r' | head -1
}

# smaps_sum PID FILE FIELD: kB of FIELD over PID's mappings of FILE.
smaps_sum() {
	awk -v f="$2" -v k="$3:" '
		/^[0-9a-f]+-[0-9a-f]+ / { on = ($NF == f) }
		on && $1 == k { s += $2 }
		END { print s + 0 }' "/proc/$1/smaps"
}

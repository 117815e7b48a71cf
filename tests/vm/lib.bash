# Helpers for the guest tests: a distribution kernel under
# qemu-system-x86_64 (KVM when a probe boot shows it works, TCG otherwise),
# an initramfs built now from busybox-static and the kernel's modules.

load ../lib/common
load ../lib/attach

VM_MODULES="virtio_pci nd_virtio virtio_pmem nd_pmem nfit ext4"
# the device KVM is used through, and how long (seconds) a probe boot may
# take to print the kernel's first console line
: "${VM_KVM_DEV:=/dev/kvm}"
: "${XIPTOOL_VM_PROBE_TIMEOUT:=10}"
# how long (seconds) a guest may take to report, and to power off after
: "${XIPTOOL_VM_TIMEOUT:=300}"
VM_STOP_TIMEOUT=10

vm_require() {
	require_root
	require_cmd qemu-system-x86_64
	require_cmd cpio
	require_cmd gcc
	[ -x /bin/busybox ] && file -L /bin/busybox | grepq 'statically linked' ||
		skip "needs busybox-static"
	KERNEL=$(ls /boot/vmlinuz-* 2>/dev/null | sort -V | tail -1)
	[ -n "$KERNEL" ] || skip "no kernel in /boot (linux-image-amd64)"
	KVER=${KERNEL#/boot/vmlinuz-}
	[ -d "/lib/modules/$KVER" ] || skip "no modules for $KVER"
	vm_accel
}

# vm_probe_kvm: boot $KERNEL under KVM without an initramfs until it
# prints its first console line ("Linux version"), for at most
# $XIPTOOL_VM_PROBE_TIMEOUT seconds.  /dev/kvm can exist and still fail
# (nested KVM in some virtual machines): QEMU aborts ("failed to set MSR
# 0x10a") or hangs after SeaBIOS.  0 when the kernel spoke; otherwise 1,
# with the reason in $VM_PROBE_WHY.  The probe guest is always stopped.
vm_probe_kvm() {
	local dir pid end why=
	dir=$(mktemp -d "${BATS_RUN_TMPDIR:-${TMPDIR:-/tmp}}/vmprobe.XXXXXX")
	qemu-system-x86_64 -machine pc -accel kvm -cpu max -smp 1 -m 128M \
		-nographic -no-reboot -nodefaults -kernel "$KERNEL" \
		-append "console=ttyS0 earlyprintk=serial,ttyS0 panic=-1" \
		-serial "file:$dir/serial" -monitor none -display none \
		< /dev/null > "$dir/qemu" 2>&1 3>&- &
	pid=$!
	end=$((SECONDS + XIPTOOL_VM_PROBE_TIMEOUT))
	while :; do
		if grep -aq "Linux version" "$dir/serial" 2>/dev/null; then
			break
		elif ! kill -0 "$pid" 2>/dev/null; then
			why=$(grep -a -m1 . "$dir/qemu" |
				sed 's/^[^ :]*qemu[^ :]*: //; s/^error: //')
			why="qemu exited: ${why:-no message}"
			break
		elif [ "$SECONDS" -ge "$end" ]; then
			why="no console line from the kernel within ${XIPTOOL_VM_PROBE_TIMEOUT} s"
			grep -aq SeaBIOS "$dir/serial" 2>/dev/null &&
				why="$why (SeaBIOS started)"
			break
		fi
		sleep 0.1
	done
	vm_stop "$pid"
	rm -rf "$dir"
	VM_PROBE_WHY=$why
	[ -z "$why" ]
}

# vm_accel: set ACCEL (kvm or tcg) for the guests of this run, once per
# run: the choice is kept in $VM_ACCEL_CACHE (in the run's directory) and
# written as a TAP comment when made.  XIPTOOL_VM_ACCEL=kvm|tcg chooses
# without a probe.
vm_accel() {
	local cache=${VM_ACCEL_CACHE:-${BATS_RUN_TMPDIR:?}/vm-accel} note
	if [ -s "$cache" ]; then
		ACCEL=$(head -1 "$cache")
		return 0
	fi
	case ${XIPTOOL_VM_ACCEL:-} in
	kvm|tcg) ACCEL=$XIPTOOL_VM_ACCEL note="XIPTOOL_VM_ACCEL" ;;
	'')	if [ ! -w "$VM_KVM_DEV" ]; then
			ACCEL=tcg note="no usable $VM_KVM_DEV"
		elif vm_probe_kvm; then
			ACCEL=kvm note="a probe boot printed the kernel's first line"
		else
			ACCEL=tcg note="kvm present but could not boot: $VM_PROBE_WHY"
		fi ;;
	*)	echo "XIPTOOL_VM_ACCEL=$XIPTOOL_VM_ACCEL: kvm or tcg"
		return 1 ;;
	esac
	printf '%s\n%s\n' "$ACCEL" "$note" > "$cache"
	{ echo "# accel: $ACCEL ($note)"; } 2>/dev/null >&3 || true
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

# vm_root_tree DIR: a root file system to boot from: busybox and its
# applets, statx-dax, root-init.sh as /sbin/init, and the directories init
# mounts on.
vm_root_tree() {
	local d=$1 a
	mkdir -p "$d"/{bin,sbin,dev,proc,sys,etc,tmp}
	cp /bin/busybox "$d/bin/busybox"
	for a in sh mount umount cat echo grep sed awk find stty sync \
		poweroff sleep ls; do
		ln -s busybox "$d/bin/$a"
	done
	gcc -static -O2 -o "$d/bin/statx-dax" "$TOP_SRCDIR/tests/vm/statx-dax.c"
	cp "$TOP_SRCDIR/tests/vm/root-init.sh" "$d/sbin/init"
	chmod 755 "$d/sbin/init"
	echo "root file system from a segment" > "$d/etc/motd"
}

# vm_start LOG MODE DEVICE SEGFILE [FS]: boot one guest in the background
# on SEGFILE as DEVICE (virtio-pmem or nvdimm; virtio-blk: a read-only
# disk, read with O_DIRECT, for comparisons); its PID in $VM_PID.
# With VM_CTL set to a FIFO, the guest's second serial port (ttyS1) reads
# what the host writes there (vm_tell).  VM_APPEND adds to the kernel's
# command line; VM_MEM sets the guest's memory (default 256M).
vm_start() {
	local log=$1 mode=$2 dev=$3 file=$4 fs=${5:-ext4} ro=on dopt size ctl=
	local mem append
	size=$(stat -c %s "$file")
	[ "$mode" = rw ] && ro=off
	[ -n "${VM_CTL:-}" ] &&
		ctl="-chardev pipe,id=ctl,path=$VM_CTL -serial chardev:ctl"
	mem="-object memory-backend-file,id=seg,share=on,mem-path=$file,size=$size,readonly=$ro"
	# no_timer_check: under TCG on a busy host the kernel's check that the
	# 8254 timer reaches the IO-APIC can miss its ticks and panic ("IO-APIC
	# + timer doesn't work"); QEMU's timer is wired, the check is moot
	append="console=ttyS0 panic=-1 loglevel=4 no_timer_check xipmode=$mode xipfs=$fs ${VM_APPEND:-}"
	case $dev in
	virtio-pmem) dopt="-device virtio-pmem-pci,memdev=seg" mach=pc ;;
	nvdimm) dopt="-device nvdimm,memdev=seg,unarmed=$ro" mach=pc,nvdimm=on ;;
	virtio-blk)
		dopt="-drive file=$file,format=raw,if=none,id=d0,readonly=on,cache.direct=on -device virtio-blk-pci,drive=d0"
		mem="" mach=pc append="$append xipdev=vda" ;;
	esac
	# shellcheck disable=SC2086
	qemu-system-x86_64 -machine "$mach" -accel "$ACCEL" -cpu max -smp 1 \
		-m "${VM_MEM:-256M},slots=2,maxmem=4G" -nographic -no-reboot \
		-nodefaults -kernel "$KERNEL" -initrd "$T/initrd" -append "$append" \
		$mem $dopt -serial "file:$log" $ctl -monitor none -display none \
		< /dev/null > "$log.qemu" 2>&1 3>&- &
	VM_PID=$!
	echo "$VM_PID" >> "$T/vm.pids"
}

# vm_ctl FIFO: make the FIFO a guest's ttyS1 will read (VM_CTL=FIFO for
# vm_start).  QEMU opens it for reading and writing: the host's writes
# never block, and the guest must not echo (it sets ttyS1 -echo).
vm_ctl() {
	rm -f "$1"
	mkfifo -m 600 "$1"
}

# vm_tell FIFO WORDS...: one line to the guest behind FIFO, within 5 s.
vm_tell() {
	local f=$1
	shift
	timeout 5 sh -c 'printf "%s\n" "$2" > "$1"' sh "$f" "$*"
}

# Stop the guests this test started (by their PIDs), if still running.
vm_teardown() {
	local p
	[ -f "${T:-}/vm.pids" ] || return 0
	while read -r p; do
		vm_stop "$p"
	done < "$T/vm.pids"
}

# vm_wait LOG PID: until the guest printed "XIPVM done"; 1 when it died
# or $XIPTOOL_VM_TIMEOUT seconds passed first.
vm_wait() {
	vm_wait_for "$1" "$2" "XIPVM done"
}

# vm_wait_for LOG PID TEXT: until the guest printed TEXT; 1 when it died
# or $XIPTOOL_VM_TIMEOUT seconds passed first.
vm_wait_for() {
	local end=$((SECONDS + XIPTOOL_VM_TIMEOUT))
	while [ "$SECONDS" -lt "$end" ]; do
		grep -q "$3" "$1" 2>/dev/null && return 0
		kill -0 "$2" 2>/dev/null || break
		sleep 0.25
	done
	echo "---- guest $1 (accel $ACCEL):"; cat "$1" "$1.qemu"
	return 1
}

# vm_exited PID: until guest PID powered off by itself; 1 when it is still
# running after $XIPTOOL_VM_TIMEOUT seconds (it is then stopped).
vm_exited() {
	local end=$((SECONDS + XIPTOOL_VM_TIMEOUT))
	while kill -0 "$1" 2>/dev/null; do
		if [ "$SECONDS" -ge "$end" ]; then
			echo "guest $1 still running after ${XIPTOOL_VM_TIMEOUT} s"
			vm_stop "$1"
			return 1
		fi
		sleep 0.25
	done
	wait "$1" 2>/dev/null || true
}

# vm_stop PID: SIGTERM, then SIGKILL if it is still there after
# $VM_STOP_TIMEOUT seconds; reaped when it is our child.
vm_stop() {
	local end=$((SECONDS + VM_STOP_TIMEOUT))
	kill "$1" 2>/dev/null || return 0
	while kill -0 "$1" 2>/dev/null && [ "$SECONDS" -lt "$end" ]; do
		# a child that exited is a zombie until it is reaped
		case $(ps -o stat= -p "$1" 2>/dev/null) in Z*) break ;; esac
		sleep 0.1
	done
	kill -KILL "$1" 2>/dev/null || true
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

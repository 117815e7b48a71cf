#!/usr/bin/env bats
# xiptool exec, mkfs --page-size, verify and align-check of an aarch64
# build (make check-cross): arm64 programs run from an image behave as when
# the same programs are started by execve, here through qemu-aarch64 and
# binfmt_misc.  Peers: busybox-static of Debian's arm64 package, probes
# built by the cross compiler ($CC), debugfs, e2fsck.

load ../lib/common
load ../lib/exec

bats_require_minimum_version 1.5.0

: "${XIP_ARM64_BUSYBOX:=/usr/local/lib/aarch64-linux-gnu/busybox}"

setup_file() {
	local d=$BATS_FILE_TMPDIR cc=${CC:-cc} v
	case $($cc -dumpmachine 2>/dev/null) in
	aarch64-*) ;;
	*) export CROSS_SKIP="not an aarch64 build ($cc)"; return 0 ;;
	esac
	export IMG=$d/img PROBES=$d/tree
	mkdir -p "$d/tree/bin" "$d/tree/etc"
	for v in "static:-static -no-pie" "static-pie:-static-pie" \
		 "pie:-pie -fPIE"; do
		# shellcheck disable=SC2086
		$cc -O1 -fstack-protector-all -pthread ${v#*:} \
			-o "$d/tree/probe-${v%%:*}" "$TOP_SRCDIR/tests/cli/exec/probe.c" || return 1
	done
	$cc -nostdlib -static -Wl,-z,force-bti -o "$d/tree/bti" \
		"$TOP_SRCDIR/tests/cli/exec/bti.S" 2>/dev/null || return 1
	$cc -nostdlib -static -o "$d/tree/nobti" "$TOP_SRCDIR/tests/cli/exec/bti.S" || return 1
	if [ -x "$XIP_ARM64_BUSYBOX" ]; then
		cp "$XIP_ARM64_BUSYBOX" "$d/tree/bin/busybox"
	fi
	echo data > "$d/tree/etc/data"
	PATH=/usr/sbin:/sbin:$PATH mke2fs -q -F -t ext2 -b 4096 -d "$d/tree" \
		"$IMG" 32M >/dev/null
}

setup() {
	[ -z "${CROSS_SKIP:-}" ] || skip "$CROSS_SKIP"
	common_setup
}

need_busybox() {
	[ -x "$XIP_ARM64_BUSYBOX" ] || skip "no arm64 busybox-static ($XIP_ARM64_BUSYBOX; packaging/install-deps.sh --arch arm64)"
}

@test "cross: the programs and the tool are aarch64" {
	file -L "$XIPTOOL" | grepq 'ARM aarch64'
	run xiptool exec "$IMG" /probe-static exit 0
	[ "$status" -eq 0 ]
}

@test "cross exec busybox (arm64 package): echo, ls / and sh -c identical to native" {
	need_busybox
	busybox_as_native "$PROBES/bin/busybox"
}

@test "cross exec: auxiliary vector of static, static-pie and dynamic programs as the kernel's" {
	local k native
	for k in static static-pie pie; do
		probe_aux "$k" aarch64
		grep -qx 'sp-align 0' <<<"$output"
		grep -q '^pagesz [0-9]' <<<"$output"
	done
}

@test "cross exec: text mapped from the image at the block debugfs names, no rwx mapping" {
	local k
	for k in static static-pie pie; do
		probe_maps "$k"
	done
}

@test "cross exec: threads, TLS, fork, stack protector, atexit, exit statuses" {
	local k m native st
	for k in static static-pie pie; do
		for m in threads fork atexit smash; do
			run xiptool exec "$IMG" "/probe-$k" "$m"
			echo "$k $m: $status $output"
			native=$("$PROBES/probe-$k" "$m" 2>&1) && st=0 || st=$?
			[ "$status" -eq "$st" ]
			[ "$output" = "$native" ]
		done
		run xiptool exec "$IMG" "/probe-$k" exit 42
		[ "$status" -eq 42 ]
	done
}

@test "cross exec: the dynamic probe's interpreter from QEMU_LD_PREFIX (the cross sysroot)" {
	[ -e /usr/aarch64-linux-gnu/lib/ld-linux-aarch64.so.1 ] ||
		skip "no /usr/aarch64-linux-gnu (libc6-arm64-cross)"
	run env QEMU_LD_PREFIX=/usr/aarch64-linux-gnu "$XIPTOOL" exec --interp-from host "$IMG" /probe-pie aux
	[ "$status" -eq 0 ]
	grep -qx 'base-ok 1' <<<"$output"
	grep -qx 'base nonzero' <<<"$output"
}

@test "cross exec: PROT_BTI on a BTI-marked program (PT_GNU_PROPERTY), as when the kernel starts it" {
	local native
	# a branch to no landing pad: SIGILL when guarded; the peer is the
	# same program started by execve (qemu guards it when its CPU has BTI)
	"$PROBES/bti" && native=0 || native=$?
	run xiptool exec "$IMG" /bti
	[ "$status" -eq "$native" ]
	run xiptool exec "$IMG" /nobti
	[ "$status" -eq 0 ]
	if [ "$native" -eq 0 ]; then
		skip "the CPU has no BTI: nothing is guarded"
	fi
	[ "$native" -eq 132 ]
}

@test "cross mkfs --page-size 16K and 64K: verified, clean for e2fsck, arm64 programs XIP-ready" {
	need_busybox
	local ps
	for ps in 16K 64K; do
		run xiptool mkfs --page-size "$ps" -d "$PROBES" "$T/img-$ps"
		[ "$status" -eq 0 ] || { echo "$output"; false; }
		dumpe2fs -h "$T/img-$ps" 2>/dev/null | grepq "^Block size: *$(( ${ps%K} * 1024 ))\$"
		run xiptool verify --page-size "$ps" "$T/img-$ps"
		[ "$status" -eq 0 ] || { echo "$output"; false; }
		fsck_clean "$T/img-$ps"
		# judged with the image's page size: Debian's arm64 busybox is
		# linked for 64K pages
		run xiptool align-check "$T/img-$ps" /bin/busybox
		[ "$status" -eq 0 ] || { echo "$output"; false; }
		run xiptool align-check --json "$T/img-$ps" /bin/busybox
		grep -q '"ready": *true' <<<"$output"
	done
}

@test "cross align-check: an arm64 program linked for 4K pages is not ready for 16K and 64K kernels" {
	"$CC" -static -O1 -Wl,-z,max-page-size=4096 -Wl,-z,separate-code \
		-o "$T/small-pages" "$TOP_SRCDIR/tests/cli/exec/probe.c" -pthread
	mkdir "$T/tree" && cp "$T/small-pages" "$T/tree/"
	run xiptool mkfs --page-size 4K -d "$T/tree" "$T/img4"
	[ "$status" -eq 0 ]
	run xiptool align-check "$T/img4" /small-pages
	[ "$status" -eq 0 ]
	run xiptool mkfs --page-size 64K -d "$T/tree" "$T/img64"
	[ "$status" -eq 0 ]
	run xiptool align-check "$T/img64" /small-pages
	[ "$status" -eq 1 ]
	echo "$output"
	grep -q '65536' <<<"$output"
	# a page size no arm64 kernel has
	run xiptool align-check --page-size 8192 "$T/img4" /small-pages
	[ "$status" -ne 0 ]
}

@test "cross exec refuses a 16K-page image on a kernel with smaller pages, with a clear message" {
	[ "$(getconf PAGESIZE)" -lt 16384 ] || skip "the kernel has 16K or larger pages"
	run xiptool mkfs --page-size 16K -d "$PROBES" "$T/img16"
	[ "$status" -eq 0 ]
	run xiptool exec "$T/img16" /probe-static exit 0
	[ "$status" -eq 126 ]
	echo "$output"
	grep -q 'xiptool exec: .*16384' <<<"$output"
}

#!/usr/bin/env bats
# xiptool exec: programs run from an image behave as when run natively.
# Peers: the same binaries run by the kernel, debugfs for where the
# program's blocks are, /proc/PID/maps and /proc/PID/cmdline.

load ../lib/common
load ../lib/exec

bats_require_minimum_version 1.5.0

probe_src() {
	echo "$TOP_SRCDIR/tests/cli/exec/probe.c"
}

setup_file() {
	local d=$BATS_FILE_TMPDIR cc=${CC:-cc} v
	export IMG=$d/img PROBES=$d/tree
	mkdir -p "$d/tree/bin" "$d/tree/usr/bin" "$d/tree/etc"
	for v in "static:-static -no-pie" "static-pie:-static-pie" \
		 "pie:-pie -fPIE" "nopie:-no-pie -fno-PIE"; do
		# shellcheck disable=SC2086
		$cc -O1 -fstack-protector-all -pthread ${v#*:} \
			-o "$d/tree/probe-${v%%:*}" "$(probe_src)" || return 1
	done
	[ -x /bin/busybox ] && cp /bin/busybox "$d/tree/bin/busybox"
	cp /usr/bin/true /usr/bin/env "$d/tree/usr/bin/"
	printf '#!/bin/sh\necho script\n' > "$d/tree/bin/script"
	chmod 755 "$d/tree/bin/script"
	echo data > "$d/tree/etc/data"
	ln -s ../../bin/busybox "$d/tree/usr/bin/bb"
	mkdir -p "$d/tree/dir"
	PATH=/usr/sbin:/sbin:$PATH mke2fs -q -F -t ext2 -b 4096 -d "$d/tree" \
		"$IMG" 48M >/dev/null
}

# The same checks for each kind of program.
probe_kinds="static static-pie pie nopie"

# skip_sanitized_front: skip the test when the front end is a sanitizer
# build (its run-time keeps shadow memory, resets in full and cannot run
# set-user-ID); the musl front end runs this file too (exec-musl.sh)
skip_sanitized_front() {
	if ldd "$XIPTOOL" 2>/dev/null | grep 'libasan\|libubsan' >/dev/null; then
		skip "a sanitizer build of the front end"
	fi
}

need_busybox() {
	[ -x /bin/busybox ] || skip "busybox-static is not installed"
}

# busybox_asleep PID: PID is busybox (its comm) and sleeping
busybox_asleep() {
	local state
	read -r _ _ state _ < "/proc/$1/stat"
	[ "$state" = S ] || return 1
	[ "$(cat "/proc/$1/comm")" = busybox ]
}

# anon_sleeping PID: the anonymous KiB (smaps_rollup) of PID once it is a
# sleeping busybox
anon_sleeping() {
	wait_until 5 busybox_asleep "$1" || return 1
	awk '$1 == "Anonymous:" { print $2 }' "/proc/$1/smaps_rollup"
}

@test "exec busybox: echo, ls / and sh -c output identical to native" {
	need_busybox
	busybox_as_native /bin/busybox
}

@test "exec: the program gets the descriptors the kernel's execve leaves, with few or many open" {
	need_busybox
	# python opens its descriptors close-on-exec; some are made
	# inheritable, one above 1024 when the limit allows; the peer is the
	# same busybox started by the kernel's execve
	fds() {
		python3 - "$@" <<'PY'
import os, resource, sys
limit, many = int(sys.argv[1]), int(sys.argv[2])
resource.setrlimit(resource.RLIMIT_NOFILE,
                   (limit, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
keep = os.open("/dev/null", os.O_RDONLY)
os.set_inheritable(keep, True)
shut = os.open("/dev/null", os.O_RDONLY)
for _ in range(many):
    os.set_inheritable(os.dup(keep), True)
if limit > 1024:
    os.dup2(shut, 1500, inheritable=False)
    os.dup2(keep, 1501, inheritable=True)
os.execvp(sys.argv[3], sys.argv[3:])
PY
	}
	local run native ours
	# exec finds its own close-on-exec descriptors with poll(2) below 1024,
	# and lists /proc/self/fd when nearly all of those are taken (1000)
	for run in "1024 0" "4096 0" "4096 1000"; do
		# shellcheck disable=SC2086
		native=$(fds $run /bin/busybox ls /proc/self/fd)
		# shellcheck disable=SC2086
		ours=$(fds $run "$XIPTOOL" exec "$IMG" /bin/busybox ls /proc/self/fd)
		[ "$ours" = "$native" ] || {
			echo "limit and extra descriptors $run: native: $native; exec: $ours"
			false
		}
		grep -qx 3 <<<"$native"
		[ "${run% *}" -eq 1024 ] || grepq -x 1501 <<<"$native"
		if grep -qx 1500 <<<"$native"; then false; fi
	done
}

@test "exec: signal dispositions, blocked mask, alternate stack and descriptors are execve's" {
	# the caller ignores SIGPIPE and SIGUSR2, blocks SIGUSR1 and SIGTERM,
	# and holds descriptor 7 (inherited) and 8 (close-on-exec); the peer
	# is the same probe started by the kernel's execve from that state;
	# "handler" would be a disposition the loader left behind
	inherit() {
		python3 - "$@" <<'PY'
import os, signal, sys
signal.signal(signal.SIGPIPE, signal.SIG_IGN)
signal.signal(signal.SIGUSR2, signal.SIG_IGN)
signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGUSR1, signal.SIGTERM})
os.dup2(os.open("/dev/null", os.O_RDONLY), 7, inheritable=True)
os.dup2(os.open("/dev/null", os.O_WRONLY), 8, inheritable=False)
os.execvp(sys.argv[1], sys.argv[1:])
PY
	}
	local k native ours
	for k in static pie; do
		native=$(inherit "$PROBES/probe-$k" state)
		ours=$(inherit "$XIPTOOL" exec "$IMG" "/probe-$k" state)
		diff <(echo "$native") <(echo "$ours")
		grepq -x 'sig 13 ignored' <<<"$ours"
		grepq -x 'sig 10 default blocked' <<<"$ours"
		grepq -E '^fd 7 flags ' <<<"$ours"
		run ! grep -E '^fd 8 |handler|altstack enabled' <<<"$ours"
	done
	# a closed stdin stays closed, as execve leaves it
	native=$("$PROBES/probe-static" state <&-)
	ours=$("$XIPTOOL" exec "$IMG" /probe-static state <&-)
	diff <(echo "$native") <(echo "$ours")
	run ! grep -E '^fd 0 ' <<<"$ours"
}

@test "exec: a running program holds little more memory of its own than when the kernel starts it" {
	need_busybox
	skip_sanitized_front
	# anonymous KiB (smaps_rollup) of a sleeping busybox: the front end's
	# heap, thread area and allocations are unmapped and the loader's
	# stack pages released before the jump; the peer is the same busybox
	# started by execve

	local x n xs=() ns=() i
	cp /bin/busybox "$BATS_TEST_TMPDIR/busybox"
	for ((i = 0; i < 3; i++)); do
		"$XIPTOOL" exec "$IMG" /bin/busybox sleep 30 &
		x=$!
		"$BATS_TEST_TMPDIR/busybox" sleep 30 &
		n=$!
		xs+=("$(anon_sleeping "$x")")
		ns+=("$(anon_sleeping "$n")")
		kill "$x" "$n"
		wait "$x" "$n" || true
	done
	echo "exec: ${xs[*]} KiB; native: ${ns[*]} KiB"
	x=$(printf '%s\n' "${xs[@]}" | sort -n | sed -n 2p)
	n=$(printf '%s\n' "${ns[@]}" | sort -n | sed -n 2p)
	# the target is 8 KiB: the trampoline is a clean page of the
	# front end's file and the stack above the program's is unmapped, so
	# only the stack's random padding can add a page
	[ "$x" -le "$((n + 8))" ]
}

@test "exec: the program's stack ends at the top of [stack], as execve builds it, from the front end and from xiptool-main" {
	local loader gap
	# the front end builds it there (its own stack in its arena); any
	# other caller 256 KiB below its frames, and unmaps the part above
	for loader in "$XIPTOOL" "$TOP_BUILDDIR/xiptool-main"; do
		run -0 "$loader" exec "$IMG" /probe-static maps
		gap=$(sed -n 's/^stack-top-gap //p' <<<"$output")
		echo "$loader: $gap bytes above the file name"
		[ -n "$gap" ]
		[ "$gap" -le 64 ]
	done
	cp "$PROBES/probe-static" "$BATS_TEST_TMPDIR/probe"
	run -0 "$BATS_TEST_TMPDIR/probe" maps
	gap=$(sed -n 's/^stack-top-gap //p' <<<"$output")
	echo "execve: $gap"
	[ "$gap" -le 64 ]
}

@test "exec: a fixed-address program over the front end's own pages is refused, never mapped over them" {
	command -v setarch >/dev/null || skip "no setarch"
	[ "$(uname -m)" = x86_64 ] || skip "the program is x86-64 assembly"
	local at
	# where the front end lies without randomization: the first range
	# its jump unmaps (its executable's first mapping), as its debug
	# output of one run says
	run -0 --separate-stderr setarch -R env XIPTOOL_DEBUG=exec \
		"$XIPTOOL" exec "$IMG" /probe-static exit 0
	at=$(sed -n 's/.*: the jump unmaps 0x\([0-9a-f]*\)+.*/\1/p' <<<"$stderr" |
		head -n 1)
	[ -n "$at" ]
	# a static program of two fixed pages, linked at that address
	mkdir -p "$T/fx"
	printf '.globl _start\n_start:\n\tmov $60, %%eax\n\txor %%edi, %%edi\n\tsyscall\n' > "$T/exit.s"
	${CC:-cc} -nostdlib -static -no-pie -Wl,-Ttext-segment="0x$at" \
		-o "$T/fx/fixed" "$T/exit.s"
	xiptool mkfs -q -d "$T/fx" "$T/fx.img"
	# elsewhere it runs; over the front end it is refused, which mapped
	# over its own pages would crash instead
	run -0 xiptool exec "$T/fx.img" /fixed
	run setarch -R "$XIPTOOL" exec "$T/fx.img" /fixed
	echo "$output"
	[ "$status" -eq 126 ]
	[[ "$output" == "xiptool exec: /fixed: cannot map its fixed addresses 0x$at-"*": in use by xiptool" ]]
}

@test "exec: a fixed-address program's heap starts past its bss, as execve starts it" {
	local k gap gaps=()
	command -v setarch >/dev/null || skip "no setarch"
	# without randomization, exactly where the kernel starts it: at the
	# end of the bss (static and dynamic non-PIE programs)
	for k in static nopie; do
		native=$(setarch -R "$PROBES/probe-$k" brk)
		[ "$native" = "brk-gap 0" ]
		run -0 setarch -R "$XIPTOOL" exec "$IMG" "/probe-$k" brk
		[ "$output" = "$native" ]
	done
	# with it, a page past it plus less than 1 GiB, drawn anew each time
	for k in static nopie static nopie; do
		run -0 xiptool exec "$IMG" "/probe-$k" brk
		gap=${output#brk-gap }
		[ "$gap" -ge 4096 ]
		[ "$gap" -le $((4096 + (1 << 30))) ]
		gaps+=("$gap")
	done
	[ "${gaps[0]}" != "${gaps[2]}" ]
}

@test "exec --argv0 runs busybox applets; /proc/PID/cmdline and comm" {
	need_busybox
	run xiptool exec --argv0 basename "$IMG" /bin/busybox /a/b/c.txt .txt
	[ "$status" -eq 0 ]
	[ "$output" = c ]
	out=$(xiptool exec --argv0 cat "$IMG" /bin/busybox /proc/self/cmdline | tr '\0' ' ')
	[ "$out" = "cat /proc/self/cmdline " ]
	run xiptool exec --argv0 cat "$IMG" /bin/busybox /proc/self/comm
	[ "$output" = busybox ]
	# a symlink inside the image is followed
	run xiptool exec --argv0 echo "$IMG" /usr/bin/bb via-link
	[ "$output" = via-link ]
}

@test "exec: exit statuses 0-255 and death by signal as a shell reports them" {
	local i
	for i in $(seq 0 255); do
		xiptool exec "$IMG" /probe-static exit "$i" && st=0 || st=$?
		[ "$st" -eq "$i" ] || { echo "exit $i gave $st"; false; }
	done
	for i in 1 2 6 9 11 15; do
		run "$PROBES/probe-pie" signal "$i"
		native=$status
		run xiptool exec "$IMG" /probe-pie signal "$i"
		[ "$status" -eq "$native" ]
		[ "$status" -eq $((128 + i)) ]
	done
}

@test "exec: auxiliary vector of static, static-pie, PIE and non-PIE programs" {
	local k
	for k in $probe_kinds; do
		probe_aux "$k" "$(uname -m)"
		grep -qx "pagesz $(getconf PAGESIZE)" <<<"$output"
		grep -qx 'secure 0' <<<"$output"
		grep -qx 'uid-ok 1' <<<"$output"
		grep -qx 'sysinfo yes' <<<"$output"
	done
}

@test "exec: AT_RANDOM differs between runs" {
	a=$(xiptool exec "$IMG" /probe-pie aux | grep '^random')
	b=$(xiptool exec "$IMG" /probe-pie aux | grep '^random')
	c=$(xiptool exec "$IMG" /probe-static aux | grep '^random')
	[ "${#a}" -eq 39 ]
	[ "$a" != "$b" ]
	[ "$a" != "$c" ]
	[ "$b" != "$c" ]
	[ "$a" != "random 00000000000000000000000000000000" ]
}

@test "exec: text is mapped from the image at the block debugfs names, no rwx mapping" {
	local k
	for k in $probe_kinds; do
		probe_maps "$k"
	done
}

@test "exec: argv and environment pass through unchanged" {
	local long k
	long=$(head -c 100000 /dev/zero | tr '\0' x)
	for k in static pie; do
		for args in "one" "one two" "a '' c" "'' ''" "\"$long\" short" \
			    "'with space' 'tab	x' 'nl
x' -e --argv0"; do
			eval "set -- $args"
			# the environment asked for, and exec's marker
			native=$(env -i A=1 EMPTY= B='x y' \
				XIPTOOL_EXEC="1:auto:$IMG:/probe-$k" \
				"$PROBES/probe-$k" args "$@")
			got=$(xiptool exec --clear-env -e A=1 -e EMPTY= \
				-e B='x y' --argv0 "$PROBES/probe-$k" \
				"$IMG" "/probe-$k" args "$@")
			[ "$got" = "$native" ] ||
				{ diff <(echo "$native") <(echo "$got") | head; false; }
		done
	done
	# argv[0] is the path inside the image unless --argv0 is given
	run xiptool exec "$IMG" /probe-static args
	grep -qx 'argv\[0\] 13 </probe-static>' <<<"$output"
	grep -qx 'cmdline-args 2' <<<"$output"
	# -e overrides, without --clear-env the environment is kept
	got=$(FOO=old BAR=keep xiptool exec -e FOO=new "$IMG" /probe-static args)
	grep -qx 'env <FOO=new>' <<<"$got"
	grep -qx 'env <BAR=keep>' <<<"$got"
	[ "$(grep -c '^env <FOO=' <<<"$got")" -eq 1 ]
}

@test "exec: threads, TLS, fork+wait, fork+exec, stack protector, atexit and stdio flush" {
	local k
	for k in $probe_kinds; do
		run xiptool exec "$IMG" "/probe-$k" threads
		[ "$output" = "threads-ok 1 tls 7" ]
		run xiptool exec "$IMG" "/probe-$k" fork
		[ "$output" = "$(printf 'fork-wait 42\nexec-child\nfork-exec 3')" ]
		run xiptool exec "$IMG" "/probe-$k" smash aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa
		[ "$status" -eq 134 ]
		[[ $output == *"stack smashing detected"* ]]
		got=$(xiptool exec "$IMG" "/probe-$k" atexit | cat; echo " ${PIPESTATUS[0]}")
		[ "$got" = "no newline, bufferedatexit-ran
 5" ]
	done
}

@test "exec: host /usr/bin/true and /usr/bin/env (dynamic) copied into the image" {
	run xiptool exec "$IMG" /usr/bin/true
	[ "$status" -eq 0 ]
	[ -z "$output" ]
	run xiptool exec --clear-env -e X=1 -e Y=2 "$IMG" /usr/bin/env
	[ "$status" -eq 0 ]
	[ "$output" = "$(env -i X=1 Y=2 XIPTOOL_EXEC="1:auto:$IMG:/usr/bin/env" /usr/bin/env)" ]
	run xiptool exec "$IMG" /usr/bin/env -i /bin/busybox echo nested
	[ "$status" -eq 0 ]
}

# $T/img: probe-pie and the host's dynamic linker (its path in $ld).
interp_image() {
	ld=$(readlink -f /lib64/ld-linux-x86-64.so.2)
	mkdir -p "$T/tree/lib64"
	cp "$ld" "$T/tree/lib64/ld-linux-x86-64.so.2"
	cp "$PROBES/probe-pie" "$T/tree/"
	mkimg "$T/img" 16M "$T/tree"
}

@test "exec: the interpreter comes from the image when it holds it, --interp-from forces" {
	local ld
	interp_image
	run xiptool -v exec "$T/img" /probe-pie maps
	[ "$status" -eq 0 ]
	[[ $output == *"interpreter /lib64/ld-linux-x86-64.so.2 from the image"* ]]
	# ld.so's pages come from the image file
	grep -q "^interp-map $T/img " <<<"$output"
	run xiptool exec "$T/img" /probe-pie aux
	grep -qx 'base-ok 1' <<<"$output"
	run xiptool -v exec --interp-from host "$T/img" /probe-pie maps
	[ "$status" -eq 0 ]
	[[ $output == *"from the host"* ]]
	grep -q "^interp-map $ld " <<<"$output"
	# not in the image: from the host
	run xiptool exec "$IMG" /probe-pie maps
	grep -q "^interp-map $ld " <<<"$output"
	run -127 xiptool exec --interp-from image "$IMG" /probe-pie aux
	[[ $output == *"interpreter /lib64/ld-linux-x86-64.so.2: not found in the image"* ]]
	run xiptool exec --interp-from bogus "$IMG" /probe-pie aux
	[ "$status" -eq 2 ]
}

@test "exec holds a shared lock that writers respect while the program runs" {
	need_busybox
	cp "$IMG" "$T/img"
	"$XIPTOOL" exec "$T/img" /bin/busybox sleep 3 &
	pid=$!
	sleep 0.5
	# the program holds no descriptor of the image, only its mappings
	if ls -l "/proc/$pid/fd" | grepq "$T/img"; then false; fi
	grep -q "$T/img" "/proc/$pid/maps"
	lock=$(holder_lock "$T/img")
	run flock -n -x "$lock" true
	[ "$status" -ne 0 ]
	run flock -n -s "$lock" true
	[ "$status" -eq 0 ]
	wait "$pid"
	run flock -n -x "$lock" true
	[ "$status" -eq 0 ]
}

@test "exec: not found 127, cannot execute 126, each with a clear message" {
	run -127 xiptool exec "$IMG" /no/such
	[ "$output" = "xiptool exec: /no/such: not found in $IMG" ]
	run -127 xiptool exec "$IMG" /etc/data/x
	run xiptool exec "$IMG" /etc
	[ "$status" -eq 126 ]
	[[ $output == *"/etc: is a directory" ]]
	run xiptool exec "$IMG" /etc/data
	[ "$status" -eq 126 ]
	[[ $output == *"/etc/data: permission denied (no execute bit"* ]]
	run xiptool exec "$IMG" /bin/script
	[ "$status" -eq 126 ]
	[ "$output" = "xiptool exec: /bin/script: not an ELF file" ]
	# the image's failures are exec's (126, 127), never a 3 the program
	# could return
	run xiptool exec "$T/none.img" /bin/busybox
	[ "$status" -eq 127 ]
	[ "$output" = "xiptool exec: $T/none.img: No such file or directory" ]
	head -c 65536 /dev/zero > "$T/zero.img"
	run xiptool exec "$T/zero.img" /bin/busybox
	[ "$status" -eq 126 ]
	[[ "$output" == "xiptool exec: $T/zero.img: "* ]]
	run xiptool exec "$T" /bin/busybox
	[ "$status" -eq 126 ]
	run xiptool exec "$IMG"
	[ "$status" -eq 2 ]
}

# Put FILE into a fresh image as /x (mode 755) and run it.
run_hostile() {
	mkdir -p "$T/h"
	cp "$1" "$T/h/x"
	chmod 755 "$T/h/x"
	mkimg "$T/h.img" 8M "$T/h"
	shift
	run ! xiptool exec "$T/h.img" /x "$@"
}

# Write a little-endian value of SIZE bytes at OFFSET of FILE.
poke() {
	python3 -c 'import struct,sys
f=open(sys.argv[1],"r+b"); f.seek(int(sys.argv[2],0))
f.write(int(sys.argv[4],0).to_bytes(int(sys.argv[3]),"little"))' "$@"
}

@test "exec: hostile and broken ELF files are refused with 126, never a crash" {
	local f=$T/p
	cp "$PROBES/probe-static" "$f"
	poke "$f" 18 2 40			# e_machine = EM_ARM
	run_hostile "$f"
	[ "$status" -eq 126 ]
	[ "$output" = "xiptool exec: /x: ELF file for arm, this host runs x86-64" ]

	head -c 3000 "$PROBES/probe-static" > "$f"
	run_hostile "$f"
	[ "$status" -eq 126 ]
	[[ $output == *"/x: truncated: segment"*"beyond the end of the file"* ]]

	cp "$PROBES/probe-static" "$f"
	poke "$f" 32 8 0x7fffffff0000		# e_phoff far away
	run_hostile "$f"
	[ "$status" -eq 126 ]
	[[ $output == *"program headers at 0x7fffffff0000 beyond the end"* ]]

	cp "$PROBES/probe-static" "$f"
	poke "$f" 56 2 0			# e_phnum = 0
	run_hostile "$f"
	[ "$status" -eq 126 ]
	[[ $output == *"no program headers"* ]]

	# second program header's p_vaddr moved off its file offset
	cp "$PROBES/probe-static" "$f"
	poke "$f" $((64 + 56 + 16)) 8 0x400123
	run_hostile "$f"
	[ "$status" -eq 126 ]
	[[ $output == *"differ modulo the page size"* ]]

	# p_filesz > p_memsz
	cp "$PROBES/probe-static" "$f"
	poke "$f" $((64 + 56 + 40)) 8 0x100000000
	run_hostile "$f"
	[ "$status" -eq 126 ]

	cp "$PROBES/probe-static" "$f"
	poke "$f" 4 1 1				# ELFCLASS32
	run_hostile "$f"
	[ "$status" -eq 126 ]
	[[ $output == *"32-bit ELF files are not supported"* ]]
}

@test "exec: a missing interpreter is 127, a set-user-ID bit is ignored with a warning" {
	local f=$T/p off
	cp "$PROBES/probe-pie" "$f"
	# rename the interpreter: /lib64/ld-linux-x86-64.so.2 -> /lib64/xx-...
	off=$(grep -abo /lib64/ld-linux "$f" | head -1 | cut -d: -f1)
	printf 'xx' | dd of="$f" bs=1 seek=$((off + 7)) conv=notrunc status=none
	run_hostile "$f" aux
	[ "$status" -eq 127 ]
	[[ $output == *"interpreter /lib64/xx-linux-x86-64.so.2: No such file or directory on the host"* ]]

	mkdir -p "$T/s"
	cp "$PROBES/probe-static" "$T/s/suid"
	chmod 4755 "$T/s/suid"
	mkimg "$T/s.img" 8M "$T/s"
	run xiptool exec "$T/s.img" /suid exit 0
	[ "$status" -eq 0 ]
	[[ $output == *"warning: /suid: set-user-ID/set-group-ID bit ignored"* ]]
}

@test "exec refuses images on noexec mounts and images that are not XIP-capable" {
	require_root
	mkdir -p "$T/nx"
	mount -t tmpfs -o noexec,size=64M tmpfs "$T/nx"
	cp "$IMG" "$T/nx/img"
	run xiptool exec "$T/nx/img" /probe-static exit 0
	umount "$T/nx"
	[ "$status" -eq 126 ]
	[[ $output == *"on a noexec mount"* ]]
	mkdir -p "$T/k/bin"
	cp "$PROBES/probe-static" "$T/k/bin/p"
	mke2fs -q -F -t ext2 -b 1024 -d "$T/k" "$T/k.img" 8M
	run xiptool exec "$T/k.img" /bin/p exit 0
	[ "$status" -eq 126 ]
	[[ $output == *"not XIP-capable: block size 1024 differs from page size"* ]]
}

@test "exec @NAME runs from an attached segment; /proc/PID/environ is the program's" {
	need_busybox
	export XIPTOOL_RUNDIR=$T/run
	xiptool attach -n "exectest$$" "$IMG"
	run xiptool exec "@exectest$$" /bin/busybox echo from a segment
	st=$status out=$output
	env_out=$(xiptool exec -i -e ONLY=1 --argv0 cat "@exectest$$" /bin/busybox /proc/self/environ | tr '\0' '\n')
	xiptool detach "exectest$$"
	[ "$st" -eq 0 ]
	[ "$out" = "from a segment" ]
	[ "$env_out" = "$(printf 'ONLY=1\nXIPTOOL_EXEC=1:auto:@exectest%s:/bin/busybox' $$)" ]
}

@test "exec: the program's stack lives under ulimit -s; a limit too small for the loader's is a clear 126" {
	need_busybox
	# the program sees the limit and its stack grows down to near it
	run bash -c 'ulimit -s 8192; "$0" exec "$1" /bin/busybox sh -c "ulimit -s"' \
		"$XIPTOOL" "$IMG"
	[ "$status" -eq 0 ]
	[ "$output" = 8192 ]
	run bash -c 'ulimit -s 8192; "$0" exec "$1" /probe-static stack 7168' \
		"$XIPTOOL" "$IMG"
	[ "$status" -eq 0 ]
	[ "$output" = "stack-used 7168" ]
	# ... and no further: the kernel's limit, a SIGSEGV like natively
	run bash -c 'ulimit -s 8192; "$0" exec "$1" /probe-static stack 9000' \
		"$XIPTOOL" "$IMG"
	[ "$status" -eq 139 ]
	# the musl front end runs the loader on a stack of its own and builds
	# the program's where execve(2) does, at the top of [stack]: a limit
	# of 200 or 100 KiB, as natively (execve checked the arguments); any
	# other caller leaves a gap of 256 KiB below its frames, and refuses a
	# limit that does not hold it and 128 KiB more
	if nm "$XIPTOOL" 2>/dev/null | grepq ' xip_front_on_stack$'; then
		for lim in 200 100; do
			run bash -c 'ulimit -s "$2"; "$0" exec "$1" /bin/busybox echo ok' \
				"$XIPTOOL" "$IMG" "$lim"
			[ "$status" -eq 0 ]
			[ "$output" = ok ]
		done
	else
		run bash -c 'ulimit -s 200; "$0" exec "$1" /bin/busybox true' \
			"$XIPTOOL" "$IMG"
		[ "$status" -eq 126 ]
		[[ "$output" == *"stack limit (ulimit -s) 200 KiB too small"* ]]
	fi
	# xiptool-main, not the front end: the gap and 128 KiB, refused
	run bash -c 'ulimit -s 200; "$0" exec "$1" /bin/busybox true' \
		"$TOP_BUILDDIR/xiptool-main" "$IMG"
	[ "$status" -eq 126 ]
	[[ "$output" == *"stack limit (ulimit -s) 200 KiB too small"* ]]
	# unlimited: the program runs
	run bash -c 'ulimit -s unlimited; "$0" exec "$1" /bin/busybox echo ok' \
		"$XIPTOOL" "$IMG"
	[ "$status" -eq 0 ]
	[ "$output" = ok ]
}

@test "an image that is a FIFO is refused at once, by exec and every reader, naming it" {
	local cmd
	# opening a FIFO for reading waits for a writer: that hung
	mkfifo "$T/fifo"
	run timeout 20 "$XIPTOOL" exec "$T/fifo" /x
	[ "$status" -eq 126 ]
	[ "$output" = "xiptool exec: $T/fifo: not a regular file, block device or DAX device" ]
	for cmd in "verify:" "info:" "ls:" "stat:/" "extract:$T/out" "align-check:"; do
		# shellcheck disable=SC2086
		run timeout 20 "$XIPTOOL" "${cmd%%:*}" "$T/fifo" ${cmd#*:}
		[ "$status" -eq 3 ]
		[ "$output" = "xiptool ${cmd%%:*}: $T/fifo: not a regular file, block device or DAX device" ]
	done
	run timeout 20 "$XIPTOOL" read "$T/fifo" /x
	[ "$status" -eq 3 ]
	run timeout 20 "$XIPTOOL" write "$T/fifo" /x </dev/null
	[ "$status" -eq 3 ]
	[ "$output" = "xiptool write: $T/fifo: not a regular file, block device or DAX device" ]
}

@test "exec: an interpreter that is no regular file (a FIFO, a device) is refused at once with 126" {
	local f=$T/p name ld=/lib64/ld-linux-x86-64.so.2 pad
	# an interpreter path in \$T of the length of the real one
	pad=$((${#ld} - ${#T} - 1))
	[ "$pad" -gt 0 ] || skip "the scratch directory's path is too long"
	name=$T/$(printf 'f%.0s' $(seq "$pad"))
	cp "$PROBES/probe-pie" "$f"
	python3 - "$f" "$ld" "$name" <<'PY'
import sys
path, old, new = sys.argv[1], sys.argv[2].encode() + b"\0", sys.argv[3].encode() + b"\0"
data = open(path, "rb").read()
assert len(old) == len(new) and data.count(old) == 1
open(path, "wb").write(data.replace(old, new))
PY
	mkdir -p "$T/h"
	cp "$f" "$T/h/x"
	mkimg "$T/h.img" 8M "$T/h"
	# opening a FIFO for reading waits for a writer: that hung
	mkfifo "$name"
	run timeout 20 "$XIPTOOL" exec --interp-from host "$T/h.img" /x aux
	[ "$status" -eq 126 ]
	[ "$output" = "xiptool exec: interpreter $name: not a regular file on the host" ]
	run timeout 20 "$XIPTOOL" exec "$T/h.img" /x aux
	[ "$status" -eq 126 ]
	rm "$name"
	ln -s /dev/zero "$name"
	run timeout 20 "$XIPTOOL" exec --interp-from host "$T/h.img" /x aux
	[ "$status" -eq 126 ]
	[ "$output" = "xiptool exec: interpreter $name: not a regular file on the host" ]
	# a FIFO in the image where the interpreter should be
	mkdir -p "$T/i/lib64"
	mkfifo "$T/i/lib64/ld-linux-x86-64.so.2"
	cp "$PROBES/probe-pie" "$T/i/x"
	mkimg "$T/i.img" 8M "$T/i"
	for from in auto image; do
		run timeout 20 "$XIPTOOL" exec --interp-from "$from" "$T/i.img" /x aux
		[ "$status" -eq 126 ]
		[ "$output" = "xiptool exec: $ld: not a regular file" ]
	done
}

@test "exec: descriptors 0-2 closed by the caller are closed for the program, as after execve" {
	need_busybox
	local script='s=; for fd in 0 1 2; do if [ -e /proc/self/fd/$fd ]; then s="$s $fd:open"; else s="$s $fd:closed"; fi; done; echo "$s" >&5'
	/bin/busybox sh -c "$script" 5>"$T/native" <&- >&- 2>&-
	"$XIPTOOL" exec "$IMG" /bin/busybox sh -c "$script" 5>"$T/ours" <&- >&- 2>&-
	[ "$(cat "$T/native")" = " 0:closed 1:closed 2:closed" ]
	cmp "$T/native" "$T/ours"
	/bin/busybox sh -c "$script" 5>"$T/native" 2>&-
	"$XIPTOOL" exec "$IMG" /bin/busybox sh -c "$script" 5>"$T/ours" 2>&-
	cmp "$T/native" "$T/ours"
	# a failure with stderr closed: the message goes nowhere, the image
	# is unchanged
	cp "$IMG" "$T/img"
	run -127 bash -c '"$0" exec "$1" /no/such 2>&-' "$XIPTOOL" "$T/img"
	cmp "$IMG" "$T/img"
}

# Run a command as the unprivileged user 65534.
asuser() {
	setpriv --reuid=65534 --regid=65534 --clear-groups -- "$@"
}

# again MARKER NAME ARG...: the front end started as NAME with ARGs and
# XIPTOOL_EXEC=MARKER, as a program run by exec starts /proc/self/exe.
again() {
	local marker=$1
	shift
	env XIPTOOL_EXEC="$marker" bash -c 'exec -a "$1" "$0" "${@:2}"' \
		"$XIPTOOL" "$@"
}

@test "exec: of the loader's own file only the pages of its headers and its last instructions stay mapped in the program" {
	need_busybox
	local self lines_of_self range perm lo hi
	self=$(readlink -f "$XIPTOOL")
	# the shell reads its own maps with builtins: no other process
	run -0 xiptool exec "$IMG" /bin/busybox sh -c \
		'while read -r l; do echo "$l"; done < /proc/$$/maps'
	lines_of_self=$(awk -v f="$self" '$6 == f' <<<"$output")
	echo "$lines_of_self"
	[ "$(wc -l <<<"$lines_of_self")" -eq 1 ]
	read -r range perm _ <<<"$lines_of_self"
	lo=${range%-*} hi=${range#*-}
	# the page of the jump's code, and the one of the ELF headers before
	# it when the linker put it first in the text (the musl front end)
	[ "$((0x$hi - 0x$lo))" -le "$((2 * $(getconf PAGESIZE)))" ]
	[ "$perm" = "r-xp" ]
}

@test "exec: busybox sh runs the applets it re-executes through /proc/self/exe, from an image and from @NAME" {
	need_busybox
	local script='echo a | cat; ls /; echo b | tr b c | cat -n'
	native=$(/bin/busybox sh -c "$script")
	run -0 --separate-stderr xiptool exec "$IMG" /bin/busybox sh -c "$script"
	[ "$output" = "$native" ]
	[ -z "$stderr" ]
	# the applet is the image's busybox, started again as 'cat'
	run -0 xiptool exec "$IMG" /bin/busybox sh -c \
		'cat /proc/self/cmdline | tr "\0" " "; echo; grep -c " '"$IMG"'$" /proc/self/maps | cat'
	[ "${lines[0]}" = "cat /proc/self/cmdline " ]
	[ "${lines[1]}" -ge 1 ]
	# its exit status reaches the shell, as natively
	script='echo x | cat /no/such; echo "st $?"; cat /no/such 2>&1; exit 3'
	native=$(/bin/busybox sh -c "$script" 2>&1) || [ $? -eq 3 ]
	run -3 xiptool exec "$IMG" /bin/busybox sh -c "$script"
	[ "$output" = "$native" ]
	grepq -x 'st 1' <<<"$output"
	script='echo a | cat; ls /; echo b | tr b c | cat -n'
	native=$(/bin/busybox sh -c "$script")
	export XIPTOOL_RUNDIR=$T/run
	xiptool attach -n "again$$" "$IMG"
	run --separate-stderr xiptool exec "@again$$" /bin/busybox sh -c "$script"
	st=$status out=$output err=$stderr
	xiptool detach "again$$"
	[ "$st" -eq 0 ]
	[ "$out" = "$native" ]
	[ -z "$err" ]
}

@test "exec: busybox --install -s applet links in the image run through a busybox shell" {
	need_busybox
	local bb
	# one link per applet in /bin, to the path busybox runs from (what
	# /proc/self/exe says: /usr/bin/busybox on a merged /usr)
	mkdir -p "$T/links" "$T/tree"
	/bin/busybox --install -s "$T/links"
	bb=$(readlink "$T/links/cat")
	[ "${bb#/}" != "$bb" ]
	rm "$T/links/busybox"
	mv "$T/links" "$T/tree/bin"
	mkdir -p "$T/tree${bb%/*}"
	cp /bin/busybox "$T/tree$bb"
	mkimg "$T/img" 16M "$T/tree"
	local script='echo x y | cat | tr " " "\n" | sort -r | head -1; ls /bin/cat; echo "$0"'
	run -0 --separate-stderr xiptool exec "$T/img" /bin/sh -c "$script"
	[ "$output" = "$(printf 'y\n/bin/cat\n/bin/sh')" ]
	[ -z "$stderr" ]
	# an applet link run first, starting the next applet in turn
	run -0 xiptool exec "$T/img" /bin/env /bin/echo via-env
	[ "$output" = via-env ]
	run -0 xiptool exec "$T/img" /bin/xargs echo <<<"from xargs"
	[ "$output" = "from xargs" ]
}

@test "exec: a program that runs /proc/self/exe again under another name gets it, with the new arguments, as natively" {
	local k native ours marker
	for k in static pie; do
		marker="1:auto:$IMG:/probe-$k"
		# the peer: the kernel runs the probe's own file again; its
		# environment holds the marker as ours does
		native=$(env XIPTOOL_EXEC="$marker" "$PROBES/probe-$k" self renamed args 'a b' '')
		ours=$(env "$XIPTOOL" exec "$IMG" "/probe-$k" self renamed args 'a b' '')
		diff <(echo "$native") <(echo "$ours")
		grepq -x 'argv\[0\] 7 <renamed>' <<<"$ours"
		grepq -x 'argv\[2\] 3 <a b>' <<<"$ours"
		grepq -x "env <XIPTOOL_EXEC=$marker>" <<<"$ours"
		# twice over: the marker is passed on
		run -7 xiptool exec "$IMG" "/probe-$k" self one self two exit 7
	done
	# the re-run's pages come from the image, as the first run's
	run -0 xiptool exec "$IMG" /probe-static self again maps
	grepq "^text-map $IMG " <<<"$output"
	# a set-user-ID program: the first run warns, the second is silent
	mkdir -p "$T/s"
	cp "$PROBES/probe-static" "$T/s/suid"
	chmod 4755 "$T/s/suid"
	mkimg "$T/s.img" 8M "$T/s"
	run -0 --separate-stderr xiptool exec "$T/s.img" /suid self again exit 0
	[ "$stderr" = "xiptool exec: warning: /suid: set-user-ID/set-group-ID bit ignored (a user-space loader cannot change credentials)" ]
}

@test "exec: run again, the program keeps the first run's --interp-from" {
	local ld
	interp_image
	run -0 xiptool exec "$T/img" /probe-pie self again maps
	grepq "^interp-map $T/img " <<<"$output"
	run -0 xiptool exec --interp-from host "$T/img" /probe-pie self again maps
	grepq "^interp-map $ld " <<<"$output"
	grepq -x "env <XIPTOOL_EXEC=1:host:$T/img:/probe-pie>" < <(
		xiptool exec --interp-from host "$T/img" /probe-pie self again args)
	# a relative image and program path are written absolute
	run -0 bash -c 'cd "$1" && "$0" exec img probe-pie args' "$XIPTOOL" "$T"
	grepq -x "env <XIPTOOL_EXEC=1:auto:$T/img:/probe-pie>" <<<"$output"
}

@test "exec: a malformed or stale XIPTOOL_EXEC is refused in one line, 126 or 127, and nothing runs" {
	local long
	long=1:auto:@x:/$(head -c 30000 /dev/zero | tr '\0' a)
	for m in garbage "1:auto:img:/probe-static" "1:auto:$IMG:probe-static" \
		 "2:auto:$IMG:/probe-static" "1:auto:$IMG:/probe-static:x" \
		 "1:auto:$IMG%41:/probe-static" "1:auto:@a/b:/probe-static" \
		 "$long" ""; do
		run -126 again "$m" renamed exit 0
		[ "${#lines[@]}" -eq 1 ]
		[[ "$output" == "xiptool exec: started as 'renamed': XIPTOOL_EXEC: "* ]]
	done
	run -126 again garbage renamed
	[ "$output" = "xiptool exec: started as 'renamed': XIPTOOL_EXEC: expected VERSION:INTERP:IMAGE:PATH" ]
	run -126 again "$long" cat
	[ "$output" = "xiptool exec: started as 'cat': XIPTOOL_EXEC: longer than 24592 bytes" ]
	# well-formed, naming what is not there: 127, as exec says
	export XIPTOOL_RUNDIR=$T/run
	run -127 again "1:auto:@gone$$:/probe-static" renamed exit 0
	[ "$output" = "xiptool exec: started as 'renamed' to run /probe-static of @gone$$ again: @gone$$: no attached segment of that name" ]
	run -127 again "1:auto:$T/none.img:/probe-static" renamed exit 0
	[ "$output" = "xiptool exec: started as 'renamed' to run /probe-static of $T/none.img again: $T/none.img: No such file or directory" ]
	run -127 again "1:auto:$IMG:/no/such" renamed exit 0
	[ "$output" = "xiptool exec: started as 'renamed' to run /no/such of $IMG again: /no/such: not found in $IMG" ]
	run -126 again "1:auto:$IMG:/etc/data" renamed exit 0
	[ "${#lines[@]}" -eq 1 ]
	# well-formed and there: it runs
	run -5 again "1:auto:$IMG:/probe-static" renamed exit 5
}

@test "exec: a forged XIPTOOL_EXEC opens nothing its user could not open with xiptool exec" {
	need_busybox
	require_root
	require_cmd setpriv
	export XIPTOOL_RUNDIR=$T/run
	chmod 755 "$T"
	cp "$IMG" "$T/img"
	chmod 600 "$T/img"
	xiptool attach -n "forge$$" "$T/img"
	seg=$(xiptool list --noheadings -r -o PATH "forge$$")
	# the image, the segment by name and its file: the user's own
	# command and the forged marker fail alike
	for spec in "$T/img" "@forge$$" "$seg"; do
		run asuser "$XIPTOOL" exec "$spec" /bin/busybox true
		typed_st=$status typed=$output
		run asuser env XIPTOOL_EXEC="1:auto:$spec:/bin/busybox" \
			bash -c 'exec -a true "$0"' "$XIPTOOL"
		st=$status out=$output
		echo "$spec: typed $typed_st: $typed; forged $st: $out"
		[ "$typed_st" -eq 126 ]
		[ "$st" -eq "$typed_st" ]
		[ "${#lines[@]}" -eq 1 ]
		[ "$out" = "xiptool exec: started as 'true' to run /bin/busybox of $spec again: ${typed#xiptool exec: }" ]
	done
	xiptool detach "forge$$"
	# root, who can read it, runs it
	run -0 env XIPTOOL_EXEC="1:auto:$T/img:/bin/busybox" \
		bash -c 'exec -a echo "$0" ok' "$XIPTOOL"
	[ "$output" = ok ]
}

@test "exec: a set-user-ID copy of the front end reads no XIPTOOL_EXEC (secure_getenv) and judges execute bits as its effective user" {
	need_busybox
	require_root
	skip_sanitized_front
	local marker="1:auto:$IMG:/bin/busybox"
	chmod 755 "$T"
	cp "$XIPTOOL" "$T/xip"
	# busybox twice: for everybody, and for its owner (root) alone
	mkdir -p "$T/own/bin"
	install -m 755 /bin/busybox "$T/own/bin/echo"
	install -m 700 /bin/busybox "$T/own/bin/printf"
	xiptool mkfs -q -d "$T/own" "$T/own.img"
	chmod 644 "$T/own.img"
	# a plain copy started under another name runs the program again
	run -0 env XIPTOOL_EXEC="$marker" bash -c 'exec -a echo "$0" ok' "$T/xip"
	[ "$output" = ok ]
	run -0 "$T/xip" exec "$T/own.img" /bin/printf ok
	[ "$output" = ok ]
	# set-user-ID to another user (AT_SECURE): the marker is not there
	chown 65534 "$T/xip"
	chmod 4755 "$T/xip"
	run env XIPTOOL_EXEC="$marker" bash -c 'exec -a echo "$0" ok' "$T/xip"
	echo "$output"
	[ "$status" -eq 126 ]
	[ "${#lines[@]}" -eq 1 ]
	[[ "$output" == "xiptool: started as 'echo', not as xiptool, and without XIPTOOL_EXEC in the environment: "* ]]
	# its execve made it user 65534 (AT_EUID): root's program is not its
	run -0 "$T/xip" exec "$T/own.img" /bin/echo ok
	[ "$output" = ok ]
	run "$T/xip" exec "$T/own.img" /bin/printf ok
	echo "$output"
	[ "$status" -eq 126 ]
	[ "$output" = "xiptool exec: /bin/printf: permission denied (no execute bit for us, mode 0700)" ]
}

@test "exec: XIPTOOL_EXEC in the environment changes no xiptool command, and exec writes its own" {
	mkdir -p "$T/bin"
	ln -s "$XIPTOOL" "$T/bin/xip"
	export XIPTOOL_EXEC="1:auto:$IMG:/probe-static"
	run -0 xiptool read "$IMG" /etc/data
	[ "$output" = data ]
	run -0 "$T/bin/xip" read "$IMG" /etc/data
	[ "$output" = data ]
	run -0 env PATH="$T/bin:$PATH" xip read "$IMG" /etc/data
	[ "$output" = data ]
	run -0 bash -c 'exec -a xiptool-x "$0" --version' "$XIPTOOL"
	[[ "$output" == "xiptool "* ]]
	# a wrong marker is replaced by the one of this run, also over -e
	XIPTOOL_EXEC=bogus run -0 xiptool exec "$IMG" /probe-static args
	grepq -x "env <XIPTOOL_EXEC=1:auto:$IMG:/probe-static>" <<<"$output"
	[ "$(grep -c '^env <XIPTOOL_EXEC=' <<<"$output")" -eq 1 ]
	run -0 xiptool exec -i -e XIPTOOL_EXEC=x "$IMG" /probe-static args
	grepq -x "env <XIPTOOL_EXEC=1:auto:$IMG:/probe-static>" <<<"$output"
	[ "$(grep -c '^env <' <<<"$output")" -eq 1 ]
}

# system calls of CMD and its children (strace -f -c), printed: the
# "calls" column of the total line (an "errors" column follows it when a
# call failed)
syscalls_of() {
	strace -f -c -o "$BATS_TEST_TMPDIR/strace.out" "$@" >/dev/null
	awk '$NF == "total" { print $4 }' "$BATS_TEST_TMPDIR/strace.out"
}

@test "exec: at most 30 system calls more than execve of the same program, whatever the descriptor limit" {
	need_busybox
	command -v strace >/dev/null || skip "strace is not installed"
	skip_sanitized_front
	local n x1 x2 a0 a1 a2 hi p
	# the most this shell may set (raising the hard limit may be refused)
	hi=$(ulimit -Hn)
	[ "$hi" = unlimited ] && hi=65536
	[ "$hi" -gt 65536 ] && hi=65536
	export XIPTOOL_RUNDIR=$T/run
	# busybox in one run of blocks, as xiptool mkfs lays it out: one
	# mapping per PT_LOAD
	mkdir -p "$T/cnt/bin"
	cp /bin/busybox "$T/cnt/bin/busybox"
	xiptool mkfs -q -d "$T/cnt" "$T/cnt.img"
	xiptool attach -n "execcount$$" "$T/cnt.img"
	cp /bin/busybox "$BATS_TEST_TMPDIR/busybox"
	n=$(syscalls_of "$BATS_TEST_TMPDIR/busybox" true)
	# an image path and an attached segment (@NAME: its record, its file);
	# the first start from the segment keeps what it read of the program
	# where it can (a read-only segment on tmpfs, as root: the attribute
	# read that finds nothing and the one written, exec-cache.bats), the
	# next ones read that instead of the image
	x1=$(ulimit -n 1024 && syscalls_of "$XIPTOOL" exec "$T/cnt.img" /bin/busybox true)
	x2=$(ulimit -n "$hi" && syscalls_of "$XIPTOOL" exec "$T/cnt.img" /bin/busybox true)
	a0=$(syscalls_of "$XIPTOOL" exec "@execcount$$" /bin/busybox true)
	a1=$(ulimit -n 1024 && syscalls_of "$XIPTOOL" exec "@execcount$$" /bin/busybox true)
	a2=$(ulimit -n "$hi" && syscalls_of "$XIPTOOL" exec "@execcount$$" /bin/busybox true)
	# and what no loader's work is: root's exec looks for the policy
	# file (one openat, xiptool.conf(5)) and every exec asks for its
	# securebits (one prctl, SECBIT_EXEC_RESTRICT_FILE): counted apart,
	# each exactly once
	strace -f -e trace=open,openat,prctl -o "$BATS_TEST_TMPDIR/policy" \
		"$XIPTOOL" exec "@execcount$$" /bin/busybox true
	xiptool detach "execcount$$"
	[ "$(grep -c 'PR_GET_SECUREBITS' "$BATS_TEST_TMPDIR/policy")" -eq 1 ]
	[ "$(grep -c '"/etc/xiptool/xiptool.conf"' "$BATS_TEST_TMPDIR/policy")" -eq "$(($(id -u) == 0))" ]
	p=$((1 + ($(id -u) == 0)))
	echo "native $n; image path $x1 (ulimit -n $hi: $x2); @NAME $a1 ($a2), its first start $a0; of each, $p for the policy"
	[ "$x1" -le "$((n + 30 + p))" ]
	[ "$a1" -le "$((n + 30 + p))" ]
	[ "$a0" -le "$((n + 32 + p))" ]
	[ "$x1" -eq "$x2" ]
	[ "$a1" -eq "$a2" ]
}

# the system calls of `xiptool exec $1 /bin/busybox true` on the file $2
# (from its open to its close; a sanitizer's run-time opens others):
# "PREADS SHARED PRIVATE", its pread64s, MAP_SHARED and MAP_PRIVATE mmaps
calls_on_file() {
	strace -f -e trace=open,openat,close,pread64,mmap -o "$BATS_TEST_TMPDIR/trace" \
		"$XIPTOOL" exec "$1" /bin/busybox true
	cat "$BATS_TEST_TMPDIR/trace" >&2
	awk -v f="\"$2\"" '
		/open(at)?\(/ && index($0, f) { split($0, a, "= "); fd = a[2] + 0; next }
		fd != "" && $0 ~ "close\\(" fd "\\)" { fd = ""; next }
		fd != "" && $0 ~ "pread64\\(" fd "," { p++ }
		fd != "" && $0 ~ "mmap\\(" && $0 ~ ", " fd ", 0" {
			if ($0 ~ /MAP_SHARED/) s++; else v++
		}
		END { print p + 0, s + 0, v + 0 }' "$BATS_TEST_TMPDIR/trace"
}

@test "exec: the image's metadata read with a few pread(2)s, the segment itself never mapped whole" {
	need_busybox
	command -v strace >/dev/null || skip "strace is not installed"
	local spec file size p s v
	export XIPTOOL_RUNDIR=$T/run
	mkdir -p "$T/meta/bin"
	cp /bin/busybox "$T/meta/bin/busybox"
	xiptool mkfs -q -d "$T/meta" "$T/meta.img"
	xiptool attach -n "execmeta$$" "$T/meta.img"
	size=$(stat -c %s "$T/meta.img")
	for spec in "$T/meta.img" "@execmeta$$"; do
		file=$spec
		[ "${spec#@}" = "$spec" ] ||
			file=$(xiptool list --noheadings -r -o PATH "${spec#@}")
		read -r p s v < <(calls_on_file "$spec" "$file")
		echo "$spec: $p preads, $s shared and $v private mappings of $file"
		# superblock to indirect block: three windows of copies
		[ "$p" -ge 1 ]
		[ "$p" -le 4 ]
		# no shared mapping: not the segment's view, of any size
		[ "$s" -eq 0 ]
		# the program's pages are the segment's: private mappings of it
		[ "$v" -ge 3 ]
	done
	xiptool detach "execmeta$$"
	echo "image of $size bytes"
}

@test "exec: arguments too many for the front end's arena: the program gets them all, and none of the front end's memory" {
	need_busybox
	skip_sanitized_front
	local args x n
	# 20000 arguments: the front end's first copy of the vector (160 KB)
	# fits in its arena, the next does not and gets a mapping of its own
	mapfile -t args < <(seq 20000)
	run "$XIPTOOL" exec "$IMG" /bin/busybox sh -c 'echo $# ${20000}' sh "${args[@]}"
	[ "$status" -eq 0 ]
	[ "$output" = "20000 20000" ]
	# anonymous KiB of a sleeping busybox given them, against execve's
	cp /bin/busybox "$BATS_TEST_TMPDIR/busybox"
	"$XIPTOOL" exec "$IMG" /bin/busybox sleep 30 "${args[@]}" 2>/dev/null &
	x=$(anon_sleeping $!)
	kill $! && wait $! || true
	"$BATS_TEST_TMPDIR/busybox" sleep 30 "${args[@]}" 2>/dev/null &
	n=$(anon_sleeping $!)
	kill $! && wait $! || true
	echo "exec: $x KiB; native: $n KiB"
	[ "$x" -le "$((n + 16))" ]
}

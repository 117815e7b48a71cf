#!/usr/bin/env bats
# The accelerator `make check-vm` picks for its guests (tests/vm/lib.bash),
# with fake qemu-system-x86_64 programs on PATH that behave as QEMU does on
# nested KVM: one aborts ("failed to set MSR 0x10a"), one hangs after
# SeaBIOS, one boots.  No real guest is started.

load ../vm/lib

setup() {
	common_setup
	mkdir "$T/bin"
	# a KVM device the probe may use, whatever this machine has
	: > "$T/kvm"
	VM_KVM_DEV=$T/kvm
	VM_ACCEL_CACHE=$T/accel
	KERNEL=$T/vmlinuz
	: > "$KERNEL"
	XIPTOOL_VM_PROBE_TIMEOUT=3
	unset XIPTOOL_VM_ACCEL
	FAKE_LOG=$T/qemu.calls
	export FAKE_LOG
	cat > "$T/bin/qemu-system-x86_64" <<'EOF'
#!/bin/sh
# a fake QEMU: $FAKE_MODE says what it does
echo "$$ $*" >> "$FAKE_LOG"
serial= prev=
for a; do
	[ "$prev" = -serial ] && serial=${a#file:}
	prev=$a
done
case $FAKE_MODE in
abort)
	echo "qemu-system-x86_64: error: failed to set MSR 0x10a to 0x69" >&2
	echo "qemu-system-x86_64: ../../target/i386/kvm/kvm.c:3183: kvm_buf_set_msrs: Assertion \`ret == cpu->kvm_msr_buf->nmsrs' failed." >&2
	kill -ABRT $$ ;;
hang)
	printf 'SeaBIOS (version 1.16.2-debian-1.16.2-1)\nBooting from ROM...\n' > "$serial"
	exec sleep 600 ;;
boot)
	printf 'SeaBIOS (version 1.16.2-debian-1.16.2-1)\n' > "$serial"
	printf '[    0.000000] Linux version 6.1.0-57-amd64\n' >> "$serial"
	exec sleep 600 ;;
esac
exit 1
EOF
	chmod 755 "$T/bin/qemu-system-x86_64"
	PATH=$T/bin:$PATH
}

teardown() {
	local pid rest
	# a fake left running is a failure of the test, but not a leak
	if [ -f "${T:-}/qemu.calls" ]; then
		while read -r pid rest; do
			kill -KILL "$pid" 2>/dev/null || true
		done < "$T/qemu.calls"
	fi
	common_teardown
}

# The fakes started: none of them may still run.
fakes_gone() {
	local pid rest
	while read -r pid rest; do
		if kill -0 "$pid" 2>/dev/null; then
			echo "fake qemu $pid still runs"
			return 1
		fi
	done < "$FAKE_LOG"
}

@test "vm probe: QEMU aborting on KVM (failed to set MSR 0x10a) leads to TCG, said in a TAP comment" {
	export FAKE_MODE=abort
	vm_accel 3> "$T/tap"
	[ "$ACCEL" = tcg ]
	# the probe did try KVM, once
	[ "$(wc -l < "$FAKE_LOG")" -eq 1 ]
	grep -q -- '-accel kvm' "$FAKE_LOG"
	cat "$T/tap"
	[ "$(cat "$T/tap")" = "# accel: tcg (kvm present but could not boot: qemu exited: failed to set MSR 0x10a to 0x69)" ]
	fakes_gone
}

@test "vm probe: QEMU hanging after SeaBIOS leads to TCG within the deadline, the probe guest killed" {
	export FAKE_MODE=hang
	start=$SECONDS
	vm_accel 3> "$T/tap"
	took=$((SECONDS - start))
	echo "took $took s"
	[ "$ACCEL" = tcg ]
	[ "$took" -le $((XIPTOOL_VM_PROBE_TIMEOUT + 2)) ]
	[ "$took" -ge $((XIPTOOL_VM_PROBE_TIMEOUT - 1)) ]
	[ "$(cat "$T/tap")" = "# accel: tcg (kvm present but could not boot: no console line from the kernel within 3 s (SeaBIOS started))" ]
	fakes_gone
}

@test "vm probe: a kernel that speaks under KVM keeps KVM; the choice is made once per run" {
	export FAKE_MODE=boot
	vm_accel 3> "$T/tap"
	[ "$ACCEL" = kvm ]
	[ "$(cat "$T/tap")" = "# accel: kvm (a probe boot printed the kernel's first line)" ]
	fakes_gone
	# later tests of the run read the choice: no second probe, no comment
	export FAKE_MODE=abort
	ACCEL=
	vm_accel 3> "$T/tap2"
	[ "$ACCEL" = kvm ]
	[ "$(wc -l < "$FAKE_LOG")" -eq 1 ]
	[ ! -s "$T/tap2" ]
}

@test "vm probe: XIPTOOL_VM_ACCEL is obeyed without a probe; a bad value is refused" {
	export FAKE_MODE=abort
	XIPTOOL_VM_ACCEL=kvm vm_accel 3> "$T/tap"
	[ "$ACCEL" = kvm ]
	[ "$(cat "$T/tap")" = "# accel: kvm (XIPTOOL_VM_ACCEL)" ]
	rm "$VM_ACCEL_CACHE"
	export FAKE_MODE=boot
	XIPTOOL_VM_ACCEL=tcg vm_accel 3> "$T/tap"
	[ "$ACCEL" = tcg ]
	[ "$(cat "$T/tap")" = "# accel: tcg (XIPTOOL_VM_ACCEL)" ]
	[ ! -e "$FAKE_LOG" ]
	rm "$VM_ACCEL_CACHE"
	XIPTOOL_VM_ACCEL=hvf run vm_accel
	[ "$status" -eq 1 ]
	[ "$output" = "XIPTOOL_VM_ACCEL=hvf: kvm or tcg" ]
}

@test "vm probe: without a usable KVM device, TCG and no probe" {
	export FAKE_MODE=boot
	VM_KVM_DEV=$T/no-such-kvm
	vm_accel 3> "$T/tap"
	[ "$ACCEL" = tcg ]
	[ "$(cat "$T/tap")" = "# accel: tcg (no usable $T/no-such-kvm)" ]
	[ ! -e "$FAKE_LOG" ]
}

# vm: `make check-vm` boots the distribution's kernel under
# qemu-system-x86_64 on attached segments shared as pmem devices: with KVM
# when a short probe boot shows that it works, else with TCG (decided once
# per run; XIPTOOL_VM_ACCEL=kvm|tcg to choose).  Never part of `make check`:
# each boot takes seconds.  One bats run, in the TAP format of the other
# suites.  tests/cli/vm-probe.bats, in `make check`, tests the probe with
# fake QEMUs.
VM_TESTS = tests/vm/pmem.bats tests/vm/boot.bats
EXTRA_DIST += $(VM_TESTS) tests/vm/lib.bash tests/vm/init.sh \
	tests/vm/statx-dax.c tests/vm/root-init.sh

if ENABLE_TESTS
TESTS += tests/cli/vm-probe.bats
EXTRA_DIST += tests/cli/vm-probe.bats
endif

.PHONY: check-vm
check-vm: xiptool xiptool-main
	@$(AM_TESTS_ENVIRONMENT) \
	$(BATS) --tap $(foreach t,$(VM_TESTS),'$(abs_top_srcdir)/$(t)')

# vm: `make check-vm` boots the distribution's kernel under
# qemu-system-x86_64 (KVM when /dev/kvm exists, TCG otherwise) on attached
# segments shared as pmem devices.  Never part of `make check`: each boot
# takes seconds.  Output in the TAP format of the other suites.
VM_TESTS = tests/vm/pmem.bats
EXTRA_DIST += $(VM_TESTS) tests/vm/lib.bash tests/vm/init.sh \
	tests/vm/statx-dax.c

.PHONY: check-vm
check-vm: xiptool xiptool-main
	@$(AM_TESTS_ENVIRONMENT) \
	rc=0; for t in $(VM_TESTS); do \
		$(BATS) --tap '$(abs_top_srcdir)'/$$t || rc=1; \
	done; exit $$rc

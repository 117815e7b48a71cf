# check-cross: build xiptool for aarch64 and run its unit tests and exec
# tests under qemu-aarch64 (binfmt_misc runs the arm64 programs directly).
# The cross build is made in $(CROSS_DIR) from a clean copy of the sources
# (make distdir), so that it works beside an in-tree native build.
# Needs packaging/install-deps.sh --arch arm64.
CROSS_HOST = aarch64-linux-gnu
CROSS_DIR = cross-$(CROSS_HOST)
CROSS_CONFIGURE_FLAGS = --enable-werror --disable-fuzz
# the tests a cross build runs: unit tests, exec and align-check
CROSS_UNIT = tests/unit/test_elf tests/unit/test_exec tests/unit/test_align \
	tests/unit/test_segment tests/unit/test_xipio tests/unit/test_image \
	tests/unit/test_page tests/unit/test_file tests/unit/test_build \
	tests/unit/test_check tests/unit/test_fsread tests/unit/test_registry \
	tests/unit/test_extract tests/unit/test_cmd_common tests/unit/test_loop
CROSS_TESTS = $(CROSS_UNIT) tests/cli/exec-cross.bats
EXTRA_DIST += tests/cli/exec-cross.bats tests/cli/exec/bti.S

if XIP_CROSS
# inside the cross build: only the tests above (the bats files of the
# other commands start the build machine's programs beside xiptool)
TESTS += tests/cli/exec-cross.bats
check-cross-here:
	$(MAKE) $(AM_MAKEFLAGS) $(CROSS_UNIT)
	$(MAKE) $(AM_MAKEFLAGS) check-TESTS TESTS='$(CROSS_TESTS)' \
		check_PROGRAMS='$(CROSS_UNIT)'
endif

.PHONY: check-cross check-cross-here
check-cross:
	@if [ ! -e /proc/sys/fs/binfmt_misc/qemu-aarch64 ]; then \
		echo "check-cross: qemu-aarch64 is not registered in binfmt_misc (run packaging/install-deps.sh --arch arm64)" >&2; \
		exit 1; \
	fi
	rm -rf $(CROSS_DIR)
	$(MAKE) $(AM_MAKEFLAGS) distdir distdir=$(CROSS_DIR)
	cd $(CROSS_DIR) && ./configure --host=$(CROSS_HOST) \
		$(CROSS_CONFIGURE_FLAGS) >configure.log 2>&1 || \
		{ tail -20 configure.log; exit 1; }
	cd $(CROSS_DIR) && $(MAKE) $(AM_MAKEFLAGS) && \
		$(MAKE) $(AM_MAKEFLAGS) check-cross-here

clean-local: clean-cross
.PHONY: clean-cross
clean-cross:
	rm -rf $(CROSS_DIR)

# exec: ELF parsing and validation, the user-space loader, `xiptool exec`.
# each exec-<arch>.S assembles to nothing on the other machines
libxip_a_SOURCES += lib/exec/xip_exec.h lib/exec/align.c lib/exec/xip_elf.h lib/exec/exec_int.h lib/exec/elf.c lib/exec/exec.c \
	lib/exec/exec_plan.c lib/exec/exec_prepare.c lib/exec/exec_cache.c lib/exec/exec_marker.c lib/exec/exec_state.c lib/exec/exec-x86_64.S lib/exec/exec-aarch64.S
xiptool_main_SOURCES += cmd/exec.c
dist_man_MANS += man/xiptool-exec.1

if ENABLE_TESTS
check_PROGRAMS += tests/unit/test_elf tests/unit/test_exec
TESTS += tests/unit/test_elf tests/unit/test_exec
TESTS += tests/cli/exec.bats tests/cli/exec-cache.bats
EXTRA_DIST += tests/cli/exec.bats tests/cli/exec-cache.bats tests/cli/exec/probe.c tests/lib/exec.bash
# large programs: placement by mkfs, 2 MiB mappings from segments
TESTS += tests/cli/exec-large.bats
EXTRA_DIST += tests/cli/exec-large.bats tests/lib/bigprog.bash
endif

# exec: ELF parsing and validation, the user-space loader, `xiptool exec`.
# each exec-<arch>.S assembles to nothing on the other machines
libxip_a_SOURCES += lib/elf_int.h lib/exec_int.h lib/elf.c lib/exec.c \
	lib/exec_plan.c lib/exec_prepare.c lib/exec-x86_64.S lib/exec-aarch64.S
xiptool_main_SOURCES += cmd/exec.c
dist_man_MANS += man/xiptool-exec.1

if ENABLE_TESTS
check_PROGRAMS += tests/unit/test_elf tests/unit/test_exec
TESTS += tests/unit/test_elf tests/unit/test_exec
TESTS += tests/cli/exec.bats
EXTRA_DIST += tests/cli/exec.bats tests/cli/exec/probe.c
endif

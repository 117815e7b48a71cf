# ps: the processes that map attached segments (lib/ps/ps.c, `xiptool ps`).
libxip_a_SOURCES += lib/ps/xip_ps.h lib/ps/ps_int.h lib/ps/ps.c
xiptool_main_SOURCES += cmd/ps.c
dist_man_MANS += man/xiptool-ps.1

if ENABLE_TESTS
check_PROGRAMS += tests/unit/test_ps
TESTS += tests/unit/test_ps tests/cli/ps.bats
EXTRA_DIST += tests/cli/ps.bats
endif

# verify and align-check: structural checks of images and XIP readiness of
# the ELF files in them.
libxip_a_SOURCES += lib/check.c lib/check_int.h lib/check_tree.c
xiptool_SOURCES += cmd/verify.c
dist_man_MANS += man/xiptool-verify.1
EXTRA_DIST += tests/damage.sh tests/bench/verify.sh

if ENABLE_TESTS
check_PROGRAMS += tests/unit/test_check
tests_unit_test_check_SOURCES = tests/unit/test_check.c tests/unit/unit.h
tests_unit_test_check_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_check_LDADD = $(UNIT_LDADD)
TESTS += tests/unit/test_check tests/cli/verify.bats
EXTRA_DIST += tests/cli/verify.bats
endif

# engine: files of this part of the product
libxip_a_SOURCES += lib/engine.h lib/page.c lib/file.c lib/kcopy.h lib/kcopy.c
xiptool_main_SOURCES += cmd/read.c cmd/ls.c cmd/stat.c cmd/write.c cmd/truncate.c cmd/stopsig.c
dist_man_MANS += man/xiptool-read.1 man/xiptool-ls.1 man/xiptool-stat.1

if ENABLE_TESTS
check_PROGRAMS += tests/unit/test_page
tests_unit_test_page_SOURCES = tests/unit/test_page.c tests/unit/unit.h
tests_unit_test_page_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_page_LDADD = $(UNIT_LDADD)
TESTS += tests/unit/test_page
TESTS += tests/cli/read.bats tests/cli/ls.bats tests/cli/stat.bats
EXTRA_DIST += tests/cli/read.bats tests/cli/ls.bats tests/cli/stat.bats
endif
dist_man_MANS += man/xiptool-write.1 man/xiptool-truncate.1

if ENABLE_TESTS
TESTS += tests/cli/write.bats tests/cli/truncate.bats tests/cli/random.bats \
	tests/cli/crash.bats
EXTRA_DIST += tests/cli/write.bats tests/cli/truncate.bats tests/cli/random.bats \
	tests/cli/crash.bats tests/lib/e2fsck-leaks.py tests/lib/blockmap.py
endif

if ENABLE_TESTS
check_PROGRAMS += tests/unit/test_file
tests_unit_test_file_SOURCES = tests/unit/test_file.c tests/unit/unit.h
tests_unit_test_file_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_file_LDADD = $(UNIT_LDADD)
TESTS += tests/unit/test_file
endif

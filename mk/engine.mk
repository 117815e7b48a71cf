# engine: files of this part of the product
libxip_a_SOURCES += lib/engine/engine_int.h lib/engine/page.c lib/engine/file.c lib/segment/kcopy_int.h lib/segment/kcopy.c
xiptool_main_SOURCES += cmd/read.c cmd/ls.c cmd/stat.c cmd/write.c cmd/truncate.c cmd/stopsig.c
dist_man_MANS += man/xiptool-read.1 man/xiptool-ls.1 man/xiptool-stat.1 \
	man/xiptool-write.1 man/xiptool-truncate.1

if ENABLE_TESTS
check_PROGRAMS += tests/unit/test_page tests/unit/test_file
TESTS += tests/unit/test_page tests/unit/test_file
TESTS += tests/cli/read.bats tests/cli/ls.bats tests/cli/stat.bats \
	tests/cli/write.bats tests/cli/truncate.bats tests/cli/random.bats \
	tests/cli/crash.bats
EXTRA_DIST += tests/cli/read.bats tests/cli/ls.bats tests/cli/stat.bats \
	tests/cli/write.bats tests/cli/truncate.bats tests/cli/random.bats \
	tests/cli/crash.bats tests/lib/e2fsck-leaks.py tests/lib/blockmap.py
endif

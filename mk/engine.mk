# engine: images opened with libext2fs, get_xip_page, read / write /
# truncate, extract, a file's byte map for NBD (lib/engine/); the file
# commands.
libxip_a_SOURCES += lib/engine/xip_engine.h lib/engine/engine_int.h \
	lib/engine/image.c lib/engine/page.c lib/engine/file.c \
	lib/engine/extract.c lib/engine/nbdmap.c
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

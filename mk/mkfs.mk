# mkfs: files of this part of the product
# Building images from a tree: lib/build.c (plan), lib/buildwrite.c,
# lib/buildid.c, lib/buildtree.c (the tree), lib/buildscan.c (a source
# directory), lib/builddevtable.c (device tables), `xiptool mkfs`.
libxip_a_SOURCES += lib/build.h lib/build.c lib/buildwrite.c lib/buildid.c \
	lib/buildtree.c lib/buildscan.c lib/builddevtable.c lib/buildtarget.c \
	lib/buildtar.c lib/buildio.c lib/extract.c lib/lazy.c lib/lazy.h
xiptool_main_SOURCES += cmd/mkfs.c cmd/extract.c
dist_man_MANS += man/xiptool-mkfs.1 man/xiptool-extract.1
EXTRA_DIST += tests/gentree.py tests/lib/treelist.py tests/lib/contig.py

if ENABLE_TESTS
check_PROGRAMS += tests/unit/test_build
# with the test hooks (xip_build_test_hooks; mk/hooks.mk)
tests_unit_test_build_SOURCES = tests/unit/test_build.c lib/testhooks.c
tests_unit_test_build_CPPFLAGS = $(TEST_HOOKS_CPPFLAGS)
tests_unit_test_build_LDADD = $(LDADD) $(LIBARCHIVE_LIBS)
check_PROGRAMS += tests/unit/test_extract
TESTS += tests/unit/test_build tests/unit/test_extract
TESTS += tests/cli/mkfs.bats tests/cli/mkfs-hostile.bats tests/cli/mkfs-tar.bats \
	tests/cli/mkfs-scale.bats tests/cli/extract.bats
EXTRA_DIST += tests/cli/mkfs.bats tests/cli/mkfs-hostile.bats \
	tests/cli/mkfs-tar.bats tests/cli/mkfs-scale.bats tests/cli/extract.bats
endif

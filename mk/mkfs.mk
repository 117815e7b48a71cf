# build: images from a tree (lib/mkfs/): build.c (plan), buildwrite.c,
# buildid.c, buildtree.c (the tree), buildscan.c (a source directory),
# buildtar.c, builddevtable.c (device tables), buildtarget.c, buildio.c;
# `xiptool mkfs` (and `xiptool extract`, whose library part is the engine's).
libxip_a_SOURCES += lib/mkfs/xip_mkfs.h lib/mkfs/mkfs_int.h \
	lib/mkfs/build.c lib/mkfs/buildwrite.c lib/mkfs/buildid.c \
	lib/mkfs/buildtree.c lib/mkfs/buildscan.c lib/mkfs/builddevtable.c \
	lib/mkfs/buildtarget.c lib/mkfs/buildtar.c lib/mkfs/buildoci.c lib/mkfs/buildio.c
xiptool_main_SOURCES += cmd/mkfs.c cmd/extract.c
dist_man_MANS += man/xiptool-mkfs.1 man/xiptool-extract.1
EXTRA_DIST += tests/gentree.py tests/lib/treelist.py tests/lib/contig.py \
	tests/lib/mkoci.py tests/lib/cuttar.py

if ENABLE_TESTS
check_PROGRAMS += tests/unit/test_build
# with the test hooks (xip_build_test_hooks; mk/hooks.mk)
tests_unit_test_build_SOURCES = tests/unit/test_build.c lib/util/testhooks.c \
	lib/mkfs/build_hooks.c
tests_unit_test_build_CPPFLAGS = $(TEST_HOOKS_CPPFLAGS)
tests_unit_test_build_LDADD = $(LDADD) $(LIBARCHIVE_LIBS)
check_PROGRAMS += tests/unit/test_extract
TESTS += tests/unit/test_build tests/unit/test_extract
TESTS += tests/cli/mkfs.bats tests/cli/mkfs-hostile.bats tests/cli/mkfs-tar.bats \
	tests/cli/mkfs-scale.bats tests/cli/extract.bats tests/cli/mkfs-oci.bats
EXTRA_DIST += tests/cli/mkfs.bats tests/cli/mkfs-hostile.bats \
	tests/cli/mkfs-tar.bats tests/cli/mkfs-scale.bats tests/cli/extract.bats \
	tests/cli/mkfs-oci.bats
endif

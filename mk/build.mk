# build: images from a tree (lib/build/): build.c (plan), buildwrite.c,
# buildid.c, buildtree.c (the tree), buildscan.c (a source directory),
# buildtar.c, builddevtable.c (device tables), buildtarget.c, buildio.c;
# `xiptool mkfs` (and `xiptool extract`, whose library part is the engine's).
libxip_a_SOURCES += lib/build/xip_build.h lib/build/build_int.h \
	lib/build/build.c lib/build/buildwrite.c lib/build/buildid.c \
	lib/build/buildtree.c lib/build/buildscan.c lib/build/builddevtable.c \
	lib/build/buildtarget.c lib/build/buildtar.c lib/build/buildoci.c lib/build/buildio.c
xiptool_main_SOURCES += cmd/mkfs.c cmd/extract.c
dist_man_MANS += man/xiptool-mkfs.1 man/xiptool-extract.1
EXTRA_DIST += tests/gentree.py tests/lib/treelist.py tests/lib/contig.py \
	tests/lib/mkoci.py tests/lib/cuttar.py

if ENABLE_TESTS
check_PROGRAMS += tests/unit/test_build
# with the test hooks (xip_build_test_hooks; mk/hooks.mk)
tests_unit_test_build_SOURCES = tests/unit/test_build.c lib/util/testhooks.c \
	lib/build/build_hooks.c
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

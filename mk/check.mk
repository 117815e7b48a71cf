# check: verify, an independent reader of an image's raw structures
# (lib/check/); `xiptool verify` and `xiptool align-check` (whose library
# part, align.c, is in the exec room).
libxip_a_SOURCES += lib/check/xip_check.h lib/check/check_int.h \
	lib/check/check.c lib/check/check_util.c lib/check/check_super.c \
	lib/check/check_inode.c lib/check/check_dir.c lib/check/check_bitmap.c \
	lib/check/check_tree.c
xiptool_main_SOURCES += cmd/verify.c cmd/align-check.c
dist_man_MANS += man/xiptool-verify.1 man/xiptool-align-check.1
EXTRA_DIST += tests/damage.sh tests/lib/relayout.py tests/lib/dirent.py

if ENABLE_TESTS
check_PROGRAMS += tests/unit/test_check tests/unit/test_align tests/unit/test_maps
TESTS += tests/unit/test_check tests/unit/test_align tests/unit/test_maps
TESTS += tests/cli/verify.bats tests/cli/verify-scale.bats tests/cli/align-check.bats
EXTRA_DIST += tests/cli/verify.bats tests/cli/verify-scale.bats \
	tests/cli/align-check.bats
endif

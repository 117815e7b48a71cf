# Test hooks: crash points of the writers, pauses of mkfs, attach and
# verify.  Each room has its hook points in a file of its own
# (lib/engine/engine_hooks.c, lib/attach/attach_hooks.c,
# lib/mkfs/build_hooks.c, lib/check/check_hooks.c) over what they share
# (lib/util/testhooks.c, util/xip_hooks.h).  libxip.a gets them compiled
# plainly: empty functions that read no environment, so xiptool,
# xiptool-main and the nbdkit plugin carry no hook.  The test build
# compiles them again with -DXIP_TEST_HOOKS into the programs that use the
# hooks, whose own objects then come before libxip.a at the link:
#
#  - tests/hooks/xiptool-main: xiptool-main's objects relinked with the
#    hooks, and tests/hooks/xiptool, a copy of the front end, which hands
#    its commands to the xiptool-main of its own directory.  The bats
#    files that set XIPTOOL_TEST_* run these (use_test_hooks in
#    tests/lib/common.bash);
#  - tests/unit/test_build (mk/mkfs.mk), which sets xip_build_test_hooks.
TEST_HOOKS_SRCS = lib/util/xip_hooks.h lib/util/testhooks.c \
	lib/engine/engine_hooks.c lib/attach/attach_hooks.c \
	lib/mkfs/build_hooks.c lib/check/check_hooks.c
libxip_a_SOURCES += $(TEST_HOOKS_SRCS)
TEST_HOOKS_CPPFLAGS = $(AM_CPPFLAGS) -DXIP_TEST_HOOKS

if ENABLE_TESTS
check_PROGRAMS += tests/hooks/xiptool-main
tests_hooks_xiptool_main_SOURCES = $(TEST_HOOKS_SRCS)
tests_hooks_xiptool_main_CPPFLAGS = $(TEST_HOOKS_CPPFLAGS)
tests_hooks_xiptool_main_LDADD = $(xiptool_main_OBJECTS) $(xiptool_main_LDADD)
tests_hooks_xiptool_main_DEPENDENCIES = $(xiptool_main_OBJECTS) libxip.a

check_DATA += tests/hooks/xiptool
tests/hooks/xiptool: xiptool$(EXEEXT)
	$(AM_V_GEN)mkdir -p tests/hooks && cp -f xiptool$(EXEEXT) $@
CLEANFILES += tests/hooks/xiptool
endif

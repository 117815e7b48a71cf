# util: the bottom room of libxip (lib/util/): the error record, tracing,
# read/write loops, the mount table (libmount), lazy loading of optional
# libraries.  testhooks.c (and each room's hook file) is listed in
# hooks.mk, with the test build it serves.
libxip_a_SOURCES += lib/util/xip_util.h lib/util/xip_error.h lib/util/xip_ext2.h \
	lib/util/util.c lib/util/mounts.c lib/util/error.c lib/util/xip_debug.h lib/util/debug.c \
	lib/util/xip_lazy.h lib/util/xip_lazycurl.h lib/util/lazy.c lib/util/outfile.c \
	lib/util/policy.c

# the files commands create for output (outfile.c)
TESTS += tests/cli/output-hostile.bats
EXTRA_DIST += tests/cli/output-hostile.bats

if ENABLE_TESTS
# the policy file (policy.c) and what attach and exec make of it
check_PROGRAMS += tests/unit/test_policy
TESTS += tests/unit/test_policy tests/cli/policy.bats
EXTRA_DIST += tests/cli/policy.bats
endif

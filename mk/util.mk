# util: the bottom room of libxip (lib/util/): the error record, tracing,
# read/write loops, lazy loading of optional libraries.  testhooks.c is
# listed in hooks.mk, with the test build it serves.
libxip_a_SOURCES += lib/util/xip_util.h lib/util/xip_error.h \
	lib/util/util.c lib/util/error.c lib/util/debug_int.h lib/util/debug.c \
	lib/util/lazy_int.h lib/util/lazy.c lib/util/outfile.c \
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

# The foundation: segments, the segment io_manager, image open, the CLI core
# and `info`.
libxip_a_SOURCES += lib/xip.h lib/util.h lib/util.c lib/error.c lib/segment.c lib/xipio.c lib/image.c lib/registry.c \
	lib/fsread.h lib/fsread.c lib/fsmap.c lib/fsdir.c
xiptool_main_SOURCES += cmd/xiptool.c cmd/cmd.h cmd/commands.h cmd/common.c cmd/table.c cmd/info.c
dist_man_MANS += man/xiptool.1 man/xiptool-info.1
EXTRA_DIST += tests/demo.sh sample tests/lib/common.bash tests/lib/names.bash \
	packaging/install-deps.sh \
	.ci/run

if ENABLE_TESTS
check_PROGRAMS += tests/unit/test_segment tests/unit/test_xipio tests/unit/test_image
check_PROGRAMS += tests/unit/test_fsread tests/unit/test_cmd_common
tests_unit_test_cmd_common_SOURCES = tests/unit/test_cmd_common.c \
	tests/unit/unit.h cmd/common.c cmd/cmd.h
tests_unit_test_cmd_common_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_cmd_common_LDADD = $(UNIT_LDADD) $(POPT_LIBS)
tests_unit_test_fsread_SOURCES = tests/unit/test_fsread.c tests/unit/unit.h
tests_unit_test_fsread_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_fsread_LDADD = $(UNIT_LDADD)
tests_unit_test_segment_SOURCES = tests/unit/test_segment.c tests/unit/unit.h
tests_unit_test_segment_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_segment_LDADD = $(UNIT_LDADD)
tests_unit_test_xipio_SOURCES = tests/unit/test_xipio.c tests/unit/unit.h
tests_unit_test_xipio_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_xipio_LDADD = $(UNIT_LDADD)
tests_unit_test_image_SOURCES = tests/unit/test_image.c tests/unit/unit.h
tests_unit_test_image_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_image_LDADD = $(UNIT_LDADD)
TESTS += tests/unit/test_segment tests/unit/test_xipio tests/unit/test_image tests/unit/test_fsread \
	tests/unit/test_cmd_common
TESTS += tests/cli/cli.bats tests/cli/info.bats tests/cli/manpages.bats \
	tests/cli/front.bats
EXTRA_DIST += tests/cli/cli.bats tests/cli/info.bats tests/cli/manpages.bats \
	tests/cli/front.bats
endif

if ENABLE_TESTS
# util.o's realloc(3) wrapped: xip_grow's requests seen and failed at will
check_PROGRAMS += tests/unit/test_util
tests_unit_test_util_SOURCES = tests/unit/test_util.c tests/unit/unit.h
tests_unit_test_util_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_util_LDFLAGS = $(AM_LDFLAGS) -Wl,--wrap=realloc
tests_unit_test_util_LDADD = $(UNIT_LDADD)
TESTS += tests/unit/test_util
endif

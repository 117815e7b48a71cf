# The CLI core (the command table, common option handling, `info`) and
# the unit tests of the rooms below the engine.
xiptool_main_SOURCES += cmd/xiptool.c cmd/cmd.h cmd/commands.h cmd/common.c cmd/table.c cmd/info.c
dist_man_MANS += man/xiptool.1 man/xiptool-info.1
EXTRA_DIST += tests/demo.sh sample tests/lib/common.bash tests/lib/names.bash \
	tests/unit/unit.h tests/unit/cmocka-tap.sh \
	packaging/install-deps.sh \
	.ci/run

if ENABLE_TESTS
check_PROGRAMS += tests/unit/test_segment tests/unit/test_xipio tests/unit/test_image
check_PROGRAMS += tests/unit/test_fsread tests/unit/test_cmd_common \
	tests/unit/test_util tests/unit/test_front_alloc
tests_unit_test_cmd_common_SOURCES = tests/unit/test_cmd_common.c \
	cmd/common.c cmd/cmd.h
tests_unit_test_cmd_common_LDADD = $(LDADD) $(POPT_LIBS)
# the musl front end's allocator, under other names (the test's file
# includes cmd/front_alloc.c)
tests_unit_test_front_alloc_SOURCES = tests/unit/test_front_alloc.c
EXTRA_tests_unit_test_front_alloc_SOURCES = cmd/front_alloc.c
# util.o's realloc(3) wrapped: xip_grow's requests seen and failed at will
tests_unit_test_util_LDFLAGS = $(AM_LDFLAGS) -Wl,--wrap=realloc
TESTS += tests/unit/test_segment tests/unit/test_xipio tests/unit/test_image tests/unit/test_fsread \
	tests/unit/test_cmd_common tests/unit/test_util \
	tests/unit/test_front_alloc
TESTS += tests/cli/cli.bats tests/cli/info.bats tests/cli/manpages.bats \
	tests/cli/front.bats tests/cli/debug.bats tests/cli/readme.bats
EXTRA_DIST += tests/cli/cli.bats tests/cli/info.bats tests/cli/manpages.bats \
	tests/cli/front.bats tests/cli/debug.bats tests/cli/readme.bats \
	tests/lib/readme-blocks.py
endif

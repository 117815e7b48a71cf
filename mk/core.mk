# The CLI core (the command table, common option handling, `info`) and
# the unit tests of the rooms below the engine.
xiptool_main_SOURCES += cmd/xiptool.c cmd/cmd.h cmd/commands.h cmd/common.c cmd/table.c cmd/info.c
dist_man_MANS += man/xiptool.1 man/xiptool-info.1 man/xiptool.conf.5
EXTRA_DIST += tests/demo.sh sample tests/lib/common.bash tests/lib/names.bash \
	tests/unit/unit.h tests/unit/cmocka-tap.sh \
	packaging/install-deps.sh \
	.ci/run

# man/man1/ of the build tree: a link to each manual page where man(1)
# looks for them, so that MANPATH="$PWD/man:" in the build tree finds
# `man xiptool-mkfs` before any install (README.md's tour).
all-local: man-tree
.PHONY: man-tree clean-man-tree
man-tree: man/man1/.stamp
man/man1/.stamp: $(dist_man_MANS)
	$(AM_V_GEN)$(MKDIR_P) man/man1 man/man5 && \
	for f in $(dist_man_MANS); do \
		n=$${f#man/}; \
		if test '$(srcdir)' = .; then t=../$$n; \
		else t='$(abs_top_srcdir)'/$$f; fi; \
		ln -sfn "$$t" "man/man$${n##*.}/$$n" || exit 1; \
	done && touch $@
clean-local: clean-man-tree
clean-man-tree:
	rm -rf man/man1 man/man5

if ENABLE_TESTS
check_PROGRAMS += tests/unit/test_segment tests/unit/test_xipio tests/unit/test_image
check_PROGRAMS += tests/unit/test_fill
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
TESTS += tests/unit/test_segment tests/unit/test_fill tests/unit/test_xipio tests/unit/test_image tests/unit/test_fsread \
	tests/unit/test_cmd_common tests/unit/test_util \
	tests/unit/test_front_alloc
TESTS += tests/cli/cli.bats tests/cli/info.bats tests/cli/manpages.bats \
	tests/cli/front.bats tests/cli/debug.bats tests/cli/readme.bats
EXTRA_DIST += tests/cli/cli.bats tests/cli/info.bats tests/cli/manpages.bats \
	tests/cli/front.bats tests/cli/debug.bats tests/cli/readme.bats \
	tests/lib/readme-blocks.py
endif

# make check-mutants: small plausible bugs (tests/mutants/list) applied one
# at a time to a scratch copy of the tree, each of which must make one of
# its tests fail (tests/mutants/run).  Not part of make check; .ci/run runs
# it after make check.  MUTANTS='NAME...' runs only those mutants;
# MUTANTS_FLAGS=--no-baseline skips running their tests on the unchanged
# tree first (for a tree whose make check has just passed).
EXTRA_DIST += tests/mutants/run tests/mutants/list

.PHONY: check-mutants
check-mutants: all
	$(top_srcdir)/tests/mutants/run --srcdir '$(abs_top_srcdir)' \
		--builddir '$(abs_top_builddir)' $(MUTANTS_FLAGS) $(MUTANTS)

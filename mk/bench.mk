# bench: `make bench` runs every tests/bench/*.sh and prints one table of
# their BENCH lines (format: tests/bench/README.md).  Never part of
# `make check`.  BENCH_FLAGS=--markdown prints the table for README.md;
# BENCH_ONLY='tests/bench/mkfs.sh ...' runs only those scripts.  Logs go to
# bench-logs/, the raw lines to bench-results.tsv, in the build directory.
# The whole directory is distributed, so new scripts need no entry here.
EXTRA_DIST += tests/bench

BENCH_FLAGS =
BENCH_ONLY =

.PHONY: bench
bench: xiptool xiptool-main
	@TOP_SRCDIR='$(abs_top_srcdir)' TOP_BUILDDIR='$(abs_top_builddir)' \
	XIPTOOL='$(abs_top_builddir)/xiptool' \
	bash '$(abs_top_srcdir)/tests/bench/run-benchmarks' \
		--logdir '$(abs_top_builddir)/bench-logs' \
		--tsv '$(abs_top_builddir)/bench-results.tsv' $(BENCH_FLAGS) \
		$(foreach s,$(BENCH_ONLY),'$(abs_top_srcdir)/$(s)')

if ENABLE_TESTS
TESTS += tests/cli/bench.bats
EXTRA_DIST += tests/cli/bench.bats
endif

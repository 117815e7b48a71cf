# fuzz: libFuzzer targets for every parser of untrusted bytes (tests/fuzz/),
# their seed corpora, the replay of stored regression inputs, and the
# fuzz-smoke / fuzz make targets.
#
# Two builds of the same targets:
#  - tests/fuzz/fuzz-replay: every target linked with libxip.a by the main
#    build (its compiler and sanitizers); replays the regression inputs and
#    seeds in `make check` (tests/fuzz/regress.test).
#  - tests/fuzz/bin/fuzz-NAME: one libFuzzer binary per target, libxip's
#    sources compiled again by clang with -fsanitize=fuzzer,address,undefined
#    (tests/fuzz/fuzz.gmk); run by tests/fuzz/smoke.test.

FUZZ_TARGET_NAMES = image elf file verify write exec align
FUZZ_TARGET_NAMES += verity
FUZZ_TARGET_SRCS = tests/fuzz/fuzz_image.c tests/fuzz/fuzz_elf.c \
	tests/fuzz/fuzz_file.c tests/fuzz/fuzz_verify.c tests/fuzz/fuzz_write.c \
	tests/fuzz/fuzz_exec.c tests/fuzz/fuzz_align.c
FUZZ_TARGET_NAMES += oci
FUZZ_TARGET_SRCS += tests/fuzz/fuzz_oci.c
FUZZ_TARGET_NAMES += tar
FUZZ_TARGET_SRCS += tests/fuzz/fuzz_tar.c
FUZZ_TARGET_NAMES += record
FUZZ_TARGET_SRCS += tests/fuzz/fuzz_record.c
FUZZ_TARGET_SRCS += tests/fuzz/fuzz_verity.c
FUZZ_TARGET_NAMES += vsig
FUZZ_TARGET_SRCS += tests/fuzz/fuzz_vsig.c
FUZZ_TARGET_NAMES += regauth
FUZZ_TARGET_SRCS += tests/fuzz/fuzz_regauth.c
FUZZ_COMMON_SRCS = tests/fuzz/fuzz.h tests/fuzz/targets.h \
	tests/fuzz/fuzz_common.c
FUZZ_COMMON_SRCS += tests/fuzz/fuzz_build.h

EXTRA_DIST += tests/fuzz/fuzz.gmk tests/fuzz/libfuzzer_main.c \
	tests/fuzz/seeds.sh tests/fuzz/lib.sh tests/fuzz/smoke.test \
	tests/fuzz/regress.test tests/fuzz/ext2.dict tests/fuzz/elf.dict \
	tests/fuzz/regress
EXTRA_DIST += tests/fuzz/seeds.py
EXTRA_DIST += tests/fuzz/oci.dict tests/fuzz/tar.dict tests/fuzz/record.dict
EXTRA_DIST += tests/fuzz/verity.dict
EXTRA_DIST += tests/fuzz/vsig.dict
EXTRA_DIST += tests/fuzz/regauth.dict

if ENABLE_TESTS
check_PROGRAMS += tests/fuzz/fuzz-replay
tests_fuzz_fuzz_replay_SOURCES = tests/fuzz/replay.c $(FUZZ_COMMON_SRCS) \
	$(FUZZ_TARGET_SRCS)
tests_fuzz_fuzz_replay_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/tests/fuzz
tests_fuzz_fuzz_replay_LDADD = $(XIP_LIBS)
check_DATA += tests/fuzz/seeds/.stamp
TESTS += tests/fuzz/regress.test tests/cli/hostile.bats
EXTRA_DIST += tests/cli/hostile.bats
if ENABLE_FUZZ
check_DATA += fuzz-build
TESTS += tests/fuzz/smoke.test
endif
endif

# Seeds are regenerated when the generator or xiptool changes.
tests/fuzz/seeds/.stamp: $(top_srcdir)/tests/fuzz/seeds.sh \
		$(top_srcdir)/tests/fuzz/seeds.py xiptool$(EXEEXT) xiptool-main$(EXEEXT)
	$(AM_V_GEN)rm -rf tests/fuzz/seeds && \
	CC='$(CC)' $(SHELL) $(top_srcdir)/tests/fuzz/seeds.sh tests/fuzz/seeds \
		'$(abs_top_builddir)/xiptool$(EXEEXT)' && touch $@

FUZZ_GMAKE = $(MAKE) --no-print-directory -f $(top_srcdir)/tests/fuzz/fuzz.gmk \
	srcdir='$(abs_top_srcdir)' builddir='$(abs_top_builddir)' \
	O='$(abs_top_builddir)/tests/fuzz' FUZZ_CC='$(FUZZ_CC)' \
	LIB_SRCS='$(libxip_a_SOURCES)' TARGETS='$(FUZZ_TARGET_NAMES)' \
	DEP_CFLAGS='$(EXT2FS_CFLAGS) $(BLKID_CFLAGS) $(MOUNT_CFLAGS) $(UUID_CFLAGS) $(ZLIB_CFLAGS) $(SMARTCOLS_CFLAGS) $(LIBARCHIVE_CFLAGS) $(JSONC_CFLAGS) $(LIBCRYPTO_CFLAGS) $(LIBCURL_CFLAGS)' \
	DEP_LIBS='$(EXT2FS_LIBS) $(BLKID_LIBS) $(UUID_LIBS) $(ZLIB_LIBS) $(SMARTCOLS_LIBS) $(LIBARCHIVE_LIBS) $(LIBNBD_LIBS) $(LIBCRYPTO_LIBS)'

FUZZ_ENV = TOP_SRCDIR='$(abs_top_srcdir)' TOP_BUILDDIR='$(abs_top_builddir)'

.PHONY: fuzz-build fuzz-smoke fuzz
if ENABLE_FUZZ
fuzz-build: config.h
	@$(FUZZ_GMAKE)

# Every target for 60 s (FUZZ_SECONDS), after its regression inputs.
fuzz-smoke: fuzz-build tests/fuzz/seeds/.stamp
	@$(FUZZ_ENV) FUZZ_SECONDS=$${FUZZ_SECONDS:-60} \
		$(SHELL) $(top_srcdir)/tests/fuzz/smoke.test

# Long campaigns: FUZZ_SECONDS per target (default 1800), niced.
fuzz: fuzz-build tests/fuzz/seeds/.stamp
	@$(FUZZ_ENV) FUZZ_SECONDS=$${FUZZ_SECONDS:-1800} \
		FUZZ_NICE=$${FUZZ_NICE:-10} \
		$(SHELL) $(top_srcdir)/tests/fuzz/smoke.test
else
fuzz-build fuzz-smoke fuzz:
	@echo "fuzzing needs clang with libFuzzer (Debian: clang libclang-rt-14-dev); re-run configure" >&2
	@exit 1
endif

clean-local: clean-fuzz
.PHONY: clean-fuzz
clean-fuzz:
	-rm -rf tests/fuzz/obj tests/fuzz/bin tests/fuzz/seeds tests/fuzz/logs

# `make clean` keeps what fuzzing grew (corpora, artifacts, the stats);
# distclean returns the build tree to what configure found.
distclean-local: distclean-fuzz
.PHONY: distclean-fuzz
distclean-fuzz:
	-rm -rf tests/fuzz/corpus tests/fuzz/artifacts tests/fuzz/stats.log

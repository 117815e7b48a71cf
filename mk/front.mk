# The front end linked against musl (configure picks it when musl-gcc is
# installed and links a static PIE; --without-musl-front to keep glibc).
# Its sources are compiled a second time, from source, with musl-gcc into
# front-musl.a: nothing of the glibc build goes into it, and it needs no
# library but musl's libc.a.  musl-include/ (mk/musl-headers.sh) holds
# links to the kernel's headers and to <ext2fs/ext2_fs.h> (on-disk
# definitions only), which musl-gcc does not search.
# The musl front end brings its own allocator (cmd/front_alloc.c) and
# keeps the library's per-thread state in plain statics (XIP_TLS): it runs
# one thread, and so starts without a mapping for either.  On x86_64 and
# aarch64 its entry point (cmd/front_entry.S) asks for the pages every
# start touches before musl's _start runs (MUSL_ENTRY_LDFLAGS, configure).
EXTRA_DIST += mk/musl-link.sh mk/musl-headers.sh cmd/front_alloc.c \
	cmd/front_entry.S cmd/front_mem.h

if MUSL_BUILD
MUSL_SRCS = $(FRONT_SRCS) cmd/front_alloc.c cmd/front_entry.S
# -Os after CFLAGS: a start runs each of its instructions about once, and
# its text's pages cost a page fault (and their unmapping at the jump)
# each window of them: smaller code is faster code here (2 faults and
# 2-3 us fewer for busybox true, tests/bench/exec.sh)
MUSL_CFLAGS = -std=gnu11 -fPIE -ffunction-sections -fdata-sections \
	$(WARN_CFLAGS) $(CFLAGS) -Os $(FRONT_CPPFLAGS) -DXIP_FRONT_ALLOC \
	'-DXIP_TLS=' -isystem musl-include

front-musl.a: $(MUSL_SRCS) $(FRONT_HDRS) cmd/front_mem.h Makefile config.h
	$(AM_V_GEN)rm -rf front-musl.tmp && mkdir front-musl.tmp && \
	for s in $(MUSL_SRCS); do \
		o=front-musl.tmp/`echo $$s | tr / _`.o; \
		$(MUSL_CC) $(MUSL_CFLAGS) -c $(srcdir)/$$s -o $$o || exit 1; \
	done && rm -f $@ && $(AR) rc $@ front-musl.tmp/*.o && \
	rm -rf front-musl.tmp

# -z noseparate-code: the headers, text and read-only data in one
# read+exec mapping, the data in another: two mappings for execve(2) to
# make and the jump to take away instead of four (4-5 us of every start
# on a VM whose munmap costs 2-3 us); the loader's text goes before the
# program runs but for the page of its last instructions.
MUSL_LINK = $(SHELL) $(top_srcdir)/mk/musl-link.sh '$(CC)' '$(MUSL_LIBDIR)' \
	-Wl,--gc-sections -Wl,-z,noseparate-code $(MUSL_ENTRY_LDFLAGS) \
	$(CFLAGS) $(LDFLAGS)

if !MUSL_FRONT
# The installed front end is the glibc one (sanitizers, or a dynamic front
# end): the musl build is made for the tests, which run exec.bats and the
# loader's part of front.bats with it (tests/cli/exec-musl.sh).
check_DATA += tests/musl/xiptool
TESTS += tests/cli/exec-musl.sh
tests/musl/xiptool: front-musl.a
	$(AM_V_CCLD)mkdir -p tests/musl && \
	$(MUSL_LINK) -o $@ front-musl.a && \
	ln -sf ../../xiptool-main tests/musl/xiptool-main
endif
endif
EXTRA_DIST += tests/cli/exec-musl.sh
CLEANFILES += front-musl.a tests/musl/xiptool tests/musl/xiptool-main

clean-local: clean-front-musl
distclean-local: distclean-front-musl
.PHONY: clean-front-musl distclean-front-musl
clean-front-musl:
	rm -rf front-musl.tmp
distclean-front-musl:
	rm -rf musl-include

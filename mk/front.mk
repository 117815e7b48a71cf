# The front end linked against musl (configure picks it when musl-gcc is
# installed and the static libraries link; --without-musl-front to keep
# glibc).  Its sources are compiled a second time, with musl-gcc and the
# headers configure linked into musl-include/, into front-musl.a; mk/musl-
# link.sh links it with the same static libraries as the glibc front end.
FRONT_MUSL_LIBSRC = lib/error.c lib/segment.c lib/xipio.c lib/image.c \
	lib/registry.c lib/loop.c lib/page.c lib/file.c lib/kcopy.c lib/elf.c lib/exec.c \
	lib/exec-x86_64.S lib/exec-aarch64.S
EXTRA_DIST += lib/glibc-compat.c cmd/front-malloc.c mk/musl-link.sh \
	mk/musl-headers.sh

if MUSL_BUILD
MUSL_CFLAGS = -std=gnu11 -fPIE -ffunction-sections -fdata-sections \
	$(WARN_CFLAGS) $(CFLAGS) $(FRONT_CPPFLAGS) \
	-isystem musl-include -isystem musl-include/blkid
MUSL_FRONT_LDADD = front-musl-compat.o front-musl.a $(MUSL_ARCHIVES)

front-musl.a: $(FRONT_SRCS) $(FRONT_MUSL_LIBSRC) lib/xip.h Makefile \
		lib/engine.h cmd/cmd.h config.h
	$(AM_V_GEN)rm -rf front-musl.tmp && mkdir front-musl.tmp && \
	for s in $(FRONT_SRCS) $(FRONT_MUSL_LIBSRC); do \
		o=front-musl.tmp/`echo $$s | tr / _`.o; \
		$(MUSL_CC) $(MUSL_CFLAGS) -c $(srcdir)/$$s -o $$o || exit 1; \
	done && rm -f $@ && $(AR) rc $@ front-musl.tmp/*.o && \
	rm -rf front-musl.tmp

# objects, not archive members: the glibc names are needed by the static
# libraries after them, and malloc must replace musl's before libc.a
front-musl-compat.o: lib/glibc-compat.c cmd/front-malloc.c lib/arena.c \
		lib/xip.h Makefile
	$(AM_V_CC)$(MUSL_CC) $(MUSL_CFLAGS) -c $(srcdir)/lib/glibc-compat.c \
		-o front-musl-glibc.o && \
	$(MUSL_CC) $(MUSL_CFLAGS) -c $(srcdir)/cmd/front-malloc.c \
		-o front-musl-malloc.o && \
	$(MUSL_CC) $(MUSL_CFLAGS) -c $(srcdir)/lib/arena.c \
		-o front-musl-arena.o && \
	$(CC) -r -nostdlib -o $@ front-musl-glibc.o front-musl-malloc.o \
		front-musl-arena.o && \
	rm -f front-musl-glibc.o front-musl-malloc.o front-musl-arena.o

MUSL_LINK = $(SHELL) $(top_srcdir)/mk/musl-link.sh '$(CC)' '$(MUSL_LIBDIR)' \
	-Wl,--gc-sections $(CFLAGS) $(LDFLAGS)

# glibc-compat.c and the arena as malloc, tested in the musl build itself
check_DATA += tests/musl/test_glibc_compat
TESTS += tests/musl/test_glibc_compat
tests/musl/test_glibc_compat: tests/unit/test_glibc_compat.c \
		front-musl-compat.o
	$(AM_V_CCLD)mkdir -p tests/musl && \
	$(MUSL_CC) $(MUSL_CFLAGS) -c $(srcdir)/tests/unit/test_glibc_compat.c \
		-o tests/musl/test_glibc_compat.o && \
	$(MUSL_LINK) -o $@ tests/musl/test_glibc_compat.o front-musl-compat.o

if !MUSL_FRONT
# The installed front end is the glibc one (sanitizers, or a dynamic front
# end): the musl build is made for the tests, which run exec.bats and the
# loader's part of front.bats with it (tests/cli/exec-musl.sh).
check_DATA += tests/musl/xiptool
TESTS += tests/cli/exec-musl.sh
tests/musl/xiptool: front-musl-compat.o front-musl.a
	$(AM_V_CCLD)mkdir -p tests/musl && \
	$(MUSL_LINK) -o $@ $(MUSL_FRONT_LDADD) && \
	ln -sf ../../xiptool-main tests/musl/xiptool-main
endif
endif
EXTRA_DIST += tests/cli/exec-musl.sh tests/unit/test_glibc_compat.c
CLEANFILES += front-musl.a front-musl-compat.o tests/musl/xiptool \
	tests/musl/xiptool-main tests/musl/test_glibc_compat \
	tests/musl/test_glibc_compat.o

clean-local: clean-front-musl
distclean-local: distclean-front-musl
.PHONY: clean-front-musl distclean-front-musl
clean-front-musl:
	rm -rf front-musl.tmp
distclean-front-musl:
	rm -rf musl-include

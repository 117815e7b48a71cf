# verity: dm-verity hash trees (format 1) after the file system of an
# image, written by mkfs --verity and checked by verify, attach and the
# nbdkit plugin with --root-hash (lib/verity/, OpenSSL's EVP digests).
libxip_a_SOURCES += lib/verity/xip_verity.h lib/verity/verity_int.h \
	lib/verity/verity.c lib/verity/stream.c lib/verity/sig.c lib/exec/owner.c
xiptool_main_SOURCES += cmd/sign.c
dist_man_MANS += man/xiptool-sign.1

if ENABLE_TESTS
check_PROGRAMS += tests/unit/test_verity tests/unit/test_verity_sig
TESTS += tests/unit/test_verity tests/unit/test_verity_sig tests/cli/verity.bats \
	tests/cli/sign.bats \
	tests/cli/trust.bats
EXTRA_DIST += tests/cli/verity.bats tests/cli/sign.bats tests/cli/trust.bats \
	tests/lib/verity.bash
endif

# oci: the client of OCI distribution registries (lib/oci/): references,
# credentials and challenges, requests over libcurl (loaded at first use).
# Above util only; mkfs --oci docker:// (lib/mkfs) reads through it.
libxip_a_SOURCES += lib/oci/xip_oci.h lib/oci/oci_int.h lib/oci/ref.c \
	lib/oci/auth.c lib/oci/client.c lib/oci/upload.c lib/oci/session.c

if ENABLE_TESTS
check_PROGRAMS += tests/unit/test_oci
TESTS += tests/unit/test_oci
TESTS += tests/cli/mkfs-registry.bats
EXTRA_DIST += tests/cli/mkfs-registry.bats tests/lib/registry.bash \
	tests/lib/registry-peer.py
endif

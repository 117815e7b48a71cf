# attach: attach, detach, save, list of named memory segments, and pulling
# from nbd://, pushing images to registries (ocipush.c) (lib/attach/; nbdpull.c's libnbd flags are in nbdkit.mk).
libxip_a_SOURCES += lib/attach/xip_attach.h lib/attach/attach_int.h \
	lib/attach/attach.c lib/attach/segdir.c lib/attach/attach_fill.c \
	lib/attach/populate.c lib/attach/admit.c \
	lib/attach/detach.c \
	lib/attach/save.c lib/attach/nbd_int.h lib/attach/nbdpull.c lib/attach/nbduri.c \
	lib/attach/attach_lazy.c lib/attach/ocipush.c lib/attach/ocipull.c
xiptool_main_SOURCES += cmd/attach.c cmd/push.c
dist_man_MANS += man/xiptool-attach.1 man/xiptool-detach.1 \
	man/xiptool-list.1 man/xiptool-save.1 man/xiptool-push.1

if ENABLE_TESTS
check_PROGRAMS += tests/unit/test_registry tests/unit/test_loop \
	tests/unit/test_push
TESTS += tests/unit/test_registry tests/unit/test_loop tests/unit/test_push
TESTS += tests/cli/attach.bats tests/cli/detach.bats tests/cli/list.bats \
	tests/cli/owners.bats \
	tests/cli/save.bats tests/cli/attach-hostile.bats \
	tests/cli/concurrency.bats tests/cli/stress.bats tests/cli/lazy.bats \
	tests/cli/push.bats
EXTRA_DIST += tests/cli/attach.bats tests/cli/detach.bats \
	tests/cli/list.bats tests/cli/owners.bats tests/cli/save.bats \
	tests/cli/attach-hostile.bats \
	tests/cli/concurrency.bats tests/cli/stress.bats tests/lib/attach.bash \
	tests/cli/lazy.bats tests/cli/push.bats
endif

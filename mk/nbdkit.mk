# nbd: serving images and segments over NBD and pulling them back.
#
#  - lib/attach/nbdpull.c: `xiptool attach nbd://...` pulls an export into a
#    segment with libnbd (stubs that say so when built without libnbd).
#  - lib/engine/nbdmap.c: the byte map of a file inside an image, as the plugin
#    serves it (runs of the segment and holes).
#  - nbdkit/xiptool.c: nbdkit-xiptool-plugin.so (nbdkit plugin API v2),
#    installed in nbdkit's plugindir.  A shared object needs position
#    independent code and is loaded into nbdkit, which is not built with
#    sanitizers: it links libxip_pic.a, libxip's sources compiled a second
#    time with -fPIC and without sanitizer flags (only the objects it uses
#    are linked in).
#
# Included after every fragment that adds to libxip_a_SOURCES.
# (their sources are listed in attach.mk and engine.mk)
AM_CFLAGS += $(LIBNBD_CFLAGS)
dist_man_MANS += man/nbdkit-xiptool-plugin.1
EXTRA_DIST += nbdkit/xiptool.c

if HAVE_NBDKIT
PLUGIN_CFLAGS = -std=gnu11 -fPIC -fvisibility=hidden $(WARN_CFLAGS) \
	$(EXT2FS_CFLAGS) $(BLKID_CFLAGS) $(MOUNT_CFLAGS) $(UUID_CFLAGS) $(ZLIB_CFLAGS)
noinst_LIBRARIES += libxip_pic.a
libxip_pic_a_SOURCES = $(libxip_a_SOURCES)
libxip_pic_a_CFLAGS = $(PLUGIN_CFLAGS)
libxip_pic_a_CCASFLAGS = -fPIC

nbdkitplugin_PROGRAMS = nbdkit-xiptool-plugin.so
nbdkit_xiptool_plugin_so_SOURCES = nbdkit/xiptool.c
nbdkit_xiptool_plugin_so_CFLAGS = $(PLUGIN_CFLAGS) $(NBDKIT_CFLAGS)
nbdkit_xiptool_plugin_so_LDFLAGS = -shared -Wl,-z,now -Wl,--as-needed
nbdkit_xiptool_plugin_so_LDADD = libxip_pic.a $(EXT2FS_LIBS) $(BLKID_LIBS) \
	$(UUID_LIBS) $(ZLIB_LIBS) $(LIBCRYPTO_LIBS)
# automake links programs with $(CCLD) $(AM_CFLAGS): not the sanitizers
nbdkit_xiptool_plugin_so_LINK = $(CCLD) $(nbdkit_xiptool_plugin_so_CFLAGS) \
	$(CFLAGS) $(nbdkit_xiptool_plugin_so_LDFLAGS) $(LDFLAGS) -o $@
endif

if ENABLE_TESTS
check_PROGRAMS += tests/unit/test_nbd
TESTS += tests/unit/test_nbd tests/cli/nbd.bats
EXTRA_DIST += tests/cli/nbd.bats tests/lib/nbd.bash
endif

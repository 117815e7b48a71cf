# segment: direct_access on tmpfs, hugetlbfs, block and DAX devices; the
# segment io_manager of libext2fs; loop devices; byte moves (lib/segment/).
libxip_a_SOURCES += lib/segment/xip_segment.h lib/segment/segment_int.h lib/segment/xip_loop.h \
	lib/segment/segment.c lib/segment/xipio.c lib/segment/loop.c \
	lib/segment/xip_kcopy.h lib/segment/kcopy.c lib/segment/xip_fill.h \
	lib/segment/fill.c

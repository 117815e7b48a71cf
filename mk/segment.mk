# segment: direct_access on tmpfs, hugetlbfs, block and DAX devices; the
# segment io_manager of libext2fs; loop devices; byte moves (lib/segment/).
libxip_a_SOURCES += lib/segment/xip_segment.h lib/segment/segment_int.h \
	lib/segment/segment.c lib/segment/xipio.c lib/segment/loop.c \
	lib/segment/kcopy_int.h lib/segment/kcopy.c lib/segment/fill.c

# reader: the libc-only ext2 reader every read goes through, the front
# end's too (lib/reader/).
libxip_a_SOURCES += lib/reader/xip_reader.h lib/reader/reader_int.h lib/reader/xip_image.h \
	lib/reader/fsread.c lib/reader/fsmap.c lib/reader/fsdir.c \
	lib/reader/fsimage.c

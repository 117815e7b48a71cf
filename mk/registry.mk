# registry: attached segments: names, records (record.c: their text), the
# lock, identity, the in-use test (lib/registry/).
libxip_a_SOURCES += lib/registry/xip_registry.h lib/registry/registry_int.h \
	lib/registry/registry.c lib/registry/open.c lib/registry/list.c \
	lib/registry/fillfile.c \
	lib/registry/names.c \
	lib/registry/record.c lib/registry/busy.c

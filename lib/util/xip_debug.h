/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Tracing, as util-linux's LOOPDEV_DEBUG or nbdkit -D: with
 * XIPTOOL_DEBUG=engine,exec,... (or "all") in the environment, the rooms
 * named there write one line per step on standard error:
 *
 *     xiptool[PID]: engine: alloc ino 12 block 7 -> 4711
 *
 * The only output the library makes, and only when asked for.  The
 * variable is read once, with secure_getenv (ignored in a set-id
 * process).  Every room traces through it (a util header, in the
 * umbrella lib/xip.h like the others).
 */
#ifndef XIP_DEBUG_H
#define XIP_DEBUG_H

#include <stdbool.h>

/*
 * Per-thread state of the library (the error record, the registry lock).
 * The musl front end runs one thread and defines XIP_TLS empty: its
 * thread area then fits in the C library's own and needs no mapping.
 */
#ifndef XIP_TLS
#define XIP_TLS __thread
#endif

enum xip_debug_room {
	XIP_DBG_SEGMENT = 1u << 0,	/* segment.c: open, map, release */
	XIP_DBG_REGISTRY = 1u << 1,	/* registry.c: records, @NAME */
	XIP_DBG_LOOP = 1u << 2,		/* loop.c: bind, unbind, claims */
	XIP_DBG_ATTACH = 1u << 3,	/* attach*.c, detach.c, save.c */
	XIP_DBG_ENGINE = 1u << 4,	/* page.c, file.c: get_xip_page & co */
	XIP_DBG_EXEC = 1u << 5,		/* exec*.c: the loader's plan */
	XIP_DBG_BUILD = 1u << 6,	/* build*.c: mkfs */
	XIP_DBG_CHECK = 1u << 7,	/* check*.c: verify's passes */
	XIP_DBG_NBD = 1u << 8,		/* nbdpull.c: the NBD client */
};

/* The rooms XIPTOOL_DEBUG names, parsed at the first call. */
unsigned int xip_debug_mask(void);
/* Parse a XIPTOOL_DEBUG value: the mask of the rooms it names. */
unsigned int xip_debug_parse(const char *value);
/* Write one trace line for @room (no newline in @fmt). */
void xip_debug(enum xip_debug_room room, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* XIP_DBG(ENGINE, "fmt", ...): a trace line when the room is traced. */
#define XIP_DBG(room, ...)                                                 \
	do {                                                               \
		if (xip_debug_mask() & XIP_DBG_##room)                     \
			xip_debug(XIP_DBG_##room, __VA_ARGS__);            \
	} while (0)

#endif

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What only the segment room and its tests use: how a segment is set up
 * on a descriptor, the populate rule, the wait of writers for holders.
 * The rooms above use xip_segment.h, xip_loop.h and xip_kcopy.h.
 */
#ifndef XIP_SEGMENT_INT_H
#define XIP_SEGMENT_INT_H

#include "segment/xip_loop.h"
#include "segment/xip_segment.h"
#include "util/xip_ext2.h"

/*
 * xip_seg_populate_pays's rule: populating a span must cost less than
 * half of faulting in every window of it (a program's start touches
 * most of its text's windows: busybox 17 of 25).
 */
bool xip_populate_beats_faults(uint64_t fault_ns, uint64_t populate_ns);

/* A window of copies of a segment opened with XIP_SEG_COPY (segment.c) */
struct xip_seg_window {
	uint64_t off, len;	/* the bytes of the segment it holds */
	uint8_t *buf;
};

/*
 * Set up a segment on @fd, which it takes over (closed on failure):
 * @name and @type are an attached segment's (the registry opens those),
 * NULL and XIP_SEGTYPE_NONE for a plain path.
 */
int xip_seg_adopt(int fd, const char *path, const char *name,
		      enum xip_seg_type type, int flags,
		      struct xip_seg **segp);

/* The backing file of a bound loop device (-ENXIO when unbound). */
int xip_loop_backing_file(const char *dev, char *buf, size_t len);

#ifndef XIP_LIBC_ONLY
/* The segment behind an io_channel of xip_io_manager (NULL otherwise).
 * Test-only. */
struct xip_seg *xip_io_segment(io_channel channel);
#endif

#endif

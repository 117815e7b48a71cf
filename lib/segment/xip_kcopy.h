/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Bulk data between a segment and a descriptor by the kernel's own paths
 * (kcopy.c); the mapping is the fallback, not the way.
 */
#ifndef XIP_KCOPY_H
#define XIP_KCOPY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "segment/xip_segment.h"
#include "util/xip_util.h"

enum xip_kcopy_how {
	XIP_KCOPY_RANGE,	/* copy_file_range(2): a regular file */
	XIP_KCOPY_SPLICE,	/* splice(2): a pipe */
	XIP_KCOPY_SENDFILE,	/* sendfile(2): sockets, devices, the rest */
	XIP_KCOPY_MAPPED,	/* write(2) from the mapping */
};

/* An output descriptor, written at its file position. */
struct xip_kcopy_out {
	int fd;
	enum xip_kcopy_how how;	/* the way that works, found on first use */
	bool moved;		/* bytes went out the current way */
};

void xip_kcopy_out_init(struct xip_kcopy_out *o, int fd);
/*
 * Copy @len bytes at byte @off of @seg to @o.  0, -ERANGE/-ENODEV for a
 * range outside the segment, -EIO when its file shrank, else the output's
 * -errno.
 */
int xip_kcopy_out(struct xip_kcopy_out *o, struct xip_seg *seg,
		  uint64_t off, uint64_t len);
/* @len zero bytes to @o (a hole). */
int xip_kcopy_zeros(struct xip_kcopy_out *o, uint64_t len);
/*
 * Copy @len bytes of @fd from @src_off to @off of @seg (copy_file_range,
 * else a bounce buffer); *done is what was copied, less than @len only
 * when the source ended early.
 */
int xip_seg_copy_in(struct xip_seg *seg, uint64_t off, int fd,
		    uint64_t src_off, uint64_t len, uint64_t *done);
#endif

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

#include "xip.h"

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
int xip_kcopy_out(struct xip_kcopy_out *o, struct xip_segment *seg,
		  uint64_t off, uint64_t len);
/* @len zero bytes to @o (a hole). */
int xip_kcopy_zeros(struct xip_kcopy_out *o, uint64_t len);
/*
 * Copy @len bytes of the regular file @fd at *@fd_off into @seg at @off;
 * *@fd_off advances by what was copied.  -ENODATA when @fd ends first.
 */
int xip_kcopy_in(struct xip_segment *seg, uint64_t off, int fd,
		 uint64_t *fd_off, uint64_t len);
/* pwrite(2) into the segment's file (through the mapping where it cannot). */
int xip_seg_pwrite(struct xip_segment *seg, const void *buf, size_t len,
		   uint64_t off);
/* Zero @len bytes at @off of the segment the same way. */
int xip_seg_zero(struct xip_segment *seg, uint64_t off, uint64_t len);
/* write(2)/pwrite(2) everything, retrying on EINTR: 0 or -errno. */
int xip_write_all(int fd, const void *p, size_t len);
int xip_pwrite_all(int fd, const void *p, size_t len, uint64_t off);

#endif

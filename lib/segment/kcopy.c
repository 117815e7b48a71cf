// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Bulk data between a segment and a file descriptor, moved by the kernel.
 *
 * The engine decides where the bytes are (get_xip_page, with all its
 * checks); these functions move them.  Going through the segment's
 * descriptor (copy_file_range, sendfile, splice, pread, pwrite) instead of
 * its mapping spares one page-table entry per page touched, which on some
 * virtual machines costs more than copying the page.  Where the kernel has
 * no such path for a descriptor (device DAX, hugetlbfs, an output opened
 * with O_APPEND, ...) the bytes are copied through the mapping, as before.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <unistd.h>

#include "segment/xip_kcopy.h"
#include "segment/xip_segment.h"
#include "segment/segment_int.h"
#include "util/xip_util.h"

#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22
#endif

/* Largest single request: the kernel caps one call at about 2 GiB. */
#define KCOPY_MAX	(1u << 30)

static const uint8_t kcopy_zeros[65536];

/* errno values that say "no kernel path here", not "this went wrong" */
static bool no_path(int err)
{
	return err == EINVAL || err == EXDEV || err == ENOSYS ||
	       err == EOPNOTSUPP || err == EBADF || err == ESPIPE ||
	       err == ENODEV;
}

void xip_kcopy_out_init(struct xip_kcopy_out *o, int fd)
{
	struct stat st;

	memset(o, 0, sizeof(*o));
	o->fd = fd;
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode))
		o->how = XIP_KCOPY_RANGE;
	else if (fstat(fd, &st) == 0 && S_ISFIFO(st.st_mode))
		o->how = XIP_KCOPY_SPLICE;
	else
		o->how = XIP_KCOPY_SENDFILE;
}

/* Through the mapping: page tables of the whole range in one call. */
static int out_mapped(struct xip_kcopy_out *o, const uint8_t *p, size_t len)
{
	long pg = sysconf(_SC_PAGESIZE);
	uintptr_t page = pg > 0 ? (uintptr_t)pg : 4096;
	uintptr_t start = (uintptr_t)p & ~(page - 1);

	if (len >= 16 * page)
		madvise((void *)start, (uintptr_t)p + len - start,
			MADV_POPULATE_READ);
	return xip_write_all(o->fd, p, len);
}

/* One kernel call; >0 bytes moved, 0 at the end of the segment file, <0. */
static ssize_t out_once(struct xip_kcopy_out *o, int sfd, loff_t *soff,
			size_t n)
{
	ssize_t r;

	do {
		switch (o->how) {
		case XIP_KCOPY_RANGE:
			r = copy_file_range(sfd, soff, o->fd, NULL, n, 0);
			break;
		case XIP_KCOPY_SPLICE:
			r = splice(sfd, soff, o->fd, NULL, n, SPLICE_F_MOVE);
			break;
		default:
			r = sendfile(o->fd, sfd, (off_t *)soff, n);
			break;
		}
	} while (r < 0 && errno == EINTR);
	return r < 0 ? -errno : r;
}

int xip_kcopy_out(struct xip_kcopy_out *o, struct xip_seg *seg,
		  uint64_t off, uint64_t len)
{
	void *p;
	int ret;

	ret = xip_seg_range(seg, off, len, &p);
	if (ret)
		return ret;
	while (len && o->how != XIP_KCOPY_MAPPED && seg->kind != XIP_SEG_DAX) {
		loff_t soff = (loff_t)off;
		size_t n = len < KCOPY_MAX ? (size_t)len : KCOPY_MAX;
		ssize_t r = out_once(o, seg->fd, &soff, n);

		if (r > 0) {
			off += (uint64_t)r;
			len -= (uint64_t)r;
			o->moved = true;
			continue;
		}
		if (r == 0)
			return -EIO;	/* the segment's file shrank */
		/*
		 * No such path for this pair: try the next one before any
		 * byte moved.  A failure after bytes moved is the output's.
		 */
		if (!no_path((int)-r) || (o->moved && o->how == XIP_KCOPY_SENDFILE))
			return (int)r;
		if (o->how == XIP_KCOPY_RANGE || o->how == XIP_KCOPY_SPLICE)
			o->how = XIP_KCOPY_SENDFILE;
		else
			o->how = XIP_KCOPY_MAPPED;
	}
	if (!len)
		return 0;
	int mapped = xip_seg_map(seg);

	if (mapped)
		return mapped;
	return out_mapped(o, (const uint8_t *)seg->base + off, (size_t)len);
}

int xip_kcopy_zeros(struct xip_kcopy_out *o, uint64_t len)
{
	while (len) {
		size_t n = len < sizeof(kcopy_zeros) ? (size_t)len :
			   sizeof(kcopy_zeros);
		int ret = xip_write_all(o->fd, kcopy_zeros, n);

		if (ret)
			return ret;
		len -= n;
	}
	return 0;
}

static bool range_ok(const struct xip_seg *seg, uint64_t off,
		     uint64_t len)
{
	return seg && !seg->gone && seg->fd >= 0 && off <= seg->size &&
	       len <= seg->size - off;
}

/* The part of [off, off + len) that write(2) could not take: mapped. */
static int map_copy(struct xip_seg *seg, uint64_t off, const void *buf,
		    uint64_t len)
{
	void *dst;

	if (xip_seg_range(seg, off, len, &dst))
		return -ERANGE;
	if (buf)
		memcpy(dst, buf, len);
	else
		memset(dst, 0, len);
	return 0;
}

int xip_seg_pwrite(struct xip_seg *seg, uint64_t off, const void *buf,
		   uint64_t len)
{
	int ret;

	if (!range_ok(seg, off, len))
		return -ERANGE;
	if (!seg->writable)
		return -EROFS;
	if (seg->kind == XIP_SEG_DAX)
		return map_copy(seg, off, buf, len);
	ret = xip_pwrite_all(seg->fd, buf, len, off);
	if (ret == -EINVAL)	/* hugetlbfs */
		return map_copy(seg, off, buf, len);
	return ret;
}

int xip_seg_pread(struct xip_seg *seg, uint64_t off, void *buf,
		  uint64_t len)
{
	void *src;

	if (!range_ok(seg, off, len))
		return -ERANGE;
	if (seg->fill) {
		int ret = xip_seg_fill_wait(seg, off, len);

		if (ret)
			return ret;
	}
	if (seg->kind != XIP_SEG_DAX) {
		ssize_t n = xip_pread_full(seg->fd, buf, len, off);

		if (n >= 0 && (uint64_t)n == len)
			return 0;
		if (n >= 0)
			return -EIO;	/* shorter than it was */
		if (n != -EINVAL)
			return (int)n;
	}
	if (xip_seg_range(seg, off, len, &src))
		return -ERANGE;
	memcpy(buf, src, len);
	return 0;
}

int xip_seg_zero(struct xip_seg *seg, uint64_t off, uint64_t len)
{
	if (!range_ok(seg, off, len))
		return -ERANGE;
	if (seg->kind == XIP_SEG_DAX)
		return seg->writable ? map_copy(seg, off, NULL, len) : -EROFS;
	while (len) {
		uint64_t n = len < sizeof(kcopy_zeros) ? len :
			     sizeof(kcopy_zeros);
		int ret = xip_seg_pwrite(seg, off, kcopy_zeros, n);

		if (ret)
			return ret;
		off += n;
		len -= n;
	}
	return 0;
}

/* pwrite from a bounce buffer: where copy_file_range(2) cannot go. */
static int copy_bounce(struct xip_seg *seg, uint64_t off, int fd,
		       uint64_t src_off, uint64_t len, uint64_t *done)
{
	size_t cap = len < (1u << 20) ? (size_t)len : (1u << 20);
	uint8_t *buf = malloc(cap ? cap : 1);
	int ret = 0;

	if (!buf)
		return -ENOMEM;
	while (len) {
		size_t want = len < cap ? (size_t)len : cap;
		ssize_t got = xip_pread_full(fd, buf, want, src_off);

		if (got < 0) {
			ret = (int)got;
			break;
		}
		if (got == 0)
			break;	/* the source ended early */
		ret = xip_seg_pwrite(seg, off, buf, (uint64_t)got);
		if (ret)
			break;
		off += (uint64_t)got;
		src_off += (uint64_t)got;
		len -= (uint64_t)got;
		*done += (uint64_t)got;
	}
	free(buf);
	return ret;
}

int xip_seg_copy_in(struct xip_seg *seg, uint64_t off, int fd,
		    uint64_t src_off, uint64_t len, uint64_t *done)
{
	*done = 0;
	if (!range_ok(seg, off, len))
		return -ERANGE;
	if (!seg->writable)
		return -EROFS;
	if (seg->kind == XIP_SEG_DAX || seg->kind == XIP_SEG_BLOCKDEV)
		return copy_bounce(seg, off, fd, src_off, len, done);
	while (len) {
		loff_t in = (loff_t)src_off, out = (loff_t)off;
		size_t n = len < KCOPY_MAX ? (size_t)len : KCOPY_MAX;
		ssize_t r = copy_file_range(fd, &in, seg->fd, &out, n, 0);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0 && no_path(errno))
			return copy_bounce(seg, off, fd, src_off, len, done);
		if (r < 0)
			return -errno;
		if (r == 0)
			return 0;	/* the source ended early */
		off += (uint64_t)r;
		src_off += (uint64_t)r;
		len -= (uint64_t)r;
		*done += (uint64_t)r;
	}
	return 0;
}

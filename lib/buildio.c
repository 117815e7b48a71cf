// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * mkfs: moving bytes into the target.  The image is written with pwrite(2)
 * and copy_file_range(2) on the segment's descriptor, not through its
 * mapping: populating a page-table entry of a shared file mapping costs
 * far more than copying the page, and a first touch of a hole in a sparse
 * file makes the kernel read ahead (allocate and clear) page-cache folios
 * around it.  An empty image of 256 GiB written through the mapping
 * cleared gigabytes of page cache; written with pwrite it costs what its
 * metadata is.  Segments write(2) cannot fill (device DAX, hugetlbfs) are
 * copied into the mapping instead.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <linux/fs.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "xip.h"

#define ZERO_CHUNK (1u << 20)
#define COPY_CHUNK (1u << 20)

static bool range_ok(const struct xip_segment *seg, uint64_t off,
		     uint64_t len)
{
	return seg && !seg->gone && seg->fd >= 0 && off <= seg->size &&
	       len <= seg->size - off;
}

/* The part of [off, off + len) that write(2) could not take: mapped. */
static int map_copy(struct xip_segment *seg, uint64_t off, const void *buf,
		    uint64_t len)
{
	void *dst;

	if (segment_range(seg, off, len, &dst))
		return -ERANGE;
	if (buf)
		memcpy(dst, buf, len);
	else
		memset(dst, 0, len);
	return 0;
}

int xip_build_pwrite(struct xip_segment *seg, uint64_t off, const void *buf,
		     uint64_t len)
{
	const uint8_t *p = buf;

	if (!range_ok(seg, off, len))
		return -ERANGE;
	if (!seg->writable)
		return -EROFS;
	if (seg->kind == XIP_SEG_DAX)
		return map_copy(seg, off, buf, len);
	while (len) {
		ssize_t n = pwrite(seg->fd, p, len, (off_t)off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EINVAL)	/* hugetlbfs */
			return map_copy(seg, off, p, len);
		if (n < 0)
			return -errno;
		if (n == 0)
			return -EIO;
		p += n;
		off += (uint64_t)n;
		len -= (uint64_t)n;
	}
	return 0;
}

int xip_build_pread(struct xip_segment *seg, uint64_t off, void *buf,
		    uint64_t len)
{
	uint8_t *p = buf;
	void *src;

	if (!range_ok(seg, off, len))
		return -ERANGE;
	while (len && seg->kind != XIP_SEG_DAX) {
		ssize_t n = pread(seg->fd, p, len, (off_t)off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EINVAL)
			break;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -EIO;	/* shorter than it was */
		p += n;
		off += (uint64_t)n;
		len -= (uint64_t)n;
	}
	if (!len)
		return 0;
	if (segment_range(seg, off, len, &src))
		return -ERANGE;
	memcpy(p, src, len);
	return 0;
}

/* pwrite from a bounce buffer: where copy_file_range(2) cannot go. */
static int copy_bounce(struct xip_segment *seg, uint64_t off, int fd,
		       uint64_t src_off, uint64_t len, uint64_t *done)
{
	size_t cap = len < COPY_CHUNK ? (size_t)len : COPY_CHUNK;
	uint8_t *buf = malloc(cap);
	int ret = 0;

	if (!buf)
		return -ENOMEM;
	while (len) {
		size_t want = len < cap ? (size_t)len : cap;
		ssize_t got = pread(fd, buf, want, (off_t)src_off);

		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0) {
			ret = -errno;
			break;
		}
		if (got == 0)
			break;	/* the source ended early */
		ret = xip_build_pwrite(seg, off, buf, (uint64_t)got);
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

int xip_build_copy_in(struct xip_segment *seg, uint64_t off, int fd,
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
		ssize_t n = copy_file_range(fd, &in, seg->fd, &out, len, 0);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EXDEV || errno == EINVAL ||
			      errno == ENOSYS || errno == EOPNOTSUPP ||
			      errno == EBADF))
			return copy_bounce(seg, off, fd, src_off, len, done);
		if (n < 0)
			return -errno;
		if (n == 0)
			return 0;	/* the source ended early */
		off += (uint64_t)n;
		src_off += (uint64_t)n;
		len -= (uint64_t)n;
		*done += (uint64_t)n;
	}
	return 0;
}

static int zero_writes(struct xip_segment *seg, uint64_t off, uint64_t len)
{
	size_t cap = len < ZERO_CHUNK ? (size_t)len : ZERO_CHUNK;
	void *zero = calloc(1, cap ? cap : 1);
	int ret = 0;

	if (!zero)
		return -ENOMEM;
	while (!ret && len) {
		uint64_t n = len < cap ? len : cap;

		ret = xip_build_pwrite(seg, off, zero, n);
		off += n;
		len -= n;
	}
	free(zero);
	return ret;
}

int xip_build_zero(struct xip_segment *seg, uint64_t off, uint64_t len)
{
	uint64_t range[2] = { off, len };

	if (!range_ok(seg, off, len))
		return -ERANGE;
	if (!seg->writable)
		return -EROFS;
	if (!len)
		return 0;
	switch (seg->kind) {
	case XIP_SEG_FILE:
	case XIP_SEG_SHM:
		/* a hole reads as zeros and holds nothing */
		if (fallocate(seg->fd, FALLOC_FL_PUNCH_HOLE |
			      FALLOC_FL_KEEP_SIZE, (off_t)off,
			      (off_t)len) == 0)
			return 0;
		if (fallocate(seg->fd, FALLOC_FL_ZERO_RANGE |
			      FALLOC_FL_KEEP_SIZE, (off_t)off,
			      (off_t)len) == 0)
			return 0;
		break;
	case XIP_SEG_BLOCKDEV:
		if (off % 512 || len % 512)
			break;
		/*
		 * Unmapped where the device guarantees zeros after it (a loop
		 * device punches a hole in its file); else its write-zeroes,
		 * which may allocate (BLKZEROOUT never unmaps); else the
		 * kernel writes zeros.
		 */
		if (fallocate(seg->fd, FALLOC_FL_PUNCH_HOLE |
			      FALLOC_FL_KEEP_SIZE, (off_t)off,
			      (off_t)len) == 0)
			return 0;
		if (ioctl(seg->fd, BLKZEROOUT, range) == 0)
			return 0;
		break;
	case XIP_SEG_DAX:
		return map_copy(seg, off, NULL, len);
	}
	return zero_writes(seg, off, len);
}

int xip_build_reserve(struct xip_segment *seg, uint64_t off, uint64_t len)
{
	if (!range_ok(seg, off, len))
		return -ERANGE;
	if (seg->kind != XIP_SEG_FILE || !len)
		return 0;
	return fallocate(seg->fd, FALLOC_FL_KEEP_SIZE, (off_t)off,
			 (off_t)len) ? -errno : 0;
}

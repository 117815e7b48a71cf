// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * mkfs: zeroing and reserving the target; bytes move into it with kcopy.c
 * (pwrite(2) and copy_file_range(2) on the segment's descriptor, not its
 * mapping): populating a page-table entry of a shared file mapping costs
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

#include "mkfs/mkfs_int.h"
#include "segment/xip_kcopy.h"
#include "segment/xip_segment.h"

static bool range_ok(const struct xip_seg *seg, uint64_t off,
		     uint64_t len)
{
	return seg && !seg->gone && seg->fd >= 0 && off <= seg->size &&
	       len <= seg->size - off;
}

int xip_build_zero(struct xip_seg *seg, uint64_t off, uint64_t len)
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
		break;
	}
	return xip_seg_zero(seg, off, len);
}

int xip_build_reserve(struct xip_seg *seg, uint64_t off, uint64_t len)
{
	if (!range_ok(seg, off, len))
		return -ERANGE;
	if (seg->kind != XIP_SEG_FILE || !len)
		return 0;
	return fallocate(seg->fd, FALLOC_FL_KEEP_SIZE, (off_t)off,
			 (off_t)len) ? -errno : 0;
}

// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Helpers shared by the fuzz targets: the input as a private segment.
 */
#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fuzz.h"

static int write_all(int fd, const uint8_t *data, size_t size)
{
	while (size) {
		ssize_t n = write(fd, data, size);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -EIO;
		data += n;
		size -= (size_t)n;
	}
	return 0;
}

int fuzz_open_segment(const uint8_t *data, size_t size, int flags,
		 struct xip_seg **segp)
{
	int fd, ret;

	*segp = NULL;
	fd = memfd_create("fuzz.img", MFD_CLOEXEC);
	if (fd < 0)
		return -errno;
	ret = write_all(fd, data, size);
	if (!ret)
		ret = xip_seg_open_fd(fd, "fuzz.img", flags, segp);
	close(fd);
	return ret;
}

int fuzz_open_image(const uint8_t *data, size_t size, int flags,
	       struct xip_image **imgp)
{
	struct xip_seg *seg;
	int ret;

	*imgp = NULL;
	ret = fuzz_open_segment(data, size,
			   (flags & XIP_IMG_WRITE) ? XIP_SEG_WRITE : 0, &seg);
	if (ret)
		return ret;
	/* the image takes the segment, also on failure */
	return xip_image_open_segment(seg, flags | XIP_IMG_NOLOCK, imgp);
}

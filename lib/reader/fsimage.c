// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * What the users of the library see of an open image: struct xip_image is
 * opaque outside it (reader_int.h).
 */
#include "reader/xip_image.h"
#include "reader/xip_reader.h"
#include "reader/reader_int.h"
#include "segment/xip_segment.h"

struct xip_seg *xip_image_seg(const struct xip_image *img)
{
	return img->seg;
}

unsigned int xip_image_block_size(const struct xip_image *img)
{
	return img->block_size;
}

// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Fuzz target "image": identify the input with libblkid, open it as an
 * image (with and without the group descriptor check, as info and verify
 * do) and describe it.
 */
#include <string.h>

#include "fuzz.h"
#include "engine/engine_int.h"

static void fuzz_identify(const uint8_t *data, size_t size)
{
	struct xip_seg *seg;
	char type[64];

	if (fuzz_open_segment(data, size, 0, &seg))
		return;
	xip_identify(seg, type, sizeof(type));
	xip_seg_close(seg);
}

static void fuzz_open_info(const uint8_t *data, size_t size, int flags)
{
	struct xip_image_info info;
	struct xip_image *img;
	char why[256];

	if (fuzz_open_image(data, size, flags, &img))
		return;
	xip_image_info(img, &info);
	xip_image_xip_capable(img, 4096, why, sizeof(why));
	xip_image_xip_capable(img, 65536, why, sizeof(why));
	xip_image_close(img);
}

FUZZ_TARGET(image)
{
	fuzz_identify(data, size);
	fuzz_open_info(data, size, 0);
	fuzz_open_info(data, size, XIP_IMG_FORCE);
	return 0;
}

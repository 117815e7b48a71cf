// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Fuzz target "verify": xip_check() on the input, the raw walk behind
 * `xiptool verify`.  The XIP page size checked against is the block size
 * the superblock claims (when sane), so that the contiguity and alignment
 * checks run on images of every block size.
 */
#include "fuzz.h"

static void progress(void *arg, const char *phase, uint64_t done,
		     uint64_t total)
{
	unsigned long *calls = arg;

	(*calls)++;
}

static unsigned int claimed_block_size(const uint8_t *data, size_t size)
{
	uint32_t log;

	if (size < 1024 + 28)
		return 0;
	log = data[1024 + 24] | data[1024 + 25] << 8 |
	      (uint32_t)data[1024 + 26] << 16 | (uint32_t)data[1024 + 27] << 24;
	return log <= 6 ? 1024u << log : 0;
}

FUZZ_TARGET(verify)
{
	struct xip_check_opts opts = { 0 };
	struct xip_check_report rep = { 0 };
	struct xip_seg *seg;
	unsigned long calls = 0;

	if (fuzz_open_segment(data, size, 0, &seg))
		return 0;
	opts.page_size = claimed_block_size(data, size);
	opts.progress = progress;
	opts.progress_arg = &calls;
	if (!xip_check(seg, &opts, &rep))
		xip_check_report_free(&rep);
	xip_seg_close(seg);
	return 0;
}

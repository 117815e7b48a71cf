// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The byte map of a file that the nbdkit plugin serves: the file's runs of
 * blocks (from the engine, xip_file_runs) cut into pieces of a request,
 * each inside one run of the segment or inside a hole.  The runs come from
 * an image, so they are checked against the segment once, before the
 * first request.
 */
#include <errno.h>
#include <inttypes.h>

#include "engine/xip_engine.h"
#include "engine/engine_int.h"
#include "util/xip_error.h"
#include "reader/xip_reader.h"

int xip_nbd_runs_check(const struct xip_run *runs, size_t nruns,
		       unsigned int bs, uint64_t seg_size, const char *what)
{
	uint64_t next = 0, seg_blocks;

	if (!bs)
		return xip_error(-EINVAL, "%s: block size 0", what);
	seg_blocks = seg_size / bs;
	for (size_t i = 0; i < nruns; i++) {
		const struct xip_run *r = &runs[i];

		if (!r->len || r->lblk < next ||
		    r->lblk > UINT64_MAX / bs - r->len)
			return xip_error(-EUCLEAN,
					 "%s: block map out of order at file block %" PRIu64,
					 what, r->lblk);
		if (r->pblk >= seg_blocks || r->len > seg_blocks - r->pblk)
			return xip_error(-EUCLEAN,
					 "%s: blocks %" PRIu64 "-%" PRIu64
					 " lie outside the image (%" PRIu64 " blocks)",
					 what, (uint64_t)r->pblk,
					 (uint64_t)r->pblk + r->len - 1, seg_blocks);
		next = r->lblk + r->len;
	}
	return 0;
}

/* The first run that ends after file block @lblk (nruns when none). */
static size_t run_find(const struct xip_run *runs, size_t nruns,
		       uint64_t lblk)
{
	size_t lo = 0, hi = nruns;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (runs[mid].lblk + runs[mid].len <= lblk)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

void xip_nbd_piece(const struct xip_run *runs, size_t nruns,
		   unsigned int bs, uint64_t off, uint64_t len,
		   struct xip_nbd_piece *p)
{
	uint64_t lblk = off / bs, start, end;
	size_t i = run_find(runs, nruns, lblk);

	if (i == nruns || runs[i].lblk > lblk) {
		/* a hole up to the next run */
		p->hole = true;
		p->seg_off = 0;
		p->len = len;
		if (i < nruns) {
			start = runs[i].lblk * bs;
			if (start - off < len)
				p->len = start - off;
		}
		return;
	}
	end = (runs[i].lblk + runs[i].len) * bs;
	p->hole = false;
	p->seg_off = (runs[i].pblk + (lblk - runs[i].lblk)) * bs + off % bs;
	p->len = end - off < len ? end - off : len;
}

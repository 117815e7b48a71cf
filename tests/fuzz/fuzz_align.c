// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Fuzz target "align": align-check's analysis on a fuzzed image.  Walks
 * every regular file as `xiptool align-check IMAGE` does and analyses each
 * for XIP readiness, with the host's page size and with 16 KiB pages, with
 * and without the 2 MiB (--huge) checks.
 *
 * Oracle beyond the sanitizers: a file reported ready has no reasons, a
 * file not ready has at least one, and the page counts add up.
 */
#include <stdio.h>
#include <stdlib.h>

#include "fuzz.h"

struct walk {
	struct xip_image *img;
	unsigned int files;
};

static void check_result(const char *path, const struct xip_align_file *f)
{
	if (!f->elf)
		return;
	if (f->ready != (f->reasons == NULL) ||
	    f->ready != (f->nreasons == 0)) {
		fprintf(stderr, "fuzz: %s: verdict and reasons disagree\n", path);
		abort();
	}
	for (size_t i = 0; i < f->nsegs; i++) {
		const struct xip_align_seg *s = &f->segs[i];

		if (s->shared > s->pages || s->copied > s->pages) {
			fprintf(stderr, "fuzz: %s: segment %u counts more pages than it has\n",
				path, s->index);
			abort();
		}
	}
}

static int visit(void *arg, const char *path, ext2_ino_t ino)
{
	static const struct xip_align_opts opts[] = {
		{ 0, false }, { 0, true }, { 16384, true },
	};
	struct walk *w = arg;

	if (++w->files > FUZZ_MAX_FILES)
		return 1;
	for (size_t i = 0; i < sizeof(opts) / sizeof(opts[0]); i++) {
		struct xip_align_file f;

		if (!xip_align_check(w->img, ino, path, &opts[i], &f))
			check_result(path, &f);
		xip_align_file_free(&f);
	}
	return 0;
}

FUZZ_TARGET(align)
{
	struct walk w = { NULL, 0 };

	if (fuzz_open_image(data, size, 0, &w.img))
		return 0;
	xip_walk_files(w.img, visit, &w);
	xip_image_close(w.img);
	return 0;
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The in-memory tree of mkfs for the fuzz targets of its sources
 * (fuzz_tar.c, fuzz_oci.c).
 */
#ifndef XIP_FUZZ_BUILD_H
#define XIP_FUZZ_BUILD_H

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>
#include <string.h>
#include <sys/mman.h>

#include "mkfs/mkfs_int.h"

/*
 * A tree as xip_build() starts it, of @bs-byte blocks, its spool (the
 * archives' file data) a memfd: one for the process, emptied after each
 * input by fuzz_tree_free() (xip_btree_free() closes a duplicate), so
 * that nothing goes to any disk and nothing is left after the input.
 */
static int fuzz_spool_fd = -1;

static inline int fuzz_tree_init(struct btree *t, unsigned int bs)
{
	memset(t, 0, sizeof(*t));
	t->bs = bs;
	t->root_fd = -1;
	t->now = 1700000000;
	t->spool_fd = -1;
	if (fuzz_spool_fd < 0)
		fuzz_spool_fd = memfd_create("fuzz.spool", MFD_CLOEXEC);
	if (fuzz_spool_fd < 0)
		return -errno;
	t->spool_fd = fcntl(fuzz_spool_fd, F_DUPFD_CLOEXEC, 3);
	return t->spool_fd < 0 ? -errno : 0;
}

static inline void fuzz_tree_free(struct btree *t)
{
	xip_btree_free(t);
	if (fuzz_spool_fd >= 0 && ftruncate(fuzz_spool_fd, 0) < 0)
		abort();
}

#endif

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The check room: verify, an independent reader of the raw structures.
 * Part of the public API: include "xip.h", which includes this header.
 */
#ifndef XIP_CHECK_H
#define XIP_CHECK_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "segment/xip_segment.h"
#include "verity/xip_verity.h"

/* ------------------------------------------------------------------ */
/* Verify (check.c, check_tree.c)                                      */
/* ------------------------------------------------------------------ */

enum xip_check_severity {
	XIP_CHECK_ERROR,	/* the image is damaged or not XIP-ready */
	XIP_CHECK_WARNING,	/* worth knowing; does not fail the check */
};

struct xip_finding {
	enum xip_check_severity severity;
	/* what is concerned: "superblock", "group", "inode", "directory",
	 * "block", "bitmap", "xip" or "content" (--against) */
	const char *object;
	uint32_t ino;		/* the inode concerned, 0 when none */
	uint64_t block;		/* the block concerned, 0 when none */
	char *path;		/* the inode's path in the image, or NULL */
	char *msg;		/* the whole message, one line, no newline */
};

struct xip_check_opts {
	unsigned int page_size;	/* XIP page size, 0: the host's */
	const char *against;	/* a source tree to compare with, or NULL */
	/* called now and then during long walks; phase NULL: done */
	void (*progress)(void *arg, const char *phase, uint64_t done,
			 uint64_t total);
	void *progress_arg;
	/* check the dm-verity tree against this root hash too */
	const uint8_t *root_hash;
	size_t root_hash_len;
};

struct xip_check_report {
	struct xip_finding *findings;
	size_t nfindings;
	uint64_t errors, warnings;	/* counting those not listed */
	uint64_t unlisted;		/* findings beyond the list's limit */
	bool walked;			/* the whole structure was walked */
	unsigned int page_size;		/* the page size checked against */
	bool pmem_capable;		/* xip_pmem_capable() */
	char pmem_reason[256];		/* why not, when !pmem_capable */
	uint64_t inodes_used, blocks_used, files;
	/* with opts->root_hash: the tree and whether every block matched */
	bool verity_checked, verity_ok;
	struct xip_verity_info verity;
};

/*
 * Verify the ext2 image on @seg from its raw bytes: superblock, group
 * descriptors, inodes and block maps, directories, connectivity, link
 * counts, bitmaps and free counts, XIP capability and contiguity, and with
 * opts->against a comparison with a source tree.  Returns 0 when the check
 * ran (problems are in @rep: errors > 0; free it with
 * xip_check_report_free), a negative errno when the image cannot be read
 * at all (not ext2, unsupported features, no memory): then @rep is empty
 * and holds nothing to free, whatever the walk had found before.
 * Linear in the image size; reads only inside the segment.
 */
int xip_check(struct xip_seg *seg, const struct xip_check_opts *opts,
	      struct xip_check_report *rep);
void xip_check_report_free(struct xip_check_report *rep);

#endif /* XIP_CHECK_H */

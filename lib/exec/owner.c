// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Who holds a block of an image: a regular file (by its path), the file
 * system's metadata, or free space.  For reports about a bad block (a
 * verity mismatch): the walk is xip_walk_files' and the block runs the
 * engine's (xip_file_runs), whose block numbers are validated; what no
 * file holds is metadata when the block bitmap marks it in use
 * (superblocks, descriptors, bitmaps, inode tables, directories,
 * indirect blocks), else free space.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exec/xip_exec.h"
#include "exec/exec_int.h"
#include "util/xip_error.h"
#include "util/xip_ext2.h"
#include "segment/xip_segment.h"
#include "verity/xip_verity.h"
#include "reader/xip_image.h"
#include "reader/xip_reader.h"
#include "engine/xip_engine.h"

struct owner_walk {
	struct xip_image *img;
	uint64_t blk;
	char *buf;
	size_t len;
	bool found;
};

static int owner_file(void *arg, const char *path, ext2_ino_t ino)
{
	struct owner_walk *w = arg;
	struct xip_run *runs = NULL;
	size_t n = 0;

	if (xip_file_runs(w->img, ino, &runs, &n))
		return 0;
	for (size_t i = 0; i < n; i++) {
		if (w->blk >= runs[i].pblk &&
		    w->blk - runs[i].pblk < runs[i].len) {
			snprintf(w->buf, w->len, "%s", path);
			w->found = true;
			break;
		}
	}
	free(runs);
	return w->found ? 1 : 0;
}

int xip_block_owner(struct xip_seg *seg, uint64_t blk, char *buf, size_t len)
{
	struct owner_walk w = { .blk = blk, .buf = buf, .len = len };
	struct xip_image *img;
	struct xip_seg *dup;
	int ret;

	snprintf(buf, len, "metadata");
	/* a second segment on the same file: the image takes it over */
	ret = xip_seg_open_fd(seg->fd, seg->path, 0, &dup);
	if (!ret) {
		dup->data_size = seg->data_size;
		ret = xip_image_open_segment(dup, XIP_IMG_NOLOCK |
					     XIP_IMG_FORCE, &img);
	}
	if (ret) {
		/* the superblock or the descriptors themselves */
		xip_error_clear();
		return 0;
	}
	w.img = img;
	if (blk >= ext2fs_blocks_count(img->fs->super)) {
		snprintf(buf, len, "verity tree");
	} else if (xip_walk_files(img, owner_file, &w) >= 0 && !w.found &&
		   !ext2fs_read_block_bitmap(img->fs) &&
		   !ext2fs_test_block_bitmap2(img->fs->block_map, blk)) {
		snprintf(buf, len, "free space");
	}
	xip_image_close(img);
	xip_error_clear();
	return 0;
}

int xip_root_hash_check(struct xip_seg *seg, const uint8_t *root,
			size_t root_len, struct xip_root_hash_report *r)
{
	int ret;

	memset(r, 0, sizeof(*r));
	ret = xip_seg_map(seg);
	if (ret)
		return ret == -ENODEV ?
			       xip_error(-EINVAL, "%s: not mapped", seg->path) :
			       ret;
	ret = xip_verity_check(seg->base, seg->data_size, root, root_len, 0,
			       &r->info, &r->bad);
	return xip_root_hash_explain(seg, ret, r);
}

int xip_root_hash_explain(struct xip_seg *seg, int ret,
			  struct xip_root_hash_report *r)
{
	char msg[XIP_ERRMSG_MAX];

	/* -ENOSYS: libcrypto could not be loaded, nothing was checked */
	if (!ret || ret == -ENOMEM || ret == -EINVAL || ret == -ENOSYS)
		return ret;
	snprintf(msg, sizeof(msg), "%s", xip_errmsg());
	switch (r->bad.where) {
	case XIP_VERITY_DATA:
		xip_block_owner(seg, r->bad.block, r->owner,
				sizeof(r->owner));
		return xip_error(ret, "block %" PRIu64 " (%s): does not match its hash in the verity tree",
				 r->bad.block, r->owner);
	case XIP_VERITY_HASH:
	case XIP_VERITY_ROOT:
		snprintf(r->owner, sizeof(r->owner), "verity tree");
		break;
	default:
		snprintf(r->owner, sizeof(r->owner), "verity superblock");
		break;
	}
	if (r->bad.where == XIP_VERITY_MISSING)
		return xip_error(ret, "no usable verity tree: %s", msg);
	return xip_error(ret, "%s", msg);
}

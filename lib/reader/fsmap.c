// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The libc-only reader (reader_int.h): the block map of one inode, walked for
 * lookups.  Direct, indirect, double and triple indirect block maps, and
 * extent trees, which are walked here by this file's own code, not
 * libext2fs's: each node's header (magic, entry count within the node's
 * room, depth), leaves in file order, a bound on the steps of the walk;
 * every index block checked as a data block of the image before a pointer
 * is formed from it, every leaf's range checked against the image and its
 * metadata.  Unwritten extents read as holes.  The leaves are read once,
 * when the map is opened (xip_map_ext_load), and again after each change
 * a writer makes through libext2fs (lib/engine/page.c).  Also xip_bmap and the
 * runs of a file.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reader/xip_image.h"
#include "reader/xip_reader.h"
#include "reader/reader_int.h"
#include "util/xip_error.h"
#include "util/xip_ext2.h"
#include "util/xip_util.h"

/* ---- extent-mapped files ------------------------------------------------ */

static int ext_add(struct xip_map *m, size_t *cap, uint64_t lblk,
		   uint64_t pblk, uint32_t len)
{
	struct xip_fs *fs = m->img->rd;
	struct xip_run *r;
	bool meta;
	int ret;

	if (m->next && lblk < m->ext[m->next - 1].lblk + m->ext[m->next - 1].len)
		return xip_error(-EUCLEAN,
				 "inode %u: extents out of order at file block %llu",
				 m->ino, U64(lblk));
	if (pblk < fs->first_data_block || pblk >= fs->blocks ||
	    len > fs->blocks - pblk)
		return xip_error(-EUCLEAN,
				 "inode %u: extent of %u blocks at block %llu (file block %llu) beyond end of image",
				 m->ino, len, U64(pblk), U64(lblk));
	ret = xip_fs_meta_overlaps(fs, pblk, len, &meta);
	if (ret)
		return ret;
	if (meta)
		return xip_error(-EUCLEAN,
				 "inode %u: extent at block %llu (file block %llu) overlaps file system metadata",
				 m->ino, U64(pblk), U64(lblk));
	if (xip_grow((void **)&m->ext, cap, m->next + 1, sizeof(*r)))
		return xip_error(-ENOMEM, "out of memory");
	r = &m->ext[m->next++];
	r->lblk = lblk;
	r->pblk = pblk;
	r->len = len;
	return 0;
}

struct ext_walk {
	struct xip_map *m;
	size_t cap;
	uint64_t steps, limit;
};

static int ext_bad(struct xip_map *m, const char *why, uint64_t blk)
{
	if (blk)
		return xip_error(-EUCLEAN,
				 "inode %u: extent tree: %s (node at block %llu)",
				 m->ino, why, U64(blk));
	return xip_error(-EUCLEAN, "inode %u: extent tree: %s (in the inode)",
			 m->ino, why);
}

/*
 * One node of the tree, @size bytes at @p (the inode's i_block or a tree
 * block @blk), expected at depth @depth (-1: the root, any depth).
 */
static int ext_node(struct ext_walk *w, const uint8_t *p, size_t size,
		    uint64_t blk, int depth)
{
	struct xip_map *m = w->m;
	uint16_t magic = le16(p), entries = le16(p + 2), max = le16(p + 4);
	uint16_t d = le16(p + 6);
	size_t cap = (size - 12) / 12;
	int ret;

	if (magic != EXT_HDR_MAGIC)
		return ext_bad(m, "bad header magic", blk);
	if (max == 0 || max > cap || entries > max)
		return ext_bad(m, "entry counts out of bounds", blk);
	if (d > EXT_DEPTH_MAX || (depth >= 0 && d != depth))
		return ext_bad(m, "bad depth", blk);
	for (unsigned int i = 0; i < entries; i++) {
		const uint8_t *e = p + 12 + 12 * (size_t)i;

		if (++w->steps > w->limit)
			return xip_error(-EUCLEAN, "inode %u: extent tree loops",
					 m->ino);
		if (d == 0) {
			uint32_t len = le16(e + 4);
			uint64_t pblk = le32(e + 8) |
					((uint64_t)le16(e + 6) << 32);

			if (len > EXT_LEN_INIT_MAX) {
				m->uninit = true; /* unwritten: reads as a hole */
				continue;
			}
			if (!len)
				continue;
			ret = ext_add(m, &w->cap, le32(e), pblk, len);
		} else {
			uint64_t child = le32(e + 4) |
					 ((uint64_t)le16(e + 8) << 32);
			void *c;

			ret = xip_engine_check_block(m->img, m->ino, child,
						     "extent tree block",
						     le32(e));
			if (!ret)
				ret = xip_engine_block_ptr(m->img, m->ino,
							   child, &c);
			if (!ret)
				ret = ext_node(w, c, m->img->block_size, child,
					       d - 1);
		}
		if (ret)
			return ret;
	}
	return 0;
}

/* Read the leaves of the extent tree (from the segment) once. */
int xip_map_ext_load(struct xip_map *m)
{
	struct ext_walk w = { m, m->ext_cap, 0, m->img->rd->blocks * 4 + 64 };
	int ret;

	m->next = 0;
	m->uninit = false;
	/* all of i_block zero: an empty tree not yet written (libext2fs) */
	for (size_t i = 0; i < EXT2_N_BLOCKS; i++)
		if (m->inode.i_block[i])
			goto walk;
	return 0;
walk:
	ret = ext_node(&w, (const uint8_t *)m->inode.i_block,
		       sizeof(m->inode.i_block), 0, -1);
	m->ext_cap = w.cap;
	return ret;
}

static int ext_map(struct xip_map *m, uint64_t lblk, blk64_t *pblk,
		   uint64_t *count)
{
	size_t lo = 0, hi = m->next;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct xip_run *r = &m->ext[mid];

		if (lblk < r->lblk) {
			hi = mid;
		} else if (lblk >= r->lblk + r->len) {
			lo = mid + 1;
		} else {
			*pblk = r->pblk + (lblk - r->lblk);
			*count = r->len - (lblk - r->lblk);
			return 0;
		}
	}
	/* a hole up to the next extent */
	*pblk = 0;
	*count = lo < m->next ? m->ext[lo].lblk - lblk :
				xip_map_limit(m) - lblk;
	if (!*count)
		*count = 1;
	return 0;
}

/* ---- block-mapped files ------------------------------------------------- */

uint64_t xip_map_limit(const struct xip_map *m)
{
	uint64_t a = m->apb, n;

	if (m->extents || m->nomap)
		return 1ULL << 32;
	n = EXT2_NDIR_BLOCKS + a + a * a + a * a * a;
	return n < (1ULL << 32) ? n : 1ULL << 32;
}

int xip_map_ind_ptr(struct xip_map *m, int slot, blk64_t blk, uint64_t lblk,
		   uint32_t **ptr)
{
	int ret;

	if (m->cache[slot].ptr && m->cache[slot].blk == blk) {
		*ptr = m->cache[slot].ptr;
		return 0;
	}
	ret = xip_engine_check_block(m->img, m->ino, blk, "indirect block",
				     lblk);
	if (!ret)
		ret = xip_engine_block_ptr(m->img, m->ino, blk, (void **)ptr);
	if (ret)
		return ret;
	m->cache[slot].blk = blk;
	m->cache[slot].ptr = *ptr;
	return 0;
}

/*
 * How many entries from @slot on continue the physical run of @blk (at
 * most @max); each of them is validated too, through the window cache.
 */
static int ind_run(struct xip_map *m, const uint32_t *slot, bool le,
		   uint64_t max, blk64_t blk, uint64_t lblk, uint64_t *count)
{
	uint64_t k = 1, good;
	int ret;

	while (k < max && (le ? le32toh(slot[k]) : slot[k]) == blk + k)
		k++;
	ret = xip_engine_check_run(m->img, m->ino, blk, k, lblk, &good);
	if (ret && !good)
		return ret;
	/* a bad one is reported when it is reached */
	*count = good;
	return 0;
}

static int ind_map(struct xip_map *m, uint64_t lblk, blk64_t *pblk,
		   uint64_t *count)
{
	uint64_t apb = m->apb, rel, span;
	unsigned int depth = 1;
	uint32_t *p;
	blk64_t blk;
	int ret;

	*pblk = 0;
	*count = 1;
	if (lblk < EXT2_NDIR_BLOCKS) {
		blk = m->inode.i_block[lblk];
		if (!blk)
			return 0;
		ret = ind_run(m, &m->inode.i_block[lblk], false,
			      EXT2_NDIR_BLOCKS - lblk, blk, lblk, count);
		if (!ret)
			*pblk = blk;
		return ret;
	}
	rel = lblk - EXT2_NDIR_BLOCKS;
	span = apb;
	while (rel >= span) {
		rel -= span;
		if (++depth > 3)
			return xip_error(-EFBIG,
					 "inode %u: file block %llu beyond the largest a block map holds",
					 m->ino, U64(lblk));
		span *= apb;
	}
	blk = m->inode.i_block[EXT2_IND_BLOCK + depth - 1];
	p = NULL;
	for (unsigned int level = 0; level < depth; level++) {
		if (!blk) {
			*count = span - rel;
			return 0;
		}
		ret = xip_map_ind_ptr(m, (int)(depth * (depth - 1) / 2 + level),
				      blk,
			      lblk, &p);
		if (ret)
			return ret;
		span /= apb;
		blk = le32toh(p[rel / span]);
		rel %= span;
	}
	if (!blk)
		return 0;
	/* p is the last indirect block; the run stays inside it */
	rel = (lblk - EXT2_NDIR_BLOCKS) % apb;
	ret = ind_run(m, &p[rel], true, apb - rel, blk, lblk, count);
	if (!ret)
		*pblk = blk;
	return ret;
}

/* ---- the map of one inode ----------------------------------------------- */

static int map_check_flags(struct xip_map *m)
{
	uint32_t incompat = m->img->rd->feat_incompat;
	uint32_t fl = m->inode.i_flags;

	if (fl & EXT4_INLINE_DATA_FL) {
		if (!(incompat & EXT4_FEATURE_INCOMPAT_INLINE_DATA))
			return xip_error(-EUCLEAN,
					 "inode %u: inline-data flag set but the image lacks the inline_data feature",
					 m->ino);
		return xip_error(-EOPNOTSUPP,
				 "inode %u: inline data is not supported",
				 m->ino);
	}
	if (fl & EXT4_EXTENTS_FL) {
		if (!(incompat & EXT3_FEATURE_INCOMPAT_EXTENTS))
			return xip_error(-EUCLEAN,
					 "inode %u: extents flag set but the image lacks the extents feature",
					 m->ino);
		m->extents = true;
	}
	return 0;
}

int xip_map_open(struct xip_image *img, ext2_ino_t ino, struct xip_map *m)
{
	uint16_t mode;
	int ret;

	memset(m, 0, sizeof(*m));
	m->img = img;
	m->ino = ino;
	m->apb = img->block_size / sizeof(uint32_t);
	ret = xip_inode_read_checked(img, ino, &m->inode);
	if (ret)
		return ret;
	mode = m->inode.i_mode;
	if (!LINUX_S_ISREG(mode) && !LINUX_S_ISDIR(mode) &&
	    !LINUX_S_ISLNK(mode)) {
		/* devices keep their numbers in i_block: nothing to map */
		m->nomap = true;
		return 0;
	}
	ret = map_check_flags(m);
	if (ret)
		return ret;
	if (LINUX_S_ISLNK(mode) && !m->extents &&
	    xip_fs_fast_symlink(&m->inode)) {
		m->nomap = true;
		return 0;
	}
	if (m->extents) {
		ret = xip_map_ext_load(m);
		if (ret)
			xip_map_close(m);
	}
	return ret;
}

void xip_map_close(struct xip_map *m)
{
	/* uncommitted: the old tree is still linked, nothing is freed */
	free(m->defer);
	m->defer = NULL;
	m->ndefer = 0;
	free(m->fresh);
	m->fresh = NULL;
	m->nfresh = 0;
	m->fresh_cap = 0;
	free(m->ext);
	m->ext = NULL;
	m->next = 0;
	m->ext_cap = 0;
}

int xip_map_block(struct xip_map *m, uint64_t lblk, blk64_t *pblk,
		  uint64_t *count)
{
	uint64_t limit = xip_map_limit(m);

	*pblk = 0;
	*count = 1;
	if (lblk >= limit)
		return xip_error(-EFBIG,
				 "inode %u: file block %llu beyond the largest the image can map",
				 m->ino, U64(lblk));
	if (m->nomap) {
		*count = limit - lblk;
		return 0;
	}
	if (m->extents)
		return ext_map(m, lblk, pblk, count);
	return ind_map(m, lblk, pblk, count);
}

/* ---- the public read engine: bmap and runs ----------------------------- */

int xip_bmap(struct xip_image *img, ext2_ino_t ino, uint64_t pgoff,
	     blk64_t *pblk)
{
	struct xip_map m;
	uint64_t n;
	int ret;

	*pblk = 0;
	ret = xip_map_open(img, ino, &m);
	if (ret)
		return ret;
	ret = xip_map_block(&m, pgoff, pblk, &n);
	xip_map_close(&m);
	return ret;
}

static int runs_add(struct xip_run **runs, size_t *n, size_t *cap,
		    uint64_t lblk, blk64_t pblk, uint64_t len)
{
	struct xip_run *r;

	if (*n) {
		r = &(*runs)[*n - 1];
		if (r->lblk + r->len == lblk && r->pblk + r->len == pblk) {
			r->len += len;
			return 0;
		}
	}
	if (xip_grow((void **)runs, cap, *n + 1, sizeof(*r)))
		return xip_error(-ENOMEM, "out of memory");
	r = &(*runs)[(*n)++];
	r->lblk = lblk;
	r->pblk = pblk;
	r->len = len;
	return 0;
}

int xip_map_runs(struct xip_map *m, uint64_t end, struct xip_run **runs,
		 size_t *nruns)
{
	uint64_t lblk = 0, n, mapped = 0;
	uint64_t most = m->img->rd->blocks;
	size_t cap = 0;
	blk64_t pblk;
	int ret = 0;

	*runs = NULL;
	*nruns = 0;
	if (end > xip_map_limit(m))
		end = xip_map_limit(m);
	while (lblk < end && !ret) {
		ret = xip_map_block(m, lblk, &pblk, &n);
		if (ret)
			break;
		if (n > end - lblk)
			n = end - lblk;
		/*
		 * A file cannot own more blocks than the image has: a map
		 * that repeats blocks would otherwise make runs without
		 * bound.
		 */
		if (pblk && (mapped += n) > most)
			ret = xip_error(-EUCLEAN,
					"inode %u: maps more blocks than the image holds (%llu)",
					m->ino, U64(most));
		else if (pblk)
			ret = runs_add(runs, nruns, &cap, lblk, pblk, n);
		lblk += n;
	}
	if (ret) {
		free(*runs);
		*runs = NULL;
		*nruns = 0;
	}
	return ret;
}

int xip_file_runs(struct xip_image *img, ext2_ino_t ino,
		  struct xip_run **runs, size_t *nruns)
{
	uint64_t bs = img->block_size, size;
	struct xip_map m;
	int ret;

	*runs = NULL;
	*nruns = 0;
	ret = xip_map_open(img, ino, &m);
	if (ret)
		return ret;
	size = EXT2_I_SIZE(&m.inode);
	ret = xip_map_runs(&m, div_round_up(size, bs), runs, nruns);
	xip_map_close(&m);
	return ret;
}

int xip_file_runs_path(struct xip_image *img, const char *path,
		       struct ext2_inode_large *in, struct xip_run **runs,
		       size_t *nruns)
{
	ext2_ino_t ino;
	int ret;

	*runs = NULL;
	*nruns = 0;
	ret = xip_lookup(img, path, 0, &ino);
	if (!ret)
		ret = xip_read_inode(img, ino, in);
	if (!ret && !LINUX_S_ISREG(in->i_mode))
		ret = xip_error(-EINVAL, "%s: not a regular file", path);
	if (!ret)
		ret = xip_file_runs(img, ino, runs, nruns);
	return ret;
}

// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * get_xip_page: file page -> block -> pointer into the segment.
 *
 * The block map of an inode is walked by the reader (fsmap.c), with its
 * own code, not by libext2fs: every block number, whether it comes from
 * the inode, out of an indirect block or out of an extent tree, is checked
 * against the block count, against the file system's own metadata and
 * (through direct_access) against the segment before a pointer is formed
 * from it.  This file holds the writers' side: allocation, copy on write,
 * commits and freeing.  Block maps are changed here; extent trees are
 * changed by libext2fs (ext2fs_bmap2() to link a block, ext2fs_punch() to
 * truncate), on a tree the reader walked and accepted when the map was
 * opened, and the reader walks the tree again after each change.
 */
#include <endian.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "engine/xip_engine.h"
#include "engine/engine_int.h"
#include "util/xip_debug.h"
#include "util/xip_error.h"
#include "util/xip_ext2.h"
#include "util/xip_util.h"
#include "segment/xip_kcopy.h"
#include "segment/xip_segment.h"
#include "reader/xip_image.h"
#include "reader/xip_reader.h"


/* ---- per-image state ---------------------------------------------------- */

int xip_engine_get(struct xip_image *img, struct xip_engine **engp)
{
	struct xip_engine *e = img->engine;

	if (!e) {
		e = calloc(1, sizeof(*e));
		if (!e)
			return xip_error(-ENOMEM, "out of memory");
		img->engine = e;
	}
	*engp = e;
	return 0;
}

void xip_engine_free(struct xip_image *img)
{
	if (!img || !img->engine)
		return;
	free(img->engine);
	img->engine = NULL;
}

/* ---- writers: on-disk bitmaps ahead of the links ------------------------ */

/* Set bit @bit of the bitmap block @bmblk in the segment itself. */
static void disk_bit_set(struct xip_image *img, blk64_t bmblk, uint64_t bit)
{
	uint8_t *p;

	if (bit / 8 >= img->block_size || bmblk > UINT64_MAX / img->block_size ||
	    xip_seg_range(img->seg, bmblk * img->block_size + bit / 8, 1,
			      (void **)&p))
		return;		/* ext2fs_check_desc() vouched for the rest */
	*p |= (uint8_t)(1u << (bit & 7));
}

static void engine_mark_block(struct xip_image *img, blk64_t blk)
{
	ext2_filsys fs = img->fs;
	dgrp_t g = ext2fs_group_of_blk2(fs, blk);

	disk_bit_set(img, ext2fs_block_bitmap_loc(fs, g),
		     EXT2FS_B2C(fs, blk) -
		     EXT2FS_B2C(fs, ext2fs_group_first_block2(fs, g)));
}

void xip_engine_mark_inode(struct xip_image *img, ext2_ino_t ino)
{
	ext2_filsys fs = img->fs;
	dgrp_t g = (ino - 1) / fs->super->s_inodes_per_group;

	disk_bit_set(img, ext2fs_inode_bitmap_loc(fs, g),
		     (ino - 1) % fs->super->s_inodes_per_group);
}

/* Every allocation, ours or libext2fs' own (directories, extent blocks). */
static void undo_hook(struct xip_image *img, blk64_t blk, int inuse);

static void alloc_stats_hook(ext2_filsys fs, blk64_t blk, int inuse)
{
	if (!fs->priv_data)
		return;
	if (inuse > 0)
		engine_mark_block(fs->priv_data, blk);
	undo_hook(fs->priv_data, blk, inuse);
}

static void alloc_range_hook(ext2_filsys fs, blk64_t blk, blk_t num,
			     int inuse)
{
	for (blk_t i = 0; fs->priv_data && i < num; i++) {
		if (inuse > 0)
			engine_mark_block(fs->priv_data, blk + i);
		undo_hook(fs->priv_data, blk + i, inuse);
	}
}

int xip_engine_load_bitmaps(struct xip_image *img)
{
	struct xip_engine *e = NULL;
	errcode_t err;
	int ret;

	ret = xip_engine_get(img, &e);
	if (ret || e->bitmaps_loaded)
		return ret;
	if (img->writable) {
		ret = xip_image_begin_change(img);
		if (ret)
			return ret;
	}
	err = ext2fs_read_bitmaps(img->fs);
	if (err)
		return xip_error_ext2(err, "%s: reading bitmaps", img->seg->path);
	if (img->writable) {
		ext2fs_set_block_alloc_stats_callback(img->fs, alloc_stats_hook,
						      NULL);
		ext2fs_set_block_alloc_stats_range_callback(img->fs,
							    alloc_range_hook,
							    NULL);
	}
	e->bitmaps_loaded = true;
	return 0;
}

/* ---- get_xip_page: the reader's map, a new block when asked ----------- */

int xip_get_page(struct xip_image *img, ext2_ino_t ino, uint64_t pgoff,
		 bool create, void **ptr)
{
	struct xip_map m;
	blk64_t pblk;
	uint64_t n;
	int ret;

	*ptr = NULL;
	ret = xip_map_open(img, ino, &m);
	if (ret)
		return ret;
	ret = xip_map_block(&m, pgoff, &pblk, &n);
	if (!ret && !pblk) {
		if (!create)
			ret = xip_error(-ENODATA, "inode %u: file page %llu is a hole",
					ino, U64(pgoff));
		else
			ret = xip_map_alloc(&m, pgoff, 0, NULL, &pblk);
		if (!ret && m.dirty)
			ret = xip_map_write_inode(&m);
	}
	if (!ret)
		ret = xip_engine_block_ptr(img, ino, pblk, ptr);
	xip_map_close(&m);
	return ret;
}

/* ---- the undo log of a write -------------------------------------------- */

/*
 * Every block allocated while a write runs, by us or by libext2fs (extent
 * blocks), is logged; one given back at once leaves the log.
 */
static void undo_hook(struct xip_image *img, blk64_t blk, int inuse)
{
	struct xip_undo *u = img->engine ? img->engine->undo : NULL;

	if (!u)
		return;
	if (inuse > 0) {
		if (!xip_grow((void **)&u->blocks, &u->blocks_cap,
			      u->nblocks + 1, sizeof(*u->blocks)))
			u->blocks[u->nblocks++] = blk;
		else
			u->lost = true;
		return;
	}
	for (size_t i = u->nblocks; i--;) {
		if (u->blocks[i] == blk) {
			u->blocks[i] = u->blocks[--u->nblocks];
			return;
		}
	}
}

/* The linked block @blk is about to change in place: keep its bytes. */
static int undo_save(struct xip_map *m, blk64_t blk, const void *bytes)
{
	struct xip_undo *u = m->undo;
	size_t bs = m->img->block_size;
	void *copy;

	if (!u)
		return 0;
	copy = malloc(bs);
	if (!copy || xip_grow((void **)&u->saved, &u->saved_cap,
			      u->nsaved + 1, sizeof(*u->saved))) {
		free(copy);
		return xip_error(-ENOMEM, "out of memory");
	}
	memcpy(copy, bytes, bs);
	u->saved[u->nsaved].blk = blk;
	u->saved[u->nsaved++].data = copy;
	return 0;
}

/* Extents: the blocks of the tree below the inode, which libext2fs
 * changes in place. */
static int undo_save_tree(struct xip_map *m)
{
	ext2_extent_handle_t h;
	struct ext2fs_extent ex;
	struct ext2_extent_info info;
	errcode_t err;
	void *p;
	int ret = 0;

	err = ext2fs_extent_open2(m->img->fs, m->ino,
				  (struct ext2_inode *)&m->inode, &h);
	if (err)
		return xip_error_ext2(err, "inode %u: extent tree", m->ino);
	err = ext2fs_extent_get(h, EXT2_EXTENT_ROOT, &ex);
	while (!err && !ret) {
		err = ext2fs_extent_get_info(h, &info);
		if (!err && info.curr_level < info.max_depth &&
		    !(ex.e_flags & EXT2_EXTENT_FLAGS_SECOND_VISIT)) {
			ret = xip_engine_block_ptr(m->img, m->ino, ex.e_pblk,
						   &p);
			if (!ret)
				ret = undo_save(m, ex.e_pblk, p);
		}
		if (!err)
			err = ext2fs_extent_get(h, EXT2_EXTENT_NEXT, &ex);
	}
	ext2fs_extent_free(h);
	if (!ret && err && err != EXT2_ET_EXTENT_NO_NEXT)
		ret = xip_error_ext2(err, "inode %u: extent tree", m->ino);
	return ret;
}

int xip_map_undo_begin(struct xip_map *m, struct xip_undo *u)
{
	struct xip_engine *e = NULL;
	int ret;

	memset(u, 0, sizeof(*u));
	ret = xip_engine_get(m->img, &e);
	if (ret)
		return ret;
	u->inode = m->inode;
	m->undo = u;
	e->undo = u;
	ret = m->extents ? undo_save_tree(m) : 0;
	if (ret)
		xip_map_undo_end(m);
	return ret;
}

void xip_map_undo_end(struct xip_map *m)
{
	struct xip_undo *u = m->undo;

	if (!u)
		return;
	if (m->img->engine)
		m->img->engine->undo = NULL;
	for (size_t i = 0; i < u->nsaved; i++)
		free(u->saved[i].data);
	free(u->saved);
	free(u->blocks);
	memset(u, 0, sizeof(*u));
	m->undo = NULL;
}

int xip_map_undo(struct xip_map *m)
{
	struct xip_undo *u = m->undo;
	ext2_filsys fs = m->img->fs;
	uint64_t bs = m->img->block_size;
	size_t nsaved;
	int ret = 0;

	if (!u)
		return 0;
	XIP_DBG(ENGINE, "inode %u: undo: %zu block(s) given back, %zu block(s)"
		" restored", m->ino, u->nblocks, u->nsaved);
	/* linked blocks changed in place get their bytes back */
	for (size_t i = u->nsaved; i--;) {
		int r = xip_seg_pwrite(m->img->seg, u->saved[i].blk * bs,
				       u->saved[i].data, bs);

		if (r && !ret)
			ret = xip_error(r, "%s: block %llu: %s",
					m->img->seg->path,
					U64(u->saved[i].blk), strerror(-r));
	}
	/* every block allocated since is free again (the log detached) */
	{
		blk64_t *blocks = u->blocks;
		size_t n = u->nblocks;

		u->blocks = NULL;
		u->nblocks = u->blocks_cap = 0;
		for (size_t i = 0; i < n; i++)
			ext2fs_block_alloc_stats2(fs, blocks[i], -1);
		free(blocks);
	}
	m->inode = u->inode;
	m->dirty = false;
	if (m->extents) {
		/* libext2fs wrote the root in the inode: the old one back */
		m->dirty = true;
		if (!ret)
			ret = xip_map_write_inode(m);
		if (!ret)
			ret = xip_map_ext_load(m);
	}
	/* the old tree stays: nothing it holds is freed */
	m->ndefer = 0;
	m->nfresh = 0;
	memset(m->cache, 0, sizeof(m->cache));
	/* extents: the tree's blocks stay saved for a next undo */
	nsaved = m->extents ? u->nsaved : 0;
	for (size_t i = nsaved; i < u->nsaved; i++)
		free(u->saved[i].data);
	u->nsaved = nsaved;
	u->lost = false;
	return ret;
}

/* ---- allocation (writers) ----------------------------------------------- */

/* Give back a block allocated by alloc_cleared(). */
static void release_block(struct xip_map *m, blk64_t blk)
{
	ext2fs_block_alloc_stats2(m->img->fs, blk, -1);
	ext2fs_iblk_sub_blocks(m->img->fs, (struct ext2_inode *)&m->inode, 1);
}

/*
 * Allocate one block near @goal, check it (and its address in the segment
 * through direct_access), and clear it, or fill it with @fill, by a write
 * to the segment's file before anything points at it (as the kernel's
 * ext2_clear_xip_target does); bitmap, free counts and i_blocks are
 * updated.
 */
static int alloc_cleared(struct xip_map *m, blk64_t goal, uint64_t lblk,
			 const void *fill, blk64_t *out)
{
	ext2_filsys fs = m->img->fs;
	blk64_t blk;
	errcode_t err;
	void *p;
	int ret;

	if (goal < fs->super->s_first_data_block ||
	    goal >= ext2fs_blocks_count(fs->super))
		goal = ext2fs_find_inode_goal(fs, m->ino,
					      (struct ext2_inode *)&m->inode,
					      lblk);
	err = ext2fs_new_block2(fs, goal, NULL, &blk);
	if (err == EXT2_ET_BLOCK_ALLOC_FAIL)
		return xip_error(-ENOSPC,
				 "no space left in %s (inode %u, file block %llu)",
				 m->img->seg->path, m->ino, U64(lblk));
	if (err)
		return xip_error_ext2(err, "inode %u: allocating a block",
				      m->ino);
	if (!m->extents && blk > UINT32_MAX)
		return xip_error(-ENOSPC,
				 "no block below 2^32 left in %s for a block-mapped file (inode %u)",
				 m->img->seg->path, m->ino);
	ret = xip_engine_check_block(m->img, m->ino, blk, "new block", lblk);
	if (!ret)
		ret = xip_engine_block_ptr(m->img, m->ino, blk, &p);
	if (ret)
		return ret;
	(void)p;
	/* in use in the bitmaps (the image's too, by the hook) first */
	ext2fs_block_alloc_stats2(fs, blk, +1);
	xip_engine_step();
	/*
	 * A whole block about to be written is filled instead of cleared
	 * (or, XIP_FILL_LATER, by the caller before its commit), through the
	 * segment's file: no page-table entry is made for it here.
	 */
	if (fill != XIP_FILL_LATER) {
		uint64_t bs = m->img->block_size;

		ret = fill ? xip_seg_pwrite(m->img->seg, blk * bs, fill, bs) :
			     xip_seg_zero(m->img->seg, blk * bs, bs);
		if (ret) {
			ext2fs_block_alloc_stats2(fs, blk, -1);
			return xip_error(ret, "%s: block %llu: %s",
					 m->img->seg->path, U64(blk),
					 strerror(-ret));
		}
	}
	xip_engine_step();
	ext2fs_iblk_add_blocks(fs, (struct ext2_inode *)&m->inode, 1);
	m->dirty = true;
	*out = blk;
	return 0;
}

const uint8_t xip_fill_later[1];

/* ---- the transaction ----------------------------------------------------- */

static bool fresh_has(const struct xip_map *m, blk64_t blk)
{
	/* the newest first: the indirect block being filled */
	for (size_t i = m->nfresh; i--;)
		if (m->fresh[i] == blk)
			return true;
	return false;
}

bool xip_map_run_holds_map(const struct xip_map *m, blk64_t blk, uint64_t n)
{
	if (m->extents || m->nomap)
		return false;
	for (size_t i = 0; i < MAP_SLOTS; i++)
		if (m->cache[i].blk >= blk && m->cache[i].blk - blk < n)
			return true;
	for (size_t i = 0; i < m->nfresh; i++)
		if (m->fresh[i] >= blk && m->fresh[i] - blk < n)
			return true;
	for (size_t i = 0; i < m->ndefer; i++)
		if (m->defer[i].blk < blk + n && blk < m->defer[i].blk + m->defer[i].n)
			return true;
	return false;
}

/* Not recorded (out of memory): the block is copied once more later. */
static int fresh_add(struct xip_map *m, blk64_t blk)
{
	if (xip_grow((void **)&m->fresh, &m->fresh_cap, m->nfresh + 1,
		     sizeof(*m->fresh)))
		return -ENOMEM;
	m->fresh[m->nfresh++] = blk;
	return 0;
}

static void fresh_del(struct xip_map *m, blk64_t blk)
{
	for (size_t i = 0; i < m->nfresh; i++)
		if (m->fresh[i] == blk)
			m->fresh[i] = m->fresh[--m->nfresh];
}

bool xip_map_alloc_links_late(const struct xip_map *m)
{
	/* extents change the tree in place; a full image changes in place */
	return !m->extents && !m->nomap && !m->no_copy && !m->in_place;
}

/*
 * @blk is still linked on disk: it leaves the inode's count now and the
 * bitmaps after the commit, so that nothing allocated before the commit
 * can reuse it.
 */
static int defer_free(struct xip_map *m, blk64_t blk)
{
	struct map_defer *d = m->ndefer ? &m->defer[m->ndefer - 1] : NULL;

	if (d && d->blk + d->n == blk) {
		d->n++;
	} else {
		if (xip_grow((void **)&m->defer, &m->defer_cap,
			     m->ndefer + 1, sizeof(*d)))
			return xip_error(-ENOMEM, "out of memory");
		m->defer[m->ndefer++] = (struct map_defer){ blk, 1 };
	}
	ext2fs_iblk_sub_blocks(m->img->fs, (struct ext2_inode *)&m->inode, 1);
	m->dirty = true;
	return 0;
}

int xip_map_commit(struct xip_map *m)
{
	int ret = 0;

	if (m->dirty) {
		ret = xip_map_write_inode(m);
		if (ret)
			return ret;
		xip_engine_step();
	}
	for (size_t i = 0; i < m->ndefer; i++) {
		for (uint64_t k = 0; k < m->defer[i].n; k++)
			ext2fs_block_alloc_stats2(m->img->fs,
						  m->defer[i].blk + k, -1);
	}
	m->ndefer = 0;
	m->nfresh = 0;
	return 0;
}

/*
 * The indirect block @blk (cache slot @cslot) is about to change: unless
 * this transaction made it, it is copied to a new block that the caller
 * links in its place, and the old one is freed after the commit.  On a
 * full image it is changed in place (truncate: m->in_place when no block
 * is free; writes: m->no_copy once the image filled up): the one case
 * where a crash can leave i_blocks for e2fsck -p to correct.
 */
static int ind_cow(struct xip_map *m, int cslot, blk64_t blk, uint64_t lblk,
		   blk64_t *nblk, uint32_t **ptr)
{
	uint32_t *old;
	int ret;

	ret = xip_map_ind_ptr(m, cslot, blk, lblk, &old);
	if (ret)
		return ret;
	*nblk = blk;
	*ptr = old;
	if (fresh_has(m, blk))
		return 0;
	if (m->no_copy) {
		/* in place: a write that fails puts the old bytes back */
		if (!m->undo)
			return 0;
		ret = undo_save(m, blk, old);
		if (!ret)
			fresh_add(m, blk);
		return ret;
	}
	/*
	 * Copies go to the first free block of the group, not next to the
	 * old one: that is where the file's data continues, which should
	 * stay contiguous.  The holes old copies leave are reused there.
	 */
	ret = alloc_cleared(m, ext2fs_group_first_block2(m->img->fs,
				ext2fs_group_of_blk2(m->img->fs, blk)),
			    lblk, old, nblk);
	if (ret == -ENOSPC && m->in_place) {
		xip_error_clear();
		*nblk = blk;
		return 0;
	}
	if (!ret)
		ret = defer_free(m, blk);
	if (!ret)
		ret = xip_map_ind_ptr(m, cslot, *nblk, lblk, ptr);
	if (ret)
		return ret;
	fresh_add(m, *nblk);
	return 0;
}

/*
 * The missing part of a block-map branch, as the kernel's ext2_alloc_branch
 * does it: every block needed (indirect blocks, then the data block) is
 * allocated and cleared first, then spliced in top-down; a failure gives
 * back what was allocated and links nothing.
 */
static int ind_alloc(struct xip_map *m, uint64_t lblk, blk64_t goal,
		     const void *fill, blk64_t *pblk)
{
	uint64_t apb = m->apb, rel = 0, span = 1;
	unsigned int depth = 0, level;
	blk64_t blk, fresh[4];
	uint32_t *slot, *p;
	bool in_inode = true;
	int ret = 0;

	if (lblk < EXT2_NDIR_BLOCKS) {
		slot = &m->inode.i_block[lblk];
	} else {
		rel = lblk - EXT2_NDIR_BLOCKS;
		span = apb;
		for (depth = 1; rel >= span; depth++) {
			rel -= span;
			span *= apb;
		}
		slot = &m->inode.i_block[EXT2_IND_BLOCK + depth - 1];
	}
	/*
	 * Walk down the existing part of the branch.  The splice changes the
	 * deepest block on it, so every block on it is copied (ind_cow), each
	 * copy linked into its parent's copy, up to the inode copy.
	 */
	for (level = 0; level < depth; level++) {
		blk64_t nb;

		blk = in_inode ? *slot : le32toh(*slot);
		if (!blk)
			break;
		ret = ind_cow(m, (int)(depth * (depth - 1) / 2 + level), blk,
			      lblk, &nb, &p);
		if (ret)
			return ret;
		XIP_DBG(ENGINE, "inode %u: file block %llu: map block %llu%s%llu",
			m->ino, U64(lblk), U64(blk), nb != blk ? " copied to " : " in place, ",
			U64(nb));
		if (nb != blk)
			*slot = in_inode ? (uint32_t)nb : htole32((uint32_t)nb);
		goal = goal ? goal : blk + 1;
		span /= apb;
		slot = &p[rel / span];
		rel %= span;
		in_inode = false;
	}
	/* allocate and clear the rest: depth - level indirect + 1 data */
	for (unsigned int i = 0; i <= depth - level; i++) {
		ret = alloc_cleared(m, goal, lblk,
				    i == depth - level ? fill : NULL, &fresh[i]);
		if (ret) {
			while (i--)
				release_block(m, fresh[i]);
			return ret;
		}
		goal = fresh[i] + 1;
	}
	/* splice: the new indirect blocks are cleared, link them in order */
	for (unsigned int i = 0; i < depth - level; i++)
		fresh_add(m, fresh[i]);
	for (unsigned int i = 0; i <= depth - level; i++) {
		if (in_inode)
			*slot = (uint32_t)fresh[i];
		else
			*slot = htole32((uint32_t)fresh[i]);
		if (i == depth - level)
			break;
		ret = xip_map_ind_ptr(m,
				      (int)(depth * (depth - 1) / 2 + level + i),
				      fresh[i], lblk, &p);
		if (ret)
			return ret;
		span /= apb;
		slot = &p[rel / span];
		rel %= span;
		in_inode = false;
	}
	*pblk = fresh[depth - level];
	return 0;
}

/* Link a new block into the extent tree (libext2fs), then re-read it. */
static int ext_alloc(struct xip_map *m, uint64_t lblk, blk64_t goal,
		     const void *fill, blk64_t *pblk)
{
	blk64_t blk;
	errcode_t err;
	int ret;

	if (!goal) {
		size_t i = m->next;

		/* the end of the extent before @lblk */
		while (i && m->ext[i - 1].lblk > lblk)
			i--;
		if (i)
			goal = m->ext[i - 1].pblk + m->ext[i - 1].len +
			       (lblk - (m->ext[i - 1].lblk + m->ext[i - 1].len));
	}
	ret = alloc_cleared(m, goal, lblk, fill, &blk);
	if (ret)
		return ret;
	err = ext2fs_bmap2(m->img->fs, m->ino, (struct ext2_inode *)&m->inode,
			   NULL, BMAP_SET, lblk, NULL, &blk);
	if (err) {
		release_block(m, blk);
		return xip_error_ext2(err, "inode %u: file block %llu: extent tree",
				      m->ino, U64(lblk));
	}
	*pblk = blk;
	return xip_map_ext_load(m);
}

int xip_map_alloc(struct xip_map *m, uint64_t lblk, blk64_t goal,
		  const void *fill, blk64_t *pblk)
{
	int ret;

	if (!m->img->writable)
		return xip_error(-EROFS, "%s: opened read-only",
				 m->img->seg->path);
	if (m->nomap)
		return xip_error(-EINVAL, "inode %u: has no block map", m->ino);
	if (m->uninit)
		return xip_error(-EOPNOTSUPP,
				 "inode %u: writing files with unwritten extents is not supported",
				 m->ino);
	if (lblk >= xip_map_limit(m))
		return xip_error(-EFBIG,
				 "inode %u: file block %llu beyond the largest a block map holds",
				 m->ino, U64(lblk));
	ret = xip_engine_load_bitmaps(m->img);
	if (ret)
		return ret;
	ret = m->extents ? ext_alloc(m, lblk, goal, fill, pblk) :
			   ind_alloc(m, lblk, goal, fill, pblk);
	if (!ret)
		XIP_DBG(ENGINE, "inode %u: file block %llu -> block %llu (%s)",
			m->ino, U64(lblk), U64(*pblk),
			fill == XIP_FILL_LATER ? "filled before the commit" :
			fill ? "filled" : "cleared");
	return ret;
}

/* ---- freeing (truncate) ------------------------------------------------- */

struct free_ctx {
	struct xip_map *m;
	uint64_t first;		/* free file blocks from here on */
	bool dry;		/* validate only */
};

static int free_one(struct free_ctx *fc, blk64_t blk, const char *what,
		    uint64_t lblk)
{
	struct xip_map *m = fc->m;
	int ret;

	ret = xip_engine_check_block(m->img, m->ino, blk, what, lblk);
	if (ret)
		return ret;
	if (!ext2fs_test_block_bitmap2(m->img->fs->block_map, blk))
		return xip_error(-EUCLEAN,
				 "inode %u: %s %llu (file block %llu) is not marked in use",
				 m->ino, what, U64(blk), U64(lblk));
	return fc->dry ? 0 : defer_free(m, blk);
}

/*
 * The subtree of indirect block @blk (cache slot @cslot) at height
 * @height (1: it points at data) covering file blocks from @base: every
 * block from fc->first on is unlinked.  *out is what the parent's slot
 * holds afterwards: @blk when nothing changed, a copy holding the kept
 * part, or 0 when nothing is left.  Blocks the old tree reaches are never
 * changed (ind_cow); they are freed after the commit.
 */
static int free_tree(struct free_ctx *fc, int cslot, blk64_t blk,
		     unsigned int height, uint64_t base, blk64_t *out)
{
	struct xip_map *m = fc->m;
	uint64_t child = 1;
	bool kept = false;
	blk64_t nblk = blk;
	uint32_t *p, *w = NULL;
	int ret;

	*out = blk;
	for (unsigned int i = 1; i < height; i++)
		child *= m->apb;
	ret = xip_map_ind_ptr(m, cslot, blk, base, &p);
	if (ret)
		return ret;
	for (uint64_t i = 0; i < m->apb; i++) {
		uint64_t cbase = base + i * child;
		blk64_t cb = le32toh(p[i]), nb = 0;

		if (!cb)
			continue;
		if (cbase + child <= fc->first) {
			kept = true;
			continue;
		}
		if (height == 1)
			ret = free_one(fc, cb, "block", cbase);
		else
			ret = free_tree(fc, cslot + 1, cb, height - 1, cbase,
					&nb);
		if (ret)
			return ret;
		if (nb)
			kept = true;
		if (nb == cb || fc->dry)
			continue;
		if (!w) {
			/* the first change: work on a copy from here on */
			ret = ind_cow(m, cslot, blk, base, &nblk, &w);
			if (ret)
				return ret;
			p = w;
		}
		w[i] = htole32((uint32_t)nb);
	}
	if (kept || (fc->dry && base < fc->first)) {
		*out = nblk;
		return 0;
	}
	if (nblk != blk) {
		/* an empty copy, never linked: give it back now (ind_cow
		 * already listed the old block for after the commit) */
		release_block(m, nblk);
		fresh_del(m, nblk);
		*out = 0;
		return 0;
	}
	ret = free_one(fc, blk, "indirect block", base);
	if (!ret)
		*out = 0;
	return ret;
}

static int free_pass(struct free_ctx *fc)
{
	struct xip_map *m = fc->m;
	uint64_t base = EXT2_NDIR_BLOCKS, span = m->apb;
	blk64_t nb;
	int ret;

	for (uint64_t i = fc->first; i < EXT2_NDIR_BLOCKS; i++) {
		if (!m->inode.i_block[i])
			continue;
		ret = free_one(fc, m->inode.i_block[i], "block", i);
		if (ret)
			return ret;
		if (!fc->dry)
			m->inode.i_block[i] = 0;
	}
	for (unsigned int d = 1; d <= 3; d++) {
		uint32_t *slot = &m->inode.i_block[EXT2_IND_BLOCK + d - 1];

		if (*slot && base + span > fc->first) {
			ret = free_tree(fc, (int)(d * (d - 1) / 2), *slot, d,
					base, &nb);
			if (ret)
				return ret;
			if (!fc->dry)
				*slot = (uint32_t)nb;
		}
		base += span;
		span *= m->apb;
	}
	return 0;
}

/*
 * Extents: every leaf was validated when the map was opened, so
 * libext2fs' punch frees only blocks we checked; then re-read the tree.
 */
static int ext_free_from(struct xip_map *m, uint64_t first)
{
	errcode_t err;
	int ret;

	ret = xip_engine_load_bitmaps(m->img);
	if (ret)
		return ret;
	/* what is freed must be in use, or the free counts would drift */
	for (size_t i = 0; i < m->next; i++) {
		const struct xip_run *r = &m->ext[i];
		uint64_t skip = first > r->lblk ? first - r->lblk : 0;

		for (uint64_t k = skip; k < r->len; k++)
			if (!ext2fs_test_block_bitmap2(m->img->fs->block_map,
						       r->pblk + k))
				return xip_error(-EUCLEAN,
						 "inode %u: block %llu (file block %llu) is not marked in use",
						 m->ino, U64(r->pblk + k),
						 U64(r->lblk + k));
	}
	err = ext2fs_punch(m->img->fs, m->ino, (struct ext2_inode *)&m->inode,
			   NULL, first, ~0ULL);
	if (err)
		return xip_error_ext2(err, "inode %u: freeing from file block %llu",
				      m->ino, U64(first));
	m->dirty = true;
	return xip_map_ext_load(m);
}

int xip_map_free_from(struct xip_map *m, uint64_t first)
{
	struct free_ctx fc = { m, first, true };
	int ret;

	if (!m->img->writable)
		return xip_error(-EROFS, "%s: opened read-only",
				 m->img->seg->path);
	if (m->nomap)
		return 0;
	if (m->uninit)
		return xip_error(-EOPNOTSUPP,
				 "inode %u: truncating files with unwritten extents is not supported",
				 m->ino);
	XIP_DBG(ENGINE, "inode %u: blocks from file block %llu on freed",
		m->ino, U64(first));
	if (m->extents)
		return ext_free_from(m, first);
	ret = xip_engine_load_bitmaps(m->img);
	/* validate everything first, so that a damaged map frees nothing */
	if (!ret)
		ret = free_pass(&fc);
	fc.dry = false;
	m->in_place = true;	/* a full image must still shrink */
	if (!ret)
		ret = free_pass(&fc);
	m->in_place = false;
	return ret;
}

int xip_map_write_inode(struct xip_map *m)
{
	errcode_t err;

	err = ext2fs_write_inode_full(m->img->fs, m->ino,
				      (struct ext2_inode *)&m->inode,
				      sizeof(m->inode));
	if (err)
		return xip_error_ext2(err, "inode %u: writing", m->ino);
	m->dirty = false;
	return 0;
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Internal interface of the writers: page.c (allocation, copy on write,
 * commits, freeing, get_xip_page) and file.c (read, write, truncate,
 * create), on top of the reader's block maps (reader_int.h).  Not part of
 * the public API.
 */
#ifndef XIP_ENGINE_INT_H
#define XIP_ENGINE_INT_H

#include "util/xip_ext2.h"
#include "reader/xip_image.h"

/* Per-image state of the writers, built on first use. */
struct xip_engine {
	bool bitmaps_loaded;		/* fs->block_map, fs->inode_map read */
	struct xip_undo *undo;		/* the write under way, if any */
};

int xip_engine_get(struct xip_image *img, struct xip_engine **engp);
/* Load fs->block_map and fs->inode_map once (writers). */
int xip_engine_load_bitmaps(struct xip_image *img);

/*
 * Writers (page.c): allocate file block @lblk near @goal, clear it (or,
 * when @fill is given, fill it with the block's bytes) before linking it
 * in: the new block is never visible with stale contents.
 */
int xip_map_alloc(struct xip_map *m, uint64_t lblk, blk64_t goal,
		  const void *fill, blk64_t *pblk);
/*
 * @fill for a block the caller fills itself before the commit: only when
 * xip_map_alloc_links_late() says the new block is linked by the commit (a
 * block map whose changed indirect blocks are copies), never for extents.
 */
extern const uint8_t xip_fill_later[1];
#define XIP_FILL_LATER ((const void *)xip_fill_later)
bool xip_map_alloc_links_late(const struct xip_map *m);
/*
 * Does the run [@blk, @blk + @n) hold a block of the file's own block map:
 * an indirect block looked up (m->cache), made by this transaction
 * (m->fresh) or given back by its commit (m->defer)?  A damaged image can name one as a data block, and data
 * written there would overwrite the map.  Block maps only.
 */
bool xip_map_run_holds_map(const struct xip_map *m, blk64_t blk, uint64_t n);
/* Free every block from file block @first on, indirect blocks included. */
int xip_map_free_from(struct xip_map *m, uint64_t first);
/* Write the private inode copy back. */
int xip_map_write_inode(struct xip_map *m);
/*
 * Commit the transaction: the inode copy is written in one step (the
 * image's own pages change whole, see xipio.c), then the blocks the old
 * tree held are given back.  Before it, the image holds the old file;
 * after it, the new one; a crash in between leaks blocks, nothing else.
 */
int xip_map_commit(struct xip_map *m);

/*
 * The undo log of a write that must leave the file as it was when it
 * fails: every block allocated while it runs (ours and libext2fs' own,
 * caught by the allocation hook), the bytes of the linked blocks it
 * changes in place (indirect blocks on a full image; an extent tree's
 * blocks, saved whole at the start), and the inode as it was.  Between
 * xip_map_undo_begin() and xip_map_undo_end() nothing may be committed
 * but the final commit.
 */
struct xip_undo {
	struct ext2_inode_large inode;	/* as the write found it */
	blk64_t *blocks;
	size_t nblocks, blocks_cap;
	bool lost;			/* a block could not be logged */
	struct {
		blk64_t blk;
		void *data;
	} *saved;
	size_t nsaved, saved_cap;
};

int xip_map_undo_begin(struct xip_map *m, struct xip_undo *u);
/*
 * Take back everything since xip_map_undo_begin (or the last undo): the
 * allocated blocks are given back, the blocks changed in place get their
 * bytes back, the inode copy is the old one (extents: written back).
 */
int xip_map_undo(struct xip_map *m);
void xip_map_undo_end(struct xip_map *m);

/*
 * Writers keep the on-disk bitmaps ahead of the links: a block or inode
 * is marked in use in the image before anything points at it; frees reach
 * the disk at the close.
 */
void xip_engine_mark_inode(struct xip_image *img, ext2_ino_t ino);
/*
 * An ordering step of a writer.  In the test build only (engine_hooks.c
 * compiled with XIP_TEST_HOOKS), with XIPTOOL_TEST_CRASH_AFTER=N in the
 * environment, a writer kills itself (SIGKILL) at its N-th step, so that
 * tests can stop it between any two steps (counted from 1); elsewhere it
 * does nothing.
 */
void xip_engine_step(void);

/* ------------------------------------------------------------------ */
/* The get_xip_page engine's state (page.c)                           */
/* ------------------------------------------------------------------ */

/* Release the engine's per-image state (called by xip_image_close). */
void xip_engine_free(struct xip_image *img);

#endif

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Internal interface between page.c (block maps, get_xip_page) and
 * file.c (read, write, truncate, lookup).  Not part of the public API.
 */
#ifndef XIP_ENGINE_H
#define XIP_ENGINE_H

#include "xip.h"

/* Per-image state, built on first use. */
struct xip_engine {
	ext2fs_block_bitmap meta;	/* blocks holding fs metadata */
	bool bitmaps_loaded;		/* fs->block_map, fs->inode_map read */
	blk64_t clean_lo, clean_hi;	/* a window known free of metadata */
};

/* Indirect-block cache slots: 1 + 2 + 3 levels of the three trees. */
#define MAP_SLOTS 6
/* Indirect blocks one transaction may create or copy before its commit. */
#define MAP_FRESH 32
/* Blocks one transaction of a long write allocates before its commit. */
#define MAP_TXN_BLOCKS 1024

/* A run of blocks to give back once a commit has unlinked them. */
struct map_defer {
	blk64_t blk;
	uint64_t n;
};

/*
 * The block map of one inode, opened for a series of lookups.  The inode
 * is a private copy: writers update it and write it back.
 */
struct xip_map {
	struct xip_image *img;
	ext2_ino_t ino;
	struct ext2_inode_large inode;
	uint64_t apb;			/* block addresses per block */
	bool extents;			/* mapped by an extent tree */
	bool nomap;			/* no block map (devices, fast links) */
	bool dirty;			/* the inode copy was changed */
	bool uninit;			/* extents: has unwritten extents */
	struct xip_run *ext;		/* extents: the mapped leaves, sorted */
	size_t next, ext_cap;
	struct {
		blk64_t blk;
		uint32_t *ptr;
	} cache[MAP_SLOTS];
	/*
	 * The transaction (block maps): nothing the image's inode reaches on
	 * disk is changed in place.  Indirect blocks on a changed path are
	 * copied (or new), listed in fresh[] until the commit writes the
	 * inode in one step; what the old tree held is freed after it.
	 */
	blk64_t fresh[MAP_FRESH];
	unsigned int nfresh;
	struct map_defer *defer;
	size_t ndefer, defer_cap;
	uint64_t txn_blocks;		/* blocks allocated since the commit */
	bool in_place;			/* change in place if no block is free */
	bool no_copy;			/* change in place (the image is full) */
};

int engine_get(struct xip_image *img, struct xip_engine **engp);
/* Is @blk a data block of the image (inside it, not metadata)? */
int engine_check_block(struct xip_image *img, ext2_ino_t ino, blk64_t blk,
		       const char *what, uint64_t lblk);
/* A pointer to the bytes of block @blk (validated), through direct_access. */
int engine_block_ptr(struct xip_image *img, ext2_ino_t ino, blk64_t blk,
		     void **ptr);
/* Load fs->block_map and fs->inode_map once (writers). */
int engine_load_bitmaps(struct xip_image *img);

int map_open(struct xip_image *img, ext2_ino_t ino, struct xip_map *m);
void map_close(struct xip_map *m);
/*
 * Map file block @lblk: *pblk is the physical block (0: hole), *count the
 * number of file blocks from @lblk on known to map the same way (a hole's
 * length, or the rest of a contiguous extent; at least 1).
 */
int map_block(struct xip_map *m, uint64_t lblk, blk64_t *pblk,
	      uint64_t *count);
/* The mapped runs of file blocks [0, @end), holes left out. */
int map_runs(struct xip_map *m, uint64_t end, struct xip_run **runs,
	     size_t *nruns);
/* The first file block past the largest the map can address. */
uint64_t map_limit(const struct xip_map *m);

/*
 * Writers (page.c): allocate file block @lblk near @goal, clear it (or,
 * when @fill is given, fill it with the block's bytes) before linking it
 * in: the new block is never visible with stale contents.
 */
int map_alloc(struct xip_map *m, uint64_t lblk, blk64_t goal,
	      const void *fill, blk64_t *pblk);
/*
 * @fill for a block the caller fills itself before the commit: only when
 * map_alloc_links_late() says the new block is linked by the commit (a
 * block map whose changed indirect blocks are copies), never for extents.
 */
extern const uint8_t xip_fill_later[1];
#define XIP_FILL_LATER ((const void *)xip_fill_later)
bool map_alloc_links_late(const struct xip_map *m);
/* Free every block from file block @first on, indirect blocks included. */
int map_free_from(struct xip_map *m, uint64_t first);
/* Write the private inode copy back. */
int map_write_inode(struct xip_map *m);
/*
 * Commit the transaction: the inode copy is written in one step (the
 * image's own pages change whole, see xipio.c), then the blocks the old
 * tree held are given back.  Before it, the image holds the old file;
 * after it, the new one; a crash in between leaks blocks, nothing else.
 */
int map_commit(struct xip_map *m);
/* Should the writer commit before it writes file block @lblk? */
bool map_txn_due(const struct xip_map *m, uint64_t lblk);

/*
 * Writers keep the on-disk bitmaps ahead of the links: a block or inode
 * is marked in use in the image before anything points at it; frees reach
 * the disk at the close.
 */
void engine_mark_inode(struct xip_image *img, ext2_ino_t ino);
/*
 * Before a writer's first change: mark the image not clean on disk (once;
 * image.c).  -EROFS when it was opened read-only.
 */
int image_begin_change(struct xip_image *img);
/*
 * Test hook: with XIPTOOL_TEST_CRASH_AFTER=N in the environment, a writer
 * kills itself (SIGKILL) at its N-th ordering step, so that tests can stop
 * it between any two steps.  Steps are counted from 1.
 */
void engine_step(void);

int inode_read_checked(struct xip_image *img, ext2_ino_t ino,
		       struct ext2_inode_large *inode);

#endif

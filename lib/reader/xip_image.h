/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The read side of the engine (fsread.c, fsmap.c, fsdir.c): a read-only
 * ext2 reader that needs nothing but libc.  It is the one read path of
 * the library: the front end's exec and xiptool-main's lookup,
 * directories, symlinks, stat and block maps all go through it;
 * libext2fs (engine/image.c, engine/page.c's writers) is only for what
 * writes.  Everything is read from the segment each time (nothing from an
 * inode or a directory is cached across calls), so the bytes a writer has
 * just put there through libext2fs are what it sees.
 *
 * The image handle's inside, for the rooms above the reader (engine, exec,
 * attach, build, ps).  Not in the umbrella lib/xip.h: to programs (the
 * commands, the plugin) an image is an opaque handle.
 */
#ifndef XIP_IMAGE_H
#define XIP_IMAGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "reader/xip_reader.h"
#include "util/xip_ext2.h"
#include "util/xip_util.h"
#include "segment/xip_segment.h"

struct xip_engine;
struct xip_undo;

/* A run of metadata blocks: [start, end). */
struct xip_fs_range {
	uint64_t start, end;
};

/* The geometry of an image, from its superblock (checked at the open). */
struct xip_fs {
	struct xip_seg *seg;
	unsigned int block_size;
	uint64_t blocks;		/* s_blocks_count (64-bit) */
	uint32_t first_data_block;
	uint32_t bpg, ipg;		/* blocks, inodes per group */
	uint32_t inodes_count;
	unsigned int inode_size;	/* bytes of one on-disk inode */
	uint32_t groups;
	unsigned int desc_size;		/* bytes of one group descriptor */
	uint64_t desc_blocks;		/* blocks of the descriptor table */
	uint32_t first_meta_bg, reserved_gdt;
	uint32_t backup_bgs[2];
	uint32_t feat_compat, feat_incompat, feat_ro;
	uint64_t itb_per_group;		/* inode table blocks per group */
	/* the metadata blocks, sorted, disjoint (built on first use) */
	struct xip_fs_range *meta;
	size_t nmeta;
	uint64_t clean_lo, clean_hi;	/* a window known free of metadata */
};

/*
 * An open image (opaque outside the library: xip_image_seg() and
 * xip_image_block_size() give what the commands and the plugin need).
 * The reader (fsread.c) and the engine (engine/image.c, engine/page.c)
 * both fill it.
 */
struct xip_image {
	struct xip_seg *seg;
	/*
	 * The read side (fsread.c, libc only): the superblock's geometry and
	 * the checked group descriptors, read straight from the segment.
	 */
	struct xip_fs *rd;
	int rd_flags;			/* xip_fs_open()'s, for xip_image_open_fs */
	/* libext2fs, for writers, mkfs and verify (engine/image.c); NULL
	 * when the image was opened with xip_image_open_read() */
	ext2_filsys fs;
	void (*close_fs)(struct xip_image *img);
	int close_ret;			/* what close_fs() reported */
	unsigned int block_size;
	bool writable;
	char chan_name[64];
	struct xip_engine *engine;	/* page.c's private state (lazy) */
	/* writers */
	bool unclean;			/* s_state marked not clean on disk */
	uint16_t clean_state;		/* s_state to write back at close */
	int *claims;			/* devices held with O_EXCL */
	size_t nclaims;
};

/* fsread.c's flags for xip_fs_open */
#define XIP_FS_NO_DESC_CHECK	0x01

/*
 * Check the superblock of @seg against the segment (the kernel's checks
 * in ext2_fill_super() and the block count against the size) and, unless
 * XIP_FS_NO_DESC_CHECK, the group descriptors (every bitmap and inode
 * table inside its group, or the image with flex_bg, and none on the
 * superblock, the descriptors or one another).
 */
int xip_fs_open(struct xip_seg *seg, int flags, struct xip_fs **fsp);
void xip_fs_close(struct xip_fs *fs);
/* The locations group @g's descriptor gives (not checked). */
int xip_fs_group(struct xip_fs *fs, uint32_t g, uint64_t *block_bitmap,
		 uint64_t *inode_bitmap, uint64_t *inode_table);
/* Does group @g hold a copy of the superblock? */
bool xip_fs_group_has_super(const struct xip_fs *fs, uint32_t g);
/* Is any block of [blk, blk + n) file system metadata? */
int xip_fs_meta_overlaps(struct xip_fs *fs, uint64_t blk, uint64_t n,
			 bool *overlaps);
/*
 * Read inode @ino (its number and its table checked) into @inode, in
 * host order the way libext2fs keeps an inode in memory (see
 * xip_fs_inode_swab): i_block's block pointers converted, but not the
 * bytes of an extent tree, inline data or a fast symlink's target.
 */
int xip_fs_read_inode(struct xip_fs *fs, ext2_ino_t ino,
		      struct ext2_inode_large *inode);
/*
 * Reverse the byte order of the fields of a copy of an inode of
 * @inode_size bytes on disk (the copy: its first sizeof(*in) at most):
 * what xip_fs_read_inode does on a big-endian host.
 */
void xip_fs_inode_swab(struct ext2_inode_large *in, unsigned int inode_size);
/*
 * Reverse the byte order of every field of a copy of the superblock:
 * what the reader's open does to its copy on a big-endian host.
 */
void xip_fs_super_swab(struct ext2_super_block *sb);

/* A symlink whose target is kept in i_block itself (host order fields). */
static inline bool xip_fs_fast_symlink(const struct ext2_inode_large *in)
{
	uint64_t size = EXT2_I_SIZE(in);

	return LINUX_S_ISLNK(in->i_mode) && size && size < sizeof(in->i_block);
}

/* Indirect-block cache slots: 1 + 2 + 3 levels of the three trees. */
#define MAP_SLOTS 6

/* A run of blocks to give back once a commit has unlinked them. */
struct map_defer {
	blk64_t blk;
	uint64_t n;
};

struct xip_undo;

/*
 * The block map of one inode, opened for a series of lookups.  The inode
 * is a private copy: writers (engine/page.c) update it and write it back.
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
	blk64_t *fresh;
	size_t nfresh, fresh_cap;
	struct map_defer *defer;
	size_t ndefer, defer_cap;
	struct xip_undo *undo;		/* a write's undo log */
	bool in_place;			/* change in place if no block is free */
	bool no_copy;			/* change in place (the image is full) */
};

/* Is @blk a data block of the image (inside it, not metadata)? */
int xip_engine_check_block(struct xip_image *img, ext2_ino_t ino, blk64_t blk,
			   const char *what, uint64_t lblk);
/*
 * Are the @n blocks from @blk data blocks (checked as the @n calls of
 * xip_engine_check_block for file blocks from @lblk would)?  *@good: how
 * many from @blk are; the error is the first bad one's.
 */
int xip_engine_check_run(struct xip_image *img, ext2_ino_t ino, blk64_t blk,
			 uint64_t n, uint64_t lblk, uint64_t *good);
/* A pointer to the bytes of block @blk (validated), through direct_access. */
int xip_engine_block_ptr(struct xip_image *img, ext2_ino_t ino, blk64_t blk,
			 void **ptr);
int xip_inode_read_checked(struct xip_image *img, ext2_ino_t ino,
			   struct ext2_inode_large *inode);

int xip_map_open(struct xip_image *img, ext2_ino_t ino, struct xip_map *m);
void xip_map_close(struct xip_map *m);
/* (Re)read the leaves of an extent-mapped inode's tree from the segment. */
int xip_map_ext_load(struct xip_map *m);
/*
 * Map file block @lblk: *pblk is the physical block (0: hole), *count the
 * number of file blocks from @lblk on known to map the same way (a hole's
 * length, or the rest of a contiguous extent; at least 1).
 */
int xip_map_block(struct xip_map *m, uint64_t lblk, blk64_t *pblk,
		  uint64_t *count);
/* The mapped runs of file blocks [0, @end), holes left out. */
int xip_map_runs(struct xip_map *m, uint64_t end, struct xip_run **runs,
		 size_t *nruns);
/*
 * An indirect block of the map through its cache slot @slot: checked as a
 * data block of the image, then a pointer into the segment.
 */
int xip_map_ind_ptr(struct xip_map *m, int slot, blk64_t blk, uint64_t lblk,
		    uint32_t **ptr);
/* The first file block past the largest the map can address. */
uint64_t xip_map_limit(const struct xip_map *m);

/* 0 and *ino, -ENOENT (no error record), or another error. */
int xip_dir_find(struct xip_image *img, ext2_ino_t dir, const char *name,
		 unsigned int len, ext2_ino_t *ino);
/* Record "@path: strerror(-@err)" and return @err. */
int xip_path_error(int err, const char *path);

/* Does the inode hold the extra time fields (a large inode)? */
bool xip_fs_has_extra_times(struct xip_image *img,
			    const struct ext2_inode_large *in);

/* The size the kernel sees of an inode (i_size_high only where used). */
uint64_t xip_fs_inode_size(const struct xip_fs *fs,
			   const struct ext2_inode_large *in);

/* ------------------------------------------------------------------ */
/* Images: exec's abandon, XIP capability (fsread.c); lookup (fsdir.c) */
/* ------------------------------------------------------------------ */

/*
 * For a process about to become another program (exec): unmap the image's
 * view of the segment and close its descriptor, and nothing else.  Freeing
 * the rest would be work for nothing, as execve(2) does not free either.
 * Read-only images only; @img must not be used afterwards.
 */
void xip_image_abandon(struct xip_image *img);
/*
 * Before xip_image_abandon(): keep the segment's holder lock for as long
 * as the program's mappings of it stay (xip_seg_pin_lock).  0 or < 0.
 */
int xip_image_pin_lock(struct xip_image *img);

/*
 * Is the image XIP-capable for pages of @page_size bytes (0: the host's)?
 * Returns 1 when capable, 0 when not (reason in @why), negative on error.
 */
int xip_image_xip_capable(const struct xip_image *img, unsigned int page_size,
			  char *why, size_t whylen);
/* The same, for an image of @bs-byte blocks on @seg. */
int xip_seg_xip_capable(const struct xip_seg *seg, unsigned int bs,
			unsigned int page_size, char *why, size_t whylen);

/* Resolve all but the last component of @path: its directory and name. */
int xip_lookup_parent(struct xip_image *img, const char *path,
		      ext2_ino_t *dir, char name[EXT2_NAME_LEN + 1]);

#endif /* XIP_IMAGE_H */

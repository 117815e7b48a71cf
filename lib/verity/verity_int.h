/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Internal interface of the verity room: the on-disk verity superblock
 * (the layout of cryptsetup's lib/verity and the kernel's dm-verity
 * documentation) and the tree's geometry.  Not part of the public API.
 */
#ifndef XIP_VERITY_INT_H
#define XIP_VERITY_INT_H

#include <stdint.h>

#include "verity/xip_verity.h"

/* The 512-byte verity superblock, little-endian on disk. */
struct verity_sb {
	uint8_t signature[8];		/* "verity\0\0" */
	uint32_t version;		/* 1 */
	uint32_t hash_type;		/* 1: salt first (0: Chrome OS) */
	uint8_t uuid[16];
	uint8_t algorithm[32];		/* "sha256", NUL padded */
	uint32_t data_block_size;
	uint32_t hash_block_size;
	uint64_t data_blocks;
	uint16_t salt_size;
	uint8_t pad1[6];
	uint8_t salt[256];
	uint8_t pad2[168];
} __attribute__((packed));

_Static_assert(sizeof(struct verity_sb) == XIP_VERITY_SB_SIZE,
	       "the verity superblock is 512 bytes");

#define VERITY_MAX_LEVELS	63

/* The tree: level 0 hashes the data, the top level is one block. */
struct verity_geom {
	unsigned int levels;
	unsigned int digest_size, digest_full;	/* the slot: a power of 2 */
	unsigned int per_block_bits;		/* digests per hash block */
	uint64_t level_start[VERITY_MAX_LEVELS];	/* in hash blocks */
	uint64_t level_size[VERITY_MAX_LEVELS];
	uint64_t blocks;			/* hash blocks in all */
};

/*
 * The levels for @data_blocks of @bs-byte blocks with digests of
 * @digest_size bytes, the tree starting at hash block @first: 0, or
 * -EOPNOTSUPP for fewer than two data blocks.
 */
int xip_verity_geom(uint64_t data_blocks, unsigned int bs,
		    unsigned int digest_size, uint64_t first,
		    struct verity_geom *g);

/*
 * Checking an image as its bytes arrive (attach --root-hash): each block
 * is hashed once, while it is in the cache, by whichever thread moved it;
 * the tree's levels are compared at the end (they are small).
 */

/*
 * Read @len bytes at @off of the image into @buf, which is valid only
 * until the reader returns: 0, or a negative errno with its message.
 */
typedef int xip_verity_read_fn(void *ctx, void *buf, size_t len,
			       uint64_t off);

struct xip_verity_stream;
/*
 * A check of an image of @size bytes, its ext2 and verity superblocks
 * read ahead of the rest through @rd: 0, or the errors of
 * xip_verity_check() with @bad->where saying what is wrong (the tree
 * missing or truncated, or its superblock), or @rd's own error with
 * @bad->where XIP_VERITY_OK.
 */
int xip_verity_stream_open(uint64_t size, xip_verity_read_fn *rd, void *ctx,
			   struct xip_verity_stream **sp,
			   struct xip_verity_bad *bad);
void xip_verity_stream_free(struct xip_verity_stream *s);
const struct xip_verity_info *
xip_verity_stream_info(const struct xip_verity_stream *s);
/*
 * The bytes @p of the image at @off (@len bytes) have arrived: hash the
 * whole blocks among them.  Threads may call it at once for ranges that
 * share no block.  0, or -ENOMEM/-EIO.
 */
int xip_verity_stream_hash(struct xip_verity_stream *s, uint64_t off,
			   const uint8_t *p, uint64_t len);
/* The whole blocks of @len bytes at @off are zeros (a hole, a range the
 * server reported as zeros): their digest is known. */
void xip_verity_stream_zero(struct xip_verity_stream *s, uint64_t off,
			    uint64_t len);
/*
 * Every block has arrived in @fd (named @name): compare the digests with
 * the tree read from @fd, level by level from the root down, as
 * xip_verity_check() does; the superblocks read ahead must be those in
 * @fd.  0, or -EBADMSG with the lowest bad block of the highest bad
 * level in @bad; -EIO when a block was not hashed or the superblocks
 * changed.  @vi gets the tree's description.
 */
int xip_verity_stream_finish(struct xip_verity_stream *s, int fd,
			     const char *name, const uint8_t *root,
			     size_t root_len, struct xip_verity_info *vi,
			     struct xip_verity_bad *bad);

/*
 * Block by block (attach --lazy): the verity superblock's block and the
 * whole tree, @area (from the hash offset to the tree's end), checked
 * from the root down against @root; then each data block as it lands
 * (xip_verity_stream_check: @blk of the data, hash_block_size bytes at
 * @p) against its digest in the tree's lowest level.  0, or -EBADMSG
 * with where in @bad and the message; -EINVAL for a root hash of the
 * wrong length.
 */
int xip_verity_stream_tree(struct xip_verity_stream *s, const uint8_t *area,
			   const uint8_t *root, size_t root_len,
			   struct xip_verity_bad *bad);
int xip_verity_stream_check(struct xip_verity_stream *s, uint64_t blk,
			    const uint8_t *p, struct xip_verity_bad *bad);
/* Does the tree say data block @blk is zeros? */
bool xip_verity_stream_is_zero(const struct xip_verity_stream *s,
			       uint64_t blk);
/* The ext2 superblock's bytes read ahead (the first of the image). */
const uint8_t *xip_verity_stream_head(const struct xip_verity_stream *s,
				      size_t *len);

#endif

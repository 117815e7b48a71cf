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

#endif

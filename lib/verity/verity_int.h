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
#include "util/xip_ext2.h"

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
 * Shared by verity.c (building and checking a whole tree) and stream.c
 * (checking an image as it arrives): hashing with a digest fetched once,
 * the superblocks, and how a mismatch is reported.
 */
/* where the ext2 superblock sits in an image */
#define EXT2_SB_OFFSET	1024

struct hasher {
	struct evp_md_st *md;
	struct evp_md_ctx_st *ctx;
	const uint8_t *salt;
	size_t salt_len;
};

bool xip_verity_all_zero(const uint8_t *p, size_t n);
int xip_verity_bad_at(struct xip_verity_bad *bad, enum xip_verity_where where,
		  uint64_t block, unsigned int bs, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));
int xip_verity_fs_size(const uint8_t *base, uint64_t size, uint64_t *bytes,
		   unsigned int *bs);
int xip_verity_hash_block(struct hasher *h, const uint8_t *p, size_t len,
		      uint8_t *out);
int xip_verity_hash_error(int ret, const char *what);
int xip_verity_probe_failed(int ret, const struct xip_verity_info *vi,
			uint64_t size, struct xip_verity_bad *bad);
int xip_verity_sb_parse(const uint8_t *vsb, uint64_t size,
		    struct xip_verity_info *vi);
int xip_verity_hasher_init(struct hasher *h, const char *alg, const uint8_t *salt,
		       size_t salt_len);
void xip_verity_hasher_free(struct hasher *h);

#endif

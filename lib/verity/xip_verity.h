/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Verified images: a dm-verity hash tree (format 1, the layout
 * veritysetup writes and the kernel's dm-verity reads) appended after the
 * file system, in the same image.  The 512-byte verity superblock sits at
 * the hash offset, the file system's size (s_blocks_count * block size),
 * padded to one hash block; the tree follows, its top level first.
 *
 * Part of the public API (included by xip.h).
 */
#ifndef XIP_VERITY_PUB_H
#define XIP_VERITY_PUB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define XIP_VERITY_SB_SIZE	512
#define XIP_VERITY_SALT_MAX	256
#define XIP_VERITY_DIGEST_MAX	64	/* SHA-512 */
#define XIP_VERITY_SALT_DEFAULT	32	/* veritysetup's default */

/* What an image's verity superblock says, with the tree's layout. */
struct xip_verity_info {
	bool present;			/* a verity superblock at hash_offset */
	uint64_t hash_offset;		/* bytes: the verity superblock */
	uint64_t tree_offset;		/* bytes: the first hash block */
	uint64_t tree_blocks;		/* hash blocks of the tree */
	uint64_t end;			/* bytes: the end of the tree */
	char algorithm[32];		/* "sha256" */
	unsigned int digest_size;
	unsigned int data_block_size, hash_block_size;
	uint64_t data_blocks;
	unsigned int levels;
	uint8_t salt[XIP_VERITY_SALT_MAX];
	unsigned int salt_size;
	uint8_t uuid[16];
};

/* Where a check found the first bad bytes. */
enum xip_verity_where {
	XIP_VERITY_OK = 0,
	XIP_VERITY_DATA,		/* data block @block */
	XIP_VERITY_HASH,		/* hash block @block (of the image) */
	XIP_VERITY_ROOT,		/* the root hash: wrong, or the top
					 * hash block (@block) is bad */
	XIP_VERITY_SUPER,		/* the verity superblock */
	XIP_VERITY_MISSING,		/* no tree, or a truncated one */
};

struct xip_verity_bad {
	enum xip_verity_where where;
	uint64_t block;			/* in the image, in its block size */
	uint64_t offset;		/* its first byte in the image */
};

/*
 * The verity superblock and layout of the image of @size bytes at @base
 * (a mapped segment or image): its ext2 superblock gives the hash offset.
 * 0 with vi->present false when there is no verity superblock there;
 * -EUCLEAN with the reason in the error record when one is there but
 * malformed or its tree runs past @size; -EOPNOTSUPP for parameters this
 * library does not check (hash types, algorithms other than sha1,
 * sha256, sha512, block sizes that differ from each other).
 */
int xip_verity_probe(const uint8_t *base, uint64_t size,
		     struct xip_verity_info *vi);

/*
 * Check every data and hash block of the image at @base (@size bytes)
 * against @root (@root_len bytes).  0 when all match; -EBADMSG with the
 * first bad block in @bad (may be NULL) and a message naming it;
 * -EUCLEAN/-EOPNOTSUPP as xip_verity_probe().  Hashing runs on up to
 * @threads threads (0: the online CPUs, at most 8).
 */
int xip_verity_check(const uint8_t *base, uint64_t size,
		     const uint8_t *root, size_t root_len, unsigned int threads,
		     struct xip_verity_info *vi, struct xip_verity_bad *bad);

/* Bytes of the verity superblock block and the tree for @data_blocks. */
uint64_t xip_verity_area_size(uint64_t data_blocks, unsigned int block_size);

/*
 * Write the verity superblock and tree (sha256, format 1) for the first
 * @data_blocks blocks of @block_size bytes at @base into @fd at
 * @data_blocks * @block_size: that area (xip_verity_area_size()) must
 * exist in the file.  @salt of @salt_len bytes (at most
 * XIP_VERITY_SALT_MAX); @uuid the superblock's.  The root hash goes to
 * @root (XIP_VERITY_DIGEST_MAX bytes), its length to *@root_len.
 */
int xip_verity_write(const uint8_t *base, uint64_t data_blocks,
		     unsigned int block_size, const uint8_t *salt,
		     size_t salt_len, const uint8_t uuid[16], int fd,
		     uint8_t *root, size_t *root_len);

/*
 * A salt of XIP_VERITY_SALT_DEFAULT bytes into @salt: derived from @seed
 * (SHA-256 of a fixed prefix and @seed: the same image, the same salt)
 * or, when @seed is NULL, random (getrandom(2)).
 */
int xip_verity_salt(const void *seed, size_t seed_len, uint8_t *salt);

/*
 * Parse hex digits (an even number, no prefix) into @out of @max bytes:
 * the length, or -EINVAL.
 */
int xip_verity_parse_hex(const char *hex, uint8_t *out, size_t max);
/* @len bytes as lower-case hex into @buf (2 * @len + 1 bytes). */
void xip_verity_hex(const uint8_t *in, size_t len, char *buf);

/* Human words for @where ("data block", "hash block", ...). */
const char *xip_verity_where_name(enum xip_verity_where where);

#endif

// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Checking an image as its bytes arrive (attach --root-hash, attach
 * --lazy): each block is hashed once, while it is in the cache, by
 * whichever thread moved it, and the tree's levels compared at the end;
 * or, block by block, against a tree checked first from the root down.
 */
#include <endian.h>
#include <errno.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "verity/xip_verity.h"
#include "verity/verity_int.h"
#include "util/xip_error.h"
#include "util/xip_ext2.h"
#include "util/xip_lazy.h"
#include "util/xip_util.h"
#include <openssl/evp.h>

struct xip_verity_stream {
	struct xip_verity_info vi;
	struct verity_geom g;
	uint8_t head[EXT2_SB_OFFSET + sizeof(struct ext2_super_block)];
	uint8_t vsb[XIP_VERITY_SB_SIZE];
	EVP_MD *md;
	unsigned int bs;
	uint64_t nblocks;		/* whole blocks of the image */
	uint8_t *digests;		/* one per block, digest_size apart */
	uint8_t zero[XIP_VERITY_DIGEST_MAX];	/* of a block of zeros */
	_Atomic uint64_t done;		/* blocks hashed or known zero */
	uint8_t *leaves;		/* the tree's level 0, once checked */
	EVP_MD_CTX *ctx;		/* xip_verity_stream_check()'s */
};

/* The range of whole blocks of @len bytes at @off, within the image. */
static void block_span(const struct xip_verity_stream *s, uint64_t off,
		       uint64_t len, uint64_t *first, uint64_t *n)
{
	uint64_t end = off + len;

	*first = off / s->bs;
	*n = 0;
	if (off % s->bs)
		(*first)++;
	end = end / s->bs;
	if (end > s->nblocks)
		end = s->nblocks;
	if (end > *first)
		*n = end - *first;
}

int xip_verity_stream_open(uint64_t size, xip_verity_read_fn *rd, void *ctx,
			   struct xip_verity_stream **sp,
			   struct xip_verity_bad *bad)
{
	struct xip_verity_stream *s = calloc(1, sizeof(*s));
	uint8_t *zeros = NULL;
	uint64_t off;
	unsigned int bs;
	int ret;

	*sp = NULL;
	if (bad)
		memset(bad, 0, sizeof(*bad));
	if (!s)
		return xip_error(-ENOMEM, "out of memory");
	/* the reader's own failures are not the image's: passed on as such */
	ret = size < sizeof(s->head) ? 0 : rd(ctx, s->head, sizeof(s->head), 0);
	if (ret)
		goto fail;
	ret = xip_verity_fs_size(s->head, size < sizeof(s->head) ? size : sizeof(s->head),
		      &s->vi.hash_offset, &bs);
	off = s->vi.hash_offset;
	if (!ret && off <= size && size - off >= XIP_VERITY_SB_SIZE) {
		ret = rd(ctx, s->vsb, sizeof(s->vsb), off);
		if (ret)
			goto fail;
		ret = xip_verity_sb_parse(s->vsb, size, &s->vi);
	}
	if (ret || !s->vi.present) {
		ret = xip_verity_probe_failed(ret, &s->vi, size, bad);
		goto fail;
	}
	s->bs = s->vi.hash_block_size;
	xip_verity_geom(s->vi.data_blocks, s->bs, s->vi.digest_size,
			s->vi.tree_offset / s->bs, &s->g);
	s->nblocks = s->vi.end / s->bs;
	ret = xip_lazy_load(XIP_LAZY_CRYPTO);
	if (ret)
		goto fail;
	s->md = EVP_MD_fetch(NULL, s->vi.algorithm, NULL);
	s->digests = calloc(s->nblocks, s->vi.digest_size);
	zeros = calloc(1, s->bs);
	if (!s->md || !s->digests || !zeros) {
		ret = xip_error(-ENOMEM, "out of memory");
		goto fail;
	}
	ret = xip_verity_stream_hash(s, 0, zeros, s->bs);
	if (ret)
		goto fail;
	memcpy(s->zero, s->digests, s->vi.digest_size);
	s->done = 0;
	free(zeros);
	*sp = s;
	return 0;
fail:
	free(zeros);
	xip_verity_stream_free(s);
	return ret;
}

void xip_verity_stream_free(struct xip_verity_stream *s)
{
	if (!s)
		return;
	if (s->md)	/* else libcrypto may not be loaded */
		EVP_MD_free(s->md);
	if (s->ctx)
		EVP_MD_CTX_free(s->ctx);
	free(s->leaves);
	free(s->digests);
	free(s);
}

const struct xip_verity_info *
xip_verity_stream_info(const struct xip_verity_stream *s)
{
	return &s->vi;
}

int xip_verity_stream_hash(struct xip_verity_stream *s, uint64_t off,
			   const uint8_t *p, uint64_t len)
{
	struct hasher h = { .md = s->md, .salt = s->vi.salt,
			    .salt_len = s->vi.salt_size };
	uint64_t first, n;
	int ret = 0;

	block_span(s, off, len, &first, &n);
	if (!n)
		return 0;
	p += first * s->bs - off;
	h.ctx = EVP_MD_CTX_new();
	if (!h.ctx)
		return xip_error(-ENOMEM, "out of memory");
	for (uint64_t k = 0; !ret && k < n; k++)
		ret = xip_verity_hash_block(&h, p + k * s->bs, s->bs,
				 s->digests + (first + k) * s->vi.digest_size);
	EVP_MD_CTX_free(h.ctx);
	if (ret)
		return xip_verity_hash_error(ret, "hashing failed");
	s->done += n;
	return 0;
}

void xip_verity_stream_zero(struct xip_verity_stream *s, uint64_t off,
			    uint64_t len)
{
	uint64_t first, n;

	block_span(s, off, len, &first, &n);
	for (uint64_t k = first; k < first + n; k++)
		memcpy(s->digests + k * s->vi.digest_size, s->zero,
		       s->vi.digest_size);
	s->done += n;
}

/*
 * The digests of the blocks of level @i (-1: the data) against the slots
 * of level i + 1 in @tree: the first block that differs, or -1.
 */
static int64_t stream_level(const struct xip_verity_stream *s, int i,
			    const uint8_t *tree)
{
	const struct verity_geom *g = &s->g;
	uint64_t first = i < 0 ? 0 : g->level_start[i];
	uint64_t n = i < 0 ? s->vi.data_blocks : g->level_size[i];
	unsigned int ds = s->vi.digest_size;
	/* @tree starts at the first hash block */
	const uint8_t *slots = tree + (g->level_start[i + 1] -
				       s->vi.tree_offset / s->bs) * s->bs;

	/* from the lowest up: the first that differs is the one named */
	for (uint64_t b = first; b < first + n; b++)
		if (memcmp(s->digests + b * ds,
			   slots + (b - first) * g->digest_full, ds))
			return (int64_t)b;
	return -1;
}

int xip_verity_stream_finish(struct xip_verity_stream *s, int fd,
			     const char *name, const uint8_t *root,
			     size_t root_len, struct xip_verity_info *vi,
			     struct xip_verity_bad *bad)
{
	uint64_t tree_bytes = s->vi.tree_blocks * s->bs;
	uint64_t vblk = s->vi.hash_offset / s->bs;
	uint8_t *buf, *tree;
	int64_t k;
	int ret;

	if (bad)
		memset(bad, 0, sizeof(*bad));
	*vi = s->vi;
	if (root_len != s->vi.digest_size)
		return xip_error(-EINVAL,
				 "the root hash has %zu bytes, %s gives %u",
				 root_len, s->vi.algorithm, s->vi.digest_size);
	if (s->done != s->nblocks)
		return xip_error(-EIO,
				 "verity: %" PRIu64 " of %" PRIu64 " blocks were hashed",
				 (uint64_t)s->done, s->nblocks);
	buf = malloc(tree_bytes + s->bs + sizeof(s->head));
	if (!buf)
		return xip_error(-ENOMEM, "out of memory");
	tree = buf + s->bs + sizeof(s->head);
	/* what was read first is what arrived: superblocks, then the tree */
	ret = xip_pread_exact(fd, buf, s->bs, s->vi.hash_offset, name);
	if (!ret)
		ret = xip_pread_exact(fd, buf + s->bs, sizeof(s->head), 0,
				      name);
	if (!ret)
		ret = xip_pread_exact(fd, tree, tree_bytes,
				      s->vi.tree_offset, name);
	if (ret)
		goto out;
	if (memcmp(buf + s->bs, s->head, sizeof(s->head)) ||
	    memcmp(buf, s->vsb, sizeof(s->vsb))) {
		ret = xip_error(-EIO,
				"the superblocks changed after they were read ahead (the image changed while it was read)");
		goto out;
	}
	if (!xip_verity_all_zero(buf + XIP_VERITY_SB_SIZE,
		      s->vi.tree_offset - s->vi.hash_offset -
		      XIP_VERITY_SB_SIZE)) {
		ret = xip_verity_bad_at(bad, XIP_VERITY_SUPER, vblk, s->bs,
			     "verity superblock: bytes after it in its block");
		goto out;
	}
	k = (int64_t)s->g.level_start[s->g.levels - 1];
	if (memcmp(s->digests + (uint64_t)k * s->vi.digest_size, root,
		   root_len)) {
		ret = xip_verity_bad_at(bad, XIP_VERITY_ROOT, (uint64_t)k, s->bs,
			     "the root hash does not match hash block %" PRId64 " (the top of the tree; or the salt, or a wrong root hash)",
			     k);
		goto out;
	}
	for (int i = (int)s->g.levels - 2; i >= -1; i--) {
		k = stream_level(s, i, tree);
		if (k < 0)
			continue;
		if (i < 0)
			ret = xip_verity_bad_at(bad, XIP_VERITY_DATA, (uint64_t)k, s->bs,
				     "data block %" PRId64 " does not match its hash",
				     k);
		else
			ret = xip_verity_bad_at(bad, XIP_VERITY_HASH, (uint64_t)k, s->bs,
				     "hash block %" PRId64 " (tree level %d) does not match its hash",
				     k, i);
		break;
	}
out:
	free(buf);
	return ret;
}

/* ---- checking block by block (attach --lazy) ------------------------- */

int xip_verity_stream_tree(struct xip_verity_stream *s, const uint8_t *area,
			   const uint8_t *root, size_t root_len,
			   struct xip_verity_bad *bad)
{
	const struct verity_geom *g = &s->g;
	uint64_t first = s->vi.tree_offset / s->bs;
	uint64_t vblk = s->vi.hash_offset / s->bs;
	const uint8_t *tree = area + (s->vi.tree_offset - s->vi.hash_offset);
	unsigned int ds = s->vi.digest_size;
	struct hasher h = { .md = s->md, .salt = s->vi.salt,
			    .salt_len = s->vi.salt_size };
	uint8_t d[XIP_VERITY_DIGEST_MAX];
	uint64_t top = g->level_start[g->levels - 1];
	int ret = 0;

	if (bad)
		memset(bad, 0, sizeof(*bad));
	if (root_len != ds)
		return xip_error(-EINVAL,
				 "the root hash has %zu bytes, %s gives %u",
				 root_len, s->vi.algorithm, ds);
	if (memcmp(area, s->vsb, sizeof(s->vsb)))
		return xip_error(-EIO,
				 "the verity superblock changed after it was read ahead");
	if (!xip_verity_all_zero(area + XIP_VERITY_SB_SIZE,
		      s->vi.tree_offset - s->vi.hash_offset -
		      XIP_VERITY_SB_SIZE))
		return xip_verity_bad_at(bad, XIP_VERITY_SUPER, vblk, s->bs,
			      "verity superblock: bytes after it in its block");
	h.ctx = EVP_MD_CTX_new();
	if (!h.ctx)
		return xip_error(-ENOMEM, "out of memory");
	if (xip_verity_hash_block(&h, tree + (top - first) * s->bs, s->bs, d)) {
		ret = xip_verity_hash_error(-EIO, "hashing failed");
		goto out;
	}
	if (memcmp(d, root, root_len)) {
		ret = xip_verity_bad_at(bad, XIP_VERITY_ROOT, top, s->bs,
			     "the root hash does not match hash block %" PRIu64 " (the top of the tree; or the salt, or a wrong root hash)",
			     top);
		goto out;
	}
	/* from the root down: each level against its parent's slots */
	for (int i = (int)g->levels - 2; i >= 0 && !ret; i--) {
		const uint8_t *slots = tree + (g->level_start[i + 1] - first) *
						      s->bs;

		for (uint64_t b = 0; b < g->level_size[i]; b++) {
			uint64_t blk = g->level_start[i] + b;

			if (xip_verity_hash_block(&h, tree + (blk - first) * s->bs, s->bs,
				       d)) {
				ret = xip_verity_hash_error(-EIO, "hashing failed");
				break;
			}
			if (memcmp(d, slots + b * g->digest_full, ds)) {
				ret = xip_verity_bad_at(bad, XIP_VERITY_HASH, blk, s->bs,
					     "hash block %" PRIu64 " (tree level %d) does not match its hash",
					     blk, i);
				break;
			}
		}
	}
	if (!ret) {
		free(s->leaves);
		s->leaves = malloc(g->level_size[0] * s->bs);
		if (!s->leaves)
			ret = xip_error(-ENOMEM, "out of memory");
		else
			memcpy(s->leaves, tree + (g->level_start[0] - first) *
						       s->bs,
			       g->level_size[0] * s->bs);
	}
out:
	EVP_MD_CTX_free(h.ctx);
	return ret;
}

int xip_verity_stream_check(struct xip_verity_stream *s, uint64_t blk,
			    const uint8_t *p, struct xip_verity_bad *bad)
{
	struct hasher h = { .md = s->md, .salt = s->vi.salt,
			    .salt_len = s->vi.salt_size };
	uint8_t d[XIP_VERITY_DIGEST_MAX];
	int ret;

	if (!s->leaves)
		return xip_error(-EIO, "verity: the tree is not in");
	if (blk >= s->vi.data_blocks)
		return xip_verity_bad_at(bad, XIP_VERITY_DATA, blk, s->bs,
			      "block %" PRIu64 " is past the data the tree covers",
			      blk);
	if (!s->ctx && !(s->ctx = EVP_MD_CTX_new()))
		return xip_error(-ENOMEM, "out of memory");
	h.ctx = s->ctx;
	ret = xip_verity_hash_block(&h, p, s->bs, d);
	if (ret)
		return xip_verity_hash_error(ret, "hashing failed");
	if (memcmp(d, s->leaves + blk * s->g.digest_full, s->vi.digest_size))
		return xip_verity_bad_at(bad, XIP_VERITY_DATA, blk, s->bs,
			      "data block %" PRIu64 " does not match its hash",
			      blk);
	return 0;
}

bool xip_verity_stream_is_zero(const struct xip_verity_stream *s,
			       uint64_t blk)
{
	return s->leaves && blk < s->vi.data_blocks &&
	       !memcmp(s->leaves + blk * s->g.digest_full, s->zero,
		       s->vi.digest_size);
}

const uint8_t *xip_verity_stream_head(const struct xip_verity_stream *s,
				      size_t *len)
{
	*len = sizeof(s->head);
	return s->head;
}
